//! The library against careless or hostile input, with real `mpiexec`: NULL outputs and a
//! second SCR_Init fail cleanly, dataset names cannot forge index lines or leave their
//! directory, a cache or control directory that is a link or someone else's is refused,
//! files keep the modes the umask and the application gave them, and a node whose control
//! directory fills up leaves no rank waiting.

mod common;

use common::*;
use scr::HashView;
use std::os::unix::fs::PermissionsExt;

#[test]
fn null_outputs_a_second_init_and_forged_names_fail_and_scr_goes_on() {
    let job = Job::with_c_program("hostile_api.c");
    let out = job.run_ok(2, &[], &[("SCR_FLUSH", "1")]);
    for case in [
        "second init",
        "need_checkpoint null",
        "have_restart null",
        "should_exit null",
        "forged name",
        "dotdot name",
        "route null out",
        "dataset scr.current",
        "dataset .scr",
        "route .scr/index.scr",
        "route .scr/halt.scr",
        "route .scrconf",
        "route scr.current",
        "route scr.current/x",
    ] {
        assert!(
            out.contains(&format!("hostile_api: {case} rc=1")),
            "{case}: {out}"
        );
    }
    for case in [
        "have_restart null name",
        "good start",
        "good complete",
        "finalize",
    ] {
        assert!(
            out.contains(&format!("hostile_api: {case} rc=0")),
            "{case}: {out}"
        );
    }
    assert!(
        out.contains("SCR_Init: SCR is already initialized"),
        "{out}"
    );
    assert!(
        out.contains("SCR_Need_checkpoint: the flag is NULL"),
        "{out}"
    );
    assert!(out.contains("control character"), "{out}");
    assert!(
        out.contains("is SCR's own"),
        "reserved names say why: {out}"
    );
    // and SCR's state is what SCR wrote: the index reads, no link or file was routed over
    assert!(scr::index::IndexFile::read(&scr::layout::index_file(&job.prefix())).is_ok());
    assert!(!job.prefix().join(".scrconf").exists());
    // the index holds the good dataset and no forged line
    let listing = std::process::Command::new(scr_command())
        .args([
            "index",
            "--prefix",
            job.prefix().to_str().unwrap(),
            "--list",
        ])
        .output()
        .unwrap();
    let listing = text(&listing);
    assert!(listing.contains("good"), "{listing}");
    assert!(!listing.contains("evil"), "{listing}");
    assert_eq!(
        listing.lines().count(),
        2,
        "a header and one dataset: {listing}"
    );
}

#[test]
fn a_cache_or_control_directory_that_is_a_link_or_open_to_others_is_refused() {
    // the job's cache directory planted as a link to somewhere else
    let job = Job::new();
    let elsewhere = job.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let user_dir = job.dir.path().join("cache").join(user());
    std::fs::create_dir_all(&user_dir).unwrap();
    std::os::unix::fs::symlink(&elsewhere, user_dir.join(format!("scr.{JOB_ID}"))).unwrap();
    let o = job.run(2, &["1000", "1"], &[]);
    let t = text(&o);
    // SCR_Init fails, and stops the job
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("aborting the job"), "{t}");
    assert!(t.contains("symbolic link"), "{t}");
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written there"
    );

    // the control directory left open to everyone (0777)
    let job = Job::new();
    let cntl = job
        .dir
        .path()
        .join("cntl")
        .join(user())
        .join(format!("scr.{JOB_ID}"));
    std::fs::create_dir_all(&cntl).unwrap();
    std::fs::set_permissions(&cntl, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = job.run(2, &["1000", "1"], &[]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("aborting the job"), "{t}");
    assert!(
        t.contains("writable by everyone") && t.contains("chmod o-w"),
        "{t}"
    );
}

#[test]
fn modes_follow_the_umask_and_a_flushed_file_keeps_its_own() {
    let job = Job::new();
    // under umask 077: the application's files are 0600
    job.run_ok_under_umask("077", None, 2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&job.prefix().join("ckpt.1/rank_1.ckpt")), 0o600);
    assert_eq!(mode(&job.prefix().join(".scr")), 0o700);
    assert_eq!(mode(&job.prefix().join(".scr/index.scr")), 0o600);
    // without a umask of its own a 0640 file stays 0640 on the prefix
    let job = Job::new();
    job.run_ok_under_umask("027", None, 2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert_eq!(mode(&job.prefix().join("ckpt.1/rank_0.ckpt")), 0o640);
    // `.scr` is the user's alone, halt file included
    assert_eq!(mode(&job.prefix().join(".scr")), 0o700);
}

