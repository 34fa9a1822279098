//! Filemap: which rank has which files of which dataset in
//! cache. Each rank keeps one in the control directory (`filemap_<n>.scrinfo`); the node
//! master lists them all in the master filemap (`filemap.scrinfo`).
//!
//! ```text
//! DSET <d> RANK <r>                                   (index kept in sync with RANK)
//! RANK <r> DSET <d> FILES <expected count>
//!                   FILE <cache path> META {…}
//!                   REDDESC {…}  DSETDESC {…}  FLUSH {…}  <tags such as PARTNER <host>>
//! ```
//! The invariant callers keep: add an entry and write the filemap before creating the
//! file; delete the file before removing the entry.

use crate::dataset::Dataset;
use crate::hash::Hash;
use crate::meta::Meta;
use crate::reddesc::RedDesc;
use crate::view::{HashView, check_ids, check_value, hash_view, sorted_ids};
use std::path::Path;

hash_view!(
    /// One rank's (or a merged node's) filemap.
    Filemap, "filemap", validate = validate
);

hash_view!(
    /// The master filemap: the paths of every filemap on the node.
    MasterFilemap, "master filemap", max_bytes = 16 << 20
);

const RANK: &str = "RANK";
const DSET: &str = "DSET";
const FILES: &str = "FILES";
const FILE: &str = "FILE";
const META: &str = "META";
const REDDESC: &str = "REDDESC";
const DSETDESC: &str = "DSETDESC";
const FLUSH: &str = "FLUSH";
const MASTER: &str = "Filemap";
/// The prefix of the job whose cache the master filemap describes.
const PREFIX: &str = "PREFIX";
/// The directory that prefix was then: its canonical path (a prefix named through a
/// symbolic link is the directory the link named), and its device and inode numbers (the
/// same directory, moved).
const PREFIX_DIR: &str = "PREFIX_DIR";
const PREFIX_INODE: &str = "PREFIX_INODE";

/// A directory's device and inode numbers, as recorded.
fn inode_of(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    Some(format!("{}:{}", m.dev(), m.ino()))
}

fn validate(h: &Hash) -> Result<(), String> {
    check_ids(h.get(DSET), "dataset id")?;
    check_ids(h.get(RANK), "rank")?;
    for (rank, rh) in h.get(RANK).into_iter().flat_map(Hash::iter) {
        check_ids(rh.get(DSET), "dataset id")?;
        for (dset, dh) in rh.get(DSET).into_iter().flat_map(Hash::iter) {
            let at = format!("rank {rank} dataset {dset}");
            check_value::<u64>(dh, FILES, &at)?;
            for (file, fh) in dh.get(FILE).into_iter().flat_map(Hash::iter) {
                if let Some(meta) = fh.get(META) {
                    Meta::validate(meta).map_err(|e| format!("{at} file {file}: {e}"))?;
                }
            }
            if let Some(d) = dh.get(REDDESC) {
                RedDesc::validate(d).map_err(|e| format!("{at}: {e}"))?;
            }
            if let Some(d) = dh.get(DSETDESC) {
                Dataset::validate(d).map_err(|e| format!("{at}: {e}"))?;
            }
        }
    }
    Ok(())
}

impl Filemap {
    fn entry(&self, dset: u64, rank: u64) -> Option<&Hash> {
        self.0.get_path(&[&RANK, &rank, &DSET, &dset])
    }

    /// The entry for (dset, rank), created with its index entry if missing.
    fn entry_mut(&mut self, dset: u64, rank: u64) -> &mut Hash {
        self.0.set_path(&[&DSET, &dset, &RANK, &rank]);
        self.0.set_path(&[&RANK, &rank, &DSET, &dset])
    }

