//! The figures `scr report` shows, computed from the event log alone: the runs and how
//! each ended, every checkpoint's cost and flush's bandwidth, the failures and the time
//! each one cost, and the checkpoint interval in use against Young's and Daly's optimum.
//! What a run and a failure are comes from the core (`scr::event_log::runs`), the cost and
//! mean time between failures from the statistics `scr ckpt-interval` prints, so the two
//! commands never disagree.

use chrono::{DateTime, FixedOffset};
use scr::event_log::{self, Ending, Event, Run, Stats, kinds, seconds_between};

pub type Time = DateTime<FixedOffset>;

/// Everything the report computes from the log.
pub struct Figures {
    pub runs: Vec<RunRow>,
    pub checkpoints: Vec<Measured>,
    pub outputs: Vec<Measured>,
    pub flushes: Vec<Measured>,
    pub fetches: Vec<Measured>,
    pub restarts: Vec<Measured>,
    pub halts: Vec<Measured>,
    pub failures: Vec<Failure>,
    pub stats: Stats,
    pub interval: Interval,
}

/// One run of the application.
pub struct RunRow {
    /// 1 for the log's first run.
    pub number: usize,
    pub jobid: Option<String>,
    pub start: Time,
    /// Its last logged event.
    pub last: Time,
    pub ending: Ending,
    /// The checkpoint it restarted from (its RESTART event), if any.
    pub restarted_from: Option<String>,
}

impl RunRow {
    pub fn seconds(&self) -> f64 {
        seconds_between(self.start, self.last)
    }
}

/// How a run ended, in one word (the JSON's, the page's classes).
pub fn ending_name(e: Ending) -> &'static str {
    match e {
        Ending::Finalized => "ended",
        Ending::Halted => "halted",
        Ending::Failed => "died",
        Ending::Open => "open",
    }
}

/// How a run ended, as the legend and the tables say it.
pub fn ending_text(e: Ending) -> &'static str {
    match e {
        Ending::Finalized => "ended (SCR_Finalize)",
        Ending::Halted => "halted",
        Ending::Failed => "died",
        Ending::Open => "no end logged (running, or killed)",
    }
}

/// An event with what it measured (the fields it lacks are None).
pub struct Measured {
    /// The run it belongs to (1-based).
    pub run: usize,
    pub time: Time,
    pub dset: Option<u64>,
    pub name: String,
    pub secs: Option<f64>,
    pub bytes: Option<u64>,
    /// MiB/s, as the library logs it (else computed from bytes and seconds).
    pub mb_per_s: Option<f64>,
    /// A flush done in the background (SCR_FLUSH_ASYNC).
    pub background: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The run ended without SCR_Finalize or a halt, and another run followed.
    RunDied,
    /// A checkpoint that did not complete (CHECKPOINT_FAILED).
    CheckpointFailed,
    /// A restart that could not fetch a checkpoint from the prefix (FETCH_FAILED).
    FetchFailed,
}

impl FailureKind {
    /// A stable name (the JSON's and the page's).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::RunDied => "run-died",
            FailureKind::CheckpointFailed => "checkpoint-failed",
            FailureKind::FetchFailed => "fetch-failed",
        }
    }
}

/// A failure and the time it cost (see [`Figures::compute`] for the definitions).
pub struct Failure {
    pub kind: FailureKind,
    pub run: usize,
    pub time: Time,
    /// The dataset that failed (failed checkpoints and fetches).
    pub dataset: Option<String>,
    /// Work since the checkpoint the next run restarted from (a run that died).
    pub lost_work: f64,
    /// From the failure until the next run had its checkpoint back (a run that died).
    pub restart: f64,
    /// The time a failed checkpoint took.
    pub failed_checkpoint: f64,
    /// Why a failure counts no time of its own, when it does not.
    pub note: Option<String>,
}

impl Failure {
    pub fn time_lost(&self) -> f64 {
        self.lost_work + self.restart + self.failed_checkpoint
    }
}

