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
}

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

/// What a log says about checkpoint cost and failures.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Runs (START lines).
    pub runs: u64,
    /// Runs that ended without an END line (the application died) and were followed by
    /// another run: the failures.
    pub failures: u64,
    /// Seconds from each run's START to its last event, summed.
    pub run_seconds: f64,
    /// Completed checkpoints and their mean cost in seconds.
    pub checkpoints: u64,
    pub mean_checkpoint_seconds: f64,
}

impl Stats {
    pub fn from_events(events: &[Event]) -> Stats {
        let mut runs = 0;
        let mut failures = 0;
        let mut run_seconds = 0.0;
        let mut ckpt_secs = Vec::new();
        let mut run_start: Option<DateTime<FixedOffset>> = None;
        let mut last = None;
        let mut ended = true;
        for e in events {
            if e.kind == kinds::START {
                if let (Some(s), Some(l)) = (run_start, last) {
                    run_seconds += seconds_between(s, l);
                    if !ended {
                        failures += 1;
                    }
                }
                runs += 1;
                run_start = Some(e.time);
                ended = false;
            } else if e.kind == kinds::END {
                ended = true;
            } else if e.kind == kinds::CHECKPOINT
                && let Some(secs) = e.field("secs").and_then(|s| s.parse::<f64>().ok())
            {
                ckpt_secs.push(secs);
            }
            last = Some(e.time);
        }
        if let (Some(s), Some(l)) = (run_start, last) {
            run_seconds += seconds_between(s, l);
        }
        let checkpoints = ckpt_secs.len() as u64;
        let mean_checkpoint_seconds = if checkpoints == 0 {
            0.0
        } else {
            ckpt_secs.iter().sum::<f64>() / checkpoints as f64
        };
        Stats {
            runs,
            failures,
            run_seconds,
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

fn seconds_between(a: DateTime<FixedOffset>, b: DateTime<FixedOffset>) -> f64 {
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
}
