//! Runs a history for real: a job directory (prefix, cache, control base) per history, each
//! run an MPICH job of the application on emulated nodes, faults done to the files
//! themselves, operator commands through `scr`. After every step the checks compare what
//! happened with the [model](crate::model).

use crate::app;
use crate::check;
use crate::history::{History, RunSpec, Step};
use crate::model::{Avail, Model};
use crate::peer::ScrV2;
use crate::process::{run_bounded, scrub};
use crate::script::Transcript;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod between;

/// The job id every run gets, so the caches of one history's runs are the same job's.
pub const JOB_ID: &str = "4242";

/// What the runs need: the application built against the library under test, and `scr`.
#[derive(Debug)]
pub struct Env {
    /// Where job directories are made.
    pub work: PathBuf,
    /// The application.
    pub app: PathBuf,
    /// The `scr` command (of the build under test, or, against a peer, the one that reads
    /// the peer's index).
    pub scr: PathBuf,
    /// Real SCR v2.0.0, when the runs use it in place of the build's library.
    pub peer: Option<ScrV2>,
}

/// A broken promise: which check, what it saw, at which step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The check that failed (a shrunk history must fail the same one).
    pub check: &'static str,
    /// What it saw.
    pub message: String,
    /// The step it was seen after (0-based).
    pub step: usize,
}

/// What running a history did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Steps run.
    pub steps: usize,
    /// Operations done, by kind (runs, checkpoints, restarts, faults, commands).
    pub ops: BTreeMap<String, u64>,
    /// The first broken promise, if any.
    pub violation: Option<Violation>,
    /// Against real SCR v2.0.0: the known disagreement the history stopped at, if any.
    pub known: Option<&'static str>,
    /// The history as a shell script.
    pub script: String,
    /// How long it took.
    pub elapsed: Duration,
}

