//! Real SCR v2.0.0 as the library under test, to calibrate the [model](crate::model): the
//! same application (built against v2.0.0's `scr.h` and `libscr.so`), the same driver and
//! checks, restricted to what v2.0.0 does.
//!
//! v2.0.0 sees one host as one node; the `LD_PRELOAD` shim `../shared/tools/fakenode.c`
//! (installed as `lib/fakenode.so` beside v2.0.0's library, as `benches/redundancy.sh` uses
//! it) makes rank *r* node `fakenode<r / FAKE_PPN>`, with a cache of its own below
//! `FAKE_NODE_BASE/node<k>` and a control directory of its own (user name `USER_fakenode<k>`).
//! v2.0.0 takes its control base only from its compiled-in system configuration, so control
//! directories lie in `/dev/shm`; each history gets a job id of its own so that histories
//! run side by side never share one.

use crate::history::{History, Scheme, Step};
use crate::model::{Attempt, Avail, Candidate, Model};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The `USER` every run of the peer gets: its control directories are
/// `/dev/shm/<USER>[_fakenode<k>]/scr.<job id>`.
pub const USER: &str = "scrv2hist";

/// Where v2.0.0 keeps control directories (`SCR_CNTL_BASE` as the benches build it).
pub const CNTL_BASE: &str = "/dev/shm";

/// An install of real SCR v2.0.0.
#[derive(Clone, Debug)]
pub struct ScrV2 {
    /// Its prefix: `lib/libscr.so`, `lib/fakenode.so`, `include/scr.h`, `bin/scr_index`.
    pub prefix: PathBuf,
}

impl ScrV2 {
    /// The install at `prefix`, if it holds what the driver needs.
    pub fn at(prefix: &Path) -> Result<ScrV2, String> {
        let prefix = prefix
            .canonicalize()
            .map_err(|e| format!("{}: {e}", prefix.display()))?;
        for f in [
            "lib/libscr.so",
            "lib/fakenode.so",
            "include/scr.h",
            "bin/scr_index",
        ] {
            if !prefix.join(f).exists() {
                return Err(format!(
                    "{} missing: build LLNL/scr v2.0.0 with -DSCR_RESOURCE_MANAGER=NONE \
                     -DSCR_CNTL_BASE={CNTL_BASE} into {}, and \
                     gcc -shared -fPIC -o {}/lib/fakenode.so ../shared/tools/fakenode.c",
                    prefix.join(f).display(),
                    prefix.display(),
                    prefix.display()
                ));
            }
        }
        Ok(ScrV2 { prefix })
    }

