//! Programs written for SCR v2.0 and v3.1 against our libscr, with real `mpiexec`: bare
//! file names routed on restart, the v3.1 calls (SCR_Config, SCR_Current, SCR_Drop,
//! SCR_Delete) from C and Fortran, v3.1's prefix window and purges, and the job-id rule the
//! library shares with the commands.

mod common;

use common::*;
use scr::HashView;
use std::process::Command;

/// The v2.0-style program, built against our libscr.
fn v2_bare_names_job() -> Job {
    Job::with_c_program("v2_bare_names.c")
}

#[test]
fn a_v2_program_routing_bare_file_names_restarts_from_cache_and_from_the_prefix() {
    // from cache, on emulated nodes with XOR (SCR_FLUSH=0: nothing reaches the prefix)
    let job = v2_bare_names_job();
    let env = [("SCR_FLUSH", "0"), ("SCR_COPY_TYPE", "XOR")];
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["2"], &env);
    assert!(out.contains("v2_bare_names: no checkpoint"), "{out}");
    assert!(!job.prefix().join("ckpt.2").exists());
    filemaps_drain_with_scr_copy(&job, 2);
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["1"], &env);
    assert!(
        out.contains("v2_bare_names: restarted from ckpt.2 at step 2"),
        "{out}"
    );

    // from the prefix: flushed, then every cache lost
    let job = v2_bare_names_job();
    job.run_ok(2, &["2"], &[("SCR_FLUSH", "1")]);
    std::fs::remove_dir_all(job.dir.path().join("cache")).unwrap();
    std::fs::create_dir(job.dir.path().join("cache")).unwrap();
    let out = job.run_ok(2, &["1"], &[]);
    assert!(
        out.contains("v2_bare_names: restarted from ckpt.2 at step 2"),
        "{out}"
    );
    assert_eq!(job.index_entry("ckpt.2").fetched.len(), 1, "fetched: {out}");
}

/// What SCR v2.0's own `scr_copy` reads in a node's filemaps to drain dataset `id` into the
/// application's directories (checked by hand against real SCR v2.0.0's `scr_copy` and
/// `scr_index --add`, which then rebuilt a lost node's file from our XOR files): per rank, a
/// `FLUSH` entry with `PRESERVE=1` and `CONTAINER=0`, a `FILES` count equal to the files
/// listed, and each user file's `TYPE=USER` and absolute `PATH` (its directory on the prefix).
fn filemaps_drain_with_scr_copy(job: &Job, id: u64) {
    let mut ranks = 0;
    for node in ["n1", "n2", "n3", "n4"] {
        let [_, cntl] = node_dirs(job, node);
        let master = scr::filemap::MasterFilemap::read(&cntl.join("filemap.scrinfo")).unwrap();
        for path in master.filemaps() {
            let map = scr::filemap::Filemap::read(std::path::Path::new(path)).unwrap();
            for rank in map.ranks_by_dataset(id) {
                ranks += 1;
                let flush = map.flushdesc(id, rank).expect("a FLUSH entry");
                assert_eq!(flush.first_value("PRESERVE"), Some("1"), "{path}");
                assert_eq!(flush.first_value("CONTAINER"), Some("0"), "{path}");
                let files = map.files(id, rank);
                assert_eq!(map.expected_files(id, rank), Some(files.len() as u64));
                let user: Vec<scr::meta::Meta> = files
                    .iter()
                    .filter_map(|f| map.meta(id, rank, f))
                    .filter(|m| m.filetype() == Some(scr::meta::FileType::User))
                    .collect();
                assert_eq!(user.len(), 1, "{path}: rank {rank}'s checkpoint file");
                let dir = job.prefix().join(format!("ckpt.{id}"));
                assert_eq!(user[0].orig_dir(), Some(dir.to_str().unwrap()), "{path}");
            }
        }
    }
    assert_eq!(ranks, 4, "every rank's entry found on its node");
}

