//! SCR v3.1's job commands (its `run.rst`): `scr should-exit` (`scr_should_exit`),
//! `scr ckpt-interval` (`scr_ckpt_interval`), `scr inspect` (`scr_inspect`) and
//! `scr kill-jobstep` (`scr_kill_jobstep`).

use super::report::figures::FiguresSoFar;
use super::report::launches::Launches;
use crate::job::child;
use scr::event_log;
use scr::flush::{FlushFile, Location};
use scr::halt::HaltFile;
use scr::index::IndexFile;
use scr::params::{Params, Sources};
use scr::{Error, layout};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Exit 0 when the job should stop (a halt condition, or too little time left), else 1",
    long_about = "Decide, as the library does, whether the job should stop: the prefix's halt file \
                  (scr halt's conditions, checkpoints left, a reason already recorded) and the time \
                  left in the allocation (SCR_END_TIME, epoch seconds) against SCR_HALT_SECONDS. \
                  For batch scripts between runs: `scr_should_exit || srun …`.\n\n\
                  Exit codes: 0 the job should stop (the reason is printed), 1 it may go on, 2 an \
                  error (said: the state or configuration cannot be read)."
)]
pub struct ShouldExitArgs {
    /// The prefix directory (default: SCR_PREFIX, scr.conf, the working directory)
    #[arg(short = 'p', long, alias = "dir", value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Nodes known to be down (SCR v3.1's --down): too few left also stops the job
    #[arg(long, value_name = "NODESET")]
    down: Option<String>,
    /// Nodes the job needs [default: SCR_MIN_NODES, else the last run's, else all]
    #[arg(long, value_name = "N")]
    min_nodes: Option<u64>,
    /// Accepted for SCR v3.1's scripts (which ignore it too)
    #[arg(long, value_name = "N")]
    runs: Option<u64>,
    /// Say what was checked
    #[arg(short = 'v', long)]
    verbose: bool,
}

