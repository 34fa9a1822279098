//! Rank process records (`<control dir>/process_<rank>.scrinfo`): each rank of a run
//! records its process there at SCR_Init and removes the record when it exits after
//! MPI_Finalize. A record whose process is gone therefore names a rank that died (killed,
//! or exited without MPI_Finalize), which MPICH's hydra does not always notice: the other
//! ranks wait for it in their next collective call, and the launcher with them, for good.
//! scr-run reads the records of the nodes on its machine to end such a run.
//!
//! A process is known by its process id, its start time (a process id used again by a
//! later process is not the rank) and the machine whose process table holds it (the
//! kernel's boot id and the process id namespace): a record written on another machine,
//! or in another container, names no process scr-run can look at.
//!
//! A record is only the word of whoever wrote it: scr-run (root's too) reads the records of
//! the job's user alone, in directories of that user's, and signals only processes of that
//! user's, through a handle on the very process whose start time it checked.

use crate::hash::Hash;
use crate::safe_fs::Beneath;
use crate::view::{HashView, check_value, hash_view};
use std::path::{Path, PathBuf};

hash_view!(
    /// One rank's process record.
    RankProcess, "rank process record", validate = validate, max_bytes = 16 << 10
);

const RANK: &str = "RANK";
const PID: &str = "PID";
const STARTED: &str = "STARTED";
const MACHINE: &str = "MACHINE";
const NODE: &str = "NODE";

fn validate(h: &Hash) -> Result<(), String> {
    for key in [RANK, STARTED] {
        check_value::<u64>(h, key, "rank process record")?;
    }
    check_value::<u32>(h, PID, "rank process record")
}

/// The file name prefix and suffix of a record: `process_<rank>.scrinfo`.
const NAME_PREFIX: &str = "process_";
const NAME_SUFFIX: &str = ".scrinfo";

/// Where rank `rank` records its process in its node's control directory.
pub fn record_path(cntl_dir: &Path, rank: u64) -> PathBuf {
    cntl_dir.join(format!("{NAME_PREFIX}{rank}{NAME_SUFFIX}"))
}

/// The rank a record's file name names, for names of records only.
fn rank_of_name(name: &str) -> Option<u64> {
    name.strip_prefix(NAME_PREFIX)?
        .strip_suffix(NAME_SUFFIX)?
        .parse()
        .ok()
}

/// What the process table says of a recorded rank's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whereabouts {
    /// It runs on this machine.
    Running,
    /// It was on this machine and is gone (ended, or a zombie nobody reaped).
    Gone,
    /// It is on another machine (or in another process id namespace): not known here.
    Elsewhere,
}

/// The process table this process sees: the boot id and the process id namespace.
fn this_machine() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let pid_ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("{}/{}", boot.trim(), pid_ns.display()))
}

/// A process's state letter and start time (clock ticks after boot), from its stat line.
fn process_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid …": the fields follow the last parenthesis (comm may hold any);
    // the state is the third field and the start time the twenty-second
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

impl RankProcess {
    /// This process as rank `rank` on node `node`; None where the process table cannot be
    /// read (no /proc): then no record is written, and nobody watches the rank.
    pub fn of_this_process(rank: u64, node: &str) -> Option<RankProcess> {
        RankProcess::of_process(std::process::id(), rank, node)
    }

    /// Process `pid` of this machine as rank `rank` on node `node` (its start time from the
    /// process table); None where it is not there.
    pub fn of_process(pid: u32, rank: u64, node: &str) -> Option<RankProcess> {
        let (_, started) = process_stat(pid)?;
        let mut r = RankProcess::new();
        r.0.set_value(RANK, rank);
        r.0.set_value(PID, pid);
        r.0.set_value(STARTED, started);
        r.0.set_value(MACHINE, this_machine()?);
        r.0.set_value(NODE, node);
        Some(r)
    }

    pub fn rank(&self) -> Option<u64> {
        self.0.parsed(RANK).ok().flatten()
    }

    pub fn pid(&self) -> Option<u32> {
        self.0.parsed(PID).ok().flatten()
    }

    /// The node the rank ran on, as the library named it.
    pub fn node(&self) -> &str {
        self.0.first_value(NODE).unwrap_or("?")
    }

    /// Whether the recorded process still runs, as this machine's process table shows it.
    pub fn whereabouts(&self) -> Whereabouts {
        let (Some(pid), Some(started)) = (self.pid(), self.0.parsed::<u64>(STARTED).ok().flatten())
        else {
            return Whereabouts::Elsewhere;
        };
        if this_machine().is_none() || self.0.first_value(MACHINE) != this_machine().as_deref() {
            return Whereabouts::Elsewhere;
        }
        match process_stat(pid) {
            Some((state, at)) if at == started && !matches!(state, 'Z' | 'X') => {
                Whereabouts::Running
            }
            _ => Whereabouts::Gone,
        }
    }

    /// Sends SIGKILL to the recorded process if it still runs and is `owner`'s: through a
    /// handle on the process itself, opened before its start time and owner are checked,
    /// so that a process that took the id meanwhile is never the one signalled. True if
    /// the signal went.
    pub fn kill_if_owned_by(&self, owner: u32) -> bool {
        use rustix::process::{Pid, PidfdFlags, Signal};
        use std::os::unix::fs::MetadataExt;
        let Some(pid) = self.pid().and_then(|p| Pid::from_raw(p as i32)) else {
            return false;
        };
        let Ok(handle) = rustix::process::pidfd_open(pid, PidfdFlags::empty()) else {
            return false;
        };
        // the owner of /proc/<pid> is the process's (effective) user; the start time read
        // after it says that the id still named the recorded process then, so the handle
        // holds that process
        let owned = std::fs::metadata(format!("/proc/{}", pid.as_raw_nonzero()))
            .is_ok_and(|m| m.uid() == owner);
        owned
            && self.whereabouts() == Whereabouts::Running
            && rustix::process::pidfd_send_signal(&handle, Signal::KILL).is_ok()
    }
}

