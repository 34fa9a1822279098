//! SCR's event log (SCR v3.1's text log, `<prefix>/.scr/log`): one line per event — a job
//! starting and ending, each checkpoint and output, flushes, fetches, restarts, halts and
//! failures — and what `scr ckpt-interval` reads back from it to choose a checkpoint
//! interval (Young's and Daly's formulas).
//!
//! A line is `<RFC 3339 time> event=<KIND> key=value …`; values never hold spaces.

use chrono::{DateTime, FixedOffset, Local};
use std::path::{Path, PathBuf};

mod stats;
mod text_log;
pub use stats::{Ending, RunSoFar, Stats, StatsSoFar, daly, seconds_between, young};
pub use text_log::TextLog;

/// Where the text log of a prefix is.
pub fn log_path(prefix: &Path) -> PathBuf {
    crate::layout::prefix_hidden_dir(prefix).join(LOG_NAME)
}

/// The text log's name in the prefix's `.scr`.
pub const LOG_NAME: &str = "log";

/// Seconds and the bandwidth they give for `bytes`, as event fields: `bytes`, `secs` and
/// `mb_per_s` (MiB a second).
pub fn timing(bytes: u64, secs: f64) -> [(&'static str, String); 3] {
    let bw = if secs > 0.0 {
        bytes as f64 / secs / (1 << 20) as f64
    } else {
        0.0
    };
    [
        ("bytes", bytes.to_string()),
        ("secs", format!("{secs:.3}")),
        ("mb_per_s", format!("{bw:.1}")),
    ]
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
    /// scr-run's launch of a run (the database log only; v3.1's `RUN_START`).
    pub const LAUNCH: &str = "SCR_RUN_LAUNCH";
    /// scr-run's record of how a run it launched ended (the database log only, v3.1's
    /// `RUN_END`: its `exit_code`, `signal=1` for a run a signal ended, or its `error`).
    pub const RUN_ENDED: &str = "SCR_RUN_RUN_ENDED";
    /// A node scr-run found down (the database log only, v3.1's `NODE_FAIL`).
    pub const NODE_DOWN: &str = "SCR_RUN_NODE_DOWN";
}

/// The environment variable in which scr-run gives each run it launches the launch's id
/// ([`launch_id`]): the run's START record carries it (`launch=`) as scr-run's LAUNCH record
/// does, so a reader ties a run to its launch in whatever order the two processes' records
/// were written.
pub const LAUNCH_ID_VAR: &str = "SCR_LAUNCH_ID";

/// The launch id of `attempt` of the scr-run of `job_id` with process id `pid`: characters
/// of the job id other than letters, digits, `.`, `-` and `_` become `_`.
pub fn launch_id(job_id: &str, pid: u32, attempt: u32) -> String {
    let job: String = job_id
        .chars()
        .take(64)
        .map(|c| if launch_id_char(c) { c } else { '_' })
        .collect();
    format!("{job}.{pid}.{attempt}")
}

/// The launch id scr-run gave this process's run ([`LAUNCH_ID_VAR`]), if it is one.
pub fn launch_id_of_this_run() -> Option<String> {
    std::env::var(LAUNCH_ID_VAR)
        .ok()
        .filter(|id| !id.is_empty() && id.len() <= 128 && id.chars().all(launch_id_char))
}

fn launch_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')
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

    /// Whether this is the launcher's record of a run that ended badly: a
    /// [`kinds::RUN_ENDED`] with an exit code other than 0, a signal, or an error, and not
    /// stopped for a halt ([`Event::halted_by_launcher`]; v3.1's `RUN_END`, which says none
    /// of them, tells of no failure).
    pub fn ended_badly(&self) -> bool {
        self.kind == kinds::RUN_ENDED
            && !self.halted_by_launcher()
            && (self.field("exit_code").is_some_and(|c| c != "0")
                || self.field("signal").is_some()
                || self.field("error").is_some())
    }

    /// Whether this is the launcher's record of a run it stopped for a halt that exits now
    /// (`scr halt --immediate`): `halted=1`.
    pub fn halted_by_launcher(&self) -> bool {
        self.kind == kinds::RUN_ENDED && self.field("halted") == Some("1")
    }

    /// Whether the drain after a run logged it (a flush of `scr postrun`'s or scr-run's
    /// drain: `drain=1`), not the run.
    pub fn by_the_drain(&self) -> bool {
        self.field("drain") == Some("1")
    }

    /// The job the event belongs to (every line the library writes names it).
    pub fn jobid(&self) -> Option<&str> {
        self.field("jobid")
    }
}

