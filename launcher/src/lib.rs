//! The `scr` and `scr-run` commands: SCR's job and file commands as subcommands of one
//! program. Installed under SCR's own names (`scr_print_hash_file`, `scr_srun` …) it
//! behaves as that command, so existing batch scripts keep working.

pub mod commands;
pub mod job;

use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "scr",
    version,
    about = "Scalable Checkpoint/Restart: job and file commands"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Print(commands::print::Args),
    GlobHosts(commands::glob_hosts::Args),
    Hostlist(commands::hostlist::Args),
    Index(commands::index::Args),
    Halt(commands::halt::Args),
    Prefix(commands::dirs::PrefixArgs),
    ListDir(commands::dirs::ListDirArgs),
    InstallLinks(commands::links::Args),
    FlushFile(commands::state_files::FlushFileArgs),
    RetriesHalt(commands::state_files::RetriesHaltArgs),
    NodesFile(commands::state_files::NodesFileArgs),
    RebuildXor(commands::rebuild::Args),
    RebuildRs(commands::rebuild::RsArgs),
    Run(commands::run::Args),
    ListDownNodes(commands::nodes::ListDownArgs),
    CheckNode(commands::nodes::CheckNodeArgs),
    Env(commands::nodes::EnvArgs),
    Prerun(commands::nodes::PrerunArgs),
    TestRuntime(commands::nodes::TestRuntimeArgs),
    Copy(commands::drain::CopyArgs),
    Transfer(commands::transfer::Args),
    Scavenge(commands::drain::ScavengeArgs),
    Postrun(commands::drain::PostrunArgs),
    HaltCntl(commands::halt::CntlArgs),
    ShouldExit(commands::jobs::ShouldExitArgs),
    CkptInterval(commands::jobs::CkptIntervalArgs),
    Inspect(commands::jobs::InspectArgs),
    Report(commands::report::Args),
    KillJobstep(commands::jobs::KillJobstepArgs),
    Config(commands::config::Args),
    Db(commands::db::Args),
    #[command(hide = true)]
    GenerateDocs(commands::docs::Args),
}

/// SCR's command names and the subcommand (with leading arguments) each one means.
const COMPAT_NAMES: &[(&str, &str)] = &[
    ("scr-run", "run"),
    ("scr_run", "run"),
    ("scr-srun", "run srun"),
    ("scr_srun", "run srun"),
    ("scr_mpirun", "run mpirun"),
    ("scr_print_hash_file", "print"),
    ("scr_glob_hosts", "glob-hosts"),
    ("scr_hostlist", "hostlist"),
    ("scr_index", "index"),
    ("scr_halt", "halt"),
    ("scr_prefix", "prefix"),
    ("scr_list_dir", "list-dir"),
    ("scr_cntl_dir", "list-dir"),
    ("scr_flush_file", "flush-file"),
    ("scr_retries_halt", "retries-halt"),
    ("scr_nodes_file", "nodes-file"),
    ("scr_rebuild_xor", "rebuild-xor"),
    ("scr_rebuild_rs", "rebuild-rs"),
    ("scr_list_down_nodes", "list-down-nodes"),
    ("scr_check_node", "check-node"),
    ("scr_env", "env"),
    ("scr_prerun", "prerun"),
    ("scr_test_runtime", "test-runtime"),
    ("scr_copy", "copy"),
    ("scr_transfer", "transfer"),
    ("scr_scavenge", "scavenge"),
    ("scr_postrun", "postrun"),
    ("scr_halt_cntl", "halt-cntl"),
    ("scr_should_exit", "should-exit"),
    ("scr_ckpt_interval", "ckpt-interval"),
    ("scr_inspect", "inspect"),
    ("scr_kill_jobstep", "kill-jobstep"),
];

/// The name the user ran this program by (`scr`, `scr-run`, or one of SCR's names such as
/// `scr_index`): messages say it, so a batch script's log names the command it ran.
static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The name the program was run by (`scr` until [`main_with`] learns it).
pub fn program_name() -> &'static str {
    PROGRAM.get().map_or("scr", String::as_str)
}

