//! `scr generate-docs`: man pages (clap_mangen) and shell completions (clap_complete) from
//! the same clap definitions the commands parse with, so the installed documentation never
//! drifts from the flags, and scr.conf(5) rendered from the parameter table ([`conf`]).
//! `scripts/install.sh` runs it; it is hidden from `scr --help`.

pub mod conf;

use scr::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(about = "Write man pages and shell completions (used by scripts/install.sh)")]
pub struct Args {
    /// Directory for the section 1 man pages (scr.1, scr-index.1, scr_index.1, …)
    #[arg(long, value_name = "DIR")]
    man: Option<PathBuf>,
    /// Directory for the section 5 page scr.conf.5 (every parameter, from the parameter table)
    #[arg(long, value_name = "DIR")]
    man5: Option<PathBuf>,
    /// Directory for completions: bash/scr, bash/scr-run, zsh/_scr, zsh/_scr-run
    #[arg(long, value_name = "DIR")]
    completions: Option<PathBuf>,
}

/// `root` is the `scr` command; `compat` lists SCR's names with the subcommand (and leading
/// arguments) each one means, as argv[0] dispatch reads them.
pub fn run(args: Args, root: clap::Command, compat: &[(&str, &str)]) -> scr::Result<ExitCode> {
    if args.man.is_none() && args.man5.is_none() && args.completions.is_none() {
        return Err(Error::invalid(
            "scr generate-docs",
            "give --man DIR, --man5 DIR and/or --completions DIR",
        ));
    }
    let mut root = root;
    root.build();
    if let Some(dir) = &args.man {
        for (name, page) in pages(&root, compat) {
            let mut text = Vec::new();
            clap_mangen::Man::new(page)
                .render(&mut text)
                .map_err(|e| Error::io(dir, "render a man page", e))?;
            write(&dir.join(format!("{name}.1")), &text)?;
        }
    }
    if let Some(dir) = &args.man5 {
        write(&dir.join("scr.conf.5"), conf::render().as_bytes())?;
    }
    if let Some(dir) = &args.completions {
        let run = named(&root, "run", "scr-run");
        for (shell, sub, file) in [
            (clap_complete::Shell::Bash, "bash", "scr"),
            (clap_complete::Shell::Zsh, "zsh", "_scr"),
        ] {
            for (mut cmd, bin, file) in [
                (root.clone(), "scr", file.to_string()),
                (run.clone(), "scr-run", file.replace("scr", "scr-run")),
            ] {
                let mut text = Vec::new();
                clap_complete::generate(shell, &mut cmd, bin, &mut text);
                write(&dir.join(sub).join(file), &text)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every page to install: `scr`, `scr-<sub>` for each subcommand, and each SCR name
/// (`scr_index`, `scr_srun`, `scr-run` …) rendered as the subcommand it runs.
fn pages(root: &clap::Command, compat: &[(&str, &str)]) -> Vec<(String, clap::Command)> {
    let mut out = vec![("scr".to_string(), root.clone())];
    for sub in root
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("scr-{}", sub.get_name());
        out.push((name.clone(), named(root, sub.get_name(), &name)));
    }
    for (name, meaning) in compat {
        let sub = meaning.split(' ').next().unwrap_or(meaning);
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), named(root, sub, name)));
        }
    }
    out
}

/// Subcommand `sub` of `root` as a command of its own called `name`.
fn named(root: &clap::Command, sub: &str, name: &str) -> clap::Command {
    let cmd = root
        .find_subcommand(sub)
        .unwrap_or_else(|| panic!("COMPAT_NAMES names a subcommand `{sub}` that scr lacks"))
        .clone();
    cmd.name(name.to_string())
        .display_name(name.to_string())
        .bin_name(name.to_string())
        .version(env!("CARGO_PKG_VERSION"))
}

fn write(path: &Path, bytes: &[u8]) -> scr::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, "write", e))?;
    println!("{}", path.display());
    Ok(())
}
