//! The node's cache as SCR_Init finds it: the filemaps the node's control directory lists
//! (each rank takes its own entries, the node master keeps the rest), and a cache another
//! program with the same job id left, which is refused or discarded, never restarted from.

use super::PARTNER_TAG;
use super::cache::FoundCache;
use super::job::Job;
use crate::comm;
use scr::filemap::{Filemap, MasterFilemap};
use scr::{Error, HashView, Result, io, layout, safe_fs};
use std::path::{Path, PathBuf};

/// Reads every filemap the node's control directory lists, gives each rank its own
/// entries (a partner's copy of a rank's files found where it now runs becomes its own),
/// writes the ranks' filemaps, and (node master) keeps the rest as the held filemap and
/// writes the master filemap. Collective over the node (this rank's outcome: the caller
/// agrees on it).
pub(super) fn load_filemaps(job: &Job, cntl_dir: &Path, prefix: &Path) -> Result<FoundCache> {
    let (node, rank, local_rank) = (job.node_comm(), job.rank, job.local_rank);
    // this rank's filemap: entries for this world rank from every filemap on the node
    let master_path = layout::master_filemap(cntl_dir);
    let mut on_node = Filemap::new(); // everything this node's filemaps record
    let warn = |what: String| {
        if local_rank == 0 {
            say!("SCR: WARNING: {what}");
        }
    };
    let listed: Vec<PathBuf> = match MasterFilemap::read(&master_path) {
        Ok(master) => master.filemaps().into_iter().map(PathBuf::from).collect(),
        Err(e) if e.is_not_found() => Vec::new(),
        // a damaged master filemap must not make the node forget its cache: the ranks'
        // filemaps beside it say what it would
        Err(e) => {
            warn(format!("{e}; reading the filemaps beside it instead"));
            filemaps_beside(cntl_dir)
        }
    };
    for path in listed {
        match Filemap::read(&path) {
            Ok(map) => on_node.merge_preferring_untagged(&map, PARTNER_TAG),
            Err(e) if e.is_not_found() => {}
            Err(e) => warn(format!(
                "{e}; the cached datasets it records are not restarted from (remove it, or \
                 drain the cache with scr postrun first)"
            )),
        }
    }
    let mut filemap = on_node.extract_rank(rank);
    // a partner's copy of this rank's files found where the rank now runs becomes its own
    let mut reprotect = Vec::new();
    for d in filemap.datasets() {
        if filemap.tag(d, rank, PARTNER_TAG).is_some() {
            filemap.unset_tag(d, rank, PARTNER_TAG);
            reprotect.push(d);
        }
    }
    let here = comm::allgather_u64s(node, [rank]);
    comm::relaxed_barrier(node);
    let filemap_path = layout::rank_filemap(cntl_dir, local_rank);
    // (an error waits until the node's ranks have traded their paths: they wait for this one)
    let written = filemap.write(&filemap_path);
    let mut local_paths = comm::allgather_bytes(node, filemap_path.to_string_lossy().as_bytes());
    written?;
    let mut held = None;
    if local_rank == 0 {
        for [r] in here {
            on_node.remove_rank(r);
        }
        let held_path = cntl_dir.join("filemap_held.scrinfo");
        if on_node.ranks().is_empty() {
            io::remove_durably(&held_path)?;
        } else {
            on_node.write(&held_path)?;
            local_paths.push(held_path.to_string_lossy().into_owned().into_bytes());
        }
        let mut master = MasterFilemap::new();
        master.set_prefix(prefix);
        for p in local_paths.drain(..) {
            master.add(&String::from_utf8_lossy(&p));
        }
        master.write(&master_path)?;
        held = Some((held_path, on_node));
    }
    Ok(FoundCache {
        filemap_path,
        filemap,
        held,
        reprotect,
    })
}

