//! A restart on another number of ranks through the restart API (beyond SCR: LLNL/scr issue
//! 535): SCR_Have_restart and SCR_Start_restart offer the checkpoint as usual, every rank
//! learns its whole file list (SCR_Restart_file_count, SCR_Restart_file_name) and may
//! route any file of it, read in place on the prefix (or copied out of its container).
//! test_api re-partitions: file i is read by rank i % ranks and checked against the bytes
//! its writer's rank, file and timestep say it holds. A checkpoint only in cache, written
//! by a job of another size, is drained to the prefix by the new job's SCR_Init first.

mod common;

use common::route_then_read::*;
use common::*;

const SIZE: &str = "6000";

/// What a program that re-partitions a checkpoint of another size sets.
const RESHAPE: [(&str, &str); 1] = [("SCR_RESHAPE", "1")];

/// The files the ranks of a re-partitioned restart said they read, by what they said.
/// (The ranks' lines may run together in the launcher's output: each is found wherever it
/// starts.)
fn files_read(out: &str, writers: u32) -> u32 {
    out.split("test_api: rank ")
        .skip(1)
        .filter_map(|l| {
            let (_, rest) = l.split_once(" read ")?;
            let (n, rest) = rest.split_once(" of the ")?;
            let (total, rest) = rest.split_once(" files ")?;
            let (by, _) = rest.split_once(" ranks wrote")?;
            assert_eq!(by.parse::<u32>().ok(), Some(writers), "{l}");
            assert!(total.parse::<u32>().is_ok(), "{l}");
            n.parse::<u32>().ok()
        })
        .sum()
}

fn hosts(n: u32) -> String {
    (1..=n)
        .map(|i| format!("n{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn restarted(out: &str, t: u32) -> bool {
    out.contains(&format!(
        "restarted from ckpt.{t} (timestep {t}), data verified"
    ))
}

/// 4 ranks write and flush, then 3 restart from the prefix and write on, then 6.
fn fewer_then_more_ranks_from_the_prefix(env: &[(&str, &str)], files_per_rank: u32) {
    let job = Job::new();
    let env = [env, &[("SCR_FLUSH", "1")], &RESHAPE].concat();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &env);
    delete_caches(&job);
    let out = run_ok_on(&job, &hosts(3), 3, &[SIZE, "2"], &env);
    assert!(restarted(&out, 2), "{env:?}: {out}");
    assert_eq!(files_read(&out, 4), 4 * files_per_rank, "{env:?}: {out}");
    delete_caches(&job);
    let out = run_ok_on(&job, &hosts(6), 6, &[SIZE, "1"], &env);
    assert!(restarted(&out, 4), "{env:?}: {out}");
    assert_eq!(files_read(&out, 3), 3 * files_per_rank, "{env:?}: {out}");
    // the restarts were fetches of whole checkpoints, recorded as such
    assert_eq!(job.index_entry("ckpt.2").fetched.len(), 1);
    assert_eq!(job.index_entry("ckpt.4").fetched.len(), 1);
}

#[test]
fn a_flushed_checkpoint_restarts_on_fewer_and_on_more_ranks_under_every_scheme() {
    for scheme in ["SINGLE", "PARTNER", "XOR", "RS"] {
        fewer_then_more_ranks_from_the_prefix(&[("SCR_COPY_TYPE", scheme)], 1);
    }
}

#[test]
fn a_checkpoint_in_containers_or_of_many_files_restarts_on_another_number_of_ranks() {
    fewer_then_more_ranks_from_the_prefix(
        &[
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_USE_CONTAINERS", "1"),
            ("SCR_CONTAINER_SIZE", "5000"),
        ],
        1,
    );
    fewer_then_more_ranks_from_the_prefix(
        &[("SCR_COPY_TYPE", "PARTNER"), ("TEST_API_FILES", "3")],
        3,
    );
}

/// A job that lost a node and has no spare restarts on the nodes left with fewer ranks: the
/// newest checkpoint is only in cache, so its SCR_Init drains it (the lost node's files
/// rebuilt from the others') and serves it from the prefix.
#[test]
fn a_checkpoint_only_in_cache_is_drained_by_a_smaller_job_and_restarted() {
    for scheme in ["PARTNER", "XOR", "RS"] {
        let job = Job::new();
        let env = [("SCR_COPY_TYPE", scheme), ("SCR_FLUSH", "0"), RESHAPE[0]];
        run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &env);
        lose_node(&job, "n4");
        let out = run_ok_on(&job, &hosts(3), 3, &[SIZE, "1"], &env);
        assert!(restarted(&out, 2), "{scheme}: {out}");
        assert_eq!(files_read(&out, 4), 4, "{scheme}: {out}");
        assert!(out.contains("drained to the prefix"), "{scheme}: {out}");
        // the 4-rank cache is gone: a later 4-rank job restarts from what the 3 wrote
        // (ckpt.3, in its cache and on the prefix once flushed at the end), not ckpt.2
        let out = run_ok_on(&job, &hosts(3), 3, &[SIZE, "0"], &env);
        assert!(restarted(&out, 3), "{scheme}: {out}");
    }
}

