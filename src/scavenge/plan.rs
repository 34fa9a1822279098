//! Which datasets the drain copies after a job, as SCR v3's `scr_postrun` chooses them:
//! every output dataset still only in cache, oldest first, then the checkpoints only in
//! cache that are newer than every checkpoint on the prefix, newest first. A checkpoint
//! older than one the prefix already has is superseded: copying it could only offer an
//! older restart. A dataset of an abandoned timeline is never copied: one a newer dataset of
//! its name is flushed after (its files on the prefix are that one's), or a checkpoint a
//! later restart went back to before (checkpoint ids count on from the checkpoint a restart
//! loaded, dataset ids only grow: a checkpoint whose id is no more than the one before it
//! starts a restart's timeline).

use crate::dataset::Dataset;
use crate::filemap::{Filemap, MasterFilemap};
use crate::flush::{FlushFile, Location};
use crate::index::IndexFile;
use crate::view::HashView;
use crate::{Result, layout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a drain of one prefix has to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainPlan {
    /// Output datasets only in cache, oldest first.
    pub outputs: Vec<u64>,
    /// Checkpoints only in cache and newer than any on the prefix, newest first: the drain
    /// copies the first it can complete.
    pub checkpoints: Vec<u64>,
    /// Checkpoints only in cache that a newer one on the prefix supersedes.
    pub superseded: Vec<u64>,
    /// Datasets only in cache of an abandoned timeline, each with the newer dataset that
    /// abandoned it: never copied, whether output or checkpoint.
    pub abandoned: Vec<(u64, u64)>,
    /// Datasets the caches hold that were flushed whole and dropped from the index since
    /// (`scr index --drop`, `SCR_Drop`): the user's word, which a drain does not undo.
    pub dropped: Vec<u64>,
    /// The newest checkpoint the flush file says is already on the prefix: where the
    /// drain's walk from the newest checkpoint down stops (SCR's "has already been flushed").
    pub already_flushed: Option<u64>,
    /// The newest checkpoint a restart could load from the prefix (id, name).
    pub newest_on_prefix: Option<(u64, String)>,
    /// Each dataset's name, as the flush file or the cache records it.
    pub names: BTreeMap<u64, String>,
}

impl DrainPlan {
    /// The plan for a flush file and the prefix's index (None: no index yet).
    pub fn new(flush: &FlushFile, index: Option<&IndexFile>) -> DrainPlan {
        let newest_on_prefix = index
            .and_then(IndexFile::newest_usable_checkpoint)
            .map(|e| (e.id, e.name));
        let datasets = flush.datasets();
        // (a flush a kill cut short, the only word left of a dataset no cache holds, is a
        // record of what it left on the prefix, nothing to copy)
        let only_in_cache = |d: u64| flush.needs_flush(d) && flush.has_location(d, Location::Cache);
        let known = Known::new(flush, index);
        let abandoned: Vec<(u64, u64)> = datasets
            .iter()
            .filter(|&&d| only_in_cache(d))
            .filter_map(|&d| Some((d, known.abandoner(d)?)))
            .collect();
        let is_abandoned = |d: u64| abandoned.iter().any(|(a, _)| *a == d);
        // a dataset without a checkpoint id is output, whatever wrote the flush file
        let outputs = datasets
            .iter()
            .copied()
            .filter(|&d| only_in_cache(d) && (flush.is_output(d) || !flush.is_checkpoint(d)))
            .filter(|&d| !is_abandoned(d))
            .collect();
        let mut names: BTreeMap<u64, String> = datasets
            .iter()
            .filter_map(|&d| Some((d, flush.name(d)?.to_string())))
            .collect();
        // (a dataset that abandoned one may be known to the index alone)
        for (_, by) in &abandoned {
            if let Some(name) = known.0.get(by).and_then(|k| k.name.clone()) {
                names.entry(*by).or_insert(name);
            }
        }
        let mut plan = DrainPlan {
            outputs,
            newest_on_prefix,
            names,
            ..DrainPlan::default()
        };
        let mut superseded = false;
        for &d in datasets
            .iter()
            .rev()
            .filter(|&&d| flush.is_checkpoint(d) && !is_abandoned(d))
        {
            let on_prefix_is_newer = plan.newest_on_prefix.as_ref().is_some_and(|(n, _)| d <= *n);
            // a newer checkpoint already on the prefix supersedes every older one
            superseded |= !flush.needs_flush(d) || on_prefix_is_newer;
            if !flush.needs_flush(d) {
                plan.already_flushed.get_or_insert(d);
                continue;
            }
            if !only_in_cache(d) {
                continue;
            }
            if superseded {
                plan.superseded.push(d);
            } else {
                plan.checkpoints.push(d);
            }
        }
        plan.abandoned = abandoned;
        plan
    }

    /// The plan for the drain of `prefix`; None when it has no flush file (nothing was
    /// recorded there).
    pub fn read(prefix: &Path) -> Result<Option<DrainPlan>> {
        DrainPlan::read_with_cached(prefix, &[])
    }

    /// The plan for the drain of `prefix` of what the job's caches hold: `cached` are the
    /// datasets their filemaps record ([`cached_on_node`]). The flush file says what each
    /// dataset it lists is and where; a cached dataset it does not list (`scr prerun`
    /// removed it, or a full prefix could not take the entry) and that every record of it
    /// says was completed counts as only in cache unless the index has it complete, so a dataset only the caches hold is never left
    /// behind for want of the flush file's word. None when there is neither a flush file
    /// nor such a dataset.
    pub fn read_with_cached(prefix: &Path, cached: &[Dataset]) -> Result<Option<DrainPlan>> {
        let flush = match FlushFile::read(&layout::flush_file(prefix)) {
            Ok(f) => Some(f),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let index = match IndexFile::read(&layout::index_file(prefix)) {
            Ok(i) => Some(i),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let complete_on_prefix: Vec<u64> = index
            .iter()
            .flat_map(IndexFile::entries)
            .filter(|e| e.complete)
            .map(|e| e.id)
            .collect();
        let mut dropped = Vec::new();
        let had_flush_file = flush.is_some();
        let mut merged = flush.unwrap_or_default();
        // a dataset counts only when every rank's record of it says it was completed: one
        // a job was killed in the middle of is not the application's
        let mut complete: BTreeMap<u64, (&Dataset, bool)> = BTreeMap::new();
        for d in cached {
            let Some(id) = d.id() else { continue };
            complete.entry(id).or_insert((d, true)).1 &= d.is_complete();
        }
        let mut added = false;
        for (id, (d, _)) in complete.into_iter().filter(|(_, (_, all))| *all) {
            if complete_on_prefix.contains(&id) {
                continue;
            }
            if merged.contains(id) {
                // (the record of a flush a kill cut short, which `scr prerun` kept)
                if merged.needs_flush(id) && !merged.has_location(id, Location::Cache) {
                    merged.set_location(id, Location::Cache);
                    added = true;
                }
                continue;
            }
            // its flush committed whole (its summary is on the prefix) and the index lists
            // it no more: dropped from it
            if crate::prefix::dropped_from_index(prefix, index.as_ref(), id) {
                merged.describe_dataset(id, d);
                dropped.push(id);
                added = true;
                continue;
            }
            merged.describe_dataset(id, d);
            merged.set_location(id, Location::Cache);
            added = true;
        }
        if !had_flush_file && !added {
            return Ok(None);
        }
        let mut plan = DrainPlan::new(&merged, index.as_ref());
        plan.dropped = dropped;
        Ok(Some(plan))
    }

    /// A dataset's name as the flush file or the cache records it (`?` when neither does).
    pub fn name(&self, id: u64) -> &str {
        self.names.get(&id).map_or("?", String::as_str)
    }

    /// Nothing to copy.
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty() && self.checkpoints.is_empty()
    }

    /// Whether the drain would copy dataset `id`.
    pub fn copies(&self, id: u64) -> bool {
        self.outputs.contains(&id) || self.checkpoints.contains(&id)
    }
}

/// What the flush file and the index record of every dataset: its name, its checkpoint id,
/// and whether it is on the prefix.
struct Known(BTreeMap<u64, KnownDataset>);

#[derive(Default)]
struct KnownDataset {
    name: Option<String>,
    checkpoint_id: Option<u64>,
    flushed: bool,
}

impl Known {
    fn new(flush: &FlushFile, index: Option<&IndexFile>) -> Known {
        let mut known: BTreeMap<u64, KnownDataset> = BTreeMap::new();
        for d in flush.datasets() {
            let k = known.entry(d).or_default();
            k.name = flush.name(d).map(str::to_string);
            k.checkpoint_id = flush.checkpoint_id(d);
            k.flushed |= !flush.needs_flush(d);
        }
        for e in index.iter().flat_map(|i| i.entries()) {
            let desc = index.and_then(|i| i.dataset(e.id, &e.name));
            let k = known.entry(e.id).or_default();
            k.checkpoint_id = k
                .checkpoint_id
                .or_else(|| desc.as_ref().and_then(Dataset::checkpoint_id));
            k.flushed |= e.complete;
            k.name.get_or_insert(e.name);
        }
        Known(known)
    }

    /// The newer dataset that abandoned `d`: the oldest flushed one of its name, else the
    /// oldest restart point after it that went back to before it.
    fn abandoner(&self, d: u64) -> Option<u64> {
        let this = self.0.get(&d)?;
        let newer = || self.0.range(d + 1..);
        newer()
            .find(|(_, k)| k.flushed && k.name.is_some() && k.name == this.name)
            .map(|(id, _)| *id)
            .or_else(|| {
                let c = this.checkpoint_id?;
                self.restart_points()
                    .into_iter()
                    .find(|&(id, restarted)| id > d && restarted <= c)
                    .map(|(id, _)| id)
            })
    }

    /// The first checkpoint of each restart from an older checkpoint, with its checkpoint
    /// id: one that counts on from a checkpoint no newer than the one before it (by dataset
    /// id). A job that did not restart at all counts from 1 again; that is no restart from
    /// anything, and abandons nothing here.
    fn restart_points(&self) -> Vec<(u64, u64)> {
        let mut points = Vec::new();
        let mut before = None;
        for (&id, k) in &self.0 {
            let Some(c) = k.checkpoint_id else { continue };
            if c >= 2 && before.is_some_and(|b| c <= b) {
                points.push((id, c));
            }
            before = Some(c);
        }
        points
    }
}

/// What one node's cache holds, as its control directory records it.
#[derive(Clone, Debug, Default)]
pub struct CachedOnNode {
    /// The prefix of the job whose cache it is (its master filemap's record).
    pub prefix: Option<PathBuf>,
    /// Each dataset its filemaps record, once, with the number of ranks of the job that
    /// wrote it (None when no file records it).
    pub datasets: Vec<(Dataset, Option<u64>)>,
}

impl CachedOnNode {
    /// Whether this cache is the job's whose prefix is `prefix` (or records none): by
    /// name, or the same directory reached another way.
    pub fn belongs_to(&self, prefix: &Path) -> bool {
        self.prefix.as_deref().is_none_or(|p| {
            p.as_os_str().to_str() == Some(&*prefix.to_string_lossy())
                || crate::io::same_file(p, prefix)
        })
    }
}

/// What the node whose control directory is `cntl_dir` caches; None when it has no master
/// filemap (the job never ran there) or the directory is not the user's own.
pub fn cached_on_node(cntl_dir: &Path) -> Option<CachedOnNode> {
    crate::safe_fs::check_owned_dir(cntl_dir).ok()?;
    let master = MasterFilemap::read(&layout::master_filemap(cntl_dir)).ok()?;
    let mut found: BTreeMap<u64, (Dataset, Option<u64>)> = BTreeMap::new();
    for path in master.filemaps() {
        let Ok(map) = Filemap::read(Path::new(path)) else {
            continue;
        };
        for rank in map.ranks() {
            for d in map.datasets_of_rank(rank) {
                let Some(desc) = map.dataset(d, rank) else {
                    continue;
                };
                let writers = map
                    .files(d, rank)
                    .into_iter()
                    .find_map(|f| map.meta(d, rank, f)?.ranks());
                let entry = found.entry(d).or_insert((desc.clone(), None));
                entry.1 = entry.1.or(writers);
                // one rank's record of an incomplete dataset makes it incomplete; so does a
                // rank whose files are not all complete (its redundancy data among them):
                // the job ended before that rank's SCR_Complete_output returned
                if !desc.is_complete() || !map.has_all_files(d, rank) {
                    entry.0 = desc;
                    entry.0.set_complete(false);
                }
            }
        }
    }
    Some(CachedOnNode {
        prefix: master.prefix().map(Path::to_path_buf),
        datasets: found.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};
    use crate::flush::Location;
    use crate::summary::Summary;

    fn flush_with(entries: &[(u64, bool, bool, Location)]) -> FlushFile {
        let mut f = FlushFile::new();
        for &(id, ckpt, output, loc) in entries {
            let name = format!("d.{id}");
            let ckpt_id = ckpt.then_some(id);
            f.describe_dataset(
                id,
                &Dataset::create(id, &name, ckpt, output, &Origin::default(), ckpt_id),
            );
            f.set_location(id, loc);
        }
        f
    }

    #[test]
    fn older_checkpoints_than_the_prefix_has_are_superseded() {
        use Location::{Cache, Pfs};
        // ckpt 3 flushed, 2 only in cache, 4 and 5 only in cache, output 1 and 6 in cache
        let f = flush_with(&[
            (1, false, true, Cache),
            (2, true, false, Cache),
            (3, true, false, Pfs),
            (4, true, false, Cache),
            (5, true, true, Cache),
            (6, false, true, Pfs),
        ]);
        let plan = DrainPlan::new(&f, None);
        assert_eq!(plan.outputs, [1, 5]);
        assert_eq!(plan.checkpoints, [5, 4]);
        assert_eq!(plan.superseded, [2]);
        assert_eq!(plan.already_flushed, Some(3));
        assert!(plan.copies(4) && !plan.copies(2) && !plan.copies(3));

        // the index knows a newer checkpoint than the flush file does (it left the cache)
        let mut index = IndexFile::new();
        let d = Dataset::create(4, "d.4", true, false, &Origin::default(), Some(4));
        index.add(&d, "d.4", true);
        let plan = DrainPlan::new(&f, Some(&index));
        assert_eq!(plan.checkpoints, [5]);
        assert_eq!(plan.superseded, [4, 2]);
        assert_eq!(plan.newest_on_prefix, Some((4, "d.4".into())));

        let done = flush_with(&[(1, true, false, Pfs), (2, false, true, Pfs)]);
        assert!(DrainPlan::new(&done, None).is_empty());
        assert_eq!(DrainPlan::new(&done, None).already_flushed, Some(1));
    }

    #[test]
    fn datasets_of_an_abandoned_timeline_are_never_planned() {
        use Location::{Cache, Pfs};
        // ckpt.1 … ckpt.3 (datasets 1–3, checkpoint ids 1–3), then a restart from ckpt.2
        // wrote ckpt.3 again (dataset 4, checkpoint id 3) and output out.5 (dataset 5)
        let mut f = flush_with(&[(1, true, false, Pfs), (2, true, false, Pfs)]);
        let add = |f: &mut FlushFile, id: u64, name: &str, ckpt: Option<u64>, loc: Location| {
            let d = Dataset::create(
                id,
                name,
                ckpt.is_some(),
                ckpt.is_none(),
                &Origin::default(),
                ckpt,
            );
            f.describe_dataset(id, &d);
            f.set_location(id, loc);
        };
        add(&mut f, 3, "ckpt.3", Some(3), Cache);
        add(&mut f, 4, "ckpt.3", Some(3), Cache);
        add(&mut f, 5, "out.5", None, Cache);
        // the new ckpt.3 only in cache: the old one is no step back from it
        let plan = DrainPlan::new(&f, None);
        assert_eq!(plan.checkpoints, [4]);
        assert_eq!(plan.abandoned, [(3, 4)]);
        assert_eq!(plan.outputs, [5]);
        // an output written again, and flushed, under its name after a restart
        add(&mut f, 6, "out.5", None, Pfs);
        let plan = DrainPlan::new(&f, None);
        assert_eq!(plan.abandoned, [(3, 4), (5, 6)]);
        assert!(plan.outputs.is_empty());
        // the new ckpt.3 on the prefix, known to the index alone (the flush file forgot it)
        f.remove(4);
        let mut index = IndexFile::new();
        let d = Dataset::create(4, "ckpt.3", true, false, &Origin::default(), Some(3));
        index.add(&d, "ckpt.3", true);
        let plan = DrainPlan::new(&f, Some(&index));
        assert_eq!(plan.abandoned, [(3, 4), (5, 6)]);
        assert!(plan.is_empty() && plan.superseded.is_empty());
        assert_eq!(plan.name(4), "ckpt.3");
    }

    #[test]
    fn a_job_that_restarted_from_nothing_abandons_nothing() {
        use Location::Cache;
        // checkpoints 1 and 2 of a job, then a job that never asked for a restart: its
        // checkpoint ids count from 1 again
        let mut f = FlushFile::new();
        for (id, ckpt) in [(1, 1), (2, 2), (3, 1), (4, 2)] {
            let name = format!("c.{id}");
            let d = Dataset::create(id, &name, true, id == 1, &Origin::default(), Some(ckpt));
            f.describe_dataset(id, &d);
            f.set_location(id, Cache);
        }
        let plan = DrainPlan::new(&f, None);
        assert_eq!(plan.abandoned, []);
        assert_eq!(plan.outputs, [1]);
        assert_eq!(plan.checkpoints, [4, 3, 2, 1]);
    }

    #[test]
    fn what_the_caches_hold_is_planned_without_the_flush_file() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        let completed = |mut d: Dataset, complete: bool| {
            d.set_totals(4, 4000, complete);
            d
        };
        let ckpt = |id: u64| {
            let d = Dataset::create(
                id,
                &format!("ckpt.{id}"),
                true,
                false,
                &Origin::default(),
                Some(id),
            );
            completed(d, true)
        };
        let output = completed(
            Dataset::create(3, "out.3", false, true, &Origin::default(), None),
            true,
        );
        // a checkpoint a job was killed in the middle of: one rank's record says so
        let killed = completed(
            Dataset::create(5, "ckpt.5", true, false, &Origin::default(), Some(5)),
            false,
        );
        // nothing recorded and nothing cached: nothing to plan
        assert_eq!(DrainPlan::read_with_cached(prefix, &[]).unwrap(), None);
        // no flush file (`scr prerun` removed it): the caches' datasets the index lacks
        crate::safe_fs::create_dirs_in(prefix, &layout::prefix_hidden_dir(prefix), 0o700).unwrap();
        let mut index = IndexFile::new();
        index.add(&ckpt(1), "ckpt.1", true);
        index.write(&layout::index_file(prefix)).unwrap();
        let cached = [ckpt(1), ckpt(2), output, ckpt(4), ckpt(5), killed];
        let plan = DrainPlan::read_with_cached(prefix, &cached)
            .unwrap()
            .unwrap();
        assert_eq!(plan.outputs, [3]);
        assert_eq!(plan.checkpoints, [4, 2]);
        assert_eq!(plan.name(3), "out.3");
        // the flush file's word counts for what it lists
        let mut flush = flush_with(&[(4, true, false, Location::Pfs)]);
        flush.describe_dataset(4, &ckpt(4));
        flush.write(&layout::flush_file(prefix)).unwrap();
        let plan = DrainPlan::read_with_cached(prefix, &cached)
            .unwrap()
            .unwrap();
        assert_eq!(plan.checkpoints, Vec::<u64>::new());
        assert_eq!(plan.already_flushed, Some(4));
        // the record `scr prerun` keeps of a flush a kill cut short: nothing to copy, unless
        // a cache holds the dataset
        let mut flush = FlushFile::new();
        flush.describe(6, "ckpt.6", Some(6), Some("ckpt.6"));
        flush.set_location(6, Location::Flushing);
        flush.write(&layout::flush_file(prefix)).unwrap();
        let plan = DrainPlan::read_with_cached(prefix, &[]).unwrap().unwrap();
        assert!(plan.is_empty() && plan.superseded.is_empty(), "{plan:?}");
        let plan = DrainPlan::read_with_cached(prefix, &[ckpt(6)])
            .unwrap()
            .unwrap();
        assert_eq!(plan.checkpoints, [6]);
        // flushed whole, then dropped from the index: not drained again
        std::fs::remove_file(layout::flush_file(prefix)).unwrap();
        crate::safe_fs::create_dirs_in(prefix, &layout::dataset_meta_dir(prefix, 7), 0o700)
            .unwrap();
        Summary::create(&ckpt(7), true)
            .write(&layout::summary_file(prefix, 7))
            .unwrap();
        let plan = DrainPlan::read_with_cached(prefix, &[ckpt(7), ckpt(6)])
            .unwrap()
            .unwrap();
        assert_eq!(plan.dropped, [7]);
        assert_eq!(plan.checkpoints, [6]);
        assert_eq!(plan.name(7), "ckpt.7");
    }
}
