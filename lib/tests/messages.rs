//! What SCR tells its user (SCR v3.1's user guide, config.rst SCR_DEBUG; LLNL's test plan
//! checks these lines): at SCR_DEBUG=1 the configuration in effect with where each value
//! came from, each dataset's start, cost and flush, which datasets a restart rebuilt and
//! how, what it fetched; at the default level only what went wrong, and why. Every message
//! is a whole line of its own.

mod common;

use common::*;

const HOSTS: &str = "n1,n2,n3,n4";

/// The lines of `out` that hold `needle`.
fn lines_with<'a>(out: &'a str, needle: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn scr_debug_1_shows_the_configuration_and_each_checkpoint_and_flush() {
    let job = Job::new();
    let size = 10_000;
    let out = run_ok_on(
        &job,
        HOSTS,
        4,
        &[&size.to_string(), "2"],
        &[
            ("SCR_DEBUG", "1"),
            ("SCR_FLUSH", "2"),
            ("SCR_COPY_TYPE", "XOR"),
        ],
    );
    // every parameter in effect, once, with its origin
    let conf = job.dir.path().join("scr.conf");
    for (line, origin) in [
        ("SCR: SCR_DEBUG=1", "(environment)".to_string()),
        ("SCR: SCR_FLUSH=2", "(environment)".to_string()),
        ("SCR: SCR_COPY_TYPE=XOR", "(environment)".to_string()),
        ("SCR: SCR_CACHE_SIZE=1", "(built-in default)".to_string()),
        ("SCR: SCR_CNTL_BASE=", format!("({}:1)", conf.display())),
    ] {
        let found = lines_with(&out, line);
        assert_eq!(found.len(), 1, "{line}: {out}");
        assert!(found[0].ends_with(&origin), "{line} {origin}: {out}");
    }
    assert_eq!(lines_with(&out, "SCR: NPROCS=4").len(), 1, "{out}");
    assert_eq!(lines_with(&out, "SCR: NNODES=4").len(), 1, "{out}");
    // each checkpoint: its start and its cost over the whole job (4 ranks' files of 8 + size
    // bytes: what test_api writes, not what SCR reports of itself)
    let bytes = 4 * (8 + size);
    for t in 1..=2 {
        assert_eq!(
            lines_with(&out, &format!("SCR: Starting dataset {t} `ckpt.{t}'")).len(),
            1,
            "{out}"
        );
        assert_eq!(
            lines_with(&out, &format!("SCR: Completed dataset {t} `ckpt.{t}'")).len(),
            1,
            "{out}"
        );
    }
    let costs = lines_with(&out, "SCR: scr_complete_output: ");
    assert_eq!(costs.len(), 2, "{out}");
    for c in costs {
        assert!(
            c.contains(&format!(" secs, 4 files, {bytes} bytes, ")) && c.ends_with(" MB/s"),
            "{c}"
        );
    }
    // SCR_FLUSH=2: ckpt.2 is flushed, and says so with its cost
    assert_eq!(
        lines_with(&out, "SCR: Initiating flush of dataset 2 `ckpt.2'").len(),
        1,
        "{out}"
    );
    let flush = lines_with(&out, "SCR: scr_flush_sync: ");
    assert!(
        flush
            .iter()
            .any(|l| l.contains(&format!("4 files, {bytes} bytes"))),
        "{out}"
    );
    assert_eq!(
        lines_with(
            &out,
            "SCR: scr_flush_sync: Flush succeeded for dataset 2 `ckpt.2'"
        )
        .len(),
        1,
        "{out}"
    );
    assert!(
        lines_with(&out, "Initiating flush of dataset 1").is_empty(),
        "{out}"
    );
    // no message shares its line with another
    for l in out.lines().filter(|l| l.contains("SCR")) {
        assert!(
            l.starts_with("SCR: ") && l.matches("SCR: ").count() == 1,
            "{l:?}"
        );
    }

    // at the default level, none of it
    let job = Job::new();
    let out = run_ok_on(&job, HOSTS, 4, &["1000", "2"], &[("SCR_FLUSH", "2")]);
    assert!(!out.contains("SCR:"), "{out}");
}

