//! The manual pages `scr generate-docs` writes and the hand-written scr(7): scr.conf(5)
//! lists every parameter of the table with its default and v3.1's where they differ; every
//! page renders without a warning from groff; every page a SEE ALSO names exists; the
//! section 1 pages say what their commands read and show examples.

mod common;

use common::{scr_args, stdout_ok};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pages `scr generate-docs --man --man5` writes, and doc/scr.7, in one man tree.
fn manual() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("man1");
    let man5 = dir.path().join("man5");
    stdout_ok(&scr_args(&[
        "generate-docs",
        "--man",
        man1.to_str().unwrap(),
        "--man5",
        man5.to_str().unwrap(),
    ]));
    let man7 = dir.path().join("man7");
    std::fs::create_dir(&man7).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../doc/scr.7"),
        man7.join("scr.7"),
    )
    .unwrap();
    dir
}

fn pages(tree: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for section in ["man1", "man5", "man7"] {
        for e in std::fs::read_dir(tree.join(section)).unwrap() {
            out.push(e.unwrap().path());
        }
    }
    out.sort();
    out
}

/// A page as `man -l` shows it, 80 columns wide and not hyphenated.
fn rendered(page: &Path) -> String {
    let out = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANWIDTH", "80")
        .env("MANROFFOPT", "-rHY=0")
        .output()
        .unwrap();
    assert!(out.status.success(), "man -l {}", page.display());
    String::from_utf8(out.stdout).unwrap()
}

