//! The runs of a job as the database tells them: the library's records and scr-run's
//! together ([`Launches`]).

use super::figures::FiguresSoFar;
use scr::event_log::Event;

/// The runs of a job as its events tell them, scr-run's and the commands' among the
/// library's:
/// - a run the launcher started that ended badly before its library said START (it died
///   before SCR_Init, or never started) is a run that died, from its launch on; a run the
///   launcher saw end badly died, even the last;
/// - a run scr-run stopped for `scr halt --immediate` (its record of how the run ended says
///   `halted=1`) was stopped on purpose: a halt, not a death (the `SCR_HALT` record of the
///   command says only what was asked: no scr-run may have been there to stop a run);
/// - in a run v3.1's library logged (its START says nothing of its ranks), a fetch is its
///   restart: v3.1 logs a restart from the prefix as `FETCH_SUCCESS` alone;
/// - the launchers' other records (v3.1's scr_srun's `RUN_END` that says nothing of how the
///   run ended, scr-run's sleeps and postrun, the drain's) are no run's events: they would
///   stretch a run past its end;
/// - a launch whose record reached the database after its run's START (they come from two
///   processes, each with a connection of its own: the order of their rows is not the order
///   of their events) is that run's, not a run of its own that never started: the START
///   names the launch it ran as (`launch=`, scr-run's id of it).
#[derive(Default)]
pub struct Launches {
    /// The launch of the attempt under way, while its library has not said START.
    unstarted: Option<Event>,
    /// The launch the run under way names, when it said START before its launch was read.
    started_unlaunched: Option<String>,
    /// The run under way was logged by v3.1's library and has not said RESTART yet.
    v3_1_unrestarted: bool,
}

