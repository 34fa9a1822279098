//! Reading the log into [`Figures`] one event at a time: a run's state is kept until its
//! ending (and, for a run that died, the next run's RESTART) tells what its failures cost,
//! and each list keeps its newest [`MAX_ROWS`] rows.

use super::{
    Failure, FailureKind, Figures, FlushRate, Interval, Kept, MAX_ROWS, Measured, RunRow, Time,
    ending_slot,
};
use scr::event_log::{self, Ending, Event, RunSoFar, Skipped, StatsSoFar, kinds, seconds_between};
use std::collections::VecDeque;

/// A checkpoint of a run, as far as a RESTART may name it.
struct Written {
    time: Time,
    dset: Option<String>,
    name: Option<String>,
}

impl Written {
    fn of(e: &Event) -> Written {
        Written {
            time: e.time,
            dset: e.field("dset").map(str::to_string),
            name: e.field("name").map(str::to_string),
        }
    }

    /// Whether `restart` (a RESTART) names this checkpoint: by id where both have one,
    /// else by name.
    fn restarted_by(&self, restart: &Written) -> bool {
        match (&restart.dset, &self.dset) {
            (Some(a), Some(b)) => a == b,
            _ => restart.name.is_some() && restart.name == self.name,
        }
    }
}

/// A failure whose time lost waits on how its run ended.
struct Pending {
    failure: Failure,
    /// The time a failed checkpoint logged it took.
    secs: Option<f64>,
}

/// A run being read, or one that died and waits on the next run's RESTART.
struct OpenRun {
    number: usize,
    run: RunSoFar,
    jobid: Option<String>,
    /// Its first RESTART.
    restart: Option<Written>,
    restarted_from: Option<String>,
    /// Its newest checkpoints, for the next run's RESTART to name.
    written: VecDeque<Written>,
    checkpoints: u64,
    /// Its failures, oldest first, until its ending tells what they cost.
    failures: VecDeque<Pending>,
}

/// The figures of a log read one event at a time, oldest first.
///
/// Time lost to a run that died = its lost work (from the checkpoint the next run
/// restarted from, when this run wrote it, else from this run's start, to this run's last
/// logged event: a lower bound, as it died after that) + its restart (from that last event
/// to the next run's RESTART, or START when it restarted from nothing; when the next run is
/// another job, only from its START, as a new allocation's wait in the queue is not the
/// failure's). A failed checkpoint loses the time it took, unless a run that died
/// afterwards already counts it in its lost work; a failed fetch's time is in its run's
/// restart. Only the newest [`MAX_ROWS`] checkpoints of a run are looked through for the
/// one the next run restarted from, and only its newest [`MAX_ROWS`] failures wait on its
/// ending: older ones count the time they logged.
pub struct FiguresSoFar {
    fig: Figures,
    stats: StatsSoFar,
    open: Option<OpenRun>,
    /// The run before `open`, which died, until `open` restarts or ends.
    died: Option<OpenRun>,
    gaps: (f64, usize),
    /// The last checkpoint of the open run.
    last_checkpoint: Option<Time>,
    /// Runs started so far.
    started: usize,
    /// The newest checkpoint id logged so far, by any run.
    newest_logged: Option<u64>,
}

impl Default for FiguresSoFar {
    fn default() -> Self {
        FiguresSoFar {
            fig: Figures {
                runs: Kept::default(),
                endings: [0; 4],
                checkpoints: Kept::default(),
                outputs: Kept::default(),
                flushes: Kept::default(),
                fetches: Kept::default(),
                restarts: Kept::default(),
                halts: Kept::default(),
                failures: Kept::default(),
                failed_checkpoints: 0,
                records_missing: 0,
                flush_bandwidth: None,
                flush_rate: FlushRate::default(),
                stats: StatsSoFar::default().finish(),
                interval: Interval {
                    in_use: None,
                    gaps: 0,
                    cost: None,
                    mtbf: None,
                    young: None,
                    daly: None,
                },
                skipped: Skipped::default(),
                unlisted_time_lost: 0.0,
                failures_by_week: Default::default(),
                span: None,
            },
            stats: StatsSoFar::default(),
            open: None,
            died: None,
            gaps: (0.0, 0),
            last_checkpoint: None,
            started: 0,
            newest_logged: None,
        }
    }
}

