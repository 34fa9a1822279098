//! Reading the log back: the jobs a site-wide report covers and each job's events, as the
//! text log said them, from the log's database and every user's database beside it
//! (`scr db grant`) that the account may read: the administrator reads them all, a user
//! their own.
//!
//! ```no_run
//! use scr_db::{Address, Connection, Target};
//! // the administrator, over the server's own socket (Debian's)
//! let admin = Target {
//!     address: Address::Socket(scr_db::DEFAULT_SOCKET.into()),
//!     database: "scr".into(),
//!     user: "root".into(),
//!     password: None,
//!     debug: false,
//!     timeout: scr_db::TIMEOUT,
//!     ssl_ca: None,
//! };
//! use scr_db::read::Selection;
//! let mut conn = Connection::open(&admin, true).unwrap();
//! let selection = Selection { user: Some("alice".into()), ..Selection::default() };
//! for job in conn.jobs("scr", &selection).unwrap().jobs {
//!     let events = conn.events_of(&job, &selection).unwrap();
//!     println!("{} {}: {} events", job.user, job.name, events.len());
//! }
//! ```

use crate::{Connection, DbError};
use chrono::{DateTime, FixedOffset, Local, NaiveDateTime, TimeZone};

/// Which records a report covers.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only this user's jobs.
    pub user: Option<String>,
    /// Only events from this time on (the reader's local time), compared as instants with
    /// each record's time at its writer's offset from UTC.
    pub since: Option<NaiveDateTime>,
}

/// The jobs a report covers, and the databases it could not read.
#[derive(Debug, Default)]
pub struct Jobs {
    /// The jobs, each database's oldest first.
    pub jobs: Vec<StoredJob>,
    /// Databases (or a job of one: `database job N`) not read, and why.
    pub unread: Vec<(String, String)>,
}

/// A job of the log: a user's computation in one prefix, across its runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredJob {
    /// The database it is in: the log's, or a user's.
    pub database: String,
    /// Its id in that database's `jobs`.
    pub id: u64,
    /// Its user's name: the one it logged in the log's database; in a user's, the user's.
    pub user: String,
    /// Its name: the prefix.
    pub name: String,
}

/// An event as the log holds it (a row of `events`, with the bytes of its transfer).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// Its kind (`types.name`).
    pub kind: String,
    /// The dataset it concerns.
    pub dset: Option<u64>,
    /// That dataset's name.
    pub dset_name: Option<String>,
    /// When it began, to the second.
    pub start: Option<NaiveDateTime>,
    /// How long it took.
    pub secs: Option<f64>,
    /// The rest of what the text log said of it: `key=value` words.
    pub note: Option<String>,
    /// The bytes it moved (its row of `transfers`), when it moved any.
    pub bytes: Option<f64>,
}

impl StoredEvent {
    /// When it ended: its start and its seconds.
    /// None where the record holds no time, or seconds no event can have taken (anyone who
    /// may log may write any number there).
    pub fn end(&self) -> Option<NaiveDateTime> {
        self.start?.checked_add_signed(span(self.secs)?)
    }

    /// When it ended, as an instant ([`StoredEvent::instant`]).
    pub fn ended_at(&self) -> Option<DateTime<FixedOffset>> {
        self.instant(self.end()?)
    }

    /// When it began, as an instant ([`StoredEvent::instant`]).
    pub fn started_at(&self) -> Option<DateTime<FixedOffset>> {
        self.instant(self.start?)
    }

    /// A time of this record as an instant: its writer recorded it in its local time, at
    /// the offset from UTC it noted ([`crate::UTC_OFFSET`]); a record without one (v3.1's)
    /// is taken at this machine's local time then.
    fn instant(&self, t: NaiveDateTime) -> Option<DateTime<FixedOffset>> {
        let noted = self
            .note_fields()
            .into_iter()
            .find(|(k, _)| k == crate::UTC_OFFSET)
            .and_then(|(_, v)| parse_offset(&v));
        match noted {
            Some(offset) => offset.from_local_datetime(&t).single(),
            None => Local
                .from_local_datetime(&t)
                .earliest()
                .map(|t| t.fixed_offset()),
        }
    }

