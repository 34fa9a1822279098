//! Halting a job from the library's side (SCR v3.1's halt.rst): the halt file's conditions
//! (CheckpointsLeft, ExitBefore, HaltSeconds, ExitReason), SCR_HALT_SECONDS against the
//! allocation's end, SCR_HALT_EXIT=0 (the default) leaving the application in control, and
//! SCR_HALT_EXIT=1 ending it inside SCR.

mod common;

/// A v2.0 program's setting: a halt exits inside SCR.
const EXITS: (&str, &str) = ("SCR_HALT_EXIT", "1");

use common::*;
use scr::HashView;

fn write_halt(job: &Job, f: impl FnOnce(&mut scr::halt::HaltFile)) {
    std::fs::create_dir_all(job.prefix().join(".scr")).unwrap();
    let mut halt = scr::halt::HaltFile::new();
    f(&mut halt);
    halt.write(&scr::layout::halt_file(&job.prefix())).unwrap();
}

fn halt_reason(job: &Job) -> Option<String> {
    scr::halt::HaltFile::read(&scr::layout::halt_file(&job.prefix()))
        .unwrap()
        .exit_reason()
        .map(str::to_string)
}

#[test]
fn halt_after_checkpoints_left_runs_out_flushes_and_exits() {
    let job = Job::new();
    write_halt(&job, |h| h.set_checkpoints_left(2));
    let run = job.run(2, &["10000", "5"], &[("SCR_FLUSH", "10"), EXITS]);
    let out = text(&run);
    assert!(run.status.success(), "a halt exits with status 0: {out}");
    assert!(
        !out.contains("test_api: done"),
        "the application does not get control back: {out}"
    );
    assert!(out.contains("No checkpoints remaining"), "{out}");
    assert_eq!(halt_reason(&job).as_deref(), Some("NO_CHECKPOINTS_LEFT"));
    // the checkpoint at the halt was flushed although SCR_FLUSH=10; nothing after it exists
    for r in 0..2 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            10000,
        );
    }
    assert!(!job.prefix().join("ckpt.3").exists());
}

#[test]
fn by_default_a_halt_leaves_the_application_in_control_and_is_said_once() {
    // SCR v3.1's default (SCR_HALT_EXIT=0): the halt file's JOB_HALTED holds from SCR_Init
    // on; SCR_Should_exit says stop, and the code after the application's loop still runs
    let job = Job::new();
    write_halt(&job, |h| h.set_exit_reason("JOB_HALTED"));
    let out = job.run_ok(
        2,
        &["1000", "3"],
        &[("SCR_FLUSH", "10"), ("TEST_API_SHOULD_EXIT", "1")],
    );
    assert!(
        out.contains("SCR_Should_exit says stop after timestep 1"),
        "{out}"
    );
    assert!(
        out.contains("test_api: done"),
        "the application finishes: {out}"
    );
    // SCR_Init, Need_checkpoint, Complete_output and Should_exit all find it; it is said once
    assert_eq!(out.matches("Job exiting").count(), 1, "{out}");
    assert!(out.contains("Reason: JOB_HALTED"), "{out}");
    // the one checkpoint written is flushed at SCR_Finalize (SCR_FLUSH=10 notwithstanding)
    check_file(&job.prefix().join("ckpt.1/rank_1.ckpt"), 1, 1, 1000);
    assert!(!job.prefix().join("ckpt.2").exists(), "{out}");
}

#[test]
fn a_v2_program_that_enables_halts_exits_in_the_library() {
    // SCR v2.0's SCR_HALT_ENABLED=1, set explicitly, keeps v2.0's exit in SCR_Init
    let job = Job::new();
    write_halt(&job, |h| h.set_exit_reason("JOB_HALTED"));
    let out = job.run_ok(2, &["1000", "3"], &[("SCR_HALT_ENABLED", "1")]);
    assert!(
        out.contains("Reason: JOB_HALTED") && !out.contains("test_api:"),
        "{out}"
    );
    // and SCR_HALT_EXIT, where set, wins over it
    let out = job.run_ok(
        2,
        &["1000", "1"],
        &[("SCR_HALT_ENABLED", "1"), ("SCR_HALT_EXIT", "0")],
    );
    assert!(out.contains("test_api: done"), "{out}");
}

