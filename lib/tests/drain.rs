//! The post-run drain on emulated nodes: a checkpoint left only in cache (SCR_FLUSH=0, the
//! job killed after it) is scavenged to the prefix by `scr postrun`, lost nodes are rebuilt
//! from XOR or copied from their partners at index time, a dataset that cannot be completed
//! is indexed as incomplete and the older one stays current, CRC and path checks refuse bad
//! files — and a new job restarts from what was drained, verifying every byte.

mod common;

use common::*;
use scr::HashView;
use std::process::Command;

const HOSTS: &str = "n1,n2,n3,n4";

/// `scr postrun` for the job's prefix, with `down` nodes excluded.
fn postrun(job: &Job, down: Option<&str>) -> (Option<i32>, String) {
    postrun_with(job, down, scr_for(job))
}

/// `scr postrun` on a PATH where pdsh is missing: the drain starts its own shells.
fn postrun_without_pdsh(job: &Job) -> (Option<i32>, String) {
    let bin = job.dir.path().join("bin-without-pdsh");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let mut cmd = scr_for(job);
    cmd.env("PATH", &bin);
    postrun_with(job, None, cmd)
}

fn postrun_with(job: &Job, down: Option<&str>, mut cmd: Command) -> (Option<i32>, String) {
    cmd.args(["postrun", "-p"]).arg(job.prefix());
    if let Some(d) = down {
        cmd.env("SCR_EXCLUDE_NODES", d);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), text(&out))
}

/// A job that writes `ckpts` checkpoints and dies without SCR_Finalize.
fn killed_job(scheme: &str, ckpts: &str, extra: &[(&str, &str)]) -> Job {
    let job = Job::new();
    let mut env = vec![
        ("SCR_COPY_TYPE", scheme),
        ("TEST_API_VARY", "1"),
        ("TEST_API_NO_FINALIZE", "1"),
        ("SCR_FLUSH", "0"),
    ];
    env.extend_from_slice(extra);
    run_ok_on(&job, HOSTS, 8, &["4000", ckpts], &env);
    job
}

/// A new job (fresh caches) restarts from the prefix and verifies the data.
fn restarts_from_prefix(job: &Job, name: &str, timestep: u32) {
    for d in ["cache", "cntl"] {
        std::fs::remove_dir_all(job.dir.path().join(d)).unwrap();
        std::fs::create_dir(job.dir.path().join(d)).unwrap();
    }
    let out = run_ok_on(job, HOSTS, 8, &["4000", "0"], &[("TEST_API_VARY", "1")]);
    assert!(
        out.contains(&format!(
            "restarted from {name} (timestep {timestep}), data verified"
        )),
        "{out}"
    );
    assert_eq!(job.index_entry(name).fetched.len(), 1, "from the prefix");
}

/// A node of the allocation whose control directory holds no filemap (no rank of the job
/// recorded a file there) has nothing to copy: it is no failure of the drain.
#[test]
fn a_node_that_recorded_nothing_is_no_failed_node() {
    use std::os::unix::fs::DirBuilderExt;
    let job = killed_job("XOR", "1", &[]);
    let [_, cntl] = node_dirs(&job, "n5");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&cntl)
        .unwrap();
    let mut cmd = scr_for(&job);
    cmd.env("SCR_NODELIST", "n[1-5]");
    let (code, out) = postrun_with(&job, None, cmd);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) drained and current"),
        "{out}"
    );
}

/// Without a resource manager, and without SCR_NODELIST, the drain knows only this
/// machine: finding nothing of the dataset there, it says how to name the job's nodes, and
/// named, they are drained.
#[test]
fn a_drain_that_knows_no_nodes_but_this_machine_says_to_name_them() {
    let job = killed_job("XOR", "1", &[]);
    let mut cmd = scr_for(&job);
    cmd.env_remove("SCR_NODELIST");
    let (code, out) = postrun_with(&job, None, cmd);
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out.contains("set SCR_NODELIST to the nodes the job ran on"),
        "{out}"
    );
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("dataset 1 (ckpt.1) drained"), "{out}");
}