/// The smaller job runs on a node that lost its cache (rebooted, empty): that node has
/// nothing of its own to drain, and its partner's copies of its files complete the
/// checkpoint, as for a node the job does not run on.
#[test]
fn a_smaller_job_on_a_node_back_with_an_empty_cache_drains_its_files_from_the_partner() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "PARTNER"), ("SCR_FLUSH", "0"), RESHAPE[0]];
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &env);
    lose_node(&job, "n2");
    let out = run_ok_on(&job, &hosts(3), 3, &[SIZE, "1"], &env);
    assert!(restarted(&out, 2), "{out}");
    assert_eq!(files_read(&out, 4), 4, "{out}");
    assert!(out.contains("drained to the prefix"), "{out}");
}

/// `scr prerun` before the smaller job removes the prefix's flush and nodes files: the
/// smaller job's SCR_Init still drains what the caches hold, by what they record, and
/// restarts from it.
#[test]
fn a_smaller_job_after_prerun_drains_the_cached_checkpoint_and_restarts_from_it() {
    let job = Job::new();
    let env = [("SCR_FLUSH", "0")];
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &env);
    prerun(&job);
    // (a program that re-partitions says so: it lists the restart's files)
    let out = run_ok_on(
        &job,
        &hosts(3),
        3,
        &[SIZE, "1"],
        &[("SCR_FLUSH", "0"), ("SCR_RESHAPE", "1")],
    );
    assert!(restarted(&out, 2), "{out}");
    assert_eq!(files_read(&out, 4), 4, "{out}");
    assert!(out.contains("drained to the prefix"), "{out}");
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            6000,
        );
    }
}

/// The same through scr-run on the nodes left (SCR_NODELIST names three): its prerun, the
/// smaller run's drain and restart, and its drain after the run.
#[test]
fn scr_run_on_fewer_nodes_drains_the_cached_checkpoint_and_restarts_from_it() {
    let job = Job::new();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &[("SCR_FLUSH", "0")]);
    let app = job.app.to_string_lossy().into_owned();
    let out = output_within(
        std::process::Command::new(scr_command().with_file_name("scr-run"))
            .args(["mpiexec", "-launcher", "fork", "-n", "3", &app, SIZE, "1"])
            .current_dir(job.prefix())
            .env("MPIEXEC_TIMEOUT", "120")
            .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
            .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
            .env("SCR_PREFIX", job.prefix())
            .env("SCR_JOB_ID", JOB_ID)
            .env("SCR_NODELIST", "n[1-3]")
            .env("SCR_RUN_DELAY", "0")
            .env("SCR_RUNS", "1")
            .env("SCR_FLUSH", "0")
            .env("SCR_RESHAPE", "1")
            .env_remove("SCR_CONF_FILE")
            .env_remove("SLURM_JOBID")
            .env_remove("SLURM_JOB_ID"),
        std::time::Duration::from_secs(180),
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(restarted(&t, 2), "{t}");
    assert_eq!(files_read(&t, 4), 4, "{t}");
    // the 3-rank job's checkpoint, drained after the run
    for r in 0..3 {
        check_file(
            &job.prefix().join(format!("ckpt.3/rank_{r}.ckpt")),
            r,
            3,
            6000,
        );
    }
}

