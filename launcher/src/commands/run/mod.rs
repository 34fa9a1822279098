//! `scr-run <launcher> [args] <app> [args]` (`scr run`; SCR's `scr_srun` is `scr-run
//! srun`): runs an MPI job under SCR, relaunching it around failed nodes until it finishes,
//! halts, or runs out of runs or nodes. Returns the application's exit status.

use crate::job::{
    self, DownNode, DownNodeQuery, Ending, Event, HaltCondition, JobOps, Launcher, LoopConfig,
    NodeCheck, ResourceManager,
};
use hostlist::HostSet;
use scr::halt::HaltFile;
use scr::layout;
use scr::nodes::NodesFile;
use scr::params::settings::Launch;
use scr::params::{Params, Sources};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod agents;
mod ranks;
mod run_commands;

use agents::Agents;
use ranks::RunRanks;
use run_commands::{RunCommands, launch_line, restart_name, take_run_commands};

#[derive(clap::Args)]
#[command(
    about = "Run an MPI job under SCR: relaunch it around failed nodes (scr-run, scr_srun)",
    long_about = "Run an MPI job under SCR. Give the launcher and its arguments as you would run \
                  them: `scr-run srun -N4 ./app`, `scr-run mpiexec -n 8 ./app`. scr-run finds the \
                  allocation (SLURM, or this machine; SCR_NODELIST overrides), then runs the job; \
                  when a run ends it checks the halt file, SCR_RUNS (or SCR_RETRIES+1) and the \
                  nodes left, and relaunches without the nodes found down (once down, always \
                  down), after SCR_RUN_DELAY seconds (SCR's 60). SIGTERM or SIGINT stops the \
                  current run and the loop. SCR_ENABLE=0 runs the command once, unchanged. \
                  After the last run it drains what the runs left in cache (scr postrun); the \
                  runs are told so (SCR_DRAIN_FOLLOWS=1), so their checkpoints stay in cache \
                  between flushes (SCR_FLUSH, default 10) where a job launched without \
                  scr-run flushes each one.\n\n\
                  SCR v3.1's scr_run options may stand among the launcher's arguments: \
                  `-rc CMD` / `--run-cmd=CMD` is run when there is no checkpoint to restart from, \
                  `-rs CMD` / `--restart-cmd=CMD` when there is one, with SCR_CKPT_NAME in it \
                  replaced by that checkpoint's name (each is split at spaces; no shell reads \
                  it). A halt condition that holds before the first run (`scr halt --list`) \
                  launches nothing.\n\n\
                  Exit status: the last run's (1 when no run finished or scr-run stopped it)."
)]
pub struct Args {
    /// Print one JSON object per event (for batch tooling) instead of text lines
    #[arg(long)]
    json: bool,
    /// The launcher (srun, mpiexec, mpirun) or program, and its arguments
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// How scr-run talks: text lines on stderr, or JSON lines on stdout; and what it says goes
/// to the event log's database too (SCR_LOG_DB_ENABLE), each event as a `SCR_RUN_<EVENT>`
/// record with its fields.
struct Reporter {
    json: bool,
    db: Option<scr_db::Sink>,
}

impl Reporter {
    fn say(&self, event: &str, text: &str, fields: serde_json::Value) {
        let now = chrono::Local::now();
        if let Some(db) = &self.db {
            let kind = format!("SCR_RUN_{}", event.to_ascii_uppercase());
            let mut record: Vec<(&str, String)> = Vec::new();
            if let serde_json::Value::Object(map) = &fields {
                for (k, v) in map {
                    match v {
                        serde_json::Value::Null => {}
                        serde_json::Value::String(s) => record.push((k, s.clone())),
                        v => record.push((k, v.to_string())),
                    }
                }
            }
            if record.is_empty() {
                record.push(("message", text.to_string()));
            }
            db.record(&kind, now, &record);
        }
        if self.json {
            let mut obj = serde_json::json!({
                "time": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
                "event": event,
                "message": text,
            });
            if let (Some(o), serde_json::Value::Object(f)) = (obj.as_object_mut(), fields) {
                o.extend(f);
            }
            println!("{obj}");
        } else {
            eprintln!(
                "{}: {} {text}",
                crate::program_name(),
                now.format("%Y-%m-%dT%H:%M:%S")
            );
        }
    }
}

/// The real world for the loop: processes, the halt file, the nodes file, signals.
struct Live<'a> {
    command: Vec<String>,
    /// v3.1's `--run-cmd`/`--restart-cmd`, appended to `command` run by run.
    run_commands: RunCommands,
    launcher: Launcher,
    nodes: HostSet,
    prefix: PathBuf,
    /// Where scr-run was launched and ran its prerun: `scr halt` there is meant for the
    /// job, also once the application's own prefix is followed.
    launch_prefix: PathBuf,
    /// The locks that tell `scr halt --immediate` a scr-run will stop the run at once.
    watching: Vec<scr::prefix::watch::Watching>,
    params: &'a Params,
    rm: &'a dyn ResourceManager,
    exclude: HostSet,
    node_check: NodeCheck,
    stop: Arc<AtomicBool>,
    reporter: &'a Reporter,
    /// SCR_WATCHDOG: how long a run may go without flush progress (while computing, and
    /// while flushing to the prefix).
    watchdog: Option<(Duration, Duration)>,
    /// SCR_HALT_SECONDS, where the halt file sets no HaltSeconds, and where it was set.
    halt_seconds: Option<i64>,
    halt_seconds_origin: String,
    /// SCR_RESHAPE: a run on fewer nodes than the command asks for runs fewer ranks.
    reshape: bool,
    /// The processes of the run's ranks on this machine, as they record them.
    ranks: RunRanks,
}