impl Launches {
    /// Takes in the job's next event, handing `so_far` what it says of runs.
    pub fn add(&mut self, event: Event, so_far: &mut FiguresSoFar) {
        use scr::event_log::kinds;
        match event.kind.as_str() {
            kinds::LAUNCH => {
                let own_run = self
                    .started_unlaunched
                    .as_deref()
                    .is_some_and(|id| event.field("launch") == Some(id));
                if own_run {
                    self.started_unlaunched = None;
                } else {
                    self.unstarted = Some(event);
                }
            }
            kinds::START => {
                // the launch read before it is this run's unless both name theirs and the
                // names differ (a launch whose run's START was lost, left behind)
                let its_launch_read = self.unstarted.as_ref().is_some_and(|launch| {
                    match (launch.field("launch"), event.field("launch")) {
                        (Some(launched), Some(started)) => launched == started,
                        _ => true,
                    }
                });
                self.started_unlaunched = (!its_launch_read)
                    .then(|| event.field("launch").map(str::to_string))
                    .flatten();
                self.unstarted = None;
                self.v3_1_unrestarted = event.field("ranks").is_none();
                so_far.add(event);
            }
            kinds::RUN_ENDED if event.ended_badly() => {
                if let Some(launch) = self.unstarted.take() {
                    so_far.add(Event {
                        time: launch.time,
                        kind: kinds::START.to_string(),
                        fields: vec![("before_init".into(), "1".into())],
                    });
                }
                so_far.add(event);
            }
            // scr-run stopped the run for a halt that exits now: a halt of the run
            kinds::RUN_ENDED if event.halted_by_launcher() => so_far.add(Event {
                time: event.time,
                kind: kinds::HALT.to_string(),
                fields: vec![
                    ("exits".into(), "true".into()),
                    ("reason".into(), "scr halt --immediate".into()),
                ],
            }),
            kinds::RESTART => {
                self.v3_1_unrestarted = false;
                so_far.add(event);
            }
            kinds::FETCH if self.v3_1_unrestarted => {
                self.v3_1_unrestarted = false;
                let restart = Event {
                    kind: kinds::RESTART.to_string(),
                    ..event.clone()
                };
                so_far.add(event);
                so_far.add(restart);
            }
            // (v3.1's `RUN_START`/`RUN_END` arrive as scr-run's kinds: `scr_db::V3_1_NAMES`)
            kind if kind.starts_with("SCR_")
                || matches!(kind, "SCAVENGE_START" | "SCAVENGE_END") => {}
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
        // the first lasted from its launch to its end, the second from START to its END
        assert_eq!(f.stats.run_seconds, 5.0 + 2.0);
    }

    #[test]
    fn the_last_run_killed_by_a_signal_died_rather_than_runs_on() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (1, "START", &[]),
            (2, "CHECKPOINT", &[("secs", "0.5")]),
            (4, "SCR_RUN_RUN_ENDED", &[("attempt", "1"), ("signal", "1")]),
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

    /// The database lost a run's last records (it was down, or rank 0 was killed before its
    /// writer wrote them): the next run restarted from a checkpoint no record names. The
    /// run counts as died, as nothing says otherwise, and says its records are missing.
    #[test]
    fn a_restart_from_a_checkpoint_never_logged_says_the_records_are_missing() {
        let run = |restart: &str| {
            figures(&[
                (1, "START", &[("ranks", "2")]),
                (2, "CHECKPOINT", &[("dset", "1"), ("secs", "0.5")]),
                // (checkpoint 2 and the run's END never reached the database)
                (10, "START", &[("ranks", "2")]),
                (11, "RESTART", &[("dset", restart), ("name", "ckpt")]),
                (12, "END", &[]),
            ])
        };
        let missing = run("2");
        assert_eq!((missing.stats.runs, missing.stats.failures), (2, 1));
        assert_eq!(missing.records_missing, 1);
        let died = missing.failures.iter().next().unwrap();
        assert!(
            died.note
                .as_deref()
                .is_some_and(|n| n.contains("records are missing")),
            "{:?}",
            died.note
        );
        let logged = run("1");
        assert_eq!(logged.records_missing, 0);
        assert_eq!(logged.failures.iter().next().unwrap().note, None);
    }

    #[test]
    fn scr_halt_immediate_stops_a_run_on_purpose() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (1, "START", &[("ranks", "2")]),
            (2, "CHECKPOINT", &[("secs", "0.5")]),
            (3, "SCR_HALT", &[("immediate", "1")]),
            (
                4,
                "SCR_RUN_RUN_ENDED",
                &[
                    ("attempt", "1"),
                    ("error", "stopped by scr-run (halted immediately)"),
                    ("halted", "1"),
                ],
            ),
            (5, "SCR_RUN_FINISHED", &[("ending", "halted")]),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (1, 0));
        assert_eq!(f.failures.iter().count(), 0);
        assert_eq!(f.runs_ending(scr::event_log::Ending::Halted), 1);
    }

    #[test]
    fn a_last_run_that_died_is_listed_as_a_failure_like_the_others() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("attempt", "1")]),
            (1, "START", &[("ranks", "2")]),
            (
                2,
                "CHECKPOINT",
                &[("secs", "0.5"), ("dset", "1"), ("name", "c.1")],
            ),
            (
                9,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "3")],
            ),
            (10, "SCR_RUN_LAUNCH", &[("attempt", "2")]),
            (11, "START", &[("ranks", "2")]),
            (12, "RESTART", &[("dset", "1"), ("name", "c.1")]),
            (
                13,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "2"), ("exit_code", "3")],
            ),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (2, 2));
        let died: Vec<_> = f
            .failures
            .iter()
            .filter(|x| x.kind == crate::commands::report::figures::FailureKind::RunDied)
            .collect();
        assert_eq!(died.len(), 2);
        // the first lost from its checkpoint to its end, and restarted at the next RESTART
        assert_eq!((died[0].lost_work, died[0].restart), (7.0, 3.0));
        // the last lost from its start (it wrote nothing) to its end, and never restarted
        assert_eq!((died[1].lost_work, died[1].restart), (2.0, 0.0));
    }

    #[test]
    fn a_launch_written_after_its_runs_start_is_that_runs_not_a_run_that_never_started() {
        // scr-run's and the library's rows in the order their connections wrote them: the
        // launch of each attempt landed after its library's START, which names it
        let f = figures(&[
            (0, "START", &[("ranks", "2"), ("launch", "7.99.1")]),
            (
                0,
                "SCR_RUN_LAUNCH",
                &[("attempt", "1"), ("launch", "7.99.1")],
            ),
            (
                2,
                "CHECKPOINT",
                &[("secs", "0.5"), ("dset", "1"), ("name", "c.1")],
            ),
            (
                3,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "3")],
            ),
            (10, "START", &[("ranks", "2"), ("launch", "7.99.2")]),
            (
                10,
                "SCR_RUN_LAUNCH",
                &[("attempt", "2"), ("launch", "7.99.2")],
            ),
            (11, "RESTART", &[("dset", "1"), ("name", "c.1")]),
            (12, "END", &[]),
            (
                12,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "2"), ("exit_code", "0")],
            ),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (2, 1));
    }

    #[test]
    fn a_launch_after_a_run_of_another_launch_is_a_run_of_its_own() {
        // a run started without scr-run (it names no launch) that ended, or died, and then
        // scr-run's first launch, at once, which died before SCR_Init
        for (bare, failures) in [
            (
                &[(0, "START", &[("ranks", "2")][..]), (1, "END", &[][..])][..],
                1,
            ),
            (&[(0, "START", &[("ranks", "2")][..])][..], 2),
        ] {
            let mut events: Vec<At> = bare.to_vec();
            events.extend([
                (
                    1,
                    "SCR_RUN_LAUNCH",
                    &[("attempt", "1"), ("launch", "8.5.1")][..],
                ),
                (
                    1,
                    "SCR_RUN_RUN_ENDED",
                    &[("attempt", "1"), ("exit_code", "3")][..],
                ),
            ]);
            let f = figures(&events);
            assert_eq!((f.stats.runs, f.stats.failures), (2, failures), "{bare:?}");
        }
        // another scr-run's launch (its records of its own run lost) is not this run's
        let f = figures(&[
            (
                0,
                "SCR_RUN_LAUNCH",
                &[("attempt", "1"), ("launch", "8.5.1")],
            ),
            (0, "START", &[("ranks", "2"), ("launch", "8.5.1")]),
            (2, "START", &[("ranks", "2"), ("launch", "9.6.1")]),
            (
                3,
                "SCR_RUN_LAUNCH",
                &[("attempt", "1"), ("launch", "9.7.1")],
            ),
            (
                4,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "3")],
            ),
        ]);
        assert_eq!(f.stats.runs, 3);
        // a launch whose run logged no START (the library's log was off) and ended well,
        // then the next attempt's START before its launch
        let f = figures(&[
            (
                0,
                "SCR_RUN_LAUNCH",
                &[("attempt", "1"), ("launch", "8.5.1")],
            ),
            (
                5,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "1"), ("exit_code", "0")],
            ),
            (6, "START", &[("ranks", "2"), ("launch", "8.5.2")]),
            (
                6,
                "SCR_RUN_LAUNCH",
                &[("attempt", "2"), ("launch", "8.5.2")],
            ),
            (
                7,
                "SCR_RUN_RUN_ENDED",
                &[("attempt", "2"), ("exit_code", "3")],
            ),
        ]);
        assert_eq!((f.stats.runs, f.stats.failures), (1, 1));
    }

    #[test]
    fn v3_1s_own_records_restart_by_their_fetch_and_their_launcher_stretches_no_run() {
        let f = figures(&[
            (0, "SCR_RUN_LAUNCH", &[("run", "1")]),
            (1, "START", &[]),
            (
                2,
                "CHECKPOINT",
                &[("secs", "0.5"), ("dset", "1"), ("name", "c.1")],
            ),
            (5, "SCR_RUN_RUN_ENDED", &[("run", "1")]),
            (100, "SCR_RUN_LAUNCH", &[("run", "2")]),
            (101, "START", &[]),
            (
                103,
                "FETCH",
                &[("dset", "1"), ("name", "c.1"), ("secs", "1.0")],
            ),
            (110, "END", &[]),
            (200, "SCR_RUN_RUN_ENDED", &[("run", "2")]),
        ]);
        assert_eq!(f.stats.runs, 2);
        // each run from its START to its own last event, not to its launcher's end
        assert_eq!(f.stats.run_seconds, 1.0 + 9.0);
        assert_eq!(f.restarts.iter().count(), 1);
    }

    #[test]
    fn every_failure_counts_in_its_week_listed_or_not() {
        let mut events: Vec<At> = vec![(0, "START", &[("ranks", "2")])];
        for i in 1..=1500 {
            events.push((i, "CHECKPOINT_FAILED", &[("secs", "0.1")]));
        }
        let f = figures(&events);
        let counted: u64 = f.failures_by_week.values().map(|c| c[1]).sum();
        assert_eq!(counted, 1500);
        assert!(f.failures.iter().count() < 1500);
    }
}