    /// A job id no other history of this process, nor of another, uses at the same time.
    pub fn job_id() -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        format!(
            "{}{:05}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The environment of a run: the shim, the emulated nodes' caches below `cache`.
    pub fn run_env(&self, cache: &Path, ranks_per_node: u32) -> Vec<(String, String)> {
        vec![
            (
                "LD_PRELOAD".into(),
                self.prefix.join("lib/fakenode.so").display().to_string(),
            ),
            ("FAKE_PPN".into(), ranks_per_node.to_string()),
            ("FAKE_NODE_BASE".into(), cache.display().to_string()),
            ("USER".into(), USER.into()),
        ]
    }

    /// The directories node `k` (0-based) of job `job_id` keeps: its cache and control.
    pub fn node_dirs(&self, cache: &Path, k: u32, job_id: &str) -> [PathBuf; 2] {
        [
            cache.join(format!("node{k}")),
            Path::new(CNTL_BASE)
                .join(user_of(k))
                .join(format!("scr.{job_id}")),
        ]
    }

    /// Removes the control directories of `job_id` (its caches are in the job directory).
    pub fn clean(&self, job_id: &str, nodes: u32) {
        for k in 0..nodes {
            let dir = Path::new(CNTL_BASE)
                .join(user_of(k))
                .join(format!("scr.{job_id}"));
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// v2.0.0's `scr_index -p PREFIX FLAG=NAME` for our `scr index FLAG NAME` (`--drop` is
    /// its `--remove`, which drops the entry only, as `--drop` does), written to `t` too.
    pub fn index_command(
        &self,
        prefix: &Path,
        flag: &str,
        name: &str,
        t: &mut crate::script::Transcript,
    ) -> std::process::Command {
        let scr_index = self.prefix.join("bin/scr_index");
        let flag = if flag == "--drop" { "--remove" } else { flag };
        t.line(&format!(
            "'{}' -p \"$J/prefix\" {flag}={name}",
            scr_index.display()
        ));
        let mut cmd = std::process::Command::new(scr_index);
        crate::process::scrub(&mut cmd);
        cmd.arg("-p").arg(prefix).arg(format!("{flag}={name}"));
        cmd
    }
}

/// The user name node `k` runs as under the shim.
fn user_of(k: u32) -> String {
    match k {
        0 => USER.to_string(),
        k => format!("{USER}_fakenode{k}"),
    }
}

/// The most nodes a history runs on (4 ranks a node at most, 8 ranks at most).
pub const MOST_NODES: u32 = 8;

/// `history` cut down to what v2.0.0 does: no Reed–Solomon (XOR in its place), no prefix
/// window (SCR_PREFIX_SIZE came with v3), no asynchronous flush (v2.0.0 needs its transfer
/// daemon, started by its SLURM scripts), no reshape and no file-list API (ours), no halt
/// file through `scr halt` and no `scr postrun` (v2.0.0's scripts need a resource manager).
pub fn restrict(history: &History) -> History {
    let mut h = history.clone();
    // v2.0.0 restarts only at the writers' size; at another, the calibration saw it fail
    // SCR_Init (scr_cache_rebuild.c, "Invalid rank id"), hand a smaller job half a cached
    // checkpoint as whole, and mark a good checkpoint invalid in the index after a fetch at
    // the wrong size: bugs the README lists. Every run keeps the first run's size
    let ranks = h.runs().next().map(|r| r.ranks);
    h.steps
        .retain(|s| !matches!(s, Step::Operator(crate::history::Operator::Postrun { .. })));
    for s in &mut h.steps {
        if let Step::Run(r) = s {
            r.ranks = ranks.unwrap_or(r.ranks);
            if let Some(k) = &mut r.kill {
                k.rank %= r.ranks;
            }
            if r.config.scheme == Scheme::Rs {
                r.config.scheme = Scheme::Xor;
            }
            r.config.prefix_size = 0;
            r.config.flush_async = false;
            // (v2.0.0's containers are experimental, outside its user guide: not calibrated)
            r.config.containers = false;
            r.config.reshape = false;
            r.file_list = false;
            r.halt = None;
            // v2.0.0 aborts the job (scr_flush.c, "Failed to identify data for flush") when
            // it comes to flush a checkpoint a rank declared invalid: a bug of v2.0.0 the
            // README lists, which would end every such history at its first run
            for c in &mut r.ckpts {
                c.bad_rank = None;
            }
            // v2.0.0 flushes nothing with SCR_FLUSH=0, output datasets included (scr.c asks
            // `scr_flush > 0` before it asks whether a dataset needs a flush), so an output
            // dataset never reaches the prefix: a loss the README lists, seen in the
            // calibration; its runs flush every checkpoint instead
            if r.config.flush == 0 && r.ckpts.iter().any(|c| c.output) {
                r.config.flush = 1;
            }
        }
    }
    h
}

/// What v2.0.0 prints when it aborts the job in `SCR_Complete_restart(0)`.
pub const RESTART_ABORT: &str = "reported valid=0 in SCR_Complete_restart()";

/// Whether v2.0.0 aborted the run in `SCR_Complete_restart`: it says so, or (when the
/// launcher dropped its message as the job ended) the run failed right after the
/// application said it read a checkpoint it could not take, and it said nothing more (its
/// lines come from the file it writes each one to at once, which nothing drops).
pub fn aborted_in_complete_restart(out: &str, lines: &[&str], failed: bool) -> bool {
    let last_read_rejected = crate::app::last_read(lines, true).is_some_and(|a| a.verified != 1);
    out.contains(RESTART_ABORT) || (last_read_rejected && failed)
}

/// A way v2.0.0 parts from the model that was looked into: the check a history stops at, and
/// the verdict.
#[derive(Debug)]
pub struct Known {
    /// The check's name (the history stops there, counted, not shrunk).
    pub check: &'static str,
    /// Who is right, and why.
    pub verdict: &'static str,
}

/// The check of v2.0.0's abort in `SCR_Complete_restart(0)`.
pub const RESTART_ABORTED: &str = "v2: abort in SCR_Complete_restart(0)";

/// The check of v2.0.0's `scr_index --remove` moving CURRENT to the next older checkpoint.
pub const CURRENT_MOVED_BACK: &str = "v2: --remove moves CURRENT back";

/// The check of v2.0.0's restart from a cached checkpoint older than a newer one whole on
/// the prefix.
pub const CACHED_OVER_NEWER: &str = "v2: cached checkpoint over a newer one on the prefix";

/// Whether a restart the model refused is v2.0.0 restarting from what its cache holds: the
/// first checkpoint offered is one the model has in cache (whole or rebuildable), read whole,
/// and older than the newest the model would have it load, which is on the prefix.
pub fn cached_over_newer(model: &Model, candidates: &[Candidate], attempts: &[Attempt]) -> bool {
    let Some(first) = attempts.first() else {
        return false;
    };
    let [serial] = first.serials[..] else {
        return false;
    };
    let cached = model
        .get(serial)
        .is_some_and(|c| c.cache != Avail::No && c.complete);
    let newer_on_prefix = candidates
        .iter()
        .find(|c| c.status == Avail::Yes)
        .is_some_and(|c| {
            c.serial > serial && model.get(c.serial).is_some_and(|k| k.prefix == Avail::Yes)
        });
    first.verified == 1 && cached && newer_on_prefix
}

/// The disagreements with v2.0.0 the model keeps (each one is v2.0.0's: the README lists
/// them among what SCR in Rust does better).
pub const KNOWN: &[Known] = &[
    Known {
        check: RESTART_ABORTED,
        verdict: "v2.0.0 aborts the job when a rank says the checkpoint it read is invalid; \
                  the v3.1 guide (restart.rst) has SCR_Complete_restart return and \
                  SCR_Have_restart offer the next older checkpoint. The model follows v3.1.",
    },
    Known {
        check: "dataset-id",
        verdict: "v2.0.0 counts dataset ids on from the checkpoint a job restarted from, so \
                  after a restart from an older one it gives a newer dataset's id again and \
                  its index record takes the other name. SPEC 4.11: ids never repeat within \
                  a prefix; ours counts past every id the prefix has used.",
    },
    Known {
        check: CACHED_OVER_NEWER,
        verdict: "v2.0.0 restarts from whatever its cache can rebuild, even when the prefix \
                  holds a newer complete checkpoint, so the job goes back further than it \
                  needs to. Ours passes over a cached checkpoint older than the prefix's \
                  newest and fetches that one (README, \"Runtime library\"); the model \
                  holds ours to that.",
    },
    Known {
        check: CURRENT_MOVED_BACK,
        verdict: "v2.0.0's scr_index --remove of the current entry makes the next older \
                  complete checkpoint current (as v3.1's SCR_Drop does, api.rst); v3.1's \
                  scr_index --drop removes the entry only (manage.rst) and so does ours, the \
                  next restart taking the newest. Both keep every checkpoint; the model holds \
                  ours to manage.rst and does not follow v2.0.0's current further.",
    },
];

/// The known disagreement a violation is, if it is one.
pub fn known(check: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.check == check)
}

/// What a run v2.0.0 aborted in `SCR_Complete_restart(0)` is, as the check that stops the
/// history and its message: the known disagreement only when what the application read was
/// something the model allows it to have been handed (a byte damaged where no CRC was asked
/// for, a checkpoint the model lets it offer); anything else a violation of its own.
pub fn restart_abort_verdict(
    candidates: &[crate::model::Candidate],
    lines: &[&str],
) -> (&'static str, String) {
    let Some(read) = crate::app::last_read(lines, false) else {
        return (
            "run",
            "v2.0.0 aborted in SCR_Complete_restart(0), but the application read nothing"
                .to_string(),
        );
    };
    if read.verified == 1 {
        return (
            "restart",
            format!(
                "v2.0.0 aborted in SCR_Complete_restart though every rank read {} whole",
                read.name
            ),
        );
    }
    let mut attempts = crate::app::attempts_in(lines);
    attempts.push(read);
    match crate::model::Model::judge_restart(candidates, &attempts, None) {
        // (the fallback the abort took away is the disagreement itself)
        Err(m) if !m.starts_with("no restart, but") => ("restart", m),
        _ => (RESTART_ABORTED, lines.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Operator, Seed};

    /// v2.0.0 restarting from checkpoint 1, rebuilt in cache, where checkpoint 2 is whole
    /// on the prefix is the known disagreement; any other refused restart is not.
    #[test]
    fn a_cached_checkpoint_over_a_newer_one_on_the_prefix_is_known() {
        use crate::history::{CkptSpec, Config};
        let cfg = Config {
            scheme: Scheme::Xor,
            flush: 0,
            prefix_size: 0,
            cache_size: 4,
            reshape: false,
            flush_async: false,
            containers: false,
        };
        let spec = CkptSpec {
            output: false,
            nfiles: 1,
            size: 100,
            bad_rank: None,
        };
        let mut m = Model::new(1);
        m.begin_run(3);
        m.checkpoint(&spec, 3, &cfg, Avail::Yes);
        m.checkpoint(&spec, 3, &cfg, Avail::Yes);
        // checkpoint 2 flushed, then lost from the cache with its node
        m.ckpts[1].prefix = Avail::Yes;
        m.ckpts[1].cache = Avail::No;
        m.begin_run(3);
        let candidates = m.candidates(3, false);
        assert_eq!(candidates[0].serial, 2, "{candidates:?}");
        let offered = |name: &str, verified: i32, serials: Vec<u32>| {
            vec![Attempt {
                name: name.into(),
                verified,
                rc: 0,
                serials,
            }]
        };
        assert!(cached_over_newer(
            &m,
            &candidates,
            &offered("ckpt.1", 1, vec![1])
        ));
        // bytes that were no cached checkpoint's, or not read whole: a violation
        assert!(!cached_over_newer(
            &m,
            &candidates,
            &offered("ckpt.1", 0, vec![])
        ));
        m.ckpts[0].cache = Avail::No;
        assert!(!cached_over_newer(
            &m,
            &candidates,
            &offered("ckpt.1", 1, vec![1])
        ));
    }

    #[test]
    fn an_abort_in_complete_restart_is_known_by_the_last_line_the_application_said() {
        let read_bad = ["init rc=0", "read ckpt.1 verified=0 serials=0"];
        assert!(aborted_in_complete_restart("", &read_bad, true));
        assert!(!aborted_in_complete_restart("", &read_bad, false));
        let read_whole = ["init rc=0", "read ckpt.1 verified=1 serials=1"];
        assert!(!aborted_in_complete_restart("", &read_whole, true));
        let returned = [
            "read ckpt.1 verified=0 serials=0",
            "attempt ckpt.1 verified=0 rc=1 serials=0",
        ];
        assert!(!aborted_in_complete_restart("", &returned, true));
        assert!(aborted_in_complete_restart(RESTART_ABORT, &returned, true));
    }

    #[test]
    fn a_restricted_history_asks_only_for_what_v2_does() {
        let mut seen_rs = false;
        for seed in 0..200 {
            let full = History::generate(Seed::latest(seed));
            seen_rs |= full.runs().any(|r| r.config.scheme == Scheme::Rs);
            let h = restrict(&full);
            let first = h.runs().next().map(|r| r.ranks);
            for r in h.runs() {
                assert_eq!(Some(r.ranks), first, "seed {seed}: one size");
                assert_ne!(r.config.scheme, Scheme::Rs);
                assert_eq!(r.config.prefix_size, 0);
                assert!(!r.config.flush_async && !r.config.reshape && !r.file_list);
                assert!(r.halt.is_none());
                assert!(
                    r.kill.is_none_or(|k| k.rank < r.ranks),
                    "seed {seed}: a rank it has"
                );
                assert!(r.ckpts.iter().all(|c| c.bad_rank.is_none()));
                assert!(r.config.flush > 0 || r.ckpts.iter().all(|c| !c.output));
            }
            assert!(
                !h.steps
                    .iter()
                    .any(|s| matches!(s, Step::Operator(Operator::Postrun { .. })))
            );
            assert_eq!(
                h.runs().count(),
                full.runs().count(),
                "seed {seed}: every run is kept"
            );
        }
        assert!(seen_rs, "the draws restricted include RS runs");
    }
}
