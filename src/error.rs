//! Errors of the core crate. Every error names the file (and where useful the line, key
//! or byte offset) and says what is wrong, so a batch-script user knows what to fix.

use crate::hash::{DecodeError, ValueError};
use std::io;
use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on a path failed.
    #[error("{}: could not {action}: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },

    /// A hash file could not be decoded.
    #[error("{}: {source}", path.display())]
    Decode { path: PathBuf, source: DecodeError },

    /// A hash file decoded, but its content is not what an SCR file of this kind holds.
    #[error("{}: {what}", path.display())]
    Invalid { path: PathBuf, what: String },

    /// A configuration file or setting is wrong.
    #[error("{origin}: {what}")]
    Config { origin: String, what: String },

    /// A call or an input SCR refuses by its rules: an API call out of order, a name that
    /// would run commands or leave its directory, a directory someone else controls.
    #[error("{what}")]
    Refused { what: String },

    /// A file or directory SCR would take configuration or state from belongs to another
    /// user, or others can write it: SCR does not trust what a neighbour could have written.
    #[error("{}: {what}", path.display())]
    Untrusted { path: PathBuf, what: String },

    /// SCR is turned off (SCR_ENABLE=0): calls do nothing and say nothing, as in SCR.
    #[error("SCR is disabled (SCR_ENABLE=0)")]
    Disabled,

    /// Another process of the job failed (a rank, a node's copy): this one did its part,
    /// and the collective step fails on every rank alike.
    #[error("{what}")]
    Collective { what: String },

    /// A call every rank fails alike, for a reason rank 0 has said to the user: the other
    /// ranks return it without a word, so the job's output says it once, not once a rank.
    #[error("{what}")]
    SaidByRoot { what: String },

    /// Data SCR reads is not what it recorded or what was sent: a CRC32 or a size that does
    /// not match, a file the dataset lists that is gone, a message between ranks that does
    /// not decode.
    #[error("{what}")]
    Corrupt { what: String },
}

/// What an error means to its caller, whatever its message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A system call failed (a full disk, a missing directory, a failing device).
    Io,
    /// The data is not what it should be ([`Error::Corrupt`], a file that does not decode
    /// or does not hold what its kind holds).
    Corrupt,
    /// A parameter or configuration line is wrong.
    Config,
    /// SCR's rules refuse the call or the input; or the user does not own what SCR would
    /// trust.
    Refused,
    /// SCR is turned off.
    Disabled,
    /// Another rank failed; this one did its part.
    Collective,
}

impl Error {
    pub fn io(path: impl AsRef<Path>, action: &'static str, source: io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            action,
            source,
        }
    }

    pub fn invalid(path: impl AsRef<Path>, what: impl Into<String>) -> Self {
        Error::Invalid {
            path: path.as_ref().to_path_buf(),
            what: what.into(),
        }
    }

    pub fn refused(what: impl Into<String>) -> Self {
        Error::Refused { what: what.into() }
    }

    pub fn collective(what: impl Into<String>) -> Self {
        Error::Collective { what: what.into() }
    }

    pub fn corrupt(what: impl Into<String>) -> Self {
        Error::Corrupt { what: what.into() }
    }

    /// What the error means to the caller.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::Decode { .. } | Error::Invalid { .. } | Error::Corrupt { .. } => {
                ErrorKind::Corrupt
            }
            Error::Config { .. } => ErrorKind::Config,
            Error::Refused { .. } | Error::Untrusted { .. } | Error::SaidByRoot { .. } => {
                ErrorKind::Refused
            }
            Error::Disabled => ErrorKind::Disabled,
            Error::Collective { .. } => ErrorKind::Collective,
        }
    }

    /// The error, as the data's fault when it says a file SCR reads in `dir` (or `dir`
    /// itself) is gone: a file a dataset lists that is not there is the dataset being
    /// broken, not the reading node failing. Any other failing call there (a permission, an
    /// I/O error) stays what it is: it says nothing about the data, and a later attempt,
    /// once the file system or the permission is put right, may read it whole.
    pub fn blaming(self, dir: &Path) -> Self {
        match self {
            Error::Io {
                path: at,
                action,
                source,
            } if at.starts_with(dir) && source.kind() == io::ErrorKind::NotFound => {
                Error::corrupt(format!("{}: could not {action}: {source}", at.display()))
            }
            other => other,
        }
    }

    /// True when a system call on a path in `dir` (or `dir` itself) failed.
    pub fn is_io_in(&self, dir: &Path) -> bool {
        matches!(self, Error::Io { path, .. } if path.starts_with(dir))
    }

    pub fn untrusted(path: impl AsRef<Path>, what: impl Into<String>) -> Self {
        Error::Untrusted {
            path: path.as_ref().to_path_buf(),
            what: what.into(),
        }
    }

    /// True when a file or directory was refused because someone else could have written it.
    pub fn is_untrusted(&self) -> bool {
        matches!(self, Error::Untrusted { .. })
    }

    /// True when SCR is turned off (SCR_ENABLE=0).
    pub fn is_disabled(&self) -> bool {
        matches!(self, Error::Disabled)
    }

    /// True when the error is "the file does not exist".
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Attaches a file path to a problem found inside a typed SCR file.
pub trait InFile<T> {
    fn in_file(self, path: &Path) -> Result<T>;
}

impl<T> InFile<T> for std::result::Result<T, ValueError> {
    fn in_file(self, path: &Path) -> Result<T> {
        self.map_err(|e| Error::invalid(path, e.to_string()))
    }
}

impl<T> InFile<T> for std::result::Result<T, String> {
    fn in_file(self, path: &Path) -> Result<T> {
        self.map_err(|e| Error::invalid(path, e))
    }
}
