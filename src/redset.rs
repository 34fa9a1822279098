//! Redundancy set selection (SCR v1.2's failure-group rule): which ranks protect
//! each other's files. Pure logic over the failure group (by default the node) of every
//! world rank, so every rank computes the same sets without talking to the others.
//!
//! Ranks are first split *across* failure groups: the i-th rank of every group joins the
//! i-th across-list, so no list holds two ranks of one group. PARTNER uses each list as one
//! ring; XOR and RS cut each list into sets of at least SET_SIZE members, spreading the
//! remainder so that no set is smaller than asked (SCR v1.2; 1.1-8 left a short last set).

use crate::reddesc::{Scheme, SetPosition};
use std::collections::HashMap;

/// The redundancy sets of one job, or of one rank (the set it is in, which is all a rank
/// of a running job needs): each set lists world ranks in set order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedundancySets {
    pub scheme: Scheme,
    sets: Vec<Vec<u64>>,
    /// The job-wide id of each set held (its index among all sets by first world rank).
    ids: Vec<u64>,
    /// How many sets the job has.
    total: u64,
    /// (index into `sets`, position in the set) of every world rank of the sets held.
    place: HashMap<u64, (usize, usize)>,
}

/// The smallest set `scheme` can protect: RS needs `failures` members beyond one,
/// PARTNER and XOR two.
pub fn members_needed(scheme: Scheme, failures: u64) -> u64 {
    match scheme {
        Scheme::ReedSolomon => failures.max(1) + 1,
        Scheme::Single => 1,
        _ => 2,
    }
}

/// Why `scheme` cannot protect a job whose set led by `first_rank` has only `size`
/// members.
pub fn too_small(
    scheme: Scheme,
    needed: u64,
    first_rank: u64,
    size: u64,
    ranks: u64,
    groups: u64,
) -> String {
    format!(
        "{scheme} needs sets of at least {needed} ranks on different nodes, but rank {first_rank} \
         has only {size} such rank(s) ({ranks} ranks on {groups} node(s)); run on more \
         nodes, with the same number of ranks per node, or choose another scheme"
    )
}

/// Largest Reed–Solomon set plus checks GF(2^8) can code.
pub const MAX_RS_CODE: u64 = 256;

/// Why an RS set of `size` members with `failures` checks cannot be coded.
pub fn too_large_for_rs(size: u64, failures: u64) -> String {
    format!(
        "RS sets are limited to {MAX_RS_CODE} members plus checks over GF(2^8); a set of {size} \
         with {failures} failures exceeds it: lower SCR_SET_SIZE"
    )
}

/// Which set a member of an across-list of `n` ranks falls in when sets have at least
/// `min` members (SCR v1.2's balanced split).
pub fn balanced_set_id(index: u64, n: u64, min: u64) -> u64 {
    let min = min.max(1);
    let groups = n / min;
    let size = (n - groups * min)
        .checked_div(groups)
        .map_or(n, |spread| min + spread);
    if size == 0 {
        return 0;
    }
    let r2 = n % size;
    let cutoff = r2 * (size + 1);
    if index < cutoff {
        index / (size + 1)
    } else {
        (index - cutoff) / size + r2
    }
}

impl RedundancySets {
    /// Sets for `scheme` given each world rank's failure group. `set_size` is the minimum
    /// set size of XOR and RS; `failures` how many lost members an RS set must survive.
    /// Errors say why the scheme cannot protect these ranks (e.g. all on one node).
    pub fn select(
        scheme: Scheme,
        groups: &[String],
        set_size: u64,
        failures: u64,
    ) -> Result<RedundancySets, String> {
        let ranks = groups.len();
        let mut sets: Vec<Vec<u64>> = Vec::new();
        if scheme == Scheme::Single {
            sets.extend((0..ranks as u64).map(|r| vec![r]));
        } else {
            // the i-th rank of each failure group goes to across-list i
            let mut across: Vec<Vec<u64>> = Vec::new();
            // ranks already seen per group: a map, as a job has as many groups as nodes
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (rank, group) in groups.iter().enumerate() {
                let count = seen.entry(group.as_str()).or_insert(0);
                let within = *count;
                *count += 1;
                if across.len() <= within {
                    across.resize(within + 1, Vec::new());
                }
                across[within].push(rank as u64);
            }
            for list in across {
                if scheme == Scheme::Partner {
                    sets.push(list);
                    continue;
                }
                let n = list.len() as u64;
                let mut split: Vec<Vec<u64>> = Vec::new();
                for (i, &rank) in list.iter().enumerate() {
                    let id = balanced_set_id(i as u64, n, set_size) as usize;
                    if split.len() <= id {
                        split.resize(id + 1, Vec::new());
                    }
                    split[id].push(rank);
                }
                sets.extend(split);
            }
            sets.sort_by_key(|s| s[0]);
            let needed = members_needed(scheme, failures);
            if let Some(short) = sets.iter().find(|s| (s.len() as u64) < needed) {
                return Err(too_small(
                    scheme,
                    needed,
                    short[0],
                    short.len() as u64,
                    ranks as u64,
                    seen.len() as u64,
                ));
            }
            if scheme == Scheme::ReedSolomon
                && let Some(big) = sets
                    .iter()
                    .find(|s| s.len() as u64 + failures > MAX_RS_CODE)
            {
                return Err(too_large_for_rs(big.len() as u64, failures));
            }
        }
        let total = sets.len() as u64;
        Ok(RedundancySets::held(
            scheme,
            sets,
            (0..total).collect(),
            total,
        ))
    }

