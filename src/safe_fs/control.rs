//! Who besides root can change where a path leads: the owners of the directories and links
//! on the way, and whoever else may write one of those directories. Root acting for a user
//! (an epilog's `scr postrun`, an operator's `scr halt`) must know this before it looks at
//! anything there: a user who owns a link or a directory on the path can make the path lead
//! to a directory of root's while root decides whose it is, and to one of their own after.

use super::acl;
use crate::error::{Error, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why someone besides root and the users `trusted` accepts may change where `path` leads
/// ([`path_control`]), naming them or the place; None when nobody else may.
pub fn others_may_redirect(path: &Path, trusted: impl Fn(u32) -> bool) -> Result<Option<String>> {
    Ok(match path_control(path)?.control {
        PathControl::Root => None,
        PathControl::User(uid) if trusted(uid) => None,
        PathControl::User(uid) => Some(format!(
            "user id {uid} owns a directory or a link on the way to {}",
            path.display()
        )),
        PathControl::Shared(why) => Some(why),
    })
}

/// Why someone besides root and the users `trusted` accepts may change what the name `path`
/// stands for: the way to its directory ([`others_may_redirect`]), then, while the name is
/// a link (which must be root's or a trusted user's), the way to where it leads, link by
/// link. Each link read lies in a directory nobody else may change, so what it says stays.
/// None when nobody else may.
pub fn others_may_redirect_name(
    path: &Path,
    trusted: impl Fn(u32) -> bool,
) -> Result<Option<String>> {
    let mut at = std::path::absolute(path).map_err(|e| Error::io(path, "find", e))?;
    for _ in 0..MOST_LINKS {
        let Some(parent) = at.parent() else {
            return Ok(None);
        };
        if let Some(who) = others_may_redirect(parent, &trusted)? {
            return Ok(Some(who));
        }
        let st = match rustix::fs::lstat(&at) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(Error::io(&at, "inspect", e.into())),
        };
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Symlink {
            return Ok(None);
        }
        if st.st_uid != 0 && !trusted(st.st_uid) {
            return Ok(Some(format!(
                "{} is a symbolic link of user id {}",
                at.display(),
                st.st_uid
            )));
        }
        let target = std::fs::read_link(&at).map_err(|e| Error::io(&at, "read the link", e))?;
        at = parent.join(target);
    }
    Ok(Some(format!(
        "{} leads through too many links",
        path.display()
    )))
}

/// The first user id of a person rather than a system account (`UID_MIN` of
/// /etc/login.defs, 1000 where unset, as Debian's useradd takes it).
pub fn first_person_user_id() -> u32 {
    std::fs::read_to_string("/etc/login.defs")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("UID_MIN"))
                    .then(|| words.next()?.parse().ok())
                    .flatten()
            })
        })
        .unwrap_or(1000)
}

/// Links followed on one path before it is given up, as the kernel's own limit.
const MOST_LINKS: usize = 40;

/// Who may change what a path leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathControl {
    /// Root alone: every directory and link on the way is root's and nobody else may write
    /// a directory there (a sticky one, as /tmp, only by entries that are root's too).
    Root,
    /// Root and this one user, who owns a directory or a link on the way (or an entry of a
    /// sticky directory there, which its owner may replace).
    User(u32),
    /// More than one user, or a group, or everyone: why, naming the place.
    Shared(String),
}

/// What [`path_control`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathWalk {
    /// Who may change what the path leads to (up to where it stops, when it does).
    pub control: PathControl,
    /// Whether the path leads to something: false when a component is missing, and then
    /// whoever controls the directory it would be made in is in `control`.
    pub exists: bool,
}

