//! The post-run drain without MPI:
//! [`copy_node`] copies what one node's cache holds of a dataset to the prefix (SCR's
//! `scr_copy`), and [`index_dataset`] checks what arrived from all nodes, rebuilds lost
//! members from XOR or Reed–Solomon parity, and publishes the dataset (SCR's
//! `scr_index --add`).
//!
//! A scavenged dataset on the prefix: redundancy files and one filemap per rank
//! (`fmap.<rank>.scr`, file names relative to the prefix) in
//! `<prefix>/.scr/scr.dataset.<id>/`, and user files waiting in its `drained/<ORIG>` until
//! the index finds the dataset whole and moves them to `<prefix>/<ORIG>`: a file an older
//! dataset names at the same path (a name written again after a restart from an older
//! checkpoint, a program that writes every checkpoint to the same paths) is replaced only
//! by a whole dataset, never by part of one.

use crate::filemap::{Filemap, MasterFilemap};
use crate::meta::{FileType, Meta};
use crate::rank2file;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

mod index;
mod plan;
#[cfg(test)]
mod tests;

pub use index::{IndexReport, index_dataset};
pub use plan::{CachedOnNode, DrainPlan, cached_on_node};

/// The filemap tag on a partner's copy (the owner's node).
pub const PARTNER_TAG: &str = "PARTNER";

/// The per-rank filemap a scavenge leaves for the indexer.
pub fn fmap_path(prefix: &Path, id: u64, rank: u64) -> PathBuf {
    layout::dataset_meta_dir(prefix, id).join(format!("fmap.{rank}.scr"))
}

/// What one node's copy did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CopyReport {
    /// Owner nodes whose partner copies this node holds.
    pub partners: Vec<String>,
    pub ranks: Vec<u64>,
    pub files: u64,
    pub bytes: u64,
    /// Problems, each naming the file; the copy goes on with the other ranks.
    pub errors: Vec<String>,
}

/// The most ranks a scavenged dataset may record: counts come from files anyone with
/// access to the prefix could have written, and the index lists every missing rank.
pub const MAX_RANKS: u64 = 1 << 24;

/// Options of [`copy_node`].
#[derive(Clone, Debug)]
pub struct CopyOptions {
    pub buf_size: usize,
    /// Also copy partners' copies of these failed owner nodes (second scavenge round).
    pub failed_owners: Vec<String>,
}

/// The directory below the prefix where dataset `id`'s drained user files wait for the
/// dataset to be whole (then [`index_dataset`] moves them to their places).
pub(crate) fn drained_dir_rel(id: u64) -> String {
    format!("{}/drained", layout::dataset_meta_rel(id))
}

/// Where drained file `rel` (a name [`destination`] gave) is on the prefix until the
/// dataset is placed, relative to the prefix: a user file in the dataset's `drained`
/// directory, a redundancy file (already in the dataset's own `.scr` directory) where it is.
fn waiting_rel(id: u64, rel: &str, meta: &Meta) -> String {
    match meta.filetype() {
        Some(FileType::User) | None => format!("{}/{rel}", drained_dir_rel(id)),
        Some(_) => rel.to_string(),
    }
}

/// Where a cached file goes on the prefix, relative to it: user files by their ORIG name
/// (refused if it would escape the prefix), redundancy files into the dataset's `.scr`.
fn destination(meta: &Meta, id: u64) -> std::result::Result<String, String> {
    match meta.filetype() {
        Some(FileType::User) | None => {
            let orig = meta
                .orig()
                .ok_or("a user file's meta data has no ORIG name")?;
            rank2file::check_relative(orig)?;
            Ok(orig.to_string())
        }
        Some(_) => {
            let name = meta
                .filename()
                .ok_or("a redundancy file has no FILE name")?;
            if name.is_empty() || name.contains('/') || name == ".." {
                return Err(format!("redundancy file name {name:?} is not a plain name"));
            }
            Ok(format!("{}/{name}", layout::dataset_meta_rel(id)))
        }
    }
}

/// Bytes copied so far of what one node's copy will write in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyProgress {
    pub done: u64,
    pub total: u64,
}