/// Rewrites `scr_print_hash_file FILE` into `scr print FILE`; returns the name it was run
/// by too.
fn normalize_args(mut args: Vec<OsString>) -> (Vec<OsString>, String) {
    let invoked = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name = "scr".to_string();
    if let Some((compat, sub)) = COMPAT_NAMES.iter().find(|(name, _)| *name == invoked) {
        name = compat.to_string();
        args[0] = "scr".into();
        for (i, word) in sub.split(' ').enumerate() {
            args.insert(1 + i, word.into());
        }
    }
    (args, name)
}

/// Runs the command line `args` (argv[0] first) and returns the exit status.
pub fn main_with(args: Vec<OsString>) -> ExitCode {
    let (args, name) = normalize_args(args);
    // under an SCR name, usage and help say that name (`scr_run`, not `scr run`)
    let mut command = Cli::command();
    if name != "scr"
        && let Some(sub) = args.get(1).and_then(|a| a.to_str())
    {
        let shown = name.clone();
        command = command.mut_subcommand(sub, |s| {
            let usage = s.clone().bin_name(&shown).render_usage().to_string();
            let usage = usage.trim_start_matches("Usage:").trim().to_string();
            s.override_usage(usage)
        });
    }
    let _ = PROGRAM.set(name);
    let parsed = command
        .try_get_matches_from(args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // SCR's commands exit 1 on a usage error.
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // A command read through a pipe that closes early (`scr config | head`) ends quietly
    // as any Unix tool does. scr-run and the transfer agent keep Rust's default: they
    // supervise jobs and must not die because a reader went away.
    if !matches!(cli.command, Command::Run(_) | Command::Transfer(_)) {
        // SAFETY: restoring the default disposition of a signal, before any thread starts
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // the commands whose 1 means "go on" say an error with 2, so a script can tell them apart
    let error_code = match cli.command {
        Command::ShouldExit(_) | Command::RetriesHalt(_) => 2,
        _ => 1,
    };
    let result = match cli.command {
        Command::Print(args) => commands::print::run(args),
        Command::GlobHosts(args) => commands::glob_hosts::run(args),
        Command::Hostlist(args) => commands::hostlist::run(args),
        Command::Index(args) => commands::index::run(args),
        Command::Halt(args) => commands::halt::run(args),
        Command::Prefix(args) => commands::dirs::prefix(args),
        Command::ListDir(args) => commands::dirs::list_dir(args),
        Command::InstallLinks(args) => {
            let names: Vec<&str> = COMPAT_NAMES.iter().map(|(name, _)| *name).collect();
            commands::links::run(args, &names)
        }
        Command::FlushFile(args) => commands::state_files::flush_file(args),
        Command::RetriesHalt(args) => commands::state_files::retries_halt(args),
        Command::NodesFile(args) => commands::state_files::nodes_file(args),
        Command::RebuildXor(args) => commands::rebuild::run(args),
        Command::RebuildRs(args) => commands::rebuild::run_rs(args),
        Command::Run(args) => commands::run::run(args),
        Command::ListDownNodes(args) => commands::nodes::list_down_nodes(args),
        Command::CheckNode(args) => commands::nodes::check_node(args),
        Command::Env(args) => commands::nodes::env(args),
        Command::Prerun(args) => commands::nodes::prerun(args),
        Command::TestRuntime(args) => commands::nodes::test_runtime(args),
        Command::Copy(args) => commands::drain::copy(args),
        Command::Transfer(args) => commands::transfer::run(args),
        Command::Scavenge(args) => commands::drain::scavenge_cmd(args),
        Command::Postrun(args) => commands::drain::postrun(args),
        Command::HaltCntl(args) => commands::halt::cntl(args),
        Command::ShouldExit(args) => commands::jobs::should_exit(args),
        Command::CkptInterval(args) => commands::jobs::ckpt_interval(args),
        Command::Inspect(args) => commands::jobs::inspect(args),
        Command::Report(args) => commands::report::run(args),
        Command::KillJobstep(args) => commands::jobs::kill_jobstep(args),
        Command::Config(args) => commands::config::run(args),
        Command::Db(args) => commands::db::run(args),
        Command::GenerateDocs(args) => commands::docs::run(args, Cli::command(), COMPAT_NAMES),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: ERROR: {e}", program_name());
            ExitCode::from(error_code)
        }
    }
}
