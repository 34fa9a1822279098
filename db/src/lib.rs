//! SCR's database event log: the records SCR v3.1 writes to a MySQL database (its
//! `SCR_LOG_DB_*` parameters), written here to MariaDB or MySQL through the `mysql` crate.
//!
//! The tables are v3.1's, column for column ([`SCHEMA`]): `usernames` and `jobnames` (the
//! prefix directory names a computation across its runs), `jobs` (one per user and job
//! name), `types` (event and transfer kinds), `events` (one per event of a run: `START`,
//! `END`, `HALT` with its reason, `RESTART`, failures) and `transfers` (each checkpoint,
//! flush and fetch with its bytes, seconds and bandwidth).
//!
//! A job never pays for its log: [`Sink`] connects and runs each statement within a bounded
//! wait ([`TIMEOUT`]), says once what went wrong and is silent for the rest of the run,
//! while the text log keeps every event.
//!
//! ```no_run
//! use scr_db::{Address, Sink, Target};
//!
//! let target = Target {
//!     address: Address::parse("db.example.org").unwrap(),
//!     database: "scr".into(),
//!     user: "scr_insert".into(),
//!     password: Some("secret".into()),
//!     debug: false,
//!     timeout: scr_db::TIMEOUT,
//!     ssl_ca: None,
//! };
//! let now = chrono::Local::now();
//! let sink = Sink::open(Ok(target), "alice", "/p/lustre/alice/run1", now);
//! sink.record("START", now, &[("ranks", "4".into()), ("nodes", "2".into())]);
//! sink.record(
//!     "CHECKPOINT",
//!     chrono::Local::now(),
//!     &[("dset", "1".into()), ("name", "ckpt.1".into()), ("bytes", "1048576".into()), ("secs", "0.5".into())],
//! );
//! ```
#![deny(missing_docs)]

mod error;
pub mod own_records;
pub mod password;
pub mod read;
mod records;
mod sink;
#[cfg(feature = "test-server")]
pub mod test_server;

use chrono::{DateTime, Datelike, Local, Timelike};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, SslOpts, Value};
use scr::params::settings::LogDb;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::Duration;

pub use error::{ClientError, DbError};
pub use records::{Event, Transfer, UTC_OFFSET, V3_1_NAMES, text_log_kind, v3_1_names};
pub use sink::{Settler, Sink};

/// The tables of the log (v3.1's, column for column), as `scr db init` creates them.
pub const SCHEMA: &str = include_str!("../schema.sql");

/// The longest a connection or one statement may take before the log gives up for the
/// run: a checkpoint is never slower by more than this.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// The MySQL port a host name without one is reached at.
pub const DEFAULT_PORT: u16 = 3306;

/// Where the server listens for `localhost` when nothing names its socket: Debian's.
pub const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A host name or IP address and a port.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// The server's unix socket.
    Socket(PathBuf),
}

