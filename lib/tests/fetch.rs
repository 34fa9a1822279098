//! Fetch: a restart from the prefix when the cache has nothing to restart from (every
//! cache lost, a cached copy damaged), the rank2file tree read back, a dataset broken on the
//! prefix marked failed and an older one fetched, a prefix written by real SCR v2.0.0, and
//! a cache too small to take the checkpoint, which is then read in place.

mod common;

use common::*;

#[test]
fn a_damaged_cache_is_not_used_and_the_prefix_copy_is_fetched() {
    let job = Job::new();
    job.run_ok(2, &["5000", "1"], &[("SCR_FLUSH", "1")]);
    // truncate one cached file: its size no longer matches the filemap
    let cached = job.cached("rank_1.ckpt");
    assert_eq!(cached.len(), 1, "{cached:?}");
    std::fs::write(&cached[0], b"short").unwrap();
    let out = job.run_ok(2, &["5000", "1"], &[]);
    // SCR_FLUSH=1 flushed ckpt.1; the damaged cache copy is refused, the prefix copy fetched
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    let e1 = job.index_entry("ckpt.1");
    assert_eq!(
        e1.fetched.len(),
        1,
        "restart came from the prefix, not the damaged cache"
    );
}

#[test]
fn without_fetch_a_damaged_cache_means_a_clean_start() {
    let job = Job::new();
    job.run_ok(2, &["5000", "1"], &[("SCR_FLUSH", "0")]);
    let cached = job.cached("rank_0.ckpt");
    std::fs::write(&cached[0], b"short").unwrap();
    let out = job.run_ok(2, &["5000", "1"], &[("SCR_FETCH", "0")]);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
}

