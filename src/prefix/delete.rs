//! Deleting datasets from the prefix: SCR_Delete, the SCR_PREFIX_SIZE window and
//! SCR_PREFIX_PURGE.

use super::{Location, drop_entry, flushed_files, update_flush_file};
use crate::index::IndexFile;
use crate::rank2file::RankFiles;
use crate::summary::Summary;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Deletes dataset `id`'s files from the prefix (SCR_Delete): every file its rank2file map
/// lists that no other dataset on the prefix names, its `.scr/scr.dataset.<id>` directory,
/// and the directories that leaves empty up to the prefix (the dataset's own
/// `<prefix>/<name>/` among them). Paths come from the map, which refuses names that leave
/// the prefix. Returns how many files it removed.
///
/// Two datasets name the same file when a program writes every checkpoint at the same
/// paths (`state/rank_N.ckpt`) or writes a name again after a restart from an older
/// checkpoint (`ckpt.3/rank_0.ckpt` of the failed ckpt.3 and of the new one): the file is
/// the newer one's, and goes only with the last dataset that names it.
pub fn delete_dataset_files(prefix: &Path, id: u64) -> Result<usize> {
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
    let kept = named_by_others(prefix, id);
    let mut removed = 0;
    let mut dirs = std::collections::BTreeSet::new();
    for rec in files.values().flatten() {
        let rel = Path::new(&rec.name);
        if !kept.contains(rel) && below.remove_file(rel)? {
            removed += 1;
        }
        let mut dir = rel.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_path_buf());
            dir = d.parent();
        }
    }
    below.remove_tree(Path::new(&layout::dataset_meta_rel(id)))?;
    // deepest first; a directory still holding something of the user's stays
    for dir in dirs.iter().rev() {
        below.remove_empty_dir(dir)?;
    }
    io::sync_dir(prefix)?;
    Ok(removed)
}

/// The files (relative to the prefix) that the datasets on the prefix other than `id`
/// name (a container lives in its dataset's own `.scr/scr.dataset.<id>/`). One whose summary or file list cannot be read names
/// none: no restart can load it, and keeping its files would keep every other dataset's.
fn named_by_others(prefix: &Path, id: u64) -> HashSet<PathBuf> {
    let mut named = HashSet::new();
    for other in layout::prefix_dataset_ids(prefix).unwrap_or_default() {
        if other == id {
            continue;
        }
        let Ok(summary) = Summary::read(&layout::summary_file(prefix, other)) else {
            continue;
        };
        // a drain that could not complete a dataset keeps its copies in the dataset's own
        // `drained/` directory, not at the paths its list names: those paths hold another
        // dataset's files, or nothing
        let waiting = prefix.join(crate::scavenge::drained_dir_rel(other));
        if !summary.is_complete() && waiting.is_dir() {
            continue;
        }
        let Ok(files) = flushed_files(prefix, other, &summary) else {
            continue;
        };
        named.extend(
            files
                .into_values()
                .flatten()
                .map(|rec| PathBuf::from(rec.name)),
        );
    }
    named
}

/// The checkpoints SCR_PREFIX_SIZE=`keep` lets go, as (id, name), oldest last: the
/// complete checkpoints on the prefix older than the newest `keep` a restart could load.
/// A checkpoint that failed a fetch takes no place in the window (it would push out one
/// that can be loaded) and goes once it is older than the window. Never the current copy
/// (a user may have pointed a restart at an older checkpoint; by id, as a name written
/// again has a copy per id), nor one marked as output too, nor one SCR adopted. `keep` = 0
/// keeps everything.
pub fn beyond_window(index: &IndexFile, keep: u64) -> Vec<(u64, String)> {
    if keep == 0 {
        return Vec::new();
    }
    let flushed_checkpoints = index.entries().into_iter().filter(|e| {
        e.complete
            && e.flushed.is_some()
            && index
                .dataset(e.id, &e.name)
                .is_none_or(|d| d.is_checkpoint())
    });
    let mut loadable = 0;
    let mut beyond = Vec::new();
    for e in flushed_checkpoints {
        if loadable < keep {
            loadable += u64::from(e.failed.is_empty());
            continue;
        }
        // a checkpoint that is also output the user asked for stays (as SCR's window), and
        // so does one SCR adopted: its files were the application's before SCR ran
        let own = index
            .dataset(e.id, &e.name)
            .is_none_or(|d| !d.is_output() && !d.is_adopted());
        if own && !e.is_current {
            beyond.push((e.id, e.name));
        }
    }
    beyond
}

