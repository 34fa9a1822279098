//! Opening a file SCR reads by its path: only a regular file, never waiting on a FIFO; one
//! below a `.scr` directory (SCR's own state) through the handle of the directory that
//! holds `.scr`, so nobody who may rename beside it can swap in their own.

use super::Beneath;
use crate::error::{Error, Result};
use crate::plain_io::{O_NOFOLLOW, O_NONBLOCK};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Opens a file SCR reads for reading: only a regular file, opened so that a FIFO in its
/// place cannot block the open (it is then refused). One below a `.scr` directory is
/// SCR's own state, opened through the handle of the directory holding `.scr`, no link
/// followed and nothing on the way another user's.
pub fn open_regular(path: &Path) -> Result<File> {
    open_regular_with(path, O_NONBLOCK)
}

/// [`open_regular`] where a symbolic link is refused, not followed (SCR's own state files,
/// which SCR never makes links).
pub fn open_regular_no_link(path: &Path) -> Result<File> {
    open_regular_with(path, O_NONBLOCK | O_NOFOLLOW).map_err(|e| match e {
        Error::Io { source, .. } if source.raw_os_error() == Some(libc::ELOOP) => Error::untrusted(
            path,
            "is a symbolic link; SCR reads its state through no link it did not create",
        ),
        e => e,
    })
}

/// The directory holding the last `.scr` directory on `path`, and the part of `path`
/// from that `.scr` on: where SCR's own state lies (a prefix's `.scr`, a cached dataset's
/// parity), None for a path through no `.scr`.
fn state_below(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let parts: Vec<_> = path.components().collect();
    let at = parts
        .iter()
        .rposition(|c| c.as_os_str() == std::ffi::OsStr::new(crate::layout::HIDDEN))?;
    // (the last component is a file's name, never the directory itself)
    if at + 1 >= parts.len() {
        return None;
    }
    let root: PathBuf = parts[..at].iter().collect();
    let rel: PathBuf = parts[at..].iter().collect();
    let root = if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    };
    Some((root, rel))
}

/// Opens the file at `path`, a regular file. SCR's state below a `.scr` directory
/// ([`state_below`]) is opened through the handle of the directory holding `.scr`: no link
/// is followed from there on, and every directory on the way, and the file, must be this
/// user's, the directories writable by nobody else
/// ([`crate::safe_fs::Beneath::open_state_file`]). Whoever may rename in that directory (a
/// prefix its group may write) could otherwise swap `.scr` for a directory of theirs
/// between two of SCR's steps, and have the job take their files for its index, summaries
/// and file lists: restart from data they chose, or delete what their lists name.
fn open_regular_with(path: &Path, flags: i32) -> Result<File> {
    if let Some((root, rel)) = state_below(path) {
        return Beneath::open(&root)?.open_state_file(&rel);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| Error::io(path, "open", e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if meta.is_dir() {
        return Err(Error::invalid(path, "is a directory, expected a file"));
    }
    if !meta.is_file() {
        return Err(Error::invalid(
            path,
            "is not a regular file (a FIFO or device?); remove it",
        ));
    }
    Ok(file)
}
