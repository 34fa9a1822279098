//! Which checkpoint a restart loads when the user names one: SCR_CURRENT (SCR v3.1's
//! config.rst and manage.rst) names the checkpoint to restart from for the job allocation it
//! is set in, once. A relaunch in the same allocation (scr-run after a failure, with the
//! batch script's SCR_CURRENT still set) restarts from the newest checkpoint the job wrote
//! since, not from the named one again: that would throw the newer checkpoints away.

mod common;

use common::*;

#[test]
fn scr_current_is_applied_once_per_allocation_not_at_every_relaunch() {
    let job = Job::new();
    let size = "20000";
    job.run_ok(2, &[size, "3"], &[("SCR_FLUSH", "1")]);
    // the batch script names ckpt.2; the run restarts there and writes two more
    let named = [("SCR_CURRENT", "ckpt.2"), ("SCR_FLUSH", "1")];
    let out = job.run_ok(2, &[size, "2"], &named);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    // a relaunch in the same allocation (same job id), SCR_CURRENT still in the environment:
    // the newest checkpoint, timestep 4, not ckpt.2 again
    let out = job.run_ok(2, &[size, "0"], &named);
    assert!(
        out.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{out}"
    );
    // a new allocation (another job id) takes SCR_CURRENT again
    let out = job.run_ok(
        2,
        &[size, "0"],
        &[&named[..], &[("SCR_JOB_ID", "4243")]].concat(),
    );
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
}

/// A run with no job id at all (no resource manager, no scr-run, no SCR_JOB_ID: SCR's
/// `defjobid`) is an allocation of its own: SCR_CURRENT applies at every such run.
#[test]
fn without_a_job_id_every_run_applies_scr_current() {
    let job = Job::new();
    let size = "20000";
    let no_id = ("SCR_JOB_ID", "");
    job.run_ok(2, &[size, "3"], &[("SCR_FLUSH", "1"), no_id]);
    let named = [("SCR_CURRENT", "ckpt.2"), ("SCR_FLUSH", "1"), no_id];
    for _ in 0..2 {
        let out = job.run_ok(2, &[size, "1"], &named);
        assert!(
            out.contains("restarted from ckpt.2 (timestep 2), data verified"),
            "{out}"
        );
    }
}

/// The size of each rank's checkpoint file in the tests below.
const SIZE: &str = "20000";
/// Checkpoints flush every five, the cache holds two: a run killed after its seventh
/// leaves ckpt.5 on the prefix and ckpt.6 and ckpt.7 only in its nodes' caches.
const FLUSH_EVERY_FIVE: [(&str, &str); 3] = [
    ("SCR_FLUSH", "5"),
    ("SCR_CACHE_SIZE", "2"),
    ("TEST_API_NO_FINALIZE", "1"),
];
const FIRST_NODES: &str = "n1,n2,n3,n4";
const OTHER_NODES: &str = "n5,n6,n7,n8";

/// Two job steps of one allocation (one job id) on different nodes, each killed before
/// SCR_Finalize: the first on n1–n4 writes ckpt.1–7 (ckpt.6 and ckpt.7 stay in n1–n4's
/// caches), the second on n5–n8 restarts from ckpt.5 and writes ckpt.6–12, of which
/// ckpt.10 reaches the prefix (ckpt.11 and ckpt.12 stay in n5–n8's caches).
fn steps_on_two_node_sets() -> Job {
    let job = Job::new();
    let out = run_ok_on(&job, FIRST_NODES, 4, &[SIZE, "7"], &FLUSH_EVERY_FIVE);
    assert!(!out.contains("restarted from"), "{out}");
    let out = run_ok_on(&job, OTHER_NODES, 4, &[SIZE, "7"], &FLUSH_EVERY_FIVE);
    assert!(
        out.contains("restarted from ckpt.5 (timestep 5), data verified"),
        "{out}"
    );
    assert!(job.prefix().join("ckpt.10").is_dir());
    assert!(!job.prefix().join("ckpt.12").exists());
    job
}

