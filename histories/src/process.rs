//! Commands the driver runs: with none of the caller's SCR or SLURM settings, and bounded
//! in time.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run or command may take before it counts as hung.
pub const BOUND: Duration = Duration::from_secs(90);

/// Removes every SCR_ and SLURM_ variable of the caller from `cmd`'s environment.
pub fn scrub(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("SCR_") || k.starts_with("SLURM_") {
            cmd.env_remove(&*k);
        }
    }
}

/// Runs `cmd` to its end, or kills it after [`BOUND`]: its status and output (both streams).
pub fn run_bounded(mut cmd: Command) -> Result<(std::process::ExitStatus, String), String> {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    // each stream read to its end by a thread of its own, which hands it over when done
    let pipe = |p: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut s);
            }
            let _ = tx.send(String::from_utf8_lossy(&s).into_owned());
        });
        rx
    };
    let out = pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = pipe(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            // a process the command left behind may hold its streams open: the run is over
            // when the command is, and what outlives it is no hang of the driver's
            let left = BOUND
                .saturating_sub(started.elapsed())
                .max(Duration::from_secs(5));
            let (Ok(o), Ok(e)) = (out.recv_timeout(left), err.recv_timeout(left)) else {
                return Err(format!(
                    "{:?} ended with {status}, but processes it started still hold its output \
                     open after {BOUND:?}",
                    cmd.get_program()
                ));
            };
            return Ok((status, format!("{o}{e}")));
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{:?} did not end within {BOUND:?}",
                cmd.get_program()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
