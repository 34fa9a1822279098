//! The post-run drain: `scr copy` (`scr_copy`, one node), `scr scavenge` (`scr_scavenge`,
//! all nodes) and `scr postrun` (`scr_postrun`: find the newest dataset not on the prefix,
//! scavenge it, rebuild and index it, step back to older ones if it cannot be completed).

use crate::job::progress::DrainProgress;
use crate::job::remote::Rcmd;
use crate::job::{self, DownNodeQuery, drain::Scavenge};
use hostlist::HostSet;
use scr::dataset::Dataset;
use scr::params::{Params, Sources};
use scr::scavenge::{self, CachedOnNode, CopyOptions, DrainPlan, IndexReport, cached_on_node};
use scr::{HashView, layout};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn fail(what: impl std::fmt::Display) -> scr::Error {
    scr::Error::refused(what.to_string())
}

#[derive(clap::Args)]
#[command(
    about = "Copy this node's cached files of a dataset to the prefix (one node, no MPI)",
    long_about = "Copy every file this node's cache holds of dataset ID to DSTDIR (the prefix): \
                  user files by their names relative to it, redundancy files into \
                  .scr/scr.dataset.ID/, each checked against its recorded size and CRC, and one \
                  filemap per rank for `scr index --build`. Partners' copies are copied only for \
                  the owner nodes named as FAILED_HOST. A name that would escape DSTDIR is refused.\n\n\
                  Prints SCR's lines `scr_copy: <host>: Partners: <owners>` and \
                  `scr_copy: <host>: Return code: <rc>`; exits with that code."
)]
pub struct CopyArgs {
    /// The job's control directory on this node
    #[arg(long, value_name = "DIR")]
    cntldir: PathBuf,
    /// The dataset id
    #[arg(long)]
    id: u64,
    /// The prefix directory (`--prefix`, as SCR's drain scripts pass it, is the same)
    #[arg(long, visible_alias = "prefix", value_name = "DIR")]
    dstdir: PathBuf,
    /// Bytes read and written at a time
    #[arg(long, default_value_t = 1 << 20)]
    buf: usize,
    /// Check CRCs (always done when the meta data records one)
    #[arg(long)]
    crc: bool,
    /// Copy partners' copies (of the FAILED_HOSTs)
    #[arg(long)]
    partner: bool,
    /// Accepted for SCR's scripts: a drain writes plain files (only the flush packs containers)
    #[arg(long)]
    containers: bool,
    /// Print `scr_copy: <host>: Progress: <bytes done> <bytes in all>` lines while copying
    /// (a few per second), for the drain's progress display
    #[arg(long)]
    progress: bool,
    /// Owner nodes that failed: their partners' copies are copied too
    failed: Vec<String>,
}

pub fn copy(args: CopyArgs) -> scr::Result<ExitCode> {
    // root copies a user's cached files as that user: the files the filemap names are the
    // user's to point anywhere
    let acting = super::act_as_owner_of(&args.cntldir)?;
    let host = job::local_host_name();
    let mut last_said = None::<std::time::Instant>;
    let mut say_progress = |p: scavenge::CopyProgress| {
        let due = last_said.is_none_or(|t| t.elapsed().as_millis() >= 200) || p.done == p.total;
        if args.progress && due {
            last_said = Some(std::time::Instant::now());
            println!("scr_copy: {host}: Progress: {} {}", p.done, p.total);
        }
    };
    let report = if acting == super::Acting::RootWithoutDirectory {
        // a node the job never ran on, as far as root may tell
        Ok(scavenge::CopyReport::default())
    } else {
        scavenge::copy_node(
            &args.cntldir,
            args.id,
            &args.dstdir,
            &CopyOptions {
                buf_size: args.buf,
                failed_owners: args.failed,
            },
            &mut say_progress,
        )
    };
    let (partners, ranks, rc) = match &report {
        Ok(r) => {
            for e in &r.errors {
                eprintln!("scr_copy: {host}: ERROR: {e}");
            }
            let ranks: Vec<String> = r.ranks.iter().map(u64::to_string).collect();
            (
                r.partners.join(" "),
                ranks.join(" "),
                i32::from(!r.errors.is_empty()),
            )
        }
        Err(e) => {
            eprintln!("scr_copy: {host}: ERROR: {e}");
            (String::new(), String::new(), 1)
        }
    };
    println!("scr_copy: {host}: Partners: {partners}");
    println!("scr_copy: {host}: Ranks: {ranks}");
    println!("scr_copy: {host}: Return code: {rc}");
    Ok(ExitCode::from(rc as u8))
}