    /// Drops (dset, rank) from both trees once it holds nothing.
    fn prune(&mut self, dset: u64, rank: u64) {
        let (d, r) = (dset.to_string(), rank.to_string());
        if let Some(rh) = self.0.get_kv_mut(RANK, &r) {
            if rh.get_kv(DSET, &d).is_some_and(Hash::is_empty) {
                rh.unset_kv(DSET, &d);
            }
            if rh.is_empty() {
                self.0.unset_kv(RANK, &r);
            }
        }
        if self.entry(dset, rank).is_none()
            && let Some(dh) = self.0.get_kv_mut(DSET, &d)
        {
            dh.unset_kv(RANK, &r);
            if dh.is_empty() {
                self.0.unset_kv(DSET, &d);
            }
        }
    }

    pub fn add_file(&mut self, dset: u64, rank: u64, file: &str) {
        self.entry_mut(dset, rank).child(FILE).child(file);
    }

    pub fn remove_file(&mut self, dset: u64, rank: u64, file: &str) {
        if let Some(e) = self.0.get_path_mut(&[&RANK, &rank, &DSET, &dset]) {
            e.unset_kv(FILE, file);
        }
        self.prune(dset, rank);
    }

    pub fn remove_dataset(&mut self, dset: u64) {
        for rank in self.ranks_by_dataset(dset) {
            self.remove_rank_by_dataset(dset, rank);
        }
        self.0.unset_kv(DSET, &dset.to_string());
    }

    pub fn remove_rank(&mut self, rank: u64) {
        for dset in self.datasets_of_rank(rank) {
            self.remove_rank_by_dataset(dset, rank);
        }
    }

    pub fn remove_rank_by_dataset(&mut self, dset: u64, rank: u64) {
        if let Some(rh) = self.0.get_kv_mut(RANK, &rank.to_string()) {
            rh.unset_kv(DSET, &dset.to_string());
        }
        self.prune(dset, rank);
    }

    /// Removes everything about `rank` and returns it as a filemap of its own.
    pub fn extract_rank(&mut self, rank: u64) -> Filemap {
        let mut out = Filemap::new();
        for dset in self.datasets_of_rank(rank) {
            if let Some(e) = self.entry(dset, rank) {
                out.entry_mut(dset, rank).merge(e);
            }
        }
        self.remove_rank(rank);
        out
    }

    pub fn merge(&mut self, other: &Filemap) {
        self.0.merge(&other.0);
    }

    /// Merges `other` entry by entry. Where both record (dset, rank), an entry carrying
    /// `tag` (a partner's copy of another rank's files) yields to one without it, so a
    /// node holding a rank's own files and a copy of them never mixes the two lists.
    pub fn merge_preferring_untagged(&mut self, other: &Filemap, tag: &str) {
        for rank in other.ranks() {
            for dset in other.datasets_of_rank(rank) {
                let theirs = other.entry(dset, rank).expect("listed").clone();
                let theirs_tagged = theirs.contains(tag);
                match self.entry(dset, rank).map(|e| e.contains(tag)) {
                    None => self.entry_mut(dset, rank).merge_owned(theirs),
                    Some(mine_tagged) if mine_tagged == theirs_tagged => {
                        self.entry_mut(dset, rank).merge_owned(theirs)
                    }
                    Some(true) => *self.entry_mut(dset, rank) = theirs,
                    Some(false) => {}
                }
            }
        }
    }

    /// Everything recorded for (dset, rank), as one hash (to send a copy elsewhere).
    pub fn entry_hash(&self, dset: u64, rank: u64) -> Option<&Hash> {
        self.entry(dset, rank)
    }