impl FiguresSoFar {
    /// Takes in the log's next event.
    pub fn add(&mut self, e: Event) {
        self.stats.add(&e);
        if e.kind == kinds::START {
            self.close(true);
            self.started += 1;
            self.open = Some(OpenRun {
                number: self.started,
                run: RunSoFar::new(&e),
                jobid: e.jobid().map(str::to_string),
                restart: None,
                restarted_from: None,
                written: VecDeque::new(),
                checkpoints: 0,
                failures: VecDeque::new(),
            });
            self.fig.span.get_or_insert((e.time, e.time)).1 = e.time;
            return;
        }
        let Some(open) = &mut self.open else {
            // before the first START: a log cut at its head; no run's
            return;
        };
        open.run.add(&e);
        if let Some(span) = &mut self.fig.span
            && !e.by_the_drain()
        {
            span.1 = e.time;
        }
        let fig = &mut self.fig;
        let list = match e.kind.as_str() {
            kinds::CHECKPOINT => {
                open.checkpoints += 1;
                if let Some(id) = e.field("dset").and_then(|d| d.parse::<u64>().ok()) {
                    self.newest_logged = self.newest_logged.max(Some(id));
                }
                push_bounded(&mut open.written, Written::of(&e));
                // the gap from the last checkpoint's end to this one's start
                if let Some(last) = self.last_checkpoint.replace(e.time) {
                    let cost = e.seconds("secs").unwrap_or(0.0);
                    self.gaps.0 += (seconds_between(last, e.time) - cost).max(0.0);
                    self.gaps.1 += 1;
                }
                &mut fig.checkpoints
            }
            kinds::OUTPUT => &mut fig.outputs,
            kinds::FLUSH => &mut fig.flushes,
            kinds::FETCH => &mut fig.fetches,
            kinds::RESTART => &mut fig.restarts,
            kinds::HALT => &mut fig.halts,
            kinds::CHECKPOINT_FAILED | kinds::FETCH_FAILED => return self.failed(&e),
            _ => return,
        };
        let row = measured(open.number, &e);
        if e.kind == kinds::FLUSH {
            fig.flush_rate.add(&row);
        }
        list.push(row);
        if e.kind == kinds::RESTART && open.restart.is_none() {
            open.restart = Some(Written::of(&e));
            open.restarted_from = e.field("name").map(str::to_string);
            self.restart_known();
        }
    }

    /// A failed checkpoint or fetch of the open run.
    fn failed(&mut self, e: &Event) {
        let Some(open) = &mut self.open else { return };
        let kind = if e.kind == kinds::FETCH_FAILED {
            FailureKind::FetchFailed
        } else {
            self.fig.failed_checkpoints += 1;
            FailureKind::CheckpointFailed
        };
        let pending = Pending {
            failure: Failure {
                kind,
                run: open.number,
                time: e.time,
                dataset: e.field("name").map(str::to_string),
                lost_work: 0.0,
                restart: 0.0,
                failed_checkpoint: 0.0,
                note: None,
            },
            secs: e.seconds("secs"),
        };
        if let Some(oldest) = push_bounded(&mut open.failures, pending) {
            // too many to wait on the run's ending: it counts the time it logged
            let failure = settle(oldest, None);
            self.fig.unlisted_time_lost += failure.time_lost();
            self.by_week(&failure);
            self.fig.failures.pass();
        }
    }

    /// The open run's first RESTART names the checkpoint the run before it restarted
    /// from: that run's time lost is known.
    fn restart_known(&mut self) {
        if let Some(died) = self.died.take() {
            self.died_settled(died);
        }
    }

    /// Ends the open run: another run started after it (`followed`), or the log ended.
    fn close(&mut self, followed: bool) {
        // the run before waited on this one's RESTART, and there was none
        self.restart_known();
        self.last_checkpoint = None;
        let Some(mut open) = self.open.take() else {
            return;
        };
        let ending = open.run.ending(followed);
        self.fig.endings[ending_slot(ending)] += 1;
        let row = RunRow {
            number: open.number,
            jobid: open.jobid.clone(),
            start: open.run.start,
            last: open.run.last,
            ending,
            restarted_from: open.restarted_from.take(),
            checkpoints: open.checkpoints,
        };
        if let Some(old) = self.fig.runs.push(row) {
            // rows of runs no longer listed would have no row to stand on
            let fig = &mut self.fig;
            let gone = |m: &Measured| m.run <= old.number;
            for list in [
                &mut fig.checkpoints,
                &mut fig.outputs,
                &mut fig.flushes,
                &mut fig.fetches,
                &mut fig.restarts,
                &mut fig.halts,
            ] {
                list.drop_while(gone);
            }
            let mut lost = 0.0;
            while fig.failures.front().is_some_and(|f| f.run <= old.number) {
                lost += fig.failures.rows.pop_front().map_or(0.0, |f| f.time_lost());
            }
            fig.unlisted_time_lost += lost;
        }
        if ending == Ending::Failed {
            self.died = Some(open);
        } else {
            self.list_failures(open.failures, None);
        }
    }

