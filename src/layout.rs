//! Where SCR keeps things (the v1.2/v2.0 layout):
//!
//! ```text
//! <cntl_base>/<user>/scr.<jobid>/            filemap.scrinfo, filemap_<n>.scrinfo, transfer.scrinfo
//! <cache_base>/<user>/scr.<jobid>/scr.dataset.<id>/       user files; .scr/ redundancy files
//! <prefix>/.scr/                              index.scr, halt.scr, flush.scr, nodes.scr
//! <prefix>/.scr/scr.dataset.<id>/             summary.scr, rank2file.scr, rank2file.<l>.<r>.scr
//! <prefix>/scr.current                        symlink a user may adjust (1.1-8)
//! ```

use crate::{Error, Result};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Name of the hidden directory in the prefix and in each cached dataset.
pub const HIDDEN: &str = ".scr";

/// The mode of every directory SCR creates (the umask may narrow it): a dataset's
/// directory on the prefix and the application's directories in it, `.scr/scr.dataset.<id>`,
/// the drain's working directories, cache and control directories. They are the user's
/// alone, as the checkpoints in them are.
pub const DIR_MODE: u32 = 0o700;

/// The mode of the prefix's `.scr` (the umask may narrow it): what is in it, the halt file
/// included, is the user's alone. (SCR makes it 0755 so that anyone may reach its halt
/// file; here nobody else may write that file, so nobody else needs to reach it.)
pub const HIDDEN_DIR_MODE: u32 = 0o700;

/// `<base>/<user>/scr.<jobid>`: the control directory, or one store's cache directory.
pub fn job_dir(base: &Path, user: &str, jobid: &str) -> Result<PathBuf> {
    check_component(user, "the user name (SCR_USER_NAME or USER)")?;
    check_component(jobid, "the job id (SCR_JOB_ID or the resource manager's)")?;
    Ok(base.join(user).join(format!("scr.{jobid}")))
}

/// The prefix directory, one rule for the library and every command: the one given (a
/// command's `--prefix`), else SCR_PREFIX (`param`, from the environment or a
/// configuration file), else the working directory. A relative one is taken from the
/// working directory; an empty one is an error, not the working directory by accident.
pub fn prefix_dir(given: Option<&Path>, param: Option<&str>) -> Result<PathBuf> {
    let chosen = given
        .map(Path::to_path_buf)
        .or_else(|| param.map(PathBuf::from));
    let cwd =
        || std::env::current_dir().map_err(|e| Error::io(".", "read the working directory", e));
    match chosen {
        Some(p) if p.as_os_str().is_empty() => Err(Error::Config {
            origin: "SCR_PREFIX".into(),
            what: "is set but empty; name the prefix directory, or unset it to use the working directory".into(),
        }),
        Some(p) if p.is_absolute() => Ok(p),
        Some(p) => Ok(cwd()?.join(p)),
        None => cwd(),
    }
}

/// A base directory from a parameter (SCR_CNTL_BASE, SCR_CACHE_BASE, a STORE): it must be
/// an absolute path, since every node and every command must find the same place.
pub fn base_dir<'a>(value: &'a str, param: &str) -> Result<&'a Path> {
    if value.is_empty() || !value.starts_with('/') {
        return Err(Error::Config {
            origin: param.to_string(),
            what: format!("{value:?} is not an absolute path; give the full path of the directory"),
        });
    }
    Ok(Path::new(value))
}

/// Checks a name that becomes one component of a path SCR creates (a user name, a job id,
/// a node name, a dataset name): not empty, not `.` or `..`, no `/`, no control character,
/// under 256 bytes. `what` says where the name came from, for the error.
pub fn check_component(name: &str, what: &str) -> Result<()> {
    let problem = if name.is_empty() {
        Some("is empty".to_string())
    } else if name == "." || name == ".." {
        Some(format!("{name:?} would leave its directory"))
    } else if name.contains('/') {
        Some(format!("{name:?} holds a '/'"))
    } else if name.chars().any(char::is_control) {
        Some(format!("{name:?} holds a control character"))
    } else if name.len() >= 256 {
        Some(format!("is {} bytes long (at most 255)", name.len()))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(Error::Config {
            origin: what.to_string(),
            what: format!("{p}; it names a directory, so it must be a single plain path component"),
        }),
    }
}

