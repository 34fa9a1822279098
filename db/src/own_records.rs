//! Each user their own records. SCR v3.1's log lets every account that may log read (and
//! write) every job's records. Here a user's account gets a database of its own,
//! `<log>_<user>`, holding the log's tables themselves (the same names and columns, so
//! the library logs into it unchanged: `SCR_LOG_DB_NAME` names it), and is granted
//! reading and adding there and nothing else. Nothing is shared between users' databases
//! (no view over common tables, whose filters a query can probe, no common counter or
//! name), so a user reads no other user's records, writes none in their name, and can
//! spoil only their own. The administrator reads them all: `scr report --db` on the log
//! takes in every `<log>_<user>` database beside it, each as that user's.
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
//! let mut conn = Connection::open(&admin, false).unwrap();
//! // database `scr_alice` of the log's tables; every account alice@… may read and add there
//! let granted = conn.grant_own_records("scr", "alice", None).unwrap();
//! assert!(!granted.is_empty());
//! ```

use crate::{Connection, DbError, check_database_name};

/// The log's tables, each in a user's database too.
pub const TABLES: [&str; 6] = [
    "types",
    "usernames",
    "jobnames",
    "jobs",
    "events",
    "transfers",
];

/// The user part of information_schema's GRANTEE (`'alice'@'%'`): between the first quote
/// and the quote before its `@`.
pub(crate) const GRANTEE_USER: &str = "SUBSTRING(`GRANTEE`, 2, LOCATE('''@''', `GRANTEE`) - 2)";

/// Databases of the server's own that are never a user's.
const SYSTEM_DATABASES: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// The database of `user`'s own records beside the log's `database`: `<database>_<user>`,
/// None where that is no name [`check_database_name`] takes (a `.` or `-` in the user's).
pub fn own_database_name(database: &str, user: &str) -> Option<String> {
    let name = format!("{database}_{user}");
    check_database_name(&name).is_ok().then_some(name)
}