impl Address {
    /// Reads SCR_LOG_DB_HOST: a host name or address (port [`DEFAULT_PORT`]), `host:port`,
    /// `[v6 address]:port`, or an absolute path: the server's unix socket. `localhost`
    /// alone is the server's socket at [`DEFAULT_SOCKET`], as MariaDB's clients read it.
    pub fn parse(host: &str) -> Result<Address, DbError> {
        let bad = || DbError::BadHost(host.to_string());
        if host.starts_with('/') {
            return Ok(Address::Socket(host.into()));
        }
        if host == "localhost" {
            return Ok(Address::Socket(DEFAULT_SOCKET.into()));
        }
        let (name, port) = if let Some(rest) = host.strip_prefix('[') {
            let (name, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            };
            (name, port)
        } else {
            match host.split_once(':') {
                Some((n, p)) if !p.contains(':') => (n, Some(p)),
                Some(_) => (host, None), // a bare IPv6 address
                None => (host, None),
            }
        };
        let port = match port {
            Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(bad)?,
            None => DEFAULT_PORT,
        };
        let fine = |c: char| c.is_ascii_alphanumeric() || "-._:".contains(c);
        if name.is_empty() || !name.chars().all(fine) {
            return Err(bad());
        }
        Ok(Address::Tcp {
            host: name.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp { host, port } => write!(f, "{host}:{port}"),
            Address::Socket(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Checks a database name where it enters: it is spliced into `CREATE DATABASE`.
pub fn check_database_name(name: &str) -> Result<&str, DbError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    if name.is_empty() || name.len() > 64 || !name.chars().all(fine) {
        return Err(DbError::BadName(name.to_string()));
    }
    Ok(name)
}

/// A server, a database on it, and who logs in.
#[derive(Clone)]
pub struct Target {
    /// SCR_LOG_DB_HOST.
    pub address: Address,
    /// SCR_LOG_DB_NAME.
    pub database: String,
    /// SCR_LOG_DB_USER.
    pub user: String,
    /// SCR_LOG_DB_PASS, or from an option file (see [`password`]).
    pub password: Option<String>,
    /// SCR_LOG_DB_DEBUG: print each statement on stdout before it runs.
    pub debug: bool,
    /// The bound on connecting and on each statement ([`TIMEOUT`]).
    pub timeout: Duration,
    /// The certificate (PEM) of the authority that signed the server's, beside the public
    /// ones: `ssl-ca=` of the option file. A TCP connection with a password is always TLS.
    pub ssl_ca: Option<PathBuf>,
}

impl std::fmt::Debug for Target {
    /// Everything but the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("address", &self.address)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "…"))
            .field("debug", &self.debug)
            .field("ssl_ca", &self.ssl_ca)
            .finish()
    }
}

impl Target {
    /// The target the parameters name (`SCR_LOG_DB_*`), for the account of `login` unless
    /// SCR_LOG_DB_USER names another: SCR_LOG_DB_HOST (unset: `host=`, `port=` or `socket=`
    /// of ~/.my.cnf, else `localhost`: the server's socket, as MariaDB's clients take it),
    /// SCR_LOG_DB_NAME (unset: `scr`), SCR_LOG_DB_USER (unset: `user=` of ~/.my.cnf, else
    /// `login`) and SCR_LOG_DB_PASS (unset: `password=` of ~/.my.cnf, refused when others
    /// can read the file).
    pub fn from_settings(db: &LogDb, login: &str) -> Result<Target, DbError> {
        Target::with_option_file(db, login, password::user_option_file().as_deref())
    }

    /// [`Target::from_settings`] with the option file `options` instead of ~/.my.cnf.
    pub fn with_option_file(
        db: &LogDb,
        login: &str,
        options: Option<&std::path::Path>,
    ) -> Result<Target, DbError> {
        let from_file = match options {
            Some(path) => password::OptionFile::read(path)?,
            None => password::OptionFile::default(),
        };
        let address = match (&db.host, &from_file) {
            (Some(host), _) => Address::parse(host)?,
            (None, o) => o.address()?,
        };
        let database = check_database_name(db.name.as_deref().unwrap_or("scr"))?.to_string();
        let password = db.pass.clone().or(from_file.password);
        Ok(Target {
            address,
            database,
            user: db
                .user
                .clone()
                .or(from_file.user)
                .unwrap_or_else(|| login.to_string()),
            password,
            debug: db.debug,
            timeout: TIMEOUT,
            ssl_ca: from_file.ssl_ca.map(PathBuf::from),
        })
    }
}

/// Writes one whole line in one write, so that lines of processes sharing a stream never
/// mix.
fn line_to(mut out: impl Write, text: &str) {
    let _ = out.write_all(format!("{text}\n").as_bytes());
    let _ = out.flush();
}

/// Refuses a socket another user (not root, not a system account such as the server's
/// own) could have put in place: a server of theirs there would be handed the password (a
/// client answers whatever authentication the server asks for) and the job's records, and
/// could answer a report with rows of its own. Whoever may change the directories on the
/// way, or owns the socket itself, could have.
fn no_other_user_listens_at(socket: &std::path::Path) -> Result<(), DbError> {
    let exposed = |why: String| DbError::Exposed {
        address: socket.display().to_string(),
        why: format!(
            "{why}, so another user may have put a server of their own there; use the site's \
             socket (in a directory only root or the server's system account can write), or a \
             TCP address: a password goes over TCP only with TLS"
        ),
    };
    let first_person = scr::safe_fs::first_person_user_id();
    let trusted =
        |uid: u32| uid == 0 || uid == rustix::process::geteuid().as_raw() || uid < first_person;
    // a directory that is not there yet holds no server: its nearest ancestor that is must
    // be nobody else's to make it in (then connecting says nothing listens)
    let mut dir = socket.parent().unwrap_or(std::path::Path::new("/"));
    let mut missing = false;
    while std::fs::symlink_metadata(dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        missing = true;
        dir = dir.parent().unwrap_or(std::path::Path::new("/"));
    }
    if let Some(why) =
        scr::safe_fs::others_may_redirect(dir, trusted).map_err(|e| exposed(e.to_string()))?
    {
        return Err(exposed(why));
    }
    // nor make names in it (sticky or not, as /tmp: a server of theirs may appear there the
    // moment a trusted one is gone)
    if let Some(why) =
        scr::safe_fs::others_may_make_names_in(dir).map_err(|e| exposed(e.to_string()))?
    {
        return Err(exposed(why));
    }
    if missing {
        return Ok(());
    }
    // (nobody untrusted may change the directory: what is in it now stays)
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        // nothing listens there: connecting says so
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(exposed(e.to_string())),
    };
    if !meta.file_type().is_socket() {
        return Err(exposed("it is not a socket".into()));
    }
    if !trusted(meta.uid()) {
        return Err(exposed(format!(
            "it is the socket of user id {}",
            meta.uid()
        )));
    }
    Ok(())
}

/// A connection to the log's database.
pub struct Connection {
    conn: Conn,
    debug: bool,
    /// The bound on connecting and on each statement.
    timeout: Duration,
}

impl Connection {
    /// Connects to `target` (its database, or none with `with_database` false: to create
    /// it), waiting at most the target's timeout for the server. A password goes only where
    /// no other user can be listening: over TLS to a server whose certificate checks out,
    /// or to a socket only root, the user or a system account can put in place.
    pub fn open(target: &Target, with_database: bool) -> Result<Connection, DbError> {
        let database = check_database_name(&target.database)?;
        let t = Some(target.timeout);
        let mut opts = OptsBuilder::new()
            .user(Some(&target.user))
            .pass(target.password.as_deref())
            .db_name(with_database.then_some(database))
            .prefer_socket(false)
            .tcp_connect_timeout(t)
            .read_timeout(t)
            .write_timeout(t);
        opts = match &target.address {
            Address::Tcp { host, port } => {
                // the authority whose signature the client believes: nobody else's to swap
                if let Some(ca) = &target.ssl_ca {
                    scr::safe_fs::read_only_yours(ca, 1 << 20).map_err(|e| DbError::Exposed {
                        address: target.address.to_string(),
                        why: format!(
                            "its authority's certificate (ssl-ca) is not yours alone: {e}"
                        ),
                    })?;
                }
                let tls = (target.password.is_some() || target.ssl_ca.is_some()).then(|| {
                    SslOpts::default()
                        .with_root_cert_path(target.ssl_ca.clone().map(std::borrow::Cow::Owned))
                });
                opts.ip_or_hostname(Some(host))
                    .tcp_port(*port)
                    .ssl_opts(tls)
            }
            Address::Socket(path) => {
                // a password, and the job's records too, go only to a socket nobody else
                // could have put there
                no_other_user_listens_at(path)?;
                opts.socket(Some(path.to_string_lossy()))
            }
        };
        let opts = mysql::Opts::from(opts);
        let tls = opts.get_ssl_opts().is_some();
        let conn = Conn::new(opts).map_err(|source| {
            let source = ClientError(Box::new(source));
            DbError::Connect {
                address: target.address.to_string(),
                database: database.to_string(),
                note: source.note(tls),
                source,
            }
        })?;
        Ok(Connection {
            conn,
            debug: target.debug,
            timeout: target.timeout,
        })
    }

    /// Creates `database` when missing and the tables of [`SCHEMA`] in it.
    pub fn init_schema(&mut self, database: &str) -> Result<(), DbError> {
        let database = check_database_name(database)?;
        self.exec(
            &format!("CREATE DATABASE IF NOT EXISTS `{database}`"),
            vec![],
        )?;
        self.exec(&format!("USE `{database}`"), vec![])?;
        for statement in schema_statements() {
            self.exec(&statement, vec![])?;
        }
        Ok(())
    }

    /// Runs one statement with its values, printing it first with SCR_LOG_DB_DEBUG.
    fn exec(&mut self, sql: &str, values: Vec<Value>) -> Result<(), DbError> {
        self.say_statement(sql, &values);
        let done = if values.is_empty() {
            self.conn.query_drop(sql)
        } else {
            self.conn.exec_drop(sql, values)
        };
        done.map_err(|source| statement_error(sql, source))
    }

    /// The first column of the first row a query returns, as an id.
    fn first_id(&mut self, sql: &str, values: Vec<Value>) -> Result<Option<u64>, DbError> {
        self.say_statement(sql, &values);
        self.conn
            .exec_first::<u64, _, _>(sql, values)
            .map_err(|source| statement_error(sql, source))
    }

    /// The first column of every row a query returns, as text.
    fn column(&mut self, sql: &str, values: Vec<Value>) -> Result<Vec<String>, DbError> {
        self.rows(sql, values)
    }

    /// Every row a query returns, each as `T` (a tuple of its columns).
    fn rows<T: mysql::prelude::FromRow>(
        &mut self,
        sql: &str,
        values: Vec<Value>,
    ) -> Result<Vec<T>, DbError> {
        self.say_statement(sql, &values);
        self.conn
            .exec::<T, _, _>(sql, values)
            .map_err(|source| statement_error(sql, source))
    }

    /// Prints `sql` with its values in place, as the server runs it.
    fn say_statement(&self, sql: &str, values: &[Value]) {
        if self.debug {
            line_to(
                std::io::stdout().lock(),
                &format!("SCR: {}", with_values(sql, values)),
            );
        }
    }

    /// The id of `name` in one of the name tables (`types`, `usernames`, `jobnames`),
    /// added when missing. Only INSERT and SELECT: v3.1's logging account has no more.
    fn name_id(&mut self, table: NameTable, name: &str) -> Result<u64, DbError> {
        let select = format!("SELECT `id` FROM `{}` WHERE `name` = ?", table.0);
        if let Some(id) = self.first_id(&select, vec![name.into()])? {
            return Ok(id);
        }
        let insert = format!(
            "INSERT IGNORE INTO `{}` (`id`, `name`) VALUES (NULL, ?)",
            table.0
        );
        self.exec(&insert, vec![name.into()])?;
        self.first_id(&select, vec![name.into()])?
            .ok_or_else(|| missing_row(&select))
    }

    /// The job of `user` named `jobname` (its prefix), registered with `start` when it is
    /// new: the id the events and transfers of its runs carry.
    pub fn register_job(
        mut self,
        user: &str,
        jobname: &str,
        start: DateTime<Local>,
    ) -> Result<JobLog, DbError> {
        let user_id = self.name_id(NameTable::USERS, user)?;
        let name_id = self.name_id(NameTable::JOBS, jobname)?;
        let select = "SELECT `id` FROM `jobs` WHERE `username_id` = ? AND `jobname_id` = ?";
        let key = || vec![user_id.into(), name_id.into()];
        let job_id = match self.first_id(select, key())? {
            Some(id) => id,
            None => {
                self.exec(
                    "INSERT IGNORE INTO `jobs` (`id`, `username_id`, `jobname_id`, `start`) VALUES (NULL, ?, ?, ?)",
                    vec![user_id.into(), name_id.into(), datetime(start)],
                )?;
                self.first_id(select, key())?
                    .ok_or_else(|| missing_row(select))?
            }
        };
        Ok(JobLog { conn: self, job_id })
    }
}

/// A name table's name (one of three, never from input).
#[derive(Clone, Copy)]
struct NameTable(&'static str);

impl NameTable {
    const TYPES: NameTable = NameTable("types");
    const USERS: NameTable = NameTable("usernames");
    const JOBS: NameTable = NameTable("jobnames");
}

fn statement_error(sql: &str, source: mysql::Error) -> DbError {
    let source = ClientError(Box::new(source));
    DbError::Statement {
        statement: sql.to_string(),
        note: source.note(false),
        source,
    }
}

fn missing_row(sql: &str) -> DbError {
    statement_error(
        sql,
        mysql::Error::DriverError(mysql::DriverError::SetupError),
    )
}

/// The statements of [`SCHEMA`], comments left out.
pub fn schema_statements() -> Vec<String> {
    let code: String = SCHEMA
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A DATETIME value of a local time (as v3.1 records it), to the second.
fn datetime(t: DateTime<Local>) -> Value {
    Value::Date(
        t.year() as u16,
        t.month() as u8,
        t.day() as u8,
        t.hour() as u8,
        t.minute() as u8,
        t.second() as u8,
        0,
    )
}

/// `sql` with each `?` replaced by its value as an SQL literal.
fn with_values(sql: &str, values: &[Value]) -> String {
    let mut values = values.iter();
    let mut out = String::with_capacity(sql.len());
    for c in sql.chars() {
        match (c, c == '?') {
            (_, true) => match values.next() {
                Some(v) => out.push_str(&v.as_sql(false)),
                None => out.push('?'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// The records of one job (a user's computation in one prefix).
pub struct JobLog {
    conn: Connection,
    job_id: u64,
}

impl JobLog {
    /// The job's id in `jobs`.
    pub fn job_id(&self) -> u64 {
        self.job_id
    }

    /// Adds one row to `events`.
    pub fn event(&mut self, e: &Event) -> Result<(), DbError> {
        let type_id = self.conn.name_id(NameTable::TYPES, e.kind)?;
        self.conn.exec(
            "INSERT INTO `events` (`id`, `job_id`, `type_id`, `dset_id`, `dset_name`, `start`, `secs`, `note`) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?)",
            vec![
                self.job_id.into(),
                type_id.into(),
                e.dset.into(),
                e.name.into(),
                e.start.map(datetime).unwrap_or(Value::NULL),
                e.secs.map(|s| s as f32).into(),
                e.note.as_deref().into(),
            ],
        )
    }

    /// Adds one row to `transfers`.
    pub fn transfer(&mut self, t: &Transfer) -> Result<(), DbError> {
        let type_id = self.conn.name_id(NameTable::TYPES, t.kind)?;
        let end = t.start + chrono::Duration::milliseconds((t.secs * 1000.0) as i64);
        let bw = if t.secs > 0.0 {
            t.bytes as f64 / t.secs
        } else {
            0.0
        };
        self.conn.exec(
            "INSERT INTO `transfers` (`id`, `job_id`, `type_id`, `dset_id`, `dset_name`, `start`, `end`, `secs`, `bytes`, `files`, `bw`, `from`, `to`) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            vec![
                self.job_id.into(),
                type_id.into(),
                t.dset.into(),
                t.name.into(),
                datetime(t.start),
                datetime(end),
                (t.secs as f32).into(),
                (t.bytes as f32).into(),
                t.files.into(),
                (bw as f32).into(),
                t.from.as_bytes().into(),
                t.to.as_bytes().into(),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_where_others_may_make_names_is_refused_and_a_missing_one_is_left_to_connect() {
        // /tmp: anyone makes names there
        let err = no_other_user_listens_at(std::path::Path::new("/tmp/mysql.sock")).unwrap_err();
        assert!(err.to_string().contains("nothing is sent"), "{err}");
        // a directory not there, under one only its owner may change: nothing listens
        let dir = tempfile::tempdir().unwrap();
        assert!(no_other_user_listens_at(&dir.path().join("gone/sock")).is_ok());
        // under /tmp, someone else could make the missing directory
        assert!(
            no_other_user_listens_at(std::path::Path::new("/tmp/nonexistent-scr/sock")).is_err()
        );
    }

    #[test]
    fn hosts_parse_to_addresses() {
        let tcp = |h: &str, p| Address::Tcp {
            host: h.into(),
            port: p,
        };
        assert_eq!(Address::parse("db1").unwrap(), tcp("db1", 3306));
        assert_eq!(Address::parse("db1:3307").unwrap(), tcp("db1", 3307));
        assert_eq!(Address::parse("[::1]:3310").unwrap(), tcp("::1", 3310));
        assert_eq!(Address::parse("::1").unwrap(), tcp("::1", 3306));
        assert_eq!(
            Address::parse("/run/db.sock").unwrap(),
            Address::Socket("/run/db.sock".into())
        );
        assert_eq!(
            Address::parse("localhost").unwrap(),
            Address::Socket(DEFAULT_SOCKET.into())
        );
        assert_eq!(
            Address::parse("localhost:3310").unwrap(),
            tcp("localhost", 3310)
        );
        for bad in ["", "db1:0", "db1:x", "db 1", "db1;drop", "[::1"] {
            assert!(
                matches!(Address::parse(bad), Err(DbError::BadHost(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn database_names_that_need_quoting_are_refused() {
        assert!(check_database_name("scr_log$1").is_ok());
        for bad in ["", "scr`; DROP", "a b", &"x".repeat(65)] {
            assert!(check_database_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn debug_statements_show_their_values_quoted() {
        let s = with_values(
            "INSERT INTO t VALUES (?, ?, ?)",
            &[7u64.into(), "it's".into(), Value::NULL],
        );
        assert_eq!(s, "INSERT INTO t VALUES (7, 'it\\'s', NULL)");
    }

    #[test]
    fn the_schema_has_v3_1s_six_tables() {
        let creates: Vec<String> = schema_statements()
            .iter()
            .filter_map(|s| s.split('`').nth(1).map(str::to_string))
            .collect();
        assert_eq!(
            creates,
            [
                "types",
                "usernames",
                "jobnames",
                "jobs",
                "transfers",
                "events"
            ]
        );
    }
}
