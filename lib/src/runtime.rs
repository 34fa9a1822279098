//! The library state of one process and the SCR v1.2 flows over it: init, output and
//! checkpoint datasets cached with the SINGLE scheme, synchronous flush to the prefix,
//! restart from cache, finalize.

use crate::comm;
use crate::event_log;
use scr::event_log::kinds;

mod async_flush;
mod manage;
mod rebuild;
mod redundancy;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use scr::container;
use scr::dataset::{Dataset, Origin as DatasetOrigin};
use scr::filemap::{Filemap, MasterFilemap};
use scr::flush::{FlushFile, Location};
use scr::halt::HaltFile;
use scr::hash::Hash;
use scr::index::IndexFile;
use scr::io::{self, LockedHashFile, SHARED_FILE};
use scr::meta::{FileType, Meta};
use scr::nodes::NodesFile;
use scr::params::Params;
use scr::prefix::{update_flush_file, update_index};
use scr::rank2file::{self, Delivery, FileRecord, RankFiles, TreeTask};
use scr::reddesc::{RedDesc, Scheme};
use scr::redset::RedundancySets;
use scr::summary::Summary;
use scr::{Error, HashView, Result, layout};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

/// The filemap tag on a partner's copy, naming the node of the rank the files belong to.
const PARTNER_TAG: &str = "PARTNER";

/// `SCR_FLAG_CHECKPOINT`.
pub const FLAG_CHECKPOINT: i32 = 1;
/// `SCR_FLAG_OUTPUT`.
pub const FLAG_OUTPUT: i32 = 2;

fn failure(what: impl Into<String>) -> Error {
    Error::Config {
        origin: "SCR".into(),
        what: what.into(),
    }
}

/// A checkpoint descriptor: which store a checkpoint goes to, how often, and which
/// redundancy scheme protects it.
#[derive(Clone, Debug)]
struct CkptDesc {
    interval: u64,
    store: String,
    scheme: Scheme,
    set_size: u64,
    failures: u64,
    hop: u64,
    /// PARTNER: how many right neighbours hold a copy (SCR 3's REPLICAS).
    replicas: u64,
    /// The failure group sets span: NODE (the default), WORLD, or a name from GROUPS= lines.
    group: String,
}

impl CkptDesc {
    /// From `CKPT=` (and 1.1-8 `CKPTDESC=`) lines where they apply
    /// ([`Params::descriptor_lines_apply`]), else the one SCR implies from SCR_CACHE_BASE
    /// and SCR_COPY_TYPE; one enabled descriptor must have INTERVAL=1.
    fn from_params(params: &Params) -> Result<Vec<CkptDesc>> {
        let base = params.get("SCR_CACHE_BASE").unwrap_or("/tmp").to_string();
        let default_scheme = params
            .get("SCR_COPY_TYPE")
            .and_then(Scheme::parse)
            .unwrap_or(Scheme::Xor);
        let number = |text: Option<&str>, param: &str, fallback: u64| {
            text.and_then(|t| t.parse().ok())
                .or(params.count(param))
                .unwrap_or(fallback)
        };
        let mut out = Vec::new();
        let lines = params
            .descriptors_of("CKPT")
            .chain(params.descriptors_of("CKPTDESC"))
            .filter(|_| params.descriptor_lines_apply());
        for d in lines {
            if d.attr("ENABLED") == Some("0") {
                continue;
            }
            out.push(CkptDesc {
                interval: d.attr("INTERVAL").and_then(|i| i.parse().ok()).unwrap_or(1),
                store: d
                    .attr("STORE")
                    .or(d.attr("BASE"))
                    .unwrap_or(&base)
                    .to_string(),
                scheme: d
                    .attr("TYPE")
                    .and_then(Scheme::parse)
                    .unwrap_or(default_scheme),
                set_size: number(d.attr("SET_SIZE"), "SCR_SET_SIZE", 8),
                failures: number(d.attr("SET_FAILURES"), "SCR_SET_FAILURES", 2),
                hop: number(d.attr("HOP_DISTANCE"), "SCR_HOP_DISTANCE", 1).max(1),
                replicas: d
                    .attr("REPLICAS")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(1)
                    .max(1),
                group: d
                    .attr("GROUP")
                    .or(params.get("SCR_GROUP"))
                    .unwrap_or("NODE")
                    .to_ascii_uppercase(),
            });
        }
        if out.is_empty() {
            out.push(CkptDesc {
                interval: 1,
                store: base,
                scheme: default_scheme,
                set_size: number(None, "SCR_SET_SIZE", 8),
                failures: number(None, "SCR_SET_FAILURES", 2),
                hop: number(None, "SCR_HOP_DISTANCE", 1).max(1),
                replicas: 1,
                group: params
                    .get("SCR_GROUP")
                    .unwrap_or("NODE")
                    .to_ascii_uppercase(),
            });
        }
        if !out.iter().any(|d| d.interval == 1) {
            return Err(failure(
                "no enabled checkpoint descriptor has INTERVAL=1; every checkpoint needs one (add e.g. CKPT=0 INTERVAL=1 to the configuration)",
            ));
        }
        out.sort_by_key(|d| d.interval);
        Ok(out)
    }

    /// Each world rank's failure group under this descriptor: its node (NODE), one group
    /// for all (WORLD), or the value GROUPS= lines give its node for the group's name
    /// (`GROUPS=host1 POWER=pdu1`); a node no line names is a group of its own.
    fn failure_groups(&self, params: &Params, node_names: &[String]) -> Vec<String> {
        match self.group.as_str() {
            "NODE" => node_names.to_vec(),
            "WORLD" => vec!["WORLD".into(); node_names.len()],
            name => node_names
                .iter()
                .map(|node| {
                    params
                        .descriptors_of("GROUPS")
                        .filter(|d| d.name == *node)
                        .find_map(|d| {
                            d.attrs
                                .iter()
                                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                                .map(|(_, v)| format!("{name}={v}"))
                        })
                        .unwrap_or_else(|| format!("node {node}"))
                })
                .collect(),
        }
    }

    /// The redundancy sets of this descriptor over the failure groups of the ranks, whose
    /// nodes are `node_names` (one per world rank). A scheme the groups cannot satisfy
    /// falls back to SINGLE, and rank 0 says so (SCR 1.2 downgrades silently).
    fn select_sets(
        &mut self,
        params: &Params,
        node_names: &[String],
        warn: bool,
    ) -> RedundancySets {
        let scheme = self.scheme;
        let groups = self.failure_groups(params, node_names);
        match RedundancySets::select(scheme, &groups, self.set_size, self.failures) {
            Ok(sets) => {
                self.scheme = scheme;
                sets
            }
            Err(why) => {
                if warn {
                    eprintln!(
                        "SCR: WARNING: redundancy is disabled for checkpoints in {}: {why}. \
                         They are cached with SINGLE: losing a node loses them until they are flushed.",
                        self.store
                    );
                }
                self.scheme = Scheme::Single;
                RedundancySets::select(Scheme::Single, node_names, 1, 0)
                    .expect("SINGLE always fits")
            }
        }
    }
}

/// What the application is doing between SCR calls.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Between Start_output and Complete_output.
    Output {
        id: u64,
        flags: i32,
    },
    /// Between Start_restart and Complete_restart.
    Restart {
        id: u64,
    },
}

/// A file to flush: its cache path, its prefix path, its name relative to the prefix.
struct FlushTarget {
    src: PathBuf,
    dst: PathBuf,
    orig: String,
}

/// Where rank 0 found a dataset's file lists: a whole map (SCR 1.1-8 summaries embed it), or
/// a rank2file tree to scatter.
enum FileList {
    Embedded(RankFiles),
    Tree(TreeTask),
}

