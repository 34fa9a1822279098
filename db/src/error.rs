//! The database log's errors, typed where they arise: what the client said (as MariaDB's
//! own tools say it), and what it means and the fix where the server's words do not.

use crate::password;

/// What the database log could not do.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SCR_LOG_DB_HOST does not name a server.
    #[error(
        "SCR_LOG_DB_HOST={0:?} is not valid: expected a host name, host:port, or the path of the server's socket"
    )]
    BadHost(String),
    /// A database name MariaDB would need quoting tricks for.
    #[error(
        "SCR_LOG_DB_NAME={0:?} is not valid: expected letters, digits, `_` or `$` (at most 64)"
    )]
    BadName(String),
    /// The server could not be reached or refused the login.
    #[error("cannot connect to the database {database} at {address}: {source}{note}")]
    Connect {
        /// Where the server was looked for.
        address: String,
        /// The database asked for.
        database: String,
        /// What the client said.
        source: ClientError,
        /// What the failure means and the fix, where the client's words do not say it.
        note: String,
    },
    /// A statement failed (a full disk, missing privileges, a server gone away, a timeout).
    #[error("`{statement}` failed at the database: {source}{note}")]
    Statement {
        /// The statement, without its values.
        statement: String,
        /// What the client said.
        source: ClientError,
        /// What the failure means and the fix, where the client's words do not say it.
        note: String,
    },
    /// The password could not be read safely.
    #[error(transparent)]
    Password(#[from] password::PasswordError),
    /// The password or the records would go where another user could read them.
    #[error("nothing is sent to the database at {address} (no password, no record): {why}")]
    Exposed {
        /// Where the server was looked for.
        address: String,
        /// Who else could be listening there, and the fix.
        why: String,
    },
    /// The log's worker thread could not be started.
    #[error("cannot start the database log's thread: {0}")]
    Thread(std::io::Error),
    /// The database client failed in a way it does not report (a panic).
    #[error("the database client failed unexpectedly")]
    Panicked,
    /// The server is slower than the run.
    #[error("the database server is too slow: {0}")]
    Behind(String),
    /// An account name or host `scr db grant` will not put into a statement.
    #[error(
        "{0:?} is not an account name this command takes: expected letters, digits, `_`, `.` or `-` (a host part: also `%` and `:`)"
    )]
    BadAccount(String),
    /// `scr db grant` found the server in a state it will not grant in (no such account, a
    /// database or account of that name that is not the log's): what it found, and the fix.
    #[error("{0}")]
    Refused(String),
}

/// What the database client said, as MariaDB's own tools say it (`ERROR 1045 (28000):
/// Access denied …`, the system's error for a connection), without the client crate's
/// type names around it.
#[derive(Debug)]
pub struct ClientError(pub Box<mysql::Error>);

