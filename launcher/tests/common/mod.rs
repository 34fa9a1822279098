//! What the command tests share: running the built `scr` with an environment of the test's
//! own (no SLURM job, no user or system configuration unless the test gives one).

#![allow(dead_code)] // each test binary uses its own part

use std::process::{Command, Output};

/// Runs `scr ARGS` with `env` on top of a clean SCR environment.
pub fn scr(args: &[&str], env: &[(&str, &str)]) -> Output {
    scr_within(60, args, env)
}

/// [`scr`] given at most `seconds`: a command that should end but hangs (on a FIFO, a lock)
/// fails the test instead of blocking it (coreutils' timeout kills it).
pub fn scr_within(seconds: u32, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("timeout");
    cmd.args([
        "--signal=KILL",
        &seconds.to_string(),
        env!("CARGO_BIN_EXE_scr"),
    ])
    .args(args)
    .env_remove("SLURM_JOBID")
    .env_remove("SLURM_JOB_ID")
    .env_remove("SLURM_NODELIST")
    .env_remove("SLURM_JOB_NODELIST")
    .env_remove("SCR_NODELIST")
    .env_remove("SCR_JOB_ID")
    .env_remove("SCR_PREFIX")
    .env_remove("SCR_EXCLUDE_NODES")
    .env_remove("SCR_END_TIME")
    .env_remove("SCR_HALT_SECONDS")
    .env_remove("SCR_CONF_FILE")
    .env("SCR_SYSTEM_CONF_FILE", "/nonexistent/scr.conf");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    // timeout's KILL takes timeout itself with it: the status is a SIGKILL (or, from a
    // timeout that outlived its child, 137)
    use std::os::unix::process::ExitStatusExt;
    let killed = out.status.signal() == Some(9) || out.status.code() == Some(128 + 9);
    assert!(
        !killed,
        "scr {args:?} did not end within {seconds} s: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `scr ARGS` with no environment of the test's own.
pub fn scr_args(args: &[&str]) -> Output {
    scr(args, &[])
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard output of a command that must have succeeded.
pub fn stdout_ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(o)
}

/// Standard output and standard error together, for messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