/// One process's SCR state.
pub struct Scr {
    world: SimpleCommunicator,
    /// The ranks on this node, and the ranks with this rank's place on their nodes (the
    /// node masters' one orders nodes for container offsets).
    node_comm: SimpleCommunicator,
    across_comm: SimpleCommunicator,
    node_name: String,
    rank: u64,
    ranks: u64,
    params: Params,
    prefix: PathBuf,
    /// Checkpoint descriptors, and how a store base becomes this node's cache directory.
    descriptors: Vec<CkptDesc>,
    /// Each descriptor's redundancy sets, and the communicator of this rank's set (made
    /// when first needed: creating it is collective).
    sets: Vec<RedundancySets>,
    set_comms: Vec<Option<SimpleCommunicator>>,
    /// This node's name when it is an emulated one (its directories are kept apart).
    emulated_node: Option<String>,
    filemap_path: PathBuf,
    filemap: Filemap,
    /// Node master only: cached files on this node of ranks that now run elsewhere, and
    /// partners' copies (a file never exists in cache without a filemap entry).
    held: Option<(PathBuf, Filemap)>,
    /// Datasets whose files moved or were rebuilt in Init: redundancy is applied anew.
    reprotect: Vec<u64>,
    user: String,
    jobid: String,
    dataset_id: u64,
    checkpoint_id: u64,
    phase: Phase,
    /// Cached dataset a restart may load (id, name).
    restart: Option<(u64, String)>,
    need_calls: u64,
    last_checkpoint_end: Instant,
    /// When the open checkpoint started, and the total seconds and count of checkpoints
    /// so far (for SCR_CHECKPOINT_OVERHEAD).
    checkpoint_started: Option<Instant>,
    /// A dataset kept past SCR_CACHE_SIZE until the open checkpoint completes.
    deferred_eviction: Option<u64>,
    checkpoint_cost: (f64, u64),
    /// SCR_LOG_ENABLE's event log (writes on rank 0 only).
    log: crate::event_log::EventLog,
    discards: Discards,
    /// Flushes running in the background, oldest first.
    async_flushes: Vec<async_flush::AsyncFlush>,
    /// How many nodes this run has.
    nodes: u64,
}

/// This process's node: `SCR_NODE_NAME` if set, else the name MPICH's hydra gave the
/// host (`mpiexec -launcher fork -hosts n1,n2 …` emulates nodes that way), else the host
/// name. Returns the name and whether it is an emulated node (differs from the host name).
fn node_name() -> (String, bool) {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let chosen = std::env::var("SCR_NODE_NAME")
        .ok()
        .or_else(|| std::env::var("MPIR_CVAR_CH3_INTERFACE_HOSTNAME").ok())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host.clone());
    let emulated = chosen != host;
    (chosen, emulated)
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

