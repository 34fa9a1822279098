//! Dataset ids are never reused within a prefix: whatever dropped, discarded or forgot a
//! dataset (SCR_Drop, `scr index --drop`, a reshape, lost caches, a job without `scr
//! prerun`), the next dataset gets an id nothing ever recorded, so no stale flush-file
//! entry, filemap or `fmap.*` is ever read for it. What a restart reads is checked by
//! test_api against the rank, step and offset each byte encodes.

mod common;

use common::*;

const HOSTS: &str = "n1,n2,n3,n4";

/// `scr ARGS` for the job's prefix, in the job's environment.
fn scr(job: &Job, args: &[&str], extra: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = scr_for(job);
    cmd.args(args)
        .current_dir(job.prefix())
        .env("SCR_PREFIX", job.prefix());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), text(&out))
}

fn restarted(out: &str, t: u32) -> bool {
    out.contains(&format!(
        "restarted from ckpt.{t} (timestep {t}), data verified"
    ))
}

/// A job that writes `ckpts` checkpoints of `size` bytes only to cache and dies after them.
fn killed_after(job: &Job, size: &str, ckpts: &str, extra: &[(&str, &str)]) {
    let env = [
        &[
            ("SCR_FLUSH", "0"),
            ("TEST_API_NO_FINALIZE", "1"),
            ("SCR_COPY_TYPE", "XOR"),
        ][..],
        extra,
    ]
    .concat();
    run_ok_on(job, HOSTS, 4, &[size, ckpts], &env);
}

/// A checkpoint dropped from the index leaves its entry in the flush file (no `scr prerun`
/// ran); the next job's checkpoint must still be drained, not taken for the dropped one.
#[test]
fn a_dropped_checkpoints_flush_entry_never_stops_the_drain_of_the_next() {
    let job = Job::new();
    run_ok_on(&job, HOSTS, 4, &["4000", "1"], &[("SCR_FLUSH", "1")]);
    let (code, out) = scr(&job, &["index", "--drop", "ckpt.1"], &[]);
    assert_eq!(code, Some(0), "{out}");
    delete_caches(&job);
    killed_after(&job, "4000", "1", &[]);
    let (code, out) = scr(&job, &["postrun"], &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("(ckpt.1) drained and current"), "{out}");
    delete_caches(&job);
    let out = run_ok_on(&job, HOSTS, 4, &["4000", "0"], &[]);
    assert!(restarted(&out, 1), "{out}");
}

/// A drained checkpoint is dropped and the caches are lost; a new job of the same job id
/// writes checkpoints of another size and other file names, and a node is down at its
/// drain. What the drain
/// publishes must be the new job's alone: the old drain's per-rank records on the prefix
/// never stand in for the rank the lost node held.
#[test]
fn a_drain_never_publishes_a_dropped_checkpoints_files_with_a_new_ones() {
    let job = Job::new();
    killed_after(&job, "4000", "2", &[]);
    let (code, out) = scr(&job, &["postrun"], &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("(ckpt.2) drained and current"), "{out}");
    let (code, out) = scr(&job, &["index", "--drop", "ckpt.2"], &[]);
    assert_eq!(code, Some(0), "{out}");
    delete_caches(&job);

    // (files of other names than the dropped checkpoint's: ckpt.2/0/rank_R.0.ckpt)
    let files = [("TEST_API_FILES", "1")];
    killed_after(&job, "6000", "2", &files);
    lose_node(&job, "n4");
    let (code, out) = scr(&job, &["postrun"], &[("SCR_EXCLUDE_NODES", "n4")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("(ckpt.2) drained and current"), "{out}");
    delete_caches(&job);
    let out = run_ok_on(&job, HOSTS, 4, &["6000", "0"], &files);
    assert!(restarted(&out, 2), "{out}");
}

/// A reshape's SCR_Init discards what it cannot restart (here a failed checkpoint, newer
/// than the one it drains); the id of what it discarded is never given to a new dataset.
#[test]
fn a_discarded_datasets_id_is_never_given_again() {
    let job = Job::new();
    // ids 1 (ckpt.1) and 2 (the failed timestep 2, which test_api reports with exit 1)
    let out = job.run_on(
        Some(HOSTS),
        4,
        &["6000", "2"],
        &[
            ("SCR_FLUSH", "0"),
            ("TEST_API_NO_FINALIZE", "1"),
            ("TEST_API_INVALID", "2"),
        ],
    );
    assert!(text(&out).contains("checkpoint 2 failed"), "{}", text(&out));
    let out = run_ok_on(
        &job,
        "n1,n2,n3",
        3,
        &["6000", "1"],
        &[("SCR_RESHAPE", "1"), ("SCR_FLUSH", "1")],
    );
    assert!(restarted(&out, 1), "{out}");
    let id = job.index_entry("ckpt.2").id;
    assert!(
        id > 2,
        "the new ckpt.2 took id {id}, which the failed dataset had"
    );
}
