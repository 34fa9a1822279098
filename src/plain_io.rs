//! File operations below every confinement rule: the directory fsync, the bounded read of
//! an opened file and the mode check that both the plain writers ([`crate::io`]) and the
//! confined ones ([`crate::safe_fs`]) build on.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// open(2)'s O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
pub(crate) const O_NONBLOCK: i32 = libc::O_NONBLOCK;

/// open(2)'s O_NOFOLLOW on Linux: a state file SCR locks and rewrites is never reached
/// through a symbolic link.
pub(crate) const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;

/// Fsyncs a directory so a rename or create inside it is durable. Opened as a directory
/// only: a FIFO in its place (put there by whoever may rename beside it) is refused, never
/// waited on.
pub fn sync_dir(dir: &Path) -> Result<()> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | O_NONBLOCK)
        .open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, "fsync directory", e))
}

/// The permission bits of an open file when others than its owner may read it (a file
/// holding a password must not be), else None.
pub fn readable_by_others(file: &File) -> Option<u32> {
    let mode = file.metadata().ok()?.mode() & 0o7777;
    (mode & 0o044 != 0).then_some(mode)
}

/// The bytes of an opened regular file `len` bytes long, if no more than `limit`.
pub fn read_open_file(path: &Path, file: File, len: u64, limit: u64) -> Result<Vec<u8>> {
    if len > limit {
        return Err(Error::invalid(
            path,
            format!("is {len} bytes; a configuration file of more than {limit} bytes is not one"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    Ok(bytes)
}
