//! Node and job environment commands: `scr list-down-nodes` (`scr_list_down_nodes`),
//! `scr check-node` (`scr_check_node`), `scr env` (`scr_env`), `scr prerun`
//! (`scr_prerun`) and `scr test-runtime` (`scr_test_runtime`), with SCR's flags, output
//! and exit codes.

use crate::job::{self, DownNodeQuery, NodeCheck};
use hostlist::HostSet;
use scr::layout;
use scr::params::{Params, Sources};
use std::path::PathBuf;
use std::process::ExitCode;

fn fail(what: impl std::fmt::Display) -> scr::Error {
    scr::Error::refused(what.to_string())
}

/// The node test SCR's configuration asks for: CNTLDIR/CACHEDIR lines with their BYTES,
/// else the control and cache bases.
pub fn configured_node_check(params: &Params, free: bool) -> NodeCheck {
    let mut dirs: Vec<(PathBuf, Option<u64>)> = Vec::new();
    for key in ["CNTLDIR", "CACHEDIR"] {
        for d in params.descriptors_of(key) {
            let bytes = d
                .attr("BYTES")
                .and_then(|b| scr::units::parse_bytecount(b).ok());
            dirs.push((PathBuf::from(&d.name), bytes));
        }
    }
    if dirs.is_empty() {
        let settings = params.typed();
        for base in [
            settings.places.cntl_base.as_str(),
            settings.redundancy.cache_base.as_str(),
        ] {
            if !dirs.iter().any(|(d, _)| d == &PathBuf::from(base)) {
                dirs.push((PathBuf::from(base), None));
            }
        }
    }
    NodeCheck {
        dirs,
        free,
        user: job_user_for_root(),
    }
}

/// For root, the job's user when it is another with an account: the name each node's test
/// runs as (over pdsh or ssh the nodes see root's own environment, not the job's).
fn job_user_for_root() -> Option<String> {
    // SAFETY: geteuid has no preconditions
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    scr::layout::job_account_for_root().map(|a| a.name.to_string_lossy().into_owned())
}

#[derive(clap::Args)]
#[command(
    about = "List the allocation's nodes that cannot be used (exit 1 if any)",
    long_about = "List the nodes that cannot be used: reported down or drained by the resource \
                  manager, not answering a ping (all pinged at once), excluded by SCR_EXCLUDE_NODES \
                  or --down, or failing the node test (`scr check-node` on each node: control and \
                  cache directories reachable, writable and large enough).\n\nOutput: one \
                  compressed host list, or `node: reason` lines with --reason; nothing when all are \
                  up. Exit codes: 1 when a node is down, 0 otherwise (SCR's)."
)]
pub struct ListDownArgs {
    /// Print `node: reason` for each down node
    #[arg(short = 'r', long)]
    reason: bool,
    /// Check free space instead of capacity in the node test
    #[arg(short = 'f', long)]
    free: bool,
    /// Nodes already known down
    #[arg(short = 'd', long, value_name = "NODESET")]
    down: Option<String>,
    /// Also report each down node as an event on stderr (SCR logs to its database)
    #[arg(short = 'l', long)]
    log: bool,
    /// Seconds the run lasted, for --log
    #[arg(short = 's', long, value_name = "N")]
    secs: Option<u64>,
    /// The nodes to check [default: the allocation's]
    nodeset: Option<String>,
}

pub fn list_down_nodes(args: ListDownArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    let rm = job::detect_resource_manager();
    let nodes = match &args.nodeset {
        Some(text) => text
            .parse::<HostSet>()
            .map_err(|e| fail(format!("nodeset {text:?}: {e}")))?,
        None => rm.nodes().map_err(fail)?,
    };
    let down = job::list_down_nodes(&DownNodeQuery {
        resource_manager: rm.as_ref(),
        nodes,
        known_down: super::host_set(args.down.as_deref(), "--down")?,
        exclude: super::excluded_nodes(&params)?,
        node_check: Some(configured_node_check(&params, args.free)),
    });
    if down.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    if args.reason {
        for d in &down {
            println!("{}: {}", d.node, d.reason);
        }
    } else {
        println!(
            "{}",
            HostSet::from_names(down.iter().map(|d| d.node.as_str()))
        );
    }
    if args.log {
        for d in &down {
            let secs = args
                .secs
                .map(|s| format!(" after {s} s"))
                .unwrap_or_default();
            eprintln!(
                "scr_list_down_nodes: FAILED NODE {}: {}{secs}",
                d.node, d.reason
            );
        }
    }
    Ok(ExitCode::from(1))
}

