//! Halt file (`<prefix>/.scr/halt.scr`) and the halt decision.
//!
//! ```text
//! ExitReason <text>  HaltSeconds <s>  ExitBefore <epoch s>  ExitAfter <epoch s>  CheckpointsLeft <n>
//! ```
//! The library, `scr halt` and `scr-run` share the file: update it with
//! [`HaltFile::change`], which locks it through the private lock file beside it and
//! replaces it whole as the user's alone (SCR's own halt file is everyone's to write; here
//! nobody but the user, and root acting as the user, may change or lock it).

use crate::hash::Hash;
use crate::view::{check_value, hash_view};

hash_view!(
    /// The halt file.
    HaltFile, "halt file", validate = validate, max_bytes = 64 << 10
);

pub const EXIT_REASON: &str = "ExitReason";
pub const HALT_SECONDS: &str = "HaltSeconds";
pub const EXIT_BEFORE: &str = "ExitBefore";
pub const EXIT_AFTER: &str = "ExitAfter";
pub const CHECKPOINTS_LEFT: &str = "CheckpointsLeft";
/// `scr halt --immediate` (which SCR never implemented): the launcher stops the running
/// job now instead of after its next checkpoint. SCR's tools ignore the key.
pub const EXIT_NOW: &str = "ExitNow";

/// Reasons the library writes.
pub mod reasons {
    pub const FINALIZE_CALLED: &str = "SCR_FINALIZE_CALLED";
    pub const INIT_FAILED: &str = "SCR_INIT_FAILED";
    pub const TIME_LIMIT: &str = "TIME_LIMIT";
    pub const NO_CHECKPOINTS_LEFT: &str = "NO_CHECKPOINTS_LEFT";
    pub const EXIT_BEFORE_TIME: &str = "EXIT_BEFORE_TIME";
    pub const EXIT_AFTER_TIME: &str = "EXIT_AFTER_TIME";
    /// Written by `scr halt` without a condition.
    pub const JOB_HALTED: &str = "JOB_HALTED";

    /// Whether `reason` is one the library records for a condition it met or a run it ended
    /// (rather than one the user gave: `scr halt` without a condition, or `--reason`).
    pub fn written_by_the_library(reason: &str) -> bool {
        [
            FINALIZE_CALLED,
            INIT_FAILED,
            TIME_LIMIT,
            NO_CHECKPOINTS_LEFT,
            EXIT_BEFORE_TIME,
            EXIT_AFTER_TIME,
        ]
        .contains(&reason)
    }
}

fn validate(h: &Hash) -> Result<(), String> {
    for key in [HALT_SECONDS, EXIT_BEFORE, EXIT_AFTER, CHECKPOINTS_LEFT] {
        check_value::<i64>(h, key, "halt file")?;
    }
    Ok(())
}

/// Why a run must stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HaltCause {
    /// `ExitReason` is set.
    Reason(String),
    /// `CheckpointsLeft` reached zero.
    NoCheckpointsLeft,
    /// Now is at or past `ExitBefore - HaltSeconds`.
    ExitBefore { now: i64, deadline: i64 },
    /// Now is at or past `ExitAfter`.
    ExitAfter { now: i64, after: i64 },
    /// The allocation has no more than `HaltSeconds` left.
    TimeLimit { remaining: i64, halt_seconds: i64 },
}

impl HaltCause {
    /// The `ExitReason` the library records for this cause.
    pub fn reason(&self) -> &str {
        match self {
            HaltCause::Reason(r) => r,
            HaltCause::NoCheckpointsLeft => reasons::NO_CHECKPOINTS_LEFT,
            HaltCause::ExitBefore { .. } => reasons::EXIT_BEFORE_TIME,
            HaltCause::ExitAfter { .. } => reasons::EXIT_AFTER_TIME,
            HaltCause::TimeLimit { .. } => reasons::TIME_LIMIT,
        }
    }
}

impl std::fmt::Display for HaltCause {
    /// `scr_retries_halt`'s wording.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HaltCause::Reason(r) => write!(f, "Reason: {}.", r.escape_debug()),
            HaltCause::NoCheckpointsLeft => write!(f, "No checkpoints remaining."),
            HaltCause::ExitBefore { now, deadline } => write!(
                f,
                "Current time ({}) is past ExitBefore-HaltSeconds time ({}).",
                epoch_text(*now),
                epoch_text(*deadline)
            ),
            HaltCause::ExitAfter { now, after } => {
                write!(
                    f,
                    "Current time ({}) is past ExitAfter time ({}).",
                    epoch_text(*now),
                    epoch_text(*after)
                )
            }
            HaltCause::TimeLimit {
                remaining,
                halt_seconds,
            } => {
                write!(
                    f,
                    "Remaining time ({remaining} s) is at most HaltSeconds ({halt_seconds} s)."
                )
            }
        }
    }
}

