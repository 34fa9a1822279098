//! The runs of a job as the database tells them: the library's records and scr-run's
//! together ([`Launches`]).

use super::figures::FiguresSoFar;
use scr::event_log::Event;

/// The runs of a job as its events tell them, scr-run's among the library's: a run the
/// launcher started that ended badly before its library said START (it died before
/// SCR_Init, or never started) is a run that died, from its launch on; of scr-run's own
/// records, only how a run ended says anything of a run (when it died, and that it did).
#[derive(Default)]
pub struct Launches {
    /// The launch of the attempt under way, while its library has not said START.
    unstarted: Option<Event>,
}

impl Launches {
    /// Takes in the job's next event, handing `so_far` what it says of runs.
    pub fn add(&mut self, event: Event, so_far: &mut FiguresSoFar) {
        use scr::event_log::kinds;
        match event.kind.as_str() {
            "SCR_RUN_LAUNCH" => self.unstarted = Some(event),
            kinds::START => {
                self.unstarted = None;
                so_far.add(event);
            }
            kinds::RUN_ENDED => {
                if let Some(launch) = self.unstarted.take()
                    && event.ended_badly()
                {
                    so_far.add(Event {
                        time: launch.time,
                        kind: kinds::START.to_string(),
                        fields: vec![("before_init".into(), "1".into())],
                    });
                }
                so_far.add(event);
            }
            kind if kind.starts_with("SCR_RUN_") => {}
            _ => so_far.add(event),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::report::figures::Figures;
    use scr::event_log::Skipped;

    /// An event: seconds after the job's first, its kind and its fields.
    type At<'a> = (i64, &'a str, &'a [(&'a str, &'a str)]);

    /// A job's events through [`Launches`].
    fn figures(events: &[At]) -> Figures {
        let t0 = chrono::DateTime::parse_from_rfc3339("2026-11-02T10:00:00+00:00").unwrap();
        let mut so_far = FiguresSoFar::default();
        let mut launches = Launches::default();
        for (secs, kind, fields) in events {
            launches.add(
                Event {
                    time: t0 + chrono::Duration::seconds(*secs),
                    kind: kind.to_string(),
                    fields: fields
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                },
                &mut so_far,
            );
        }
        so_far.finish(Skipped::default())
    }

    #[test]
    fn a_run_that_dies_before_scr_init_is_a_run_that_died() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (
                5,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "127")],
            ),
            (6, "SCR_RUN_LAUNCH", &[("attempt", "2")]),
            (7, "START", &[("app", "sim")]),
            (9, "END", &[]),
            (
                10,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "2"), ("exit_code", "0")],
            ),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (2, 1));
        // the first lasted from its launch to its end, the second from START to its end
        assert_eq!(f.stats.run_seconds, 5.0 + 3.0);
    }

    #[test]
    fn the_last_run_killed_by_a_signal_died_rather_than_runs_on() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (1, "START", &[]),
            (2, "CHECKPOINT", &[("secs", "0.5")]),
            (4, "SCR_RUN_RUN_ENDED", &[("attempt", "1")]),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (1, 1));
    }

    #[test]
    fn a_launch_that_ends_well_without_scr_is_no_run() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (
                3,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "0")],
            ),
            (4, "SCR_RUN_FINISHED", &[]),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (0, 0));
    }
}