#[derive(clap::Args)]
#[command(
    about = "Test this node's control and cache directories (prints PASS, or FAIL lines and exit 1)",
    long_about = "Test this node as SCR's scr_check_node does: each directory must be readable, \
                  hold at least BYTES (capacity, or free space with --free) and accept a new file. \
                  Directories are given as DIR[:BYTES], comma-separated; without any, the CNTLDIR \
                  and CACHEDIR lines of the configuration (else the control and cache bases) are \
                  tested."
)]
pub struct CheckNodeArgs {
    /// Compare free space, not capacity
    #[arg(long)]
    free: bool,
    /// Control directories, DIR[:BYTES],...
    #[arg(long, value_name = "DIRS")]
    cntl: Vec<String>,
    /// Cache directories, DIR[:BYTES],...
    #[arg(long, value_name = "DIRS")]
    cache: Vec<String>,
    /// Run as root: test with this user's rights (their ids and groups), as their job
    /// would use the directories [default: the job's user, SCR_USER_NAME or USER]
    #[arg(long, value_name = "USER")]
    user: Option<String>,
}

fn parse_dirs(list: &[String]) -> scr::Result<Vec<(PathBuf, Option<u64>)>> {
    let mut out = Vec::new();
    for item in list
        .iter()
        .flat_map(|l| l.split(','))
        .filter(|s| !s.is_empty())
    {
        let (dir, bytes) = match item.rsplit_once(':') {
            Some((d, b)) if !d.is_empty() => (
                d,
                Some(
                    scr::units::parse_bytecount(b)
                        .map_err(|e| fail(format!("{item:?}: size {b:?}: {e}")))?,
                ),
            ),
            _ => (item, None),
        };
        out.push((PathBuf::from(dir), bytes));
    }
    Ok(out)
}

pub fn check_node(args: CheckNodeArgs) -> scr::Result<ExitCode> {
    let mut dirs = parse_dirs(&args.cntl)?;
    dirs.extend(parse_dirs(&args.cache)?);
    let mut check = if dirs.is_empty() {
        configured_node_check(&Params::load(&Sources::from_process())?, args.free)
    } else {
        NodeCheck {
            dirs,
            free: args.free,
            user: None,
        }
    };
    if args.user.is_some() {
        check.user = args.user;
    }
    let failures = job::check_node(&check);
    if failures.is_empty() {
        println!("PASS");
        return Ok(ExitCode::SUCCESS);
    }
    for f in failures {
        println!("{f}");
    }
    Ok(ExitCode::from(1))
}

#[derive(clap::Args)]
#[command(
    about = "Print facts about the job: user, job id, nodes, down nodes, nodes of the last run, end time",
    long_about = "Print one fact about the running job as SCR's scr_env does. Exit 1 when it is \
                  unknown (prints 0 for --runnodes)."
)]
#[command(group = clap::ArgGroup::new("fact").required(true).args(["user", "jobid", "nodes", "down", "runnodes", "endtime"]))]
pub struct EnvArgs {
    /// The user name
    #[arg(short = 'u', long)]
    user: bool,
    /// The job id the library names directories after (SCR_JOB_ID, else the resource
    /// manager's, else defjobid)
    #[arg(short = 'j', long)]
    jobid: bool,
    /// The allocation's nodes
    #[arg(short = 'n', long)]
    nodes: bool,
    /// Nodes the resource manager reports down
    #[arg(short = 'd', long)]
    down: bool,
    /// Nodes the last run used (from the prefix's nodes file; needs --prefix)
    #[arg(short = 'r', long)]
    runnodes: bool,
    /// When the allocation ends (seconds since the epoch)
    #[arg(short = 'e', long)]
    endtime: bool,
    /// The prefix directory (for --runnodes)
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
}

