//! Where the log's password may come from, never a command line nor a file others can
//! read: SCR_LOG_DB_PASS from the environment or from a configuration file only its owner
//! can read (the parameters refuse it from one others can read), else `password=` of a
//! MariaDB option file (`~/.my.cnf`, groups `[client]` and `[scr]`) only its owner can
//! read.

use std::path::{Path, PathBuf};

/// Why a password was not taken.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// The file holding it can be read by others.
    #[error(
        "{file} holds the database password but others can read it (mode {mode:04o}): \
         make it yours alone (chmod 600 {file}), or move the password to a file only you can \
         read (~/.my.cnf with `password=` under [client])"
    )]
    Readable {
        /// The file.
        file: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The file could not be read.
    #[error("{0}")]
    Unreadable(#[from] scr::Error),
}

/// What an option file tells a client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptionFile {
    /// `user=`.
    pub user: Option<String>,
    /// `password=`.
    pub password: Option<String>,
    /// `host=`.
    pub host: Option<String>,
    /// `socket=`.
    pub socket: Option<String>,
    /// `port=`.
    pub port: Option<u16>,
    /// `ssl-ca=`: the authority that signed the server's certificate.
    pub ssl_ca: Option<String>,
}

impl OptionFile {
    /// Reads the `[client]` and `[scr]` groups of the option file at `path` (the later line
    /// wins), refusing one with a password that others can read.
    pub fn read(path: &Path) -> Result<OptionFile, PasswordError> {
        // where the client looks for its server and whom it believes: nobody else's to
        // change (the judgments and the read are of the one handle opened)
        let (bytes, shared) = scr::safe_fs::read_only_yours(path, 1 << 20)?;
        let text = String::from_utf8_lossy(&bytes);
        let options = OptionFile::parse(&text);
        match shared {
            Some(mode) if options.password.is_some() => Err(PasswordError::Readable {
                file: path.display().to_string(),
                mode,
            }),
            _ => Ok(options),
        }
    }

    /// Where the file says the server is: `socket=`, else `host=` (with `port=`), else
    /// `localhost`.
    pub fn address(&self) -> Result<crate::Address, crate::DbError> {
        match (&self.socket, &self.host) {
            (Some(socket), _) => crate::Address::parse(socket),
            (None, Some(host)) if host != "localhost" || self.port.is_some() => {
                match crate::Address::parse(host)? {
                    crate::Address::Tcp { host, .. } => Ok(crate::Address::Tcp {
                        host,
                        port: self.port.unwrap_or(crate::DEFAULT_PORT),
                    }),
                    socket => Ok(socket),
                }
            }
            _ => crate::Address::parse("localhost"),
        }
    }

    /// Parses option-file text: `[group]` lines, `key=value` lines (values may be quoted),
    /// `#` and `;` comments.
    pub fn parse(text: &str) -> OptionFile {
        let mut options = OptionFile::default();
        let mut ours = false;
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                ours = matches!(group.trim(), "client" | "scr");
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if !ours {
                continue;
            }
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value)
                .to_string();
            match key.trim().replace('-', "_").as_str() {
                "user" => options.user = Some(value),
                "password" => options.password = Some(value),
                "host" => options.host = Some(value),
                "socket" => options.socket = Some(value),
                "port" => options.port = value.parse().ok(),
                "ssl_ca" => options.ssl_ca = Some(value),
                _ => {}
            }
        }
        options
    }
}

/// The option file a user keeps their client settings in: `~/.my.cnf`, when it exists (or
/// may: one that cannot be looked at is returned, for reading it to say why). The home is
/// that of the account this process acts as: `$HOME` when that account owns it, else the
/// account's own (root acting as a prefix's owner reads the owner's, not root's).
pub fn user_option_file() -> Option<PathBuf> {
    let euid = rustix::process::geteuid().as_raw();
    option_file_of(std::env::var_os("HOME").as_deref(), euid)
}

/// [`user_option_file`] of the account `uid`, given `$HOME`.
fn option_file_of(home: Option<&std::ffi::OsStr>, uid: u32) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let home = match home {
        Some(home) if std::fs::metadata(home).is_ok_and(|m| m.uid() == uid) => PathBuf::from(home),
        _ => scr::layout::account_by_id(uid)?.home,
    };
    let path = home.join(".my.cnf");
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => Some(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_option_file_is_the_acting_accounts_own() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().metadata().unwrap().uid();
        std::fs::write(dir.path().join(".my.cnf"), "[client]\n").unwrap();
        // $HOME of the account acting: its file
        assert_eq!(
            option_file_of(Some(dir.path().as_os_str()), mine),
            Some(dir.path().join(".my.cnf"))
        );
        // $HOME of another account (root acting as a prefix's owner): the owner's home's,
        // not that one
        let other = option_file_of(Some(dir.path().as_os_str()), 65534);
        assert_ne!(other, Some(dir.path().join(".my.cnf")));
        let nobody = scr::layout::account_by_id(65534).unwrap();
        assert_eq!(
            other.is_some(),
            std::fs::symlink_metadata(nobody.home.join(".my.cnf")).is_ok()
        );
    }

    #[test]
    fn the_client_and_scr_groups_are_read_and_others_are_not() {
        let o = OptionFile::parse(
            "[mysqld]\npassword=server\n[client]\nuser = alice\npassword=\"a b\"\n# c\n[scr]\nport=3310\n",
        );
        assert_eq!(o.user.as_deref(), Some("alice"));
        assert_eq!(o.password.as_deref(), Some("a b"));
        assert_eq!(o.port, Some(3310));
    }

    #[test]
    fn a_password_file_others_can_read_is_refused_naming_it_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my.cnf");
        std::fs::write(&path, "[client]\npassword=x\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = OptionFile::read(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            OptionFile::read(&path).unwrap().password.as_deref(),
            Some("x")
        );
    }

    #[test]
    fn an_option_file_others_may_change_or_swap_is_refused_password_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my.cnf");
        // no password in it: where it sends one from the environment, and whom it trusts
        std::fs::write(
            &path,
            "[client]\nhost=127.0.0.1\nport=3399\nssl-ca=/x/ca.pem\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = OptionFile::read(&path).unwrap_err().to_string();
        assert!(e.contains("writable by everyone"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(OptionFile::read(&path).unwrap().port, Some(3399));
        // in a directory anyone may rename in: anyone may swap it
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = OptionFile::read(&path).unwrap_err().to_string();
        assert!(e.contains("swap"), "{e}");
    }
}
