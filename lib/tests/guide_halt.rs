//! SCR v3.1's user guide, `halt.rst` (Halt a job): `scr_halt`'s conditions as a running
//! job meets them, with real `mpiexec` jobs of `lib/tests/c/guide_steps.c` and the `scr
//! halt` command run as a user would. Expected values come from the guide and from what the
//! program itself printed and wrote, never from SCR's own records.

mod common;

use common::*;
use std::process::Command;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

/// `scr halt ARGS PREFIX`, which must succeed.
fn scr_halt(job: &Job, args: &[&str]) {
    let o = Command::new(scr_command())
        .arg("halt")
        .args(args)
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

/// The step that has rank 0 run `scr halt ARGS PREFIX` while the job runs.
fn halt_step(job: &Job, args: &str) -> String {
    format!(
        "sh={} halt {args} {} >/dev/null",
        scr_command().display(),
        job.prefix().display()
    )
}

/// halt.rst, "scr_halt and the halt file": run inside the prefix directory, scr_halt needs
/// no argument; the conditions go to `halt.scr` in the prefix's `.scr` directory, where a
/// job started there finds them.
#[test]
fn scr_halt_run_in_the_prefix_needs_no_argument() {
    let job = steps_job();
    let o = Command::new(scr_command())
        .args(["halt", "--checkpoints", "1"])
        .current_dir(job.prefix())
        .env_remove("SCR_PREFIX")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(job.prefix().join(".scr/halt.scr").is_file());
    // the job halts after one checkpoint (SCR_HALT_EXIT=1: every task exits)
    let out = job.run_ok(
        2,
        &["init", "ckpt=c.1:1", "ckpt=c.2:2", "quit"],
        &[SINGLE, ("SCR_HALT_EXIT", "1")],
    );
    assert!(answers(&out, "ckpt=c.2:2").is_empty(), "{out}");
    assert!(answers(&out, "end").is_empty(), "exited in SCR: {out}");
    check_file(&job.prefix().join("c.1/rank_0.ckpt"), 0, 1, 1000);
}

/// halt.rst, "Halt after next checkpoint": `--checkpoints N` halts after N more
/// checkpoints; when the last of them fails, the job goes on until one succeeds, so there is
/// a good checkpoint to flush. "scr_halt and the halt file": with SCR_HALT_EXIT=1 every task
/// exits in SCR_Complete_output after that checkpoint.
#[test]
fn a_halt_after_n_checkpoints_waits_for_one_that_succeeds() {
    let job = steps_job();
    scr_halt(&job, &["--checkpoints", "2"]);
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=c.1:1",
            "start=c.2:c",
            "write=c.2/rank_%r.ckpt:2",
            "complete=0",
            "ckpt=c.3:3",
            "ckpt=c.4:4",
            "quit",
        ],
        &[
            SINGLE,
            ("SCR_HALT_EXIT", "1"),
            ("SCR_FLUSH", "10"),
            ("SCR_LOG_ENABLE", "1"),
            ("SCR_LOG_SYSLOG_ENABLE", "0"),
        ],
    );
    assert_eq!(answer(&out, "ckpt=c.1:1"), "rc=0", "{out}");
    assert_eq!(answer(&out, "complete=0"), "rc=1", "{out}");
    assert!(answers(&out, "ckpt=c.4:4").is_empty(), "{out}");
    // the checkpoint it halted at is flushed (SCR_FLUSH=10 notwithstanding)
    check_file(&job.prefix().join("c.3/rank_1.ckpt"), 1, 3, 1000);
    assert!(!job.prefix().join("c.2").exists() && !job.prefix().join("c.4").exists());
    // the log says the job halted and why: the reason scr_halt's --checkpoints names
    let log = std::fs::read_to_string(job.prefix().join(".scr/log")).unwrap();
    let halts: Vec<&str> = log.lines().filter(|l| l.contains(" event=HALT ")).collect();
    assert_eq!(halts.len(), 1, "{log}");
    assert!(
        halts[0].contains(" exits=true") && halts[0].contains(" reason=NO_CHECKPOINTS_LEFT"),
        "{log}"
    );
}

