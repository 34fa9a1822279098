//! The loop's real world: the processes of a run, the halt file, the nodes file, signals,
//! the watchdog, and what scr-run says of each event.

use super::ranks::RunRanks;
use super::run_commands::{RunCommands, launch_line, restart_name};
use super::{Reporter, refuse_a_prefix_others_control_for_root, watch};
use crate::job::{
    self, DownNode, DownNodeQuery, Event, HaltCondition, JobOps, Launcher, NodeCheck, NotEnded,
    ResourceManager,
};
use hostlist::HostSet;
use scr::halt::HaltFile;
use scr::layout;
use scr::nodes::NodesFile;
use scr::params::{Params, Sources};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The real world for the loop: processes, the halt file, the nodes file, signals.
pub(super) struct Live<'a> {
    /// The job's id, in each launch's id ([`Live::launch_id`]).
    pub(super) job_id: String,
    pub(super) command: Vec<String>,
    /// v3.1's `--run-cmd`/`--restart-cmd`, appended to `command` run by run.
    pub(super) run_commands: RunCommands,
    pub(super) launcher: Launcher,
    pub(super) nodes: HostSet,
    pub(super) prefix: PathBuf,
    /// Where scr-run was launched and ran its prerun: `scr halt` there is meant for the
    /// job, also once the application's own prefix is followed.
    pub(super) launch_prefix: PathBuf,
    /// The locks that tell `scr halt --immediate` a scr-run will stop the run at once.
    pub(super) watching: Vec<scr::prefix::watch::Watching>,
    pub(super) params: &'a Params,
    pub(super) rm: &'a dyn ResourceManager,
    pub(super) exclude: HostSet,
    pub(super) node_check: NodeCheck,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) reporter: &'a Reporter,
    /// SCR_WATCHDOG: how long a run may go without flush progress (while computing, and
    /// while flushing to the prefix).
    pub(super) watchdog: Option<(Duration, Duration)>,
    /// SCR_HALT_SECONDS, where the halt file sets no HaltSeconds, and where it was set.
    pub(super) halt_seconds: Option<i64>,
    pub(super) halt_seconds_origin: String,
    /// SCR_RESHAPE: a run on fewer nodes than the command asks for runs fewer ranks.
    pub(super) reshape: bool,
    /// The processes of the run's ranks on this machine, as they record them.
    pub(super) ranks: RunRanks,
    /// The nodes the last look found down, and why.
    pub(super) last_down: Vec<DownNode>,
}

/// The directory every node in `down` failed the node test on, when they all failed it on
/// one: a base that is missing or unusable everywhere is a setting to fix, not nodes that
/// failed.
pub(super) fn directory_no_node_has(down: &[DownNode]) -> Option<&str> {
    const NO_ACCESS: &str = "FAIL: Could not access directory: ";
    let mut dirs = down.iter().map(|d| d.reason.strip_prefix(NO_ACCESS));
    let first = dirs.next()??;
    // (the reason may go on after the path: `: why`)
    let dir = first.split(": ").next().unwrap_or(first);
    dirs.all(|d| d.is_some_and(|d| d.split(": ").next() == Some(dir)))
        .then_some(dir)
}