pub fn env(args: EnvArgs) -> scr::Result<ExitCode> {
    let rm = job::detect_resource_manager();
    let answer: Option<String> = if args.user {
        Some(
            Params::load(&Sources::from_process())?
                .typed()
                .places
                .user(),
        )
    } else if args.jobid {
        Some(super::job_id(&Params::load(&Sources::from_process())?))
    } else if args.nodes {
        rm.nodes().ok().map(|n| n.to_string())
    } else if args.down {
        let nodes = rm.nodes().map_err(fail)?;
        let down = rm.down_nodes(&nodes);
        Some(HostSet::from_names(down.iter().map(|d| d.node.as_str())).to_string())
    } else if args.runnodes {
        let prefix = match args.prefix {
            Some(p) => p,
            None => std::env::current_dir()
                .map_err(|e| scr::Error::io(".", "read the working directory", e))?,
        };
        super::owners_prefix(&prefix)?;
        match super::read_state::<scr::nodes::NodesFile>(&prefix, &layout::nodes_file(&prefix))
            .ok()
            .and_then(|n| n.nodes())
        {
            Some(n) => Some(n.to_string()),
            None => {
                println!("0");
                return Ok(ExitCode::from(1));
            }
        }
    } else {
        std::env::var("SCR_END_TIME")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .or_else(|| rm.end_time())
            .map(|t| t.to_string())
    };
    match answer {
        Some(a) => {
            println!("{a}");
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

#[derive(clap::Args)]
#[command(
    about = "Prepare a prefix for a new job (scr-run does this itself)",
    long_about = "Prepare the prefix for a new job as SCR's scr_prerun does: remove the last job's \
                  flush and nodes files (of the flush file, only the record of a flush a kill cut \
                  short stays, for the next job to sweep what it left), keep the halt file but \
                  clear a SCR_FINALIZE_CALLED reason (it would end the next job's relaunch loop \
                  after a failed first run). Exit 0, or 1 on failure."
)]
pub struct PrerunArgs {
    /// The prefix directory [default: SCR_PREFIX, else the working directory]
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
}

pub fn prerun(args: PrerunArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    if !params.typed().enable {
        return Ok(ExitCode::SUCCESS);
    }
    let prefix = super::prefix_dir(args.prefix, &params)?;
    // root prepares a user's prefix as that user; one not there at all it leaves to the
    // job's first SCR_Init (a directory root made there, in a sticky scratch area whose
    // names anyone may take, could end up anywhere and would be root's, not the user's)
    if super::act_as_owner_of(&prefix)? == super::Acting::RootWithoutDirectory {
        println!(
            "scr prerun: {} is not there: nothing to prepare (the job's SCR_Init makes it)",
            prefix.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    scr::prefix::guard::check_path_not_redirectable(&prefix, params.typed().prefix.shared)?;
    if let Some(warning) = scr::prefix::prerun(&prefix)? {
        eprintln!("scr prerun: WARNING: {warning}");
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
#[command(
    about = "Check that the commands the launcher needs are here (exit 1 naming what is missing)"
)]
pub struct TestRuntimeArgs {}

pub fn test_runtime(_args: TestRuntimeArgs) -> scr::Result<ExitCode> {
    let on_path = job::remote::on_path;
    let mut missing = Vec::new();
    if !on_path("ping") {
        missing.push("ping (iputils-ping): down-node detection pings nodes");
    }
    if job::detect_resource_manager().nodes_are_hosts() && !on_path("pdsh") && !on_path("ssh") {
        missing.push("pdsh or ssh: node tests and the drain run commands on every node");
    }
    if missing.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for m in missing {
        eprintln!("scr_test_runtime: ERROR: missing {m}");
    }
    Ok(ExitCode::from(1))
}
