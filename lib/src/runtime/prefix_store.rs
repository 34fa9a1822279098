//! The prefix store: the job's directory on the parallel file system and SCR's state files
//! in it (`.scr/index.scr`, `flush.scr`, `halt.scr`, `nodes.scr`, `scr.current`).
//!
//! Rank 0 alone reads and writes them. What it does there is one of two kinds, and the
//! kind decides how its outcome reaches the other ranks:
//! - **bookkeeping** ([`PrefixStore::note`]): where a dataset is, that a fetch failed, that
//!   the run finished. A failure is a warning: rank 0 must never fail a call the others
//!   complete.
//! - **work the call's outcome depends on** ([`PrefixStore::agreed`]): publishing a dataset,
//!   `SCR_Drop`, `SCR_Delete`, `SCR_Current`. Collective: every rank returns rank 0's
//!   outcome.

use super::job::Job;
use crate::comm;
use scr::flush::{FlushFile, Location};
use scr::index::IndexFile;
use scr::nodes::NodesFile;
use scr::prefix::update_flush_file;
use scr::{HashView, Result, layout, safe_fs};
use std::path::{Path, PathBuf};

pub(super) struct PrefixStore {
    path: PathBuf,
    /// Whether this process is rank 0, which alone touches the state files.
    root: bool,
    /// Rank 0: the prefix SCR's commands find where the job was launched, when the
    /// application chose another with SCR_Config (see [`PrefixStore::launch_halt_file`]).
    launch: Option<PathBuf>,
}

impl PrefixStore {
    pub(super) fn new(path: PathBuf, rank: u64) -> PrefixStore {
        // what SCR's commands take for the prefix where the job was launched: SCR_PREFIX of
        // the environment or the configuration files, else the working directory — the
        // application's SCR_Config aside
        let launch = (rank == 0)
            .then(|| {
                let params =
                    scr::params::Params::load(&scr::params::Sources::from_process()).ok()?;
                layout::prefix_dir(None, params.typed().places.prefix.as_deref()).ok()
            })
            .flatten()
            .filter(|launch| *launch != path);
        PrefixStore {
            path,
            root: rank == 0,
            launch,
        }
    }

    /// Rank 0: the halt file of the prefix where the job was launched, when the application
    /// set another prefix and that one's `.scr` is the user's own and holds a halt file:
    /// `scr halt` (and scr-run's halt checks) run there are meant for this job.
    pub(super) fn launch_halt_file(&self) -> Option<PathBuf> {
        let launch = self.launch.as_deref()?;
        safe_fs::check_owned_dir(&layout::prefix_hidden_dir(launch)).ok()?;
        Some(layout::halt_file(launch)).filter(|f| f.is_file())
    }