#[test]
fn postrun_drains_a_checkpoint_left_only_in_cache() {
    let job = killed_job("XOR", "2", &[]);
    assert!(!job.prefix().join("ckpt.2").exists());
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 2 (ckpt.2) drained and current"),
        "{out}"
    );
    // pdsh's exec module ran `scr copy` for each emulated node, and each reported
    for node in ["n1", "n2", "n3", "n4"] {
        assert!(
            out.contains(&format!("scr_postrun: {node}: copied ")),
            "{out}"
        );
    }
    assert!(out.contains(" from 4 of 4 node(s), "), "{out}");
    let e = job.index_entry("ckpt.2");
    assert!(e.complete && e.is_current, "{e:?}");
    let summary =
        scr::summary::Summary::read(&scr::layout::summary_file(&job.prefix(), 2)).unwrap();
    assert!(summary.is_complete());
    assert_eq!(
        std::fs::read_link(job.prefix().join("scr.current")).unwrap(),
        std::path::Path::new("ckpt.2")
    );
    // running postrun again finds nothing to do, in SCR v3.1's words too (LLNL's
    // testing/TEST looks for "dataset … already … flushed")
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("nothing to drain"), "{out}");
    assert!(
        out.contains("scr_postrun: Checkpoint dataset 2 (ckpt.2) has already been flushed"),
        "{out}"
    );
    restarts_from_prefix(&job, "ckpt.2", 2);
}

#[test]
fn a_lost_node_is_rebuilt_from_xor_at_index_time() {
    for scheme in ["XOR", "RS"] {
        let job = killed_job(scheme, "1", &[]);
        lose_node(&job, "n3");
        let (code, out) = postrun(&job, Some("n3"));
        assert_eq!(code, Some(0), "{scheme}: {out}");
        assert!(out.contains("(n3 down)"), "{out}");
        // n3 ran ranks 2 and 6 (round robin over 4 hosts)
        assert!(
            out.contains("ranks [2, 6] rebuilt from parity"),
            "{scheme}: {out}"
        );
        restarts_from_prefix(&job, "ckpt.1", 1);
    }
}

#[test]
fn a_dead_nodes_files_are_copied_from_its_partner() {
    let job = killed_job("PARTNER", "1", &[]);
    lose_node(&job, "n2");
    let (code, out) = postrun(&job, Some("n2"));
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("rebuilt"), "copies, not parity: {out}");
    restarts_from_prefix(&job, "ckpt.1", 1);
}

/// A node that lost its cache but is up again (rebooted, its cache and control directory
/// empty) is not named down: its own copy finds nothing, and the nodes holding its
/// partner copies copy those, as for a node that is down.
#[test]
fn a_node_up_with_an_empty_cache_gets_its_files_from_its_partner() {
    let job = killed_job("PARTNER", "1", &[]);
    lose_node(&job, "n2");
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("missing"), "{out}");
    restarts_from_prefix(&job, "ckpt.1", 1);
}

#[test]
fn two_lost_members_of_one_xor_set_leave_the_older_checkpoint_current() {
    // ckpt.2 is flushed by SCR_FLUSH=2; ckpt.3 exists only in cache
    let job = Job::new();
    run_ok_on(
        &job,
        HOSTS,
        8,
        &["4000", "3"],
        &[
            ("SCR_COPY_TYPE", "XOR"),
            ("TEST_API_VARY", "1"),
            ("TEST_API_NO_FINALIZE", "1"),
            ("SCR_FLUSH", "2"),
        ],
    );
    lose_node(&job, "n1");
    lose_node(&job, "n2");
    let (code, out) = postrun(&job, Some("n[1-2]"));
    assert_eq!(code, Some(1), "nothing could be completed: {out}");
    assert!(
        out.contains("dataset 3 (ckpt.3) cannot be completed"),
        "{out}"
    );
    let e3 = job.index_entry("ckpt.3");
    assert!(
        !e3.complete && !e3.is_current,
        "indexed as incomplete: {e3:?}"
    );
    let summary =
        scr::summary::Summary::read(&scr::layout::summary_file(&job.prefix(), 3)).unwrap();
    assert!(!summary.is_complete());
    assert!(job.index_entry("ckpt.2").is_current);
    restarts_from_prefix(&job, "ckpt.2", 2);
}

