//! SCR v3.1's "write file-per-process, read with shared access" (config.rst): when a restart
//! reads its checkpoint on the prefix (SCR_CACHE_BYPASS=1, SCR_GLOBAL_RESTART=1,
//! SCR_FETCH_BYPASS=1), any rank may route any file of it and read it there; a restart
//! from cache hands each rank its own files only. Real `mpiexec` jobs of
//! `lib/tests/c/guide_steps.c`; every file holds the timestep and the pattern of the rank
//! that wrote it, so what a rank read is checked by the program itself.

mod common;

use common::*;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

/// Each rank reads its own file of `ckpt.3` and then its neighbour's, and completes the
/// restart with what it read.
const READ_OWN_AND_NEXT: [&str; 7] = [
    "init",
    "startrestart",
    "read=ckpt.3/rank_%r.ckpt:3",
    "readnext=ckpt.3/rank_%r.ckpt:3",
    "completerestart",
    "have",
    "quit",
];

/// Asserts each of the two ranks routed its neighbour's file of `ckpt.3` to the prefix's
/// copy and read it back whole, and the restart succeeded.
fn assert_read_the_neighbours(job: &Job, out: &str) {
    assert_eq!(answer(out, "startrestart"), "name=ckpt.3 rc=0", "{out}");
    for rank in 0..2 {
        let next = (rank + 1) % 2;
        let at = routed(out, rank, "readnext=ckpt.3/rank_%r.ckpt:3");
        assert_eq!(
            at,
            Some(job.prefix().join(format!("ckpt.3/rank_{next}.ckpt"))),
            "{out}"
        );
    }
    assert!(!out.contains("data bad"), "{out}");
    assert_eq!(answer(out, "completerestart"), "rc=0", "{out}");
}

/// config.rst, "Write with shared access": with SCR_CACHE_BYPASS=1 the files are the
/// prefix's, and a restart (from what the cache recorded, and after the cache is lost)
/// lets each rank read its neighbour's.
#[test]
fn with_cache_bypass_a_rank_reads_its_neighbours_file() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_CACHE_BYPASS", "1"), ("SCR_FLUSH", "0")];
    write_steps_checkpoints(&job, 3, &env);
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &env);
    assert_read_the_neighbours(&job, &out);

    delete_caches(&job);
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &env);
    assert_read_the_neighbours(&job, &out);
}

/// config.rst, "Write file-per-process, read with shared access": the checkpoints are
/// written to cache (SCR_FLUSH=10: never flushed while the job runs); a run with
/// SCR_GLOBAL_RESTART=1 flushes the newest in SCR_Init and each rank reads its
/// neighbour's file on the prefix.
#[test]
fn with_global_restart_a_rank_reads_its_neighbours_file() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "10")];
    write_steps_checkpoints(&job, 3, &env);
    assert!(!job.prefix().join("ckpt.3/rank_1.ckpt").exists());
    let global = [SINGLE, ("SCR_FLUSH", "10"), ("SCR_GLOBAL_RESTART", "1")];
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &global);
    assert_read_the_neighbours(&job, &out);
}

/// SCR_FETCH_BYPASS=1: the fetched checkpoint is read where it is on the prefix, so a rank
/// may read its neighbour's file there too.
#[test]
fn with_fetch_bypass_a_rank_reads_its_neighbours_file() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    delete_caches(&job);
    let bypass = [SINGLE, ("SCR_FLUSH", "1"), ("SCR_FETCH_BYPASS", "1")];
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &bypass);
    assert_read_the_neighbours(&job, &out);
}

/// A restart from cache is file-per-process: a rank's neighbour's file may be on another
/// node, so routing it is refused, naming SCR_GLOBAL_RESTART. The application then says
/// the restart failed; that says nothing of the checkpoint's data, so it is not marked
/// failed: a later job (its cache lost) restarts from it.
#[test]
fn from_cache_a_neighbours_file_is_refused_and_the_checkpoint_stays_good() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &env);
    assert_eq!(answer(&out, "startrestart"), "name=ckpt.3 rc=0", "{out}");
    assert_eq!(
        routed(&out, 0, "readnext=ckpt.3/rank_%r.ckpt:3"),
        None,
        "{out}"
    );
    assert!(out.contains("SCR_GLOBAL_RESTART"), "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=1", "{out}");
    // the next most recent is offered for this run
    assert_eq!(answer(&out, "have"), "flag=1 name=ckpt.2 rc=0", "{out}");

    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.3 t=3 data=verified rc=0");
}

/// A rank's own file read on the prefix is opened as another rank's is: through directory
/// handles, refused when others could have written it (here made writable by anyone after
/// the checkpoint). The refusal says nothing of the data: once the file is the user's
/// alone again, a later job restarts from that checkpoint.
#[test]
fn with_cache_bypass_an_own_file_others_could_write_is_refused_and_stays_good() {
    use std::os::unix::fs::PermissionsExt;
    let job = steps_job();
    let env = [SINGLE, ("SCR_CACHE_BYPASS", "1"), ("SCR_FLUSH", "0")];
    write_steps_checkpoints(&job, 3, &env);
    let file = job.prefix().join("ckpt.3/rank_0.ckpt");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = job.run_ok(2, &READ_OWN_AND_NEXT, &env);
    assert_eq!(routed(&out, 0, "read=ckpt.3/rank_%r.ckpt:3"), None, "{out}");
    assert!(out.contains("ckpt.3/rank_0.ckpt"), "{out}");
    assert_eq!(answer(&out, "completerestart"), "rc=1", "{out}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.3 t=3 data=verified rc=0");
}
