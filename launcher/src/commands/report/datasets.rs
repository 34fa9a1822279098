//! Where each dataset of a prefix is, for `scr report`: only in cache, being flushed, in
//! cache and on the prefix, or on the prefix alone — from the flush file (what the job's
//! caches hold) and the index (what the prefix holds) — and which one a restart would use
//! (the index's CURRENT, or the user's own `scr.current` link, which wins).

use scr::flush::{FlushFile, Location};
use scr::index::IndexFile;

/// Where a dataset's files are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// In cache, not (yet) on the prefix: lost with the nodes unless the drain copies it.
    CacheOnly,
    /// A flush to the prefix started and has not finished.
    Flushing,
    /// In cache and flushed to the prefix.
    CacheAndPrefix,
    /// On the prefix only (the cache no longer holds it).
    Prefix,
    /// Recorded in the flush file without any location.
    Unknown,
}

impl Place {
    pub fn as_str(self) -> &'static str {
        match self {
            Place::CacheOnly => "cache only",
            Place::Flushing => "flushing",
            Place::CacheAndPrefix => "cache and prefix",
            Place::Prefix => "prefix",
            Place::Unknown => "unknown",
        }
    }
}

/// One dataset.
pub struct DatasetRow {
    pub id: u64,
    pub name: String,
    /// "checkpoint", "output", or "" when neither file says.
    pub kind: &'static str,
    pub place: Place,
    /// On the prefix: "complete", "incomplete" or "failed" (a fetch of it failed).
    pub prefix_state: Option<&'static str>,
    /// When its flush finished, as the index records it.
    pub flushed: Option<String>,
    /// The one a restart would start from.
    pub current: bool,
}

/// Every dataset the index or the flush file names, newest first. `link` is the dataset
/// the user's `scr.current` link names, if any.
pub fn rows(index: &IndexFile, flush: &FlushFile, link: Option<&str>) -> Vec<DatasetRow> {
    let entries = index.entries();
    // the user's link wins when it names a dataset of the index (as a restart takes it)
    let current = link
        .filter(|l| index.id_of(l).is_some())
        .or(index.current());
    let mut out = Vec::new();
    for e in &entries {
        let kind = match index.dataset(e.id, &e.name) {
            Some(d) if d.is_checkpoint() => "checkpoint",
            Some(_) => "output",
            None => flush_kind(flush, e.id),
        };
        let state = if !e.failed.is_empty() {
            "failed"
        } else if e.complete {
            "complete"
        } else {
            "incomplete"
        };
        out.push(DatasetRow {
            id: e.id,
            name: e.name.clone(),
            kind,
            place: place(flush, e.id, true),
            prefix_state: Some(state),
            flushed: e.flushed.clone(),
            current: current == Some(e.name.as_str())
                && index.id_of(&e.name) == Some(e.id)
                && e.complete,
        });
    }
    for id in flush.datasets() {
        if entries.iter().any(|e| e.id == id) {
            continue;
        }
        out.push(DatasetRow {
            id,
            name: flush.name(id).unwrap_or_default().to_string(),
            kind: flush_kind(flush, id),
            place: place(flush, id, false),
            prefix_state: None,
            flushed: None,
            current: false,
        });
    }
    out.sort_by_key(|r| std::cmp::Reverse(r.id));
    out
}

fn flush_kind(flush: &FlushFile, id: u64) -> &'static str {
    if flush.is_checkpoint(id) {
        "checkpoint"
    } else if flush.is_output(id) {
        "output"
    } else {
        ""
    }
}

fn place(flush: &FlushFile, id: u64, indexed: bool) -> Place {
    let in_cache = flush.has_location(id, Location::Cache);
    let flushing = flush.has_location(id, Location::Flushing)
        || flush.has_location(id, Location::SyncFlushing);
    let on_prefix = indexed || flush.has_location(id, Location::Pfs);
    // a flush that a drain finished after the job died still says FLUSHING: the prefix wins
    match (on_prefix, in_cache, flushing) {
        (true, true, _) => Place::CacheAndPrefix,
        (true, false, _) => Place::Prefix,
        (false, _, true) => Place::Flushing,
        (false, true, false) => Place::CacheOnly,
        (false, false, false) => Place::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_wins_over_a_flush_left_unfinished_and_cache_only_is_said_so() {
        let mut flush = FlushFile::default();
        // 1: a job killed mid-flush, drained and indexed since; 2: still flushing;
        // 3: in cache alone
        flush.describe(1, "a", Some(1), None);
        flush.set_location(1, Location::Flushing);
        flush.describe(2, "b", Some(2), None);
        flush.set_location(2, Location::Cache);
        flush.set_location(2, Location::Flushing);
        flush.describe(3, "c", Some(3), None);
        flush.set_location(3, Location::Cache);
        let mut index = IndexFile::default();
        let origin = scr::dataset::Origin::default();
        index.add(
            &scr::dataset::Dataset::create(1, "a", true, false, &origin, Some(1)),
            "a",
            true,
        );
        index.set_current("a").unwrap();
        let rows = rows(&index, &flush, Some("elsewhere"));
        let got: Vec<(u64, Place, bool)> =
            rows.iter().map(|r| (r.id, r.place, r.current)).collect();
        // a link naming no dataset of the index leaves CURRENT in charge
        assert_eq!(
            got,
            [
                (3, Place::CacheOnly, false),
                (2, Place::Flushing, false),
                (1, Place::Prefix, true)
            ]
        );
        assert_eq!(rows[0].kind, "checkpoint");
    }
}
