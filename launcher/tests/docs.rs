//! The manual pages `scr generate-docs` writes and the hand-written scr(7): scr.conf(5)
//! lists every parameter of the table with its default and v3.1's where they differ, scr(7)
//! names every default that differs, and both render without a warning from groff.

mod common;

use common::{scr_args, stdout_ok};
use std::path::Path;
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
