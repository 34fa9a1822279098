//! The node test (`scr_check_node`): each control and cache directory a job needs must be
//! there, hold enough space, and take a file the job's user makes and removes.
//!
//! Root (an operator's or a prolog's scr-run) tests as the job's user: in a child process
//! with that user's ids and groups, which opens each directory and does every step there
//! itself. So a directory passes only if the job's user could use it (root's rights would
//! pass a directory the job then fails in), and a link a user put on the way makes root
//! touch nothing where it leads: the walk to the directory is the user's own.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Which directories a node must offer, with the capacity each must have.
#[derive(Clone, Debug, Default)]
pub struct NodeCheck {
    pub dirs: Vec<(PathBuf, Option<u64>)>,
    /// Compare free space instead of capacity (SCR checks free space on the first run).
    pub free: bool,
    /// Whose rights root tests with (the job's user, named on to the nodes it tests on);
    /// None: the job's user as this process knows it
    /// ([`scr::layout::job_account_for_root`]).
    pub user: Option<String>,
}

impl NodeCheck {
    /// The `scr check-node` arguments that run this test on another node.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.free {
            args.push("--free".to_string());
        }
        if let Some(user) = &self.user {
            args.push("--user".into());
            args.push(user.clone());
        }
        if !self.dirs.is_empty() {
            args.push("--cntl".into());
            args.push(
                self.dirs
                    .iter()
                    .map(|(d, b)| match b {
                        Some(b) => format!("{}:{b}", d.display()),
                        None => d.display().to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        args
    }
}

/// Runs the node test here, as the job's user when this is root and the job's user is
/// another; the failures in SCR's wording.
pub fn check_node(check: &NodeCheck) -> Vec<String> {
    match tester(check.user.as_deref()) {
        Ok(tester) => check_node_as(check, &tester),
        Err(failure) => vec![failure],
    }
}

/// Whose rights this process's node test runs with: its own, unless it is root and the
/// job's user (`user`, else [`scr::layout::job_account_for_root`]) is another with an
/// account.
fn tester(user: Option<&str>) -> Result<Tester, String> {
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } != 0 {
        return Ok(Tester::Itself);
    }
    let account = match user {
        Some(name) => scr::layout::account_by_name(name).ok_or_else(|| {
            format!(
                "FAIL: Could not test the node as the job's user {name}: the user database \
                 has no such account"
            )
        })?,
        // (a job of root's, or of a name without an account: root's own)
        None => match scr::layout::job_account_for_root() {
            Some(account) => account,
            None => return Ok(Tester::Itself),
        },
    };
    Ok(if account.uid == 0 {
        Tester::Itself
    } else {
        Tester::User(account)
    })
}

/// Whose rights the node test runs with.
#[derive(Debug)]
enum Tester {
    /// This process's own.
    Itself,
    /// A user's, in a child process that takes their ids and groups.
    User(scr::layout::Account),
}

/// What the test found in one directory, each step's error number (0: it worked). Made of
/// plain integers: a child process hands it over a pipe as it is.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Probe {
    /// Opening the directory (as a directory, without waiting on a FIFO in its place).
    open: i64,
    /// Reading its file system's size (fstatvfs).
    space: i64,
    /// The file system's capacity and the space free for a user, in KB.
    total_kb: i64,
    free_kb: i64,
    /// Making the test file (exclusively, 0600, no link followed) and removing it.
    touch: i64,
    remove: i64,
}

/// Where a step's error number goes when the step did not run (an earlier one failed).
const NOT_RUN: i64 = -1;

/// The error number of the last failed system call.
fn errno() -> i64 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO) as i64
}

/// Tests the directory `dir`, making and removing `name` there: every step through one
/// handle of the directory (a name swapped on the way between two steps leads none of them
/// elsewhere). System calls alone: it runs in a child process between fork and exit.
fn probe(dir: &std::ffi::CStr, name: &std::ffi::CStr) -> Probe {
    let mut found = Probe {
        space: NOT_RUN,
        touch: NOT_RUN,
        remove: NOT_RUN,
        ..Probe::default()
    };
    // SAFETY: NUL-terminated strings that outlive the calls; st a properly sized
    // out-parameter; every descriptor opened here is closed here
    unsafe {
        let fd = libc::open(
            dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        );
        if fd < 0 {
            found.open = errno();
            return found;
        }
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::fstatvfs(fd, &mut st) == 0 {
            found.space = 0;
            found.total_kb = (st.f_blocks as u64 * st.f_frsize as u64 / 1024) as i64;
            found.free_kb = (st.f_bavail as u64 * st.f_frsize as u64 / 1024) as i64;
        } else {
            found.space = errno();
        }
        let file = libc::openat(
            fd,
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        );
        if file < 0 {
            found.touch = errno();
        } else {
            found.touch = 0;
            libc::close(file);
            found.remove = if libc::unlinkat(fd, name.as_ptr(), 0) == 0 {
                0
            } else {
                errno()
            };
        }
        libc::close(fd);
    }
    found
}

