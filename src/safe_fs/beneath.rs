//! Working below a directory through handles: every step from the root to a file is one
//! `openat` of one name with `O_NOFOLLOW` (so no symbolic link is ever followed, and `..`
//! never appears), each directory is checked on the handle just opened (this user's, not
//! writable by group or others), and files are created, renamed and removed relative to
//! the handle of their directory. A directory swapped for a link between two steps is
//! refused at the step that meets it; nothing checked by name is used afterwards by name.
//! This is what `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` gives, plus the ownership
//! check, on any Linux.

use crate::error::{Error, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// A directory SCR works below (the prefix, a cache or control base).
pub struct Beneath {
    root: PathBuf,
    fd: OwnedFd,
    owner: u32,
}

/// A file written beside its place and not yet in it ([`Beneath::stage_file`]): its bytes
/// are durable under a temporary name in its target's directory. Both paths are relative
/// to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staged {
    /// The temporary holding the bytes.
    pub temp: PathBuf,
    /// Where [`Beneath::place`] puts them.
    pub target: PathBuf,
}

impl Staged {
    /// The directory both names are in, the temporary's name and the target's; an error
    /// when they are not in one directory (a rename never moves a file elsewhere).
    fn names(&self) -> Result<(&Path, &std::ffi::OsStr, &std::ffi::OsStr)> {
        let (dir, temp) = Beneath::split(&self.temp)?;
        let (target_dir, name) = Beneath::split(&self.target)?;
        if dir != target_dir || !crate::temp_name::is_temporary_name(&temp.to_string_lossy()) {
            return Err(Error::invalid(
                &self.temp,
                format!(
                    "is not a temporary of SCR's beside {}; it is not put in its place",
                    self.target.display()
                ),
            ));
        }
        Ok((dir, temp, name))
    }
}

/// Opens `name` in `dir` with `flags`, never through a symbolic link (one there is a
/// neighbour's doing: said as untrusted, naming what SCR `does` through it), and says what
/// the handle is.
fn open_no_link(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
    flags: OFlags,
    mode: Mode,
    does: &str,
) -> Result<(OwnedFd, rustix::fs::Stat)> {
    let fd = rustix::fs::openat(dir, name, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode)
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => Error::untrusted(
                path,
                format!("is a symbolic link; SCR {does} through no link it did not create"),
            ),
            e => io_error(path, "open", e),
        })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_error(path, "inspect", e))?;
    Ok((fd, st))
}

