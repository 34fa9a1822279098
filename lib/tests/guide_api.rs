//! SCR v3.1's user guide, `api.rst` (SCR API): what each call promises, checked with real
//! `mpiexec` jobs of `lib/tests/c/guide_steps.c`. Expected values come from the guide and
//! from what the program itself wrote and read back (its data says which rank and timestep
//! it belongs to), never from SCR's own records. doc/guide-conformance.md maps each
//! statement of the guide to these tests.

mod common;

use common::*;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

fn ckpt_file(job: &Job, name: &str, rank: usize) -> std::path::PathBuf {
    job.prefix().join(format!("{name}/rank_{rank}.ckpt"))
}

/// api.rst, "Checkpoint/Output API": a dataset flagged output only is cached, then copied
/// to the prefix, after which its cached copy may go; it is never a checkpoint to restart
/// from. config.rst, "Change checkpoint flush frequency": output is flushed whatever
/// SCR_FLUSH says (here every 10th checkpoint, the guide's default, which a job launched
/// without scr-run sets itself to keep its checkpoints cache-only).
#[test]
fn an_output_dataset_is_flushed_at_once_leaves_the_cache_and_is_never_restarted_from() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_CACHE_SIZE", "3"), ("SCR_FLUSH", "10")];
    let steps = [
        "init",
        "ckpt=ckpt.1:1",
        "ckpt=out.2:2:o",
        "ckpt=ckpt.3:3",
        "quit",
    ];
    let out = job.run_ok(2, &steps, &env);
    for step in &steps[1..4] {
        assert_eq!(answer(&out, step), "rc=0", "{out}");
    }
    for r in 0..2 {
        check_file(&ckpt_file(&job, "out.2", r), r, 2, 1000);
    }
    assert!(!job.prefix().join("ckpt.1").exists() && !job.prefix().join("ckpt.3").exists());
    assert!(job.cached("out.2/rank_0.ckpt").is_empty(), "{out}");
    assert_eq!(job.cached("ckpt.1/rank_1.ckpt").len(), 1, "{out}");

    // the restart is the newest checkpoint in cache, not the newer output
    assert_restarts(&job, 2, &env, "ckpt.3 t=3 data=verified rc=0");
    // with the cache gone the prefix holds only output: nothing to restart from
    delete_caches(&job);
    let out = job.run_ok(2, &["init", "have", "quit"], &env);
    assert_eq!(answer(&out, "have"), "flag=0 name= rc=0");
}

/// api.rst, "Checkpoint/Output API": a dataset both checkpoint and output is copied to the
/// prefix as output and kept in cache as the checkpoints are (three checkpoints cached: it
/// goes when three newer ones are written). api.rst, "SCR_Start_output": the flags combine
/// with `|`.
#[test]
fn a_checkpoint_that_is_also_output_is_flushed_at_once_and_cached_as_a_checkpoint() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_CACHE_SIZE", "3"), ("SCR_FLUSH", "0")];
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=ckpt.1:1:co",
            "ckpt=ckpt.2:2",
            "ckpt=ckpt.3:3",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "ckpt=ckpt.1:1:co"), "rc=0", "{out}");
    check_file(&ckpt_file(&job, "ckpt.1", 1), 1, 1, 1000);
    assert!(!job.prefix().join("ckpt.2").exists(), "SCR_FLUSH=0: {out}");
    assert_eq!(
        job.cached("ckpt.1/rank_0.ckpt").len(),
        1,
        "still cached: {out}"
    );
    let out = job.run_ok(2, &["init", "ckpt=ckpt.4:4", "quit"], &env);
    assert!(
        job.cached("ckpt.1/rank_0.ckpt").is_empty(),
        "replaced: {out}"
    );
    assert_eq!(job.cached("ckpt.2/rank_0.ckpt").len(), 1, "{out}");
    // a checkpoint on the prefix: restarts find it once the cache is gone
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
}

