//! Real `mpiexec` jobs of the C example (examples/c/test_api.c) linked against our libscr:
//! checkpoints cached with SINGLE, flushed to the prefix, restarted from cache.

mod common;

use common::*;
use scr::HashView;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn checkpoints_flush_and_restart_from_cache() {
    for ranks in [1u32, 4] {
        let job = Job::new();
        let size = 100_000;
        let out = job.run_ok(ranks, &[&size.to_string(), "3"], &[("SCR_FLUSH", "2")]);
        assert!(
            out.contains("no checkpoint, starting from the beginning"),
            "{out}"
        );

        // ckpt.2 flushed by SCR_FLUSH=2, ckpt.3 by SCR_Finalize; ckpt.1 never reached the prefix
        let prefix = job.prefix();
        for t in [2i64, 3] {
            for r in 0..ranks as usize {
                check_file(&prefix.join(format!("ckpt.{t}/rank_{r}.ckpt")), r, t, size);
            }
        }
        assert!(!prefix.join("ckpt.1").exists());
        let index = scr::index::IndexFile::read(&scr::layout::index_file(&prefix)).unwrap();
        assert_eq!(index.current(), Some("ckpt.3"));
        let names: Vec<_> = index
            .entries()
            .into_iter()
            .map(|e| (e.id, e.name, e.complete))
            .collect();
        assert_eq!(
            names,
            [
                (3, "ckpt.3".to_string(), true),
                (2, "ckpt.2".to_string(), true)
            ]
        );
        let summary = scr::summary::Summary::read(&scr::layout::summary_file(&prefix, 3)).unwrap();
        assert!(summary.is_complete());
        let map =
            scr::rank2file::read_tree(&prefix, &scr::layout::rank2file_root(&prefix, 3)).unwrap();
        assert_eq!(map.len(), ranks as usize);
        assert_eq!(map[&0][0].name, "ckpt.3/rank_0.ckpt");
        assert_eq!(map[&0][0].size, 8 + size as u64);
        assert!(map[&0][0].crc.is_some(), "CRC on flush is on by default");
        assert_eq!(
            std::fs::read_link(prefix.join("scr.current")).unwrap(),
            Path::new("ckpt.3")
        );
        let halt = scr::halt::HaltFile::read(&scr::layout::halt_file(&prefix)).unwrap();
        assert_eq!(halt.exit_reason(), Some("SCR_FINALIZE_CALLED"));

        // the cache holds ckpt.3 only (SCR_CACHE_SIZE=1); the next run restarts from it
        let out = job.run_ok(ranks, &[&size.to_string(), "1"], &[]);
        assert!(
            out.contains("restarted from ckpt.3 (timestep 3), data verified"),
            "{out}"
        );
        for r in 0..ranks as usize {
            check_file(&prefix.join(format!("ckpt.4/rank_{r}.ckpt")), r, 4, size);
        }
        let index = scr::index::IndexFile::read(&scr::layout::index_file(&prefix)).unwrap();
        assert_eq!(index.current(), Some("ckpt.4"));
    }
}

#[test]
fn scr_enable_0_passes_straight_through() {
    let job = Job::new();
    let out = job.run_ok(2, &["1000", "2"], &[("SCR_ENABLE", "0")]);
    assert!(out.contains("SCR disabled"), "{out}");
    assert!(
        !job.prefix().join(".scr").exists(),
        "nothing written when disabled"
    );
}

#[test]
fn invalid_parameter_values_are_rejected_clearly() {
    let job = Job::new();
    let run = job.run(2, &["1000", "1"], &[("SCR_FLUSH", "often")]);
    let out = text(&run);
    assert!(
        out.contains("SCR_FLUSH") && out.contains("non-negative integer"),
        "{out}"
    );
    // as SCR does, a failed SCR_Init stops the job: it must not run on without checkpoints
    assert!(!run.status.success(), "{out}");
    assert!(out.contains("aborting the job"), "{out}");
    assert!(
        !out.contains("SCR disabled") && !out.contains("test_api: done"),
        "{out}"
    );
}

