//! `scr report --db`: what `scr report` shows of one prefix, across every job the event
//! log's database holds (SCR_LOG_DB_*), and the users' databases beside it: failures per week and per node, the time they
//! cost, checkpoint cost and flush bandwidth by application, and the checkpoint interval
//! each application uses against Young's and Daly's optimum.
//!
//! Each job's events are read back as the text log said them and computed as `scr report`
//! computes one prefix's ([`FiguresSoFar`]), so the two never disagree; an application's
//! figures are its jobs' together. SCR's records name a computation by its prefix (v3.1's
//! job name); the application is the program's name its runs logged at their start
//! (`app=`), else the job name.

use super::figures::{Figures, FiguresSoFar, FlushRate, Time};
use super::launches::Launches;
use scr::event_log::{Event, Skipped, Stats, daly, young};
use scr_db::read::{MOST_EVENTS_OF_A_USER, Selection, StoredEvent, StoredJob};
use std::collections::{BTreeMap, BTreeSet};

/// One job's figures, and what its runs said of nodes.
pub struct JobFigures {
    pub job: StoredJob,
    pub app: String,
    pub figures: Figures,
    /// The nodes scr-run found down (`NODE_FAIL`): node, why, when.
    pub nodes_down: Vec<(String, String, Time)>,
}

/// Everything the site-wide report shows.
pub struct Site {
    /// The server and database read.
    pub source: String,
    pub selection: Selection,
    /// Only the jobs whose application or job name holds this.
    pub app_holding: Option<String>,
    pub generated: chrono::DateTime<chrono::Local>,
    pub jobs: Vec<JobFigures>,
    /// Databases, or jobs of one, that could not be read, and why.
    pub unread: Vec<(String, String)>,
}

/// An application's jobs together.
pub struct AppRow {
    pub app: String,
    pub users: BTreeSet<String>,
    pub jobs: usize,
    pub stats: Stats,
    pub failures: u64,
    /// Runs counted as died before records that are missing ([`Figures::records_missing`]).
    pub records_missing: u64,
    pub time_lost: f64,
    /// Mean checkpoint cost, over every checkpoint of its jobs.
    pub cost: Option<f64>,
    /// Mean flush bandwidth (MiB/s), over every flush that logged one.
    pub flush_bandwidth: Option<f64>,
    /// Mean interval in use, over every gap between checkpoints of a run.
    pub interval: Option<f64>,
    /// The mean time between failures to plan with, and whether it is a lower bound.
    pub mtbf: Option<(f64, bool)>,
    pub young: Option<f64>,
    pub daly: Option<f64>,
}

/// An event of the log as the text log said it.
fn as_text_event(stored: &StoredEvent) -> Option<Event> {
    let time = stored.ended_at()?;
    // v3.1's names (ours and v3.1's own records) read as the text log's kinds
    let (kind, background) = scr_db::text_log_kind(&stored.kind);
    let mut fields: Vec<(String, String)> = Vec::new();
    if background {
        fields.push(("async".into(), "1".into()));
    }
    if let Some(dset) = stored.dset {
        fields.push(("dset".into(), dset.to_string()));
    }
    if let Some(name) = &stored.dset_name {
        fields.push(("name".into(), name.clone()));
    }
    if let Some(secs) = stored.secs {
        fields.push(("secs".into(), format!("{secs:.3}")));
    }
    if let Some(bytes) = stored.bytes {
        fields.push(("bytes".into(), format!("{:.0}", bytes.max(0.0))));
    }
    // (the writer's offset from UTC is in the event's time already)
    fields.extend(
        stored
            .note_fields()
            .into_iter()
            .filter(|(k, _)| k != scr_db::UTC_OFFSET),
    );
    Some(Event {
        time,
        kind: kind.to_string(),
        fields,
    })
}

/// The first year an event of the log may be dated.
const EARLIEST_YEAR: i32 = 2000;

/// Whether an event's time is one a job may have logged by `now`: from [`EARLIEST_YEAR`]
/// to a day after `now` (writers' clocks and zones differ by less). Others would stretch
/// the weeks shown and the time lost over centuries.
fn plausible(time: Time, now: &chrono::DateTime<chrono::Local>) -> bool {
    use chrono::Datelike;
    time.year() >= EARLIEST_YEAR && time <= *now + chrono::Duration::days(1)
}

