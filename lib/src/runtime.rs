//! The library state of one process (`Scr`) and its life: SCR_Init (configuration read once
//! on rank 0, node grouping, directories, the filemaps found on the node, the restart
//! chosen) and SCR_Finalize. `Scr` holds the runtime's parts and hands each only what it
//! needs: the job and its communicators (`job`: a function that takes the `Job` is
//! collective), the cache manager (`cache`, `node_cache`), the prefix store
//! (`prefix_store`), the checkpoint descriptors and their redundancy (`descriptors`,
//! `redundancy`), the flush (`flush`, `async_flush`), the fetch (`fetch`), the recovery in
//! cache (`rebuild`, `set_rebuild`), and the typed messages ranks send each other
//! (`messages`). The API calls are in `output` (checkpoints and outputs), `restart` (routing
//! and the restart phase), `halt` and `manage` (SCR_Current, SCR_Drop, SCR_Delete, purges).

use crate::comm;
use crate::event_log::EventLog;
use scr::event_log::kinds;

mod async_flush;
mod cache;
mod descriptors;
mod fault;
mod fetch;
mod fetch_choice;
mod flush;
mod halt;
mod job;
mod manage;
mod messages;
mod node_cache;
mod output;
mod prefix_store;
mod rank_record;
mod rebuild;
mod recovery_plan;
mod redundancy;
mod reshape;
mod restart;
mod set_rebuild;
mod shape_drain;

use async_flush::AsyncFlushes;
use cache::{CacheManager, CacheSettings, JobPlace, TRASH_DIR};
use descriptors::{CkptDesc, NodePlace};
use flush::Flush;
use job::{Job, NodeGroups};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use node_cache::{agree_on_foreign_caches, foreign_cache, load_filemaps};
use prefix_store::PrefixStore;
use rebuild::Recovery;
use redundancy::Redundancy;
use scr::halt::HaltFile;
use scr::layout::Node;
use scr::params::{Params, Settings};
use scr::{Error, Result, layout, safe_fs};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The filemap tag on a partner's copy, naming the node of the rank the files belong to.
const PARTNER_TAG: &str = "PARTNER";

/// `SCR_FLAG_CHECKPOINT`.
pub const FLAG_CHECKPOINT: i32 = 1;
/// `SCR_FLAG_OUTPUT`.
pub const FLAG_OUTPUT: i32 = 2;

/// What the application is doing between SCR calls.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Between Start_output and Complete_output; `bypass`: its files go straight to the
    /// prefix.
    Output {
        id: u64,
        flags: i32,
        bypass: bool,
        /// Why this rank could not prepare the output (its filemap or directory): Complete
        /// then fails the dataset on every rank, in the sums every rank enters.
        broken: Option<String>,
    },
    /// Between Start_restart and Complete_restart.
    Restart {
        id: u64,
    },
}

/// One process's SCR state: the parts of the runtime (the job and its communicators, the
/// cache manager, the prefix store, the redundancy descriptors, the background flushes,
/// the event log), what SCR_Init read, and where the application is in its datasets.
///
/// The API calls live on `Scr` (`runtime.rs`: Init, Finalize; `output.rs`; `restart.rs`;
/// `manage.rs`; `halt.rs`); each hands the parts it calls only what they need. A part's
/// function that takes the `Job` is collective.
pub struct Scr {
    job: Job,
    config: Config,
    redundancy: Redundancy,
    cache: CacheManager,
    prefix: PrefixStore,
    flushes: AsyncFlushes,
    /// SCR_LOG_ENABLE's event log (writes on rank 0 only).
    log: EventLog,
    dataset_id: u64,
    checkpoint_id: u64,
    phase: Phase,
    /// Cached dataset a restart may load (id, name).
    restart: Option<(u64, String)>,
    /// The restart offered was written by another number of ranks: its whole file list,
    /// read in place (none otherwise; always none without `restart`).
    reshaped: Option<reshape::PrefixRestart>,
    /// A file of the open restart could not be routed for want of this node's cache (a
    /// full or failing cache directory): the checkpoint is not to blame.
    restart_trouble_here: bool,
    /// The open restart reads its files on the prefix (on some rank), so any rank may route
    /// any file of it (SCR v3.1's "read with shared access"); decided in Start_restart.
    restart_reads_prefix: bool,
    /// The whole file list of the open restart of this job's size read on the prefix,
    /// read when this rank first routes another rank's file.
    restart_shared: Option<reshape::PrefixRestart>,
    /// SCR_Route_file refused a name during the open restart for a reason that says
    /// nothing of the checkpoint's data (a name not in it, a file this job may not read):
    /// a restart the application then fails does not mark the checkpoint failed.
    restart_route_refused: bool,
    /// Nothing in cache could be restarted from and SCR_FETCH is on: the prefix's newest
    /// checkpoint is fetched when the application asks for a restart (SCR_Have_restart,
    /// SCR_Start_restart, SCR_Current), not in SCR_Init, so a run that never restarts, or
    /// picks an older checkpoint, copies nothing it does not read.
    fetch_pending: bool,
    /// A checkpoint SCR_Init recovered in cache but passed over for a newer one on the
    /// prefix: the pending fetch restarts from it when no checkpoint on the prefix newer
    /// than it can be fetched (see [`Scr::pass_over_superseded_cache`]).
    older_in_cache: Option<(u64, String)>,
    /// What a fetch told the user (rank 0): each is said once in the job, not at every
    /// fallback.
    fetch_told: std::collections::BTreeSet<fetch::Told>,
    /// When checkpoints were asked for, started and completed (SCR_Need_checkpoint's rules).
    schedule: scr::schedule::CheckpointSchedule,
}

