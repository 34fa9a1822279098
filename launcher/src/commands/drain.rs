//! The post-run drain: `scr copy` (`scr_copy`, one node), `scr scavenge` (`scr_scavenge`,
//! all nodes) and `scr postrun` (`scr_postrun`: find the newest dataset not on the prefix,
//! scavenge it, rebuild and index it, step back to older ones if it cannot be completed).

use crate::job::progress::DrainProgress;
use crate::job::remote::Rcmd;
use crate::job::{self, DownNodeQuery, drain::Scavenge};
use hostlist::HostSet;
use scr::flush::FlushFile;
use scr::params::{Params, Sources};
use scr::scavenge::{self, CopyOptions};
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
    let user = layout::user_name().unwrap_or_else(|| "unknown".into());
    layout::job_dir(
        Path::new(params.get("SCR_CNTL_BASE").unwrap_or("/tmp")),
        &user,
        job_id,
    )
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
        .map_or_else(|| control_dir(&params, &rm.job_id()), Ok)?;
    let run = Scavenge {
        cntl_dir: &cntl,
        prefix: &args.to,
        id: args.id,
        buf_size: params.bytes("SCR_FILE_BUF_SIZE").unwrap_or(1 << 20) as usize,
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
    about = "After the last run: drain the newest checkpoint not yet on the prefix",
    long_about = "Find the datasets the flush file says are only in cache (newest first); for \
                  each, copy it from every node still up, rebuild what lost nodes held from \
                  PARTNER copies, XOR or Reed–Solomon parity, and index it; stop at the first \
                  that is complete (it becomes current) and mark incomplete ones so restarts \
                  skip them.\n\nExit codes: 0 when a dataset was drained or none needed it, 1 when \
                  none could be completed."
)]
pub struct PostrunArgs {
    /// The prefix directory [default: SCR_PREFIX, else the working directory]
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
    /// Nodes known down (scr-run passes those it excluded)
    #[arg(long, value_name = "NODESET")]
    down: Option<String>,
}

/// The drain of `prefix` after a job; `known_down` are nodes the launcher found down.
pub fn postrun_with(
    params: &Params,
    prefix: &Path,
    known_down: &HostSet,
    say: &mut dyn FnMut(&str),
) -> scr::Result<bool> {
    let flush = match FlushFile::read(&layout::flush_file(prefix)) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => {
            say("no flush file: nothing to drain");
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    let mut candidates: Vec<u64> = flush
        .datasets()
        .into_iter()
        .filter(|&d| flush.needs_flush(d))
        .collect();
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    if candidates.is_empty() {
        say("every dataset is on the prefix: nothing to drain");
        return Ok(true);
    }
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
    let cntl = control_dir(params, &rm.job_id())?;
    let buf_size = params.bytes("SCR_FILE_BUF_SIZE").unwrap_or(1 << 20) as usize;
    for id in candidates {
        say(&format!(
            "draining dataset {id} from {} node(s){}",
            up.count(),
            if down.is_empty() {
                String::new()
            } else {
                format!(" ({down} down)")
            }
        ));
        let run = Scavenge {
            cntl_dir: &cntl,
            prefix,
            id,
            buf_size,
            rcmd: rcmd_for(rm.as_ref()),
            fanout: 256,
        };
        // the progress display names each node that failed, and why
        let mut progress = DrainProgress::new("scr_postrun", up.count() as usize);
        run.run(&up, &down, &mut progress);
        progress.finish();
        match scavenge::index_dataset(prefix, id, buf_size) {
            Ok(report) if report.complete => {
                let rebuilt = if report.rebuilt.is_empty() {
                    String::new()
                } else {
                    format!(", ranks {:?} rebuilt from parity", report.rebuilt)
                };
                say(&format!(
                    "dataset {id} ({}) drained and current{rebuilt}",
                    report.name
                ));
                return Ok(true);
            }
            Ok(report) => say(&format!(
                "dataset {id} ({}) cannot be completed: ranks {:?} missing; trying an older one",
                report.name, report.missing
            )),
            Err(e) => say(&format!("dataset {id}: {e}; trying an older one")),
        }
    }
    Ok(false)
}

pub fn postrun(args: PostrunArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    if !params.bool("SCR_ENABLE") {
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
