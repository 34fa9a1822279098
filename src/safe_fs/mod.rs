//! Creating SCR's directories and files so that nobody else can steer them: every
//! directory SCR uses must be the user's own (not a symbolic link, not writable by group or
//! others), paths read from metadata never pass through a link below the directory they
//! are confined to, and a file SCR recreates (a rebuild, a fetch) is written as a hidden
//! temporary and put in place with link(2), which never replaces what is there.

mod beneath;

pub use beneath::{Beneath, Staged};

use crate::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The user this process runs as.
fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The group that is the user's alone, if the account has one: the effective group when it
/// is named as the user and lists nobody else (the user private groups of RHEL-family
/// systems, whose default umask 002 makes every file group-writable). What that group may
/// write, only the user may.
fn private_group() -> Option<u32> {
    static PRIVATE: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *PRIVATE.get_or_init(|| {
        let gid = rustix::process::getegid().as_raw();
        let mut buf = vec![0 as libc::c_char; 1 << 16];
        // SAFETY: a zeroed group is a valid out-parameter; buf outlives every use of the result
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        let rc =
            unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut found) };
        if rc != 0 || found.is_null() || grp.gr_name.is_null() {
            return None;
        }
        let me = crate::layout::account_name();
        // SAFETY: getgrgid_r set gr_name and gr_mem (a NULL-ended array of NUL-terminated
        // strings) inside buf
        let name = unsafe { std::ffi::CStr::from_ptr(grp.gr_name) };
        if name.to_bytes() != me.as_bytes() {
            return None;
        }
        let mut member = grp.gr_mem;
        while !member.is_null() && !unsafe { *member }.is_null() {
            if unsafe { std::ffi::CStr::from_ptr(*member) }.to_bytes() != me.as_bytes() {
                return None;
            }
            member = unsafe { member.add(1) };
        }
        // nor is anyone else in it by their account's own group
        (!another_account_has_group(gid, me.as_bytes())).then_some(gid)
    })
}

/// Whether an account other than `me` has `gid` as its own group (the password database's
/// group, which the group database does not list as a member).
fn another_account_has_group(gid: u32, me: &[u8]) -> bool {
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: a zeroed passwd is a valid out-parameter; each entry is read before the next
    // call reuses buf; the enumeration is this process's one (at most once, under OnceLock)
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut shared = false;
    unsafe { libc::setpwent() };
    while unsafe { libc::getpwent_r(&mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) } == 0
        && !found.is_null()
    {
        if pwd.pw_gid == gid
            && !pwd.pw_name.is_null()
            && unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_bytes() != me
        {
            shared = true;
            break;
        }
    }
    unsafe { libc::endpwent() };
    shared
}

/// Why a file or directory of the user's, with `mode` and group `gid`, may be written by
/// someone else: everyone may write it, or a group that is not the user's alone. (Writable
/// by the user's private group is the user's umask 002, not anyone else's access.)
pub(crate) fn writable_by_others(mode: u32, gid: u32) -> Option<String> {
    if mode & 0o002 != 0 {
        return Some(format!(
            "is writable by everyone (mode {:o}): anyone could have changed it; run chmod o-w \
             on it",
            mode & 0o7777
        ));
    }
    if mode & 0o020 != 0 && private_group() != Some(gid) {
        return Some(format!(
            "is writable by its group (group id {gid}, mode {:o}), not yours alone: any member \
             could have changed it; run chmod g-w on it",
            mode & 0o7777
        ));
    }
    None
}

/// Why a file SCR would read configuration or state from cannot be trusted, judged on what
/// an open handle says of it: it belongs neither to this user nor to root (the system's
/// files), or group or others can write it.
pub fn untrusted_file(meta: &fs::Metadata) -> Option<String> {
    let me = my_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!(
            "belongs to user id {}, not to you (id {me}): SCR reads configuration and state \
             only from files of yours (or root's); remove it, or ask its owner to",
            meta.uid()
        ));
    }
    writable_by_others(meta.mode(), meta.gid())
}