/// What SCR_Init read once for the whole run.
struct Config {
    params: Params,
    /// The parameters as typed values, read once.
    settings: Settings,
}

/// The flush over a `Scr`'s parts, each field borrowed alone, so that another field (the
/// background flushes) can change beside it.
macro_rules! flush_part {
    ($scr:expr) => {
        Flush {
            job: &$scr.job,
            cache: &$scr.cache,
            prefix: &$scr.prefix,
            settings: &$scr.config.settings,
            log: &$scr.log,
        }
    };
}

/// Creates this node's control directory and each descriptor's cache directory (the node
/// master empties the trash a previous run left). A node that cannot have them (a name
/// refused, a directory someone else controls) fails SCR_Init on every rank alike.
/// Returns the control directory. Collective over `world`.
fn prepare_node_dirs(
    world: &SimpleCommunicator,
    place: &JobPlace,
    cntl_base: &str,
    descriptors: &[CkptDesc],
    local_rank: u64,
) -> Result<PathBuf> {
    let dirs = (|| {
        let cntl_dir = place.under(cntl_base, "SCR_CNTL_BASE")?;
        safe_fs::create_job_dirs_in_base(
            Path::new(cntl_base),
            &cntl_dir,
            scr::layout::DIR_MODE,
            "SCR_CNTL_BASE",
        )?;
        for d in descriptors {
            let param = "SCR_CACHE_BASE (or a CKPT line's STORE)";
            let store = place.under(&d.store, param)?;
            safe_fs::create_job_dirs_in_base(
                Path::new(&d.store),
                &store,
                scr::layout::DIR_MODE,
                param,
            )?;
            if local_rank == 0 {
                // files a previous run discarded but did not get to delete (through the
                // store's handle: nothing a link there leads to)
                let _ = safe_fs::Beneath::open(&store)
                    .and_then(|b| b.remove_tree(Path::new(TRASH_DIR)));
            }
        }
        Ok(cntl_dir)
    })();
    comm::agree(
        world,
        dirs,
        "another node could not prepare its control or cache directory",
    )
}

/// Rank 0 reads the configuration (printing its warnings); every rank uses what it read.
/// Collective: a configuration rank 0 cannot read fails SCR_Init on every rank.
fn read_params(world: &SimpleCommunicator, rank: u64) -> Result<Params> {
    let loaded = if rank == 0 {
        crate::config_api::sources().and_then(|sources| Params::load(&sources))
    } else {
        Ok(Params::default())
    };
    let loaded = comm::agree(world, loaded, "rank 0 could not read the SCR configuration");
    loaded.map(|p| {
        if rank == 0 {
            for w in &p.warnings {
                say!("SCR: WARNING: {w}");
            }
            // the configuration in effect, with where each value came from (only rank 0
            // knows: the others get the values alone)
            let settings = Settings::from_params(&p);
            if settings.debug >= 1 {
                let cwd = std::env::current_dir().ok();
                let prefix = cwd.as_deref().map(|d| (d, "the working directory"));
                for (setting, origin) in p.effective(prefix) {
                    say!("SCR: {setting} ({origin})");
                }
            }
        }
        Params::from_hash(&comm::bcast_hash(world, 0, &p.to_hash()))
    })
}