#[test]
fn restart_fetches_from_the_prefix_when_every_cache_is_gone() {
    let job = Job::new();
    job.run_ok(4, &["20000", "3"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let out = job.run_ok(4, &["20000", "1"], &[]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
    let e3 = job.index_entry("ckpt.3");
    assert_eq!(e3.fetched.len(), 1, "the fetch is recorded");
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.4"));
}

/// An index that is there but does not read: the restart has nothing to fetch, and says so
/// naming the file and the way back, once; the checkpoint on the prefix is untouched, and
/// restarts once the index is rebuilt.
#[test]
fn an_unreadable_index_is_said_and_the_checkpoint_comes_back_when_it_is_rebuilt() {
    let job = Job::new();
    job.run_ok(2, &["5000", "1"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let index = job.prefix().join(".scr/index.scr");
    std::fs::write(&index, b"garbage").unwrap();
    let out = job.run_ok(2, &["5000", "0"], &[]);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("WARNING") && l.contains(&*index.to_string_lossy()))
        .collect();
    assert_eq!(said.len(), 1, "said once: {out}");
    assert!(said[0].contains("scr index --add"), "{out}");
    std::fs::rename(&index, job.prefix().join("index.bad")).unwrap();
    let added = std::process::Command::new(scr_command())
        .args(["index", "-p"])
        .arg(job.prefix())
        .args(["--add", "ckpt.1"])
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", text(&added));
    let out = job.run_ok(2, &["5000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

/// A checkpoint fetched into cache is protected with the job's scheme, as one the job
/// wrote is (SCR v3.1 applies the scheme after a fetch): a node lost after the run that
/// fetched it leaves it to a rebuild in cache, so a prefix copy damaged meanwhile loses
/// nothing.
#[test]
fn a_fetched_checkpoint_is_protected_in_cache_and_survives_a_lost_node() {
    let job = Job::new();
    let partner = [("SCR_COPY_TYPE", "PARTNER"), ("SCR_FLUSH", "1")];
    run_ok_on(&job, "n1,n2", 2, &["20000", "1"], &partner);
    delete_caches(&job);
    let out = run_ok_on(&job, "n1,n2", 2, &["20000", "0"], &partner);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    lose_node(&job, "n2");
    flip_byte(&job.prefix().join("ckpt.1/rank_0.ckpt"), 100);
    let out = run_ok_on(&job, "n1,n2", 2, &["20000", "0"], &partner);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

/// The ranks' file lists fill several rank2file leaves: each leaf's first rank writes it,
/// rank 0 the levels above, and a fetch reads every rank's files back through the tree.
#[test]
fn a_dataset_whose_file_lists_fill_several_rank2file_leaves_is_fetched_back() {
    let job = Job::new();
    // 4 ranks x 600 files x ~300-byte records: more than one leaf's share (512 KiB)
    let env = [
        ("SCR_FLUSH", "1"),
        ("TEST_API_FILES", "600"),
        ("TEST_API_NAME_PAD", "240"),
    ];
    job.run_ok(4, &["16", "1"], &env);
    let meta = job.prefix().join(".scr/scr.dataset.1");
    let leaves: Vec<String> = std::fs::read_dir(&meta)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rank2file.0."))
        .collect();
    assert!(leaves.len() >= 2, "{leaves:?}");
    assert!(
        leaves.iter().any(|n| n != "rank2file.0.0.scr"),
        "a leaf written by a rank other than 0: {leaves:?}"
    );
    for leaf in &leaves {
        let len = std::fs::metadata(meta.join(leaf)).unwrap().len();
        assert!(
            len <= scr::rank2file::MAX_FILE_BYTES as u64,
            "{leaf}: {len} bytes"
        );
    }
    delete_caches(&job);
    let out = job.run_ok(4, &["16", "0"], &env[1..]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

#[test]
fn a_corrupt_flushed_file_marks_the_dataset_failed_and_the_older_one_is_used() {
    let job = Job::new();
    job.run_ok(2, &["20000", "3"], &[("SCR_FLUSH", "1")]);
    let victim = job.prefix().join("ckpt.3/rank_1.ckpt");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[1000] ^= 0x55; // same size, different content: only the CRC can tell
    std::fs::write(&victim, bytes).unwrap();
    delete_caches(&job);
    let out = job.run_ok(2, &["20000", "0"], &[]);
    assert!(out.contains("CRC32"), "the mismatch is reported: {out}");
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    let e3 = job.index_entry("ckpt.3");
    assert_eq!(e3.failed.len(), 1, "ckpt.3 is marked FAILED");
    // later restarts skip it
    let index = job.index();
    assert!(
        index
            .restart_candidates(None)
            .iter()
            .all(|e| e.name != "ckpt.3")
    );
}

#[test]
fn a_prefix_written_by_real_scr_2_0_0_restarts() {
    let job = Job::new();
    let golden = workspace().join("tests/golden/xor/prefix/.scr");
    let hidden = job.prefix().join(".scr");
    for e in walk(&golden) {
        let rel = e.strip_prefix(&golden).unwrap();
        if rel.extension().is_some_and(|x| x == "txt") || rel.starts_with("halt.scr") {
            continue;
        }
        std::fs::create_dir_all(hidden.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(&e, hidden.join(rel)).unwrap();
    }
    // The golden run kept no user files; SCR's test_api content is fully determined (and its
    // CRCs in the golden rank2file prove the reconstruction exact).
    std::fs::create_dir_all(job.prefix().join("ckpt.3")).unwrap();
    for r in 0..4usize {
        let mut bytes = b"000003\0".to_vec();
        bytes.extend((0..65536 + r).map(|i| ((r + i) % 256) as u8));
        std::fs::write(job.prefix().join(format!("ckpt.3/rank_{r}.ckpt")), bytes).unwrap();
    }
    let app = build_c(
        job.dir.path(),
        &workspace().join("lib/tests/c/golden_restart.c"),
        "golden_restart",
    );
    let out = Mpi::current()
        .launch(None, 4, 60, &app, &[])
        .current_dir(job.prefix())
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_PREFIX", job.prefix())
        .env("SCR_JOB_ID", "4243")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("golden: restarted from ckpt.3"), "{t}");
}

/// A cache that cannot take the checkpoint (full) is this job's problem, not the
/// checkpoint's: the restart reads it in place on the prefix, and it is not marked failed,
/// so CURRENT stays on it and a run on healthy nodes fetches it again.
#[test]
fn a_cache_too_small_for_the_fetch_reads_the_checkpoint_in_place_and_marks_nothing_failed() {
    let job = Job::new();
    let size = 200_000;
    job.run_ok(2, &[&size.to_string(), "3"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let small = job.dir.path().join("small-cache");
    {
        let _full = Tmpfs::mount(&small, 64 * 1024);
        let out = job.run_ok(
            2,
            &[&size.to_string(), "0"],
            &[("SCR_CACHE_BASE", small.to_str().unwrap())],
        );
        assert!(
            out.contains("restarted from ckpt.3 (timestep 3), data verified"),
            "{out}"
        );
        assert!(
            out.contains("SCR: the cache could not take ckpt.3")
                && out.contains("reading it in place on the prefix instead"),
            "said why: {out}"
        );
    }
    let e3 = job.index_entry("ckpt.3");
    assert!(e3.failed.is_empty(), "ckpt.3 is intact: {:?}", e3.failed);
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.3"));
    // on a healthy cache the next run fetches it into cache as usual
    delete_caches(&job);
    let out = job.run_ok(2, &[&size.to_string(), "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

/// A prefix file others could write (a permission change, not a change of its data) is
/// refused, and the restart falls back to the older checkpoint; but the refusal says
/// nothing about the checkpoint's data, so it is not marked failed, and once the permission
/// is put back, as the refusal advises, the next restart takes it again.
#[test]
fn a_checkpoint_refused_for_its_permissions_is_skipped_once_and_restarts_once_they_are_fixed() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    job.run_ok(2, &["20000", "2"], &[("SCR_FLUSH", "1")]);
    let victim = job.prefix().join("ckpt.2/rank_1.ckpt");
    let mode = std::fs::metadata(&victim).unwrap().permissions().mode();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(mode | 0o002)).unwrap();
    delete_caches(&job);
    let out = job.run_ok(2, &["20000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    assert!(
        out.contains("rank_1.ckpt"),
        "the refused file is named: {out}"
    );
    let e2 = job.index_entry("ckpt.2");
    assert!(e2.failed.is_empty(), "ckpt.2 is intact: {:?}", e2.failed);
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(mode)).unwrap();
    delete_caches(&job);
    let out = job.run_ok(2, &["20000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
}

/// A job launched without scr-run (no drain follows it) that ends before SCR_Finalize
/// leaves its newest checkpoints in its nodes' caches alone. The next job, on other nodes,
/// starts over, and says so where a user looks: at the default debug level, naming the
/// checkpoint the prefix's flush file still lists.
#[test]
fn a_job_that_finds_its_newest_checkpoint_only_in_another_jobs_caches_says_so() {
    let job = Job::new();
    job.run_ok(2, &["20000", "1"], &[("SCR_FLUSH", "1")]);
    job.run_ok(
        2,
        &["20000", "2"],
        &[("SCR_FLUSH", "10"), ("TEST_API_NO_FINALIZE", "1")],
    );
    delete_caches(&job);
    let out = job.run_ok(2, &["20000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("ckpt.3") && l.contains("only in"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "said once which checkpoint is not here: {out}"
    );
    assert!(said[0].contains("scr postrun"), "and how to get it: {out}");
}
