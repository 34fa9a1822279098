//! Deleting datasets from the prefix: SCR_Delete, the SCR_PREFIX_SIZE window and
//! SCR_PREFIX_PURGE.

use super::{Location, drop_dataset, flushed_files, update_flush_file};
use crate::index::IndexFile;
use crate::rank2file::RankFiles;
use crate::summary::Summary;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::path::Path;

/// Deletes dataset `id`'s files from the prefix (SCR_Delete): every file its rank2file map
/// lists, its `.scr/scr.dataset.<id>` directory, and the directories that leaves empty up
/// to the prefix (the dataset's own `<prefix>/<name>/` among them). Paths come from the
/// map, which refuses names that leave the prefix. Returns how many files it removed.
pub fn delete_dataset_files(prefix: &Path, id: u64) -> Result<usize> {
    let meta = layout::dataset_meta_dir(prefix, id);
    // a summary that cannot be read leaves the dataset where it is (said by the caller):
    // without its file list, deleting its metadata would orphan its files
    let files = match Summary::read(&layout::summary_file(prefix, id)) {
        Ok(summary) => flushed_files(prefix, id, &summary)?,
        Err(e) if e.is_not_found() => RankFiles::new(),
        Err(e) => return Err(e),
    };
    // through directory handles: a directory swapped for a link (by anyone who can write
    // the prefix) is refused, never followed to delete what lies elsewhere
    let below = crate::safe_fs::Beneath::open(prefix)?;
    let mut removed = 0;
    let mut dirs = std::collections::BTreeSet::new();
    for rec in files.values().flatten() {
        let rel = Path::new(&rec.name);
        if below.remove_file(rel)? {
            removed += 1;
        }
        let mut dir = rel.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_path_buf());
            dir = d.parent();
        }
    }
    match std::fs::remove_dir_all(&meta) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(&meta, "remove", e));
        }
        _ => {}
    }
    // deepest first; a directory still holding something of the user's stays
    for dir in dirs.iter().rev() {
        below.remove_empty_dir(dir)?;
    }
    io::sync_dir(prefix)?;
    Ok(removed)
}

/// The checkpoints SCR_PREFIX_SIZE=`keep` lets go: the complete checkpoints on the prefix
/// beyond the newest `keep`, oldest last, never the current one (a user may have pointed a
/// restart at an older checkpoint) nor one marked as output too. `keep` = 0 keeps
/// everything.
pub fn beyond_window(index: &IndexFile, keep: u64) -> Vec<(u64, String)> {
    if keep == 0 {
        return Vec::new();
    }
    let current = index.current();
    index
        .entries()
        .into_iter()
        .filter(|e| e.complete && e.flushed.is_some())
        .filter(|e| {
            index
                .dataset(e.id, &e.name)
                .is_none_or(|d| d.is_checkpoint())
        })
        .skip(keep as usize)
        // a checkpoint that is also output the user asked for stays (as SCR's window), and
        // so does one SCR adopted: its files were the application's before SCR ran
        .filter(|e| {
            index
                .dataset(e.id, &e.name)
                .is_none_or(|d| !d.is_output() && !d.is_adopted())
        })
        .filter(|e| Some(e.name.as_str()) != current)
        .map(|e| (e.id, e.name))
        .collect()
}

/// Removes a dataset from the prefix: its files, its metadata and its index entry (the
/// current checkpoint passes to the next older one). The flush file forgets it. Returns
/// a warning when `scr.current` could not follow the index.
pub fn delete_dataset(prefix: &Path, id: u64, name: &str) -> Result<Option<String>> {
    delete_dataset_files(prefix, id)?;
    let dropped = drop_dataset(prefix, name)?;
    update_flush_file(prefix, |f| f.unset_location(id, Location::Pfs))?;
    Ok(dropped.and_then(|d| d.link_warning))
}

/// What deleting several datasets from the prefix did: one that cannot be deleted stays
/// (said), and the others are deleted all the same.
#[derive(Debug, Default)]
pub struct Deletions {
    /// The datasets deleted, by name.
    pub deleted: Vec<String>,
    /// Those that stay, each with why.
    pub failed: Vec<(String, Error)>,
    /// What else the user should know (`scr.current` could not follow the index).
    pub warnings: Vec<String>,
}

impl Deletions {
    fn delete_all(prefix: &Path, datasets: Vec<(u64, String)>) -> Deletions {
        let mut done = Deletions::default();
        for (id, name) in datasets {
            match delete_dataset(prefix, id, &name) {
                Ok(warning) => {
                    done.warnings.extend(warning);
                    done.deleted.push(name);
                }
                Err(e) => done.failed.push((name, e)),
            }
        }
        done
    }
}

/// Keeps a sliding window of `keep` checkpoints on the prefix (SCR_PREFIX_SIZE): deletes
/// the older ones [`beyond_window`] names.
pub fn enforce_window(prefix: &Path, keep: u64) -> Deletions {
    let Ok(index) = IndexFile::read(&layout::index_file(prefix)) else {
        return Deletions::default();
    };
    Deletions::delete_all(prefix, beyond_window(&index, keep))
}

/// Deletes every dataset the prefix's index lists (SCR_PREFIX_PURGE).
pub fn purge(prefix: &Path) -> Deletions {
    let Ok(index) = IndexFile::read(&layout::index_file(prefix)) else {
        return Deletions::default();
    };
    let all = index
        .entries()
        .into_iter()
        .map(|e| (e.id, e.name))
        .collect();
    Deletions::delete_all(prefix, all)
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};

    #[test]
    fn the_window_keeps_the_newest_and_never_the_current_one() {
        let mut index = IndexFile::new();
        let now = chrono::Local::now();
        for id in 1..=5 {
            let name = format!("ckpt.{id}");
            let d = Dataset::create(id, &name, true, false, &Origin::default(), Some(id));
            index.add(&d, &name, true);
            index.set_flushed(id, &name, now);
        }
        let out = Dataset::create(6, "out.6", false, true, &Origin::default(), None);
        index.add(&out, "out.6", true);
        index.set_flushed(6, "out.6", now);
        index.set_current("ckpt.2").unwrap();
        let names = |v: Vec<(u64, String)>| v.into_iter().map(|(_, n)| n).collect::<Vec<_>>();
        assert_eq!(names(beyond_window(&index, 2)), ["ckpt.3", "ckpt.1"]);
        assert_eq!(names(beyond_window(&index, 4)), ["ckpt.1"]);
        assert!(beyond_window(&index, 0).is_empty());
        assert!(beyond_window(&index, 9).is_empty());
        // a checkpoint that is output too stays, whatever its age (config.rst)
        let both = Dataset::create(0, "both.0", true, true, &Origin::default(), Some(0));
        index.add(&both, "both.0", true);
        index.set_flushed(0, "both.0", now);
        assert_eq!(names(beyond_window(&index, 2)), ["ckpt.3", "ckpt.1"]);
    }
}
