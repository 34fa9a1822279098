//! SCR v3.1's user guide, `config.rst` (Configure a job): the common configurations, the
//! group, store and checkpoint descriptors, and the parameters' defaults, with real
//! `mpiexec` jobs of `lib/tests/c/guide_steps.c` (and test_api). Expected values come from
//! the guide and from what the program itself wrote and read, never from SCR's records.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

/// Writes a user configuration file (SCR_CONF_FILE names it) into the job's directory.
fn user_conf(job: &Job, text: &str) -> String {
    let path = job.dir.path().join("user.conf");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn cache_dir(job: &Job) -> PathBuf {
    job.dir.path().join("cache")
}

/// config.rst, "Specify the job output directory" and "SCR parameters" (SCR_PREFIX): by
/// default the prefix is the working directory.
#[test]
fn the_prefix_defaults_to_the_working_directory() {
    let job = steps_job();
    let dir = job.dir.path().join("work");
    std::fs::create_dir(&dir).unwrap();
    let run = |steps: &[&str]| {
        let mut cmd = job.command(None, 2, steps, &[SINGLE, ("SCR_FLUSH", "1")]);
        cmd.env_remove("SCR_PREFIX").current_dir(&dir);
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    };
    run(&["init", "ckpt=ckpt.1:1", "quit"]);
    check_file(&dir.join("ckpt.1/rank_1.ckpt"), 1, 1, 1000);
    assert!(dir.join(".scr/index.scr").is_file());
    delete_caches(&job);
    let out = run(&["init", "restart", "quit"]);
    assert_eq!(answer(&out, "restart"), "ckpt.1 t=1 data=verified rc=0");
}

/// config.rst, "Specify which checkpoint to load" and "SCR parameters" (SCR_CURRENT): by
/// default the most recent checkpoint is loaded; SCR_CURRENT names another, by the name
/// given to SCR_Start_output.
#[test]
fn scr_current_names_the_checkpoint_a_new_run_loads() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    assert_restarts(&job, 2, &env, "ckpt.3 t=3 data=verified rc=0");
    let out = job.run_ok(
        2,
        &["init", "restart", "quit"],
        &[SINGLE, ("SCR_CURRENT", "ckpt.1")],
    );
    assert_eq!(answer(&out, "restart"), "ckpt.1 t=1 data=verified rc=0");
}

/// config.rst, "Specify which checkpoint to load": SCR_CURRENT naming a checkpoint that
/// does not exist (a typo): as SCR v3.1, a warning naming it, with the checkpoints the
/// index lists, and the run restarts as if SCR_CURRENT were unset (from the current
/// checkpoint, the newest when none is marked), the warning naming which.
#[test]
fn scr_current_naming_no_checkpoint_warns_and_restarts_as_if_unset() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &["init", "restart", "quit"],
        &[SINGLE, ("SCR_CURRENT", "ckpt.7")],
    );
    assert_eq!(answer(&out, "init"), "rc=0", "{out}");
    let warning = out
        .lines()
        .find(|l| l.contains("SCR_CURRENT=ckpt.7"))
        .unwrap_or_else(|| panic!("no warning naming ckpt.7:\n{out}"));
    for name in ["ckpt.1", "ckpt.2", "ckpt.3"] {
        assert!(warning.contains(name), "{warning}");
    }
    assert!(
        warning.ends_with("from ckpt.3, the prefix's current checkpoint"),
        "{warning}"
    );
    assert_eq!(answer(&out, "restart"), "ckpt.3 t=3 data=verified rc=0");

    // manage.rst: a restart starts from the dataset marked current; the warning names the
    // checkpoint the run goes on to load, not the newest
    let marked = Command::new(scr_command())
        .args(["index", "--current", "ckpt.1", "-p"])
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(marked.status.success(), "{}", text(&marked));
    delete_caches(&job);
    let out = job.run_ok(
        2,
        &["init", "restart", "quit"],
        &[SINGLE, ("SCR_CURRENT", "ckpt.7")],
    );
    let warning = out
        .lines()
        .find(|l| l.contains("SCR_CURRENT=ckpt.7"))
        .unwrap_or_else(|| panic!("no warning naming ckpt.7:\n{out}"));
    assert!(
        warning.ends_with("from ckpt.1, the prefix's current checkpoint"),
        "{warning}"
    );
    assert_eq!(answer(&out, "restart"), "ckpt.1 t=1 data=verified rc=0");
}

