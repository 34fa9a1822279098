//! Which flushes may still write below a directory of the prefix. Every process that may
//! write a flush's copies below a top directory of the prefix (each rank of the job from the
//! flush's start to its end, a node's transfer agent while it copies a file) holds a shared
//! `flock` on that directory's lock file in `.scr` (`.writing.<crc32 of its name>.lock`).
//! A sweep of what a dead flush left there takes the exclusive lock without waiting and
//! touches the directory only while it holds it. The kernel lets go of a killed process's
//! locks, so a free lock means no live writer, of this job or of any other on the prefix
//! (names whose CRCs collide share a lock: the sweep then waits for both). Whoever finds a
//! lock free removes its file under it; a writer that locked a file removed meanwhile
//! locks the new one.

use crate::view::HashView;
use crate::{Error, Result, layout, safe_fs};
use rustix::fd::OwnedFd;
use std::ffi::OsString;
use std::fs::{File, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

/// A top directory's lock file, reached through the prefix's `.scr` opened once (checked
/// the user's and no link): whoever may rename in the prefix cannot have a writer lock, or
/// a sweep remove, a file of theirs elsewhere.
#[derive(Debug)]
struct LockPlace {
    hidden: OwnedFd,
    name: OsString,
    /// For messages.
    path: PathBuf,
}

impl LockPlace {
    fn of(prefix: &Path, top: &str) -> Result<LockPlace> {
        let crc = crc32fast::hash(top.as_bytes());
        let name = OsString::from(format!(".writing.{crc:08x}.lock"));
        let path = layout::prefix_hidden_dir(prefix).join(&name);
        let hidden = safe_fs::Beneath::open(prefix)?
            .open_dir(Path::new(layout::HIDDEN))?
            .ok_or_else(|| Error::io(&path, "open", std::io::ErrorKind::NotFound.into()))?;
        Ok(LockPlace { hidden, name, path })
    }

    /// The lock file, created (the user's alone) where missing, never through a link.
    fn open(&self) -> Result<File> {
        let file = safe_fs::open_in(&self.hidden, &self.name, safe_fs::OpenIn::Append)
            .map_err(|e| Error::io(&self.path, "open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(&self.path, "stat", e))?;
        if !meta.is_file() {
            return Err(Error::invalid(
                &self.path,
                "is not a regular file; remove it",
            ));
        }
        Ok(file)
    }

    /// Whether `file`, locked, is still the one with the lock's name (else whoever removed
    /// it found it free, and a new one stands there).
    fn still_holds(&self, file: &File) -> Result<bool> {
        let locked = file
            .metadata()
            .map_err(|e| Error::io(&self.path, "stat", e))?;
        match rustix::fs::statat(
            &self.hidden,
            self.name.as_os_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(now) => Ok(now.st_ino == locked.ino() && now.st_dev == locked.dev()),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(Error::io(&self.path, "stat", e.into())),
        }
    }

    fn remove(&self) {
        let _ = safe_fs::remove_in(&self.hidden, &self.name);
    }
}

/// A writer's hold on a top directory: the directory has a live writer while it lives.
/// The last writer out removes the lock file.
#[derive(Debug)]
pub struct Writing {
    place: LockPlace,
    lock: File,
}

impl Drop for Writing {
    fn drop(&mut self) {
        // (a writer that comes between the unlock and the removal locks a new file)
        if self.lock.unlock().is_ok()
            && self.lock.try_lock().is_ok()
            && self.place.still_holds(&self.lock).unwrap_or(false)
        {
            self.place.remove();
        }
    }
}

/// The exclusive hold a sweep has on a top directory: no writer is alive there while it
/// lives, and none starts.
#[derive(Debug)]
pub struct NoWriter {
    place: LockPlace,
    lock: File,
}

impl NoWriter {
    /// Done with the directory: its lock file goes, then the lock.
    pub fn release(self) {
        self.place.remove();
        drop(self.lock);
    }
}

/// The top directory below `prefix` that `path` (a file's place, absolute or relative to
/// the prefix) lies in; none for a file right in the prefix, or a path that leaves it.
pub fn top_dir(prefix: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(prefix).unwrap_or(path);
    let mut parts = rel.components();
    let Some(Component::Normal(first)) = parts.next() else {
        return None;
    };
    parts.next()?;
    Some(first.to_string_lossy().into_owned())
}

/// Holds the shared lock of top directory `top` of `prefix` while the value lives: taken
/// before a writer writes anything below it, waiting while a sweep holds it (a moment), but
/// no longer than `SCR_LOCK_TIMEOUT` ([`crate::io::lock_timeout`]): whoever else may open
/// the lock file (the owner of a team's prefix) could hold it for good.
pub fn writing_below(prefix: &Path, top: &str) -> Result<Writing> {
    writing_below_within(prefix, top, crate::io::lock_timeout())
}

fn writing_below_within(prefix: &Path, top: &str, timeout: Duration) -> Result<Writing> {
    let place = LockPlace::of(prefix, top)?;
    let path = place.path.clone();
    let waited = Instant::now();
    loop {
        let file = place.open()?;
        loop {
            match file.try_lock_shared() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if waited.elapsed() < timeout => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::invalid(
                        &path,
                        format!(
                            "stayed locked for {:.0} s (a sweep holds it only for a moment): a \
                             process of another user may be holding it; this flush's copies go \
                             on without it (SCR_LOCK_TIMEOUT sets the wait)",
                            timeout.as_secs_f64()
                        ),
                    ));
                }
                Err(TryLockError::Error(e)) => return Err(Error::io(&path, "lock", e)),
            }
        }
        if place.still_holds(&file)? {
            return Ok(Writing { place, lock: file });
        }
    }
}

