//! A restart on another number of ranks than the checkpoint was written with, through the
//! restart API (what SCR asks such applications to do without it).
//!
//! A checkpoint cached by a job of another size cannot be handed back rank by rank: each
//! rank's files belong to a rank this job may not have. So SCR_Init drains it first
//! ([`drain_cache_of_another_shape`]): the node masters copy what their nodes hold to the
//! prefix and rank 0 rebuilds what a lost node took from parity and publishes it, as `scr
//! postrun` would between jobs. A checkpoint on the prefix written by another number of
//! ranks is then served in place ([`ReshapedRestart`]): every rank learns the dataset's
//! whole file list and may route any file of it by its name, which comes back as the file
//! on the prefix, checked against the size and CRC32 the flush recorded the first time it
//! is routed (a file inside a container is first copied out into this rank's cache).

use super::cache::CacheManager;
use super::failure;
use super::fetch::open_as_recorded;
use super::job::Job;
use super::prefix_store::PrefixStore;
use crate::comm;
use scr::filemap::{Filemap, MasterFilemap};
use scr::meta::Meta;
use scr::rank2file::{FileRecord, RankFiles};
use scr::scavenge::{CopyOptions, DrainPlan, copy_node, index_dataset};
use scr::{Error, HashView, Result, container, io, layout, safe_fs};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A restart served from the prefix to a job of another size than the one that wrote it.
pub(super) struct ReshapedRestart {
    /// How many ranks wrote the checkpoint.
    pub(super) writers: u64,
    /// Every file of the dataset, in the order of the ranks that wrote them.
    pub(super) files: Vec<FileRecord>,
    /// The files this rank checked already (by their names relative to the prefix).
    checked: HashSet<String>,
}

impl ReshapedRestart {
    pub(super) fn new(map: RankFiles) -> ReshapedRestart {
        ReshapedRestart {
            writers: map.len() as u64,
            files: map.into_values().flatten().collect(),
            checked: HashSet::new(),
        }
    }

    /// Every file of the dataset, as paths on the prefix.
    pub(super) fn paths(&self, prefix: &Path) -> Vec<PathBuf> {
        self.files.iter().map(|f| prefix.join(&f.name)).collect()
    }

    /// Where this rank reads `rel` (a file of the dataset by its path relative to the
    /// prefix, else by a file name only one of its files has): the file on the prefix, or,
    /// for a file inside a container, its copy in this rank's cache. Checked against the
    /// size and CRC32 recorded at the flush the first time.
    pub(super) fn route(
        &mut self,
        prefix: &Path,
        cache: &mut CacheManager,
        id: u64,
        ranks: u64,
        rel: Option<&str>,
        name: &str,
    ) -> Result<PathBuf> {
        let base = Path::new(name).file_name().map(|n| n.to_string_lossy());
        let record = match self.files.iter().find(|f| Some(f.name.as_str()) == rel) {
            Some(f) => f,
            None => {
                let same_name: Vec<&FileRecord> = self
                    .files
                    .iter()
                    .filter(|f| {
                        base.is_some()
                            && Path::new(&f.name).file_name().map(|n| n.to_string_lossy()) == base
                    })
                    .collect();
                match same_name[..] {
                    [one] => one,
                    [] => {
                        return Err(failure(format!(
                            "{name} is not part of the restart dataset"
                        )));
                    }
                    ref several => {
                        return Err(failure(format!(
                            "{name} matches {} files of the restart dataset; route it by its \
                             path relative to the prefix",
                            several.len()
                        )));
                    }
                }
            }
        };
        let on_prefix = prefix.join(&record.name);
        let first_time = !self.checked.contains(&record.name);
        let path = if record.segments.is_empty() {
            if first_time {
                check_in_place(prefix, record)?;
            }
            on_prefix
        } else {
            let dst = cache.dataset_dir(id).join(&record.name);
            if first_time {
                extract(prefix, cache, id, ranks, record, &dst)?;
            }
            dst
        };
        self.checked.insert(record.name.clone());
        Ok(path)
    }
}

/// Checks a file on the prefix against what the flush recorded (through directory
/// handles: every directory on the way and the file this user's).
fn check_in_place(prefix: &Path, record: &FileRecord) -> Result<()> {
    let path = prefix.join(&record.name);
    let beneath = safe_fs::Beneath::open(prefix)?;
    let file = open_as_recorded(&beneath, record).map_err(|e| e.blaming(prefix))?;
    if let Some(want) = record.crc {
        let got = io::open_file_crc32(&path, &file)?;
        if got != want {
            return Err(Error::corrupt(format!(
                "CRC32 mismatch detected when restarting from {}: it has {}, the flush recorded {}",
                path.display(),
                scr::hash::format_crc32(got),
                scr::hash::format_crc32(want)
            )));
        }
    }
    Ok(())
}