/// How long a run whose rank is gone may go on before scr-run ends it: time for the
/// launcher to end the run itself (hydra does for a rank killed by a signal; it waits
/// forever for one that exited without MPI_Finalize, and so do the other ranks).
const RANK_GONE_GRACE: Duration = Duration::from_secs(10);

/// What the launcher watches while a run goes on: the halt file's immediate stop, and the
/// flush file's progress for the watchdog.
struct Watch {
    last_poll: Instant,
    progress: Option<(Option<u64>, String)>,
    since: Instant,
    /// A rank found gone while the run goes on: when, and who.
    rank_gone: Option<(Instant, String)>,
}

impl Live<'_> {
    /// After a run: the prefix the application used, when its control directory records
    /// another than scr-run's (it set its own with `SCR_Configf`, or ran in another working
    /// directory), is where its halt file (SCR_Finalize's among them) and nodes file are.
    fn follow_recorded_prefix(&mut self) {
        let Some(recorded) = super::drain::recorded_prefix(self.params) else {
            return;
        };
        if recorded == self.prefix || scr::io::same_file(&recorded, &self.prefix) {
            return;
        }
        // what a control directory records is only its writer's word: root goes nowhere on
        // it that it would not go when told to
        if let Err(e) = refuse_a_prefix_others_control_for_root(&recorded) {
            self.reporter.say(
                "warning",
                &format!(
                    "not following the prefix {} that the job's control directory records: {e}",
                    recorded.display()
                ),
                serde_json::json!({"prefix": recorded.display().to_string(), "error": e.to_string()}),
            );
            return;
        }
        self.reporter.say(
            "info",
            &format!(
                "the application's prefix is {} (its control directory records it), not {}: \
                 its halt and nodes files are read there",
                recorded.display(),
                self.prefix.display()
            ),
            serde_json::json!({"prefix": recorded.display().to_string()}),
        );
        self.watching.extend(watch(&recorded, self.reporter));
        self.prefix = recorded;
    }

    /// The prefix's state file `file(prefix)`, read through handles
    /// ([`super::read_state`]).
    fn state<T: scr::HashView>(&self, file: fn(&std::path::Path) -> PathBuf) -> scr::Result<T> {
        super::read_state(&self.prefix, &file(&self.prefix))
    }

    /// Why the running job must be stopped now, if it must (checked about once a second).
    fn must_stop_run(&self, watch: &mut Watch) -> Option<String> {
        if watch.last_poll.elapsed() < Duration::from_secs(1) {
            return None;
        }
        watch.last_poll = Instant::now();
        let launch_halt = || {
            super::read_state::<HaltFile>(
                &self.launch_prefix,
                &layout::halt_file(&self.launch_prefix),
            )
        };
        if self
            .state::<HaltFile>(layout::halt_file)
            .is_ok_and(|h| h.exit_now())
            || (self.launch_prefix != self.prefix && launch_halt().is_ok_and(|h| h.exit_now()))
        {
            return Some("halted immediately (scr halt --immediate)".into());
        }
        if watch.rank_gone.is_none() {
            watch.rank_gone = self.ranks.gone().map(|who| (Instant::now(), who));
        }
        if let Some((seen, who)) = &watch.rank_gone
            && seen.elapsed() >= RANK_GONE_GRACE
        {
            return Some(format!(
                "{who}, and the run still went on {} s later: its other ranks wait for it",
                RANK_GONE_GRACE.as_secs()
            ));
        }
        let (compute, pfs) = self.watchdog?;
        let flush = self.state::<scr::flush::FlushFile>(layout::flush_file).ok();
        let latest = flush.as_ref().and_then(|f| f.latest());
        let location = match (&flush, latest) {
            (Some(f), Some(id)) => f
                .locations(id)
                .first()
                .map(|l| l.to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let now = (latest, location);
        if watch.progress.as_ref() != Some(&now) {
            watch.progress = Some(now);
            watch.since = Instant::now();
            return None;
        }
        let flushing = watch
            .progress
            .as_ref()
            .is_some_and(|(_, l)| l.contains("FLUSHING"));
        let limit = if flushing { pfs } else { compute };
        (watch.since.elapsed() >= limit).then(|| {
            format!(
                "watchdog: no checkpoint or flush progress for {} s (SCR_WATCHDOG_TIMEOUT{})",
                limit.as_secs(),
                if flushing { "_PFS" } else { "" }
            )
        })
    }
}

impl JobOps for Live<'_> {
    fn down_nodes(&mut self, known: &HostSet, first: bool) -> Vec<DownNode> {
        let mut check = self.node_check.clone();
        check.free = first;
        // SCR_EXCLUDE_NODES is read again at each relaunch, as SCR's scripts do at every
        // loop: a run may name a bad node in the prefix's .scrconf (a configuration that no
        // longer reads leaves the last list as it was)
        if !first
            && let Ok(exclude) =
                Params::load(&Sources::from_process()).and_then(|p| super::excluded_nodes(&p))
        {
            self.exclude = exclude;
        }
        job::list_down_nodes(&DownNodeQuery {
            resource_manager: self.rm,
            nodes: self.nodes.clone(),
            known_down: known.clone(),
            exclude: self.exclude.clone(),
            node_check: Some(check),
        })
    }

    fn nodes_of_last_run(&mut self) -> Option<u64> {
        self.state::<NodesFile>(layout::nodes_file).ok()?.nodes()
    }

    fn launch(&mut self, _attempt: u32, exclude: &HostSet) -> Result<Option<i32>, String> {
        let restart = self
            .run_commands
            .restart
            .as_ref()
            .and_then(|_| restart_name(&self.prefix));
        let mut line = launch_line(&self.command, &self.run_commands, restart.as_deref());
        if self.reshape {
            let up = self.nodes.difference(exclude).count();
            let reshaped = job::reshape_for(self.launcher, &line, self.nodes.count(), up);
            if reshaped != line {
                self.reporter.say(
                    "reshape",
                    &format!(
                        "SCR_RESHAPE=1: {up} nodes are left, so this run starts as {}",
                        reshaped.join(" ")
                    ),
                    serde_json::json!({"nodes": up, "command": reshaped}),
                );
                line = reshaped;
            }
        }
        let argv = self.launcher.command(&line, &self.nodes, exclude);
        self.ranks.clear();
        let (app, line) = job::child::command(&argv[0], &argv[1..]);
        // the run learns which nodes are down (with the user's SCR_EXCLUDE_NODES, which they
        // include): a checkpoint it cannot rebuild whose other writers' nodes are all down
        // is lost, and it goes on from an older one rather than stop for them
        let app = if exclude.is_empty() {
            app
        } else {
            app.env("SCR_EXCLUDE_NODES", exclude.to_string())
        };
        let app = app
            .unchecked()
            // its own process group: a stop reaches every process of the run; and, out of
            // scr-run's group, it would miss what ends scr-run's (salloc's hangup as the
            // allocation goes, a kill of scr-run): the kernel tells it when scr-run is gone
            .before_spawn(|cmd| {
                use std::os::unix::process::CommandExt;
                cmd.process_group(0);
                let parent = std::process::id() as libc::pid_t;
                // SAFETY: between fork and exec only async-signal-safe calls: prctl,
                // getppid and kill of itself
                unsafe {
                    cmd.pre_exec(move || {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                        // scr-run died before the request took effect
                        if libc::getppid() != parent {
                            libc::kill(libc::getpid(), libc::SIGTERM);
                        }
                        Ok(())
                    });
                }
                Ok(())
            })
            .start()
            .map_err(|e| job::child::not_started(&line, &e).to_string())?;
        let pid = app.pids()[0] as i32;
        let mut stopping: Option<Instant> = None;
        let mut why: Option<String> = None;
        let mut watch = Watch {
            last_poll: Instant::now(),
            progress: None,
            since: Instant::now(),
            rank_gone: None,
        };
        loop {
            match app.try_wait() {
                // a run scr-run stopped did not finish, whatever it exited with
                Ok(Some(_)) if why.is_some() => {
                    return Err(format!("stopped by scr-run ({})", why.unwrap_or_default()));
                }
                Ok(Some(out)) => return Ok(out.status.code()),
                Ok(None) => {}
                Err(e) => return Err(format!("waiting for {}: {e}", argv[0])),
            }
            if why.is_none() {
                why = if self.stop.load(Ordering::SeqCst) {
                    Some("asked to stop".into())
                } else {
                    self.must_stop_run(&mut watch)
                };
            }
            if let Some(reason) = &why {
                match stopping {
                    None => {
                        self.reporter.say(
                            "stopping",
                            &format!("stopping the run (SIGTERM to its processes): {reason}"),
                            serde_json::json!({"reason": reason}),
                        );
                        // SAFETY: signals the process group this run created
                        unsafe { libc::kill(-pid, libc::SIGTERM) };
                        stopping = Some(Instant::now());
                    }
                    Some(t) if t.elapsed() > Duration::from_secs(10) => {
                        // SAFETY: as above
                        unsafe { libc::kill(-pid, libc::SIGKILL) };
                        self.ranks.kill_running();
                    }
                    Some(_) => {}
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn halt_condition(&mut self, before_first_run: bool) -> Option<HaltCondition> {
        if !before_first_run {
            self.follow_recorded_prefix();
        }
        let halt = match self.state::<HaltFile>(layout::halt_file) {
            Ok(h) => h,
            Err(e) if e.is_not_found() => HaltFile::new(),
            Err(e) => {
                // a halt file nobody can read must not stop the job (nor let it run
                // unwatched without a word)
                self.reporter.say(
                    "warning",
                    &format!("halt conditions not checked: {e}"),
                    serde_json::json!({"error": e.to_string()}),
                );
                return None;
            }
        };
        let file_sets_seconds = halt.halt_seconds().is_some();
        let halt = halt.with_halt_seconds_default(self.halt_seconds);
        let now = chrono::Utc::now().timestamp();
        let left = scr::halt::seconds_left(std::env::var("SCR_END_TIME").ok().as_deref(), now);
        let cause = if before_first_run {
            halt.library_decision(now, left)
        } else {
            halt.decision(now, left)
        }?;
        let clear = match &cause {
            // the time left against SCR_HALT_SECONDS: nothing in the halt file to remove
            scr::halt::HaltCause::TimeLimit { halt_seconds, .. } if !file_sets_seconds => {
                format!(
                    "SCR_END_TIME (the allocation's end) leaves less than SCR_HALT_SECONDS={halt_seconds}, \
                     set in {}; the halt file holds neither, so `scr halt -r` does not clear \
                     it: lower or unset SCR_HALT_SECONDS there, or run with more time left.",
                    self.halt_seconds_origin
                )
            }
            scr::halt::HaltCause::TimeLimit { .. } => "The halt file's HaltSeconds against \
                SCR_END_TIME (the allocation's end): `scr halt --unset-seconds` removes it."
                .into(),
            _ => "`scr halt --list` shows the halt file's conditions; `scr halt -r` removes \
                  them (or `scr halt --unset-...` one)."
                .into(),
        };
        Some(HaltCondition {
            reason: cause.to_string(),
            clear,
        })
    }

    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn sleep(&mut self, how_long: Duration) {
        let until = Instant::now() + how_long;
        while Instant::now() < until && !self.stop_requested() {
            std::thread::sleep(Duration::from_millis(100).min(until - Instant::now()));
        }
    }

    fn report(&mut self, event: Event) {
        let r = self.reporter;
        match event {
            Event::NodesDown { attempt, down } => {
                for d in &down {
                    r.say(
                        "node_down",
                        &format!("attempt {attempt}: {} is down: {}", d.node, d.reason),
                        serde_json::json!({"attempt": attempt, "node": d.node, "reason": d.reason}),
                    );
                }
            }
            Event::Launch {
                attempt,
                nodes,
                exclude,
            } => {
                let without = if exclude.is_empty() {
                    String::new()
                } else {
                    format!(", excluding {exclude}")
                };
                r.say(
                    "launch",
                    &format!("attempt {attempt}: launching on {nodes} node(s){without}"),
                    serde_json::json!({"attempt": attempt, "nodes": nodes, "exclude": exclude}),
                );
            }
            Event::RunEnded {
                attempt,
                exit_code,
                error,
            } => {
                let how = match (&error, exit_code) {
                    (Some(e), _) => e.clone(),
                    (None, Some(c)) => format!("exit code {c}"),
                    (None, None) => "killed by a signal".into(),
                };
                r.say(
                    "run_ended",
                    &format!("attempt {attempt}: run ended: {how}"),
                    serde_json::json!({"attempt": attempt, "exit_code": exit_code, "error": error}),
                );
            }
            Event::Sleeping { seconds } => r.say(
                "sleeping",
                &format!("next attempt in {seconds} s (SCR_RUN_DELAY)"),
                serde_json::json!({"seconds": seconds}),
            ),
            Event::Finished { ending } => r.say("finished", &ending.to_string(), ending.to_json()),
        }
    }
}

fn fail(text: impl std::fmt::Display) -> scr::Error {
    scr::Error::refused(text.to_string())
}

/// Usage, when the arguments hold no program to run (`scr_srun` alone) or ask for help
/// right after the launcher (`scr_srun --help`): the launcher is not run.
fn usage_instead(command: &[String]) -> Option<ExitCode> {
    let help = matches!(command.get(1).map(String::as_str), Some("-h" | "--help"));
    // a launcher alone has nothing to launch (a program alone runs as it is)
    let launcher_alone =
        command.len() == 1 && !matches!(Launcher::detect(&command[0]), Launcher::Direct);
    if !help && !launcher_alone {
        return None;
    }
    let mut cmd = <Args as clap::Args>::augment_args(clap::Command::new(crate::program_name()));
    let text = cmd.render_long_help();
    // (a reader that stops early, `| head`, is no error)
    use std::io::Write;
    if help {
        let _ = write!(std::io::stdout(), "{text}");
        Some(ExitCode::SUCCESS)
    } else {
        let _ = write!(
            std::io::stderr(),
            "{}: give the launcher's arguments and the program to run, e.g. `{} -N4 -n16 ./app`\n\n{text}",
            crate::program_name(),
            crate::program_name()
        );
        Some(ExitCode::from(1))
    }
}

pub fn run(mut args: Args) -> scr::Result<ExitCode> {
    if let Some(code) = usage_instead(&args.command) {
        return Ok(code);
    }
    let run_commands = take_run_commands(&mut args.command)?;
    let mut reporter = Reporter {
        json: args.json,
        db: None,
    };
    // the drain after the last run takes what the runs leave in cache, so the library
    // keeps its checkpoints there between flushes (SCR_FLUSH): the runs, and this
    // process's own reading of the parameters, must know
    // SAFETY (set_var): scr-run is single-threaded here; children inherit the variable
    unsafe { std::env::set_var("SCR_DRAIN_FOLLOWS", "1") };
    let params = Params::load(&Sources::from_process())?;
    let settings = params.typed();
    if !settings.enable {
        return run_without_scr(&launch_line(&args.command, &run_commands, None));
    }
    let rm = job::detect_resource_manager();
    if matches!(Launcher::detect(&args.command[0]), Launcher::Srun { .. }) && !rm.is_slurm() {
        return Err(fail(
            "srun runs jobs in a SLURM allocation, and this is not in one (no SLURM_JOB_ID): \
             run it inside `salloc --no-kill -N <nodes>` or an sbatch script (--no-kill keeps \
             the allocation when a node fails, so the next run can go on without it)",
        ));
    }
    let nodes = rm.nodes().map_err(fail)?;
    let job_id = super::job_id(&params);
    export_job(rm.as_ref(), &job_id);
    let prefix = super::prefix_dir(None, &params)?;
    // the job in the database is the user's computation in this prefix, as the library's
    let log = &settings.log;
    if log.enable && log.db.enable {
        let user = scr::layout::user_name();
        reporter.db = Some(scr_db::Sink::open(
            scr_db::Target::from_settings(&log.db, &user),
            &user,
            &prefix.to_string_lossy(),
            chrono::Local::now(),
        ));
    }
    let exclude = super::excluded_nodes(&params)?;
    let node_check = super::nodes::configured_node_check(&params, false);
    let launch_node = rm
        .nodes_are_hosts()
        .then(job::local_host_name)
        .filter(|h| nodes.contains(h));
    let cfg = LoopConfig {
        nodes: nodes.clone(),
        runs: runs_allowed(&settings.launch)?,
        min_nodes: settings.launch.min_nodes,
        launch_node,
        delay: Duration::from_secs(settings.launch.run_delay_secs),
    };
    let watchdog = watchdog_timeouts(&settings.launch)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| fail(format!("could not install a signal handler: {e}")))?;
    }
    reporter.say(
        "started",
        &format!(
            "job {job_id} ({}) on {} node(s) {nodes}, prefix {}",
            rm.name(),
            nodes.count(),
            prefix.display()
        ),
        serde_json::json!({"job_id": job_id, "resource_manager": rm.name(), "nodes": nodes.to_string(), "prefix": prefix.display().to_string()}),
    );
    refuse_a_prefix_others_control_for_root(&prefix)?;
    // (the library refuses it too, but the prerun would have worked there by then)
    scr::prefix::guard::check_path_not_redirectable(&prefix, settings.prefix.shared)?;
    if let Some(warning) = scr::prefix::prerun(&prefix)? {
        reporter.say(
            "warning",
            &format!("scr_prerun: {warning}"),
            serde_json::json!({"warning": warning}),
        );
    }
    // as SCR's scr_srun, which runs scr_prerun and scr_postrun around the runs and says so
    reporter.say(
        "prerun",
        &format!(
            "scr_prerun: {} ready (the last job's flush and nodes files cleared)",
            layout::prefix_hidden_dir(&prefix).display()
        ),
        serde_json::json!({}),
    );
    let watching = watch(&prefix, &reporter).into_iter().collect();
    let agents = if settings.flush.in_background {
        Some(Agents::start(
            &params,
            rm.as_ref(),
            &nodes,
            &job_id,
            &reporter,
        ))
    } else {
        None
    };
    let ranks = RunRanks::new(&params, &job_id, &nodes);
    let mut live = Live {
        launcher: Launcher::detect(&args.command[0]),
        command: args.command,
        run_commands,
        nodes,
        launch_prefix: prefix.clone(),
        prefix,
        watching,
        params: &params,
        rm: rm.as_ref(),
        exclude,
        node_check,
        stop,
        reporter: &reporter,
        watchdog,
        halt_seconds: Some(settings.halt.seconds as i64),
        halt_seconds_origin: match params.setting("SCR_HALT_SECONDS").map(|s| &s.origin) {
            Some(scr::params::Origin::File(at)) => at.clone(),
            Some(scr::params::Origin::Environment) => "the environment".into(),
            Some(scr::params::Origin::Default) | None => "the built-in default".into(),
        },
        reshape: settings.launch.reshape,
        ranks,
    };
    let outcome = job::run_loop(&mut live, &cfg);
    if matches!(outcome.ending, Ending::TooFewNodes { .. })
        && !rm.is_slurm()
        && std::env::var_os("SCR_NODELIST").is_none()
    {
        // (the library names nodes as MPI does; outside SLURM scr-run knows only this host)
        reporter.say(
            "hint",
            "outside a resource manager scr-run knows only the nodes SCR_NODELIST names (else \
             this host): set it to the nodes the job runs on, e.g. SCR_NODELIST='n[1-4]', so \
             that runs are counted, relaunched and drained on them",
            serde_json::json!({"set": "SCR_NODELIST"}),
        );
    }
    if let Some(agents) = agents {
        // what they did not finish, the drain copies from the caches
        agents.stop();
    }
    // the drain: whatever the last run left only in cache goes to the prefix
    drain_after(&params, &live.prefix, &outcome.down, &reporter);
    let code = match (&outcome.ending, outcome.last_exit) {
        (_, Some(c)) => c,
        (Ending::StopRequested, None) => 143,
        _ => 1,
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// Takes the lock that tells `scr halt --immediate` this scr-run stops the run on `prefix`
/// at once; without it (said) the halt still reaches the job at its next check.
fn watch(prefix: &std::path::Path, reporter: &Reporter) -> Option<scr::prefix::watch::Watching> {
    scr::prefix::watch::watch(prefix)
        .map_err(|e| {
            reporter.say(
                "warning",
                &format!(
                    "scr halt --immediate will not know this scr-run watches {}: {e}",
                    prefix.display()
                ),
                serde_json::json!({"prefix": prefix.display().to_string(), "error": e.to_string()}),
            )
        })
        .ok()
}

/// SCR_ENABLE=0: the command runs once, as it is, and its exit code is scr-run's.
fn run_without_scr(command: &[String]) -> scr::Result<ExitCode> {
    let (app, line) = job::child::command(&command[0], &command[1..]);
    let status = app
        .unchecked()
        .run()
        .map_err(|e| fail(job::child::not_started(&line, &e)))?
        .status;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// Every run of this job must find the same cache and control directories, and know when
/// the allocation ends: SCR_JOB_ID and SCR_END_TIME go into the environment the runs
/// inherit.
fn export_job(rm: &dyn job::ResourceManager, job_id: &str) {
    // SAFETY (set_var): scr-run is single-threaded here; children inherit the variables
    unsafe {
        std::env::set_var("SCR_JOB_ID", job_id);
        if std::env::var_os("SCR_END_TIME").is_none()
            && let Some(end) = rm.end_time()
        {
            std::env::set_var("SCR_END_TIME", end.to_string());
        }
    }
}

/// How many runs the job may have: SCR_RUNS (-1: no limit), else SCR_RETRIES + 1.
fn runs_allowed(launch: &Launch) -> scr::Result<Option<u32>> {
    Ok(match launch.runs {
        Some(n) if n < 0 => None,
        Some(n) => Some(n.clamp(1, i64::from(u32::MAX)) as u32),
        None => Some(launch.retries.saturating_add(1).min(u64::from(u32::MAX)) as u32),
    })
}

/// SCR_WATCHDOG's timeouts (a run's progress in compute, and while on the prefix).
fn watchdog_timeouts(launch: &Launch) -> scr::Result<Option<(Duration, Duration)>> {
    if !launch.watchdog {
        return Ok(None);
    }
    let compute = launch.watchdog_timeout.ok_or_else(|| {
        fail("SCR_WATCHDOG=1 needs SCR_WATCHDOG_TIMEOUT (seconds a run may go without progress)")
    })?;
    let pfs = launch.watchdog_timeout_pfs.unwrap_or(compute);
    Ok(Some((
        Duration::from_secs(compute),
        Duration::from_secs(pfs),
    )))
}

/// The drain after the last run, reported; a drain that fails leaves the prefix's last
/// flushed dataset as the restart point, which the report says.
fn drain_after(
    params: &Params,
    prefix: &std::path::Path,
    known_down: &HostSet,
    reporter: &Reporter,
) {
    // each line names scr_postrun, as SCR's scr_srun shows it ran it
    let drained = super::drain::postrun_with(params, prefix, known_down, true, &mut |line| {
        reporter.say(
            "postrun",
            &format!("scr_postrun: {line}"),
            serde_json::json!({}),
        )
    });
    match drained {
        Ok(true) => {}
        Ok(false) => reporter.say(
            "postrun",
            "scr_postrun: no dataset could be drained complete; the prefix keeps the last one \
             flushed",
            serde_json::json!({"drained": false}),
        ),
        Err(e) => reporter.say(
            "postrun",
            &format!("scr_postrun: drain failed: {e}"),
            serde_json::json!({"error": e.to_string()}),
        ),
    }
}

/// Root's scr-run works only in a prefix whose path nobody but root may change: it stays
/// root (the job it launches is root's), and a user who may change where the prefix leads
/// could steer root's preparation of it, and its drain, into directories of root's.
fn refuse_a_prefix_others_control_for_root(prefix: &std::path::Path) -> scr::Result<()> {
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let Some(who) = scr::safe_fs::others_may_redirect(prefix, |_| false)? else {
        return Ok(());
    };
    Err(scr::Error::untrusted(
        prefix,
        format!(
            "{who}: root's scr-run runs jobs only in prefixes no one else may redirect; run \
             scr-run as the job's user"
        ),
    ))
}