/// config.rst, "Change checkpoint flush frequency" and "SCR parameters" (SCR_FLUSH): by
/// default every 10th checkpoint is flushed, in a job a drain follows (scr-run's runs, told
/// by SCR_DRAIN_FOLLOWS=1; without one every checkpoint is, README's v3.1 parameters).
/// "SCR parameters" (SCR_LOG_ENABLE): by default nothing is logged.
#[test]
fn by_default_every_tenth_checkpoint_is_flushed_and_nothing_is_logged() {
    let job = steps_job();
    let mut steps = vec!["init".to_string()];
    steps.extend((1..=11).map(|t| format!("ckpt=ckpt.{t}:{t}")));
    steps.push("quit".into());
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let out = job.run_ok(
        2,
        &steps,
        &[SINGLE, ("SCR_CACHE_SIZE", "2"), ("SCR_DRAIN_FOLLOWS", "1")],
    );
    let on_prefix: Vec<String> = std::fs::read_dir(job.prefix())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ckpt."))
        .collect();
    assert_eq!(on_prefix, ["ckpt.10"], "{out}");
    check_file(&job.prefix().join("ckpt.10/rank_0.ckpt"), 0, 10, 1000);
    assert!(!job.prefix().join(".scr/log").exists());
}

/// config.rst, "Group, store, and checkpoint descriptors": a CKPT line's INTERVAL defaults
/// to 1 and its TYPE to SCR_COPY_TYPE's (XOR); BYPASS=1 sends the files straight to the
/// prefix.
#[test]
fn ckpt_lines_default_interval_and_type_and_bypass_sends_files_to_the_prefix() {
    // a lone line without INTERVAL takes every checkpoint; one without TYPE is XOR
    let job = steps_job();
    let conf = user_conf(&job, "SCR_COPY_TYPE=FILE\nCKPT=0 SET_SIZE=4\n");
    let out = run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &["init", "ckpt=c.1:1", "ckpt=c.2:2", "quit"],
        &[("SCR_CONF_FILE", &conf), ("SCR_FLUSH", "0")],
    );
    assert_eq!(answers(&out, "ckpt=c.2:2"), ["rc=0"], "{out}");
    let parity: Vec<PathBuf> = walk(&cache_dir(&job))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/.scr/xor."))
        .collect();
    assert_eq!(parity.len(), 4, "XOR on four nodes: {out}");

    let job = steps_job();
    let conf = user_conf(&job, "CKPT=0 TYPE=SINGLE BYPASS=1\n");
    let out = job.run_ok(
        2,
        &[
            "init",
            "start=b.1:c",
            "write=b.1/rank_%r.ckpt:1",
            "complete",
            "quit",
        ],
        &[("SCR_CONF_FILE", &conf), ("SCR_FLUSH", "0")],
    );
    let at = routed(&out, 0, "write=b.1/rank_%r.ckpt:1").unwrap();
    assert_eq!(at, job.prefix().join("b.1/rank_0.ckpt"), "{out}");
    check_file(&job.prefix().join("b.1/rank_1.ckpt"), 1, 1, 1000);
    assert!(job.cached("rank_0.ckpt").is_empty(), "{out}");
}

