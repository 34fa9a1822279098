//! Each user their own records. SCR v3.1's log lets every account that may log read (and
//! write) every job's records. Here a user's account gets a database of its own whose
//! tables are views of the log's tables: the same names and columns, so the library logs
//! into it unchanged (`SCR_LOG_DB_NAME` names it), each showing only that user's rows and
//! taking only rows of theirs (`WITH CHECK OPTION`). The account is granted nothing else,
//! so it reads no other user's records and writes none in their name; the administrator
//! reads every user's in the log's own tables.
//!
//! ```no_run
//! # fn admin() -> scr_db::Connection { unimplemented!() }
//! let mut conn = admin();
//! // tables `scr_alice.events`, … of alice's rows of `scr.events`, …; alice may read and add
//! conn.grant_own_records("scr", "scr_alice", "alice", "%").unwrap();
//! ```

use crate::{Connection, DbError, check_database_name};

/// The database of `user`'s own records beside the log's `database`: `<database>_<user>`,
/// None where that is no name [`check_database_name`] takes (a `.` or `-` in the user's).
pub fn own_database_name(database: &str, user: &str) -> Option<String> {
    let name = format!("{database}_{user}");
    check_database_name(&name).is_ok().then_some(name)
}

/// `name` when it may stand in a statement as an account's user or host part: quoted, it
/// can hold nothing that ends the quote.
fn account_part(name: &str, host: bool) -> Result<&str, DbError> {
    let fine =
        |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c) || (host && "%:".contains(c));
    if name.is_empty() || name.len() > 80 || !name.chars().all(fine) {
        return Err(DbError::BadAccount(name.to_string()));
    }
    Ok(name)
}

/// The statements that make `own` the database of `user`'s records among the log's in
/// `database`, and let the account `user`@`host` read and add to it alone.
pub fn statements(
    database: &str,
    own: &str,
    user: &str,
    host: &str,
) -> Result<Vec<String>, DbError> {
    let log = check_database_name(database)?;
    let own = check_database_name(own)?;
    if own == log {
        return Err(DbError::BadName(format!(
            "{own} (the user's database must not be the log's own)"
        )));
    }
    let user = account_part(user, false)?;
    let host = account_part(host, true)?;
    // the user's rows: their name's, their jobs', their jobs' events and transfers
    let user_ids = format!("SELECT `id` FROM `{log}`.`usernames` WHERE `name` = '{user}'");
    let job_ids = format!("SELECT `id` FROM `{log}`.`jobs` WHERE `username_id` IN ({user_ids})");
    let view = |table: &str, rows: &str, check: bool| {
        format!(
            "CREATE OR REPLACE DEFINER = CURRENT_USER SQL SECURITY DEFINER VIEW `{own}`.`{table}` \
             AS SELECT * FROM `{log}`.`{table}`{rows}{}",
            if check { " WITH CHECK OPTION" } else { "" }
        )
    };
    Ok(vec![
        format!("CREATE DATABASE IF NOT EXISTS `{own}`"),
        // the kinds of events are everyone's
        view("types", "", false),
        view("usernames", &format!(" WHERE `name` = '{user}'"), true),
        // a job's name (its prefix) is seen while it is the user's job's or nobody's yet:
        // the library adds the name, then the job that makes it the user's
        view(
            "jobnames",
            &format!(
                " WHERE `id` IN (SELECT `jobname_id` FROM `{log}`.`jobs` WHERE `username_id` IN ({user_ids})) \
                 OR `id` NOT IN (SELECT `jobname_id` FROM `{log}`.`jobs`)"
            ),
            false,
        ),
        view(
            "jobs",
            &format!(" WHERE `username_id` IN ({user_ids})"),
            true,
        ),
        view("events", &format!(" WHERE `job_id` IN ({job_ids})"), true),
        view(
            "transfers",
            &format!(" WHERE `job_id` IN ({job_ids})"),
            true,
        ),
        format!("GRANT SELECT, INSERT ON `{own}`.* TO '{user}'@'{host}'"),
    ])
}

impl Connection {
    /// Makes `own` the database of `user`'s own records among the log's in `database`
    /// ([`statements`]) and grants the account `user`@`host` (which must exist) reading
    /// and adding to it. Run as an account that may create views on the log's tables and
    /// grant; the views read the log's tables with its rights.
    pub fn grant_own_records(
        &mut self,
        database: &str,
        own: &str,
        user: &str,
        host: &str,
    ) -> Result<(), DbError> {
        for statement in statements(database, own, user, host)? {
            self.exec(&statement, vec![])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_end_a_quote_are_refused() {
        for (user, host) in [
            ("al'ice", "%"),
            ("alice", "x' OR 1"),
            ("", "%"),
            ("a b", "%"),
        ] {
            assert!(
                matches!(
                    statements("scr", "scr_x", user, host),
                    Err(DbError::BadAccount(_))
                ),
                "{user:?}@{host:?}"
            );
        }
        assert!(statements("scr", "scr", "alice", "%").is_err());
        assert!(statements("scr", "scr_j.doe", "j.doe", "%").is_err());
        assert_eq!(
            own_database_name("scr", "alice").as_deref(),
            Some("scr_alice")
        );
        assert_eq!(own_database_name("scr", "j.doe"), None);
        let all = statements("scr", "scr_jdoe", "j.doe", "10.0.%").unwrap();
        assert!(
            all.last().unwrap().ends_with("TO 'j.doe'@'10.0.%'"),
            "{all:?}"
        );
    }
}
