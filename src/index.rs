//! Index file (`<prefix>/.scr/index.scr`): the datasets on the prefix and
//! which one a restart should use.
//!
//! SCR v2.0.0 layout (what `golden/xor/prefix/.scr/index.scr` holds):
//! ```text
//! VERSION 1   CURRENT <name>
//! NAME <name> DSET <id>
//! DSET <id> NAME <name> {COMPLETE 0|1, DSET {dataset}, FLUSHED <time>, FETCHED <time>…, FAILED <time>…}
//! ```
//! Older layouts use `DIR` for `NAME` (v1.1.8) and `CKPT` for `DSET` (1.1-8); both read.
//! Shared between jobs: update it with [`crate::io::LockedHashFile`].

use crate::dataset::Dataset;
use crate::hash::Hash;
use crate::units::format_timestamp;
use crate::view::{HashView, check_ids, check_value, hash_view};
use chrono::{DateTime, Local};

hash_view!(
    /// The index file.
    IndexFile, "index file", validate = validate, max_bytes = 64 << 20
);

const VERSION: &str = "VERSION";
const CURRENT: &str = "CURRENT";
const NAME: &str = "NAME";
const LEGACY_DIR: &str = "DIR";
const DSET: &str = "DSET";
const LEGACY_CKPT: &str = "CKPT";
const COMPLETE: &str = "COMPLETE";
const FLUSHED: &str = "FLUSHED";
const FETCHED: &str = "FETCHED";
const FAILED: &str = "FAILED";

fn validate(h: &Hash) -> Result<(), String> {
    check_value::<u64>(h, VERSION, "index")?;
    check_ids(h.get(dset_key(h)), "dataset id")?;
    for (name, n) in h.get(name_key(h)).into_iter().flat_map(Hash::iter) {
        // SCR v2.0.0 adds a name's new id beside the old one rather than in its place
        // (scr_index_set_dataset sets NAME/<name>/DSET/<id> without unsetting): a name its
        // application wrote again carries every id it had, and the newest stands for it
        check_ids(
            n.get(dset_key(h)),
            &format!("index entry {name}: dataset id"),
        )?;
    }
    Ok(())
}

/// The key names use: `NAME` (v1.2+), or `DIR` in a v1.1.8 index.
fn name_key(h: &Hash) -> &'static str {
    if !h.contains(NAME) && h.contains(LEGACY_DIR) {
        LEGACY_DIR
    } else {
        NAME
    }
}

/// The key ids use: `DSET`, or `CKPT` in a 1.1-8 index.
fn dset_key(h: &Hash) -> &'static str {
    if !h.contains(DSET) && h.contains(LEGACY_CKPT) {
        LEGACY_CKPT
    } else {
        DSET
    }
}

/// One dataset copy on the prefix, as `scr index --list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub id: u64,
    pub name: String,
    pub complete: bool,
    /// When the flush finished, in SCR's timestamp format.
    pub flushed: Option<String>,
    pub fetched: Vec<String>,
    pub failed: Vec<String>,
    pub is_current: bool,
}