/// config.rst, "Group, store, and checkpoint descriptors": the descriptor marked OUTPUT=1
/// takes the datasets flagged SCR_FLAG_OUTPUT; without one, a dataset both output and
/// checkpoint takes its descriptor as any checkpoint does, and an output-only one the
/// INTERVAL=1 descriptor. (Which descriptor a dataset took shows in where its file is
/// routed: here one descriptor bypasses the cache.)
#[test]
fn output_datasets_take_the_descriptor_marked_output() {
    let steps = |names: [&str; 3]| -> Vec<String> {
        let mut s = vec!["init".to_string()];
        for (t, (name, flags)) in names.iter().zip(["o", "c", "co"]).enumerate() {
            s.push(format!("start={name}:{flags}"));
            s.push(format!("write={name}/rank_%r.ckpt:{}", t + 1));
            s.push("complete".into());
        }
        s.push("quit".into());
        s
    };
    let where_ = |job: &Job, out: &str, name: &str| {
        let at = routed(
            out,
            0,
            &format!("write={name}/rank_%r.ckpt:{}", &name[name.len() - 1..]),
        )
        .unwrap();
        if at.starts_with(job.prefix()) {
            "prefix"
        } else {
            "cache"
        }
    };
    let env = |conf: &str| {
        [
            ("SCR_CONF_FILE", conf.to_string()),
            ("SCR_FLUSH", "0".into()),
        ]
    };
    let run = |job: &Job, conf: &str| {
        let s = steps(["o.1", "c.2", "co.3"]);
        let s: Vec<&str> = s.iter().map(String::as_str).collect();
        let e = env(conf);
        let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
        job.run_ok(2, &s, &e)
    };

    // CKPT=1 (never due by its interval) is marked OUTPUT and bypasses the cache
    let job = steps_job();
    let conf = user_conf(
        &job,
        "CKPT=0 INTERVAL=1 TYPE=SINGLE\nCKPT=1 INTERVAL=1000 TYPE=SINGLE BYPASS=1 OUTPUT=1\n",
    );
    let out = run(&job, &conf);
    let got: Vec<&str> = ["o.1", "c.2", "co.3"]
        .iter()
        .map(|n| where_(&job, &out, n))
        .collect();
    assert_eq!(got, ["prefix", "cache", "prefix"], "{out}");

    // none marked OUTPUT: the checkpoint counter picks for checkpoints (c.2 is the first,
    // co.3 the second), INTERVAL=1 for output alone
    let job = steps_job();
    let conf = user_conf(
        &job,
        "CKPT=0 INTERVAL=1 TYPE=SINGLE BYPASS=1\nCKPT=1 INTERVAL=2 TYPE=SINGLE\n",
    );
    let out = run(&job, &conf);
    let got: Vec<&str> = ["o.1", "c.2", "co.3"]
        .iter()
        .map(|n| where_(&job, &out, n))
        .collect();
    assert_eq!(got, ["prefix", "prefix", "cache"], "{out}");
    for (name, t) in [("o.1", 1), ("c.2", 2), ("co.3", 3)] {
        check_file(
            &job.prefix().join(format!("{name}/rank_1.ckpt")),
            1,
            t,
            1000,
        );
    }
}

