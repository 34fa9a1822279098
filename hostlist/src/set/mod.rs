//! [`HostSet`]: hosts as a set, stored by pattern so that memory follows the number of
//! ranges, not hosts. A host name is split into a *shape* (its text, with each run of
//! digits replaced by a placeholder) and the digit runs; the last digit run is the axis
//! kept as intervals, the others are part of the key.
//!
//! Numbers keep their written form: `n5`, `n05` and `n005` are three hosts. A digit run
//! has a *width class*: its length when it has a leading zero, else 0 (unpadded); the
//! pair (number, class) and the written digits determine each other.

use crate::ParseError;
use crate::intervals::IntervalSet;
use crate::parse::{HostList, MAX_DIGITS, NumRange, Part, Term, push_padded};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

mod slot;
use slot::{Slot, class_of};

/// Most hosts a set is built from one by one (terms that cannot be kept as ranges).
pub const PER_HOST_LIMIT: u64 = 1 << 20;

/// Stands for a digit run inside a shape; cannot occur in a parsed host name.
const SLOT: char = '\u{1}';

/// Key of a group: the shape and the digit runs before the last.
type GroupKey = (String, Vec<String>);

/// Hosts as a set, sorted and without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostSet {
    /// Names without any (short enough) digit run.
    bare: BTreeSet<String>,
    groups: BTreeMap<GroupKey, Slot>,
}

/// Splits a host name into its shape and digit runs (runs too long for a `u64` stay text).
fn split_name(name: &str) -> (String, Vec<&str>) {
    let bytes = name.as_bytes();
    let (mut shape, mut runs, mut i) = (String::with_capacity(name.len()), Vec::new(), 0);
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i - start <= MAX_DIGITS {
                shape.push(SLOT);
                runs.push(&name[start..i]);
            } else {
                shape.push_str(&name[start..i]);
            }
        } else {
            let start = i;
            while i < bytes.len() && !bytes[i].is_ascii_digit() {
                i += 1;
            }
            shape.push_str(&name[start..i]);
        }
    }
    (shape, runs)
}

/// Where a host name belongs in a [`HostSet`].
enum Located {
    /// No digit run: the name itself.
    Bare(String),
    /// Group key, width class and number of the last digit run.
    Numbered { key: GroupKey, class: u8, n: u64 },
}

fn locate(name: &str) -> Located {
    let (shape, runs) = split_name(name);
    let Some((last, leading)) = runs.split_last() else {
        return Located::Bare(shape);
    };
    let n = last.parse().expect("at most 19 digits");
    Located::Numbered {
        key: (shape, leading.iter().map(|s| s.to_string()).collect()),
        class: class_of(last),
        n,
    }
}