/// What reading a log left out, and why: a log anyone who could write to it may have
/// filled with anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Bytes at the head of a log of more than [`MAX_LOG_BYTES`], not read (the newest
    /// events are the ones read).
    pub head_bytes: u64,
    /// Lines that are no event (garbage, a torn last line, an empty line).
    pub malformed_lines: u64,
    /// Lines of more than [`MAX_LINE_BYTES`], not read.
    pub over_long_lines: u64,
}

impl Skipped {
    /// Whether every line of the log was read.
    pub fn nothing(&self) -> bool {
        *self == Skipped::default()
    }
}

impl std::fmt::Display for Skipped {
    /// What was skipped, in words ("nothing" when nothing was).
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let count = |n: u64, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        let mut parts = Vec::new();
        if self.head_bytes > 0 {
            parts.push(format!(
                "{} at its head (only its last {MAX_LOG_BYTES} bytes are read)",
                count(self.head_bytes, "byte", "bytes")
            ));
        }
        if self.malformed_lines > 0 {
            parts.push(count(
                self.malformed_lines,
                "line that is no event",
                "lines that are no event",
            ));
        }
        if self.over_long_lines > 0 {
            parts.push(count(
                self.over_long_lines,
                &format!("line of more than {MAX_LINE_BYTES} bytes"),
                &format!("lines of more than {MAX_LINE_BYTES} bytes"),
            ));
        }
        if parts.is_empty() {
            return f.write_str("nothing");
        }
        f.write_str(&parts.join(", "))
    }
}

/// Reads the log at `path` one line at a time, oldest first, handing each event to `each`;
/// returns what it skipped. Memory stays within a line's bound whatever the file holds: a
/// line longer than [`MAX_LINE_BYTES`] is skipped, and of a log longer than
/// [`MAX_LOG_BYTES`] only the newest lines are read.
pub fn stream(path: &Path, each: impl FnMut(Event)) -> crate::Result<Skipped> {
    stream_last(path, MAX_LOG_BYTES, each)
}

/// [`stream`] of the last `window` bytes of the log.
fn stream_last(path: &Path, window: u64, mut each: impl FnMut(Event)) -> crate::Result<Skipped> {
    use std::io::{BufRead, Read, Seek};
    // a regular file, not through a link: anyone who could put a FIFO or a link in its
    // place must not stall the reader or have it read another file
    let mut file = crate::io::open_regular_no_link(path)?;
    let read_error = |e| crate::Error::io(path, "read", e);
    let len = file
        .metadata()
        .map_err(|e| crate::Error::io(path, "stat", e))?
        .len();
    // from the byte before the window on, so that a line starting right at the window is
    // read whole and a line cut by it is skipped up to its end
    let from = len.saturating_sub(window + 1);
    let mut skipped = Skipped {
        head_bytes: from,
        ..Skipped::default()
    };
    file.seek(std::io::SeekFrom::Start(from))
        .map_err(read_error)?;
    // the bytes there when the log was opened: lines the job appends meanwhile are the
    // next report's
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file.take(len - from));
    let mut line = Vec::with_capacity(MAX_LINE_BYTES);
    let mut over_long = false;
    let mut cut_at_head = from > 0;
    loop {
        let buf = reader.fill_buf().map_err(read_error)?;
        if buf.is_empty() {
            break;
        }
        let (piece, ends_line) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], true),
            None => (buf, false),
        };
        let used = piece.len() + usize::from(ends_line);
        if cut_at_head {
            skipped.head_bytes += used as u64;
        } else if !over_long {
            if line.len() + piece.len() > MAX_LINE_BYTES {
                over_long = true;
                line.clear();
            } else {
                line.extend_from_slice(piece);
            }
        }
        reader.consume(used);
        if ends_line {
            if cut_at_head {
                cut_at_head = false;
            } else {
                take_line(&mut line, &mut over_long, &mut skipped, &mut each);
            }
        }
    }
    // a last line without its newline (torn, or being written)
    if !cut_at_head && (over_long || !line.is_empty()) {
        take_line(&mut line, &mut over_long, &mut skipped, &mut each);
    }
    Ok(skipped)
}

/// Hands the line read to `each` as an event, or counts it skipped; the buffer is ready
/// for the next line after.
fn take_line(
    line: &mut Vec<u8>,
    over_long: &mut bool,
    skipped: &mut Skipped,
    each: &mut impl FnMut(Event),
) {
    if std::mem::take(over_long) {
        skipped.over_long_lines += 1;
    } else {
        match parse_line(&String::from_utf8_lossy(line)) {
            Some(event) => each(event),
            None => skipped.malformed_lines += 1,
        }
    }
    line.clear();
}