/// config.rst, "Group, store, and checkpoint descriptors": a STORE line's ENABLED=0 turns
/// the store off (its checkpoint descriptor with it), and its FLUSH gives the transfer type
/// of the checkpoints flushed from it (PTHREAD: in the background, the application going on
/// before the copy is done), whatever SCR_FLUSH_TYPE says.
#[test]
fn store_lines_turn_a_store_off_and_choose_its_flush_type() {
    let job = steps_job();
    let (a, b) = (cache_dir(&job).join("a"), cache_dir(&job).join("b"));
    let conf = user_conf(
        &job,
        &format!(
            "STORE={a}\nSTORE={b} ENABLED=0\nCKPT=0 INTERVAL=1 TYPE=SINGLE STORE={a}\n\
             CKPT=1 INTERVAL=2 TYPE=SINGLE STORE={b}\n",
            a = a.display(),
            b = b.display()
        ),
    );
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=c.1:1",
            "start=c.2:c",
            "write=c.2/rank_%r.ckpt:2",
            "complete",
            "quit",
        ],
        &[("SCR_CONF_FILE", &conf), ("SCR_FLUSH", "0")],
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    let at = routed(&out, 1, "write=c.2/rank_%r.ckpt:2").unwrap();
    assert!(
        at.starts_with(&a),
        "the second checkpoint in {}: {out}",
        at.display()
    );
    assert!(!b.exists(), "{out}");

    // the same checkpoint flushed from a SYNC store is on the prefix when Complete returns;
    // from a PTHREAD store (its copy paced at 20 KB/s) not yet, and at SCR_Finalize it is
    for (flush, there_at_once) in [("SYNC", true), ("PTHREAD", false)] {
        let job = steps_job();
        let store = cache_dir(&job).join("s");
        let conf = user_conf(
            &job,
            &format!(
                "STORE={s} FLUSH={flush}\nCKPT=0 INTERVAL=1 TYPE=SINGLE STORE={s}\n",
                s = store.display()
            ),
        );
        let out = job.run_ok(
            2,
            &[
                "size=20000",
                "init",
                "ckpt=c.1:1",
                "readprefix=c.1",
                "finalize",
            ],
            &[
                ("SCR_CONF_FILE", &conf),
                ("SCR_FLUSH", "1"),
                ("SCR_FLUSH_TYPE", "SYNC"),
                ("SCR_FLUSH_ASYNC_BW", "20000"),
            ],
        );
        let read = answer(&out, "readprefix=c.1");
        assert_eq!(read == "t=1", there_at_once, "{flush}: {out}");
        check_file(&job.prefix().join("c.1/rank_1.ckpt"), 1, 1, 20000);
    }
}

/// config.rst, "Change redundancy schemes" and "Example using SINGLE and XOR": with
/// descriptors, one job uses SINGLE for most checkpoints and XOR for every Nth (here 2nd),
/// each in its own store keeping its newest; after a node is lost the restart falls back
/// to the newest XOR checkpoint, rebuilt in cache.
#[test]
fn single_and_xor_in_one_job_restart_from_the_xor_checkpoint_after_a_node_is_lost() {
    let job = steps_job();
    let (single, xor) = (cache_dir(&job).join("single"), cache_dir(&job).join("xor"));
    let conf = user_conf(
        &job,
        &format!(
            "SCR_COPY_TYPE=FILE\nSCR_CACHE_BYPASS=0\nSTORE={s} COUNT=1\nSTORE={x} COUNT=1\n\
             CKPT=0 INTERVAL=1 STORE={s} TYPE=SINGLE\nCKPT=1 INTERVAL=2 STORE={x} TYPE=XOR\n",
            s = single.display(),
            x = xor.display()
        ),
    );
    let env = [("SCR_CONF_FILE", conf.as_str()), ("SCR_FLUSH", "0")];
    let hosts = "n1,n2,n3,n4";
    let out = run_ok_on(
        &job,
        hosts,
        4,
        &["init", "ckpt=c.1:1", "ckpt=c.2:2", "ckpt=c.3:3", "quit"],
        &env,
    );
    let in_store = |dir: &Path, name: &str| {
        dir.exists()
            && walk(dir)
                .iter()
                .any(|p| p.ends_with(format!("{name}/rank_0.ckpt")))
    };
    assert!(
        in_store(&single, "c.3") && !in_store(&single, "c.1"),
        "{out}"
    );
    assert!(in_store(&xor, "c.2"), "{out}");
    // n2 lost: c.3 (SINGLE) is gone with it, c.2 (XOR) is rebuilt
    for d in ["single", "xor"] {
        let node = cache_dir(&job).join(format!("{d}/{}/scr.{JOB_ID}/node.n2", user()));
        std::fs::remove_dir_all(node).unwrap();
    }
    let [_, cntl] = node_dirs(&job, "n2");
    std::fs::remove_dir_all(cntl).unwrap();
    let out = run_ok_on(&job, hosts, 4, &["init", "restart", "quit"], &env);
    assert_eq!(
        answer(&out, "restart"),
        "c.2 t=2 data=verified rc=0",
        "{out}"
    );
}