/// The node a node-down record names, and why: scr-run's `node=` and `reason=`, or v3.1's
/// note `NODE: REASON`.
fn node_down(event: &Event, stored: &StoredEvent) -> Option<(String, String)> {
    if let Some(node) = event.field("node") {
        let why = event.field("reason").unwrap_or_default();
        return Some((node.to_string(), why.to_string()));
    }
    let (node, why) = stored.note.as_deref()?.split_once(':')?;
    let node = node.trim();
    (!node.is_empty() && !node.contains(char::is_whitespace))
        .then(|| (node.to_string(), why.trim().to_string()))
}

/// A node-down record's node and reason as the page keeps them: no node name is longer than
/// a host name may be (one that is is no node's), and a reason is cut to a line's length.
fn node_kept((node, why): (String, String)) -> Option<(String, String)> {
    const MOST_HOST_NAME: usize = 255;
    const MOST_REASON: usize = 200;
    if node.len() > MOST_HOST_NAME {
        return None;
    }
    let why = match why.char_indices().nth(MOST_REASON) {
        Some((cut, _)) => format!("{}…", &why[..cut]),
        None => why,
    };
    Some((node, why))
}

impl Site {
    /// Reads the jobs `selection` covers and computes each one's figures.
    pub fn read(
        conn: &mut scr_db::Connection,
        database: &str,
        source: String,
        selection: Selection,
        app_holding: Option<String>,
    ) -> Result<Site, scr_db::DbError> {
        let mut jobs = Vec::new();
        let listed = conn.jobs(database, &selection)?;
        let mut unread = listed.unread;
        // what is left to read of each user's database ([`MOST_EVENTS_OF_A_USER`]); the
        // log's own, every user's, is read whole
        let mut left: BTreeMap<String, usize> = BTreeMap::new();
        // events dated where no job ran, per database
        let generated = chrono::Local::now();
        let mut out_of_time: BTreeMap<String, u64> = BTreeMap::new();
        for job in listed.jobs {
            let budget = (job.database != database).then(|| {
                *left
                    .entry(job.database.clone())
                    .or_insert(MOST_EVENTS_OF_A_USER)
            });
            if budget == Some(0) {
                continue;
            }
            let mut so_far = FiguresSoFar::default();
            let mut app = None;
            let mut nodes_down = Vec::new();
            let mut launches = Launches::default();
            let stored_events = match conn.events_of_within(&job, &selection, budget) {
                Ok((events, cut)) => {
                    if let Some(left) = left.get_mut(&job.database) {
                        *left = left.saturating_sub(events.len().max(1));
                        if cut {
                            *left = 0;
                            unread.push((
                                job.database.clone(),
                                format!(
                                    "read in part: its jobs' first {MOST_EVENTS_OF_A_USER} \
                                     events are read, the rest left out, from job {} (a \
                                     user's database is read to a bound; --since narrows \
                                     the selection)",
                                    job.name
                                ),
                            ));
                        }
                    }
                    events
                }
                Err(e) => {
                    unread.push((format!("{} job {}", job.database, job.id), e.to_string()));
                    continue;
                }
            };
            for stored in stored_events {
                let Some(event) = as_text_event(&stored) else {
                    continue;
                };
                if !plausible(event.time, &generated) {
                    *out_of_time.entry(job.database.clone()).or_default() += 1;
                    continue;
                }
                if event.kind == scr::event_log::kinds::START
                    && let Some(name) = event.field("app")
                {
                    app = Some(name.to_string());
                }
                if event.kind == scr::event_log::kinds::NODE_DOWN
                    && let Some((node, why)) = node_down(&event, &stored).and_then(node_kept)
                {
                    nodes_down.push((node, why, event.time));
                }
                launches.add(event, &mut so_far);
            }
            let figures = so_far.finish(Skipped::default());
            // `scr halt` on a prefix no job has run in yet logs a job with nothing to show
            if figures.stats.runs == 0 && nodes_down.is_empty() {
                continue;
            }
            let app = app.unwrap_or_else(|| job.name.clone());
            if let Some(text) = &app_holding
                && !app.contains(text.as_str())
                && !job.name.contains(text.as_str())
            {
                continue;
            }
            jobs.push(JobFigures {
                app,
                job,
                figures,
                nodes_down,
            });
        }
        for (database, n) in out_of_time {
            unread.push((
                database,
                format!(
                    "{n} event(s) dated before {EARLIEST_YEAR} or after tomorrow are left out \
                     (no job ran then: a clock far off, or records written by hand)"
                ),
            ));
        }
        Ok(Site {
            source,
            selection,
            app_holding,
            generated,
            jobs,
            unread,
        })
    }

