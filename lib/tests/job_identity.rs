//! One job identity: outside a resource manager and without SCR_JOB_ID, the library, the
//! drain and the commands that name a job's directories all take the same job id, so a job
//! launched as the user guide launches it is drained by `scr postrun` run the way the guide
//! runs it (from the job directory, in the job's environment).

mod common;

use common::*;
use std::process::Command;

const HOSTS: &str = "n1,n2";

/// The job's environment with no job id anywhere: no SCR_JOB_ID, no resource manager.
fn without_a_job_id(cmd: &mut Command, job: &Job) {
    cmd.current_dir(job.prefix())
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_PREFIX", job.prefix())
        .env("SCR_NODELIST", "n[1-2]")
        .env_remove("SCR_JOB_ID")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID")
        .env_remove("SCR_CONF_FILE")
        .env_remove("SCR_EXCLUDE_NODES");
}

/// `scr ARGS` from the job directory, in the job's environment.
fn scr(job: &Job, args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(scr_command());
    cmd.args(args);
    without_a_job_id(&mut cmd, job);
    let out = cmd.output().unwrap();
    (out.status.code(), text(&out))
}

#[test]
fn without_a_job_id_postrun_drains_what_the_library_cached() {
    let job = Job::new();
    let mut run = job.command(
        Some(HOSTS),
        4,
        &["4000", "2"],
        &[
            ("SCR_FLUSH", "0"),
            ("TEST_API_VARY", "1"),
            ("TEST_API_NO_FINALIZE", "1"),
        ],
    );
    without_a_job_id(&mut run, &job);
    let out = run.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!job.prefix().join("ckpt.2").exists());

    // the commands name the directories the library used
    let (code, jobid) = scr(&job, &["env", "--jobid"]);
    assert_eq!(code, Some(0), "{jobid}");
    let (code, cntl) = scr(&job, &["list-dir", "control"]);
    assert_eq!(code, Some(0), "{cntl}");
    let cntl = std::path::PathBuf::from(cntl.trim());
    assert!(cntl.is_dir(), "scr list-dir names {}", cntl.display());
    assert!(
        cntl.ends_with(format!("scr.{}", jobid.trim())),
        "{} for job id {jobid}",
        cntl.display()
    );

    let (code, out) = scr(&job, &["postrun"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dataset 2 (ckpt.2) drained and current"),
        "{out}"
    );
    delete_caches(&job);
    let mut restart = job.command(Some(HOSTS), 4, &["4000", "0"], &[("TEST_API_VARY", "1")]);
    without_a_job_id(&mut restart, &job);
    let out = restart.output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{t}"
    );
}