/// config.rst, "Group, store, and checkpoint descriptors": an XOR descriptor without
/// SET_SIZE takes SCR_SET_SIZE: 2 on four nodes makes two sets, so a node lost in each
/// set is rebuilt (the default, 8, makes one set of four, which cannot lose two).
#[test]
fn an_xor_descriptor_without_set_size_takes_scr_set_size() {
    let job = steps_job();
    let conf = user_conf(&job, "CKPT=0 INTERVAL=1 TYPE=XOR\n");
    let env = [
        ("SCR_CONF_FILE", conf.as_str()),
        ("SCR_FLUSH", "0"),
        ("SCR_SET_SIZE", "2"),
    ];
    restarts_verified_after_losing(&job, &env, &["n1", "n3"]);
}

/// config.rst, "SCR parameters" (SCR_GROUP): the failure group the implied descriptor
/// spreads its sets across, here one of the GROUPS lines' groups: with the sets spanning
/// two racks, losing a whole rack loses one member of each set, which XOR rebuilds.
#[test]
fn scr_group_names_the_failure_group_sets_are_spread_across() {
    let job = steps_job();
    let conf = user_conf(
        &job,
        "GROUPS=n1 RACK=a\nGROUPS=n2 RACK=a\nGROUPS=n3 RACK=b\nGROUPS=n4 RACK=b\n",
    );
    let env = [
        ("SCR_CONF_FILE", conf.as_str()),
        ("SCR_GROUP", "RACK"),
        ("SCR_COPY_TYPE", "XOR"),
        ("SCR_SET_SIZE", "2"),
        ("SCR_FLUSH", "0"),
    ];
    restarts_verified_after_losing(&job, &env, &["n1", "n2"]);
}

/// config.rst, "SCR parameters" (SCR_DEBUG): 1 and 2 print more and more.
#[test]
fn scr_debug_2_prints_what_1_does_and_more() {
    let lines = |level: &str| {
        let job = steps_job();
        let out = job.run(
            2,
            &["init", "ckpt=c.1:1", "quit"],
            &[SINGLE, ("SCR_FLUSH", "1"), ("SCR_DEBUG", level)],
        );
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("SCR: ") && !l.contains("SCR_DEBUG="))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (zero, one, two) = (lines("0"), lines("1"), lines("2"));
    assert!(
        zero.len() < one.len() && one.len() < two.len(),
        "{zero:?}\n{one:?}\n{two:?}"
    );
    for l in &one {
        // level 1's lines, timings aside, are among level 2's
        let head = l
            .split(|c: char| c == '=' || c == '/' || c.is_ascii_digit())
            .next()
            .unwrap();
        assert!(
            two.iter().any(|m| m.starts_with(head)),
            "{l} at level 2: {two:?}"
        );
    }
}

/// config.rst, "SCR parameters" (SCR_CHECKPOINT_SECONDS): the least time between
/// checkpoints SCR_Need_checkpoint advises; api.rst, "SCR_Need_checkpoint": every rank
/// gets the same answer.
#[test]
fn checkpoint_seconds_is_the_least_time_between_checkpoints_need_checkpoint_advises() {
    let job = steps_job();
    let out = job.run_ok(
        2,
        &["init", "ckpt=c.1:1", "need", "sleep=1500", "need", "quit"],
        &[SINGLE, ("SCR_CHECKPOINT_SECONDS", "1")],
    );
    assert_eq!(
        answers(&out, "need"),
        ["flag=0 rc=0", "flag=1 rc=0"],
        "{out}"
    );
}