/// groff's warnings for a page (all of them, -ww), through preconv as man-db formats it.
fn groff_warnings(page: &Path) -> String {
    let out = Command::new("groff")
        .args(["-k", "-ww", "-z", "-t", "-man"])
        .arg(page)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Section `name` of a rendered page, its words joined by single spaces (None: no such
/// section).
fn section(text: &str, name: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.find(|l| *l == name)?;
    let body: Vec<&str> = lines
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .collect();
    Some(flat(&body.join("\n")))
}

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `name(section)` references in a text.
fn references(text: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for piece in text.split([' ', ',', '\n']) {
        if let Some((name, rest)) = piece.split_once('(')
            && let Some(section) = rest.strip_suffix(')')
            && section.len() == 1
            && section.chars().all(|c| c.is_ascii_digit())
            && !name.is_empty()
        {
            out.insert((name.to_string(), section.to_string()));
        }
    }
    out
}

#[test]
fn scr_conf_5_lists_every_parameter_with_its_default() {
    let tree = manual();
    let page = tree.path().join("man5/scr.conf.5");
    assert_eq!(groff_warnings(&page), "", "{}", page.display());
    let raw = rendered(&page);
    let text = flat(&raw);
    let parameters = section(&raw, "PARAMETERS").expect("a PARAMETERS section");
    for spec in scr::params::PARAMS {
        let default = spec.default.unwrap_or("unset");
        let entry = format!("{} (default: {default};", spec.name);
        assert!(
            parameters.contains(&entry),
            "{entry} missing from scr.conf(5):\n{parameters}"
        );
    }
    // the defaults that are not SCR v3.1's, each with v3.1's, in their own section and at
    // the parameter
    let differ = section(&raw, "DEFAULTS THAT DIFFER FROM SCR V3.1").expect("the section");
    for d in scr::params::V31_DEFAULTS {
        let here = scr::params::spec(d.name)
            .unwrap()
            .default
            .unwrap_or("unset");
        let line = format!("{}: {here} here, {} in v3.1", d.name, d.v31);
        assert!(differ.contains(&line), "{line} missing:\n{differ}");
        assert!(
            parameters.contains(&format!("SCR v3.1's default is {}.", d.v31)),
            "{} says v3.1's default",
            d.name
        );
    }
    // and what SCR v3.1's own guide says of it, written here, not taken from our table
    // (config.rst: "One must set SCR_CACHE_BYPASS=0 to instruct SCR to use cache"; the
    // control and cache directories in /dev/shm)
    for line in [
        "SCR_CACHE_BYPASS: 0 here, 1 in v3.1",
        "SCR_CNTL_BASE: /tmp here, /dev/shm in v3.1",
        "SCR_CACHE_BASE: /tmp here, /dev/shm in v3.1",
    ] {
        assert!(differ.contains(line), "{line} missing:\n{differ}");
    }
    // the syntax and the precedence
    for words in [
        "KEY=VALUE",
        "$NAME and ${NAME}",
        "STORE=directory",
        "CKPT=number",
        "SCR_CONF_FILE names, else .scrconf in the prefix directory",
        "SCR_Config",
        "SCR_SYSTEM_CONF_FILE",
    ] {
        assert!(text.contains(words), "{words} missing from scr.conf(5)");
    }
    let environment = text.find("the environment").unwrap();
    let user = text.find("the user configuration file").unwrap();
    let app = text
        .find("what the application set with SCR_Config")
        .unwrap();
    let system = text.find("the system configuration file:").unwrap();
    assert!(
        environment < user && user < app && app < system,
        "precedence order"
    );
    // the attributes each descriptor line takes come from the parser's own list
    for key in ["STORE", "CKPT", "CACHEDESC"] {
        let attrs = scr::params::allowed_children(key).unwrap().join(", ");
        assert!(text.contains(&attrs), "{key}'s attributes {attrs}");
    }
}

#[test]
fn scr_7_names_every_default_that_differs_from_v31() {
    let tree = manual();
    let page = tree.path().join("man7/scr.7");
    assert_eq!(groff_warnings(&page), "");
    let text = rendered(&page);
    let differ = section(&text, "DEFAULTS THAT DIFFER FROM SCR V3.1").expect("the section");
    for d in scr::params::V31_DEFAULTS {
        assert!(differ.contains(d.name), "{} missing:\n{differ}", d.name);
    }
    for concept in [
        "CACHE",
        "CONTROL DIRECTORY",
        "REDUNDANCY SCHEMES",
        "FLUSH",
        "DRAIN AND SCAVENGE",
        "HALT",
        "RESTART AND FETCH",
        "THE PREFIX DIRECTORY",
    ] {
        assert!(section(&text, concept).is_some(), "no {concept} section");
    }
    let schemes = section(&text, "REDUNDANCY SCHEMES").unwrap();
    for scheme in ["SINGLE", "PARTNER", "XOR", "RS"] {
        assert!(schemes.contains(scheme), "{scheme}");
    }
}

#[test]
fn every_page_renders_cleanly_and_names_only_pages_that_exist() {
    let tree = manual();
    let all = pages(tree.path());
    let existing: BTreeSet<(String, String)> = all
        .iter()
        .map(|p| {
            let file = p.file_name().unwrap().to_str().unwrap();
            let (name, section) = file.rsplit_once('.').unwrap();
            (name.to_string(), section.to_string())
        })
        .collect();
    for page in &all {
        assert_eq!(groff_warnings(page), "", "{}", page.display());
        let text = rendered(page);
        let see_also = section(&text, "SEE ALSO")
            .unwrap_or_else(|| panic!("{} has no SEE ALSO", page.display()));
        let named = references(&see_also);
        assert!(!named.is_empty(), "{}: {see_also}", page.display());
        // every page SEE ALSO names, and our pages it names anywhere else (clap_mangen's
        // SUBCOMMANDS)
        let ours = references(&text)
            .into_iter()
            .filter(|r| r.0.starts_with("scr"));
        for reference in named.into_iter().chain(ours) {
            assert!(
                existing.contains(&reference),
                "{} names {}({}), which is not a page",
                page.display(),
                reference.0,
                reference.1
            );
        }
    }
}

#[test]
fn command_pages_say_what_they_read_and_show_examples() {
    let tree = manual();
    let man1 = tree.path().join("man1");
    let page = |name: &str| rendered(&man1.join(format!("{name}.1")));
    // scr-run reads the relaunch loop's parameters, each described from the table
    let run = page("scr-run");
    let environment = section(&run, "ENVIRONMENT").expect("scr-run's ENVIRONMENT");
    for name in [
        "SCR_RUNS",
        "SCR_MIN_NODES",
        "SCR_EXCLUDE_NODES",
        "SCR_RUN_DELAY",
        "SCR_HALT_SECONDS",
        "SLURM_JOB_NODELIST",
        "PDSH_RCMD_TYPE",
        "SCR_CONF_FILE",
    ] {
        assert!(environment.contains(name), "{name}:\n{environment}");
    }
    let help = scr::params::spec("SCR_RUN_DELAY").unwrap().help;
    assert!(environment.contains(help), "described from the table");
    let examples = section(&run, "EXAMPLES").expect("scr-run's EXAMPLES");
    assert!(examples.contains("scr-run srun -N4"), "{examples}");
    // SCR's names show examples as they are typed: scr_srun without the srun it implies
    let srun = page("scr_srun");
    let examples = section(&srun, "EXAMPLES").expect("scr_srun's EXAMPLES");
    assert!(
        examples.contains("scr_srun -N4") && !examples.contains("scr_srun srun"),
        "{examples}"
    );
    let named = references(&section(&srun, "SEE ALSO").unwrap());
    assert!(named.contains(&("scr-run".into(), "1".into())), "{named:?}");
    // a command that reads nothing from the environment has no ENVIRONMENT section
    let print = page("scr-print");
    assert!(section(&print, "ENVIRONMENT").is_none());
    assert!(section(&print, "EXAMPLES").unwrap().contains("scr print"));
    // scr(1) names every command's page
    let scr = page("scr");
    let named = references(&section(&scr, "SEE ALSO").unwrap());
    for name in [
        "scr-run",
        "scr-index",
        "scr-halt",
        "scr-postrun",
        "scr-kill-jobstep",
    ] {
        assert!(named.contains(&(name.into(), "1".into())), "{name}");
    }
}

/// A page named after a subcommand, `man scr-print`, documents the command as it is typed,
/// `scr print` (as git-log(1) documents `git log`): its synopsis is that command line and
/// the page says there is no scr-print program. The pages of real program names (scr-run,
/// SCR's scr_index and the other links) show those names.
#[test]
fn a_subcommands_page_shows_the_command_as_it_is_typed() {
    let tree = manual();
    let man1 = tree.path().join("man1");
    let page = |name: &str| rendered(&man1.join(format!("{name}.1")));
    for (name, typed) in [
        ("scr-print", "scr print"),
        ("scr-index", "scr index"),
        ("scr-inspect", "scr inspect"),
    ] {
        let text = page(name);
        let synopsis = section(&text, "SYNOPSIS").expect("a SYNOPSIS");
        assert!(
            synopsis.starts_with(&format!("{typed} ")),
            "{name}: {synopsis}"
        );
        let notes = section(&text, "NOTES").unwrap_or_default();
        assert!(
            notes.contains(&format!("typed as {typed}")),
            "{name}: no note that the command is {typed}:\n{text}"
        );
    }
    for name in ["scr-run", "scr_index", "scr_srun"] {
        let synopsis = section(&page(name), "SYNOPSIS").expect("a SYNOPSIS");
        assert!(
            synopsis.starts_with(&format!("{name} ")),
            "{name}: {synopsis}"
        );
    }
}
