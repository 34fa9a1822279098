//! How an event of the text log (`kind`, time, `key=value` fields) becomes v3.1's rows.
//!
//! The fields the text log gives every dataset event fill v3.1's columns: `dset` the
//! dataset id, `name` its name, `secs` how long it took, `bytes` how much it moved. What
//! no column holds (`ranks`, `nodes`, `jobid`, a halt's reason …) goes to the note as
//! `key=value` words; the user is the job's.
//!
//! The kinds are v3.1's names where v3.1 logs the same thing ([`V3_1_NAMES`]): a completed
//! checkpoint is the event `CHECKPOINT_END` and the transfer `CHECKPOINT`, a flush
//! `FLUSH_SUCCESS` and `FLUSH_SYNC` (`ASYNC_FLUSH_SUCCESS` and `FLUSH_ASYNC` in the
//! background), scr-run's launch, end of a run and node found down `RUN_START`, `RUN_END`
//! and `NODE_FAIL`, so a site's queries of v3.1's records find ours; what v3.1 has no name
//! for (`END`, `CHECKPOINT_FAILED`, scr-run's other `SCR_RUN_…`) keeps the text log's.

use chrono::{DateTime, Local};

/// A row of `events`.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    /// Its kind (`types.name`).
    pub kind: &'a str,
    /// The dataset it concerns.
    pub dset: Option<u64>,
    /// That dataset's name.
    pub name: Option<&'a str>,
    /// When it began.
    pub start: Option<DateTime<Local>>,
    /// How long it took.
    pub secs: Option<f64>,
    /// The rest of what the text log says of it.
    pub note: Option<String>,
}

/// A row of `transfers`.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer<'a> {
    /// Its kind (`types.name`): CHECKPOINT, OUTPUT, FLUSH, FETCH.
    pub kind: &'a str,
    /// The dataset moved.
    pub dset: u64,
    /// Its name.
    pub name: &'a str,
    /// When it began (it ended `secs` later).
    pub start: DateTime<Local>,
    /// How long it took.
    pub secs: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Files moved (0 when the event does not say).
    pub files: u64,
    /// Where from ("" when not one directory: the cache of every node).
    pub from: &'a str,
    /// Where to (likewise).
    pub to: &'a str,
}

/// The text log's kinds and v3.1's names for the same: the event's, and the transfer's
/// when it moves bytes (a flush's in the background in [`v3_1_names`]).
pub const V3_1_NAMES: &[(&str, &str, Option<&str>)] = &[
    ("CHECKPOINT", "CHECKPOINT_END", Some("CHECKPOINT")),
    ("OUTPUT", "OUTPUT_END", Some("OUTPUT")),
    ("FLUSH", "FLUSH_SUCCESS", Some("FLUSH_SYNC")),
    ("FETCH", "FETCH_SUCCESS", Some("FETCH")),
    ("FETCH_FAILED", "FETCH_FAIL", None),
    ("RESTART", "RESTART_SUCCESS", None),
    // scr-run's, as v3.1's scr_srun names them
    ("SCR_RUN_LAUNCH", "RUN_START", None),
    ("SCR_RUN_RUN_ENDED", "RUN_END", None),
    ("SCR_RUN_NODE_DOWN", "NODE_FAIL", None),
];

/// v3.1's event and transfer names for a text log kind (a flush in the background when
/// `background`); the kind itself where v3.1 has none.
pub fn v3_1_names(kind: &str, background: bool) -> (&str, &str) {
    if kind == "FLUSH" && background {
        return ("ASYNC_FLUSH_SUCCESS", "FLUSH_ASYNC");
    }
    V3_1_NAMES
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map_or((kind, kind), |(_, event, transfer)| {
            (event, transfer.unwrap_or(event))
        })
}

/// The text log's kind of an event v3.1 names `event` (ours or v3.1's own records), and
/// whether it was a flush in the background.
pub fn text_log_kind(event: &str) -> (&str, bool) {
    if event == "ASYNC_FLUSH_SUCCESS" {
        return ("FLUSH", true);
    }
    V3_1_NAMES
        .iter()
        .find(|(_, e, _)| *e == event)
        .map_or((event, false), |(k, _, _)| (k, false))
}

/// The note's key for the writer's offset from UTC (`+01:00`) when the record was written.
pub const UTC_OFFSET: &str = "utc_offset";

/// Fields that have a column of their own, or are the job's (`user`).
const IN_COLUMNS: &[&str] = &["dset", "name", "secs", "bytes", "files", "mb_per_s", "user"];