fn epoch_text(secs: i64) -> String {
    use chrono::TimeZone;
    chrono::Local
        .timestamp_opt(secs, 0)
        .single()
        .map(crate::units::format_timestamp)
        .unwrap_or_else(|| secs.to_string())
}

impl HaltFile {
    /// [`crate::HashView::update`] of the halt file at `path`, written as the user's alone
    /// ([`crate::io::PRIVATE_FILE`]): a halt file an older version left everyone's to write
    /// is honoured, and replaced.
    pub fn change<R>(
        path: &std::path::Path,
        change: impl FnOnce(&mut HaltFile) -> crate::Result<R>,
    ) -> crate::Result<R> {
        use crate::view::HashView;
        Self::update(path, crate::io::PRIVATE_FILE, change)
    }

    fn int(&self, key: &str) -> Option<i64> {
        self.0.parsed(key).ok().flatten()
    }

    pub fn exit_reason(&self) -> Option<&str> {
        self.0.first_value(EXIT_REASON).filter(|r| !r.is_empty())
    }

    /// The exit reason as it may be printed: an older version left the halt file everyone's
    /// to write, and control characters in it must not steer a terminal or forge log lines.
    pub fn exit_reason_shown(&self) -> Option<String> {
        self.exit_reason().map(|r| r.escape_debug().to_string())
    }
    pub fn halt_seconds(&self) -> Option<i64> {
        self.int(HALT_SECONDS)
    }
    pub fn exit_before(&self) -> Option<i64> {
        self.int(EXIT_BEFORE)
    }
    pub fn exit_after(&self) -> Option<i64> {
        self.int(EXIT_AFTER)
    }
    pub fn checkpoints_left(&self) -> Option<i64> {
        self.int(CHECKPOINTS_LEFT)
    }

    pub fn set_exit_reason(&mut self, reason: &str) {
        self.0.set_value(EXIT_REASON, reason);
    }
    pub fn set_halt_seconds(&mut self, secs: i64) {
        self.0.set_value(HALT_SECONDS, secs);
    }
    pub fn set_exit_before(&mut self, epoch: i64) {
        self.0.set_value(EXIT_BEFORE, epoch);
    }
    pub fn set_exit_after(&mut self, epoch: i64) {
        self.0.set_value(EXIT_AFTER, epoch);
    }
    pub fn set_checkpoints_left(&mut self, n: i64) {
        self.0.set_value(CHECKPOINTS_LEFT, n);
    }
    pub fn exit_now(&self) -> bool {
        self.int(EXIT_NOW).is_some_and(|v| v != 0)
    }
    pub fn set_exit_now(&mut self) {
        self.0.set_value(EXIT_NOW, 1);
    }
    /// Removes one condition (`scr halt --unset-…`); `key` is one of this module's key names.
    pub fn unset(&mut self, key: &str) {
        self.0.unset(key);
    }

    /// These conditions as a job is under them: `SCR_HALT_SECONDS` (`param`, when positive)
    /// is the HaltSeconds wherever the halt file sets none. A HaltSeconds the file sets
    /// (`scr halt --seconds`, before or during the job) wins over the parameter. SCR itself
    /// ignores the parameter whenever a halt file exists at all (a previous run leaves one),
    /// which silently drops the setting; here it is dropped only where the file says
    /// otherwise. The parameter is not written into the file.
    pub fn with_halt_seconds_default(&self, param: Option<i64>) -> HaltFile {
        let mut effective = self.clone();
        if effective.halt_seconds().is_none()
            && let Some(secs) = param.filter(|&s| s > 0)
        {
            effective.set_halt_seconds(secs);
        }
        effective
    }

    /// Counts one completed checkpoint against `CheckpointsLeft`, if set.
    pub fn decrement_checkpoints(&mut self) {
        if let Some(n) = self.checkpoints_left() {
            self.set_checkpoints_left(n.saturating_sub(1).max(0));
        }
    }

    /// The library's decision: like [`HaltFile::decision`], but a left-over
    /// `SCR_FINALIZE_CALLED` from the previous run does not stop a run the user started again.
    pub fn library_decision(&self, now: i64, seconds_remaining: Option<i64>) -> Option<HaltCause> {
        if self.exit_reason() == Some(reasons::FINALIZE_CALLED) {
            let mut rest = self.clone();
            rest.unset(EXIT_REASON);
            return rest.decision(now, seconds_remaining);
        }
        self.decision(now, seconds_remaining)
    }

    /// Whether to halt at `now` (epoch seconds), given the seconds left in the allocation
    /// when the resource manager knows them. The clock is a parameter so tests control it.
    pub fn decision(&self, now: i64, seconds_remaining: Option<i64>) -> Option<HaltCause> {
        if let Some(r) = self.exit_reason() {
            return Some(HaltCause::Reason(r.to_string()));
        }
        if self.checkpoints_left().is_some_and(|n| n <= 0) {
            return Some(HaltCause::NoCheckpointsLeft);
        }
        let halt_seconds = self.halt_seconds().unwrap_or(0);
        if let Some(before) = self.exit_before() {
            let deadline = before.saturating_sub(halt_seconds);
            if now >= deadline {
                return Some(HaltCause::ExitBefore { now, deadline });
            }
        }
        if let Some(after) = self.exit_after()
            && now >= after
        {
            return Some(HaltCause::ExitAfter { now, after });
        }
        if let Some(remaining) = seconds_remaining
            && halt_seconds > 0
            && remaining <= halt_seconds
        {
            return Some(HaltCause::TimeLimit {
                remaining,
                halt_seconds,
            });
        }
        None
    }
}

