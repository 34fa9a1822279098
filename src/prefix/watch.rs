//! Whether a scr-run watches a prefix: from its prerun to its end it holds a shared lock on
//! `.scr/scr-run.lock`, and `scr halt --immediate` asks, so that a halt no scr-run will
//! carry out at once is said to wait for the job's next check of the halt file.

use crate::{Error, Result, layout, safe_fs};
use rustix::fs::FlockOperation;
use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;

const LOCK_NAME: &str = "scr-run.lock";

/// The shared lock a scr-run holds on a prefix while it runs; released when dropped (or
/// when the process ends, however it ends).
pub struct Watching {
    _lock: File,
}

/// Opens the lock file through the prefix's `.scr`, opened once without following links
/// below the prefix, creating it or (`how`) only where it exists; None when there is no
/// `.scr`.
fn lock_file(prefix: &Path, how: safe_fs::OpenIn) -> Result<Option<File>> {
    let Some(hidden) = safe_fs::Beneath::open(prefix)?.open_dir(Path::new(layout::HIDDEN))? else {
        return Ok(None);
    };
    let path = layout::prefix_hidden_dir(prefix).join(LOCK_NAME);
    match safe_fs::open_in(&hidden, OsStr::new(LOCK_NAME), how) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, "open", e)),
    }
}

/// scr-run, after its prerun made `.scr`: says the prefix is watched until the
/// [`Watching`] is dropped.
pub fn watch(prefix: &Path) -> Result<Watching> {
    let path = layout::prefix_hidden_dir(prefix).join(LOCK_NAME);
    let file = lock_file(prefix, safe_fs::OpenIn::Append)?
        .ok_or_else(|| Error::invalid(&path, "is in no directory: run scr prerun first"))?;
    rustix::fs::flock(&file, FlockOperation::LockShared)
        .map_err(|e| Error::io(&path, "lock", e.into()))?;
    Ok(Watching { _lock: file })
}

/// Whether a scr-run watches `prefix` now (holds its lock). A prefix whose lock cannot be
/// looked at is said as unwatched; asking makes no file.
pub fn is_watched(prefix: &Path) -> bool {
    let Ok(Some(file)) = lock_file(prefix, safe_fs::OpenIn::Existing) else {
        return false;
    };
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => false,
        Err(e) => e == rustix::io::Errno::WOULDBLOCK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_watched_while_the_lock_is_held_and_no_longer() {
        let tmp = tempfile::tempdir().unwrap();
        let prefix = tmp.path();
        assert!(!is_watched(prefix), "no .scr yet");
        assert!(watch(prefix).is_err());
        std::fs::create_dir(prefix.join(layout::HIDDEN)).unwrap();
        assert!(!is_watched(prefix));
        let lock = prefix.join(layout::HIDDEN).join(LOCK_NAME);
        assert!(!lock.exists(), "asking made the lock file");
        let held = watch(prefix).unwrap();
        // a second scr-run on the prefix shares the lock
        let second = watch(prefix).unwrap();
        assert!(is_watched(prefix));
        drop(held);
        assert!(is_watched(prefix));
        drop(second);
        assert!(!is_watched(prefix));
    }
}
