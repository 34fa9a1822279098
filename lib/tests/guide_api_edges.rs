//! SCR v3.1's user guide, `api.rst` (SCR API), at the edges of what a call allows: a
//! restart started with nothing to restart, Start_output's name and flags (identical on
//! every rank; output, checkpoint or both), checked with real `mpiexec` jobs of
//! `lib/tests/c/guide_steps.c`. Expected values come from the guide, never from SCR's own
//! records.

mod common;

use common::*;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

/// api.rst, "SCR_Start_restart": called only when SCR_Have_restart says there is a
/// checkpoint to restart from; with none, it fails on every rank, whatever came before.
#[test]
fn start_restart_with_nothing_to_restart_fails() {
    let job = steps_job();
    // a fresh prefix, asked first
    let out = job.run_ok(2, &["init", "have", "startrestart", "quit"], &[SINGLE]);
    assert_eq!(answer(&out, "have"), "flag=0 name= rc=0", "{out}");
    assert_eq!(answer(&out, "startrestart"), "name= rc=1", "{out}");

    // only output on the prefix: output is never restarted from
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=out.1:o",
            "write=out.1/rank_%r.out:1",
            "complete",
            "quit",
        ],
        &[SINGLE],
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    let out = job.run_ok(2, &["init", "startrestart", "have", "quit"], &[SINGLE]);
    assert_eq!(answer(&out, "startrestart"), "name= rc=1", "{out}");
    assert_eq!(answer(&out, "have"), "flag=0 name= rc=0", "{out}");
    let job = steps_job();

    // one checkpoint on the prefix, read once: nothing is left to restart from
    write_steps_checkpoints(&job, 1, &[SINGLE, ("SCR_FLUSH", "1")]);
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[
            "init",
            "have",
            "startrestart",
            "read=ckpt.1/rank_%r.ckpt:1",
            "completerestart",
            "have",
            "startrestart",
            "quit",
        ],
        &[SINGLE],
    );
    assert_eq!(
        answers(&out, "startrestart"),
        ["name=ckpt.1 rc=0", "name= rc=1"],
        "{out}"
    );

    // the one checkpoint rejected: none older to offer
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &[
            "init",
            "have",
            "startrestart",
            "completerestart=0",
            "have",
            "startrestart",
            "quit",
        ],
        &[SINGLE],
    );
    assert_eq!(
        answers(&out, "startrestart"),
        ["name=ckpt.1 rc=0", "name= rc=1"],
        "{out}"
    );
}

/// api.rst, "SCR_Start_output": "All processes must provide identical values in name" and
/// "in flags": ranks that do not fail Start on every rank, saying which differ, and SCR
/// goes on (v3.1 aborts the job).
#[test]
fn start_output_with_names_or_flags_that_differ_between_ranks_fails_on_every_rank() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=d.%r:c",
            "complete",
            "start=e:c1o",
            "complete",
            "ckpt=good:1",
            "quit",
        ],
        &[SINGLE, ("SCR_FLUSH", "1")],
    );
    assert_eq!(answer(&out, "start=d.%r:c"), "rc=1", "{out}");
    assert_eq!(answer(&out, "start=e:c1o"), "rc=1", "{out}");
    assert!(
        out.contains("rank 1 named it `d.1'") && out.contains("rank 0 `d.0'"),
        "the message names what differs: {out}"
    );
    assert!(out.contains("flags"), "{out}");
    // nothing was started: each Complete fails, the next checkpoint works
    assert_eq!(answers(&out, "complete"), ["rc=1", "rc=1"], "{out}");
    assert_eq!(answer(&out, "ckpt=good:1"), "rc=0", "{out}");
    check_file(&job.prefix().join("good/rank_1.ckpt"), 1, 1, 1000);
    for name in ["d.0", "d.1", "e"] {
        assert!(!job.prefix().join(name).exists(), "{name}: {out}");
    }
}

/// api.rst, "SCR_Start_output": a dataset is output, a checkpoint, or both
/// (`SCR_FLAG_NONE` is for initializing variables): flags naming neither are refused on
/// every rank, and nothing becomes a dataset; a NULL name alone is allowed (SCR names it).
#[test]
fn start_output_refuses_flags_that_are_neither_output_nor_checkpoint() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=c.1:1",
            "start=-:n",
            "write=x/rank_%r.ckpt:2",
            "complete",
            "start=named:n",
            "complete",
            "have",
            "quit",
        ],
        &[SINGLE, ("SCR_FLUSH", "1")],
    );
    assert_eq!(answer(&out, "start=-:n"), "rc=1", "{out}");
    assert_eq!(answer(&out, "start=named:n"), "rc=1", "{out}");
    assert!(
        out.contains("SCR_FLAG_CHECKPOINT") && out.contains("SCR_FLAG_OUTPUT"),
        "the message says which flags: {out}"
    );
    assert_eq!(answers(&out, "complete"), ["rc=1", "rc=1"], "{out}");
    // the checkpoint written before stays the one to restart from
    let out = job.run_ok(2, &["init", "have", "quit"], &[SINGLE]);
    assert_eq!(answer(&out, "have"), "flag=1 name=c.1 rc=0", "{out}");
}