    /// Records (dset, rank) as `entry` describes it, replacing what was there.
    pub fn set_entry(&mut self, dset: u64, rank: u64, entry: Hash) {
        *self.entry_mut(dset, rank) = entry;
        self.prune(dset, rank);
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Dataset ids, oldest first.
    pub fn datasets(&self) -> Vec<u64> {
        sorted_ids(self.0.get(DSET))
    }
    pub fn latest_dataset(&self) -> Option<u64> {
        self.datasets().last().copied()
    }

    /// Rank ids, smallest first.
    pub fn ranks(&self) -> Vec<u64> {
        sorted_ids(self.0.get(RANK))
    }
    pub fn ranks_by_dataset(&self, dset: u64) -> Vec<u64> {
        sorted_ids(self.0.get_path(&[&DSET, &dset, &RANK]))
    }
    pub fn datasets_of_rank(&self, rank: u64) -> Vec<u64> {
        sorted_ids(self.0.get_path(&[&RANK, &rank, &DSET]))
    }
    pub fn have_rank_by_dataset(&self, dset: u64, rank: u64) -> bool {
        self.entry(dset, rank).is_some()
    }

    /// Files recorded for (dset, rank), in the order they were added.
    pub fn files(&self, dset: u64, rank: u64) -> Vec<&str> {
        self.entry(dset, rank)
            .and_then(|e| e.get(FILE))
            .map(|f| f.keys().collect())
            .unwrap_or_default()
    }

    /// Files the rank wrote in the dataset, which may be more than the filemap holds.
    pub fn expected_files(&self, dset: u64, rank: u64) -> Option<u64> {
        self.entry(dset, rank)?.parsed(FILES).ok().flatten()
    }
    pub fn set_expected_files(&mut self, dset: u64, rank: u64, count: u64) {
        self.entry_mut(dset, rank).set_value(FILES, count);
    }

    pub fn meta(&self, dset: u64, rank: u64, file: &str) -> Option<Meta> {
        let h = self.entry(dset, rank)?.get_kv(FILE, file)?.get(META)?;
        Some(Meta::wrap(h.clone()))
    }
    pub fn set_meta(&mut self, dset: u64, rank: u64, file: &str, meta: &Meta) {
        self.entry_mut(dset, rank)
            .set_kv(FILE, file)
            .set(META, meta.hash().clone());
    }

    pub fn dataset(&self, dset: u64, rank: u64) -> Option<Dataset> {
        self.entry(dset, rank)?
            .get(DSETDESC)
            .map(|h| Dataset::wrap(h.clone()))
    }
    pub fn set_dataset(&mut self, dset: u64, rank: u64, desc: &Dataset) {
        self.entry_mut(dset, rank)
            .set(DSETDESC, desc.hash().clone());
    }

    pub fn reddesc(&self, dset: u64, rank: u64) -> Option<RedDesc> {
        self.entry(dset, rank)?
            .get(REDDESC)
            .map(|h| RedDesc::wrap(h.clone()))
    }
    pub fn set_reddesc(&mut self, dset: u64, rank: u64, desc: &RedDesc) {
        self.entry_mut(dset, rank).set(REDDESC, desc.hash().clone());
    }

    /// The files of (dset, rank) the application wrote (not redundancy files), in filemap
    /// order.
    pub fn user_files(&self, dset: u64, rank: u64) -> Vec<String> {
        self.files(dset, rank)
            .into_iter()
            .filter(|f| {
                self.meta(dset, rank, f)
                    .and_then(|m| m.filetype())
                    .is_none_or(|t| t == crate::meta::FileType::User)
            })
            .map(str::to_string)
            .collect()
    }

    /// The flush descriptor (`PRESERVE`, `CONTAINER`).
    pub fn flushdesc(&self, dset: u64, rank: u64) -> Option<&Hash> {
        self.entry(dset, rank)?.get(FLUSH)
    }
    pub fn set_flushdesc(&mut self, dset: u64, rank: u64, desc: Hash) {
        self.entry_mut(dset, rank).set(FLUSH, desc);
    }

    /// A string tag on (dset, rank), such as `PARTNER <owner host>`.
    pub fn tag(&self, dset: u64, rank: u64, tag: &str) -> Option<&str> {
        self.entry(dset, rank)?.first_value(tag)
    }
    pub fn set_tag(&mut self, dset: u64, rank: u64, tag: &str, value: &str) {
        self.entry_mut(dset, rank).set_value(tag, value);
    }
    pub fn unset_tag(&mut self, dset: u64, rank: u64, tag: &str) {
        self.unset_key(dset, rank, tag);
    }

    fn unset_key(&mut self, dset: u64, rank: u64, key: &str) {
        if let Some(e) = self.0.get_path_mut(&[&RANK, &rank, &DSET, &dset]) {
            e.unset(key);
        }
        self.prune(dset, rank);
    }

    /// True when (dset, rank) holds as many files as it expects and each is marked complete.
    pub fn has_all_files(&self, dset: u64, rank: u64) -> bool {
        let Some(expected) = self.expected_files(dset, rank) else {
            return false;
        };
        let files = self.files(dset, rank);
        files.len() as u64 == expected
            && files
                .iter()
                .all(|f| self.meta(dset, rank, f).is_some_and(|m| m.is_complete()))
    }
}

impl MasterFilemap {
    /// Paths of the filemaps on this node, in stored order.
    pub fn filemaps(&self) -> Vec<&str> {
        self.0
            .get(MASTER)
            .map(|h| h.keys().collect())
            .unwrap_or_default()
    }
    pub fn add(&mut self, path: &str) {
        self.0.child(MASTER).child(path);
    }
    pub fn remove(&mut self, path: &str) {
        self.0.unset_kv(MASTER, path);
    }

