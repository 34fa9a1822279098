//! LLNL's own test plan for SCR, automated: the scenarios of `testing/TEST` and
//! `testing/TESTING.sh` at SCR v3.1.0, in their order, on the 4-node SLURM cluster, in one
//! allocation (one job id, so each run finds the caches the previous left). LLNL's script is
//! the oracle: each step checks what it checks — which checkpoints each run completed, the
//! library's `SCR_DEBUG=1` lines ("Rebuilt dataset N", "Rebuilding … XOR" on exactly one
//! rank, "Failed to rebuild dataset N", "Attempting fetch: NAME", the CRC32 message, "Flush
//! succeeded"), the commands' output (`scr_halt`'s settings lines, `scr_list_down_nodes`'
//! reasons, `scr_env`, `scr_list_dir`, `scr_postrun`, `scr_index --list`, `scr_srun` naming
//! `scr_prerun` and `scr_postrun`) — and more than it checks: which checkpoint each run
//! restarted from, from the application's own words (`test_api: restarted from ckpt.N
//! (timestep N), data verified`, our examples/c/test_api.c, which verifies every byte it
//! reads), and the bytes of the last checkpoint on the prefix.
//!
//! Written from the plan's description, not from LLNL's code. Where our numbers differ from
//! v3.1's on purpose, the step says so: dataset ids are never reused (README, `SCR_Current`),
//! so after a failed restart a checkpoint's dataset id is no longer its timestep and the
//! steps find ids by name; and the cache keeps a file's directory below `scr.dataset.N`
//! (`scr.dataset.12/ckpt.12/rank_0.ckpt`, where v3.1 keeps `scr.dataset.12/rank_0.ckpt`),
//! so the steps that lose files find them where they are. The whole plan runs with `USER`
//! unset: the cache directory `scr_list_dir` names must be the one the library wrote.

use super::*;
use std::collections::BTreeSet;

/// Bytes per rank and checkpoints per run (LLNL's test_api writes 6 a run: one before it
/// times the other 5).
const SIZE: &str = "1048576";
const CKPTS: &str = "6";

/// One run of the plan: the scenario, where the application restarted from (None: from the
/// beginning), and the checkpoints it completed.
struct Row {
    scenario: &'static str,
    restarted: Option<u32>,
    completed: Vec<u32>,
}

struct Plan<'a> {
    c: &'a Cluster,
    job: String,
    /// SCR's command names (scr_halt, scr_index, …) as links to `scr`.
    bin: PathBuf,
    /// What `scr_list_dir cache` printed (a path on every node).
    cache_dir: PathBuf,
    /// The SCR_* settings in effect, changed as LLNL's script changes them.
    env: Vec<(&'static str, String)>,
    rows: Vec<Row>,
}