impl std::fmt::Display for ClientError {
    /// A server's words may hold anything (one that is not the site's may send terminal
    /// escapes): control and direction characters are written as escapes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match &*self.0 {
            _ if self.timed_out() => "no answer within the bound on each statement".to_string(),
            mysql::Error::IoError(e) => e.to_string(),
            mysql::Error::CodecError(e) => e.to_string(),
            mysql::Error::MySqlError(e) => e.to_string(),
            mysql::Error::DriverError(e) => e.to_string(),
            mysql::Error::UrlError(e) => e.to_string(),
            mysql::Error::TlsError(e) => format!("TLS: {e}"),
            other => other.to_string(),
        };
        for c in text.chars() {
            if scr::text::misleads(c) {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl DbError {
    /// Whether a statement failed because the connection did ([`ClientError::lost_connection`]):
    /// the server may be back for the next one.
    pub fn connection_lost(&self) -> bool {
        matches!(self, DbError::Statement { source, .. } if source.lost_connection())
    }
}

impl ClientError {
    /// Whether the client gave up on TLS itself (the server offers none, or its
    /// certificate does not check out): what the connection's note about TLS explains.
    pub fn about_tls(&self) -> bool {
        match &*self.0 {
            mysql::Error::TlsError(_) => true,
            mysql::Error::DriverError(e) => matches!(e, mysql::DriverError::TlsNotSupported),
            // rustls's refusal of a certificate (an unknown authority, a name that does not
            // match) reaches the client as the handshake's read error
            _ => self
                .io()
                .is_some_and(|e| e.to_string().contains("certificate")),
        }
    }

    /// The system's error underneath, where there is one.
    fn io(&self) -> Option<&std::io::Error> {
        match &*self.0 {
            mysql::Error::IoError(e) => Some(e),
            mysql::Error::CodecError(e) => std::error::Error::source(e)?.downcast_ref(),
            _ => None,
        }
    }

    /// Whether the connection itself failed rather than a statement on it: the server went
    /// away (a restart, a failover, a lost network), closed it (its shutdown, a kill), or
    /// did not answer. A server back later takes the next connection.
    pub fn lost_connection(&self) -> bool {
        // the server's own words for a connection it ended: shutting down (1053), killed
        // (1927); and the client's codes for one it lost (2006, 2013)
        const ENDED_BY_SERVER: [u16; 4] = [1053, 1927, 2006, 2013];
        match &*self.0 {
            mysql::Error::IoError(_) | mysql::Error::CodecError(_) => true,
            mysql::Error::DriverError(e) => matches!(
                e,
                mysql::DriverError::PacketOutOfSync
                    | mysql::DriverError::ConnectTimeout
                    | mysql::DriverError::CouldNotConnect(_)
                    | mysql::DriverError::Timeout
            ),
            mysql::Error::MySqlError(e) => ENDED_BY_SERVER.contains(&e.code),
            _ => false,
        }
    }

    /// Whether a read or write ran into its bound: the server did not answer.
    pub fn timed_out(&self) -> bool {
        self.io().is_some_and(is_timeout)
            || matches!(
                &*self.0,
                mysql::Error::DriverError(mysql::DriverError::ConnectTimeout)
            )
    }

    /// The server's error code, where it answered with one.
    pub fn code(&self) -> Option<u16> {
        match &*self.0 {
            mysql::Error::MySqlError(e) => Some(e.code),
            _ => None,
        }
    }

    /// What a failure (to connect, or of a statement) means and its fix, where the client's
    /// words do not say it ("" where they do): `tls`, the connection asked for TLS.
    pub(crate) fn note(&self, tls: bool) -> String {
        if tls && self.about_tls() {
            return " (the connection is TLS, as a password goes over TCP only by TLS: the \
                    server must offer it, with a certificate a public authority signed or the \
                    one ssl-ca= of ~/.my.cnf names)"
                .into();
        }
        match self.code() {
            // ER_ACCESS_DENIED_ERROR
            Some(1045) => " (the server refused this account and password: SCR_LOG_DB_USER \
                           and SCR_LOG_DB_PASS, else user= and password= of ~/.my.cnf)"
                .into(),
            // ER_DBACCESS_DENIED_ERROR
            Some(1044) => " (this account may not use that database, or it does not exist \
                           (the server says the same of both): SCR_LOG_DB_NAME names one it \
                           may; a database of your own records, as `scr db grant` makes \
                           them, is the log's name, `_` and your user name: \
                           SCR_LOG_DB_NAME=scr_$USER beside a log named scr; a log not made \
                           yet is made by `scr db init`, as an account that may create it)"
                .into(),
            // ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR
            Some(1142 | 1143) => " (this account may not do that there: the site's \
                                  insert-only account logs, `scr db grant` gives a user \
                                  reading and adding in a database of their own)"
                .into(),
            // ER_BAD_DB_ERROR
            Some(1049) => " (no database of that name: SCR_LOG_DB_NAME, or `scr db init` \
                           to make the log's tables)"
                .into(),
            // the connection itself not made in time: nothing took it
            _ if matches!(
                &*self.0,
                mysql::Error::DriverError(
                    mysql::DriverError::ConnectTimeout
                        | mysql::DriverError::CouldNotConnect(Some((
                            _,
                            _,
                            std::io::ErrorKind::TimedOut
                        )))
                )
            ) =>
            {
                " (nothing took the connection in time: the host is down or unreachable, a \
                 firewall drops it, or SCR_LOG_DB_HOST names another)"
                    .into()
            }
            _ if self.timed_out() => " (the server took the connection and did not answer: \
                                      it is stopped or overloaded)"
                .into(),
            // no socket there: no server listens at that path
            _ if matches!(
                &*self.0,
                mysql::Error::DriverError(mysql::DriverError::CouldNotConnect(Some((
                    _,
                    _,
                    std::io::ErrorKind::NotFound
                ))))
            ) =>
            {
                " (no server's socket at that path: the server is not running there, or \
                 SCR_LOG_DB_HOST, else socket= of ~/.my.cnf, names another)"
                    .into()
            }
            _ => String::new(),
        }
    }
}

/// A read or write that ran into its bound (the socket's timeout).
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection nothing took in time (a host down or unreachable) is told apart from
    /// one a server took and never answered on (stopped, overloaded), and only the server
    /// that ended a connection, or a connection lost, is one a server back may take again.
    #[test]
    fn a_connection_nothing_took_is_not_a_server_that_did_not_answer() {
        let client = |e: mysql::Error| ClientError(Box::new(e));
        let untaken = client(mysql::Error::DriverError(
            mysql::DriverError::ConnectTimeout,
        ));
        assert!(untaken.note(false).contains("nothing took the connection"));
        let unanswered = client(mysql::Error::IoError(std::io::Error::from(
            std::io::ErrorKind::TimedOut,
        )));
        assert!(
            unanswered
                .note(false)
                .contains("took the connection and did not answer")
        );
        assert!(untaken.lost_connection() && unanswered.lost_connection());
        let refused = client(mysql::Error::MySqlError(mysql::MySqlError {
            state: "42000".into(),
            message: "denied".into(),
            code: 1142,
        }));
        assert!(!refused.lost_connection());
        let shut_down = client(mysql::Error::MySqlError(mysql::MySqlError {
            state: "08S01".into(),
            message: "Server shutdown in progress".into(),
            code: 1053,
        }));
        assert!(shut_down.lost_connection());
    }
}