    /// The prefix of the job whose cache this is (None in control directories written by
    /// SCR itself or before the prefix was recorded).
    pub fn prefix(&self) -> Option<&Path> {
        self.0.first_value(PREFIX).map(Path::new)
    }

    /// The directory the prefix was when it was recorded (None where it was not recorded).
    pub fn prefix_dir(&self) -> Option<&Path> {
        self.0.first_value(PREFIX_DIR).map(Path::new)
    }

    /// Records `prefix`, by its name and by the directory it is now.
    pub fn set_prefix(&mut self, prefix: &Path) {
        self.0.set_value(PREFIX, prefix.to_string_lossy());
        self.0.unset(PREFIX_DIR);
        self.0.unset(PREFIX_INODE);
        if let (Ok(dir), Some(inode)) = (std::fs::canonicalize(prefix), inode_of(prefix)) {
            self.0.set_value(PREFIX_DIR, dir.to_string_lossy());
            self.0.set_value(PREFIX_INODE, inode);
        }
    }

    /// The prefix this cache belongs to when it is not `prefix`: another directory than
    /// the one recorded (by its canonical path, or its device and inode where it moved),
    /// whatever the names, so that the same name naming another directory (a symbolic link
    /// made to point elsewhere, another directory put in the place of one moved away) is
    /// another prefix, and another name for the directory recorded is the same; by name
    /// (and not the same directory reached another way) where no directory was recorded.
    /// Another program that ran with the same job id leaves such a cache. (A name that is
    /// not UTF-8 is recorded with U+FFFD in place of what is not, and compared so.)
    pub fn other_prefix(&self, prefix: &Path) -> Option<&Path> {
        let same = |p: &Path, q: &Path| {
            p.as_os_str().to_str() == Some(&*q.to_string_lossy()) || crate::io::same_file(p, q)
        };
        let named = self.prefix()?;
        let Some(dir) = self.prefix_dir() else {
            return (!same(named, prefix)).then_some(named);
        };
        let here = std::fs::canonicalize(prefix).is_ok_and(|now| same(dir, &now));
        let moved_here =
            inode_of(prefix).is_some_and(|i| self.0.first_value(PREFIX_INODE) == Some(&*i));
        (!here && !moved_here).then_some(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_the_directory_it_was_whatever_names_it() {
        let t = tempfile::tempdir().unwrap();
        let (a, b, link) = (
            t.path().join("a"),
            t.path().join("b"),
            t.path().join("link"),
        );
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let mut m = MasterFilemap::new();
        m.set_prefix(&link);
        let a_dir = std::fs::canonicalize(&a).unwrap();
        // the link, and the directory it names, are the prefix recorded
        assert_eq!(m.other_prefix(&link), None);
        assert_eq!(m.other_prefix(&a), None);
        assert_eq!(m.other_prefix(&b), Some(a_dir.as_path()));
        // the link made to name B: another prefix, the directory A
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&b, &link).unwrap();
        assert_eq!(m.other_prefix(&link), Some(a_dir.as_path()));
        assert_eq!(m.other_prefix(&a), None);
        // A moved, and the link made to name it there: the same directory
        let moved = t.path().join("moved");
        std::fs::rename(&a, &moved).unwrap();
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&moved, &link).unwrap();
        assert_eq!(m.other_prefix(&link), None);
    }