    /// The one set of a rank: `members` in set order, `id` its job-wide id, `total` how
    /// many sets the job has.
    pub fn own(scheme: Scheme, members: Vec<u64>, id: u64, total: u64) -> RedundancySets {
        RedundancySets::held(scheme, vec![members], vec![id], total)
    }

    fn held(scheme: Scheme, sets: Vec<Vec<u64>>, ids: Vec<u64>, total: u64) -> RedundancySets {
        let mut place = HashMap::with_capacity(sets.iter().map(Vec::len).sum());
        for (s, set) in sets.iter().enumerate() {
            for (p, &r) in set.iter().enumerate() {
                place.insert(r, (s, p));
            }
        }
        RedundancySets {
            scheme,
            sets,
            ids,
            total,
            place,
        }
    }

    pub fn sets(&self) -> &[Vec<u64>] {
        &self.sets
    }

    /// (index into the sets held, position) of `rank`, which must be in a set held.
    fn place_of(&self, rank: u64) -> (usize, usize) {
        *self
            .place
            .get(&rank)
            .unwrap_or_else(|| panic!("rank {rank} is in none of the redundancy sets held"))
    }

    /// The set `rank` belongs to, in set order.
    pub fn members(&self, rank: u64) -> &[u64] {
        &self.sets[self.place_of(rank).0]
    }

    /// Where `rank` sits, as the filemap's redundancy descriptor records it: the set's id is
    /// its index (sets ordered by their first world rank).
    pub fn position(&self, rank: u64) -> SetPosition {
        let (set, pos) = self.place_of(rank);
        SetPosition {
            groups: self.total,
            group_id: self.ids[set],
            group_size: self.sets[set].len() as u64,
            group_rank: pos as u64,
        }
    }

    /// The world ranks `hop` places left and right of `rank` in its set's ring.
    pub fn neighbours(&self, rank: u64, hop: u64) -> (u64, u64) {
        let set = self.members(rank);
        let n = set.len() as u64;
        let pos = self.place_of(rank).1 as u64;
        let hop = hop % n.max(1);
        (
            set[((pos + n - hop) % n) as usize],
            set[((pos + hop) % n) as usize],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(layout: &[&str]) -> Vec<String> {
        layout.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn balanced_sets_are_never_smaller_than_asked() {
        let ids = |n, min| {
            (0..n)
                .map(|i| balanced_set_id(i, n, min))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(10, 8), vec![0; 10]);
        assert_eq!(ids(4, 8), vec![0; 4]);
        let seventeen = ids(17, 8);
        assert_eq!(seventeen.iter().filter(|&&i| i == 0).count(), 9);
        assert_eq!(seventeen.iter().filter(|&&i| i == 1).count(), 8);
        for n in 1..200 {
            for min in 1..20 {
                let ids = ids(n, min);
                let sets = ids.iter().max().unwrap() + 1;
                for s in 0..sets {
                    let size = ids.iter().filter(|&&i| i == s).count() as u64;
                    assert!(size >= min.min(n), "n={n} min={min} set {s} has {size}");
                    assert!(size < 2 * min.max(1) || sets == 1, "n={n} min={min}");
                }
                assert!(ids.windows(2).all(|w| w[0] <= w[1]), "contiguous sets");
            }
        }
    }

    #[test]
    fn sets_span_nodes() {
        // 8 ranks, 2 per node: across-lists {0,2,4,6} and {1,3,5,7}
        let g = nodes(&["a", "a", "b", "b", "c", "c", "d", "d"]);
        let xor = RedundancySets::select(Scheme::Xor, &g, 8, 0).unwrap();
        assert_eq!(xor.sets(), [vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        assert_eq!(
            xor.position(5),
            SetPosition {
                groups: 2,
                group_id: 1,
                group_size: 4,
                group_rank: 2
            }
        );
        assert_eq!(xor.neighbours(0, 1), (6, 2));
        let small = RedundancySets::select(Scheme::Xor, &g, 2, 0).unwrap();
        assert_eq!(
            small.sets(),
            [vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]
        );
        let partner = RedundancySets::select(Scheme::Partner, &g, 2, 0).unwrap();
        assert_eq!(partner.sets(), [vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        assert_eq!(partner.neighbours(7, 1), (5, 1));
        for set in partner.sets() {
            let mut seen: Vec<&String> = set.iter().map(|&r| &g[r as usize]).collect();
            seen.dedup();
            assert_eq!(seen.len(), set.len(), "one member per node");
        }
    }

    #[test]
    fn unsatisfiable_schemes_say_why() {
        let one_node = nodes(&["a", "a", "a", "a"]);
        let err = RedundancySets::select(Scheme::Xor, &one_node, 8, 0).unwrap_err();
        assert!(err.contains("4 ranks on 1 node"), "{err}");
        assert!(RedundancySets::select(Scheme::Partner, &one_node, 8, 0).is_err());
        assert!(RedundancySets::select(Scheme::Single, &one_node, 8, 0).is_ok());
        // uneven ranks per node: the third rank of node a has nobody to pair with
        let uneven = nodes(&["a", "a", "a", "b", "b"]);
        assert!(RedundancySets::select(Scheme::Partner, &uneven, 8, 0).is_err());
        let three = nodes(&["a", "b", "c"]);
        assert!(RedundancySets::select(Scheme::ReedSolomon, &three, 8, 2).is_ok());
        assert!(RedundancySets::select(Scheme::ReedSolomon, &three, 8, 3).is_err());
    }
}