/// Copies `src` to `dst` with an fsync, returning the CRC32 when asked for. Always through
/// a mapping of the source: the kernel's file-to-file copy (copy_file_range) measured 3-7x
/// slower than that on tmpfs caches (benches/runtime.sh), and the CRC costs little.
fn copy_file(
    src: &Path,
    dst: &Path,
    buf_size: usize,
    want_crc: bool,
) -> Result<(u64, Option<u32>)> {
    let (total, crc) = io::copy_file_with_crc(src, dst, buf_size, &mut |_| {})?;
    Ok((total, want_crc.then_some(crc)))
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

        // rank 0 reads the configuration; every rank uses what it read
        let loaded = if rank == 0 {
            crate::config_api::sources().and_then(|sources| Params::load(&sources))
        } else {
            Ok(Params::default())
        };
        let ok = comm::all_true(&world, loaded.is_ok());
        let params = match loaded {
            Ok(p) if ok => {
                if rank == 0 {
                    for w in &p.warnings {
                        eprintln!("SCR: WARNING: {w}");
                    }
                }
                Params::from_hash(&comm::bcast_hash(&world, 0, &p.to_hash()))
            }
            Ok(_) => return Err(failure("rank 0 could not read the SCR configuration")),
            Err(e) => return Err(e),
        };
        if !params.bool("SCR_ENABLE") {
            return Err(failure("SCR is disabled (SCR_ENABLE=0)"));
        }
        // group ranks by node: the index of the first rank with the same node name
        let (name, emulated) = node_name();
        let names = comm::allgather_bytes(&world, name.as_bytes());
        let color = names
            .iter()
            .position(|n| n == name.as_bytes())
            .expect("own name present") as i32;
        let node = world
            .split_by_color(Color::with_value(color))
            .expect("a color was given");
        let local_rank = node.rank() as u64;
        let across = world
            .split_by_color(Color::with_value(local_rank as i32))
            .expect("a color was given");
        let node_names: Vec<String> = names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect();
        let nodes = names
            .iter()
            .enumerate()
            .filter(|(i, n)| names.iter().position(|m| m == *n) == Some(*i))
            .count() as u64;

        let user = layout::user_name().unwrap_or_else(|| "unknown".into());
        let jobid = layout::job_id(params.get("SCR_JOB_ID"), |k| std::env::var(k).ok())
            .unwrap_or_else(|| "defjobid".into());
        let prefix = params
            .get("SCR_PREFIX")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .ok_or_else(|| failure("SCR_PREFIX must be set (or the working directory readable)"))?;
        let emulated_node = emulated.then(|| name.clone());
        let node_part = |base: &str| {
            layout::node_job_dir(Path::new(base), &user, &jobid, emulated_node.as_deref())
        };
        let cntl_dir = node_part(params.get("SCR_CNTL_BASE").unwrap_or("/tmp"));
        io::create_dirs(&cntl_dir, 0o700)?;
        let mut descriptors = CkptDesc::from_params(&params)?;
        for d in &descriptors {
            let store = node_part(&d.store);
            io::create_dirs(&store, 0o700)?;
            if local_rank == 0 {
                // files a previous run discarded but did not get to delete
                let _ = std::fs::remove_dir_all(store.join(TRASH_DIR));
            }
        }
        let sets: Vec<RedundancySets> = descriptors
            .iter_mut()
            .map(|d| d.select_sets(&params, &node_names, rank == 0))
            .collect();
        // rank 0 prepares the prefix; its failure fails SCR_Init on every rank
        let prepared = if rank == 0 {
            io::create_dirs(&layout::prefix_hidden_dir(&prefix), 0o755)
                .and_then(|()| crate::config_api::keep(&prefix))
        } else {
            Ok(())
        };
        if let Err(e) = &prepared {
            eprintln!("SCR: ERROR: {e}");
        }
        if !comm::all_true(&world, prepared.is_ok()) {
            return Err(failure(format!(
                "rank 0 could not prepare the prefix {}",
                prefix.display()
            )));
        }
        node.barrier();

        // this rank's filemap: entries for this world rank from every filemap on the node
        let master_path = layout::master_filemap(&cntl_dir);
        let mut on_node = Filemap::new(); // everything this node's filemaps record
        if let Ok(master) = MasterFilemap::read(&master_path) {
            for path in master.filemaps() {
                if let Ok(map) = Filemap::read(Path::new(path)) {
                    on_node.merge_preferring_untagged(&map, PARTNER_TAG);
                }
            }
        }
        let mut filemap = on_node.extract_rank(rank);
        // a partner's copy of this rank's files found where the rank now runs becomes its own
        let mut reprotect = Vec::new();
        for d in filemap.datasets() {
            if filemap.tag(d, rank, PARTNER_TAG).is_some() {
                filemap.unset_tag(d, rank, PARTNER_TAG);
                reprotect.push(d);
            }
        }
        let here = comm::allgather_bytes(&node, &rank.to_le_bytes());
        node.barrier();
        let filemap_path = layout::rank_filemap(&cntl_dir, local_rank);
        filemap.write(&filemap_path)?;
        let mut local_paths =
            comm::allgather_bytes(&node, filemap_path.to_string_lossy().as_bytes());
        let mut held = None;
        if local_rank == 0 {
            for r in here
                .iter()
                .filter_map(|b| Some(u64::from_le_bytes(b.as_slice().try_into().ok()?)))
            {
                on_node.remove_rank(r);
            }
            let held_path = cntl_dir.join("filemap_held.scrinfo");
            if on_node.ranks().is_empty() {
                io::remove_durably(&held_path)?;
            } else {
                on_node.write(&held_path)?;
                local_paths.push(held_path.to_string_lossy().into_owned().into_bytes());
            }
            let mut master = MasterFilemap::new();
            for p in local_paths.drain(..) {
                master.add(&String::from_utf8_lossy(&p));
            }
            master.write(&master_path)?;
            held = Some((held_path, on_node));
        }
        if rank == 0 {
            NodesFile::with_nodes(nodes).write(&layout::nodes_file(&prefix))?;
        }

        let log = crate::event_log::EventLog::open(&params, &prefix, rank, &user, &jobid)?;
        let mut scr = Scr {
            world,
            node_comm: node,
            across_comm: across,
            node_name: name.clone(),
            rank,
            ranks,
            params,
            prefix,
            set_comms: descriptors.iter().map(|_| None).collect(),
            descriptors,
            sets,
            emulated_node,
            filemap_path,
            filemap,
            held,
            reprotect,
            user,
            jobid,
            dataset_id: 0,
            checkpoint_id: 0,
            phase: Phase::Idle,
            restart: None,
            need_calls: 0,
            last_checkpoint_end: Instant::now(),
            checkpoint_started: None,
            deferred_eviction: None,
            checkpoint_cost: (0.0, 0),
            log,
            discards: Discards::default(),
            async_flushes: Vec::new(),
            nodes,
        };
        scr.purge()?;
        scr.restart_from_cache()?;
        if let Some(name) = scr.params.get("SCR_CURRENT").map(str::to_string) {
            scr.set_current(&name)?;
        }
        scr.log.event(
            kinds::START,
            &[
                ("ranks", ranks.to_string()),
                ("nodes", scr.nodes.to_string()),
            ],
        );
        if let Some((id, name)) = scr.restart.clone() {
            scr.log
                .event(kinds::RESTART, &[("name", name), ("dset", id.to_string())]);
        }
        scr.check_halt(false)?;
        Ok(scr)
    }

    /// The fetch loop: copies the newest complete, not-failed dataset from the prefix into
    /// cache (starting at a user-adjusted `scr.current`, else the index's CURRENT, and only
    /// below `below` when given). A copy that fails (missing file, size or CRC mismatch) is
    /// marked FAILED in the index and the next older one is tried.
    fn fetch(&mut self, below: Option<u64>) -> Result<()> {
        let mut failed: Vec<String> = Vec::new();
        loop {
            // rank 0 picks the candidate and reads its file list
            let mut pick = Hash::new();
            let mut root = None;
            if self.rank == 0
                && let Some((id, name, desc, files)) = self.next_fetch_candidate(below, &failed)
            {
                pick.set_value("ID", id);
                pick.set_value("NAME", &name);
                pick.set("DSET", desc.into_hash());
                match files {
                    // a 1.1-8 summary holds the whole (small) map: it goes to every rank
                    FileList::Embedded(map) => {
                        pick.set("MAP", rank2file::leaf_hash(&map));
                    }
                    FileList::Tree(task) => root = Some(task),
                }
            }
            let pick = comm::bcast_hash(&self.world, 0, &pick);
            let (Some(id), Some(name)) = (
                pick.parsed::<u64>("ID").ok().flatten(),
                pick.first_value("NAME").map(str::to_string),
            ) else {
                return Ok(()); // nothing (more) to fetch: a clean start
            };
            let desc = Dataset::wrap(pick.get("DSET").cloned().unwrap_or_default());
            let fetch_started = Instant::now();
            let mine = match pick.get("MAP") {
                Some(m) => {
                    let mut map = RankFiles::new();
                    rank2file::parse_leaf(m, &mut map)
                        .map_err(|e| failure(format!("{name}: file list: {e}")))
                        .map(|()| map.remove(&self.rank).unwrap_or_default())
                }
                None => self.scatter_rank2file(root),
            };
            let result = match mine {
                Ok(mine) => self.fetch_files(id, &desc, &mine),
                Err(e) => Err(failure(format!("{name}: file list: {e}"))),
            };
            if let Err(e) = &result {
                eprintln!("SCR: rank {}: fetch of {name} failed: {e}", self.rank);
            }
            if comm::all_true(&self.world, result.is_ok()) {
                self.log_transfer(kinds::FETCH, id, fetch_started);
                if self.rank == 0 {
                    update_index(&self.prefix, |idx| {
                        idx.mark_fetched(id, &name, chrono::Local::now());
                        Ok(())
                    })?;
                    update_flush_file(&self.prefix, |f| {
                        f.describe(id, &name, desc.checkpoint_id(), None);
                        f.set_location(id, Location::Cache);
                        f.set_location(id, Location::Pfs);
                    })?;
                }
                self.checkpoint_id = self.checkpoint_id.max(desc.checkpoint_id().unwrap_or(id));
                self.restart = Some((id, name));
                return Ok(());
            }
            self.log.event(
                kinds::FETCH_FAILED,
                &[("name", name.clone()), ("dset", id.to_string())],
            );
            if self.rank == 0 {
                update_index(&self.prefix, |idx| {
                    idx.mark_failed(id, &name, chrono::Local::now());
                    Ok(())
                })?;
            }
            self.delete_cached(id)?;
            failed.push(name);
        }
    }

    /// The rank2file tree scattered as the seed describes: rank 0 reads the root and sends
    /// each reader its part, readers read theirs (at most 1 MB each step) and pass on, until
    /// every rank holds its own file list. Collective; `root` is rank 0's.
    fn scatter_rank2file(&self, root: Option<TreeTask>) -> Result<Vec<FileRecord>> {
        let mut tasks: Vec<TreeTask> = root.into_iter().collect();
        let mut mine: Option<Vec<FileRecord>> = None;
        let mut problem: Option<String> = None;
        loop {
            let mut outgoing: BTreeMap<u64, Hash> = BTreeMap::new();
            for task in tasks.drain(..) {
                let deliveries = match rank2file::scatter_step(&self.prefix, &task) {
                    Ok(d) => d,
                    Err(e) => {
                        problem = Some(e.to_string());
                        continue;
                    }
                };
                for d in deliveries {
                    let to = match &d {
                        Delivery::Read { reader, .. } => *reader,
                        Delivery::Files { rank, .. } => *rank,
                    };
                    if to >= self.ranks {
                        problem = Some(format!(
                            "{}: names rank {to}, this job has {}",
                            task.file, self.ranks
                        ));
                        continue;
                    }
                    let msg = outgoing.entry(to).or_default();
                    match d {
                        Delivery::Read { task, .. } => {
                            let n = msg.get("TASK").map_or(0, |t| t.iter().count());
                            let t = msg.set_kv("TASK", n);
                            t.set_value("FILE", &task.file);
                            t.set_value("OFFSET", task.offset);
                            t.set_value("LEVEL", task.parent_level);
                        }
                        Delivery::Files { rank, files } => {
                            msg.set("MINE", rank2file::leaf_hash([(&rank, &files)]));
                        }
                    }
                }
            }
            if comm::sum_u64(&self.world, outgoing.len() as u64) == 0 {
                break;
            }
            let packed = outgoing.into_iter().map(|(r, h)| (r, h.pack())).collect();
            for bytes in comm::exchange(&self.world, &packed) {
                let h =
                    Hash::unpack(&bytes).map_err(|e| failure(format!("rank2file message: {e}")))?;
                for (_, t) in h.get("TASK").into_iter().flat_map(Hash::iter) {
                    tasks.push(TreeTask {
                        file: t.first_value("FILE").unwrap_or_default().to_string(),
                        offset: t.parsed("OFFSET").ok().flatten().unwrap_or(0),
                        parent_level: t.parsed("LEVEL").ok().flatten().unwrap_or(0),
                    });
                }
                if let Some(leaf) = h.get("MINE") {
                    let mut map = RankFiles::new();
                    match rank2file::parse_leaf(leaf, &mut map) {
                        Ok(()) => mine = map.remove(&self.rank),
                        Err(e) => problem = Some(e),
                    }
                }
            }
        }
        if mine.is_none() && problem.is_none() {
            problem = Some(format!(
                "the rank2file map lists nothing for rank {}",
                self.rank
            ));
        }
        let everywhere = comm::all_true(&self.world, problem.is_none());
        match (problem, mine) {
            (Some(p), _) => Err(failure(p)),
            (None, _) if !everywhere => Err(failure("another rank could not read its file list")),
            (None, mine) => Ok(mine.unwrap_or_default()),
        }
    }

    /// Rank 0: the next dataset to try, with its descriptor and where its file lists are.
    fn next_fetch_candidate(
        &self,
        below: Option<u64>,
        failed: &[String],
    ) -> Option<(u64, String, Dataset, FileList)> {
        let index = IndexFile::read(&layout::index_file(&self.prefix)).ok()?;
        let link = std::fs::read_link(layout::current_link(&self.prefix)).ok();
        let start = link
            .as_ref()
            .and_then(|l| l.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| index.id_of(n).is_some());
        for entry in index.restart_candidates(start.as_deref()) {
            if below.is_some_and(|b| entry.id >= b) || failed.contains(&entry.name) {
                continue;
            }
            let loaded = (|| -> Result<(Dataset, FileList)> {
                let summary = Summary::read(&layout::summary_file(&self.prefix, entry.id))?;
                if !summary.is_complete() {
                    return Err(failure("summary says incomplete"));
                }
                let (files, written_by) = match summary.embedded_rank2file() {
                    Some(map) => {
                        let n = map.len() as u64;
                        if map.keys().any(|&r| r >= self.ranks) {
                            return Err(failure("its map names ranks this job does not have"));
                        }
                        (FileList::Embedded(map), n)
                    }
                    None => {
                        let root = TreeTask::root(&layout::dataset_meta_rel(entry.id));
                        let n = rank2file::tree_ranks(&self.prefix, &root)?;
                        (FileList::Tree(root), n)
                    }
                };
                if written_by != self.ranks {
                    return Err(failure(format!(
                        "written by {written_by} ranks, this job has {}",
                        self.ranks
                    )));
                }
                let desc = summary
                    .dataset()
                    .or_else(|| index.dataset(entry.id, &entry.name))
                    .unwrap_or_default();
                Ok((desc, files))
            })();
            match loaded {
                Ok((desc, files)) => return Some((entry.id, entry.name, desc, files)),
                Err(e) => {
                    eprintln!("SCR: cannot fetch {}: {e}", entry.name);
                    let _ = update_index(&self.prefix, |idx| {
                        idx.mark_failed(entry.id, &entry.name, chrono::Local::now());
                        Ok(())
                    });
                }
            }
        }
        None
    }

    /// Copies this rank's files of a dataset from the prefix into cache, checking sizes and
    /// CRCs, recording each file in the filemap before it is created.
    fn fetch_files(&mut self, id: u64, desc: &Dataset, files: &[FileRecord]) -> Result<()> {
        // what a failed recovery left in cache of this dataset is replaced by the fetched copy
        if self.filemap.have_rank_by_dataset(id, self.rank) {
            self.delete_cached(id)?;
        }
        self.record_dataset(id, desc, files.len() as u64)?;
        let buf = self.params.bytes("SCR_FILE_BUF_SIZE").unwrap_or(1 << 20) as usize;
        for rec in files {
            rank2file::check_relative(&rec.name).map_err(failure)?;
            let src = self.prefix.join(&rec.name);
            let dst = self.dataset_dir(id).join(&rec.name);
            let key = dst.to_string_lossy().into_owned();
            let base = src
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = src
                .parent()
                .unwrap_or(&self.prefix)
                .to_string_lossy()
                .into_owned();
            let mut meta = Meta::for_user_file(&base, self.ranks, &rec.name, &dir, &base);
            self.filemap.add_file(id, self.rank, &key);
            self.filemap.set_meta(id, self.rank, &key, &meta);
            self.filemap.write(&self.filemap_path)?;
            let (size, crc) = if rec.segments.is_empty() {
                copy_file(&src, &dst, buf, rec.crc.is_some())?
            } else {
                let (size, crc) = container::read_file(&self.prefix, &rec.segments, &dst, buf)?;
                (size, Some(crc))
            };
            if size != rec.size {
                return Err(failure(format!(
                    "{}: {size} bytes, the summary records {}",
                    src.display(),
                    rec.size
                )));
            }
            if let (Some(want), Some(got)) = (rec.crc, crc) {
                if want != got {
                    return Err(failure(format!(
                        "{}: CRC32 {}, the summary records {}",
                        src.display(),
                        scr::hash::format_crc32(got),
                        scr::hash::format_crc32(want)
                    )));
                }
                meta.set_crc32(got);
            }
            meta.set_size(size);
            meta.set_complete(true);
            self.filemap.set_meta(id, self.rank, &key, &meta);
        }
        self.filemap.write(&self.filemap_path)
    }

    /// The parameters this job runs with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// `SCR_Need_checkpoint`.
    pub fn need_checkpoint(&mut self) -> Result<bool> {
        self.poll_async_flushes(None)?;
        self.need_calls += 1;
        let decide = || {
            let interval = self.params.count("SCR_CHECKPOINT_INTERVAL").unwrap_or(0);
            let seconds = self.params.count("SCR_CHECKPOINT_SECONDS").unwrap_or(0);
            let overhead = self.params.float("SCR_CHECKPOINT_OVERHEAD").unwrap_or(0.0);
            if interval == 0 && seconds == 0 && overhead == 0.0 {
                return true;
            }
            (interval > 0 && self.need_calls.is_multiple_of(interval))
                || (seconds > 0 && self.last_checkpoint_end.elapsed().as_secs() >= seconds)
                || (overhead > 0.0 && self.overhead_allows_checkpoint(overhead))
        };
        let due = comm::bcast_bool(&self.world, self.rank == 0 && decide());
        Ok(due || self.halt_decision(false)?)
    }

    /// SCR's overhead rule: checkpoint when the average checkpoint cost, as a share of the
    /// time since the last checkpoint plus that cost, is below `percent` (always before the
    /// first checkpoint).
    fn overhead_allows_checkpoint(&self, percent: f64) -> bool {
        let (total, count) = self.checkpoint_cost;
        if count == 0 {
            return true;
        }
        let cost = total / count as f64;
        let since = self.last_checkpoint_end.elapsed().as_secs_f64();
        cost / (since + cost) * 100.0 < percent
    }

    /// `SCR_Start_output` (and `SCR_Start_checkpoint` with `FLAG_CHECKPOINT`).
    pub(crate) fn start_output(&mut self, name: Option<&str>, flags: i32) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(failure(
                "SCR_Start_output called while another output or restart is open; complete it first",
            ));
        }
        if let Some(n) = name
            && (n.is_empty() || n.contains('/') || n.len() >= 1024)
        {
            return Err(failure(format!(
                "dataset name {n:?} must be non-empty, without '/', shorter than 1024 bytes"
            )));
        }
        self.poll_async_flushes(None)?;
        let is_ckpt = flags & FLAG_CHECKPOINT != 0;
        if is_ckpt {
            self.checkpoint_started = Some(Instant::now());
        }
        self.dataset_id += 1;
        if is_ckpt {
            self.checkpoint_id += 1;
        }
        let id = self.dataset_id;
        let store = self
            .descriptor_for(is_ckpt.then_some(self.checkpoint_id))
            .store
            .clone();
        self.evict_for(&store)?;
        // every rank describes the dataset alike (the name and the parameters are the same
        // everywhere); only the creation time differs, and Complete replaces it with rank
        // 0's, which it learns in the collective it needs anyway, so Start broadcasts nothing
        let origin = DatasetOrigin {
            user: Some(self.user.clone()),
            jobname: self.params.get("SCR_JOB_NAME").map(str::to_string),
            jobid: Some(self.jobid.clone()),
            cluster: self.params.get("SCR_CLUSTER_NAME").map(str::to_string),
            created_us: chrono::Utc::now().timestamp_micros().max(0) as u64,
        };
        let default_name = format!("scr.dataset.{id}");
        let desc = Dataset::create(
            id,
            name.unwrap_or(&default_name),
            is_ckpt,
            flags & FLAG_OUTPUT != 0,
            &origin,
            is_ckpt.then_some(self.checkpoint_id),
        );
        // record the dataset before its directory exists (filemap first)
        self.record_dataset(id, &desc, 0)?;
        io::create_dirs(&self.dataset_dir(id), 0o700)?;
        self.phase = Phase::Output { id, flags };
        Ok(())
    }

    /// The descriptor for a checkpoint id: the enabled one with the largest INTERVAL that
    /// divides it (output-only datasets, `None`, use the INTERVAL=1 one).
    fn descriptor_for(&self, checkpoint_id: Option<u64>) -> &CkptDesc {
        &self.descriptors[self.descriptor_index(checkpoint_id)]
    }

    fn descriptor_index(&self, checkpoint_id: Option<u64>) -> usize {
        let id = checkpoint_id.unwrap_or(1).max(1);
        self.descriptors
            .iter()
            .enumerate()
            .filter(|(_, d)| id.is_multiple_of(d.interval))
            .max_by_key(|(_, d)| d.interval)
            .map(|(i, _)| i)
            .expect("an INTERVAL=1 descriptor exists (checked in init)")
    }

    /// This node's cache directory in a store.
    fn store_dir(&self, store: &str) -> PathBuf {
        layout::node_job_dir(
            Path::new(store),
            &self.user,
            &self.jobid,
            self.emulated_node.as_deref(),
        )
    }

    /// A cached dataset's directory, from the store its redundancy descriptor records.
    fn dataset_dir(&self, id: u64) -> PathBuf {
        let dir = self
            .filemap
            .reddesc(id, self.rank)
            .and_then(|r| r.directory().map(PathBuf::from));
        layout::cache_dataset_dir(
            &dir.unwrap_or_else(|| self.store_dir(&self.descriptors[0].store)),
            id,
        )
    }

    /// This rank's cached files of a dataset (owned, so the filemap can change meanwhile).
    fn my_files(&self, id: u64) -> Vec<String> {
        self.filemap
            .files(id, self.rank)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// This rank's files of a dataset the application wrote (not redundancy files), in
    /// filemap order.
    fn user_files(&self, id: u64) -> Vec<String> {
        self.my_files(id)
            .into_iter()
            .filter(|f| {
                self.filemap
                    .meta(id, self.rank, f)
                    .and_then(|m| m.filetype())
                    .is_none_or(|t| t == FileType::User)
            })
            .collect()
    }

    /// Records a dataset's descriptors and expected file count in this rank's filemap, on
    /// disk, before any of its files exists (filemap first).
    fn record_dataset(&mut self, id: u64, desc: &Dataset, expected_files: u64) -> Result<()> {
        let reddesc = self.reddesc_for(desc.checkpoint_id());
        self.filemap.set_dataset(id, self.rank, desc);
        self.filemap.set_reddesc(id, self.rank, &reddesc);
        self.filemap
            .set_expected_files(id, self.rank, expected_files);
        self.filemap.write(&self.filemap_path)
    }

    /// The redundancy descriptor of a checkpoint: its store, scheme and this rank's set.
    fn reddesc_for(&self, checkpoint_id: Option<u64>) -> RedDesc {
        let i = self.descriptor_index(checkpoint_id);
        let ckpt = &self.descriptors[i];
        let dir = self.store_dir(&ckpt.store);
        let mut reddesc = RedDesc::create(
            true,
            ckpt.interval,
            false,
            &ckpt.store,
            &dir.to_string_lossy(),
            ckpt.scheme,
        );
        if ckpt.scheme != Scheme::Single {
            reddesc.set_position(self.sets[i].position(self.rank));
        }
        reddesc
    }

    /// Deletes the oldest cached datasets so that a new one fits SCR_CACHE_SIZE.
    fn evict_for(&mut self, store: &str) -> Result<()> {
        // a STORE line may give its store its own COUNT
        let store_count = self
            .params
            .descriptors_of("STORE")
            .filter(|d| Path::new(&d.name) == Path::new(store))
            .filter_map(|d| d.attr("COUNT")?.parse::<u64>().ok())
            .last();
        let keep = store_count
            .or(self.params.count("SCR_CACHE_SIZE"))
            .unwrap_or(1)
            .max(1) as usize;
        let in_store = |d: &u64| {
            let recorded = self
                .filemap
                .reddesc(*d, self.rank)
                .and_then(|r| r.store().map(str::to_string));
            recorded.is_none_or(|s| Path::new(&s) == Path::new(store))
        };
        let mut cached: Vec<u64> = self
            .filemap
            .datasets()
            .into_iter()
            .filter(in_store)
            .collect();
        // the newest complete checkpoint, when it is not on the prefix, is the only copy
        // there is: it stays until the new dataset completes (see complete_output)
        let protected = self.newest_unflushed_checkpoint()?;
        while cached.len() >= keep {
            let victim = cached.remove(0);
            if Some(victim) == protected {
                self.deferred_eviction = Some(victim);
                continue;
            }
            if self.flushing_async(victim) {
                // the only wait an asynchronous flush imposes: its files must stay until copied
                self.poll_async_flushes(Some(victim))?;
            }
            self.delete_cached(victim)?;
        }
        // copies held for ranks that moved away go with the datasets of their age
        let keep_from = self
            .deferred_eviction
            .into_iter()
            .chain(cached.first().copied())
            .min()
            .unwrap_or(self.dataset_id);
        let held: Vec<u64> = self
            .held
            .as_ref()
            .map(|(_, h)| h.datasets())
            .unwrap_or_default();
        for d in held.into_iter().filter(|&d| d < keep_from) {
            self.drop_held(d)?;
        }
        Ok(())
    }

    /// The datasets this rank's filemap records whose descriptor satisfies `keep`.
    fn cached_datasets_where(&self, keep: impl Fn(&Dataset) -> bool) -> impl Iterator<Item = u64> {
        self.filemap
            .datasets()
            .into_iter()
            .filter(move |&d| self.filemap.dataset(d, self.rank).is_some_and(|x| keep(&x)))
    }

    /// The newest checkpoint complete in every rank's cache, if the flush file says it is
    /// not on the prefix (the same answer on every rank).
    fn newest_unflushed_checkpoint(&self) -> Result<Option<u64>> {
        let newest = self
            .cached_datasets_where(|x| x.is_checkpoint() && x.is_complete())
            .max()
            .unwrap_or(0);
        let newest = comm::min_u64(&self.world, newest);
        let unflushed = self.rank == 0
            && newest > 0
            && FlushFile::read(&layout::flush_file(&self.prefix))
                .map_or(true, |f| f.needs_flush(newest));
        Ok(comm::bcast_bool(&self.world, unflushed).then_some(newest))
    }

    /// Deletes a dataset's files from cache, then its filemap entries: this rank's, the
    /// copies it keeps for partners, and (on the node master) the held ones.
    fn delete_cached(&mut self, dset: u64) -> Result<()> {
        self.discard_cached(dset)?;
        if self.rank == 0 {
            update_flush_file(&self.prefix, |f| forget_cached(f, dset))?;
        }
        Ok(())
    }

    /// [`Scr::delete_cached`] but for the flush file, which the caller updates.
    fn discard_cached(&mut self, dset: u64) -> Result<()> {
        remove_dataset_files(&mut self.filemap, dset, &mut self.discards)?;
        let _ = std::fs::remove_dir_all(self.dataset_dir(dset));
        if self.restart.as_ref().is_some_and(|(id, _)| *id == dset) {
            self.restart = None;
        }
        self.filemap.write(&self.filemap_path)?;
        self.drop_held(dset)
    }

    /// Node master: deletes held files of a dataset and their entries.
    fn drop_held(&mut self, dset: u64) -> Result<()> {
        if let Some((path, held)) = &mut self.held
            && !held.ranks_by_dataset(dset).is_empty()
        {
            remove_dataset_files(held, dset, &mut self.discards)?;
            held.write(path)?;
        }
        Ok(())
    }

    /// Where a name the application uses lives on the prefix: (absolute path, path relative to the prefix).
    fn prefix_path(&self, name: &str) -> Result<(PathBuf, PathBuf)> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::io(".", "read the working directory", e))?;
        let abs = normalize(&cwd.join(name));
        // the prefix as given, or as the file system resolves it: the working directory
        // comes back resolved when SCR_PREFIX goes through a symbolic link
        let resolved = std::fs::canonicalize(&self.prefix).ok();
        let rel = [Some(normalize(&self.prefix)), resolved]
            .into_iter()
            .flatten()
            .find_map(|p| abs.strip_prefix(p).ok().map(Path::to_path_buf))
            .ok_or_else(|| {
                failure(format!(
                    "{name} is outside the prefix directory {}; write it under SCR_PREFIX",
                    self.prefix.display()
                ))
            })?;
        if rel.as_os_str().is_empty() {
            return Err(failure(format!(
                "{name} names the prefix directory itself, not a file"
            )));
        }
        Ok((abs, rel))
    }

    /// `SCR_Route_file`: where to write (during an output) or read (during a restart) `name`.
    pub(crate) fn route_file(&mut self, name: &str) -> Result<PathBuf> {
        if name.is_empty() || name.len() >= 1024 {
            return Err(failure(format!(
                "file name {name:?} must be non-empty and shorter than 1024 bytes"
            )));
        }
        match self.phase.clone() {
            Phase::Output { id, .. } => {
                let (abs, rel) = self.prefix_path(name)?;
                let cached = self.dataset_dir(id).join(&rel);
                let key = cached.to_string_lossy().into_owned();
                if !self.filemap.files(id, self.rank).contains(&key.as_str()) {
                    let dir = abs
                        .parent()
                        .unwrap_or(&self.prefix)
                        .to_string_lossy()
                        .into_owned();
                    let base = abs
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let meta =
                        Meta::for_user_file(&base, self.ranks, &rel.to_string_lossy(), &dir, &base);
                    self.filemap.add_file(id, self.rank, &key);
                    self.filemap.set_meta(id, self.rank, &key, &meta);
                    self.filemap.write(&self.filemap_path)?;
                }
                if let Some(parent) = cached.parent() {
                    io::create_dirs(parent, 0o700)?;
                }
                Ok(cached)
            }
            Phase::Restart { id } => self.restart_file(id, name),
            // the v1.1 idiom: outside an output, a name of the restart checkpoint means its
            // cached file; any other name comes back unchanged, as SCR v2.0 returns it
            Phase::Idle => Ok(self
                .restart
                .clone()
                .and_then(|(id, _)| self.restart_file(id, name).ok())
                .unwrap_or_else(|| PathBuf::from(name))),
        }
    }

    /// The cached file of restart dataset `id` that `name` means: the one whose path
    /// relative to the prefix is `name`'s, else (as SCR v2.0, which keeps cache files flat
    /// and routes by file name) the one file with `name`'s file name.
    fn restart_file(&self, id: u64, name: &str) -> Result<PathBuf> {
        let rel = self
            .prefix_path(name)
            .map(|(_, rel)| rel.to_string_lossy().into_owned())
            .ok();
        let base = Path::new(name)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let files: Vec<(&str, Meta)> = self
            .filemap
            .files(id, self.rank)
            .into_iter()
            .filter_map(|f| Some((f, self.filemap.meta(id, self.rank, f)?)))
            .collect();
        let by_path = files
            .iter()
            .find(|(_, meta)| rel.is_some() && meta.orig() == rel.as_deref());
        let found = match by_path {
            Some((f, _)) => *f,
            None => {
                let same_name: Vec<&(&str, Meta)> = files
                    .iter()
                    .filter(|(_, meta)| base.is_some() && meta.orig_name() == base.as_deref())
                    .collect();
                match same_name.as_slice() {
                    [] => {
                        return Err(failure(format!(
                            "{name} is not part of the restart dataset"
                        )));
                    }
                    [(f, _)] => *f,
                    several => {
                        let paths: Vec<&str> =
                            several.iter().filter_map(|(_, m)| m.orig()).collect();
                        return Err(failure(format!(
                            "{name} matches {} restart files of this rank ({}); route it by its \
                             path relative to the prefix",
                            paths.len(),
                            paths.join(", ")
                        )));
                    }
                }
            }
        };
        let path = PathBuf::from(found);
        if std::fs::File::open(&path).is_ok() {
            Ok(path)
        } else {
            Err(failure(format!(
                "restart file {} is not readable",
                path.display()
            )))
        }
    }

    /// `SCR_Complete_output`: records sizes, agrees on validity, flushes when due. Returns
    /// whether every rank's output was valid.
    pub(crate) fn complete_output(&mut self, valid: bool) -> Result<bool> {
        let Phase::Output { id, flags } = self.phase.clone() else {
            return Err(failure(
                "SCR_Complete_output called without SCR_Start_output",
            ));
        };
        self.phase = Phase::Idle;
        let crc_on_copy = self.params.bool("SCR_CRC_ON_COPY");
        // no barrier first: the sums below wait for every rank, sleeping as they do
        let (mut files, mut bytes, mut ok) = (0u64, 0u64, valid);
        for f in self.my_files(id) {
            let mut meta = self.filemap.meta(id, self.rank, &f).unwrap_or_default();
            let size = std::fs::metadata(&f).map(|m| m.len());
            let complete = valid && size.is_ok();
            ok &= complete;
            meta.set_size(*size.as_ref().unwrap_or(&0));
            if crc_on_copy && complete {
                meta.set_crc32(io::file_crc32(Path::new(&f))?);
            }
            meta.set_complete(complete);
            self.filemap.set_meta(id, self.rank, &f, &meta);
            files += 1;
            bytes += size.unwrap_or(0);
        }
        self.filemap.set_expected_files(id, self.rank, files);
        let mut desc = self.filemap.dataset(id, self.rank).unwrap_or_default();
        let created_here = if self.rank == 0 {
            desc.created_us().unwrap_or(0)
        } else {
            0
        };
        let [total_files, total_bytes, failed, created] =
            comm::sums_u64(&self.world, [files, bytes, u64::from(!ok), created_here]);
        let all_ok = failed == 0;
        desc.set_totals(total_files, total_bytes, all_ok);
        desc.set_created_us(created);
        self.filemap.set_dataset(id, self.rank, &desc);
        self.filemap.write(&self.filemap_path)?;
        let name = desc.name().unwrap_or_default().to_string();
        if !all_ok {
            self.log.event(
                kinds::CHECKPOINT_FAILED,
                &[
                    ("name", name),
                    ("dset", id.to_string()),
                    ("failed_ranks", failed.to_string()),
                ],
            );
            self.delete_cached(id)?;
            self.deferred_eviction = None; // the older checkpoint is still the newest good one
            return Ok(false);
        }
        let is_ckpt = flags & FLAG_CHECKPOINT != 0;
        // as in SCR, a checkpoint its scheme could not protect is not a valid checkpoint
        if is_ckpt && self.apply_redundancy(id).is_err() {
            self.delete_cached(id)?;
            self.deferred_eviction = None;
            return Ok(false);
        }
        // the checkpoint kept until this one completed goes now, recorded in the same
        // flush-file update (each one is a locked, fsynced write on the prefix)
        let evicted = if is_ckpt {
            self.deferred_eviction.take()
        } else {
            None
        };
        if let Some(old) = evicted {
            if self.flushing_async(old) {
                self.poll_async_flushes(Some(old))?;
            }
            self.discard_cached(old)?;
        }
        if self.rank == 0 {
            update_flush_file(&self.prefix, |f| {
                f.describe(
                    id,
                    desc.name().unwrap_or_default(),
                    desc.checkpoint_id(),
                    None,
                );
                f.set_location(id, Location::Cache);
                if let Some(old) = evicted {
                    forget_cached(f, old);
                }
            })?;
        }
        let every = self.flush_every();
        let due = flags & FLAG_OUTPUT != 0
            || (is_ckpt && every > 0 && self.checkpoint_id.is_multiple_of(every));
        // output datasets leave the cache once flushed: they go synchronously
        let in_background =
            is_ckpt && flags & FLAG_OUTPUT == 0 && self.params.bool("SCR_FLUSH_ASYNC");
        if due && in_background {
            self.start_async_flush(id)?;
        } else if due {
            self.flush(id)?;
        }
        if flags & FLAG_OUTPUT != 0 && !is_ckpt {
            self.delete_cached(id)?;
        }
        let secs = self
            .checkpoint_started
            .filter(|_| is_ckpt)
            .map(|t| t.elapsed().as_secs_f64());
        let mut fields = vec![("name", name), ("dset", id.to_string())];
        match secs {
            Some(secs) => fields.extend(event_log::timing(total_bytes, secs)),
            None => fields.push(("bytes", total_bytes.to_string())),
        }
        let kind = if is_ckpt {
            kinds::CHECKPOINT
        } else {
            kinds::OUTPUT
        };
        self.log.event(kind, &fields);
        if is_ckpt {
            self.restart = None; // a new checkpoint supersedes the one restarted from
            self.last_checkpoint_end = Instant::now();
            if let Some(started) = self.checkpoint_started.take() {
                self.checkpoint_cost.0 += started.elapsed().as_secs_f64();
                self.checkpoint_cost.1 += 1;
            }
            // the halt decision rank 0 sends is the last step every rank waits for
            self.check_halt(true)?;
        } else {
            comm::relaxed_barrier(&self.world);
        }
        Ok(true)
    }

    /// Synchronous flush of a cached dataset to the prefix.
    fn flush(&mut self, id: u64) -> Result<()> {
        if self.rank == 0 {
            update_flush_file(&self.prefix, |f| f.set_location(id, Location::Flushing))?;
        }
        comm::relaxed_barrier(&self.world);
        let started = Instant::now();
        let want_crc = self.params.bool("SCR_CRC_ON_FLUSH");
        let buf = self.params.bytes("SCR_FILE_BUF_SIZE").unwrap_or(1 << 20) as usize;
        // at most SCR_FLUSH_WIDTH ranks write to the prefix at once: ranks go in waves
        let width = self.params.count("SCR_FLUSH_WIDTH").unwrap_or(256).max(1);
        let waves = self.ranks.div_ceil(width);
        let containers = self.params.bool("SCR_USE_CONTAINERS").then(|| {
            let mine = self
                .user_files(id)
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum();
            let size = self.params.bytes("SCR_CONTAINER_SIZE").unwrap_or(100 << 30);
            (self.container_start(mine), size)
        });
        let mut records = Vec::new();
        let mut result = Ok(());
        for wave in 0..waves {
            if wave > 0 {
                comm::relaxed_barrier(&self.world);
            }
            if self.rank / width != wave {
                continue;
            }
            result = self.copy_to_prefix(id, want_crc, buf, containers, &mut records);
        }
        if let Err(e) = &result {
            eprintln!("SCR: ERROR: rank {}: flush of dataset {id}: {e}", self.rank);
        }
        let copy_secs = started.elapsed().as_secs_f64();
        // ranks done early wait sleeping, not in the gather's busy-poll
        comm::relaxed_barrier(&self.world);
        let copied = self.publish_flushed(id, records, result.is_ok())?;
        if self.params.count("SCR_DEBUG").unwrap_or(0) > 0 {
            eprintln!(
                "SCR: rank {}: flush of dataset {id}: copied in {copy_secs:.3} s, all ranks done after {:.3} s",
                self.rank,
                started.elapsed().as_secs_f64()
            );
        }
        comm::relaxed_barrier(&self.world);
        if copied {
            self.log_transfer(kinds::FLUSH, id, started);
            Ok(())
        } else {
            Err(failure(format!(
                "flush of dataset {id} failed on at least one rank"
            )))
        }
    }

    /// Where this rank's bytes start in the dataset's container stream: the node's total is
    /// summed on the node, node masters scan across nodes, ranks scan within their node
    /// (the containers seed), so each node's files lie together.
    fn container_start(&self, my_bytes: u64) -> u64 {
        let node_total = comm::sum_u64(&self.node_comm, my_bytes);
        let node_start = if self.node_comm.rank() == 0 {
            comm::exclusive_sum_u64(&self.across_comm, node_total)
        } else {
            0
        };
        comm::bcast_u64(&self.node_comm, 0, node_start)
            + comm::exclusive_sum_u64(&self.node_comm, my_bytes)
    }

    /// Where each of this rank's user files of dataset `id` goes on the prefix.
    fn flush_targets(&self, id: u64) -> Result<Vec<FlushTarget>> {
        self.user_files(id)
            .into_iter()
            .map(|f| {
                let meta = self.filemap.meta(id, self.rank, &f).unwrap_or_default();
                let (Some(dir), Some(name), Some(orig)) =
                    (meta.orig_dir(), meta.orig_name(), meta.orig())
                else {
                    return Err(failure(format!("{f}: meta data lacks PATH, NAME or ORIG")));
                };
                Ok(FlushTarget {
                    dst: Path::new(dir).join(name),
                    orig: orig.to_string(),
                    src: PathBuf::from(f),
                })
            })
            .collect()
    }

    /// The end of every flush, synchronous or not: rank 0 gathers each rank's file list and,
    /// when every rank copied its files (`copied_here` on each), publishes the dataset;
    /// otherwise the flush file stops saying FLUSHING. Collective; returns whether published.
    fn publish_flushed(
        &mut self,
        id: u64,
        records: Vec<FileRecord>,
        copied_here: bool,
    ) -> Result<bool> {
        let mut mine = RankFiles::new();
        mine.insert(self.rank, records);
        let leaf = rank2file::leaf_hash(&mine).pack();
        let all = comm::gather_bytes(&self.world, 0, &leaf);
        let copied = comm::all_true(&self.world, copied_here);
        if self.rank == 0 {
            if copied {
                let mut map = RankFiles::new();
                for bytes in all {
                    let h = Hash::unpack(&bytes)
                        .map_err(|e| failure(format!("rank file list: {e}")))?;
                    rank2file::parse_leaf(&h, &mut map).map_err(failure)?;
                }
                let desc = self.filemap.dataset(id, self.rank).unwrap_or_default();
                scr::prefix::publish(&self.prefix, id, &desc, self.ranks, &map, true)?;
                let keep = self.params.count("SCR_PREFIX_SIZE").unwrap_or(0);
                for gone in scr::prefix::enforce_window(&self.prefix, keep)? {
                    eprintln!("SCR: deleted {gone} from the prefix (SCR_PREFIX_SIZE={keep})");
                }
            } else {
                update_flush_file(&self.prefix, |f| f.unset_location(id, Location::Flushing))?;
            }
        }
        Ok(copied)
    }

    /// Copies this rank's files of a dataset to their places under the prefix, or into
    /// containers from stream position `start` (of containers of `size` bytes) when given.
    fn copy_to_prefix(
        &self,
        id: u64,
        want_crc: bool,
        buf: usize,
        containers: Option<(u64, u64)>,
        records: &mut Vec<FileRecord>,
    ) -> Result<()> {
        // the new directory entries must be durable too before the index says COMPLETE
        let mut dirs = std::collections::BTreeSet::new();
        let mut at = containers.map(|(start, _)| start);
        for FlushTarget { src, dst, orig } in self.flush_targets(id)? {
            let (size, crc, segments) = match (&mut at, containers) {
                (Some(at), Some((_, container_size))) => {
                    let len = std::fs::metadata(&src)
                        .map_err(|e| Error::io(&src, "stat", e))?
                        .len();
                    let segments = container::place(id, *at, len, container_size);
                    *at += len;
                    let (size, crc) =
                        container::write_file(&src, &self.prefix, &segments, &mut |_| {})?;
                    dirs.insert(layout::dataset_meta_dir(&self.prefix, id));
                    (size, want_crc.then_some(crc), segments)
                }
                _ => {
                    let (size, crc) = copy_file(&src, &dst, buf, want_crc)?;
                    if let Some(dir) = dst.parent() {
                        dirs.insert(dir.to_path_buf());
                    }
                    (size, crc, vec![])
                }
            };
            records.push(FileRecord {
                name: orig,
                size,
                crc,
                segments,
            });
        }
        dirs.iter().try_for_each(|d| io::sync_dir(d))
    }

    /// Rank 0 reads the halt file (counting a completed checkpoint against CheckpointsLeft
    /// when asked) and decides; every rank learns the decision. Rank 0 records the cause
    /// as the ExitReason so the launcher stops too.
    fn halt_decision(&self, count_checkpoint: bool) -> Result<bool> {
        let mut halt_now = false;
        let mut result = Ok(());
        if self.rank == 0 {
            result = (|| {
                let path = layout::halt_file(&self.prefix);
                let (lock, hash) = LockedHashFile::open(&path, SHARED_FILE)?;
                let was = hash.clone();
                let mut halt = HaltFile::from_hash(hash).map_err(|e| Error::invalid(&path, e))?;
                if count_checkpoint {
                    halt.decrement_checkpoints();
                }
                let now = chrono::Utc::now().timestamp();
                let remaining = self
                    .params
                    .int("SCR_END_TIME")
                    .filter(|&t| t > 0)
                    .map(|t| t - now);
                if let Some(cause) = halt.library_decision(now, remaining) {
                    eprintln!("SCR: Job exiting: {cause}");
                    halt.set_exit_reason(cause.reason());
                    halt_now = true;
                }
                // Need_checkpoint and Should_exit call this often: rewrite only what changed
                // (an empty file the lock just created is written once, so it reads as a halt file)
                let just_created = std::fs::metadata(&path).is_ok_and(|m| m.len() == 0);
                if halt.hash() != &was || just_created {
                    lock.write_and_unlock(halt.hash())?;
                }
                Ok(())
            })();
        }
        let halt_now = comm::bcast_bool(&self.world, halt_now);
        result.map(|()| halt_now)
    }

    /// Checks for a halt condition; when one holds and halts exit (SCR_HALT_EXIT, else
    /// SCR_HALT_ENABLED), flushes the newest
    /// checkpoint if it is only in cache, finalizes MPI and exits with status 0 (as SCR does).
    fn check_halt(&mut self, count_checkpoint: bool) -> Result<bool> {
        let halt = self.halt_decision(count_checkpoint)?;
        if halt {
            self.log.event(
                kinds::HALT,
                &[("exits", self.params.halt_exits().to_string())],
            );
        }
        if halt && self.params.halt_exits() {
            self.flush_latest_if_needed()?;
            comm::relaxed_barrier(&self.world);
            // SAFETY: MPI is initialized (checked in init) and not finalized; the process exits next.
            unsafe {
                mpi::ffi::MPI_Finalize();
            }
            std::process::exit(0);
        }
        Ok(halt)
    }

    /// Logs a flush or fetch of dataset `id` that started at `started`: its size, time and
    /// bandwidth.
    fn log_transfer(&self, kind: &str, id: u64, started: Instant) {
        let desc = self.filemap.dataset(id, self.rank).unwrap_or_default();
        let mut fields = vec![
            ("name", desc.name().unwrap_or_default().to_string()),
            ("dset", id.to_string()),
        ];
        let bytes = desc.size().unwrap_or(0);
        fields.extend(event_log::timing(bytes, started.elapsed().as_secs_f64()));
        self.log.event(kind, &fields);
    }

    /// SCR_FLUSH: flush every this many checkpoints; 0 never flushes.
    fn flush_every(&self) -> u64 {
        self.params.count("SCR_FLUSH").unwrap_or(10)
    }

    /// Flushes the newest complete checkpoint when the flush file says it is not on the prefix.
    fn flush_latest_if_needed(&mut self) -> Result<()> {
        // a background flush finishes first; what it covers needs no second copy
        self.poll_async_flushes(Some(u64::MAX))?;
        // SCR flushes at the end only when flushing is on at all (SCR_FLUSH > 0); with
        // SCR_FLUSH=0 checkpoints stay in cache for the drain or the next run
        if self.flush_every() == 0 {
            return Ok(());
        }
        match self.newest_unflushed_checkpoint()? {
            Some(latest) => self.flush(latest),
            None => Ok(()),
        }
    }

    /// `SCR_Have_restart`: the name of the dataset a restart would load.
    pub fn have_restart(&self) -> Option<String> {
        self.restart.as_ref().map(|(_, n)| n.clone())
    }

    /// `SCR_Start_restart`: begins reading the restart dataset; returns its name.
    pub(crate) fn start_restart(&mut self) -> Result<String> {
        if self.phase != Phase::Idle {
            return Err(failure(
                "SCR_Start_restart called while an output or restart is open",
            ));
        }
        let (id, name) = self.restart.clone().ok_or_else(|| {
            failure("SCR_Start_restart called but there is no checkpoint to restart from")
        })?;
        comm::relaxed_barrier(&self.world);
        self.phase = Phase::Restart { id };
        Ok(name)
    }

    /// `SCR_Complete_restart`: true when every rank read its files. A failed restart drops
    /// the dataset, so the next `have_restart` offers an older one (none yet without fetch).
    pub(crate) fn complete_restart(&mut self, valid: bool) -> Result<bool> {
        let Phase::Restart { id } = self.phase.clone() else {
            return Err(failure(
                "SCR_Complete_restart called without SCR_Start_restart",
            ));
        };
        self.phase = Phase::Idle;
        let ok = comm::all_true(&self.world, valid);
        let name = self.restart.take().map(|(_, n)| n).unwrap_or_default();
        if !ok {
            // mark it, drop it, and offer the next older dataset on the prefix
            if self.rank == 0 {
                update_index(&self.prefix, |idx| {
                    if idx.id_of(&name).is_some() {
                        idx.mark_failed(id, &name, chrono::Local::now());
                    }
                    Ok(())
                })?;
            }
            self.delete_cached(id)?;
            if self.params.bool("SCR_FETCH") {
                self.fetch(Some(id))?;
            }
        }
        Ok(ok)
    }

    /// `SCR_Should_exit`.
    pub fn should_exit(&self) -> Result<bool> {
        self.halt_decision(false)
    }

    /// `SCR_Finalize`: records that the run finished, flushes the newest checkpoint if it is
    /// only in cache, and frees the communicators.
    pub fn finalize(mut self) -> Result<()> {
        if self.phase != Phase::Idle {
            eprintln!(
                "SCR: WARNING: SCR_Finalize called with an output or restart still open; it is discarded"
            );
            self.phase = Phase::Idle;
        }
        self.flush_latest_if_needed()?;
        if self.rank == 0 {
            HaltFile::update(&layout::halt_file(&self.prefix), SHARED_FILE, |halt| {
                halt.set_exit_reason(scr::halt::reasons::FINALIZE_CALLED);
                Ok(())
            })?;
        }
        self.discards.wait();
        comm::relaxed_barrier(&self.world);
        self.log.event(kinds::END, &[]);
        Ok(())
    }
}