/// Where an emulated node's directories go inside a job directory, `<dir>/node.<name>`:
/// emulated nodes share one machine's file systems and keep apart by name.
pub fn emulated_node_dir(dir: &Path, node: &str) -> Result<PathBuf> {
    check_component(node, "the node name (SCR_NODE_NAME or the MPI launcher's)")?;
    Ok(dir.join(format!("node.{node}")))
}

/// A node's job directory: [`job_dir`], and inside it [`emulated_node_dir`] when the node
/// is an emulated one (`emulated_node` is its name).
pub fn node_job_dir(
    base: &Path,
    user: &str,
    jobid: &str,
    emulated_node: Option<&str>,
) -> Result<PathBuf> {
    let d = job_dir(base, user, jobid)?;
    match emulated_node {
        Some(node) => emulated_node_dir(&d, node),
        None => Ok(d),
    }
}

/// Master filemap in a control directory.
pub fn master_filemap(cntl_dir: &Path) -> PathBuf {
    cntl_dir.join("filemap.scrinfo")
}

/// Filemap of the process with node-local rank `local_rank`.
pub fn rank_filemap(cntl_dir: &Path, local_rank: u64) -> PathBuf {
    cntl_dir.join(format!("filemap_{local_rank}.scrinfo"))
}

pub fn transfer_file(cntl_dir: &Path) -> PathBuf {
    cntl_dir.join("transfer.scrinfo")
}

/// `scr.dataset.<id>`: a dataset's directory name in cache and under `<prefix>/.scr`.
pub fn dataset_dir_name(id: u64) -> String {
    format!("scr.dataset.{id}")
}

/// The id in a `scr.dataset.<id>` name.
pub fn parse_dataset_dir_name(name: &str) -> Option<u64> {
    name.strip_prefix("scr.dataset.")?.parse().ok()
}

/// The ids of the datasets with a directory under `<prefix>/.scr/`, in no order.
/// Listed through the prefix's handle, as every read of `.scr` is ([`crate::io::open_regular`]):
/// a `.scr` that is a link, or not the user's, lists nothing.
pub fn prefix_dataset_ids(prefix: &Path) -> std::io::Result<Vec<u64>> {
    let names = crate::safe_fs::Beneath::open(prefix)
        .and_then(|b| b.names_in(Path::new(HIDDEN)))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(names
        .iter()
        .filter_map(|n| parse_dataset_dir_name(n.to_str()?))
        .collect())
}

/// A dataset's directory in a cache directory.
pub fn cache_dataset_dir(cache_dir: &Path, id: u64) -> PathBuf {
    cache_dir.join(dataset_dir_name(id))
}

pub fn prefix_hidden_dir(prefix: &Path) -> PathBuf {
    prefix.join(HIDDEN)
}
pub fn index_file(prefix: &Path) -> PathBuf {
    prefix_hidden_dir(prefix).join("index.scr")
}
pub fn halt_file(prefix: &Path) -> PathBuf {
    prefix_hidden_dir(prefix).join("halt.scr")
}
pub fn flush_file(prefix: &Path) -> PathBuf {
    prefix_hidden_dir(prefix).join("flush.scr")
}
pub fn nodes_file(prefix: &Path) -> PathBuf {
    prefix_hidden_dir(prefix).join("nodes.scr")
}

/// `.scr/scr.dataset.<id>`, relative to the prefix (rank2file pointers use this form).
pub fn dataset_meta_rel(id: u64) -> String {
    format!("{HIDDEN}/{}", dataset_dir_name(id))
}

