//! Flush file (`<prefix>/.scr/flush.scr`): where each cached dataset is.
//!
//! ```text
//! DATASET <id> LOCATION {CACHE | FLUSHING | SYNC_FLUSHING | PFS …}  NAME <name>  CKPT <id>  DIR <dir>
//! ```
//! `CKPT` in 1.1-8 files is read as `DATASET`.

use crate::filemap::Filemap;
use crate::hash::Hash;
use crate::view::{check_ids, hash_view, sorted_ids};
use std::path::{Path, PathBuf};

hash_view!(
    /// The flush file.
    FlushFile, "flush file", validate = validate, max_bytes = 64 << 20
);

const DATASET: &str = "DATASET";
const LEGACY_CKPT: &str = "CKPT";
const LOCATION: &str = "LOCATION";
const NAME: &str = "NAME";
const CKPT: &str = "CKPT";
const DIR: &str = "DIR";
/// SCR v3's mark of a dataset holding output the user asked for (`OUTPUT 1`).
const OUTPUT: &str = "OUTPUT";

/// Where a dataset's files are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Complete in cache.
    Cache,
    /// A flush to the prefix has started and not finished.
    Flushing,
    /// A synchronous flush has started and not finished.
    SyncFlushing,
    /// Every byte is on the prefix and the index says so.
    Pfs,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Cache => "CACHE",
            Location::Flushing => "FLUSHING",
            Location::SyncFlushing => "SYNC_FLUSHING",
            Location::Pfs => "PFS",
        }
    }
}

fn validate(h: &Hash) -> Result<(), String> {
    check_ids(h.get(DATASET), "dataset id")?;
    check_ids(h.get(LEGACY_CKPT), "checkpoint id")
}

impl FlushFile {
    /// Reads a legacy layout into the current one.
    fn datasets_hash(&self) -> Option<&Hash> {
        self.0.get(DATASET).or_else(|| self.0.get(LEGACY_CKPT))
    }

    fn entry_mut(&mut self, id: u64) -> &mut Hash {
        if !self.0.contains(DATASET)
            && let Some(legacy) = self.0.unset(LEGACY_CKPT)
        {
            self.0.set(DATASET, legacy);
        }
        self.0.set_kv(DATASET, id)
    }

    /// Dataset ids, oldest first.
    pub fn datasets(&self) -> Vec<u64> {
        sorted_ids(self.datasets_hash())
    }

    /// The newest dataset id (`scr_flush_file --latest`).
    pub fn latest(&self) -> Option<u64> {
        self.datasets().last().copied()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.datasets_hash()
            .is_some_and(|h| h.contains(&id.to_string()))
    }

    /// Location names recorded for `id`, in stored order (SCR records the newest first).
    pub fn locations(&self, id: u64) -> Vec<&str> {
        self.datasets_hash()
            .and_then(|h| h.get(&id.to_string()))
            .and_then(|d| d.get(LOCATION))
            .map(|l| l.keys().collect())
            .unwrap_or_default()
    }

    pub fn has_location(&self, id: u64, loc: Location) -> bool {
        self.locations(id).contains(&loc.as_str())
    }

    /// Adds a location; like SCR, the newest location is listed first.
    pub fn set_location(&mut self, id: u64, loc: Location) {
        let entry = self.entry_mut(id);
        let existing = entry.unset(LOCATION).unwrap_or_default();
        let mut locations = Hash::new();
        locations.child(loc.as_str());
        for (k, v) in existing.iter().filter(|(k, _)| *k != loc.as_str()) {
            locations.set(k, v.clone());
        }
        // keep LOCATION where it was among the entry's keys when it existed
        entry.set(LOCATION, locations);
    }

    /// Removes a location; a dataset the file does not record stays unrecorded (an empty
    /// entry would read as a dataset only in cache, of no name and no kind).
    pub fn unset_location(&mut self, id: u64, loc: Location) {
        if self.contains(id) {
            self.entry_mut(id).unset_kv(LOCATION, loc.as_str());
        }
    }

