//! The post-run drain: `scr copy` (`scr_copy`, one node), `scr scavenge` (`scr_scavenge`,
//! all nodes) and `scr postrun` (`scr_postrun`: find the newest dataset not on the prefix,
//! scavenge it, rebuild and index it, step back to older ones if it cannot be completed).

use crate::job::progress::DrainProgress;
use crate::job::remote::Rcmd;
use crate::job::{self, DownNodeQuery, drain::Scavenge};
use hostlist::HostSet;
use scr::flush::FlushFile;
use scr::params::{Params, Sources};
use scr::scavenge::{self, CopyOptions, DrainPlan};
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
    let host = job::local_host_name();
    let mut last_said = None::<std::time::Instant>;
    let mut say_progress = |p: scavenge::CopyProgress| {
        let due = last_said.is_none_or(|t| t.elapsed().as_millis() >= 200) || p.done == p.total;
        if args.progress && due {
            last_said = Some(std::time::Instant::now());
            println!("scr_copy: {host}: Progress: {} {}", p.done, p.total);
        }
    };
    let report = scavenge::copy_node(
        &args.cntldir,
        args.id,
        &args.dstdir,
        &CopyOptions {
            buf_size: args.buf,
            failed_owners: args.failed,
        },
        &mut say_progress,
    );
    let (partners, rc) = match &report {
        Ok(r) => {
            for e in &r.errors {
                eprintln!("scr_copy: {host}: ERROR: {e}");
            }
            (r.partners.join(" "), i32::from(!r.errors.is_empty()))
        }
        Err(e) => {
            eprintln!("scr_copy: {host}: ERROR: {e}");
            (String::new(), 1)
        }
    };
    println!("scr_copy: {host}: Partners: {partners}");
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
    for r in results {
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
                  first every output dataset, oldest first (stopping at one that cannot be \
                  completed), then the newest checkpoint, stepping back to older ones when one \
                  cannot be completed but never past a checkpoint already on the prefix: an \
                  older checkpoint is neither copied nor made current. Each dataset is copied \
                  from every node still up; what lost nodes held is rebuilt from PARTNER copies, \
                  XOR or Reed–Solomon parity; a dataset that cannot be completed is indexed as \
                  incomplete so restarts skip it.\n\nExit codes: 0 when everything drained (or \
                  nothing needed it), 1 when an output dataset was lost or no checkpoint the \
                  drain tried could be completed."
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

/// The drain of `prefix` after a job; `known_down` are nodes the launcher found down.
///
/// As SCR v3's `scr_postrun`: first every output dataset still in cache, oldest first,
/// stopping at the first that cannot be completed; then the newest checkpoint, going to
/// older ones when one cannot be completed, but never past a checkpoint already on the
/// prefix (nor past an output dataset that was lost, so the job restarts from before it
/// and writes that output again). A checkpoint older than the newest one on the prefix is
/// not copied at all, and publishing never makes it current. Returns false when an output
/// dataset was lost, or when every checkpoint the drain tried could not be completed.
pub fn postrun_with(
    params: &Params,
    prefix: &Path,
    known_down: &HostSet,
    say: &mut dyn FnMut(&str),
) -> scr::Result<bool> {
    let Some(plan) = DrainPlan::read(prefix)? else {
        say("no flush file: nothing to drain");
        return Ok(true);
    };
    let flush_name = |id: u64| plan_name(prefix, id);
    if let Some((_, newest)) = &plan.newest_on_prefix {
        for &id in &plan.superseded {
            say(&format!(
                "dataset {id} ({}) is older than {newest}, the newest checkpoint on the \
                 prefix: not drained",
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
        say("every dataset is on the prefix: nothing to drain");
        return Ok(true);
    }
    let mut drain = Drain::new(params, prefix, known_down)?;
    let mut drained = Vec::new();
    let mut lost_output = None;
    for &id in &plan.outputs {
        if drain.dataset(id, &flush_name(id), say) {
            drained.push(id);
        } else {
            say(&format!(
                "output dataset {id} ({}) is lost; checkpoints after it are not drained, so \
                 the job restarts from before it and writes it again",
                flush_name(id)
            ));
            lost_output = Some(id);
            break;
        }
    }
    // whether every checkpoint this drain tried to copy could not be completed
    let mut checkpoint_lost = false;
    for &id in plan
        .checkpoints
        .iter()
        .filter(|&&d| lost_output.is_none_or(|l| d < l))
    {
        if drained.contains(&id) {
            checkpoint_lost = false;
            break;
        }
        checkpoint_lost = !drain.dataset(id, &flush_name(id), say);
        if !checkpoint_lost {
            break;
        }
    }
    if plan.checkpoints.is_empty() || checkpoint_lost {
        say_already_flushed(say);
    }
    Ok(!checkpoint_lost && lost_output.is_none())
}

/// A dataset's name as the flush file records it (`?` when it does not).
fn plan_name(prefix: &Path, id: u64) -> String {
    FlushFile::read(&layout::flush_file(prefix))
        .ok()
        .and_then(|f| f.name(id).map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The newest checkpoint a restart could load from the prefix (id, name).
fn newest_checkpoint_on_prefix(prefix: &Path) -> scr::Result<Option<(u64, String)>> {
    match scr::index::IndexFile::read(&layout::index_file(prefix)) {
        Ok(index) => Ok(index.newest_usable_checkpoint().map(|e| (e.id, e.name))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
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
    /// it; true when it is complete on the prefix.
    fn dataset(&mut self, id: u64, name: &str, say: &mut dyn FnMut(&str)) -> bool {
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
                true
            }
            Ok(report) => {
                say(&format!(
                    "dataset {id} ({}) cannot be completed: ranks {:?} missing",
                    report.name, report.missing
                ));
                false
            }
            Err(e) => {
                say(&format!("dataset {id}: {e}"));
                false
            }
        }
    }
}

pub fn postrun(args: PostrunArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    if !params.typed().enable {
        return Ok(ExitCode::SUCCESS);
    }
    let prefix = super::prefix_dir(args.prefix, &params)?;
    let down = match &args.down {
        Some(t) => nodeset(t, "--down")?,
        None => HostSet::new(),
    };
    let ok = postrun_with(&params, &prefix, &down, &mut |line| {
        eprintln!("scr_postrun: {line}")
    })?;
    Ok(ExitCode::from(u8::from(!ok)))
}