    /// The note's `key=value` pairs, as the text log wrote them: a word with `=` begins a
    /// pair, a word without one continues the value before it (a message with spaces).
    pub fn note_fields(&self) -> Vec<(String, String)> {
        let mut fields: Vec<(String, String)> = Vec::new();
        for word in self.note.as_deref().unwrap_or_default().split(' ') {
            match word.split_once('=') {
                Some((key, value)) if !key.is_empty() && key.bytes().all(is_key_byte) => {
                    fields.push((key.to_string(), value.to_string()));
                }
                _ => match fields.last_mut() {
                    Some((_, value)) => {
                        value.push(' ');
                        value.push_str(word);
                    }
                    None if word.is_empty() => {}
                    None => fields.push(("message".into(), word.to_string())),
                },
            }
        }
        fields
    }
}

/// An offset from UTC as `%:z` writes it (`+01:00`, `-05:30`).
fn parse_offset(text: &str) -> Option<FixedOffset> {
    let sign = match text.get(..1)? {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let (hours, minutes) = text.get(1..)?.split_once(':')?;
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours.unsigned_abs() > 23 || minutes.unsigned_abs() > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// The longest an event is taken to have lasted: past it, its seconds are no measure.
const MOST_SECONDS: f64 = 1e9;

/// `secs` (none: 0) as a duration; None when it is no measure (negative, not finite, or
/// past [`MOST_SECONDS`]).
fn span(secs: Option<f64>) -> Option<chrono::Duration> {
    let secs = secs.unwrap_or(0.0);
    (secs.is_finite() && (0.0..=MOST_SECONDS).contains(&secs))
        .then(|| chrono::Duration::milliseconds((secs * 1000.0).round() as i64))
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The most jobs read from one user's database: what one user's rows may cost the report of
/// every user's at most (each job is two statements).
pub const MOST_JOBS_OF_A_USER: usize = 20_000;

/// The most events (and transfers) read from one user's database, over all its jobs: what
/// one user's rows may cost the memory and the time of the report of every user's.
pub const MOST_EVENTS_OF_A_USER: usize = 250_000;

/// What a database of the log holds of the log's tables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Holds {
    /// Every one, as a base table.
    Whole,
    /// Some, or a view in a table's place.
    Part,
    /// Nothing: it no longer exists, though granted to its user.
    Gone,
    /// Every one, but it is granted to no account of the user its name names.
    Ungranted,
}

/// How the log's DATETIME columns are read: text, parsed here (no client feature needed).
const TIME_FORMAT_SQL: &str = "%Y-%m-%d %H:%i:%s";
const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

fn parse_time(text: Option<String>) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text.as_deref()?, TIME_FORMAT).ok()
}

/// The `since` bound as the server compares it, with the times as written: a day and more
/// earlier, so that no writer's local time, whatever its zone, is left out before the
/// instants are compared here ([`since_instant`]).
fn since_text(selection: &Selection) -> Option<String> {
    let widest = chrono::Duration::hours(26);
    selection
        .since
        .and_then(|t| t.checked_sub_signed(widest))
        .map(|t| t.format(TIME_FORMAT).to_string())
}

/// The `since` bound as an instant: the reader's local time.
fn since_instant(selection: &Selection) -> Option<DateTime<FixedOffset>> {
    let since = selection.since?;
    Local
        .from_local_datetime(&since)
        .earliest()
        .map(|t| t.fixed_offset())
}

impl Connection {
    /// The log's `database` and the users' databases beside it (`<database>_<user>`,
    /// holding the log's tables) that this account may read.
    pub fn log_databases(&mut self, database: &str) -> Result<Vec<String>, DbError> {
        Ok(self
            .granted_databases(database)?
            .into_iter()
            .filter(|(_, held)| *held == Holds::Whole)
            .map(|(name, _)| name)
            .collect())
    }