impl<'a> Plan<'a> {
    /// A command inside the allocation, with the plan's settings and no USER.
    fn cmd(&self, program: &Path) -> Command {
        let mut cmd = self.c.cmd(program);
        cmd.env("SLURM_JOB_ID", &self.job)
            .env("SLURM_JOBID", &self.job)
            .env("SLURM_NODELIST", "node[1-4]")
            .env("SLURM_JOB_NODELIST", "node[1-4]")
            .env_remove("USER")
            .env_remove("SCR_USER_NAME")
            .env_remove("SCR_EXCLUDE_NODES");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn set(&mut self, key: &'static str, value: &str) {
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.to_string()));
    }

    fn unset(&mut self, key: &str) {
        self.env.retain(|(k, _)| *k != key);
    }

    /// An SCR command by its SCR name; returns its exit code and output.
    fn scr(&self, name: &str, args: &[&str]) -> (i32, String) {
        let mut cmd = self.cmd(&self.bin.join(name));
        cmd.args(args);
        let (out, t) = run(cmd);
        (out.status.code().unwrap_or(-1), t)
    }

    /// `srun -n4 -N4 test_api`, as LLNL's script runs each step; asserts it succeeded and
    /// that a restart verified its data, and records the row.
    fn test_api(&mut self, scenario: &'static str) -> String {
        let mut cmd = self.cmd(Path::new("timeout"));
        cmd.args(["120", "srun", "-n4", "-N4"])
            .arg(&self.c.app)
            .args([SIZE, CKPTS])
            .env("TEST_API_TIMES", "1");
        let (out, t) = run(cmd);
        assert!(out.status.success(), "{scenario}: {t}");
        self.record(scenario, &t);
        t
    }

    fn record(&mut self, scenario: &'static str, t: &str) {
        let restarted = t.lines().find_map(|l| {
            let rest = l.strip_prefix("test_api: restarted from ckpt.")?;
            let (n, tail) = rest.split_once(' ')?;
            assert!(tail.ends_with("data verified"), "{scenario}: {l}\n{t}");
            n.parse().ok()
        });
        assert!(
            restarted.is_some()
                || t.contains("test_api: no checkpoint, starting from the beginning"),
            "{scenario}: {t}"
        );
        let completed = completed_checkpoints(t.lines()).collect();
        self.rows.push(Row {
            scenario,
            restarted,
            completed,
        });
    }

    /// Asserts the last run restarted from `from` (None: the beginning) and completed
    /// checkpoints `first..=last`.
    fn expect(&self, from: Option<u32>, first: u32, last: u32, t: &str) {
        let row = self.rows.last().unwrap();
        assert_eq!(row.restarted, from, "{}: {t}", row.scenario);
        assert_eq!(
            row.completed,
            (first..=last).collect::<Vec<_>>(),
            "{}: {t}",
            row.scenario
        );
    }

    /// Node `i`'s cache directory, seen from this machine (each node's /tmp is a directory
    /// of the cluster's state).
    fn node_cache(&self, i: u32) -> PathBuf {
        Path::new(STATE)
            .join(format!("nodes/node{i}"))
            .join(self.cache_dir.strip_prefix("/").unwrap())
    }

    /// The dataset id and cache directory of checkpoint `name` on node `i`.
    fn cached(&self, i: u32, name: &str) -> (u64, PathBuf) {
        std::fs::read_dir(self.node_cache(i))
            .unwrap()
            .filter_map(|e| {
                let p = e.ok()?.path();
                let id = p
                    .file_name()?
                    .to_str()?
                    .strip_prefix("scr.dataset.")?
                    .parse()
                    .ok()?;
                p.join(name).is_dir().then_some((id, p))
            })
            .next()
            .unwrap_or_else(|| panic!("{name} is not in node{i}'s cache"))
    }

    /// Everything the job keeps on nodes `nodes` (cache and control: both under /tmp).
    fn lose_caches(&self, nodes: &[u32]) {
        for &i in nodes {
            let _ = std::fs::remove_dir_all(self.node_cache(i));
        }
    }

    fn halt_remove(&self) {
        let (rc, t) = self.scr("scr_halt", &["-r", &self.c.prefix().display().to_string()]);
        assert_eq!(rc, 0, "{t}");
    }

    /// `scr_index --list` as (name, valid, current) rows.
    fn index_list(&self) -> Vec<(String, bool, bool)> {
        let (rc, t) = self.scr("scr_index", &["--list"]);
        assert_eq!(rc, 0, "{t}");
        t.lines()
            .skip_while(|l| !l.starts_with("DSET VALID FLUSHED"))
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                (
                    words.last().unwrap().to_string(),
                    words.get(1) == Some(&"YES"),
                    words.contains(&"*"),
                )
            })
            .collect()
    }

    /// Asserts the index lists exactly `rows`: (name, valid), the first current.
    fn expect_index(&self, rows: &[(&str, bool)]) {
        let listed = self.index_list();
        let want: Vec<(String, bool, bool)> = rows
            .iter()
            .enumerate()
            .map(|(i, (n, v))| (n.to_string(), *v, i == 0))
            .collect();
        let mut sorted = listed.clone();
        sorted.sort_by_key(|(_, _, cur)| !cur);
        assert_eq!(sorted.len(), want.len(), "{listed:?}");
        assert_eq!(sorted[0], want[0], "{listed:?}");
        for w in &want[1..] {
            assert!(listed.contains(w), "{w:?} in {listed:?}");
        }
    }
}

