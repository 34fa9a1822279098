//! SCR v3.1's user guide, `run.rst` (Run a job) and the launcher's parameters of
//! `config.rst`: `scr-run` (SCR's `scr_run`) around real processes, with emulated nodes
//! (SCR_NODELIST) and real `mpiexec` jobs of `lib/tests/c/guide_steps.c`. Expected values
//! come from the guide and from what the programs printed and wrote.

mod common;

use common::*;
use scr::HashView;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// scr-run in `dir` (the prefix unless SCR_PREFIX says otherwise), with the job's cache and
/// control directories and no pause between runs.
fn scr_run(job: &Job, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = Command::new(scr_command().with_file_name("scr-run"));
    cmd.args(args)
        .current_dir(dir)
        .env("MPIEXEC_TIMEOUT", "120")
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_JOB_ID", "6161")
        .env("SCR_RUN_DELAY", "0")
        .env_remove("SCR_PREFIX")
        .env_remove("SCR_CONF_FILE")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output_within(&mut cmd, Duration::from_secs(180));
    let t = text(&out);
    (out, t)
}

fn prefix_env(job: &Job) -> String {
    job.prefix().to_string_lossy().into_owned()
}

/// run.rst, "Using the SCR wrapper scripts", and config.rst, "SCR parameters" (SCR_RUNS):
/// by default scr_run does not launch the application again after its first run ends.
#[test]
fn scr_run_launches_once_by_default() {
    let job = Job::new();
    let prefix = prefix_env(&job);
    let (out, t) = scr_run(
        &job,
        &job.prefix(),
        &["sh", "-c", "echo run; exit 3"],
        &[("SCR_PREFIX", &prefix)],
    );
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert_eq!(t.matches("run\n").count(), 1, "{t}");
}

/// run.rst, "Using the SCR wrapper scripts": the commands take the prefix to be the
/// working directory unless SCR_PREFIX is set; the application started under scr_run finds
/// it there too, and scr_postrun (run after the last run) drains the cached checkpoint
/// into it.
#[test]
fn scr_run_takes_the_working_directory_as_the_prefix_and_drains_into_it() {
    let job = steps_job();
    let dir = job.dir.path().join("work");
    std::fs::create_dir(&dir).unwrap();
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = scr_run(
        &job,
        &dir,
        &[
            "mpiexec",
            "-launcher",
            "fork",
            "-n",
            "4",
            &app,
            "init",
            "ckpt=c.1:1",
            "quit",
        ],
        &[
            ("SCR_NODELIST", "n[1-4]"),
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_FLUSH", "0"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(answer(&t, "ckpt=c.1:1"), "rc=0", "{t}");
    for r in 0..4 {
        check_file(&dir.join(format!("c.1/rank_{r}.ckpt")), r, 1, 1000);
    }
    assert!(!job.prefix().join(".scr").exists(), "{t}");
}

/// run.rst, "The SCR wrapper scripts": the wrapper runs scr_prerun before the run (here it
/// clears what a finished job left: its nodes file, which would otherwise ask for eight
/// nodes of these four).
#[test]
fn scr_run_runs_prerun_before_the_first_run() {
    let job = Job::new();
    std::fs::create_dir_all(job.prefix().join(".scr")).unwrap();
    scr::nodes::NodesFile::with_nodes(8)
        .write(&scr::layout::nodes_file(&job.prefix()))
        .unwrap();
    let prefix = prefix_env(&job);
    let (out, t) = scr_run(
        &job,
        &job.prefix(),
        &["sh", "-c", "echo ran"],
        &[("SCR_PREFIX", &prefix), ("SCR_NODELIST", "n[1-4]")],
    );
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("ran\n"), "{t}");
}

/// run.rst, "Using the SCR wrapper scripts": without the record of the last run's node
/// count (the file the SCR library writes; none before a job's first run), a run needs
/// every node of the allocation, unless SCR_MIN_NODES says otherwise.
#[test]
fn without_the_last_runs_node_count_a_run_needs_every_node() {
    let job = Job::new();
    let prefix = prefix_env(&job);
    let env = [
        ("SCR_PREFIX", prefix.as_str()),
        ("SCR_NODELIST", "n[1-4]"),
        ("SCR_EXCLUDE_NODES", "n3"),
    ];
    let (out, t) = scr_run(&job, &job.prefix(), &["sh", "-c", "echo ran"], &env);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("(Nodes needed=4)") && !t.contains("ran\n"),
        "{t}"
    );
    let mut fewer = env.to_vec();
    fewer.push(("SCR_MIN_NODES", "3"));
    let (out, t) = scr_run(&job, &job.prefix(), &["sh", "-c", "echo ran"], &fewer);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("ran\n"), "{t}");
}

