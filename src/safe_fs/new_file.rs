//! Recreating a file where none may exist yet: written as a hidden temporary beside its
//! target and put in place with link(2), which never replaces what is there.

use super::Beneath;
use crate::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A file SCR creates where none may exist yet (a rebuilt or received file): written as a
/// hidden temporary beside its target, created exclusively (no link is followed), and put
/// in place by [`NewFile::commit`] with link(2), which fails rather than replace a file
/// that appeared meanwhile. Dropped without a commit, the temporary is removed, so a crash
/// or a failed check never leaves a half-written file under the target's name.
pub struct NewFile {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
    /// Below a directory SCR must not be steered out of (the prefix): the handle of the
    /// target's directory, through which the temporary is created, linked and removed.
    dir: Option<rustix::fd::OwnedFd>,
}

impl NewFile {
    /// Starts recreating `target` below `within`'s root when given (through directory
    /// handles: every directory on the way the user's, created with `dir_mode` where
    /// missing, no link followed), else at its path in a directory of SCR's own (a cache).
    pub fn create_in(within: Option<&Beneath>, target: &Path, dir_mode: u32) -> Result<NewFile> {
        let Some(beneath) = within else {
            if let Some(dir) = target.parent() {
                fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            }
            return NewFile::create(target);
        };
        let (dir, name) = beneath.create_parent(target, dir_mode)?;
        if rustix::fs::statat(&dir, &name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok() {
            return Err(already_exists(target));
        }
        let temp = crate::temp_name::temporary_name(target, "new");
        let temp_name = temp.file_name().unwrap_or(&name);
        let fd = rustix::fs::openat(
            &dir,
            temp_name,
            rustix::fs::OFlags::RDWR
                | rustix::fs::OFlags::CREATE
                | rustix::fs::OFlags::EXCL
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .map_err(|e| Error::io(&temp, "create", e.into()))?;
        Ok(NewFile {
            file: File::from(fd),
            temp,
            target: target.to_path_buf(),
            committed: false,
            dir: Some(dir),
        })
    }

    pub fn create(target: &Path) -> Result<NewFile> {
        if fs::symlink_metadata(target).is_ok() {
            return Err(already_exists(target));
        }
        let temp = crate::temp_name::temporary_name(target, "new");
        // readable by the user alone until [`NewFile::set_mode`] gives it its source's mode:
        // a file SCR derives is never more readable than what it was derived from
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .map_err(|e| Error::io(&temp, "create", e))?;
        Ok(NewFile {
            file,
            temp,
            target: target.to_path_buf(),
            committed: false,
            dir: None,
        })
    }

    /// The open temporary.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Gives the file permission bits `mode` (those of the file it recreates), on its handle.
    pub fn set_mode(&self, mode: u32) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.file
            .set_permissions(fs::Permissions::from_mode(mode & 0o777))
            .map_err(|e| Error::io(&self.temp, "set the mode of", e))
    }

    /// Where the bytes are until the commit.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Makes the file durable and gives it its name.
    pub fn commit(mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(&self.temp, "fsync", e))?;
        let appeared = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::invalid(
                    &self.target,
                    "appeared while SCR recreated it; it was not replaced",
                )
            } else {
                Error::io(&self.target, "put in place", e)
            }
        };
        let (temp_name, name) = {
            let (t, n) = self.names();
            (t.to_os_string(), n.to_os_string())
        };
        match &self.dir {
            Some(dir) => {
                rustix::fs::linkat(dir, &temp_name, dir, &name, rustix::fs::AtFlags::empty())
                    .map_err(|e| appeared(e.into()))?;
                self.committed = true;
                rustix::fs::unlinkat(dir, &temp_name, rustix::fs::AtFlags::empty())
                    .map_err(|e| Error::io(&self.temp, "remove", e.into()))?;
                rustix::fs::fsync(dir)
                    .map_err(|e| Error::io(&self.target, "fsync the directory of", e.into()))?;
            }
            None => {
                fs::hard_link(&self.temp, &self.target).map_err(appeared)?;
                self.committed = true;
                fs::remove_file(&self.temp).map_err(|e| Error::io(&self.temp, "remove", e))?;
                if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
                    crate::plain_io::sync_dir(dir)?;
                }
            }
        }
        Ok(())
    }

    /// The temporary's name and the target's, in their directory.
    fn names(&self) -> (&std::ffi::OsStr, &std::ffi::OsStr) {
        let name = self.target.file_name().unwrap_or_default();
        (self.temp.file_name().unwrap_or(name), name)
    }
}

fn already_exists(target: &Path) -> Error {
    Error::invalid(
        target,
        "already exists; SCR only recreates missing files and never replaces one",
    )
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.committed {
            match &self.dir {
                Some(dir) => {
                    let _ = rustix::fs::unlinkat(dir, self.names().0, rustix::fs::AtFlags::empty());
                }
                None => {
                    let _ = fs::remove_file(&self.temp);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_file_appears_only_when_committed_and_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("rank_0.ckpt");
        let f = NewFile::create(&target).unwrap();
        use std::os::unix::fs::FileExt;
        f.file().write_all_at(b"rebuilt", 0).unwrap();
        assert!(!target.exists(), "not before the commit");
        f.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"rebuilt");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
        // an existing file, or a link in its place, is refused, not written through
        let e = NewFile::create(&target).err().unwrap().to_string();
        assert!(e.contains("already exists"), "{e}");
        let victim = dir.path().join("victim");
        fs::write(&victim, b"mine").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(NewFile::create(&link).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"mine");
        // dropped uncommitted: nothing left
        drop(NewFile::create(&dir.path().join("never")).unwrap());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_file_recreated_beneath_goes_through_no_link_and_no_directory_of_anothers() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let beneath = Beneath::open(root).unwrap();
        // the user's own directories: created where missing, the file appears at commit
        let target = root.join("ckpt.3/sub/rank_2.ckpt");
        let f = NewFile::create_in(Some(&beneath), &target, 0o755).unwrap();
        f.file().write_all_at(b"rank 2", 0).unwrap();
        assert!(!target.exists());
        f.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"rank 2");
        assert!(NewFile::create_in(Some(&beneath), &target, 0o755).is_err());
        // a link planted on the way is not followed
        let elsewhere = root.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("ckpt.4")).unwrap();
        let e = NewFile::create_in(Some(&beneath), &root.join("ckpt.4/rank_0.ckpt"), 0o755)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        // nor is a directory another user made, open to all (the tests run as root)
        let theirs = root.join("ckpt.5");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o777)).unwrap();
        let e = NewFile::create_in(Some(&beneath), &theirs.join("rank_0.ckpt"), 0o755)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("belongs to user id 65534"), "{e}");
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert_eq!(
            fs::read_dir(root.join("ckpt.3/sub")).unwrap().count(),
            1,
            "no temporary"
        );
    }
}