/// The numbers that follow `phrase` in `t` (`Rebuilt dataset 6` → 6).
fn numbers_after(t: &str, phrase: &str) -> BTreeSet<u64> {
    t.match_indices(phrase)
        .filter_map(|(i, _)| {
            let rest = &t[i + phrase.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// Lines of `t` holding every word of `words`, in that order (a regex `w1.*w2.*…`).
fn lines_with<'t>(t: &'t str, words: &[&str]) -> Vec<&'t str> {
    t.lines()
        .filter(|l| {
            let mut at = 0;
            words.iter().all(|w| match l[at..].find(w) {
                Some(i) => {
                    at += i + w.len();
                    true
                }
                None => false,
            })
        })
        .collect()
}

#[test]
fn llnl_test_plan_run_continue_lose_caches_commands_halt_drain_fetch_corrupt_flush_and_scr_srun() {
    let started = Instant::now();
    let c = Cluster::up(4, "llnl-plan");
    let bin = c.dir.join("scr-bin");
    let out = Command::new(c.scr())
        .arg("install-links")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // one allocation for the whole plan, as LLNL's script runs inside `salloc -N4`
    let mut alloc = c.cmd(Path::new("timeout"));
    alloc.args([
        "60",
        "salloc",
        "--no-shell",
        "--no-kill",
        "-N4",
        "-J",
        "llnl-plan",
    ]);
    let (out, t) = run(alloc);
    assert!(out.status.success(), "{t}");
    let job = t
        .split("Granted job allocation ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{t}"))
        .to_string();
    let mut p = Plan {
        c: &c,
        job,
        bin,
        cache_dir: PathBuf::new(),
        env: vec![
            ("SCR_FETCH", "0".into()),
            ("SCR_FLUSH", "0".into()),
            ("SCR_DEBUG", "1".into()),
            ("SCR_LOG_ENABLE", "0".into()),
            ("SCR_JOB_NAME", "testing_job".into()),
            ("SCR_CACHE_SIZE", "2".into()),
        ],
        rows: Vec::new(),
    };
    let prefix = c.prefix().display().to_string();

    // the job's identity, as the script reads it first
    let (rc, t) = p.scr("scr_list_dir", &["cache"]);
    assert_eq!(rc, 0, "{t}");
    p.cache_dir = PathBuf::from(t.trim());
    let (_, t) = p.scr("scr_env", &["--jobid"]);
    assert_eq!(t.trim(), p.job);
    let (_, t) = p.scr("scr_env", &["--nodes"]);
    assert_eq!(t.trim(), "node[1-4]");

    step_01_a_run_writes_checkpoints_1_to_6(&mut p);
    step_02_the_next_run_rebuilds_5_and_6_in_cache_and_continues(&mut p);
    step_03_rank_0s_file_of_the_newest_lost_is_rebuilt_from_xor(&mut p);
    step_04_the_newest_lost_on_two_nodes_fails_and_the_older_one_is_rebuilt(&mut p);
    step_05_every_cache_lost_starts_over(&mut p);
    // clear the cache and the prefix's job files
    p.lose_caches(&[1, 2, 3, 4]);
    for f in ["flush.scr", "halt.scr", "nodes.scr"] {
        let _ = std::fs::remove_file(c.prefix().join(".scr").join(f));
    }
    step_06_scr_list_dir_names_where_the_library_caches(&mut p);
    step_07_scr_list_down_nodes_down_reason_and_exclude_nodes(&mut p);
    step_08_scr_halt_sets_and_unsets_each_condition(&p, &prefix);
    step_09_scr_env_and_scr_prerun(&p);
    step_10_scr_postrun_of_an_empty_cache_and_after_a_run(&mut p);
    step_11_scr_postrun_rebuilds_a_node_scr_exclude_nodes_fakes_down(&mut p);
    step_12_every_cache_lost_scr_fetch_1_fetches_from_the_prefix(&mut p);
    step_13_two_nodes_caches_lost_distribute_fails_and_fetch_works(&mut p);
    step_14_a_corrupted_file_on_the_prefix_fails_its_fetch_the_older_one_is_fetched(&mut p);
    step_15_scr_flush_and_scr_postrun_sees_it_flushed(&mut p);
    step_16_scr_srun_runs_prerun_the_job_and_postrun(&mut p);

    let _ = Command::new("scancel")
        .arg(&p.job)
        .env("SLURM_CONF", Path::new(STATE).join("slurm.conf"))
        .output();
    let mut table = String::from(
        "LLNL testing/TEST (v3.1.0) plan on the SLURM cluster:\n\
         | scenario | restarted from | checkpoints completed |\n|---|---|---|\n",
    );
    for r in &p.rows {
        let from = r
            .restarted
            .map_or("the beginning".to_string(), |n| format!("ckpt.{n}"));
        let done = match (r.completed.first(), r.completed.last()) {
            (Some(a), Some(b)) => format!("{a}-{b}"),
            _ => "none".into(),
        };
        table += &format!("| {} | {from} | {done} |\n", r.scenario);
    }
    eprintln!(
        "{table}LLNL plan wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn step_01_a_run_writes_checkpoints_1_to_6(p: &mut Plan) {
    // the ranks run without USER too (SLURM sets none)
    let mut cmd = p.cmd(Path::new("srun"));
    cmd.args(["-n1", "-N1", "sh", "-c", "echo \"USER=${USER-unset}\""]);
    let (_, t) = run(cmd);
    assert_eq!(t.trim(), "USER=unset");
    let t = p.test_api("first run");
    p.expect(None, 1, 6, &t);
    // USER is unset: the directory scr_list_dir named is where the library cached them
    for i in 1..=4 {
        p.cached(i, "ckpt.6");
    }
}

fn step_02_the_next_run_rebuilds_5_and_6_in_cache_and_continues(p: &mut Plan) {
    let (rc, t) = p.scr("scr_halt", &["-r", &p.c.prefix().display().to_string()]);
    assert!(rc == 0 && t.contains("Updating halt file"), "{t}");
    let t = p.test_api("continue (restart from cache)");
    assert_eq!(numbers_after(&t, "Rebuilt dataset "), [5, 6].into(), "{t}");
    p.expect(Some(6), 7, 12, &t);
}

fn step_03_rank_0s_file_of_the_newest_lost_is_rebuilt_from_xor(p: &mut Plan) {
    // node1 runs rank 0 (srun's block distribution)
    let (_, dir) = p.cached(1, "ckpt.12");
    let file = dir.join("ckpt.12/rank_0.ckpt");
    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    p.halt_remove();
    let t = p.test_api("rank 0's file of ckpt.12 lost");
    assert_eq!(
        numbers_after(&t, "Rebuilt dataset "),
        [11, 12].into(),
        "{t}"
    );
    let xor = lines_with(&t, &["Rebuilding", "XOR"]);
    assert_eq!(xor.len(), 1, "exactly one rank rebuilds from XOR: {t}");
    p.expect(Some(12), 13, 18, &t);
}

fn step_04_the_newest_lost_on_two_nodes_fails_and_the_older_one_is_rebuilt(p: &mut Plan) {
    let (id18, _) = p.cached(3, "ckpt.18");
    let (id17, _) = p.cached(3, "ckpt.17");
    for i in [1, 2] {
        let (_, dir) = p.cached(i, "ckpt.18");
        std::fs::remove_dir_all(dir).unwrap();
    }
    p.halt_remove();
    let t = p.test_api("ckpt.18 lost on two nodes");
    assert_eq!(
        numbers_after(&t, "Failed to rebuild dataset "),
        [id18].into(),
        "{t}"
    );
    assert_eq!(numbers_after(&t, "Rebuilt dataset "), [id17].into(), "{t}");
    p.expect(Some(17), 18, 23, &t);
}

fn step_05_every_cache_lost_starts_over(p: &mut Plan) {
    p.lose_caches(&[1, 2, 3, 4]);
    p.halt_remove();
    let t = p.test_api("every cache lost");
    p.expect(None, 1, 6, &t);
}

fn step_06_scr_list_dir_names_where_the_library_caches(p: &mut Plan) {
    for which in ["control", "cache"] {
        let (rc, dir) = p.scr("scr_list_dir", &[which]);
        assert_eq!(rc, 0, "{dir}");
        let (rc, base) = p.scr("scr_list_dir", &["--base", which]);
        assert_eq!(rc, 0, "{base}");
        assert!(dir.trim().starts_with(base.trim()), "{which}: {dir} {base}");
    }
}

fn step_07_scr_list_down_nodes_down_reason_and_exclude_nodes(p: &mut Plan) {
    let (rc, t) = p.scr("scr_list_down_nodes", &["--reason"]);
    assert_eq!((rc, t.trim()), (0, ""), "no node is down");
    let (_, t) = p.scr("scr_list_down_nodes", &["--down", "node1"]);
    assert_eq!(t.trim(), "node1");
    let (_, t) = p.scr("scr_list_down_nodes", &["--reason", "--down", "node1"]);
    assert_eq!(t.trim(), "node1: Specified on command line");
    p.set("SCR_EXCLUDE_NODES", "node1");
    let (_, t) = p.scr("scr_list_down_nodes", &[]);
    assert_eq!(t.trim(), "node1");
    let (_, t) = p.scr("scr_list_down_nodes", &["--reason"]);
    assert_eq!(t.trim(), "node1: User excluded via SCR_EXCLUDE_NODES");
    p.unset("SCR_EXCLUDE_NODES");
}

fn step_08_scr_halt_sets_and_unsets_each_condition(p: &Plan, prefix: &str) {
    let line = |t: &str, key: &str| {
        t.lines()
            .find(|l| l.trim_start().starts_with(key))
            .map(str::to_string)
    };
    let mut kept: Vec<(&str, String)> = Vec::new();
    // (arguments, words the output must hold, words it must not, values it keeps)
    let steps: [(&[&str], &[&str], &[&str]); 12] = [
        (&["--list"], &["None"], &[]),
        (
            &["--before", "3pm today"],
            &["Setting ExitBefore", "ExitBefore:"],
            &[],
        ),
        (
            &["--after", "4pm today"],
            &["Setting ExitAfter", "ExitBefore:", "ExitAfter:"],
            &[],
        ),
        (
            &["--seconds", "1200"],
            &[
                "Setting HaltSeconds",
                "ExitBefore:",
                "ExitAfter:",
                "HaltSeconds:",
            ],
            &[],
        ),
        (
            &["--unset-before"],
            &["Unsetting ExitBefore", "ExitAfter:", "HaltSeconds:"],
            &["ExitBefore:"],
        ),
        (
            &["--unset-after"],
            &["Unsetting ExitAfter", "HaltSeconds:"],
            &["ExitAfter:"],
        ),
        (
            &["--unset-seconds"],
            &["Unsetting HaltSeconds", "None"],
            &[],
        ),
        (&[], &["Setting ExitReason", "ExitReason:"], &[]),
        (
            &["--checkpoints", "5"],
            &["Setting CheckpointsLeft", "CheckpointsLeft:", "ExitReason:"],
            &[],
        ),
        (
            &["--unset-checkpoints"],
            &["Unsetting CheckpointsLeft", "ExitReason:"],
            &["CheckpointsLeft:"],
        ),
        (&["--unset-reason"], &["Unsetting ExitReason", "None"], &[]),
        (&["--remove"], &[], &[]),
    ];
    for (args, has, lacks) in steps {
        let mut all = args.to_vec();
        all.push(prefix);
        let (rc, t) = p.scr("scr_halt", &all);
        assert_eq!(rc, 0, "{args:?}: {t}");
        for w in has {
            assert!(t.contains(w), "{args:?}: {w}: {t}");
        }
        for w in lacks {
            assert!(line(&t, w).is_none(), "{args:?}: {w}: {t}");
        }
        // a value set earlier is listed unchanged until it is unset
        kept.retain(|(k, _)| line(&t, k).is_some());
        for (k, v) in &kept {
            assert_eq!(line(&t, k).as_ref(), Some(v), "{args:?}: {t}");
        }
        for k in ["ExitBefore:", "ExitAfter:", "HaltSeconds:", "ExitReason:"] {
            if let Some(l) = line(&t, k).filter(|_| !kept.iter().any(|(x, _)| *x == k)) {
                kept.push((k, l));
            }
        }
    }
    assert!(!scr::layout::halt_file(&p.c.prefix()).exists());
}

fn step_09_scr_env_and_scr_prerun(p: &Plan) {
    let account = Command::new("id").arg("-un").output().unwrap();
    let (_, t) = p.scr("scr_env", &["--user"]);
    assert_eq!(t.trim(), String::from_utf8_lossy(&account.stdout).trim());
    let (_, t) = p.scr("scr_env", &["--jobid"]);
    assert_eq!(t.trim(), p.job);
    let (_, t) = p.scr("scr_env", &["--nodes"]);
    assert_eq!(t.trim(), "node[1-4]");
    let (_, t) = p.scr("scr_env", &["--down"]);
    assert_eq!(t.trim(), "");
    let (rc, t) = p.scr("scr_prerun", &[]);
    assert_eq!(rc, 0, "{t}");
}

fn step_10_scr_postrun_of_an_empty_cache_and_after_a_run(p: &mut Plan) {
    let (rc, t) = p.scr("scr_postrun", &[]);
    assert!(rc == 0 && t.contains("nothing to drain"), "{t}");
    p.lose_caches(&[1, 2, 3, 4]);
    let t = p.test_api("run before scr_postrun");
    p.expect(None, 1, 6, &t);
    let (rc, t) = p.scr("scr_postrun", &[]);
    assert!(rc == 0 && t.contains("(ckpt.6) drained and current"), "{t}");
    p.expect_index(&[("ckpt.6", true)]);
}

fn step_11_scr_postrun_rebuilds_a_node_scr_exclude_nodes_fakes_down(p: &mut Plan) {
    p.set("SCR_EXCLUDE_NODES", "node1");
    p.halt_remove();
    let t = p.test_api("run, node1 excluded for scr_postrun");
    p.expect(Some(6), 7, 12, &t);
    let (rc, t) = p.scr("scr_postrun", &[]);
    assert_eq!(rc, 0, "{t}");
    assert!(t.contains("(node1 down)"), "{t}");
    assert!(
        t.contains("(ckpt.12) drained and current, ranks [0] rebuilt from parity"),
        "{t}"
    );
    p.unset("SCR_EXCLUDE_NODES");
    p.expect_index(&[("ckpt.12", true), ("ckpt.6", true)]);
}

fn step_12_every_cache_lost_scr_fetch_1_fetches_from_the_prefix(p: &mut Plan) {
    p.lose_caches(&[1, 2, 3, 4]);
    p.halt_remove();
    p.set("SCR_FETCH", "1");
    let t = p.test_api("every cache lost, SCR_FETCH=1");
    assert_eq!(
        lines_with(&t, &["Attempting fetch", "ckpt.12"]).len(),
        1,
        "{t}"
    );
    p.expect(Some(12), 13, 18, &t);
    p.expect_index(&[("ckpt.12", true), ("ckpt.6", true)]);
}

fn step_13_two_nodes_caches_lost_distribute_fails_and_fetch_works(p: &mut Plan) {
    let (id17, _) = p.cached(3, "ckpt.17");
    let (id18, _) = p.cached(3, "ckpt.18");
    p.lose_caches(&[1, 2]);
    p.halt_remove();
    let t = p.test_api("two nodes' caches lost");
    assert_eq!(
        numbers_after(&t, "Failed to rebuild dataset "),
        [id17, id18].into(),
        "{t}"
    );
    assert_eq!(
        lines_with(&t, &["Attempting fetch", "ckpt.12"]).len(),
        1,
        "{t}"
    );
    p.expect(Some(12), 13, 18, &t);
    p.expect_index(&[("ckpt.12", true), ("ckpt.6", true)]);
}

fn step_14_a_corrupted_file_on_the_prefix_fails_its_fetch_the_older_one_is_fetched(p: &mut Plan) {
    p.lose_caches(&[1, 2, 3, 4]);
    // one byte of rank 2's file changed, its size kept (LLNL's script runs sed on it)
    let file = p.c.prefix().join("ckpt.12/rank_2.ckpt");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[4096] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    let id12 = p.c.index_entry("ckpt.12").id.to_string();
    p.halt_remove();
    let t = p.test_api("a file of ckpt.12 corrupted on the prefix");
    assert!(
        !lines_with(&t, &["CRC32", "fetch", "dataset", &id12]).is_empty(),
        "{t}"
    );
    assert_eq!(
        lines_with(&t, &["Attempting fetch", "ckpt.6"]).len(),
        1,
        "{t}"
    );
    p.expect(Some(6), 7, 12, &t);
    p.expect_index(&[("ckpt.6", true), ("ckpt.12", false)]);
}

fn step_15_scr_flush_and_scr_postrun_sees_it_flushed(p: &mut Plan) {
    p.halt_remove();
    p.set("SCR_FLUSH", "10");
    let t = p.test_api("SCR_FLUSH=10");
    assert_eq!(
        lines_with(&t, &["Flush succeeded for dataset", "ckpt.18"]).len(),
        1,
        "{t}"
    );
    p.expect(Some(12), 13, 18, &t);
    let (rc, t) = p.scr("scr_postrun", &[]);
    assert_eq!(rc, 0, "{t}");
    assert!(
        !lines_with(&t, &["ataset", "already", "flushed"]).is_empty(),
        "{t}"
    );
    p.expect_index(&[("ckpt.18", true), ("ckpt.12", false), ("ckpt.6", true)]);
}

fn step_16_scr_srun_runs_prerun_the_job_and_postrun(p: &mut Plan) {
    p.lose_caches(&[1, 2, 3, 4]);
    p.halt_remove();
    for f in ["flush.scr", "halt.scr", "nodes.scr"] {
        let _ = std::fs::remove_file(p.c.prefix().join(".scr").join(f));
    }
    let mut cmd = p.cmd(Path::new("timeout"));
    cmd.args(["180"])
        .arg(p.bin.join("scr_srun"))
        .args(["-n4", "-N4"])
        .arg(&p.c.app)
        .args([SIZE, CKPTS])
        .env("TEST_API_TIMES", "1");
    let (out, t) = run(cmd);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("scr_prerun") && t.contains("scr_postrun"), "{t}");
    assert!(
        lines_with(&t, &["exit"]).iter().all(|l| {
            let rest = &l[l.find("exit").unwrap()..];
            !rest.contains(|ch: char| ('1'..='9').contains(&ch))
        }),
        "{t}"
    );
    p.record("scr_srun", &t);
    p.expect(Some(18), 19, 24, &t);
    p.expect_index(&[
        ("ckpt.24", true),
        ("ckpt.20", true),
        ("ckpt.18", true),
        ("ckpt.12", false),
        ("ckpt.6", true),
    ]);
    for r in 0..4 {
        check_file(
            &p.c.prefix().join(format!("ckpt.24/rank_{r}.ckpt")),
            r,
            24,
            SIZE.parse().unwrap(),
        );
    }
}