#[test]
fn a_bare_name_two_restart_files_share_is_an_error_naming_both() {
    let job = v2_bare_names_job();
    job.run_ok(2, &["1", "dup"], &[("SCR_FLUSH", "0")]);
    let out = job.run_ok(2, &["1", "dup"], &[("SCR_FLUSH", "0")]);
    assert!(
        out.contains("v2_bare_names: restart from ckpt.1 failed"),
        "{out}"
    );
    assert!(
        out.contains("rank_0.ckpt matches 2 restart files of this rank (ckpt.1/a/rank_0.ckpt, ckpt.1/b/rank_0.ckpt)"),
        "{out}"
    );
}

#[test]
fn a_v3_1_program_configures_chooses_drops_and_deletes_checkpoints() {
    let job = Job::with_c_program("v31_api.c");
    let prefix = job.prefix();
    let out = job.run_ok(2, &["first"], &[]);
    assert!(out.contains("v31: first run done"), "{out}");
    assert!(
        out.contains("SCR_FLUSH") && out.contains("often"),
        "the refused value: {out}"
    );
    // what SCR_Config set is kept for later runs
    let app_conf = std::fs::read_to_string(prefix.join(".scr/app.conf")).unwrap();
    for line in [
        "SCR_FLUSH=1",
        "SCR_FLUSH_WIDTH=2",
        "CKPT=0 INTERVAL=1 TYPE=SINGLE",
    ] {
        assert!(app_conf.lines().any(|l| l == line), "{line} in {app_conf}");
    }
    assert!(!app_conf.contains("SCR_CHECKPOINT_INTERVAL"), "{app_conf}");
    for t in 1..=3 {
        assert!(prefix.join(format!("ckpt.{t}/rank_1.dat")).exists());
    }
    assert_eq!(job.index_entry("ckpt.3").id, 3);

    let out = job.run_ok(2, &["second"], &[]);
    assert!(out.contains("v31: restarted from ckpt.2"), "{out}");
    assert!(out.contains("v31: second run done"), "{out}");
    assert!(
        out.contains("SCR_Drop: no dataset no-such-dataset"),
        "an unknown name warns: {out}"
    );
    let index = scr::index::IndexFile::read(&scr::layout::index_file(&prefix)).unwrap();
    let names: Vec<(u64, String)> = index
        .entries()
        .into_iter()
        .map(|e| (e.id, e.name))
        .collect();
    // ckpt.1 dropped (its files stay), the old ckpt.3 deleted, the new ckpt.3 takes a new id
    assert_eq!(
        names,
        [(4, "ckpt.3".to_string()), (2, "ckpt.2".to_string())]
    );
    assert_eq!(index.current(), Some("ckpt.3"));
    assert!(
        prefix.join("ckpt.1/rank_0.dat").exists(),
        "Drop keeps the files"
    );
    assert!(
        !prefix.join(".scr/scr.dataset.3").exists(),
        "Delete removes the metadata"
    );
    assert!(prefix.join(".scr/scr.dataset.4").exists());
    let t = std::fs::read_to_string(prefix.join("ckpt.3/rank_1.dat")).unwrap();
    assert_eq!(
        t.trim(),
        "1 3",
        "ckpt.3 written anew after the restart from ckpt.2"
    );
}

#[test]
fn the_prefix_is_fetched_when_the_program_asks_for_a_restart_and_only_the_checkpoint_it_chose() {
    let job = Job::with_c_program("v31_api.c");
    let log = [("SCR_LOG_ENABLE", "1"), ("SCR_LOG_TXT_ENABLE", "1")];
    job.run_ok(2, &["first"], &log);
    delete_caches(&job); // every node lost: a restart must come from the prefix
    let out = job.run_ok(2, &["second"], &log);
    assert!(out.contains("v31: restarted from ckpt.2"), "{out}");
    let text = std::fs::read_to_string(job.prefix().join(".scr/log")).unwrap();
    let fetches: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("event=FETCH "))
        .collect();
    // SCR_Current chose ckpt.2 after SCR_Init: the newer ckpt.3 was never copied into cache
    assert_eq!(fetches.len(), 1, "{text}");
    assert!(fetches[0].contains("name=ckpt.2"), "{text}");
}

