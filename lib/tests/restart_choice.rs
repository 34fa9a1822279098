//! Which checkpoint a restart loads when the user names one: SCR_CURRENT (SCR v3.1's
//! config.rst and manage.rst) names the checkpoint to restart from for the job allocation it
//! is set in, once. A relaunch in the same allocation (scr-run after a failure, with the
//! batch script's SCR_CURRENT still set) restarts from the newest checkpoint the job wrote
//! since, not from the named one again: that would throw the newer checkpoints away.

mod common;

use common::*;

#[test]
fn scr_current_is_applied_once_per_allocation_not_at_every_relaunch() {
    let job = Job::new();
    let size = "20000";
    job.run_ok(2, &[size, "3"], &[("SCR_FLUSH", "1")]);
    // the batch script names ckpt.2; the run restarts there and writes two more
    let named = [("SCR_CURRENT", "ckpt.2"), ("SCR_FLUSH", "1")];
    let out = job.run_ok(2, &[size, "2"], &named);
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    // a relaunch in the same allocation (same job id), SCR_CURRENT still in the environment:
    // the newest checkpoint, timestep 4, not ckpt.2 again
    let out = job.run_ok(2, &[size, "0"], &named);
    assert!(
        out.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{out}"
    );
    // a new allocation (another job id) takes SCR_CURRENT again
    let out = job.run_ok(
        2,
        &[size, "0"],
        &[&named[..], &[("SCR_JOB_ID", "4243")]].concat(),
    );
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
}

/// A run with no job id at all (no resource manager, no scr-run, no SCR_JOB_ID: SCR's
/// `defjobid`) is an allocation of its own: SCR_CURRENT applies at every such run.
#[test]
fn without_a_job_id_every_run_applies_scr_current() {
    let job = Job::new();
    let size = "20000";
    let no_id = ("SCR_JOB_ID", "");
    job.run_ok(2, &[size, "3"], &[("SCR_FLUSH", "1"), no_id]);
    let named = [("SCR_CURRENT", "ckpt.2"), ("SCR_FLUSH", "1"), no_id];
    for _ in 0..2 {
        let out = job.run_ok(2, &[size, "1"], &named);
        assert!(
            out.contains("restarted from ckpt.2 (timestep 2), data verified"),
            "{out}"
        );
    }
}
