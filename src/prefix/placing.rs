//! Putting a flushed dataset's files in their places so that a job killed at any instant
//! leaves the prefix restartable from the older checkpoint or from the new one.
//!
//! A flush copies every file beside its place first (a temporary, [`Staged`]); placing
//! renames the copies over their places, each rank its own. Between the first rename and the
//! new dataset's index entry the places hold part of the new dataset and part of what an
//! older one left there (a name written again, a program that writes every checkpoint at
//! the same paths): the older dataset's entry would name CRC32s its files no longer have,
//! and the new dataset would not be indexed at all — neither could be restarted from.
//!
//! So a flush commits before it places. The ranks list every copy, where it waits and where
//! it goes, in the dataset's `placing.<writer>.scr` records (written beside its rank2file
//! leaves by the same writers), the rank2file tree is completed, and then the summary is
//! written: the commit. Only then are copies renamed; the index entry follows, and the
//! records go last. Whoever finds records of a dataset ([`recover`]: SCR_Init, the drain)
//! finishes what a killed flush left:
//! - with the summary, the commit happened: every copy still waiting is put in its place and
//!   the dataset is published — the new checkpoint is what a restart loads;
//! - without it, nothing was placed: the copies are removed, and the places keep the older
//!   dataset, indexed as it was.
//!
//! Once a dataset is published, older copies whose files it replaced leave the index
//! ([`retire_replaced`]): the index never names files that are no longer those it recorded.

use super::{flushed_files, missing_files, publish_written};
use crate::hash::Hash;
use crate::index::IndexFile;
use crate::safe_fs::{Beneath, Staged};
use crate::summary::Summary;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const TEMP: &str = "TEMP";
const TARGET: &str = "TARGET";
const RECORD_PREFIX: &str = "placing.";
const RECORD_SUFFIX: &str = ".scr";

/// Copies waiting beside their places, as a record lists them (paths relative to the prefix).
pub fn to_hash(staged: &[Staged]) -> Hash {
    let mut h = Hash::new();
    for s in staged {
        h.set_kv(TEMP, s.temp.display())
            .set_value(TARGET, s.target.display());
    }
    h
}

/// The copies a record (or one rank's part of one) lists; an entry without its place is an
/// error naming `what`.
pub fn from_hash(h: &Hash, what: &Path) -> Result<Vec<Staged>> {
    h.get(TEMP)
        .into_iter()
        .flat_map(Hash::iter)
        .map(|(temp, entry)| {
            let target = entry
                .first_value(TARGET)
                .ok_or_else(|| Error::invalid(what, format!("the copy {temp} has no {TARGET}")))?;
            Ok(Staged {
                temp: temp.into(),
                target: target.into(),
            })
        })
        .collect()
}

/// Adds the copies of `part` (one rank's [`to_hash`]) to `all`.
pub fn merge(all: &mut Hash, part: &Hash) {
    for (temp, entry) in part.get(TEMP).into_iter().flat_map(Hash::iter) {
        all.set_kv(TEMP, temp)
            .set(TARGET, entry.get(TARGET).cloned().unwrap_or_default());
    }
}

/// Where the record of writer `writer` of dataset `id` is, relative to the prefix.
fn record_rel(id: u64, writer: u64) -> PathBuf {
    Path::new(&layout::dataset_meta_rel(id)).join(format!("{RECORD_PREFIX}{writer}{RECORD_SUFFIX}"))
}

/// Writes (durably) the record of writer `writer` of dataset `id`: the copies `copies`
/// (a [`to_hash`], or several merged) lists. Nothing is written for no copies.
pub fn write_record(prefix: &Path, id: u64, writer: u64, copies: &Hash) -> Result<()> {
    if copies.get(TEMP).is_none_or(Hash::is_empty) {
        return Ok(());
    }
    io::write_hash_file_below(prefix, &record_rel(id, writer), copies)
}

