//! Ending the whole job from a rank: for a call SCR cannot go on from, where returning an
//! error would leave the other ranks waiting in the next collective call.

/// Stops the whole job with a message, as SCR does for a call it cannot go on from (one
/// before SCR_Init, a failed SCR_Init): returning an error would leave the other ranks
/// waiting in the next collective call, or let the job run on without checkpoints.
pub(crate) fn abort_job(message: &str) -> ! {
    // one write: another rank's abort may end this process at any moment
    say!("SCR: ERROR: {message}; aborting the job");
    abort_now()
}

/// [`abort_job`] on a rank whose reason another rank knows: that rank aborts the job
/// itself, after saying why; this one waits a moment so its message is not cut off, and
/// aborts only if the other has not.
pub(crate) fn abort_job_after_another(message: &str) -> ! {
    std::thread::sleep(std::time::Duration::from_secs(3));
    abort_job(message)
}

/// [`abort_job`] for SCR_Init's `error`, after the rank that knows its cause when another
/// rank failed.
pub(crate) fn abort_job_after(error: &scr::Error) -> ! {
    let message = format!("SCR_Init: {error}");
    if error.kind() == scr::ErrorKind::Collective {
        abort_job_after_another(&message)
    }
    abort_job(&message)
}

/// Ends the job at once (MPI_Abort when MPI runs, else this process), after a moment for
/// what was said to get through.
fn abort_now() -> ! {
    // the launcher forwards what the ranks wrote; an abort at once can end the job before
    // the message above is through
    std::thread::sleep(std::time::Duration::from_millis(300));
    if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
        // SAFETY: MPI is initialized and not finalized; MPI_Abort does not return
        unsafe {
            mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1);
        }
    }
    std::process::exit(1)
}
