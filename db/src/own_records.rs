//! Each user their own records. SCR v3.1's log lets every account that may log read (and
//! write) every job's records. Here a user's account gets a database of its own whose
//! tables are views of the log's tables: the same names and columns, so the library logs
//! into it unchanged (`SCR_LOG_DB_NAME` names it), each showing only that user's rows and
//! taking only rows of theirs (`WITH CHECK OPTION`). The account is granted nothing else,
//! so it reads no other user's records and writes none in their name; the administrator
//! reads every user's in the log's own tables.
//!
//! The views read the log's tables as an account of their own, `<log>_views@localhost`:
//! locked (nobody logs in as it) and granted reading and adding to the log's tables alone,
//! so a view can do no more than that whoever made it. A trigger on the log's `jobs` keeps
//! a job name (a prefix) to the user whose job first took it: a user cannot make a job of
//! another user's prefix to see its name.
//!
//! ```no_run
//! # fn admin() -> scr_db::Connection { unimplemented!() }
//! let mut conn = admin();
//! // tables `scr_alice.events`, … of alice's rows of `scr.events`, …; every account
//! // alice@… may read and add there
//! let granted = conn.grant_own_records("scr", "scr_alice", "alice", None).unwrap();
//! assert!(!granted.is_empty());
//! ```

use crate::{Connection, DbError, check_database_name};

/// The tables of the log a user's database has a view of, each by the same name.
pub const VIEWS: [&str; 6] = [
    "types",
    "usernames",
    "jobnames",
    "jobs",
    "events",
    "transfers",
];

/// Databases of the server's own that are never a user's.
const SYSTEM_DATABASES: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// The trigger on the log's `jobs` that keeps a job name to one user.
const ONE_USER_PER_JOB_NAME: &str = "scr_job_name_of_one_user";

/// The database of `user`'s own records beside the log's `database`: `<database>_<user>`,
/// None where that is no name [`check_database_name`] takes (a `.` or `-` in the user's).
pub fn own_database_name(database: &str, user: &str) -> Option<String> {
    let name = format!("{database}_{user}");
    check_database_name(&name).is_ok().then_some(name)
}

