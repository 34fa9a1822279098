//! Names and paths a job writes again on the prefix: a fallback restart writes its
//! checkpoints' names again, and a program that keeps its state in one directory
//! (`state/rank_N.ckpt`) writes every checkpoint's files at the same paths. The window
//! (SCR_PREFIX_SIZE) and the flush must each touch only what is theirs. What a restart read
//! is checked by the programs themselves (test_api, guide_steps), never taken from SCR.

mod common;

use common::*;

/// Flips one byte of a file (same size: only the CRC can tell).
fn flip(path: &std::path::Path) {
    flip_byte(path, 100);
}

const NODES: &str = "n1,n2,n3,n4";

#[test]
fn the_window_keeps_a_checkpoint_written_again_after_a_fallback_restart() {
    let job = Job::new();
    let window = [("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "2")];
    run_ok_on(&job, NODES, 4, &["6000", "3"], &window);
    flip(&job.prefix().join("ckpt.3/rank_0.ckpt"));
    delete_caches(&job);
    // ckpt.3 fails its fetch, the job falls back to ckpt.2 and writes ckpt.3 and ckpt.4
    let out = run_ok_on(&job, NODES, 4, &["6000", "2"], &window);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    let kept: Vec<(String, bool)> = job
        .index()
        .entries()
        .into_iter()
        .map(|e| (e.name, e.failed.is_empty()))
        .collect();
    assert!(
        kept.starts_with(&[("ckpt.4".into(), true), ("ckpt.3".into(), true)]),
        "{kept:?}"
    );
    // the newest is lost too: the restart must find the new ckpt.3, whole
    flip(&job.prefix().join("ckpt.4/rank_2.ckpt"));
    delete_caches(&job);
    let out = run_ok_on(&job, NODES, 4, &["6000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

#[test]
fn the_window_keeps_the_files_of_a_checkpoint_written_where_an_older_one_was() {
    let job = steps_job();
    let env = [("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "1")];
    job.run_ok(
        2,
        &[
            "init",
            "start=c1:c",
            "write=state/rank_%r.ckpt:1",
            "complete",
            "start=c2:c",
            "write=state/rank_%r.ckpt:2",
            "complete",
            "finalize",
        ],
        &env,
    );
    delete_caches(&job);
    let out = job.run_ok(
        2,
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
    assert_eq!(answer(&out, "have"), "flag=1 name=c2 rc=0", "{out}");
    assert!(!out.contains("data bad"), "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
}

#[test]
fn a_failed_flush_into_a_fixed_directory_leaves_the_last_flushed_checkpoint_whole() {
    let job = steps_job();
    // flips a byte of rank 1's cached files: its c2 no longer has the CRC it completed with
    let flip = job.dir.path().join("flip.sh");
    std::fs::write(
        &flip,
        format!(
            "find {} -name rank_1.ckpt -type f | while read -r f; do \
             printf '\\377' | dd of=\"$f\" bs=1 seek=100 conv=notrunc 2>/dev/null; done\n",
            job.dir.path().join("cache").display()
        ),
    )
    .unwrap();
    let env = [
        ("SCR_FLUSH", "2"),
        ("SCR_CRC_ON_COPY", "1"),
        ("SCR_COPY_TYPE", "SINGLE"),
    ];
    let sh = format!("sh=sh {}", flip.display());
    let mut steps = vec!["init"];
    let writes = [
        "write=state/rank_%r.ckpt:0",
        "write=state/rank_%r.ckpt:1",
        "write=state/rank_%r.ckpt:2",
    ];
    for (name, write) in ["start=c0:c", "start=c1:c", "start=c2:c"]
        .iter()
        .zip(writes)
    {
        steps.extend([*name, write, "complete"]);
    }
    steps.extend([sh.as_str(), "finalize"]);
    let out = job.run_ok(2, &steps, &env);
    assert!(
        out.contains("not flushed"),
        "rank 1's copy is refused: {out}"
    );
    let mut left: Vec<String> = std::fs::read_dir(job.prefix().join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["rank_0.ckpt", "rank_1.ckpt"], "nothing else: {out}");
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[
            "init",
            "have",
            "startrestart",
            "read=state/rank_%r.ckpt:1",
            "completerestart",
            "quit",
        ],
        &[],
    );
    assert_eq!(answer(&out, "have"), "flag=1 name=c1 rc=0", "{out}");
    assert!(!out.contains("data bad"), "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
}

/// `scr postrun` for the job's prefix with node `down` lost; its exit code and output.
fn postrun_without(job: &Job, down: &str) -> (Option<i32>, String) {
    let out = scr_for(job)
        .args(["postrun", "-p"])
        .arg(job.prefix())
        .env("SCR_EXCLUDE_NODES", down)
        .output()
        .unwrap();
    (out.status.code(), text(&out))
}

#[test]
fn the_drain_rebuilds_a_checkpoint_written_again_over_the_older_ones_files() {
    let job = Job::new();
    let xor = ("SCR_COPY_TYPE", "XOR");
    run_ok_on(&job, NODES, 4, &["6000", "3"], &[("SCR_FLUSH", "1"), xor]);
    flip(&job.prefix().join("ckpt.3/rank_0.ckpt"));
    delete_caches(&job);
    // the job falls back to ckpt.2, writes ckpt.3 again and dies before flushing it
    let out = run_ok_on(
        &job,
        NODES,
        4,
        &["6000", "1"],
        &[("SCR_FLUSH", "0"), ("TEST_API_NO_FINALIZE", "1"), xor],
    );
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    lose_node(&job, "n2");
    let (code, out) = postrun_without(&job, "n2");
    assert_eq!(code, Some(0), "{out}");
    let index = job.index();
    let current: Vec<(u64, bool)> = index
        .entries()
        .into_iter()
        .filter(|e| e.is_current)
        .map(|e| (e.id, e.complete))
        .collect();
    assert_eq!(
        current,
        [(4, true)],
        "the new ckpt.3 is drained and current: {out}"
    );
    assert!(
        !job.prefix().join(".scr/scr.dataset.4/drained").exists(),
        "every drained file is in its place: {out}"
    );
    delete_caches(&job);
    let out = run_ok_on(&job, NODES, 4, &["6000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

#[test]
fn a_drain_that_cannot_complete_a_checkpoint_written_again_leaves_the_older_ones_files_as_they_were()
 {
    let job = Job::new();
    let xor = ("SCR_COPY_TYPE", "XOR");
    run_ok_on(&job, NODES, 4, &["6000", "3"], &[("SCR_FLUSH", "1"), xor]);
    flip(&job.prefix().join("ckpt.3/rank_0.ckpt"));
    let before: Vec<Vec<u8>> = (0..4)
        .map(|r| std::fs::read(job.prefix().join(format!("ckpt.3/rank_{r}.ckpt"))).unwrap())
        .collect();
    delete_caches(&job);
    run_ok_on(
        &job,
        NODES,
        4,
        &["6000", "1"],
        &[("SCR_FLUSH", "0"), ("TEST_API_NO_FINALIZE", "1"), xor],
    );
    // two members of the one XOR set lost: the new ckpt.3 cannot be completed
    lose_node(&job, "n2");
    lose_node(&job, "n3");
    let (code, out) = postrun_without(&job, "n[2-3]");
    assert_eq!(code, Some(1), "{out}");
    let after: Vec<Vec<u8>> = (0..4)
        .map(|r| std::fs::read(job.prefix().join(format!("ckpt.3/rank_{r}.ckpt"))).unwrap())
        .collect();
    assert!(
        before == after,
        "no file of the new ckpt.3 at its place: {out}"
    );
    let e = job
        .index()
        .entries()
        .into_iter()
        .find(|e| e.id == 4)
        .unwrap();
    assert!(!e.complete && !e.is_current, "{e:?}");
}

/// A node's `scr copy` killed after it copied the application's file but before its
/// filemap: the drain finds that node's rank lost, and the file it left waiting in the
/// dataset's drained directory makes way for the one rebuilt from parity instead of
/// stopping the drain.
#[test]
fn a_drain_rebuilds_a_rank_whose_cut_short_copy_left_a_file_waiting() {
    let job = Job::new();
    let xor = ("SCR_COPY_TYPE", "XOR");
    run_ok_on(&job, NODES, 4, &["6000", "1"], &[("SCR_FLUSH", "0"), xor]);
    // what a copy killed on n3 (rank 2) before its filemap leaves
    let cached = job
        .cached("rank_2.ckpt")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("node.n3"))
        .expect("rank 2's file in n3's cache");
    let waiting = job.prefix().join(".scr/scr.dataset.1/drained/ckpt.1");
    std::fs::create_dir_all(&waiting).unwrap();
    std::fs::copy(&cached, waiting.join("rank_2.ckpt")).unwrap();
    lose_node(&job, "n3");
    let (code, out) = postrun_without(&job, "n3");
    assert_eq!(code, Some(0), "{out}");
    delete_caches(&job);
    let out = run_ok_on(&job, NODES, 4, &["6000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}
