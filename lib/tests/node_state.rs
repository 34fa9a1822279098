//! A job killed in the middle of a checkpoint, after which one node lost part of its own
//! state (its control directory, its filemap, its cache) while the other nodes kept
//! theirs: the ranks know different sets of cached datasets, yet every later run restarts
//! and checkpoints, each rank taking the same decisions as the others (real `mpiexec` over
//! emulated nodes n1–n4, one rank a node).

mod common;

use common::*;
use std::path::Path;

const HOSTS: &str = "n1,n2,n3,n4";
const RANKS: u32 = 4;
/// Two datasets in cache and no flush before the job ends: the half-written checkpoint
/// stays in cache beside the last good one, and takes part in the next eviction.
const ENV: &[(&str, &str)] = &[("SCR_CACHE_SIZE", "2"), ("SCR_FLUSH", "10")];
/// Bytes of data a rank's file holds (guide_steps' default).
const SIZE: usize = 1000;

/// Writes checkpoints ckpt.1 … ckpt.4, then starts ckpt.5 and writes every rank's file of
/// it, and ends there: a job killed in the middle of its fifth checkpoint.
fn killed_in_the_fifth_checkpoint(job: &Job, env: &[(&str, &str)]) {
    let mut steps: Vec<String> = vec!["init".into()];
    steps.extend((1..=4).map(|t| format!("ckpt=ckpt.{t}:{t}")));
    steps.extend([
        "start=ckpt.5:c".into(),
        "write=ckpt.5/rank_%r.ckpt:5".into(),
        "quit".into(),
    ]);
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let out = run_ok_on(job, HOSTS, RANKS, &steps, env);
    for t in 1..=4 {
        assert_eq!(answer(&out, &format!("ckpt=ckpt.{t}:{t}")), "rc=0", "{out}");
    }
}

/// The runs after the damage: the next restarts from ckpt.4 and writes ckpt.5 and ckpt.6
/// (the first evicts from a cache whose datasets the ranks know differently); the one
/// after restarts from ckpt.6 and flushes it, whose files on the prefix each hold what
/// their rank wrote.
fn later_runs_restart_and_checkpoint(job: &Job, damage: &str) {
    let out = run_ok_on(
        job,
        HOSTS,
        RANKS,
        &["init", "restart", "ckpt=ckpt.5:5", "ckpt=ckpt.6:6", "quit"],
        ENV,
    );
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.4 t=4 data=verified rc=0",
        "{damage}: {out}"
    );
    assert_eq!(answer(&out, "ckpt=ckpt.5:5"), "rc=0", "{damage}: {out}");
    assert_eq!(answer(&out, "ckpt=ckpt.6:6"), "rc=0", "{damage}: {out}");
    let out = run_ok_on(
        job,
        HOSTS,
        RANKS,
        &["init", "restart", "finalize", "quit"],
        ENV,
    );
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.6 t=6 data=verified rc=0",
        "{damage}: {out}"
    );
    assert_eq!(answer(&out, "finalize"), "rc=0", "{damage}: {out}");
    assert_flushed(job, 6);
}

/// Every rank's file of checkpoint `ckpt.t` on the prefix holds what that rank wrote.
fn assert_flushed(job: &Job, t: i64) {
    for rank in 0..RANKS as usize {
        check_file(
            &job.prefix().join(format!("ckpt.{t}/rank_{rank}.ckpt")),
            rank,
            t,
            SIZE,
        );
    }
}

/// The control directory of `node` (its filemaps).
fn control_dir(job: &Job, node: &str) -> std::path::PathBuf {
    let [_, cntl] = node_dirs(job, node);
    assert!(cntl.is_dir(), "{} should exist", cntl.display());
    cntl
}

/// Keeps the first `len` bytes of `file`.
fn truncate(file: &Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    assert!(f.metadata().unwrap().len() > len, "{}", file.display());
    f.set_len(len).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn a_node_that_lost_its_control_directory_checkpoints_with_the_others() {
    // rank 0's node (rank 0 decides much alone) and another one
    for node in ["n1", "n3"] {
        let job = steps_job();
        killed_in_the_fifth_checkpoint(&job, ENV);
        std::fs::remove_dir_all(control_dir(&job, node)).unwrap();
        later_runs_restart_and_checkpoint(&job, &format!("{node}'s control directory lost"));
    }
}

#[test]
fn a_node_whose_filemap_is_damaged_checkpoints_with_the_others() {
    for (damage, len) in [("truncated", 40), ("emptied", 0)] {
        let job = steps_job();
        killed_in_the_fifth_checkpoint(&job, ENV);
        truncate(&control_dir(&job, "n1").join("filemap_0.scrinfo"), len);
        later_runs_restart_and_checkpoint(&job, &format!("n1's filemap {damage}"));
    }
}

#[test]
fn a_node_that_lost_its_cache_but_kept_its_control_directory_checkpoints_with_the_others() {
    let job = steps_job();
    killed_in_the_fifth_checkpoint(&job, ENV);
    let [cache, _] = node_dirs(&job, "n1");
    std::fs::remove_dir_all(&cache).unwrap();
    later_runs_restart_and_checkpoint(&job, "n1's cache lost");
}

#[test]
fn a_run_that_lost_the_only_copy_of_the_newest_checkpoint_finalizes_cleanly() {
    // without redundancy nothing rebuilds rank 0's files of ckpt.4 once n1's cache is gone:
    // the other ranks' files of it stay in cache, and SCR_Finalize has nothing to flush
    let env = [ENV, &[("SCR_COPY_TYPE", "SINGLE")]].concat();
    let job = steps_job();
    killed_in_the_fifth_checkpoint(&job, &env);
    let [cache, _] = node_dirs(&job, "n1");
    std::fs::remove_dir_all(&cache).unwrap();
    let out = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &["init", "restart", "finalize", "quit"],
        &env,
    );
    assert_eq!(answer(&out, "restart"), "none (have rc=0 flag=0)", "{out}");
    assert_eq!(answer(&out, "finalize"), "rc=0", "{out}");
    assert!(!out.contains("ERROR"), "{out}");
    // the job starts over, and its first checkpoint reaches the prefix whole
    let out = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &["init", "restart", "ckpt=ckpt.1:1", "finalize", "quit"],
        &env,
    );
    assert_eq!(answer(&out, "restart"), "none (have rc=0 flag=0)", "{out}");
    assert_eq!(answer(&out, "ckpt=ckpt.1:1"), "rc=0", "{out}");
    assert_eq!(answer(&out, "finalize"), "rc=0", "{out}");
    assert_flushed(&job, 1);
}