    /// The applications, each its jobs together, by name.
    pub fn apps(&self) -> Vec<AppRow> {
        let mut by_app: BTreeMap<&str, Vec<&JobFigures>> = BTreeMap::new();
        for job in &self.jobs {
            by_app.entry(&job.app).or_default().push(job);
        }
        by_app
            .into_iter()
            .map(|(app, jobs)| app_row(app, &jobs))
            .collect()
    }

    /// Failures by ISO week (`2026-W48`) and kind, oldest week first.
    pub fn failures_by_week(&self) -> BTreeMap<String, [u64; 3]> {
        let mut weeks: BTreeMap<String, [u64; 3]> = BTreeMap::new();
        for job in &self.jobs {
            for (week, counts) in &job.figures.failures_by_week {
                let all = weeks.entry(week.clone()).or_default();
                for (sum, n) in all.iter_mut().zip(counts) {
                    *sum += n;
                }
            }
        }
        weeks
    }

    /// Each node scr-run found down: how often, and the reasons, most often first.
    pub fn nodes(&self) -> Vec<NodeRow> {
        let mut nodes: BTreeMap<&str, NodeRow> = BTreeMap::new();
        for job in &self.jobs {
            for (node, why, _) in &job.nodes_down {
                let row = nodes.entry(node).or_insert_with(|| NodeRow {
                    node: node.clone(),
                    ..NodeRow::default()
                });
                row.times_down += 1;
                row.reasons.insert(why.clone());
                row.users.insert(job.job.user.clone());
            }
        }
        let mut rows: Vec<NodeRow> = nodes.into_values().collect();
        rows.sort_by(|a, b| {
            b.times_down
                .cmp(&a.times_down)
                .then_with(|| a.node.cmp(&b.node))
        });
        rows
    }
}

/// A node scr-run found down, across jobs: how often, why, and whose jobs said so (one
/// user's records alone may say anything).
#[derive(Default)]
pub struct NodeRow {
    pub node: String,
    pub times_down: u64,
    pub reasons: BTreeSet<String>,
    pub users: BTreeSet<String>,
}

/// A mean over parts, each with its weight; None when nothing weighs.
fn weighted(parts: impl Iterator<Item = (Option<f64>, f64)>) -> Option<f64> {
    let (sum, weight) = parts
        .filter_map(|(v, w)| v.map(|v| (v * w, w)))
        .filter(|(_, w)| *w > 0.0)
        .fold((0.0, 0.0), |(s, n), (v, w)| (s + v, n + w));
    (weight > 0.0).then(|| sum / weight)
}

fn app_row(app: &str, jobs: &[&JobFigures]) -> AppRow {
    let stats = Stats {
        runs: jobs.iter().map(|j| j.figures.stats.runs).sum(),
        failures: jobs.iter().map(|j| j.figures.stats.failures).sum(),
        run_seconds: jobs.iter().map(|j| j.figures.stats.run_seconds).sum(),
        checkpoints: jobs.iter().map(|j| j.figures.stats.checkpoints).sum(),
        mean_checkpoint_seconds: weighted(jobs.iter().map(|j| {
            let s = &j.figures.stats;
            (Some(s.mean_checkpoint_seconds), s.checkpoints as f64)
        }))
        .unwrap_or(0.0),
    };
    let cost = (stats.checkpoints > 0).then_some(stats.mean_checkpoint_seconds);
    let mtbf = stats.mtbf_estimate();
    let (young, daly) = match (cost, mtbf) {
        (Some(c), Some((m, _))) => (Some(young(c, m)), Some(daly(c, m))),
        _ => (None, None),
    };
    AppRow {
        app: app.to_string(),
        users: jobs.iter().map(|j| j.job.user.clone()).collect(),
        jobs: jobs.len(),
        failures: jobs.iter().map(|j| j.figures.failures.total).sum(),
        records_missing: jobs.iter().map(|j| j.figures.records_missing).sum(),
        // (+ 0.0: a sum of none is -0.0, which JSON would print)
        time_lost: jobs.iter().map(|j| j.figures.time_lost()).sum::<f64>() + 0.0,
        cost,
        flush_bandwidth: jobs
            .iter()
            .fold(FlushRate::default(), |mut all, j| {
                all.merge(&j.figures.flush_rate);
                all
            })
            .mib_per_s(),
        interval: weighted(
            jobs.iter()
                .map(|j| (j.figures.interval.in_use, j.figures.interval.gaps as f64)),
        ),
        stats,
        mtbf,
        young,
        daly,
    }
}