/// `scr prerun -p PREFIX`, as scr-run runs it before a job.
fn prerun(job: &Job) {
    let out = std::process::Command::new(scr_command())
        .args(["prerun", "-p"])
        .arg(job.prefix())
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env_remove("SCR_CONF_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!scr::layout::flush_file(&job.prefix()).exists());
}

/// A job that grew (more nodes, or more ranks per node) restarts a checkpoint its smaller
/// predecessor left in cache: drained by the larger job, then re-partitioned.
#[test]
fn a_checkpoint_only_in_cache_is_drained_by_a_larger_job_and_restarted() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "SINGLE"), ("SCR_FLUSH", "0"), RESHAPE[0]];
    run_ok_on(&job, &hosts(3), 3, &[SIZE, "2"], &env);
    let out = run_ok_on(&job, &hosts(5), 5, &[SIZE, "0"], &env);
    assert!(restarted(&out, 2), "{out}");
    assert_eq!(files_read(&out, 3), 3, "{out}");
}

/// The files listed, and only those, are routable; a same-size restart lists a rank's own.
#[test]
fn the_file_list_names_what_a_rank_may_route() {
    let job = Job::new();
    run_ok_on(&job, &hosts(2), 2, &[SIZE, "1"], &[("SCR_FLUSH", "1")]);
    // same size: each rank reads its own file the usual way, nothing re-partitioned
    let out = run_ok_on(&job, &hosts(2), 2, &[SIZE, "0"], &[]);
    assert!(restarted(&out, 1), "{out}");
    assert_eq!(files_read(&out, 2), 0, "{out}");
}