impl HostSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one host by name. To add many, collect them with [`HostSet::from_names`],
    /// which normalises once instead of per host.
    pub fn insert(&mut self, name: &str) {
        match locate(name) {
            Located::Bare(shape) => {
                self.bare.insert(shape);
            }
            Located::Numbered { key, class, n } => {
                let set = self
                    .groups
                    .entry(key)
                    .or_default()
                    .classes
                    .entry(class)
                    .or_default();
                *set = set.union(&IntervalSet::from_unsorted(vec![(n, n)]));
            }
        }
    }

    /// The set of many host names.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut pending = Pending::default();
        for n in names {
            pending.add_name(n);
        }
        pending.finish()
    }

    pub fn contains(&self, name: &str) -> bool {
        match locate(name) {
            Located::Bare(shape) => self.bare.contains(&shape),
            Located::Numbered { key, class, n } => self
                .groups
                .get(&key)
                .and_then(|s| s.classes.get(&class))
                .is_some_and(|set| set.contains(n)),
        }
    }

    /// The set of a list's hosts. Brackets become intervals directly when the bracket is the
    /// last digit run of the names; other terms (digits glued to a bracket, steps) are added
    /// host by host, at most [`PER_HOST_LIMIT`] hosts in all, so no input can make this hang.
    pub fn from_list(list: &HostList) -> Result<Self, ParseError> {
        let mut pending = Pending::default();
        let mut budget = PER_HOST_LIMIT;
        let too_many = |n: u64| ParseError {
            column: 1,
            message: format!(
                "a term of {n} hosts must be expanded one by one (digits next to a bracket, or a step)"
            ),
            hint: "put all digits inside the brackets, as node[01-10] rather than node0[1-9]",
        };
        for term in &list.terms {
            let stepped: u64 = term
                .parts
                .iter()
                .map(|p| match p {
                    Part::Ranges(rs) => rs
                        .iter()
                        .filter(|r| r.step > 1)
                        .fold(0u64, |n, r| n.saturating_add(r.count())),
                    Part::Text(_) => 0,
                })
                .fold(0u64, u64::saturating_add);
            budget = budget
                .checked_sub(stepped)
                .ok_or_else(|| too_many(stepped))?;
            // every combination of the brackets before the last is added on its own
            let brackets: Vec<u64> = term
                .parts
                .iter()
                .filter(|p| matches!(p, Part::Ranges(_)))
                .map(Part::count)
                .collect();
            let leading = brackets
                .iter()
                .rev()
                .skip(1)
                .fold(1u64, |n, c| n.saturating_mul(*c));
            budget = budget
                .checked_sub(leading)
                .ok_or_else(|| too_many(leading))?;
            if !pending.add_term_by_ranges(term) {
                budget = budget
                    .checked_sub(term.count())
                    .ok_or_else(|| too_many(term.count()))?;
                let mut name = String::new();
                for i in 0..term.count() {
                    name.clear();
                    term.write_nth(i, &mut name);
                    pending.add_name(&name);
                }
            }
        }
        Ok(pending.finish())
    }
}

/// Hosts collected before normalisation: intervals per group and class, in any order.
#[derive(Default)]
struct Pending {
    bare: BTreeSet<String>,
    groups: BTreeMap<GroupKey, BTreeMap<u8, Vec<(u64, u64)>>>,
}

impl Pending {
    fn add_name(&mut self, name: &str) {
        match locate(name) {
            Located::Bare(shape) => {
                self.bare.insert(shape);
            }
            Located::Numbered { key, class, n } => {
                self.groups
                    .entry(key)
                    .or_default()
                    .entry(class)
                    .or_default()
                    .push((n, n));
            }
        }
    }

    fn finish(self) -> HostSet {
        let groups = self
            .groups
            .into_iter()
            .map(|(key, classes)| (key, Slot::from_runs(classes)))
            .collect();
        HostSet {
            bare: self.bare,
            groups,
        }
    }

    /// Fast path for a term whose last bracket is the last digit run of every name it makes
    /// and whose brackets touch no digits. Returns false when the term does not qualify.
    fn add_term_by_ranges(&mut self, term: &Term) -> bool {
        let parts = &term.parts;
        let Some(last_bracket) = parts.iter().rposition(|p| matches!(p, Part::Ranges(_))) else {
            return false;
        };
        let text_at = |i: usize| match parts.get(i) {
            Some(Part::Text(t)) => Some(t.as_str()),
            _ => None,
        };
        for (i, p) in parts.iter().enumerate() {
            if let Part::Ranges(_) = p {
                let before = i
                    .checked_sub(1)
                    .map(|j| text_at(j).map(|t| t.ends_with(|c: char| c.is_ascii_digit())));
                let after = text_at(i + 1).map(|t| t.starts_with(|c: char| c.is_ascii_digit()));
                // adjacent brackets or digits glued to a bracket change the digit runs
                if before == Some(None) || before == Some(Some(true)) || after == Some(true) {
                    return false;
                }
                if i + 1 < parts.len() && text_at(i + 1).is_none() {
                    return false;
                }
            }
        }
        if parts[last_bracket + 1..]
            .iter()
            .any(|p| matches!(p, Part::Text(t) if t.bytes().any(|b| b.is_ascii_digit())))
        {
            return false;
        }
        // Enumerate the leading brackets (their product is small in any realistic list).
        let leading: Vec<&Part> = parts[..last_bracket]
            .iter()
            .filter(|p| matches!(p, Part::Ranges(_)))
            .collect();
        let combos = leading
            .iter()
            .fold(1u64, |n, p| n.saturating_mul(p.count()));
        let Part::Ranges(last) = &parts[last_bracket] else {
            unreachable!()
        };
        for combo in 0..combos {
            let mut name = String::new();
            let mut rest = combo;
            let mut picks: Vec<(u64, u8)> = leading
                .iter()
                .rev()
                .map(|p| {
                    let c = p.count();
                    let pick = p.nth(rest % c);
                    rest /= c;
                    pick
                })
                .collect();
            for p in &parts[..last_bracket] {
                match p {
                    Part::Text(t) => name.push_str(t),
                    Part::Ranges(_) => {
                        let (n, w) = picks.pop().expect("one pick per leading bracket");
                        push_padded(&mut name, n, w);
                    }
                }
            }
            let (shape_head, runs) = split_name(&name);
            let mut shape = shape_head;
            shape.push(SLOT);
            for p in &parts[last_bracket + 1..] {
                if let Part::Text(t) = p {
                    shape.push_str(t);
                }
            }
            let key = (shape, runs.iter().map(|s| s.to_string()).collect());
            let classes = self.groups.entry(key).or_default();
            for r in last.iter() {
                add_range(classes, r);
            }
        }
        true
    }
}

