//! SCR v3.1's user guide, `integration.rst` (Integrate SCR): restarting with SCR's loop,
//! restarting without SCR's API, and configuring SCR from the application, with real
//! `mpiexec` jobs of `lib/tests/c/guide_steps.c`. Expected values come from the guide and
//! from what the program itself read back, never from SCR's own records.

mod common;

use common::*;
use std::path::PathBuf;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

fn on_prefix(job: &Job, name: &str) -> bool {
    job.prefix().join(name).exists()
}

/// integration.rst, "Restart with SCR": the application loops on SCR_Have_restart,
/// Start, read, Complete; a checkpoint it cannot read fails on every rank and SCR offers
/// the next most recent, newest to oldest, until one reads back whole.
#[test]
fn the_restart_loop_walks_back_until_a_checkpoint_reads_back_whole() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    // rank 1's cached file of ckpt.3 keeps its size but not its data
    let [cached] = job.cached("ckpt.3/rank_1.ckpt").try_into().unwrap();
    std::fs::write(&cached, vec![0u8; 1008]).unwrap();
    let out = job.run_ok(2, &["init", "restartloop", "quit"], &env);
    assert_eq!(
        answers(&out, "restart"),
        ["ckpt.3 t=-2 data=bad rc=1", "ckpt.2 t=2 data=verified rc=0"],
        "{out}"
    );
    assert_eq!(answer(&out, "restartloop"), "restarted");
}

/// integration.rst, "Restart without SCR": an application that reads the prefix itself
/// sets SCR_FLUSH_ON_RESTART=1 (SCR_Init flushes the cached checkpoint) and SCR_FETCH=0,
/// reads its files after SCR_Init, and names what it read with SCR_Current, so that the
/// datasets it writes next are ordered after it: here SCR_FLUSH=2 goes on flushing every
/// second checkpoint counted from the one read, also when the cache was lost.
/// api.rst, "SCR_Current": the same, for an application that does not call the restart API.
#[test]
fn restarting_without_scrs_api_reads_the_prefix_and_scr_current_keeps_the_flush_count() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "2")];
    write_steps_checkpoints(&job, 3, &env);
    assert!(on_prefix(&job, "ckpt.2") && !on_prefix(&job, "ckpt.3"));
    let own = [
        SINGLE,
        ("SCR_FLUSH", "2"),
        ("SCR_FLUSH_ON_RESTART", "1"),
        ("SCR_FETCH", "0"),
    ];
    let out = job.run_ok(
        2,
        &[
            "init",
            "readprefix=ckpt.3",
            "current=ckpt.3",
            "ckpt=ckpt.4:4",
            "quit",
        ],
        &own,
    );
    assert_eq!(
        answer(&out, "readprefix=ckpt.3"),
        "t=3",
        "flushed in SCR_Init: {out}"
    );
    assert_eq!(answer(&out, "current=ckpt.3"), "rc=0", "{out}");
    check_file(&job.prefix().join("ckpt.4/rank_1.ckpt"), 1, 4, 1000);

    // the cache lost: nothing to flush, the application reads the prefix's newest
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[
            "init",
            "readprefix=ckpt.4",
            "current=ckpt.4",
            "ckpt=ckpt.5:5",
            "ckpt=ckpt.6:6",
            "quit",
        ],
        &own,
    );
    assert_eq!(answer(&out, "readprefix=ckpt.4"), "t=4", "{out}");
    assert_eq!(answer(&out, "current=ckpt.4"), "rc=0", "{out}");
    assert!(!on_prefix(&job, "ckpt.5"), "the fifth checkpoint: {out}");
    check_file(&job.prefix().join("ckpt.6/rank_0.ckpt"), 0, 6, 1000);
}

/// integration.rst, "Restart without SCR": without SCR_Current the SCR_FLUSH count starts
/// again at each restart, which shifts the periodic flushes.
#[test]
fn without_scr_current_the_flush_count_starts_again_at_each_restart() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "2"), ("SCR_FETCH", "0")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"], &env);
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[
            "init",
            "readprefix=ckpt.2",
            "ckpt=ckpt.3:3",
            "ckpt=ckpt.4:4",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "readprefix=ckpt.2"), "t=2", "{out}");
    // counted from 1 again: the third checkpoint is this run's first
    assert!(!on_prefix(&job, "ckpt.3"), "{out}");
    check_file(&job.prefix().join("ckpt.4/rank_1.ckpt"), 1, 4, 1000);
}

