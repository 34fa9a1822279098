//! One module per subcommand; each has clap `Args` and a `run` function.

pub mod config;
pub mod db;
pub mod dirs;
pub mod docs;
pub mod drain;
pub mod event_logs;
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

pub use event_logs::{DB_LOG_WAIT, TextLogOf, db_log};

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
/// ([`act_as_owner_of`]) before anything of the prefix is looked at, and a prefix whose
/// path others may change is refused unless SCR_PREFIX_SHARED=1
/// ([`scr::prefix::guard::check_path_not_redirectable`]).
pub fn owners_prefix_dir(
    given: Option<std::path::PathBuf>,
    params: &scr::params::Params,
) -> scr::Result<std::path::PathBuf> {
    let prefix =
        scr::layout::prefix_dir(given.as_deref(), params.typed().places.prefix.as_deref())?;
    owners_prefix(&prefix)?;
    scr::prefix::guard::check_path_not_redirectable(&prefix, params.typed().prefix.shared)?;
    Ok(prefix)
}

/// Checks `prefix` ([`scr::safe_fs::check_prefix`]) for a command that writes there, root
/// acting as its owner first ([`act_as_owner_of`]).
pub fn owners_prefix(prefix: &std::path::Path) -> scr::Result<()> {
    // (a prefix not there yet below root's own directories is root's to make)
    let _ = act_as_owner_of(prefix)?;
    scr::safe_fs::check_prefix(prefix)
}

/// Who a command acts as after [`act_as_owner_of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "root found no directory: the caller must not look for one there again"]
pub enum Acting {
    /// As it was: not root, or root on a directory of its own.
    AsItWas,
    /// As the directory's owner: root gave up its rights.
    AsOwner,
    /// Root, with no directory at the path and only root controlling the way to it: a
    /// control directory made there later (in a sticky directory as /tmp) may be anyone's,
    /// so a command that reads one goes on as if there were none and never opens the path
    /// again.
    RootWithoutDirectory,
}

