//! Faults a test injects into a debug build, where a real fault would strike one rank (a
//! full disk, an I/O error), to show that no other rank is left waiting for it. A release
//! build compiles every point to nothing.
//!
//! `SCR_TEST_FAULT=POINT@RANK` fails POINT on RANK each time it is reached; `POINT@RANK#N`
//! only the Nth time; several are separated by commas.

use scr::Result;

/// Fails when the test asked for a fault at `point` on `rank` (debug builds only).
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
        let fires = spec.split(',').any(|item| {
            let (at, nth) = item.split_once('#').unwrap_or((item, ""));
            at == format!("{point}@{rank}") && (nth.is_empty() || nth.parse() == Ok(reached))
        });
        if fires {
            return Err(super::failure(format!(
                "a fault injected at {point} on rank {rank} (SCR_TEST_FAULT={spec})"
            )));
        }
    }
    let _ = (point, rank);
    Ok(())
}
