//! One module per subcommand; each has clap `Args` and a `run` function.

pub mod config;
pub mod dirs;
pub mod docs;
pub mod drain;
pub mod glob_hosts;
pub mod halt;
pub mod hostlist;
pub mod index;
pub mod jobs;
pub mod links;
pub mod nodes;
pub mod print;
pub mod rebuild;
pub mod report;
pub mod run;
pub mod state_files;
pub mod transfer;

/// The prefix directory a command works on: the one given, else SCR_PREFIX, else the
/// working directory.
pub fn prefix_dir(
    given: Option<std::path::PathBuf>,
    params: &scr::params::Params,
) -> scr::Result<std::path::PathBuf> {
    let prefix =
        scr::layout::prefix_dir(given.as_deref(), params.typed().places.prefix.as_deref())?;
    scr::safe_fs::check_prefix(&prefix)?;
    Ok(prefix)
}

/// [`prefix_dir`] for a command that writes there: root acts as the prefix's owner
/// ([`act_as_owner_of`]) before anything of the prefix is looked at.
pub fn owners_prefix_dir(
    given: Option<std::path::PathBuf>,
    params: &scr::params::Params,
) -> scr::Result<std::path::PathBuf> {
    let prefix =
        scr::layout::prefix_dir(given.as_deref(), params.typed().places.prefix.as_deref())?;
    owners_prefix(&prefix)?;
    Ok(prefix)
}

/// Checks `prefix` ([`scr::safe_fs::check_prefix`]) for a command that writes there, root
/// acting as its owner first ([`act_as_owner_of`]).
pub fn owners_prefix(prefix: &std::path::Path) -> scr::Result<()> {
    act_as_owner_of(prefix)?;
    scr::safe_fs::check_prefix(prefix)
}

/// Root working on a prefix (or a job's control directory) of another user's acts as that
/// user from here on (their user and group ids, their groups): whatever the user changes
/// there meanwhile (`.scr` swapped for a link while root waits for a lock or reads a long
/// log, a cached file the filemap names swapped for a link), root's command can read and
/// write nowhere the user could not. The owner is read from a handle of the directory, and
/// its path must still lead to it once the ids are the user's. Others, and root on a
/// directory of its own, go on as they are.
pub fn act_as_owner_of(prefix: &std::path::Path) -> scr::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let inspect = |e| scr::Error::io(prefix, "inspect", e);
    let held = match std::fs::File::open(prefix).and_then(|f| f.metadata()) {
        Ok(m) => m,
        // no prefix there: the command says so
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(inspect(e)),
    };
    let uid = held.uid();
    if uid == 0 {
        return Ok(());
    }
    let (name, gid) = account_of(uid).unwrap_or((None, held.gid()));
    let dropped = |what: &str| {
        scr::Error::io(
            prefix,
            "act as the owner of",
            std::io::Error::other(format!("{what}: {}", std::io::Error::last_os_error())),
        )
    };
    // SAFETY: plain system calls on values owned here; glibc applies the id changes to
    // every thread of the process
    unsafe {
        let groups = match &name {
            Some(n) => libc::initgroups(n.as_ptr(), gid),
            None => libc::setgroups(0, std::ptr::null()),
        };
        if groups != 0 {
            return Err(dropped("setting the owner's groups"));
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return Err(dropped("setting the owner's group id"));
        }
        if libc::setresuid(uid, uid, uid) != 0 || libc::geteuid() != uid {
            return Err(dropped("setting the owner's user id"));
        }
    }
    let now = std::fs::metadata(prefix).map_err(inspect)?;
    if (now.dev(), now.ino()) != (held.dev(), held.ino()) {
        return Err(scr::Error::untrusted(
            prefix,
            "was replaced while scr looked at whose it is; run the command again",
        ));
    }
    Ok(())
}

/// The account of user id `uid`: its name and primary group, from the user database.
fn account_of(uid: u32) -> Option<(Option<std::ffi::CString>, u32)> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is valid, filled in by getpwuid_r from `buf`
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to storage that outlives the call, `buf.len()` its size
    let rc = unsafe { libc::getpwuid_r(uid, &mut entry, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: pw_name points into `buf`, a NUL-terminated string getpwuid_r wrote
    let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) }.to_owned();
    Some((Some(name), entry.pw_gid))
}

/// The job id that names the job's directories: the library's rule ([`scr::layout::job_id`]),
/// from the parameters and this process's environment.
pub fn job_id(params: &scr::params::Params) -> String {
    scr::layout::job_id(params.typed().places.job_id.as_deref(), |k| {
        std::env::var(k).ok()
    })
}

/// The prefix's state file `path` (`<prefix>/.scr/…`), read through handles
/// ([`scr::HashView::read_below`]): every directory from the prefix down this user's and
/// nobody else's to write, the file this user's and no link. Root, acting as the prefix's
/// owner ([`act_as_owner_of`]), so reads nothing of its own through a user's link.
pub fn read_state<T: scr::HashView>(
    prefix: &std::path::Path,
    path: &std::path::Path,
) -> scr::Result<T> {
    let (root, rel) = scr::safe_fs::below(prefix, path)?;
    T::read_below(&scr::safe_fs::Beneath::open(&root)?, &rel)
}

/// [`read_state`], or an empty file when there is none (nothing recorded yet).
pub fn read_or_empty<T: scr::HashView + Default>(
    prefix: &std::path::Path,
    path: &std::path::Path,
) -> scr::Result<T> {
    match read_state(prefix, path) {
        Ok(v) => Ok(v),
        Err(e) if e.is_not_found() => Ok(T::default()),
        Err(e) => Err(e),
    }
}

/// A host list given as an option or parameter (`what` names it in the error); none is
/// the empty set.
pub fn host_set(text: Option<&str>, what: &str) -> scr::Result<::hostlist::HostSet> {
    match text {
        Some(t) => t
            .parse::<::hostlist::HostSet>()
            .map_err(|e| scr::Error::refused(format!("{what}={t:?} is not a host list: {e}"))),
        None => Ok(::hostlist::HostSet::new()),
    }
}

/// SCR_EXCLUDE_NODES: the nodes never to use.
pub fn excluded_nodes(params: &scr::params::Params) -> scr::Result<::hostlist::HostSet> {
    host_set(
        params.typed().launch.exclude_nodes.as_deref(),
        "SCR_EXCLUDE_NODES",
    )
}
