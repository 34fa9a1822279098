//! Creating SCR's directories and files so that nobody else can steer them: every
//! directory SCR uses must be the user's own (not a symbolic link, not writable by group or
//! others), paths read from metadata never pass through a link below the directory they
//! are confined to, and a file SCR recreates (a rebuild, a fetch) is written as a hidden
//! temporary and put in place with link(2), which never replaces what is there.

mod acl;
mod beneath;
mod control;
mod in_dir;
mod new_file;
mod regular;

pub use beneath::{Beneath, Staged};
pub use control::{
    PathControl, PathWalk, first_person_user_id, others_may_make_names_in, others_may_redirect,
    others_may_redirect_name, path_control,
};
pub use in_dir::{OpenIn, open_in, remove_in};
pub use new_file::NewFile;
pub use regular::{open_regular, open_regular_no_link};

use crate::error::{Error, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::OFlags;
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
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
        let me = crate::layout::account_name();
        group_is_private_to_name(gid, me.as_bytes()).then_some(gid)
    })
}

/// Whether group `gid` is the private group of user id `uid`'s account (named as the
/// account, nobody else in it): what it may write, only that user may.
fn group_is_private_to(gid: u32, uid: u32) -> bool {
    crate::layout::account_by_id(uid)
        .is_some_and(|account| group_is_private_to_name(gid, account.name.as_bytes()))
}

/// Whether group `gid` is named `me` and has no member but `me`, nor is any other
/// account's own group.
fn group_is_private_to_name(gid: u32, me: &[u8]) -> bool {
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: a zeroed group is a valid out-parameter; buf outlives every use of the result
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    let rc = unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || grp.gr_name.is_null() {
        return false;
    }
    // SAFETY: getgrgid_r set gr_name and gr_mem (a NULL-ended array of NUL-terminated
    // strings) inside buf
    let name = unsafe { std::ffi::CStr::from_ptr(grp.gr_name) };
    if name.to_bytes() != me {
        return false;
    }
    let mut member = grp.gr_mem;
    while !member.is_null() && !unsafe { *member }.is_null() {
        if unsafe { std::ffi::CStr::from_ptr(*member) }.to_bytes() != me {
            return false;
        }
        member = unsafe { member.add(1) };
    }
    // nor is anyone else in it by their account's own group
    !another_account_has_group(gid, me)
}