/// api.rst, "SCR_Start_output": in C a NULL name makes SCR name the dataset from its id.
/// "SCR_Have_restart" and "SCR_Start_restart": the name is the one the dataset was given,
/// the same from both, and NULL may be passed for it.
#[test]
fn a_null_dataset_name_is_made_from_its_id_and_restarts_may_pass_null_for_names() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=-:c",
            "write=data/rank_%r.ckpt:7",
            "complete",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    let read = [
        "init",
        "have",
        "startrestart",
        "read=data/rank_%r.ckpt:7",
        "completerestart",
        "quit",
    ];
    let out = job.run_ok(2, &read, &env);
    // the job's first dataset: its id is 1
    assert_eq!(answer(&out, "have"), "flag=1 name=scr.dataset.1 rc=0");
    assert_eq!(answer(&out, "startrestart"), "name=scr.dataset.1 rc=0");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
    let out = job.run_ok(
        2,
        &[
            "init",
            "have=null",
            "startrestart=null",
            "read=data/rank_%r.ckpt:7",
            "completerestart",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "have=null"), "flag=1 name= rc=0");
    assert_eq!(answer(&out, "startrestart=null"), "name= rc=0");
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
}

/// api.rst, "SCR_Start_output": a name must be shorter than SCR_MAX_FILENAME. Different on
/// purpose (README, "SCR v3.1 programs"): a dataset name is one path component of at most
/// 255 bytes; a longer one fails on every rank, and SCR goes on.
#[test]
fn a_dataset_name_longer_than_a_path_component_fails_on_every_rank_and_scr_goes_on() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=@256:c",
            "complete",
            "start=@1023:c",
            "complete",
            "ckpt=@255:1",
            "quit",
        ],
        &[SINGLE],
    );
    assert_eq!(answer(&out, "start=@256:c"), "rc=1", "{out}");
    assert_eq!(answer(&out, "start=@1023:c"), "rc=1", "{out}");
    assert_eq!(answer(&out, "ckpt=@255:1"), "rc=0", "{out}");
}

/// api.rst, "SCR_Route_file" (file routing, and in an output): a relative name gets the
/// working directory of the call prepended, an absolute one names its place on the
/// prefix; either must lie under the prefix (integration.rst, "Checkpoint"); SCR makes the
/// directories; routing a file again is fine. The file reaches the prefix at the name
/// given. Different on purpose (README, "SCR v3.1 programs"): in cache the path keeps the
/// name's directories below the dataset's cache directory, not the base name alone.
#[test]
fn route_file_takes_relative_or_absolute_names_under_the_prefix_and_refuses_others() {
    let job = steps_job();
    let prefix = job.prefix();
    std::fs::create_dir(prefix.join("sub")).unwrap();
    let abs = format!("write={}/abs/a_%r.ckpt:1", prefix.display());
    let outside = format!("route={}/elsewhere.ckpt", job.dir.path().display());
    let steps = [
        "init",
        "chdir=sub",
        "start=d.1:c",
        "write=rel_%r.ckpt:1",
        "write=rel_%r.ckpt:1",
        &abs,
        &outside,
        "route=../../up.ckpt",
        "complete",
        "quit",
    ];
    let out = job.run_ok(2, &steps, &[SINGLE, ("SCR_FLUSH", "1")]);
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    for r in 0..2 {
        let first = routed(&out, r, "write=rel_%r.ckpt:1").expect("routed");
        assert!(first.starts_with(job.dir.path().join("cache")), "{out}");
        assert!(first.ends_with(format!("sub/rel_{r}.ckpt")), "{out}");
        assert_eq!(out.matches(&*first.to_string_lossy()).count(), 2, "{out}");
        assert!(routed(&out, r, &outside).is_none(), "{out}");
        assert!(routed(&out, r, "route=../../up.ckpt").is_none(), "{out}");
        check_file(&prefix.join(format!("sub/rel_{r}.ckpt")), r, 1, 1000);
        check_file(&prefix.join(format!("abs/a_{r}.ckpt")), r, 1, 1000);
    }
    assert!(out.contains("is outside the prefix directory"), "{out}");
    assert!(!job.dir.path().join("elsewhere.ckpt").exists());
}