    /// The log's `database` and the users' databases beside it, each with what it holds of
    /// the log's tables (a user's database missing one, or holding a view in its place, is
    /// no log's records as they were written), and the users' databases `scr db grant`
    /// made that are gone (the grant outlived a DROP DATABASE).
    fn granted_databases(&mut self, database: &str) -> Result<Vec<(String, Holds)>, DbError> {
        let log = crate::check_database_name(database)?;
        let tables = crate::own_records::TABLES
            .map(|t| format!("'{t}'"))
            .join(", ");
        let users = format!("{}\\_%", log.replace('_', "\\_"));
        let sql = format!(
            "SELECT s.`SCHEMA_NAME`, \
             (SELECT COUNT(*) FROM `information_schema`.`TABLES` t WHERE t.`TABLE_SCHEMA` = s.`SCHEMA_NAME` \
              AND t.`TABLE_TYPE` = 'BASE TABLE' AND t.`TABLE_NAME` IN ({tables})), \
             EXISTS (SELECT 1 FROM `information_schema`.`SCHEMA_PRIVILEGES` p \
              WHERE BINARY p.`TABLE_SCHEMA` = BINARY REPLACE(REPLACE(s.`SCHEMA_NAME`, '_', '\\\\_'), '%', '\\\\%') \
              AND BINARY {owner} = BINARY SUBSTRING(s.`SCHEMA_NAME`, CHAR_LENGTH(?) + 2)) \
             FROM `information_schema`.`SCHEMATA` s \
             WHERE s.`SCHEMA_NAME` = ? OR s.`SCHEMA_NAME` LIKE ? \
             ORDER BY s.`SCHEMA_NAME` = ? DESC, s.`SCHEMA_NAME`",
            owner = crate::own_records::GRANTEE_USER,
        );
        let rows: Vec<(String, u64, bool)> =
            self.rows(&sql, vec![log.into(), log.into(), users.into(), log.into()])?;
        let all = crate::own_records::TABLES.len() as u64;
        // (a name the pattern took in but that is no name the log writes to is not read)
        let mut found: Vec<(String, Holds)> = rows
            .into_iter()
            .filter(|(n, _, _)| crate::check_database_name(n).is_ok())
            .filter_map(|(n, count, granted)| {
                let held = match (n == log, granted, count == all) {
                    (true, _, _) | (false, true, true) => Holds::Whole,
                    (false, true, false) => Holds::Part,
                    // a user's database is one `scr db grant` made: granted to the user its
                    // name names; one that holds the log's tables and is granted to nobody
                    // may be one whose account was dropped (or another log named like a
                    // user's, `scr_test` beside `scr`): not read, but named
                    (false, false, true) => Holds::Ungranted,
                    (false, false, false) => return None,
                };
                Some((n, held))
            })
            .collect();
        // a user's database granted to its user and dropped since: its records are gone,
        // which the report says rather than leave that user's jobs out unnoticed
        let grants: Vec<(String, String)> = self.rows(
            &format!(
                "SELECT DISTINCT `TABLE_SCHEMA`, {owner} FROM `information_schema`.`SCHEMA_PRIVILEGES`",
                owner = crate::own_records::GRANTEE_USER,
            ),
            vec![],
        )?;
        let mut gone: Vec<String> = grants
            .into_iter()
            .filter_map(|(pattern, user)| {
                let own = crate::own_records::own_database_name(log, &user)?;
                (pattern == crate::own_records::grant_pattern(&own)).then_some(own)
            })
            .filter(|own| !found.iter().any(|(n, _)| n == own))
            .collect();
        gone.sort();
        gone.dedup();
        found.extend(gone.into_iter().map(|n| (n, Holds::Gone)));
        Ok(found)
    }

    /// The jobs of every database of the log `database` ([`Connection::log_databases`])
    /// that `selection` covers (those with an event in its time), each database's oldest
    /// first. A user's database's jobs are that user's, whatever its rows say.
    /// A database that cannot be read (a failing statement, one slower than the
    /// connection's bound) is passed over and named in [`Jobs::unread`]: one user's rows
    /// never cost the report of the others.
    pub fn jobs(&mut self, database: &str, selection: &Selection) -> Result<Jobs, DbError> {
        let mut all = Jobs::default();
        // the server stops a statement the client gave up on, rather than run it on
        // (MariaDB's; another server refuses the setting and is bounded by the client alone)
        let bound = self.timeout.as_secs().max(1);
        let _ = mysql::prelude::Queryable::query_drop(
            &mut self.conn,
            format!("SET SESSION max_statement_time = {bound}"),
        );
        for (name, held) in self.granted_databases(database)? {
            let why = match held {
                Holds::Whole => None,
                Holds::Part => Some(format!(
                    "it does not hold the log's tables ({}) as tables: one is missing or is a \
                     view; drop what is not the log's, and `scr db grant` makes the missing \
                     tables again",
                    crate::own_records::TABLES.join(", ")
                )),
                Holds::Ungranted => Some(format!(
                    "it holds the log's tables and is named as a user's database, but no \
                     account of that user is granted it (the account was dropped, or it is \
                     not a user's database): whose records these are is not known, so they are \
                     not read. To read them as that user's, grant them again: GRANT SELECT, \
                     INSERT ON `{}`.* TO the user's account",
                    crate::own_records::grant_pattern(&name)
                )),
                Holds::Gone => Some(
                    "it is granted to its user but no longer exists (it was dropped): the \
                     records that user's jobs wrote there are gone, and the server refuses \
                     their records from now on; `scr db grant` makes it again, empty (or \
                     REVOKE the grant)"
                        .to_string(),
                ),
            };
            if let Some(why) = why {
                all.unread.push((name, why));
                continue;
            }
            let owner = match crate::own_records::owner_of(database, &name) {
                Some(owner) => Some(owner),
                // the log named may itself be a user's database (an administrator reading
                // one user's records by its name): its rows are that user's alone
                None => self.granted_owner(&name)?,
            };
            if let (Some(owner), Some(user)) = (&owner, &selection.user)
                && owner != user
            {
                continue;
            }
            match self.jobs_in(&name, owner, selection) {
                Ok((jobs, cut)) => {
                    all.jobs.extend(jobs);
                    if cut {
                        all.unread.push((
                            name,
                            format!(
                                "read in part: only its newest {MOST_JOBS_OF_A_USER} jobs with \
                                 records in this selection are read, the older left out (a \
                                 user's database is read to a bound; --since narrows the \
                                 selection)"
                            ),
                        ));
                    }
                }
                Err(e) => all.unread.push((name, e.to_string())),
            }
        }
        Ok(all)
    }

