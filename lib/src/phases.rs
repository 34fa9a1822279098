//! Where a call's time goes, phase by phase, on this rank: SCR_Complete_output's steps
//! (the files' sizes, the totals, the filemap, the redundancy scheme's reads, kernel, MPI
//! waits, parity writes and fsyncs, the flush file, the halt check) add their time here, and
//! at SCR_DEBUG=2 rank 0 says what its Complete spent where (`benches/redundancy.sh` with
//! BENCH_PHASES=1 shows it beside the floor). Taking the time costs a clock read per step.

use std::cell::RefCell;
use std::time::{Duration, Instant};

thread_local! {
    /// The phases since the last [`take`], in the order first seen.
    static PHASES: RefCell<Vec<(&'static str, Duration)>> = const { RefCell::new(Vec::new()) };
}

/// Adds `spent` to phase `name`.
pub(crate) fn add(name: &'static str, spent: Duration) {
    PHASES.with(|p| {
        let mut p = p.borrow_mut();
        match p.iter_mut().find(|(n, _)| *n == name) {
            Some((_, d)) => *d += spent,
            None => p.push((name, spent)),
        }
    });
}

/// Runs `f`, its time counted as phase `name`.
pub(crate) fn time<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    add(name, started.elapsed());
    out
}

/// A stopwatch whose laps are phases: each [`Lap::lap`] counts the time since the last.
pub(crate) struct Lap(Instant);

impl Lap {
    pub(crate) fn start() -> Lap {
        Lap(Instant::now())
    }

    pub(crate) fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        add(name, now - self.0);
        self.0 = now;
    }
}

/// The phases since the last call, emptied.
pub(crate) fn take() -> Vec<(&'static str, Duration)> {
    PHASES.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// The phases as one line: `name 0.0123 s, …`.
pub(crate) fn format(phases: &[(&'static str, Duration)]) -> String {
    phases
        .iter()
        .map(|(n, d)| format!("{n} {:.4} s", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_by_name_in_the_order_first_seen_and_are_taken_once() {
        take();
        add("read", Duration::from_millis(2));
        add("mpi", Duration::from_millis(5));
        add("read", Duration::from_millis(3));
        let got = take();
        assert_eq!(
            got,
            [
                ("read", Duration::from_millis(5)),
                ("mpi", Duration::from_millis(5))
            ]
        );
        assert_eq!(format(&got), "read 0.0050 s, mpi 0.0050 s");
        assert!(take().is_empty());
    }
}
