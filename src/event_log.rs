//! SCR's event log (SCR v3.1's text log, `<prefix>/.scr/log`): one line per event — a job
//! starting and ending, each checkpoint and output, flushes, fetches, restarts, halts and
//! failures — and what `scr ckpt-interval` reads back from it to choose a checkpoint
//! interval (Young's and Daly's formulas).
//!
//! A line is `<RFC 3339 time> event=<KIND> key=value …`; values never hold spaces.

use chrono::{DateTime, FixedOffset, Local};
use std::path::{Path, PathBuf};

/// Where the text log of a prefix is.
pub fn log_path(prefix: &Path) -> PathBuf {
    crate::layout::prefix_hidden_dir(prefix).join("log")
}

/// Event kinds this implementation writes.
pub mod kinds {
    pub const START: &str = "START";
    pub const END: &str = "END";
    pub const CHECKPOINT: &str = "CHECKPOINT";
    pub const OUTPUT: &str = "OUTPUT";
    pub const CHECKPOINT_FAILED: &str = "CHECKPOINT_FAILED";
    pub const FLUSH: &str = "FLUSH";
    pub const FETCH: &str = "FETCH";
    pub const FETCH_FAILED: &str = "FETCH_FAILED";
    pub const RESTART: &str = "RESTART";
    pub const HALT: &str = "HALT";
}

/// One event line. Spaces and control characters in values become `_`, so a line always
/// parses back into the same fields.
pub fn format_line(time: DateTime<Local>, kind: &str, fields: &[(&str, String)]) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_whitespace() || c.is_control() {
                    '_'
                } else {
                    c
                }
            })
            .collect()
    };
    let mut line = format!(
        "{} event={}",
        time.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
        clean(kind)
    );
    for (k, v) in fields {
        line.push_str(&format!(" {}={}", clean(k), clean(v)));
    }
    line
}

/// An event read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub time: DateTime<FixedOffset>,
    pub kind: String,
    pub fields: Vec<(String, String)>,
}

impl Event {
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A measure the event carries (`secs`, `bytes`, `mb_per_s` …): a finite number, not
    /// negative; None for a field that is missing or holds anything else (a log anyone
    /// could have edited must not turn a mean into NaN).
    pub fn number(&self, key: &str) -> Option<f64> {
        self.field(key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    }

    /// A duration the event carries, in seconds: a [`Event::number`] of at most a billion
    /// seconds (some 30 years; a larger one is no job's measure, and what is computed
    /// from it would overflow).
    pub fn seconds(&self, key: &str) -> Option<f64> {
        self.number(key).filter(|s| *s <= 1e9)
    }

    /// The job the event belongs to (every line the library writes names it).
    pub fn jobid(&self) -> Option<&str> {
        self.field("jobid")
    }
}

/// The events of the log at `path`, oldest first; lines that are not events (a torn last
/// line) are skipped.
pub fn read(path: &Path) -> crate::Result<Vec<Event>> {
    // a regular file, not through a link, within a bound: anyone who could put a FIFO or
    // a huge file in its place must not stall or exhaust the reader
    let file = crate::io::open_regular_no_link(path)?;
    let len = file
        .metadata()
        .map_err(|e| crate::Error::io(path, "stat", e))?
        .len();
    let bytes = crate::io::read_open_file(path, file, len, MAX_LOG_BYTES)?;
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(parse_line)
        .collect())
}

/// The largest event log read back (millions of events; a job's log is far smaller).
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// Reads one line; None for a line that is not an event (a torn last line, say).
pub fn parse_line(line: &str) -> Option<Event> {
    let mut words = line.split_whitespace();
    let time = DateTime::parse_from_rfc3339(words.next()?).ok()?;
    let mut kind = None;
    let mut fields = Vec::new();
    for w in words {
        let (k, v) = w.split_once('=')?;
        if k == "event" && kind.is_none() {
            kind = Some(v.to_string());
        } else {
            fields.push((k.to_string(), v.to_string()));
        }
    }
    Some(Event {
        time,
        kind: kind?,
        fields,
    })
}

/// How a run ended, as far as the log tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// SCR_Finalize was called (an END line).
    Finalized,
    /// A halt condition stopped it (a HALT line whose halt exits the job, and no END).
    Halted,
    /// No END and no halt, and another run started after it: the application died.
    Failed,
    /// The log's last run, without END or halt: still running, or killed with no run
    /// started since (the log cannot tell which).
    Open,
}

/// One run of the application: a START line and the events up to the next START.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    /// Its events, START first.
    pub events: &'a [Event],
    pub ending: Ending,
}

impl Run<'_> {
    pub fn start(&self) -> DateTime<FixedOffset> {
        self.events[0].time
    }

    /// The time of its last event: when it ended, or (failed) the last sign of life.
    pub fn last(&self) -> DateTime<FixedOffset> {
        self.events[self.events.len() - 1].time
    }

    /// Seconds from its START to its last event.
    pub fn seconds(&self) -> f64 {
        seconds_between(self.start(), self.last())
    }
}