/// One directory to test: its path and the test file's name, as the system calls take
/// them. The name is nobody's to guess ahead (the directories tested are often shared, a
/// 1777 /tmp or /dev/shm): a link planted there is never followed, a file planted there
/// takes nothing.
struct Target {
    dir: CString,
    name: CString,
}

fn targets(check: &NodeCheck) -> Result<Vec<Target>, String> {
    check
        .dirs
        .iter()
        .map(|(dir, _)| {
            let probe = scr::temp_name::temporary_name(&dir.join("testfile"), "tmp");
            let name = probe.file_name().expect("a file name");
            Ok(Target {
                dir: CString::new(dir.as_os_str().as_bytes())
                    .map_err(|_| format!("FAIL: Could not access directory: {}", dir.display()))?,
                name: CString::new(name.as_bytes()).expect("a temporary name holds no NUL"),
            })
        })
        .collect()
}

fn check_node_as(check: &NodeCheck, tester: &Tester) -> Vec<String> {
    let targets = match targets(check) {
        Ok(targets) => targets,
        Err(failure) => return vec![failure],
    };
    let probes = match tester {
        Tester::Itself => Ok(targets.iter().map(|t| probe(&t.dir, &t.name)).collect()),
        Tester::User(account) => probe_as(account, &targets),
    };
    let probes: Vec<Probe> = match probes {
        Ok(probes) => probes,
        Err(e) => {
            return vec![format!(
                "FAIL: Could not test the node as the job's user {}: {e}",
                account_label(tester)
            )];
        }
    };
    let mut failures = Vec::new();
    for (((dir, bytes), target), found) in check.dirs.iter().zip(&targets).zip(probes) {
        failures.extend(failures_of(dir, *bytes, check.free, target, &found, tester));
    }
    failures
}

fn account_label(tester: &Tester) -> String {
    match tester {
        Tester::Itself => String::new(),
        Tester::User(a) => a.name.to_string_lossy().into_owned(),
    }
}

/// SCR's messages for what `found` says of `dir`.
fn failures_of(
    dir: &Path,
    bytes: Option<u64>,
    free: bool,
    target: &Target,
    found: &Probe,
    tester: &Tester,
) -> Vec<String> {
    let who = match tester {
        Tester::Itself => String::new(),
        Tester::User(_) => format!(", as user {}", account_label(tester)),
    };
    let os = |e: i64| std::io::Error::from_raw_os_error(e as i32);
    if found.open != 0 {
        // SCR's line as it is; tested as the job's user, why and as whom too
        let why = match tester {
            Tester::Itself => String::new(),
            Tester::User(_) => format!(" ({}{who})", os(found.open)),
        };
        return vec![format!(
            "FAIL: Could not access directory: {}{why}",
            dir.display()
        )];
    }
    let mut failures = Vec::new();
    if let Some(bytes) = bytes {
        let expected_kb = bytes / 1024;
        let found_kb = if free { found.free_kb } else { found.total_kb } as u64;
        if found.space != 0 {
            failures.push(format!(
                "FAIL: Could not determine space in directory: {}",
                dir.display()
            ));
        } else if found_kb < expected_kb {
            failures.push(format!(
                "FAIL: Insufficient space in directory: {}, expected {expected_kb} KB, found {found_kb} KB",
                dir.display()
            ));
        }
    }
    let file = dir.join(std::ffi::OsStr::from_bytes(target.name.as_bytes()));
    if found.touch != 0 {
        failures.push(format!(
            "FAIL: Could not touch test file: {} ({}{who})",
            file.display(),
            os(found.touch)
        ));
    } else if found.remove != 0 {
        failures.push(format!(
            "FAIL: Could not rm test file: {} ({}{who})",
            file.display(),
            os(found.remove)
        ));
    }
    failures
}

/// The supplementary groups of `account` (the group database's), its primary one among
/// them.
fn groups_of(account: &scr::layout::Account) -> Vec<libc::gid_t> {
    let mut count: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; count as usize];
        let asked = count;
        // SAFETY: `groups` holds `count` entries; getgrouplist writes at most that many
        // and says how many there are
        let rc = unsafe {
            libc::getgrouplist(
                account.name.as_ptr(),
                account.gid,
                groups.as_mut_ptr(),
                &mut count,
            )
        };
        if rc >= 0 {
            groups.truncate(count as usize);
            return groups;
        }
        // too few entries: `count` says how many it needs (grow at least, whatever it says)
        count = count.max(asked * 2);
    }
}