/// config.rst, "SCR parameters" (SCR_EXCLUDE_NODES): nodes it names outside the
/// allocation are ignored without a word.
#[test]
fn excluded_nodes_outside_the_allocation_are_ignored_silently() {
    let job = Job::new();
    let prefix = prefix_env(&job);
    let (out, t) = scr_run(
        &job,
        &job.prefix(),
        &["sh", "-c", "echo ran"],
        &[
            ("SCR_PREFIX", &prefix),
            ("SCR_NODELIST", "n[1-2]"),
            ("SCR_EXCLUDE_NODES", "n9,m[1-3]"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("ran\n"), "{t}");
    assert!(!t.contains("n9") && !t.contains("m1"), "{t}");
}

/// config.rst, "SCR parameters" (SCR_WATCHDOG_TIMEOUT_PFS), and halt.rst, "Catch a hanging
/// job": while a checkpoint is being written to the parallel file system the run may take
/// SCR_WATCHDOG_TIMEOUT_PFS without progress (not SCR_WATCHDOG_TIMEOUT) before it is
/// taken for hung and killed.
#[test]
fn a_run_stuck_in_a_flush_is_given_the_pfs_timeout() {
    let job = Job::new();
    let prefix = prefix_env(&job);
    // what a run stuck in a flush leaves: dataset 1 FLUSHING in the prefix's flush file
    let flushing = job.dir.path().join("flushing.scr");
    let mut flush = scr::flush::FlushFile::new();
    flush.set_location(1, scr::flush::Location::Flushing);
    flush.write(&flushing).unwrap();
    let script = format!(
        "cp {} {}; sleep 60",
        flushing.display(),
        scr::layout::flush_file(&job.prefix()).display()
    );
    let started = Instant::now();
    let (out, t) = scr_run(
        &job,
        &job.prefix(),
        &["sh", "-c", &script],
        &[
            ("SCR_PREFIX", &prefix),
            ("SCR_WATCHDOG", "1"),
            ("SCR_WATCHDOG_TIMEOUT", "1"),
            ("SCR_WATCHDOG_TIMEOUT_PFS", "4"),
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("no checkpoint or flush progress for 4 s (SCR_WATCHDOG_TIMEOUT_PFS)"),
        "{t}"
    );
    assert!(started.elapsed() >= Duration::from_secs(4), "{t}");
}

/// quick.rst, "Running the SCR test_api Example": the example runs under a plain launcher,
/// with no wrapper, so no drain follows the job. Killed before SCR_Finalize (its
/// walltime), it must not leave its checkpoints only in its nodes' caches: the next
/// allocation (other nodes, the caches gone) restarts from the newest checkpoint, or at
/// worst the one before it, whose flush was still running when the job died.
#[test]
fn a_job_without_scr_run_killed_before_finalize_leaves_its_checkpoints_on_the_prefix() {
    let job = Job::new();
    let hosts = "n1,n2,n3,n4";
    run_ok_on(
        &job,
        hosts,
        4,
        &["200000", "3"],
        &[("TEST_API_NO_FINALIZE", "1")],
    );
    delete_caches(&job);
    let out = run_ok_on(&job, hosts, 4, &["200000", "0"], &[]);
    let restarted = out
        .lines()
        .find_map(|l| l.strip_prefix("test_api: restarted from "))
        .unwrap_or_else(|| panic!("the next job started over: {out}"));
    assert!(
        [
            "ckpt.3 (timestep 3), data verified",
            "ckpt.2 (timestep 2), data verified"
        ]
        .contains(&restarted),
        "{out}"
    );
}

/// run.rst, "The SCR wrapper scripts": under scr_run, which drains the caches after the
/// last run, checkpoints stay in cache between flushes (SCR_FLUSH=10, v2.0's default) and
/// the drain brings the newest one to the prefix when the run ends without SCR_Finalize.
#[test]
fn under_scr_run_checkpoints_stay_cached_and_the_drain_takes_the_newest() {
    let job = Job::new();
    let prefix = prefix_env(&job);
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = scr_run(
        &job,
        &job.prefix(),
        &[
            "mpiexec",
            "-launcher",
            "fork",
            "-hosts",
            "n1,n2,n3,n4",
            "-n",
            "4",
            &app,
            "200000",
            "3",
        ],
        &[
            ("SCR_PREFIX", &prefix),
            ("SCR_NODELIST", "n[1-4]"),
            ("TEST_API_NO_FINALIZE", "1"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{t}");
    // the two older checkpoints left the cache unflushed, as v2.0 leaves them
    let names: Vec<String> = job.index().entries().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["ckpt.3"], "{t}");
    assert!(!job.prefix().join("ckpt.1").exists(), "{t}");
    assert!(!job.prefix().join("ckpt.2").exists(), "{t}");
    delete_caches(&job);
    let out = job.run_ok(4, &["200000", "0"], &[]);
    assert!(
        out.contains("test_api: restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}