/// The rows of one event of the job whose prefix is `prefix`.
pub(crate) fn rows<'a>(
    kind: &'a str,
    time: DateTime<Local>,
    fields: &'a [(&'a str, String)],
    prefix: &'a str,
) -> (Event<'a>, Option<Transfer<'a>>) {
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    };
    let number = |key: &str| {
        field(key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let dset = field("dset").and_then(|v| v.parse::<u64>().ok());
    let name = field("name");
    let secs = number("secs");
    let start = time - chrono::Duration::milliseconds((secs.unwrap_or(0.0) * 1000.0) as i64);
    let mut note: Vec<String> = fields
        .iter()
        .filter(|(k, _)| !IN_COLUMNS.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    // the columns hold the writer's local time, as v3.1's do: its offset from UTC orders
    // records of writers in other zones, or on either side of a change of daylight time
    note.push(format!("{UTC_OFFSET}={}", start.format("%:z")));
    let background = field("async") == Some("1");
    let (event_kind, transfer_kind) = v3_1_names(kind, background);
    let event = Event {
        kind: event_kind,
        dset,
        name,
        start: Some(start),
        secs,
        note: (!note.is_empty()).then(|| note.join(" ")),
    };
    let bytes = field("bytes").and_then(|v| v.parse::<u64>().ok());
    let transfer = match (dset, secs, bytes) {
        (Some(dset), Some(secs), Some(bytes)) => Some(Transfer {
            kind: transfer_kind,
            dset,
            name: name.unwrap_or_default(),
            start,
            secs,
            bytes,
            files: field("files").and_then(|v| v.parse().ok()).unwrap_or(0),
            // a flush goes from the nodes' caches to the prefix; a fetch comes back
            from: if kind == "FETCH" { prefix } else { "" },
            to: if kind == "FLUSH" { prefix } else { "" },
        }),
        _ => None,
    };
    (event, transfer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(f: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        f.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn a_flush_is_an_event_and_a_transfer_into_the_prefix() {
        let now = Local::now();
        let fields = owned(&[
            ("name", "ckpt.3"),
            ("dset", "3"),
            ("bytes", "4096"),
            ("secs", "2.000"),
            ("mb_per_s", "0.0"),
            ("async", "1"),
        ]);
        let (e, t) = rows("FLUSH", now, &fields, "/p/run");
        // v3.1's names: a flush in the background
        assert_eq!(e.kind, "ASYNC_FLUSH_SUCCESS");
        assert_eq!(t.as_ref().unwrap().kind, "FLUSH_ASYNC");
        assert_eq!(e.dset, Some(3));
        assert_eq!(e.name, Some("ckpt.3"));
        assert_eq!(e.secs, Some(2.0));
        let offset = now.format("%:z");
        assert_eq!(e.note, Some(format!("async=1 utc_offset={offset}")));
        assert_eq!(e.start, Some(now - chrono::Duration::seconds(2)));
        let t = t.unwrap();
        assert_eq!((t.bytes, t.from, t.to), (4096, "", "/p/run"));
    }

    #[test]
    fn a_start_is_an_event_only_with_its_sizes_in_the_note() {
        let fields = owned(&[
            ("ranks", "4"),
            ("nodes", "2"),
            ("user", "alice"),
            ("jobid", "77"),
        ]);
        let now = Local::now();
        let (e, t) = rows("START", now, &fields, "/p");
        let offset = now.format("%:z");
        assert_eq!(
            e.note,
            Some(format!("ranks=4 nodes=2 jobid=77 utc_offset={offset}"))
        );
        assert_eq!((e.dset, e.name, e.secs), (None, None, None));
        assert!(t.is_none());
    }

    #[test]
    fn kinds_go_to_v3_1s_names_and_back() {
        for (kind, background, event, transfer) in [
            ("CHECKPOINT", false, "CHECKPOINT_END", "CHECKPOINT"),
            ("OUTPUT", false, "OUTPUT_END", "OUTPUT"),
            ("FLUSH", false, "FLUSH_SUCCESS", "FLUSH_SYNC"),
            ("FLUSH", true, "ASYNC_FLUSH_SUCCESS", "FLUSH_ASYNC"),
            ("FETCH", false, "FETCH_SUCCESS", "FETCH"),
            ("FETCH_FAILED", false, "FETCH_FAIL", "FETCH_FAIL"),
            ("RESTART", false, "RESTART_SUCCESS", "RESTART_SUCCESS"),
            ("START", false, "START", "START"),
            ("END", false, "END", "END"),
            ("SCR_RUN_LAUNCH", false, "RUN_START", "RUN_START"),
            ("SCR_RUN_RUN_ENDED", false, "RUN_END", "RUN_END"),
            ("SCR_RUN_NODE_DOWN", false, "NODE_FAIL", "NODE_FAIL"),
            (
                "SCR_RUN_SLEEPING",
                false,
                "SCR_RUN_SLEEPING",
                "SCR_RUN_SLEEPING",
            ),
        ] {
            assert_eq!(v3_1_names(kind, background), (event, transfer), "{kind}");
            assert_eq!(text_log_kind(event), (kind, background), "{event}");
        }
    }
}
