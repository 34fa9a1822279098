//! The figures `scr report` shows, computed from the event log alone: the runs and how
//! each ended, every checkpoint's cost and flush's bandwidth, the failures and the time
//! each one cost, and the checkpoint interval in use against Young's and Daly's optimum.
//! What a run and a failure are comes from the core (`scr::event_log::RunSoFar`), the cost
//! and mean time between failures from the statistics `scr ckpt-interval` prints, so the
//! two commands never disagree.
//!
//! The log is taken in one event at a time ([`FiguresSoFar`]): every count, mean and total
//! covers the whole log, while the rows listed (runs, checkpoints, flushes, failures …) are
//! the newest [`MAX_ROWS`] of each kind, so a log of any length takes bounded memory.

mod so_far;

pub use so_far::FiguresSoFar;

use chrono::{DateTime, FixedOffset};
use scr::event_log::{Ending, Skipped, Stats, seconds_between};
use std::collections::VecDeque;

pub type Time = DateTime<FixedOffset>;

/// The most rows of each kind the report lists (runs, checkpoints, flushes, failures …):
/// the newest. The tables fold long before, and the figures count every row.
pub const MAX_ROWS: usize = 1000;

/// The newest rows of a kind (at most [`MAX_ROWS`], oldest first, as a `VecDeque` through
/// `Deref`) and how many the log had in all.
pub struct Kept<T> {
    rows: VecDeque<T>,
    /// Rows of this kind in the whole log, listed or not.
    pub total: u64,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            rows: VecDeque::new(),
            total: 0,
        }
    }
}

impl<T> std::ops::Deref for Kept<T> {
    type Target = VecDeque<T>;
    fn deref(&self) -> &VecDeque<T> {
        &self.rows
    }
}

impl<'a, T> IntoIterator for &'a Kept<T> {
    type Item = &'a T;
    type IntoIter = std::collections::vec_deque::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows.iter()
    }
}

impl<T> Kept<T> {
    /// Keeps `row`, and hands back the oldest row when that makes one too many.
    fn push(&mut self, row: T) -> Option<T> {
        self.total += 1;
        self.rows.push_back(row);
        (self.rows.len() > MAX_ROWS)
            .then(|| self.rows.pop_front())
            .flatten()
    }

    /// Counts a row not kept.
    fn pass(&mut self) {
        self.total += 1;
    }

    /// Drops the oldest rows while `old` says so.
    fn drop_while(&mut self, old: impl Fn(&T) -> bool) {
        while self.rows.front().is_some_and(&old) {
            self.rows.pop_front();
        }
    }

    /// Rows of the log not listed.
    pub fn unlisted(&self) -> u64 {
        self.total - self.rows.len() as u64
    }
}

/// Everything the report computes from the log.
pub struct Figures {
    pub runs: Kept<RunRow>,
    /// Runs by how they ended (see [`ending_slot`]).
    endings: [u64; 4],
    pub checkpoints: Kept<Measured>,
    pub outputs: Kept<Measured>,
    pub flushes: Kept<Measured>,
    pub fetches: Kept<Measured>,
    pub restarts: Kept<Measured>,
    pub halts: Kept<Measured>,
    pub failures: Kept<Failure>,
    /// Failed checkpoints, listed or not.
    pub failed_checkpoints: u64,
    /// Runs counted as died though the next one restarted from a checkpoint newer than any
    /// logged: the log misses records, and they may have finished.
    pub records_missing: u64,
    /// The bandwidth of the flushes that logged one: their bytes over their seconds.
    pub flush_bandwidth: Option<f64>,
    /// What `flush_bandwidth` is computed from, for sums over jobs.
    pub flush_rate: FlushRate,
    pub stats: Stats,
    pub interval: Interval,
    /// What the log held that is not read as an event.
    pub skipped: Skipped,
    /// The time lost to the failures not listed.
    unlisted_time_lost: f64,
    /// Every failure, listed or not, by ISO week (`2026-W48`) and kind ([`FailureKind::slot`]).
    pub failures_by_week: std::collections::BTreeMap<String, [u64; 3]>,
    /// The first run's start and the last run's last event.
    span: Option<(Time, Time)>,
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
    /// The checkpoints it completed, listed or not.
    pub checkpoints: u64,
}

impl RunRow {
    pub fn seconds(&self) -> f64 {
        seconds_between(self.start, self.last)
    }
}