#[test]
fn an_asynchronous_flush_cut_short_is_completed_by_the_drain() {
    // 2 x 4000 bytes per node at 2000 bytes/s: the job is gone long before the flush is
    let job = killed_job(
        "XOR",
        "1",
        &[
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_FLUSH_ASYNC_BW", "2000"),
        ],
    );
    let flush = scr::flush::FlushFile::read(&scr::layout::flush_file(&job.prefix())).unwrap();
    assert!(
        flush.needs_flush(1),
        "the flush did not finish: {:?}",
        flush.locations(1)
    );
    assert!(
        flush.locations(1).contains(&"FLUSHING"),
        "{:?}",
        flush.locations(1)
    );
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) drained and current"),
        "{out}"
    );
    let e = job.index_entry("ckpt.1");
    assert!(e.complete && e.is_current, "{e:?}");
    restarts_from_prefix(&job, "ckpt.1", 1);
}

#[test]
fn without_pdsh_the_drain_starts_a_shell_per_node() {
    let job = killed_job("XOR", "1", &[]);
    let (code, out) = postrun_without_pdsh(&job);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) drained and current"),
        "{out}"
    );
    assert!(out.contains("scr_postrun: n3: copied "), "{out}");
    restarts_from_prefix(&job, "ckpt.1", 1);
}

#[test]
fn a_corrupted_cached_file_is_caught_by_its_crc_and_rebuilt() {
    let job = killed_job("XOR", "1", &[("SCR_CRC_ON_COPY", "1")]);
    // same size, different bytes: only the CRC can tell
    let victim = job
        .cached("rank_1.0.ckpt")
        .into_iter()
        .next()
        .expect("rank 1's file in cache");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0x55;
    std::fs::write(&victim, bytes).unwrap();
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("CRC"), "the mismatch is reported: {out}");
    assert!(out.contains("ranks [1] rebuilt from parity"), "{out}");
    restarts_from_prefix(&job, "ckpt.1", 1);
}

#[test]
fn a_filemap_path_escaping_the_prefix_is_refused() {
    let job = killed_job("SINGLE", "1", &[]);
    // a tampered filemap on n2: rank 1's file claims to belong two levels above the prefix
    let fm_path = node_dirs(&job, "n2")[1].join("filemap_0.scrinfo");
    let mut map = scr::filemap::Filemap::read(&fm_path).unwrap();
    let file = map.files(1, 1)[0].to_string();
    let meta = map.meta(1, 1, &file).unwrap();
    let evil = scr::meta::Meta::from_hash({
        let mut h = meta.hash().clone();
        h.set_value("ORIG", "../../escaped.ckpt");
        h
    })
    .unwrap();
    map.set_meta(1, 1, &file, &evil);
    map.write(&fm_path).unwrap();
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("n2: FAILED") && out.contains("leaves the dataset directory"),
        "{out}"
    );
    assert!(!job.dir.path().join("escaped.ckpt").exists());
    assert!(!job.prefix().join("../escaped.ckpt").exists());
    assert!(!job.index_entry("ckpt.1").complete);
}

