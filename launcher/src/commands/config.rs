//! `scr config` (also `scr params`): the configuration a job started here would run with,
//! each value with where it came from — the environment, a configuration file and line,
//! the settings earlier runs made through `SCR_Config`, or the built-in default.

use scr::app_config::{AppConfig, app_config_path};
use scr::params::{Params, Sources};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Print the SCR configuration in effect here, and where each value comes from",
    long_about = "Resolve SCR's parameters as SCR_Init would for a job started here: the \
                  environment, the user configuration ($SCR_CONF_FILE, else <prefix>/.scrconf), \
                  the settings earlier runs made with SCR_Config (<prefix>/.scr/app.conf), the \
                  system configuration, then the built-in defaults. Print each parameter as \
                  NAME=VALUE with its origin (NAME= for one unset with no default; SCR_PREFIX, \
                  where nobody set it, the directory used), then the descriptor lines (STORE=, \
                  CKPT=, …). With NAME arguments, only those.\n\n\
                  Exit codes: 0 printed; 1 a configuration cannot be read (the error names the \
                  file and line), or a NAME has no value.",
    visible_alias = "params"
)]
pub struct Args {
    /// The prefix directory [default: SCR_PREFIX, else the working directory]
    #[arg(short = 'p', long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Print a JSON array of {"setting", "origin"} objects
    #[arg(long)]
    json: bool,
    /// Only these parameters (or descriptor kinds: CKPT, STORE, …)
    names: Vec<String>,
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let mut sources = Sources::from_process();
    if let Some(p) = &args.prefix {
        sources.prefix = Some(p.clone());
    }
    // what earlier runs set through SCR_Config, as SCR_Init layers it
    let prefix = scr::layout::prefix_dir(sources.prefix.as_deref(), None)?;
    let kept = app_config_path(&prefix);
    let settings = AppConfig::read_or_warn(&kept, |e| {
        eprintln!("{}: WARNING: {e}; ignored", crate::program_name())
    })?;
    if !settings.is_empty() {
        let origin = format!("SCR_Config settings (kept in {})", kept.display());
        sources.app_config = Some(settings.as_file(&origin));
    }
    let params = Params::load(&sources)?;
    for w in &params.warnings {
        eprintln!("{}: WARNING: {w}", crate::program_name());
    }
    let cwd = std::env::current_dir().ok();
    let prefix = match &args.prefix {
        Some(p) => Some((p.as_path(), "scr config --prefix")),
        None => cwd.as_deref().map(|d| (d, "the working directory")),
    };
    let mut lines = params.effective(prefix);
    if !args.names.is_empty() {
        let wanted: Vec<String> = args.names.iter().map(|n| n.to_ascii_uppercase()).collect();
        lines.retain(|(line, _)| {
            let name = line.split('=').next().unwrap_or_default();
            wanted.iter().any(|w| w == name)
        });
        if let Some(missing) = wanted.iter().find(|w| {
            !lines.iter().any(|(l, origin)| {
                l.split('=').next() == Some(w.as_str()) && origin != scr::params::UNSET
            })
        }) {
            eprintln!(
                "{}: {missing} has no value here (unknown, or unset with no default)",
                crate::program_name()
            );
            return Ok(ExitCode::from(1));
        }
    }
    if args.json {
        let items: Vec<serde_json::Value> = lines
            .iter()
            .map(|(l, o)| serde_json::json!({"setting": l, "origin": o}))
            .collect();
        println!("{}", serde_json::Value::Array(items));
    } else {
        let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        for (line, origin) in &lines {
            println!("{line:width$}  # {origin}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
