//! The SCR hash (SCR 3 calls it kvtree): an ordered tree of string keys.
//!
//! Every SCR state file is a hash. A "key = value" pair is stored as `key → {value → {}}`,
//! so a key may hold several values at once (the flush file's `LOCATION → {PFS, CACHE}`).
//! Element order is kept exactly as inserted or read, which is what makes a file read and
//! written again come out byte for byte identical.

mod codec;
mod print;

pub use codec::{DecodeError, DecodeProblem, FILE_HEADER_SIZE, MAX_DEPTH, check_header_len};

use hashbrown::HashTable;
use std::fmt::Display;
use std::hash::BuildHasher;
use std::str::FromStr;

/// Levels with more elements than this get a hash index; smaller ones are scanned, which is
/// faster and allocates nothing beyond the element vector.
const INDEX_THRESHOLD: usize = 12;

/// A key: inline up to 24 bytes (most keys, and the values stored as keys, are short), so
/// building or reading a hash allocates for long keys only.
type Key = compact_str::CompactString;

/// An ordered tree of string keys; each key owns a child hash.
#[derive(Clone, Default)]
pub struct Hash {
    level: Level,
}

/// The elements of one level.
#[derive(Clone, Default)]
enum Level {
    #[default]
    Empty,
    /// A single key whose child is empty: how SCR stores `key = value`, which is most of
    /// every state file (a filemap is five such levels for each one with several keys). Held
    /// inline, so reading or dropping one allocates nothing.
    Value(Key),
    Many {
        elems: Vec<(Key, Hash)>,
        index: Option<Box<HashTable<u32>>>,
    },
}

/// The child of every [`Level::Value`] key, lent out by reference.
static EMPTY: Hash = Hash {
    level: Level::Empty,
};

fn key_hash(key: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(key)
}

impl PartialEq for Hash {
    fn eq(&self, other: &Self) -> bool {
        // by content: a `Value` level equals a `Many` level holding the same one empty child
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}
impl Eq for Hash {}

/// A value stored under a key could not be interpreted as the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("key {key} holds {count} values where exactly one is expected")]
    NotSingle { key: String, count: usize },
    #[error("key {key} holds {value:?}, which is not {expected}")]
    Malformed {
        key: String,
        value: String,
        expected: &'static str,
    },
}

