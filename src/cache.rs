//! The cache manager's decisions, without MPI: which cached datasets leave so a new one
//! fits (the runtime gives every rank the same list, the datasets any rank caches, so
//! every rank decides alike and deletes its own part of each).

/// What to evict before a new dataset is written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Datasets to delete now, oldest first.
    pub now: Vec<u64>,
    /// The one to delete once the new dataset has completed: the newest checkpoint that
    /// is only in cache, the only copy of the job's state until the new one exists.
    pub deferred: Option<u64>,
}

/// Chooses the datasets to evict from a store holding `cached` (oldest first) so that a
/// new one fits within `keep` datasets; `protected` is never deleted before the new one
/// completes.
pub fn choose_eviction(cached: &[u64], keep: usize, protected: Option<u64>) -> Eviction {
    let keep = keep.max(1);
    let mut out = Eviction::default();
    let excess = (cached.len() + 1).saturating_sub(keep);
    for &victim in cached.iter().take(excess) {
        if Some(victim) == protected {
            out.deferred = Some(victim);
        } else {
            out.now.push(victim);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_go_and_the_only_copy_of_the_newest_checkpoint_waits() {
        // one slot: everything goes, the unflushed newest after the new one completes
        assert_eq!(
            choose_eviction(&[3, 4], 1, Some(4)),
            Eviction {
                now: vec![3],
                deferred: Some(4)
            }
        );
        // two slots: only the oldest goes
        assert_eq!(choose_eviction(&[3, 4], 2, Some(4)).now, vec![3]);
        assert_eq!(choose_eviction(&[3, 4], 3, None), Eviction::default());
        assert_eq!(choose_eviction(&[], 1, None), Eviction::default());
        // a keep of 0 means 1, as SCR_CACHE_SIZE=0 would leave no room for the new one
        assert_eq!(choose_eviction(&[1], 0, None).now, vec![1]);
    }
}
