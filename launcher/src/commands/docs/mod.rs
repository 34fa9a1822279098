//! `scr generate-docs`: man pages (clap_mangen) and shell completions (clap_complete) from
//! the same clap definitions the commands parse with, so the installed documentation never
//! drifts from the flags; each section 1 page gets the variables its command reads, examples
//! and related pages ([`pages`]), and scr.conf(5) is rendered from the parameter table
//! ([`conf`]). `scripts/install.sh` runs it; it is hidden from `scr --help`.

pub mod conf;
pub mod pages;

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
    if let Some(dir) = &args.man {
        for page in pages(&root, compat) {
            let text = render_page(&page).map_err(|e| Error::io(dir, "render a man page", e))?;
            write(&dir.join(format!("{}.1", page.name)), text.as_bytes())?;
        }
    }
    if let Some(dir) = &args.man5 {
        write(&dir.join("scr.conf.5"), conf::render().as_bytes())?;
    }
    if let Some(dir) = &args.completions {
        let mut root = root;
        root.build();
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

/// One section 1 page.
pub struct Page {
    /// The page's name: `scr`, `scr-index`, `scr_index`, …
    pub name: String,
    /// The command it documents, named as the page.
    pub command: clap::Command,
    /// The subcommand it runs (None: `scr` itself).
    pub sub: Option<String>,
    /// The subcommand of that one it documents (`init` of `scr db init`), whose page
    /// clap_mangen names under SUBCOMMANDS as `scr-db-init(1)`.
    pub nested: Option<String>,
    /// Arguments the name puts before the user's (`scr_srun` is `scr run srun`).
    pub leading: Vec<String>,
    /// The page of the same command under its scr name, for SCR's names.
    pub same_as: Option<String>,
}

impl Page {
    /// How the page's name runs the command on a command line.
    pub fn invocation(&self) -> String {
        match (&self.sub, &self.same_as) {
            (Some(sub), None) if self.name != "scr-run" => match &self.nested {
                Some(nested) => format!("scr {sub} {nested}"),
                None => format!("scr {sub}"),
            },
            _ => self.name.clone(),
        }
    }
}

/// Every page to install: `scr`, `scr-<sub>` for each subcommand (named as git names its
/// commands' pages, git-log(1) for `git log`, so `man scr-print` finds `scr print`), and
/// `scr-<sub>-<nested>` for each of its own (`scr db init`), and each SCR name
/// (`scr_index`, `scr_srun`, `scr-run` …) rendered as the subcommand it runs.
pub fn pages(root: &clap::Command, compat: &[(&str, &str)]) -> Vec<Page> {
    // `help` is a subcommand of clap's making, documented by every page's --help: without
    // it no page names a scr-help(1) or scr-db-help(1) that nobody writes
    let mut root = root.clone().disable_help_subcommand(true);
    let parents: Vec<String> = visible(&root)
        .filter(|s| s.has_subcommands())
        .map(|s| s.get_name().to_string())
        .collect();
    for parent in parents {
        root = root.mut_subcommand(parent, |c| c.disable_help_subcommand(true));
    }
    root.build();
    let root = &root;
    let mut out = vec![Page {
        name: "scr".into(),
        command: root.clone(),
        sub: None,
        nested: None,
        leading: Vec::new(),
        same_as: None,
    }];
    for sub in visible(root) {
        let name = format!("scr-{}", sub.get_name());
        out.push(Page {
            command: named(root, sub.get_name(), &name),
            name: name.clone(),
            sub: Some(sub.get_name().to_string()),
            nested: None,
            leading: Vec::new(),
            same_as: None,
        });
        for nested in visible(sub) {
            let page = format!("{name}-{}", nested.get_name());
            out.push(Page {
                command: as_page(nested.clone(), &page),
                name: page,
                sub: Some(sub.get_name().to_string()),
                nested: Some(nested.get_name().to_string()),
                // its examples are those of the command above that start with its name
                leading: vec![nested.get_name().to_string()],
                same_as: None,
            });
        }
    }
    for (name, meaning) in compat {
        let mut words = meaning.split(' ');
        let sub = words.next().unwrap_or(meaning);
        if !out.iter().any(|p| p.name == *name) {
            out.push(Page {
                name: name.to_string(),
                command: named(root, sub, name),
                sub: Some(sub.to_string()),
                nested: None,
                leading: words.map(str::to_string).collect(),
                same_as: Some(format!("scr-{sub}")),
            });
        }
    }
    // each page's synopsis is the command line that runs it: `scr print` on the page named
    // scr-print (there is no scr-print program), the program's own name on the others
    for page in &mut out {
        page.command = page.command.clone().bin_name(page.invocation());
    }
    out
}

/// A page as roff: clap_mangen's rendering of the command, with ENVIRONMENT, EXAMPLES and
/// SEE ALSO before its VERSION section.
pub fn render_page(page: &Page) -> std::io::Result<String> {
    // the scr page names every command's page, a nested command's page the one above it
    let also: Vec<String> = match (&page.sub, &page.nested) {
        (None, _) => visible(&page.command)
            .map(|s| format!("scr-{}(1)", s.get_name()))
            .collect(),
        (Some(sub), Some(_)) => vec![format!("scr-{sub}(1)")],
        (Some(_), None) => Vec::new(),
    };
    let mut text = Vec::new();
    clap_mangen::Man::new(page.command.clone()).render(&mut text)?;
    let text = String::from_utf8(text).map_err(std::io::Error::other)?;
    let extra = pages::extra(page.sub.as_deref());
    let leading: Vec<&str> = page.leading.iter().map(String::as_str).collect();
    let added = pages::render(
        &extra,
        &page.invocation(),
        &leading,
        page.same_as.as_deref(),
        &page.name,
        &also,
    );
    Ok(match text.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{}{}", &text[..at], added, &text[at + 1..]),
        None => format!("{text}{added}"),
    })
}

