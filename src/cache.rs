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
/// completes. The `unfinished` ones (a rank never completed them: a job ended while they
/// were written) go first, whatever their age: no restart or drain can use them, and an
/// older checkpoint that is whole must not leave in their place.
pub fn choose_eviction(
    cached: &[u64],
    keep: usize,
    protected: Option<u64>,
    unfinished: &[u64],
) -> Eviction {
    let keep = keep.max(1);
    let mut out = Eviction::default();
    let excess = (cached.len() + 1).saturating_sub(keep);
    let (useless, whole): (Vec<u64>, Vec<u64>) =
        cached.iter().partition(|d| unfinished.contains(d));
    let mut victims: Vec<u64> = useless.into_iter().chain(whole).take(excess).collect();
    victims.sort_unstable();
    for victim in victims {
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
            choose_eviction(&[3, 4], 1, Some(4), &[]),
            Eviction {
                now: vec![3],
                deferred: Some(4)
            }
        );
        // two slots: only the oldest goes
        assert_eq!(choose_eviction(&[3, 4], 2, Some(4), &[]).now, vec![3]);
        assert_eq!(choose_eviction(&[3, 4], 3, None, &[]), Eviction::default());
        assert_eq!(choose_eviction(&[], 1, None, &[]), Eviction::default());
        // a keep of 0 means 1, as SCR_CACHE_SIZE=0 would leave no room for the new one
        assert_eq!(choose_eviction(&[1], 0, None, &[]).now, vec![1]);
    }

    #[test]
    fn a_dataset_no_rank_finished_goes_before_an_older_whole_one() {
        // 1 whole (the restart's), 2 never finished (its job was killed), 3 to come
        assert_eq!(choose_eviction(&[1, 2], 2, None, &[2]).now, vec![2]);
        assert_eq!(choose_eviction(&[1, 2], 1, None, &[2]).now, vec![1, 2]);
        assert_eq!(choose_eviction(&[1, 2], 3, None, &[2]), Eviction::default());
        // the whole ones still go oldest first once the unfinished are gone
        assert_eq!(
            choose_eviction(&[1, 2, 4], 2, Some(4), &[2]).now,
            vec![1, 2]
        );
    }
}
