//! When to checkpoint (SCR_Need_checkpoint's rules), without MPI: the library asks on rank
//! 0 and tells the others.

use std::time::{Duration, Instant};

/// The application's checkpointing so far, for SCR_CHECKPOINT_INTERVAL, _SECONDS and
/// _OVERHEAD.
#[derive(Clone, Debug)]
pub struct CheckpointSchedule {
    /// Calls to SCR_Need_checkpoint so far.
    calls: u64,
    /// When the last checkpoint completed (or the job started).
    last_end: Instant,
    /// When the open checkpoint started.
    started: Option<Instant>,
    /// Seconds all completed checkpoints took, and how many there were.
    cost: (f64, u64),
}

/// The rules in force: every `interval` calls, after `seconds`, or while checkpoints
/// cost under `overhead` percent of the time; none set means every call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rules {
    pub interval: u64,
    pub seconds: u64,
    pub overhead: f64,
}

impl CheckpointSchedule {
    pub fn new(now: Instant) -> Self {
        CheckpointSchedule {
            calls: 0,
            last_end: now,
            started: None,
            cost: (0.0, 0),
        }
    }

    /// One SCR_Need_checkpoint call: whether a checkpoint is due by `rules` at `now`.
    pub fn need(&mut self, rules: Rules, now: Instant) -> bool {
        self.calls += 1;
        if rules.interval == 0 && rules.seconds == 0 && rules.overhead == 0.0 {
            return true;
        }
        let since = now.saturating_duration_since(self.last_end);
        (rules.interval > 0 && self.calls.is_multiple_of(rules.interval))
            || (rules.seconds > 0 && since >= Duration::from_secs(rules.seconds))
            || (rules.overhead > 0.0 && self.overhead_allows(rules.overhead, now))
    }

    /// SCR's overhead rule: checkpoint when the average checkpoint cost, as a share of the
    /// time since the last checkpoint plus that cost, is below `percent` (always before the
    /// first checkpoint).
    pub fn overhead_allows(&self, percent: f64, now: Instant) -> bool {
        let (total, count) = self.cost;
        if count == 0 {
            return true;
        }
        let cost = total / count as f64;
        let since = now.saturating_duration_since(self.last_end).as_secs_f64();
        cost / (since + cost) * 100.0 < percent
    }

    /// A checkpoint starts.
    pub fn start(&mut self, now: Instant) {
        self.started = Some(now);
    }

    /// How long the open checkpoint has taken so far, if one is open.
    pub fn elapsed(&self, now: Instant) -> Option<f64> {
        self.started
            .map(|s| now.saturating_duration_since(s).as_secs_f64())
    }

    /// The open checkpoint completed at `now`: its cost counts toward the overhead.
    pub fn complete(&mut self, now: Instant) {
        self.last_end = now;
        if let Some(s) = self.started.take() {
            self.cost.0 += now.saturating_duration_since(s).as_secs_f64();
            self.cost.1 += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_without_rules_every_nth_call_after_seconds_and_under_an_overhead() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let mut c = CheckpointSchedule::new(t0);
        assert!(c.need(Rules::default(), t0));
        let every3 = Rules {
            interval: 3,
            ..Rules::default()
        };
        let mut c = CheckpointSchedule::new(t0);
        let due: Vec<bool> = (0..6).map(|_| c.need(every3, t0)).collect();
        assert_eq!(due, [false, false, true, false, false, true]);
        let after10 = Rules {
            seconds: 10,
            ..Rules::default()
        };
        let mut c = CheckpointSchedule::new(t0);
        assert!(!c.need(after10, s(9)));
        assert!(c.need(after10, s(10)));
        // a checkpoint costing 10 s: under 20 % only once 40 s have passed since it
        let under20 = Rules {
            overhead: 20.0,
            ..Rules::default()
        };
        let mut c = CheckpointSchedule::new(t0);
        assert!(c.need(under20, t0), "before the first checkpoint");
        c.start(s(0));
        assert_eq!(c.elapsed(s(4)), Some(4.0));
        c.complete(s(10));
        assert!(!c.need(under20, s(30)));
        assert!(c.need(under20, s(51)));
    }
}