#[test]
fn cache_bypass_writes_straight_to_the_prefix_and_restarts_after_the_metadata_is_lost() {
    let job = Job::new();
    let env = [
        ("SCR_CACHE_BYPASS", "1"),
        ("SCR_FLUSH", "0"), // nothing to copy: each checkpoint is published as it completes
        ("SCR_COPY_TYPE", "XOR"),
        ("SCR_CACHE_SIZE", "1"),
    ];
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["4096", "3"], &env);
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    // the files are the prefix's, every checkpoint is indexed, and cache holds none of them
    for t in 1..=3 {
        check_file(
            &job.prefix().join(format!("ckpt.{t}/rank_2.ckpt")),
            2,
            t,
            4096,
        );
        assert_eq!(job.index_entry(&format!("ckpt.{t}")).id, t as u64);
    }
    assert!(
        job.cached("rank_2.ckpt").is_empty(),
        "no user file in cache"
    );
    assert!(
        !walk(&job.dir.path().join("cache"))
            .iter()
            .any(|p| p.to_string_lossy().contains("xor.")),
        "no parity for files the prefix holds"
    );
    // evicting ckpt.1 and ckpt.2 from cache (SCR_CACHE_SIZE=1) left their files alone
    assert!(job.prefix().join("ckpt.1/rank_0.ckpt").exists());

    // restart from the filemaps in cache: reads the prefix's files where they are
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["4096", "1"], &env);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
    assert!(
        job.index_entry("ckpt.3").fetched.is_empty(),
        "not fetched: {out}"
    );
    // a node's control and cache directories lost: the restart comes from the index
    lose_node(&job, "n3");
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["4096", "1"], &env);
    assert!(
        out.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{out}"
    );
    assert_eq!(job.index_entry("ckpt.4").fetched.len(), 1, "{out}");
    check_file(&job.prefix().join("ckpt.4/rank_2.ckpt"), 2, 4, 4096);

    // SCR_FETCH_BYPASS: every cache lost, the restart reads the prefix in place, CRC-checked
    delete_caches(&job);
    let out = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &["4096", "1"],
        &[("SCR_FETCH_BYPASS", "1"), ("SCR_FLUSH", "1")],
    );
    assert!(
        out.contains("restarted from ckpt.5 (timestep 5), data verified"),
        "{out}"
    );
    assert!(
        job.cached("ckpt.5/rank_1.ckpt").is_empty(),
        "fetched in place, not copied"
    );
    assert!(job.index_entry("ckpt.5").fetched.len() == 1, "{out}");
    check_file(&job.prefix().join("ckpt.5/rank_1.ckpt"), 1, 5, 4096);
}