    /// The prefix directory (SCR_PREFIX).
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Rank 0 records something on the prefix that only helps later: a failure (a full or
    /// unreachable prefix) is a warning, never an error on rank 0 alone, which would leave
    /// the other ranks in the next collective call without it. Other ranks do nothing.
    pub(super) fn note(&self, what: &str, f: impl FnOnce(&Path) -> Result<()>) {
        if self.root
            && let Err(e) = f(&self.path)
        {
            say!("SCR: WARNING: could not record {what} on the prefix: {e}");
        }
    }

    /// [`PrefixStore::note`] of a change to the flush file.
    pub(super) fn note_in_flush_file(&self, what: &str, f: impl FnOnce(&mut FlushFile)) {
        self.note(what, |prefix| update_flush_file(prefix, f));
    }

    /// Rank 0 changes the prefix where the call's outcome depends on it: every rank returns
    /// the same result, and rank 0 says why it failed. Collective.
    pub(super) fn agreed(
        &self,
        job: &Job,
        what: &str,
        f: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let outcome = if self.root { f(&self.path) } else { Ok(()) };
        if let Err(e) = &outcome {
            say!("SCR: ERROR: {what}: {e}");
        }
        job.agree_root(outcome, &format!("{what} failed on rank 0"))
    }

    /// Whether the flush file says dataset `id` is not on the prefix (so when it cannot be
    /// read), on every rank. Collective.
    pub(super) fn needs_flush(&self, job: &Job, id: u64) -> bool {
        let unflushed = self.root
            && FlushFile::read(&layout::flush_file(&self.path)).map_or(true, |f| f.needs_flush(id));
        job.root_decides(unflushed)
    }

    /// Rank 0: the newest dataset id anything on the prefix records (see
    /// [`scr::dataset_ids`]); 0 on other ranks.
    pub(super) fn newest_recorded(&self) -> u64 {
        if !self.root {
            return 0;
        }
        scr::dataset_ids::newest_recorded(&self.path)
    }

    /// The id of the newest checkpoint the index says a restart can load (0 for none).
    pub(super) fn newest_usable_checkpoint(&self) -> u64 {
        IndexFile::read(&layout::index_file(&self.path))
            .ok()
            .and_then(|i| i.newest_usable_checkpoint())
            .map_or(0, |e| e.id)
    }

    /// Rank 0: what to tell a user whose newest checkpoint is not here: the newest
    /// checkpoint the flush file lists as in cache and not on the prefix, when it is newer
    /// than `restartable` (the newest this run can restart from, 0 for none). A job that
    /// ended without a drain (launched without scr-run, or killed before SCR_Finalize
    /// flushed) leaves it in its nodes' caches alone; one this run's caches hold but could
    /// not give back (`unrecovered`: a node lost with the only copy, a rebuild that failed)
    /// is lost to a drain of these caches too.
    /// With SCR_DISTRIBUTE=0 (`distribute` false) this run's caches were not looked at: one
    /// they hold is said as passed over, not as stranded.
    pub(super) fn stranded_beyond(
        &self,
        restartable: u64,
        unrecovered: &[u64],
        distribute: bool,
    ) -> Option<String> {
        if !self.root {
            return None;
        }
        let flush = FlushFile::read(&layout::flush_file(&self.path)).ok()?;
        let newest_usable = self.newest_usable_checkpoint();
        let stranded = flush
            .datasets()
            .into_iter()
            .filter(|&d| {
                flush.is_checkpoint(d)
                    && flush.has_location(d, Location::Cache)
                    && !flush.has_location(d, Location::Pfs)
            })
            .max()?;
        if stranded <= restartable.max(newest_usable) {
            return None;
        }
        let name = flush
            .name(stranded)
            .map_or_else(|| layout::dataset_dir_name(stranded), str::to_string);
        let prefix = self.path.display();
        if unrecovered.contains(&stranded) {
            return Some(format!(
                "SCR: {name} (dataset {stranded}) could not be recovered from this job's caches (said above) and is not on the prefix {prefix}: this run cannot restart from it"
            ));
        }
        if scr::prefix::placing::pending(&self.path, stranded) {
            // (its files are on the prefix; finishing its flush failed, as said above)
            return Some(format!(
                "SCR: the flush of {name} (dataset {stranded}) to the prefix {prefix} was cut short after every rank had copied its files, and could not be finished now: this run cannot restart from it; the next job tries again"
            ));
        }
        if !distribute && !flush.has_location(stranded, Location::Flushing) {
            return Some(format!(
                "SCR: {name} (dataset {stranded}) is in node caches, not on the prefix {prefix}, and with SCR_DISTRIBUTE=0 a run restarts from the prefix alone: this run does not restart from it. Where this allocation's nodes hold it, the drain when the job ends (scr postrun, which scr-run runs) copies it to the prefix; SCR_DISTRIBUTE=1, the default, restarts from it in cache"
            ));
        }
        let why = if flush.has_location(stranded, Location::Flushing) {
            format!(
                "its flush to the prefix {prefix} was cut short before every rank had copied its files, so it is only in that run's node caches"
            )
        } else {
            format!("it is only in that run's node caches, not on the prefix {prefix}")
        };
        Some(format!(
            "SCR: {name} (dataset {stranded}) was written by an earlier run and {why}: this run cannot restart from it. If those nodes still hold it, `scr postrun -p {prefix}` run there with that job's SCR_JOB_ID (and, where no resource manager names its nodes, SCR_NODELIST naming them: emulated nodes' names as mpiexec -hosts gave them) drains it; a job launched through scr-run is drained when it ends, and SCR_FLUSH sets how often checkpoints reach the prefix"
        ))
    }

    /// The datasets the flush file still calls FLUSHING (a flush a previous run began and
    /// never finished), on every rank. Collective.
    pub(super) fn interrupted_flushes(&self, job: &Job) -> Vec<u64> {
        let mine = if self.root {
            FlushFile::read(&layout::flush_file(&self.path))
                .map(|f| {
                    f.datasets()
                        .into_iter()
                        .filter(|&d| f.has_location(d, Location::Flushing))
                        .flat_map(u64::to_le_bytes)
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        comm::bcast_bytes(job.world(), 0, mine)
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect()
    }

    /// Rank 0 prepares the prefix (created where it does not exist yet, its `.scr`
    /// directory, the application's configuration),
    /// refusing one everyone may write, whose path others may change, or that is someone
    /// else's, unless `shared` (SCR_PREFIX_SHARED; then someone else's is warned of), refusing one whose index vanished while datasets SCR
    /// flushed are still there, and finishes the flushes a kill cut short before anything
    /// reads the index ([`scr::prefix::placing::recover`]); its failure fails SCR_Init on
    /// every rank. Collective.
    pub(super) fn prepare(&self, job: &Job, shared: bool) -> Result<()> {
        let prepared = if self.root {
            safe_fs::create_missing_dir(&self.path, layout::HIDDEN_DIR_MODE)
                .map(|created| {
                    if created {
                        job.debug(
                            1,
                            format_args!("Created the prefix directory {}", self.path.display()),
                        );
                    }
                })
                .and_then(|()| safe_fs::check_prefix_mode(&self.path))
                .and_then(|()| scr::prefix::guard::check_path_not_redirectable(&self.path, shared))
                .and_then(|()| scr::prefix::guard::check_not_shared(&self.path, shared))
                .and_then(|()| {
                    if let Some(w) = scr::prefix::guard::check_owner(&self.path, shared)? {
                        say!("SCR: WARNING: {w}");
                    }
                    scr::prefix::guard::check_index_not_lost(&self.path)
                })
                .and_then(|()| {
                    safe_fs::create_dirs_in(
                        &self.path,
                        &layout::prefix_hidden_dir(&self.path),
                        layout::HIDDEN_DIR_MODE,
                    )
                })
                .and_then(|()| crate::config_api::keep(&self.path))
                .map(|()| say_recovered(&self.path))
        } else {
            Ok(())
        };
        job.agree_root(
            prepared,
            &format!(
                "rank 0 could not prepare the prefix {}",
                self.path.display()
            ),
        )
    }

    /// Rank 0 records how many nodes the run has in the nodes file; its failure fails
    /// SCR_Init on every rank. Collective.
    pub(super) fn write_nodes_file(&self, job: &Job) -> Result<()> {
        let written = if self.root {
            // locked as every state file's writer is, so a writer killed mid-write leaves
            // a temporary the next one removes
            NodesFile::update(
                &layout::nodes_file(&self.path),
                scr::io::PRIVATE_FILE,
                |n| {
                    *n = NodesFile::with_nodes(job.nodes);
                    Ok(())
                },
            )
        } else {
            Ok(())
        };
        job.agree_root(
            written,
            "rank 0 could not write the nodes file on the prefix",
        )
    }
}

/// Finishes the flushes on `prefix` that a kill cut short ([`scr::prefix::placing`]) and
/// says what became of each; one that cannot be finished is a warning (the next job tries
/// again), never a failed SCR_Init.
fn say_recovered(prefix: &Path) {
    for said in scr::prefix::placing::recover(prefix) {
        say!("SCR: {said}");
    }
}

/// Says what deleting datasets from the prefix did (rank 0 calls it): each deleted, each
/// that stays and why, and what else the user should know. `why` is the parameter that
/// asked for it.
pub(super) fn say_deletions(done: &scr::prefix::Deletions, why: &str) {
    for name in &done.deleted {
        say!("SCR: deleted {name} from the prefix ({why})");
    }
    for (name, e) in &done.failed {
        say!("SCR: WARNING: {why}: {name} stays on the prefix: {e}");
    }
    for w in &done.warnings {
        say!("SCR: WARNING: {w}");
    }
}