/// Removes a dataset from the prefix: its files, its metadata and its index entry (the
/// current checkpoint passes to the next older one). The flush file forgets it. Returns
/// a warning when `scr.current` could not follow the index.
pub fn delete_dataset(prefix: &Path, id: u64, name: &str) -> Result<Option<String>> {
    delete_dataset_files(prefix, id)?;
    let dropped = drop_entry(prefix, id, name)?;
    update_flush_file(prefix, |f| f.forget_location(id, Location::Pfs))?;
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

#[cfg(test)]
mod shared_path_tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};
    use crate::rank2file::FileRecord;

    fn checkpoint(id: u64, name: &str) -> Dataset {
        Dataset::create(id, name, true, false, &Origin::default(), Some(id))
    }

    /// Writes `bytes` to `rel` under the prefix and publishes checkpoint `id` named `name`
    /// as the one rank that wrote it.
    fn flush(prefix: &Path, id: u64, name: &str, rel: &str, bytes: &[u8]) {
        let path = prefix.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        let mut files = RankFiles::new();
        files.insert(
            0,
            vec![FileRecord {
                name: rel.to_string(),
                size: bytes.len() as u64,
                crc: None,
                segments: Vec::new(),
            }],
        );
        super::super::publish(prefix, id, &checkpoint(id, name), 1, &files, true).unwrap();
    }

    fn entries(prefix: &Path) -> Vec<(u64, String)> {
        IndexFile::read(&layout::index_file(prefix))
            .unwrap()
            .entries()
            .into_iter()
            .map(|e| (e.id, e.name))
            .collect()
    }

    fn pairs(v: &[(u64, &str)]) -> Vec<(u64, String)> {
        v.iter().map(|(id, n)| (*id, n.to_string())).collect()
    }

    #[test]
    fn the_window_counts_no_failed_checkpoint_and_spares_no_failed_copy_of_the_current_name() {
        let mut index = IndexFile::new();
        let now = chrono::Local::now();
        // ckpt.3 failed a fetch, the job fell back to ckpt.2 and wrote ckpt.3 again (id 4)
        for (id, name) in [(2, "ckpt.2"), (3, "ckpt.3"), (4, "ckpt.3")] {
            index.add(&checkpoint(id, name), name, true);
            index.set_flushed(id, name, now);
        }
        index.mark_failed(3, "ckpt.3", now);
        index.set_current("ckpt.3").unwrap();
        // two checkpoints a restart can load: the failed one takes no place in the window
        assert_eq!(beyond_window(&index, 2), []);
        for (id, name) in [(5, "ckpt.4"), (6, "ckpt.5")] {
            index.add(&checkpoint(id, name), name, true);
            index.set_flushed(id, name, now);
        }
        // CURRENT names the new ckpt.3 (id 4): it stays; the failed copy of that name goes
        assert_eq!(
            beyond_window(&index, 2),
            pairs(&[(3, "ckpt.3"), (2, "ckpt.2")])
        );
    }

    /// Whoever may rename in the prefix (a member of the group a prefix is writable by)
    /// swaps `.scr` for a link to a tree of theirs whose summary names a file of the user's:
    /// the window reads SCR's state through no link, so it deletes nothing.
    #[test]
    fn a_swapped_scr_s_forged_file_list_deletes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        flush(prefix, 1, "ckpt.1", "ckpt.1/rank_0.ckpt", b"step 1");
        flush(prefix, 2, "ckpt.2", "ckpt.2/rank_0.ckpt", b"step 2");
        let secret = prefix.join("results/secret.dat");
        std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
        std::fs::write(&secret, b"irreplaceable").unwrap();
        // the forged tree: a copy of SCR's own whose ckpt.1 names the user's file
        let forged = prefix.join("forged");
        copy_tree(&layout::prefix_hidden_dir(prefix), &forged);
        std::fs::rename(layout::prefix_hidden_dir(prefix), prefix.join("real")).unwrap();
        let mut files = RankFiles::new();
        files.insert(
            0,
            vec![FileRecord {
                name: "results/secret.dat".into(),
                size: 13,
                crc: None,
                segments: Vec::new(),
            }],
        );
        crate::rank2file::write_tree(prefix, "forged/scr.dataset.1", 1, &files).unwrap();
        std::os::unix::fs::symlink(&forged, layout::prefix_hidden_dir(prefix)).unwrap();
        let done = enforce_window(prefix, 1);
        assert!(secret.exists(), "{:?}", done.deleted);
        assert!(prefix.join("ckpt.1/rank_0.ckpt").exists());
        assert!(done.deleted.is_empty(), "{:?}", done.deleted);
        // the forged tree renamed into `.scr`'s place, as another user's (root's test may
        // give it away; a user's cannot)
        std::fs::remove_file(layout::prefix_hidden_dir(prefix)).unwrap();
        std::fs::rename(&forged, layout::prefix_hidden_dir(prefix)).unwrap();
        if rustix::process::geteuid().is_root() {
            give_away(&layout::prefix_hidden_dir(prefix), 54321);
            let done = enforce_window(prefix, 1);
            assert!(secret.exists(), "{:?}", done.deleted);
            assert!(done.deleted.is_empty(), "{:?}", done.deleted);
        }
    }

    fn give_away(path: &Path, uid: u32) {
        std::os::unix::fs::lchown(path, Some(uid), None).unwrap();
        if path.is_dir() && !path.is_symlink() {
            for e in std::fs::read_dir(path).unwrap() {
                give_away(&e.unwrap().path(), uid);
            }
        }
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }

    #[test]
    fn the_window_keeps_a_name_written_again_after_a_fallback_its_entry_and_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        flush(prefix, 2, "ckpt.2", "ckpt.2/rank_0.ckpt", b"step 2");
        flush(
            prefix,
            3,
            "ckpt.3",
            "ckpt.3/rank_0.ckpt",
            b"step 3, flipped",
        );
        update_index_marking_failed(prefix, 3, "ckpt.3");
        flush(prefix, 4, "ckpt.3", "ckpt.3/rank_0.ckpt", b"step 3 again");
        let done = enforce_window(prefix, 2);
        assert!(
            done.deleted.is_empty() && done.failed.is_empty(),
            "{done:?}"
        );
        flush(prefix, 5, "ckpt.4", "ckpt.4/rank_0.ckpt", b"step 4");
        let done = enforce_window(prefix, 2);
        assert!(done.failed.is_empty(), "{done:?}");
        assert_eq!(entries(prefix), pairs(&[(5, "ckpt.4"), (4, "ckpt.3")]));
        assert_eq!(
            std::fs::read(prefix.join("ckpt.3/rank_0.ckpt")).unwrap(),
            b"step 3 again"
        );
        assert!(layout::summary_file(prefix, 4).is_file());
        assert!(!layout::dataset_meta_dir(prefix, 3).exists());
        assert!(!prefix.join("ckpt.2").exists());
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        assert_eq!(index.current(), Some("ckpt.4"));
        assert_eq!(index.id_of("ckpt.3"), Some(4));
    }

    #[test]
    fn deleting_a_checkpoint_keeps_the_files_a_kept_one_names() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        flush(prefix, 1, "c1", "state/rank_0.ckpt", b"c1's");
        flush(prefix, 2, "c2", "state/rank_0.ckpt", b"c2's");
        // c1's one file is c2's now: publishing c2 deleted c1 and kept the file
        assert_eq!(entries(prefix), pairs(&[(2, "c2")]));
        assert!(!layout::dataset_meta_dir(prefix, 1).exists());
        let done = enforce_window(prefix, 1);
        assert!(done.deleted.is_empty(), "{done:?}");
        assert_eq!(
            std::fs::read(prefix.join("state/rank_0.ckpt")).unwrap(),
            b"c2's"
        );
        // the last dataset to name it takes it along
        delete_dataset(prefix, 2, "c2").unwrap();
        assert!(!prefix.join("state").exists());
    }

    fn update_index_marking_failed(prefix: &Path, id: u64, name: &str) {
        super::super::update_index(prefix, |idx| {
            idx.mark_failed(id, name, chrono::Local::now());
            Ok(())
        })
        .unwrap();
    }
}