/// Whether an account other than `me` has `gid` as its own group (the password database's
/// group, which the group database does not list as a member).
fn another_account_has_group(gid: u32, me: &[u8]) -> bool {
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: a zeroed passwd is a valid out-parameter; each entry is read before the next
    // call reuses buf; the enumeration is this process's one (the library's at most once,
    // under OnceLock; root's commands judge paths before they start a thread)
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

/// Why a file or directory of the user's, open as `fd` with `mode` and group `gid`, may be
/// written by someone else, judged on the handle: everyone may write it, or a group that is
/// not the user's alone, or a user or group its access control list (ACL) names. (Writable
/// by the user's private group is the user's umask 002, not anyone else's access; an entry
/// for the user, or for root, who may write anything, gives nobody else anything.)
pub(crate) fn writable_by_others(fd: impl AsFd, mode: u32, gid: u32) -> Option<String> {
    let writers = match acl::writers(fd, mode) {
        Ok(w) => w,
        Err(why) => return Some(format!("{why}: SCR cannot tell who else may change it")),
    };
    if writers.everyone {
        return Some(format!(
            "is writable by everyone (mode {:o}): anyone could have changed it; see that it \
             holds only what you put there, then run chmod o-w on it",
            mode & 0o7777
        ));
    }
    if writers.owning_group && private_group() != Some(gid) {
        return Some(format!(
            "is writable by its group (group id {gid}, mode {:o}), not yours alone: any member \
             could have changed it; see that it holds only what you put there, then run \
             chmod g-w on it",
            mode & 0o7777
        ));
    }
    let (who, entry) = named_writer(&writers)?;
    Some(format!(
        "is writable by {who} through its access control list (ACL), not by you alone: they \
         could have changed it; see that it holds only what you put there, then run \
         setfacl -x {entry} on it (getfacl shows its entries)"
    ))
}

/// A user or group an ACL names (in `writers`) that may write what SCR judges, other than
/// the user, root (who may write anything) and the user's private group: how to say who,
/// and the entry `setfacl -x` takes away.
fn named_writer(writers: &acl::Writers) -> Option<(String, String)> {
    let me = my_uid();
    if let Some(user) = writers.users.iter().find(|&&u| u != me && u != 0) {
        return Some((format!("user id {user}"), format!("u:{user}")));
    }
    let group = writers
        .groups
        .iter()
        .find(|&&g| private_group() != Some(g))?;
    Some((format!("group id {group}"), format!("g:{group}")))
}

/// Why a file of user id `uid` is not one SCR reads configuration or state from: it
/// belongs neither to this user nor to root (the system's files).
fn not_yours(uid: u32) -> Option<String> {
    let me = my_uid();
    (uid != me && uid != 0).then(|| {
        format!(
            "belongs to user id {uid}, not to you (id {me}): SCR reads configuration and state \
             only from files of yours (or root's); remove it, or ask its owner to"
        )
    })
}

/// Why a file SCR would read configuration or state from cannot be trusted, judged on its
/// open handle `file`, whose metadata `meta` is: it belongs neither to this user nor to
/// root (the system's files), or someone else can write it ([`writable_by_others`]).
pub fn untrusted_file(file: &File, meta: &fs::Metadata) -> Option<String> {
    not_yours(meta.uid()).or_else(|| writable_by_others(file, meta.mode(), meta.gid()))
}

/// Reads a small file SCR takes configuration from (at most `limit` bytes), only when the
/// opened file is this user's (or root's) and nobody else can write it; otherwise an
/// [`Error::Untrusted`] saying why. With the bytes, the file's permission bits when others
/// may read it (judged on the same handle: a secret in it is then not used).
pub fn read_trusted_file(path: &Path, limit: u64) -> Result<(Vec<u8>, Option<u32>)> {
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
    // (who else may write it is judged on the handle)
    if !link.file_type().is_symlink()
        && let Some(why) = not_yours(link.uid())
    {
        return Err(Error::untrusted(path, why));
    }
    // (what was no link when looked at is opened as none: a link swapped in meanwhile is
    // refused, not followed)
    let file = if link.file_type().is_symlink() {
        open_regular(path)?
    } else {
        open_regular_no_link(path)?
    };
    let meta = file.metadata().map_err(|e| Error::io(path, "inspect", e))?;
    // a file of the user's with another name may have been written through that one by
    // whoever could (a neighbour who linked a file of the user's that anyone may write
    // into a shared prefix): who wrote what it holds cannot be told, so neither its mode
    // nor its ACL is worth judging, and nothing may suggest changing them to trust it
    if meta.nlink() > 1 {
        return Err(Error::untrusted(
            path,
            format!(
                "has {} names (hard links): what it holds may have been written through \
                 another of them, by whoever may write that one, so SCR takes no \
                 configuration from it; remove this name, and write your settings into a \
                 new file of your own",
                meta.nlink()
            ),
        ));
    }
    if let Some(why) = untrusted_file(&file, &meta) {
        return Err(Error::untrusted(path, why));
    }
    let others_may_read = crate::plain_io::readable_by_others(&file);
    Ok((
        crate::plain_io::read_open_file(path, file, meta.len(), limit)?,
        others_may_read,
    ))
}

/// Reads a small file SCR takes secrets or trust from (a database option file, the
/// certificate of the authority a server's must be signed by), only when nobody but root
/// and this user may change it: [`read_trusted_file`]'s judgment of the file, and the way to
/// it walked ([`path_control`]) so that nobody else may swap it for another before or after
/// it is read. The bytes, and the file's permission bits when others may read it.
pub fn read_only_yours(path: &Path, limit: u64) -> Result<(Vec<u8>, Option<u32>)> {
    // a link of the user's into a directory others may rename in would let them choose the
    // file as surely as the name itself: the way to where it leads is judged too
    if let Some(who) = others_may_redirect_name(path, |uid| uid == my_uid())? {
        return Err(Error::untrusted(
            path,
            format!(
                "{who}: others could swap it for a file of theirs; keep it where only you and \
                 root may change it"
            ),
        ));
    }
    read_trusted_file(path, limit)
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
        let parent = dir.parent()?;
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let fd = open_dir(parent, OFlags::empty()).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        writable_by_others(&fd, st.st_mode, st.st_gid)
            .is_none()
            .then_some(st.st_uid)
    };
    let me = my_uid();
    let not_mine = |uid: u32| {
        (uid != me && !(me == 0 && parent_owner() == Some(uid))).then(|| {
            format!(
                "belongs to user id {uid}, not to you (id {me}); remove it or choose another \
                 directory"
            )
        })
    };
    // (said of what was looked at by name, for a directory the user cannot open; then
    // judged on the handle, which alone shows who its ACL lets write it)
    if let Some(why) = not_mine(meta.uid()) {
        return refuse(why);
    }
    let fd = open_dir(dir, OFlags::NOFOLLOW).map_err(|e| Error::io(dir, "open directory", e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::io(dir, "inspect", e.into()))?;
    match not_mine(st.st_uid).or_else(|| writable_by_others(&fd, st.st_mode, st.st_gid)) {
        Some(why) => refuse(why),
        None => Ok(()),
    }
}

/// Opens the directory `dir` (nothing else: `O_DIRECTORY`) to judge it on its handle,
/// with `flags` besides (`O_NOFOLLOW`: no link as its last component).
fn open_dir(dir: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | flags,
        rustix::fs::Mode::empty(),
    )
    .map_err(Into::into)
}