/// The user part of the account the views of `database`'s tables read them as (its host
/// part is `localhost`).
pub fn definer_name(database: &str) -> String {
    format!("{database}_views")
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

/// A database name as a GRANT's pattern that matches it alone: a GRANT takes `_` and `%`
/// in a database name for wildcards (`scr_j_smith` would reach `scr_jasmith`).
fn grant_pattern(database: &str) -> String {
    database.replace('_', "\\_").replace('%', "\\%")
}

/// The statements that make `own` the database of `user`'s records among the log's in
/// `database`, and let each account `user`@`host` of `hosts` read and add to it alone.
pub fn statements(
    database: &str,
    own: &str,
    user: &str,
    hosts: &[String],
) -> Result<Vec<String>, DbError> {
    let log = check_database_name(database)?;
    let own = check_database_name(own)?;
    if own == log || SYSTEM_DATABASES.contains(&own.to_ascii_lowercase().as_str()) {
        return Err(DbError::BadName(format!(
            "{own} (the user's database must be one of its own, neither the log's nor the server's)"
        )));
    }
    let user = account_part(user, false)?;
    let definer = format!("'{}'@'localhost'", account_part(&definer_name(log), false)?);
    let mut grantees = Vec::with_capacity(hosts.len());
    for host in hosts {
        grantees.push(format!("'{user}'@'{}'", account_part(host, true)?));
    }
    // the user's rows: their name's, their jobs', their jobs' events and transfers
    let user_ids = format!("SELECT `id` FROM `{log}`.`usernames` WHERE `name` = '{user}'");
    let job_ids = format!("SELECT `id` FROM `{log}`.`jobs` WHERE `username_id` IN ({user_ids})");
    let view = |table: &str, rows: &str, check: bool| {
        format!(
            "CREATE OR REPLACE DEFINER = {definer} SQL SECURITY DEFINER VIEW `{own}`.`{table}` \
             AS SELECT * FROM `{log}`.`{table}`{rows}{}",
            if check { " WITH CHECK OPTION" } else { "" }
        )
    };
    let mut all = vec![
        format!("CREATE USER IF NOT EXISTS {definer} ACCOUNT LOCK"),
        format!(
            "GRANT SELECT, INSERT ON `{}`.* TO {definer}",
            grant_pattern(log)
        ),
        format!("GRANT TRIGGER ON `{log}`.`jobs` TO {definer}"),
        // a view may not read the table it adds to, so the job-name rule is the table's
        format!(
            "CREATE OR REPLACE DEFINER = {definer} TRIGGER `{log}`.`{ONE_USER_PER_JOB_NAME}` \
             BEFORE INSERT ON `{log}`.`jobs` FOR EACH ROW \
             IF EXISTS (SELECT 1 FROM `{log}`.`jobs` WHERE `jobname_id` = NEW.`jobname_id` \
             AND `username_id` <> NEW.`username_id`) THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = \
             'SCR: this job name (prefix) is another user''s job''s; log from a prefix of your own'; \
             END IF"
        ),
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
    ];
    for grantee in grantees {
        all.push(format!(
            "GRANT SELECT, INSERT ON `{}`.* TO {grantee}",
            grant_pattern(own)
        ));
    }
    Ok(all)
}

impl Connection {
    /// Makes `own` the database of `user`'s own records among the log's in `database`
    /// ([`statements`]) and grants the accounts `user`@`host` reading and adding to it:
    /// the one of `host` when given, else every account of that user name. Returns the
    /// hosts granted.
    ///
    /// Refuses, changing nothing, where granting would reach further than it says: no such
    /// account (a GRANT could create one without a password); an account that already
    /// reads the log's tables some other way; a database `own` that holds anything but
    /// these views; an account of the views' name that somebody logs in as. Run as an
    /// account that may create accounts, views and triggers and grant.
    pub fn grant_own_records(
        &mut self,
        database: &str,
        own: &str,
        user: &str,
        host: Option<&str>,
    ) -> Result<Vec<String>, DbError> {
        // a GRANT to a missing account fails rather than makes one
        self.exec(
            "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_CREATE_USER')",
            vec![],
        )?;
        let hosts = self.accounts(user, host)?;
        statements(database, own, user, &hosts)?;
        for host in &hosts {
            self.refuse_wider_rights(database, user, host)?;
        }
        self.refuse_foreign_database(own)?;
        self.refuse_foreign_definer(database)?;
        for statement in statements(database, own, user, &hosts)? {
            self.exec(&statement, vec![])?;
        }
        Ok(hosts)
    }

    /// The hosts of the accounts of `user` to grant: `host`'s if it exists, else all.
    fn accounts(&mut self, user: &str, host: Option<&str>) -> Result<Vec<String>, DbError> {
        let hosts = self.column(
            "SELECT `Host` FROM `mysql`.`user` WHERE `User` = ? ORDER BY `Host`",
            vec![user.into()],
        )?;
        let hosts: Vec<String> = match host {
            Some(host) => hosts.into_iter().filter(|h| h == host).collect(),
            None => hosts,
        };
        if hosts.is_empty() {
            let account = format!("'{user}'@'{}'", host.unwrap_or("…"));
            return Err(DbError::Refused(format!(
                "there is no account {account} on the server: create it first (CREATE USER, \
                 with the site's way of logging in), then grant"
            )));
        }
        Ok(hosts)
    }

    /// Refuses an account that reads the log's tables already (a global privilege, one on
    /// a database pattern that takes in the log's, or one on its tables).
    fn refuse_wider_rights(
        &mut self,
        database: &str,
        user: &str,
        host: &str,
    ) -> Result<(), DbError> {
        let grantee = format!("'{user}'@'{host}'");
        let mut wider = self.column(
            "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON *.*') FROM `information_schema`.`USER_PRIVILEGES` \
             WHERE `GRANTEE` = ? AND `PRIVILEGE_TYPE` <> 'USAGE'",
            vec![grantee.clone().into()],
        )?;
        wider.extend(self.column(
            "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON `', `TABLE_SCHEMA`, '`.*') \
             FROM `information_schema`.`SCHEMA_PRIVILEGES` WHERE `GRANTEE` = ? AND ? LIKE `TABLE_SCHEMA`",
            vec![grantee.clone().into(), database.into()],
        )?);
        wider.extend(self.column(
            "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON `', `TABLE_SCHEMA`, '`.`', `TABLE_NAME`, '`') \
             FROM `information_schema`.`TABLE_PRIVILEGES` WHERE `GRANTEE` = ? AND `TABLE_SCHEMA` = ?",
            vec![grantee.clone().into(), database.into()],
        )?);
        if wider.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "{grantee} can already read the log's tables ({}): its own database would hide \
             nothing; REVOKE those first, then grant",
            wider.join(", ")
        )))
    }

    /// Refuses a database `own` that exists and holds anything but the views this makes.
    fn refuse_foreign_database(&mut self, own: &str) -> Result<(), DbError> {
        let tables = self.column(
            "SELECT CONCAT(`TABLE_NAME`, ' (', `TABLE_TYPE`, ')') FROM `information_schema`.`TABLES` \
             WHERE `TABLE_SCHEMA` = ?",
            vec![own.into()],
        )?;
        let foreign: Vec<&String> = tables
            .iter()
            .filter(|t| !VIEWS.iter().any(|v| **t == format!("{v} (VIEW)")))
            .collect();
        if foreign.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "database {own} exists and holds {} besides a user's views of the log: \
             name another with --database",
            foreign
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    /// Refuses an account of the views' name that is not locked: somebody's login.
    fn refuse_foreign_definer(&mut self, database: &str) -> Result<(), DbError> {
        let definer = definer_name(database);
        let open = self.column(
            "SELECT `User` FROM `mysql`.`global_priv` WHERE `User` = ? AND `Host` = 'localhost' \
             AND IFNULL(JSON_VALUE(`Priv`, '$.account_locked'), '0') NOT IN ('1', 'true')",
            vec![definer.clone().into()],
        )?;
        if open.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "the account '{definer}'@'localhost', which the views read the log as, exists and \
             is not locked: somebody may log in as it; DROP or lock it (ALTER USER … ACCOUNT LOCK) \
             if it is not in use, then grant"
        )))
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
                    statements("scr", "scr_x", user, &[host.to_string()]),
                    Err(DbError::BadAccount(_))
                ),
                "{user:?}@{host:?}"
            );
        }
        assert!(statements("scr", "scr_j.doe", "j.doe", &[]).is_err());
        assert_eq!(
            own_database_name("scr", "alice").as_deref(),
            Some("scr_alice")
        );
        assert_eq!(own_database_name("scr", "j.doe"), None);
        let all = statements("scr", "scr_jdoe", "j.doe", &["10.0.%".to_string()]).unwrap();
        assert!(
            all.last().unwrap().ends_with("TO 'j.doe'@'10.0.%'"),
            "{all:?}"
        );
    }

    #[test]
    fn the_log_and_the_servers_databases_are_never_a_users() {
        for own in ["scr", "mysql", "MySQL", "information_schema", "sys"] {
            assert!(
                matches!(
                    statements("scr", own, "alice", &["%".to_string()]),
                    Err(DbError::BadName(_))
                ),
                "{own}"
            );
        }
    }

    #[test]
    fn a_grant_names_the_users_database_alone_not_a_pattern() {
        let all = statements("scr_log", "scr_log_j_smith", "j_smith", &["%".to_string()]).unwrap();
        let grants: Vec<&String> = all
            .iter()
            .filter(|s| s.starts_with("GRANT SELECT"))
            .collect();
        assert_eq!(
            grants,
            [
                "GRANT SELECT, INSERT ON `scr\\_log`.* TO 'scr_log_views'@'localhost'",
                "GRANT SELECT, INSERT ON `scr\\_log\\_j\\_smith`.* TO 'j_smith'@'%'",
            ],
            "{all:?}"
        );
        // every view reads as the locked account, never as whoever ran the grant
        assert!(
            all.iter()
                .filter(|s| s.contains(" VIEW "))
                .all(|s| s.contains("DEFINER = 'scr_log_views'@'localhost'")),
            "{all:?}"
        );
    }
}