/// integration.rst, "Configure SCR for application settings": `SCR_Configf("SCR_PREFIX=%s",
/// dir)` makes the application's output directory the prefix; a later run configured the
/// same way restarts from it; a directory not made yet is created, as v3.1 creates it
/// (owner-only, as every directory SCR makes). api.rst, "SCR_Config": a string value may
/// hold '='.
#[test]
fn scr_config_points_the_prefix_at_the_applications_output_directory() {
    let job = steps_job();
    let out_dir = job.dir.path().join("run=1/output");
    let set = format!("config=SCR_PREFIX=\"{}\"", out_dir.display());
    let write = format!("write={}/ckpt.1/rank_%r.ckpt:1", out_dir.display());
    let read = format!("read={}/ckpt.1/rank_%r.ckpt:1", out_dir.display());
    // started elsewhere than the prefix, with no SCR_PREFIX in the environment
    let run = |steps: &[&str]| {
        let mut cmd = job.command(None, 2, steps, &[SINGLE, ("SCR_FLUSH", "1")]);
        cmd.env_remove("SCR_PREFIX").current_dir(job.dir.path());
        let o = cmd.output().unwrap();
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        t
    };
    let out = run(&[
        &set,
        "config=SCR_PREFIX",
        "init",
        "start=ckpt.1:c",
        &write,
        "complete",
        "finalize",
    ]);
    assert_eq!(
        answer(&out, "config=SCR_PREFIX"),
        format!("\"{}\"", out_dir.display())
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    check_file(&out_dir.join("ckpt.1/rank_0.ckpt"), 0, 1, 1000);
    assert!(out_dir.join(".scr/index.scr").is_file());
    for made in [&out_dir, &job.dir.path().join("run=1")] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", made.display());
    }
    assert!(!job.prefix().join(".scr").exists());
    let out = run(&[
        &set,
        "init",
        "have",
        "startrestart",
        &read,
        "completerestart",
        "quit",
    ]);
    assert_eq!(answer(&out, "have"), "flag=1 name=ckpt.1 rc=0", "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
}

/// integration.rst, "Configure SCR for application settings": without other settings SCR
/// restarts from the most recent checkpoint; `SCR_Configf("SCR_CURRENT=%s", name)`
/// restarts from the one named.
#[test]
fn scr_config_names_the_checkpoint_to_restart_from() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    let out = job.run_ok(
        2,
        &["configf=SCR_CURRENT:ckpt.2", "init", "restart", "quit"],
        &env,
    );
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.2 t=2 data=verified rc=0",
        "{out}"
    );
}

/// integration.rst, "Configure SCR for application settings": SCR_Config sets
/// SCR_CACHE_BYPASS and SCR_GLOBAL_RESTART; and SCR_CACHE_SIZE, config.rst's own example.
#[test]
fn scr_config_sets_bypass_global_restart_and_the_cache_size() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "config=SCR_CACHE_BYPASS=1",
            "config=SCR_CACHE_SIZE=2",
            "config=SCR_CACHE_SIZE",
            "init",
            "start=b.1:c",
            "write=b.1/rank_%r.ckpt:1",
            "complete",
            "quit",
        ],
        &[SINGLE, ("SCR_FLUSH", "0")],
    );
    assert_eq!(answer(&out, "config=SCR_CACHE_SIZE"), "\"2\"", "{out}");
    assert_eq!(answer(&out, "config=SCR_CACHE_SIZE=2"), "NULL", "{out}");
    assert!(!out.contains("SCR: ERROR"), "{out}");
    let at = routed(&out, 1, "write=b.1/rank_%r.ckpt:1").unwrap();
    assert_eq!(at, job.prefix().join("b.1/rank_1.ckpt"), "bypassed: {out}");
    check_file(&at, 1, 1, 1000);

    // a checkpoint only in cache; a run setting SCR_GLOBAL_RESTART flushes it in SCR_Init
    // and its restart reads the prefix's files
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "0")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "quit"], &env);
    assert!(!on_prefix(&job, "ckpt.1"));
    let steps = [
        "config=SCR_GLOBAL_RESTART=1",
        "init",
        "have",
        "startrestart",
        "read=ckpt.1/rank_%r.ckpt:1",
        "completerestart",
        "quit",
    ];
    let out = job.run_ok(2, &steps, &env);
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
    let at = routed(&out, 0, "read=ckpt.1/rank_%r.ckpt:1").unwrap();
    assert_eq!(at, job.prefix().join("ckpt.1/rank_0.ckpt"), "{out}");
}

/// config.rst, "Setting parameters": its example, SCR_Config("SCR_CACHE_SIZE=2"), takes
/// effect: two checkpoints stay in cache where one would without it; SCR_CNTL_BASE, which SCR's commands read
/// without the application, is refused saying why.
#[test]
fn scr_config_cache_size_keeps_two_checkpoints_in_cache() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "config=SCR_CACHE_SIZE=2",
            "config=SCR_CNTL_BASE=/tmp",
            "init",
            "ckpt=ckpt.1:1",
            "ckpt=ckpt.2:2",
            "ckpt=ckpt.3:3",
            "quit",
        ],
        &[SINGLE, ("SCR_FLUSH", "0")],
    );
    assert!(
        out.contains("SCR_CNTL_BASE") && out.contains("scr-run's scavenge"),
        "{out}"
    );
    assert!(!out.contains("\"SCR_CACHE_SIZE\": "), "{out}");
    let mut kept: Vec<PathBuf> = job.cached("rank_0.ckpt");
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    check_file(&kept[0], 0, 2, 1000);
    check_file(&kept[1], 0, 3, 1000);
}

/// integration.rst, "Init/Finalize": SCR_Init duplicates MPI_COMM_WORLD, so SCR's messages
/// never mix with the application's: a receive of any source and tag the application left
/// posted across a checkpoint (XOR on four nodes: SCR sends data between them) gets the
/// application's own message.
#[test]
fn scr_keeps_its_messages_apart_from_the_applications() {
    let job = steps_job();
    let out = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &["init", "postrecv", "ckpt=c.1:1", "waitrecv", "quit"],
        &[("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")],
    );
    assert_eq!(answer(&out, "ckpt=c.1:1"), "rc=0", "{out}");
    assert_eq!(
        answer(&out, "waitrecv"),
        "the application's message, intact"
    );
    let parity = walk(&job.dir.path().join("cache"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/.scr/xor."))
        .count();
    assert_eq!(
        parity, 4,
        "SCR encoded the checkpoint across the nodes: {out}"
    );
}