#[test]
fn a_failed_init_or_a_call_before_init_stops_the_job() {
    // an unusable prefix (a file where the directory must be)
    let job = Job::new();
    let not_a_dir = job.dir.path().join("file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    let run = job.run(
        2,
        &["1000", "1"],
        &[("SCR_PREFIX", not_a_dir.join("sub").to_str().unwrap())],
    );
    let out = text(&run);
    assert!(!run.status.success(), "{out}");
    assert!(
        out.contains("SCR: ERROR: SCR_Init:") && out.contains("aborting the job"),
        "{out}"
    );
    assert!(!out.contains("test_api: done"), "{out}");

    // a program that forgets SCR_Init on one path: SCR's message, and the job stops
    let job = Job::with_c_program("before_init.c");
    let run = job.run(2, &["need"], &[]);
    let out = text(&run);
    assert!(!run.status.success(), "{out}");
    assert!(
        out.contains("Must call SCR_Init() before SCR_Need_checkpoint()"),
        "{out}"
    );
    assert!(!out.contains("before_init: went on"), "{out}");
    // SCR_Route_file before SCR_Init gives the name back (as SCR's); SCR_Should_exit with
    // SCR disabled fails, silently, and still sets its flag
    let out = job.run_ok(2, &["route"], &[]);
    assert!(
        out.contains("before_init: routed plain.dat to plain.dat"),
        "{out}"
    );
    let out = job.run_ok(2, &["disabled"], &[("SCR_ENABLE", "0")]);
    assert!(out.contains("before_init: disabled, flag 0"), "{out}");
    assert!(!out.contains("SCR:"), "SCR_ENABLE=0 is silent: {out}");
}

#[test]
fn eight_ranks() {
    let job = Job::new();
    job.run_ok(8, &["3000", "2"], &[("SCR_FLUSH", "1")]);
    for r in 0..8 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            3000,
        );
    }
    let run = job.run(8, &["3000", "1"], &[]);
    assert!(
        text(&run).contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{}",
        text(&run)
    );
}

#[test]
fn fortran_program_checkpoints_and_restarts() {
    let job = Job::new();
    let app = build_with(
        Mpi::current().fortran(),
        job.dir.path(),
        &workspace().join("examples/fortran/test_ckpt.F90"),
        "test_ckpt",
    );
    let job = Job { app, ..job };
    let out = job.run_ok(2, &[], &[("SCR_FLUSH", "1")]);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    // the Fortran file: a 4-byte timestep, then 20000 4-byte integers r + i + t
    let bytes = std::fs::read(job.prefix().join("ckpt.2/rank_1.ckpt")).unwrap();
    assert_eq!(bytes.len(), 4 + 4 * 20000);
    assert_eq!(
        i32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
        1 + 1 + 2
    );
    let out = job.run_ok(2, &[], &[]);
    assert!(
        out.contains("restarted from ckpt.2, data verified"),
        "{out}"
    );
}