#[test]
fn flush_on_restart_global_restart_distribute_and_flush_type_do_what_v3_1_says() {
    let job = Job::new();
    let run = |env: &[(&str, &str)]| job.run_ok(2, &["4096", "1"], env);
    run(&[("SCR_FLUSH", "0")]);
    assert!(!job.prefix().join("ckpt.1").exists());

    // SCR_FLUSH_ON_RESTART: the checkpoint restarted from cache is flushed in SCR_Init
    let out = run(&[("SCR_FLUSH", "0"), ("SCR_FLUSH_ON_RESTART", "1")]);
    assert!(out.contains("restarted from ckpt.1 (timestep 1)"), "{out}");
    assert!(job.index_entry("ckpt.1").fetched.is_empty(), "{out}");
    check_file(&job.prefix().join("ckpt.1/rank_1.ckpt"), 1, 1, 4096);
    assert!(
        !job.prefix().join("ckpt.2").exists(),
        "SCR_FLUSH=0 still holds"
    );

    // SCR_GLOBAL_RESTART: flushed in SCR_Init, then read from the prefix in place
    let out = run(&[("SCR_FLUSH", "0"), ("SCR_GLOBAL_RESTART", "1")]);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    assert_eq!(job.index_entry("ckpt.2").fetched.len(), 1, "{out}");
    assert!(job.cached("ckpt.2/rank_0.ckpt").is_empty(), "read in place");
    check_file(&job.prefix().join("ckpt.2/rank_0.ckpt"), 0, 2, 4096);

    // SCR_DISTRIBUTE=0: the cached ckpt.3 is not used; the prefix's newest, ckpt.2, is
    // fetched; SCR_FLUSH_TYPE=PTHREAD flushes the next one in the background (2 s at
    // SCR_FLUSH_ASYNC_BW: the checkpoint returns first), finished by SCR_Finalize
    let out = run(&[
        ("SCR_DISTRIBUTE", "0"),
        ("SCR_FLUSH", "1"),
        ("SCR_FLUSH_TYPE", "PTHREAD"),
        ("SCR_FLUSH_ASYNC_BW", "4096"),
        ("TEST_API_TIMES", "1"),
        ("TEST_API_SLEEP_MS", "3000"),
    ]);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    // the cached ckpt.3 is said as passed over for SCR_DISTRIBUTE=0, not as stranded by an
    // earlier run
    assert!(
        out.contains("ckpt.3 (dataset 3) is in node caches")
            && out.contains("with SCR_DISTRIBUTE=0 a run restarts from the prefix alone")
            && !out.contains("earlier run"),
        "{out}"
    );
    let returned = checkpoint_ended_at(&out, 3);
    // (dataset 4: the cached ckpt.3 was dataset 3) the flush began while the application
    // computed for 3 s after the checkpoint, not in SCR_Finalize, and ended after it returned
    let began = write_interval(&job.prefix().join("ckpt.3/rank_0.ckpt")).0;
    assert!(
        began < returned + 1.0,
        "ckpt.3's flush began at {began:.6}, long after the checkpoint returned at {returned:.6}: {out}"
    );
    let published = write_interval(&job.prefix().join(".scr/scr.dataset.4/summary.scr")).1;
    assert!(
        published > returned,
        "ckpt.3 was published at {published:.6}, before the checkpoint returned at {returned:.6}: {out}"
    );
    check_file(&job.prefix().join("ckpt.3/rank_1.ckpt"), 1, 3, 4096);
    assert_eq!(
        job.index_entry("ckpt.3").id,
        4,
        "the new ckpt.3 (id 3 is the cached one), flushed"
    );

    let bad = job.run(2, &["4096", "1"], &[("SCR_FLUSH_TYPE", "RSYNC")]);
    let t = text(&bad);
    assert!(
        !bad.status.success() || t.contains("SYNC, PTHREAD, BBAPI or DATAWARP"),
        "{t}"
    );
    assert!(t.contains("SCR_FLUSH_TYPE=\"RSYNC\" is not valid"), "{t}");
}

#[test]
fn crc_on_delete_reports_a_cached_file_corrupted_before_it_is_deleted() {
    let job = Job::new();
    let env = [("SCR_FLUSH", "0"), ("SCR_CRC_ON_COPY", "1")];
    job.run_ok(2, &["4096", "1"], &env);
    let cached = job.cached("ckpt.1/rank_1.ckpt");
    assert_eq!(cached.len(), 1);
    flip_byte(&cached[0], 100);
    // not restarted from (SCR_DISTRIBUTE=0), evicted by the next checkpoint
    let out = job.run_ok(
        2,
        &["4096", "1"],
        &[
            ("SCR_FLUSH", "0"),
            ("SCR_DISTRIBUTE", "0"),
            ("SCR_CRC_ON_DELETE", "1"),
        ],
    );
    assert!(out.contains("rank_1.ckpt: CRC32 0x"), "{out}");
    assert!(out.contains("the cache corrupted it"), "{out}");
    assert!(
        !out.contains("rank_0.ckpt: CRC32"),
        "rank 0's file is intact: {out}"
    );
}

#[test]
fn a_fortran_v3_1_program_links_with_lscrf_lscr_and_manages_checkpoints() {
    let job = Job::new();
    // -lscrf -lscr, as SCR documents for Fortran: libscrf carries no code of its own here
    let dir = job.dir.path();
    let scrf = dir.join("scrf.c");
    std::fs::write(&scrf, "/* the Fortran symbols are in libscr */\n").unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libscrf.so"))
        .arg(&scrf)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built));
    link_library_into(dir);
    let exe = dir.join("v31_api_f");
    let out = Command::new(Mpi::current().fortran())
        .arg(workspace().join("lib/tests/fortran/v31_api.F90"))
        .arg("-I")
        .arg(workspace().join("lib/include"))
        .arg(format!("-L{}", dir.display()))
        .args(["-lscrf", "-lscr"])
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "-lscrf -lscr: {}", text(&out));
    let job = Job { app: exe, ..job };
    let out = job.run_ok(2, &["first"], &[]);
    assert!(out.contains("v31f: first run done"), "{out}");
    let out = job.run_ok(2, &["second"], &[]);
    assert!(out.contains("v31f: restarted from ckpt.1"), "{out}");
    assert!(out.contains("v31f: second run done"), "{out}");
    assert!(
        !job.prefix().join("ckpt.2").exists(),
        "SCR_DELETE removed ckpt.2"
    );
    let index = job.index();
    assert_eq!(index.id_of("ckpt.2"), None);
    assert_eq!(index.current(), Some("ckpt.1"));
}

