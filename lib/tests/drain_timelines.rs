//! The drain after a job that went back to an older checkpoint: what the caches still hold
//! of the abandoned timeline (a checkpoint name written again since, a checkpoint a restart
//! from before it superseded) stays there and is said once, and the prefix keeps the newer
//! timeline's files. Each checkpoint's data encodes its timestep, the new timeline's 30 in
//! `ckpt.3` where the abandoned one wrote 3, so a restart says which one it read.

mod common;

use common::scr_run::{hydra_on, output, scr_run_in};
use common::*;

/// The allocation: the first run on n1–n4, the run after the rollback on n5–n8.
const ALLOCATION: &str = "n[1-8]";

/// `scr-run` of `steps` on 4 ranks of `hosts`, one run, the allocation's eight nodes.
fn scr_run_steps(job: &Job, hosts: &str, steps: &[&str], env: &[(&str, &str)]) -> String {
    let app = job.app.to_string_lossy().into_owned();
    let program: Vec<&str> = std::iter::once(app.as_str())
        .chain(steps.iter().copied())
        .collect();
    let base = [("SCR_NODELIST", ALLOCATION), ("SCR_RUNS", "1")];
    let env: Vec<(&str, &str)> = base.iter().chain(env).copied().collect();
    let (out, t) = output(scr_run_in(job, &hydra_on(hosts, 4, &program), &env));
    assert_eq!(out.status.code(), Some(0), "{t}");
    t
}

/// `scr` for the scr-run jobs' id and allocation.
fn scr_in_allocation(job: &Job) -> std::process::Command {
    let mut cmd = scr_for(job);
    cmd.env("SCR_JOB_ID", "5151")
        .env("SCR_NODELIST", ALLOCATION)
        .env("SCR_PREFIX", job.prefix())
        .current_dir(job.prefix());
    cmd
}

/// The lines of the drain's words that name dataset `id`.
fn said_of(out: &str, id: u64) -> Vec<&str> {
    let pattern = format!("dataset {id} (");
    out.lines()
        .filter(|l| l.contains("scr_postrun") && l.contains(&pattern))
        .collect()
}

/// Runs ckpt.1…ckpt.3 on n1–n4, each flushed.
fn three_flushed(job: &Job) {
    let first = scr_run_steps(
        job,
        "n1,n2,n3,n4",
        &[
            "init",
            "ckpt=ckpt.1:1",
            "ckpt=ckpt.2:2",
            "ckpt=ckpt.3:3",
            "finalize",
        ],
        &[("SCR_FLUSH", "1"), ("SCR_CACHE_SIZE", "3")],
    );
    assert_eq!(answer(&first, "ckpt=ckpt.3:3"), "rc=0", "{first}");
}

/// [`three_flushed`], then makes ckpt.2 current.
fn three_flushed_then_back_to_the_second(job: &Job) {
    three_flushed(job);
    let out = scr_in_allocation(job)
        .args(["index", "--current", "ckpt.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// The user guide's rollback within one allocation: the second run restarts from ckpt.2 on
/// other nodes and writes ckpt.3 again, flushed. The drain at its end leaves the first
/// run's ckpt.3, still cached on n1–n4, where it is, saying so once, and the next job
/// restarts from the new ckpt.3.
#[test]
fn the_drain_after_a_rollback_leaves_the_abandoned_namesake_in_cache() {
    let job = steps_job();
    three_flushed_then_back_to_the_second(&job);
    let second = scr_run_steps(
        &job,
        "n5,n6,n7,n8",
        &["init", "restart", "ckpt=ckpt.3:30", "finalize"],
        &[("SCR_FLUSH", "1"), ("SCR_CURRENT", "ckpt.2")],
    );
    assert_eq!(
        answer(&second, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{second}"
    );
    assert_eq!(answer(&second, "ckpt=ckpt.3:30"), "rc=0", "{second}");
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.3/rank_{r}.ckpt")),
            r,
            30,
            1000,
        );
    }
    // a new job restarts from the new timeline's ckpt.3, from the prefix
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["init", "restart", "quit"], &[]);
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.3 t=30 data=verified rc=0",
        "{second}\n{out}"
    );
    let said = said_of(&second, 3);
    assert_eq!(said.len(), 1, "said once: {second}");
    assert!(said[0].contains("abandoned timeline"), "{second}");
    assert!(!second.contains("draining dataset 3"), "{second}");
}