impl HostSet {
    pub fn count(&self) -> u64 {
        self.groups
            .values()
            .fold(self.bare.len() as u64, |n, s| n.saturating_add(s.count()))
    }

    pub fn is_empty(&self) -> bool {
        self.bare.is_empty() && self.groups.is_empty()
    }

    fn combine(
        &self,
        other: &HostSet,
        keep_bare: impl Fn(bool, bool) -> bool,
        op: impl Fn(&IntervalSet, &IntervalSet) -> IntervalSet,
    ) -> HostSet {
        let bare = self
            .bare
            .union(&other.bare)
            .filter(|n| keep_bare(self.bare.contains(*n), other.bare.contains(*n)))
            .cloned()
            .collect();
        let mut groups = BTreeMap::new();
        let empty = Slot::default();
        let keys: BTreeSet<&GroupKey> = self.groups.keys().chain(other.groups.keys()).collect();
        for key in keys {
            let slot = self
                .groups
                .get(key)
                .unwrap_or(&empty)
                .combine(other.groups.get(key).unwrap_or(&empty), &op);
            if !slot.is_empty() {
                groups.insert(key.clone(), slot);
            }
        }
        HostSet { bare, groups }
    }

    pub fn union(&self, other: &HostSet) -> HostSet {
        self.combine(other, |a, b| a || b, IntervalSet::union)
    }
    pub fn intersection(&self, other: &HostSet) -> HostSet {
        self.combine(other, |a, b| a && b, IntervalSet::intersection)
    }
    /// Hosts of `self` not in `other`.
    pub fn difference(&self, other: &HostSet) -> HostSet {
        self.combine(other, |a, b| a && !b, IntervalSet::difference)
    }
    pub fn symmetric_difference(&self, other: &HostSet) -> HostSet {
        self.combine(other, |a, b| a != b, IntervalSet::symmetric_difference)
    }