/// The exclusive lock of top directory `top` of `prefix`, taken without waiting: none
/// while a writer holds it.
pub fn no_writer(prefix: &Path, top: &str) -> Result<Option<NoWriter>> {
    let place = LockPlace::of(prefix, top)?;
    loop {
        let file = place.open()?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(Error::io(&place.path, "lock", e)),
        }
        if place.still_holds(&file)? {
            return Ok(Some(NoWriter { place, lock: file }));
        }
    }
}

/// What a process about to write the files `places` (below `prefix`) holds while it may:
/// the lock of each of their top directories, in name order. A lock that cannot be taken
/// (`.scr` unwritable) is said through `warn`; the writing goes on.
pub fn writing_below_all<'a>(
    prefix: &Path,
    places: impl IntoIterator<Item = &'a Path>,
    warn: &mut dyn FnMut(&Error),
) -> Vec<Writing> {
    let tops: std::collections::BTreeSet<String> = places
        .into_iter()
        .filter_map(|p| top_dir(prefix, p))
        .collect();
    tops.iter()
        .filter_map(|top| writing_below(prefix, top).map_err(|e| warn(&e)).ok())
        .collect()
}

/// Removes what the flushes of `interrupted` (datasets the flush file still calls
/// FLUSHING) left below their recorded directories, each only while no writer of any flush
/// into that directory is alive and unless it committed (its records wait for
/// [`super::placing::recover`]); the flush file then forgets each one's FLUSHING. Returns
/// the datasets swept, and those left for a live writer.
pub fn sweep_dead_flushes(prefix: &Path, interrupted: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
    let flush = crate::flush::FlushFile::read(&layout::flush_file(prefix))?;
    let (mut swept, mut live) = (Vec::new(), Vec::new());
    for &id in interrupted {
        let Some(dir) = flush.dir(id) else { continue };
        // a directory of the user's below the prefix, never SCR's own
        if crate::rank2file::check_relative(dir).is_err()
            || layout::refuse_reserved(Path::new(dir), "a dataset directory").is_err()
            || super::placing::pending(prefix, id)
        {
            continue;
        }
        let Some(top) = top_dir(prefix, &Path::new(dir).join("-")) else {
            continue;
        };
        match no_writer(prefix, &top)? {
            Some(quiet) => {
                super::placing::sweep_abandoned(prefix, Path::new(dir))?;
                sweep_dataset_meta(prefix, id)?;
                quiet.release();
                swept.push(id);
            }
            None => live.push(id),
        }
    }
    super::update_flush_file(prefix, |f| {
        for &id in &swept {
            f.forget_location(id, crate::flush::Location::Flushing);
        }
    })?;
    Ok((swept, live))
}