/// The most of a log read back: its last GiB (millions of events; a job's log is far
/// smaller, and reading more would keep the reader busy for whoever made it larger).
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// The longest line read back. A line SCR writes holds a dataset name (shorter than
/// SCR_MAX_FILENAME, 1024 bytes), the user and job ids and a few numbers.
pub const MAX_LINE_BYTES: usize = 4096;

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
            // a run the halt condition stopped, which then called SCR_Finalize
            line("07:00", "event=START"),
            line("07:10", "event=HALT reason=JOB_HALTED"),
            line("07:20", "event=END"),
            // a run that died, and the drain half a minute later: not the run's time
            line("08:00", "event=START"),
            line("08:10", "event=CHECKPOINT secs=1.5"),
            line("08:40", "event=FLUSH drain=1 secs=2 bytes=10"),
            line("09:00", "event=START"),
        ]
        .into_iter()
        .map(Option::unwrap)
        .collect();
        let mut endings = Vec::new();
        let mut run: Option<RunSoFar> = None;
        for e in &events {
            if e.kind == kinds::START {
                endings.extend(run.replace(RunSoFar::new(e)).map(|r| r.ending(true)));
            } else if let Some(r) = &mut run {
                r.add(e);
            }
        }
        endings.extend(run.map(|r| r.ending(false)));
        assert_eq!(
            endings,
            [
                Ending::Halted,
                Ending::Failed,
                Ending::Finalized,
                Ending::Failed,
                Ending::Halted,
                Ending::Failed,
                Ending::Open
            ]
        );
        let s = Stats::from_events(&events);
        // 90 + 60 + 60 + 20 + 20 + 10 seconds; the second run failed, the fourth (another
        // started after it) and the sixth; the NaN, the negative and the absurd cost are not
        // measures
        assert_eq!((s.runs, s.failures, s.run_seconds), (7, 3, 260.0));
        assert_eq!((s.checkpoints, s.mean_checkpoint_seconds), (2, 1.5));
    }

    /// Streams `text` as a log, the last `window` bytes of it; the events' kinds and
    /// what was skipped.
    fn streamed(text: &[u8], window: u64) -> (Vec<String>, Skipped) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, text).unwrap();
        let mut kinds = Vec::new();
        let skipped = stream_last(&path, window, |e| kinds.push(e.kind)).unwrap();
        (kinds, skipped)
    }

    #[test]
    fn garbage_and_over_long_lines_are_counted_and_the_events_around_them_read() {
        let event = |kind: &str| format!("2026-11-23T10:00:00+00:00 event={kind}");
        // a line of exactly the bound is read; one byte more is skipped, event or not
        let longest = format!("{} pad={}", event("LONGEST"), "p".repeat(MAX_LINE_BYTES));
        let longest = &longest[..MAX_LINE_BYTES];
        let over = format!("{} pad={}", event("OVER"), "p".repeat(MAX_LINE_BYTES));
        let over = &over[..MAX_LINE_BYTES + 1];
        let text = [
            event("START"),
            "garbage".into(),
            String::new(),
            longest.into(),
            over.into(),
            "\u{fffd}\u{7}".into(),
            "x".repeat(3 * MAX_LINE_BYTES),
            event("END"),
            // torn while being written
            "2026-11-23T10:00".into(),
        ]
        .join("\n");
        let (kinds, skipped) = streamed(text.as_bytes(), MAX_LOG_BYTES);
        assert_eq!(kinds, ["START", "LONGEST", "END"]);
        assert_eq!(
            skipped,
            Skipped {
                head_bytes: 0,
                malformed_lines: 4,
                over_long_lines: 2
            }
        );
        // an over-long last line without its newline is counted too
        let (kinds, skipped) = streamed(format!("{}\n{over}", event("START")).as_bytes(), 1 << 20);
        assert_eq!((kinds.len(), skipped.over_long_lines), (1, 1));
    }

    #[test]
    fn of_a_log_over_the_window_only_the_whole_lines_of_its_end_are_read() {
        // ten lines of 40 bytes each (39 and a newline), numbered in their kind
        let text: String = (0..10)
            .map(|n| format!("2026-11-23T10:00:00+00:00 event=LINE{n}xx\n"))
            .collect();
        assert!(text.lines().all(|l| l.len() == 39));
        // a window of 100 bytes holds lines 8 and 9 whole and the end of line 7
        let (kinds, skipped) = streamed(text.as_bytes(), 100);
        assert_eq!(kinds, ["LINE8xx", "LINE9xx"]);
        assert_eq!(skipped.head_bytes, 320);
        assert_eq!(skipped.malformed_lines + skipped.over_long_lines, 0);
        // a window that starts right at a line reads that line whole
        let (kinds, skipped) = streamed(text.as_bytes(), 120);
        assert_eq!(kinds, ["LINE7xx", "LINE8xx", "LINE9xx"]);
        assert_eq!(skipped.head_bytes, 280);
        // a log within the window is read whole
        let (kinds, skipped) = streamed(text.as_bytes(), 400);
        assert_eq!((kinds.len(), skipped.head_bytes), (10, 0));
    }
}