pub fn should_exit(args: ShouldExitArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    let prefix = super::owners_prefix_dir(args.prefix, &params)?;
    let halt: HaltFile = super::read_or_empty(&prefix, &layout::halt_file(&prefix))?;
    let settings = params.typed();
    let halt = halt.with_halt_seconds_default(Some(settings.halt.seconds as i64));
    let now = chrono::Utc::now().timestamp();
    let remaining = scr::halt::seconds_until(settings.halt.end_time, now);
    if let Some(cause) = halt.decision(now, remaining) {
        println!("scr_should_exit: the job should stop: {cause}");
        return Ok(ExitCode::SUCCESS);
    }
    // too few nodes left for another run (as v3.1's scr_should_exit)
    if args.down.is_some() || args.min_nodes.is_some() {
        let nodes = crate::job::detect_resource_manager()
            .nodes()
            .map_err(Error::refused)?;
        let down = super::host_set(args.down.as_deref(), "--down")?;
        let left = nodes.difference(&down).count();
        let last_run = || {
            super::read_state::<scr::nodes::NodesFile>(&prefix, &layout::nodes_file(&prefix))
                .ok()
                .and_then(|n| n.nodes())
        };
        let needed = args
            .min_nodes
            .or_else(|| settings.launch.min_nodes.filter(|&n| n > 0))
            .or_else(last_run)
            .unwrap_or(nodes.count());
        if args.verbose {
            println!("scr_should_exit: {left} node(s) left of {nodes}, {needed} needed");
        }
        if left < needed {
            println!(
                "scr_should_exit: the job should stop: nodes_remaining={left} < nodes_needed={needed}"
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    if args.verbose {
        println!("scr_should_exit: no halt condition; the job may go on");
    }
    Ok(ExitCode::from(1))
}

#[derive(clap::Args)]
#[command(
    about = "Compute the optimal checkpoint interval from the event log (Young or Daly)",
    long_about = "Read <prefix>/.scr/log (written with SCR_LOG_ENABLE=1): the mean cost C of a \
                  checkpoint, and the mean time between failures M (run time divided by the runs \
                  that ended without SCR_Finalize or a halt and were started again, or that \
                  scr-run saw end badly; with no \
                  failure yet, at least the run time observed, and the interval printed is a \
                  lower bound). Print the interval in seconds by Daly's formula (default) or \
                  Young's, sqrt(2CM).\n\n\
                  Exit codes: 0 printed; 1 no log, or no checkpoint in it to compute from."
)]
pub struct CkptIntervalArgs {
    /// The prefix directory (default: SCR_PREFIX, scr.conf, the working directory)
    #[arg(short = 'p', long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// The prefix directory, as `scr report` takes it
    #[arg(value_name = "PREFIX", conflicts_with = "prefix")]
    prefix_operand: Option<PathBuf>,
    /// Young's first-order formula instead of Daly's
    #[arg(long)]
    young: bool,
    /// Also print what the interval was computed from
    #[arg(long)]
    stats: bool,
    /// Print the share of run time checkpointing takes at that interval, C / (interval + C)
    #[arg(long)]
    percent: bool,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

/// An interval as SCR_CHECKPOINT_SECONDS takes it: whole seconds, rounded, at least 1.
fn whole_seconds(interval: f64) -> u64 {
    if interval.is_finite() {
        interval.round().max(1.0) as u64
    } else {
        1
    }
}

pub fn ckpt_interval(args: CkptIntervalArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    let prefix = super::owners_prefix_dir(args.prefix.or(args.prefix_operand), &params)?;
    let path = event_log::log_path(&prefix);
    // the log read as `scr report` reads it (scr-run's lines among the library's), so the
    // two never disagree on a run's ending
    let mut so_far = FiguresSoFar::default();
    let mut launches = Launches::default();
    let skipped = match event_log::stream(&path, |e| launches.add(e, &mut so_far)) {
        Ok(skipped) => {
            if !skipped.nothing() {
                eprintln!("scr_ckpt_interval: {}: skipped {skipped}", path.display());
            }
            skipped
        }
        Err(e) => {
            eprintln!(
                "scr_ckpt_interval: {}: {e}; run the job with SCR_LOG_ENABLE=1 (and \
                 SCR_LOG_TXT_ENABLE=1, its default) to record one",
                path.display()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let stats = so_far.finish(skipped).stats;
    if stats.checkpoints == 0 {
        eprintln!(
            "scr_ckpt_interval: {} records no completed checkpoint yet ({} run(s)): run the \
             job with SCR_LOG_ENABLE=1 until it checkpoints",
            path.display(),
            stats.runs
        );
        return Ok(ExitCode::from(1));
    }
    let Some((mtbf, lower_bound)) = stats.mtbf_estimate() else {
        eprintln!(
            "scr_ckpt_interval: {} records {} checkpoint(s) but no run time to estimate the \
             time between failures from (no run's start and end): run the job with \
             SCR_LOG_ENABLE=1 through a whole run",
            path.display(),
            stats.checkpoints
        );
        return Ok(ExitCode::from(1));
    };
    if lower_bound && !args.json {
        eprintln!(
            "scr_ckpt_interval: no failure in the log yet: the mean time between failures is \
             taken as the {:.0} s observed without one, so the interval is a lower bound (it \
             grows as the job keeps running without failures)",
            stats.run_seconds
        );
    }
    let cost = stats.mean_checkpoint_seconds;
    let (young, daly) = (event_log::young(cost, mtbf), event_log::daly(cost, mtbf));
    let interval = if args.young { young } else { daly };
    let percent = 100.0 * cost / (interval + cost);
    if args.json {
        println!(
            "{}",
            json!({
                "interval_seconds": interval, "formula": if args.young { "young" } else { "daly" },
                "young_seconds": young, "daly_seconds": daly, "percent_checkpointing": percent,
                "runs": stats.runs, "failures": stats.failures, "run_seconds": stats.run_seconds,
                "mtbf_seconds": mtbf, "mtbf_lower_bound": lower_bound,
                "checkpoints": stats.checkpoints,
                "mean_checkpoint_seconds": cost,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.stats {
        println!("runs: {}", stats.runs);
        println!("failures: {}", stats.failures);
        println!("run time: {:.1} s", stats.run_seconds);
        println!("mean time between failures: {mtbf:.1} s");
        println!("checkpoints: {}", stats.checkpoints);
        println!("mean checkpoint cost: {cost:.3} s");
        println!("Young: {young:.1} s");
        println!("Daly: {daly:.1} s");
    }
    if args.percent {
        // (an interval under ten seconds, as a test's log gives, keeps its fraction)
        let digits = if interval < 10.0 { 2 } else { 0 };
        println!("{percent:.2} % of run time checkpointing at {interval:.digits$} s");
    }
    if !args.stats && !args.percent {
        // whole seconds, as SCR_CHECKPOINT_SECONDS takes them, and never 0 (which turns
        // checkpointing by time off): an interval under a second is one second
        println!("{}", whole_seconds(interval));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
#[command(
    about = "List a prefix's datasets: complete on the prefix, or to be scavenged from cache",
    long_about = "Report, from <prefix>/.scr/index.scr and flush.scr, each dataset: complete and \
                  usable for a restart, incomplete or failed, or only in cache (the drain, \
                  `scr postrun` or `scr scavenge`, must copy it before the allocation ends).\n\n\
                  Exit codes: 0 listed; 1 the state files cannot be read."
)]
pub struct InspectArgs {
    /// The prefix directory (default: SCR_PREFIX, scr.conf, the working directory)
    #[arg(short = 'p', long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

pub fn inspect(args: InspectArgs) -> scr::Result<ExitCode> {
    let params = Params::load(&Sources::from_process())?;
    let prefix = super::owners_prefix_dir(args.prefix, &params)?;
    let index: IndexFile = super::read_or_empty(&prefix, &layout::index_file(&prefix))?;
    let flush: FlushFile = super::read_or_empty(&prefix, &layout::flush_file(&prefix))?;
    let mut rows = Vec::new();
    for e in index.entries() {
        let state = if !e.failed.is_empty() {
            "FAILED"
        } else if e.complete {
            "COMPLETE"
        } else {
            "INCOMPLETE"
        };
        rows.push((e.id, e.name, state));
    }
    for id in flush.datasets() {
        if rows.iter().any(|(i, _, _)| *i == id) || !flush.has_location(id, Location::Cache) {
            continue;
        }
        let name = flush.name(id).unwrap_or_default().to_string();
        rows.push((id, name, "SCAVENGE"));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, name, state)| json!({ "dset": id, "name": name, "state": state }))
            .collect();
        println!("{}", json!({ "prefix": prefix, "datasets": list }));
    } else {
        println!("DSET STATE      NAME");
        for (id, name, state) in &rows {
            println!("{id:>4} {state:<10} {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
#[command(
    about = "Kill a job step (SLURM: scancel), as SCR's scripts do to stop a hung run",
    long_about = "Kill the job step JOBSTEP (`<jobid>.<step>`) with the resource manager's own \
                  tool: SLURM's scancel.\n\nExit codes: 0 killed; 1 the step id is malformed or \
                  scancel failed."
)]
pub struct KillJobstepArgs {
    /// The job step id, e.g. 1234.5
    #[arg(short = 'j', long = "jobstepid", value_name = "JOBSTEP")]
    jobstep: String,
}

pub fn kill_jobstep(args: KillJobstepArgs) -> scr::Result<ExitCode> {
    let valid = args.jobstep.split('.').count() <= 2
        && args
            .jobstep
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !valid {
        return Err(Error::invalid(
            "--jobstepid",
            format!(
                "{:?} is not a job step id (digits, or <job>.<step>)",
                args.jobstep
            ),
        ));
    }
    child::read("scancel", [args.jobstep.as_str()]).map_err(|e| Error::Config {
        origin: "scancel".into(),
        what: e.to_string(),
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::whole_seconds;

    /// SCR_CHECKPOINT_SECONDS=0 turns checkpointing by time off: no interval prints as 0.
    #[test]
    fn an_interval_prints_as_whole_seconds_never_zero() {
        assert_eq!(whole_seconds(0.2), 1);
        assert_eq!(whole_seconds(-3.0), 1);
        assert_eq!(whole_seconds(f64::NAN), 1);
        assert_eq!(whole_seconds(59.5), 60);
        assert_eq!(whole_seconds(3600.2), 3600);
    }
}