/// The ranks' filemaps in a control directory (`filemap_<n>.scrinfo`, and the node's
/// `filemap_held.scrinfo`), found by name.
fn filemaps_beside(cntl_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(cntl_dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("filemap_")?.strip_suffix(".scrinfo"))
                .is_some_and(|which| {
                    which == "held"
                        || (!which.is_empty() && which.bytes().all(|b| b.is_ascii_digit()))
                })
        })
        .collect();
    found.sort();
    found
}

/// Another program's cache on this node: a program that ran with the same job id and
/// another prefix left it (the prefix its master filemap records). `undrained`: it holds
/// datasets the drain of that prefix would still copy there, or that prefix cannot tell
/// (moved, not mounted, unreadable: the cache may hold the only copy).
pub(super) struct ForeignCache {
    other: PathBuf,
    undrained: bool,
}

pub(super) fn foreign_cache(cntl_dir: &Path, prefix: &Path) -> Option<ForeignCache> {
    let master = MasterFilemap::read(&layout::master_filemap(cntl_dir)).ok()?;
    let other = master.other_prefix(prefix)?.to_path_buf();
    let mut cached = Vec::new();
    for path in master.filemaps() {
        if let Ok(map) = Filemap::read(Path::new(path)) {
            cached.extend(map.datasets());
        }
    }
    // that prefix's records count only when they are the user's: a neighbour who recreates
    // a prefix that was moved away must not be able to say "all drained there"
    let trusted = safe_fs::check_prefix_mode(&other).is_ok()
        && safe_fs::is_own_dir(&layout::prefix_hidden_dir(&other));
    if !trusted {
        return Some(ForeignCache {
            other,
            undrained: !cached.is_empty(),
        });
    }
    let undrained = match scr::scavenge::DrainPlan::read(&other) {
        Ok(Some(plan)) => cached.iter().any(|&d| plan.copies(d)),
        // no record of what that program flushed: what it cached may be nowhere else
        Ok(None) | Err(_) => !cached.is_empty(),
    };
    Some(ForeignCache { other, undrained })
}

/// A cached checkpoint is only ever restarted by a job with its prefix. When a node's
/// cache is another program's (`foreign`), every rank learns it: if any such cache still
/// holds what only it has, SCR_Init fails on every rank with the reason; otherwise the
/// foreign caches are discarded (true on the ranks that must discard theirs).
/// Collective.
pub(super) fn agree_on_foreign_caches(
    job: &Job,
    cntl_dir: &Path,
    prefix: &Path,
    foreign: Option<&ForeignCache>,
) -> Result<bool> {
    if job.all(foreign.is_none()) {
        return Ok(false);
    }
    let undrained = foreign.filter(|f| f.undrained);
    if !job.all(undrained.is_none()) {
        return Err(match undrained {
            Some(f) => Error::refused(format!(
                "the cache in {} holds checkpoints of another program, whose prefix is {}, \
                 that are not on that prefix yet; this job's prefix is {}{}. Programs that \
                 run with the same job id share a cache: give this one its own SCR_JOB_ID, \
                 or drain the other first (`scr postrun -p {}` with its job id); a prefix \
                 named through a link that now names another directory restarts them once it \
                 names {} again; or, if they are not wanted, remove this job id's control \
                 and cache directories on every node (`scr list-dir` names them)",
                cntl_dir.display(),
                f.other.display(),
                prefix.display(),
                std::fs::canonicalize(prefix)
                    .ok()
                    .filter(|dir| dir != prefix)
                    .map(|dir| format!(" (the directory {})", dir.display()))
                    .unwrap_or_default(),
                f.other.display(),
                f.other.display()
            )),
            None => Error::collective(
                "another node's cache holds checkpoints of another program with this job id, \
                 not yet on its prefix (that node's ranks say which)",
            ),
        });
    }
    if let Some(f) = foreign
        && job.local_rank == 0
    {
        say!(
            "SCR: WARNING: the cache in {} held datasets of another program with this job id \
             (prefix {}), every one of them on that prefix already: discarded, not restarted from",
            cntl_dir.display(),
            f.other.display()
        );
    }
    Ok(foreign.is_some())
}