#[test]
fn scr_debug_1_says_which_datasets_a_restart_rebuilt_and_how() {
    // two checkpoints in cache (SCR_CACHE_SIZE=2), none flushed, then n3 is lost
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "XOR"),
        ("SCR_CACHE_SIZE", "2"),
        ("SCR_FLUSH", "0"),
    ];
    run_ok_on(&job, HOSTS, 4, &["20000", "2"], &env);
    lose_node(&job, "n3");
    let env = [&env[..], &[("SCR_DEBUG", "1")]].concat();
    let out = run_ok_on(&job, HOSTS, 4, &["20000", "0"], &env);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    for d in [2, 1] {
        for line in [
            format!("SCR: Attempting to distribute and rebuild dataset {d}"),
            format!("SCR: Rebuilt dataset {d}"),
        ] {
            assert_eq!(lines_with(&out, &line).len(), 1, "{line}: {out}");
        }
        // n3 ran rank 2 (round robin over 4 hosts): its files, and only those, rebuilt
        let rebuilt = lines_with(
            &out,
            &format!("Rebuilding files of dataset {d} from XOR segments"),
        );
        assert_eq!(
            rebuilt,
            [format!(
                "SCR: rank 2: Rebuilding files of dataset {d} from XOR segments"
            )],
            "{out}"
        );
    }
    assert_eq!(
        lines_with(
            &out,
            "SCR: Scalable restart succeeded for checkpoint 2, took "
        )
        .len(),
        1,
        "{out}"
    );
    // the older checkpoint is whole in cache again, not only its parity: its bytes verify
    let n3 = node_dirs(&job, "n3")[0].clone();
    let older: Vec<_> = walk(&n3)
        .into_iter()
        .filter(|p| p.ends_with("ckpt.1/rank_2.ckpt"))
        .collect();
    assert_eq!(older.len(), 1, "{:?}", walk(&n3));
    check_file(&older[0], 2, 1, 20000);
}

#[test]
fn scr_debug_1_names_the_fetch_and_a_failed_one_moves_current() {
    let job = Job::new();
    run_ok(&job, &["5000", "3"], &[("SCR_FLUSH", "1")]);
    // ckpt.3 corrupted on the prefix (same size, another byte), every cache gone
    let victim = job.prefix().join("ckpt.3/rank_1.ckpt");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0x5a;
    std::fs::write(&victim, bytes).unwrap();
    delete_caches(&job);
    let out = job.run_ok(2, &["5000", "0"], &[("SCR_DEBUG", "1")]);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    assert_eq!(
        lines_with(&out, "SCR: Attempting fetch: ckpt.3").len(),
        1,
        "{out}"
    );
    let crc = lines_with(&out, "CRC32 mismatch detected when fetching file from");
    assert!(
        crc.len() == 1 && crc[0].contains("ckpt.3/rank_1.ckpt") && crc[0].contains("dataset 3"),
        "{out}"
    );
    assert_eq!(
        lines_with(&out, "SCR: Failed to fetch dataset 3 `ckpt.3'").len(),
        1,
        "{out}"
    );
    assert_eq!(
        lines_with(&out, "SCR: Attempting fetch: ckpt.2").len(),
        1,
        "{out}"
    );
    assert_eq!(
        lines_with(&out, "SCR: Fetch of dataset 2 `ckpt.2' succeeded").len(),
        1,
        "{out}"
    );
    // as SCR, the checkpoint fetched is current now, not the one that failed (the index
    // kept saying ckpt.3, and scr.current pointed there)
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.2"));
    assert_eq!(
        std::fs::read_link(job.prefix().join("scr.current")).unwrap(),
        std::path::Path::new("ckpt.2")
    );
    let e3 = job.index_entry("ckpt.3");
    assert!(
        e3.complete && !e3.failed.is_empty() && !e3.is_current,
        "{e3:?}"
    );
}

#[test]
fn a_checkpoint_too_big_for_the_cache_says_so_at_the_default_level() {
    let job = Job::new();
    let cache = job.dir.path().join("small-cache");
    let _small = Tmpfs::mount(&cache, 64 * 1024);
    let out = job.run(
        2,
        &["200000", "1"],
        &[
            ("SCR_CACHE_BASE", cache.to_str().unwrap()),
            ("SCR_FLUSH", "0"),
        ],
    );
    let t = text(&out);
    assert!(t.contains("test_api: checkpoint 1 failed"), "{t}");
    assert!(
        t.contains("SCR: ERROR: dataset 1 `ckpt.1' is not complete"),
        "the job is told: {t}"
    );
    assert!(
        t.contains("is full") && t.contains("the cache is too small for this dataset"),
        "and why: {t}"
    );
}

#[test]
fn an_scr_environment_variable_no_parameter_has_is_warned_of_once_at_the_default_level() {
    let job = Job::new();
    let out = run_ok(
        &job,
        &["1000", "2"],
        &[("SCR_FLUSH_ASYNK", "1"), ("SCR_TEST_ANYTHING", "1")],
    );
    let warned = lines_with(&out, "SCR_FLUSH_ASYNK");
    assert_eq!(warned.len(), 1, "once, by rank 0: {out}");
    assert!(
        warned[0].starts_with("SCR: WARNING: environment variable SCR_FLUSH_ASYNK")
            && warned[0].contains("SCR_FLUSH_ASYNC"),
        "{out}"
    );
    // what the job's own launch sets (SCR_JOB_ID, SCR_SYSTEM_CONF_FILE …) is no typo
    assert_eq!(lines_with(&out, "environment variable").len(), 1, "{out}");
}