/// The node control directory `cntl_dir` when it and what is below it are `owner`'s.
fn owned_dir(cntl_dir: &Path, owner: u32) -> Option<Beneath> {
    Beneath::open_owned_by(cntl_dir, owner).ok()
}

/// The records in a node's control directory, by rank: only when the directory is
/// `owner`'s (the job's user) and not writable by others, and only records that are
/// `owner`'s regular files, read through the directory's handle (none otherwise).
pub fn records_in(cntl_dir: &Path, owner: u32) -> Vec<RankProcess> {
    let Some(dir) = owned_dir(cntl_dir, owner) else {
        return Vec::new();
    };
    let mut records: Vec<RankProcess> = dir
        .names_in(Path::new(""))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| rank_of_name(&n.to_string_lossy()).is_some())
        .filter_map(|n| RankProcess::read_below(&dir, Path::new(&n)).ok())
        .collect();
    records.sort_by_key(RankProcess::rank);
    records
}

/// Removes the records a node's control directory of `owner`'s holds (a run that ended
/// left them; the next one writes its own). Returns how many it could not remove.
pub fn clear_records(cntl_dir: &Path, owner: u32) -> usize {
    let Some(dir) = owned_dir(cntl_dir, owner) else {
        return 0;
    };
    dir.names_in(Path::new(""))
        .unwrap_or_default()
        .into_iter()
        .filter(|n| rank_of_name(&n.to_string_lossy()).is_some())
        .filter(|n| dir.remove_file(Path::new(n)).is_err())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_knows_its_process_running_and_gone() {
        let dir = tempfile::tempdir().unwrap();
        let me = RankProcess::of_this_process(3, "n2").expect("/proc is readable here");
        me.write(&record_path(dir.path(), 3)).unwrap();
        let uid = rustix::process::geteuid().as_raw();
        let read = records_in(dir.path(), uid);
        assert_eq!(read.len(), 1);
        assert_eq!((read[0].rank(), read[0].node()), (Some(3), "n2"));
        assert_eq!(read[0].whereabouts(), Whereabouts::Running);
        // a child that ended and was reaped: its process id names no process
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let mut gone = RankProcess::of_this_process(1, "n1").unwrap();
        gone.0.set_value(PID, child.id());
        child.wait().unwrap();
        assert_eq!(gone.whereabouts(), Whereabouts::Gone);
        // this process id with another start time: a later process that took the id
        let mut reused = me.clone();
        reused.0.set_value(STARTED, 1u64);
        assert_eq!(reused.whereabouts(), Whereabouts::Gone);
        // another machine's record says nothing about this machine's processes
        let mut remote = me.clone();
        remote.0.set_value(MACHINE, "another-boot/pid:[1]");
        assert_eq!(remote.whereabouts(), Whereabouts::Elsewhere);
        std::fs::write(dir.path().join("filemap_0.scrinfo"), b"").unwrap();
        assert_eq!(clear_records(dir.path(), uid), 0);
        assert!(records_in(dir.path(), uid).is_empty());
        assert!(
            dir.path().join("filemap_0.scrinfo").exists(),
            "only records go"
        );
    }

    /// A record of `child` (a process of this user's) as rank 0.
    fn record_of(child: &std::process::Child) -> RankProcess {
        RankProcess::of_process(child.id(), 0, "n1").unwrap()
    }

    #[test]
    fn a_process_is_killed_only_when_it_is_the_owners_the_record_is_read_for() {
        let uid = rustix::process::geteuid().as_raw();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let record = record_of(&child);
        assert_eq!(record.whereabouts(), Whereabouts::Running);
        // the records of another user's job name no process of this user's to end
        assert!(!record.kill_if_owned_by(uid + 1));
        assert_eq!(child.try_wait().unwrap(), None, "killed for another owner");
        assert!(record.kill_if_owned_by(uid));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // gone now: nothing is signalled again
        assert!(!record.kill_if_owned_by(uid));
    }

    #[test]
    fn records_are_read_only_from_a_directory_of_the_owners_that_only_they_may_write() {
        use std::os::unix::fs::PermissionsExt;
        let uid = rustix::process::geteuid().as_raw();
        let dir = tempfile::tempdir().unwrap();
        let me = RankProcess::of_this_process(2, "n1").unwrap();
        me.write(&record_path(dir.path(), 2)).unwrap();
        assert_eq!(records_in(dir.path(), uid).len(), 1);
        // another user's job: this directory is not theirs, nothing in it is their word
        assert!(records_in(dir.path(), uid + 1).is_empty());
        assert_eq!(clear_records(dir.path(), uid + 1), 0);
        assert!(
            record_path(dir.path(), 2).exists(),
            "cleared for another owner"
        );
        // a directory anyone may write: anyone may have planted its records
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(records_in(dir.path(), uid).is_empty());
        // a link in the record's place is not followed
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let other = RankProcess::of_this_process(5, "n1").unwrap();
        other.write(&record_path(elsewhere.path(), 5)).unwrap();
        std::os::unix::fs::symlink(record_path(elsewhere.path(), 5), record_path(dir.path(), 5))
            .unwrap();
        let ranks: Vec<_> = records_in(dir.path(), uid)
            .iter()
            .map(|r| r.rank())
            .collect();
        assert_eq!(ranks, [Some(2)]);
    }
}
