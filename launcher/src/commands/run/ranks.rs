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
}

impl RunRanks {
    /// The job's node directories; none without a control directory.
    pub(super) fn new(params: &Params, job_id: &str, nodes: &HostSet) -> RunRanks {
        let Ok(cntl) = crate::commands::drain::control_dir(params, job_id) else {
            return RunRanks { dirs: Vec::new() };
        };
        let mut dirs: Vec<PathBuf> = nodes
            .iter()
            .filter_map(|n| job::local_node_cntl_dir(&cntl, &n).ok())
            .collect();
        dirs.push(cntl);
        dirs.sort();
        dirs.dedup();
        RunRanks { dirs }
    }

    fn records(&self) -> impl Iterator<Item = RankProcess> + '_ {
        self.dirs.iter().flat_map(|d| rank_process::records_in(d))
    }

    /// Before a launch: the last run's records name processes long gone, and this run's
    /// ranks write their own.
    pub(super) fn clear(&self) {
        for dir in &self.dirs {
            rank_process::clear_records(dir);
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
        for r in self
            .records()
            .filter(|r| r.whereabouts() == Whereabouts::Running)
        {
            if let Some(pid) = r.pid() {
                // SAFETY: signals a process whose id and start time the record matched
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
    }
}