impl Scr {
    /// `SCR_Init`. MPI must already be initialized (by the application).
    pub fn init() -> Result<Scr> {
        if !mpi::environment::is_initialized() {
            return Err(Error::refused(
                "SCR_Init called before MPI_Init; initialize MPI first",
            ));
        }
        let world = SimpleCommunicator::world().duplicate();
        let rank = world.rank() as u64;
        let ranks = world.size() as u64;

        let params = read_params(&world, rank)?;
        let settings = Settings::from_params(&params);
        if !settings.enable {
            return Err(Error::Disabled);
        }
        if let Some(secs) = settings.lock_timeout {
            scr::io::set_lock_timeout(secs);
        }
        let places = &settings.places;
        let node = Node::of_process(|k| std::env::var(k).ok());
        let groups = NodeGroups::of(&world, node.name());

        let jobid = layout::job_id(places.job_id.as_deref(), |k| std::env::var(k).ok());
        let place = JobPlace {
            user: places.user(),
            jobid_given: jobid != layout::DEFAULT_JOB_ID,
            jobid,
            node: node.clone(),
        };
        let prefix = PrefixStore::new(layout::prefix_dir(None, places.prefix.as_deref())?, rank);
        let mut descriptors = CkptDesc::from_params(&params, &settings.redundancy)?;
        let local_rank = groups.local_rank;
        let cntl_dir =
            prepare_node_dirs(&world, &place, &places.cntl_base, &descriptors, local_rank)?;
        rank_record::record(&cntl_dir, rank, node.name());
        let node_place = NodePlace {
            name: node.name(),
            local_rank,
            across: &groups.across,
        };
        let (sets, set_comms): (Vec<_>, Vec<_>) = descriptors
            .iter_mut()
            .map(|d| d.select_sets(&world, &node_place, &params))
            .unzip();
        let job = Job::new(world, groups, set_comms, node, settings.debug);
        prefix.prepare(&job, settings.prefix.shared)?;
        // another program's cache must be judged before this job's filemaps replace it
        let foreign = foreign_cache(&cntl_dir, prefix.path());
        let discard_foreign =
            agree_on_foreign_caches(&job, &cntl_dir, prefix.path(), foreign.as_ref())?;
        comm::relaxed_barrier(job.node_comm());
        // a newer checkpoint cached by a job of another size goes to the prefix first
        let drained_other_shape = shape_drain::drain_cache_of_another_shape(
            &job,
            &cntl_dir,
            &prefix,
            settings.buffers.file,
        )?;

        // every rank learns whether every node could write its filemaps (a full control
        // directory on one node), so none goes on into a collective the others left
        let found = job.agree(
            load_filemaps(&job, &cntl_dir, prefix.path()),
            "another node could not write its filemaps (its ranks print why: a full or failing control directory?)",
        )?;
        prefix.write_nodes_file(&job)?;
        let log = EventLog::open(
            &settings.log,
            prefix.path(),
            rank,
            &place.user,
            &place.jobid,
        )?;
        let redundancy = Redundancy {
            descriptors,
            sets,
            mpi_buf: settings.buffers.mpi,
            crc_on_copy: settings.crc.on_copy,
        };
        let cache = CacheManager::new(
            rank,
            ranks,
            place,
            redundancy.stores(),
            found,
            CacheSettings {
                crc_on_copy: settings.crc.on_copy,
                crc_on_delete: settings.crc.on_delete,
                debug: settings.debug,
            },
        );
        let mut scr = Scr {
            job,
            config: Config { settings, params },
            redundancy,
            cache,
            prefix,
            flushes: AsyncFlushes::default(),
            log,
            dataset_id: 0,
            checkpoint_id: 0,
            phase: Phase::Idle,
            restart: None,
            reshaped: None,
            restart_trouble_here: false,
            restart_reads_prefix: false,
            restart_shared: None,
            restart_route_refused: false,
            fetch_pending: false,
            older_in_cache: None,
            fetch_told: std::collections::BTreeSet::new(),
            schedule: scr::schedule::CheckpointSchedule::new(Instant::now()),
        };
        if discard_foreign {
            scr.cache.discard_all();
        } else if drained_other_shape {
            scr.cache.discard_written_by_other_jobs();
        }
        scr.begin()?;
        Ok(scr)
    }