/// Real hosts are reached remotely; emulated nodes are this machine.
fn rcmd_for(rm: &dyn job::ResourceManager) -> Rcmd {
    if rm.nodes_are_hosts() {
        Rcmd::Remote
    } else {
        Rcmd::Exec
    }
}

/// The job's control directory: `<SCR_CNTL_BASE>/<user>/scr.<jobid>`.
pub(crate) fn control_dir(params: &Params, job_id: &str) -> scr::Result<PathBuf> {
    let user = layout::user_name();
    layout::job_dir(Path::new(&params.typed().places.cntl_base), &user, job_id)
}

#[derive(clap::Args)]
#[command(
    about = "Copy a dataset from the caches of all nodes still up to the prefix",
    long_about = "Run `scr copy` on every node still up (emulated nodes of this machine in this \
                  process, real nodes through pdsh or ssh), then on the nodes holding partners' \
                  copies of nodes that are down or failed to copy. Prints one line per node. \
                  Exit 0 (as SCR's); `scr index --build ID` then checks and indexes the result."
)]
pub struct ScavengeArgs {
    /// The allocation's nodes [default: from the resource manager]
    #[arg(short = 'j', long, value_name = "NODESET")]
    jobset: Option<String>,
    /// Nodes that are up [default: all but --down]
    #[arg(short = 'u', long, value_name = "NODESET", conflicts_with = "down")]
    up: Option<String>,
    /// Nodes that are down
    #[arg(short = 'd', long, value_name = "NODESET")]
    down: Option<String>,
    /// The dataset id
    #[arg(short = 'i', long)]
    id: u64,
    /// The job's control directory [default: from SCR_CNTL_BASE, the user and the job id]
    #[arg(short = 'f', long, value_name = "CNTLDIR")]
    from: Option<PathBuf>,
    /// The prefix directory
    #[arg(short = 't', long, value_name = "DIR")]
    to: PathBuf,
    /// Print each node's result
    #[arg(short = 'v', long)]
    verbose: bool,
    /// How many nodes copy at once (pdsh's -f)
    #[arg(long, default_value_t = 256)]
    fanout: usize,
}

fn nodeset(text: &str, what: &str) -> scr::Result<HostSet> {
    super::host_set(Some(text), what)
}

