//! The library state of one process (`Scr`) and its life: SCR_Init (configuration read once
//! on rank 0, node grouping, directories, the filemaps found on the node, the restart
//! chosen) and SCR_Finalize. The rest lives with SCR's components, as SCR 3 names them:
//! `descriptors` (checkpoint descriptors and redundancy sets), `output` (checkpoints and
//! outputs), `cache` (the cache manager), `redundancy`, `flush` and `async_flush`, `fetch`,
//! `rebuild` (restart from cache) and `set_rebuild` (lost members of XOR and RS sets), `restart` (routing and the restart phase), `halt`, and
//! `manage` (SCR_Current, SCR_Drop, SCR_Delete, purges).

use crate::comm;
use crate::event_log;
use scr::event_log::kinds;

mod async_flush;
mod cache;
mod descriptors;
mod fault;
mod fetch;
mod flush;
mod halt;
mod manage;
mod messages;
mod node_cache;
mod output;
mod rebuild;
mod redundancy;
mod restart;
mod set_rebuild;

use cache::{Discards, TRASH_DIR, forget_cached};
use descriptors::{CkptDesc, NodePlace};
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use node_cache::{NodeFilemaps, agree_on_foreign_caches, foreign_cache, load_filemaps};
use scr::container;
use scr::dataset::{Dataset, Origin as DatasetOrigin};
use scr::filemap::{Filemap, MasterFilemap};
use scr::flush::FlushTarget;
use scr::flush::{FlushFile, Location};
use scr::halt::HaltFile;
use scr::hash::Hash;
use scr::index::IndexFile;
use scr::io::{self, LockedHashFile, SHARED_FILE};
use scr::layout::Node;
use scr::meta::{FileType, Meta};
use scr::nodes::NodesFile;
use scr::params::{Params, Settings};
use scr::prefix::{update_flush_file, update_index};
use scr::rank2file::{self, Delivery, FileRecord, RankFiles, TreeTask};
use scr::reddesc::{RedDesc, Scheme};
use scr::redset::RedundancySets;
use scr::summary::Summary;
use scr::{Error, HashView, Result, layout, safe_fs};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// The filemap tag on a partner's copy, naming the node of the rank the files belong to.
const PARTNER_TAG: &str = "PARTNER";

/// `SCR_FLAG_CHECKPOINT`.
pub const FLAG_CHECKPOINT: i32 = 1;
/// `SCR_FLAG_OUTPUT`.
pub const FLAG_OUTPUT: i32 = 2;

/// A call refused by SCR's rules, or a problem this rank found in what it was given.
fn failure(what: impl Into<String>) -> Error {
    Error::refused(what)
}

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

/// Where rank 0 found a dataset's file lists: a whole map (SCR 1.1-8 summaries embed it), or
/// a rank2file tree to scatter.
enum FileList {
    Embedded(RankFiles),
    Tree(TreeTask),
}

/// One process's SCR state: where it runs, what SCR_Init read, the cache manager's state,
/// and where the application is in its checkpoints.
pub struct Scr {
    world: SimpleCommunicator,
    /// The ranks on this node, and the ranks with this rank's place on their nodes (the
    /// node masters' one orders nodes for container offsets).
    node_comm: SimpleCommunicator,
    across_comm: SimpleCommunicator,
    /// This process's node: its name, and whether it shares this machine with others.
    node: Node,
    rank: u64,
    ranks: u64,
    /// How many nodes this run has.
    nodes: u64,
    /// Each descriptor's redundancy sets, and the communicator of this rank's set (made
    /// when first needed: creating it is collective).
    sets: Vec<RedundancySets>,
    set_comms: Vec<Option<SimpleCommunicator>>,
    config: Config,
    cache: CacheState,
    dataset_id: u64,
    checkpoint_id: u64,
    phase: Phase,
    /// Cached dataset a restart may load (id, name).
    restart: Option<(u64, String)>,
    /// Nothing in cache could be restarted from and SCR_FETCH is on: the prefix's newest
    /// checkpoint is fetched when the application asks for a restart (SCR_Have_restart,
    /// SCR_Start_restart, SCR_Current), not in SCR_Init, so a run that never restarts, or
    /// picks an older checkpoint, copies nothing it does not read.
    fetch_pending: bool,
    /// When checkpoints were asked for, started and completed (SCR_Need_checkpoint's rules).
    schedule: scr::schedule::CheckpointSchedule,
    /// SCR_LOG_ENABLE's event log (writes on rank 0 only).
    log: crate::event_log::EventLog,
    /// Flushes running in the background, oldest first.
    async_flushes: Vec<async_flush::AsyncFlush>,
}