    /// The run's start once the state is in place: purges the configuration asks for,
    /// the restart chosen (rebuilt in cache where it must be, SCR_CURRENT's pick, flushed
    /// on restart), the start logged, and the halt conditions checked.
    fn begin(&mut self) -> Result<()> {
        self.job.debug(1, format_args!("NPROCS={}", self.job.ranks));
        self.job.debug(1, format_args!("NNODES={}", self.job.nodes));
        self.purge()?;
        let distribute = self.config.settings.fetch.distribute;
        let found = Recovery {
            job: &self.job,
            cache: &mut self.cache,
            redundancy: &self.redundancy,
        }
        .restart_from_cache(
            &self.prefix,
            distribute,
            self.config.settings.launch.exclude_nodes.as_deref(),
        )?;
        self.dataset_id = found.dataset_id;
        self.checkpoint_id = found.checkpoint_id;
        self.restart = found.restart;
        // SCR_CURRENT, when it still applies in this allocation, chooses the restart below
        let named_current = self
            .config
            .settings
            .current
            .clone()
            .filter(|name| !self.named_current_applied(name));
        self.pass_over_superseded_cache(named_current.is_some());
        self.fetch_pending = self.restart.is_none() && self.config.settings.fetch.enabled;
        let restartable = self.restart.as_ref().map_or(0, |(id, _)| *id);
        if let Some(stranded) =
            self.prefix
                .stranded_beyond(restartable, &found.unrecovered, distribute)
        {
            say!("{stranded}");
        }
        for &d in &found.lost {
            self.job.debug(
                1,
                format_args!(
                    "dataset {d}: every node that wrote it runs this job and cannot rebuild \
                     it; what is left of it leaves the cache"
                ),
            );
            self.delete_cached(d);
        }
        self.flush_part().sweep_interrupted();
        if let Some(name) = named_current {
            self.apply_named_current(&name)?;
        }
        self.flush_on_restart()?;
        let mut started = vec![
            ("ranks", self.job.ranks.to_string()),
            ("nodes", self.job.nodes.to_string()),
        ];
        // the program, so a site's log can tell its applications apart across prefixes
        if let Some(app) = scr::layout::program_name() {
            started.push(("app", app));
        }
        // the launch scr-run started this run as, which its record of the launch names too
        if let Some(launch) = scr::event_log::launch_id_of_this_run() {
            started.push(("launch", launch));
        }
        self.log.event(kinds::START, &started);
        if let Some((id, name)) = self.restart.clone() {
            self.log_restart(id, name);
        }
        self.check_halt(false)?;
        Ok(())
    }