/// Where [`Figures`] counts the runs that ended as `e`.
fn ending_slot(e: Ending) -> usize {
    match e {
        Ending::Finalized => 0,
        Ending::Halted => 1,
        Ending::Failed => 2,
        Ending::Open => 3,
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

/// The flushes' bandwidth as a sum, not a mean of rates: bytes over seconds of those that
/// logged both (a mean of each flush's rate weighs a tiny flush as much as a large one, and
/// each logged rate is rounded), else the mean logged rate of those that logged only a rate
/// (v3.1's rows without bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlushRate {
    /// Bytes of the flushes that logged bytes and seconds (above zero).
    pub bytes: f64,
    /// Seconds of those flushes.
    pub secs: f64,
    /// Sum of the logged MiB/s of the flushes that logged a rate but no bytes.
    pub rates: f64,
    /// How many such flushes.
    pub rated: u64,
}

impl FlushRate {
    /// Takes in one flush.
    pub fn add(&mut self, m: &Measured) {
        match (m.bytes, m.secs) {
            (Some(b), Some(s)) if s > 0.0 => {
                self.bytes += b as f64;
                self.secs += s;
            }
            _ => {
                if let Some(bw) = m.mb_per_s {
                    self.rates += bw;
                    self.rated += 1;
                }
            }
        }
    }

    /// Takes in another's flushes.
    pub fn merge(&mut self, other: &FlushRate) {
        self.bytes += other.bytes;
        self.secs += other.secs;
        self.rates += other.rates;
        self.rated += other.rated;
    }

    /// MiB/s: bytes over seconds where any flush logged both, else the mean logged rate.
    pub fn mib_per_s(&self) -> Option<f64> {
        if self.secs > 0.0 {
            Some(self.bytes / self.secs / (1u64 << 20) as f64)
        } else {
            (self.rated > 0).then(|| self.rates / self.rated as f64)
        }
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
    /// Its place in a count of each kind ([`Figures::failures_by_week`]).
    pub fn slot(self) -> usize {
        match self {
            FailureKind::RunDied => 0,
            FailureKind::CheckpointFailed => 1,
            FailureKind::FetchFailed => 2,
        }
    }

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
        not_below_zero(self.lost_work)
            + not_below_zero(self.restart)
            + not_below_zero(self.failed_checkpoint)
    }
}

/// `x`, or +0 for a negative (times to the second can put an end before its start) and for
/// -0 (the sum of no `f64` at all), which a page would show as `-0.0 %`.
fn not_below_zero(x: f64) -> f64 {
    if x > 0.0 { x } else { 0.0 }
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
    /// The runs that ended as `ending`, listed or not.
    pub fn runs_ending(&self, ending: Ending) -> u64 {
        self.endings[ending_slot(ending)]
    }

    /// The time lost to all failures, in seconds.
    pub fn time_lost(&self) -> f64 {
        let listed: f64 = self.failures.iter().map(Failure::time_lost).sum();
        let unlisted = if self.failures.unlisted() == 0 {
            0.0
        } else {
            self.unlisted_time_lost
        };
        not_below_zero(listed + unlisted)
    }

    /// Seconds from the first run's start to the last run's last event.
    pub fn wall_seconds(&self) -> f64 {
        self.span.map_or(0.0, |(a, b)| seconds_between(a, b))
    }

    /// The first listed run's start: where the time axes begin.
    pub fn origin(&self) -> Option<Time> {
        self.runs.front().map(|r| r.start)
    }

    /// The last event of the last run.
    pub fn end(&self) -> Option<Time> {
        self.runs.back().map(|r| r.last)
    }

    /// The row of run `number` among the listed runs (1 for the oldest listed).
    pub fn row_of(&self, number: usize) -> usize {
        let first = self.runs.front().map_or(1, |r| r.number);
        number + 1 - first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flush(bytes: Option<u64>, secs: Option<f64>, mb_per_s: Option<f64>) -> Measured {
        Measured {
            run: 1,
            time: DateTime::parse_from_rfc3339("2026-11-02T10:00:00+00:00").unwrap(),
            dset: Some(1),
            name: "ckpt.1".into(),
            secs,
            bytes,
            mb_per_s,
            background: false,
        }
    }

    /// A job with no failure lost +0 s, which a page shows as `0.0 %`, never `-0.0 %` (the
    /// sum of no `f64` is -0), and a failure's parts timed to the second never lose less.
    #[test]
    fn time_lost_is_never_below_zero_nor_minus_zero() {
        let mut fig = super::so_far::FiguresSoFar::default().finish(Default::default());
        let lost = fig.time_lost();
        assert!(lost == 0.0 && lost.is_sign_positive(), "{lost}");
        // a run that died in the second its restart point was written, as the records say
        fig.failures.push(Failure {
            kind: FailureKind::RunDied,
            run: 1,
            time: DateTime::parse_from_rfc3339("2026-11-02T10:00:00+00:00").unwrap(),
            dataset: None,
            lost_work: -0.4,
            restart: -0.0,
            failed_checkpoint: 0.0,
            note: None,
        });
        let lost = fig.time_lost();
        assert!(lost == 0.0 && lost.is_sign_positive(), "{lost}");
        assert_eq!(format!("{:.1} %", 100.0 * lost / 60.0), "0.0 %");
    }

    /// 1 MiB in 1 s and 100 MiB in 10 s moved 101 MiB in 11 s: 9.18 MiB/s, not the 5.5 of
    /// a mean of the two rates; and the rounded rate each logged is not what is divided.
    #[test]
    fn the_flush_bandwidth_is_bytes_over_seconds_not_a_mean_of_rounded_rates() {
        let mib = 1u64 << 20;
        let mut rate = FlushRate::default();
        rate.add(&flush(Some(mib), Some(1.0), Some(1.0)));
        rate.add(&flush(Some(100 * mib), Some(10.0), Some(10.0)));
        let bw = rate.mib_per_s().unwrap();
        assert!((bw - 101.0 / 11.0).abs() < 1e-9, "{bw}");
        let mut one = FlushRate::default();
        one.add(&flush(Some(3 * mib), Some(7.0), Some(0.43)));
        assert!((one.mib_per_s().unwrap() - 3.0 / 7.0).abs() < 1e-12);
        // over jobs, the same sum
        let mut all = FlushRate::default();
        all.merge(&rate);
        all.merge(&one);
        assert!((all.mib_per_s().unwrap() - 104.0 / 18.0).abs() < 1e-9);
        // rows with a rate and no bytes (v3.1's) count as a mean only when nothing else does
        let mut rated = FlushRate::default();
        rated.add(&flush(None, Some(2.0), Some(4.0)));
        rated.add(&flush(None, None, Some(6.0)));
        assert_eq!(rated.mib_per_s(), Some(5.0));
        assert_eq!(FlushRate::default().mib_per_s(), None);
    }
}