#[test]
fn prefix_size_keeps_a_window_and_the_purges_empty_prefix_and_cache() {
    let job = Job::new();
    let prefix = job.prefix();
    let names = || -> Vec<String> {
        scr::index::IndexFile::read(&scr::layout::index_file(&prefix))
            .map(|i| i.entries().into_iter().map(|e| e.name).collect())
            .unwrap_or_default()
    };
    let window = [("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "2")];
    let out = job.run_ok(2, &["2000", "5"], &window);
    assert!(
        out.contains("deleted ckpt.3 from the prefix (SCR_PREFIX_SIZE=2)"),
        "{out}"
    );
    assert_eq!(names(), ["ckpt.5", "ckpt.4"]);
    for t in 1..=3 {
        assert!(!prefix.join(format!("ckpt.{t}")).exists(), "ckpt.{t}");
        assert!(
            !prefix.join(format!(".scr/scr.dataset.{t}")).exists(),
            "ckpt.{t}"
        );
    }
    // SCR_CACHE_PURGE: the cache is emptied in SCR_Init, so the restart is fetched
    let purge_cache = [("SCR_CACHE_PURGE", "1"), window[0], window[1]];
    let out = job.run_ok(2, &["2000", "1"], &purge_cache);
    assert!(
        out.contains("restarted from ckpt.5 (timestep 5), data verified"),
        "{out}"
    );
    assert_eq!(job.index_entry("ckpt.5").fetched.len(), 1, "{out}");
    assert_eq!(names(), ["ckpt.6", "ckpt.5"]);
    // SCR_PREFIX_PURGE (with the cache purged too): nothing left to restart from
    let out = job.run_ok(
        2,
        &["2000", "1"],
        &[
            ("SCR_PREFIX_PURGE", "1"),
            ("SCR_CACHE_PURGE", "1"),
            ("SCR_FLUSH", "0"),
        ],
    );
    assert!(
        out.contains("no checkpoint, starting from the beginning"),
        "{out}"
    );
    assert!(names().is_empty(), "{:?}", names());
    assert!(!prefix.join("ckpt.5").exists() && !prefix.join("ckpt.6").exists());
}

#[test]
fn a_dataset_the_window_cannot_delete_stays_and_the_others_go_all_the_same() {
    let job = Job::new();
    let prefix = job.prefix();
    job.run_ok(2, &["2000", "3"], &[("SCR_FLUSH", "1")]);
    // ckpt.1 cannot be deleted: a directory (with something in it) where its file was
    let stuck = prefix.join("ckpt.1/rank_0.ckpt");
    std::fs::remove_file(&stuck).unwrap();
    std::fs::create_dir_all(stuck.join("inside")).unwrap();
    let out = job.run_ok(
        2,
        &["2000", "1"],
        &[("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "1")],
    );
    assert!(
        out.contains("SCR_PREFIX_SIZE=1: ckpt.1 stays on the prefix")
            && out.contains("rank_0.ckpt"),
        "{out}"
    );
    for t in 2..=3 {
        assert!(
            out.contains(&format!(
                "deleted ckpt.{t} from the prefix (SCR_PREFIX_SIZE=1)"
            )),
            "{out}"
        );
        assert!(
            !prefix.join(format!("ckpt.{t}")).exists(),
            "ckpt.{t}: {out}"
        );
    }
    assert!(prefix.join("ckpt.4/rank_1.ckpt").is_file());
}

#[test]
fn with_only_slurm_job_id_set_the_library_and_scr_list_dir_agree_on_the_control_directory() {
    let job = Job::new();
    let cntl = job.dir.path().join("cntl");
    let mut cmd = job.command(None, 2, &["1000", "1"], &[]);
    cmd.env("SLURM_JOB_ID", "31337")
        .env("SCR_USER_NAME", "tester")
        .env_remove("SLURM_JOBID")
        .env_remove("SCR_JOB_ID")
        .env_remove("SCR_CONF_FILE");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let used = cntl.join("tester").join("scr.31337");
    assert!(
        used.join("filemap.scrinfo").exists(),
        "{} holds the filemaps",
        used.display()
    );
    let listed = Command::new(scr_command())
        .args(["list-dir", "control"])
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_USER_NAME", "tester")
        .env("SLURM_JOB_ID", "31337")
        .env_remove("SLURM_JOBID")
        .env_remove("SCR_JOB_ID")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        used.to_str().unwrap()
    );
}

/// A program built with the other MPI's `mpicc` than libscr loads both MPIs: SCR_Init
/// says so, naming both, and the process ends with an error before any MPI call could
/// crash it (each would reach a library that reads the other's handles as its own).
#[test]
fn a_program_built_with_another_mpi_than_libscr_is_refused_in_scr_init_not_crashed() {
    let job = Job::new();
    let other = match Mpi::current() {
        Mpi::Mpich => Mpi::OpenMpi,
        Mpi::OpenMpi => Mpi::Mpich,
    };
    let app = build_with(
        other.cc(),
        job.dir.path(),
        &workspace().join("examples/c/test_api.c"),
        "test_api_other_mpi",
    );
    // a singleton (no launcher): the crash came in SCR_Init's first MPI call
    let out = output_within(
        Command::new(&app)
            .args(["1000", "1"])
            .current_dir(job.prefix())
            .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
            .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
            .env("SCR_PREFIX", job.prefix())
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
        std::time::Duration::from_secs(60),
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("SCR_Init")
            && t.contains("two MPI libraries")
            && t.contains("MPICH")
            && t.contains("Open MPI"),
        "{t}"
    );
}

/// SCR_FETCH_BYPASS reads a damaged file where it lies: the CRC mismatch names it once, as
/// read in place, not as fetched from itself to itself; the restart takes the older one.
#[test]
fn a_damaged_file_read_in_place_is_named_as_read_in_place() {
    let job = Job::new();
    job.run_ok(2, &["4096", "2"], &[("SCR_FLUSH", "1")]);
    let victim = job.prefix().join("ckpt.2/rank_1.ckpt");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[100] ^= 0x5a;
    std::fs::write(&victim, bytes).unwrap();
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &["4096", "0"],
        &[("SCR_FETCH_BYPASS", "1"), ("SCR_DEBUG", "1")],
    );
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
    let said = format!(
        "CRC32 mismatch detected when reading file {} in place of dataset 2",
        victim.display()
    );
    assert!(out.contains(&said), "{out}");
    assert!(!out.contains("when fetching file from"), "{out}");
}

/// Under SCR_CACHE_BYPASS=1 a checkpoint goes straight to the prefix: one that reuses the
/// name (and so the paths) of a checkpoint the prefix holds whole replaces that one's files
/// as it writes them. Said at its start, naming both datasets and the way out; a new name
/// is not warned about.
#[test]
fn a_bypass_checkpoint_over_its_namesake_on_the_prefix_is_said() {
    let job = Job::with_c_program("guide_steps.c");
    let env = [("SCR_CACHE_BYPASS", "1"), ("SCR_COPY_TYPE", "SINGLE")];
    let out = job.run_ok(
        2,
        &["init", "ckpt=fixed:1", "ckpt=other:2", "finalize"],
        &env,
    );
    assert!(!out.contains("of the same name is whole"), "{out}");
    let out = job.run_ok(2, &["init", "ckpt=fixed:3", "finalize"], &env);
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("of the same name is whole"))
        .collect();
    assert_eq!(said.len(), 1, "once, by rank 0: {out}");
    assert!(
        said[0].contains("checkpoint fixed (dataset 3)")
            && said[0].contains("dataset 1 of the same name")
            && said[0].contains("SCR_CACHE_BYPASS=0"),
        "{out}"
    );
}