    /// The user whose database `name` is when `scr db grant` made it: `<log>_<user>`,
    /// granted to that user.
    fn granted_owner(&mut self, name: &str) -> Result<Option<String>, DbError> {
        let sql = format!(
            "SELECT DISTINCT {owner} FROM `information_schema`.`SCHEMA_PRIVILEGES` \
             WHERE BINARY `TABLE_SCHEMA` = BINARY ?",
            owner = crate::own_records::GRANTEE_USER,
        );
        let grantees = self.column(&sql, vec![crate::own_records::grant_pattern(name).into()])?;
        Ok(grantees.into_iter().find(|user| {
            name.strip_suffix(user.as_str())
                .is_some_and(|log| log.len() > 1 && log.ends_with('_'))
        }))
    }

    fn jobs_in(
        &mut self,
        database: &str,
        owner: Option<String>,
        selection: &Selection,
    ) -> Result<(Vec<StoredJob>, bool), DbError> {
        // each table named with its database: a prepared statement keeps the tables it was
        // prepared on, whatever database is in use later
        let db = crate::check_database_name(database)?;
        // a user's database is read to a bound, its newest jobs: one user's rows never cost
        // the report of the others more than that (the log's own database, every user's, is
        // read whole)
        let limit = if owner.is_some() {
            format!("LIMIT {}", MOST_JOBS_OF_A_USER + 1)
        } else {
            String::new()
        };
        let sql = &format!(
            "SELECT j.`id`, u.`name`, n.`name` FROM `{db}`.`jobs` j \
             JOIN `{db}`.`usernames` u ON u.`id` = j.`username_id` \
             JOIN `{db}`.`jobnames` n ON n.`id` = j.`jobname_id` \
             WHERE (? IS NULL OR u.`name` = ?) \
             AND (? IS NULL OR EXISTS (SELECT 1 FROM `{db}`.`events` e WHERE e.`job_id` = j.`id` \
                  AND e.`start` >= ?)) \
             ORDER BY j.`start` DESC, j.`id` DESC {limit}"
        );
        // in a user's database, the user is the database's, not a row's
        let user = if owner.is_some() {
            None
        } else {
            selection.user.clone()
        };
        let since = since_text(selection);
        let values = vec![
            user.clone().into(),
            user.into(),
            since.clone().into(),
            since.into(),
        ];
        let mut rows: Vec<(u64, String, String)> = self.rows(sql, values)?;
        let cut = owner.is_some() && rows.len() > MOST_JOBS_OF_A_USER;
        rows.truncate(if cut { MOST_JOBS_OF_A_USER } else { rows.len() });
        // oldest first
        rows.reverse();
        let jobs = rows
            .into_iter()
            .map(|(id, user, name)| StoredJob {
                database: database.to_string(),
                id,
                user: owner.clone().unwrap_or(user),
                name,
            })
            .collect();
        Ok((jobs, cut))
    }