/// `<prefix>/.scr/scr.dataset.<id>`: summary and rank2file tree of a flushed dataset.
pub fn dataset_meta_dir(prefix: &Path, id: u64) -> PathBuf {
    prefix.join(dataset_meta_rel(id))
}
pub fn summary_file(prefix: &Path, id: u64) -> PathBuf {
    prefix.join(summary_rel(id))
}
/// [`summary_file`] relative to the prefix.
pub fn summary_rel(id: u64) -> PathBuf {
    Path::new(&dataset_meta_rel(id)).join("summary.scr")
}
pub fn rank2file_root(prefix: &Path, id: u64) -> PathBuf {
    dataset_meta_dir(prefix, id).join("rank2file.scr")
}

/// The `scr.current` symlink a user may point at a dataset directory.
pub fn current_link(prefix: &Path) -> PathBuf {
    prefix.join(CURRENT_LINK)
}

const CURRENT_LINK: &str = "scr.current";

/// Names in the prefix that are SCR's own state: its `.scr` directory, the `scr.current`
/// link and the user configuration `.scrconf`.
pub const RESERVED_PREFIX_NAMES: [&str; 3] = [HIDDEN, CURRENT_LINK, ".scrconf"];

/// The reserved name `rel` (a path relative to the prefix) starts with, if it does: an
/// application's file or dataset there would overwrite SCR's own state.
pub fn reserved_prefix_name(rel: &Path) -> Option<&'static str> {
    let first = rel.components().next()?.as_os_str();
    RESERVED_PREFIX_NAMES.into_iter().find(|r| first == *r)
}

/// An error for a name an application gave that is SCR's own (`what` says what it named).
pub fn refuse_reserved(rel: &Path, what: &str) -> crate::Result<()> {
    match reserved_prefix_name(rel) {
        Some(r) => Err(crate::Error::refused(format!(
            "{what} {} is SCR's own ({r} in the prefix holds SCR's state); choose another name",
            rel.display()
        ))),
        None => Ok(()),
    }
}

/// This machine's host name (the kernel's, as the MPI launchers see it), "localhost" when
/// it cannot be read.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// Whether a node name names this machine: the kernel's host name, the same name fully
/// qualified or not (a resource manager's `node1` and a kernel's `node1.cluster.example`
/// are one machine), in any case. A node named otherwise on this machine is an emulated
/// one, whose directories are kept apart by name. One rule for the library and the drain.
pub fn is_this_host(node: &str) -> bool {
    let short = |n: &str| n.split('.').next().unwrap_or_default().to_ascii_lowercase();
    let host = host_name();
    node.eq_ignore_ascii_case(&host) || (!node.is_empty() && short(node) == short(&host))
}

/// Which node a process is on, decided once: its name (as the launcher gave it, or the
/// host's) and whether it shares this machine with other nodes of the job (a name that is
/// not this machine's, [`is_this_host`]: an emulated node, whose directories keep apart by
/// name). The library and the drain place a node's directories by it alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    name: String,
    shares_machine: bool,
}

impl Node {
    /// The node called `name` (a node list's, a launcher's).
    pub fn named(name: &str) -> Node {
        Node {
            name: name.to_string(),
            shares_machine: !is_this_host(name),
        }
    }