/// Copies everything the node whose control directory is `cntl_dir` holds of dataset
/// `id` to `prefix`: each rank's own files, and partners' copies of `failed_owners`.
/// Each copied file is checked against the size and CRC its meta records, and each rank's
/// filemap is written to the prefix once its files are there. `progress` hears of every
/// piece written, against the total the filemaps announce.
pub fn copy_node(
    cntl_dir: &Path,
    id: u64,
    prefix: &Path,
    opts: &CopyOptions,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<CopyReport> {
    if std::fs::symlink_metadata(cntl_dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        // a node the job never ran on (a spare): nothing to copy
        return Ok(CopyReport::default());
    }
    crate::safe_fs::check_owned_dir(cntl_dir)?;
    let master = match MasterFilemap::read(&layout::master_filemap(cntl_dir)) {
        // a control directory with no filemap: no rank of the job recorded a file there
        Err(e) if e.is_not_found() => return Ok(CopyReport::default()),
        read => read?,
    };
    if let Some(other) = master.other_prefix(prefix) {
        return Err(Error::refused(format!(
            "{}: this cache belongs to the job whose prefix is {}, not {}: a program with \
             the same job id ran there; drain it to its own prefix",
            cntl_dir.display(),
            other.display(),
            prefix.display()
        )));
    }
    // the job's user: a filemap may name only that user's files (a drain run with more
    // privileges must not copy, say, /etc/shadow because a filemap lists it)
    let owner = std::fs::metadata(cntl_dir)
        .map_err(|e| Error::io(cntl_dir, "inspect", e))?
        .uid();
    let mut report = CopyReport::default();
    crate::safe_fs::create_dirs_in(
        prefix,
        &prefix.join(drained_dir_rel(id)),
        crate::layout::DIR_MODE,
    )?;
    let (to_copy, total) = ranks_to_copy(&master, id, opts, &mut report);
    let mut state = CopyProgress {
        total,
        ..Default::default()
    };
    progress(state);
    let node = NodeCopy {
        id,
        prefix,
        owner,
        buf_size: opts.buf_size,
    };
    for (map, ranks) in &to_copy {
        for &rank in ranks {
            let mut fmap = Filemap::new();
            let mut entry = map.entry_hash(id, rank).cloned().unwrap_or_default();
            entry.unset("FILE");
            entry.unset(PARTNER_TAG);
            fmap.set_entry(id, rank, entry);
            let mut ok = true;
            for f in map.files(id, rank) {
                let meta = map.meta(id, rank, f).unwrap_or_default();
                let mut piece_done = |n: u64| {
                    state.done += n;
                    progress(state);
                };
                match node.copy(f, &meta, &mut report, &mut piece_done) {
                    Some((rel, copied, copied_ok)) => {
                        ok &= copied_ok;
                        fmap.add_file(id, rank, &rel);
                        fmap.set_meta(id, rank, &rel, &copied);
                    }
                    None => ok = false,
                }
            }
            fmap.write(&fmap_path(prefix, id, rank))?;
            if ok {
                report.ranks.push(rank);
            }
        }
    }
    Ok(report)
}

/// Which ranks' files a node copies, decided before any byte moves so the total is known:
/// every rank of its filemaps, but a partner's copy only when its owner's node failed
/// (otherwise the owner copies its own files). Returns the filemaps with their ranks,
/// and the bytes to copy; partners seen and unreadable filemaps go into `report`.
fn ranks_to_copy(
    master: &MasterFilemap,
    id: u64,
    opts: &CopyOptions,
    report: &mut CopyReport,
) -> (Vec<(Filemap, Vec<u64>)>, u64) {
    let mut to_copy = Vec::new();
    let mut total = 0;
    for path in master.filemaps() {
        let map = match Filemap::read(Path::new(path)) {
            Ok(m) => m,
            Err(e) => {
                report.errors.push(e.to_string());
                continue;
            }
        };
        let mut ranks = Vec::new();
        for rank in map.ranks_by_dataset(id) {
            if let Some(owner) = map.tag(id, rank, PARTNER_TAG) {
                if !report.partners.iter().any(|p| p == owner) {
                    report.partners.push(owner.to_string());
                }
                if !opts.failed_owners.iter().any(|f| f == owner) {
                    continue; // its owner copies its own files
                }
            }
            total += map
                .files(id, rank)
                .iter()
                .filter_map(|f| map.meta(id, rank, f)?.size())
                .sum::<u64>();
            ranks.push(rank);
        }
        to_copy.push((map, ranks));
    }
    (to_copy, total)
}

/// One node's copy of a dataset to the prefix.
struct NodeCopy<'a> {
    id: u64,
    prefix: &'a Path,
    /// The job's user: only that user's regular files are copied.
    owner: u32,
    buf_size: usize,
}

impl NodeCopy<'_> {
    /// Copies cached file `f` to its place under the prefix, checked against `meta`.
    /// Returns its name there, its meta data (incomplete when the copy failed or came out
    /// other than recorded) and whether it was copied as recorded, or none when it is not
    /// copied at all (a name that would leave the dataset, not the user's regular file);
    /// problems go into `report`.
    fn copy(
        &self,
        f: &str,
        meta: &Meta,
        report: &mut CopyReport,
        piece_done: &mut dyn FnMut(u64),
    ) -> Option<(String, Meta, bool)> {
        let rel = match destination(meta, self.id) {
            Ok(r) => r,
            Err(e) => {
                report.errors.push(format!("{f}: {e}"));
                return None;
            }
        };
        match std::fs::symlink_metadata(f) {
            Ok(m) if m.is_file() && m.uid() == self.owner => {}
            Ok(_) => {
                report.errors.push(format!(
                    "{f}: not a regular file of the job's user (id {}); not copied",
                    self.owner
                ));
                return None;
            }
            Err(e) => {
                report
                    .errors
                    .push(Error::io(Path::new(f), "inspect", e).to_string());
                return None;
            }
        }
        let mut copied = meta.clone();
        let mut ok = true;
        let dst = self.prefix.join(waiting_rel(self.id, &rel, meta));
        let result = io::copy_file_with_crc(
            Path::new(f),
            &dst,
            Some(self.prefix),
            self.buf_size,
            piece_done,
        );
        match result {
            Ok((size, crc)) => {
                if let Err(e) = meta.verify(size, meta.crc32().map(|_| crc)) {
                    // the damaged copy goes (from where it waits: an older dataset's file
                    // at its place stays): a rebuild recreates it, and never writes into one
                    let _ = std::fs::remove_file(&dst);
                    report.errors.push(format!("{f}: {e}"));
                    copied.set_complete(false);
                    ok = false;
                } else {
                    copied.set_crc32(crc);
                    report.files += 1;
                    report.bytes += size;
                }
            }
            Err(e) => {
                report.errors.push(e.to_string());
                copied.set_complete(false);
                ok = false;
            }
        }
        Some((rel, copied, ok))
    }
}