#[test]
fn the_drain_never_makes_an_older_checkpoint_current() {
    // Two checkpoints fit in cache and SCR_Finalize flushes the last: ckpt.3 reaches the
    // prefix while ckpt.2, older, stays only in cache
    let job = Job::new();
    run_ok_on(
        &job,
        HOSTS,
        4,
        &["100000", "3"],
        &[
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_CACHE_SIZE", "2"),
            ("SCR_FLUSH", "10"),
        ],
    );
    assert!(job.index_entry("ckpt.3").is_current);
    let flush = scr::flush::FlushFile::read(&scr::layout::flush_file(&job.prefix())).unwrap();
    assert!(flush.needs_flush(2), "ckpt.2 is only in cache");
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 2 (ckpt.2) is older than dataset 3 (ckpt.3)")
            && !out.contains("draining"),
        "{out}"
    );
    // ckpt.2 is not on the prefix: the drain says what it left and why, not that every
    // dataset is there
    assert!(
        out.contains(
            "nothing newer than ckpt.3 to drain: the caches' older checkpoints (ckpt.2) stay \
             there"
        ) && !out.contains("every dataset is on the prefix"),
        "{out}"
    );
    assert!(!job.prefix().join("ckpt.2").exists(), "not copied");
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.3"));
    assert_eq!(
        std::fs::read_link(job.prefix().join("scr.current")).unwrap(),
        std::path::Path::new("ckpt.3")
    );
    // the next run restarts from the newest checkpoint, not the drained one
    delete_caches(&job);
    let out = run_ok_on(&job, HOSTS, 4, &["100000", "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

#[test]
fn publishing_an_older_checkpoint_leaves_current_on_the_newer_one() {
    // the rule itself, below every caller: a drain of ckpt.2 after ckpt.3 was flushed
    let job = killed_job(
        "SINGLE",
        "3",
        &[("SCR_FLUSH", "3"), ("SCR_CACHE_SIZE", "3")],
    );
    assert!(job.index_entry("ckpt.3").is_current);
    // the older one, forced through the drain's copy and index steps
    let scr = scr_command();
    let cntl = format!(
        "{}/{}/scr.{JOB_ID}",
        job.dir.path().join("cntl").display(),
        user()
    );
    let out = Command::new(&scr)
        .args([
            "scavenge", "-v", "-j", "n[1-4]", "-i", "2", "-f", &cntl, "-t",
        ])
        .arg(job.prefix())
        .env("SCR_NODELIST", "n[1-4]")
        .env_remove("SLURM_JOBID")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    // each node's outcome once, none an empty "copied:" line
    assert!(t.lines().all(|l| !l.trim_end().ends_with(':')), "{t}");
    let out = Command::new(&scr)
        .args(["index", "-p"])
        .arg(job.prefix())
        .args(["--build", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let e2 = job.index_entry("ckpt.2");
    assert!(e2.complete && !e2.is_current, "{e2:?}");
    assert!(job.index_entry("ckpt.3").is_current);
    assert_eq!(
        std::fs::read_link(job.prefix().join("scr.current")).unwrap(),
        std::path::Path::new("ckpt.3")
    );
}

#[test]
fn a_cached_checkpoint_is_only_restarted_by_a_job_with_its_prefix() {
    // two programs in different directories run with the same job id (SCR_JOB_ID given,
    // or SCR's default one outside a resource manager): they share the control directory
    let job = Job::new();
    let other = job.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other_prefix = [("SCR_PREFIX", other.to_str().unwrap())];
    let xor = [("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")];
    run_ok_on(&job, HOSTS, 4, &["4000", "2"], &xor);
    let cached = job.cached("rank_0.ckpt");
    assert!(!cached.is_empty());

    // the second program must not load the first's checkpoint (it did: "restarted from")
    // (the second program flushes at SCR_Finalize, as by default)
    let env = [&[("SCR_COPY_TYPE", "XOR")][..], &other_prefix[..]].concat();
    let run_other = || {
        job.command(Some(HOSTS), 4, &["4000", "2"], &env)
            .current_dir(&other)
            .output()
            .unwrap()
    };
    let run = run_other();
    let t = text(&run);
    assert!(!run.status.success(), "{t}");
    assert!(!t.contains("restarted from"), "{t}");
    assert!(
        t.contains("holds checkpoints of another program, whose prefix is")
            && t.contains(&job.prefix().display().to_string())
            && t.contains("SCR_JOB_ID"),
        "{t}"
    );
    assert_eq!(
        job.cached("rank_0.ckpt"),
        cached,
        "the first program's cache is intact"
    );

    // once the first program's checkpoint is drained to its prefix, its cache is only a
    // copy: the second program discards it, says so, and starts from the beginning
    let (code, out) = postrun(&job, None);
    assert_eq!(code, Some(0), "{out}");
    let run = run_other();
    let t = text(&run);
    assert!(run.status.success(), "{t}");
    assert!(
        t.contains("held datasets of another program with this job id")
            && t.contains("no checkpoint, starting from the beginning"),
        "{t}"
    );
    // the second program flushed its own
    for r in 0..4 {
        check_file(&other.join(format!("ckpt.2/rank_{r}.ckpt")), r, 2, 4000);
    }

    // the cache now belongs to the second program: a drain asked for the first prefix
    // takes it to the second's (where it is already), never into the first, and `scr copy`
    // to the first prefix refuses it
    let (_, out) = postrun(&job, None);
    assert!(
        !out.contains("draining dataset") && out.contains(&other.display().to_string()),
        "{out}"
    );
    let copied = Command::new(scr_command())
        .args(["copy", "--cntldir"])
        .arg(node_dirs(&job, "n1")[1].clone())
        .args(["--id", "2", "--dstdir"])
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(
        text(&copied).contains("this cache belongs to the job whose prefix is"),
        "{}",
        text(&copied)
    );

    // and the first program, run again, restarts from its own prefix, not from the cache
    let t = run_ok_on(&job, HOSTS, 4, &["4000", "1"], &xor);
    assert!(
        t.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{t}"
    );
    assert_eq!(job.index_entry("ckpt.2").fetched.len(), 1, "fetched: {t}");
}

#[test]
fn a_rebuild_from_damaged_parity_never_becomes_current() {
    // SCR_CRC_ON_COPY=0 (the default): the CRCs come from the encode all the same
    for scheme in ["XOR", "RS"] {
        let job = killed_job(scheme, "1", &[("SCR_CRC_ON_COPY", "0")]);
        // a bit flips in a survivor's parity, past its header; then nodes are lost
        let parity = walk(&node_dirs(&job, "n1")[0])
            .into_iter()
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("xor.") || n.starts_with("rs.")
            })
            .expect("n1's parity file");
        // (a byte of the first chunk of parity: the start of the members' files)
        let (_, parity_start) = scr::xor::XorHeader::read(&parity).unwrap();
        let mut bytes = std::fs::read(&parity).unwrap();
        bytes[parity_start as usize + 10] ^= 0x10;
        std::fs::write(&parity, bytes).unwrap();
        // as many nodes lost as the code rebuilds: every surviving element is used
        let lost: &[&str] = if scheme == "XOR" {
            &["n3"]
        } else {
            &["n3", "n4"]
        };
        for n in lost {
            lose_node(&job, n);
        }
        let (code, out) = postrun(&job, Some(&lost.join(",")));
        assert_eq!(code, Some(1), "{scheme}: {out}");
        assert!(
            out.contains("CRC32") && out.contains("damaged"),
            "{scheme}: {out}"
        );
        // indexed as incomplete, or not at all: never complete or current
        // (an index that exists must read: a torn one is no pass)
        let index = scr::layout::index_file(&job.prefix());
        let e = index
            .exists()
            .then(|| scr::index::IndexFile::read(&index).unwrap())
            .and_then(|i| i.entries().into_iter().find(|e| e.name == "ckpt.1"));
        assert!(
            e.as_ref().is_none_or(|e| !e.complete && !e.is_current),
            "{scheme}: {e:?}"
        );
    }
}

#[test]
fn every_file_of_a_parity_set_has_its_crc_recorded_without_crc_on_copy() {
    let job = killed_job("XOR", "1", &[]);
    // the CRC each rank's filemap records is the CRC of the file's bytes (computed here,
    // from the cache, by this test)
    let mut checked = 0;
    for fm in ["n1", "n2", "n3", "n4"].iter().flat_map(|n| {
        ["filemap_0.scrinfo", "filemap_1.scrinfo"].map(|f| node_dirs(&job, n)[1].join(f))
    }) {
        let map = scr::filemap::Filemap::read(&fm).unwrap();
        for rank in map.ranks() {
            for f in map.user_files(1, rank) {
                let want = crc32fast::hash(&std::fs::read(&f).unwrap());
                let meta = map.meta(1, rank, &f).unwrap();
                assert_eq!(meta.crc32(), Some(want), "{f}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 7, "rank r writes r % 3 files");
}

#[test]
fn a_restart_never_rebuilds_from_damaged_parity_in_silence() {
    let job = killed_job("XOR", "1", &[("SCR_CRC_ON_COPY", "0")]);
    let parity = walk(&node_dirs(&job, "n1")[0])
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("xor."))
        .expect("n1's parity file");
    let (_, parity_start) = scr::xor::XorHeader::read(&parity).unwrap();
    let mut bytes = std::fs::read(&parity).unwrap();
    bytes[parity_start as usize + 10] ^= 0x10;
    std::fs::write(&parity, bytes).unwrap();
    lose_node(&job, "n3");
    // the rebuilt files fail their CRCs: no restart from ckpt.1 (which the application would
    // find wrong), a clean start instead
    let out = run_ok_on(
        &job,
        HOSTS,
        8,
        &["4000", "0"],
        &[("TEST_API_VARY", "1"), ("SCR_DEBUG", "1")],
    );
    assert!(out.contains("SCR: Failed to rebuild dataset 1"), "{out}");
    // the rebuilt member checks what it writes, and says which file came out wrong
    assert!(
        out.contains("does not match the CRC32 recorded when it was written"),
        "{out}"
    );
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
}

#[test]
fn a_cache_whose_prefix_cannot_be_read_is_kept_not_discarded() {
    // the first program's prefix is moved away (or its file system is not mounted): its
    // cache may hold the only copy of its checkpoints, so a second program with the same
    // job id refuses it rather than throwing it away
    let job = Job::new();
    let other = job.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    run_ok_on(
        &job,
        HOSTS,
        4,
        &["4000", "2"],
        &[("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")],
    );
    let cached = job.cached("rank_0.ckpt");
    assert!(!cached.is_empty());
    let moved = job.dir.path().join("moved");
    std::fs::rename(job.prefix(), &moved).unwrap();
    // the second program, in its own directory with its own prefix and the same job id
    let run_other = || {
        job.command(
            Some(HOSTS),
            4,
            &["4000", "2"],
            &[("SCR_PREFIX", other.to_str().unwrap())],
        )
        .current_dir(&other)
        .output()
        .unwrap()
    };
    let run = run_other();
    let t = text(&run);
    assert!(!run.status.success(), "{t}");
    assert!(
        t.contains("holds checkpoints of another program") && t.contains("scr list-dir"),
        "{t}"
    );
    assert_eq!(job.cached("rank_0.ckpt"), cached, "the cache is intact");
    // nor when someone else puts a prefix there whose records say everything was drained
    // (another job's, which flushed its checkpoints, given to another user)
    let elsewhere = Job::new();
    elsewhere.run_ok(2, &["4000", "2"], &[("SCR_FLUSH", "1")]);
    std::fs::create_dir(job.prefix()).unwrap();
    std::fs::create_dir(job.prefix().join(".scr")).unwrap();
    for f in ["flush.scr", "index.scr"] {
        std::fs::copy(
            elsewhere.prefix().join(".scr").join(f),
            job.prefix().join(".scr").join(f),
        )
        .unwrap();
    }
    for p in [job.prefix(), job.prefix().join(".scr")] {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    }
    let run = run_other();
    let t = text(&run);
    assert!(!run.status.success(), "{t}");
    assert!(t.contains("holds checkpoints of another program"), "{t}");
    assert_eq!(job.cached("rank_0.ckpt"), cached, "the cache is intact");
    std::fs::remove_dir_all(job.prefix()).unwrap();
    // back in place, the first program restarts from its cache
    std::fs::rename(&moved, job.prefix()).unwrap();
    let t = run_ok_on(&job, HOSTS, 4, &["4000", "1"], &[("SCR_COPY_TYPE", "XOR")]);
    assert!(t.contains("restarted from ckpt.2"), "{t}");
}