/// api.rst, "SCR_Route_file" (in a restart): each file read is routed, as often as
/// wished; a name that is not a file of the loaded checkpoint fails.
#[test]
fn a_restart_routes_its_files_any_number_of_times_and_refuses_others() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "quit"], &env);
    let steps = [
        "init",
        "have",
        "startrestart",
        "read=ckpt.1/rank_%r.ckpt:1",
        "read=ckpt.1/rank_%r.ckpt:1",
        "route=ckpt.1/missing_%r.ckpt",
        "completerestart",
        "quit",
    ];
    let out = job.run_ok(2, &steps, &env);
    for r in 0..2 {
        assert!(
            routed(&out, r, "route=ckpt.1/missing_%r.ckpt").is_none(),
            "{out}"
        );
    }
    assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
}

/// api.rst, "SCR_Complete_restart": one rank that could not read makes the call fail on
/// every rank, and the next most recent checkpoint is loaded for another try.
/// integration.rst, "Restart with SCR": the checkpoint the application failed to restart
/// from is marked invalid, so later runs never load it again.
#[test]
fn a_restart_one_rank_rejects_fails_everywhere_and_no_later_run_loads_that_checkpoint() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"], &env);
    let out = job.run_ok(2, &["init", "restart=reject1", "restart", "quit"], &env);
    let tries = answers(&out, "restart");
    assert_eq!(
        tries,
        [
            "ckpt.2 t=2 data=verified rc=1",
            "ckpt.1 t=1 data=verified rc=0"
        ]
    );
    let list = std::process::Command::new(scr_command())
        .args(["index", "-p"])
        .arg(job.prefix())
        .output()
        .unwrap();
    let list = text(&list);
    assert!(
        list.lines()
            .any(|l| l.contains(" NO ") && l.ends_with(" ckpt.2")),
        "{list}"
    );
    // neither a later run with the cache nor one from the prefix loads ckpt.2
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
}

/// api.rst, "SCR_Complete_restart": after a failed restart SCR loads the next most recent
/// checkpoint, here one that is only in cache (never flushed).
#[test]
fn a_failed_restart_offers_the_next_older_checkpoint_still_in_cache() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "2")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"], &env);
    let out = job.run_ok(2, &["init", "restart=reject", "restart", "quit"], &env);
    let tries = answers(&out, "restart");
    assert_eq!(
        tries,
        [
            "ckpt.2 t=2 data=verified rc=1",
            "ckpt.1 t=1 data=verified rc=0"
        ]
    );
}

/// api.rst, "SCR API state transitions": SCR_Have_restart is valid only between phases;
/// "SCR_Start_output": each Start is followed by one Complete (a second Start fails);
/// "SCR_Start_restart": only when SCR_Have_restart found a checkpoint; "SCR_Get_version":
/// a string the caller does not free. Calls out of place fail on every rank, and SCR goes on.
#[test]
fn calls_out_of_their_place_fail_on_every_rank_and_scr_goes_on() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &[
            "init",
            "startrestart",
            "start=a:c",
            "have",
            "start=b:c",
            "write=a/rank_%r.ckpt:1",
            "complete",
            "version",
            "version",
            "quit",
        ],
        &[SINGLE],
    );
    assert_eq!(answer(&out, "startrestart"), "name= rc=1", "{out}");
    assert_eq!(answer(&out, "have"), "flag=0 name= rc=1", "{out}");
    assert_eq!(answer(&out, "start=b:c"), "rc=1", "{out}");
    assert_eq!(
        answer(&out, "complete"),
        "rc=0",
        "the open output completes: {out}"
    );
    let versions = answers(&out, "version");
    assert_eq!(versions.len(), 2);
    assert!(
        versions[0].contains("SCR") && versions[0] == versions[1],
        "{out}"
    );
}