    /// The events of `job` in `selection`'s time, in the order they happened (by when
    /// each ended, then as they were written). An event that moved bytes has them from
    /// its transfer (the transfer of v3.1's name for it: `CHECKPOINT` for `CHECKPOINT_END`
    /// …: the one that began when the event did, else one under way then, as v3.1 stamps a
    /// flush's event when it ended); v3.1's own `…_END` events, which it records without a
    /// start, take their time from that transfer too.
    pub fn events_of(
        &mut self,
        job: &StoredJob,
        selection: &Selection,
    ) -> Result<Vec<StoredEvent>, DbError> {
        self.events_of_within(job, selection, None)
            .map(|(events, _)| events)
    }

    /// [`Connection::events_of`], of the job's first `most` events and as many transfers at
    /// most (all with None); whether it holds more than that.
    pub fn events_of_within(
        &mut self,
        job: &StoredJob,
        selection: &Selection,
        most: Option<usize>,
    ) -> Result<(Vec<StoredEvent>, bool), DbError> {
        let db = crate::check_database_name(&job.database)?;
        let limit = most.map_or(String::new(), |n| format!(" LIMIT {}", n + 1));
        // two reads of the job's rows, paired here: a query pairing each event with its
        // transfer on the server costs events × transfers, which a user's rows could make
        // the administrator's report wait on
        let sql = format!(
            "SELECT t.`name`, e.`dset_id`, e.`dset_name`, DATE_FORMAT(e.`start`, '{TIME_FORMAT_SQL}'), \
             e.`secs`, LEFT(e.`note`, {MOST_NOTE}) \
             FROM `{db}`.`events` e JOIN `{db}`.`types` t ON t.`id` = e.`type_id` \
             WHERE e.`job_id` = ? ORDER BY e.`id`{limit}"
        );
        type EventRow = (
            String,
            Option<u64>,
            Option<String>,
            Option<String>,
            Option<f64>,
            Option<Vec<u8>>,
        );
        let mut rows: Vec<EventRow> = self.rows(&sql, vec![job.id.into()])?;
        let sql = format!(
            "SELECT t.`name`, x.`dset_id`, DATE_FORMAT(x.`start`, '{TIME_FORMAT_SQL}'), \
             DATE_FORMAT(x.`end`, '{TIME_FORMAT_SQL}'), x.`bytes` \
             FROM `{db}`.`transfers` x JOIN `{db}`.`types` t ON t.`id` = x.`type_id` \
             WHERE x.`job_id` = ? ORDER BY x.`id`{limit}"
        );
        type TransferRow = (
            String,
            Option<u64>,
            Option<String>,
            Option<String>,
            Option<f64>,
        );
        let mut transfers: Vec<TransferRow> = self.rows(&sql, vec![job.id.into()])?;
        let cut = most.is_some_and(|n| rows.len() > n || transfers.len() > n);
        if let Some(n) = most {
            rows.truncate(n);
            transfers.truncate(n);
        }
        let mut by_kind: std::collections::HashMap<(String, u64), Vec<Stored>> =
            std::collections::HashMap::new();
        for (kind, dset, start, end, bytes) in transfers {
            if let Some(dset) = dset {
                by_kind.entry((kind, dset)).or_default().push(Stored {
                    start: parse_time(start),
                    end: parse_time(end),
                    bytes,
                });
            }
        }
        let since = since_instant(selection);
        let mut events: Vec<StoredEvent> = rows
            .into_iter()
            .map(|(kind, dset, dset_name, start, secs, note)| {
                let start = parse_time(start);
                let transfer = dset
                    .and_then(|d| by_kind.get(&(transfer_kind(&kind).to_string(), d)))
                    .and_then(|list| transfer_of(list, start));
                let (bytes, end) = transfer.map_or((None, None), |x| (x.bytes, x.end));
                // (v3.1's `…_END` events: no start of their own, their transfer's span)
                let start = start.or_else(|| end?.checked_sub_signed(span(secs)?));
                StoredEvent {
                    kind,
                    dset,
                    dset_name,
                    start,
                    secs,
                    note: note.map(|n| String::from_utf8_lossy(&n).into_owned()),
                    bytes,
                }
            })
            .filter(|e| since.is_none_or(|since| e.started_at().is_some_and(|t| t >= since)))
            .collect();
        // in time order, as written within a second (a stable sort of rows in id order):
        // instants, so writers in other zones, or either side of a change of daylight
        // time, are not taken out of order
        events.sort_by_cached_key(|e| e.ended_at());
        Ok((events, cut))
    }
}

