//! The processes of a run's ranks on scr-run's machine, as each rank records its own in
//! its node's control directory ([`scr::rank_process`]): a rank gone without ending after
//! MPI_Finalize is one its launcher may wait for forever.

use crate::job;
use hostlist::HostSet;
use scr::params::Params;
use scr::rank_process::{self, RankProcess, Whereabouts};
use std::path::PathBuf;

/// Where the ranks of a run on this machine record their processes.
pub(super) struct RunRanks {
    /// Each node's control directory (an emulated node's `node.<name>`, this host's the
    /// job's own; a directory no rank made holds nothing).
    dirs: Vec<PathBuf>,
    /// The job's user: only their records in their directories are read, and only their
    /// processes signalled (root's scr-run runs other users' jobs).
    owner: u32,
}

impl RunRanks {
    /// The job's node directories; none without a control directory.
    pub(super) fn new(params: &Params, job_id: &str, nodes: &HostSet) -> RunRanks {
        let owner = scr::layout::job_user_id();
        let Ok(cntl) = crate::commands::drain::control_dir(params, job_id) else {
            return RunRanks {
                dirs: Vec::new(),
                owner,
            };
        };
        let mut dirs: Vec<PathBuf> = nodes
            .iter()
            .filter_map(|n| job::local_node_cntl_dir(&cntl, &n).ok())
            .collect();
        dirs.push(cntl);
        dirs.sort();
        dirs.dedup();
        RunRanks { dirs, owner }
    }

    fn records(&self) -> impl Iterator<Item = RankProcess> + '_ {
        self.dirs
            .iter()
            .flat_map(|d| rank_process::records_in(d, self.owner))
    }

    /// Before a launch: the last run's records name processes long gone, and this run's
    /// ranks write their own.
    pub(super) fn clear(&self) {
        for dir in &self.dirs {
            rank_process::clear_records(dir, self.owner);
        }
    }

    /// The first rank on this machine whose process is gone without having ended after
    /// MPI_Finalize (its record stays), in words naming it.
    pub(super) fn gone(&self) -> Option<String> {
        self.records()
            .find(|r| r.whereabouts() == Whereabouts::Gone)
            .map(|r| {
                format!(
                    "rank {} (process {} on {}) ended without MPI_Finalize",
                    r.rank().map_or("?".into(), |n| n.to_string()),
                    r.pid().unwrap_or(0),
                    r.node()
                )
            })
    }

    /// Ends the ranks on this machine that outlived their launcher's end (a launcher
    /// killed does not always take its ranks with it).
    pub(super) fn kill_running(&self) {
        for r in self.records() {
            r.kill_if_owned_by(self.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scr::HashView;
    use std::os::unix::fs::PermissionsExt;

    /// The user id a neighbour has here (nobody), who owns `path`.
    const NEIGHBOUR: u32 = 65534;

    fn give_to_neighbour(path: &std::path::Path) {
        std::os::unix::fs::chown(path, Some(NEIGHBOUR), Some(NEIGHBOUR)).expect("chown (as root)");
    }

    /// A record of rank `rank` naming process `pid` in `dir`, the neighbour's.
    fn planted(dir: &std::path::Path, rank: u64, pid: u32) {
        let path = rank_process::record_path(dir, rank);
        RankProcess::of_process(pid, rank, "n1")
            .unwrap()
            .write(&path)
            .unwrap();
        give_to_neighbour(&path);
    }

    #[test]
    fn a_run_ends_only_processes_of_its_user_that_its_users_records_name() {
        assert!(
            unsafe { libc::geteuid() } == 0,
            "this test plays root's scr-run and a neighbour: run it as root"
        );
        let dir = tempfile::tempdir().unwrap();
        let cntl = dir.path().join("node.n1");
        std::fs::create_dir(&cntl).unwrap();
        std::fs::set_permissions(&cntl, std::fs::Permissions::from_mode(0o700)).unwrap();
        give_to_neighbour(&cntl);
        // a process of root's (another user's, to the neighbour) and a process long gone
        let mut victim = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        planted(&cntl, 0, victim.id());
        planted(&cntl, 1, ended.id());
        ended.wait().unwrap();

        // root's scr-run running the neighbour's job: the neighbour's word about their own
        // ranks counts, and ends no process of anyone else's
        let theirs = RunRanks {
            dirs: vec![cntl.clone()],
            owner: NEIGHBOUR,
        };
        assert!(theirs.gone().is_some_and(|w| w.contains("rank 1")));
        theirs.kill_running();
        assert_eq!(
            victim.try_wait().unwrap(),
            None,
            "root killed another user's process"
        );

        // root's own job, with its control directory planted by the neighbour: nothing there
        // is root's word
        let roots = RunRanks {
            dirs: vec![cntl.clone()],
            owner: 0,
        };
        assert_eq!(roots.gone(), None);
        roots.kill_running();
        roots.clear();
        assert!(rank_process::record_path(&cntl, 0).exists());
        assert_eq!(
            victim.try_wait().unwrap(),
            None,
            "root killed on a planted record"
        );
        victim.kill().unwrap();
        victim.wait().unwrap();
    }
}
