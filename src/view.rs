//! The common shape of every typed SCR file: a newtype over [`Hash`] that is validated when
//! it is read, so hostile content is rejected at the boundary with the file's name.

use crate::error::{Error, Result};
use crate::hash::Hash;
use crate::io;
use std::path::Path;

pub trait HashView: Sized {
    /// What the file is, for error messages ("filemap", "index file" …).
    const KIND: &'static str;
    /// The most bytes a file of this kind holds: reading a larger one is an error, not an
    /// allocation of whatever size someone made it.
    const MAX_BYTES: u64 = io::MAX_HASH_FILE_BYTES;

    /// Wraps a hash without checking it.
    fn wrap(hash: Hash) -> Self;
    fn hash(&self) -> &Hash;
    fn into_hash(self) -> Hash;

    /// Checks that `hash` has the shape of this kind of file.
    fn validate(_hash: &Hash) -> std::result::Result<(), String> {
        Ok(())
    }

    fn from_hash(hash: Hash) -> std::result::Result<Self, String> {
        Self::validate(&hash)?;
        Ok(Self::wrap(hash))
    }

    /// Reads and validates a file of this kind, never through a symbolic link (SCR makes
    /// none of its files links).
    fn read(path: &Path) -> Result<Self> {
        let hash = io::read_hash_file_no_link(path, Self::MAX_BYTES)?;
        Self::from_hash(hash)
            .map_err(|what| Error::invalid(path, format!("not a valid {}: {what}", Self::KIND)))
    }

    /// Reads and validates the state file `rel` below `below` through handles
    /// ([`crate::safe_fs::Beneath::open_state_file`]): what a command that may run as root
    /// reads of a prefix.
    fn read_below(below: &crate::safe_fs::Beneath, rel: &Path) -> Result<Self> {
        let path = below.root().join(rel);
        let hash = io::read_hash_from(&path, below.open_state_file(rel)?, Self::MAX_BYTES)?;
        Self::from_hash(hash)
            .map_err(|what| Error::invalid(&path, format!("not a valid {}: {what}", Self::KIND)))
    }

    /// Read-modify-write under the file's advisory lock: reads the file (missing or empty
    /// reads as empty), lets `change` modify it, and replaces it atomically with `mode`.
    /// Nothing is written when `change` fails.
    fn update<R>(path: &Path, mode: u32, change: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        Self::update_waiting(path, mode, io::lock_timeout(), &mut |_| {}, change)
    }

    /// [`HashView::update`] waiting at most `wait` for the lock, and calling `holding` with
    /// the lock's holder each second of the wait (a writer that knows a holder can never
    /// release it may end it: [`io::LockedHashFile::open_watching_holder`]).
    fn update_waiting<R>(
        path: &Path,
        mode: u32,
        wait: std::time::Duration,
        holding: &mut dyn FnMut(Option<u32>),
        change: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        let (lock, hash) =
            io::LockedHashFile::open_watching_holder(path, mode, Self::MAX_BYTES, wait, holding)?;
        let mut view = Self::from_hash(hash)
            .map_err(|what| Error::invalid(path, format!("not a valid {}: {what}", Self::KIND)))?;
        let result = change(&mut view)?;
        lock.write_and_unlock(view.hash())?;
        Ok(result)
    }

    /// Writes the file atomically (mode 0600).
    fn write(&self, path: &Path) -> Result<()> {
        io::write_hash_file(path, self.hash())
    }

    /// Writes `rel` below `root` atomically (mode 0600), through no link on the way
    /// ([`io::write_hash_file_below`]).
    fn write_below(&self, root: &Path, rel: &Path) -> Result<()> {
        io::write_hash_file_below(root, rel, self.hash())
    }
}

/// Defines a newtype over [`Hash`] implementing [`HashView`].
macro_rules! hash_view {
    ($(#[$doc:meta])* $name:ident, $kind:literal $(, validate = $validate:path)? $(, max_bytes = $max:expr)?) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name(crate::hash::Hash);

        impl crate::view::HashView for $name {
            const KIND: &'static str = $kind;
            $(const MAX_BYTES: u64 = $max;)?
            fn wrap(hash: crate::hash::Hash) -> Self {
                $name(hash)
            }
            fn hash(&self) -> &crate::hash::Hash {
                &self.0
            }
            fn into_hash(self) -> crate::hash::Hash {
                self.0
            }
            $(fn validate(hash: &crate::hash::Hash) -> std::result::Result<(), String> {
                $validate(hash)
            })?
        }

        impl $name {
            pub fn new() -> Self {
                Self::default()
            }
        }
    };
}
pub(crate) use hash_view;

/// Checks that every key of `hash` is a non-negative integer id; `what` names them.
pub(crate) fn check_ids(hash: Option<&Hash>, what: &str) -> std::result::Result<(), String> {
    for key in hash.into_iter().flat_map(|h| h.keys()) {
        if key.parse::<u64>().is_err() {
            return Err(format!("{what} {key:?} is not a non-negative integer"));
        }
    }
    Ok(())
}

/// Checks that `key`, if present, holds exactly one value parseable as `T`.
pub(crate) fn check_value<T: std::str::FromStr>(
    hash: &Hash,
    key: &str,
    context: &str,
) -> std::result::Result<(), String> {
    hash.parsed::<T>(key)
        .map(|_| ())
        .map_err(|e| format!("{context}: {e}"))
}

/// Sorted integer keys of `hash` (ids under `RANK`, `DSET` …).
pub(crate) fn sorted_ids(hash: Option<&Hash>) -> Vec<u64> {
    let mut ids: Vec<u64> = hash
        .into_iter()
        .flat_map(|h| h.keys())
        .filter_map(|k| k.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}