    #[test]
    fn index_stays_in_sync() {
        let mut m = Filemap::new();
        m.add_file(10, 20, "/c/foo_20.ckpt");
        m.add_file(11, 20, "/c/foo_20.ckpt.11");
        m.add_file(11, 28, "/c/foo_28.ckpt.11");
        m.set_expected_files(11, 28, 1);
        m.set_tag(11, 28, "PARTNER", "atlas56");
        assert_eq!(m.datasets(), [10, 11]);
        assert_eq!(m.ranks_by_dataset(11), [20, 28]);
        assert_eq!(m.tag(11, 28, "PARTNER"), Some("atlas56"));
        assert_eq!(m.latest_dataset(), Some(11));

        let extracted = m.extract_rank(28);
        assert_eq!(extracted.ranks(), [28]);
        assert_eq!(extracted.expected_files(11, 28), Some(1));
        assert_eq!(m.ranks_by_dataset(11), [20]);

        m.remove_file(10, 20, "/c/foo_20.ckpt");
        assert_eq!(m.datasets(), [11], "an emptied dataset leaves the index");
        m.remove_dataset(11);
        assert!(m.hash().is_empty());
    }

    #[test]
    fn completeness_needs_count_and_complete_meta() {
        let mut m = Filemap::new();
        m.add_file(1, 0, "/c/a");
        m.set_expected_files(1, 0, 2);
        let mut meta = Meta::new();
        meta.set_complete(true);
        m.set_meta(1, 0, "/c/a", &meta);
        assert!(!m.has_all_files(1, 0));
        m.add_file(1, 0, "/c/b");
        m.set_meta(1, 0, "/c/b", &meta);
        assert!(m.has_all_files(1, 0));
        meta.set_complete(false);
        m.set_meta(1, 0, "/c/b", &meta);
        assert!(!m.has_all_files(1, 0));
    }

    #[test]
    fn non_numeric_ids_are_rejected() {
        let mut h = Hash::new();
        h.set_kv("RANK", "zero");
        assert!(Filemap::from_hash(h).unwrap_err().contains("zero"));
    }

    #[test]
    fn own_entries_win_over_partner_copies() {
        let mut own = Filemap::new();
        own.add_file(3, 1, "/c/a");
        let mut copy = Filemap::new();
        copy.add_file(3, 1, "/c/.scr/partner.1/a");
        copy.set_tag(3, 1, "PARTNER", "n1");
        copy.add_file(3, 2, "/c/b");
        let mut m = Filemap::new();
        m.merge_preferring_untagged(&copy, "PARTNER");
        m.merge_preferring_untagged(&own, "PARTNER");
        assert_eq!(m.files(3, 1), ["/c/a"]);
        assert_eq!(m.tag(3, 1, "PARTNER"), None);
        m.merge_preferring_untagged(&copy, "PARTNER");
        assert_eq!(m.files(3, 1), ["/c/a"], "a copy never displaces own files");
        assert_eq!(m.files(3, 2), ["/c/b"]);
    }
}
