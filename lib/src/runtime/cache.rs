//! The cache manager: this rank's filemap (and, on the node master, the files its node
//! holds for ranks that run elsewhere now), where datasets live in the node's cache, and
//! deleting them (files go through `.trash/`, unlinked in the background).
//!
//! It holds no communicator and none of its functions is collective: what must be agreed
//! about the cache (which dataset to restart, which to evict) is decided by the collective
//! steps that use it.

use super::PARTNER_TAG;
use super::fault;
use super::prefix_store::PrefixStore;
use scr::dataset::Dataset;
use scr::filemap::Filemap;
use scr::flush::{FlushFile, FlushTarget, Location};
use scr::hash::Hash;
use scr::layout::{self, Node};
use scr::meta::{FileType, Meta};
use scr::params::settings::Flush as FlushSettings;
use scr::reddesc::RedDesc;
use scr::xor::XorHeader;
use scr::{Error, HashView, Result, io, safe_fs};
use std::path::{Path, PathBuf};

mod discard;
use discard::Discards;
pub(super) use discard::TRASH_DIR;

/// The filemap tag of a dataset's record naming the nodes of the job that wrote it.
const WRITER_HOSTS_TAG: &str = "WRITER_HOSTS";
/// Whose directories these are: the cache and control directories of a job are
/// `<base>/<user>/scr.<jobid>/` (and a node's own below that where nodes share a machine).
pub(super) struct JobPlace {
    pub(super) user: String,
    pub(super) jobid: String,
    /// Whether the job id names an allocation (SCR_JOB_ID or the resource manager's): every
    /// run without one (`defjobid`, scr-run's too outside a resource manager) is its own.
    pub(super) jobid_given: bool,
    pub(super) node: Node,
}

impl JobPlace {
    /// The job's directory under a control or cache base (`param` names where the base
    /// came from, for the error).
    pub(super) fn under(&self, base: &str, param: &str) -> Result<PathBuf> {
        let base = layout::base_dir(base, param)?;
        self.node.job_dir(base, &self.user, &self.jobid)
    }
}

/// This rank's cache: what its filemap records, where, and what goes next.
pub(super) struct CacheManager {
    rank: u64,
    /// How many ranks the job has (a cached file records the job size it was written by).
    ranks: u64,
    place: JobPlace,
    /// Every store the checkpoint descriptors name (their bases), in descriptor order.
    stores: Vec<String>,
    filemap_path: PathBuf,
    pub(super) filemap: Filemap,
    /// Node master only: cached files on this node of ranks that now run elsewhere, and
    /// partners' copies (a file never exists in cache without a filemap entry).
    held: Option<(PathBuf, Filemap)>,
    /// Datasets whose files moved or were rebuilt in Init: redundancy is applied anew.
    pub(super) reprotect: Vec<u64>,
    /// A dataset kept past SCR_CACHE_SIZE until the open checkpoint completes.
    pub(super) deferred_eviction: Option<u64>,
    discards: Discards,
    /// SCR_CRC_ON_COPY: every restart from cache reads every byte against its CRC32.
    pub(super) crc_on_copy: bool,
    /// SCR_CRC_ON_DELETE: files are checked once more before they go.
    crc_on_delete: bool,
    /// SCR_DEBUG, for "Deleting dataset …".
    debug: u64,
}

/// What SCR_Init found of the node's cache (see `node_cache::load_filemaps`).
pub(super) struct FoundCache {
    pub(super) filemap_path: PathBuf,
    pub(super) filemap: Filemap,
    pub(super) held: Option<(PathBuf, Filemap)>,
    pub(super) reprotect: Vec<u64>,
}

/// The settings the cache manager reads.
pub(super) struct CacheSettings {
    pub(super) crc_on_copy: bool,
    pub(super) crc_on_delete: bool,
    pub(super) debug: u64,
}

impl CacheManager {
    pub(super) fn new(
        rank: u64,
        ranks: u64,
        place: JobPlace,
        stores: Vec<String>,
        found: FoundCache,
        settings: CacheSettings,
    ) -> CacheManager {
        CacheManager {
            rank,
            ranks,
            place,
            stores,
            filemap_path: found.filemap_path,
            filemap: found.filemap,
            held: found.held,
            reprotect: found.reprotect,
            deferred_eviction: None,
            discards: Discards::default(),
            crc_on_copy: settings.crc_on_copy,
            crc_on_delete: settings.crc_on_delete,
            debug: settings.debug,
        }
    }