    /// Folded groups in display order: each is a shape and one slot per digit run.
    fn folded(&self) -> Vec<(String, Vec<Slot>)> {
        // per shape: boxes of (leading slots, last slot)
        let mut by_shape: BTreeMap<&str, Vec<Vec<Slot>>> = BTreeMap::new();
        for ((shape, leading), last) in &self.groups {
            let mut dims: Vec<Slot> = leading
                .iter()
                .map(|r| Slot::single(r.parse().expect("digits"), class_of(r)))
                .collect();
            dims.push(last.clone());
            by_shape.entry(shape).or_default().push(dims);
        }
        let mut out: Vec<(String, Vec<Slot>)> =
            self.bare.iter().map(|b| (b.clone(), Vec::new())).collect();
        for (shape, mut boxes) in by_shape {
            let ndims = boxes[0].len();
            // merge boxes that differ only in one leading dimension, innermost first
            for d in (0..ndims.saturating_sub(1)).rev() {
                boxes.sort_by(|a, b| cmp_except(a, b, d));
                // runs of boxes equal but for dimension d become one box; their d-slots
                // are collected and normalised once (not pairwise, which is quadratic)
                let mut merged: Vec<Vec<Slot>> = Vec::with_capacity(boxes.len());
                let mut runs: BTreeMap<u8, Vec<(u64, u64)>> = BTreeMap::new();
                for b in boxes {
                    let same = merged.last().is_some_and(|m| cmp_except(m, &b, d).is_eq());
                    if !same {
                        if let Some(m) = merged.last_mut() {
                            m[d] = Slot::from_runs(std::mem::take(&mut runs));
                        }
                        merged.push(b.clone());
                    }
                    for (&class, set) in &b[d].classes {
                        runs.entry(class).or_default().extend_from_slice(set.runs());
                    }
                }
                if let Some(m) = merged.last_mut() {
                    m[d] = Slot::from_runs(runs);
                }
                boxes = merged;
            }
            boxes.sort_by_cached_key(|dims| {
                dims.iter()
                    .map(|s| s.pieces().first().map(|p| (p.0, p.1)))
                    .collect::<Vec<_>>()
            });
            out.extend(boxes.into_iter().map(|dims| (shape.to_string(), dims)));
        }
        out.sort_by_cached_key(|(shape, _)| shape.replace(SLOT, "%s"));
        out
    }

    /// Hosts in display order (sorted by pattern, then number).
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        self.folded()
            .into_iter()
            .flat_map(|(shape, dims)| expand_box(shape, dims))
    }
}

/// Adds a written range to per-class interval lists, splitting where the written form
/// stops having a leading zero.
fn add_range(classes: &mut BTreeMap<u8, Vec<(u64, u64)>>, r: &NumRange) {
    let w = r.width;
    // numbers below `padded_below` print with a leading zero at this width
    let padded_below = if w > 1 && (w as usize) <= MAX_DIGITS {
        10u64.pow(w as u32 - 1)
    } else {
        0
    };
    let mut push = |lo: u64, hi: u64| {
        if hi < padded_below {
            classes.entry(w).or_default().push((lo, hi));
        } else if lo >= padded_below {
            classes.entry(0).or_default().push((lo, hi));
        } else {
            classes.entry(w).or_default().push((lo, padded_below - 1));
            classes.entry(0).or_default().push((padded_below, hi));
        }
    };
    if r.step == 1 {
        push(r.lo, r.hi);
    } else {
        for i in 0..r.count() {
            let n = r.nth(i);
            push(n, n);
        }
    }
}

fn cmp_except(a: &[Slot], b: &[Slot], skip: usize) -> std::cmp::Ordering {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .map(|(_, (x, y))| x.cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

fn expand_box(shape: String, dims: Vec<Slot>) -> Box<dyn Iterator<Item = String>> {
    if dims.is_empty() {
        return Box::new(std::iter::once(shape));
    }
    let pieces: Vec<&str> = shape.split(SLOT).collect::<Vec<_>>();
    let pieces: Vec<String> = pieces.into_iter().map(str::to_string).collect();
    let mut names: Box<dyn Iterator<Item = String>> = Box::new(std::iter::once(pieces[0].clone()));
    for (i, dim) in dims.into_iter().enumerate() {
        let tail = pieces[i + 1].clone();
        let members: Vec<(u64, u8)> = dim.members().collect();
        names = Box::new(names.flat_map(move |head| {
            let tail = tail.clone();
            members.clone().into_iter().map(move |(n, w)| {
                let mut s = head.clone();
                push_padded(&mut s, n, w);
                s.push_str(&tail);
                s
            })
        }));
    }
    names
}

impl fmt::Display for HostSet {
    /// The compressed form: `admin,node[01-04,10],rack[1-2]-node[1-8]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for (i, (shape, dims)) in self.folded().into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let mut dims = dims.iter();
            for c in shape.chars() {
                if c == SLOT {
                    dims.next()
                        .expect("one slot per placeholder")
                        .render(&mut out);
                } else {
                    out.push(c);
                }
            }
        }
        f.write_str(&out)
    }
}

impl std::str::FromStr for HostSet {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostSet::from_list(&s.parse()?)
    }
}

#[cfg(test)]
mod tests;