/// What SCR_Init read and decided once for the whole run.
struct Config {
    params: Params,
    prefix: PathBuf,
    /// Checkpoint descriptors, and how a store base becomes this node's cache directory.
    descriptors: Vec<CkptDesc>,
    user: String,
    jobid: String,
    /// The parameters as typed values, read once.
    settings: Settings,
}

/// The cache manager's state: this rank's filemap and what its node holds for others.
struct CacheState {
    filemap_path: PathBuf,
    filemap: Filemap,
    /// Node master only: cached files on this node of ranks that now run elsewhere, and
    /// partners' copies (a file never exists in cache without a filemap entry).
    held: Option<(PathBuf, Filemap)>,
    /// Datasets whose files moved or were rebuilt in Init: redundancy is applied anew.
    reprotect: Vec<u64>,
    /// A dataset kept past SCR_CACHE_SIZE until the open checkpoint completes.
    deferred_eviction: Option<u64>,
    discards: Discards,
}

/// Says what deleting datasets from the prefix did (rank 0 calls it): each deleted, each
/// that stays and why, and what else the user should know. `why` is the parameter that
/// asked for it.
fn say_deletions(done: &scr::prefix::Deletions, why: &str) {
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

/// Lexically normalises an absolute path (`a/./b/../c` → `a/c`) without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where this node's directories of a job go.
struct NodeDirs<'a> {
    user: &'a str,
    jobid: &'a str,
    node: &'a Node,
}