/// Removes the temporaries a dead flush of dataset `id` left among its records below
/// `.scr` (a rank2file leaf, a placing record, a summary half written when the writer was
/// killed), then the dataset's directory there if that leaves it empty (the flush wrote
/// nothing that stayed). Only where no writer of the flush is alive.
fn sweep_dataset_meta(prefix: &Path, id: u64) -> Result<()> {
    let below = crate::safe_fs::Beneath::open(prefix)?;
    let meta = Path::new(&layout::dataset_meta_rel(id)).to_path_buf();
    below.remove_temporaries(&meta);
    below.remove_empty_dir(&meta)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flush killed while it wrote its records below `.scr` (the campaign's rank and
    /// scr-run kills) leaves temporaries there; the sweep of dead flushes removes them,
    /// and the dataset's directory there when nothing else is in it. Another dataset's
    /// records, and the records of a dataset whose flush had written more, stay.
    #[test]
    fn a_dead_flush_leaves_no_temporary_among_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        std::fs::create_dir(layout::prefix_hidden_dir(prefix)).unwrap();
        let flush = layout::flush_file(prefix);
        crate::flush::FlushFile::update(&flush, crate::io::PRIVATE_FILE, |f| {
            for (id, name) in [(6, "ckpt.6"), (9, "ckpt.9")] {
                f.describe(id, name, Some(id), Some(name));
                f.set_location(id, crate::flush::Location::Flushing);
            }
            Ok(())
        })
        .unwrap();
        let temp_in = |id: u64, leaf: &str| {
            let meta = layout::dataset_meta_dir(prefix, id);
            std::fs::create_dir_all(&meta).unwrap();
            let temp = crate::temp_name::temporary_name(&meta.join(leaf), "tmp");
            std::fs::write(&temp, b"half").unwrap();
            temp
        };
        let six = temp_in(6, "rank2file.0.0.scr");
        let nine = temp_in(9, "placing.0.scr");
        let kept = layout::dataset_meta_dir(prefix, 9).join("rank2file");
        std::fs::write(&kept, b"whole").unwrap();
        let other = temp_in(12, "placing.0.scr");

        let (swept, live) = sweep_dead_flushes(prefix, &[6, 9]).unwrap();
        assert_eq!((swept, live), (vec![6, 9], vec![]));
        assert!(!six.exists() && !nine.exists());
        assert!(!layout::dataset_meta_dir(prefix, 6).exists());
        assert!(kept.exists(), "a dataset's records that are whole stay");
        assert!(
            other.exists(),
            "a dataset whose flush was not cut short is not swept"
        );
    }

    #[test]
    fn a_live_writer_keeps_a_sweep_out_and_a_dead_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        std::fs::create_dir(layout::prefix_hidden_dir(prefix)).unwrap();
        assert_eq!(
            top_dir(prefix, &prefix.join("ckpt.3/rank_0.ckpt")).as_deref(),
            Some("ckpt.3")
        );
        assert_eq!(top_dir(prefix, Path::new("a/b/c")).as_deref(), Some("a"));
        assert_eq!(top_dir(prefix, &prefix.join("rank_0.ckpt")), None);
        let writer = writing_below(prefix, "ckpt.3").unwrap();
        let other = writing_below(prefix, "ckpt.3").unwrap();
        assert!(no_writer(prefix, "ckpt.3").unwrap().is_none());
        assert!(no_writer(prefix, "ckpt.4").unwrap().is_some_and(|n| {
            n.release();
            true
        }));
        drop(writer);
        assert!(
            no_writer(prefix, "ckpt.3").unwrap().is_none(),
            "one writer left"
        );
        drop(other);
        let sweep = no_writer(prefix, "ckpt.3").unwrap().expect("no writer");
        sweep.release();
        assert!(!LockPlace::of(prefix, "ckpt.3").unwrap().path.exists());
        // a writer that comes after the sweep locks a new file
        let again = writing_below(prefix, "ckpt.3").unwrap();
        assert!(no_writer(prefix, "ckpt.3").unwrap().is_none());
        drop(again);
    }

    /// `.scr` swapped for a link (by whoever may rename in the prefix): no lock file is
    /// made, held or removed where it leads.
    #[test]
    fn no_lock_is_taken_through_a_swapped_scr() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&prefix).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, layout::prefix_hidden_dir(&prefix)).unwrap();
        assert!(writing_below(&prefix, "ckpt.1").is_err());
        assert!(no_writer(&prefix, "ckpt.1").is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_writer_waits_for_a_lock_held_for_good_only_so_long() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        std::fs::create_dir(layout::prefix_hidden_dir(prefix)).unwrap();
        // whoever may open the lock file holds it exclusively and never lets go
        let held = no_writer(prefix, "ckpt.1").unwrap().expect("free");
        let e = writing_below_within(prefix, "ckpt.1", Duration::from_millis(200))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("stayed locked") && e.contains("SCR_LOCK_TIMEOUT"),
            "{e}"
        );
        drop(held);
        // a lock let go is taken
        assert!(writing_below_within(prefix, "ckpt.1", Duration::from_millis(200)).is_ok());
    }
}