/// Seconds left before the allocation ends, from SCR_END_TIME (epoch seconds; `value` is
/// its setting, from the environment or the parameters): one rule for the library and
/// every command. None when unset, unparsable or not positive.
pub fn seconds_left(value: Option<&str>, now: i64) -> Option<i64> {
    seconds_until(value.and_then(|v| v.trim().parse::<i64>().ok()), now)
}

/// The seconds from `now` to an end time, when there is one (a positive time).
pub fn seconds_until(end: Option<i64>, now: i64) -> Option<i64> {
    end.filter(|&t| t > 0).map(|t| t - now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_left_come_from_a_positive_end_time() {
        assert_eq!(seconds_left(Some("1000"), 400), Some(600));
        assert_eq!(seconds_left(Some(" 1000\n"), 1000), Some(0));
        assert_eq!(seconds_left(Some("0"), 400), None);
        assert_eq!(seconds_left(Some("soon"), 400), None);
        assert_eq!(seconds_left(None, 400), None);
    }

    #[test]
    fn decisions() {
        let mut h = HaltFile::new();
        assert_eq!(h.decision(1000, None), None);
        h.set_checkpoints_left(1);
        assert_eq!(h.decision(1000, None), None);
        h.decrement_checkpoints();
        assert_eq!(h.decision(1000, None), Some(HaltCause::NoCheckpointsLeft));
        h.unset(CHECKPOINTS_LEFT);

        h.set_exit_before(2000);
        h.set_halt_seconds(300);
        assert_eq!(h.decision(1699, None), None);
        assert_eq!(
            h.decision(1700, None),
            Some(HaltCause::ExitBefore {
                now: 1700,
                deadline: 1700
            })
        );
        h.unset(EXIT_BEFORE);

        assert_eq!(h.decision(0, Some(301)), None);
        assert_eq!(
            h.decision(0, Some(300)).unwrap().reason(),
            reasons::TIME_LIMIT
        );

        h.set_exit_after(50);
        assert_eq!(h.decision(49, None), None);
        assert_eq!(
            h.decision(50, None).unwrap().reason(),
            reasons::EXIT_AFTER_TIME
        );

        h.set_exit_reason("JOB_HALTED");
        let cause = h.decision(0, None).unwrap();
        assert_eq!(cause.to_string(), "Reason: JOB_HALTED.");
    }

    #[test]
    fn the_library_ignores_a_previous_finalize() {
        let mut h = HaltFile::new();
        h.set_exit_reason(reasons::FINALIZE_CALLED);
        assert!(h.decision(0, None).is_some(), "the launcher stops on it");
        assert_eq!(
            h.library_decision(0, None),
            None,
            "a restarted job does not"
        );
        h.set_checkpoints_left(0);
        assert_eq!(
            h.library_decision(0, None),
            Some(HaltCause::NoCheckpointsLeft)
        );
    }

    #[test]
    fn halt_seconds_come_from_the_file_else_the_parameter() {
        let mut h = HaltFile::new();
        // SCR_HALT_SECONDS=20 with 20 s left halts, with 21 s left does not
        let with_param = h.with_halt_seconds_default(Some(20));
        assert_eq!(with_param.halt_seconds(), Some(20));
        assert!(with_param.decision(0, Some(20)).is_some());
        assert!(with_param.decision(0, Some(21)).is_none());
        assert!(
            h.with_halt_seconds_default(Some(0))
                .decision(0, Some(0))
                .is_none()
        );
        assert!(
            h.with_halt_seconds_default(None)
                .decision(0, Some(0))
                .is_none()
        );
        // a value the halt file sets wins over the parameter
        h.set_halt_seconds(5);
        let file_wins = h.with_halt_seconds_default(Some(20));
        assert_eq!(file_wins.halt_seconds(), Some(5));
        assert!(file_wins.decision(0, Some(20)).is_none());
        // the parameter applies where the file sets none; 0 (its default) is none
        assert_eq!(
            HaltFile::new()
                .with_halt_seconds_default(Some(9))
                .halt_seconds(),
            Some(9)
        );
        assert_eq!(
            HaltFile::new()
                .with_halt_seconds_default(Some(0))
                .halt_seconds(),
            None
        );
    }

    #[test]
    fn an_empty_reason_does_not_halt() {
        let mut h = HaltFile::new();
        h.set_exit_reason("");
        assert_eq!(h.decision(0, None), None);
    }
}