    /// Removes a location, and the whole entry once no location is left: the dataset is
    /// nowhere the drain could take it from.
    pub fn forget_location(&mut self, id: u64, loc: Location) {
        self.unset_location(id, loc);
        if self.contains(id) && self.locations(id).is_empty() {
            self.remove(id);
        }
    }

    /// True when `id` is recorded and not yet on the prefix (`scr_flush_file --needflush`).
    pub fn needs_flush(&self, id: u64) -> bool {
        self.contains(id) && !self.has_location(id, Location::Pfs)
    }

    pub fn name(&self, id: u64) -> Option<&str> {
        self.datasets_hash()?
            .get(&id.to_string())?
            .first_value(NAME)
    }

    /// The checkpoint id recorded for `id` (none for output alone).
    pub fn checkpoint_id(&self, id: u64) -> Option<u64> {
        self.datasets_hash()?
            .get(&id.to_string())?
            .first_value(CKPT)?
            .parse()
            .ok()
            .filter(|&c| c != 0)
    }

    /// Records a dataset's name, checkpoint id and prefix subdirectory.
    pub fn describe(&mut self, id: u64, name: &str, ckpt: Option<u64>, dir: Option<&str>) {
        let entry = self.entry_mut(id);
        if let Some(c) = ckpt {
            entry.set_value(CKPT, c);
        }
        entry.set_value(NAME, name);
        if let Some(d) = dir {
            entry.set_value(DIR, d);
        }
    }

    /// Records a dataset as the drain needs it: its name, its checkpoint id when it is a
    /// checkpoint, and `OUTPUT 1` when it holds output (as SCR v3 does).
    pub fn describe_dataset(&mut self, id: u64, desc: &crate::dataset::Dataset) {
        self.describe(
            id,
            desc.name().unwrap_or_default(),
            desc.checkpoint_id(),
            None,
        );
        if desc.is_output() {
            self.entry_mut(id).set_value(OUTPUT, 1);
        }
    }

    fn flag(&self, id: u64, key: &str) -> bool {
        self.datasets_hash()
            .and_then(|h| h.get(&id.to_string()))
            .and_then(|d| d.first_value(key))
            .is_some_and(|v| v != "0")
    }

    /// Whether `id` was recorded as a checkpoint (it has a checkpoint id).
    pub fn is_checkpoint(&self, id: u64) -> bool {
        self.flag(id, CKPT)
    }

    /// Whether `id` was recorded as output the user asked for.
    pub fn is_output(&self, id: u64) -> bool {
        self.flag(id, OUTPUT)
    }

    /// Records the prefix subdirectory every file of `id` lies below (relative to the
    /// prefix): where a flush of it that a kill cuts short leaves its copies.
    pub fn set_dir(&mut self, id: u64, dir: &str) {
        self.entry_mut(id).set_value(DIR, dir);
    }

    /// The prefix subdirectory recorded for `id` (`scr_flush_file --subdir`).
    pub fn dir(&self, id: u64) -> Option<&str> {
        self.datasets_hash()?.get(&id.to_string())?.first_value(DIR)
    }

    /// What `scr prerun` keeps for the next job: only the flushes a kill cut short
    /// (FLUSHING, with the dataset's name, kind and directory), so the next SCR_Init or
    /// drain finds what they left on the prefix; where else each dataset was is the last
    /// job's to say. Returns whether anything is kept.
    pub fn keep_only_cut_short(&mut self) -> bool {
        for id in self.datasets() {
            if !self.has_location(id, Location::Flushing) {
                self.remove(id);
                continue;
            }
            for loc in [Location::Cache, Location::SyncFlushing, Location::Pfs] {
                self.unset_location(id, loc);
            }
        }
        !self.datasets().is_empty()
    }

    pub fn remove(&mut self, id: u64) {
        self.entry_mut(id);
        self.0.unset_kv(DATASET, &id.to_string());
    }
}