    /// This process's node: `SCR_NODE_NAME` if set in this process's environment (each
    /// process names its own node: a configuration file, read for every node alike, cannot),
    /// else the name MPICH's hydra gave the host (`mpiexec -launcher fork -hosts n1,n2 …`
    /// emulates nodes that way), else the host name. `env` looks up a variable.
    pub fn of_process(env: impl Fn(&str) -> Option<String>) -> Node {
        let name = ["SCR_NODE_NAME", "MPIR_CVAR_CH3_INTERFACE_HOSTNAME"]
            .iter()
            .find_map(|k| env(k).filter(|n| !n.is_empty()))
            .unwrap_or_else(host_name);
        Node::named(&name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether other nodes of the job run on this machine too (this one is emulated).
    pub fn shares_machine(&self) -> bool {
        self.shares_machine
    }

    /// This node's directory of a job under a control or cache base.
    pub fn job_dir(&self, base: &Path, user: &str, jobid: &str) -> Result<PathBuf> {
        node_job_dir(
            base,
            user,
            jobid,
            self.shares_machine.then_some(self.name.as_str()),
        )
    }

    /// This node's own directory inside a job directory.
    pub fn dir_in(&self, job_dir: &Path) -> Result<PathBuf> {
        if self.shares_machine {
            emulated_node_dir(job_dir, &self.name)
        } else {
            Ok(job_dir.to_path_buf())
        }
    }
}

/// A node's own directory inside a job directory: the job directory itself for this
/// machine's host, `node.<name>` for an emulated node (several share one machine's file
/// systems and keep apart by name). One rule for the library and the launcher.
pub fn node_dir(job_dir: &Path, node: &str) -> Result<PathBuf> {
    Node::named(node).dir_in(job_dir)
}

/// The resource manager's id for this job: SLURM's SLURM_JOBID, else SLURM_JOB_ID (newer
/// SLURM sets only the latter in some contexts). `env` looks up a variable.
pub fn resource_manager_job_id(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    ["SLURM_JOBID", "SLURM_JOB_ID"]
        .iter()
        .find_map(|k| env(k).filter(|v| !v.is_empty()))
}

/// The job id of a job no resource manager runs and no SCR_JOB_ID names (SCR v3.1's).
pub const DEFAULT_JOB_ID: &str = "defjobid";

/// The job id in directory names, the one rule for the library, scr-run, the drain and every
/// command alike: the SCR_JOB_ID parameter (`scr_job_id`: environment or configuration), else
/// the resource manager's, else [`DEFAULT_JOB_ID`] — so a job launched without a resource
/// manager is found again by the commands run after it in the same environment.
pub fn job_id(scr_job_id: Option<&str>, env: impl Fn(&str) -> Option<String>) -> String {
    scr_job_id
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| resource_manager_job_id(env))
        .unwrap_or_else(|| DEFAULT_JOB_ID.to_string())
}

/// The user name in directory names: SCR_USER_NAME, else USER, else the account's, where
/// no configuration is at hand (a configuration file's SCR_USER_NAME counts where one is:
/// [`crate::params::settings::Places::user`]).
pub fn user_name() -> String {
    user_name_given(std::env::var("SCR_USER_NAME").ok().as_deref())
}

/// The user name in directory names: `given` (SCR_USER_NAME) if set, else USER, else the
/// account's.
pub fn user_name_given(given: Option<&str>) -> String {
    given
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(account_name)
}

/// Lexically normalises an absolute path (`a/./b/../c/` → `a/c`) without touching the
/// disk.
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The name the database log files a prefix's records under (SCR's job name): the prefix
/// with its links resolved where it exists, else made absolute against the working
/// directory and normalised, so that every way of writing one prefix (relative, with a
/// trailing `/`, through a link) names one job.
pub fn job_name(prefix: &Path) -> String {
    let named = std::fs::canonicalize(prefix).unwrap_or_else(|_| {
        let absolute = std::env::current_dir()
            .map(|cwd| cwd.join(prefix))
            .unwrap_or_else(|_| prefix.to_path_buf());
        lexically_normal(&absolute)
    });
    named.to_string_lossy().into_owned()
}

/// The user a command works for: `given` (SCR_USER_NAME), else the account of the effective user id,
/// whatever USER says (root acting as a prefix's owner works for that owner).
pub fn effective_user_name(given: Option<&str>) -> String {
    given
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(account_name)
}

/// The user id of the job's user: this process's own, or for root (which runs other users'
/// jobs: an epilog, an operator) the account [`user_name`] names, else root's.
pub fn job_user_id() -> u32 {
    let me = rustix::process::geteuid().as_raw();
    if me != 0 {
        return me;
    }
    job_account_for_root().map_or(0, |a| a.uid)
}

/// For root, the account of the job's user that [`user_name`] names, when it is another
/// user's; None for root's own jobs and for a name without an account (whoever asks).
pub fn job_account_for_root() -> Option<Account> {
    account_by_name(&user_name()).filter(|a| a.uid != 0)
}