impl NodeDirs<'_> {
    /// The job's directory under a control or cache base (`param` names where the base
    /// came from, for the error).
    fn under(&self, base: &str, param: &str) -> Result<PathBuf> {
        let base = layout::base_dir(base, param)?;
        self.node.job_dir(base, self.user, self.jobid)
    }

    /// Creates this node's control directory and each descriptor's cache directory (the
    /// node master empties the trash a previous run left). A node that cannot have them (a
    /// name refused, a directory someone else controls) fails SCR_Init on every rank alike.
    /// Returns the control directory.
    fn prepare(
        &self,
        world: &SimpleCommunicator,
        cntl_base: &str,
        descriptors: &[CkptDesc],
        local_rank: u64,
    ) -> Result<PathBuf> {
        let dirs = (|| {
            let cntl_dir = self.under(cntl_base, "SCR_CNTL_BASE")?;
            safe_fs::create_dirs_in(Path::new(cntl_base), &cntl_dir, 0o700)?;
            for d in descriptors {
                let store = self.under(&d.store, "SCR_CACHE_BASE (or a CKPT line's STORE)")?;
                safe_fs::create_dirs_in(Path::new(&d.store), &store, 0o700)?;
                if local_rank == 0 {
                    // files a previous run discarded but did not get to delete
                    let _ = std::fs::remove_dir_all(store.join(TRASH_DIR));
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
}

/// Rank 0 prepares the prefix (its `.scr` directory, the application's configuration);
/// its failure fails SCR_Init on every rank.
fn prepare_prefix(world: &SimpleCommunicator, prefix: &Path) -> Result<()> {
    let prepared = if world.rank() == 0 {
        safe_fs::check_prefix_mode(prefix)
            .and_then(|()| {
                safe_fs::create_dirs_in(prefix, &layout::prefix_hidden_dir(prefix), 0o755)
            })
            .and_then(|()| crate::config_api::keep(prefix))
    } else {
        Ok(())
    };
    comm::agree_root(
        world,
        prepared,
        &format!("rank 0 could not prepare the prefix {}", prefix.display()),
    )
}

/// Rank 0 records how many nodes the run has in the prefix's nodes file; its failure
/// fails SCR_Init on every rank.
fn write_nodes_file(world: &SimpleCommunicator, prefix: &Path, nodes: u64) -> Result<()> {
    let written = if world.rank() == 0 {
        NodesFile::with_nodes(nodes).write(&layout::nodes_file(prefix))
    } else {
        Ok(())
    };
    comm::agree_root(
        world,
        written,
        "rank 0 could not write the nodes file on the prefix",
    )
}

/// The ranks grouped by node.
struct Nodes {
    /// The ranks on this node.
    node: SimpleCommunicator,
    /// The ranks with this rank's place on their nodes.
    across: SimpleCommunicator,
    local_rank: u64,
    /// How many nodes the job has.
    nodes: u64,
}

/// Groups the ranks by node name (`name` is this rank's), in world order. Collective; no
/// rank learns the other nodes' names.
fn group_by_node(world: &SimpleCommunicator, name: &str) -> Nodes {
    let node = comm::split_by_name(world, name);
    let local_rank = node.rank() as u64;
    let across = world
        .split_by_color(Color::with_value(local_rank as i32))
        .expect("a color was given");
    let nodes = comm::sum_u64(world, u64::from(local_rank == 0));
    Nodes {
        node,
        across,
        local_rank,
        nodes,
    }
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
            if Settings::from_params(&p).debug >= 1 {
                for (setting, origin) in p.effective() {
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
            return Err(failure(
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
        let this_node = Node::of_process(|k| std::env::var(k).ok());
        let name = this_node.name().to_string();
        let Nodes {
            node,
            across,
            local_rank,
            nodes,
        } = group_by_node(&world, &name);

        let user = layout::user_name();
        let places = &settings.places;
        let jobid = layout::job_id(places.job_id.as_deref(), |k| std::env::var(k).ok())
            .unwrap_or_else(|| "defjobid".into());
        let prefix = layout::prefix_dir(None, places.prefix.as_deref())?;
        let mut descriptors = CkptDesc::from_params(&params, &settings.redundancy)?;
        let node_dirs = NodeDirs {
            user: &user,
            jobid: &jobid,
            node: &this_node,
        };
        let cntl_dir = node_dirs.prepare(&world, &places.cntl_base, &descriptors, local_rank)?;
        let place = NodePlace {
            name: &name,
            local_rank,
            across: &across,
        };
        let (sets, set_comms): (Vec<RedundancySets>, Vec<Option<SimpleCommunicator>>) = descriptors
            .iter_mut()
            .map(|d| d.select_sets(&world, &place, &params))
            .unzip();
        prepare_prefix(&world, &prefix)?;
        // another program's cache must be judged before this job's filemaps replace it
        let foreign = foreign_cache(&cntl_dir, &prefix);
        let discard_foreign =
            agree_on_foreign_caches(&world, local_rank, &cntl_dir, &prefix, foreign.as_ref())?;
        comm::relaxed_barrier(&node);

        // every rank learns whether every node could write its filemaps (a full control
        // directory on one node), so none goes on into a collective the others left
        let loaded = comm::agree(
            &world,
            load_filemaps(&node, rank, local_rank, &cntl_dir, &prefix),
            "another node could not write its filemaps (its ranks print why: a full or failing control directory?)",
        );
        let NodeFilemaps {
            filemap_path,
            filemap,
            held,
            reprotect,
        } = loaded?;
        write_nodes_file(&world, &prefix, nodes)?;
        let log = crate::event_log::EventLog::open(&settings.log, &prefix, rank, &user, &jobid)?;
        let mut scr = Scr {
            world,
            node_comm: node,
            across_comm: across,
            node: this_node.clone(),
            rank,
            ranks,
            nodes,
            set_comms,
            sets,
            config: Config {
                settings,
                params,
                prefix,
                descriptors,
                user,
                jobid,
            },
            cache: CacheState {
                filemap_path,
                filemap,
                held,
                reprotect,
                deferred_eviction: None,
                discards: Discards::default(),
            },
            dataset_id: 0,
            checkpoint_id: 0,
            phase: Phase::Idle,
            restart: None,
            fetch_pending: false,
            schedule: scr::schedule::CheckpointSchedule::new(Instant::now()),
            log,
            async_flushes: Vec::new(),
        };
        if discard_foreign {
            scr.discard_whole_cache();
        }
        scr.begin()?;
        Ok(scr)
    }

    /// The run's start once the state is in place: purges the configuration asks for,
    /// the restart chosen (rebuilt in cache where it must be, SCR_CURRENT's pick, flushed
    /// on restart), the start logged, and the halt conditions checked.
    fn begin(&mut self) -> Result<()> {
        self.debug(1, format_args!("NPROCS={}", self.ranks));
        self.debug(1, format_args!("NNODES={}", self.nodes));
        self.purge()?;
        self.restart_from_cache()?;
        self.sweep_interrupted_flushes();
        if let Some(name) = self.config.settings.current.clone() {
            self.set_current(&name)?;
        }
        self.flush_on_restart()?;
        self.log.event(
            kinds::START,
            &[
                ("ranks", self.ranks.to_string()),
                ("nodes", self.nodes.to_string()),
            ],
        );
        if let Some((id, name)) = self.restart.clone() {
            self.log_restart(id, name);
        }
        self.check_halt(false)?;
        Ok(())
    }

    /// Rank 0 records something on the prefix that only helps later (where a dataset is,
    /// when it was fetched or failed): a failure (a full or unreachable prefix) is a warning,
    /// never an error on rank 0 alone, which would leave the other ranks in the next
    /// collective call without it.
    pub(super) fn note_on_prefix(&self, what: &str, f: impl FnOnce() -> Result<()>) {
        if self.rank == 0
            && let Err(e) = f()
        {
            say!("SCR: WARNING: could not record {what} on the prefix: {e}");
        }
    }

    /// Rank 0 changes the prefix where the call's outcome depends on it (publishing a
    /// dataset, the application's own SCR_Drop or SCR_Delete): every rank returns the same
    /// result. Collective.
    pub(super) fn agreed_on_prefix(
        &self,
        what: &str,
        f: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let outcome = if self.rank == 0 { f() } else { Ok(()) };
        if let Err(e) = &outcome {
            say!("SCR: ERROR: {what}: {e}");
        }
        comm::agree_root(&self.world, outcome, &format!("{what} failed on rank 0"))
    }

    /// SCR_CRC_ON_COPY: whether each copy, and each restart from cache, checks every byte
    /// against its file's CRC32.
    pub(super) fn crc_on_copy(&self) -> bool {
        self.config.settings.crc.on_copy
    }

    /// An SCR_DEBUG message of `level` about the job, said once (by rank 0).
    pub(super) fn debug(&self, level: u64, text: std::fmt::Arguments) {
        if self.rank == 0 && self.config.settings.debug >= level {
            say!("SCR: {text}");
        }
    }

    /// An SCR_DEBUG message of `level` about this rank's own part, naming it.
    pub(super) fn debug_rank(&self, level: u64, text: std::fmt::Arguments) {
        if self.config.settings.debug >= level {
            say!("SCR: rank {}: {text}", self.rank);
        }
    }

    /// A transfer's cost as SCR_DEBUG shows it: seconds, files, bytes and bandwidth of the
    /// whole dataset (its descriptor's totals).
    pub(super) fn transfer_cost(&self, id: u64, secs: f64) -> String {
        let desc = self
            .cache
            .filemap
            .dataset(id, self.rank)
            .unwrap_or_default();
        let (files, bytes) = (desc.files().unwrap_or(0), desc.size().unwrap_or(0));
        let mbs = if secs > 0.0 {
            bytes as f64 / secs / 1e6
        } else {
            0.0
        };
        format!("{secs:.6} secs, {files} files, {bytes} bytes, {mbs:.3} MB/s")
    }

    /// A dataset's name for messages (`?` when this rank does not know it).
    pub(super) fn dataset_name(&self, id: u64) -> String {
        self.cache
            .filemap
            .dataset(id, self.rank)
            .and_then(|d| d.name().map(str::to_string))
            .unwrap_or_else(|| layout::dataset_dir_name(id))
    }

    /// The parameters this job runs with.
    pub fn params(&self) -> &Params {
        &self.config.params
    }

    pub fn rank(&self) -> u64 {
        self.rank
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
        self.note_on_prefix("that SCR_Finalize was called", || {
            HaltFile::update(
                &layout::halt_file(&self.config.prefix),
                SHARED_FILE,
                |halt| {
                    halt.set_exit_reason(scr::halt::reasons::FINALIZE_CALLED);
                    Ok(())
                },
            )
        });
        self.cache.discards.wait();
        comm::relaxed_barrier(&self.world);
        self.log.event(kinds::END, &[]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dot_and_dot_dot_without_the_disk() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/a/b/../../..")), Path::new("/"));
        assert_eq!(
            normalize(Path::new("/p/ckpt.1/x")),
            Path::new("/p/ckpt.1/x")
        );
    }
}