/// The flush file's record that a dataset is no longer in cache: the drain must not look
/// for it there.
fn forget_cached(f: &mut FlushFile, dset: u64) {
    f.unset_location(dset, Location::Cache);
    if f.locations(dset).is_empty() {
        f.remove(dset);
    }
}

/// Takes every file a filemap records for a dataset out of cache, then the entries.
fn remove_dataset_files(map: &mut Filemap, dset: u64, discards: &mut Discards) -> Result<()> {
    let files = map
        .ranks_by_dataset(dset)
        .into_iter()
        .flat_map(|rank| {
            map.files(dset, rank)
                .into_iter()
                .map(PathBuf::from)
                .collect::<Vec<_>>()
        })
        .collect();
    discards.discard(files)?;
    map.remove_dataset(dset);
    Ok(())
}

/// Cache files on their way out. Freeing a large file's pages is slow (a 64 MiB file on
/// tmpfs takes 10-20 ms to unlink), and evicting the previous checkpoint was most of what
/// SCR_Complete_checkpoint cost on top of writing. Each file is renamed into the store's
/// `.trash/` at once — out of the dataset, so a crash leaves nothing the filemap does not
/// know — and unlinked by a background thread; Init empties `.trash/` of a job that died.
#[derive(Default)]
struct Discards {
    threads: Vec<std::thread::JoinHandle<()>>,
    renamed: u64,
}

