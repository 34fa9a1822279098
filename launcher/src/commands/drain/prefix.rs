//! The drain of one prefix (`scr postrun`'s work for each prefix the job's caches record):
//! which datasets it copies and in what order, what it says of those it leaves, and each
//! dataset's copy from every node, rebuild and index.

use super::{OnFlushed, control_dir, fail, rcmd_for};
use crate::job::progress::DrainProgress;
use crate::job::{self, DownNodeQuery, drain::Scavenge};
use hostlist::HostSet;
use scr::dataset::Dataset;
use scr::params::Params;
use scr::scavenge::{self, DrainPlan, IndexReport};
use scr::{HashView, layout};
use std::path::{Path, PathBuf};

/// The drain of `prefix`, of what the flush file records and what the caches hold
/// (`cached`).
///
/// First every output dataset still in cache, oldest first: each one complete on the
/// prefix, or said to be lost by name (an output that cannot be completed is lost whatever
/// the drain does next, so it never keeps a newer checkpoint from draining). Then the
/// newest checkpoint, going to older ones when one cannot be completed, but never past a
/// checkpoint already on the prefix. A checkpoint older than the newest one on the prefix
/// is not copied at all, and publishing never makes it current. Returns false when an
/// output dataset was lost, or when every checkpoint the drain tried could not be
/// completed.
pub(super) fn drain_prefix(
    params: &Params,
    prefix: &Path,
    cached: &[Dataset],
    known_down: &HostSet,
    say: &mut dyn FnMut(&str),
    flushed: &mut OnFlushed<'_>,
) -> scr::Result<bool> {
    // a flush the job's end cut short is finished, or undone, before the index is read;
    // what one that never committed left is swept once no writer of it is alive
    for said in scr::prefix::placing::recover(prefix) {
        say(&said);
    }
    sweep_dead_flushes(prefix, say);
    let plan = DrainPlan::read_with_cached(prefix, cached)?;
    // what the caches hold and the drain leaves: a dataset a job ended while writing (a
    // restart's copy of one on the prefix is recorded as incomplete in cache too)
    let on_prefix: Vec<u64> = scr::index::IndexFile::read(&layout::index_file(prefix))
        .map(|i| {
            i.entries()
                .into_iter()
                .filter(|e| e.complete)
                .map(|e| e.id)
                .collect()
        })
        .unwrap_or_default();
    let mut unfinished: Vec<(u64, &str)> = cached
        .iter()
        .filter(|d| !d.is_complete())
        .filter_map(|d| Some((d.id()?, d.name().unwrap_or("?"))))
        .filter(|(id, _)| {
            !plan
                .as_ref()
                .is_some_and(|p| p.copies(*id) || p.abandoned.iter().any(|(a, _)| a == id))
                && !on_prefix.contains(id)
        })
        .collect();
    unfinished.sort_unstable();
    unfinished.dedup_by_key(|(id, _)| *id);
    for &(id, name) in &unfinished {
        say(&format!(
            "dataset {id} ({name}) in cache was never completed (a job ended while writing \
             it): not drained"
        ));
    }
    let Some(plan) = plan else {
        say(if unfinished.is_empty() {
            "no flush file and no dataset in cache: nothing to drain"
        } else {
            "no completed dataset only in cache: nothing to drain"
        });
        return Ok(true);
    };
    let flush_name = |id: u64| plan.name(id).to_string();
    for &id in &plan.dropped {
        let name = flush_name(id);
        say(&format!(
            "dataset {id} ({name}) was flushed and dropped from the index since: its copy in \
             cache is not drained again (`scr index --add {name}` indexes the flushed one)"
        ));
    }
    for &(id, by) in &plan.abandoned {
        let how = if plan.name(id) == plan.name(by) {
            "flushed under its name after it"
        } else {
            "written after a restart from an older checkpoint"
        };
        say(&format!(
            "dataset {id} ({}) is of an abandoned timeline: dataset {by} ({}) was {how}; it \
             stays in cache, not drained",
            flush_name(id),
            flush_name(by)
        ));
    }
    if let Some((newest_id, newest)) = &plan.newest_on_prefix {
        // (an output that is a checkpoint too is drained as output; the datasets are named
        // by id too, as a name written again names both)
        for &id in plan.superseded.iter().filter(|d| !plan.outputs.contains(d)) {
            say(&format!(
                "dataset {id} ({}) is older than dataset {newest_id} ({newest}), the newest \
                 checkpoint on the prefix: not drained",
                flush_name(id)
            ));
        }
    }
    // SCR v3.1's words where its walk down the checkpoints reaches one already flushed
    let say_already_flushed = |say: &mut dyn FnMut(&str)| {
        if let Some(id) = plan.already_flushed {
            say(&format!(
                "Checkpoint dataset {id} ({}) has already been flushed",
                flush_name(id)
            ));
        }
    };
    if plan.is_empty() {
        say_already_flushed(say);
        let skipped: Vec<String> = plan
            .superseded
            .iter()
            .filter(|d| !plan.outputs.contains(d))
            .map(|&id| flush_name(id))
            .collect();
        match &plan.newest_on_prefix {
            Some((_, newest)) if !skipped.is_empty() => say(&format!(
                "nothing newer than {newest} to drain: the caches' older checkpoints ({}) stay \
                 there, as a drain never replaces the newest checkpoint on the prefix with an \
                 older one",
                skipped.join(", ")
            )),
            _ if !plan.abandoned.is_empty() || !plan.dropped.is_empty() => {
                say("nothing else to drain")
            }
            _ => say("every dataset is on the prefix: nothing to drain"),
        }
        return Ok(true);
    }
    let mut drain = Drain::new(params, prefix, known_down, cached)?;
    let mut drained = Vec::new();
    let mut lost_outputs = Vec::new();
    for &id in &plan.outputs {
        match drain.dataset(id, &flush_name(id), say, flushed) {
            Drained::Complete => drained.push(id),
            Drained::Incomplete => lost_outputs.push(id),
            // (said: a newer dataset's files are at its places, and the cache keeps it)
            Drained::KeptForNewer => {}
        }
    }
    // whether every checkpoint this drain tried to copy could not be completed
    let mut checkpoint_lost = false;
    for &id in &plan.checkpoints {
        if drained.contains(&id) {
            checkpoint_lost = false;
            break;
        }
        checkpoint_lost = drain.dataset(id, &flush_name(id), say, flushed) != Drained::Complete;
        if !checkpoint_lost {
            break;
        }
    }
    if plan.checkpoints.is_empty() || checkpoint_lost {
        say_already_flushed(say);
    }
    // what a restart does about each lost output: it writes it again only when it goes
    // back to before it
    let restart = newest_checkpoint_on_prefix(prefix).ok().flatten();
    for &id in &lost_outputs {
        let next = match &restart {
            Some((c, name)) if *c > id => format!(
                "the next job restarts from {name}, written after it, so it is not written again"
            ),
            Some((_, name)) => format!(
                "the next job restarts from {name}, written before it, and writes it again \
                 when it gets that far"
            ),
            None => "no checkpoint is on the prefix: the next job starts from the beginning \
                     and writes it again when it gets that far"
                .to_string(),
        };
        say(&format!(
            "output dataset {id} ({}) is lost: not all of its files are left in cache; {next}",
            flush_name(id)
        ));
    }
    Ok(!checkpoint_lost && lost_outputs.is_empty())
}