/// A relaunch on the first nodes, whose caches hold ckpt.7, restarts from ckpt.10 on the
/// prefix: going back to the older cached one would throw away timesteps 8–10. Saying why
/// at SCR_DEBUG=1; and ckpt.12, only in the other nodes' caches, is still reported lost to
/// this run.
#[test]
fn a_newer_checkpoint_on_the_prefix_wins_over_an_older_one_in_cache() {
    let job = steps_on_two_node_sets();
    let env = [&FLUSH_EVERY_FIVE[..2], &[("SCR_DEBUG", "1")]].concat();
    let out = run_ok_on(&job, FIRST_NODES, 4, &[SIZE, "1"], &env);
    assert!(
        out.contains("restarted from ckpt.10 (timestep 10), data verified"),
        "{out}"
    );
    let passed_over = out
        .lines()
        .find(|l| l.contains("ckpt.7") && l.contains("ckpt.10") && l.contains("cache"))
        .unwrap_or_else(|| panic!("no word of ckpt.7 in cache passed over for ckpt.10:\n{out}"));
    assert!(passed_over.contains("prefix"), "{passed_over}");
    let stranded = out
        .lines()
        .find(|l| l.contains("ckpt.12"))
        .unwrap_or_else(|| panic!("no word of ckpt.12 in the other nodes' caches:\n{out}"));
    assert!(stranded.contains("cannot restart from it"), "{stranded}");
}

/// The other nodes' caches hold ckpt.12, newer than anything on the prefix: a relaunch on
/// them restarts from it in cache.
#[test]
fn a_cached_checkpoint_newer_than_the_prefix_is_restarted_from_cache() {
    let job = steps_on_two_node_sets();
    let out = run_ok_on(&job, OTHER_NODES, 4, &[SIZE, "1"], &FLUSH_EVERY_FIVE[..2]);
    assert!(
        out.contains("restarted from ckpt.12 (timestep 12), data verified"),
        "{out}"
    );
}

/// The user makes the older ckpt.5 current (`scr index --current`): the relaunch on the
/// first nodes restarts from it, not from the cached ckpt.7 nor from ckpt.10.
#[test]
fn an_older_checkpoint_the_user_made_current_wins_over_the_cache() {
    let job = steps_on_two_node_sets();
    scr_index_ok(&job, &["--current", "ckpt.5"]);
    let out = run_ok_on(&job, FIRST_NODES, 4, &[SIZE, "1"], &FLUSH_EVERY_FIVE[..2]);
    assert!(
        out.contains("restarted from ckpt.5 (timestep 5), data verified"),
        "{out}"
    );
}

/// SCR_CURRENT names ckpt.5: the relaunch on the first nodes restarts from it.
#[test]
fn scr_current_naming_an_older_checkpoint_wins_over_the_cache() {
    let job = steps_on_two_node_sets();
    let env = [&FLUSH_EVERY_FIVE[..2], &[("SCR_CURRENT", "ckpt.5")]].concat();
    let out = run_ok_on(&job, FIRST_NODES, 4, &[SIZE, "1"], &env);
    assert!(
        out.contains("restarted from ckpt.5 (timestep 5), data verified"),
        "{out}"
    );
}

/// ckpt.10 on the prefix is damaged (a file cut short): the fetch fails, and the restart
/// falls back to the next newest checkpoint, ckpt.7 in the first nodes' caches, not to
/// ckpt.5 on the prefix.
#[test]
fn a_failed_fetch_of_the_newer_checkpoint_falls_back_to_the_cached_one() {
    let job = steps_on_two_node_sets();
    let file = job.prefix().join("ckpt.10/rank_2.ckpt");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let out = run_ok_on(&job, FIRST_NODES, 4, &[SIZE, "1"], &FLUSH_EVERY_FIVE[..2]);
    assert!(
        out.contains("restarted from ckpt.7 (timestep 7), data verified"),
        "{out}"
    );
}

/// api.rst, "SCR_Complete_restart": after a failed restart SCR loads the next most recent
/// checkpoint. When that one is both in cache (SCR_Init rebuilt it) and on the prefix, the
/// cached copy is loaded: the prefix copy may be damaged where the cached one is whole, and
/// fetching it first would delete the good cached copy before finding out.
#[test]
fn after_a_failed_restart_the_next_older_checkpoint_comes_from_cache_before_the_prefix() {
    let job = steps_job();
    let env = [
        ("SCR_COPY_TYPE", "SINGLE"),
        ("SCR_FLUSH", "1"),
        ("SCR_CACHE_SIZE", "2"),
    ];
    write_steps_checkpoints(&job, 2, &env);
    // a byte of ckpt.1's prefix copy flipped: its fetch fails its CRC32
    flip_byte(&job.prefix().join("ckpt.1/rank_1.ckpt"), 100);
    let out = job.run_ok(2, &["init", "restart=reject", "restart", "quit"], &env);
    assert_eq!(
        answers(&out, "restart"),
        [
            "ckpt.2 t=2 data=verified rc=1",
            "ckpt.1 t=1 data=verified rc=0"
        ],
        "{out}"
    );
}