    /// A run that died, now that the next run (the open one) restarted or ended, or the
    /// log ended without one.
    fn died_settled(&mut self, died: OpenRun) {
        let (since, restart_secs, note) = match &self.open {
            Some(next) => {
                let restart = next.restart.as_ref();
                let since = restart
                    .and_then(|r| died.written.iter().rev().find(|w| w.restarted_by(r)))
                    .map_or(died.run.start, |w| w.time);
                let back = restart.map_or(next.run.start, |r| r.time);
                let restart_secs = if died.jobid == next.jobid {
                    seconds_between(died.run.last, back)
                } else {
                    seconds_between(next.run.start, back)
                };
                // a restart from a checkpoint newer than any logged: records are missing
                // (a database that was down, a rank 0 killed before its records were
                // written), so the run may have finished as well as died
                let newer = restart
                    .and_then(|r| r.dset.as_deref()?.parse::<u64>().ok())
                    .filter(|r| self.newest_logged.is_some_and(|n| *r > n));
                let note = newer.map(|r| {
                    self.fig.records_missing += 1;
                    format!(
                        "records are missing: the next run restarted from dataset {r}, newer \
                         than any checkpoint logged, so this run may not have died"
                    )
                });
                (since, restart_secs, note)
            }
            // the last run died (its launcher saw it) and none came after it: the work
            // since its newest checkpoint is lost, and no restart took time
            None => (
                died.written.back().map_or(died.run.start, |w| w.time),
                0.0,
                Some("no run came after it".to_string()),
            ),
        };
        let run_died = Failure {
            kind: FailureKind::RunDied,
            run: died.number,
            time: died.run.last,
            dataset: None,
            lost_work: seconds_between(since, died.run.last),
            restart: restart_secs,
            failed_checkpoint: 0.0,
            note,
        };
        self.list_failures(died.failures, Some(since));
        self.list_failure(run_died);
    }

    /// Lists a run's failures, given where the work its death lost begins (if it died).
    fn list_failures(&mut self, pending: VecDeque<Pending>, died_since: Option<Time>) {
        for p in pending {
            self.list_failure(settle(p, died_since));
        }
    }

    /// Counts `failure` in its week, whether it is listed or not.
    fn by_week(&mut self, failure: &Failure) {
        let week = failure.time.format("%G-W%V").to_string();
        self.fig.failures_by_week.entry(week).or_default()[failure.kind.slot()] += 1;
    }

    fn list_failure(&mut self, failure: Failure) {
        self.by_week(&failure);
        if let Some(old) = self.fig.failures.push(failure) {
            self.fig.unlisted_time_lost += old.time_lost();
        }
    }

    /// The figures of the whole log, and what reading it skipped.
    pub fn finish(mut self, skipped: Skipped) -> Figures {
        self.close(false);
        // a last run that died waits on no run's RESTART
        if let Some(died) = self.died.take() {
            self.died_settled(died);
        }
        let mut fig = self.fig;
        fig.stats = self.stats.finish();
        fig.skipped = skipped;
        fig.flush_bandwidth = fig.flush_rate.mib_per_s();
        let (sum, gaps) = self.gaps;
        let cost = (fig.stats.checkpoints > 0).then_some(fig.stats.mean_checkpoint_seconds);
        let mtbf = fig.stats.mtbf_estimate();
        let optimum = |f: fn(f64, f64) -> f64| cost.zip(mtbf).map(|(c, (m, _))| f(c, m));
        fig.interval = Interval {
            in_use: (gaps > 0).then(|| sum / gaps as f64),
            gaps,
            cost,
            mtbf,
            young: optimum(event_log::young),
            daly: optimum(event_log::daly),
        };
        fig
    }
}

/// Appends `row`, handing back the oldest when that makes more than [`MAX_ROWS`].
fn push_bounded<T>(rows: &mut VecDeque<T>, row: T) -> Option<T> {
    rows.push_back(row);
    (rows.len() > MAX_ROWS).then(|| rows.pop_front()).flatten()
}

/// What a failure cost, now that its run's ending is known: `died_since` is where the
/// work lost by its run's death begins, when it died.
fn settle(p: Pending, died_since: Option<Time>) -> Failure {
    let mut failure = p.failure;
    let number = failure.run;
    if failure.kind == FailureKind::FetchFailed {
        failure.note = Some(format!("its time is in run {number}'s restart"));
    } else if died_since.is_some_and(|since| failure.time >= since) {
        failure.note = Some(format!("its time is in run {number}'s lost work"));
    } else if let Some(secs) = p.secs {
        failure.failed_checkpoint = secs;
    } else {
        failure.note = Some("the log does not say how long it took".into());
    }
    failure
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
        // (a halt is named by its reason)
        name: e
            .field("name")
            .or_else(|| e.field("reason"))
            .unwrap_or_default()
            .to_string(),
        secs,
        bytes,
        mb_per_s: e
            .number("mb_per_s")
            .filter(|v| bandwidth(*v))
            .or(computed.filter(|v| bandwidth(*v))),
        background: e.field("async") == Some("1"),
    }
}