/// The name of the account this process runs as (the password database's), for when the
/// environment names none: users without USER must not share one `unknown` directory.
pub(crate) fn account_name() -> String {
    let uid = rustix::process::geteuid().as_raw();
    account_by_id(uid).map_or_else(
        || format!("uid{uid}"),
        |a| a.name.to_string_lossy().into_owned(),
    )
}

/// An account of the user database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Its login name.
    pub name: std::ffi::CString,
    /// Its user id.
    pub uid: u32,
    /// Its primary group.
    pub gid: u32,
    /// Its home directory.
    pub home: PathBuf,
}

/// The account of user id `uid`; None when the user database has none.
pub fn account_by_id(uid: u32) -> Option<Account> {
    // SAFETY: the out-parameters are those getpwuid_r documents, sized by `len`
    lookup_account(|pwd, buf, len, found| unsafe { libc::getpwuid_r(uid, pwd, buf, len, found) })
}

/// The account named `name`; None when the user database has none (or the name holds a NUL).
pub fn account_by_name(name: &str) -> Option<Account> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: as in account_by_id; name is NUL-terminated
    lookup_account(|pwd, buf, len, found| unsafe {
        libc::getpwnam_r(name.as_ptr(), pwd, buf, len, found)
    })
}

/// Runs one getpw*_r look-up with storage of its own and copies out what it found.
fn lookup_account(
    lookup: impl FnOnce(
        *mut libc::passwd,
        *mut libc::c_char,
        libc::size_t,
        *mut *mut libc::passwd,
    ) -> libc::c_int,
) -> Option<Account> {
    // (as large as the longest look-up this replaced asked for: a long entry is found)
    let mut buf = vec![0 as libc::c_char; 1 << 16];
    // SAFETY: a zeroed passwd is a valid out-parameter; buf outlives every use of the result
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let rc = lookup(&mut pwd, buf.as_mut_ptr(), buf.len(), &mut found);
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: the look-up set pw_name to a NUL-terminated string inside buf
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_owned();
    let home = if pwd.pw_dir.is_null() {
        PathBuf::new()
    } else {
        // SAFETY: as pw_name: a NUL-terminated string inside buf
        let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
        PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()))
    };
    Some(Account {
        name,
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
        home,
    })
}

/// The file name of this process's program (its executable's), when it has a plain one.
pub fn program_name() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let name = exe.file_name()?.to_str()?;
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    plain.then(|| name.to_string())
}

/// XOR redundancy file name (v1.1.8+): `xor.<gid>_<r+1>_of_<n>.scr`.
pub fn xor_file_name(group_id: u64, group_rank: u64, group_size: u64) -> String {
    format!("xor.{group_id}_{}_of_{group_size}.scr", group_rank + 1)
}

/// Reed–Solomon parity file name, in the XOR file's pattern: `rs.<gid>_<r+1>_of_<n>.scr`.
pub fn rs_file_name(group_id: u64, group_rank: u64, group_size: u64) -> String {
    format!("rs.{group_id}_{}_of_{group_size}.scr", group_rank + 1)
}

/// Parses an XOR file name in the current or the 1.1-8 form (`<r+1>_of_<n>_in_<gid>.xor`)
/// into (group id, rank in set, set size).
pub fn parse_xor_file_name(name: &str) -> Option<(u64, u64, u64)> {
    parse_set_file_name(name, "xor").or_else(|| {
        let rest = name.strip_suffix(".xor")?;
        let (r, rest) = rest.split_once("_of_")?;
        let (n, gid) = rest.split_once("_in_")?;
        set_position(gid, r, n)
    })
}

/// Parses a Reed–Solomon parity file name (`rs.<gid>_<r+1>_of_<n>.scr`) into (group id,
/// rank in set, set size).
pub fn parse_rs_file_name(name: &str) -> Option<(u64, u64, u64)> {
    parse_set_file_name(name, "rs")
}