/// Whose database `name` is beside the log's `database`: the user of `<database>_<user>`.
pub fn owner_of(database: &str, name: &str) -> Option<String> {
    name.strip_prefix(database)?
        .strip_prefix('_')
        .filter(|user| !user.is_empty())
        .map(str::to_string)
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
pub(crate) fn grant_pattern(database: &str) -> String {
    database.replace('_', "\\_").replace('%', "\\%")
}

/// The database of `user`'s records beside the log's `database`, checked: a name the
/// server takes, neither the log's nor one of the server's own.
fn own_database(database: &str, user: &str) -> Result<String, DbError> {
    let log = check_database_name(database)?;
    account_part(user, false)?;
    let own = own_database_name(log, user).ok_or_else(|| {
        DbError::Refused(format!(
            "{user:?} makes no database name ({log}_{user}: a database name is letters, \
             digits, `_` or `$`, at most 64 of them): a user whose name holds `.` or `-` logs \
             into a database the site names for them by hand"
        ))
    })?;
    if SYSTEM_DATABASES.contains(&own.to_ascii_lowercase().as_str()) {
        return Err(DbError::Refused(format!(
            "{own} is one of the server's own databases, no user's"
        )));
    }
    Ok(own)
}

/// The GRANTs that let each account `user`@`host` of `hosts` read and add to `own` alone.
pub fn grants(own: &str, user: &str, hosts: &[String]) -> Result<Vec<String>, DbError> {
    let own = check_database_name(own)?;
    let user = account_part(user, false)?;
    hosts
        .iter()
        .map(|host| {
            Ok(format!(
                "GRANT SELECT, INSERT ON `{}`.* TO '{user}'@'{}'",
                grant_pattern(own),
                account_part(host, true)?
            ))
        })
        .collect()
}

impl Connection {
    /// Makes `<database>_<user>` the database of `user`'s own records (the log's tables,
    /// made when missing) and grants the accounts `user`@`host` reading and adding there:
    /// the one of `host` when given, else every account of that user name. Returns the
    /// hosts granted.
    ///
    /// Refuses, changing nothing, where granting would reach further than it says: no such
    /// account (a GRANT could create one without a password); an account that reads the
    /// log's tables or another user's already; a database of that name that holds anything
    /// but the log's tables, or that another account may already read or write. Run as an
    /// account that may create databases and grant.
    pub fn grant_own_records(
        &mut self,
        database: &str,
        user: &str,
        host: Option<&str>,
    ) -> Result<Vec<String>, DbError> {
        let own = own_database(database, user)?;
        // a GRANT to a missing account fails rather than makes one
        self.exec(
            "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_CREATE_USER')",
            vec![],
        )?;
        let hosts = self.accounts(user, host)?;
        let statements = grants(&own, user, &hosts)?;
        for host in &hosts {
            self.refuse_wider_rights(database, &own, user, host)?;
        }
        self.refuse_foreign_database(database, &own)?;
        self.refuse_other_accounts(&own, user)?;
        self.refuse_records_not_granted(&own, user)?;
        self.init_schema(&own)?;
        for statement in statements {
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

    /// Refuses an account that reads the log's tables, or another user's, already: a
    /// global privilege, one on a database pattern that takes in the log's or another
    /// `<log>_…` database, or one on their tables; and one that may do more than read and
    /// add in its own database.
    fn refuse_wider_rights(
        &mut self,
        database: &str,
        own: &str,
        user: &str,
        host: &str,
    ) -> Result<(), DbError> {
        let grantee = format!("'{user}'@'{host}'");
        let mut wider = self.column(
            "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON *.*') FROM `information_schema`.`USER_PRIVILEGES` \
             WHERE `GRANTEE` = ? AND `PRIVILEGE_TYPE` <> 'USAGE'",
            vec![grantee.clone().into()],
        )?;
        // (the log's name followed by `_`, as a pattern: every user's database)
        let others = format!("{}\\_%", grant_pattern(database));
        wider.extend(self.column(
            "SELECT CONCAT(p.`PRIVILEGE_TYPE`, ' ON `', p.`TABLE_SCHEMA`, '`.*') \
             FROM `information_schema`.`SCHEMA_PRIVILEGES` p WHERE p.`GRANTEE` = ? \
             AND BINARY p.`TABLE_SCHEMA` <> BINARY ? AND (? LIKE BINARY p.`TABLE_SCHEMA` OR EXISTS ( \
               SELECT 1 FROM `information_schema`.`SCHEMATA` s WHERE s.`SCHEMA_NAME` LIKE ? \
               AND BINARY s.`SCHEMA_NAME` <> BINARY ? AND s.`SCHEMA_NAME` LIKE BINARY p.`TABLE_SCHEMA`))",
            vec![
                grantee.clone().into(),
                grant_pattern(own).into(),
                database.into(),
                others.clone().into(),
                own.into(),
            ],
        )?);
        // on its own database, reading and adding and nothing more: an account that may
        // alter, drop or make tables there could turn its records into what the report does
        // not read (a view for a table), and the grant would say less than it gives
        wider.extend(self.column(
            "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON `', `TABLE_SCHEMA`, '`.*') \
             FROM `information_schema`.`SCHEMA_PRIVILEGES` WHERE `GRANTEE` = ? \
             AND ? LIKE BINARY `TABLE_SCHEMA` AND `PRIVILEGE_TYPE` NOT IN ('SELECT', 'INSERT')",
            // (a grant's database is a pattern: `scr_bob`, `scr_bo_` and `scr\_bob` all
            // take in scr_bob)
            vec![grantee.clone().into(), own.into()],
        )?);
        // a table's or a column's grant: on the log or on another user's database, or more
        // than reading and adding on a table of its own
        for view in ["TABLE_PRIVILEGES", "COLUMN_PRIVILEGES"] {
            wider.extend(self.column(
                &format!(
                    "SELECT CONCAT(`PRIVILEGE_TYPE`, ' ON `', `TABLE_SCHEMA`, '`.`', `TABLE_NAME`, '`') \
                     FROM `information_schema`.`{view}` WHERE `GRANTEE` = ? \
                     AND (`TABLE_SCHEMA` = ? OR (`TABLE_SCHEMA` LIKE ? AND BINARY `TABLE_SCHEMA` <> BINARY ?) \
                          OR (BINARY `TABLE_SCHEMA` = BINARY ? AND `PRIVILEGE_TYPE` NOT IN ('SELECT', 'INSERT')))"
                ),
                vec![
                    grantee.clone().into(),
                    database.into(),
                    others.clone().into(),
                    own.into(),
                    own.into(),
                ],
            )?);
        }
        // what a role or a proxy gives is not judged here: the account may hold neither
        wider.extend(self.column(
            "SELECT CONCAT('the role ', `Role`) FROM `mysql`.`roles_mapping` \
             WHERE `User` = ? AND `Host` = ?",
            vec![user.into(), host.into()],
        )?);
        wider.extend(self.column(
            "SELECT CONCAT('PROXY ON ', `Proxied_user`, '@', `Proxied_host`) FROM `mysql`.`proxies_priv` \
             WHERE `User` = ? AND `Host` = ?",
            vec![user.into(), host.into()],
        )?);
        if wider.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "{grantee} can already read the log's tables or another user's, may do more than \
             read and add in its own database, or holds what this does not judge ({}): the \
             grant would not be all it gives; REVOKE those first, then grant",
            wider.join(", ")
        )))
    }

    /// Refuses a database `own` that exists and holds anything but the log's tables, as
    /// the log's `database` defines them, in a storage engine of the server's own.
    fn refuse_foreign_database(&mut self, database: &str, own: &str) -> Result<(), DbError> {
        let tables = self.column(
            "SELECT CONCAT(`TABLE_NAME`, ' (', `TABLE_TYPE`, ')') FROM `information_schema`.`TABLES` \
             WHERE `TABLE_SCHEMA` = ?",
            vec![own.into()],
        )?;
        let mut foreign: Vec<String> = tables
            .into_iter()
            .filter(|t| !TABLES.iter().any(|v| *t == format!("{v} (BASE TABLE)")))
            .collect();
        // what runs when a row is added, can be called, or runs on a schedule is no user's
        // records either
        for (what, view, prefix) in [
            ("trigger", "TRIGGERS", "TRIGGER"),
            ("routine", "ROUTINES", "ROUTINE"),
            ("scheduled event", "EVENTS", "EVENT"),
        ] {
            foreign.extend(self.column(
                &format!(
                    "SELECT CONCAT('the {what} ', `{prefix}_NAME`) FROM `information_schema`.`{view}` \
                     WHERE `{prefix}_SCHEMA` = ?"
                ),
                vec![own.into()],
            )?);
        }
        // a table stored elsewhere (FEDERATED, CONNECT, SPIDER …) is not records kept here
        foreign.extend(self.column(
            "SELECT CONCAT('the table ', `TABLE_NAME`, ' stored by ', IFNULL(`ENGINE`, '?')) \
             FROM `information_schema`.`TABLES` WHERE `TABLE_SCHEMA` = ? \
             AND `TABLE_TYPE` = 'BASE TABLE' AND IFNULL(`ENGINE`, '') NOT IN ('InnoDB', 'Aria', 'MyISAM')",
            vec![own.into()],
        )?);
        // columns of its own: what the log's tables define, and no more
        let columns = "SELECT CONCAT(`TABLE_NAME`, '.', `COLUMN_NAME`, ' ', `COLUMN_TYPE`) \
                       FROM `information_schema`.`COLUMNS` WHERE `TABLE_SCHEMA` = ? \
                       ORDER BY `TABLE_NAME`, `ORDINAL_POSITION`";
        let here = self.column(columns, vec![own.into()])?;
        let log = self.column(columns, vec![database.into()])?;
        if !log.is_empty() {
            // a column of its tables the log's lack, or one of the log's those tables lack
            let table = |c: &String| c.split('.').next().unwrap_or_default().to_string();
            let tables_here: std::collections::BTreeSet<String> = here.iter().map(table).collect();
            let extra = here.iter().filter(|c| !log.contains(c));
            let missing = log
                .iter()
                .filter(|c| tables_here.contains(&table(c)) && !here.contains(c));
            foreign.extend(
                extra
                    .chain(missing)
                    .map(|c| format!("the column {c} (not the log's)")),
            );
        }
        if foreign.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "database {own} exists and holds {} besides the log's tables: it is not a user's \
             records; move it aside, then grant",
            foreign.join(", ")
        )))
    }

    /// Refuses a database `own` that holds records while none of `user`'s accounts may
    /// read it yet: records someone else wrote there (another log named like a user's
    /// database, `scr_test` beside `scr`), which a grant would hand over.
    fn refuse_records_not_granted(&mut self, own: &str, user: &str) -> Result<(), DbError> {
        let present = self.column(
            "SELECT `TABLE_NAME` FROM `information_schema`.`TABLES` WHERE `TABLE_SCHEMA` = ?",
            vec![own.into()],
        )?;
        let present: Vec<&str> = TABLES
            .iter()
            .copied()
            .filter(|t| present.iter().any(|p| p == t))
            .collect();
        if present.is_empty() {
            return Ok(());
        }
        let granted = !self
            .column(
                &format!(
                    "SELECT `GRANTEE` FROM `information_schema`.`SCHEMA_PRIVILEGES` \
                     WHERE BINARY `TABLE_SCHEMA` = BINARY ? AND BINARY {GRANTEE_USER} = BINARY ?"
                ),
                vec![grant_pattern(own).into(), user.into()],
            )?
            .is_empty();
        // rows of any table: events left for a job id the user's first job will take
        let count = present
            .iter()
            .map(|t| format!("(SELECT COUNT(*) FROM `{own}`.`{t}`)"))
            .collect::<Vec<_>>()
            .join(" + ");
        let rows = self.column(&format!("SELECT CAST({count} AS CHAR)"), vec![])?;
        if granted || rows.first().is_none_or(|n| n == "0") {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "database {own} holds records already and is not {user}'s (no account of {user} \
             may read it): another log, or someone else's; move it aside, then grant"
        )))
    }

    /// Refuses a database `own` that an account of another user may read or write already
    /// (a grant on it, or on a pattern that takes it in): it would not be `user`'s alone.
    fn refuse_other_accounts(&mut self, own: &str, user: &str) -> Result<(), DbError> {
        let mut others = self.column(
            &format!(
                "SELECT DISTINCT `GRANTEE` FROM `information_schema`.`SCHEMA_PRIVILEGES` \
                 WHERE ? LIKE BINARY `TABLE_SCHEMA` AND BINARY {GRANTEE_USER} <> BINARY ?"
            ),
            vec![own.into(), user.into()],
        )?;
        for view in ["TABLE_PRIVILEGES", "COLUMN_PRIVILEGES"] {
            others.extend(self.column(
                &format!(
                    "SELECT DISTINCT `GRANTEE` FROM `information_schema`.`{view}` \
                     WHERE BINARY `TABLE_SCHEMA` = BINARY ? AND BINARY {GRANTEE_USER} <> BINARY ?"
                ),
                vec![own.into(), user.into()],
            )?);
        }
        if others.is_empty() {
            return Ok(());
        }
        Err(DbError::Refused(format!(
            "database {own} may be read or written by {} already: it would not be {user}'s \
             alone; REVOKE those first, then grant",
            others.join(", ")
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
                    grants("scr_x", user, &[host.to_string()]),
                    Err(DbError::BadAccount(_))
                ),
                "{user:?}@{host:?}"
            );
        }
        assert!(own_database("scr", "j.doe").is_err());
        assert_eq!(
            own_database_name("scr", "alice").as_deref(),
            Some("scr_alice")
        );
        assert_eq!(own_database_name("scr", "j.doe"), None);
        let all = grants("scr_jdoe", "jdoe", &["10.0.%".to_string()]).unwrap();
        assert!(
            all.last().unwrap().ends_with("TO 'jdoe'@'10.0.%'"),
            "{all:?}"
        );
    }

    #[test]
    fn the_servers_databases_are_never_a_users() {
        // (`information_schema` is the log `information` and the user `schema`)
        let refused = own_database("information", "schema")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("the server's own"), "{refused}");
        let no_name = own_database("scr", "a-b").unwrap_err().to_string();
        assert!(
            no_name.contains("\"a-b\" makes no database name"),
            "{no_name}"
        );
        assert!(own_database("scr", "alice").is_ok());
    }

    #[test]
    fn a_grant_names_the_users_database_alone_not_a_pattern() {
        assert_eq!(
            grants("scr_log_j_smith", "j_smith", &["%".to_string()]).unwrap(),
            ["GRANT SELECT, INSERT ON `scr\\_log\\_j\\_smith`.* TO 'j_smith'@'%'"]
        );
    }

    #[test]
    fn a_users_database_names_its_owner() {
        assert_eq!(owner_of("scr", "scr_j_smith").as_deref(), Some("j_smith"));
        assert_eq!(owner_of("scr", "scr"), None);
        assert_eq!(owner_of("scr", "scr_"), None);
        assert_eq!(owner_of("scr", "scrx_a"), None);
    }
}