/// The records of dataset `id` on the prefix.
fn records(prefix: &Path, id: u64) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(layout::dataset_meta_dir(prefix, id)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = dir
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix(RECORD_PREFIX)
                .and_then(|n| n.strip_suffix(RECORD_SUFFIX))
                .is_some_and(|n| n.parse::<u64>().is_ok())
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Whether a flush of dataset `id` left records that [`recover`] has yet to finish: its
/// copies are not to be swept.
pub fn pending(prefix: &Path, id: u64) -> bool {
    !records(prefix, id).is_empty()
}

/// Every copy the records of dataset `id` list.
fn recorded_copies(prefix: &Path, id: u64) -> Result<Vec<Staged>> {
    let mut all = Vec::new();
    for path in records(prefix, id) {
        all.extend(from_hash(&io::read_hash_file(&path)?, &path)?);
    }
    Ok(all)
}

/// Removes the records of dataset `id` (its flush is published, or abandoned).
pub fn clear(prefix: &Path, id: u64) -> Result<()> {
    // through the prefix's directories opened below it, no link followed
    let records = records(prefix, id);
    if records.is_empty() {
        return Ok(());
    }
    let below = crate::safe_fs::Beneath::open(prefix)?;
    for path in records {
        if let Ok(rel) = path.strip_prefix(prefix) {
            below.remove_file(rel)?;
        }
    }
    below.sync_dir(Path::new(&layout::dataset_meta_rel(id)))
}

/// The commit of a flush of dataset `id` (described by `desc`): its summary, written
/// complete once its rank2file tree and every writer's record are durable. From here on a
/// flush cut short is finished, not undone.
pub fn commit(prefix: &Path, id: u64, desc: &crate::dataset::Dataset) -> Result<()> {
    Summary::create(desc, true).write_below(prefix, &layout::summary_rel(id))
}

/// Whether the flush of dataset `id` committed: its summary is written, complete.
fn committed(prefix: &Path, id: u64) -> Option<Summary> {
    Summary::read(&layout::summary_file(prefix, id))
        .ok()
        .filter(Summary::is_complete)
}

/// Puts in their places the recorded copies of dataset `id` that still wait beside them
/// (a copy no longer there was placed before). For a committed flush whose ranks could not
/// all place their own copies, and for one a kill cut short.
pub fn place_recorded(prefix: &Path, id: u64) -> Result<()> {
    let copies = recorded_copies(prefix, id)?;
    if copies.is_empty() {
        return Ok(());
    }
    let below = Beneath::open(prefix)?;
    for copy in &copies {
        below.place_if_waiting(copy)?;
    }
    Ok(())
}

/// Removes the recorded copies of dataset `id` and its records: a flush that never
/// committed leaves the places as they were.
pub fn abandon(prefix: &Path, id: u64) -> Result<()> {
    let copies = recorded_copies(prefix, id).unwrap_or_default();
    if !copies.is_empty() {
        let below = Beneath::open(prefix)?;
        for copy in &copies {
            below.discard(copy)?;
        }
    }
    clear(prefix, id)
}

/// Removes what a flush that a kill cut short before its commit left below `dir` (a
/// directory below the prefix, where every file of its dataset goes): its copies, SCR's
/// temporaries, wherever below; then the directories that leaves empty, `dir` among them
/// (one it created for the dataset). Files of the user's and of other datasets stay. Only
/// where no flush into `dir` runs: a new job's SCR_Init.
pub fn sweep_abandoned(prefix: &Path, dir: &Path) -> Result<()> {
    let below = Beneath::open(prefix)?;
    if below.open_dir(dir)?.is_none() {
        return Ok(());
    }
    let mut dirs = std::collections::BTreeSet::from([dir.to_path_buf()]);
    for (file, _) in below.list_files(dir, 1 << 20)? {
        let mut parent = file.parent();
        while let Some(p) = parent.filter(|p| p.starts_with(dir) && *p != dir) {
            dirs.insert(p.to_path_buf());
            parent = p.parent();
        }
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if crate::temp_name::is_temporary_name(&name) {
            below.remove_file(&file)?;
        }
    }
    // deepest first
    for d in dirs.iter().rev() {
        below.remove_empty_dir(d)?;
    }
    Ok(())
}

/// What [`recover`] did with a flush a kill cut short.
#[derive(Debug)]
enum Recovered {
    /// It had committed: its copies are in their places and it is published (complete
    /// unless files its map lists are missing, each named).
    Finished {
        id: u64,
        name: String,
        problems: Vec<String>,
        warning: Option<String>,
    },
    /// It had not: its copies are removed, the places hold what they held.
    Abandoned { id: u64 },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovered::Finished {
                id, name, problems, ..
            } if problems.is_empty() => write!(
                f,
                "the flush of {name} (dataset {id}) was cut short after it committed: its \
                 files are now in their places and it is on the prefix"
            ),
            Recovered::Finished {
                id, name, problems, ..
            } => write!(
                f,
                "the flush of {name} (dataset {id}) was cut short after it committed, and \
                 files of it are missing on the prefix ({}): it is indexed incomplete",
                problems.join("; ")
            ),
            Recovered::Abandoned { id } => write!(
                f,
                "the flush of dataset {id} was cut short before every rank had copied its \
                 files: its copies are removed, and the files at its places are as they were"
            ),
        }
    }
}

