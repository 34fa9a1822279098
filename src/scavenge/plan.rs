//! Which datasets the drain copies after a job, as SCR v3's `scr_postrun` chooses them:
//! every output dataset still only in cache, oldest first, then the checkpoints only in
//! cache that are newer than every checkpoint on the prefix, newest first. A checkpoint
//! older than one the prefix already has is superseded: copying it could only offer an
//! older restart.

use crate::flush::FlushFile;
use crate::index::IndexFile;
use crate::view::HashView;
use crate::{Result, layout};
use std::path::Path;

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
    /// The newest checkpoint the flush file says is already on the prefix: where the
    /// drain's walk from the newest checkpoint down stops (SCR's "has already been flushed").
    pub already_flushed: Option<u64>,
    /// The newest checkpoint a restart could load from the prefix (id, name).
    pub newest_on_prefix: Option<(u64, String)>,
}

impl DrainPlan {
    /// The plan for a flush file and the prefix's index (None: no index yet).
    pub fn new(flush: &FlushFile, index: Option<&IndexFile>) -> DrainPlan {
        let newest_on_prefix = index
            .and_then(IndexFile::newest_usable_checkpoint)
            .map(|e| (e.id, e.name));
        let datasets = flush.datasets();
        // a dataset without a checkpoint id is output, whatever wrote the flush file
        let outputs = datasets
            .iter()
            .copied()
            .filter(|&d| flush.needs_flush(d) && (flush.is_output(d) || !flush.is_checkpoint(d)))
            .collect();
        let mut plan = DrainPlan {
            outputs,
            newest_on_prefix,
            ..DrainPlan::default()
        };
        let mut superseded = false;
        for &d in datasets.iter().rev().filter(|&&d| flush.is_checkpoint(d)) {
            let on_prefix_is_newer = plan.newest_on_prefix.as_ref().is_some_and(|(n, _)| d <= *n);
            // a newer checkpoint already on the prefix supersedes every older one
            superseded |= !flush.needs_flush(d) || on_prefix_is_newer;
            if !flush.needs_flush(d) {
                plan.already_flushed.get_or_insert(d);
                continue;
            }
            if superseded {
                plan.superseded.push(d);
            } else {
                plan.checkpoints.push(d);
            }
        }
        plan
    }

    /// The plan for the drain of `prefix`; None when it has no flush file (nothing was
    /// ever cached for it).
    pub fn read(prefix: &Path) -> Result<Option<DrainPlan>> {
        let flush = match FlushFile::read(&layout::flush_file(prefix)) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let index = match IndexFile::read(&layout::index_file(prefix)) {
            Ok(i) => Some(i),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        Ok(Some(DrainPlan::new(&flush, index.as_ref())))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Dataset, Origin};
    use crate::flush::Location;

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
}
