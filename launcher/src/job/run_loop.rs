//! The relaunch loop of SCR's `scr_srun` as pure decisions over a
//! [`JobOps`]: the real one runs commands, the tests' one follows a script.
//!
//! Each attempt: find the down nodes (once down, always down), work out the nodes needed
//! (SCR_MIN_NODES, else the nodes file of the last run, else all), stop when too few remain
//! or the launch node is down, launch excluding the down nodes, wait, then stop when the
//! runs are used up or a halt condition holds, else sleep and go again.

use hostlist::HostSet;
use std::time::Duration;

/// One node found unusable, and why (SCR's wording).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownNode {
    pub node: String,
    pub reason: String,
}

/// What the loop needs from the world.
pub trait JobOps {
    /// Nodes that cannot be used now, including every node in `known` (once down, always
    /// down). `first` is the first attempt (SCR checks free space then).
    fn down_nodes(&mut self, known: &HostSet, first: bool) -> Vec<DownNode>;
    /// Nodes the last run used (the nodes file), if known.
    fn nodes_of_last_run(&mut self) -> Option<u64>;
    /// Runs the application on all nodes but `exclude`; its exit code (None: killed by a
    /// signal), or why it did not end by itself (it could not start, scr-run stopped it).
    fn launch(&mut self, attempt: u32, exclude: &HostSet) -> Result<Option<i32>, NotEnded>;
    /// Why the job must stop relaunching (the halt file, the time left), if it must.
    /// `before_first_run`: the job has not run yet, so a previous job's finished run
    /// (SCR_FINALIZE_CALLED) does not count, as the library ignores it too.
    fn halt_condition(&mut self, before_first_run: bool) -> Option<HaltCondition>;
    /// True once scr-run was asked to stop (SIGTERM, SIGINT).
    fn stop_requested(&self) -> bool;
    fn sleep(&mut self, how_long: Duration);
    fn report(&mut self, event: Event);
}

/// A halt condition that holds: its reason (SCR's wording), and where it comes from and
/// how to clear it (the halt file's conditions go with `scr halt -r`; a time limit from
/// the configuration does not).
#[derive(Clone, Debug, PartialEq)]
pub struct HaltCondition {
    pub reason: String,
    pub clear: String,
}

/// How the loop is configured.
#[derive(Clone, Debug)]
pub struct LoopConfig {
    /// The allocation's nodes.
    pub nodes: HostSet,
    /// Runs to make; None = unlimited (SCR_RUNS=-1).
    pub runs: Option<u32>,
    /// SCR_MIN_NODES.
    pub min_nodes: Option<u64>,
    /// Where scr-run itself runs: if it goes down the job cannot go on.
    pub launch_node: Option<String>,
    /// Pause between runs.
    pub delay: Duration,
}

/// What the loop reports as it decides.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    NodesDown {
        attempt: u32,
        down: Vec<DownNode>,
    },
    Launch {
        attempt: u32,
        nodes: u64,
        exclude: String,
    },
    RunEnded {
        attempt: u32,
        exit_code: Option<i32>,
        error: Option<String>,
        /// scr-run stopped it because a halt condition said to exit now (`scr halt
        /// --immediate`): the run ended on purpose, not by a failure.
        halted: bool,
    },
    Sleeping {
        seconds: u64,
    },
    Finished {
        ending: Ending,
    },
}

/// Why a run did not end by itself.
#[derive(Clone, Debug, PartialEq)]
pub struct NotEnded {
    /// What happened, for the user.
    pub error: String,
    /// scr-run stopped it for a halt that exits now.
    pub halted: bool,
}

impl From<String> for NotEnded {
    /// A run that could not start, or was stopped for another reason than a halt.
    fn from(error: String) -> NotEnded {
        NotEnded {
            error,
            halted: false,
        }
    }
}