/// Finishes every flush on the prefix that a kill cut short between its first copy and its
/// publication (see the module's head), and returns what became of each, to be said. Only
/// where no flush of this prefix runs: SCR_Init (rank 0, before anything reads the index)
/// and the drain. One that cannot be finished is said, and the next caller tries again.
pub fn recover(prefix: &Path) -> Vec<String> {
    let mut ids = layout::prefix_dataset_ids(prefix).unwrap_or_default();
    ids.sort_unstable();
    let mut said = Vec::new();
    for id in ids
        .into_iter()
        .filter(|&id| !records(prefix, id).is_empty())
    {
        match recover_one(prefix, id) {
            Ok(r) => {
                said.push(r.to_string());
                if let Recovered::Finished {
                    warning: Some(w), ..
                } = r
                {
                    said.push(format!("WARNING: {w}"));
                }
            }
            Err(e) => said.push(format!(
                "WARNING: the flush of dataset {id} was cut short and could not be finished                  now: {e}; the next job tries again"
            )),
        }
    }
    said
}

fn recover_one(prefix: &Path, id: u64) -> Result<Recovered> {
    let Some(summary) = committed(prefix, id) else {
        abandon(prefix, id)?;
        return Ok(Recovered::Abandoned { id });
    };
    let desc = summary.dataset().unwrap_or_default();
    let name = desc
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| layout::dataset_dir_name(id));
    place_recorded(prefix, id)?;
    let problems = missing_files(prefix, &flushed_files(prefix, id, &summary)?);
    let indexed =
        IndexFile::read(&layout::index_file(prefix)).is_ok_and(|i| i.dataset(id, &name).is_some());
    let warning = if indexed {
        None
    } else {
        publish_written(prefix, id, &desc, problems.is_empty())?
    };
    clear(prefix, id)?;
    Ok(Recovered::Finished {
        id,
        name,
        problems,
        warning,
    })
}

/// The plain files (not container segments) dataset `id`'s map lists, by name.
pub(crate) fn plain_files(prefix: &Path, id: u64) -> Option<HashSet<String>> {
    let summary = Summary::read(&layout::summary_file(prefix, id)).ok()?;
    let files = flushed_files(prefix, id, &summary).ok()?;
    Some(
        files
            .into_values()
            .flatten()
            .filter(|r| r.segments.is_empty())
            .map(|r| r.name)
            .collect(),
    )
}