    /// The synchronous flush, with what it needs of this process's parts.
    fn flush_part(&self) -> Flush<'_> {
        flush_part!(self)
    }

    /// The recovery in cache, with what it needs of this process's parts.
    fn recovery(&mut self) -> Recovery<'_> {
        Recovery {
            job: &self.job,
            cache: &mut self.cache,
            redundancy: &self.redundancy,
        }
    }

    /// Publishes the background flushes every rank finished; waits for those up to
    /// `wait_for`. Collective.
    fn poll_async_flushes(&mut self, wait_for: Option<u64>) -> Result<()> {
        let flush = flush_part!(self);
        self.flushes.poll(&flush, wait_for)
    }

    /// Flushes dataset `id` now, or in the background where SCR_FLUSH_ASYNC asks for it.
    /// Collective.
    fn flush_dataset(&mut self, id: u64, in_background: bool) -> Result<()> {
        let flush = flush_part!(self);
        if in_background {
            self.flushes.start(&flush, id)
        } else {
            flush.flush(id)
        }
    }

    /// Deletes a dataset from this rank's cache (and tells the flush file); a restart of it
    /// is no longer offered.
    fn delete_cached(&mut self, id: u64) {
        self.cache.delete(&self.prefix, id);
        if self.restart.as_ref().is_some_and(|(r, _)| *r == id) {
            self.restart = None;
            self.reshaped = None;
        }
        if self.older_in_cache.as_ref().is_some_and(|(r, _)| *r == id) {
            self.older_in_cache = None;
        }
    }

    /// The newest checkpoint complete in every rank's cache, if the flush file says it is
    /// not on the prefix (the same answer on every rank). A checkpoint whose files this
    /// rank no longer has (a lost cache SCR_Init could not rebuild it from) is none: there
    /// is nothing of it to flush or to keep. Collective.
    fn newest_unflushed_checkpoint(&self) -> Option<u64> {
        // the newest that every rank holds whole: the ranks' filemaps need not list the same
        // datasets (a node that lost its control directory), so each candidate any rank
        // lists is asked of all, newest first
        let mine: Vec<u64> = self
            .cache
            .datasets_where(|x| x.is_checkpoint() && x.is_complete())
            .collect();
        let mut candidates = self.job.union(&mine);
        candidates.sort_unstable();
        let newest = candidates.into_iter().rev().find(|&d| {
            self.job
                .all(mine.contains(&d) && self.cache.verify_own(d, false))
        })?;
        self.prefix.needs_flush(&self.job, newest).then_some(newest)
    }

    /// Flushes the newest complete checkpoint when the flush file says it is not on the
    /// prefix. Collective.
    fn flush_latest_if_needed(&mut self) -> Result<()> {
        // a background flush finishes first; what it covers needs no second copy
        self.poll_async_flushes(Some(u64::MAX))?;
        // SCR flushes at the end only when flushing is on at all (SCR_FLUSH > 0); with
        // SCR_FLUSH=0 checkpoints stay in cache for the drain or the next run
        if self.config.settings.flush.every == 0 {
            return Ok(());
        }
        match self.newest_unflushed_checkpoint() {
            Some(latest) => self.flush_part().flush(latest),
            None => Ok(()),
        }
    }

    /// SCR_FLUSH_ON_RESTART (and SCR_GLOBAL_RESTART): the checkpoint restarted from cache
    /// is flushed in SCR_Init if the prefix lacks it. With SCR_GLOBAL_RESTART the restart
    /// then reads the prefix's files (an application restarting on another number of
    /// processes needs the global file system): the cached copy steps aside for a fetch in
    /// place when the application asks for its restart. Collective.
    fn flush_on_restart(&mut self) -> Result<()> {
        if !self.config.settings.flush.on_restart {
            return Ok(());
        }
        let Some((id, _)) = self.restart.clone() else {
            return Ok(());
        };
        if self.prefix.needs_flush(&self.job, id) {
            self.flush_part().flush(id)?;
        }
        if self.config.settings.fetch.global_restart {
            self.restart = None;
            self.reshaped = None;
            self.fetch_pending = true;
        }
        Ok(())
    }

    /// A dataset's name for messages (`scr.dataset.<id>` when this rank does not know it).
    fn dataset_name(&self, id: u64) -> String {
        self.cache.dataset_name(id)
    }

    /// The parameters this job runs with.
    pub fn params(&self) -> &Params {
        &self.config.params
    }

    pub fn rank(&self) -> u64 {
        self.job.rank
    }

    /// Starts unlinking the cache files this call discarded: every SCR call ends with it.
    pub fn release_discards(&mut self) {
        self.cache.release_discards();
    }

    /// `SCR_Finalize`: records that the run finished, flushes the newest checkpoint if it is
    /// only in cache, and frees the communicators.
    pub fn finalize(mut self) -> Result<()> {
        if self.phase != Phase::Idle {
            say!(
                "SCR: WARNING: SCR_Finalize called with an output or restart still open; it is discarded"
            );
            self.phase = Phase::Idle;
        }
        self.fetch_pending = false;
        self.flush_latest_if_needed()?;
        self.prefix.note("that SCR_Finalize was called", |prefix| {
            HaltFile::change(&layout::halt_file(prefix), |halt| {
                // a halt the user asked for (`scr halt`) stands until they remove it, as the
                // guide's halt.rst has it: a run ending says nothing over it
                let users_halt = halt.exit_reason().is_some_and(|r| {
                    !r.is_empty() && !scr::halt::reasons::written_by_the_library(r)
                });
                if !users_halt {
                    halt.set_exit_reason(scr::halt::reasons::FINALIZE_CALLED);
                }
                Ok(())
            })
        });
        self.cache.wait_for_discards();
        self.job.barrier();
        self.log.event(kinds::END, &[]);
        Ok(())
    }
}