#[test]
fn static_library_and_cplusplus_header() {
    let job = Job::new();
    let archive = library("libscr_runtime.a");
    let app = job.dir.path().join("test_api_static");
    let out = Command::new(Mpi::current().cc())
        .arg(workspace().join("examples/c/test_api.c"))
        .arg("-I")
        .arg(workspace().join("lib/include"))
        .arg(&archive)
        .args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-o",
        ])
        .arg(&app)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "static link: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = Job { app, ..job };
    let out = job.run_ok(2, &["1000", "1"], &[]);
    assert!(out.contains("test_api: done"), "{out}");

    let cpp = job.dir.path().join("t.cpp");
    std::fs::write(&cpp, "#include <mpi.h>\n#include \"scr.h\"\nint main(){ int f; return SCR_Need_checkpoint(&f) == SCR_SUCCESS && SCR_FLAG_OUTPUT == 2 ? 0 : 1; }\n").unwrap();
    let cxx = match Mpi::current() {
        Mpi::Mpich => "mpicxx",
        Mpi::OpenMpi => "mpicxx.openmpi",
    };
    let out = Command::new(cxx)
        .arg(&cpp)
        .arg("-I")
        .arg(workspace().join("lib/include"))
        .arg("-c")
        .arg("-o")
        .arg(job.dir.path().join("t.o"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "C++: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn emulated_nodes_get_their_own_directories() {
    let job = Job::new();
    let mut cmd = Mpi::current().launch(Some("n1,n2,n3,n4"), 4, 60, &job.app, &["4000", "2"]);
    cmd.current_dir(job.prefix())
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_PREFIX", job.prefix())
        .env("SCR_JOB_ID", "77");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let user = scr::layout::user_name();
    for n in ["n1", "n2", "n3", "n4"] {
        let cntl = job.dir.path().join(format!("cntl/{user}/scr.77/node.{n}"));
        assert!(
            cntl.join("filemap.scrinfo").exists(),
            "{} missing",
            cntl.display()
        );
        let cache = job.dir.path().join(format!("cache/{user}/scr.77/node.{n}"));
        assert!(cache.is_dir(), "{} missing", cache.display());
    }
    let nodes = scr::nodes::NodesFile::read(&scr::layout::nodes_file(&job.prefix())).unwrap();
    assert_eq!(nodes.nodes(), Some(4));
    // losing a node's cache: XOR, the default scheme, rebuilds it in cache (no fetch)
    std::fs::remove_dir_all(job.dir.path().join(format!("cache/{user}/scr.77/node.n3"))).unwrap();
    std::fs::remove_dir_all(job.dir.path().join(format!("cntl/{user}/scr.77/node.n3"))).unwrap();
    let out = cmd.output().unwrap();
    assert!(
        text(&out).contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{}",
        text(&out)
    );
    let index = job.index();
    assert_eq!(
        index
            .entries()
            .into_iter()
            .find(|e| e.name == "ckpt.2")
            .unwrap()
            .fetched
            .len(),
        0
    );
}

#[test]
fn rust_program_checkpoints_and_restarts() {
    let job = Job::new();
    let app = rust_example("rust_ckpt");
    let job = Job { app, ..job };
    let out = job.run_ok(3, &["50000", "2"], &[("SCR_FLUSH", "2")]);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    // a job of `ranks` writing `ckpts` more restarts from `name`, written by `writers`
    // (it re-partitions a checkpoint of another size, and says so)
    let restarts = |ranks: u32, ckpts: &str, name: &str, writers: u32| {
        let out = job.run_ok(ranks, &["50000", ckpts], &[("SCR_RESHAPE", "1")]);
        let said = format!("restarted from {name} written by {writers} ranks, data verified");
        assert!(out.contains(&said), "{out}");
    };
    restarts(3, "1", "ckpt.2", 3);
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.3"));
    // fewer ranks: each reads the files the restart lists for the writers it stands for
    restarts(2, "1", "ckpt.3", 3);
    restarts(4, "0", "ckpt.4", 2);
}

/// SCR_FLUSH_WIDTH=1 and SCR_FETCH_WIDTH=1: one rank writes to (or reads from) the prefix at
/// a time, in rank order, as the file system's own times of the copies show; a store's COUNT
/// bounds the datasets it keeps.
#[test]
fn flush_and_fetch_widths_of_one_copy_a_rank_at_a_time_and_store_count_bounds_the_cache() {
    let job = Job::new();
    // four ranks flushing one at a time; the cache store keeps two datasets
    std::fs::write(
        job.dir.path().join("scr.conf"),
        format!(
            "SCR_CNTL_BASE={}\nSTORE={} COUNT=2\n",
            job.dir.path().join("cntl").display(),
            job.dir.path().join("cache").display()
        ),
    )
    .unwrap();
    // files large enough that ranks copying together would overlap by many ticks of the
    // file system's clock (ext4's times move in steps of a few ms)
    const SIZE: usize = 8 << 20;
    let size = SIZE.to_string();
    let out = job.run_ok(
        4,
        &[&size, "3"],
        &[
            ("SCR_FLUSH_WIDTH", "1"),
            ("SCR_FLUSH", "1"),
            ("SCR_COPY_TYPE", "SINGLE"),
        ],
    );
    assert!(!out.contains("WARNING"), "{out}");
    for t in 1..=3i64 {
        let files: Vec<PathBuf> = (0..4)
            .map(|r| job.prefix().join(format!("ckpt.{t}/rank_{r}.ckpt")))
            .collect();
        for (r, f) in files.iter().enumerate() {
            check_file(f, r, t, SIZE);
        }
        assert_written_one_at_a_time(&files);
    }
    let cached = job.cached("rank_0.ckpt");
    assert_eq!(
        cached.len(),
        2,
        "COUNT=2 keeps two datasets in cache: {cached:?}"
    );

    // every cache lost: ckpt.3 is fetched one rank at a time
    delete_caches(&job);
    let out = job.run_ok(4, &[&size, "0"], &[("SCR_FETCH_WIDTH", "1")]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
    let fetched: Vec<PathBuf> = (0..4)
        .map(|r| {
            let copies = job.cached(&format!("ckpt.3/rank_{r}.ckpt"));
            assert_eq!(copies.len(), 1, "{copies:?}");
            copies[0].clone()
        })
        .collect();
    assert_written_one_at_a_time(&fetched);
}

/// A job of another size (4 ranks, then 2) finds the larger job's checkpoint only in
/// cache: it drains it to the prefix first (every file checked against its writer), restarts
/// from it re-partitioned, and the 4-rank cache goes (a later 4-rank job must not restart
/// from it in preference to what the 2 ranks write); no cached file is left unnamed.
#[test]
fn a_job_of_another_size_drains_the_cache_it_finds_before_restarting() {
    let job = Job::new();
    job.run_ok(4, &["2000", "1"], &[("SCR_FLUSH", "0")]);
    assert!(!job.prefix().join("ckpt.1").exists());
    let out = job.run_ok(2, &["2000", "0"], &[("SCR_RESHAPE", "1")]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.1/rank_{r}.ckpt")),
            r,
            1,
            2000,
        );
    }
    let cntl = walk(&job.dir.path().join("cntl"));
    let named: Vec<String> = cntl
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("filemap_"))
        })
        .filter_map(|p| scr::filemap::Filemap::read(p).ok())
        .flat_map(|m| {
            m.datasets()
                .into_iter()
                .flat_map(move |d| {
                    m.ranks_by_dataset(d)
                        .into_iter()
                        .flat_map(|r| {
                            m.files(d, r)
                                .into_iter()
                                .map(str::to_string)
                                .collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let cached: Vec<PathBuf> = walk(&job.dir.path().join("cache"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .filter(|p| !p.to_string_lossy().contains(".trash"))
        .collect();
    for f in &cached {
        assert!(
            named.iter().any(|n| Path::new(n) == f),
            "{} is in cache but no filemap names it",
            f.display()
        );
    }
}

#[test]
fn need_checkpoint_follows_interval_and_overhead() {
    let job = Job::new();
    job.run_ok(
        2,
        &["1000", "4"],
        &[("SCR_CHECKPOINT_INTERVAL", "2"), ("SCR_FLUSH", "1")],
    );
    let flushed = |t: u32| job.prefix().join(format!("ckpt.{t}")).exists();
    assert_eq!(
        [1, 2, 3, 4].map(flushed),
        [false, true, false, true],
        "every second call checkpoints"
    );

    let job = Job::new();
    // a tiny overhead budget: after the first checkpoint, the next ones would cost too much
    job.run_ok(
        2,
        &["1000", "3"],
        &[("SCR_CHECKPOINT_OVERHEAD", "0.001"), ("SCR_FLUSH", "1")],
    );
    let flushed = |t: u32| job.prefix().join(format!("ckpt.{t}")).exists();
    assert_eq!([1, 2, 3].map(flushed), [true, false, false]);
}

#[test]
fn checkpoint_descriptors_choose_the_store_by_interval() {
    let job = Job::new();
    let (a, b) = (job.dir.path().join("cache"), job.dir.path().join("cache_b"));
    std::fs::create_dir(&b).unwrap();
    std::fs::write(
        job.dir.path().join("scr.conf"),
        format!(
            "SCR_CNTL_BASE={}\nSTORE={} COUNT=1\nSTORE={} COUNT=1\nCKPT=0 INTERVAL=1 STORE={} TYPE=SINGLE\nCKPT=1 INTERVAL=2 STORE={} TYPE=SINGLE\n",
            job.dir.path().join("cntl").display(),
            a.display(),
            b.display(),
            a.display(),
            b.display()
        ),
    )
    .unwrap();
    job.run_ok(2, &["2000", "4"], &[("SCR_FLUSH", "0")]);
    let in_store = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = walk(dir)
            .iter()
            .filter(|p| p.ends_with("rank_0.ckpt"))
            .map(|p| {
                p.parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        in_store(&a),
        ["ckpt.3"],
        "odd checkpoints in store A, which keeps one"
    );
    assert_eq!(
        in_store(&b),
        ["ckpt.4"],
        "even checkpoints in store B, which keeps one"
    );
    let out = job.run_ok(2, &["2000", "0"], &[]);
    assert!(out.contains("restarted from ckpt.4 (timestep 4)"), "{out}");

    std::fs::write(
        job.dir.path().join("scr.conf"),
        format!(
            "SCR_CNTL_BASE={}\nCKPT=0 INTERVAL=2\n",
            job.dir.path().join("cntl").display()
        ),
    )
    .unwrap();
    let out = text(&job.run(2, &["2000", "1"], &[]));
    assert!(out.contains("INTERVAL=1"), "{out}");
}

#[test]
fn a_failed_checkpoint_never_costs_the_last_good_one() {
    // one dataset in cache and no flushes: SCR would delete ckpt.1 when ckpt.2 starts, and
    // with ckpt.2 invalid nothing would be left
    let job = Job::new();
    let run = job.run(
        2,
        &["3000", "2"],
        &[
            ("SCR_FLUSH", "0"),
            ("SCR_CACHE_SIZE", "1"),
            ("TEST_API_INVALID", "2"),
        ],
    );
    let out = text(&run);
    assert!(out.contains("checkpoint 2 failed"), "{out}");
    // the newest complete checkpoint survived in cache (SCR_FLUSH=0: SCR_Finalize flushes
    // nothing, as SCR), and the next run restarts from it
    assert!(!job.prefix().join("ckpt.1").exists());
    assert!(!job.prefix().join("ckpt.2").exists());
    for r in 0..2 {
        let cached = job.cached(&format!("ckpt.1/rank_{r}.ckpt"));
        assert_eq!(cached.len(), 1, "{cached:?}");
        check_file(&cached[0], r, 1, 3000);
    }
    let out = job.run_ok(2, &["3000", "1"], &[("SCR_FLUSH", "0")]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    // and once a newer checkpoint completes, the old one leaves the cache (SCR_CACHE_SIZE=1)
    let job = Job::new();
    job.run_ok(
        2,
        &["3000", "3"],
        &[("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "1")],
    );
    assert_eq!(job.cached("rank_0.ckpt").len(), 1);
}

#[test]
fn a_prefix_reached_through_a_symbolic_link_works() {
    // SCR_PREFIX names a link; the working directory comes back resolved
    let job = Job::new();
    let link = job.dir.path().join("prefix-link");
    std::os::unix::fs::symlink(job.prefix(), &link).unwrap();
    let out = job.run_ok(2, &["3000", "1"], &[("SCR_PREFIX", link.to_str().unwrap())]);
    assert!(out.contains("test_api: done"), "{out}");
    check_file(&job.prefix().join("ckpt.1/rank_1.ckpt"), 1, 1, 3000);
}

#[test]
fn environment_variables_in_a_config_file_are_expanded() {
    // an application ships its configuration with SCR_PREFIX=$RUN/PFS (SCR expands it)
    let job = Job::new();
    let run_dir = job.dir.path();
    let pfs = run_dir.join("PFS");
    std::fs::create_dir(&pfs).unwrap();
    let conf = run_dir.join("app.scrconf");
    std::fs::write(
        &conf,
        "SCR_PREFIX=$RUN/PFS\nSCR_CACHE_BASE=${RUN}/node-cache\nSCR_FLUSH=1\n",
    )
    .unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut cmd = job.command(None, 2, &["1000", "2"], env);
        cmd.current_dir(&pfs)
            .env("SCR_CONF_FILE", &conf)
            .env_remove("SCR_PREFIX")
            .env_remove("SCR_CACHE_BASE");
        cmd.output().unwrap()
    };
    let o = run(&[("RUN", run_dir.to_str().unwrap())]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(!pfs.join("$RUN").exists(), "no directory named $RUN: {t}");
    check_file(&pfs.join("ckpt.2/rank_1.ckpt"), 1, 2, 1000);
    assert!(run_dir.join("node-cache").is_dir(), "{t}");

    // an unset one stops the job with the file, line and name
    let o = run(&[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("app.scrconf:1") && t.contains("RUN, which is not set"),
        "{t}"
    );
}