/// The job the rollback left behind never drained its last checkpoint (it ended without
/// one); the run after the rollback, on other nodes, restarts from ckpt.2 and writes
/// ckpt.3 again, left only in cache, then loses a node holding its only copy of a rank.
/// The drain cannot complete the new ckpt.3 and steps back, but not onto the first run's
/// ckpt.3: a restart from before it abandoned it. The next job restarts from ckpt.2.
#[test]
fn a_drain_stepping_back_never_takes_a_checkpoint_a_restart_abandoned() {
    let job = steps_job();
    let in_allocation = [("SCR_JOB_ID", "5151"), ("SCR_COPY_TYPE", "SINGLE")];
    let first = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &[
            "init",
            "ckpt=ckpt.1:1",
            "ckpt=ckpt.2:2",
            "ckpt=ckpt.3:3",
            "quit",
        ],
        &[
            &in_allocation[..],
            &[("SCR_FLUSH", "2"), ("SCR_CACHE_SIZE", "3")],
        ]
        .concat(),
    );
    assert_eq!(answer(&first, "ckpt=ckpt.3:3"), "rc=0", "{first}");
    assert!(!job.prefix().join("ckpt.3").exists(), "{first}");
    let second = run_ok_on(
        &job,
        "n5,n6,n7,n8",
        4,
        &["init", "restart", "ckpt=ckpt.3:30", "quit"],
        &[&in_allocation[..], &[("SCR_FLUSH", "2")]].concat(),
    );
    assert_eq!(
        answer(&second, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{second}"
    );
    assert_eq!(answer(&second, "ckpt=ckpt.3:30"), "rc=0", "{second}");
    // n5, rank 0's node in the second run, is lost with its cache
    for d in ["cache", "cntl"] {
        let node = job
            .dir
            .path()
            .join(format!("{d}/{}/scr.5151/node.n5", user()));
        std::fs::remove_dir_all(&node).unwrap();
    }
    let out = scr_in_allocation(&job).arg("postrun").output().unwrap();
    let drain = text(&out);
    assert!(!job.prefix().join("ckpt.3/rank_1.ckpt").exists(), "{drain}");
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["init", "restart", "quit"], &[]);
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{drain}\n{out}"
    );
    assert!(
        drain.contains("dataset 4 (ckpt.3) cannot be completed"),
        "{drain}"
    );
    let said = said_of(&drain, 3);
    assert_eq!(said.len(), 1, "said once: {drain}");
    assert!(said[0].contains("abandoned timeline"), "{drain}");
}

/// A program that writes every checkpoint, each output too, to the same paths: flushing
/// ckpt.2 replaced ckpt.1's files on the prefix, and ckpt.1 left the index, while the
/// cache keeps both. The drain never puts ckpt.1 back over ckpt.2's files; it says why,
/// and the next job restarts from ckpt.2.
#[test]
fn the_drain_never_places_a_dataset_over_a_newer_ones_files() {
    let job = steps_job();
    let out = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &[
            "init",
            "start=ckpt.1:co",
            "write=state/rank_%r.ckpt:1",
            "complete",
            "start=ckpt.2:co",
            "write=state/rank_%r.ckpt:2",
            "complete",
            "finalize",
        ],
        &[("SCR_FLUSH", "1"), ("SCR_CACHE_SIZE", "2")],
    );
    assert_eq!(answers(&out, "complete"), ["rc=0", "rc=0"], "{out}");
    let out = scr_for(&job)
        .arg("postrun")
        .env("SCR_PREFIX", job.prefix())
        .output()
        .unwrap();
    let drain = text(&out);
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("state/rank_{r}.ckpt")),
            r,
            2,
            1000,
        );
    }
    delete_caches(&job);
    let out = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &[
            "init",
            "have",
            "startrestart",
            "read=state/rank_%r.ckpt:2",
            "completerestart",
            "quit",
        ],
        &[],
    );
    assert_eq!(
        answer(&out, "have"),
        "flag=1 name=ckpt.2 rc=0",
        "{drain}\n{out}"
    );
    assert!(!out.contains("data bad"), "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
    let said = said_of(&drain, 1);
    assert!(
        said.iter().any(|l| l.contains("is not put on the prefix")),
        "{drain}"
    );
}

/// ckpt.3, flushed, is dropped from the index (`scr index --drop`); the next run, on other
/// nodes, restarts from ckpt.2 and writes nothing. The drain does not put ckpt.3 back from
/// the first run's caches (saying so once), and the next job restarts from ckpt.2.
#[test]
fn the_drain_never_undoes_a_drop_from_the_index() {
    let job = steps_job();
    three_flushed(&job);
    let out = scr_in_allocation(&job)
        .args(["index", "--drop", "ckpt.3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let second = scr_run_steps(
        &job,
        "n5,n6,n7,n8",
        &["init", "restart", "finalize"],
        &[("SCR_FLUSH", "1")],
    );
    assert_eq!(
        answer(&second, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{second}"
    );
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["init", "restart", "quit"], &[]);
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{second}\n{out}"
    );
    let said = said_of(&second, 3);
    assert_eq!(said.len(), 1, "said once: {second}");
    assert!(said[0].contains("dropped from the index"), "{second}");
}