/// The log split into runs at each START line (events before the first START, which a
/// log cut at its head may hold, belong to none).
pub fn runs(events: &[Event]) -> Vec<Run<'_>> {
    let starts: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].kind == kinds::START)
        .collect();
    let mut out = Vec::with_capacity(starts.len());
    for (n, &from) in starts.iter().enumerate() {
        let to = starts.get(n + 1).copied().unwrap_or(events.len());
        let run = &events[from..to];
        let finalized = run.iter().any(|e| e.kind == kinds::END);
        // a halt that exits ends the run on purpose, without SCR_Finalize
        let halted = run
            .iter()
            .any(|e| e.kind == kinds::HALT && e.field("exits") != Some("false"));
        let ending = if finalized {
            Ending::Finalized
        } else if halted {
            Ending::Halted
        } else if to < events.len() {
            Ending::Failed
        } else {
            Ending::Open
        };
        out.push(Run {
            events: run,
            ending,
        });
    }
    out
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

impl Stats {
    pub fn from_events(events: &[Event]) -> Stats {
        let runs = runs(events);
        let ckpt_secs: Vec<f64> = events
            .iter()
            .filter(|e| e.kind == kinds::CHECKPOINT)
            .filter_map(|e| e.seconds("secs"))
            .collect();
        let checkpoints = ckpt_secs.len() as u64;
        let mean_checkpoint_seconds = if checkpoints == 0 {
            0.0
        } else {
            ckpt_secs.iter().sum::<f64>() / checkpoints as f64
        };
        Stats {
            runs: runs.len() as u64,
            failures: runs.iter().filter(|r| r.ending == Ending::Failed).count() as u64,
            run_seconds: runs.iter().map(Run::seconds).sum(),
            checkpoints,
            mean_checkpoint_seconds,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_values_lose_their_spaces() {
        let t = Local::now();
        let line = format_line(
            t,
            "CHECKPOINT",
            &[("name", "ckpt 1".into()), ("secs", "0.5".into())],
        );
        let e = parse_line(&line).unwrap();
        assert_eq!(e.kind, "CHECKPOINT");
        assert_eq!(e.field("name"), Some("ckpt_1"));
        assert_eq!(e.field("secs"), Some("0.5"));
        assert!(parse_line("garbage").is_none());
        assert!(
            parse_line("2026-11-23T10:00:00+00:00 name=x").is_none(),
            "no event"
        );
    }

    #[test]
    fn failures_are_runs_that_never_ended_and_the_formulas_match_by_hand() {
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap();
        let ev = |t: &str, kind: &str, secs: Option<&str>| Event {
            time: at(t),
            kind: kind.into(),
            fields: secs
                .map(|s| vec![("secs".to_string(), s.to_string())])
                .unwrap_or_default(),
        };
        let events = [
            ev("2026-11-23T10:00:00+00:00", "START", None),
            ev("2026-11-23T10:01:00+00:00", "CHECKPOINT", Some("2")),
            ev("2026-11-23T10:10:00+00:00", "CHECKPOINT", Some("4")), // dies after this
            ev("2026-11-23T10:20:00+00:00", "START", None),
            ev("2026-11-23T10:30:00+00:00", "CHECKPOINT", Some("3")),
            ev("2026-11-23T10:40:00+00:00", "END", None),
        ];
        let s = Stats::from_events(&events);
        assert_eq!((s.runs, s.failures, s.checkpoints), (2, 1, 3));
        assert_eq!(s.run_seconds, 600.0 + 1200.0);
        assert_eq!(s.mean_checkpoint_seconds, 3.0);
        assert_eq!(s.mtbf(), Some(1800.0));
        assert!((young(3.0, 1800.0) - 103.923).abs() < 1e-3);
        // sqrt(10800) * (1 + sqrt(3/3600)/3 + (3/3600)/9) - 3
        let by_hand =
            10800f64.sqrt() * (1.0 + (3.0f64 / 3600.0).sqrt() / 3.0 + 3.0 / 3600.0 / 9.0) - 3.0;
        assert!((daly(3.0, 1800.0) - by_hand).abs() < 1e-9);
        assert_eq!(daly(5000.0, 1800.0), 1800.0);
    }

    #[test]
    fn a_halted_run_is_not_a_failure_and_the_last_run_without_end_is_open() {
        let line = |t: &str, rest: &str| parse_line(&format!("2026-11-23T10:{t}+00:00 {rest}"));
        let events: Vec<Event> = [
            line("00:00", "event=START"),
            line("01:00", "event=HALT exits=true"),
            line("01:30", "event=FLUSH secs=NaN"), // the halt flushes, then exits
            line("02:00", "event=START"),
            line("02:30", "event=HALT exits=false"), // noticed, not obeyed: it goes on
            line("03:00", "event=CHECKPOINT secs=-1"),
            line("04:00", "event=START"),
            line("05:00", "event=END"),
            line("06:00", "event=START"),
            line("06:10", "event=CHECKPOINT secs=1.5"),
            line("06:20", "event=CHECKPOINT secs=1e300"),
        ]
        .into_iter()
        .map(Option::unwrap)
        .collect();
        let endings: Vec<Ending> = runs(&events).iter().map(|r| r.ending).collect();
        assert_eq!(
            endings,
            [
                Ending::Halted,
                Ending::Failed,
                Ending::Finalized,
                Ending::Open
            ]
        );
        let s = Stats::from_events(&events);
        // 90 + 60 + 60 + 20 seconds; only the second run failed; the NaN, the negative and
        // the absurd cost are not measures
        assert_eq!((s.runs, s.failures, s.run_seconds), (4, 1, 230.0));
        assert_eq!((s.checkpoints, s.mean_checkpoint_seconds), (1, 1.5));
    }
}