/// How long root waits for the node test's child, which runs as the job's user (who may
/// stop or slow it) before it kills it and fails the node.
const CHILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Everything `reader` gives until its end, waiting at most `within` in all.
fn read_within(
    reader: &mut std::fs::File,
    within: std::time::Duration,
) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let until = std::time::Instant::now() + within;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        let mut poll = libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, live for the call
        let ready =
            unsafe { libc::poll(&mut poll, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if ready == 0 {
            return Err(std::io::Error::other(format!(
                "the test's process, run as the job's user, did not finish within {} s",
                within.as_secs()
            )));
        }
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(raw),
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// [`probe`] of each target in a child process with the ids and groups of `account`; what
/// it found, in order.
fn probe_as(account: &scr::layout::Account, targets: &[Target]) -> std::io::Result<Vec<Probe>> {
    use std::os::fd::FromRawFd;
    let groups = groups_of(account);
    let (uid, gid) = (account.uid, account.gid);
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 returns
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and this process's alone
    let (mut reader, writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    // SAFETY: the child makes system calls only (no allocation, no lock) on data made
    // before the fork, and ends with _exit
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        use std::os::fd::AsRawFd;
        // SAFETY: as above; the ids change for this one-threaded child alone
        unsafe {
            let w = writer.as_raw_fd();
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                || libc::setresgid(gid, gid, gid) != 0
                || libc::setresuid(uid, uid, uid) != 0
                || libc::geteuid() != uid
            {
                libc::_exit(2);
            }
            for target in targets {
                let found = probe(&target.dir, &target.name);
                let bytes = std::mem::size_of::<Probe>();
                if libc::write(w, (&found as *const Probe).cast(), bytes) != bytes as isize {
                    libc::_exit(3);
                }
            }
            libc::_exit(0);
        }
    }
    drop(writer);
    // the child runs as the user, who may stop it (SIGSTOP): root waits a bounded time
    let read = read_within(&mut reader, CHILD_TIMEOUT);
    if read.is_err() {
        // SAFETY: our child, not yet waited for
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = 0;
    // SAFETY: pid is our child, not yet waited for
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(std::io::Error::last_os_error());
        }
    }
    let raw = read?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let why = match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
            (true, 2) => "could not take on the user's ids and groups".to_string(),
            _ => format!("the test's process ended with status {status:#x}"),
        };
        return Err(std::io::Error::other(why));
    }
    let size = std::mem::size_of::<Probe>();
    if raw.len() != size * targets.len() {
        return Err(std::io::Error::other("the test's process said too little"));
    }
    Ok(raw
        .chunks_exact(size)
        // SAFETY: each chunk holds the bytes of one Probe, all of whose fields are integers
        .map(|chunk| unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast::<Probe>()) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_test_reports_missing_directories_and_space() {
        let dir = tempfile::tempdir().unwrap();
        let check = NodeCheck {
            dirs: vec![(dir.path().to_path_buf(), Some(1024))],
            free: true,
            user: None,
        };
        assert!(check_node_as(&check, &Tester::Itself).is_empty());
        let check = NodeCheck {
            dirs: vec![
                (dir.path().join("missing"), None),
                (dir.path().to_path_buf(), Some(u64::MAX / 2)),
            ],
            free: false,
            user: None,
        };
        let failures = check_node_as(&check, &Tester::Itself);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("FAIL: Could not access directory: "));
        assert!(failures[1].starts_with("FAIL: Insufficient space in directory: "));
        // the test file is gone
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// A FIFO where a directory to test should be (a neighbour's, in a shared base) fails
    /// the test at once; opening it for reading would wait for a writer for good.
    #[test]
    fn a_fifo_in_a_tested_directory_s_place_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cntl");
        let name = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string naming a path in a directory of the test's own
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let check = NodeCheck {
            dirs: vec![(fifo, None)],
            free: true,
            user: None,
        };
        let failures = check_node_as(&check, &Tester::Itself);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].starts_with("FAIL: Could not access directory: "));
    }

    /// The job's user goes on to the nodes tested over pdsh: their environment is root's.
    #[test]
    fn the_job_user_is_named_to_the_nodes() {
        let check = NodeCheck {
            dirs: vec![("/tmp".into(), None)],
            free: true,
            user: Some("alice".into()),
        };
        assert_eq!(
            check.to_args(),
            ["--free", "--user", "alice", "--cntl", "/tmp"]
        );
    }

    /// A test's child that never finishes (its user stopped it) costs root a bounded wait,
    /// not the node test for good.
    #[test]
    fn a_child_that_never_answers_is_given_up_on() {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: room for two descriptors
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: new descriptors, ours alone; the writer stays open and silent
        let (mut reader, _writer) = unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let e = read_within(&mut reader, std::time::Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("did not finish"), "{e}");
    }

    fn nobody() -> scr::layout::Account {
        scr::layout::account_by_id(65534).expect("an account of id 65534 (nobody)")
    }

    fn require_root() {
        assert!(
            // SAFETY: geteuid has no preconditions
            unsafe { libc::geteuid() } == 0,
            "this test plays root's node test of a user's directories: run it as root (CI does)"
        );
    }

    /// Root tests a directory as the job's user: one the user cannot write fails though
    /// root could write it, a link of the user's to a directory of root's makes nothing
    /// there, the user's own directory passes, and root's own process keeps its ids.
    #[test]
    fn root_tests_directories_with_the_job_users_rights() {
        use std::os::unix::fs::PermissionsExt;
        require_root();
        let user = nobody();
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let roots = dir.path().join("roots");
        std::fs::create_dir(&roots).unwrap();
        std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o755)).unwrap();
        let own = dir.path().join("own");
        std::fs::create_dir(&own).unwrap();
        std::os::unix::fs::chown(&own, Some(user.uid), Some(user.gid)).unwrap();
        let link = own.join("cache");
        std::os::unix::fs::symlink(&roots, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(user.uid), Some(user.gid)).unwrap();

        let check = NodeCheck {
            dirs: vec![
                (roots.clone(), None),
                (link.clone(), None),
                (own.clone(), Some(1)),
            ],
            free: true,
            user: None,
        };
        let failures = check_node_as(&check, &Tester::User(user.clone()));
        assert_eq!(failures.len(), 2, "{failures:?}");
        for (failure, dir) in failures.iter().zip([&roots, &link]) {
            assert!(
                failure.starts_with(&format!(
                    "FAIL: Could not touch test file: {}/.testfile",
                    dir.display()
                )) && failure.contains("Permission denied")
                    && failure.contains(", as user nobody"),
                "{failures:?}"
            );
        }
        assert_eq!(std::fs::read_dir(&roots).unwrap().count(), 0);
        // the user's own directory took the file and lost it again
        assert_eq!(std::fs::read_dir(&own).unwrap().count(), 1, "only the link");
        // root is root still: it tests root's directory as itself and passes
        assert!(check_node_as(&check, &Tester::Itself).is_empty());
    }

    /// The job's user reaches a directory through their group, and never through one of
    /// root's: root's own supplementary groups (here group 0, which a 0770 directory of
    /// root's admits) are not the test's.
    #[test]
    fn root_tests_with_the_job_users_groups_and_not_roots() {
        use std::os::unix::fs::PermissionsExt;
        require_root();
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let roots_group = dir.path().join("roots-group");
        std::fs::create_dir(&roots_group).unwrap();
        std::fs::set_permissions(&roots_group, std::fs::Permissions::from_mode(0o770)).unwrap();
        let user = nobody();
        let users_group = dir.path().join("users-group");
        std::fs::create_dir(&users_group).unwrap();
        std::os::unix::fs::chown(&users_group, Some(0), Some(user.gid)).unwrap();
        std::fs::set_permissions(&users_group, std::fs::Permissions::from_mode(0o770)).unwrap();
        let check = NodeCheck {
            dirs: vec![(roots_group.clone(), None), (users_group.clone(), None)],
            free: true,
            user: None,
        };
        // root with group 0 among its groups, in a process of its own (the groups of a
        // process are all its threads')
        // SAFETY: the child changes its own groups and exits without returning
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let groups = [0 as libc::gid_t];
            // SAFETY: one group, from a live array
            let set = unsafe { libc::setgroups(1, groups.as_ptr()) } == 0;
            let failures = check_node_as(&check, &Tester::User(user));
            let refused = failures.len() == 1
                && failures[0].starts_with(&format!(
                    "FAIL: Could not access directory: {}",
                    roots_group.display()
                ));
            // SAFETY: ends the child at once
            unsafe { libc::_exit(if set && refused { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: our child
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "root's group 0 let the user's test into {}, or the user's group kept it out of {}",
            roots_group.display(),
            users_group.display()
        );
    }
}