/// halt.rst, "Halt before or after a specified time": `--after TIME` (ISO form) halts the
/// job at its first successful checkpoint after TIME.
#[test]
fn a_job_halts_at_its_first_checkpoint_after_the_time_given() {
    let job = steps_job();
    let after = (chrono::Local::now() + chrono::Duration::seconds(4))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    scr_halt(&job, &["--after", &after]);
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=c.1:1",
            "sleep=5000",
            "ckpt=c.2:2",
            "ckpt=c.3:3",
            "quit",
        ],
        &[SINGLE, ("SCR_HALT_EXIT", "1")],
    );
    assert_eq!(answer(&out, "ckpt=c.1:1"), "rc=0", "before the time: {out}");
    assert!(answers(&out, "ckpt=c.3:3").is_empty(), "{out}");
    check_file(&job.prefix().join("c.2/rank_0.ckpt"), 0, 2, 1000);
    assert!(!job.prefix().join("c.3").exists(), "{out}");
}

/// halt.rst, "Halt before or after a specified time": scr_halt sets, changes and unsets the
/// halt seconds of a running job (the allocation here ends in 10 minutes; with
/// SCR_HALT_EXIT=0 the application asks SCR_Should_exit). A halt file's seconds win over
/// the SCR_HALT_SECONDS parameter, which applies again once they are unset.
#[test]
fn scr_halt_sets_changes_and_unsets_a_running_jobs_halt_seconds() {
    let end = (chrono::Utc::now().timestamp() + 600).to_string();
    let env = [
        SINGLE,
        ("SCR_HALT_EXIT", "0"),
        ("SCR_END_TIME", end.as_str()),
        ("SCR_HALT_SECONDS", "3600"),
    ];
    // set before the run, changed while it runs
    let job = steps_job();
    scr_halt(&job, &["--seconds", "60"]);
    let change = halt_step(&job, "--seconds 3600");
    let out = job.run_ok(
        2,
        &["init", "shouldexit", &change, "shouldexit", "quit"],
        &env,
    );
    assert_eq!(
        answers(&out, "shouldexit"),
        ["flag=0 rc=0", "flag=1 rc=0"],
        "{out}"
    );
    // unset while it runs: the parameter's 3600 s apply
    let job = steps_job();
    scr_halt(&job, &["--seconds", "60"]);
    let unset = halt_step(&job, "--unset-seconds");
    let out = job.run_ok(
        2,
        &["init", "shouldexit", &unset, "shouldexit", "quit"],
        &env,
    );
    assert_eq!(
        answers(&out, "shouldexit"),
        ["flag=0 rc=0", "flag=1 rc=0"],
        "{out}"
    );
}

/// halt.rst, "Combine, list, change, and unset halt conditions": giving an option again
/// replaces its value.
#[test]
fn a_halt_option_given_again_replaces_its_value() {
    let job = steps_job();
    scr_halt(&job, &["--checkpoints", "10"]);
    scr_halt(&job, &["--checkpoints", "2"]);
    let out = job.run_ok(
        2,
        &["init", "ckpt=c.1:1", "ckpt=c.2:2", "ckpt=c.3:3", "quit"],
        &[SINGLE, ("SCR_HALT_EXIT", "1")],
    );
    assert_eq!(answer(&out, "ckpt=c.1:1"), "rc=0", "{out}");
    assert!(
        answers(&out, "ckpt=c.3:3").is_empty(),
        "halted after two: {out}"
    );
    check_file(&job.prefix().join("c.2/rank_1.ckpt"), 1, 2, 1000);
}

/// halt.rst, "Remove the halt file": with a halt condition that holds, SCR exits at once
/// when the job starts, printing on stdout why.
#[test]
fn scr_says_on_stdout_why_it_halts() {
    let job = steps_job();
    scr_halt(&job, &[]);
    let out = job.run(2, &["init", "quit"], &[SINGLE, ("SCR_HALT_EXIT", "1")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(answers(&stdout, "init").is_empty(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("Job exiting") && l.contains("JOB_HALTED")),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// halt.rst, "Remove the halt file": a job halted with `scr halt` (no condition) stays
/// halted for a later run in the allocation until the halt is removed; the run that halted
/// reaching SCR_Finalize says nothing over the user's halt.
#[test]
fn a_halt_the_user_asked_for_outlasts_the_run_it_stopped_until_removed() {
    let job = steps_job();
    scr_halt(&job, &[]);
    let steps = ["init", "shouldexit", "finalize"];
    let out = job.run_ok(2, &steps, &[SINGLE]);
    assert_eq!(answer(&out, "shouldexit"), "flag=1 rc=0", "{out}");
    let out = job.run_ok(2, &steps, &[SINGLE]);
    assert_eq!(
        answer(&out, "shouldexit"),
        "flag=1 rc=0",
        "halted still: {out}"
    );
    scr_halt(&job, &["--remove"]);
    let out = job.run_ok(2, &steps, &[SINGLE]);
    assert_eq!(answer(&out, "shouldexit"), "flag=0 rc=0", "{out}");
}