/// `<kind>.<gid>_<r+1>_of_<n>.scr`.
fn parse_set_file_name(name: &str, kind: &str) -> Option<(u64, u64, u64)> {
    let rest = name
        .strip_prefix(kind)?
        .strip_prefix('.')?
        .strip_suffix(".scr")?;
    let (gid, rest) = rest.split_once('_')?;
    let (r, n) = rest.split_once("_of_")?;
    set_position(gid, r, n)
}

fn set_position(gid: &str, r: &str, n: &str) -> Option<(u64, u64, u64)> {
    let (gid, r, n): (u64, u64, u64) = (gid.parse().ok()?, r.parse().ok()?, n.parse().ok()?);
    (r >= 1 && r <= n).then(|| (gid, r - 1, n))
}

#[cfg(test)]
mod job_id_tests {
    use super::*;

    #[test]
    fn scr_job_id_wins_then_slurm_jobid_then_slurm_job_id_then_defjobid() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let both = env(&[("SLURM_JOBID", "1"), ("SLURM_JOB_ID", "2")]);
        assert_eq!(job_id(Some("x"), both), "x");
        assert_eq!(job_id(None, both), "1");
        assert_eq!(job_id(Some(""), env(&[("SLURM_JOB_ID", "2")])), "2");
        assert_eq!(job_id(None, env(&[("SLURM_JOBID", "")])), "defjobid");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_of_writing_a_prefix_names_one_job() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("p");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let name = job_name(&real);
        for other in [
            dir.path().join("p/"),
            dir.path().join("p/."),
            dir.path().join("link"),
            dir.path().join("x/../p"),
        ] {
            assert_eq!(job_name(&other), name, "{}", other.display());
        }
        // one that does not exist yet: absolute and normalised
        let gone = dir.path().join("new/./q/");
        assert!(job_name(&gone).ends_with("/new/q"), "{}", job_name(&gone));
        assert_eq!(
            lexically_normal(Path::new("/a/./b/../c/")),
            Path::new("/a/c")
        );
        assert_eq!(lexically_normal(Path::new("/a/b/../../..")), Path::new("/"));
        assert_eq!(
            lexically_normal(Path::new("/p/ckpt.1/x")),
            Path::new("/p/ckpt.1/x")
        );
    }

    #[test]
    fn this_host_is_known_by_its_short_or_full_name_and_another_is_not() {
        let host = host_name();
        let short = host.split('.').next().unwrap().to_string();
        assert!(is_this_host(&host));
        assert!(is_this_host(&short.to_uppercase()));
        assert!(is_this_host(&format!("{short}.cluster.example")));
        assert!(!is_this_host(&format!("{short}x")));
        assert!(!is_this_host(""));
        let job = Path::new("/cntl/u/scr.1");
        assert_eq!(
            node_dir(job, &format!("{short}.cluster.example")).unwrap(),
            job
        );
        assert_eq!(node_dir(job, "n7").unwrap(), job.join("node.n7"));
    }

    #[test]
    fn names() {
        assert_eq!(
            job_dir(Path::new("/tmp"), "user1", "1145655").unwrap(),
            Path::new("/tmp/user1/scr.1145655")
        );
        assert_eq!(xor_file_name(0, 1, 4), "xor.0_2_of_4.scr");
        assert_eq!(parse_xor_file_name("xor.0_2_of_4.scr"), Some((0, 1, 4)));
        assert_eq!(parse_xor_file_name("3_of_8_in_16.xor"), Some((16, 2, 8)));
        assert_eq!(parse_xor_file_name("xor.0_0_of_4.scr"), None);
        assert_eq!(parse_xor_file_name("xor.0_5_of_4.scr"), None);
        assert_eq!(parse_rs_file_name(&rs_file_name(3, 1, 5)), Some((3, 1, 5)));
        assert_eq!(parse_rs_file_name("xor.3_2_of_5.scr"), None);
        assert_eq!(
            rank2file_root(Path::new("/p"), 3),
            Path::new("/p/.scr/scr.dataset.3/rank2file.scr")
        );
    }
}
