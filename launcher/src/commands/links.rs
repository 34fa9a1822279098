//! `scr install-links DIR`: SCR's command names as links to this binary, so batch scripts
//! written for SCR (`scr_index`, `scr_halt` …) run unchanged.

use scr::Error;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Create SCR's command names (scr_index, scr_halt, …) in DIR as links to this binary"
)]
pub struct Args {
    /// Directory for the links (put it on PATH)
    dir: PathBuf,
    /// Replace files that already have those names
    #[arg(short = 'f', long)]
    force: bool,
}

pub fn run(args: Args, names: &[&str]) -> scr::Result<ExitCode> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("scr", "find the running executable", e))?;
    std::fs::create_dir_all(&args.dir).map_err(|e| Error::io(&args.dir, "create directory", e))?;
    for name in names {
        let link = args.dir.join(name);
        if link.symlink_metadata().is_ok() {
            if !args.force {
                return Err(Error::invalid(&link, "exists; pass --force to replace it"));
            }
            std::fs::remove_file(&link).map_err(|e| Error::io(&link, "remove", e))?;
        }
        std::os::unix::fs::symlink(&exe, &link)
            .map_err(|e| Error::io(&link, "create symlink", e))?;
        println!("{}", link.display());
    }
    Ok(ExitCode::SUCCESS)
}