/// Whether `dir` is a directory (not a link) of this user's alone, strictly: no exception
/// for root, whose records of another job must be its own as anyone's.
pub fn is_own_dir(dir: &Path) -> bool {
    let Ok(fd) = open_dir(dir, OFlags::NOFOLLOW) else {
        return false;
    };
    rustix::fs::fstat(&fd).is_ok_and(|st| {
        st.st_uid == my_uid() && writable_by_others(&fd, st.st_mode, st.st_gid).is_none()
    })
}

/// Refuses a prefix others can write without the sticky bit: everyone, or a user or group
/// its access control list names (a project sharing the directory through `setfacl`).
/// There they can rename `.scr` or a dataset's directory away and put their own in its
/// place between two of SCR's steps, or swap two checkpoints. (A shared scratch area is
/// sticky, as /tmp is: there only its owner may rename what SCR keeps. A prefix writable
/// by its own group trusts that group.) Judged on the prefix's handle, as named: a link in
/// its path is the user's choice.
pub fn check_prefix_mode(prefix: &Path) -> Result<()> {
    let Ok(fd) = open_dir(prefix, OFlags::empty()) else {
        return Ok(()); // created as the user's own
    };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return Ok(());
    };
    let mode = st.st_mode & 0o7777;
    if mode & 0o1000 != 0 {
        return Ok(());
    }
    let refuse = |why: String| {
        Err(Error::untrusted(
            prefix,
            format!(
                "{why}: they could rename what SCR keeps there and put their own in its place; \
                 run chmod +t on it (as /tmp is), or choose a prefix of your own"
            ),
        ))
    };
    match acl::writers(&fd, st.st_mode) {
        Err(why) => refuse(format!("is not sticky (mode {mode:o}) and {why}")),
        Ok(w) if w.everyone => refuse(format!(
            "is writable by everyone and not sticky (mode {mode:o})"
        )),
        Ok(w) => match named_writer(&w) {
            Some((who, _)) => refuse(format!(
                "is writable by {who} through its access control list (ACL) and not sticky \
                 (mode {mode:o})"
            )),
            None => Ok(()),
        },
    }
}