    /// The rank whose cache this is.
    pub(super) fn rank(&self) -> u64 {
        self.rank
    }

    /// Writes this rank's filemap (before any file it records exists: filemap first).
    pub(super) fn write(&self) -> Result<()> {
        self.filemap.write(&self.filemap_path)
    }

    /// The node's control directory (where the filemaps and the transfer file are).
    pub(super) fn control_dir(&self) -> &Path {
        self.filemap_path.parent().unwrap_or(Path::new("."))
    }

    pub(super) fn place(&self) -> &JobPlace {
        &self.place
    }

    /// This node's cache directory in a store.
    pub(super) fn store_dir(&self, store: &str) -> PathBuf {
        self.place
            .node
            .job_dir(Path::new(store), &self.place.user, &self.place.jobid)
            .expect("the user, job and node names were checked in SCR_Init")
    }

    /// This node's cache directory in every store the descriptors name.
    pub(super) fn store_dirs(&self) -> Vec<PathBuf> {
        self.stores.iter().map(|s| self.store_dir(s)).collect()
    }

    /// A cached dataset's directory, from the store its redundancy descriptor records (one
    /// of this job's stores: a filemap naming another directory is not followed there).
    pub(super) fn dataset_dir(&self, id: u64) -> PathBuf {
        let stores = self.store_dirs();
        let dir = self
            .filemap
            .reddesc(id, self.rank)
            .and_then(|r| r.directory().map(PathBuf::from))
            .filter(|d| stores.contains(d));
        layout::cache_dataset_dir(&dir.unwrap_or_else(|| stores[0].clone()), id)
    }

    /// The directories a dataset's cached files may be in: its directory in each store.
    /// Nothing outside them is ever deleted as part of the dataset.
    pub(super) fn cache_dirs_of(&self, id: u64) -> Vec<PathBuf> {
        self.store_dirs()
            .iter()
            .map(|s| layout::cache_dataset_dir(s, id))
            .collect()
    }