/// The longest note read back: what the report shows of one is short, and a user's rows
/// could hold notes of any length.
const MOST_NOTE: usize = 4096;

/// A row of `transfers`, as an event is paired with it.
struct Stored {
    start: Option<NaiveDateTime>,
    end: Option<NaiveDateTime>,
    bytes: Option<f64>,
}

/// The transfer kind of an event kind: v3.1's name for its transfer (`CHECKPOINT` for
/// `CHECKPOINT_END` …), the kind itself where none.
fn transfer_kind(event: &str) -> &str {
    let (kind, background) = crate::text_log_kind(event);
    crate::v3_1_names(kind, background).1
}

/// The transfer of an event that began at `start` among those of its kind and dataset
/// (oldest first): the newest that began then, else the newest under way then (v3.1 stamps
/// a flush's event with its end), else, for an event without a start, the newest.
fn transfer_of(list: &[Stored], start: Option<NaiveDateTime>) -> Option<&Stored> {
    let Some(start) = start else {
        return list.last();
    };
    list.iter()
        .rev()
        .find(|x| x.start == Some(start))
        .or_else(|| {
            list.iter().rev().find(|x| {
                x.start
                    .zip(x.end)
                    .is_some_and(|(a, b)| a <= start && start <= b)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_note(note: &str) -> StoredEvent {
        StoredEvent {
            kind: "X".into(),
            dset: None,
            dset_name: None,
            start: None,
            secs: None,
            note: Some(note.into()),
            bytes: None,
        }
    }

    #[test]
    fn a_note_gives_back_the_fields_the_text_log_wrote() {
        let e = with_note("attempt=2 node=n3 reason=Failed to ping");
        assert_eq!(
            e.note_fields(),
            [
                ("attempt".to_string(), "2".to_string()),
                ("node".into(), "n3".into()),
                ("reason".into(), "Failed to ping".into()),
            ]
        );
        let e = with_note("message=(ckpt.2) drained and current: 2 = 2");
        assert_eq!(
            e.note_fields(),
            [(
                "message".to_string(),
                "(ckpt.2) drained and current: 2 = 2".to_string()
            )]
        );
        assert_eq!(with_note("").note_fields(), []);
    }

    /// Seconds anyone may have written (a user's own database takes any row) make no time,
    /// and never a panic.
    #[test]
    fn seconds_no_event_can_take_make_no_end() {
        let mut e = with_note("");
        e.start = parse_time(Some("2026-05-06 07:00:01".into()));
        for secs in [1e15, -1.0, f64::NAN, f64::INFINITY, 9.3e18] {
            e.secs = Some(secs);
            assert_eq!(e.end(), None, "{secs}");
        }
        // the latest a DATETIME holds, and the most seconds taken: a time, not a panic
        e.start = parse_time(Some("9999-12-31 23:59:59".into()));
        e.secs = Some(1e9);
        assert!(e.end().is_some());
    }

    /// A run in Tokyo at 10:00 (01:00 UTC) came before one in New York at 20:30 the day
    /// before by its clock (01:30 UTC): the instants order them, not the local times.
    #[test]
    fn records_written_in_other_zones_order_by_their_instants() {
        let at = |time: &str, offset: &str| {
            let mut e = with_note(&format!("ranks=2 utc_offset={offset}"));
            e.start = parse_time(Some(time.into()));
            e.secs = Some(0.0);
            e
        };
        let tokyo = at("2026-11-29 10:00:00", "+09:00");
        let new_york = at("2026-11-28 20:30:00", "-05:00");
        assert!(tokyo.end() > new_york.end());
        assert!(tokyo.ended_at() < new_york.ended_at());
        assert_eq!(
            tokyo.ended_at().unwrap().to_rfc3339(),
            "2026-11-29T10:00:00+09:00"
        );
        // a noted offset that is none is the reader's local time, as a record without one
        let odd = at("2026-11-29 10:00:00", "+99:00");
        let plain = at("2026-11-29 10:00:00", "");
        assert!(odd.ended_at().is_some());
        assert_eq!(odd.ended_at(), plain.ended_at());
    }

    #[test]
    fn an_event_ends_its_seconds_after_its_start() {
        let mut e = with_note("");
        e.start = parse_time(Some("2026-05-06 07:00:01".into()));
        e.secs = Some(2.4);
        assert_eq!(
            e.end().unwrap().format(TIME_FORMAT).to_string(),
            "2026-05-06 07:00:03"
        );
    }
}
