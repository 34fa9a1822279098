//! Halt conditions: the halt file and the allocation's end, decided on rank 0 for all.

use super::Scr;
use super::job::Job;
use super::prefix_store::PrefixStore;
use scr::event_log::kinds;
use scr::halt::HaltFile;
use scr::io::{LockedHashFile, PRIVATE_FILE};
use scr::params::settings::Halt;
use scr::{Error, HashView, Result, layout};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process said why the job should stop: SCR_Init, SCR_Need_checkpoint,
/// SCR_Complete_output and SCR_Should_exit each find a condition that holds again, and
/// where the job goes on (SCR_HALT_EXIT=0) the user needs to hear it once.
static SAID_WHY: AtomicBool = AtomicBool::new(false);

/// Whether this process logged the halt event (once, as [`SAID_WHY`]).
static LOGGED: AtomicBool = AtomicBool::new(false);

/// The ExitReason of the condition rank 0 said, for the halt event's record.
static REASON: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Rank 0 says, once, why the job should stop, and what happens next.
fn say_why(cause: &scr::halt::HaltCause, exits: bool) {
    if SAID_WHY.swap(true, Ordering::Relaxed) {
        return;
    }
    let _ = REASON.set(cause.reason().to_string());
    if exits {
        say_out!("SCR: Job exiting: {cause}");
    } else {
        say_out!(
            "SCR: Job exiting: {cause} (SCR_HALT_EXIT=0: SCR_Should_exit says so from now on; \
             the application ends itself)"
        );
    }
}

/// Rank 0 reads the halt file (counting a completed checkpoint against CheckpointsLeft
/// when asked) and decides; every rank learns the decision. Rank 0 records the cause as
/// the ExitReason so the launcher stops too. A program that set its own prefix also heeds
/// the halt file where it was launched ([`PrefixStore::launch_halt_file`]). Collective.
pub(super) fn decision(
    job: &Job,
    prefix: &PrefixStore,
    settings: &Halt,
    count_checkpoint: bool,
) -> bool {
    let root = job.is_root();
    let mut halt_now = false;
    let mut result: Result<()> = Ok(());
    let now = chrono::Utc::now().timestamp();
    let remaining = scr::halt::seconds_until(settings.end_time, now);
    let judge =
        |path: &std::path::Path| judge_file(path, settings, count_checkpoint, now, remaining);
    if root {
        result = judge(&layout::halt_file(prefix.path())).map(|h| halt_now = h);
        // `scr halt` where the job was launched, for a program that set its own prefix
        if let Some(launch) = prefix.launch_halt_file() {
            match judge(&launch) {
                Ok(h) => halt_now |= h,
                Err(e) => say!(
                    "SCR: WARNING: the halt file {} not checked: {e}",
                    launch.display()
                ),
            }
        }
    }
    // the halt file is the prefix's: if rank 0 cannot read it (damaged, a full or failing
    // file system) the job goes on rather than fail on rank 0 alone, and the allocation's
    // end still stops it in time
    if let Err(e) = &result {
        say!("SCR: WARNING: the halt file's conditions not checked this time: {e}");
        let by_time = HaltFile::new()
            .with_halt_seconds_default(Some(settings.seconds as i64))
            .library_decision(now, remaining);
        if let Some(cause) = by_time {
            say_why(&cause, settings.exits);
            halt_now = true;
        }
    }
    job.root_decides(halt_now)
}

/// Rank 0: reads one halt file (counting a completed checkpoint against CheckpointsLeft
/// when asked) and decides; when a condition holds, says why once and records it there as
/// the ExitReason. Whether the job should stop.
fn judge_file(
    path: &std::path::Path,
    settings: &Halt,
    count_checkpoint: bool,
    now: i64,
    remaining: Option<i64>,
) -> Result<bool> {
    let halt_seconds = Some(settings.seconds as i64);
    // a halt file an older version left others may write is rewritten as the user's
    // alone (its conditions kept), so that from then on nobody else can change it
    let others_may_write = std::fs::metadata(path)
        .is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o077 != 0);
    // a check that changes nothing reads the file without its lock (it is replaced
    // whole, never written in place)
    let nothing_to_do = !count_checkpoint
        && !others_may_write
        && HaltFile::read(path).is_ok_and(|h| {
            h.with_halt_seconds_default(halt_seconds)
                .library_decision(now, remaining)
                .is_none()
        });
    if nothing_to_do {
        return Ok(false);
    }
    let (lock, hash) = LockedHashFile::open(path, PRIVATE_FILE, HaltFile::MAX_BYTES)?;
    let was = hash.clone();
    let mut halt = HaltFile::from_hash(hash).map_err(|e| Error::invalid(path, e))?;
    if count_checkpoint {
        halt.decrement_checkpoints();
    }
    let conditions = halt.with_halt_seconds_default(halt_seconds);
    let mut halt_now = false;
    if let Some(cause) = conditions.library_decision(now, remaining) {
        say_why(&cause, settings.exits);
        halt.set_exit_reason(cause.reason());
        halt_now = true;
    }
    // Need_checkpoint and Should_exit call this often: rewrite only what changed
    if halt.hash() != &was || others_may_write {
        lock.write_and_unlock(halt.hash())?;
    }
    Ok(halt_now)
}

impl Scr {
    /// Checks for a halt condition; when one holds and halts exit (`Params::halt_exits`:
    /// SCR_HALT_EXIT=1, or v2.0's SCR_HALT_ENABLED=1), flushes the newest checkpoint if it
    /// is only in cache, finalizes MPI and exits with status 0 (as SCR does).
    pub(super) fn check_halt(&mut self, count_checkpoint: bool) -> Result<bool> {
        let halt = self.halt_decision(count_checkpoint);
        let exits = self.config.settings.halt.exits;
        if halt && !LOGGED.swap(true, Ordering::Relaxed) {
            let mut fields = vec![("exits", exits.to_string())];
            // rank 0 decided, and knows why
            if let Some(reason) = REASON.get() {
                fields.push(("reason", reason.clone()));
            }
            self.log.event(kinds::HALT, &fields);
        }
        if halt && exits {
            self.flush_latest_if_needed()?;
            self.job.barrier();
            // SAFETY: MPI is initialized (checked in init) and not finalized; the process exits next.
            unsafe {
                mpi::ffi::MPI_Finalize();
            }
            std::process::exit(0);
        }
        Ok(halt)
    }

    /// `SCR_Should_exit`.
    pub fn should_exit(&self) -> Result<bool> {
        Ok(self.halt_decision(false))
    }

    /// [`decision`] with this job's prefix and settings. Collective.
    pub(super) fn halt_decision(&self, count_checkpoint: bool) -> bool {
        decision(
            &self.job,
            &self.prefix,
            &self.config.settings.halt,
            count_checkpoint,
        )
    }
}