/// Walks `path` from `/` one component at a time, each opened below the last without
/// following a link (a link's target is walked in its place), and says who besides root
/// may change where it leads. A relative path is taken from the working directory.
pub fn path_control(path: &Path) -> Result<PathWalk> {
    let io = |what: &'static str, e: rustix::io::Errno| Error::io(path, what, e.into());
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(path, "find the working directory of", e))?
            .join(path)
    };
    let mut todo: VecDeque<OsString> = components(&absolute);
    let root = open_dir_at(rustix::fs::CWD, Path::new("/")).map_err(|e| io("open /", e))?;
    // the directories reached, `/` first: `..` goes back one
    let mut reached: Vec<(OwnedFd, PathBuf)> = vec![(root, PathBuf::from("/"))];
    let mut users = BTreeSet::new();
    let mut shared = None;
    let mut links = 0;
    judge_dir(&reached[0].0, Path::new("/"), &mut users, &mut shared)
        .map_err(|e| io("inspect", e))?;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            if reached.len() > 1 {
                reached.pop();
            }
            continue;
        }
        let (dir, dir_path) = reached.last().expect("/ stays");
        let here = dir_path.join(&name);
        let dir_st = rustix::fs::fstat(dir).map_err(|e| io("inspect", e))?;
        match open_dir_at(dir, Path::new(&name)) {
            Ok(fd) => {
                let st = rustix::fs::fstat(&fd).map_err(|e| io("inspect", e))?;
                entry_of_sticky(&dir_st, st.st_uid, &mut users);
                judge_dir(&fd, &here, &mut users, &mut shared).map_err(|e| io("inspect", e))?;
                reached.push((fd, here));
            }
            Err(rustix::io::Errno::NOENT) => {
                return Ok(PathWalk {
                    control: control_of(users, shared),
                    exists: false,
                });
            }
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                // a link, whose target is walked in its place, or no directory at all
                let link = rustix::fs::statat(
                    dir,
                    Path::new(&name),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .map_err(|e| io("inspect", e))?;
                if rustix::fs::FileType::from_raw_mode(link.st_mode)
                    != rustix::fs::FileType::Symlink
                {
                    return Err(Error::io(
                        &here,
                        "walk",
                        std::io::Error::other("is not a directory"),
                    ));
                }
                let target = rustix::fs::readlinkat(dir, Path::new(&name), Vec::new())
                    .map_err(|e| io("read the link", e))?;
                entry_of_sticky(&dir_st, link.st_uid, &mut users);
                links += 1;
                if links > MOST_LINKS {
                    return Err(io("follow the links of", rustix::io::Errno::LOOP));
                }
                let target = PathBuf::from(std::ffi::OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    reached.truncate(1);
                }
                for c in components(&target).into_iter().rev() {
                    todo.push_front(c);
                }
            }
            Err(e) => return Err(io("open", e)),
        }
    }
    Ok(PathWalk {
        control: control_of(users, shared),
        exists: true,
    })
}

/// The names of `path`'s components, `..` kept, `/` and `.` left out.
fn components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// Opens the directory `name` below `dir`, no link followed.
fn open_dir_at(dir: impl AsFd, name: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// In a sticky directory others may write (as /tmp), each entry's owner may replace it.
fn entry_of_sticky(dir: &rustix::fs::Stat, owner: u32, users: &mut BTreeSet<u32>) {
    if dir.st_mode & 0o1000 != 0 && owner != 0 {
        users.insert(owner);
    }
}

/// Counts the directory open as `fd` (at `path`): its owner, and, unless it is sticky,
/// anyone else who may write it (which makes the path shared).
fn judge_dir(
    fd: &OwnedFd,
    path: &Path,
    users: &mut BTreeSet<u32>,
    shared: &mut Option<String>,
) -> rustix::io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    if st.st_uid != 0 {
        users.insert(st.st_uid);
    }
    if st.st_mode & 0o1000 != 0 || shared.is_some() {
        return Ok(());
    }
    let why = creators_besides_owner(fd, &st);
    *shared = why.map(|w| format!("{} {w} and is not sticky", path.display()));
    Ok(())
}

/// Who besides its owner and root may create names in the directory open as `fd` (with
/// `st`), sticky bit or not: everyone, its group (unless the owner's private group), a user
/// or group its ACL names; said as "is writable by …".
pub(super) fn creators_besides_owner(fd: &OwnedFd, st: &rustix::fs::Stat) -> Option<String> {
    let mode = st.st_mode & 0o7777;
    match acl::writers(fd, st.st_mode) {
        Err(why) => Some(why),
        Ok(w) if w.everyone => Some(format!("is writable by everyone (mode {mode:o})")),
        Ok(w) if w.owning_group && !super::group_is_private_to(st.st_gid, st.st_uid) => {
            Some(format!(
                "is writable by its group (group id {}, mode {mode:o})",
                st.st_gid
            ))
        }
        Ok(w) => w
            .users
            .iter()
            .find(|&&u| u != st.st_uid && u != 0)
            .map(|u| format!("is writable by user id {u} through its ACL"))
            .or_else(|| {
                w.groups
                    .iter()
                    .find(|&&g| !super::group_is_private_to(g, st.st_uid))
                    .map(|g| format!("is writable by group id {g} through its ACL"))
            }),
    }
}

