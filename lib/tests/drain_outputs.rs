//! Output datasets in the drains: an output the application completed reaches the prefix,
//! or is reported lost by name, and one lost output never keeps a newer checkpoint from
//! draining. The data is guide_steps' (each file says its rank and timestep in every
//! byte), read back from the prefix by the test, never through SCR's records.

mod common;

use common::*;
use scr::HashView;
use scr::flush::{FlushFile, Location};

const SIZE: usize = 1000;

fn hosts(n: u32) -> String {
    (1..=n)
        .map(|i| format!("n{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs guide_steps on `n` emulated nodes, one rank each; asserts it succeeded.
fn steps_on(job: &Job, n: u32, steps: &[&str], env: &[(&str, &str)]) -> String {
    let out = job.run_on(Some(&hosts(n)), n, steps, env);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    t
}

/// `scr postrun -p PREFIX` on the four emulated nodes.
fn postrun(job: &Job) -> (Option<i32>, String) {
    let out = scr_for(job)
        .args(["postrun", "-p"])
        .arg(job.prefix())
        .output()
        .unwrap();
    (out.status.code(), text(&out))
}

/// The state a job killed while it flushed dataset `id` (`name`) leaves: its files only in
/// cache, the flush file saying so, nothing of it on the prefix.
fn as_if_killed_while_flushing(job: &Job, id: u64, name: &str) {
    let prefix = job.prefix();
    std::fs::remove_dir_all(prefix.join(name)).unwrap();
    std::fs::remove_dir_all(scr::layout::dataset_meta_dir(&prefix, id)).unwrap();
    let index_path = scr::layout::index_file(&prefix);
    let mut index = scr::index::IndexFile::read(&index_path).unwrap();
    assert!(index.remove(name));
    index.write(&index_path).unwrap();
    let flush_path = scr::layout::flush_file(&prefix);
    let mut flush = FlushFile::read(&flush_path).unwrap();
    flush.unset_location(id, Location::Pfs);
    flush.set_location(id, Location::Cache);
    flush.write(&flush_path).unwrap();
}

/// Deletes the one cached copy of `file` of dataset `name`, as a node losing it would.
fn lose_cached(job: &Job, name: &str, file: &str) {
    let copies: Vec<_> = job
        .cached(file)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(name))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    std::fs::remove_file(&copies[0]).unwrap();
}

/// Each of `ranks` files of `name` on the prefix holds what rank r wrote at timestep `t`.
fn on_prefix(job: &Job, name: &str, ranks: usize, t: i64) {
    for r in 0..ranks {
        check_file(
            &job.prefix().join(format!("{name}/rank_{r}.ckpt")),
            r,
            t,
            SIZE,
        );
    }
}

/// A 4-rank job leaves an output (killed while flushing it) and a checkpoint only in
/// cache; a 3-rank job drains its cache at SCR_Init: the output reaches the prefix with the
/// checkpoint, and the drain after the smaller job takes its own checkpoint there.
#[test]
fn an_output_cached_by_a_job_of_another_size_reaches_the_prefix() {
    let job = steps_job();
    let env = [("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "4")];
    // (an output that is a checkpoint too stays in cache after its flush)
    steps_on(
        &job,
        4,
        &["init", "ckpt=out.1:1:co", "ckpt=ckpt.2:2", "quit"],
        &env,
    );
    as_if_killed_while_flushing(&job, 1, "out.1");
    let out = steps_on(&job, 3, &["init", "ckpt=ckpt.3:3", "quit"], &env);
    assert!(out.contains("`out.1' drained to the prefix"), "{out}");
    on_prefix(&job, "out.1", 4, 1);
    on_prefix(&job, "ckpt.2", 4, 2);
    let (code, out) = postrun(&job);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("is lost"), "{out}");
    on_prefix(&job, "ckpt.3", 3, 3);
    assert!(job.index_entry("ckpt.3").is_current);
}

/// An output that lost a file in cache cannot be completed: the drain names it, says what
/// the next job does about it, and still drains the newer checkpoint.
#[test]
fn a_lost_output_is_named_and_newer_checkpoints_still_drain() {
    let job = steps_job();
    let env = [
        ("SCR_FLUSH", "0"),
        ("SCR_COPY_TYPE", "SINGLE"),
        ("SCR_CACHE_SIZE", "4"),
    ];
    steps_on(
        &job,
        4,
        &["init", "ckpt=out.1:1:co", "ckpt=ckpt.2:2", "quit"],
        &env,
    );
    as_if_killed_while_flushing(&job, 1, "out.1");
    lose_cached(&job, "out.1", "rank_1.ckpt");
    let (code, out) = postrun(&job);
    assert_eq!(code, Some(1), "an output was lost: {out}");
    assert!(
        out.contains("output dataset 1 (out.1) is lost")
            && out.contains("restarts from ckpt.2, written after it, so it is not written again"),
        "{out}"
    );
    assert!(!out.contains("restarts from before it"), "{out}");
    on_prefix(&job, "ckpt.2", 4, 2);
    assert!(job.index_entry("ckpt.2").is_current);
}

/// An output a smaller job's SCR_Init cannot complete from its own nodes (a file lost on
/// one, another on a node the job does not run on): it says so by name, drains the
/// checkpoint and restarts from it; the drain after the job, on every node, completes the
/// output from parity.
#[test]
fn an_output_a_smaller_job_cannot_complete_is_left_for_the_drain_on_every_node() {
    let job = steps_job();
    let env = [("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "4")];
    steps_on(
        &job,
        4,
        &["init", "ckpt=out.1:1:co", "ckpt=ckpt.2:2", "quit"],
        &env,
    );
    as_if_killed_while_flushing(&job, 1, "out.1");
    lose_cached(&job, "out.1", "rank_1.ckpt");
    let out = steps_on(&job, 3, &["init", "ckpt=ckpt.3:3", "quit"], &env);
    assert!(
        out.contains("output dataset 1 `out.1' of the job of another size could not be completed"),
        "{out}"
    );
    assert!(out.contains("`ckpt.2' drained to the prefix"), "{out}");
    on_prefix(&job, "ckpt.2", 4, 2);
    let (code, out) = postrun(&job);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !out.contains("is lost") && !out.contains("not drained"),
        "{out}"
    );
    on_prefix(&job, "out.1", 4, 1);
    on_prefix(&job, "ckpt.3", 3, 3);
}
