//! Writing SCR's event log from a job: rank 0 appends one line per event to
//! `<prefix>/.scr/log` (SCR_LOG_TXT_ENABLE) and sends it to syslog (SCR_LOG_SYSLOG_ENABLE,
//! with SCR_LOG_SYSLOG_FACILITY, _LEVEL and _PREFIX) and writes it as SCR v3.1's database
//! records (SCR_LOG_DB_ENABLE, with SCR_LOG_DB_HOST, _NAME, _USER, _PASS and _DEBUG: see
//! `scr_db`), when SCR_LOG_ENABLE=1. A log that cannot be written costs a warning, never
//! the checkpoint.

use scr::event_log::TextLog;
use scr::params::settings::Log;
use scr::{Error, Result};
use std::ffi::{CString, c_int};

#[derive(Default)]
pub struct EventLog {
    /// The prefix's text log (SCR_LOG_TXT_ENABLE).
    text: Option<TextLog>,
    /// syslog priority (facility | level); openlog was called with the identity
    syslog: Option<c_int>,
    /// the database log (one that writes nothing unless SCR_LOG_DB_ENABLE=1)
    db: Option<scr_db::Sink>,
    /// user and job id, on every line
    who: Vec<(&'static str, String)>,
}

fn facility(name: &str) -> Option<c_int> {
    Some(match name.to_ascii_uppercase().trim_start_matches("LOG_") {
        "USER" => libc::LOG_USER,
        "DAEMON" => libc::LOG_DAEMON,
        "LOCAL0" => libc::LOG_LOCAL0,
        "LOCAL1" => libc::LOG_LOCAL1,
        "LOCAL2" => libc::LOG_LOCAL2,
        "LOCAL3" => libc::LOG_LOCAL3,
        "LOCAL4" => libc::LOG_LOCAL4,
        "LOCAL5" => libc::LOG_LOCAL5,
        "LOCAL6" => libc::LOG_LOCAL6,
        "LOCAL7" => libc::LOG_LOCAL7,
        _ => return None,
    })
}

fn level(name: &str) -> Option<c_int> {
    Some(match name.to_ascii_uppercase().trim_start_matches("LOG_") {
        "EMERG" => libc::LOG_EMERG,
        "ALERT" => libc::LOG_ALERT,
        "CRIT" => libc::LOG_CRIT,
        "ERR" => libc::LOG_ERR,
        "WARNING" => libc::LOG_WARNING,
        "NOTICE" => libc::LOG_NOTICE,
        "INFO" => libc::LOG_INFO,
        "DEBUG" => libc::LOG_DEBUG,
        _ => return None,
    })
}

fn bad(param: &str, value: &str, expected: &str) -> Error {
    Error::Config {
        origin: param.into(),
        what: format!("{param}={value:?} is not valid: expected {expected}"),
    }
}

impl EventLog {
    /// The log rank 0 writes (other ranks get one that writes nothing). Bad facility or
    /// level names are errors naming the parameter.
    pub fn open(
        settings: &Log,
        prefix: &std::path::Path,
        rank: u64,
        user: &str,
        jobid: &str,
    ) -> Result<EventLog> {
        if !settings.enable {
            return Ok(EventLog::default());
        }
        // every rank checks the names (the parameters are the same everywhere), so a bad
        // one fails SCR_Init on all ranks alike rather than leaving rank 0 alone
        let priority = if settings.syslog {
            let (f, l) = (&settings.facility, &settings.level);
            let fac = facility(f).ok_or_else(|| {
                bad(
                    "SCR_LOG_SYSLOG_FACILITY",
                    f,
                    "LOG_USER, LOG_DAEMON or LOG_LOCAL0 … LOG_LOCAL7",
                )
            })?;
            let lev =
                level(l).ok_or_else(|| bad("SCR_LOG_SYSLOG_LEVEL", l, "LOG_EMERG … LOG_DEBUG"))?;
            let ident = CString::new(settings.identity.as_str())
                .map_err(|_| bad("SCR_LOG_SYSLOG_PREFIX", "", "text without NUL"))?;
            Some((fac, lev, ident))
        } else {
            None
        };
        if rank != 0 {
            return Ok(EventLog::default());
        }
        let syslog = priority.map(|(fac, lev, ident)| {
            // openlog keeps the pointer: the identity lives as long as the process
            let ident: &'static std::ffi::CStr = Box::leak(ident.into_boxed_c_str());
            // SAFETY: ident is NUL-terminated and never freed
            unsafe { libc::openlog(ident.as_ptr(), libc::LOG_PID, fac) };
            fac | lev
        });
        // the job in the database is the user's computation in this prefix, across runs
        let db = settings.db.enable.then(|| {
            let sink = scr_db::Sink::open(
                scr_db::Target::from_settings(&settings.db, user),
                user,
                &scr::layout::job_name(prefix),
                chrono::Local::now(),
            );
            settle_at_exit_of(&sink);
            sink
        });
        let text = if settings.text {
            // the job goes on without its text log, as when a line cannot be appended
            TextLog::open(prefix)
                .inspect_err(|e| say!("SCR: WARNING: no event log: {e}"))
                .ok()
        } else {
            None
        };
        Ok(EventLog {
            text,
            syslog,
            db,
            who: vec![("user", user.to_string()), ("jobid", jobid.to_string())],
        })
    }

