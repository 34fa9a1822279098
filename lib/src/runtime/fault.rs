//! Faults a test injects into a debug build, where a real fault would strike one rank (a
//! full disk, an I/O error, the rank's process killed), to show what the other ranks, the
//! next run and the drain make of it. A release build compiles every point to nothing.
//!
//! `SCR_TEST_FAULT=POINT@RANK` fails POINT on RANK each time it is reached; `POINT@RANK#N`
//! only the Nth time; a `!` after either kills the rank's process there (SIGKILL, as a node's
//! out-of-memory killer or a lost node would: nothing after it runs); several are
//! separated by commas.

use scr::Result;

/// Fails when the test asked for a fault at `point` on `rank`, or kills this process when
/// it asked for a kill there (debug builds only).
pub(super) fn point(point: &'static str, rank: u64) -> Result<()> {
    #[cfg(debug_assertions)]
    if let Ok(spec) = std::env::var("SCR_TEST_FAULT") {
        use std::collections::BTreeMap;
        use std::sync::Mutex;
        static REACHED: Mutex<BTreeMap<&str, u64>> = Mutex::new(BTreeMap::new());
        let reached = {
            let mut counts = REACHED.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(point).or_default();
            *n += 1;
            *n
        };
        let here = format!("{point}@{rank}");
        let mut fires = false;
        for item in spec.split(',') {
            let (item, kill) = item
                .strip_suffix('!')
                .map_or((item, false), |item| (item, true));
            let (at, nth) = item.split_once('#').unwrap_or((item, ""));
            if at == here && (nth.is_empty() || nth.parse() == Ok(reached)) {
                if kill {
                    // SAFETY: raise(3) with a valid signal number has no preconditions
                    unsafe { libc::raise(libc::SIGKILL) };
                }
                fires = true;
            }
        }
        if fires {
            // an I/O error, as the real fault it stands for
            return Err(scr::Error::io(
                format!("{point} on rank {rank}"),
                "run",
                std::io::Error::other(format!(
                    "a fault injected at {point} on rank {rank} (SCR_TEST_FAULT={spec})"
                )),
            ));
        }
    }
    let _ = (point, rank);
    Ok(())
}