#[test]
fn under_umask_002_checkpoints_restart_from_the_prefix_and_a_shared_group_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // RHEL-family defaults: umask 002, each user in a group of their own (root's here);
    // with the cache bypassed the application's own group-writable files are on the prefix
    let job = Job::new();
    let bypass = [("SCR_CACHE_BYPASS", "1"), ("SCR_FLUSH", "0")];
    job.run_ok_under_umask("002", None, 2, &["1000", "2"], &bypass);
    let file = job.prefix().join("ckpt.2/rank_1.ckpt");
    assert_eq!(mode(&file), 0o664);
    delete_caches(&job);
    let t = job.run_ok_under_umask("002", None, 2, &["1000", "0"], &[("SCR_FLUSH", "0")]);
    assert!(t.contains("restarted from ckpt.2"), "{t}");
    // the copies a flush keeps are the user's alone to write, whatever the umask
    let flushed = Job::new();
    flushed.run_ok_under_umask("002", None, 2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert_eq!(mode(&flushed.prefix().join("ckpt.1/rank_0.ckpt")), 0o644);
    // a file a group of several users (users, 100) may write is not read back
    std::os::unix::fs::chown(&file, None, Some(100)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    delete_caches(&job);
    let o = job.run(2, &["1000", "0"], &[("SCR_FLUSH", "0")]);
    let t = text(&o);
    assert!(!t.contains("restarted from ckpt.2"), "{t}");
    assert!(
        t.contains("rank_1.ckpt") && t.contains("writable by its group") && t.contains("chmod g-w"),
        "{t}"
    );
}

#[test]
fn eviction_deletes_nothing_a_filemap_names_outside_the_cache() {
    let job = Job::new();
    job.run_ok(2, &["1000", "1"], &[("SCR_FLUSH", "0")]);
    // a filemap entry for dataset 1 naming a file of the user's elsewhere
    let victim = job.dir.path().join("thesis.tex");
    std::fs::write(&victim, "years of work").unwrap();
    let fm_path = job
        .dir
        .path()
        .join(format!("cntl/{}/scr.{JOB_ID}/filemap_0.scrinfo", user()));
    let mut map = scr::filemap::Filemap::read(&fm_path).unwrap();
    map.add_file(1, 0, &victim.to_string_lossy());
    map.write(&fm_path).unwrap();
    // the next run finds dataset 1 damaged (an entry without meta data) and starts over;
    // its new checkpoint evicts dataset 1 (SCR_CACHE_SIZE=1), entry and all
    let out = job.run_ok(
        2,
        &["1000", "1"],
        &[("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "1")],
    );
    let dataset_1 = job
        .dir
        .path()
        .join(format!("cache/{}/scr.{JOB_ID}/scr.dataset.1", user()));
    assert!(!dataset_1.exists(), "dataset 1 evicted: {out}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "years of work");
}

#[test]
fn a_flush_does_not_write_through_a_link_planted_in_the_prefix() {
    let job = Job::new();
    let elsewhere = job.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, job.prefix().join("ckpt.1")).unwrap();
    let o = job.run(2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    let t = text(&o);
    assert!(t.contains("symbolic link"), "{t}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{t}");
}

#[test]
fn a_prefix_file_that_is_not_what_the_summary_says_is_never_copied_into_cache() {
    let job = Job::new();
    job.run_ok(2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    // grown to 3 GB (sparse): refused by its size before a byte is copied
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(job.prefix().join("ckpt.1/rank_1.ckpt"))
        .unwrap();
    f.set_len(3 << 30).unwrap();
    let started = std::time::Instant::now();
    let out = job.run_ok(2, &["1000", "1"], &[]);
    assert!(out.contains("not the 1008 the flush recorded"), "{out}");
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    assert!(started.elapsed().as_secs() < 60);
    let cached: u64 = walk(&job.dir.path().join("cache"))
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    assert!(cached < 1 << 20, "{cached} bytes in cache");

    // a FIFO in its place: refused, not waited on
    let job = Job::new();
    job.run_ok(2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let file = job.prefix().join("ckpt.1/rank_0.ckpt");
    std::fs::remove_file(&file).unwrap();
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap()
            .success()
    );
    let out = job.run_ok(2, &["1000", "1"], &[]);
    assert!(out.contains("not a regular file"), "{out}");
}

#[test]
fn a_relative_cache_base_is_an_error_naming_it() {
    let job = Job::new();
    let o = job.run(2, &["1000", "1"], &[("SCR_CACHE_BASE", "relative/cache")]);
    let t = text(&o);
    assert!(
        t.contains("SCR_CACHE_BASE") && t.contains("not an absolute path"),
        "{t}"
    );
}

#[test]
fn a_cached_file_corrupted_after_its_checkpoint_completed_is_not_flushed() {
    let job = Job::new();
    // one checkpoint, flushed only by SCR_Finalize after 3 s of "computing"
    let child = job
        .command(
            None,
            2,
            &["100000", "1"],
            &[
                ("SCR_FLUSH", "10"),
                ("SCR_CRC_ON_COPY", "1"),
                ("TEST_API_SLEEP_MS", "3000"),
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // once rank 1's checkpoint is complete in cache (its filemap records the CRC), flip a byte
    let started = std::time::Instant::now();
    let victim = loop {
        assert!(started.elapsed().as_secs() < 60, "no checkpoint appeared");
        let fm = job
            .dir
            .path()
            .join(format!("cntl/{}/scr.{JOB_ID}/filemap_1.scrinfo", user()));
        let done = scr::filemap::Filemap::read(&fm).ok().and_then(|m| {
            let f = m.files(1, 1).first()?.to_string();
            m.meta(1, 1, &f)?.crc32().map(|_| f)
        });
        if let Some(f) = done {
            break std::path::PathBuf::from(f);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[500] ^= 0x5a;
    std::fs::write(&victim, bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert!(
        t.contains("CRC32") && t.contains("the cached file changed since, so it is not flushed"),
        "{t}"
    );
    assert!(!job.prefix().join("ckpt.1/rank_1.ckpt").exists(), "{t}");
    // (an index that exists must read: a torn one is no pass)
    let index = scr::layout::index_file(&job.prefix());
    let listed = index
        .exists()
        .then(|| scr::index::IndexFile::read(&index).unwrap().id_of("ckpt.1"))
        .flatten();
    assert_eq!(listed, None, "not indexed: {t}");
}

#[test]
fn a_lock_someone_holds_on_a_state_file_is_waited_for_a_while_then_named_not_waited_on_forever() {
    let job = Job::new();
    job.run_ok(2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    // a process of the user's (stopped, say) holds the halt file's lock
    let halt = job.prefix().join(".scr/.halt.scr.lock");
    let mut holder = std::process::Command::new("flock")
        .args(["--no-fork", "-x", halt.to_str().unwrap(), "sleep", "60"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let o = job.run(2, &["1000", "1"], &[("SCR_LOCK_TIMEOUT", "2")]);
    holder.kill().unwrap();
    holder.wait().unwrap();
    let t = text(&o);
    assert!(started.elapsed().as_secs() < 60, "waited on the lock: {t}");
    // the halt check is skipped with a warning naming the holder; the job restarts and goes on
    assert!(
        t.contains("halt file's conditions not checked")
            && t.contains("halt.scr")
            && t.contains(&format!("locked by process {}", holder.id())),
        "{t}"
    );
    assert!(
        o.status.success() && t.contains("restarted from ckpt.1"),
        "{t}"
    );
}

#[test]
fn a_node_name_that_would_leave_the_control_directory_is_refused() {
    let job = Job::new();
    let o = job.run(2, &["1000", "1"], &[("SCR_NODE_NAME", "x/../../elsewhere")]);
    let t = text(&o);
    assert!(t.contains("node name") && t.contains("holds a '/'"), "{t}");
    assert!(!job.dir.path().join("elsewhere").exists());
}

#[test]
fn a_rank2file_graph_that_multiplies_reads_is_stopped_not_followed() {
    use scr::hash::Hash;
    let job = Job::new();
    job.run_ok(2, &["1000", "1"], &[("SCR_FLUSH", "1")]);
    delete_caches(&job);
    // every level sends both ranks to the same next-level file: reads double per level,
    // where a tree SCR writes has each file read once
    let rel = ".scr/scr.dataset.1";
    let dir = job.prefix().join(rel);
    for level in (1..=16u64).rev() {
        let name = if level == 16 {
            "rank2file.scr".to_string()
        } else {
            format!("graph.{level}.scr")
        };
        let mut h = Hash::new();
        h.set_value("LEVEL", level);
        h.set_value("RANKS", 2u64);
        for reader in 0..2u64 {
            let entry = h.set_kv("RANK", reader);
            entry.set_value("FILE", format!("{rel}/graph.{}.scr", level - 1));
            entry.set_value("OFFSET", 0u64);
        }
        scr::io::write_hash_file(&dir.join(name), &h).unwrap();
    }
    let mut leaf = Hash::new();
    leaf.set_value("LEVEL", 0u64);
    scr::io::write_hash_file(&dir.join("graph.0.scr"), &leaf).unwrap();
    let started = std::time::Instant::now();
    let out = job.run_ok(2, &["1000", "1"], &[]);
    assert!(out.contains("it is not the tree SCR writes"), "{out}");
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    assert!(started.elapsed().as_secs() < 60);
}

/// A small tmpfs mounted over a directory for as long as it lives: a full disk.
/// One node's control directory fills up, at whichever point of a run its size makes it
/// fill (before the first filemap, after it, between checkpoints): no rank is left waiting
/// for one that gave up. Every run ends well inside the launcher's timeout, and the job
/// either ends with an error on every rank that names the full directory's file, or goes
/// on and flushes its checkpoints to the prefix.
#[test]
fn a_full_control_directory_on_one_node_leaves_no_rank_waiting() {
    for pages in [1, 2, 3, 4, 6] {
        for scheme in ["XOR", "PARTNER"] {
            let job = Job::new();
            let cntl = node_dirs(&job, "n2")[1].clone();
            let _full = Tmpfs::mount(&cntl, pages * 4096);
            let started = std::time::Instant::now();
            let out = job.run_on(
                Some("n1,n2,n3,n4"),
                4,
                &["3000", "8"],
                &[
                    ("SCR_COPY_TYPE", scheme),
                    ("SCR_FLUSH", "1"),
                    // the filemap grows with every cached dataset: the directory fills mid-run
                    ("SCR_CACHE_SIZE", "8"),
                    ("MPIEXEC_TIMEOUT", "60"),
                ],
            );
            let t = text(&out);
            let took = started.elapsed().as_secs();
            assert!(took < 50, "{scheme}, {pages} pages: ran {took} s: {t}");
            // said where and why, or not needed: every checkpoint reached the prefix
            let named =
                t.contains("No space left on device") && t.contains(&*cntl.to_string_lossy());
            let flushed = |c: usize| {
                (0..4).all(|r| {
                    let f = job.prefix().join(format!("ckpt.{c}/rank_{r}.ckpt"));
                    f.is_file() && {
                        check_file(&f, r, c as i64, 3000);
                        true
                    }
                })
            };
            assert!(
                named || flushed(8),
                "{scheme}, {pages} pages: neither an error naming the full directory nor the checkpoints: {t}"
            );
            // where SCR_Init went through, a checkpoint the job did not see fail reached the
            // prefix (where it failed, the job stopped)
            let with_scr = !t.contains("SCR_Init:");
            assert!(
                with_scr || !out.status.success(),
                "{scheme}, {pages} pages: {t}"
            );
            for c in (1..=8).filter(|_| with_scr) {
                assert!(
                    t.contains(&format!("checkpoint {c} failed")) || flushed(c),
                    "{scheme}, {pages} pages: ckpt.{c}: {t}"
                );
            }
        }
    }
}

#[test]
fn a_damaged_master_filemap_or_summary_is_said_and_loses_nothing() {
    // the node's master filemap damaged: the ranks' filemaps beside it still say what is
    // cached, and the restart comes from cache
    let job = Job::new();
    run_ok_on(&job, "n1,n2", 2, &["1000", "1"], &[("SCR_FLUSH", "0")]);
    let master = node_dirs(&job, "n1")[1].join("filemap.scrinfo");
    std::fs::write(&master, b"not a hash file").unwrap();
    let t = run_ok_on(&job, "n1,n2", 2, &["1000", "0"], &[("SCR_FLUSH", "0")]);
    assert!(
        t.contains("filemap.scrinfo") && t.contains("reading the filemaps beside it"),
        "{t}"
    );
    assert!(t.contains("restarted from ckpt.1"), "{t}");

    // a flushed dataset whose summary cannot be read is not deleted by the window (its
    // files would be orphaned): it stays, said, and the others go
    let job = Job::new();
    job.run_ok(2, &["1000", "2"], &[("SCR_FLUSH", "1")]);
    let summary = job.prefix().join(".scr/scr.dataset.1/summary.scr");
    assert!(summary.is_file());
    std::fs::write(&summary, b"garbage").unwrap();
    let t = job.run_ok(
        2,
        &["1000", "1"],
        &[("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "1")],
    );
    assert!(
        t.contains("ckpt.1 stays on the prefix") && t.contains("summary.scr"),
        "{t}"
    );
    assert!(job.prefix().join("ckpt.1/rank_0.ckpt").is_file(), "{t}");
    assert!(!job.prefix().join("ckpt.2").exists(), "{t}");
}

/// A rank whose SCR_Start_output fails alone (its eviction bookkeeping, a fault injected
/// in this debug build) still enters the dataset: every rank's Complete says the
/// checkpoint failed, the job goes on to the next one, and no rank waits for another.
/// Through the C API (test_api completes, marked invalid, a checkpoint its Start refused,
/// as SCR's own test_api does) and the Rust API (an `Output` whose `unprepared()` says why).
#[test]
fn a_start_that_fails_on_one_rank_leaves_no_rank_waiting() {
    let fault = [("SCR_TEST_FAULT", "evict@1#2"), ("MPIEXEC_TIMEOUT", "60")];
    let job = Job::new();
    let started = std::time::Instant::now();
    let out = job.run_on(
        Some("n1,n2,n3,n4"),
        4,
        &["3000", "4"],
        &[fault[0], fault[1], ("SCR_FLUSH", "1")],
    );
    let t = text(&out);
    assert!(
        started.elapsed().as_secs() < 50,
        "ran into the timeout: {t}"
    );
    assert!(
        t.contains("a fault injected at evict on rank 1"),
        "the fault was not injected: {t}"
    );
    assert!(t.contains("test_api: checkpoint 2 failed"), "{t}");
    assert!(!out.status.success(), "{t}");
    assert!(!job.prefix().join("ckpt.2").exists(), "{t}");
    // the checkpoints after it are whole: a new run restarts from the last and checks it
    let t = job.run_ok(4, &["3000", "0"], &[]);
    assert!(t.contains("restarted from ckpt.4"), "{t}");

    let job = Job {
        app: rust_example("rust_ckpt"),
        ..Job::new()
    };
    let started = std::time::Instant::now();
    let out = job.run_on(Some("n1,n2,n3,n4"), 4, &["3000", "3"], &fault);
    let t = text(&out);
    assert!(
        started.elapsed().as_secs() < 50,
        "ran into the timeout: {t}"
    );
    assert!(
        t.contains(
            "rust_ckpt: rank 1: checkpoint 2: evict on rank 1: could not run: a fault injected at \
             evict on rank 1"
        ),
        "{t}"
    );
    // every rank learned from its own complete that checkpoint 2 failed, and says so
    assert_eq!(t.matches("checkpoint 2 failed").count(), 4, "{t}");
}

/// A rank killed while it flushed leaves a temporary of its copy on the prefix, and the flush
/// file still says FLUSHING: the next run's SCR_Init removes such temporaries from the
/// directories its files of that dataset go to (and nothing else there).
#[test]
fn temporaries_an_interrupted_flush_left_on_the_prefix_are_removed_at_the_next_init() {
    let job = Job::new();
    job.run_ok(
        2,
        &["1000", "1"],
        &[("SCR_FLUSH", "0"), ("TEST_API_NO_FINALIZE", "1")],
    );
    // what a flush of ckpt.1 killed mid-copy leaves: the flush file's FLUSHING, and a
    // temporary beside a file of the user's own in the dataset's directory
    let flush_path = scr::layout::flush_file(&job.prefix());
    let mut flush = scr::flush::FlushFile::read(&flush_path).unwrap();
    flush.set_location(1, scr::flush::Location::Flushing);
    flush.write(&flush_path).unwrap();
    let dir = job.prefix().join("ckpt.1");
    std::fs::create_dir_all(&dir).unwrap();
    let temporary = dir.join(".rank_0.ckpt.tmp.4242.1");
    let kept = dir.join("notes.txt");
    std::fs::write(&temporary, b"half a copy").unwrap();
    std::fs::write(&kept, b"the user's").unwrap();
    let t = job.run_ok(2, &["1000", "0"], &[("SCR_FLUSH", "0")]);
    assert!(t.contains("restarted from ckpt.1"), "{t}");
    assert!(!temporary.exists(), "{t}");
    assert_eq!(std::fs::read(&kept).unwrap(), b"the user's");
}