type Checked<T> = Result<T, (&'static str, String)>;

impl Env {
    /// Builds the application in `work` (a fresh directory under the system's temporary
    /// directory when `None`) against `build/libscr_runtime.so`, and finds `build/scr`.
    pub fn prepare(build: &Path, work: Option<&Path>) -> Result<Env, String> {
        Env::prepare_against(build, work, None)
    }

    /// As [`Env::prepare`], with the application built against real SCR v2.0.0 installed
    /// at `real` instead (`build`'s `scr` still reads the prefix's index for the checks).
    pub fn prepare_peer(build: &Path, real: &Path, work: Option<&Path>) -> Result<Env, String> {
        Env::prepare_against(build, work, Some(ScrV2::at(real)?))
    }

    fn prepare_against(
        build: &Path,
        work: Option<&Path>,
        peer: Option<ScrV2>,
    ) -> Result<Env, String> {
        let work = match work {
            Some(w) => w.to_path_buf(),
            None => std::env::temp_dir().join(format!("scr-histories.{}", std::process::id())),
        };
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let work = work
            .canonicalize()
            .map_err(|e| format!("{}: {e}", work.display()))?;
        let build = build.canonicalize().map_err(|e| {
            format!(
                "{}: {e}; build first: cargo build -p scr-runtime --lib; cargo build -p scr-launcher",
                build.display()
            )
        })?;
        let lib = build.join("libscr_runtime.so");
        let scr = build.join("scr");
        for f in [&lib, &scr] {
            if !f.exists() {
                return Err(format!(
                    "{} missing: build it with cargo build -p scr-runtime --lib; cargo build -p scr-launcher",
                    f.display()
                ));
            }
        }
        let bin = work.join("bin");
        std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
        let link = bin.join("libscr.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&lib, &link).map_err(|e| format!("{}: {e}", link.display()))?;
        let app = match &peer {
            Some(peer) => {
                app::compile(&bin, &peer.prefix.join("include"), &peer.prefix.join("lib"))?
            }
            None => app::compile(
                &bin,
                &Path::new(env!("CARGO_MANIFEST_DIR")).join("../lib/include"),
                &bin,
            )?,
        };
        Ok(Env {
            work,
            app,
            scr,
            peer,
        })
    }

    /// Runs `history` in a fresh job directory, stopping at the first violation.
    pub fn run(&self, history: &History) -> Outcome {
        let started = Instant::now();
        let mut outcome = Outcome::default();
        let job = match tempfile::Builder::new()
            .prefix("job.")
            .tempdir_in(&self.work)
        {
            Ok(j) => j,
            Err(e) => {
                outcome.violation = Some(Violation {
                    check: "setup",
                    message: format!("{}: {e}", self.work.display()),
                    step: 0,
                });
                return outcome;
            }
        };
        let mut t = Transcript::new(job.path(), &self.app, &self.scr, history);
        let job_id = match &self.peer {
            Some(_) => ScrV2::job_id(),
            None => JOB_ID.to_string(),
        };
        if let Some(peer) = &self.peer {
            // (each run's line carries the shim's environment)
            t.comment(&format!(
                "against real SCR v2.0.0 at {}",
                peer.prefix.display()
            ));
        }
        let mut state = State {
            job_id,
            job: job.path().to_path_buf(),
            model: Model {
                evict_at_start: self.peer.is_some(),
                ..Model::new(history.ranks_per_node)
            },
            current: None,
            operator_since: false,
            temporaries_may_stay: false,
            ids: BTreeMap::new(),
        };
        let result = self.setup(&state.job).and_then(|()| {
            for (i, step) in history.steps.iter().enumerate() {
                outcome.steps = i + 1;
                let done = match step {
                    Step::Run(spec) => self
                        .run_step(&mut state, history, spec, &mut t, &mut outcome.ops)
                        .map(|()| true),
                    Step::Fault(f) => self.fault(&mut state, *f, &mut t),
                    Step::Operator(o) => self.operator(&mut state, *o, &mut t),
                };
                // a fault or command with nothing to act on is counted apart
                let kind = match done {
                    Ok(false) => format!("{} (nothing to act on)", step.kind()),
                    _ => step.kind().to_string(),
                };
                *outcome.ops.entry(kind).or_default() += 1;
                done.and_then(|_| check::after_step(self, &mut state, &mut t))
                    .map_err(|(c, m)| (c, m, i))?;
            }
            Ok(())
        });
        let known = |check: &str| {
            self.peer
                .as_ref()
                .and_then(|_| crate::peer::known(check))
                .map(|k| k.check)
        };
        if let Err((check, message, _)) = &result
            && let Some(k) = known(check)
        {
            t.comment(&format!("KNOWN DISAGREEMENT ({check}): {message}"));
            outcome.known = Some(k);
        } else if let Err((check, message, step)) = result {
            t.comment(&format!("VIOLATION ({check}): {message}"));
            outcome.violation = Some(Violation {
                check,
                message,
                step,
            });
        }
        if let Some(peer) = &self.peer {
            peer.clean(&state.job_id, crate::peer::MOST_NODES);
        }
        outcome.script = t.script();
        outcome.elapsed = started.elapsed();
        outcome
    }

    fn setup(&self, job: &Path) -> Result<(), (&'static str, String, usize)> {
        let io = |e: std::io::Error| ("setup", format!("{}: {e}", job.display()), 0);
        for d in ["prefix", "cache", "cntl"] {
            std::fs::create_dir(job.join(d)).map_err(io)?;
        }
        std::fs::write(
            job.join("scr.conf"),
            format!("SCR_CNTL_BASE={}\n", job.join("cntl").display()),
        )
        .map_err(io)
    }

    /// `scr` with the job's configuration and nothing of the caller's SCR settings.
    pub fn scr(&self, job: &Path) -> Command {
        let mut cmd = Command::new(&self.scr);
        scrub(&mut cmd);
        cmd.env("SCR_SYSTEM_CONF_FILE", job.join("scr.conf"))
            .env("SCR_CACHE_BASE", job.join("cache"))
            .env("SCR_JOB_ID", JOB_ID);
        cmd
    }

    fn run_step(
        &self,
        s: &mut State,
        history: &History,
        spec: &RunSpec,
        t: &mut Transcript,
        ops: &mut BTreeMap<String, u64>,
    ) -> Checked<()> {
        let before = s.model.clone();
        let may_stop = s.model.init_may_stop(spec.ranks);
        s.model.begin_run(spec.ranks);
        s.model.init_flush(spec.ranks, &spec.config);
        let candidates = s.model.candidates(spec.ranks, spec.config.reshape);
        let mut args: Vec<String> = s
            .model
            .ckpts
            .iter()
            .filter(|c| !c.output)
            .map(|c| {
                format!(
                    "layout={}:{}:{}:{}:{}",
                    c.serial, c.step, c.spec.nfiles, c.spec.size, c.writers
                )
            })
            .collect();
        args.push("init".into());
        args.push(
            if spec.file_list {
                "restart=list"
            } else {
                "restart"
            }
            .into(),
        );
        let first = s.model.next_serial();
        for (j, c) in spec.ckpts.iter().enumerate() {
            if let Some(k) = spec.kill.filter(|k| k.at == j) {
                args.push(format!("kill={}:{}", k.rank, k.when));
            }
            let serial = first + j as u32;
            let mut a = if c.output {
                format!("out={serial}:{}:{}", c.nfiles, c.size)
            } else {
                format!("ckpt={serial}:{}:{}", c.nfiles, c.size)
            };
            if let Some(b) = c.bad_rank {
                a.push_str(&format!(":{b}"));
            }
            args.push(a);
        }
        args.push(if spec.finalize { "finalize" } else { "quit" }.into());
        let rpn = history.ranks_per_node;
        let hosts: Vec<String> = (1..=s.model.nodes(spec.ranks))
            .map(|n| format!("n{n}:{rpn}"))
            .collect();
        let hosts = hosts.join(",");
        let mut env = spec.config.env();
        if let Some(k) = spec.halt {
            self.halt_command(s, &["--checkpoints", &k.to_string()], t)?;
            // guide halt.rst, "scr_halt and the halt file": with SCR_HALT_EXIT=1 every task
            // exits in SCR_Complete_output once the condition holds
            env.push(("SCR_HALT_EXIT".into(), "1".into()));
        }
        let mut shown = env.clone();
        if let Some(peer) = &self.peer {
            // the script runs the peer as the driver does, its caches below "$J/cache"
            shown.extend(peer.run_env(Path::new("$J/cache"), rpn));
            shown.push(("SCR_JOB_ID".into(), s.job_id.clone()));
        }
        t.run(&shown, &hosts, spec.ranks, &args);
        // rank 0's lines also go to a file beside the job directory: hydra may drop what a
        // rank wrote to its standard output when the job aborts
        let hist_log = s.job.with_extension("hist");
        let launch = || {
            let _ = std::fs::remove_file(&hist_log);
            let mut cmd = Command::new("mpiexec");
            scrub(&mut cmd);
            cmd.args([
                "-launcher",
                "fork",
                "-hosts",
                &hosts,
                "-n",
                &spec.ranks.to_string(),
            ])
            .arg(&self.app)
            .args(&args)
            .current_dir(s.job.join("prefix"))
            .env("MPIEXEC_TIMEOUT", "60")
            .env("SCR_SYSTEM_CONF_FILE", s.job.join("scr.conf"))
            .env("SCR_CACHE_BASE", s.job.join("cache"))
            .env("SCR_PREFIX", s.job.join("prefix"))
            .env("SCR_JOB_ID", &s.job_id)
            .env("HIST_LOG", &hist_log)
            .envs(env.iter().map(|(k, v)| (k, v)));
            if let Some(peer) = &self.peer {
                cmd.envs(peer.run_env(&s.job.join("cache"), rpn));
            }
            run_bounded(cmd).map_err(|e| ("hang", e))
        };
        let (mut status, mut out) = launch()?;
        // MPI_Init failing in a rank (MPICH's transport, on a machine short of resources)
        // fails the job before SCR_Init returned anywhere: the run is started again, as a
        // job killed in SCR_Init would be
        for _ in 0..2 {
            if status.success() || out.contains("hist: init") || !out.contains("MPI_Init(") {
                break;
            }
            *ops.entry("run started again (MPI_Init failed)".into())
                .or_default() += 1;
            (status, out) = launch()?;
        }
        if spec.halt.is_some() {
            // the operator takes the condition away before the next job
            self.halt_command(s, &["--remove"], t)?;
        }
        let logged = std::fs::read_to_string(&hist_log).unwrap_or_default();
        let _ = std::fs::remove_file(&hist_log);
        let lines = app::said(if logged.is_empty() { &out } else { &logged });
        let said = |head: &str| {
            lines
                .iter()
                .find_map(|l| l.strip_prefix(head))
                .map(str::to_string)
        };
        if may_stop && said("init rc=").is_none() && out.contains("could not drain it") {
            *ops.entry("init-stopped".into()).or_default() += 1;
            s.model = before;
            s.model.init_stopped();
            return check::no_process_left(&self.app).map_err(|m| ("leftover", m));
        }
        if self.peer.is_some()
            && crate::peer::aborted_in_complete_restart(&out, &lines, !status.success())
        {
            return Err(crate::peer::restart_abort_verdict(&candidates, &lines));
        }
        let (reached, to_the_end) = spec.reached();
        if to_the_end && (!status.success() || said("end").is_none()) {
            return Err((
                "run",
                format!("the run ended with {status} before its end:\n{out}"),
            ));
        }
        let halted_at = spec.halted_at();
        // guide halt.rst: the job halts after its K-th checkpoint, every task exiting with
        // status 0 (as SCR_Finalize then MPI_Finalize would end it), none going on
        if halted_at.is_some() && (!status.success() || said("end").is_some()) {
            return Err((
                "halt",
                format!(
                    "scr halt --checkpoints {} did not end the run with status 0 in checkpoint {} (it ended with {status}):\n{out}",
                    spec.halt.unwrap_or_default(),
                    halted_at.map_or(0, |i| i + 1)
                ),
            ));
        }
        // (a run with a rank killed ends as hydra ends it: other ranks may get to its end)
        if said("init rc=").as_deref() != Some("0") {
            return Err(("run", format!("SCR_Init failed:\n{out}")));
        }
        let attempts = app::attempts_in(&lines);
        let restarted = said("restarted ");
        *ops.entry("restart-attempt".into()).or_default() += attempts.len() as u64;
        if restarted.is_some() {
            *ops.entry("restart-verified".into()).or_default() += 1;
        }
        let (resolved, loaded) = Model::judge_restart(&candidates, &attempts, restarted.as_deref())
            .map_err(|m| {
                let check = if self.peer.is_some()
                    && crate::peer::cached_over_newer(&s.model, &candidates, &attempts)
                {
                    crate::peer::CACHED_OVER_NEWER
                } else {
                    "restart"
                };
                (check, m)
            })?;
        s.model
            .after_restart(&attempts, &resolved, loaded, spec.ranks, spec.config.scheme);
        // a run cut short may leave a flush's temporaries on the prefix, for the next run's
        // SCR_Init to remove (README, "Runtime library": a job killed mid-flush)
        // (a halt ends the run as cleanly as SCR_Finalize)
        s.temporaries_may_stay =
            halted_at.is_none() && (!to_the_end || (spec.config.flush_async && !spec.finalize));
        for (j, (c, completed)) in reached.into_iter().enumerate() {
            let serial = s.model.checkpoint(c, spec.ranks, &spec.config, completed);
            let kind = if c.output { "output" } else { "ckpt" };
            *ops.entry(kind.into()).or_default() += 1;
            if completed != Avail::Yes {
                *ops.entry("killed".into()).or_default() += 1;
                continue;
            }
            if halted_at == Some(j) {
                // it exits in this SCR_Complete_output, which returns to nobody
                continue;
            }
            let name = s.model.get(serial).map(|c| c.name()).unwrap_or_default();
            let rc = if c.output {
                said(&format!("out {name} rc="))
            } else {
                said(&format!("ckpt {name} serial={serial} rc="))
            };
            if c.bad_rank.is_none() && rc.as_deref() != Some("0") {
                return Err((
                    "checkpoint",
                    format!("SCR_Complete_output of {name} (#{serial}) said {rc:?}:\n{out}"),
                ));
            }
        }
        if halted_at.is_some() {
            // the halt flushes the newest checkpoint as SCR_Finalize would: it waits for the
            // flushes in the background, then flushes the newest if SCR_FLUSH is on (guide
            // halt.rst; README, "Runtime library")
            s.model.finalize(&spec.config);
            *ops.entry("halted".into()).or_default() += 1;
        }
        if spec.finalize && to_the_end {
            s.model.finalize(&spec.config);
            if said("finalize rc=").as_deref() != Some("0") {
                return Err(("run", format!("SCR_Finalize failed:\n{out}")));
            }
        }
        check::no_process_left(&self.app).map_err(|m| ("leftover", m))
    }

    /// `scr halt ARGS -p PREFIX`, which must succeed (`scr halt --help`: exit 0).
    fn halt_command(&self, s: &State, args: &[&str], t: &mut Transcript) -> Checked<()> {
        t.line(&format!(
            "\"$SCR\" halt {} -p \"$J/prefix\"",
            args.join(" ")
        ));
        let mut cmd = self.scr(&s.job);
        cmd.arg("halt")
            .args(args)
            .arg("-p")
            .arg(s.job.join("prefix"));
        let (status, out) = run_bounded(cmd).map_err(|e| ("hang", e))?;
        if !status.success() {
            return Err((
                "command",
                format!("scr halt {} exited {status}:\n{out}", args.join(" ")),
            ));
        }
        Ok(())
    }
}

/// What a history's run keeps between steps.
pub struct State {
    /// The job id of its runs.
    pub job_id: String,
    /// The job directory.
    pub job: PathBuf,
    /// The model.
    pub model: Model,
    /// The current checkpoint the index named last time it was read.
    pub current: Option<u32>,
    /// An operator chose the current checkpoint since then.
    pub operator_since: bool,
    /// The last run was cut short (killed, or ended without SCR_Finalize while a flush ran
    /// in the background): a flush's temporaries may stay on the prefix until the next run.
    pub temporaries_may_stay: bool,
    /// The name each dataset id the index listed had then.
    pub ids: BTreeMap<u64, String>,
}