/// The names of the variables of scr-run's environment every rank must see: the job (its
/// cache and control directories, when the allocation ends).
fn job_variables() -> Vec<&'static str> {
    let mut names = vec!["SCR_JOB_ID"];
    if std::env::var_os("SCR_END_TIME").is_some() {
        names.push("SCR_END_TIME");
    }
    names
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
    /// The id of `attempt`'s launch, which its run's START record names too.
    fn launch_id(&self, attempt: u32) -> String {
        scr::event_log::launch_id(&self.job_id, std::process::id(), attempt)
    }

    /// After a run: the prefix the application used, when its control directory records
    /// another than scr-run's (it set its own with `SCR_Configf`, or ran in another working
    /// directory), is where its halt file (SCR_Finalize's among them) and nodes file are.
    fn follow_recorded_prefix(&mut self) {
        let Some(recorded) = crate::commands::drain::recorded_prefix(self.params) else {
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
    /// ([`crate::commands::read_state`]).
    fn state<T: scr::HashView>(&self, file: fn(&std::path::Path) -> PathBuf) -> scr::Result<T> {
        crate::commands::read_state(&self.prefix, &file(&self.prefix))
    }

    /// Why the running job must be stopped now, if it must (checked about once a second).
    fn must_stop_run(&self, watch: &mut Watch) -> Option<NotEnded> {
        if watch.last_poll.elapsed() < Duration::from_secs(1) {
            return None;
        }
        watch.last_poll = Instant::now();
        let launch_halt = || {
            crate::commands::read_state::<HaltFile>(
                &self.launch_prefix,
                &layout::halt_file(&self.launch_prefix),
            )
        };
        if self
            .state::<HaltFile>(layout::halt_file)
            .is_ok_and(|h| h.exit_now())
            || (self.launch_prefix != self.prefix && launch_halt().is_ok_and(|h| h.exit_now()))
        {
            return Some(NotEnded {
                error: "halted immediately (scr halt --immediate)".into(),
                halted: true,
            });
        }
        if watch.rank_gone.is_none() {
            watch.rank_gone = self.ranks.gone().map(|who| (Instant::now(), who));
        }
        if let Some((seen, who)) = &watch.rank_gone
            && seen.elapsed() >= RANK_GONE_GRACE
        {
            return Some(
                format!(
                    "{who}, and the run still went on {} s later: its other ranks wait for it",
                    RANK_GONE_GRACE.as_secs()
                )
                .into(),
            );
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
            .into()
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
            && let Ok(exclude) = Params::load(&Sources::from_process())
                .and_then(|p| crate::commands::excluded_nodes(&p))
        {
            self.exclude = exclude;
        }
        let down = job::list_down_nodes(&DownNodeQuery {
            resource_manager: self.rm,
            nodes: self.nodes.clone(),
            known_down: known.clone(),
            exclude: self.exclude.clone(),
            node_check: Some(check),
        });
        self.last_down = down.clone();
        down
    }

    fn nodes_of_last_run(&mut self) -> Option<u64> {
        self.state::<NodesFile>(layout::nodes_file).ok()?.nodes()
    }

    fn launch(&mut self, attempt: u32, exclude: &HostSet) -> Result<Option<i32>, NotEnded> {
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
        // what the run learns of this launch: its id, for its START record; and which nodes
        // are down (with the user's SCR_EXCLUDE_NODES, which they include): a checkpoint it
        // cannot rebuild whose other writers' nodes are all down is lost, and it goes on
        // from an older one rather than stop for them
        let mut given = vec![(scr::event_log::LAUNCH_ID_VAR, self.launch_id(attempt))];
        if !exclude.is_empty() {
            given.push(("SCR_EXCLUDE_NODES", exclude.to_string()));
        }
        let mut every_rank = job_variables();
        every_rank.extend(given.iter().map(|(name, _)| *name));
        let argv = self.launcher.command(&line, &self.nodes, exclude);
        let argv = self.launcher.passing_env(argv, &every_rank);
        self.ranks.clear();
        let (app, line) = job::child::command(&argv[0], &argv[1..]);
        let app = given
            .into_iter()
            .fold(app, |app, (name, value)| app.env(name, value));
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
        let mut why: Option<NotEnded> = None;
        let mut watch = Watch {
            last_poll: Instant::now(),
            progress: None,
            since: Instant::now(),
            rank_gone: None,
        };
        loop {
            match app.try_wait() {
                // a run scr-run stopped did not finish, whatever it exited with
                Ok(Some(_)) if let Some(why) = why => {
                    return Err(NotEnded {
                        error: format!("stopped by scr-run ({})", why.error),
                        halted: why.halted,
                    });
                }
                Ok(Some(out)) => return Ok(out.status.code()),
                Ok(None) => {}
                Err(e) => return Err(format!("waiting for {}: {e}", argv[0]).into()),
            }
            if why.is_none() {
                why = if self.stop.load(Ordering::SeqCst) {
                    // stopped on purpose (scancel, a time limit, the user's ^C): no failure
                    // of the run's, as a halt is not
                    Some(NotEnded {
                        error: "asked to stop (SIGTERM or SIGINT to scr-run)".into(),
                        halted: true,
                    })
                } else {
                    self.must_stop_run(&mut watch)
                };
            }
            if let Some(NotEnded { error: reason, .. }) = &why {
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
                    serde_json::json!({
                        "attempt": attempt,
                        "nodes": nodes,
                        "exclude": exclude,
                        "launch": self.launch_id(attempt),
                    }),
                );
            }
            Event::RunEnded {
                attempt,
                exit_code,
                error,
                halted,
            } => {
                let how = match (&error, exit_code) {
                    (Some(e), _) => e.clone(),
                    (None, Some(c)) => format!("exit code {c}"),
                    (None, None) => "killed by a signal".into(),
                };
                r.say(
                    "run_ended",
                    &format!("attempt {attempt}: run ended: {how}"),
                    serde_json::json!({
                        "attempt": attempt,
                        "exit_code": exit_code,
                        // (a run a signal ended has no exit code)
                        "signal": (exit_code.is_none() && error.is_none()).then_some(1),
                        "error": error,
                        // (stopped on purpose: a halt that exits now)
                        "halted": halted.then_some(1),
                    }),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn down(node: &str, reason: &str) -> DownNode {
        DownNode {
            node: node.into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn a_directory_every_node_lacks_is_a_setting() {
        let missing = "FAIL: Could not access directory: /scratch/cache";
        assert_eq!(
            directory_no_node_has(&[down("n1", missing), down("n2", missing)]),
            Some("/scratch/cache")
        );
        // one node down for another reason: nodes that failed
        assert_eq!(
            directory_no_node_has(&[down("n1", missing), down("n2", "Failed to ping")]),
            None
        );
        let other = "FAIL: Could not access directory: /dev/shm";
        assert_eq!(
            directory_no_node_has(&[down("n1", missing), down("n2", other)]),
            None
        );
        assert_eq!(directory_no_node_has(&[]), None);
    }
}