/// Two allocations share a prefix. Allocation A shrinks from 4 to 3 ranks (its SCR_Init
/// drains A's 4-rank checkpoint), allocation B restarts on 4 ranks and leaves its newest
/// checkpoint in B's caches, and A grows back to 4 ranks: A's SCR_Init drains what A's own
/// caches hold of the other size, never B's checkpoint, which the prefix's flush file
/// names but only B's nodes hold; the restart takes the newest 4-rank checkpoint.
#[test]
fn a_drain_at_init_takes_only_what_this_allocations_caches_hold() {
    let job = Job::new();
    let flush_never = [("SCR_FLUSH", "0")];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &[SIZE, "3"], &flush_never);
    let out = run_ok_on(&job, "n1,n2,n3", 3, &[SIZE, "2"], &flush_never);
    assert!(out.contains("drained"), "{out}");
    let b = [("SCR_FLUSH", "0"), ("SCR_JOB_ID", "4243")];
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &[SIZE, "1"], &b);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &[SIZE, "1"], &flush_never);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

/// `scr index --current` names an older checkpoint while the allocation's cache holds the
/// newest, which is on the prefix too: the relaunch in the allocation restarts from the
/// cache, as SCR v3.1 does, and says so at the default level, naming the user's current
/// checkpoint and how to restart from it; SCR_CURRENT then does, and nothing tells to set it.
#[test]
fn an_older_current_checkpoint_passed_over_for_the_cache_is_said_with_the_way_to_it() {
    let job = Job::new();
    run_ok_on(&job, "n1,n2", 2, &[SIZE, "4"], &[("SCR_FLUSH", "1")]);
    scr_index_ok(&job, &["--current", "ckpt.2"]);
    let out = run_ok_on(&job, "n1,n2", 2, &[SIZE, "0"], &[("SCR_FLUSH", "1")]);
    assert!(
        out.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{out}"
    );
    let said = out
        .lines()
        .find(|l| l.contains("current checkpoint is ckpt.2"))
        .unwrap_or_else(|| panic!("no word of the current ckpt.2: {out}"));
    assert!(said.contains("SCR_CURRENT=ckpt.2"), "{said}");
    let out = run_ok_on(
        &job,
        "n1,n2",
        2,
        &[SIZE, "0"],
        &[("SCR_FLUSH", "1"), ("SCR_CURRENT", "ckpt.2")],
    );
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    // SCR_CURRENT chose it: nothing says the cache's ckpt.4 is the restart, nor to set it
    assert!(!out.contains("set SCR_CURRENT=ckpt.2"), "{out}");
    assert!(!out.contains("which the restart takes"), "{out}");
}

/// SCR_CURRENT rolls back to ckpt.5, which only the cache holds (SCR_FLUSH=2 put ckpt.2,
/// ckpt.4 and ckpt.6 on the prefix): the rollback holds for every later run — a relaunch
/// with SCR_CURRENT still set, a new job without it, one whose cache is gone — none starts
/// from ckpt.6 again, the checkpoint the user rolled back from. (The guide: SCR_Current
/// sets the current marker in the index.)
#[test]
fn a_rollback_to_a_checkpoint_only_the_cache_holds_outlasts_the_run() {
    let job = Job::new();
    let size = "20000";
    let every_two = [("SCR_FLUSH", "2"), ("SCR_CACHE_SIZE", "3")];
    job.run_ok(2, &[size, "6"], &every_two);
    let named = [&every_two[..], &[("SCR_CURRENT", "ckpt.5")]].concat();
    let restarted_from_5 = "restarted from ckpt.5 (timestep 5), data verified";
    let out = job.run_ok(2, &[size, "0"], &named);
    assert!(out.contains(restarted_from_5), "{out}");
    // a relaunch in the allocation, SCR_CURRENT still set
    let out = job.run_ok(2, &[size, "0"], &named);
    assert!(out.contains(restarted_from_5), "{out}");
    // a new job, SCR_CURRENT unset
    let out = job.run_ok(
        2,
        &[size, "0"],
        &[&every_two[..], &[("SCR_JOB_ID", "4243")]].concat(),
    );
    assert!(out.contains(restarted_from_5), "{out}");
    // and with every cache gone, from the prefix
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[size, "0"],
        &[&every_two[..], &[("SCR_JOB_ID", "4244")]].concat(),
    );
    assert!(out.contains(restarted_from_5), "{out}");
}