/// Four ranks of a program that checkpoints without SCR write ckpt.1 … ckpt.5 in the
/// prefix (lib/tests/c/plain_checkpoint.c).
fn write_without_scr(job: &Job) {
    let plain = build_c(
        job.dir.path(),
        &workspace().join("lib/tests/c/plain_checkpoint.c"),
        "plain_checkpoint",
    );
    let out = Mpi::current()
        .launch(None, 4, 60, &plain, &[SIZE, "5"])
        .current_dir(job.prefix())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// Bootstrap (beyond SCR: LLNL/scr issue 232): a simulation that wrote its checkpoints
/// without SCR turns SCR on mid-run. SCR_CURRENT names its newest checkpoint directory;
/// SCR adopts it, the restart API serves it (any rank may read any of its files), and SCR
/// takes over: the next run in the allocation restarts from SCR's own newer checkpoint.
#[test]
fn a_checkpoint_written_without_scr_is_adopted_and_scr_takes_over() {
    for ranks in [4u32, 3] {
        let job = Job::new();
        write_without_scr(&job);
        let named = [("SCR_CURRENT", "ckpt.5"), ("SCR_FLUSH", "1")];
        let out = run_ok_on(&job, &hosts(ranks), ranks, &[SIZE, "1"], &named);
        assert!(
            out.contains("adopted") && out.contains("written without SCR"),
            "{out}"
        );
        assert!(restarted(&out, 5), "{ranks} ranks: {out}");
        assert_eq!(files_read(&out, 1), 4, "{ranks} ranks: {out}");
        // the application's own files are untouched
        for r in 0..4 {
            check_file(
                &job.prefix().join(format!("ckpt.5/rank_{r}.ckpt")),
                r,
                5,
                6000,
            );
        }
        // SCR took over: its own ckpt.6 is the restart of the next run in the allocation
        let out = run_ok_on(&job, &hosts(ranks), ranks, &[SIZE, "0"], &named);
        assert!(restarted(&out, 6), "{ranks} ranks: {out}");
        assert!(!out.contains("adopted"), "adopted once: {out}");
    }
}

/// An adopted checkpoint's files carry the CRC32 the adoption computed: a file changed in
/// place after its adoption, its size kept, is refused when a restart reads it (copied
/// into cache by a job of one rank, read in place by a job of another size).
#[test]
fn a_file_of_an_adopted_checkpoint_changed_after_its_adoption_is_not_served() {
    for ranks in [1u32, 2] {
        let job = Job::new();
        write_without_scr(&job);
        let named = [("SCR_CURRENT", "ckpt.5")];
        let out = run_ok_on(&job, &hosts(ranks), ranks, &[SIZE, "0"], &named);
        assert!(
            out.contains("adopted") && out.contains("CRC32"),
            "{ranks} ranks: {out}"
        );
        assert!(restarted(&out, 5), "{ranks} ranks: {out}");
        // one byte of rank 1's data, in place
        flip_byte(&job.prefix().join("ckpt.5/rank_1.ckpt"), 800);
        // (the next job's nodes are new: it reads the prefix)
        delete_caches(&job);
        let out = job.run_on(Some(&hosts(ranks)), ranks, &[SIZE, "0"], &named);
        let t = text(&out);
        assert!(
            t.contains("CRC32 mismatch") && t.contains("ckpt.5/rank_1.ckpt"),
            "{ranks} ranks: {t}"
        );
        assert!(!restarted(&t, 5), "{ranks} ranks: {t}");
    }
}

/// A file of a restart of another size is checked each time it is routed: one replaced
/// after it was first routed (by a file of the user's of the same size) is refused when it
/// is routed again, never read.
#[test]
fn a_file_replaced_between_two_routes_is_not_served() {
    let mut job = Job::new();
    use_route_then_read(&mut job);
    let dir = job.prefix().join("step.9");
    std::fs::create_dir(&dir).unwrap();
    for name in ["a.dat", "b.dat"] {
        std::fs::write(dir.join(name), format!("written first: {name}\n")).unwrap();
    }
    let t = route_then_read(
        job.dir.path(),
        &mut job.command(Some(&hosts(2)), 2, &[], &[("SCR_CURRENT", "step.9")]),
        || {
            let replacement = dir.join("a.dat.new");
            std::fs::write(&replacement, "written later: a.dat\n").unwrap();
            std::fs::rename(&replacement, dir.join("a.dat")).unwrap();
        },
    );
    assert!(
        t.contains("read ") && t.contains("written first: b.dat"),
        "{t}"
    );
    assert!(!t.contains("written later"), "{t}");
    assert!(
        t.contains("step.9/a.dat was replaced since this rank first routed it")
            && t.contains("step.9/a.dat again"),
        "{t}"
    );
}

/// A relaunch before the job's first new checkpoint restarts the same re-partitioned
/// checkpoint again, every file of it read (a record of a restart read in place is no cached
/// copy to restart from).
#[test]
fn a_relaunch_after_a_restart_on_fewer_ranks_reads_the_checkpoint_again() {
    let job = Job::new();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    for _ in 0..2 {
        let out = run_ok_on(&job, &hosts(3), 3, &[SIZE, "0"], &RESHAPE);
        assert!(restarted(&out, 2), "{out}");
        assert_eq!(files_read(&out, 4), 4, "{out}");
    }
    assert!(job.index_entry("ckpt.2").failed.is_empty());
}

/// A checkpoint in containers needs room in the restarting rank's cache for each file it
/// copies out; a cache too small for that (full, or filled by someone else) is this job's
/// trouble, not the checkpoint's: the job stops saying so, the checkpoint is not marked
/// failed and stays current, and no older one is restarted in its place (what the job wrote
/// next would supersede it). On healthy nodes the next job restarts it.
#[test]
fn a_cache_too_small_to_copy_a_file_out_of_its_container_stops_the_job_and_fails_nothing() {
    let env = [
        ("SCR_FLUSH", "1"),
        ("SCR_USE_CONTAINERS", "1"),
        ("SCR_CONTAINER_SIZE", "60000"),
        RESHAPE[0],
    ];
    for ranks in [3u32, 4] {
        let job = Job::new();
        run_ok_on(&job, &hosts(4), 4, &["100000", "2"], &env);
        delete_caches(&job);
        let small = job.dir.path().join("small-cache");
        {
            let _full = Tmpfs::mount(&small, 64 * 1024);
            let cache = [("SCR_CACHE_BASE", small.to_str().unwrap())];
            let out = job.run_on(
                Some(&hosts(ranks)),
                ranks,
                &["100000", "1"],
                &[&env[..], &cache].concat(),
            );
            let t = text(&out);
            assert!(!out.status.success(), "{ranks} ranks: {t}");
            assert!(
                t.contains("checkpoint ckpt.2 on") && t.contains("is intact, but this job's nodes"),
                "{ranks} ranks: {t}"
            );
            assert!(!t.contains("test_api: checkpoint 3"), "nothing newer: {t}");
        }
        assert!(job.index_entry("ckpt.2").failed.is_empty(), "{ranks} ranks");
        let index = job.index();
        assert_eq!(index.current(), Some("ckpt.2"));
        let out = run_ok_on(&job, &hosts(ranks), ranks, &["100000", "0"], &env);
        assert!(restarted(&out, 2), "{ranks} ranks: {out}");
    }
}

/// A smaller job started on only some of the nodes that cache a larger job's newest
/// checkpoint cannot drain it whole: it stops in SCR_Init saying so and what to do, and the
/// checkpoint stays in every node's cache (nothing evicted or discarded), so a job on all
/// the nodes restarts it.
#[test]
fn a_smaller_job_on_some_of_the_nodes_keeps_a_checkpoint_it_cannot_drain_whole() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "SINGLE"), ("SCR_FLUSH", "0"), RESHAPE[0]];
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &env);
    let out = job.run_on(Some(&hosts(2)), 2, &[SIZE, "3"], &env);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("could not drain it to") && t.contains("run this job on those nodes too"),
        "{t}"
    );
    assert_eq!(
        t.matches("could not drain it to").count(),
        1,
        "said once: {t}"
    );
    assert!(!t.contains("test_api: checkpoint"), "it wrote nothing: {t}");
    let out = run_ok_on(&job, &hosts(4), 4, &[SIZE, "0"], &env);
    assert!(restarted(&out, 2), "{out}");
}

