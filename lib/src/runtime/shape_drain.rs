//! SCR_Init's drain of a cache written by a job of another number of ranks (it lost nodes
//! and has no spare, or it grew): each rank's files belong to a rank this job may not have,
//! so nothing of it can be handed back rank by rank. The node masters copy what their
//! nodes hold to the prefix and rank 0 rebuilds what a lost node took from parity and
//! publishes it, as `scr postrun` would between jobs; the restart is then served from the
//! prefix (`super::reshape`).
//!
//! What is drained is decided from what the caches themselves record (each node's filemaps)
//! together with the prefix's flush file and index: `scr prerun` removes the flush file
//! between jobs, and the cache still holds what only it has.

use super::job::Job;
use super::prefix_store::PrefixStore;
use crate::comm;
use scr::dataset::Dataset;
use scr::hash::Hash;
use scr::scavenge::{
    CachedOnNode, CopyOptions, DrainPlan, cached_on_node, copy_node, index_dataset,
};
use scr::{Error, HashView, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// What every node caches, as rank 0 learns it: each dataset's descriptor and whether a
/// job of another size wrote it.
struct Cached {
    datasets: BTreeMap<u64, (Dataset, bool)>,
}

impl Cached {
    /// This node's datasets of this job's prefix (a cache another program's prefix owns is
    /// not this drain's), packed for rank 0.
    fn pack(node: Option<&CachedOnNode>, prefix: &Path, ranks: u64) -> Vec<u8> {
        let mut h = Hash::new();
        for (desc, writers) in node
            .filter(|n| n.belongs_to(prefix))
            .into_iter()
            .flat_map(|n| &n.datasets)
        {
            let (Some(id), Some(writers)) = (desc.id(), writers) else {
                continue;
            };
            let entry = h.child(id.to_string());
            entry.set("DSET", desc.hash().clone());
            entry.set_value("OTHER", u8::from(*writers != ranks));
        }
        h.pack()
    }

    /// Every node's datasets, on rank 0 (empty elsewhere). Collective.
    fn gather(job: &Job, node: Option<&CachedOnNode>, prefix: &Path) -> Cached {
        let mine = Cached::pack(node, prefix, job.ranks);
        let mut datasets: BTreeMap<u64, (Dataset, bool)> = BTreeMap::new();
        for bytes in comm::gather_bytes(job.world(), 0, &mine) {
            let Ok(h) = Hash::unpack(&bytes) else {
                continue;
            };
            for (id, entry) in h.iter() {
                let (Ok(id), Some(desc)) = (id.parse::<u64>(), entry.get("DSET")) else {
                    continue;
                };
                let other = entry.first_value("OTHER") == Some("1");
                let desc = Dataset::wrap(desc.clone());
                let known = datasets.entry(id).or_insert_with(|| (desc.clone(), other));
                known.1 |= other;
                // one node's record of an incomplete dataset makes it incomplete
                if !desc.is_complete() {
                    known.0 = desc;
                }
            }
        }
        Cached { datasets }
    }

    /// The newest checkpoint written by a job of this size (`same`) and by one of another
    /// (`other`); 0 for none.
    fn newest_by_shape(&self) -> (u64, u64) {
        let newest = |other: bool| {
            self.datasets
                .iter()
                .filter(|(_, (d, o))| d.is_checkpoint() && *o == other)
                .map(|(&id, _)| id)
                .max()
                .unwrap_or(0)
        };
        (newest(false), newest(true))
    }

    fn written_by_another_size(&self, id: u64) -> bool {
        self.datasets.get(&id).is_some_and(|(_, other)| *other)
    }
}

/// SCR_Init of a job whose nodes cache a newer checkpoint than any of its own size, written
/// by a job of another number of ranks: first the output datasets of that size only in
/// cache, oldest first (each one complete on the prefix, or named as not complete: what
/// this job's nodes held of it is on the prefix, the rest is for `scr postrun` on the
/// nodes that hold it), then the newest checkpoint. Returns
/// whether the cache of the other size can go: its newest checkpoint was drained, or the
/// prefix has every checkpoint it holds already. A checkpoint that cannot be drained whole
/// stops the job (its nodes may hold the rest). Collective.
pub(super) fn drain_cache_of_another_shape(
    job: &Job,
    cntl_dir: &Path,
    prefix: &PrefixStore,
    buf_size: usize,
) -> Result<bool> {
    let master = job.local_rank == 0;
    let node = if master {
        cached_on_node(cntl_dir)
    } else {
        None
    };
    let cached = Cached::gather(job, node.as_ref(), prefix.path());
    let (same, other) = if job.is_root() {
        cached.newest_by_shape()
    } else {
        (0, 0)
    };
    if !job.root_decides(other > same) {
        return Ok(false);
    }
    // rank 0's plan: what is only in cache, by the flush file and by what the caches
    // record (none when the prefix cannot say what it holds: then the cache stays as it is)
    let plan = if job.is_root() {
        let descs: Vec<Dataset> = cached.datasets.values().map(|(d, _)| d.clone()).collect();
        DrainPlan::read_with_cached(prefix.path(), &descs)
            .ok()
            .flatten()
    } else {
        None
    };
    if !job.root_decides(plan.is_some()) {
        return Ok(false);
    }
    let plan = plan.unwrap_or_default();
    // outputs of the other size, oldest first, then the newest checkpoint of it: were it
    // left behind for an older one, what this job writes next would supersede it while its
    // files still sit on the other nodes
    let outputs: Vec<u64> = plan
        .outputs
        .iter()
        .copied()
        .filter(|&d| cached.written_by_another_size(d))
        .collect();
    // (one these nodes hold: the flush file is the prefix's, and names what other jobs
    // sharing the prefix left in their own nodes' caches too)
    let checkpoint: Vec<u64> = plan
        .checkpoints
        .iter()
        .copied()
        .filter(|&d| d > same && cached.written_by_another_size(d))
        .take(1)
        .collect();
    let order = [outputs, checkpoint].concat();
    let order = comm::bcast_bytes(
        job.world(),
        0,
        order.iter().flat_map(|d| d.to_le_bytes()).collect(),
    );
    let order: Vec<u64> = order
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if order.is_empty() {
        // every dataset it holds is on the prefix already
        return Ok(true);
    }
    if job.is_root() {
        say!(
            "SCR: this job has {} ranks; its nodes cache data written by a job of another size: \
             draining it to the prefix first, to restart from there",
            job.ranks
        );
    }
    let cached_here = node.as_ref().is_some_and(|n| n.belongs_to(prefix.path()));
    for id in order {
        let is_output = job.is_root() && plan.outputs.contains(&id);
        let is_output = job.root_decides(is_output);
        let complete = drain_one(job, cntl_dir, prefix.path(), id, buf_size, cached_here);
        if complete {
            continue;
        }
        if is_output {
            if job.is_root() {
                say!(
                    "SCR: WARNING: output dataset {id} `{}' of the job of another size could not \
                     be completed from this job's nodes: what they held of it is on the prefix \
                     now, and `scr postrun` completes it if the nodes this job does not run on \
                     still hold the rest; else it is lost",
                    plan.name(id)
                );
            }
            continue;
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
        // rank 0 stops the job saying why, once; the others wait for it
        return Err(if job.is_root() {
            Error::refused(why)
        } else {
            scr::Error::collective(format!(
                "rank 0 could not drain dataset {id} of the job of another size (it says why)"
            ))
        });
    }
    Ok(true)
}

/// Dataset `id` copied from every node's cache to the prefix (partners' copies of nodes
/// this job does not run on too), rebuilt from parity where a member is missing, and
/// indexed; whether it is complete there, as rank 0 found. Collective.
fn drain_one(
    job: &Job,
    cntl_dir: &Path,
    prefix: &Path,
    id: u64,
    buf_size: usize,
    cached_here: bool,
) -> bool {
    let master = job.local_rank == 0;
    let masters = job.across();
    let opts = CopyOptions {
        buf_size,
        failed_owners: Vec::new(),
    };
    // (a node that never cached anything, new to this job, has nothing to copy)
    let first = cached_here.then(|| copy_node(cntl_dir, id, prefix, &opts, &mut |_| {}));
    let mut partners = Vec::new();
    match &first {
        Some(Ok(r)) => {
            partners = r.partners.clone();
            for e in &r.errors {
                say!(
                    "SCR: WARNING: rank {}: draining dataset {id}: {e}",
                    job.rank
                );
            }
        }
        Some(Err(e)) => say!(
            "SCR: WARNING: rank {}: draining dataset {id}: {e}",
            job.rank
        ),
        None => {}
    }
    // partners' copies of nodes this job does not run on (their own files are lost), or
    // that it runs on but that copied nothing of their own (a node back with an empty cache)
    let failed_owners = if master {
        let copied_own = matches!(&first, Some(Ok(r)) if !r.ranks.is_empty());
        let name = if copied_own { job.node.name() } else { "" };
        let names = comm::allgather_bytes(masters, name.as_bytes());
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
        if let Err(e) = copy_node(cntl_dir, id, prefix, &opts, &mut |_| {}) {
            say!(
                "SCR: WARNING: rank {}: draining partners' copies of dataset {id}: {e}",
                job.rank
            );
        }
    }
    job.barrier();
    let complete = if job.is_root() {
        match index_dataset(prefix, id, buf_size) {
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
                if let Some(why) = &report.kept_for_newer {
                    say!(
                        "SCR: dataset {id} `{}' is not put on the prefix: {why}",
                        report.name
                    );
                } else if report.complete {
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
    job.root_decides(complete)
}