/// api.rst, "SCR_Current": it names the checkpoint a restart loads. Given an output, it
/// fails on every rank, and the job says once (rank 0) why, under the call's name once.
#[test]
fn scr_current_of_an_output_says_once_that_it_is_no_checkpoint() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "0")];
    let out = job.run_ok(
        2,
        &["init", "ckpt=ckpt.3:3", "ckpt=out.4:4:o", "finalize"],
        &env,
    );
    assert_eq!(answer(&out, "ckpt=out.4:4:o"), "rc=0", "{out}");
    let out = job.run_ok(2, &["init", "current=out.4", "restart", "finalize"], &env);
    assert_eq!(answer(&out, "current=out.4"), "rc=1", "{out}");
    let errors: Vec<&str> = out.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "said once: {out}");
    assert!(
        errors[0].starts_with("SCR: ERROR: SCR_Current: out.4 is an output, not a checkpoint")
            && errors[0].matches("SCR_Current").count() == 1,
        "{out}"
    );
    // the prefix it names is the job's
    assert!(
        errors[0].contains(&format!("the index of {}", job.prefix().display())),
        "{out}"
    );
    // nothing changed: the restart still loads the checkpoint
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.3 t=3 data=verified rc=0",
        "{out}"
    );
}

/// api.rst, "SCR_Config": `SCR_Configf(format, ...)` formats its line as printf does. A
/// program built with SCR v3.1's own header declares it as a prototype only, so libscr
/// itself must define it: the program links against libscr with no definition of its own,
/// and each value (an int, a double, strings) arrives as formatted.
#[test]
fn scr_configf_links_from_libscr_with_a_prototype_only() {
    let job = Job::with_c_program("llnl_header_configf.c");
    let out = job.run_ok(2, &[], &[SINGLE]);
    for line in [
        "configf: set=1",
        "configf: SCR_FLUSH=7",
        "configf: SCR_HALT_SECONDS=30",
        "configf: SCR_CLUSTER_NAME=run-12",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} missing:\n{out}");
    }
}

/// api.rst and config.rst, "SCR_Config": it sets parameters of the run that calls it,
/// before SCR_Init. A later run that does not call it runs without them: a first run's
/// `SCR_PREFIX_PURGE=1` or `SCR_PREFIX_SIZE=1` must not delete the checkpoints a second
/// run restarts from. The settings are recorded in `<prefix>/.scr/app.conf` for SCR's
/// commands (as v3.1 does for its scripts), and a run that sets nothing removes them.
#[test]
fn what_scr_config_set_in_one_run_does_not_act_in_the_next() {
    let job = steps_job();
    let env = [("SCR_COPY_TYPE", "SINGLE"), ("SCR_FLUSH", "1")];
    let out = job.run_ok(
        2,
        &[
            "config=SCR_PREFIX_PURGE=1",
            "config=SCR_PREFIX_SIZE=1",
            "init",
            "ckpt=ckpt.1:1",
            "finalize",
        ],
        &env,
    );
    assert_eq!(answer(&out, "config=SCR_PREFIX_PURGE=1"), "NULL", "{out}");
    let app_conf = job.prefix().join(".scr/app.conf");
    assert!(app_conf.exists(), "{out}");
    let out = job.run_ok(
        2,
        &[
            "config=SCR_PREFIX_PURGE",
            "init",
            "restart",
            "ckpt=ckpt.2:2",
            "finalize",
        ],
        &env,
    );
    assert_eq!(answer(&out, "config=SCR_PREFIX_PURGE"), "\"0\"", "{out}");
    assert_eq!(
        answer(&out, "restart"),
        "ckpt.1 t=1 data=verified rc=0",
        "{out}"
    );
    // no window of one: both checkpoints stay on the prefix
    for t in 1..=2 {
        assert_eq!(
            readprefix(&job, &format!("ckpt.{t}")),
            format!("t={t}"),
            "ckpt.{t}"
        );
    }
    assert!(!app_conf.exists(), "the second run set nothing");
}

/// The timestep every rank's file of `name` on the prefix holds, read without SCR.
fn readprefix(job: &Job, name: &str) -> String {
    let out = job.run_ok(2, &[&format!("readprefix={name}")], &[]);
    answer(&out, &format!("readprefix={name}")).to_string()
}