/// A program that never asks for the file list (it reads its own rank's files only, as a
/// program written for SCR v3.1 does) is not offered a checkpoint written by another number
/// of ranks: on fewer ranks it would read part of it and go on without the rest. SCR says
/// so once and how a program that re-partitions says it does (SCR_RESHAPE=1); nothing is
/// marked failed, and a program that says so restarts it whole.
#[test]
fn a_checkpoint_of_another_size_is_offered_only_to_a_program_that_says_it_repartitions() {
    let job = Job::new();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let legacy = [("TEST_API_NO_FILE_LIST", "1")];
    let out = run_ok_on(&job, &hosts(2), 2, &[SIZE, "0"], &legacy);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    assert_eq!(out.matches("SCR_RESHAPE=1").count(), 1, "said once: {out}");
    assert!(out.contains("written by 4 rank"), "{out}");
    for name in ["ckpt.1", "ckpt.2"] {
        assert!(job.index_entry(name).failed.is_empty(), "{name}: {out}");
    }
    let out = run_ok_on(&job, &hosts(2), 2, &[SIZE, "0"], &RESHAPE);
    assert!(restarted(&out, 2), "{out}");
    assert_eq!(files_read(&out, 4), 4, "{out}");
}

/// A program that says it re-partitions but cannot (it reads its own rank's files only)
/// fails every checkpoint written by another number of ranks and starts over; but the
/// checkpoints are not marked failed: a job of their size restarts them.
#[test]
fn a_program_that_cannot_repartition_starts_over_and_marks_no_checkpoint_failed() {
    let job = Job::new();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let legacy = [("TEST_API_NO_FILE_LIST", "1"), RESHAPE[0]];
    let out = job.run_on(Some(&hosts(6)), 6, &[SIZE, "0"], &legacy);
    let t = text(&out);
    assert!(t.contains("restart from ckpt.2 failed verification"), "{t}");
    assert!(t.contains("it is not marked failed"), "{t}");
    for name in ["ckpt.1", "ckpt.2"] {
        assert!(job.index_entry(name).failed.is_empty(), "{name}: {t}");
    }
    delete_caches(&job);
    let out = run_ok_on(&job, &hosts(4), 4, &[SIZE, "0"], &[]);
    assert!(restarted(&out, 2), "{out}");
}

/// The C block README shows for a restart loop over the file list, as it stands there
/// (the block after its `restart-file-list` marker).
fn readme_file_list_loop() -> String {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let (_, after) = readme
        .split_once("<!-- restart-file-list:")
        .expect("README marks its restart loop with <!-- restart-file-list: ... -->");
    let (_, block) = after
        .split_once("```c\n")
        .expect("a C block after the marker");
    let (code, _) = block.split_once("```").expect("the C block ends");
    code.to_string()
}