/// The checkpoint interval in use and the optimum for the measured cost and MTBF.
pub struct Interval {
    /// Mean time from the end of one checkpoint to the start of the next in the same run.
    pub in_use: Option<f64>,
    /// How many such gaps were measured.
    pub gaps: usize,
    /// Mean checkpoint cost C (None before the first checkpoint).
    pub cost: Option<f64>,
    /// Mean time between failures M, and whether it is only a lower bound (no failure yet).
    pub mtbf: Option<(f64, bool)>,
    pub young: Option<f64>,
    pub daly: Option<f64>,
}

impl Figures {
    /// The figures of a log's events (oldest first).
    ///
    /// Time lost to a run that died = its lost work (from the checkpoint the next run
    /// restarted from, when this run wrote it, else from this run's start, to this run's
    /// last logged event: a lower bound, as it died after that) + its restart (from that
    /// last event to the next run's RESTART, or START when it restarted from nothing; when
    /// the next run is another job, only from its START, as a new allocation's wait in the
    /// queue is not the failure's). A failed checkpoint loses the time it took, unless a
    /// run that died afterwards already counts it in its lost work; a failed fetch's time
    /// is in its run's restart.
    pub fn compute(events: &[Event]) -> Figures {
        let runs = event_log::runs(events);
        let mut fig = Figures {
            runs: Vec::new(),
            checkpoints: Vec::new(),
            outputs: Vec::new(),
            flushes: Vec::new(),
            fetches: Vec::new(),
            restarts: Vec::new(),
            halts: Vec::new(),
            failures: Vec::new(),
            stats: Stats::from_events(events),
            interval: Interval {
                in_use: None,
                gaps: 0,
                cost: None,
                mtbf: None,
                young: None,
                daly: None,
            },
        };
        for (i, run) in runs.iter().enumerate() {
            let number = i + 1;
            let restart = run.events.iter().find(|e| e.kind == kinds::RESTART);
            fig.runs.push(RunRow {
                number,
                jobid: run.events[0].jobid().map(str::to_string),
                start: run.start(),
                last: run.last(),
                ending: run.ending,
                restarted_from: restart.and_then(|e| e.field("name")).map(str::to_string),
            });
            for e in run.events {
                let list = match e.kind.as_str() {
                    kinds::CHECKPOINT => &mut fig.checkpoints,
                    kinds::OUTPUT => &mut fig.outputs,
                    kinds::FLUSH => &mut fig.flushes,
                    kinds::FETCH => &mut fig.fetches,
                    kinds::RESTART => &mut fig.restarts,
                    kinds::HALT => &mut fig.halts,
                    _ => continue,
                };
                list.push(measured(number, e));
            }
        }
        fig.failures = failures(&runs);
        fig.interval = interval(&runs, &fig.stats);
        fig
    }

    /// The time lost to all failures, in seconds.
    pub fn time_lost(&self) -> f64 {
        self.failures.iter().map(Failure::time_lost).sum()
    }

    /// Seconds from the first run's start to the last run's last event.
    pub fn wall_seconds(&self) -> f64 {
        match (self.origin(), self.end()) {
            (Some(a), Some(b)) => seconds_between(a, b),
            _ => 0.0,
        }
    }

    /// The first run's start: where the time axes begin.
    pub fn origin(&self) -> Option<Time> {
        self.runs.first().map(|r| r.start)
    }

    /// The last event of the last run.
    pub fn end(&self) -> Option<Time> {
        self.runs.last().map(|r| r.last)
    }
}

fn measured(run: usize, e: &Event) -> Measured {
    let secs = e.seconds("secs");
    let bytes = e.field("bytes").and_then(|b| b.parse::<u64>().ok());
    let computed = match (bytes, secs) {
        (Some(b), Some(s)) if s > 0.0 => Some(b as f64 / s / (1u64 << 20) as f64),
        _ => None,
    };
    // beyond an exabyte a second, a bandwidth is no measure (a hand-edited log, or bytes
    // over a time rounded to nothing), and no axis could hold it
    let bandwidth = |v: f64| v.is_finite() && v <= 1e12;
    Measured {
        run,
        time: e.time,
        dset: e.field("dset").and_then(|d| d.parse().ok()),
        name: e.field("name").unwrap_or_default().to_string(),
        secs,
        bytes,
        mb_per_s: e
            .number("mb_per_s")
            .filter(|v| bandwidth(*v))
            .or(computed.filter(|v| bandwidth(*v))),
        background: e.field("async") == Some("1"),
    }
}

