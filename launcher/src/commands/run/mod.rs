//! `scr-run <launcher> [args] <app> [args]` (`scr run`; SCR's `scr_srun` is `scr-run
//! srun`): runs an MPI job under SCR, relaunching it around failed nodes until it finishes,
//! halts, or runs out of runs or nodes. Returns the application's exit status.

use crate::job::{self, Ending, Launcher, LoopConfig};
use hostlist::HostSet;
use scr::layout;
use scr::params::settings::Launch;
use scr::params::{Params, Sources};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

mod agents;
mod live;
mod ranks;
mod run_commands;

use agents::Agents;
use live::Live;
use ranks::RunRanks;
use run_commands::{launch_line, take_run_commands};

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
    db: std::sync::Mutex<Option<scr_db::Sink>>,
    /// Opens the database log again: a log a server's outage turned off is taken up again
    /// at the next run's launch and end, rather than lost for the rest of the allocation.
    reopen: Option<Box<dyn Fn() -> Option<scr_db::Sink>>>,
    /// The prefix's text log (SCR_LOG_ENABLE and SCR_LOG_TXT_ENABLE), which takes scr-run's
    /// launches and how each run ended ([`TEXT_LOGGED`]) and the drain's flushes: a run
    /// that ended badly, or that scr-run stopped for a halt, is told there as in the
    /// database, which the library alone cannot tell.
    text_log: Option<super::TextLogOf>,
}

/// scr-run's events that its text log takes too.
const TEXT_LOGGED: [&str; 2] = ["launch", "run_ended"];

/// The events at which a database log that went off is opened again: a run's bounds.
const REOPEN_AT: [&str; 3] = ["launch", "run_ended", "finished"];

/// The events scr-run's database log writes before it goes on (for at most
/// [`scr_db::TIMEOUT`]): a launch reaches the server before the run it starts logs its own
/// records through a connection of its own, so the rows are in the order of the events.
const WRITTEN_BEFORE_GOING_ON: [&str; 1] = ["launch"];

impl Reporter {
    fn say(&self, event: &str, text: &str, fields: serde_json::Value) {
        let now = chrono::Local::now();
        let mut record = record_of(&fields);
        if record.is_empty() {
            record.push(("message", text.to_string()));
        }
        let kind = record_kind(event);
        self.to_db(&kind, now, &record, REOPEN_AT.contains(&event));
        if WRITTEN_BEFORE_GOING_ON.contains(&event)
            && let Some(db) = self.db.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
        {
            db.settle(scr_db::TIMEOUT);
        }
        if TEXT_LOGGED.contains(&event)
            && let Some(log) = &self.text_log
        {
            log.append(now, &kind, &record);
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

impl Reporter {
    /// Hands `kind` to the database log; at `reopen`, one that went off is opened again
    /// first.
    fn to_db(
        &self,
        kind: &str,
        now: chrono::DateTime<chrono::Local>,
        record: &[(&str, String)],
        reopen: bool,
    ) {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        if reopen
            && db.as_ref().is_some_and(|s| !s.is_on())
            && let Some(reopen) = &self.reopen
        {
            *db = reopen();
        }
        if let Some(db) = db.as_ref() {
            db.record(kind, now, record);
        }
    }

    /// The drain's flush of a dataset to the prefix, as the library logs its own flushes
    /// (`FLUSH`, marked `drain=1`): the report's flush bandwidth counts it.
    fn flushed(&self, prefix: &std::path::Path, fields: &[(&str, String)]) {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        super::event_logs::log_drained(db.as_ref(), self.text_log.as_ref(), prefix, fields);
    }
}

/// The record kind of scr-run's `event`: `SCR_RUN_<EVENT>`.
fn record_kind(event: &str) -> String {
    format!("SCR_RUN_{}", event.to_ascii_uppercase())
}

/// An event's JSON fields as a record's `key=value` fields (nulls left out).
fn record_of(fields: &serde_json::Value) -> Vec<(&str, String)> {
    let mut record: Vec<(&str, String)> = Vec::new();
    if let serde_json::Value::Object(map) = fields {
        for (k, v) in map {
            match v {
                serde_json::Value::Null => {}
                serde_json::Value::String(s) => record.push((k, s.clone())),
                v => record.push((k, v.to_string())),
            }
        }
    }
    record
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
        db: Default::default(),
        reopen: None,
        text_log: None,
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
    // the library's user, whose records of this job these join
    let user = params.typed().places.user();
    reporter.db = super::db_log(&params, &prefix, user.clone()).into();
    reporter.text_log = super::TextLogOf::new(&params, &prefix, user.clone(), job_id.clone());
    reporter.reopen = Some({
        let (params, prefix) = (params.clone(), prefix.clone());
        Box::new(move || super::db_log(&params, &prefix, user.clone()))
    });
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
    // (as the library refuses it at its SCR_Init: said before the prerun writes there; a
    // prefix not made yet is the library's to make)
    if prefix.is_dir() {
        scr::prefix::guard::check_not_shared(&prefix, settings.prefix.shared)?;
    }
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
        job_id: job_id.clone(),
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
        last_down: Vec::new(),
    };
    let outcome = job::run_loop(&mut live, &cfg);
    let missing_everywhere = live::directory_no_node_has(&live.last_down);
    if let (Ending::TooFewNodes { .. }, Some(dir)) = (&outcome.ending, missing_everywhere) {
        reporter.say(
            "hint",
            &format!(
                "every node failed the node test on {dir}: a control or cache base \
                 (SCR_CNTL_BASE, SCR_CACHE_BASE, a STORE of the configuration) that is missing \
                 or unusable on all of them is a setting to fix, not nodes that failed"
            ),
            serde_json::json!({"directory": dir}),
        );
    } else if matches!(outcome.ending, Ending::TooFewNodes { .. })
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
    let drained = super::drain::postrun_with(
        params,
        prefix,
        known_down,
        true,
        &mut |line| {
            reporter.say(
                "postrun",
                &format!("scr_postrun: {line}"),
                serde_json::json!({}),
            )
        },
        &mut |to, fields| reporter.flushed(to, fields),
    );
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