/// Who besides its owner and root may create names in the directory `dir` (a prefix),
/// judged on its handle: everyone (its mode, or its ACL's `other` entry), its group unless
/// that is its owner's private group (a project directory's group: every member may rename
/// the datasets' directories in it), or a user or group its access control list names;
/// said as "is writable by …", with what takes that right away. None when nobody else may.
/// An ACL that cannot be read is said too: then nobody can tell.
pub fn others_may_create_in(dir: &Path) -> Result<Option<String>> {
    let fd = open_dir(dir, OFlags::empty()).map_err(|e| Error::io(dir, "open directory", e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::io(dir, "inspect", e.into()))?;
    let mode = st.st_mode & 0o7777;
    Ok(match acl::writers(&fd, st.st_mode) {
        Err(why) => Some(why),
        Ok(w) if w.everyone => Some(format!("is writable by everyone (mode {mode:o})")),
        Ok(w) if w.owning_group && !group_is_private_to(st.st_gid, st.st_uid) => Some(format!(
            "is writable by its group (group id {}, mode {mode:o}; chmod g-w takes that away)",
            st.st_gid
        )),
        Ok(w) => named_writer(&w).map(|(who, entry)| {
            format!(
                "is writable by {who} through its access control list (ACL; setfacl -x \
                 {entry} takes that away)"
            )
        }),
    })
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
/// `base` is created as needed ([`create_missing_dir`], with `mode`); every component from there to `dir` is created with `mode`
/// (the umask still applies) or, if it exists, must be this user's and not writable by
/// group or others — checked on the handle of each directory as it is reached, never
/// through a symbolic link ([`Beneath`]).
pub fn create_dirs_in(base: &Path, dir: &Path, mode: u32) -> Result<()> {
    let rel = dir
        .strip_prefix(base)
        .map_err(|_| Error::invalid(dir, format!("is not inside {}", base.display())))?;
    create_missing_dir(base, mode)?;
    Beneath::open(base)?.create_dirs(rel, mode).map(drop)
}

/// Creates `dir` where nothing has its name yet (a prefix an application names for its
/// `--output DIR`, as SCR v3.1 creates it): each missing directory from the nearest one that
/// exists, with `mode` (the umask still applies), created through the handle of the one
/// above it. What the path then leads to is for the caller to judge. Whether it created
/// `dir`.
pub fn create_missing_dir(dir: &Path, mode: u32) -> Result<bool> {
    if dir.symlink_metadata().is_ok() {
        return Ok(false);
    }
    let existing = dir
        .ancestors()
        .skip(1)
        .find(|a| a.symlink_metadata().is_ok())
        .unwrap_or(Path::new("/"));
    let rel = dir
        .strip_prefix(existing)
        .map_err(|_| Error::invalid(dir, format!("is not inside {}", existing.display())))?;
    Beneath::open(existing)?.create_dirs(rel, mode)?;
    Ok(true)
}

/// [`create_dirs_in`] for a job's directory below a cache or control base (`param` names
/// where the base came from): the base may be anyone's, but whoever else may create or
/// rename names in it could rename the user's directory there away (the job then finds no
/// cached checkpoint) or put their own in its place, so a base that anyone but its owner,
/// root and the user's own private group may write must be sticky, as /tmp and /dev/shm
/// are, and its owner must be the user or root (the owner renames anything there, sticky or
/// not) — judged on the base's handle, ACLs included.
pub fn create_job_dirs_in_base(base: &Path, dir: &Path, mode: u32, param: &str) -> Result<()> {
    let opened = open_dir(base, OFlags::empty())
        .ok()
        .and_then(|fd| Some((rustix::fs::fstat(&fd).ok()?, fd)));
    // the owner of the base may rename anything in it, sticky or not (a base a neighbour
    // made before the user's first job, at the path the user configured)
    if let Some((st, _)) = &opened
        && st.st_uid != my_uid()
        && st.st_uid != 0
    {
        return Err(Error::untrusted(
            base,
            format!(
                "({param}) belongs to user id {}, who could rename your job's directories there \
                 away; use a base of your own, or root's (as /tmp is)",
                st.st_uid
            ),
        ));
    }
    if let Some((st, fd)) = &opened
        && st.st_mode & 0o1000 == 0
    {
        let mode_bits = st.st_mode & 0o7777;
        let who = match acl::writers(fd, st.st_mode) {
            Err(why) => Some(why),
            Ok(w) if w.everyone => Some("everyone".to_string()),
            Ok(w) if w.owning_group && private_group() != Some(st.st_gid) => {
                Some(format!("the members of group id {}", st.st_gid))
            }
            Ok(w) => named_writer(&w).map(|(who, _)| format!("{who} (its ACL)")),
        };
        if let Some(who) = who {
            return Err(Error::untrusted(
                base,
                format!(
                    "({param}) may be written by {who} and is not sticky (mode {mode_bits:o}): \
                     they could rename your job's directories there away, or put their own in \
                     their place; run chmod +t on it (as /tmp is), or choose a base of your own"
                ),
            ));
        }
    }
    check_base_way(base, param)?;
    create_dirs_in(base, dir, mode)
}

/// Refuses a cache or control base (`param` names where it came from) whose way another
/// user may change: one who owns a directory or a link on the way, or may write one there
/// that is not sticky ([`path_control`]). They could swap the job's directories there for
/// others, or lead the base to a directory of theirs, between any two of SCR's steps (its
/// paths are joined onto the base), and read, forge or lose the cached checkpoints. Root
/// acting for a job's user ([`crate::layout::job_user_id`]) may meet that user on the way.
pub fn check_base_way(base: &Path, param: &str) -> Result<()> {
    let job_user = crate::layout::job_user_id();
    let Some(who) = others_may_redirect(base, |uid| uid == my_uid() || uid == job_user)? else {
        return Ok(());
    };
    Err(Error::untrusted(
        base,
        format!(
            "({param}) {who}: others could swap your job's directories there for theirs, or \
             lead the base to a directory of theirs, and read, forge or lose your cached \
             checkpoints; use a base on a path only you and root may change (sticky \
             directories such as /tmp and /dev/shm are fine)"
        ),
    ))
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

#[cfg(test)]
mod tests;
