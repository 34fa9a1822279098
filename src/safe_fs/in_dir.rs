//! One name in a directory the caller holds open: opened or removed through that handle,
//! never by a path walked again (which a rename of a directory on the way would redirect),
//! and never through a symbolic link in the name's place.

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::OsStr;
use std::fs::File;

/// How [`open_in`] opens the name.
#[derive(Clone, Copy, Debug)]
pub enum OpenIn {
    /// Create it, failing where anything has that name already (`O_EXCL`).
    CreateNew,
    /// Append to it, creating it where missing.
    Append,
    /// Open it only where it exists (a FIFO in its place does not block the open).
    Existing,
}

/// Opens `name` in the directory open as `dir` for writing, never through a link; what is
/// created is the owner's alone (0600).
pub fn open_in(dir: impl AsFd, name: &OsStr, how: OpenIn) -> std::io::Result<File> {
    let how = match how {
        OpenIn::CreateNew => OFlags::CREATE | OFlags::EXCL,
        OpenIn::Append => OFlags::CREATE | OFlags::APPEND,
        OpenIn::Existing => OFlags::NONBLOCK,
    };
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | how;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}

/// Removes the file `name` from the directory open as `dir`.
pub fn remove_in(dir: impl AsFd, name: &OsStr) -> std::io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_name_is_created_once_appended_to_and_removed_through_the_handle() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = File::open(tmp.path()).unwrap();
        let name = OsStr::new("log");
        open_in(&dir, name, OpenIn::CreateNew)
            .unwrap()
            .write_all(b"a")
            .unwrap();
        let again = open_in(&dir, name, OpenIn::CreateNew).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        open_in(&dir, name, OpenIn::Append)
            .unwrap()
            .write_all(b"b")
            .unwrap();
        let path = tmp.path().join("log");
        assert_eq!(std::fs::read(&path).unwrap(), b"ab");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        drop(open_in(&dir, name, OpenIn::Existing).unwrap());
        remove_in(&dir, name).unwrap();
        assert!(!path.exists());
        let missing = open_in(&dir, name, OpenIn::Existing).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert!(!path.exists());
    }

    #[test]
    fn a_link_in_the_name_s_place_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, tmp.path().join("log")).unwrap();
        let dir = File::open(tmp.path()).unwrap();
        for how in [OpenIn::CreateNew, OpenIn::Append, OpenIn::Existing] {
            assert!(open_in(&dir, OsStr::new("log"), how).is_err(), "{how:?}");
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
    }
}
