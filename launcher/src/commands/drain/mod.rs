//! The post-run drain: `scr copy` (`scr_copy`, one node), `scr scavenge` (`scr_scavenge`,
//! all nodes) and `scr postrun` (`scr_postrun`: find the newest dataset not on the prefix,
//! scavenge it, rebuild and index it, step back to older ones if it cannot be completed).

use crate::job::progress::DrainProgress;
use crate::job::remote::Rcmd;
use crate::job::{self, drain::Scavenge};
use hostlist::HostSet;
use prefix::drain_prefix;
use scr::dataset::Dataset;
use scr::layout;
use scr::params::{Params, Sources};
use scr::scavenge::{self, CachedOnNode, CopyOptions, cached_on_node};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod prefix;

/// What the drain calls with each dataset it drained complete: the prefix and the fields of
/// the event logs' FLUSH event (name, dset, bytes, secs, mb_per_s, files, `drain=1`).
pub type OnFlushed<'a> = dyn FnMut(&Path, &[(&str, String)]) + 'a;

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

/// The job's control directory: `<SCR_CNTL_BASE>/<user>/scr.<jobid>`, on a base whose way
/// nobody else may change ([`scr::safe_fs::check_base_way`]).
pub(crate) fn control_dir(params: &Params, job_id: &str) -> scr::Result<PathBuf> {
    let places = params.typed().places;
    let (user, base) = (places.user(), places.cntl_base);
    scr::safe_fs::check_base_way(Path::new(&base), "SCR_CNTL_BASE")?;
    layout::job_dir(Path::new(&base), &user, job_id)
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
    let _ = progress.finish();
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
    flushed: &mut OnFlushed<'_>,
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
        match drain_prefix(params, to, cached, known_down, say, flushed) {
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
    // each line in the database log too, as scr-run's drain logs it
    let user = params.typed().places.effective_user();
    let db = super::db_log(&params, &prefix, user.clone());
    let record = |fields: &[(&str, String)]| {
        if let Some(db) = &db {
            db.record("SCR_POSTRUN", chrono::Local::now(), fields);
        }
    };
    let text_log = super::TextLogOf::new(&params, &prefix, user, super::job_id(&params));
    let drained = postrun_with(
        &params,
        &prefix,
        &down,
        local_caches,
        &mut |line| {
            record(&[("message", line.to_string())]);
            eprintln!("scr_postrun: {line}")
        },
        // each dataset drained is a flush, as the library logs its own
        &mut |to, fields| {
            super::event_logs::log_drained(db.as_ref(), text_log.as_ref(), to, fields)
        },
    );
    match &drained {
        Ok(ok) => record(&[("drained", ok.to_string())]),
        Err(e) => record(&[("error", e.to_string())]),
    }
    if let Some(db) = db {
        db.close(super::DB_LOG_WAIT);
    }
    Ok(ExitCode::from(u8::from(!drained?)))
}