/// api.rst, "SCR API state transitions": no SCR call after SCR_Finalize; one stops the job
/// with a message instead of running on without SCR.
#[test]
fn a_call_after_finalize_stops_the_job_saying_why() {
    let job = steps_job();
    let out = job.run(2, &["init", "finalize", "need"], &[SINGLE]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert_eq!(answer(&t, "finalize"), "rc=0", "{t}");
    assert!(t.contains("SCR_Need_checkpoint()"), "{t}");
    assert!(answers(&t, "need").is_empty(), "{t}");
}

/// api.rst, "SCR_Current": before SCR_Have_restart it makes the named checkpoint the one
/// loaded, and cached datasets newer than it leave the cache.
#[test]
fn scr_current_deletes_newer_cached_datasets_and_the_named_checkpoint_is_loaded() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "0"), ("SCR_CACHE_SIZE", "3")];
    write_steps_checkpoints(&job, 3, &env);
    assert_eq!(job.cached("ckpt.3/rank_0.ckpt").len(), 1);
    let out = job.run_ok(2, &["init", "current=ckpt.1", "restart", "quit"], &env);
    assert_eq!(answer(&out, "current=ckpt.1"), "rc=0", "{out}");
    assert_eq!(answer(&out, "restart"), "ckpt.1 t=1 data=verified rc=0");
    // SCR_FLUSH=0 flushed nothing: no index names a newer one, and the warning says so
    assert!(
        out.contains("a job that finds ckpt.1 gone from the cache cannot restart it")
            && !out.contains("index still names"),
        "{out}"
    );
    for newer in ["ckpt.2", "ckpt.3"] {
        assert!(
            job.cached(&format!("{newer}/rank_1.ckpt")).is_empty(),
            "{newer}: {out}"
        );
    }
}

/// api.rst, "SCR_Delete": the dataset's files and metadata go from the prefix and from
/// cache, and the directories that leaves empty.
#[test]
fn scr_delete_removes_a_dataset_from_cache_and_prefix() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1"), ("SCR_CACHE_SIZE", "2")];
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=ckpt.1:1",
            "ckpt=ckpt.2:2",
            "delete=ckpt.2",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "delete=ckpt.2"), "rc=0", "{out}");
    assert!(job.cached("ckpt.2/rank_0.ckpt").is_empty(), "{out}");
    assert!(!job.prefix().join("ckpt.2").exists(), "{out}");
    assert_eq!(job.cached("ckpt.1/rank_0.ckpt").len(), 1, "{out}");
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
}

/// api.rst, "SCR API" (its introduction): several processes may access one file.
/// config.rst, "File-per-process vs shared access" and "Write with shared access": shared
/// files live in global storage, which SCR_CACHE_BYPASS=1 gives for output and restart.
#[test]
fn ranks_share_one_file_in_bypass_mode_when_writing_and_restarting() {
    let job = steps_job();
    let env = [("SCR_CACHE_BYPASS", "1")];
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=s.1:c",
            "shared=s.1/all.dat:3",
            "complete",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    let all = std::fs::read(job.prefix().join("s.1/all.dat")).unwrap();
    assert_eq!(all.len(), 2000);
    for (i, b) in all.iter().enumerate() {
        assert_eq!(*b, pattern(i / 1000, 0, 3, i % 1000), "byte {i}");
    }
    // the restart reads it where it is, also once the cache's metadata is gone
    let read = [
        "init",
        "have",
        "startrestart",
        "readshared=s.1/all.dat:3",
        "completerestart",
        "quit",
    ];
    for lost in [false, true] {
        if lost {
            delete_caches(&job);
        }
        let out = job.run_ok(2, &read, &env);
        assert_eq!(answer(&out, "completerestart"), "rc=0", "{out}");
        for r in 0..2 {
            let at = routed(&out, r, "readshared=s.1/all.dat:3").expect("routed");
            assert_eq!(at, job.prefix().join("s.1/all.dat"), "{out}");
        }
    }
}