/// The subcommands of `cmd` a page is written for (not hidden ones, not clap's `help`).
fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

/// Subcommand `sub` of `root` as a command of its own called `name`.
fn named(root: &clap::Command, sub: &str, name: &str) -> clap::Command {
    let cmd = root
        .find_subcommand(sub)
        .unwrap_or_else(|| panic!("COMPAT_NAMES names a subcommand `{sub}` that scr lacks"))
        .clone();
    as_page(cmd, name)
}

/// `cmd` as the command of a page called `name`.
fn as_page(cmd: clap::Command, name: &str) -> clap::Command {
    cmd.name(name.to_string())
        .display_name(name.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// Every example on every page is a command line its command accepts, as the page's
    /// name runs it (SCR's names through the same argv[0] rewriting as a real call).
    #[test]
    fn every_example_is_a_command_line_its_command_accepts() {
        let root = crate::Cli::command();
        let all = pages(&root, crate::COMPAT_NAMES);
        assert!(all.len() > 50, "{} pages", all.len());
        for page in &all {
            let extra = pages::extra(page.sub.as_deref());
            let leading: Vec<&str> = page.leading.iter().map(String::as_str).collect();
            let examples: Vec<(String, &str)> = pages::examples(&extra, &leading).collect();
            assert!(!examples.is_empty(), "{} has no example", page.name);
            for (args, _) in examples {
                let line = format!("{} {args}", page.invocation());
                let argv: Vec<std::ffi::OsString> = shell_words::split(&line)
                    .unwrap_or_else(|e| panic!("{line}: {e}"))
                    .into_iter()
                    .map(Into::into)
                    .collect();
                if let Err(e) = crate::Cli::try_parse_from(crate::normalize_args(argv).0) {
                    panic!("{}: `{line}` is refused: {e}", page.name);
                }
            }
        }
    }

    /// Every variable a page names is a parameter of the table or described beside them.
    #[test]
    fn every_variable_a_page_names_is_described() {
        let root = crate::Cli::command();
        for page in pages(&root, crate::COMPAT_NAMES) {
            for name in pages::extra(page.sub.as_deref()).environment {
                assert!(!pages::describe(name).is_empty(), "{name}");
            }
        }
        for (name, _) in pages::OTHER_VARIABLES {
            assert!(
                scr::params::spec(name).is_none(),
                "{name} is a parameter: the table describes it"
            );
        }
    }
}