/// Root working on a prefix (or a job's control directory) of another user's acts as that
/// user from here on (their user and group ids, their groups): whatever the user changes
/// there meanwhile (`.scr` swapped for a link while root waits for a lock or reads a long
/// log, a cached file the filemap names swapped for a link), root's command can read and
/// write nowhere the user could not. Whose it is, is who may change where its path leads
/// ([`scr::safe_fs::path_control`]: the owners of the directories and links on the way,
/// and of the directory itself), judged before anything there is looked at: a user who
/// owns a link on the way is that user even while the link leads to a directory of root's.
/// A path more than one user (or a group) may change is refused: root cannot act as all
/// of them. A directory not there is judged by the way to where it would be made. Others,
/// and root on a path only root controls, go on as they are.
pub fn act_as_owner_of(dir: &std::path::Path) -> scr::Result<Acting> {
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } != 0 {
        return Ok(Acting::AsItWas);
    }
    let walk = scr::safe_fs::path_control(dir)?;
    let uid = match walk.control {
        scr::safe_fs::PathControl::Root if walk.exists => return Ok(Acting::AsItWas),
        scr::safe_fs::PathControl::Root => return Ok(Acting::RootWithoutDirectory),
        scr::safe_fs::PathControl::User(uid) => uid,
        scr::safe_fs::PathControl::Shared(why) => {
            return Err(scr::Error::untrusted(
                dir,
                format!(
                    "{why}: root acts on a user's directories as the one user who may change \
                     where their path leads, and more than one may change this one; run the \
                     command as the job's user (runuser -u USER -- scr …)"
                ),
            ));
        }
    };
    // (an id without an account gets no groups, and the group nobody has)
    let (name, gid) =
        scr::layout::account_by_id(uid).map_or((None, 65534), |a| (Some(a.name), a.gid));
    let dropped = |what: &str| {
        scr::Error::io(
            dir,
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
    keep_inherited_files_from_children();
    Ok(Acting::AsOwner)
}

/// Marks every file this process inherited (past standard input, output and error) close-
/// on-exec: what root's caller had open (an epilog's log) must not pass to the commands the
/// drain starts as the user, whose processes the user may attach a debugger to.
fn keep_inherited_files_from_children() {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = fds
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD/F_SETFD on a descriptor number; one already closed (the
        // directory read above) just fails
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{Acting, act_as_owner_of};
    use std::path::Path;
    use std::process::Command;

    /// Runs `case` in a fresh process of this test binary (ids change for the whole
    /// process): the child calls [`act_as_owner_of`] on `dir` and checks what it became.
    fn in_a_child(test: &str, dir: &Path) {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture"])
            .env("SCR_TEST_ACT_AS_DIR", dir)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // (a name that matched no test would pass with nothing run)
        assert!(out.status.success() && said.contains("1 passed"), "{said}");
    }

    /// The child's part: acts on the directory it was given and says who it became.
    fn child() -> Option<(Acting, u32)> {
        let dir = std::env::var_os("SCR_TEST_ACT_AS_DIR")?;
        let acting = act_as_owner_of(Path::new(&dir)).unwrap();
        // SAFETY: geteuid has no preconditions
        Some((acting, unsafe { libc::geteuid() }))
    }

    /// A user's directory: what is not there yet below it is the user's to make, so root
    /// acts as the user before any such directory appears.
    #[test]
    fn root_judges_a_directory_not_there_yet_by_the_user_s_directory_above() {
        if let Some((acting, euid)) = child() {
            assert_eq!((acting, euid), (Acting::AsOwner, 65534));
            return;
        }
        // SAFETY: geteuid has no preconditions
        assert_eq!(unsafe { libc::geteuid() }, 0, "these tests run as root");
        let top = tempfile::tempdir().unwrap();
        let users = top.path().join("user");
        std::fs::create_dir(&users).unwrap();
        std::os::unix::fs::chown(&users, Some(65534), Some(65534)).unwrap();
        in_a_child(
            "commands::tests::root_judges_a_directory_not_there_yet_by_the_user_s_directory_above",
            &users.join("scr.1/node.a"),
        );
    }

    /// What root's caller left open (an epilog's log on a descriptor past 2) is not passed
    /// on to the commands started after root became the user.
    #[test]
    fn files_root_inherited_are_closed_for_the_commands_the_user_s_drain_starts() {
        const INHERITED: i32 = 57;
        if let Some((acting, _)) = child() {
            assert_eq!(acting, Acting::AsOwner);
            // SAFETY: F_GETFD of a descriptor number
            let flags = unsafe { libc::fcntl(INHERITED, libc::F_GETFD) };
            assert!(flags >= 0, "the inherited descriptor is open");
            assert_ne!(flags & libc::FD_CLOEXEC, 0, "close-on-exec");
            return;
        }
        let top = tempfile::tempdir().unwrap();
        let users = top.path().join("user");
        std::fs::create_dir(&users).unwrap();
        std::os::unix::fs::chown(&users, Some(65534), Some(65534)).unwrap();
        let log = std::fs::File::create(top.path().join("root-only.log")).unwrap();
        // SAFETY: dup2 onto a number this test owns, then its flags cleared: inherited by the
        // child as a shell's redirection would be
        unsafe {
            use std::os::fd::AsRawFd;
            assert_eq!(libc::dup2(log.as_raw_fd(), INHERITED), INHERITED);
            libc::fcntl(INHERITED, libc::F_SETFD, 0);
        }
        in_a_child(
            "commands::tests::files_root_inherited_are_closed_for_the_commands_the_user_s_drain_starts",
            &users,
        );
        // SAFETY: closes the number dup2 gave
        unsafe { libc::close(INHERITED) };
    }

    /// Below root's own directory, root stays root and is told there was no directory, so
    /// a command that reads one never opens one made there later.
    #[test]
    fn root_below_its_own_directory_stays_root_and_is_told_there_is_none() {
        if let Some((acting, euid)) = child() {
            assert_eq!((acting, euid), (Acting::RootWithoutDirectory, 0));
            return;
        }
        let top = tempfile::tempdir().unwrap();
        in_a_child(
            "commands::tests::root_below_its_own_directory_stays_root_and_is_told_there_is_none",
            &top.path().join("scr.1"),
        );
    }
}
