//! A command's lines in the event logs of a prefix (SCR_LOG_ENABLE): its text log
//! (SCR_LOG_TXT_ENABLE) and the database (SCR_LOG_DB_ENABLE), under the user and job the
//! library's lines of that prefix name, so that `scr report` and the site report read the
//! launches, the runs' ends and the drain's flushes beside the library's own events.

use crate::program_name;
use chrono::{DateTime, Local};
use scr::event_log::TextLog;
use scr::params::Params;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How long a command run by hand (`scr halt`, `scr postrun`), not a step of a job, waits
/// at most for its database records to be written before it exits: a server that answers
/// slowly still gets them, one that is down or stopped was given up on already.
pub const DB_LOG_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// The database log of a command's events (SCR_LOG_ENABLE and SCR_LOG_DB_ENABLE), under
/// the job the library's records of `prefix` go to: `user`'s computation there. None when
/// it is off. Dropping it gives the log a bounded time to write what it was handed.
pub fn db_log(params: &Params, prefix: &Path, user: String) -> Option<scr_db::Sink> {
    let log = &params.typed().log;
    if !(log.enable && log.db.enable) {
        return None;
    }
    Some(scr_db::Sink::open(
        scr_db::Target::from_settings(&log.db, &user),
        &user,
        &scr::layout::job_name(prefix),
        chrono::Local::now(),
    ))
}

/// The text log of a prefix as a command appends to it: opened at the first line (the
/// prefix's `.scr` may be made by then: `scr prerun`), each line naming the user and job
/// id, and a log that takes no line said once.
pub struct TextLogOf {
    prefix: PathBuf,
    who: [(&'static str, String); 2],
    log: OnceLock<Option<TextLog>>,
}

impl TextLogOf {
    /// The text log of `prefix` for `user`'s job `job_id`; None when SCR_LOG_ENABLE or
    /// SCR_LOG_TXT_ENABLE is off.
    pub fn new(params: &Params, prefix: &Path, user: String, job_id: String) -> Option<TextLogOf> {
        let log = &params.typed().log;
        (log.enable && log.text).then(|| TextLogOf {
            prefix: prefix.to_path_buf(),
            who: [("user", user), ("jobid", job_id)],
            log: OnceLock::new(),
        })
    }

    /// Appends `kind` with `fields` (and the user and job id); what keeps it from the log
    /// is said on stderr, once.
    pub fn append(&self, time: DateTime<Local>, kind: &str, fields: &[(&str, String)]) {
        let log = self.log.get_or_init(|| {
            TextLog::open(&self.prefix)
                .inspect_err(|e| eprintln!("{}: no event log: {e} (said once)", program_name()))
                .ok()
        });
        if let Some(log) = log {
            self.append_in(log, time, kind, fields);
        }
    }

    /// [`TextLogOf::append`] to the text log of `prefix`, which may be another than this
    /// one's: the prefix a job's caches record as theirs (the application chose it), whose
    /// text log holds that job's other events.
    pub fn append_to(
        &self,
        prefix: &Path,
        time: DateTime<Local>,
        kind: &str,
        fields: &[(&str, String)],
    ) {
        if prefix == self.prefix {
            return self.append(time, kind, fields);
        }
        match TextLog::open(prefix) {
            Ok(log) => self.append_in(&log, time, kind, fields),
            Err(e) => eprintln!("{}: no event log: {e}", program_name()),
        }
    }

    fn append_in(
        &self,
        log: &TextLog,
        time: DateTime<Local>,
        kind: &str,
        fields: &[(&str, String)],
    ) {
        let mut record = fields.to_vec();
        record.extend(self.who.iter().cloned());
        if let Some(e) = log.append(time, kind, &record) {
            let program = program_name();
            eprintln!(
                "{program}: the event log {} does not take {program}'s lines: {e} (said once)",
                log.path().display()
            );
        }
    }
}

/// One dataset the drain completed on `prefix`, as the library logs its own flushes: a
/// `FLUSH` event (`fields`, `drain=1` among them) to the database log and to the text log
/// of that prefix, at one time.
pub fn log_drained(
    db: Option<&scr_db::Sink>,
    text: Option<&TextLogOf>,
    prefix: &Path,
    fields: &[(&str, String)],
) {
    let (kind, now) = (scr::event_log::kinds::FLUSH, Local::now());
    if let Some(db) = db {
        db.record(kind, now, fields);
    }
    if let Some(log) = text {
        log.append_to(prefix, now, kind, fields);
    }
}
