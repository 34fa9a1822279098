//! `scr db`: the database of SCR's event log (SCR_LOG_DB_*): `scr db init` creates the
//! database and its tables (SCR v3.1's, column for column), `scr db schema` prints them,
//! `scr db grant USER` gives a user's account a database of their own records alone.
//! The password is never an argument: it comes from the environment (SCR_LOG_DB_PASS), a
//! configuration file only its owner can read, or a MariaDB option file only its owner
//! can read (`--option-file`, else ~/.my.cnf).

use scr::params::{Params, Sources};
use scr_db::password::OptionFile;
use scr_db::{Connection, Target};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(about = "Create the database of SCR's event log (SCR_LOG_DB_*), or print its tables")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    Init(InitArgs),
    Grant(GrantArgs),
    /// Print the log's tables (SCR v3.1's), to read or to run by hand
    Schema,
}

/// `scr db init`.
#[derive(clap::Args)]
#[command(
    about = "Create the log's database and its tables (kept when they exist)",
    long_about = "Create the database SCR_LOG_DB_NAME names (default scr) on the server \
                  SCR_LOG_DB_HOST names (a host, host:port, or the path of its unix socket; \
                  default localhost: the server's socket), and in it the tables of SCR's event log: those of SCR \
                  v3.1's scr.mysql, column for column, so that v3.1 and this SCR log into the \
                  same database. Tables that exist are kept with their rows.\n\n\
                  The account is an administrator's: user= and password= of --option-file \
                  (a MariaDB option file, groups [client] and [scr]), else SCR_LOG_DB_USER and \
                  SCR_LOG_DB_PASS, else those of ~/.my.cnf. A file holding the password must \
                  be readable by its owner alone (chmod 600); there is no password argument, \
                  so that no password is ever on a command line.\n\n\
                  Exit codes: 0 created (or already there); 1 an error, which names the file, \
                  parameter or server."
)]
pub struct InitArgs {
    /// A MariaDB option file with user= and password= of the administrator's account
    /// (mode 600)
    #[arg(long, value_name = "FILE")]
    option_file: Option<PathBuf>,
}

/// `scr db grant`.
#[derive(clap::Args)]
#[command(
    about = "Give a user's account a database of their own records alone",
    long_about = "Give the accounts of USER a database of their own records, named \
                  SCR_LOG_DB_NAME, `_`, USER (scr_alice): the log's tables themselves, made \
                  there as `scr db init` makes them, with nothing shared with the log's or \
                  any other user's. The accounts are granted reading and adding there and \
                  nothing else, so a user reads no other user's records, writes none in their \
                  name, and can spoil only their own (SCR v3.1 lets every logging account read \
                  and write every job's). The user's jobs log there with SCR_LOG_DB_NAME set to \
                  that database and SCR_LOG_DB_USER to USER (a site's scr.conf may say \
                  SCR_LOG_DB_NAME=scr_$USER); `scr report --db` as the administrator reads the \
                  log and every user's database beside it.\n\n\
                  The account must exist (CREATE USER, with the site's way of logging in: \
                  a password the user keeps in ~/.my.cnf, or unix_socket on the server's \
                  machine): every account of USER's name is granted, or --host's alone; none \
                  is ever made. Refused, with nothing changed: an account that can read the \
                  log's tables or another user's already, or holds a role or a proxy grant; a \
                  database of that name holding anything but the log's tables (a trigger, a \
                  routine), records while nobody may read it yet, or granted to another \
                  account; a user name that makes no database name (`.` or `-` in it). The administrator's account \
                  is the one `scr db init` takes.\n\n\
                  Exit codes: 0 granted (again: nothing changes); 1 an error, which names the \
                  account, database or server."
)]
pub struct GrantArgs {
    /// The account's user name (MariaDB's, the same as the login name the jobs run as)
    #[arg(value_name = "USER")]
    user: String,
    /// The host part of the one account to grant (default: every account of USER's name)
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// A MariaDB option file with user= and password= of the administrator's account
    /// (mode 600)
    #[arg(long, value_name = "FILE")]
    option_file: Option<PathBuf>,
}

/// What the database layer said, as the commands' error.
pub fn said(e: scr_db::DbError) -> scr::Error {
    match e {
        scr_db::DbError::Password(scr_db::password::PasswordError::Unreadable(e)) => e,
        e => scr::Error::Refused {
            what: e.to_string(),
        },
    }
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    match args.action {
        Action::Schema => {
            print!("{}", scr_db::SCHEMA);
            Ok(ExitCode::SUCCESS)
        }
        Action::Grant(grant) => {
            let target = account_target(grant.option_file.as_deref())?;
            let mut conn = Connection::open(&target, false).map_err(said)?;
            let hosts = conn
                .grant_own_records(&target.database, &grant.user, grant.host.as_deref())
                .map_err(said)?;
            let own = scr_db::own_records::own_database_name(&target.database, &grant.user)
                .expect("a database the grant made");
            let accounts: Vec<String> = hosts
                .iter()
                .map(|host| format!("'{}'@'{host}'", grant.user))
                .collect();
            println!(
                "{}: {} read and add their own records in database {own} at {} \
                 (its jobs: SCR_LOG_DB_NAME={own} SCR_LOG_DB_USER={})",
                crate::program_name(),
                accounts.join(", "),
                target.address,
                grant.user
            );
            Ok(ExitCode::SUCCESS)
        }
        Action::Init(init) => {
            let target = account_target(init.option_file.as_deref())?;
            let mut conn = Connection::open(&target, false).map_err(said)?;
            conn.init_schema(&target.database).map_err(said)?;
            println!(
                "{}: the tables of SCR's event log are in database {} at {}",
                crate::program_name(),
                target.database,
                target.address
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The server, database and account to use: SCR_LOG_DB_*, where the option file given
/// (user=, password=, host or socket, ssl-ca) wins over the parameters, which name the
/// logging account.
pub fn account_target(option_file: Option<&std::path::Path>) -> scr::Result<Target> {
    let params = Params::load(&Sources::from_process())?;
    for w in &params.warnings {
        eprintln!("{}: WARNING: {w}", crate::program_name());
    }
    let db = params.typed().log.db;
    let login = params.typed().places.user();
    let Some(file) = option_file else {
        return Target::from_settings(&db, &login).map_err(said);
    };
    // the file given is the account's: it wins over the parameters, which name the
    // logging account
    let options = OptionFile::read(file).map_err(|e| said(e.into()))?;
    let mut target = Target::with_option_file(&db, &login, None).map_err(said)?;
    if let Some(user) = options.user.clone() {
        target.user = user;
    }
    if options.password.is_some() {
        target.password = options.password.clone();
    }
    if db.host.is_none() {
        target.address = options.address().map_err(said)?;
    }
    if options.ssl_ca.is_some() {
        target.ssl_ca = options.ssl_ca.map(PathBuf::from);
    }
    Ok(target)
}
