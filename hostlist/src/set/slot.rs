//! One axis of a [`super::HostSet`] group: the numbers of a digit run as intervals, by
//! width class (0 for unpadded numbers, else the padded width).

use crate::intervals::IntervalSet;
use crate::parse::{MAX_DIGITS, push_padded};
use std::collections::{BTreeMap, BTreeSet};

/// The numbers of one axis, by width class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Slot {
    pub(super) classes: BTreeMap<u8, IntervalSet>,
}

impl Slot {
    pub(super) fn single(n: u64, class: u8) -> Self {
        let mut s = Slot::default();
        s.classes
            .insert(class, IntervalSet::from_unsorted(vec![(n, n)]));
        s
    }

    pub(super) fn from_runs(runs: BTreeMap<u8, Vec<(u64, u64)>>) -> Self {
        Slot {
            classes: runs
                .into_iter()
                .map(|(c, r)| (c, IntervalSet::from_unsorted(r)))
                .collect(),
        }
    }

    pub(super) fn count(&self) -> u64 {
        self.classes
            .values()
            .fold(0u64, |n, s| n.saturating_add(s.count()))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.classes.values().all(IntervalSet::is_empty)
    }

    pub(super) fn combine(
        &self,
        other: &Slot,
        op: impl Fn(&IntervalSet, &IntervalSet) -> IntervalSet,
    ) -> Slot {
        let empty = IntervalSet::new();
        let classes: BTreeSet<u8> = self
            .classes
            .keys()
            .chain(other.classes.keys())
            .copied()
            .collect();
        let mut out = Slot::default();
        for c in classes {
            let r = op(
                self.classes.get(&c).unwrap_or(&empty),
                other.classes.get(&c).unwrap_or(&empty),
            );
            if !r.is_empty() {
                out.classes.insert(c, r);
            }
        }
        out
    }

    /// Same-length pieces `(len, lo, hi, class)` in display order (length, then value).
    pub(super) fn pieces(&self) -> Vec<(u8, u64, u64, u8)> {
        let mut out = Vec::new();
        for (&class, set) in &self.classes {
            for &(lo, hi) in set.runs() {
                if class > 0 {
                    out.push((class, lo, hi, class));
                    continue;
                }
                // unpadded numbers change length at powers of ten
                let mut start = lo;
                loop {
                    let len = digits(start);
                    let end = if len as usize >= MAX_DIGITS {
                        hi
                    } else {
                        hi.min(10u64.pow(len as u32) - 1)
                    };
                    out.push((len, start, end, 0));
                    if end == hi {
                        break;
                    }
                    start = end + 1;
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// The members in display order, with their width.
    pub(super) fn members(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.pieces()
            .into_iter()
            .flat_map(|(_, lo, hi, class)| (lo..=hi).map(move |n| (n, class)))
    }

    /// `5`, or `[1-2,05,10-12]`: ranges folded as ClusterShell folds them.
    pub(super) fn render(&self, out: &mut String) {
        let pieces = self.pieces();
        if pieces.len() == 1 && pieces[0].1 == pieces[0].2 {
            push_padded(out, pieces[0].1, pieces[0].3);
            return;
        }
        out.push('[');
        let mut current: Option<(u64, u64, u8)> = None; // (lo, hi, padding)
        let mut first = true;
        let mut flush = |r: (u64, u64, u8), out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            push_padded(out, r.0, r.2);
            if r.1 > r.0 {
                out.push('-');
                push_padded(out, r.1, r.2);
            }
        };
        for (len, lo, hi, class) in pieces {
            match current {
                // a run continues when the next number prints the same way within it
                Some((clo, chi, pad))
                    if chi.checked_add(1) == Some(lo)
                        && (class == pad || (class == 0 && len >= pad)) =>
                {
                    current = Some((clo, hi, pad));
                }
                _ => {
                    if let Some(r) = current {
                        flush(r, out);
                    }
                    current = Some((lo, hi, class));
                }
            }
        }
        if let Some(r) = current {
            flush(r, out);
        }
        out.push(']');
    }
}

fn digits(n: u64) -> u8 {
    if n == 0 { 1 } else { (n.ilog10() + 1) as u8 }
}

pub(super) fn class_of(run: &str) -> u8 {
    if run.len() > 1 && run.starts_with('0') {
        run.len() as u8
    } else {
        0
    }
}