/// Why the loop stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    RunsExhausted {
        runs: u32,
    },
    Halted {
        reason: String,
    },
    /// A halt condition held before the first run: nothing was launched. `clear` says
    /// where the condition comes from and how to clear it.
    HaltedBeforeLaunch {
        reason: String,
        clear: String,
    },
    TooFewNodes {
        left: u64,
        needed: u64,
    },
    LaunchNodeDown {
        node: String,
    },
    StopRequested,
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::RunsExhausted { runs } => write!(f, "{runs} run(s) exhausted, ending run."),
            Ending::Halted { reason } => {
                write!(f, "Halt condition detected ({reason}), ending run.")
            }
            Ending::HaltedBeforeLaunch { reason, clear } => write!(
                f,
                "Halt condition detected before the first run ({reason}): not launching. {clear}"
            ),
            Ending::TooFewNodes { left, needed } => {
                write!(
                    f,
                    "(Nodes remaining={left}) < (Nodes needed={needed}), ending run."
                )
            }
            Ending::LaunchNodeDown { node } => {
                write!(f, "the node scr-run runs on ({node}) is down, ending run.")
            }
            Ending::StopRequested => write!(f, "asked to stop, ending run."),
        }
    }
}

impl Ending {
    /// The ending as data for `--json`: `{"ending": KIND, …its fields}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Ending::RunsExhausted { runs } => json!({"ending": "runs_exhausted", "runs": runs}),
            Ending::Halted { reason } => json!({"ending": "halted", "reason": reason}),
            Ending::HaltedBeforeLaunch { reason, clear } => {
                json!({"ending": "halted_before_launch", "reason": reason, "clear": clear})
            }
            Ending::TooFewNodes { left, needed } => {
                json!({"ending": "too_few_nodes", "nodes_left": left, "nodes_needed": needed})
            }
            Ending::LaunchNodeDown { node } => json!({"ending": "launch_node_down", "node": node}),
            Ending::StopRequested => json!({"ending": "stop_requested"}),
        }
    }
}

/// The outcome: why the loop ended, and the last run's exit code (None if no run
/// finished normally).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub ending: Ending,
    pub attempts: u32,
    pub last_exit: Option<i32>,
    /// Every node found down (the drain must not wait for them).
    pub down: HostSet,
}

/// Before attempt `attempt`: the nodes found down join `down` (the newly down ones are
/// reported); returns how many nodes are left, or why no run can start (too few left, the
/// launch node down).
fn nodes_for_attempt(
    ops: &mut dyn JobOps,
    cfg: &LoopConfig,
    down: &mut HostSet,
    attempt: u32,
) -> Result<u64, Ending> {
    let now_down = ops.down_nodes(down, attempt == 1);
    let newly: Vec<DownNode> = now_down
        .iter()
        .filter(|d| !down.contains(&d.node))
        .cloned()
        .collect();
    for d in &now_down {
        down.insert(&d.node);
    }
    if !newly.is_empty() {
        ops.report(Event::NodesDown {
            attempt,
            down: newly,
        });
    }
    let needed = cfg
        .min_nodes
        .or_else(|| ops.nodes_of_last_run().filter(|&n| n > 0))
        .unwrap_or_else(|| cfg.nodes.count());
    let left = cfg.nodes.difference(down).count();
    if left < needed {
        return Err(Ending::TooFewNodes { left, needed });
    }
    if let Some(node) = cfg.launch_node.as_ref().filter(|n| down.contains(n)) {
        return Err(Ending::LaunchNodeDown { node: node.clone() });
    }
    Ok(left)
}