fn io_error(path: &Path, action: &'static str, e: rustix::io::Errno) -> Error {
    Error::io(path, action, std::io::Error::from(e))
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

impl Beneath {
    /// The directory `root` (reached as named: a link in its own path is the user's
    /// choice), for this user: what is below it must be this user's. The root itself may
    /// be anyone's (a shared scratch area); the prefix's own mode is judged by
    /// [`super::check_prefix_mode`].
    pub fn open(root: &Path) -> Result<Beneath> {
        let fd = rustix::fs::open(root, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| io_error(root, "open directory", e))?;
        Ok(Beneath {
            root: root.to_path_buf(),
            fd,
            owner: rustix::process::geteuid().as_raw(),
        })
    }

    /// The directory `root` itself (no link as its last component) of `owner`'s, not
    /// writable by others, with what is below it `owner`'s too: what root reads of a
    /// user's job (a rank's records in its node's control directory) on the user's word.
    pub fn open_owned_by(root: &Path, owner: u32) -> Result<Beneath> {
        let fd = rustix::fs::open(root, DIR_FLAGS, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => Error::untrusted(
                root,
                "is a symbolic link or not a directory; SCR goes through no link it did not create",
            ),
            e => io_error(root, "open directory", e),
        })?;
        let dir = Beneath {
            root: root.to_path_buf(),
            fd,
            owner,
        };
        let fd = dir.fd.try_clone().map_err(|e| Error::io(root, "dup", e))?;
        dir.check_dir(&fd, root)?;
        Ok(dir)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The names of the entries of the directory `rel` (reached as [`Beneath::open_dir`]
    /// reaches it), without `.` and `..`, unsorted; none when it is not there.
    pub fn names_in(&self, rel: &Path) -> Result<Vec<std::ffi::OsString>> {
        let path = self.root.join(rel);
        let Some(dir) = self.open_dir(rel)? else {
            return Ok(Vec::new());
        };
        let listing = rustix::fs::Dir::read_from(&dir).map_err(|e| io_error(&path, "list", e))?;
        let mut names = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| io_error(&path, "list", e))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(std::ffi::OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(names)
    }

    /// The names of `rel`, each a plain component (no `/`, `.` or `..`).
    fn names(rel: &Path) -> Result<Vec<&std::ffi::OsStr>> {
        rel.components()
            .map(|c| match c {
                Component::Normal(n) => Ok(n),
                _ => Err(Error::invalid(
                    rel,
                    "is not a plain path below its directory ('/', '.' or '..' in it)",
                )),
            })
            .collect()
    }

    /// Checks a directory handle met on the way: this user's, not writable by others.
    fn check_dir(&self, fd: &OwnedFd, path: &Path) -> Result<()> {
        let st = rustix::fs::fstat(fd).map_err(|e| io_error(path, "inspect", e))?;
        if st.st_uid != self.owner {
            return Err(Error::untrusted(
                path,
                format!(
                    "belongs to user id {}, not to you (id {}): SCR writes and reads back only \
                     directories of yours below {}; remove it, or ask its owner to",
                    st.st_uid,
                    self.owner,
                    self.root.display()
                ),
            ));
        }
        match super::writable_by_others(fd, st.st_mode, st.st_gid) {
            Some(why) => Err(Error::untrusted(path, why)),
            None => Ok(()),
        }
    }

    fn step(&self, at: &OwnedFd, name: &std::ffi::OsStr, path: &Path) -> Result<OwnedFd> {
        match rustix::fs::openat(at, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => {
                self.check_dir(&fd, path)?;
                Ok(fd)
            }
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => Err(Error::untrusted(
                path,
                "is a symbolic link or not a directory; SCR goes through no link it did not create",
            )),
            Err(e) => Err(io_error(path, "open directory", e)),
        }
    }

    /// The directory `rel` below the root, each step checked; None when a step is missing.
    pub fn open_dir(&self, rel: &Path) -> Result<Option<OwnedFd>> {
        let mut at = self
            .fd
            .try_clone()
            .map_err(|e| Error::io(&self.root, "dup", e))?;
        let mut path = self.root.clone();
        for name in Self::names(rel)? {
            path.push(name);
            match self.step(&at, name, &path) {
                Ok(fd) => at = fd,
                Err(e) if e.is_not_found() => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some(at))
    }

    /// The directory `rel` below the root, created (with `mode`, the umask applying) where
    /// missing; every existing step must be this user's and not writable by others.
    pub fn create_dirs(&self, rel: &Path, mode: u32) -> Result<OwnedFd> {
        let mut at = self
            .fd
            .try_clone()
            .map_err(|e| Error::io(&self.root, "dup", e))?;
        let mut path = self.root.clone();
        for name in Self::names(rel)? {
            path.push(name);
            match rustix::fs::mkdirat(&at, name, Mode::from_raw_mode(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(io_error(&path, "create directory", e)),
            }
            at = self.step(&at, name, &path)?;
        }
        Ok(at)
    }

    /// Splits `rel` into its directory and its last name.
    fn split(rel: &Path) -> Result<(&Path, &std::ffi::OsStr)> {
        let name = rel
            .file_name()
            .ok_or_else(|| Error::invalid(rel, "names no file"))?;
        Ok((rel.parent().unwrap_or(Path::new("")), name))
    }

    /// Opens the regular file `rel` for reading: every directory on the way and the file
    /// itself this user's, not writable by others (what SCR reads back from the prefix).
    pub fn open_file(&self, rel: &Path) -> Result<File> {
        let (fd, st, path) = self.open_owned(rel)?;
        if let Some(why) = super::writable_by_others(&fd, st.st_mode, st.st_gid) {
            return Err(Error::untrusted(&path, why));
        }
        Ok(File::from(fd))
    }

    /// [`Beneath::open_file`], then checks the file holds the `size` bytes recorded for it
    /// (a flushed file, by its flush): a file that is not what was recorded is refused
    /// ([`Error::corrupt`]) before a byte is read.
    pub fn open_file_of_size(&self, rel: &Path, size: u64) -> Result<File> {
        let file = self.open_file(rel)?;
        let path = self.root().join(rel);
        let len = file
            .metadata()
            .map_err(|e| Error::io(&path, "stat", e))?
            .len();
        if len != size {
            return Err(Error::corrupt(format!(
                "{}: {len} bytes, not the {size} the flush recorded",
                path.display()
            )));
        }
        Ok(file)
    }

    /// Opens SCR's own state file `rel` for reading (the prefix's `.scr/halt.scr`): every
    /// directory on the way this user's and not writable by others, so that nobody else
    /// could have put a file there or swapped one; the file itself this user's, regular,
    /// and no link. Who else may write the file is left to its reader: a halt file an
    /// older version left everyone's to write is still read (and replaced by the user's
    /// next write).
    pub fn open_state_file(&self, rel: &Path) -> Result<File> {
        self.open_owned(rel).map(|(fd, _, _)| File::from(fd))
    }

    /// The regular file `rel` of this user's, opened for reading through checked
    /// directories, with what it is and its path.
    fn open_owned(&self, rel: &Path) -> Result<(OwnedFd, rustix::fs::Stat, PathBuf)> {
        let (dir, name) = Self::split(rel)?;
        let path = self.root.join(rel);
        let dir = self
            .open_dir(dir)?
            .ok_or_else(|| Error::io(&path, "open", std::io::ErrorKind::NotFound.into()))?;
        let (fd, st) = open_no_link(
            &dir,
            name,
            &path,
            OFlags::RDONLY | OFlags::NONBLOCK,
            Mode::empty(),
            "reads",
        )?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(Error::invalid(&path, "is not a regular file; remove it"));
        }
        if st.st_uid != self.owner {
            return Err(Error::untrusted(
                &path,
                format!(
                    "belongs to user id {}, not to you (id {}): SCR reads back only files of \
                     yours; remove it, or ask its owner to",
                    st.st_uid, self.owner
                ),
            ));
        }
        Ok((fd, st, path))
    }

    /// The directory of `path` (below the root, by name or as resolved), created with
    /// `dir_mode` where missing and checked as by [`Beneath::create_dirs`], and the name
    /// of `path` in it.
    pub fn create_parent(
        &self,
        path: &Path,
        dir_mode: u32,
    ) -> Result<(OwnedFd, std::ffi::OsString)> {
        let (_, rel) = super::below(&self.root, path)?;
        let (dir, name) = Self::split(&rel)?;
        Ok((self.create_dirs(dir, dir_mode)?, name.to_os_string()))
    }

    /// Opens the regular file at `path` below the root (by name or as resolved) for
    /// reading, as [`Beneath::open_file`].
    pub fn open_path(&self, path: &Path) -> Result<File> {
        let (_, rel) = super::below(&self.root, path)?;
        self.open_file(&rel)
    }

    /// Removes the file at `path` below the root if it is there, as
    /// [`Beneath::remove_file`], and makes the removal durable.
    pub fn remove_path(&self, path: &Path) -> Result<bool> {
        let (_, rel) = super::below(&self.root, path)?;
        let removed = self.remove_file(&rel)?;
        if removed && let Some(dir) = self.open_dir(Self::split(&rel)?.0)? {
            rustix::fs::fsync(&dir).map_err(|e| io_error(path, "fsync the directory of", e))?;
        }
        Ok(removed)
    }

    /// Writes `rel` as a temporary beside it (created with `mode`, never through a link),
    /// fsynced, then renamed over `rel` and the directory fsynced: a reader sees the old
    /// file or the new one. The directories on the way are created where missing.
    pub fn write_file<R>(
        &self,
        rel: &Path,
        mode: u32,
        dir_mode: u32,
        write: impl FnOnce(&mut File) -> Result<R>,
    ) -> Result<R> {
        let (value, staged) = self.stage_file(rel, mode, dir_mode, write)?;
        self.place(&staged)?;
        Ok(value)
    }

    /// The first half of [`Beneath::write_file`]: `rel`'s new bytes written and fsynced
    /// under a temporary name beside it, where they wait for [`Beneath::place`] (or
    /// [`Beneath::discard`]). What stands at `rel` meanwhile is untouched: a dataset's files
    /// are staged one by one and placed only once every one of them is right, so a file an
    /// older dataset names at the same path is replaced by a whole dataset or not at all.
    /// On an error the temporary is removed.
    pub fn stage_file<R>(
        &self,
        rel: &Path,
        mode: u32,
        dir_mode: u32,
        write: impl FnOnce(&mut File) -> Result<R>,
    ) -> Result<(R, Staged)> {
        let (dir_rel, name) = Self::split(rel)?;
        let path = self.root.join(rel);
        let dir = self.create_dirs(dir_rel, dir_mode)?;
        let temp = crate::temp_name::temporary_name(Path::new(name), "tmp");
        let temp = temp.file_name().unwrap_or(name);
        let fd = rustix::fs::openat(
            &dir,
            temp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| io_error(&path, "create a temporary for", e))?;
        let mut file = File::from(fd);
        let written = write(&mut file).and_then(|r| {
            file.sync_all().map_err(|e| Error::io(&path, "fsync", e))?;
            Ok(r)
        });
        match written {
            Ok(r) => Ok((
                r,
                Staged {
                    temp: dir_rel.join(temp),
                    target: rel.to_path_buf(),
                },
            )),
            Err(e) => {
                let _ = rustix::fs::unlinkat(&dir, temp, AtFlags::empty());
                Err(e)
            }
        }
    }

    /// Puts a staged file in its place: renamed over its target (whatever file stood
    /// there), and the directory fsynced.
    pub fn place(&self, staged: &Staged) -> Result<()> {
        let (dir_rel, temp, name) = staged.names()?;
        let path = self.root.join(&staged.target);
        let dir = self
            .open_dir(dir_rel)?
            .ok_or_else(|| Error::io(&path, "open", std::io::ErrorKind::NotFound.into()))?;
        rustix::fs::renameat(&dir, temp, &dir, name)
            .map_err(|e| io_error(&path, "rename a temporary over", e))?;
        rustix::fs::fsync(&dir).map_err(|e| io_error(&path, "fsync the directory of", e))
    }

    /// [`Beneath::place`] of a copy that may be in its place already (a flush that a kill
    /// cut short, finished by whoever finds it): false when its temporary is gone.
    pub fn place_if_waiting(&self, staged: &Staged) -> Result<bool> {
        let (dir_rel, temp, _) = staged.names()?;
        let Some(dir) = self.open_dir(dir_rel)? else {
            return Ok(false);
        };
        match rustix::fs::statat(&dir, temp, AtFlags::SYMLINK_NOFOLLOW) {
            Err(rustix::io::Errno::NOENT) => return Ok(false),
            Err(e) => return Err(io_error(&self.root.join(&staged.temp), "inspect", e)),
            Ok(_) => {}
        }
        self.place(staged)?;
        Ok(true)
    }

    /// Moves the file `from` to `to` (both below the root, on its file system), replacing
    /// whatever file stood at `to`; the directories on the way to `to` are created with
    /// `dir_mode` where missing, and `to`'s directory is fsynced. A drained dataset's files
    /// go from where they waited to their places this way once the dataset is whole.
    pub fn move_file(&self, from: &Path, to: &Path, dir_mode: u32) -> Result<()> {
        let (from_dir, from_name) = Self::split(from)?;
        let (to_dir, to_name) = Self::split(to)?;
        let path = self.root.join(to);
        let source = self.open_dir(from_dir)?.ok_or_else(|| {
            Error::io(
                self.root.join(from),
                "open",
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
        let target = self.create_dirs(to_dir, dir_mode)?;
        rustix::fs::renameat(&source, from_name, &target, to_name)
            .map_err(|e| io_error(&path, "move a drained file to", e))?;
        rustix::fs::fsync(&target).map_err(|e| io_error(&path, "fsync the directory of", e))
    }

    /// Removes a staged file that is not to be placed; its target stays as it is.
    pub fn discard(&self, staged: &Staged) -> Result<()> {
        let (dir_rel, temp, _) = staged.names()?;
        let Some(dir) = self.open_dir(dir_rel)? else {
            return Ok(());
        };
        match rustix::fs::unlinkat(&dir, temp, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(io_error(&self.root.join(&staged.temp), "remove", e)),
        }
    }

    /// Opens `rel` for writing in place, created with `mode` if missing and never truncated
    /// (a container several ranks write side by side): the directories on the way are
    /// created and checked as by [`Beneath::create_dirs`], the file is never reached
    /// through a link, and an existing one must be this user's.
    pub fn open_in_place(&self, rel: &Path, mode: u32, dir_mode: u32) -> Result<File> {
        let (dir, name) = Self::split(rel)?;
        let path = self.root.join(rel);
        let dir = self.create_dirs(dir, dir_mode)?;
        let (fd, st) = open_no_link(
            &dir,
            name,
            &path,
            OFlags::WRONLY | OFlags::CREATE,
            Mode::from_raw_mode(mode),
            "writes",
        )?;
        if st.st_uid != self.owner
            || rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile
        {
            return Err(Error::untrusted(
                &path,
                format!("is not a regular file of yours (user id {})", st.st_uid),
            ));
        }
        Ok(File::from(fd))
    }

    /// Removes the file `rel` if it is there (never what a link points to); true if it was.
    pub fn remove_file(&self, rel: &Path) -> Result<bool> {
        let (dir, name) = Self::split(rel)?;
        let Some(dir) = self.open_dir(dir)? else {
            return Ok(false);
        };
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(io_error(&self.root.join(rel), "remove", e)),
        }
    }

    /// Removes from the directory `rel` (reached through handles, never a link) the
    /// temporaries SCR's writers leave when killed mid-copy ([`crate::temp_name::is_temporary_name`]),
    /// regular files only. For a directory no SCR writer uses any more (the drain calls it
    /// once every copy ended). A directory that is not there, or not this user's, is left.
    pub fn remove_temporaries(&self, rel: &Path) {
        self.remove_temporaries_of(rel, None, &[]);
    }

    /// [`Beneath::remove_temporaries`] of one writer alone when `writer` is given: the
    /// temporaries whose names carry that process id (one known to have ended, while
    /// other writers may still be copying into the same directory), but none of `keep`
    /// (paths relative to the root: whole copies recorded as waiting to be placed).
    pub fn remove_temporaries_of(&self, rel: &Path, writer: Option<u32>, keep: &[PathBuf]) {
        let Ok(Some(dir)) = self.open_dir(rel) else {
            return;
        };
        let Ok(listing) = rustix::fs::Dir::read_from(&dir) else {
            return;
        };
        for entry in listing.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !crate::temp_name::is_temporary_name(&name) {
                continue;
            }
            if let Some(pid) = writer
                && crate::temp_name::temporary_writer(&name) != Some(pid)
            {
                continue;
            }
            if keep.iter().any(|k| *k == rel.join(&name)) {
                continue;
            }
            // a regular file of this user's own: a writer of SCR's leaves nothing else, and
            // in a directory others share a look-alike of theirs is not this sweep's
            let own = rustix::process::geteuid().as_raw();
            let regular = rustix::fs::statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| {
                    rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::RegularFile
                        && st.st_uid == own
                });
            if regular {
                let _ = rustix::fs::unlinkat(&dir, entry.file_name(), AtFlags::empty());
            }
        }
    }

    /// Every regular file in the directory `rel` and below it, as paths relative to the
    /// root with their sizes, in name order: each directory reached through handles and
    /// checked (this user's, not writable by others), each file this user's regular file.
    /// A link, a special file, a file of another user's or more than `most` files are
    /// errors naming it. Who else may write a file its handle tells: a caller that keeps
    /// what it lists opens each with [`Beneath::open_file`].
    pub fn list_files(&self, rel: &Path, most: usize) -> Result<Vec<(PathBuf, u64)>> {
        let mut out = Vec::new();
        let mut pending = vec![rel.to_path_buf()];
        while let Some(dir_rel) = pending.pop() {
            let dir_path = self.root.join(&dir_rel);
            let dir = self.open_dir(&dir_rel)?.ok_or_else(|| {
                Error::io(
                    &dir_path,
                    "open directory",
                    std::io::ErrorKind::NotFound.into(),
                )
            })?;
            let listing =
                rustix::fs::Dir::read_from(&dir).map_err(|e| io_error(&dir_path, "list", e))?;
            let mut names: Vec<std::ffi::OsString> = Vec::new();
            for entry in listing {
                let entry = entry.map_err(|e| io_error(&dir_path, "list", e))?;
                let name = entry.file_name().to_bytes();
                if name != b"." && name != b".." {
                    names.push(std::ffi::OsStr::from_bytes(name).to_os_string());
                }
            }
            names.sort();
            for name in names {
                let path = dir_path.join(&name);
                let st = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| io_error(&path, "inspect", e))?;
                match rustix::fs::FileType::from_raw_mode(st.st_mode) {
                    rustix::fs::FileType::Directory => pending.push(dir_rel.join(&name)),
                    rustix::fs::FileType::RegularFile => {
                        if st.st_uid != self.owner {
                            return Err(Error::untrusted(
                                &path,
                                format!(
                                    "belongs to user id {}, not to you (id {})",
                                    st.st_uid, self.owner
                                ),
                            ));
                        }
                        if out.len() == most {
                            return Err(Error::invalid(
                                self.root.join(rel),
                                format!("holds more than {most} files"),
                            ));
                        }
                        out.push((dir_rel.join(&name), st.st_size as u64));
                    }
                    _ => {
                        return Err(Error::untrusted(
                            &path,
                            "is a link or a special file; SCR reads back regular files only",
                        ));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Removes the directory `rel` and everything in it, if it is there; true if it was.
    /// Reached through checked handles and emptied through its own, no link followed: a
    /// link in it (or in its place) is removed, never what it leads to.
    pub fn remove_tree(&self, rel: &Path) -> Result<bool> {
        let (dir, name) = Self::split(rel)?;
        let Some(dir) = self.open_dir(dir)? else {
            return Ok(false);
        };
        remove_tree_at(&dir, name, &self.root.join(rel))
    }

    /// Removes the directory `rel` if it is there and empty; true if it was removed.
    pub fn remove_empty_dir(&self, rel: &Path) -> Result<bool> {
        let (dir, name) = Self::split(rel)?;
        let Some(dir) = self.open_dir(dir)? else {
            return Ok(false);
        };
        match rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(
                rustix::io::Errno::NOENT | rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST,
            ) => Ok(false),
            Err(e) => Err(io_error(&self.root.join(rel), "remove directory", e)),
        }
    }

    /// fsyncs the directory `rel` (its entries are durable).
    pub fn sync_dir(&self, rel: &Path) -> Result<()> {
        if let Some(fd) = self.open_dir(rel)? {
            rustix::fs::fsync(fd.as_fd())
                .map_err(|e| io_error(&self.root.join(rel), "fsync", e))?;
        }
        Ok(())
    }
}

/// Removes `name` in `parent`: a directory with everything in it, through its handle; a link
/// or a file itself. True if something was there.
fn remove_tree_at(parent: &OwnedFd, name: &std::ffi::OsStr, path: &Path) -> Result<bool> {
    let dir = match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(false),
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            return rustix::fs::unlinkat(parent, name, AtFlags::empty())
                .map(|()| true)
                .map_err(|e| io_error(path, "remove", e));
        }
        Err(e) => return Err(io_error(path, "open directory", e)),
    };
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&dir).map_err(|e| io_error(path, "list", e))? {
        let entry = entry.map_err(|e| io_error(path, "list", e))?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(std::ffi::OsStr::from_bytes(n).to_os_string());
        }
    }
    for n in names {
        remove_tree_at(&dir, &n, &path.join(&n))?;
    }
    match rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(true),
        Err(e) => Err(io_error(path, "remove", e)),
    }
}