#[test]
fn scr_debug_1_shows_the_working_directory_prefix_and_the_values_left_unset() {
    let job = Job::new();
    let mut cmd = job.command(None, 2, &["1000", "1"], &[("SCR_DEBUG", "1")]);
    cmd.env_remove("SCR_PREFIX")
        .env_remove("SCR_CURRENT")
        .env_remove("SCR_END_TIME")
        .env_remove("SCR_HALT_EXIT");
    let o = cmd.output().unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let one = |start: &str| {
        let found = lines_with(&out, start);
        assert_eq!(found.len(), 1, "{start}: {out}");
        found[0].to_string()
    };
    // the job runs in its prefix directory
    let prefix = one(&format!("SCR: SCR_PREFIX={} ", job.prefix().display()));
    assert!(prefix.contains("working directory"), "{prefix}");
    assert!(
        one("SCR: SCR_HALT_EXIT=0 ").ends_with("(built-in default)"),
        "{out}"
    );
    for unset in ["SCR_CURRENT", "SCR_END_TIME"] {
        assert!(one(&format!("SCR: {unset}= ")).contains("unset"), "{out}");
    }
}

fn run_ok(job: &Job, args: &[&str], env: &[(&str, &str)]) -> String {
    job.run_ok(2, args, env)
}

/// SCR_DEBUG=1 lists the flush a job gets, not the table's default: with no drain to follow
/// (not under scr-run) and no flush chosen, every checkpoint flushes in the background;
/// with a drain to follow, SCR_FLUSH=10 as v2.0.
#[test]
fn scr_debug_1_shows_the_flush_in_effect_with_and_without_a_drain_to_follow() {
    let job = Job::new();
    let out = job.run_ok(2, &["1000", "1"], &[("SCR_DEBUG", "1")]);
    let flush = lines_with(&out, "SCR: SCR_FLUSH=");
    assert!(
        flush.len() == 1 && flush[0].contains("SCR_FLUSH=1 (no drain follows a job launched here"),
        "{out}"
    );
    let asynchronous = lines_with(&out, "SCR: SCR_FLUSH_ASYNC=");
    assert!(
        asynchronous.len() == 1 && asynchronous[0].contains("SCR_FLUSH_ASYNC=1 (no drain"),
        "{out}"
    );
    let out = job.run_ok(
        2,
        &["1000", "1"],
        &[("SCR_DEBUG", "1"), ("SCR_DRAIN_FOLLOWS", "1")],
    );
    let flush = lines_with(&out, "SCR: SCR_FLUSH=");
    assert!(
        flush.len() == 1 && flush[0].contains("SCR_FLUSH=10 (built-in default)"),
        "{out}"
    );
}

#[test]
fn a_cached_checkpoint_missing_a_file_is_said_so_not_blamed_on_a_lost_node() {
    // two checkpoints stay in cache (no flush, no SCR_Finalize); a removal of ckpt.2 cut
    // short left rank 0's file gone while its node's filemap still lists it. Every node is
    // there: the restart must say which file is missing, not that a node was lost.
    let job = Job::new();
    run_ok_on(
        &job,
        HOSTS,
        4,
        &["1000", "2"],
        &[
            ("SCR_COPY_TYPE", "SINGLE"),
            ("SCR_CACHE_SIZE", "2"),
            ("SCR_FLUSH", "0"),
            ("TEST_API_NO_FINALIZE", "1"),
        ],
    );
    let gone = job.cached("ckpt.2/rank_0.ckpt");
    assert_eq!(gone.len(), 1, "{gone:?}");
    std::fs::remove_file(&gone[0]).unwrap();
    let out = run_ok_on(&job, HOSTS, 4, &["1000", "0"], &[]);
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("SCR: dataset 2:"))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].contains(&format!(
            "rank 0's files in its node's cache are not whole ({}: ",
            gone[0].display()
        )) && !said[0].contains("surviving"),
        "{out}"
    );
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

/// What the next run says of a checkpoint this job wrote, never flushed, and cannot get
/// back from its own caches: not that an earlier run's nodes hold it and `scr postrun`
/// drains it (these caches are the job's own, and what they lack no drain brings back).
fn assert_unrecoverable_checkpoint_told_as_such(out: &str) {
    assert!(!out.contains("only in that run's node caches"), "{out}");
    assert!(!out.contains("scr postrun"), "{out}");
    let said = lines_with(out, "SCR: ckpt.2 (dataset 2)");
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].contains("could not be recovered from this job's caches")
            && said[0].contains("not on the prefix"),
        "{out}"
    );
}

