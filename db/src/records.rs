//! How an event of the text log (`kind`, time, `key=value` fields) becomes v3.1's rows.
//!
//! The fields the text log gives every dataset event fill v3.1's columns: `dset` the
//! dataset id, `name` its name, `secs` how long it took, `bytes` how much it moved. What
//! no column holds (`ranks`, `nodes`, `jobid`, a halt's reason …) goes to the note as
//! `key=value` words; the user is the job's.

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
    let note: Vec<String> = fields
        .iter()
        .filter(|(k, _)| !IN_COLUMNS.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let event = Event {
        kind,
        dset,
        name,
        start: Some(start),
        secs,
        note: (!note.is_empty()).then(|| note.join(" ")),
    };
    let bytes = field("bytes").and_then(|v| v.parse::<u64>().ok());
    let transfer = match (dset, secs, bytes) {
        (Some(dset), Some(secs), Some(bytes)) => Some(Transfer {
            kind,
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
        assert_eq!(e.dset, Some(3));
        assert_eq!(e.name, Some("ckpt.3"));
        assert_eq!(e.secs, Some(2.0));
        assert_eq!(e.note.as_deref(), Some("async=1"));
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
        let (e, t) = rows("START", Local::now(), &fields, "/p");
        assert_eq!(e.note.as_deref(), Some("ranks=4 nodes=2 jobid=77"));
        assert_eq!((e.dset, e.name, e.secs), (None, None, None));
        assert!(t.is_none());
    }
}
