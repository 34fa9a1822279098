//! `scr transfer` (SCR's `scr_transfer`): the per-node agent of asynchronous flushes. It
//! copies the files the library lists in the node's transfer file to the prefix, paced by
//! the file's BW and PERCENT, and records each as WRITTEN (with its CRC) once fsynced; it
//! obeys COMMAND (RUN, STOP, EXIT) and reports STATE and its PID. scr-run starts one on
//! every node when SCR_FLUSH_ASYNC=1 and tells them to exit after the last run. Without an
//! agent the library's own background thread does the same copies.

use scr::HashView;
use scr::params::{Params, Sources};
use scr::transfer::{self, Command, State, Throttle, TransferFile};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

#[derive(clap::Args)]
#[command(
    about = "The per-node agent of asynchronous flushes (scr_transfer)",
    long_about = "Copy the files the SCR library lists in this node's transfer file \
                  (<cntldir>/transfer.scrinfo) to the prefix, paced by its BW and PERCENT, \
                  recording each as WRITTEN once fsynced, until its COMMAND is EXIT. The file \
                  is looked at whenever it changes and every SCR_TRANSFER_SECS. scr-run starts \
                  one per node when SCR_FLUSH_ASYNC=1. With --exit: ask the running agent to \
                  exit and return."
)]
pub struct Args {
    /// The job's control directory on this node
    #[arg(long, value_name = "DIR", conflicts_with = "file")]
    cntldir: Option<PathBuf>,
    /// The transfer file itself (SCR's scr_transfer argument)
    #[arg(value_name = "TRANSFER_FILE")]
    file: Option<PathBuf>,
    /// Ask the agent to exit
    #[arg(long)]
    exit: bool,
}

fn mtime(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let path = match (args.file, args.cntldir) {
        (Some(f), _) => f,
        (None, Some(d)) => scr::layout::transfer_file(&d),
        (None, None) => {
            return Err(scr::Error::Config {
                origin: "scr transfer".into(),
                what: "give the control directory (--cntldir DIR) or the transfer file".into(),
            });
        }
    };
    if let Some(dir) = path.parent() {
        scr::safe_fs::create_dirs_in(dir.parent().unwrap_or(dir), dir, scr::layout::DIR_MODE)?;
    }
    if args.exit {
        let agent = TransferFile::update_past_agent(&path, |t| {
            t.set_command(Command::Exit);
            Ok(t.agent_pid())
        })?;
        // a stopped agent cannot do as asked, and one still running its copies when the
        // job is over has a few seconds to see the command: then it is ended, so that no
        // copy of its lands after the job (its half-written temporaries removed with it)
        if let Some(pid) = agent {
            let asked = Instant::now();
            while let transfer::Agent::Live(_) = transfer::agent_process(pid) {
                if asked.elapsed() > Duration::from_secs(5) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if transfer::agent_process(pid) != transfer::Agent::Gone {
                transfer::end_agent(&path, pid);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let params = Params::load(&Sources::from_process())?;
    let period = Duration::from_secs_f64(params.typed().launch.transfer_poll_secs.max(0.01));
    let buf = params.typed().buffers.file;
    let set_state = |state: State, pid: Option<u32>| {
        TransferFile::update_past_agent(&path, |t| {
            t.set_state(state);
            t.set_agent_pid(pid);
            Ok(())
        })
    };
    set_state(State::Running, Some(std::process::id()))?;
    let mut seen = None;
    let mut last_look = Instant::now() - period;
    loop {
        // a stat every 100 ms; the file itself when it changed or the period is up
        let now_seen = mtime(&path);
        if now_seen == seen && last_look.elapsed() < period {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        seen = now_seen;
        last_look = Instant::now();
        let t = TransferFile::read(&path).unwrap_or_default();
        match t.command() {
            Some(Command::Exit) => {
                set_state(State::Exiting, None)?;
                return Ok(ExitCode::SUCCESS);
            }
            Some(Command::Stop) => {
                if t.state() != Some(State::Stopped) {
                    set_state(State::Stopped, Some(std::process::id()))?;
                }
                continue;
            }
            _ if t.state() != Some(State::Running) => {
                set_state(State::Running, Some(std::process::id()))?;
            }
            _ => {}
        }
        let pending = t.pending();
        if pending.is_empty() {
            if !t.is_done() && !t.files().is_empty() {
                TransferFile::update_past_agent(&path, |t| {
                    t.set_done(t.pending().is_empty());
                    Ok(())
                })?;
            }
            continue;
        }
        // the whole node's limits: this agent is its only copier
        let mut throttle = Throttle::new(t.bandwidth().unwrap_or(0.0), t.percent().unwrap_or(0.0));
        for entry in &pending {
            if let Err(e) = transfer::copy_entry(&path, entry, buf, &mut throttle) {
                // stepping aside: the library copies what is left itself once no agent
                // runs, and reports the error should it fail too
                eprintln!("scr transfer: {e}; exiting, the library takes over");
                set_state(State::Exiting, None)?;
                return Ok(ExitCode::from(1));
            }
        }
        seen = None; // look again at once: more may have been listed meanwhile
    }
}
