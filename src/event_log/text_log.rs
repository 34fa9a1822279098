//! Appending to a prefix's text log: through the prefix's `.scr` opened once, no link
//! followed, to a log that is this user's alone.

use super::{LOG_NAME, format_line, log_path};
use chrono::{DateTime, Local};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The text log of one prefix, for a process that appends events to it (the library's
/// rank 0, scr-run, the drain).
///
/// Every line goes through the prefix's `.scr` opened when the log was, as a directory of
/// this user's with no link followed: a `.scr` swapped for a link later (by whoever may
/// rename in the prefix) leads no line elsewhere. A line is appended only to a regular file
/// of this user's that nobody else may write (its mode, its group, its ACL, judged on the
/// opened handle): what is read back from it would not be the job's alone otherwise.
///
/// ```no_run
/// use scr::event_log::TextLog;
/// let log = TextLog::open(std::path::Path::new("/p/scratch/run1")).expect("a prefix of mine");
/// if let Some(e) = log.append(chrono::Local::now(), "HALT", &[("reason", "maintenance".into())]) {
///     eprintln!("the event log {} takes no line: {e}", log.path().display());
/// }
/// ```
pub struct TextLog {
    path: PathBuf,
    dir: std::fs::File,
    /// An append has failed already (the caller said so).
    failed: AtomicBool,
}

impl TextLog {
    /// The text log of `prefix`; an error says why its `.scr` is not one to log in (no
    /// directory of this user's, or a link).
    pub fn open(prefix: &Path) -> crate::Result<TextLog> {
        let hidden = Path::new(crate::layout::HIDDEN);
        let dir = crate::safe_fs::Beneath::open(prefix)?
            .open_dir(hidden)?
            .map(std::fs::File::from)
            .ok_or_else(|| {
                crate::Error::untrusted(
                    prefix.join(hidden),
                    "it could not be opened as a directory of yours (no link followed)",
                )
            })?;
        Ok(TextLog {
            path: log_path(prefix),
            dir,
            failed: AtomicBool::new(false),
        })
    }

    /// Where the log is (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event line (the log created 0600 where missing). Returns the first
    /// failure only, for the caller to say once: a log that cannot take one line mostly
    /// takes none of the next either.
    pub fn append(
        &self,
        time: DateTime<Local>,
        kind: &str,
        fields: &[(&str, String)],
    ) -> Option<std::io::Error> {
        let line = format_line(time, kind, fields);
        let appended = self.append_bytes(format!("{line}\n").as_bytes());
        match appended {
            Err(e) if !self.failed.swap(true, Ordering::Relaxed) => Some(e),
            _ => None,
        }
    }

    fn append_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        let name = std::ffi::OsStr::new(LOG_NAME);
        let mut log = crate::safe_fs::open_in(&self.dir, name, crate::safe_fs::OpenIn::Append)?;
        let meta = log.metadata()?;
        let why = if meta.is_file() {
            crate::safe_fs::untrusted_file(&log, &meta)
        } else {
            Some("is no regular file".to_string())
        };
        if let Some(why) = why {
            return Err(std::io::Error::other(format!("nothing appended: it {why}")));
        }
        log.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log someone else may write gets nothing more appended (its lines would not be the
    /// job's alone), said as the error once; one of the user's alone does.
    #[test]
    fn nothing_is_appended_to_a_log_others_may_write() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(crate::layout::HIDDEN)).unwrap();
        let log = TextLog::open(tmp.path()).unwrap();
        let append = |what: &str| log.append(Local::now(), "HALT", &[("reason", what.into())]);
        assert!(append("one").is_none());
        let path = log_path(tmp.path());
        assert_eq!(log.path(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o602)).unwrap();
        let e = append("two").expect("refused").to_string();
        assert!(e.contains("writable by everyone"), "{e}");
        // refused again, and not said again
        assert!(append("two again").is_none());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(append("three").is_none());
        let reasons: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter_map(|l| {
                super::super::parse_line(l)?
                    .field("reason")
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(reasons, ["one", "three"]);
    }

    /// A `.scr` that is a link leads no line anywhere: the log is refused when opened.
    #[test]
    fn a_hidden_directory_that_is_a_link_is_no_log() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join(crate::layout::HIDDEN))
            .unwrap();
        let e = TextLog::open(tmp.path())
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains(crate::layout::HIDDEN), "{e}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