/// Copies a file out of its containers into this rank's cache (recorded in its filemap
/// first) and checks it against what the flush recorded. The node's ranks share the
/// dataset's cache directory, and several may route the same file at once: each copies it
/// into a file of its own (below `.scr`, a name no application file can have) and renames
/// it into place once checked, so the path routed only ever holds a whole, checked file,
/// and a rank reading it is never cut short by another's copy.
fn extract(
    prefix: &Path,
    cache: &mut CacheManager,
    id: u64,
    ranks: u64,
    record: &FileRecord,
    dst: &Path,
) -> Result<()> {
    let base = Path::new(&record.name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = prefix
        .join(&record.name)
        .parent()
        .unwrap_or(prefix)
        .to_string_lossy()
        .into_owned();
    let mut meta = Meta::for_user_file(&base, ranks, &record.name, &dir, &base);
    let key = dst.to_string_lossy().into_owned();
    cache.record_file(id, &key, &meta)?;
    let dataset_dir = cache.dataset_dir(id);
    let rank = cache.rank();
    let part = dataset_dir
        .join(layout::HIDDEN)
        .join(format!("extracting.rank{rank}"));
    let part_key = part.to_string_lossy().into_owned();
    // recorded too, so that what a rank killed while copying leaves goes with the dataset
    cache.record_file(id, &part_key, &meta)?;
    let beneath = safe_fs::Beneath::open(prefix)?;
    let copied = container::read_file(&beneath, &record.segments, &part, 1 << 20)
        .map_err(|e| e.blaming(prefix));
    let (size, crc) = match copied {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    if size != record.size || record.crc.is_some_and(|want| want != crc) {
        let _ = std::fs::remove_file(&part);
        return Err(Error::corrupt(format!(
            "{} from its containers: {size} bytes and CRC32 {}, the flush recorded {} bytes{}",
            record.name,
            scr::hash::format_crc32(crc),
            record.size,
            record
                .crc
                .map(|c| format!(" and CRC32 {}", scr::hash::format_crc32(c)))
                .unwrap_or_default()
        )));
    }
    if let Some(parent) = dst.parent() {
        safe_fs::create_dirs_in(&dataset_dir, parent, 0o700)?;
    }
    std::fs::rename(&part, dst).map_err(|e| Error::io(dst, "rename into place", e))?;
    cache.filemap.remove_file(id, rank, &part_key);
    meta.set_size(size);
    meta.set_crc32(crc);
    meta.set_complete(true);
    cache.filemap.set_meta(id, rank, &key, &meta);
    cache.write()
}

/// Checks that every file of a reshaped restart is on the prefix with its recorded size,
/// the files shared out over the ranks (a file inside a container is checked when it is
/// routed). This rank's outcome; the caller agrees on it.
pub(super) fn check_files(job: &Job, prefix: &Path, files: &[FileRecord]) -> Result<()> {
    let beneath = safe_fs::Beneath::open(prefix).map_err(|e| e.blaming(prefix))?;
    for record in files
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 % job.ranks == job.rank)
        .map(|(_, r)| r)
        .filter(|r| r.segments.is_empty())
    {
        open_as_recorded(&beneath, record).map_err(|e| e.blaming(prefix))?;
    }
    Ok(())
}

/// The newest checkpoint this node's filemaps record that was written by a job of `ranks`
/// ranks (`same`), and by a job of another size (`other`); 0 for none.
fn newest_by_shape(cntl_dir: &Path, ranks: u64) -> (u64, u64) {
    let Ok(master) = MasterFilemap::read(&layout::master_filemap(cntl_dir)) else {
        return (0, 0);
    };
    let (mut same, mut other) = (0, 0);
    for path in master.filemaps() {
        let Ok(map) = Filemap::read(Path::new(path)) else {
            continue;
        };
        for rank in map.ranks() {
            for d in map.datasets_of_rank(rank) {
                if !map.dataset(d, rank).is_some_and(|x| x.is_checkpoint()) {
                    continue;
                }
                let written_by = map
                    .files(d, rank)
                    .into_iter()
                    .find_map(|f| map.meta(d, rank, f)?.ranks());
                match written_by {
                    Some(n) if n != ranks => other = other.max(d),
                    Some(_) => same = same.max(d),
                    None => {}
                }
            }
        }
    }
    (same, other)
}

/// SCR_Init of a job whose nodes cache a newer checkpoint than any of its own size, written
/// by a job of another number of ranks (it lost nodes and has no spare, or it grew): the
/// node masters copy their nodes' files of it to the prefix (partners' copies of nodes this
/// job does not have too), and rank 0 rebuilds what is missing from parity and publishes
/// it, newest first, until one is complete. Returns whether the cache of the other size
/// can go: one was drained, or the prefix has every checkpoint it holds already. Collective.
pub(super) fn drain_cache_of_another_shape(
    job: &Job,
    cntl_dir: &Path,
    prefix: &PrefixStore,
    buf_size: usize,
) -> Result<bool> {
    let master = job.local_rank == 0;
    let (same, other) = if master {
        newest_by_shape(cntl_dir, job.ranks)
    } else {
        (0, 0)
    };
    let (same, other) = (job.max(same), job.max(other));
    if other <= same {
        return Ok(false);
    }
    // rank 0's plan: the checkpoints only in cache, newest first, newer than the prefix's
    // (none when the prefix cannot say what it holds: then the cache stays as it is)
    let plan = if job.is_root() {
        DrainPlan::read(prefix.path()).ok().flatten()
    } else {
        None
    };
    if !job.root_decides(plan.is_some()) {
        return Ok(false);
    }
    let candidates: Vec<u8> = plan
        .map(|plan| {
            plan.checkpoints
                .into_iter()
                .filter(|&d| d > same)
                .flat_map(u64::to_le_bytes)
                .collect()
        })
        .unwrap_or_default();
    let candidates: Vec<u64> = comm::bcast_bytes(job.world(), 0, candidates)
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if candidates.is_empty() {
        // every checkpoint it holds is on the prefix already
        return Ok(true);
    }
    if job.is_root() {
        say!(
            "SCR: this job has {} ranks; its nodes cache checkpoint data written by a job of another \
             size: draining it to the prefix first, to restart from there",
            job.ranks
        );
    }
    let masters = job.across();
    // the newest only: were it left behind for an older one, what this job writes next
    // would supersede it while its files still sit on the other nodes
    if let Some(&id) = candidates.first() {
        let opts = CopyOptions {
            buf_size,
            failed_owners: Vec::new(),
        };
        // (a node that never cached anything, new to this job, has nothing to copy)
        let cached_here = master && layout::master_filemap(cntl_dir).exists();
        let first = if cached_here {
            Some(copy_node(cntl_dir, id, prefix.path(), &opts, &mut |_| {}))
        } else {
            None
        };
        let mut partners = Vec::new();
        if let Some(report) = &first {
            match report {
                Ok(r) => {
                    partners = r.partners.clone();
                    for e in &r.errors {
                        say!(
                            "SCR: WARNING: rank {}: draining dataset {id}: {e}",
                            job.rank
                        );
                    }
                }
                Err(e) => say!(
                    "SCR: WARNING: rank {}: draining dataset {id}: {e}",
                    job.rank
                ),
            }
        }
        // partners' copies of nodes this job does not run on (their own files are lost)
        let failed_owners = if master {
            let names = comm::allgather_bytes(masters, job.node.name().as_bytes());
            let here: HashSet<String> = names
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            let held: Vec<String> = partners.into_iter().filter(|p| !here.contains(p)).collect();
            let all = comm::allgather_bytes(masters, held.join("\n").as_bytes());
            let mut failed: Vec<String> = all
                .iter()
                .flat_map(|b| {
                    String::from_utf8_lossy(b)
                        .lines()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter(|l| !l.is_empty())
                .collect();
            failed.sort();
            failed.dedup();
            failed
        } else {
            Vec::new()
        };
        if cached_here && !failed_owners.is_empty() {
            let opts = CopyOptions {
                buf_size,
                failed_owners,
            };
            if let Err(e) = copy_node(cntl_dir, id, prefix.path(), &opts, &mut |_| {}) {
                say!(
                    "SCR: WARNING: rank {}: draining partners' copies of dataset {id}: {e}",
                    job.rank
                );
            }
        }
        job.barrier();
        let complete = if job.is_root() {
            match index_dataset(prefix.path(), id, buf_size) {
                Ok(report) => {
                    if !report.rebuilt.is_empty() {
                        say!(
                            "SCR: rebuilt the files of ranks {:?} of dataset {id} from parity on the prefix",
                            report.rebuilt
                        );
                    }
                    for w in &report.warnings {
                        say!("SCR: WARNING: {w}");
                    }
                    if report.complete {
                        say!("SCR: dataset {id} `{}' drained to the prefix", report.name);
                    } else {
                        say!(
                            "SCR: dataset {id} `{}' could not be drained whole (ranks {:?} missing)",
                            report.name,
                            report.missing
                        );
                    }
                    report.complete
                }
                Err(e) => {
                    say!("SCR: WARNING: indexing dataset {id} drained to the prefix: {e}");
                    false
                }
            }
        } else {
            false
        };
        if job.root_decides(complete) {
            return Ok(true);
        }
        let why = format!(
            "the cache holds checkpoint data (dataset {id}) of a job of another size, newer \
             than any checkpoint of {} ranks, and this job could not drain it to {} whole (the \
             nodes with the missing ranks' files are not among its nodes, or are lost): to \
             keep it, run this job on those nodes too, or drain it with `scr postrun` first; \
             if it is lost for good, remove this job's cache and control directories (`scr \
             list-dir` names them) to go on from the prefix's newest checkpoint",
            job.ranks,
            prefix.path().display()
        );
        if job.is_root() {
            say!("SCR: ERROR: {why}");
        }
        return Err(scr::Error::collective(why));
    }
    Ok(false)
}