/// A file a flush copies: its cache path, its path on the prefix, its name relative to
/// the prefix (what the rank2file map records), and what the file was when its dataset
/// completed (a copy of anything else is not the checkpoint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushTarget {
    pub src: PathBuf,
    pub dst: PathBuf,
    pub orig: String,
    /// The size recorded when the dataset completed.
    pub size: Option<u64>,
    /// The CRC32 recorded when the dataset completed (SCR_CRC_ON_COPY), if any.
    pub crc: Option<u32>,
}

impl FlushTarget {
    /// Checks what a copy of this file read (`size` bytes, CRC32 `crc` when computed)
    /// against what was recorded when its dataset completed: a cached file that shrank,
    /// grew or changed since is an error naming it, never a flushed checkpoint.
    pub fn check_copied(&self, size: u64, crc: Option<u32>) -> crate::Result<()> {
        let changed = |what: String| {
            Err(crate::Error::corrupt(format!(
                "{}: {what} when its dataset completed: the cached file changed since, so it is not flushed",
                self.src.display()
            )))
        };
        if let Some(want) = self.size
            && want != size
        {
            return changed(format!("{size} bytes where {want} were recorded"));
        }
        if let (Some(want), Some(got)) = (self.crc, crc)
            && want != got
        {
            return changed(format!(
                "CRC32 {} where {} was recorded",
                crate::hash::format_crc32(got),
                crate::hash::format_crc32(want)
            ));
        }
        Ok(())
    }
}