/// Removes what the flushes the flush file calls FLUSHING left on `prefix` where no
/// writer of them is alive any more ([`scr::prefix::writing::sweep_dead_flushes`]).
fn sweep_dead_flushes(prefix: &Path, say: &mut dyn FnMut(&str)) {
    let Ok(flush) = scr::flush::FlushFile::read(&layout::flush_file(prefix)) else {
        return;
    };
    let interrupted: Vec<u64> = flush
        .datasets()
        .into_iter()
        .filter(|&d| flush.has_location(d, scr::flush::Location::Flushing))
        .collect();
    if interrupted.is_empty() {
        return;
    }
    match scr::prefix::writing::sweep_dead_flushes(prefix, &interrupted) {
        Ok((swept, _)) => {
            for id in swept {
                say(&format!(
                    "the flush of dataset {id} ({}) was cut short: what it left on the prefix \
                     is removed",
                    flush.name(id).unwrap_or("?")
                ));
            }
        }
        Err(e) => say(&format!("what a flush cut short left stays: {e}")),
    }
}

/// The newest checkpoint a restart could load from the prefix (id, name).
fn newest_checkpoint_on_prefix(prefix: &Path) -> scr::Result<Option<(u64, String)>> {
    match scr::index::IndexFile::read(&layout::index_file(prefix)) {
        Ok(index) => Ok(index.newest_usable_checkpoint().map(|e| (e.id, e.name))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// What draining one dataset came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drained {
    /// Complete on the prefix.
    Complete,
    /// Not all of it could be copied or rebuilt.
    Incomplete,
    /// Whole, but a newer dataset on the prefix has files at its places: not placed, it
    /// stays in cache.
    KeptForNewer,
}

/// What draining one dataset needs: the nodes up and down, the control directory, and
/// what the caches record of each dataset (its size, for the event logs).
struct Drain<'a> {
    prefix: &'a Path,
    cached: &'a [Dataset],
    rm: Box<dyn job::ResourceManager>,
    up: HostSet,
    down: HostSet,
    cntl: PathBuf,
    buf_size: usize,
}

impl<'a> Drain<'a> {
    fn new(
        params: &Params,
        prefix: &'a Path,
        known_down: &HostSet,
        cached: &'a [Dataset],
    ) -> scr::Result<Self> {
        let rm = job::detect_resource_manager();
        let nodes = rm.nodes().map_err(fail)?;
        let exclude = crate::commands::excluded_nodes(params)?;
        let down_list = job::list_down_nodes(&DownNodeQuery {
            resource_manager: rm.as_ref(),
            nodes: nodes.clone(),
            known_down: known_down.clone(),
            exclude,
            node_check: None,
        });
        let down = HostSet::from_names(down_list.iter().map(|d| d.node.as_str()));
        let up = nodes.difference(&down);
        let cntl = control_dir(params, &crate::commands::job_id(params))?;
        let buf_size = params.typed().buffers.file;
        Ok(Drain {
            prefix,
            cached,
            rm,
            up,
            down,
            cntl,
            buf_size,
        })
    }

    /// The event logs' fields of dataset `id` drained since `started`: its size as the
    /// caches record it (what the library's flush of it would have logged), else the bytes
    /// the nodes copied.
    fn flush_event(
        &self,
        id: u64,
        name: &str,
        copied: u64,
        started: std::time::Instant,
    ) -> Vec<(&'static str, String)> {
        let desc = self.cached.iter().find(|d| d.id() == Some(id));
        let bytes = desc.and_then(Dataset::size).unwrap_or(copied);
        let mut fields = vec![("name", name.to_string()), ("dset", id.to_string())];
        fields.extend(scr::event_log::timing(
            bytes,
            started.elapsed().as_secs_f64(),
        ));
        if let Some(files) = desc.and_then(Dataset::files) {
            fields.push(("files", files.to_string()));
        }
        fields.push(("drain", "1".to_string()));
        fields
    }

    /// When no resource manager named the nodes and SCR_NODELIST did not either, only this
    /// machine was drained: how to name the job's nodes (emulated ones especially, whose
    /// names only mpiexec's `-hosts` gave). Empty otherwise.
    fn nodes_hint(&self) -> String {
        if self.rm.name() != "local" || std::env::var_os("SCR_NODELIST").is_some() {
            return String::new();
        }
        format!(
            "; no resource manager names the job's nodes here, so only this machine ({}) was \
             drained: set SCR_NODELIST to the nodes the job ran on (for emulated nodes, the \
             names given to mpiexec -hosts) and run scr postrun again",
            self.up
        )
    }

    /// Copies dataset `id` from every node up, rebuilds what lost nodes held and indexes
    /// it; one drained complete is a flush to the event logs (`flushed`).
    fn dataset(
        &mut self,
        id: u64,
        name: &str,
        say: &mut dyn FnMut(&str),
        flushed: &mut OnFlushed<'_>,
    ) -> Drained {
        let started = std::time::Instant::now();
        let (up, down) = (&self.up, &self.down);
        say(&format!(
            "draining dataset {id} ({name}) from {} node(s){}",
            up.count(),
            if down.is_empty() {
                String::new()
            } else {
                format!(" ({down} down)")
            }
        ));
        let run = Scavenge {
            cntl_dir: &self.cntl,
            prefix: self.prefix,
            id,
            buf_size: self.buf_size,
            rcmd: rcmd_for(self.rm.as_ref()),
            fanout: 256,
        };
        // the progress display names each node that failed, and why
        let mut progress = DrainProgress::new("scr_postrun", up.count() as usize);
        run.run(up, down, &mut progress);
        let copied = progress.finish();
        let indexed = scavenge::index_dataset(self.prefix, id, self.buf_size);
        if let Ok(report) = &indexed {
            for w in &report.warnings {
                say(&format!("WARNING: {w}"));
            }
        }
        match indexed {
            Ok(report) if report.complete => {
                let rebuilt = if report.rebuilt.is_empty() {
                    String::new()
                } else {
                    format!(", ranks {:?} rebuilt from parity", report.rebuilt)
                };
                let current = newest_checkpoint_on_prefix(self.prefix)
                    .ok()
                    .flatten()
                    .is_some_and(|(n, _)| n == id);
                say(&format!(
                    "dataset {id} ({}) drained{}{rebuilt}",
                    report.name,
                    if current { " and current" } else { "" }
                ));
                flushed(
                    self.prefix,
                    &self.flush_event(id, &report.name, copied, started),
                );
                Drained::Complete
            }
            Ok(IndexReport {
                name,
                kept_for_newer: Some(why),
                ..
            }) => {
                say(&format!(
                    "dataset {id} ({name}) is not put on the prefix: {why}; it stays in cache"
                ));
                Drained::KeptForNewer
            }
            Ok(report) => {
                say(&format!(
                    "dataset {id} ({}) cannot be completed: ranks {:?} missing{}",
                    report.name,
                    report.missing,
                    self.nodes_hint()
                ));
                Drained::Incomplete
            }
            Err(e) => {
                say(&format!("dataset {id}: {e}{}", self.nodes_hint()));
                Drained::Incomplete
            }
        }
    }
}