/// api.rst, "SCR_Should_exit": 1 when the job should stop, the same on every rank; how
/// early before the allocation ends is SCR_HALT_SECONDS (integration.rst, "Init/Finalize":
/// time left to copy datasets out); and it relays `scr_halt` to the running application.
/// With SCR_HALT_EXIT=0 the application stays in control.
#[test]
fn should_exit_says_stop_near_the_allocations_end_and_after_scr_halt() {
    let job = steps_job();
    let now = chrono::Utc::now().timestamp();
    let (far, near) = ((now + 3600).to_string(), (now + 30).to_string());
    fn env(end: &str) -> [(&'static str, &str); 4] {
        [
            SINGLE,
            ("SCR_HALT_EXIT", "0"),
            ("SCR_HALT_SECONDS", "60"),
            ("SCR_END_TIME", end),
        ]
    }
    let (far_env, near_env) = (env(&far), env(&near));
    let out = job.run_ok(2, &["init", "shouldexit", "quit"], &far_env);
    assert_eq!(answer(&out, "shouldexit"), "flag=0 rc=0", "{out}");
    let out = job.run_ok(
        2,
        &["init", "shouldexit", "ckpt=ckpt.1:1", "shouldexit", "quit"],
        &near_env,
    );
    assert_eq!(
        answers(&out, "shouldexit"),
        ["flag=1 rc=0", "flag=1 rc=0"],
        "{out}"
    );
    assert_eq!(answer(&out, "ckpt=ckpt.1:1"), "rc=0", "{out}");

    // scr_halt run while the job runs (by rank 0, between two calls), in a job the end of
    // its allocation does not halt
    let job = steps_job();
    let halt = format!(
        "sh={} halt {}",
        scr_command().display(),
        job.prefix().display()
    );
    let out = job.run_ok(
        2,
        &["init", "shouldexit", &halt, "shouldexit", "quit"],
        &far_env,
    );
    assert_eq!(
        answers(&out, "shouldexit"),
        ["flag=0 rc=0", "flag=1 rc=0"],
        "{out}"
    );
}

/// api.rst, "SCR_Config": setting and unsetting return NULL; `KEY=` removes only the value
/// SCR_Config gave, not one a configuration file (or the environment) gives; the last set
/// wins. Different on purpose (README, "SCR v3.1 programs"): a query of a parameter nobody
/// set answers its default, where v3.1 answers NULL.
#[test]
fn unsetting_with_scr_config_removes_only_the_value_it_gave() {
    let job = steps_job();
    let conf = job.dir.path().join("scr.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str("SCR_FLUSH=4\n");
    std::fs::write(&conf, text).unwrap();
    let out = job.run_ok(
        2,
        &[
            "config=SCR_FLUSH",
            "config=SCR_FLUSH=2",
            "config=SCR_FLUSH=1",
            "config=SCR_FLUSH",
            "config=SCR_FLUSH=",
            "config=SCR_FLUSH",
            "config=SCR_FETCH_WIDTH=8",
            "config=SCR_FETCH_WIDTH=",
            "config=SCR_FETCH_WIDTH",
            "config=SCR_PREFIX_SIZE",
            "quit",
        ],
        &[("SCR_FETCH_WIDTH", "16")],
    );
    let flush = answers(&out, "config=SCR_FLUSH");
    assert_eq!(flush, ["\"4\"", "\"1\"", "\"4\""], "{out}");
    for set in [
        "config=SCR_FLUSH=2",
        "config=SCR_FLUSH=1",
        "config=SCR_FLUSH=",
    ] {
        assert_eq!(answer(&out, set), "NULL", "{out}");
    }
    assert_eq!(answer(&out, "config=SCR_FETCH_WIDTH"), "\"16\"", "{out}");
    assert_eq!(answer(&out, "config=SCR_PREFIX_SIZE"), "\"0\"", "{out}");
}
