//! What a log says of runs and checkpoints: how each run ended ([`RunSoFar`]), and the
//! checkpoint cost and failure rate the interval is computed from ([`StatsSoFar`]).

use super::{Event, kinds};
use chrono::{DateTime, FixedOffset};

/// How a run ended, as far as the log tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// SCR_Finalize was called (an END line), no halt condition having stopped it.
    Finalized,
    /// A halt condition stopped it (a HALT line whose halt exits the job: the application
    /// then ends, through SCR_Finalize or not), or its launcher did on purpose.
    Halted,
    /// No END and no halt, and another run started after it, or its launcher saw it end
    /// badly ([`kinds::RUN_ENDED`]): the application died.
    Failed,
    /// The log's last run, without END or halt: still running, or killed with no run
    /// started since (the log cannot tell which).
    Open,
}

/// A run of the application as far as the log has been read: a START line and the events
/// after it. Fed one event at a time, so a log of any length takes no more memory.
#[derive(Clone, Debug)]
pub struct RunSoFar {
    pub start: DateTime<FixedOffset>,
    /// The time of its last event so far: when it ended, or (failed) the last sign of life.
    pub last: DateTime<FixedOffset>,
    finalized: bool,
    halted: bool,
    /// Its launcher saw it end badly ([`Event::ended_badly`]).
    died: bool,
}

impl RunSoFar {
    /// The run a START event begins.
    pub fn new(start: &Event) -> RunSoFar {
        RunSoFar {
            start: start.time,
            last: start.time,
            finalized: false,
            halted: false,
            died: false,
        }
    }

    /// Takes in the run's next event.
    pub fn add(&mut self, e: &Event) {
        // the drain after a run (its flushes) is no sign of the run's life: a drain long
        // after a run died would count as the run's time and its lost work
        if e.by_the_drain() {
            return;
        }
        self.last = e.time;
        self.finalized |= e.kind == kinds::END;
        // a halt that exits ends the run on purpose, without SCR_Finalize
        self.halted |=
            (e.kind == kinds::HALT && e.field("exits") != Some("false")) || e.halted_by_launcher();
        self.died |= e.ended_badly();
    }

    /// How it ended, given whether another run started after it.
    pub fn ending(&self, followed: bool) -> Ending {
        if self.halted {
            Ending::Halted
        } else if self.finalized {
            Ending::Finalized
        } else if followed || self.died {
            Ending::Failed
        } else {
            Ending::Open
        }
    }

    /// Seconds from its START to its last event.
    pub fn seconds(&self) -> f64 {
        seconds_between(self.start, self.last)
    }
}

/// What a log says about checkpoint cost and failures.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Runs (START lines).
    pub runs: u64,
    /// Runs that ended without an END line or a halt (the application died) and were
    /// followed by another run: the failures.
    pub failures: u64,
    /// Seconds from each run's START to its last event, summed.
    pub run_seconds: f64,
    /// Completed checkpoints and their mean cost in seconds.
    pub checkpoints: u64,
    pub mean_checkpoint_seconds: f64,
}

/// [`Stats`] computed as the log is read, one event at a time (events before the first
/// START, which a log cut at its head may hold, belong to no run).
#[derive(Clone, Debug, Default)]
pub struct StatsSoFar {
    runs: u64,
    failures: u64,
    run_seconds: f64,
    checkpoints: u64,
    checkpoint_seconds: f64,
    open: Option<RunSoFar>,
}

impl StatsSoFar {
    /// Takes in the log's next event.
    pub fn add(&mut self, e: &Event) {
        if e.kind == kinds::START {
            self.close(true);
            self.runs += 1;
            self.open = Some(RunSoFar::new(e));
        } else if let Some(run) = &mut self.open {
            run.add(e);
        }
        if e.kind == kinds::CHECKPOINT
            && let Some(secs) = e.seconds("secs")
        {
            self.checkpoints += 1;
            self.checkpoint_seconds += secs;
        }
    }

    fn close(&mut self, followed: bool) {
        if let Some(run) = self.open.take() {
            self.failures += u64::from(run.ending(followed) == Ending::Failed);
            self.run_seconds += run.seconds();
        }
    }

    /// The statistics of the whole log read (its last run still open).
    pub fn finish(mut self) -> Stats {
        self.close(false);
        Stats {
            runs: self.runs,
            failures: self.failures,
            run_seconds: self.run_seconds,
            checkpoints: self.checkpoints,
            mean_checkpoint_seconds: if self.checkpoints == 0 {
                0.0
            } else {
                self.checkpoint_seconds / self.checkpoints as f64
            },
        }
    }
}

impl Stats {
    /// The statistics of a log's events, oldest first.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Stats {
        let mut stats = StatsSoFar::default();
        for e in events {
            stats.add(e);
        }
        stats.finish()
    }

    /// Mean time between failures, in seconds (None without failures).
    pub fn mtbf(&self) -> Option<f64> {
        (self.failures > 0).then(|| self.run_seconds / self.failures as f64)
    }

    /// The mean time between failures to plan with, and whether it is only a lower bound:
    /// with no failure logged yet, the job has run at least its whole logged run time
    /// without one (so the interval computed from it is a lower bound too). None when
    /// nothing has run.
    pub fn mtbf_estimate(&self) -> Option<(f64, bool)> {
        match self.mtbf() {
            Some(m) => Some((m, false)),
            None => (self.run_seconds > 0.0).then_some((self.run_seconds, true)),
        }
    }
}

/// Seconds from `a` to `b` (0 when the clock went backwards between them).
pub fn seconds_between(a: DateTime<FixedOffset>, b: DateTime<FixedOffset>) -> f64 {
    (b - a).num_milliseconds().max(0) as f64 / 1000.0
}

/// Young's optimal checkpoint interval: sqrt(2 C M), for checkpoint cost C and mean time
/// between failures M.
pub fn young(cost: f64, mtbf: f64) -> f64 {
    (2.0 * cost * mtbf).sqrt()
}

/// Daly's higher-order estimate: sqrt(2CM) · (1 + (1/3)·sqrt(C/2M) + (1/9)·(C/2M)) − C
/// when C < 2M, else M.
pub fn daly(cost: f64, mtbf: f64) -> f64 {
    if cost >= 2.0 * mtbf {
        return mtbf;
    }
    let r = cost / (2.0 * mtbf);
    (2.0 * cost * mtbf).sqrt() * (1.0 + r.sqrt() / 3.0 + r / 9.0) - cost
}
