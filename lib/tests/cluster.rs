//! End-to-end scenarios on a real SLURM cluster of network/UTS/mount namespaces on this
//! machine (tests/cluster/cluster.sh): real slurmctld, slurmd, munge, srun, sinfo, pdsh over
//! ssh, MPICH over PMI2. Each test brings up its own cluster and tears it down; they run one
//! at a time (.config/nextest.toml), and scripts/test.sh runs them after the rest of the
//! suite. The nodes share the machine's PID namespace, so a kill aimed at one node goes
//! through the harness's kill-app or kill-node, which match only that node's processes (a
//! plain `pkill -9 test_api` run on a node once killed other tests' ranks running beside
//! the cluster). Without root or network namespaces they fail saying what is missing.

mod common;
/// LLNL's testing/TEST (v3.1.0), the plan every scenario of which runs in one test.
#[path = "cluster/plan.rs"]
mod plan;

#[path = "cluster/reshape.rs"]
mod reshape;

#[path = "cluster/site_log.rs"]
mod site_log;

#[path = "cluster/harness.rs"]
mod harness;

use common::*;
use harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn four_nodes_checkpoint_flush_every_second_and_finish() {
    let started = Instant::now();
    let c = Cluster::up(4, "scenario1");
    let (out, t) = run(c.scr_run(4, 4, &["200000", "4"], &[("SCR_FLUSH", "2")]));
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("no checkpoint, starting from the beginning"),
        "{t}"
    );
    assert!(t.contains("attempt 1: run ended: exit code 0"), "{t}");
    assert!(!t.contains("attempt 2"), "{t}");
    for name in ["ckpt.2", "ckpt.4"] {
        let e = c.index_entry(name);
        assert!(e.complete, "{e:?}");
    }
    assert!(c.index_entry("ckpt.4").is_current);
    // scr index --list shows them; a second job restarts from the prefix and verifies
    let (out, t) = run({
        let mut cmd = c.cmd(&c.scr());
        cmd.args(["index", "--list"]);
        cmd
    });
    assert!(
        out.status.success() && t.contains("ckpt.4") && t.contains("ckpt.2"),
        "{t}"
    );
    let (out, t) = run(c.scr_run(4, 4, &["200000", "1"], &[]));
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("restarted from ckpt.4 (timestep 4), data verified"),
        "{t}"
    );
    eprintln!(
        "scenario 1 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Also the site's one database log: the library on the nodes and scr-run on the host log
/// over TLS to one server, whose records match what the application printed and the node
/// the test killed.
#[test]
fn a_node_dying_mid_run_is_excluded_and_the_spare_takes_over_from_the_xor_rebuild() {
    let started = Instant::now();
    let c = Cluster::up(5, "scenario2");
    let site = site_log::SiteLog::start(&c.dir);
    let killer = kill_node_after_checkpoint(&c, 3, 4);
    let mut env: Vec<(&str, String)> = vec![
        ("SCR_FLUSH", "0".into()),
        ("SCR_COPY_TYPE", "XOR".into()),
        ("SCR_RUNS", "3".into()),
        ("SCR_MIN_NODES", "4".into()),
        ("TEST_API_SLEEP_MS", "400".into()),
        ("TEST_API_TIMES", "1".into()),
    ];
    env.extend(site.env());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, t) = run(c.scr_run(5, 4, &["200000", "10"], &env));
    killer.join().unwrap();
    assert!(out.status.success(), "{t}");
    assert!(t.contains("node3 is down"), "{t}");
    // every node test ran, SLURM's own included (a bad sinfo query once went unnoticed
    // because the ping found the node anyway)
    assert!(!t.contains("could not ask SLURM"), "{t}");
    assert!(
        t.contains("attempt 2: launching on 4 node(s), excluding node3"),
        "{t}"
    );
    restarted_from_cache(&c, &t);
    assert!(!t.contains("database log off"), "{t}");

    let events = site.events();
    let kinds: Vec<&str> = events.iter().map(|e| e[0].as_str()).collect();
    // the node the test killed, as scr-run found it (v3.1's name for it)
    assert!(
        events
            .iter()
            .any(|e| e[0] == "NODE_FAIL" && e[2].contains("node3")),
        "{events:?}"
    );
    assert_eq!(
        kinds.iter().filter(|&&k| k == "START").count(),
        2,
        "{kinds:?}"
    );
    // every checkpoint the application saw complete, and the restart it printed
    let logged = site_log::SiteLog::named(&events, "CHECKPOINT_END");
    for n in completed_checkpoints(t.lines()) {
        assert!(
            logged.contains(&format!("ckpt.{n}")),
            "ckpt.{n}: {events:?}"
        );
    }
    assert_eq!(
        site_log::SiteLog::named(&events, "RESTART_SUCCESS"),
        vec![format!("ckpt.{}", newest_completed(&t))]
    );
    // over TLS from a node (rank 0's library) and from the host (scr-run)
    let clients = site.clients();
    assert!(
        clients.iter().all(|(_, how)| how == "SSL/TLS"),
        "{clients:?}"
    );
    assert!(
        clients.iter().any(|(a, _)| a == "10.99.0.254"),
        "{clients:?}"
    );
    assert!(
        clients
            .iter()
            .any(|(a, _)| a.starts_with("10.99.0.") && a != "10.99.0.254"),
        "{clients:?}"
    );
    eprintln!(
        "scenario 2 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn an_open_mpi_job_is_relaunched_without_a_node_that_died_mid_run() {
    let started = Instant::now();
    let c = Cluster::up_with(5, "scenario9", Mpi::OpenMpi);
    let killer = kill_node_after_checkpoint(&c, 3, 4);
    let mut cmd = c.bounded("salloc");
    cmd.args(["--no-kill", "-N5"])
        .arg(c.scr_run_bin())
        .args(["mpirun.openmpi", "-np", "4", "--map-by", "node"])
        .arg(&c.app)
        .args(["200000", "10"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("SCR_FLUSH", "0")
        .env("SCR_COPY_TYPE", "XOR")
        .env("SCR_RUNS", "3")
        .env("SCR_MIN_NODES", "4")
        .env("TEST_API_SLEEP_MS", "400")
        .env("TEST_API_TIMES", "1");
    let (out, t) = run(cmd);
    killer.join().unwrap();
    assert!(out.status.success(), "{t}");
    assert!(t.contains("attempt 1: launching on 5 node(s)"), "{t}");
    assert!(t.contains("node3 is down"), "{t}");
    assert!(
        t.contains("attempt 2: launching on 4 node(s), excluding node3"),
        "{t}"
    );
    restarted_from_cache(&c, &t);
    eprintln!(
        "scenario 9 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_node_dying_in_the_last_run_is_rebuilt_by_the_drain_through_srun() {
    let started = Instant::now();
    let c = Cluster::up(4, "scenario3");
    let killer = kill_node_after_checkpoint(&c, 3, 3);
    // a site where ssh to compute nodes is forbidden: the node tests and the drain reach
    // the nodes through srun job steps (ssh would fail: pdsh appends a proxy that refuses)
    let (_, t) = run(c.scr_run(
        4,
        4,
        &["200000", "30"],
        &[
            ("SCR_FLUSH", "0"),
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_RUNS", "1"),
            ("TEST_API_SLEEP_MS", "400"),
            ("TEST_API_TIMES", "1"),
            ("PDSH_RCMD_TYPE", "srun"),
            ("PDSH_SSH_ARGS_APPEND", "-o ProxyCommand=false"),
        ],
    ));
    killer.join().unwrap();
    assert!(t.contains("1 run(s) exhausted"), "{t}");
    for node in ["node1", "node2", "node4"] {
        assert!(t.contains(&format!("scr_postrun: {node}: copied ")), "{t}");
    }
    assert!(
        t.contains("rebuilt from parity"),
        "the drain rebuilt node3's rank: {t}"
    );
    let drained = t
        .lines()
        .find_map(|l| {
            l.split("dataset ")
                .nth(1)
                .filter(|r| r.contains("drained and current"))
        })
        .unwrap_or_else(|| panic!("nothing drained: {t}"))
        .to_string();
    // the newest checkpoint the application saw complete (its own words, not SCR's index)
    // is the one drained, and the one the next job restarts from
    let newest = newest_completed(&t);
    assert!(
        drained.contains(&format!("(ckpt.{newest})")),
        "drained {drained}, newest ckpt.{newest}: {t}"
    );
    // a new job (node3 revived, its cache gone) restarts from the prefix
    c.control(&["revive", "3"]);
    std::thread::sleep(Duration::from_secs(2));
    let (out, t) = run(c.scr_run(4, 4, &["200000", "1"], &[("SCR_COPY_TYPE", "XOR")]));
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(&format!(
            "restarted from ckpt.{newest} (timestep {newest}), data verified"
        )),
        "{t}"
    );
    eprintln!(
        "scenario 3 wall time: {:.1} s (drained {drained})",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn scr_halt_stops_the_job_after_its_next_checkpoint_without_relaunch() {
    let started = Instant::now();
    let c = Cluster::up(4, "scenario4");
    let flush = scr::layout::flush_file(&c.prefix());
    let mut halt = c.cmd(&c.scr());
    halt.arg("halt").arg(c.prefix());
    let halter = std::thread::spawn(move || {
        use scr::HashView;
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if scr::flush::FlushFile::read(&flush)
                .ok()
                .and_then(|f| f.latest())
                .is_some_and(|l| l >= 2)
            {
                return halt.output().unwrap();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the application never reached checkpoint 2");
    });
    let (out, t) = run(c.scr_run(
        4,
        4,
        &["200000", "30"],
        &[
            ("SCR_RUNS", "3"),
            ("SCR_FLUSH", "0"),
            ("TEST_API_SLEEP_MS", "300"),
            ("TEST_API_TIMES", "1"),
            // test_api asks no SCR_Should_exit here: SCR ends it, as in v2.0
            ("SCR_HALT_EXIT", "1"),
        ],
    ));
    let halted = halter.join().unwrap();
    assert!(halted.status.success(), "{}", text(&halted));
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("Halt condition detected (Reason: JOB_HALTED.)"),
        "{t}"
    );
    assert!(!t.contains("attempt 2"), "no relaunch: {t}");
    assert!(!t.contains("test_api: done"), "stopped early: {t}");
    // the halt flushed the checkpoint it stopped after, and it is current: the newest the
    // application saw complete, or the one after it when the halt took the job inside that
    // checkpoint's Complete (before the application could say so); every rank's file holds
    // that timestep's bytes
    use scr::HashView;
    let newest = newest_completed(&t);
    let index = scr::index::IndexFile::read(&scr::layout::index_file(&c.prefix())).unwrap();
    let current = index.current().expect("a current checkpoint").to_string();
    let step: u32 = current.trim_start_matches("ckpt.").parse().unwrap();
    assert!(
        (2..30).contains(&step) && (step == newest || step == newest + 1),
        "current {current}, the application's newest ckpt.{newest}: {t}"
    );
    for r in 0..4 {
        check_file(
            &c.prefix().join(format!("{current}/rank_{r}.ckpt")),
            r,
            step as i64,
            200000,
        );
    }
    eprintln!(
        "scenario 4 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// What SCR v3.1's user guide promises, under a real allocation: the drain never makes an
/// older checkpoint current (manage.rst), SCR_HALT_SECONDS halts a job near the
/// allocation's end (halt.rst), and a cached checkpoint is restarted only by a job with
/// its prefix (two programs in one allocation share its job id).
#[test]
fn the_drain_halt_seconds_and_job_identity_hold_on_slurm() {
    use scr::HashView;
    let started = Instant::now();
    let c = Cluster::up(4, "scenario-guide");
    // 1. two checkpoints fit in cache; SCR_Finalize flushes ckpt.3, ckpt.2 stays cached
    let (out, t) = run(c.scr_run(
        4,
        4,
        &["100000", "3"],
        &[("SCR_CACHE_SIZE", "2"), ("SCR_FLUSH", "10")],
    ));
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("dataset 2 (ckpt.2) is older than dataset 3 (ckpt.3)")
            && !t.contains("draining dataset 2"),
        "{t}"
    );
    let index = scr::index::IndexFile::read(&scr::layout::index_file(&c.prefix())).unwrap();
    assert_eq!(index.current(), Some("ckpt.3"), "{t}");
    assert_eq!(
        std::fs::read_link(c.prefix().join("scr.current")).unwrap(),
        Path::new("ckpt.3")
    );

    // 2. an allocation of two minutes and SCR_HALT_SECONDS=110: scr-run takes the end time
    // from SLURM and the library halts once 110 s or less are left, long before the 60
    // one-second steps are done; no relaunch
    let cmd = c.scr_run_in(
        &["-N4", "-t", "2"],
        4,
        &["1000", "60"],
        &[
            ("SCR_HALT_SECONDS", "110"),
            ("TEST_API_SLEEP_MS", "1000"),
            ("SCR_RUNS", "2"),
            ("SCR_HALT_EXIT", "1"),
        ],
    );
    let (out, t) = run(cmd);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Job exiting: Remaining time"), "{t}");
    assert!(
        t.contains("Halt condition detected (Reason: TIME_LIMIT.)"),
        "{t}"
    );
    assert!(
        !t.contains("test_api: done") && !t.contains("attempt 2"),
        "{t}"
    );
    scr::io::remove_if_present(&scr::layout::halt_file(&c.prefix())).unwrap();

    // 3. two programs in one allocation, with different prefixes: the second must not load
    // the first's cached checkpoint
    let (first, other) = (c.dir.join("first"), c.dir.join("other"));
    for d in [&first, &other] {
        std::fs::create_dir_all(d).unwrap();
    }
    let script = format!(
        "cd {first} && SCR_FLUSH=0 SCR_PREFIX={first} srun -N4 -n4 {app} 100000 2 && \
         cd {other} && SCR_PREFIX={other} SCR_RUNS=1 {scr_run} srun -N4 -n4 {app} 100000 2",
        first = first.display(),
        other = other.display(),
        app = c.app.display(),
        scr_run = c.scr_run_bin().display(),
    );
    let mut cmd = c.bounded("salloc");
    cmd.args(["--no-kill", "-N4", "bash", "-c", &script]);
    let (_, t) = run(cmd);
    assert!(!t.contains("restarted from"), "{t}");
    assert!(
        t.contains("holds checkpoints of another program, whose prefix is")
            && t.contains(&first.display().to_string()),
        "{t}"
    );
    assert!(!other.join("ckpt.1").exists(), "{t}");
    eprintln!(
        "user guide scenario wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Nodes `kill` die after checkpoint 3 of a run on 4 of `alloc` nodes, flushing every
/// second checkpoint; returns what scr-run printed and the checkpoint the relaunch restarted
/// from.
fn lose_nodes_mid_run(c: &Cluster, scheme: &str, alloc: u32, kill: &[u32]) -> (String, String) {
    let killer = kill_nodes_after_checkpoint(c, kill, 3);
    let (out, t) = run(c.scr_run(
        alloc,
        4,
        &["200000", "8"],
        &[
            ("SCR_FLUSH", "2"),
            ("SCR_COPY_TYPE", scheme),
            ("SCR_SET_FAILURES", "2"),
            ("SCR_RUNS", "3"),
            ("SCR_MIN_NODES", "4"),
            ("TEST_API_SLEEP_MS", "400"),
        ],
    ));
    killer.join().unwrap();
    assert!(out.status.success(), "{t}");
    for n in kill {
        assert!(t.contains(&format!("node{n} is down")), "{t}");
    }
    let restarted = t
        .lines()
        .find_map(|l| l.strip_prefix("test_api: restarted from "))
        .unwrap_or_else(|| panic!("no restart: {t}"));
    assert!(restarted.contains("data verified"), "{t}");
    let name = restarted.split_whitespace().next().unwrap().to_string();
    (t, name)
}

#[test]
fn two_lost_nodes_of_one_xor_set_fall_back_to_the_last_flushed_checkpoint() {
    let started = Instant::now();
    let c = Cluster::up(6, "scenario5");
    let (t, name) = lose_nodes_mid_run(&c, "XOR", 6, &[2, 3]);
    assert!(t.contains("XOR rebuilds at most 1"), "{t}");
    // the newest flushed one (ckpt.2; ckpt.3 existed only in cache) came from the prefix
    assert_eq!(name, "ckpt.2", "{t}");
    assert_eq!(c.index_entry("ckpt.2").fetched.len(), 1);
    use scr::HashView;
    let index = scr::index::IndexFile::read(&scr::layout::index_file(&c.prefix())).unwrap();
    assert!(
        index
            .entries()
            .iter()
            .all(|e| e.name != "ckpt.3" || !e.complete),
        "nothing is reported complete that is not"
    );
    eprintln!(
        "scenario 5 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn partner_and_reed_solomon_survive_node_loss_in_cache() {
    let started = Instant::now();
    for (scheme, kill) in [("PARTNER", vec![3]), ("RS", vec![2, 3])] {
        let c = Cluster::up(6, &format!("scenario7-{scheme}"));
        let (t, name) = lose_nodes_mid_run(&c, scheme, 6, &kill);
        // ckpt.3 was never flushed: only the cache could give it back
        assert_eq!(name, "ckpt.3", "{scheme}: {t}");
        assert!(!c.prefix().join("ckpt.3").exists(), "{scheme}");
        drop(c);
    }
    eprintln!(
        "scenario 7 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_batch_script_written_for_scr_runs_unchanged_under_sbatch() {
    let started = Instant::now();
    let c = Cluster::up(4, "scenario8");
    // SCR's command names, as a site installs them
    let bin = c.dir.join("scr-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let out = Command::new(c.scr())
        .arg("install-links")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let script = c.dir.join("job.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/bash
#SBATCH -N 4
#SBATCH --no-kill
# a batch script as SCR's users write them
export SCR_FLUSH=2
export SCR_COPY_TYPE=XOR
export SCR_RUNS=2
scr_srun -N4 -n4 {app} 200000 4
rc=$?
scr_postrun -p $SCR_PREFIX
scr_index --list --prefix $SCR_PREFIX
scr_halt --list $SCR_PREFIX
exit $rc
"#,
            app = c.app.display()
        ),
    )
    .unwrap();
    let output = c.dir.join("job.out");
    let mut cmd = c.bounded("sbatch");
    cmd.args(["--wait", "-o"]).arg(&output).arg(&script).env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    let (out, t) = run(cmd);
    let log = std::fs::read_to_string(&output).unwrap_or_default();
    assert!(out.status.success(), "{t}\n{log}");
    assert!(log.contains("test_api: done"), "{log}");
    assert!(log.contains("ckpt.4"), "scr_index lists it: {log}");
    assert!(log.contains("Halt file settings for"), "{log}");
    assert!(c.index_entry("ckpt.4").is_current, "{log}");
    eprintln!(
        "scenario 8 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Every SCR hash file under the prefix's `.scr` reads back (nothing torn).
fn no_torn_state_files(prefix: &Path) {
    for f in walk(&prefix.join(".scr")) {
        if f.extension().is_some_and(|e| e == "scr") {
            scr::io::read_hash_file(&f).unwrap_or_else(|e| panic!("torn: {}: {e}", f.display()));
        }
    }
}

#[test]
fn kill_9_at_random_moments_never_loses_the_newest_complete_checkpoint() {
    let started = Instant::now();
    let c = Cluster::up(4, "scenario6");
    let scr = c.scr();
    let harness = harness();
    // seeded moments: odd seeds kill the application on a node, even seeds kill scr-run
    // itself and then the drain that follows, each after a seeded delay
    for seed in 1u64..=4 {
        let delay_ms = 300 + (seed * 7919) % 3000; // after the first checkpoint
        let kill_run = if seed % 2 == 1 {
            format!("{} kill-app {} test_api", harness.display(), 1 + seed % 4)
        } else {
            "kill -9 $run".to_string()
        };
        let _ = std::fs::remove_dir_all(c.prefix());
        std::fs::create_dir_all(c.prefix()).unwrap();
        // the whole story in one allocation: a run (flush every 3rd, no finalize), a kill -9
        // at the seeded moment, the drain killed -9 after a seeded moment, the drain again
        let script = format!(
            r#"
{scr_run} srun -N4 -n4 {app} 200000 12 &
run=$!
while [ ! -e $SCR_PREFIX/.scr/flush.scr ]; do sleep 0.1; done
sleep {secs}; {kill_run}; wait $run
while pgrep -x srun >/dev/null; do sleep 0.2; done
{scr} postrun -p $SCR_PREFIX & drain=$!
sleep 0.{short}; kill -9 $drain; wait $drain
{scr} postrun -p $SCR_PREFIX
"#,
            scr_run = c.scr_run_bin().display(),
            app = c.app.display(),
            scr = scr.display(),
            short = delay_ms % 10,
            secs = delay_ms as f64 / 1000.0,
        );
        let mut cmd = c.bounded("salloc");
        cmd.args(["--no-kill", "-N4", "bash", "-c", &script])
            .env("SCR_FLUSH", "3")
            .env("SCR_COPY_TYPE", "XOR")
            .env("SCR_RUNS", "1")
            .env("TEST_API_NO_FINALIZE", "1")
            .env("TEST_API_SLEEP_MS", "300")
            .env("TEST_API_TIMES", "1");
        let (_, t) = run(cmd);
        assert!(
            c.prefix().join(".scr").is_dir(),
            "seed {seed}: the job never started\n{t}"
        );
        no_torn_state_files(&c.prefix());
        // the newest checkpoint the application saw complete (or one it completed as the
        // kill came, before it could say so) restarts and verifies
        let newest = newest_completed(&t);
        let (out, t2) = run(c.scr_run(4, 4, &["200000", "1"], &[("SCR_COPY_TYPE", "XOR")]));
        assert!(out.status.success(), "seed {seed}: {t}\n{t2}");
        let restarted: u32 = t2
            .lines()
            .find_map(|l| {
                l.strip_prefix("test_api: restarted from ckpt.")?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("seed {seed}: no restart\n{t}\n{t2}"));
        assert!(
            restarted >= newest && t2.contains("data verified"),
            "seed {seed}: restarted from ckpt.{restarted}, the application completed ckpt.{newest}\n{t}\n{t2}"
        );
    }
    eprintln!(
        "scenario 6 wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