/// README's loop over the file list serves both sizes, as README says: every file of the
/// checkpoint is read once, by some rank, and verified, at the job's own size (each rank's
/// list is its own files) and at another (the list is every file, the ranks share it out).
#[test]
fn readmes_file_list_loop_reads_every_file_once_at_the_same_size_and_at_another() {
    let mut job = Job::new();
    run_ok_on(&job, &hosts(4), 4, &[SIZE, "2"], &[("SCR_FLUSH", "1")]);
    let source = std::fs::read_to_string(workspace().join("lib/tests/c/readme_file_list.c"))
        .unwrap()
        .replace("/* README_SNIPPET */", &readme_file_list_loop());
    let path = job.dir.path().join("readme_file_list.c");
    std::fs::write(&path, source).unwrap();
    job.app = build_c(job.dir.path(), &path, "readme_file_list");
    for ranks in [4u32, 3, 4] {
        delete_caches(&job);
        let out = run_ok_on(&job, &hosts(ranks), ranks, &[SIZE], &RESHAPE);
        assert!(
            out.contains("readme: ckpt.2: 4 files read in all, data verified"),
            "{ranks} ranks: {out}"
        );
    }
    // and from cache, at the size that wrote it
    let out = run_ok_on(&job, &hosts(4), 4, &[SIZE], &RESHAPE);
    assert!(
        out.contains("readme: ckpt.2: 4 files read in all, data verified"),
        "{out}"
    );
}

/// Ranks of one node that route the same file of a checkpoint in containers at about the
/// same time each get the whole file, every byte as written: one rank's copying it out of
/// its containers never truncates or rewrites the copy another rank is reading.
#[test]
fn ranks_of_one_node_routing_the_same_file_out_of_containers_each_read_it_whole() {
    let job = Job::new();
    let env = [
        ("SCR_FLUSH", "1"),
        ("SCR_USE_CONTAINERS", "1"),
        ("SCR_CONTAINER_SIZE", "20000000"),
        RESHAPE[0],
    ];
    let size = "8000000";
    run_ok_on(&job, &hosts(4), 4, &[size, "1"], &env);
    delete_caches(&job);
    for stagger in ["0", "15", "40"] {
        let read_all = [&env[..], &[("TEST_API_READ_ALL", stagger)]].concat();
        let out = run_ok_on(&job, "n1:3", 3, &[size, "0"], &read_all);
        assert!(restarted(&out, 1), "{stagger} ms apart: {out}");
        assert_eq!(files_read(&out, 4), 3 * 4, "{stagger} ms apart: {out}");
    }
}

/// A checkpoint of another size that a program reading its own rank's files is not offered
/// is said once per job, however many checkpoints the restart then falls back through: one
/// broken on the prefix, one the program rejects.
#[test]
fn a_checkpoint_not_offered_for_its_size_is_said_once_across_every_fallback() {
    let job = steps_job();
    let flushed = [("SCR_FLUSH", "1"), ("SCR_FLUSH_ASYNC", "0")];
    let ckpts = |ts: &[u32]| -> Vec<String> {
        std::iter::once("init".to_string())
            .chain(ts.iter().map(|t| format!("ckpt=ckpt.{t}:{t}")))
            .chain(std::iter::once("finalize".to_string()))
            .collect()
    };
    let steps = ckpts(&[1, 2, 3]);
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    job.run_ok(4, &steps, &flushed);
    delete_caches(&job);
    let steps = ckpts(&[4]);
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    job.run_ok(2, &steps, &flushed);
    delete_caches(&job);
    // ckpt.3 broken on the prefix (same size, another byte)
    let victim = job.prefix().join("ckpt.3/rank_1.ckpt");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0x5a;
    std::fs::write(&victim, bytes).unwrap();
    let out = job.run_ok(4, &["init", "restart=reject", "restart", "quit"], &[]);
    assert_eq!(
        answers(&out, "restart"),
        [
            "ckpt.2 t=2 data=verified rc=1",
            "ckpt.1 t=1 data=verified rc=0"
        ],
        "{out}"
    );
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("ckpt.4 was written by 2 rank(s)"))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(said[0].contains("not offered"), "{out}");
}