/// Reads a small file SCR takes configuration from (at most `limit` bytes), only when the
/// opened file is this user's (or root's) and nobody else can write it; otherwise an
/// [`Error::Untrusted`] saying why.
pub fn read_trusted_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    // a link is followed only when it is the user's own (a neighbour's link to a file of
    // root's or the user's would choose what the user reads)
    let link = fs::symlink_metadata(path).map_err(|e| Error::io(path, "inspect", e))?;
    if link.file_type().is_symlink() && link.uid() != my_uid() {
        return Err(Error::untrusted(
            path,
            format!(
                "is a symbolic link of user id {}, not yours: SCR follows only your own links \
                 to configuration; remove it, or ask its owner to",
                link.uid()
            ),
        ));
    }
    // another's file is judged before it is opened: one the user cannot open, or a FIFO
    // or directory in its place, says no more about the user's job than a readable one
    if !link.file_type().is_symlink()
        && let Some(why) = untrusted_file(&link)
    {
        return Err(Error::untrusted(path, why));
    }
    // (what was no link when looked at is opened as none: a link swapped in meanwhile is
    // refused, not followed)
    let file = if link.file_type().is_symlink() {
        crate::io::open_regular(path)?
    } else {
        crate::io::open_regular_no_link(path)?
    };
    let meta = file.metadata().map_err(|e| Error::io(path, "inspect", e))?;
    if let Some(why) = untrusted_file(&meta) {
        return Err(Error::untrusted(path, why));
    }
    crate::io::read_open_file(path, file, meta.len(), limit)
}

/// Checks that `dir` is a directory of this user's, reached without a symbolic link as its
/// last component, that group and others cannot write: what SCR keeps there (filemaps,
/// the index, cached checkpoints) must not be anyone else's to change. Root may also use a
/// directory of the user who owns the directory above it when nobody else can write that
/// one (an administrator halting a user's job in the user's own prefix), never one planted
/// by a third user in a shared directory. SCR's own jobs create and check their
/// directories through [`Beneath`], which accepts only the job user's, root's jobs too.
pub fn check_owned_dir(dir: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(dir).map_err(|e| Error::io(dir, "inspect", e))?;
    let refuse = |what: String| {
        Err(Error::invalid(
            dir,
            format!("{what}; SCR keeps its metadata only in directories of your own"),
        ))
    };
    if meta.file_type().is_symlink() {
        return refuse(
            "is a symbolic link (SCR follows no link it did not create); remove it".into(),
        );
    }
    if !meta.is_dir() {
        return refuse("is not a directory; remove it".into());
    }
    // (the parent's owner, when nobody else can write the parent: then only that owner
    // could have made `dir` there)
    let parent_owner = || {
        dir.parent()
            .and_then(|p| {
                fs::metadata(if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                })
                .ok()
            })
            .filter(|m| writable_by_others(m.mode(), m.gid()).is_none())
            .map(|m| m.uid())
    };
    let me = my_uid();
    if meta.uid() != me && !(me == 0 && parent_owner() == Some(meta.uid())) {
        return refuse(format!(
            "belongs to user id {}, not to you (id {me}); remove it or choose another directory",
            meta.uid()
        ));
    }
    match writable_by_others(meta.mode(), meta.gid()) {
        Some(why) => refuse(why),
        None => Ok(()),
    }
}

/// Whether `dir` is a directory (not a link) of this user's alone, strictly: no exception
/// for root, whose records of another job must be its own as anyone's.
pub fn is_own_dir(dir: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir() && m.uid() == my_uid() && writable_by_others(m.mode(), m.gid()).is_none()
    })
}

