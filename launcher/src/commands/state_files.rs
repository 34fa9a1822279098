//! Small queries over a prefix's state files, as SCR's C commands answer them:
//! `scr flush-file` (`scr_flush_file`), `scr retries-halt` (`scr_retries_halt`) and
//! `scr nodes-file` (`scr_nodes_file`). Their exit codes are SCR's, including its
//! inverted "0 = yes" conventions that batch scripts test. Root acts as the prefix's owner
//! ([`super::act_as_owner_of`]), and the files are read through handles.

use super::{owners_prefix, read_or_empty, read_state};
use scr::flush::FlushFile;
use scr::halt::HaltFile;
use scr::layout;
use scr::nodes::NodesFile;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Query the flush file: the newest dataset, whether one needs flushing, where it is",
    long_about = "Query <DIR>/.scr/flush.scr.\n\nExit codes: --needflush 0 when the dataset still needs a \
                  flush, 1 when not; --latest 0, or 1 when there is no dataset; --location 0, or 1 when the \
                  dataset is not recorded (prints NONE); --subdir 0, or 1 when no directory is recorded."
)]
#[command(group = clap::ArgGroup::new("query").required(true).args(["needflush", "latest", "location", "subdir"]))]
pub struct FlushFileArgs {
    /// The prefix directory
    #[arg(short = 'd', long)]
    dir: PathBuf,
    /// Exit 0 if dataset ID is cached but not yet on the prefix
    #[arg(short = 'n', long, value_name = "ID")]
    needflush: Option<u64>,
    /// Print the newest dataset id
    #[arg(short = 'l', long)]
    latest: bool,
    /// Print where dataset ID is (CACHE, FLUSHING, SYNC_FLUSHING, PFS; the newest first)
    #[arg(short = 'L', long, value_name = "ID")]
    location: Option<u64>,
    /// Print the prefix subdirectory (or name) recorded for dataset ID
    #[arg(short = 's', long, value_name = "ID")]
    subdir: Option<u64>,
}

pub fn flush_file(args: FlushFileArgs) -> scr::Result<ExitCode> {
    owners_prefix(&args.dir)?;
    let flush: FlushFile = read_or_empty(&args.dir, &layout::flush_file(&args.dir))?;
    let code = |yes: bool| ExitCode::from(if yes { 0 } else { 1 });
    if let Some(id) = args.needflush {
        return Ok(code(flush.needs_flush(id)));
    }
    if args.latest {
        return Ok(match flush.latest() {
            Some(id) => {
                println!("{id}");
                ExitCode::SUCCESS
            }
            None => ExitCode::from(1),
        });
    }
    if let Some(id) = args.location {
        let locations = flush.locations(id);
        println!("{}", locations.first().copied().unwrap_or("NONE"));
        return Ok(code(flush.contains(id)));
    }
    let id = args.subdir.expect("clap requires one query");
    match flush.dir(id).or(flush.name(id)) {
        Some(d) => {
            println!("{d}");
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

#[derive(clap::Args)]
#[command(
    about = "Decide whether a job should stop relaunching (exit 0 = halt, 1 = continue)",
    long_about = "Read <DIR>/.scr/halt.scr and decide as SCR's launcher does: halt when an ExitReason is \
                  set (SCR_FINALIZE_CALLED included: the run finished), no checkpoints are left, or the \
                  ExitBefore/HaltSeconds or ExitAfter time has passed. SCR_END_TIME (epoch seconds) gives \
                  the allocation end for HaltSeconds (the halt file's, else SCR_HALT_SECONDS).\n\nExit codes: 0 halt, 1 continue (SCR's convention), 2 an error (said: the halt \
                  file or the configuration cannot be read)."
)]
pub struct RetriesHaltArgs {
    /// The prefix directory
    #[arg(short = 'd', long)]
    dir: PathBuf,
}

pub fn retries_halt(args: RetriesHaltArgs) -> scr::Result<ExitCode> {
    owners_prefix(&args.dir)?;
    let halt = match read_state::<HaltFile>(&args.dir, &layout::halt_file(&args.dir)) {
        Ok(h) => h,
        Err(e) if e.is_not_found() => {
            println!("scr_retries_halt: CONTINUE RUN: No halt file found.");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e),
    };
    let params = scr::params::Params::load(&scr::params::Sources::from_process())?;
    let settings = params.typed();
    let halt = halt.with_halt_seconds_default(Some(settings.halt.seconds as i64));
    let now = chrono::Utc::now().timestamp();
    let left = scr::halt::seconds_until(settings.halt.end_time, now);
    match halt.decision(now, left) {
        Some(cause) => {
            println!("scr_retries_halt: HALT RUN: {cause}");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("scr_retries_halt: CONTINUE RUN: No halt condition.");
            Ok(ExitCode::from(1))
        }
    }
}

#[derive(clap::Args)]
#[command(
    about = "Print how many nodes the last run used (from <DIR>/.scr/nodes.scr); exit 1 if unknown"
)]
pub struct NodesFileArgs {
    /// The prefix directory
    #[arg(short = 'd', long)]
    dir: PathBuf,
}

pub fn nodes_file(args: NodesFileArgs) -> scr::Result<ExitCode> {
    owners_prefix(&args.dir)?;
    let nodes: NodesFile = read_or_empty(&args.dir, &layout::nodes_file(&args.dir))?;
    match nodes.nodes() {
        Some(n) => {
            println!("{n}");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("0");
            Ok(ExitCode::from(1))
        }
    }
}