impl IndexFile {
    fn name_key(&self) -> &'static str {
        name_key(&self.0)
    }

    fn dset_key(&self) -> &'static str {
        dset_key(&self.0)
    }

    fn record(&self, id: u64, name: &str) -> Option<&Hash> {
        self.0
            .get_path(&[&self.dset_key(), &id, &self.name_key(), &name])
    }

    fn record_mut(&mut self, id: u64, name: &str) -> &mut Hash {
        if !self.0.contains(VERSION) {
            self.0.set_value(VERSION, 1); // a new index
        }
        let (dk, nk) = (self.dset_key(), self.name_key());
        // a name stands for its newest copy: marking an older one (a failed fetch, a late
        // drain) leaves the name where it is
        if self.id_of(name).is_none_or(|named| named <= id) {
            self.0.set_path(&[&nk, &name]).set_value(dk, id);
        }
        self.0.set_path(&[&dk, &id, &nk, &name])
    }

    /// The id of the newest copy named `name` (a name written again has a copy per id; an
    /// index SCR v2.0.0 wrote names every one of them, ours the newest).
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.0
            .get_kv(self.name_key(), name)?
            .get(self.dset_key())?
            .keys()
            .filter_map(|id| id.parse().ok())
            .max()
    }

    /// Adds (or replaces the attributes of) a dataset copy.
    pub fn add(&mut self, dataset: &Dataset, name: &str, complete: bool) {
        let id = dataset.id().unwrap_or(0);
        let rec = self.record_mut(id, name);
        rec.set_value(COMPLETE, u8::from(complete));
        rec.set(DSET, dataset.hash().clone());
    }

    pub fn set_complete(&mut self, id: u64, name: &str, complete: bool) {
        self.record_mut(id, name)
            .set_value(COMPLETE, u8::from(complete));
    }

    pub fn set_flushed(&mut self, id: u64, name: &str, at: DateTime<Local>) {
        self.record_mut(id, name)
            .set_value(FLUSHED, format_timestamp(at));
    }

    /// Records a fetch of this copy (kept as a list, as SCR does).
    pub fn mark_fetched(&mut self, id: u64, name: &str, at: DateTime<Local>) {
        self.record_mut(id, name)
            .set_kv(FETCHED, format_timestamp(at));
    }

    /// Records a failed fetch: restarts skip this copy from now on.
    pub fn mark_failed(&mut self, id: u64, name: &str, at: DateTime<Local>) {
        self.record_mut(id, name)
            .set_kv(FAILED, format_timestamp(at));
        // a current checkpoint that failed is current no more (SCR v3.1's fetch unsets the
        // marker): the next older one a restart can load takes its place, as a drop's does;
        // with none, no marker, and the next job starts from the newest one it can load
        if self.current() == Some(name) && self.id_of(name) == Some(id) {
            match self.successor_of_current(id) {
                Some(older) => self.0.set_value(CURRENT, &older.name),
                None => self.unset_current(),
            }
        }
    }

    pub fn current(&self) -> Option<&str> {
        self.0.first_value(CURRENT)
    }

    /// Marks `name` as the dataset to restart from; it must be in the index.
    pub fn set_current(&mut self, name: &str) -> Result<(), String> {
        if self.id_of(name).is_none() {
            return Err(format!("{name} is not in the index"));
        }
        self.0.set_value(CURRENT, name);
        Ok(())
    }

    pub fn unset_current(&mut self) {
        self.0.unset(CURRENT);
    }

    /// Removes the copy of `name` that its index entry points to, the newest written (and
    /// `CURRENT` if it named it). Returns whether it existed.
    pub fn remove(&mut self, name: &str) -> bool {
        self.id_of(name)
            .is_some_and(|id| self.remove_entry(id, name))
    }

    /// Removes one dataset copy: dataset `id` named `name`. A name written again (a restart
    /// from an older checkpoint writes its successors' names again) has a copy per id, and
    /// removing one leaves the others: the name then stands for the newest one left.
    /// `CURRENT` goes only with the copy it named. Returns whether the copy existed.
    pub fn remove_entry(&mut self, id: u64, name: &str) -> bool {
        if self.record(id, name).is_none() {
            return false;
        }
        let named = self.id_of(name) == Some(id);
        let was_current = named && self.current() == Some(name);
        let (dk, nk) = (self.dset_key(), self.name_key());
        if let Some(d) = self.0.get_kv_mut(dk, &id.to_string()) {
            d.unset_kv(nk, name);
            if d.is_empty() {
                self.0.unset_kv(dk, &id.to_string());
            }
        }
        if named {
            let other = self
                .entries()
                .into_iter()
                .find(|e| e.name == name)
                .map(|e| e.id);
            match other {
                Some(other) => self.0.set_path(&[&nk, &name]).set_value(dk, other),
                None => {
                    self.0.unset_kv(nk, name);
                }
            }
        }
        if was_current {
            self.unset_current();
        }
        true
    }

    /// Removes every copy with an id above `id` (`scr index --drop-after`); returns the names
    /// removed.
    pub fn remove_after(&mut self, id: u64) -> Vec<String> {
        let later: Vec<(u64, String)> = self
            .entries()
            .into_iter()
            .filter(|e| e.id > id)
            .map(|e| (e.id, e.name))
            .collect();
        for (id, name) in &later {
            self.remove_entry(*id, name);
        }
        later.into_iter().map(|(_, name)| name).collect()
    }

    /// Every dataset copy, newest id first (names of one id in stored order).
    pub fn entries(&self) -> Vec<IndexEntry> {
        let current = self.current();
        // a name written again (a restart from an older checkpoint) is current once: the
        // copy a restart would take
        let current_id = current.and_then(|n| self.id_of(n));
        let mut out = Vec::new();
        for (id, dh) in self.0.get(self.dset_key()).into_iter().flat_map(Hash::iter) {
            let Ok(id) = id.parse::<u64>() else { continue };
            for (name, rec) in dh.get(self.name_key()).into_iter().flat_map(Hash::iter) {
                let values = |k: &str| {
                    rec.get(k)
                        .map(|v| v.keys().map(str::to_string).collect())
                        .unwrap_or_default()
                };
                out.push(IndexEntry {
                    id,
                    name: name.to_string(),
                    complete: rec.parsed::<u8>(COMPLETE) == Ok(Some(1)),
                    flushed: rec.first_value(FLUSHED).map(str::to_string),
                    fetched: values(FETCHED),
                    failed: values(FAILED),
                    is_current: current == Some(name) && current_id == Some(id),
                });
            }
        }
        out.sort_by_key(|e| std::cmp::Reverse(e.id));
        out
    }

    /// The dataset recorded for a copy.
    pub fn dataset(&self, id: u64, name: &str) -> Option<Dataset> {
        self.record(id, name)?
            .get(DSET)
            .map(|h| Dataset::wrap(h.clone()))
    }

    /// Copies a restart may use, best first: starting at `start` (a user-adjusted
    /// `scr.current` link, else `CURRENT`, else the newest) and going to older ids,
    /// skipping copies that are incomplete or failed a fetch before.
    pub fn restart_candidates(&self, start: Option<&str>) -> Vec<IndexEntry> {
        // a start the index does not name (a link left by hand), or whose copy failed a
        // fetch (an index or link written before the failure unset it), is as none
        let usable_start = |name: &str| {
            self.id_of(name).filter(|&id| {
                self.entries()
                    .iter()
                    .any(|e| e.id == id && e.failed.is_empty())
            })
        };
        let start_id = start
            .and_then(usable_start)
            .or_else(|| self.current().and_then(usable_start));
        self.usable_checkpoints()
            .into_iter()
            .filter(|e| start_id.is_none_or(|s| e.id <= s))
            .collect()
    }

    /// Checkpoints a restart could load, newest first: complete, never failed a fetch, and
    /// checkpoints (a dataset recorded as output only is never restarted from).
    pub fn usable_checkpoints(&self) -> Vec<IndexEntry> {
        self.entries()
            .into_iter()
            .filter(|e| e.complete && e.failed.is_empty())
            .filter(|e| {
                self.dataset(e.id, &e.name)
                    .is_none_or(|d| d.is_checkpoint())
            })
            .collect()
    }

    /// The newest checkpoint a restart could load ([`IndexFile::usable_checkpoints`]).
    pub fn newest_usable_checkpoint(&self) -> Option<IndexEntry> {
        self.usable_checkpoints().into_iter().next()
    }

    /// The checkpoint that takes CURRENT's place when the current one, dataset `gone_id`,
    /// can be restarted from no more (dropped, or failed a fetch): the newest one a restart
    /// could load that is older than it.
    pub fn successor_of_current(&self, gone_id: u64) -> Option<IndexEntry> {
        self.usable_checkpoints()
            .into_iter()
            .find(|e| e.id < gone_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Origin;
    use crate::units::parse_timestamp;

    fn dset(id: u64) -> Dataset {
        Dataset::create(
            id,
            &format!("ckpt.{id}"),
            true,
            false,
            &Origin::default(),
            Some(id),
        )
    }

    #[test]
    fn removing_one_copy_of_a_name_written_twice_leaves_the_other_reachable() {
        let mut idx = IndexFile::new();
        let named = |id| Dataset::create(id, "ckpt.2", true, false, &Origin::default(), Some(id));
        idx.add(&named(2), "ckpt.2", true);
        idx.add(&named(3), "ckpt.2", true);
        assert_eq!(idx.id_of("ckpt.2"), Some(3));
        assert!(idx.remove("ckpt.2"));
        assert_eq!(idx.id_of("ckpt.2"), Some(2));
        assert!(idx.set_current("ckpt.2").is_ok());
        assert!(idx.remove("ckpt.2"));
        assert_eq!(idx.id_of("ckpt.2"), None);
        assert!(idx.entries().is_empty());
        assert!(!idx.remove("ckpt.2"));
    }

    #[test]
    fn a_current_checkpoint_that_failed_is_current_no_more() {
        let t = parse_timestamp("2026-11-22T04:51:15").unwrap();
        let mut idx = IndexFile::new();
        for id in 1..=3 {
            idx.add(&dset(id), &format!("ckpt.{id}"), true);
            idx.set_flushed(id, &format!("ckpt.{id}"), t);
        }
        idx.set_current("ckpt.1").unwrap();
        let before = idx.clone();
        idx.mark_failed(1, "ckpt.1", t);
        assert_eq!(idx.current(), None);
        let first =
            |idx: &IndexFile, link: Option<&str>| idx.restart_candidates(link)[0].name.clone();
        assert_eq!(first(&idx, None), "ckpt.3");
        // a link (or an index written before) that still names the failed copy is as none
        assert_eq!(first(&idx, Some("ckpt.1")), "ckpt.3");
        let mut old = before;
        old.record_mut(1, "ckpt.1")
            .set_kv(FAILED, format_timestamp(t));
        assert_eq!(old.current(), Some("ckpt.1"));
        assert_eq!(first(&old, None), "ckpt.3");
        // another copy's failure leaves CURRENT alone
        let mut other = IndexFile::new();
        for id in 1..=2 {
            other.add(&dset(id), &format!("ckpt.{id}"), true);
        }
        other.set_current("ckpt.1").unwrap();
        other.mark_failed(2, "ckpt.2", t);
        assert_eq!(other.current(), Some("ckpt.1"));
        // a failed current with an older one to load leaves CURRENT to that one
        other.set_current("ckpt.2").unwrap();
        other.mark_failed(2, "ckpt.2", t);
        assert_eq!(other.current(), Some("ckpt.1"));
    }

    #[test]
    fn restart_walks_back_past_failed_and_incomplete() {
        let t = parse_timestamp("2026-11-22T04:51:15").unwrap();
        let mut idx = IndexFile::new();
        for id in 1..=4 {
            idx.add(&dset(id), &format!("ckpt.{id}"), id != 2);
            idx.set_flushed(id, &format!("ckpt.{id}"), t);
        }
        assert_eq!(
            idx.hash().keys().next(),
            Some("VERSION"),
            "a new index records its version first"
        );
        idx.set_current("ckpt.4").unwrap();
        idx.mark_failed(4, "ckpt.4", t);
        let names: Vec<_> = idx
            .restart_candidates(None)
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["ckpt.3", "ckpt.1"]);
        let names: Vec<_> = idx
            .restart_candidates(Some("ckpt.1"))
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["ckpt.1"], "a user-chosen start wins over CURRENT");
        assert!(idx.set_current("nope").is_err());
        assert!(idx.remove("ckpt.4"));
        let mut later = idx.clone();
        assert_eq!(later.remove_after(1), ["ckpt.3", "ckpt.2"]);
        assert_eq!(later.entries().len(), 1);
        assert_eq!(
            idx.current(),
            Some("ckpt.3"),
            "the failed ckpt.4 passed CURRENT on"
        );
        assert_eq!(idx.entries().len(), 3);
        assert_eq!(
            idx.entries()[0].flushed.as_deref(),
            Some("2026-11-22T04:51:15")
        );
    }

    #[test]
    fn legacy_dir_layout_reads() {
        let mut h = Hash::new();
        h.set_value("VERSION", 1);
        h.set_path(&[&"DIR", &"scr.dataset.6"]).set_value("DSET", 6);
        h.set_path(&[&"DSET", &6, &"DIR", &"scr.dataset.6"])
            .set_value("COMPLETE", 1);
        let idx = IndexFile::from_hash(h).unwrap();
        assert_eq!(idx.id_of("scr.dataset.6"), Some(6));
        assert_eq!(idx.restart_candidates(None)[0].name, "scr.dataset.6");
    }

    #[test]
    fn an_index_scr_v2_wrote_for_a_name_written_again_reads_with_the_newest_copy_named() {
        // v2.0.0 leaves the older id beside the newer under the name
        let mut h = Hash::new();
        h.set_value("VERSION", 1);
        h.set_value("CURRENT", "ckpt.3");
        let named = h.set_path(&[&"NAME", &"ckpt.3"]);
        named.set_kv("DSET", 3);
        named.set_kv("DSET", 7);
        h.set_path(&[&"NAME", &"ckpt.2"]).set_value("DSET", 2);
        for (id, name) in [(2, "ckpt.2"), (3, "ckpt.3"), (7, "ckpt.3")] {
            h.set_path(&[&"DSET", &id, &"NAME", &name])
                .set_value("COMPLETE", 1);
        }
        let mut idx = IndexFile::from_hash(h).expect("v2.0.0's index reads");
        assert_eq!(idx.id_of("ckpt.3"), Some(7));
        let ids: Vec<u64> = idx
            .restart_candidates(None)
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids[0], 7, "{ids:?}");
        // removing the newer copy leaves the name on the older one
        assert!(idx.remove_entry(7, "ckpt.3"));
        assert_eq!(idx.id_of("ckpt.3"), Some(3));
        // and a name's ids must still be ids
        let mut bad = Hash::new();
        bad.set_value("VERSION", 1);
        bad.set_path(&[&"NAME", &"ckpt.1"]).set_kv("DSET", "x");
        let err = IndexFile::from_hash(bad).unwrap_err().to_string();
        assert!(err.contains("index entry ckpt.1"), "{err}");
    }

    #[test]
    fn a_name_written_again_is_current_once_the_copy_a_restart_takes() {
        let mut index = IndexFile::new();
        index.add(&dset(5), "timestep.4", true);
        index.add(&dset(9), "timestep.4", true);
        index.set_current("timestep.4").unwrap();
        let current: Vec<u64> = index
            .entries()
            .into_iter()
            .filter(|e| e.is_current)
            .map(|e| e.id)
            .collect();
        assert_eq!(current, [9]);
        assert_eq!(index.restart_candidates(None)[0].id, 9);
    }

    #[test]
    fn removing_one_copy_of_a_name_written_again_leaves_the_other() {
        let t = parse_timestamp("2026-11-22T04:51:15").unwrap();
        let mut index = IndexFile::new();
        index.add(&dset(3), "ckpt.3", true);
        index.add(&dset(4), "ckpt.3", true);
        index.set_current("ckpt.3").unwrap();
        // marking the older copy leaves the name on the newer one
        index.mark_failed(3, "ckpt.3", t);
        assert_eq!(index.id_of("ckpt.3"), Some(4));
        assert!(index.remove_entry(3, "ckpt.3"));
        assert!(!index.remove_entry(3, "ckpt.3"));
        assert_eq!(index.id_of("ckpt.3"), Some(4));
        assert_eq!(
            index.current(),
            Some("ckpt.3"),
            "CURRENT named the other copy"
        );
        // the name then stands for what is left of it
        index.add(&dset(3), "ckpt.3", true);
        assert!(index.remove_entry(4, "ckpt.3"));
        assert_eq!(index.id_of("ckpt.3"), Some(3));
        assert_eq!(index.current(), None, "CURRENT went with its copy");
    }
}