/// Refuses a prefix everyone can write without the sticky bit: there anyone can rename
/// `.scr` or a dataset's directory away and put their own in its place between two of
/// SCR's steps. (A shared scratch area is sticky, as /tmp is: there only its owner may
/// rename what SCR keeps. A group-writable prefix trusts its group.)
pub fn check_prefix_mode(prefix: &Path) -> Result<()> {
    let Ok(m) = fs::metadata(prefix) else {
        return Ok(()); // created as the user's own
    };
    if m.mode() & 0o002 != 0 && m.mode() & 0o1000 == 0 {
        return Err(Error::untrusted(
            prefix,
            format!(
                "is writable by everyone and not sticky (mode {:o}): anyone could rename what \
                 SCR keeps there and put their own in its place; run chmod +t on it (as /tmp \
                 is), or choose a prefix of your own",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Checks a prefix before a command reads or changes what SCR keeps there: not open to
/// everyone without the sticky bit ([`check_prefix_mode`]), and its `.scr` directory, when
/// there is one, must pass [`check_owned_dir`].
pub fn check_prefix(prefix: &Path) -> Result<()> {
    check_prefix_mode(prefix)?;
    let hidden = crate::layout::prefix_hidden_dir(prefix);
    match fs::symlink_metadata(&hidden) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        _ => check_owned_dir(&hidden),
    }
}

/// Creates `dir` below `base` (which may be anyone's, like /tmp or a project directory):
/// `base` is created as needed; every component from there to `dir` is created with `mode`
/// (the umask still applies) or, if it exists, must be this user's and not writable by
/// group or others — checked on the handle of each directory as it is reached, never
/// through a symbolic link ([`Beneath`]).
pub fn create_dirs_in(base: &Path, dir: &Path, mode: u32) -> Result<()> {
    let rel = dir
        .strip_prefix(base)
        .map_err(|_| Error::invalid(dir, format!("is not inside {}", base.display())))?;
    if !base.is_dir() {
        fs::create_dir_all(base).map_err(|e| Error::io(base, "create directory", e))?;
    }
    Beneath::open(base)?.create_dirs(rel, mode).map(drop)
}

/// `path` as `root` and the part of it below `root`: the root as named, or as the file
/// system resolves it (a prefix reached through a link of the user's own: paths in
/// metadata come back resolved).
pub fn below(root: &Path, path: &Path) -> Result<(PathBuf, PathBuf)> {
    match path.strip_prefix(root) {
        Ok(rel) => Ok((root.to_path_buf(), rel.to_path_buf())),
        Err(_) => fs::canonicalize(root)
            .ok()
            .and_then(|r| {
                let rel = path.strip_prefix(&r).ok()?.to_path_buf();
                Some((r, rel))
            })
            .ok_or_else(|| Error::invalid(path, format!("is not inside {}", root.display()))),
    }
}

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
        let temp = crate::io::temporary_name(target, "new");
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
        let temp = crate::io::temporary_name(target, "new");
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
                    crate::io::sync_dir(dir)?;
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
    fn directories_of_others_links_and_open_modes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        create_dirs_in(base, &base.join("a/b"), 0o700).unwrap();
        assert!(base.join("a/b").is_dir());
        create_dirs_in(base, &base.join("a/b"), 0o700).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("l")).unwrap();
        let e = create_dirs_in(base, &base.join("l/b"), 0o700)
            .unwrap_err()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
        fs::create_dir(base.join("open")).unwrap();
        fs::set_permissions(base.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
        let e = create_dirs_in(base, &base.join("open/x"), 0o700)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("writable by everyone") && e.contains("chmod o-w"),
            "{e}"
        );
        assert!(create_dirs_in(base, &base.join("../x"), 0o700).is_err());
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

    #[test]
    fn leftover_temporaries_are_swept_only_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("prefix");
        fs::create_dir_all(root.join("ckpt.1")).unwrap();
        fs::write(root.join("ckpt.1/.rank_0.ckpt.tmp.1234.7"), b"half").unwrap();
        fs::write(root.join("ckpt.1/rank_0.ckpt"), b"whole").unwrap();
        // a link a neighbour planted to a directory holding temporary-looking names
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join(".notes.new.1.2"), b"mine").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("ckpt.2")).unwrap();
        let beneath = Beneath::open(&root).unwrap();
        beneath.remove_temporaries(Path::new("ckpt.1"));
        beneath.remove_temporaries(Path::new("ckpt.2"));
        let left: Vec<_> = fs::read_dir(root.join("ckpt.1"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["rank_0.ckpt"]);
        assert!(elsewhere.join(".notes.new.1.2").exists());
    }

    #[test]
    fn a_group_is_shared_when_another_account_has_it_as_its_own() {
        // nobody's account has the group nogroup (65534) as its own; no account but root
        // has root's group
        assert!(another_account_has_group(65534, b"root"));
        assert!(!another_account_has_group(0, b"root"));
    }
}