pub fn scavenge_cmd(args: ScavengeArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    let rm = job::detect_resource_manager();
    let jobset = match &args.jobset {
        Some(t) => nodeset(t, "--jobset")?,
        None => rm.nodes().map_err(fail)?,
    };
    let (up, down) = match (&args.up, &args.down) {
        (Some(u), _) => {
            let up = nodeset(u, "--up")?;
            (up.clone(), jobset.difference(&up))
        }
        (None, Some(d)) => {
            let down = nodeset(d, "--down")?;
            (jobset.difference(&down), down)
        }
        (None, None) => (jobset.clone(), HostSet::new()),
    };
    let cntl = args
        .from
        .clone()
        .map_or_else(|| control_dir(&params, &super::job_id(&params)), Ok)?;
    // root scavenging a user's job does it as that user, as `scr copy` on the nodes does
    // (with no control directory here, the path only goes on to each node's `scr copy`)
    let _ = super::act_as_owner_of(&cntl)?;
    let run = Scavenge {
        cntl_dir: &cntl,
        prefix: &args.to,
        id: args.id,
        buf_size: params.typed().buffers.file,
        rcmd: rcmd_for(rm.as_ref()),
        fanout: args.fanout,
    };
    let mut progress = DrainProgress::new("scr_scavenge", up.count() as usize);
    let results = run.run(&up, &down, &mut progress);
    progress.finish();
    // the progress said each node's outcome; what a node's copy said besides is shown here
    for r in results.iter().filter(|r| !r.detail.trim().is_empty()) {
        if args.verbose || !r.ok {
            let state = if r.ok { "copied" } else { "FAILED" };
            println!("scr_scavenge: {}: {state}: {}", r.node, r.detail);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
#[command(
    about = "After the last run: drain output datasets and the newest checkpoint not yet on the prefix",
    long_about = "Copy what the job left only in cache to the prefix, as SCR's scr_postrun: \
                  first every output dataset, oldest first (one that cannot be completed is \
                  said to be lost, by name, and keeps no checkpoint from draining), then the \
                  newest checkpoint, stepping back to older ones when one cannot be completed \
                  but never past a checkpoint already on the prefix: an older checkpoint is \
                  neither copied nor made current. Each dataset is copied from every node \
                  still up; what lost nodes held is rebuilt from PARTNER copies, XOR or \
                  Reed–Solomon parity; a dataset that cannot be completed is indexed as \
                  incomplete so restarts skip it. The prefix is the one each node's control \
                  directory records for the job (the application may set its own); -p, \
                  SCR_PREFIX or the working directory serve when none records one.\n\nExit \
                  codes: 0 when everything drained (or nothing needed it), 1 when an output \
                  dataset was lost or no checkpoint the drain tried could be completed."
)]
pub struct PostrunArgs {
    /// The prefix directory [default: SCR_PREFIX, else the working directory]
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
    /// Nodes known down (scr-run passes those it excluded)
    #[arg(long, value_name = "NODESET")]
    down: Option<String>,
    /// SCR v3.1's job launcher option (srun, jsrun, mpirun, …), accepted so v3.1's scripts
    /// run unchanged: the drain reaches the nodes through pdsh (PDSH_RCMD_TYPE) whatever it says
    #[arg(short = 'j', long = "joblauncher", value_name = "LAUNCHER")]
    joblauncher: Option<String>,
    /// SCR v3.1's verbose flag, accepted: the drain always says what it does
    #[arg(short = 'v', long)]
    verbose: bool,
}

/// The drain after a job; `known_down` are nodes the launcher found down.
///
/// Each prefix the job's control directories record is drained (the application may have
/// set its own: `SCR_Configf`, or a launcher's working directory); `prefix` (`-p`,
/// SCR_PREFIX, else the working directory) is drained when none records one. Returns false
/// when any of them lost a dataset ([`drain_prefix`]).
pub fn postrun_with(
    params: &Params,
    prefix: &Path,
    known_down: &HostSet,
    local_caches: bool,
    say: &mut dyn FnMut(&str),
) -> scr::Result<bool> {
    let mut prefixes: Vec<(PathBuf, Vec<Dataset>)> = Vec::new();
    let caches = if local_caches {
        job_caches(params)?
    } else {
        Vec::new()
    };
    for node in caches {
        let recorded = node.prefix.unwrap_or_else(|| prefix.to_path_buf());
        // the same directory however it is spelled
        let recorded = if scr::io::same_file(&recorded, prefix) {
            prefix.to_path_buf()
        } else {
            recorded
        };
        let datasets = node.datasets.into_iter().map(|(d, _)| d);
        match prefixes.iter_mut().find(|(p, _)| *p == recorded) {
            Some((_, cached)) => cached.extend(datasets),
            None => prefixes.push((recorded, datasets.collect())),
        }
    }
    if prefixes.is_empty() {
        prefixes.push((prefix.to_path_buf(), Vec::new()));
    }
    let mut all_drained = true;
    let mut first_error = None;
    for (to, cached) in &prefixes {
        if to != prefix {
            say(&format!(
                "the job's cache belongs to the prefix {} (its control directory records \
                 it): draining to it",
                to.display()
            ));
        }
        // one prefix that cannot be drained does not keep the others' datasets in cache
        match drain_prefix(params, to, cached, known_down, say) {
            Ok(drained) => all_drained &= drained,
            Err(e) => {
                say(&format!("draining to {}: {e}", to.display()));
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(all_drained),
    }
}

/// The prefix the job's control directories record, when one does: the application's own
/// (`SCR_Configf("SCR_PREFIX=…")`, or a launcher's working directory), which may differ from
/// the one the caller was given.
pub(crate) fn recorded_prefix(params: &Params) -> Option<PathBuf> {
    job_caches(params)
        .ok()?
        .into_iter()
        .find_map(|node| node.prefix)
}

/// What the caches of the job's nodes that this machine can read hold: each emulated
/// node's control directory (`node.<name>` in the job's), else this host's own.
fn job_caches(params: &Params) -> scr::Result<Vec<CachedOnNode>> {
    let rm = job::detect_resource_manager();
    let cntl = control_dir(params, &super::job_id(params))?;
    // (without the node list there are no caches to read here; the drain says why)
    let Ok(nodes) = rm.nodes() else {
        return Ok(Vec::new());
    };
    let emulated = rcmd_for(rm.as_ref()) == Rcmd::Exec
        && nodes
            .iter()
            .any(|n| layout::Node::named(&n).shares_machine());
    let dirs = if emulated {
        nodes
            .iter()
            .filter_map(|n| layout::emulated_node_dir(&cntl, &n).ok())
            .collect()
    } else {
        vec![cntl]
    };
    Ok(dirs.iter().filter_map(|d| cached_on_node(d)).collect())
}

/// The drain of `prefix`, of what the flush file records and what the caches hold
/// (`cached`).
///
/// First every output dataset still in cache, oldest first: each one complete on the
/// prefix, or said to be lost by name (an output that cannot be completed is lost whatever
/// the drain does next, so it never keeps a newer checkpoint from draining). Then the
/// newest checkpoint, going to older ones when one cannot be completed, but never past a
/// checkpoint already on the prefix. A checkpoint older than the newest one on the prefix
/// is not copied at all, and publishing never makes it current. Returns false when an
/// output dataset was lost, or when every checkpoint the drain tried could not be
/// completed.
fn drain_prefix(
    params: &Params,
    prefix: &Path,
    cached: &[Dataset],
    known_down: &HostSet,
    say: &mut dyn FnMut(&str),
) -> scr::Result<bool> {
    // a flush the job's end cut short is finished, or undone, before the index is read;
    // what one that never committed left is swept once no writer of it is alive
    for said in scr::prefix::placing::recover(prefix) {
        say(&said);
    }
    sweep_dead_flushes(prefix, say);
    let plan = DrainPlan::read_with_cached(prefix, cached)?;
    // what the caches hold and the drain leaves: a dataset a job ended while writing (a
    // restart's copy of one on the prefix is recorded as incomplete in cache too)
    let on_prefix: Vec<u64> = scr::index::IndexFile::read(&layout::index_file(prefix))
        .map(|i| {
            i.entries()
                .into_iter()
                .filter(|e| e.complete)
                .map(|e| e.id)
                .collect()
        })
        .unwrap_or_default();
    let mut unfinished: Vec<(u64, &str)> = cached
        .iter()
        .filter(|d| !d.is_complete())
        .filter_map(|d| Some((d.id()?, d.name().unwrap_or("?"))))
        .filter(|(id, _)| {
            !plan
                .as_ref()
                .is_some_and(|p| p.copies(*id) || p.abandoned.iter().any(|(a, _)| a == id))
                && !on_prefix.contains(id)
        })
        .collect();
    unfinished.sort_unstable();
    unfinished.dedup_by_key(|(id, _)| *id);
    for &(id, name) in &unfinished {
        say(&format!(
            "dataset {id} ({name}) in cache was never completed (a job ended while writing \
             it): not drained"
        ));
    }
    let Some(plan) = plan else {
        say(if unfinished.is_empty() {
            "no flush file and no dataset in cache: nothing to drain"
        } else {
            "no completed dataset only in cache: nothing to drain"
        });
        return Ok(true);
    };
    let flush_name = |id: u64| plan.name(id).to_string();
    for &(id, by) in &plan.abandoned {
        let how = if plan.name(id) == plan.name(by) {
            "flushed under its name after it"
        } else {
            "written after a restart from an older checkpoint"
        };
        say(&format!(
            "dataset {id} ({}) is of an abandoned timeline: dataset {by} ({}) was {how}; it \
             stays in cache, not drained",
            flush_name(id),
            flush_name(by)
        ));
    }
    if let Some((newest_id, newest)) = &plan.newest_on_prefix {
        // (an output that is a checkpoint too is drained as output; the datasets are named
        // by id too, as a name written again names both)
        for &id in plan.superseded.iter().filter(|d| !plan.outputs.contains(d)) {
            say(&format!(
                "dataset {id} ({}) is older than dataset {newest_id} ({newest}), the newest \
                 checkpoint on the prefix: not drained",
                flush_name(id)
            ));
        }
    }
    // SCR v3.1's words where its walk down the checkpoints reaches one already flushed
    let say_already_flushed = |say: &mut dyn FnMut(&str)| {
        if let Some(id) = plan.already_flushed {
            say(&format!(
                "Checkpoint dataset {id} ({}) has already been flushed",
                flush_name(id)
            ));
        }
    };
    if plan.is_empty() {
        say_already_flushed(say);
        let skipped: Vec<String> = plan
            .superseded
            .iter()
            .filter(|d| !plan.outputs.contains(d))
            .map(|&id| flush_name(id))
            .collect();
        match &plan.newest_on_prefix {
            Some((_, newest)) if !skipped.is_empty() => say(&format!(
                "nothing newer than {newest} to drain: the caches' older checkpoints ({}) stay \
                 there, as a drain never replaces the newest checkpoint on the prefix with an \
                 older one",
                skipped.join(", ")
            )),
            _ if !plan.abandoned.is_empty() => say("nothing else to drain"),
            _ => say("every dataset is on the prefix: nothing to drain"),
        }
        return Ok(true);
    }
    let mut drain = Drain::new(params, prefix, known_down)?;
    let mut drained = Vec::new();
    let mut lost_outputs = Vec::new();
    for &id in &plan.outputs {
        match drain.dataset(id, &flush_name(id), say) {
            Drained::Complete => drained.push(id),
            Drained::Incomplete => lost_outputs.push(id),
            // (said: a newer dataset's files are at its places, and the cache keeps it)
            Drained::KeptForNewer => {}
        }
    }
    // whether every checkpoint this drain tried to copy could not be completed
    let mut checkpoint_lost = false;
    for &id in &plan.checkpoints {
        if drained.contains(&id) {
            checkpoint_lost = false;
            break;
        }
        checkpoint_lost = drain.dataset(id, &flush_name(id), say) != Drained::Complete;
        if !checkpoint_lost {
            break;
        }
    }
    if plan.checkpoints.is_empty() || checkpoint_lost {
        say_already_flushed(say);
    }
    // what a restart does about each lost output: it writes it again only when it goes
    // back to before it
    let restart = newest_checkpoint_on_prefix(prefix).ok().flatten();
    for &id in &lost_outputs {
        let next = match &restart {
            Some((c, name)) if *c > id => format!(
                "the next job restarts from {name}, written after it, so it is not written again"
            ),
            Some((_, name)) => format!(
                "the next job restarts from {name}, written before it, and writes it again \
                 when it gets that far"
            ),
            None => "no checkpoint is on the prefix: the next job starts from the beginning \
                     and writes it again when it gets that far"
                .to_string(),
        };
        say(&format!(
            "output dataset {id} ({}) is lost: not all of its files are left in cache; {next}",
            flush_name(id)
        ));
    }
    Ok(!checkpoint_lost && lost_outputs.is_empty())
}

/// Removes what the flushes the flush file calls FLUSHING left on `prefix` where no
/// writer of them is alive any more ([`scr::prefix::writing::sweep_dead_flushes`]).
fn sweep_dead_flushes(prefix: &Path, say: &mut dyn FnMut(&str)) {
    let Ok(flush) = scr::flush::FlushFile::read(&layout::flush_file(prefix)) else {
        return;
    };
    let interrupted: Vec<u64> = flush
        .datasets()
        .into_iter()
        .filter(|&d| flush.has_location(d, scr::flush::Location::Flushing))
        .collect();
    if interrupted.is_empty() {
        return;
    }
    match scr::prefix::writing::sweep_dead_flushes(prefix, &interrupted) {
        Ok((swept, _)) => {
            for id in swept {
                say(&format!(
                    "the flush of dataset {id} ({}) was cut short: what it left on the prefix \
                     is removed",
                    flush.name(id).unwrap_or("?")
                ));
            }
        }
        Err(e) => say(&format!("what a flush cut short left stays: {e}")),
    }
}

/// The newest checkpoint a restart could load from the prefix (id, name).
fn newest_checkpoint_on_prefix(prefix: &Path) -> scr::Result<Option<(u64, String)>> {
    match scr::index::IndexFile::read(&layout::index_file(prefix)) {
        Ok(index) => Ok(index.newest_usable_checkpoint().map(|e| (e.id, e.name))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// What draining one dataset came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drained {
    /// Complete on the prefix.
    Complete,
    /// Not all of it could be copied or rebuilt.
    Incomplete,
    /// Whole, but a newer dataset on the prefix has files at its places: not placed, it
    /// stays in cache.
    KeptForNewer,
}

/// What draining one dataset needs: the nodes up and down, the control directory.
struct Drain<'a> {
    prefix: &'a Path,
    rm: Box<dyn job::ResourceManager>,
    up: HostSet,
    down: HostSet,
    cntl: PathBuf,
    buf_size: usize,
}

impl<'a> Drain<'a> {
    fn new(params: &Params, prefix: &'a Path, known_down: &HostSet) -> scr::Result<Self> {
        let rm = job::detect_resource_manager();
        let nodes = rm.nodes().map_err(fail)?;
        let exclude = super::excluded_nodes(params)?;
        let down_list = job::list_down_nodes(&DownNodeQuery {
            resource_manager: rm.as_ref(),
            nodes: nodes.clone(),
            known_down: known_down.clone(),
            exclude,
            node_check: None,
        });
        let down = HostSet::from_names(down_list.iter().map(|d| d.node.as_str()));
        let up = nodes.difference(&down);
        let cntl = control_dir(params, &super::job_id(params))?;
        let buf_size = params.typed().buffers.file;
        Ok(Drain {
            prefix,
            rm,
            up,
            down,
            cntl,
            buf_size,
        })
    }

    /// Copies dataset `id` from every node up, rebuilds what lost nodes held and indexes
    /// it.
    fn dataset(&mut self, id: u64, name: &str, say: &mut dyn FnMut(&str)) -> Drained {
        let (up, down) = (&self.up, &self.down);
        say(&format!(
            "draining dataset {id} ({name}) from {} node(s){}",
            up.count(),
            if down.is_empty() {
                String::new()
            } else {
                format!(" ({down} down)")
            }
        ));
        let run = Scavenge {
            cntl_dir: &self.cntl,
            prefix: self.prefix,
            id,
            buf_size: self.buf_size,
            rcmd: rcmd_for(self.rm.as_ref()),
            fanout: 256,
        };
        // the progress display names each node that failed, and why
        let mut progress = DrainProgress::new("scr_postrun", up.count() as usize);
        run.run(up, down, &mut progress);
        progress.finish();
        let indexed = scavenge::index_dataset(self.prefix, id, self.buf_size);
        if let Ok(report) = &indexed {
            for w in &report.warnings {
                say(&format!("WARNING: {w}"));
            }
        }
        match indexed {
            Ok(report) if report.complete => {
                let rebuilt = if report.rebuilt.is_empty() {
                    String::new()
                } else {
                    format!(", ranks {:?} rebuilt from parity", report.rebuilt)
                };
                let current = newest_checkpoint_on_prefix(self.prefix)
                    .ok()
                    .flatten()
                    .is_some_and(|(n, _)| n == id);
                say(&format!(
                    "dataset {id} ({}) drained{}{rebuilt}",
                    report.name,
                    if current { " and current" } else { "" }
                ));
                Drained::Complete
            }
            Ok(IndexReport {
                name,
                kept_for_newer: Some(why),
                ..
            }) => {
                say(&format!(
                    "dataset {id} ({name}) is not put on the prefix: {why}; it stays in cache"
                ));
                Drained::KeptForNewer
            }
            Ok(report) => {
                say(&format!(
                    "dataset {id} ({}) cannot be completed: ranks {:?} missing",
                    report.name, report.missing
                ));
                Drained::Incomplete
            }
            Err(e) => {
                say(&format!("dataset {id}: {e}"));
                Drained::Incomplete
            }
        }
    }
}

pub fn postrun(args: PostrunArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    if !params.typed().enable {
        return Ok(ExitCode::SUCCESS);
    }
    // root draining a user's job (an epilog, an operator) drains as that user: the user may
    // swap what is below the prefix for links while root copies and deletes there. The
    // job's user owns its control directory (the prefix may be a team's, owned by another);
    // without one, the prefix's owner
    let cntl = control_dir(&params, &super::job_id(&params))?;
    // root with no control directory of the job here, on a way only root controls: one
    // made there later may be anyone's, so the caches are not read here at all (each
    // node's `scr copy` judges its own)
    let local_caches = super::act_as_owner_of(&cntl)? != super::Acting::RootWithoutDirectory;
    let prefix = super::owners_prefix_dir(args.prefix, &params)?;
    let down = match &args.down {
        Some(t) => nodeset(t, "--down")?,
        None => HostSet::new(),
    };
    let ok = postrun_with(&params, &prefix, &down, local_caches, &mut |line| {
        eprintln!("scr_postrun: {line}")
    })?;
    Ok(ExitCode::from(u8::from(!ok)))
}