/// Where a run that died had its last checkpoint the next run restarted from: that
/// checkpoint's time when the run wrote it, else the run's start (all its work is lost).
fn lost_since(run: &Run, next: &Run) -> Time {
    let restart = next.events.iter().find(|e| e.kind == kinds::RESTART);
    restart
        .and_then(|r| {
            run.events.iter().rev().find(|e| {
                e.kind == kinds::CHECKPOINT
                    && match (r.field("dset"), e.field("dset")) {
                        (Some(a), Some(b)) => a == b,
                        _ => r.field("name").is_some() && r.field("name") == e.field("name"),
                    }
            })
        })
        .map_or(run.start(), |c| c.time)
}

fn failures(runs: &[Run]) -> Vec<Failure> {
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let number = i + 1;
        // the window a run that died loses: what happened in it is counted there
        let died = (run.ending == Ending::Failed).then(|| {
            let next = &runs[i + 1];
            let since = lost_since(run, next);
            let back = next
                .events
                .iter()
                .find(|e| e.kind == kinds::RESTART)
                .map_or(next.start(), |e| e.time);
            let same_job = run.events[0].jobid() == next.events[0].jobid();
            let restart = if same_job {
                seconds_between(run.last(), back)
            } else {
                seconds_between(next.start(), back)
            };
            (since, seconds_between(since, run.last()), restart)
        });
        for e in run.events {
            let kind = match e.kind.as_str() {
                kinds::CHECKPOINT_FAILED => FailureKind::CheckpointFailed,
                kinds::FETCH_FAILED => FailureKind::FetchFailed,
                _ => continue,
            };
            let mut failure = Failure {
                kind,
                run: number,
                time: e.time,
                dataset: e.field("name").map(str::to_string),
                lost_work: 0.0,
                restart: 0.0,
                failed_checkpoint: 0.0,
                note: None,
            };
            if kind == FailureKind::FetchFailed {
                failure.note = Some(format!("its time is in run {number}'s restart"));
            } else if died.is_some_and(|(since, _, _)| e.time >= since) {
                failure.note = Some(format!("its time is in run {number}'s lost work"));
            } else if let Some(secs) = e.seconds("secs") {
                failure.failed_checkpoint = secs;
            } else {
                failure.note = Some("the log does not say how long it took".into());
            }
            out.push(failure);
        }
        if let Some((_, lost_work, restart)) = died {
            out.push(Failure {
                kind: FailureKind::RunDied,
                run: number,
                time: run.last(),
                dataset: None,
                lost_work,
                restart,
                failed_checkpoint: 0.0,
                note: None,
            });
        }
    }
    out
}

/// The interval in use: the mean gap from one checkpoint's end to the next one's start in
/// the same run (a checkpoint's start is its completion less its cost).
fn interval(runs: &[Run], stats: &Stats) -> Interval {
    let mut gaps = Vec::new();
    for run in runs {
        let ckpts: Vec<&Event> = run
            .events
            .iter()
            .filter(|e| e.kind == kinds::CHECKPOINT)
            .collect();
        for pair in ckpts.windows(2) {
            let cost = pair[1].seconds("secs").unwrap_or(0.0);
            gaps.push((seconds_between(pair[0].time, pair[1].time) - cost).max(0.0));
        }
    }
    let cost = (stats.checkpoints > 0).then_some(stats.mean_checkpoint_seconds);
    let mtbf = stats.mtbf_estimate();
    let optimum = |f: fn(f64, f64) -> f64| cost.zip(mtbf).map(|(c, (m, _))| f(c, m));
    Interval {
        in_use: (!gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64),
        gaps: gaps.len(),
        cost,
        mtbf,
        young: optimum(event_log::young),
        daly: optimum(event_log::daly),
    }
}
