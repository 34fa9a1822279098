//! Sets of non-negative integers as sorted, disjoint, non-adjacent closed intervals.

/// A set of `u64` kept as sorted disjoint intervals; memory follows the number of runs,
/// not the number of members.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntervalSet {
    runs: Vec<(u64, u64)>,
}

impl IntervalSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a set from intervals in any order, overlapping or not.
    pub fn from_unsorted(mut runs: Vec<(u64, u64)>) -> Self {
        runs.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (lo, hi) in runs {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        IntervalSet { runs: out }
    }

    pub fn runs(&self) -> &[(u64, u64)] {
        &self.runs
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Number of members (saturating at `u64::MAX`).
    pub fn count(&self) -> u64 {
        self.runs
            .iter()
            .fold(0u64, |n, (lo, hi)| n.saturating_add(hi - lo + 1))
    }

    pub fn contains(&self, x: u64) -> bool {
        match self.runs.binary_search_by(|&(lo, _)| lo.cmp(&x)) {
            Ok(_) => true,
            Err(0) => false,
            Err(i) => self.runs[i - 1].1 >= x,
        }
    }

    pub fn union(&self, other: &Self) -> Self {
        let mut all = Vec::with_capacity(self.runs.len() + other.runs.len());
        all.extend_from_slice(&self.runs);
        all.extend_from_slice(&other.runs);
        IntervalSet::from_unsorted(all)
    }

    pub fn intersection(&self, other: &Self) -> Self {
        let (mut i, mut j, mut out) = (0, 0, Vec::new());
        while i < self.runs.len() && j < other.runs.len() {
            let (a, b) = (self.runs[i], other.runs[j]);
            let (lo, hi) = (a.0.max(b.0), a.1.min(b.1));
            if lo <= hi {
                out.push((lo, hi));
            }
            if a.1 < b.1 { i += 1 } else { j += 1 }
        }
        IntervalSet { runs: out }
    }

    pub fn difference(&self, other: &Self) -> Self {
        let mut out = Vec::new();
        let mut j = 0;
        for &(lo, hi) in &self.runs {
            let mut start = lo;
            while j < other.runs.len() && other.runs[j].1 < start {
                j += 1;
            }
            let mut k = j;
            let mut done = false;
            while k < other.runs.len() && other.runs[k].0 <= hi {
                let (olo, ohi) = other.runs[k];
                if olo > start {
                    out.push((start, olo - 1));
                }
                if ohi >= hi {
                    done = true;
                    break;
                }
                start = ohi + 1;
                k += 1;
            }
            if !done {
                out.push((start, hi));
            }
        }
        IntervalSet { runs: out }
    }

    pub fn symmetric_difference(&self, other: &Self) -> Self {
        self.difference(other).union(&other.difference(self))
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(|&(lo, hi)| lo..=hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(runs: &[(u64, u64)]) -> IntervalSet {
        IntervalSet::from_unsorted(runs.to_vec())
    }

    #[test]
    fn normalizes() {
        assert_eq!(
            set(&[(5, 6), (1, 2), (3, 4), (10, 12), (11, 20)]).runs(),
            [(1, 6), (10, 20)]
        );
        assert_eq!(set(&[(5, 6), (1, 3)]).runs(), [(1, 3), (5, 6)]);
        assert_eq!(set(&[(0, u64::MAX), (5, 5)]).runs(), [(0, u64::MAX)]);
    }

    #[test]
    fn operations_agree_with_brute_force() {
        let a = set(&[(1, 5), (8, 10), (20, 20)]);
        let b = set(&[(3, 9), (15, 25)]);
        let brute = |f: &dyn Fn(bool, bool) -> bool| -> Vec<u64> {
            (0..30)
                .filter(|&x| f(a.contains(x), b.contains(x)))
                .collect()
        };
        assert_eq!(
            a.union(&b).iter().collect::<Vec<_>>(),
            brute(&|x, y| x || y)
        );
        assert_eq!(
            a.intersection(&b).iter().collect::<Vec<_>>(),
            brute(&|x, y| x && y)
        );
        assert_eq!(
            a.difference(&b).iter().collect::<Vec<_>>(),
            brute(&|x, y| x && !y)
        );
        assert_eq!(
            a.symmetric_difference(&b).iter().collect::<Vec<_>>(),
            brute(&|x, y| x != y)
        );
        assert_eq!(a.count(), 9);
    }
}