impl Discards {
    fn discard(&mut self, files: Vec<PathBuf>) -> Result<()> {
        let mut later = Vec::new();
        for f in files {
            let moved = trash_dir_for(&f).and_then(|trash| {
                std::fs::create_dir_all(&trash).ok()?;
                self.renamed += 1;
                let to = trash.join(format!("{}.{}", std::process::id(), self.renamed));
                std::fs::rename(&f, &to).ok().map(|()| to)
            });
            match moved {
                Some(to) => later.push(to),
                None => match std::fs::remove_file(&f) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&f, "remove", e)),
                },
            }
        }
        self.threads.retain(|t| !t.is_finished());
        if !later.is_empty() {
            self.threads.push(std::thread::spawn(move || {
                for f in later {
                    let _ = std::fs::remove_file(f);
                }
            }));
        }
        Ok(())
    }

    /// Waits until every discarded file is gone.
    fn wait(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// `<store>/.trash` for a cached file: the directory above its `scr.dataset.<id>`, which is
/// on the same file system, so moving the file there is a rename.
fn trash_dir_for(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("scr.dataset."))
        })
        .and_then(Path::parent)
        .map(|store| store.join(TRASH_DIR))
}

/// Where discarded cache files wait for their deletion, in each store directory.
const TRASH_DIR: &str = ".trash";