/// The elements of a hash in stored order, as `(key, child)`.
pub struct Iter<'a> {
    value: Option<&'a Key>,
    elems: std::slice::Iter<'a, (Key, Hash)>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Hash);
    fn next(&mut self) -> Option<Self::Item> {
        match self.value.take() {
            Some(key) => Some((key, &EMPTY)),
            None => self.elems.next().map(|(k, v)| (&**k, v)),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len();
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        // a level holds either the one inline value or the element vector, never both
        match self.value.take() {
            Some(key) => Some((key, &EMPTY)),
            None => self.elems.next_back().map(|(k, v)| (&**k, v)),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {
    fn len(&self) -> usize {
        usize::from(self.value.is_some()) + self.elems.len()
    }
}

/// Most elements a decoded level reserves room for before they arrive.
const MAX_RESERVE: usize = 1024;

/// Builds one level from elements read in order; a repeated key is merged into the first,
/// as SCR merges it when it reads a file.
pub(crate) struct LevelBuilder {
    elems: Vec<(Key, Hash)>,
    index: Option<HashTable<u32>>,
}

impl LevelBuilder {
    /// A level of `count` elements as the input claims. Only part of a large claim is
    /// reserved up front: nested levels each claiming most of a hostile file would
    /// otherwise reserve their claims all at once.
    pub(crate) fn with_capacity(count: usize) -> Self {
        let reserve = count.min(MAX_RESERVE);
        LevelBuilder {
            elems: Vec::with_capacity(reserve),
            index: (count > INDEX_THRESHOLD).then(|| HashTable::with_capacity(reserve)),
        }
    }

    pub(crate) fn insert_or_merge(&mut self, key: &str, child: Hash) {
        let elems = &mut self.elems;
        let existing = match &mut self.index {
            Some(table) => {
                let hash = key_hash(key);
                match table.find(hash, |&i| &*elems[i as usize].0 == key) {
                    Some(&i) => Some(i as usize),
                    None => {
                        table.insert_unique(hash, elems.len() as u32, |&i| {
                            key_hash(&elems[i as usize].0)
                        });
                        None
                    }
                }
            }
            None => elems.iter().position(|(k, _)| k == key),
        };
        match existing {
            Some(i) => elems[i].1.merge_owned(child),
            None => elems.push((Key::from(key), child)),
        }
    }

    pub(crate) fn finish(mut self) -> Hash {
        if self.elems.len() == 1 {
            let (key, child) = self.elems.pop().expect("one element");
            return Hash::one(key, child);
        }
        let level = if self.elems.is_empty() {
            Level::Empty
        } else {
            Level::Many {
                elems: self.elems,
                index: self.index.map(Box::new),
            }
        };
        Hash { level }
    }
}

impl Hash {
    pub fn new() -> Self {
        Self::default()
    }

    /// A hash holding the one empty-childed key `key`: the value part of `key = value`.
    fn single_value(key: Key) -> Self {
        Hash {
            level: Level::Value(key),
        }
    }

    /// A hash of the one element `key → child`.
    pub(crate) fn one(key: Key, child: Hash) -> Self {
        if child.is_empty() {
            return Hash::single_value(key);
        }
        Hash {
            level: Level::Many {
                elems: vec![(key, child)],
                index: None,
            },
        }
    }

    /// Number of elements at this level.
    pub fn len(&self) -> usize {
        match &self.level {
            Level::Empty => 0,
            Level::Value(_) => 1,
            Level::Many { elems, .. } => elems.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(&self, key: &str) -> Option<usize> {
        match &self.level {
            Level::Empty => None,
            Level::Value(k) => (k == key).then_some(0),
            Level::Many {
                elems,
                index: Some(table),
            } => table
                .find(key_hash(key), |&i| &*elems[i as usize].0 == key)
                .map(|&i| i as usize),
            Level::Many { elems, index: None } => elems.iter().position(|(k, _)| &**k == key),
        }
    }

    /// The element vector, turning an inline level into one (every change goes through it).
    fn elems_mut(&mut self) -> &mut Vec<(Key, Hash)> {
        match &mut self.level {
            Level::Many { elems, .. } => elems,
            level => {
                let elems = match std::mem::take(level) {
                    Level::Value(key) => vec![(key, Hash::new())],
                    _ => Vec::new(),
                };
                *level = Level::Many { elems, index: None };
                let Level::Many { elems, .. } = level else {
                    unreachable!("just set")
                };
                elems
            }
        }
    }

    /// The child at `at`, which must exist.
    fn child_at_mut(&mut self, at: usize) -> &mut Hash {
        &mut self.elems_mut()[at].1
    }

    /// Appends an element whose key is known to be absent; returns its position.
    fn push(&mut self, key: Key, value: Hash) -> usize {
        if let Level::Empty = self.level
            && value.is_empty()
        {
            self.level = Level::Value(key);
            return 0;
        }
        self.elems_mut();
        let Level::Many { elems, index } = &mut self.level else {
            unreachable!("elems_mut makes a vector")
        };
        let at = elems.len();
        let hash = index.as_ref().map(|_| key_hash(&key));
        elems.push((key, value));
        match (index, hash) {
            (Some(table), Some(h)) => {
                let elems = &*elems;
                table.insert_unique(h, at as u32, |&i| key_hash(&elems[i as usize].0));
            }
            _ if elems.len() > INDEX_THRESHOLD => self.rebuild_index(),
            _ => {}
        }
        at
    }

    fn rebuild_index(&mut self) {
        let Level::Many { elems, index } = &mut self.level else {
            return;
        };
        if elems.len() <= INDEX_THRESHOLD {
            *index = None;
            return;
        }
        let mut table = HashTable::with_capacity(elems.len());
        for (i, (k, _)) in elems.iter().enumerate() {
            let elems = &*elems;
            table.insert_unique(key_hash(k), i as u32, |&j| key_hash(&elems[j as usize].0));
        }
        *index = Some(Box::new(table));
    }

    /// Whether lookups at this level go through a hash index.
    #[cfg(test)]
    fn has_index(&self) -> bool {
        matches!(self.level, Level::Many { index: Some(_), .. })
    }

    pub fn contains(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    pub fn get(&self, key: &str) -> Option<&Hash> {
        let at = self.position(key)?;
        Some(match &self.level {
            Level::Many { elems, .. } => &elems[at].1,
            _ => &EMPTY,
        })
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Hash> {
        let at = self.position(key)?;
        Some(self.child_at_mut(at))
    }

    /// Sets `key` to `value`, replacing an existing child in place (its position is kept) or
    /// appending a new element. Returns the child now stored under `key`.
    pub fn set(&mut self, key: impl Into<String>, value: Hash) -> &mut Hash {
        let key = key.into();
        let at = match self.position(&key) {
            Some(i) => {
                *self.child_at_mut(i) = value;
                i
            }
            None => self.push(Key::from(key), value),
        };
        self.child_at_mut(at)
    }

    /// Returns the child under `key`, creating an empty one at the end if it is missing.
    pub fn child(&mut self, key: impl AsRef<str>) -> &mut Hash {
        let key = key.as_ref();
        let at = match self.position(key) {
            Some(i) => i,
            None => self.push(Key::from(key), Hash::new()),
        };
        self.child_at_mut(at)
    }

    /// Removes `key` and returns its child; the order of the remaining elements is kept.
    pub fn unset(&mut self, key: &str) -> Option<Hash> {
        let at = self.position(key)?;
        if let Level::Value(_) = self.level {
            self.level = Level::Empty;
            return Some(Hash::new());
        }
        let (_, removed) = self.elems_mut().remove(at);
        self.rebuild_index();
        Some(removed)
    }

    pub fn clear(&mut self) {
        self.level = Level::Empty;
    }

    /// Elements in stored order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.level {
            Level::Empty => Iter {
                value: None,
                elems: [].iter(),
            },
            Level::Value(key) => Iter {
                value: Some(key),
                elems: [].iter(),
            },
            Level::Many { elems, .. } => Iter {
                value: None,
                elems: elems.iter(),
            },
        }
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Hash)> {
        let elems = match self.level {
            Level::Empty => None,
            _ => Some(self.elems_mut()),
        };
        elems
            .into_iter()
            .flat_map(|elems| elems.iter_mut().map(|(k, v)| (&**k, v)))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    /// Keeps only the elements for which `keep` returns true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Hash) -> bool) {
        if self.is_empty() {
            return;
        }
        self.elems_mut().retain_mut(|(k, v)| keep(k, v));
        self.rebuild_index();
    }

    /// Copies every element of `other` into `self`, recursively: keys `self` lacks are
    /// appended, keys both have are merged.
    pub fn merge(&mut self, other: &Hash) {
        for (key, theirs) in other.iter() {
            if theirs.is_empty() {
                // a bare key (a value): present already, or appended, never taken apart
                if !self.contains(key) {
                    self.push(Key::from(key), Hash::new());
                }
                continue;
            }
            self.child(key).merge(theirs);
        }
    }

    /// Like [`Hash::merge`], consuming `other` so nothing is copied.
    pub fn merge_owned(&mut self, other: Hash) {
        match other.level {
            Level::Empty => {}
            Level::Value(key) => self.insert_or_merge(key, Hash::new()),
            Level::Many { elems, .. } => {
                for (key, theirs) in elems {
                    self.insert_or_merge(key, theirs);
                }
            }
        }
    }

    /// Appends `key`, or merges `value` into the child `key` already has.
    fn insert_or_merge(&mut self, key: Key, value: Hash) {
        match self.position(&key) {
            Some(_) if value.is_empty() => {}
            Some(i) => self.child_at_mut(i).merge_owned(value),
            None => {
                self.push(key, value);
            }
        }
    }

    /// Sorts this level's keys: numerically where both keys are integers, else as strings.
    pub fn sort_keys(&mut self, descending: bool) {
        let Level::Many { elems, .. } = &mut self.level else {
            return; // one key or none: already sorted
        };
        elems.sort_by(|(a, _), (b, _)| {
            let order = match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => a.cmp(b),
            };
            if descending { order.reverse() } else { order }
        });
        self.rebuild_index();
    }

    // ----- key/value helpers (SCR's `_kv` functions) -----

    /// The child of `value` under `key`: `get_kv("RANK", "0")` is the hash for rank 0.
    pub fn get_kv(&self, key: &str, value: &str) -> Option<&Hash> {
        self.get(key)?.get(value)
    }

    pub fn get_kv_mut(&mut self, key: &str, value: &str) -> Option<&mut Hash> {
        self.get_mut(key)?.get_mut(value)
    }

    /// The child of `value` under `key`, creating both levels as needed.
    pub fn set_kv(&mut self, key: &str, value: impl Display) -> &mut Hash {
        self.child(key).child(value.to_string())
    }

    /// Removes `value` from under `key`, and `key` itself once it holds nothing.
    pub fn unset_kv(&mut self, key: &str, value: &str) -> Option<Hash> {
        let values = self.get_mut(key)?;
        let removed = values.unset(value);
        if values.is_empty() {
            self.unset(key);
        }
        removed
    }

    /// Replaces whatever `key` holds with the single value `value`.
    pub fn set_value(&mut self, key: &str, value: impl Display) {
        self.set(key, Hash::single_value(Key::from(value.to_string())));
    }

    /// The first value under `key` (SCR's `elem_get_first_val`), if the key exists.
    pub fn first_value(&self, key: &str) -> Option<&str> {
        self.get(key)?.keys().next()
    }

    /// The one value of `key`: `Ok(None)` when the key is absent, an error when it holds
    /// several values or none.
    pub fn value(&self, key: &str) -> Result<Option<&str>, ValueError> {
        match self.get(key) {
            None => Ok(None),
            Some(values) if values.len() == 1 => Ok(values.keys().next()),
            Some(values) => Err(ValueError::NotSingle {
                key: key.into(),
                count: values.len(),
            }),
        }
    }

    /// The one value of `key` parsed as `T` (integers, floats, booleans as 0/1 …).
    pub fn parsed<T: FromStr>(&self, key: &str) -> Result<Option<T>, ValueError> {
        let Some(text) = self.value(key)? else {
            return Ok(None);
        };
        text.parse().map(Some).map_err(|_| ValueError::Malformed {
            key: key.into(),
            value: text.into(),
            expected: std::any::type_name::<T>(),
        })
    }

    /// The one value of `key` as a CRC32 written the way SCR writes it (`0x1b39e4e4`).
    pub fn crc32(&self, key: &str) -> Result<Option<u32>, ValueError> {
        let Some(text) = self.value(key)? else {
            return Ok(None);
        };
        parse_crc32(text)
            .map(Some)
            .ok_or_else(|| ValueError::Malformed {
                key: key.into(),
                value: text.into(),
                expected: "a CRC32 such as 0x1b39e4e4",
            })
    }

    /// Stores a CRC32 as SCR does (C's `%#x`: `0x` and lower-case hex, plain `0` for zero).
    pub fn set_crc32(&mut self, key: &str, crc: u32) {
        self.set_value(key, format_crc32(crc));
    }

    // ----- multi-key paths (SCR's `getf`/`setf`) -----

    /// Follows a path of keys: `get_path(&[&"RANK", &rank, &"DSET", &id])`.
    pub fn get_path(&self, path: &[&dyn Display]) -> Option<&Hash> {
        path.iter().try_fold(self, |h, key| h.get(&key.to_string()))
    }

    pub fn get_path_mut(&mut self, path: &[&dyn Display]) -> Option<&mut Hash> {
        path.iter()
            .try_fold(self, |h, key| h.get_mut(&key.to_string()))
    }

    /// Follows a path of keys, creating every missing level.
    pub fn set_path(&mut self, path: &[&dyn Display]) -> &mut Hash {
        path.iter().fold(self, |h, key| h.child(key.to_string()))
    }

    /// Depth of the deepest element (an empty hash has depth 0).
    pub fn depth(&self) -> usize {
        self.iter().map(|(_, c)| 1 + c.depth()).max().unwrap_or(0)
    }
}

/// Formats a CRC32 like C's `%#x`.
pub fn format_crc32(crc: u32) -> String {
    if crc == 0 {
        "0".to_string()
    } else {
        format!("{crc:#x}")
    }
}

/// Parses what [`format_crc32`] writes (and what `strtoul(…, 0)` accepts for it).
pub fn parse_crc32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u32::from_str_radix(hex, 16).ok(),
        _ => text.parse().ok(),
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<String>> FromIterator<(K, Hash)> for Hash {
    fn from_iter<I: IntoIterator<Item = (K, Hash)>>(iter: I) -> Self {
        let mut hash = Hash::new();
        for (k, v) in iter {
            hash.insert_or_merge(Key::from(k.into()), v);
        }
        hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_in_place_and_appends_new_keys() {
        let mut h = Hash::new();
        h.set_value("A", 1);
        h.set_value("B", 2);
        h.set_value("A", 3);
        assert_eq!(h.keys().collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(h.parsed::<u32>("A").unwrap(), Some(3));
    }

    #[test]
    fn kv_helpers_create_and_clean_up() {
        let mut h = Hash::new();
        h.set_kv("RANK", 0).set_value("FILES", 2);
        h.set_kv("RANK", 1);
        assert_eq!(
            h.get_kv("RANK", "0")
                .unwrap()
                .parsed::<u32>("FILES")
                .unwrap(),
            Some(2)
        );
        h.unset_kv("RANK", "0");
        assert!(h.contains("RANK"));
        h.unset_kv("RANK", "1");
        assert!(!h.contains("RANK"), "an emptied key is removed");
    }

    #[test]
    fn multi_valued_keys_are_reported_not_guessed() {
        let mut h = Hash::new();
        h.set_kv("LOCATION", "PFS");
        h.set_kv("LOCATION", "CACHE");
        assert_eq!(h.first_value("LOCATION"), Some("PFS"));
        assert!(matches!(
            h.value("LOCATION"),
            Err(ValueError::NotSingle { count: 2, .. })
        ));
    }

    #[test]
    fn crc_format_matches_c_printf() {
        assert_eq!(format_crc32(0x1b39e4e4), "0x1b39e4e4");
        assert_eq!(format_crc32(0), "0");
        assert_eq!(parse_crc32("0x28eeb9e"), Some(0x28eeb9e));
        assert_eq!(parse_crc32("0"), Some(0));
        assert_eq!(parse_crc32("0x"), None);
        assert_eq!(parse_crc32("zz"), None);
    }

    #[test]
    fn paths_and_merge() {
        let mut a = Hash::new();
        a.set_path(&[&"RANK", &3, &"DSET", &7])
            .set_value("FILES", 1);
        let mut b = Hash::new();
        b.set_path(&[&"RANK", &3, &"DSET", &8])
            .set_value("FILES", 2);
        a.merge(&b);
        let dsets = a.get_path(&[&"RANK", &3, &"DSET"]).unwrap();
        assert_eq!(dsets.keys().collect::<Vec<_>>(), ["7", "8"]);
        assert_eq!(a.depth(), 6);
    }

    #[test]
    fn large_levels_use_the_index_consistently() {
        let mut h = Hash::new();
        for i in 0..1000 {
            h.set_value(&format!("k{i}"), i);
        }
        assert!(h.has_index());
        assert_eq!(h.parsed::<u32>("k777").unwrap(), Some(777));
        h.unset("k5");
        assert_eq!(h.len(), 999);
        assert_eq!(
            h.parsed::<u32>("k999").unwrap(),
            Some(999),
            "index rebuilt after a removal"
        );
        assert!(!h.contains("k5"));
        h.retain(|k, _| k.len() < 3);
        assert_eq!(h.len(), 9);
        assert!(!h.has_index());
        assert!(h.contains("k9"));
    }

    #[test]
    fn sort_keys_is_numeric_for_numbers() {
        let mut h: Hash = ["10", "9", "100"]
            .into_iter()
            .map(|k| (k, Hash::new()))
            .collect();
        h.sort_keys(false);
        assert_eq!(h.keys().collect::<Vec<_>>(), ["9", "10", "100"]);
        h.sort_keys(true);
        assert_eq!(h.keys().collect::<Vec<_>>(), ["100", "10", "9"]);
    }
}