#[test]
fn with_scr_halt_exit_0_a_halt_leaves_the_application_in_control() {
    // SCR v3.1's SCR_HALT_EXIT=0: the halt is recorded, Should_exit says so, nothing exits
    let job = Job::new();
    write_halt(&job, |h| h.set_checkpoints_left(2));
    let out = job.run_ok(
        2,
        &["10000", "4"],
        &[("SCR_HALT_EXIT", "0"), ("SCR_FLUSH", "1")],
    );
    assert!(out.contains("test_api: done"), "{out}");
    check_file(&job.prefix().join("ckpt.4/rank_0.ckpt"), 0, 4, 10000);

    // an application that asks SCR_Should_exit after each timestep, as the guide's loop
    // does, learns to stop after the last checkpoint the halt allows, and stops
    let job = Job::new();
    write_halt(&job, |h| h.set_checkpoints_left(2));
    let out = job.run_ok(
        2,
        &["10000", "4"],
        &[
            ("SCR_HALT_EXIT", "0"),
            ("SCR_FLUSH", "10"),
            ("TEST_API_SHOULD_EXIT", "1"),
        ],
    );
    assert!(
        out.contains("SCR_Should_exit says stop after timestep 2"),
        "{out}"
    );
    // the checkpoint at the halt was flushed (SCR_FLUSH=10 notwithstanding), none after it
    check_file(&job.prefix().join("ckpt.2/rank_1.ckpt"), 1, 2, 10000);
    assert!(!job.prefix().join("ckpt.3").exists(), "{out}");
}

#[test]
fn halt_by_exit_before_and_halt_seconds_stops_in_init() {
    let job = Job::new();
    let now = chrono::Utc::now().timestamp();
    write_halt(&job, |h| {
        h.set_exit_before(now + 600);
        h.set_halt_seconds(3600);
    });
    let out = job.run_ok(2, &["1000", "3"], &[EXITS]);
    assert!(out.contains("ExitBefore-HaltSeconds"), "{out}");
    assert!(
        !out.contains("test_api:"),
        "SCR_Init does not return: {out}"
    );
    assert_eq!(halt_reason(&job).as_deref(), Some("EXIT_BEFORE_TIME"));
    assert!(!job.prefix().join("ckpt.1").exists());
}

#[test]
fn scr_halt_seconds_halts_when_the_allocation_is_about_to_end() {
    // halt.rst: with less than SCR_HALT_SECONDS left before the allocation ends (its end
    // from SCR_END_TIME), SCR halts the job: here already in SCR_Init
    let job = Job::new();
    let end = (chrono::Utc::now().timestamp() + 600).to_string();
    let env = [
        ("SCR_END_TIME", end.as_str()),
        ("SCR_HALT_SECONDS", "3600"),
        EXITS,
    ];
    let out = job.run_ok(2, &["1000", "3"], &env);
    assert!(
        out.contains("is at most HaltSeconds (3600 s)") && !out.contains("test_api:"),
        "{out}"
    );
    assert_eq!(halt_reason(&job).as_deref(), Some("TIME_LIMIT"));
    assert_eq!(
        scr::halt::HaltFile::read(&scr::layout::halt_file(&job.prefix()))
            .unwrap()
            .halt_seconds(),
        None,
        "the parameter is not written into the halt file"
    );

    // mid-run: 6 s left at the start, halted once 3 s or less remain, long before the
    // 30 checkpoints of a second each are written
    let job = Job::new();
    let end = (chrono::Utc::now().timestamp() + 6).to_string();
    let out = job.run_ok(
        2,
        &["1000", "30"],
        &[
            ("SCR_END_TIME", end.as_str()),
            ("SCR_HALT_SECONDS", "3"),
            ("TEST_API_SLEEP_MS", "1000"),
            EXITS,
        ],
    );
    assert!(!out.contains("test_api: done"), "{out}");
    assert_eq!(halt_reason(&job).as_deref(), Some("TIME_LIMIT"), "{out}");
    assert!(!job.prefix().join("ckpt.30").exists(), "{out}");

    // a HaltSeconds the halt file sets before the first run wins over the parameter
    let job = Job::new();
    write_halt(&job, |h| h.set_halt_seconds(10));
    let end = (chrono::Utc::now().timestamp() + 600).to_string();
    let env = [
        ("SCR_END_TIME", end.as_str()),
        ("SCR_HALT_SECONDS", "3600"),
        EXITS,
    ];
    let out = job.run_ok(2, &["1000", "2"], &env);
    assert!(out.contains("test_api: done"), "{out}");
}

#[test]
fn halt_by_exit_reason_and_a_previous_finalize_does_not_halt() {
    let job = Job::new();
    write_halt(&job, |h| h.set_exit_reason("JOB_HALTED"));
    let out = job.run_ok(2, &["1000", "3"], &[EXITS]);
    assert!(
        out.contains("Reason: JOB_HALTED") && !out.contains("test_api:"),
        "{out}"
    );

    // SCR_FINALIZE_CALLED left by a finished run does not stop the next one
    write_halt(&job, |h| h.set_exit_reason("SCR_FINALIZE_CALLED"));
    let out = job.run_ok(2, &["1000", "1"], &[EXITS]);
    assert!(out.contains("test_api: done"), "{out}");
}