    /// This rank's cached files of a dataset (owned, so the filemap can change meanwhile).
    pub(super) fn my_files(&self, id: u64) -> Vec<String> {
        self.filemap
            .files(id, self.rank)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// This rank's files of a dataset the application wrote (not redundancy files), in
    /// filemap order.
    pub(super) fn user_files(&self, id: u64) -> Vec<String> {
        self.filemap.user_files(id, self.rank)
    }

    /// This rank's user files of a dataset with the sizes and meta the filemap records.
    pub(super) fn user_files_with_meta(&self, id: u64) -> Vec<(PathBuf, u64, Meta)> {
        self.user_files(id)
            .into_iter()
            .map(|f| {
                let meta = self.filemap.meta(id, self.rank, &f).unwrap_or_default();
                (PathBuf::from(f), meta.size().unwrap_or(0), meta)
            })
            .collect()
    }

    /// Where each of this rank's user files of dataset `id` goes on the prefix.
    pub(super) fn flush_targets(&self, id: u64) -> Result<Vec<FlushTarget>> {
        scr::flush::targets(&self.filemap, id, self.rank).map_err(Error::corrupt)
    }

    /// This rank's descriptor of dataset `id` (empty when it records none).
    pub(super) fn dataset(&self, id: u64) -> Dataset {
        self.filemap.dataset(id, self.rank).unwrap_or_default()
    }

    /// A dataset's name for messages (`scr.dataset.<id>` when this rank does not know it).
    pub(super) fn dataset_name(&self, id: u64) -> String {
        self.filemap
            .dataset(id, self.rank)
            .and_then(|d| d.name().map(str::to_string))
            .unwrap_or_else(|| layout::dataset_dir_name(id))
    }

    /// The checkpoint id of dataset `d` as this rank's filemap records it.
    pub(super) fn checkpoint_of(&self, d: u64) -> Option<u64> {
        self.filemap
            .dataset(d, self.rank)
            .and_then(|x| x.checkpoint_id())
    }

    /// A transfer's cost as SCR_DEBUG shows it: seconds, files, bytes and bandwidth of the
    /// whole dataset (its descriptor's totals).
    pub(super) fn transfer_cost(&self, id: u64, secs: f64) -> String {
        let desc = self.dataset(id);
        let (files, bytes) = (desc.files().unwrap_or(0), desc.size().unwrap_or(0));
        let mbs = if secs > 0.0 {
            bytes as f64 / secs / 1e6
        } else {
            0.0
        };
        format!("{secs:.6} secs, {files} files, {bytes} bytes, {mbs:.3} MB/s")
    }

    /// Records a dataset's descriptors and expected file count in this rank's filemap, on
    /// disk, before any of its files exists (filemap first).
    pub(super) fn record_dataset(
        &mut self,
        id: u64,
        desc: &Dataset,
        reddesc: &RedDesc,
        expected_files: u64,
        flush: &FlushSettings,
        writer_hosts: &str,
    ) -> Result<()> {
        self.filemap.set_dataset(id, self.rank, desc);
        // the nodes of the job writing it: a later job that cannot rebuild it knows which of
        // them it does not run on
        self.filemap
            .set_tag(id, self.rank, WRITER_HOSTS_TAG, writer_hosts);
        self.filemap.set_reddesc(id, self.rank, reddesc);
        self.filemap
            .set_expected_files(id, self.rank, expected_files);
        // how the files go to the prefix: SCR's own scr_copy reads this to drain a node
        // (PRESERVE=1: into the application's directories, not scr.dataset.<id>/)
        let mut how = Hash::new();
        let flag = |on: bool| if on { "1" } else { "0" };
        how.set_value("PRESERVE", flag(flush.preserve_directories));
        how.set_value("CONTAINER", flag(flush.containers));
        self.filemap.set_flushdesc(id, self.rank, how);
        self.write()
    }

    /// The nodes of the job that wrote dataset `id`, as a host list, when a record of it
    /// on this node says (any rank's: they agree).
    pub(super) fn writer_hosts(&self, id: u64) -> Option<String> {
        let held = self.held();
        [Some(&self.filemap), held]
            .into_iter()
            .flatten()
            .flat_map(|map| {
                map.ranks_by_dataset(id)
                    .into_iter()
                    .filter_map(move |r| map.tag(id, r, WRITER_HOSTS_TAG).map(str::to_string))
            })
            .next()
    }

    /// Records a file of this rank's in dataset `id` (with its meta data) on disk, before
    /// the file is created (filemap first). A file already recorded keeps its entry.
    pub(super) fn record_file(&mut self, id: u64, key: &str, meta: &Meta) -> Result<()> {
        if self.filemap.files(id, self.rank).contains(&key) {
            return Ok(());
        }
        self.filemap.add_file(id, self.rank, key);
        self.filemap.set_meta(id, self.rank, key, meta);
        self.write()
    }

    /// The datasets this rank's filemap records whose descriptor satisfies `keep`.
    pub(super) fn datasets_where(
        &self,
        keep: impl Fn(&Dataset) -> bool,
    ) -> impl Iterator<Item = u64> {
        self.filemap
            .datasets()
            .into_iter()
            .filter(move |&d| self.filemap.dataset(d, self.rank).is_some_and(|x| keep(&x)))
    }

    /// The datasets of `store` this rank caches, oldest first.
    pub(super) fn datasets_in_store(&self, store: &str) -> Vec<u64> {
        self.filemap
            .datasets()
            .into_iter()
            .filter(|d| {
                let recorded = self
                    .filemap
                    .reddesc(*d, self.rank)
                    .and_then(|r| r.store().map(str::to_string));
                recorded.is_none_or(|s| Path::new(&s) == Path::new(store))
            })
            .collect()
    }

    /// The newest dataset below `below` this rank (or, on the node master, the node's held
    /// copies) records; with `checkpoints_only`, the newest complete checkpoint (one whose
    /// Complete failed, or a record of a checkpoint read in place, is none to restart from).
    pub(super) fn newest_cached(&self, below: u64, checkpoints_only: bool) -> u64 {
        let newest = |map: &Filemap| {
            map.ranks()
                .into_iter()
                .flat_map(|r| {
                    map.datasets_of_rank(r).into_iter().filter(move |&d| {
                        !checkpoints_only
                            || map
                                .dataset(d, r)
                                .is_some_and(|x| x.is_checkpoint() && x.is_complete())
                    })
                })
                .filter(|&d| d < below)
                .max()
                .unwrap_or(0)
        };
        let held = self.held.as_ref().map_or(0, |(_, h)| newest(h));
        newest(&self.filemap).max(held)
    }

    /// The newest dataset any filemap of this rank (or its node's held copies) records.
    pub(super) fn newest_recorded(&self) -> u64 {
        let held = self
            .held
            .as_ref()
            .and_then(|(_, h)| h.latest_dataset())
            .unwrap_or(0);
        self.filemap.latest_dataset().unwrap_or(0).max(held)
    }

    /// True when this rank holds every file of its part of checkpoint `dset` complete, of
    /// the recorded size (and, with `check_crc`, CRC).
    pub(super) fn verify_own(&self, dset: u64, check_crc: bool) -> bool {
        verify_copy(&self.filemap, dset, self.rank, self.ranks, check_crc)
    }

    /// Why this rank's own files of `dset`, which its filemap lists, fail [`Self::verify_own`];
    /// None when they pass or its filemap does not list them (nothing of them is here).
    pub(super) fn own_flaw(&self, dset: u64, check_crc: bool) -> Option<String> {
        self.filemap.dataset(dset, self.rank)?;
        copy_flaw(&self.filemap, dset, self.rank, self.ranks, check_crc)
    }

    /// Whether this rank's node records `dset` for it without this rank having completed it:
    /// the dataset's record, or a file it lists (its redundancy data among them), was never
    /// marked complete, as when the job ended while this rank wrote it.
    pub(super) fn unfinished(&self, dset: u64) -> bool {
        self.filemap.dataset(dset, self.rank).is_some_and(|d| {
            !d.is_complete()
                || self.filemap.files(dset, self.rank).iter().any(|f| {
                    !self
                        .filemap
                        .meta(dset, self.rank, f)
                        .is_some_and(|m| m.is_complete())
                })
        })
    }

    /// Whether this rank's node records nothing of `dset` for it but records other datasets
    /// of it: the node kept this rank's cache, and this rank has no part of `dset` there.
    pub(super) fn keeps_others_but_not(&self, dset: u64) -> bool {
        self.filemap.dataset(dset, self.rank).is_none()
            && !self.filemap.datasets_of_rank(self.rank).is_empty()
    }

    /// Whether this rank's files of `dset` were written straight to the prefix
    /// (SCR_CACHE_BYPASS): its filemap names them outside the dataset's cache directories.
    pub(super) fn written_to_prefix(&self, dset: u64) -> bool {
        let dirs = self.cache_dirs_of(dset);
        self.user_files(dset)
            .iter()
            .any(|f| !io::is_within_any(Path::new(f), &dirs))
    }

    /// The files this node holds for other ranks (node master only).
    pub(super) fn held(&self) -> Option<&Filemap> {
        self.held.as_ref().map(|(_, h)| h)
    }

    /// The ranks whose verified copies of `dset` this node holds (node master only), with
    /// `partner_only`, only partners' copies.
    pub(super) fn held_copies(&self, dset: u64, partner_only: bool) -> Vec<u64> {
        let Some(held) = self.held() else {
            return Vec::new();
        };
        held.ranks_by_dataset(dset)
            .into_iter()
            .filter(|&r| {
                r < self.ranks
                    && (!partner_only || held.tag(dset, r, PARTNER_TAG).is_some())
                    && verify_copy(held, dset, r, self.ranks, self.crc_on_copy)
            })
            .collect()
    }

    /// This rank's parity file of `d`: its path, header and where the parity starts.
    pub(super) fn parity_file(&self, d: u64) -> Option<(PathBuf, XorHeader, u64)> {
        parity_file_in(&self.filemap, d, self.rank)
    }

    /// This rank's parity header of `d`, and (node master) the held copies' headers.
    pub(super) fn parity_headers(&self, d: u64, own: bool, held: &[u64]) -> Vec<XorHeader> {
        let mut headers = Vec::new();
        if own && let Some((_, header, _)) = self.parity_file(d) {
            headers.push(header);
        }
        if let Some(h) = self.held() {
            headers.extend(
                held.iter()
                    .filter_map(|&r| parity_file_in(h, d, r).map(|(_, header, _)| header)),
            );
        }
        headers
    }

    /// A copy of rank `owner`'s files of `d` this node holds: its files with sizes and meta
    /// (node master only).
    pub(super) fn held_files(&self, d: u64, owner: u64) -> Vec<(PathBuf, u64, Meta)> {
        let Some(held) = self.held() else {
            return Vec::new();
        };
        held.files(d, owner)
            .into_iter()
            .map(|f| {
                let meta = held.meta(d, owner, f).unwrap_or_default();
                (PathBuf::from(f), meta.size().unwrap_or(0), meta)
            })
            .collect()
    }

    /// Marks received files of `owner` complete and writes the filemap.
    pub(super) fn mark_complete(&mut self, id: u64, owner: u64, paths: &[String]) -> Result<()> {
        mark_complete(&mut self.filemap, id, owner, paths);
        self.write()
    }

    /// The checkpoint SCR_CURRENT named when this node's control directory recorded it was
    /// applied (see [`CacheManager::record_named_current`]).
    pub(super) fn named_current_applied(&self) -> Option<String> {
        let h = io::read_hash_file_limited(&self.control_dir().join(NAMED_CURRENT), 4096).ok()?;
        h.first_value("NAME").map(str::to_string)
    }

    /// Records in this node's control directory that SCR_CURRENT=`name` was applied, so a
    /// relaunch in the same allocation does not apply it again.
    pub(super) fn record_named_current(&self, name: &str) -> Result<()> {
        let mut h = Hash::new();
        h.set_value("NAME", name);
        io::write_hash_file(&self.control_dir().join(NAMED_CURRENT), &h)
    }
}

/// True when `map` holds every file of (dset, rank) complete, of the recorded size (and,
/// with `check_crc`, CRC), for a checkpoint of a job of `ranks` ranks. Reading every
/// cached byte at each SCR_Init is what SCR_CRC_ON_COPY=1 asks for; without it a restart
/// trusts sizes, as SCR does, and the CRCs recorded at Complete check what is rebuilt.
pub(super) fn verify_copy(
    map: &Filemap,
    dset: u64,
    rank: u64,
    ranks: u64,
    check_crc: bool,
) -> bool {
    copy_flaw(map, dset, rank, ranks, check_crc).is_none()
}

/// Why (dset, rank) in `map` fails [`verify_copy`], in words naming the file; None when it
/// passes.
pub(super) fn copy_flaw(
    map: &Filemap,
    dset: u64,
    rank: u64,
    ranks: u64,
    check_crc: bool,
) -> Option<String> {
    let Some(d) = map.dataset(dset, rank) else {
        return Some("its filemap does not list the dataset".into());
    };
    if !d.is_checkpoint() {
        return Some("it is not a checkpoint".into());
    }
    if !d.is_complete() {
        return Some("it was never completed".into());
    }
    if !map.has_all_files(dset, rank) {
        let unfinished = map
            .files(dset, rank)
            .into_iter()
            .find(|f| !map.meta(dset, rank, f).is_some_and(|m| m.is_complete()));
        return Some(match unfinished {
            Some(f) => format!("{f} was never completed"),
            None => "its filemap lacks some of its files".into(),
        });
    }
    map.files(dset, rank).iter().find_map(|f| {
        let meta = map.meta(dset, rank, f).expect("has_all_files checked meta");
        if let Some(n) = meta.ranks().filter(|&n| n != ranks) {
            return Some(format!("{f} was written by a job of {n} ranks"));
        }
        let stat = match std::fs::metadata(f) {
            Ok(stat) => stat,
            Err(e) => return Some(format!("{f}: {e}")),
        };
        let crc = meta
            .crc32()
            .filter(|_| check_crc)
            .and_then(|_| io::file_crc32(Path::new(f)).ok());
        meta.verify(stat.len(), crc)
            .err()
            .map(|what| format!("{f}: {what}"))
    })
}

/// The parity file (XOR or RS) recorded for (d, rank) in `map`: path, header, parity offset.
pub(super) fn parity_file_in(
    map: &Filemap,
    d: u64,
    rank: u64,
) -> Option<(PathBuf, XorHeader, u64)> {
    map.files(d, rank).into_iter().find_map(|f| {
        let meta = map.meta(d, rank, f)?;
        matches!(meta.filetype(), Some(FileType::Xor | FileType::ReedSolomon)).then_some(())?;
        let (h, offset) = XorHeader::read(Path::new(f)).ok()?;
        Some((PathBuf::from(f), h, offset))
    })
}

/// Marks received files complete.
pub(super) fn mark_complete(filemap: &mut Filemap, id: u64, owner: u64, paths: &[String]) {
    for p in paths {
        if let Some(mut meta) = filemap.meta(id, owner, p) {
            meta.set_complete(true);
            filemap.set_meta(id, owner, p, &meta);
        }
    }
}

/// The flush file's record that a dataset is no longer in cache: the drain must not look
/// for it there.
pub(super) fn forget_cached(f: &mut FlushFile, dset: u64) {
    f.forget_location(dset, Location::Cache);
}

/// The control directory's record that SCR_CURRENT was applied in this allocation.
const NAMED_CURRENT: &str = "current.scrinfo";