/// Which files of `rank` a flush of dataset `id` copies, and where: the application's own
/// files (redundancy files stay in cache), each to the directory and name its meta data
/// records. A file whose meta data lacks them is an error naming it.
pub fn targets(map: &Filemap, id: u64, rank: u64) -> std::result::Result<Vec<FlushTarget>, String> {
    map.user_files(id, rank)
        .into_iter()
        .map(|f| {
            let meta = map.meta(id, rank, &f).unwrap_or_default();
            let (Some(dir), Some(name), Some(orig)) =
                (meta.orig_dir(), meta.orig_name(), meta.orig())
            else {
                return Err(format!("{f}: meta data lacks PATH, NAME or ORIG"));
            };
            Ok(FlushTarget {
                dst: Path::new(dir).join(name),
                orig: orig.to_string(),
                src: PathBuf::from(f),
                size: meta.size(),
                crc: meta.crc32(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_copies_the_application_files_to_their_recorded_places() {
        use crate::meta::{FileType, Meta};
        let mut map = Filemap::new();
        let user = Meta::for_user_file(
            "rank_0.ckpt",
            2,
            "ckpt.1/rank_0.ckpt",
            "/p/ckpt.1",
            "rank_0.ckpt",
        );
        map.add_file(1, 0, "/c/scr.dataset.1/ckpt.1/rank_0.ckpt");
        map.set_meta(1, 0, "/c/scr.dataset.1/ckpt.1/rank_0.ckpt", &user);
        let parity = Meta::for_parity_file("xor.1_1_of_2.scr", FileType::Xor, 10, 2);
        map.add_file(1, 0, "/c/scr.dataset.1/.scr/xor.1_1_of_2.scr");
        map.set_meta(1, 0, "/c/scr.dataset.1/.scr/xor.1_1_of_2.scr", &parity);
        assert_eq!(
            targets(&map, 1, 0).unwrap(),
            [FlushTarget {
                src: "/c/scr.dataset.1/ckpt.1/rank_0.ckpt".into(),
                dst: "/p/ckpt.1/rank_0.ckpt".into(),
                orig: "ckpt.1/rank_0.ckpt".into(),
                size: None,
                crc: None,
            }]
        );
        map.add_file(1, 0, "/c/bare");
        let e = targets(&map, 1, 0).unwrap_err();
        assert!(e.contains("/c/bare") && e.contains("lacks"), "{e}");
    }

    #[test]
    fn a_copy_of_a_file_that_changed_since_its_dataset_completed_is_refused_by_name() {
        let target = FlushTarget {
            src: "/c/scr.dataset.1/ckpt.1/rank_0.ckpt".into(),
            dst: "/p/ckpt.1/rank_0.ckpt".into(),
            orig: "ckpt.1/rank_0.ckpt".into(),
            size: Some(1000008),
            crc: Some(7),
        };
        assert!(target.check_copied(1000008, Some(7)).is_ok());
        assert!(target.check_copied(1000008, None).is_ok());
        for (size, crc) in [(100, Some(7)), (1000009, None), (1000008, Some(8))] {
            let e = target.check_copied(size, crc).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
            assert!(e.to_string().contains("rank_0.ckpt"), "{e}");
        }
        let unrecorded = FlushTarget {
            size: None,
            crc: None,
            ..target
        };
        assert!(unrecorded.check_copied(3, Some(1)).is_ok());
    }

    #[test]
    fn datasets_record_whether_they_are_checkpoints_or_output() {
        use crate::dataset::{Dataset, Origin};
        let mut f = FlushFile::new();
        let o = Origin::default();
        f.describe_dataset(1, &Dataset::create(1, "ckpt.1", true, false, &o, Some(1)));
        f.describe_dataset(2, &Dataset::create(2, "out.2", false, true, &o, None));
        f.describe_dataset(3, &Dataset::create(3, "both.3", true, true, &o, Some(2)));
        assert!(f.is_checkpoint(1) && !f.is_output(1));
        assert!(!f.is_checkpoint(2) && f.is_output(2));
        assert!(f.is_checkpoint(3) && f.is_output(3));
        assert_eq!(f.name(2), Some("out.2"));
    }

    #[test]
    fn locations_newest_first_like_scr() {
        let mut f = FlushFile::new();
        f.describe(3, "ckpt.3", Some(1), None);
        f.set_location(3, Location::Cache);
        assert!(f.needs_flush(3));
        f.set_location(3, Location::Pfs);
        assert_eq!(f.locations(3), ["PFS", "CACHE"]);
        assert!(!f.needs_flush(3));
        assert!(!f.needs_flush(4), "an unknown dataset needs no flush");
        f.set_location(4, Location::Cache);
        assert_eq!(f.latest(), Some(4));
        f.remove(4);
        assert_eq!(f.datasets(), [3]);
    }

    #[test]
    fn forgetting_a_location_never_records_a_dataset() {
        let mut f = FlushFile::new();
        f.unset_location(7, Location::Pfs);
        f.forget_location(8, Location::Pfs);
        assert!(f.datasets().is_empty(), "nothing recorded: {f:?}");
        assert!(!f.needs_flush(7) && !f.needs_flush(8));
        f.describe(3, "ckpt.3", Some(3), None);
        f.set_location(3, Location::Cache);
        f.set_location(3, Location::Pfs);
        f.forget_location(3, Location::Pfs);
        assert!(f.needs_flush(3), "still in cache");
        f.forget_location(3, Location::Cache);
        assert!(!f.contains(3));
    }

    #[test]
    fn prerun_keeps_only_the_flushes_a_kill_cut_short() {
        let mut f = FlushFile::new();
        f.describe(1, "ckpt.1", Some(1), Some("ckpt.1"));
        f.set_location(1, Location::Cache);
        f.set_location(1, Location::Pfs);
        f.describe(2, "ckpt.2", Some(2), Some("ckpt.2"));
        f.set_location(2, Location::Cache);
        f.set_location(2, Location::Flushing);
        assert!(f.keep_only_cut_short());
        assert_eq!(f.datasets(), [2]);
        assert_eq!(f.locations(2), ["FLUSHING"]);
        assert_eq!((f.dir(2), f.name(2)), (Some("ckpt.2"), Some("ckpt.2")));
        f.forget_location(2, Location::Flushing);
        assert!(!f.keep_only_cut_short());
    }
}