/// A checkpoint newer than any on the prefix that this job's nodes cannot rebuild, with
/// writers' nodes the job does not run on (which may be up and hold the rest), stops
/// SCR_Init naming those nodes, instead of going on from an older checkpoint while its
/// pieces age out of cache: same size, fewer nodes, after n2 was lost, rank 3's files are
/// on n4. Said lost with SCR_EXCLUDE_NODES, the job goes on; `scr postrun` over the nodes
/// that are up keeps the checkpoint, and the same job then restarts from it.
#[test]
fn a_checkpoint_whose_rest_may_be_on_nodes_the_job_does_not_run_on_stops_init() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "2"], &env);
    lose_node(&job, "n2");
    let out = job.run_on(Some("n1:2,n3:2"), 4, &["3000", "0"], &env);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("ckpt.2") && t.contains("n[2,4]") && t.contains("SCR_EXCLUDE_NODES=n[2,4]"),
        "{t}"
    );
    // told the nodes are lost, it goes on (from the start: nothing older is whole)
    let said_lost = [env[0], env[1], ("SCR_EXCLUDE_NODES", "n2,n4")];
    let out = run_ok_on(&job, "n1:2,n3:2", 4, &["3000", "0"], &said_lost);
    assert!(!out.contains("restarted from"), "{out}");
    // ckpt.2's pieces stayed: a drain of the nodes that are up keeps it
    let mut postrun = scr_for(&job);
    postrun
        .args(["postrun", "-p"])
        .arg(job.prefix())
        .env("SCR_EXCLUDE_NODES", "n2");
    let drained = postrun.output().unwrap();
    assert!(drained.status.success(), "{}", text(&drained));
    let out = run_ok_on(&job, "n1:2,n3:2", 4, &["3000", "0"], &env);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
}

#[test]
fn a_node_name_the_host_list_syntax_cannot_hold_does_not_stop_init() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "2"], &env);
    // "n[3" cannot be written in a host list: which writers are elsewhere is unknown, and
    // unknown is no reason to stop (nothing here rebuilds ckpt.2, so the job starts over)
    let out = run_ok_on(&job, "n1:2,n[3:2", 4, &["3000", "0"], &env);
    assert!(!out.contains("restarted from"), "{out}");
}

/// `scr index --drop` edits the index only: within the allocation the cache still holds the
/// dropped checkpoint and is the restart, as in SCR v3.1 — said at the default level, with
/// the way back past it, since whoever dropped it may have meant never to load it again.
#[test]
fn a_dropped_checkpoint_the_cache_still_holds_is_said_with_the_way_past_it() {
    let job = Job::new();
    let flush = [("SCR_FLUSH", "1")];
    run_ok_on(&job, "n1,n2", 2, &[SIZE, "4"], &flush);
    scr_index_ok(&job, &["--drop", "ckpt.4"]);
    let out = run_ok_on(&job, "n1,n2", 2, &[SIZE, "0"], &flush);
    assert!(
        out.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{out}"
    );
    let said = out
        .lines()
        .find(|l| l.contains("ckpt.4 (dataset 4) was dropped"))
        .unwrap_or_else(|| panic!("no word of the dropped ckpt.4: {out}"));
    assert!(said.contains("SCR_CURRENT=ckpt.3"), "{said}");
    assert!(!said.contains("  "), "one line of words: {said:?}");
    let named = [flush[0], ("SCR_CURRENT", "ckpt.3")];
    let out = run_ok_on(&job, "n1,n2", 2, &[SIZE, "0"], &named);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
    assert!(!out.contains("was dropped"), "{out}");
}

/// `scr index --current ckpt.1`, then ckpt.1 is found damaged when fetched and nothing
/// older can be loaded: that job starts over (the restart goes back, never forward, as in
/// SCR v3.1), and the failed checkpoint is current no more, so the next job restarts from
/// the newest one that can be loaded instead of starting over again for good.
#[test]
fn a_current_checkpoint_that_fails_its_fetch_leaves_the_next_job_the_newest() {
    let job = Job::new();
    let flush = [("SCR_FLUSH", "1")];
    run_ok_on(&job, "n1,n2", 2, &[SIZE, "3"], &flush);
    scr_index_ok(&job, &["--current", "ckpt.1"]);
    flip_byte(&job.prefix().join("ckpt.1/rank_1.ckpt"), 100);
    delete_caches(&job);
    let out = run_ok_on(&job, "n1,n2", 2, &[SIZE, "0"], &flush);
    assert!(!out.contains("restarted from"), "{out}");
    delete_caches(&job);
    let out = run_ok_on(&job, "n1,n2", 2, &[SIZE, "0"], &flush);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

/// `scr index --prefix PREFIX ARGS` for `job`, which must succeed.
fn scr_index_ok(job: &Job, args: &[&str]) {
    let o = scr_for(job)
        .args(["index", "--prefix"])
        .arg(job.prefix())
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
}