pub fn run_loop(ops: &mut dyn JobOps, cfg: &LoopConfig) -> Outcome {
    let mut down = HostSet::new();
    let mut attempt = 0u32;
    let mut last_exit = None;
    let finish = |ops: &mut dyn JobOps, ending: Ending, attempts, last_exit, down: &HostSet| {
        ops.report(Event::Finished {
            ending: ending.clone(),
        });
        Outcome {
            ending,
            attempts,
            last_exit,
            down: down.clone(),
        }
    };
    loop {
        if ops.stop_requested() {
            return finish(ops, Ending::StopRequested, attempt, last_exit, &down);
        }
        if attempt == 0
            && let Some(HaltCondition { reason, clear }) = ops.halt_condition(true)
        {
            let ending = Ending::HaltedBeforeLaunch { reason, clear };
            return finish(ops, ending, 0, None, &down);
        }
        attempt += 1;
        let left = match nodes_for_attempt(ops, cfg, &mut down, attempt) {
            Ok(left) => left,
            Err(ending) => return finish(ops, ending, attempt - 1, last_exit, &down),
        };
        ops.report(Event::Launch {
            attempt,
            nodes: left,
            exclude: down.to_string(),
        });
        let (exit_code, error, halted) = match ops.launch(attempt, &down) {
            Ok(code) => (code, None, false),
            Err(e) => (None, Some(e.error), e.halted),
        };
        last_exit = exit_code;
        ops.report(Event::RunEnded {
            attempt,
            exit_code,
            error,
            halted,
        });
        if ops.stop_requested() {
            return finish(ops, Ending::StopRequested, attempt, last_exit, &down);
        }
        // a run that finished (SCR_Finalize) or was halted ended the job for that reason,
        // whether or not it was the last run allowed
        if let Some(HaltCondition { reason, .. }) = ops.halt_condition(false) {
            return finish(ops, Ending::Halted { reason }, attempt, last_exit, &down);
        }
        if let Some(runs) = cfg.runs
            && attempt >= runs
        {
            return finish(
                ops,
                Ending::RunsExhausted { runs },
                attempt,
                last_exit,
                &down,
            );
        }
        if !cfg.delay.is_zero() {
            ops.report(Event::Sleeping {
                seconds: cfg.delay.as_secs(),
            });
            ops.sleep(cfg.delay);
            // a halt may arrive while sleeping (SCR checks again too)
            if let Some(HaltCondition { reason, .. }) = ops.halt_condition(false) {
                return finish(ops, Ending::Halted { reason }, attempt, last_exit, &down);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted world: per attempt, which nodes are down, what the run returns, and
    /// whether the halt file says stop afterwards.
    #[derive(Default)]
    struct Script {
        down: Vec<Vec<(&'static str, &'static str)>>,
        exits: Vec<Result<Option<i32>, String>>,
        halt_after: Option<u32>,
        stop_after: Option<u32>,
        last_run_nodes: Option<u64>,
        launched: Vec<String>,
        slept: u32,
        events: Vec<Event>,
    }

    impl JobOps for Script {
        fn down_nodes(&mut self, known: &HostSet, _first: bool) -> Vec<DownNode> {
            let i = self.launched.len();
            let mut out: Vec<DownNode> = known
                .iter()
                .map(|n| DownNode {
                    node: n,
                    reason: "Specified on command line".into(),
                })
                .collect();
            for (n, r) in self.down.get(i).cloned().unwrap_or_default() {
                out.push(DownNode {
                    node: n.into(),
                    reason: r.into(),
                });
            }
            out
        }
        fn nodes_of_last_run(&mut self) -> Option<u64> {
            self.last_run_nodes
        }
        fn launch(&mut self, _attempt: u32, exclude: &HostSet) -> Result<Option<i32>, NotEnded> {
            self.launched.push(exclude.to_string());
            self.exits
                .get(self.launched.len() - 1)
                .cloned()
                .unwrap_or(Ok(Some(0)))
                .map_err(NotEnded::from)
        }
        fn halt_condition(&mut self, before_first_run: bool) -> Option<HaltCondition> {
            let n = self.launched.len() as u32;
            assert_eq!(
                before_first_run,
                n == 0,
                "asked before the first run only then"
            );
            // a finished run halts the loop; only a user's halt holds before the first
            let reason = if before_first_run {
                "JOB_HALTED"
            } else {
                "SCR_FINALIZE_CALLED"
            };
            self.halt_after.filter(|&h| n >= h).map(|_| HaltCondition {
                reason: reason.into(),
                clear: "`scr halt -r` removes it".into(),
            })
        }
        fn stop_requested(&self) -> bool {
            self.stop_after
                .is_some_and(|s| self.launched.len() as u32 >= s)
        }
        fn sleep(&mut self, _: Duration) {
            self.slept += 1;
        }
        fn report(&mut self, event: Event) {
            self.events.push(event);
        }
    }

    fn config(nodes: &str, runs: Option<u32>) -> LoopConfig {
        LoopConfig {
            nodes: nodes.parse().unwrap(),
            runs,
            min_nodes: None,
            launch_node: None,
            delay: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_failed_node_is_excluded_for_good_and_the_run_goes_on_without_it() {
        let mut s = Script {
            down: vec![vec![], vec![("node3", "Failed to ping")], vec![]],
            exits: vec![Ok(Some(137)), Ok(Some(1)), Ok(Some(0))],
            halt_after: Some(3),
            ..Default::default()
        };
        let mut cfg = config("node[1-5]", Some(5));
        cfg.min_nodes = Some(4);
        let out = run_loop(&mut s, &cfg);
        assert_eq!(s.launched, ["", "node3", "node3"], "once down, always down");
        assert_eq!(
            out,
            Outcome {
                ending: Ending::Halted {
                    reason: "SCR_FINALIZE_CALLED".into()
                },
                attempts: 3,
                last_exit: Some(0),
                down: "node3".parse().unwrap(),
            }
        );
        assert_eq!(s.slept, 2);
        let reported_down: Vec<_> = s
            .events
            .iter()
            .filter_map(|e| match e {
                Event::NodesDown { attempt, down } => Some((*attempt, down.len())),
                _ => None,
            })
            .collect();
        assert_eq!(reported_down, [(2, 1)], "each failure reported once");
    }

    #[test]
    fn a_last_allowed_run_that_finished_ends_for_having_finished_not_for_the_run_count() {
        let mut s = Script {
            exits: vec![Ok(Some(1)), Ok(Some(0))],
            halt_after: Some(2),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n[1-2]", Some(2)));
        assert_eq!(
            out.ending,
            Ending::Halted {
                reason: "SCR_FINALIZE_CALLED".into()
            }
        );
        assert_eq!(out.last_exit, Some(0));
    }

    #[test]
    fn runs_exhausted_returns_the_last_exit_code() {
        let mut s = Script {
            exits: vec![Ok(Some(3)), Ok(Some(4))],
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n[1-2]", Some(2)));
        assert_eq!(out.ending, Ending::RunsExhausted { runs: 2 });
        assert_eq!(out.last_exit, Some(4));
        assert_eq!(s.slept, 1, "no sleep after the last run");
    }

    #[test]
    fn too_few_nodes_left_stops_before_launching() {
        let mut s = Script {
            down: vec![vec![], vec![("n2", "Reported down by resource manager")]],
            exits: vec![Ok(Some(1))],
            last_run_nodes: Some(2),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n[1-2]", None));
        assert_eq!(out.ending, Ending::TooFewNodes { left: 1, needed: 2 });
        assert_eq!(out.attempts, 1);
        assert_eq!(out.last_exit, Some(1));
        // the nodes file of the last run lowers the need below "all nodes"
        let mut s = Script {
            down: vec![vec![("n3", "Failed to ping")]],
            last_run_nodes: Some(2),
            halt_after: Some(1),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n[1-3]", None));
        assert_eq!(s.launched, ["n3"]);
        assert!(matches!(out.ending, Ending::Halted { .. }));
    }

    #[test]
    fn the_launch_node_going_down_ends_the_job() {
        let mut s = Script {
            down: vec![vec![("n1", "Failed to ping")]],
            ..Default::default()
        };
        let mut cfg = config("n[1-4]", None);
        cfg.min_nodes = Some(1);
        cfg.launch_node = Some("n1".into());
        let out = run_loop(&mut s, &cfg);
        assert_eq!(out.ending, Ending::LaunchNodeDown { node: "n1".into() });
        assert!(s.launched.is_empty());
    }

    #[test]
    fn unlimited_runs_stop_on_halt_or_signal() {
        let mut s = Script {
            exits: vec![Ok(Some(1)); 10],
            stop_after: Some(4),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n1", None));
        assert_eq!(out.ending, Ending::StopRequested);
        assert_eq!(out.attempts, 4);
        // a launch that fails to start is a run that ended badly, not the end of the job
        let mut s = Script {
            exits: vec![Err("srun: not found".into()), Ok(Some(0))],
            halt_after: Some(2),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n1", None));
        assert_eq!(out.attempts, 2);
        assert_eq!(out.last_exit, Some(0));
    }

    #[test]
    fn a_halt_condition_before_the_first_run_launches_nothing() {
        let mut s = Script {
            halt_after: Some(0),
            ..Default::default()
        };
        let out = run_loop(&mut s, &config("n1", None));
        assert!(s.launched.is_empty(), "{:?}", s.launched);
        assert_eq!(out.attempts, 0);
        assert_eq!(out.last_exit, None);
        let Ending::HaltedBeforeLaunch { reason, .. } = &out.ending else {
            panic!("{:?}", out.ending);
        };
        assert_eq!(reason, "JOB_HALTED");
        assert!(
            out.ending.to_string().contains("scr halt -r"),
            "{}",
            out.ending
        );
    }
}