    /// Records one event (on rank 0 with logging on; otherwise nothing).
    pub fn event(&self, kind: &str, fields: &[(&str, String)]) {
        if self.text.is_none() && self.syslog.is_none() && self.db.is_none() {
            return;
        }
        let mut all: Vec<(&str, String)> = fields.to_vec();
        all.extend(self.who.iter().cloned());
        let now = chrono::Local::now();
        if let Some(text) = &self.text
            && let Some(e) = text.append(now, kind, &all)
        {
            // what the job did, as the index says it: the user's alone, as the index is
            say!(
                "SCR: WARNING: could not append to the event log {}: {e} (said once; the \
                 job goes on, with the events it cannot log there lost)",
                text.path().display()
            );
        }
        if let Some(priority) = self.syslog {
            // the time is syslog's own; the message starts at the event
            let line = scr::event_log::format_line(now, kind, &all);
            let message = line.split_once(' ').map_or(line.as_str(), |(_, m)| m);
            if let Ok(msg) = CString::new(message) {
                // SAFETY: "%s" with one NUL-terminated string argument
                unsafe { libc::syslog(priority, c"%s".as_ptr(), msg.as_ptr()) };
            }
        }
        if let Some(db) = &self.db {
            db.record(kind, now, &all);
        }
    }
}

/// The database log of the run now open, for [`settle_at_exit`].
static OPEN_DB_LOG: std::sync::Mutex<Option<scr_db::Settler>> = std::sync::Mutex::new(None);

/// Has the process's exit wait for `sink`'s records (an application that ends without
/// SCR_Finalize: a job that fails, or one a halt ends): its worker writes what it was
/// handed for at most [`scr_db::TIMEOUT`] more, as at SCR_Finalize, so the checkpoints the
/// run completed are in the database as they are in the text log.
fn settle_at_exit_of(sink: &scr_db::Sink) {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    if let Ok(mut open) = OPEN_DB_LOG.lock() {
        *open = Some(sink.settler());
    }
    REGISTERED.call_once(|| {
        // SAFETY: registers a function that takes no arguments and never unwinds
        unsafe { libc::atexit(settle_at_exit) };
    });
}

extern "C" fn settle_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let settler = OPEN_DB_LOG.lock().ok().and_then(|open| open.clone());
        if let Some(settler) = settler {
            settler.settle(scr_db::TIMEOUT);
        }
    });
}

pub use scr::event_log::timing;
