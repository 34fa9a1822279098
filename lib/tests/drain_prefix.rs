//! Where the drain copies to: the prefix each job's control directory records, not the
//! directory `scr postrun` or `scr-run` happens to run in. An application sets its prefix
//! its own way (`SCR_Configf("SCR_PREFIX=…")`, or the launcher's `-wdir`, the prefix then
//! being its working directory); the drain still finds it, and never says "nothing to
//! drain" while a cache holds a dataset its prefix lacks. A new job then restarts from what
//! was drained, verifying every byte.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

const HOSTS: &str = "n1,n2,n3,n4";

/// `scr postrun` run in `dir` with no prefix given (neither `-p` nor SCR_PREFIX).
fn postrun_in(job: &Job, dir: &Path) -> (Option<i32>, String) {
    let out = scr_for(job)
        .arg("postrun")
        .current_dir(dir)
        .env_remove("SCR_PREFIX")
        .output()
        .unwrap();
    (out.status.code(), text(&out))
}

/// A new job with fresh caches restarts `name` from the prefix and verifies its data.
fn restarts_from_prefix(job: &Job, name: &str, timestep: u32) {
    delete_caches(job);
    let out = run_ok_on(job, HOSTS, 4, &["4000", "0"], &[]);
    assert!(
        out.contains(&format!(
            "restarted from {name} (timestep {timestep}), data verified"
        )),
        "{out}"
    );
}

/// The application's prefix is not where the drain runs (the program set it itself, as
/// the user guide's integration chapter recommends): `scr postrun` without `-p` drains to
/// the prefix the job's control directories record.
#[test]
fn postrun_drains_to_the_prefix_the_job_recorded() {
    let job = Job::new();
    run_ok_on(&job, HOSTS, 4, &["4000", "2"], &[("SCR_FLUSH", "0")]);
    assert!(!job.prefix().join("ckpt.2").exists());
    let elsewhere = job.dir.path().join("jobdir");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, out) = postrun_in(&job, &elsewhere);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("nothing to drain"), "{out}");
    assert!(
        out.contains("dataset 2 (ckpt.2) drained and current"),
        "{out}"
    );
    assert!(
        out.contains(&job.prefix().display().to_string()),
        "it says where it drained to: {out}"
    );
    assert!(!elsewhere.join(".scr").exists(), "{out}");
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            4000,
        );
    }
    restarts_from_prefix(&job, "ckpt.2", 2);
}

/// With the prefix's flush file gone (`scr prerun` removes it), a cache that holds a
/// dataset the prefix lacks is still drained: what the caches record counts, and "nothing
/// to drain" is never said while they hold one.
#[test]
fn postrun_drains_what_the_caches_hold_when_the_flush_file_is_gone() {
    let job = Job::new();
    run_ok_on(&job, HOSTS, 4, &["4000", "2"], &[("SCR_FLUSH", "0")]);
    std::fs::remove_file(scr::layout::flush_file(&job.prefix())).unwrap();
    let (code, out) = postrun_in(&job, &job.prefix());
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("nothing to drain"), "{out}");
    assert!(
        out.contains("dataset 2 (ckpt.2) drained and current"),
        "{out}"
    );
    restarts_from_prefix(&job, "ckpt.2", 2);
}

/// `scr-run mpiexec -wdir DIR …` run from another directory: the application's prefix is
/// DIR (its working directory), and the drain after the run copies there.
#[test]
fn scr_run_drains_to_the_prefix_of_the_applications_working_directory() {
    let job = Job::new();
    let elsewhere = job.dir.path().join("jobdir");
    std::fs::create_dir(&elsewhere).unwrap();
    let prefix = job.prefix();
    let app = job.app.to_string_lossy().into_owned();
    let wdir = prefix.to_string_lossy().into_owned();
    let out = output_within(
        Command::new(scr_command().with_file_name("scr-run"))
            .args(["mpiexec", "-launcher", "fork", "-wdir", &wdir])
            .args(["-n", "4", &app, "4000", "2"])
            .current_dir(&elsewhere)
            .env("MPIEXEC_TIMEOUT", "120")
            .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
            .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
            .env("SCR_JOB_ID", JOB_ID)
            .env("SCR_NODELIST", "n[1-4]")
            .env("SCR_RUN_DELAY", "0")
            .env("SCR_RUNS", "1")
            .env("SCR_FLUSH", "0")
            .env_remove("SCR_PREFIX")
            .env_remove("SCR_CONF_FILE")
            .env_remove("SLURM_JOBID")
            .env_remove("SLURM_JOB_ID"),
        std::time::Duration::from_secs(180),
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(!t.contains("nothing to drain"), "{t}");
    assert!(t.contains("dataset 2 (ckpt.2) drained and current"), "{t}");
    for r in 0..4 {
        check_file(&prefix.join(format!("ckpt.2/rank_{r}.ckpt")), r, 2, 4000);
    }
    restarts_from_prefix(&job, "ckpt.2", 2);
}

/// A job killed while it wrote a checkpoint leaves it in cache never completed: the drain
/// does not copy it, and says so by name rather than "nothing to drain" in silence.
#[test]
fn postrun_names_a_dataset_left_unfinished_in_cache() {
    let job = steps_job();
    let out = job.run_on(
        Some(HOSTS),
        4,
        &[
            "init",
            "start=ckpt.1:c",
            "write=ckpt.1/rank_%r.ckpt:1",
            "quit",
        ],
        &[("SCR_FLUSH", "0")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (code, out) = postrun_in(&job, &job.prefix());
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) in cache was never completed"),
        "{out}"
    );
    assert!(!job.prefix().join("ckpt.1").exists(), "{out}");
}

/// A rank killed while SCR encoded a checkpoint's XOR parity leaves it in cache with every
/// rank's files written but its parity never finished: no rank's SCR_Complete_output
/// returned, so the checkpoint never completed. The drain says so once and does not try
/// to copy it (no node's copy could be whole), then drains the checkpoint before it.
#[test]
fn postrun_names_a_checkpoint_killed_in_its_encoding_once_and_never_tries_it() {
    let job = steps_job();
    kill_a_rank_encoding_the_second_checkpoint(&job);
    let (code, out) = postrun_in(&job, &job.prefix());
    assert_eq!(code, Some(0), "{out}");
    let said: Vec<&str> = out.lines().filter(|l| l.contains("ckpt.2")).collect();
    assert_eq!(said.len(), 1, "said once, and not tried: {out}");
    assert!(
        said[0].contains("dataset 2 (ckpt.2) in cache was never completed"),
        "{out}"
    );
    assert!(!out.contains("FAILED"), "{out}");
    assert!(!job.prefix().join("ckpt.2").exists(), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) drained and current"),
        "{out}"
    );
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.1/rank_{r}.ckpt")),
            r,
            1,
            1000,
        );
    }
}