/// config.rst, "Change control and cache location": independent runs in one allocation
/// (one job id) stay apart when each has its own control and cache directories: each
/// restarts from its own cache.
#[test]
fn runs_with_their_own_control_and_cache_bases_stay_apart() {
    let (a, b) = (steps_job(), steps_job());
    let env = [SINGLE, ("SCR_FLUSH", "0")];
    let first = |job: &Job, t: &str| {
        let step = format!("ckpt=c.{t}:{t}");
        job.command(None, 2, &["init", &step, "quit"], &env)
            .spawn()
            .unwrap()
    };
    let (pa, pb) = (first(&a, "1"), first(&b, "5"));
    for p in [pa, pb] {
        let o = p.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let out = a.run_ok(2, &["init", "restart", "quit"], &env);
    assert_eq!(
        answer(&out, "restart"),
        "c.1 t=1 data=verified rc=0",
        "{out}"
    );
    let out = b.run_ok(2, &["init", "restart", "quit"], &env);
    assert_eq!(
        answer(&out, "restart"),
        "c.5 t=5 data=verified rc=0",
        "{out}"
    );
}

/// config.rst, "Restart with a different number of processes": the application restarts
/// without SCR's API (SCR_FLUSH_ON_RESTART=1, SCR_FETCH=0) and reads the prefix itself,
/// here a checkpoint of four ranks read by two.
#[test]
fn a_job_restarts_on_fewer_processes_reading_the_prefix_itself() {
    let job = steps_job();
    job.run_ok(
        2 * 2,
        &["init", "ckpt=c.1:1", "quit"],
        &[SINGLE, ("SCR_FLUSH", "1")],
    );
    let own = [
        SINGLE,
        ("SCR_FLUSH", "1"),
        ("SCR_FLUSH_ON_RESTART", "1"),
        ("SCR_FETCH", "0"),
    ];
    let out = job.run_ok(
        2,
        &[
            "init",
            "readprefix=c.1:4",
            "current=c.1",
            "ckpt=c.2:2",
            "finalize",
        ],
        &own,
    );
    assert_eq!(answer(&out, "readprefix=c.1:4"), "t=1", "{out}");
    assert_eq!(answer(&out, "current=c.1"), "rc=0", "{out}");
    assert_eq!(answer(&out, "ckpt=c.2:2"), "rc=0", "{out}");
    check_file(&job.prefix().join("c.2/rank_1.ckpt"), 1, 2, 1000);
}

/// A checkpoint on four nodes, the `lost` nodes' caches gone, and a restart on all four:
/// the restart reads back every byte of the checkpoint.
fn restarts_verified_after_losing(job: &Job, env: &[(&str, &str)], lost: &[&str]) {
    let hosts = "n1,n2,n3,n4";
    run_ok_on(job, hosts, 4, &["init", "ckpt=c.1:1", "quit"], env);
    for node in lost {
        lose_node(job, node);
    }
    let out = run_ok_on(job, hosts, 4, &["init", "restart", "quit"], env);
    assert_eq!(
        answer(&out, "restart"),
        "c.1 t=1 data=verified rc=0",
        "{out}"
    );
}

/// config.rst, "SCR parameters" (SCR_CACHE_SIZE, v3.1's default 1): a store with room for
/// one checkpoint keeps one. The newest checkpoint stays cached while the next is written
/// where there is room for both; where there is not, it goes first, as in v3.1, and every
/// checkpoint completes.
#[test]
fn a_cache_with_room_for_one_checkpoint_takes_every_checkpoint() {
    let job = Job::new();
    let size = "5000000";
    let small = job.dir.path().join("small-cache");
    let _room_for_one = Tmpfs::mount(&small, 8 << 20);
    let env = [
        ("SCR_CACHE_BASE", small.to_str().unwrap()),
        ("SCR_CACHE_SIZE", "1"),
        ("SCR_FLUSH", "0"),
        ("TEST_API_TIMES", "1"),
    ];
    let out = job.run_ok(1, &[size, "3"], &env);
    for t in 1..=3 {
        assert!(
            out.contains(&format!("test_api: checkpoint {t} took")),
            "{out}"
        );
    }
    assert!(!out.contains("failed"), "{out}");
    assert!(
        out.contains("is deleted before") && out.contains("SCR_CACHE_SIZE"),
        "said once why the older checkpoint went first: {out}"
    );
    assert_eq!(out.matches("is deleted before").count(), 1, "{out}");
    // the newest is the one kept: the next run restarts from it, every byte checked
    let out = job.run_ok(1, &[size, "0"], &env);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

/// config.rst, "SCR parameters": a parameter may be set in a configuration file as in the
/// environment, SCR_USER_NAME included: the directories a run makes carry the user name the
/// file gives, not the login's. SCR_NODE_NAME names each process's own node, which a file
/// read for every node alike cannot: from a file it is not used, and the run says so.
#[test]
fn a_user_name_from_a_configuration_file_names_the_directories() {
    let job = steps_job();
    let conf = user_conf(&job, "SCR_USER_NAME=cfguser\nSCR_NODE_NAME=solo\n");
    let env = [
        ("SCR_CONF_FILE", conf.as_str()),
        ("SCR_COPY_TYPE", "SINGLE"),
        ("SCR_FLUSH", "0"),
    ];
    let out = run_ok_on(&job, "n1,n2", 2, &["init", "ckpt=c.1:1", "quit"], &env);
    assert!(
        out.contains("user.conf:2: SCR_NODE_NAME is not used"),
        "{out}"
    );
    for d in ["cache", "cntl"] {
        for node in ["n1", "n2"] {
            let named = job
                .dir
                .path()
                .join(format!("{d}/cfguser/scr.{JOB_ID}/node.{node}"));
            assert!(named.is_dir(), "no {}: {out}", named.display());
        }
        let [cache, cntl] = node_dirs(&job, "n1");
        assert!(!cache.exists() && !cntl.exists(), "{out}");
    }
    let restarted = run_ok_on(&job, "n1,n2", 2, &["init", "restart", "quit"], &env);
    assert_eq!(
        answer(&restarted, "restart"),
        "c.1 t=1 data=verified rc=0",
        "{restarted}"
    );
}

/// config.rst, "SCR parameters" (SCR_CACHE_SIZE): the cache keeps that many checkpoints. A
/// checkpoint a killed job never completed is none of them: when the cache makes room, it
/// goes before an older whole one, which a restart may still need.
#[test]
fn a_checkpoint_a_killed_job_never_completed_takes_no_cache_room_from_a_whole_one() {
    let job = hist_app_job();
    let env = [
        ("SCR_COPY_TYPE", "SINGLE"),
        ("SCR_FLUSH", "0"),
        ("SCR_CACHE_SIZE", "2"),
    ];
    let hosts = "n1,n2";
    run_ok_on(
        &job,
        hosts,
        2,
        &["init", "restart", "ckpt=1:1:100", "finalize"],
        &env,
    );
    // the next run restarts ckpt.1 and is killed writing ckpt.2 (rank 1, its files written)
    let killed = job.run_on(
        Some(hosts),
        2,
        &[
            "layout=1:1:1:100:2",
            "init",
            "restart",
            "kill=1:1",
            "ckpt=2:1:1000",
            "finalize",
        ],
        &env,
    );
    let killed = text(&killed);
    assert!(
        killed.contains("hist: attempt ckpt.1 verified=1"),
        "{killed}"
    );
    // the next restarts ckpt.1 again and writes ckpt.2 anew (dataset 3): the cache, which
    // keeps two, makes room
    let (l1, l2) = ("layout=1:1:1:100:2", "layout=2:2:1:1000:2");
    let args = [l1, l2, "init", "restart", "ckpt=3:1:1000", "finalize"];
    let out = run_ok_on(&job, hosts, 2, &args, &env);
    assert!(out.contains("hist: ckpt ckpt.2 serial=3 rc=0"), "{out}");
    // the new ckpt.2 damaged in cache (SINGLE: nothing rebuilds it): the restart goes back to
    // ckpt.1, which the unfinished dataset must not have pushed out of the cache
    let damaged: Vec<PathBuf> = walk(&job.dir.path().join("cache"))
        .into_iter()
        .filter(|p| p.ends_with("scr.dataset.3/ckpt.2/rank_0.0"))
        .collect();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&damaged[0])
        .unwrap();
    f.set_len(999).unwrap();
    let args = [l1, l2, "layout=3:2:1:1000:2", "init", "restart", "finalize"];
    let out = run_ok_on(&job, hosts, 2, &args, &env);
    assert!(
        out.contains("hist: attempt ckpt.1 verified=1 rc=0 serials=1"),
        "{out}"
    );
}
