//! Dataset ids are never reused within a prefix. A new dataset's id is one more than every
//! id anything ever recorded for the prefix: its index, its flush file, the dataset
//! directories under `.scr/`, and the newest id a job started there, which the prefix
//! keeps in `.scr/dataset_ids.scrinfo` (`LAST <id>`). That last record outlives what forgets
//! a dataset — `scr index --drop` and SCR_Drop (the index entry), `scr prerun` (the flush
//! file), a reshape or an eviction (the cached files) — so a flush-file entry, filemap or
//! per-rank record left by an old dataset can never be taken for a new one of the same id.

use crate::flush::FlushFile;
use crate::hash::Hash;
use crate::index::IndexFile;
use crate::view::HashView;
use crate::{Result, io, layout};
use std::path::{Path, PathBuf};

const LAST: &str = "LAST";

/// Ids beyond this are no job's (a million checkpoints a second for eight years): a record
/// claiming one is damaged, and counting it would run the next id out of range.
pub const MAX_ID: u64 = 1 << 48;

/// `<prefix>/.scr/dataset_ids.scrinfo`: the newest dataset id a job started on the prefix.
pub fn ids_file(prefix: &Path) -> PathBuf {
    layout::prefix_hidden_dir(prefix).join("dataset_ids.scrinfo")
}

/// The newest id a job recorded starting on `prefix` (0 when none, or unreadable).
fn last_started(prefix: &Path) -> u64 {
    io::read_hash_file_limited(&ids_file(prefix), 4096)
        .ok()
        .and_then(|h| h.first_value(LAST).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// The newest dataset id anything on `prefix` records (0 for a fresh prefix). A file that
/// cannot be read counts as recording nothing: the other records still bound the id.
pub fn newest_recorded(prefix: &Path) -> u64 {
    let mut ids: Vec<u64> = IndexFile::read(&layout::index_file(prefix))
        .map(|i| i.entries().iter().map(|e| e.id).collect())
        .unwrap_or_default();
    ids.extend(
        FlushFile::read(&layout::flush_file(prefix))
            .map(|f| f.datasets())
            .unwrap_or_default(),
    );
    ids.extend(layout::prefix_dataset_ids(prefix).unwrap_or_default());
    ids.push(last_started(prefix));
    ids.into_iter()
        .filter(|&id| id <= MAX_ID)
        .max()
        .unwrap_or(0)
}

/// Records that dataset `id` starts on `prefix`, before any of its files exist: the
/// prefix's record of the newest id only ever grows.
pub fn record_started(prefix: &Path, id: u64) -> Result<()> {
    if last_started(prefix) >= id {
        return Ok(());
    }
    // under the record's lock: two jobs recording at once keep the larger id
    let path = ids_file(prefix);
    let (lock, old) = io::LockedHashFile::open(&path, io::PRIVATE_FILE, 4096)?;
    let recorded = old
        .first_value(LAST)
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&last| last <= MAX_ID)
        .unwrap_or(0);
    let mut h = Hash::new();
    h.set_value(LAST, id.max(recorded));
    lock.write_and_unlock(&h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};
    use crate::flush::Location;

    fn prefix() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(layout::prefix_hidden_dir(dir.path())).unwrap();
        dir
    }

    #[test]
    fn the_newest_id_is_the_largest_any_record_holds() {
        let dir = prefix();
        let p = dir.path();
        assert_eq!(newest_recorded(p), 0);
        let mut index = IndexFile::new();
        let d = Dataset::create(3, "ckpt.3", true, false, &Origin::default(), Some(3));
        index.add(&d, "ckpt.3", true);
        index.write(&layout::index_file(p)).unwrap();
        assert_eq!(newest_recorded(p), 3);
        let mut flush = FlushFile::new();
        flush.describe_dataset(5, &d);
        flush.set_location(5, Location::Cache);
        flush.write(&layout::flush_file(p)).unwrap();
        assert_eq!(newest_recorded(p), 5);
        std::fs::create_dir(layout::dataset_meta_dir(p, 6)).unwrap();
        assert_eq!(newest_recorded(p), 6);
        record_started(p, 9).unwrap();
        assert_eq!(newest_recorded(p), 9);
    }

    #[test]
    fn the_record_of_started_ids_never_goes_back() {
        let dir = prefix();
        let p = dir.path();
        record_started(p, 7).unwrap();
        record_started(p, 4).unwrap();
        assert_eq!(newest_recorded(p), 7);
        // what forgets datasets leaves the record
        std::fs::remove_file(layout::flush_file(p)).ok();
        assert_eq!(newest_recorded(p), 7);
    }

    #[test]
    fn a_damaged_record_of_an_id_out_of_range_is_not_counted() {
        let dir = prefix();
        let p = dir.path();
        std::fs::create_dir(layout::dataset_meta_dir(p, 4)).unwrap();
        record_started(p, u64::MAX).unwrap();
        assert_eq!(newest_recorded(p), 4);
    }
}