/// Who besides its owner and root may create names in `dir` (a sticky bit keeps others from
/// renaming what is there, not from making what is not yet), judged on its handle; None
/// when nobody may.
pub fn others_may_make_names_in(dir: &Path) -> Result<Option<String>> {
    let fd = open_dir_at(rustix::fs::CWD, dir)
        .map_err(|e| Error::io(dir, "open directory", e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::io(dir, "inspect", e.into()))?;
    Ok(creators_besides_owner(&fd, &st).map(|w| format!("{} {w}", dir.display())))
}

fn control_of(users: BTreeSet<u32>, shared: Option<String>) -> PathControl {
    if let Some(why) = shared {
        return PathControl::Shared(why);
    }
    let mut users = users.into_iter();
    match (users.next(), users.next()) {
        (None, _) => PathControl::Root,
        (Some(u), None) => PathControl::User(u),
        (Some(a), Some(b)) => PathControl::Shared(format!(
            "directories or links on the way belong to user ids {a} and {b}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, chown, lchown, symlink};

    const NOBODY: u32 = 65534;
    /// Another account than nobody (`daemon`).
    const OTHER: u32 = 1;

    /// A root-only directory (as these tests run), with a sticky directory everyone may
    /// write in it, as /tmp is.
    fn top() -> (tempfile::TempDir, PathBuf) {
        assert_eq!(
            rustix::process::geteuid().as_raw(),
            0,
            "these tests run as root"
        );
        let top = tempfile::tempdir().unwrap();
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let sticky = top.path().join("tmp");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        (top, sticky)
    }

    fn walk(p: &Path) -> PathWalk {
        path_control(p).unwrap()
    }

    #[test]
    fn a_path_of_root_s_alone_is_root_s_there_or_not() {
        let (top, sticky) = top();
        let dir = top.path().join("a/b");
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            walk(&dir),
            PathWalk {
                control: PathControl::Root,
                exists: true
            }
        );
        // (a root-owned entry of a sticky directory: only root may replace it)
        let in_tmp = sticky.join("root-s");
        std::fs::create_dir(&in_tmp).unwrap();
        assert_eq!(walk(&in_tmp.join("x/..")).control, PathControl::Root);
        assert_eq!(
            walk(&in_tmp.join("missing/deeper")),
            PathWalk {
                control: PathControl::Root,
                exists: false
            }
        );
    }

    #[test]
    fn a_user_s_link_in_a_sticky_directory_makes_the_path_theirs_wherever_it_leads() {
        let (top, sticky) = top();
        let root_only = top.path().join("root-only");
        std::fs::create_dir(&root_only).unwrap();
        let link = sticky.join("user");
        symlink(&root_only, &link).unwrap();
        lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
        assert_eq!(
            walk(&link),
            PathWalk {
                control: PathControl::User(NOBODY),
                exists: true
            }
        );
        // a relative link, and a missing directory below it: still theirs
        let rel = sticky.join("rel");
        symlink("user/../user", &rel).unwrap();
        lchown(&rel, Some(NOBODY), Some(NOBODY)).unwrap();
        assert_eq!(
            walk(&rel.join("scr.1")),
            PathWalk {
                control: PathControl::User(NOBODY),
                exists: false
            }
        );
    }

    #[test]
    fn a_user_s_directory_below_root_s_is_theirs() {
        let (top, _) = top();
        let users = top.path().join("home/u");
        std::fs::create_dir_all(users.join("prefix")).unwrap();
        chown(&users, Some(NOBODY), Some(NOBODY)).unwrap();
        chown(users.join("prefix"), Some(NOBODY), Some(NOBODY)).unwrap();
        assert_eq!(
            walk(&users.join("prefix")).control,
            PathControl::User(NOBODY)
        );
    }

    #[test]
    fn one_user_s_link_to_another_s_directory_is_shared() {
        let (top, sticky) = top();
        let other = top.path().join("other");
        std::fs::create_dir(&other).unwrap();
        chown(&other, Some(OTHER), Some(OTHER)).unwrap();
        let link = sticky.join("victim");
        symlink(&other, &link).unwrap();
        lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
        assert!(matches!(walk(&link).control, PathControl::Shared(_)));
    }

    #[test]
    fn a_directory_others_may_write_without_the_sticky_bit_is_shared() {
        let (top, _) = top();
        let open = top.path().join("open");
        std::fs::create_dir_all(open.join("job")).unwrap();
        // (group daemon: root's own group would be root's alone)
        chown(&open, None, Some(OTHER)).unwrap();
        for mode in [0o777, 0o775] {
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode)).unwrap();
            match walk(&open.join("job")).control {
                PathControl::Shared(why) => assert!(why.contains("not sticky"), "{why}"),
                other => panic!("{mode:o}: {other:?}"),
            }
        }
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(walk(&open.join("job")).control, PathControl::Root);
    }

    #[test]
    fn a_user_an_acl_lets_write_a_directory_on_the_way_makes_it_shared() {
        let (top, _) = top();
        let team = top.path().join("team");
        std::fs::create_dir_all(team.join("job")).unwrap();
        let o = std::process::Command::new("setfacl")
            .args(["-m", &format!("u:{NOBODY}:rwx")])
            .arg(&team)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        match walk(&team.join("job")).control {
            PathControl::Shared(why) => assert!(why.contains("ACL"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_file_on_the_way_is_no_directory() {
        let (top, _) = top();
        let file = top.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(path_control(&file.join("x")).is_err());
    }
}