#[test]
fn a_single_checkpoint_on_a_lost_node_is_not_offered_to_a_drain() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "SINGLE"),
        ("SCR_FLUSH", "0"),
        ("TEST_API_NO_FINALIZE", "1"),
    ];
    run_ok_on(&job, HOSTS, 4, &["1000", "2"], &env);
    lose_node(&job, "n3");
    let out = run_ok_on(&job, HOSTS, 4, &["1000", "0"], &[]);
    // where the search goes next is not only back in time: the prefix may hold a newer one
    // (another size's checkpoints), so the line names both places and no direction
    let said = lines_with(&out, "cannot be recovered from cache");
    assert!(
        !said.is_empty()
            && said
                .iter()
                .all(|l| l.ends_with("(older ones in cache, then the prefix)")),
        "{out}"
    );
    // n3 ran rank 2 (round robin over 4 hosts)
    assert!(
        out.contains("rank 2's files are on no surviving node"),
        "{out}"
    );
    assert_unrecoverable_checkpoint_told_as_such(&out);
    // every node that wrote it ran this job: no drain or later job can complete it, and
    // what is left of it would stop a job of another size that cannot drain it either
    for rank in [0, 1, 3] {
        let left = job.cached(&format!("ckpt.2/rank_{rank}.ckpt"));
        assert!(
            left.is_empty(),
            "rank {rank}'s piece of ckpt.2 stayed: {left:?}"
        );
    }
}

#[test]
fn an_xor_rebuild_that_fails_its_crc_is_not_blamed_on_an_earlier_run() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "XOR"),
        ("SCR_FLUSH", "0"),
        ("TEST_API_NO_FINALIZE", "1"),
    ];
    run_ok_on(&job, HOSTS, 4, &["1000", "2"], &env);
    lose_node(&job, "n3");
    // another member's data changed in cache (same size): what XOR rebuilds of rank 2 is
    // not what rank 2 wrote
    let changed = job.cached("ckpt.2/rank_0.ckpt");
    assert_eq!(changed.len(), 1, "{changed:?}");
    let mut bytes = std::fs::read(&changed[0]).unwrap();
    bytes[100] ^= 0x5a;
    std::fs::write(&changed[0], bytes).unwrap();
    let out = run_ok_on(&job, HOSTS, 4, &["1000", "0"], &[]);
    assert!(out.contains("does not match the CRC32"), "{out}");
    assert_unrecoverable_checkpoint_told_as_such(&out);
}

/// SCR_CACHE_BYPASS: the checkpoints' files are on the prefix, the cache only records
/// them. A node lost with its records loses nothing: no word of files on no surviving node
/// nor of a dataset the cache cannot give back; the restart reads the prefix.
#[test]
fn a_node_lost_under_cache_bypass_loses_nothing_and_is_not_reported_lost() {
    let job = Job::new();
    let env = [("SCR_CACHE_BYPASS", "1"), ("TEST_API_NO_FINALIZE", "1")];
    run_ok_on(&job, HOSTS, 4, &["1000", "2"], &env);
    lose_node(&job, "n3");
    let out = run_ok_on(&job, HOSTS, 4, &["1000", "0"], &[("SCR_CACHE_BYPASS", "1")]);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    assert!(!out.contains("surviving"), "{out}");
    assert!(!out.contains("cannot be recovered"), "{out}");
    assert!(!out.contains("SCR: dataset 2"), "{out}");
}

/// A rank killed while SCR encoded a checkpoint's XOR parity (its node and every file it
/// wrote still there): the restart says that checkpoint was never completed, not that a
/// node or a file was lost, and restarts from the one before.
#[test]
fn a_checkpoint_killed_in_its_encoding_is_told_never_completed() {
    let job = steps_job();
    kill_a_rank_encoding_the_second_checkpoint(&job);
    let out = job.run_on(
        Some(HOSTS),
        4,
        &["init", "restart", "quit"],
        &[("SCR_COPY_TYPE", "XOR"), ("SCR_CACHE_SIZE", "2")],
    );
    let out = text(&out);
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.1 t=1 data=verified rc=0",
        "{out}"
    );
    let said = lines_with(&out, "SCR: dataset 2:");
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].contains("rank 0 never completed its part of it (")
            && said[0].contains("xor.")
            && said[0].ends_with("the dataset is incomplete"),
        "{out}"
    );
    assert!(
        !out.contains("surviving") && !out.contains("not whole"),
        "{out}"
    );
}