/// Older copies whose files the published dataset `id` replaced: one it replaced wholly
/// leaves the prefix (its files are `id`'s now and stay; its metadata and index entry go),
/// one it replaced in part is marked failed (a restart skips it; its other files stay).
/// Returns the names retired, for the caller to say.
pub fn retire_replaced(prefix: &Path, id: u64) -> Result<Vec<String>> {
    let Some(mine) = plain_files(prefix, id).filter(|m| !m.is_empty()) else {
        return Ok(Vec::new());
    };
    let Ok(index) = IndexFile::read(&layout::index_file(prefix)) else {
        return Ok(Vec::new());
    };
    let mut retired = Vec::new();
    for e in index.entries().into_iter().filter(|e| e.id < id) {
        let Some(theirs) = plain_files(prefix, e.id).filter(|t| !t.is_empty()) else {
            continue;
        };
        let replaced = theirs.iter().filter(|f| mine.contains(*f)).count();
        if replaced == 0 {
            continue;
        }
        if replaced == theirs.len() {
            super::delete_dataset(prefix, e.id, &e.name)?;
        } else {
            super::update_index(prefix, |idx| {
                idx.mark_failed(e.id, &e.name, chrono::Local::now());
                Ok(())
            })?;
        }
        retired.push(format!("{} (dataset {})", e.name, e.id));
    }
    Ok(retired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};
    use crate::rank2file::{FileRecord, RankFiles};

    const FILE: &str = "ckpt.fixed/rank_0.ckpt";

    fn fixed(id: u64) -> Dataset {
        Dataset::create(id, "ckpt.fixed", true, false, &Origin::default(), Some(id))
    }

    fn files_of(bytes: &[u8]) -> RankFiles {
        RankFiles::from([(
            0,
            vec![FileRecord {
                name: FILE.into(),
                size: bytes.len() as u64,
                crc: Some(crc32fast::hash(bytes)),
                segments: vec![],
            }],
        )])
    }

    /// A prefix where dataset 2 (`ckpt.fixed`, "old") is published, and a flush of dataset 3
    /// of the same name ("new!") has its copy beside the file and its record written: the
    /// state a kill leaves just before the commit, or (with `committed`) just after it.
    fn cut_short(committed: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        let below = Beneath::open(prefix).unwrap();
        below
            .write_file(Path::new(FILE), 0o600, 0o700, |f| {
                std::io::Write::write_all(f, b"old").map_err(|e| Error::io(FILE, "write", e))
            })
            .unwrap();
        super::super::publish(prefix, 2, &fixed(2), 1, &files_of(b"old"), true).unwrap();
        let ((), staged) = below
            .stage_file(Path::new(FILE), 0o600, 0o700, |f| {
                std::io::Write::write_all(f, b"new!").map_err(|e| Error::io(FILE, "write", e))
            })
            .unwrap();
        std::fs::create_dir(layout::dataset_meta_dir(prefix, 3)).unwrap();
        crate::rank2file::write_tree(prefix, &layout::dataset_meta_rel(3), 1, &files_of(b"new!"))
            .unwrap();
        write_record(prefix, 3, 0, &to_hash(&[staged])).unwrap();
        if committed {
            commit(prefix, 3, &fixed(3)).unwrap();
        }
        dir
    }

    fn temporaries(prefix: &Path) -> Vec<String> {
        std::fs::read_dir(prefix.join("ckpt.fixed"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| crate::temp_name::is_temporary_name(n))
            .collect()
    }

    #[test]
    fn a_committed_flush_cut_short_is_placed_and_published_and_the_copy_it_replaced_leaves() {
        let dir = cut_short(true);
        let prefix = dir.path();
        let said = recover(prefix);
        assert!(said[0].contains("after it committed"), "{said:?}");
        assert_eq!(std::fs::read(prefix.join(FILE)).unwrap(), b"new!");
        assert!(temporaries(prefix).is_empty());
        assert!(records(prefix, 3).is_empty());
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        let entries: Vec<(u64, bool)> = index
            .entries()
            .iter()
            .map(|e| (e.id, e.is_current))
            .collect();
        assert_eq!(
            entries,
            [(3, true)],
            "dataset 2's files are dataset 3's now"
        );
        assert!(!layout::dataset_meta_dir(prefix, 2).exists());
        assert!(recover(prefix).is_empty(), "nothing is left to finish");
    }

    #[test]
    fn a_flush_cut_short_before_its_commit_leaves_the_older_copy_as_it_was() {
        let dir = cut_short(false);
        let prefix = dir.path();
        let said = recover(prefix);
        assert!(said[0].contains("before every rank had copied"), "{said:?}");
        assert_eq!(std::fs::read(prefix.join(FILE)).unwrap(), b"old");
        assert!(temporaries(prefix).is_empty());
        assert!(records(prefix, 3).is_empty());
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        assert_eq!(index.id_of("ckpt.fixed"), Some(2));
        assert_eq!(index.entries().len(), 1);
    }
}