/// As the user guide's integration chapter has it: the program sets its prefix with
/// `SCR_Configf("SCR_PREFIX=%s", …)` and runs, like `scr postrun`, from the job's
/// directory. The drain finds the prefix the program used.
#[test]
fn postrun_drains_to_the_prefix_a_program_set_with_scr_configf() {
    let job = steps_job();
    let jobdir = job.dir.path().join("jobdir");
    std::fs::create_dir(&jobdir).unwrap();
    let set_prefix = format!("configf=SCR_PREFIX:{}", job.prefix().display());
    // (its files named under the prefix, as the guide asks)
    let write = format!("write={}/ckpt.1/rank_%r.ckpt:1", job.prefix().display());
    let steps = [
        &set_prefix,
        "init",
        "start=ckpt.1:c",
        &write,
        "complete",
        "quit",
    ];
    let out = run_in(&job, &jobdir, &steps);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!job.prefix().join("ckpt.1").exists());
    assert_eq!(answer(&text(&out), "complete"), "rc=0", "{}", text(&out));
    let (code, out) = postrun_in(&job, &jobdir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 1 (ckpt.1) drained and current"),
        "{out}"
    );
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.1/rank_{r}.ckpt")),
            r,
            1,
            1000,
        );
    }
    assert!(!jobdir.join(".scr").exists());
}

/// `scr halt` run where the job was launched (its working directory, scr-run's prefix)
/// reaches a program that set its own prefix with `SCR_Configf("SCR_PREFIX=…")`: the
/// library reads the launch directory's halt file too, and records why it stopped there,
/// so a launcher in that directory sees the job halted rather than a condition left over.
#[test]
fn scr_halt_where_the_job_was_launched_reaches_a_program_that_set_its_own_prefix() {
    let job = steps_job();
    let jobdir = job.dir.path().join("jobdir");
    std::fs::create_dir(&jobdir).unwrap();
    let scr_halt_here = |args: &[&str]| {
        let o = scr_for(&job)
            .arg("halt")
            .args(args)
            .current_dir(&jobdir)
            .env_remove("SCR_PREFIX")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    };
    scr_halt_here(&["--checkpoints", "1"]);
    let set_prefix = format!("configf=SCR_PREFIX:{}", job.prefix().display());
    let write = format!("write={}/ckpt.1/rank_%r.ckpt:1", job.prefix().display());
    let steps = [
        &set_prefix,
        "init",
        "shouldexit",
        "start=ckpt.1:c",
        &write,
        "complete",
        "shouldexit",
        "finalize",
    ];
    let out = run_in(&job, &jobdir, &steps);
    let out = text(&out);
    assert_eq!(
        answers(&out, "shouldexit"),
        ["flag=0 rc=0", "flag=1 rc=0"],
        "{out}"
    );
    // the launch directory's halt file counted the checkpoint and says why the job stopped
    let listed = scr_halt_here(&["--list"]);
    assert!(
        listed.contains("CheckpointsLeft: 0") && listed.contains("ExitReason"),
        "{listed}"
    );
}

/// A job of `steps` on 4 ranks run from `dir` (its working directory) with no SCR_PREFIX
/// given, SCR_FLUSH=0: a program that sets its own prefix.
fn run_in(job: &Job, dir: &Path, steps: &[&str]) -> std::process::Output {
    job.command(Some(HOSTS), 4, steps, &[("SCR_FLUSH", "0")])
        .env_remove("SCR_PREFIX")
        .current_dir(dir)
        .output()
        .unwrap()
}
