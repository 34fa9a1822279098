//! This rank's process record ([`scr::rank_process`]): written at SCR_Init, removed when
//! the process exits after MPI_Finalize. What stays behind a process that is gone names a
//! rank that died mid-run (killed, or exited without MPI_Finalize), for scr-run to end a
//! run whose launcher would wait for it forever.

use scr::HashView;
use scr::rank_process::{RankProcess, record_path};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// The record this process wrote, and its process id (a child forked by the application
/// inherits the exit handler, and must not remove its parent's record).
static RECORD: Mutex<Option<(PathBuf, u32)>> = Mutex::new(None);

/// Removes the record at exit when the rank ended as MPI asks, after MPI_Finalize: a
/// rank gone without it is one the others may wait for in vain.
extern "C" fn forget_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let Ok(record) = RECORD.lock() else { return };
        if let Some((path, pid)) = record.as_ref()
            && *pid == std::process::id()
            && mpi::environment::is_finalized()
        {
            let _ = std::fs::remove_file(path);
        }
    });
}

/// Records this process as rank `rank` of node `node` in the node's control directory.
/// Without a record nobody watches the rank; the run goes on as before.
pub(super) fn record(cntl_dir: &Path, rank: u64, node: &str) {
    static AT_EXIT: Once = Once::new();
    let Some(me) = RankProcess::of_this_process(rank, node) else {
        return;
    };
    let path = record_path(cntl_dir, rank);
    if me.write(&path).is_err() {
        return;
    }
    if let Ok(mut record) = RECORD.lock() {
        *record = Some((path, std::process::id()));
    }
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function taking and returning nothing, which never unwinds
        unsafe { libc::atexit(forget_at_exit) };
    });
}
