//! Planted defects: patches kept in `histories/planted/*.patch`, each applied to a scratch
//! copy of the workspace and built there, so the checker can show it catches the defect.
//! Product code carries no switch for them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace this crate belongs to.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The planted defects kept in the repository, by name.
pub fn available() -> Vec<String> {
    let dir = workspace().join("histories/planted");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".patch")
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Copies the workspace's sources to `target/planted/src.NAME`, applies
/// `histories/planted/NAME.patch` there and builds the library and `scr` into
/// `target/planted/target` (shared by every defect, so each build after the first is
/// incremental); returns the directory holding what was built.
pub fn build(name: &str) -> Result<PathBuf, String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "--planted {name:?}: a defect's name is letters, digits, - and _ ({})",
            available().join(", ")
        ));
    }
    let ws = workspace().canonicalize().map_err(|e| e.to_string())?;
    let patch = ws.join("histories/planted").join(format!("{name}.patch"));
    if !patch.exists() {
        return Err(format!(
            "--planted {name}: no {} (available: {})",
            patch.display(),
            available().join(", ")
        ));
    }
    let root = ws.join("target/planted");
    let src = root.join(format!("src.{name}"));
    if src.exists() {
        std::fs::remove_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    }
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    let mut cp = Command::new("cp");
    cp.arg("-a");
    // everything but the build and the history: a member added to the workspace later is
    // copied too
    let entries = std::fs::read_dir(&ws).map_err(|e| format!("{}: {e}", ws.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", ws.display()))?;
        if !matches!(entry.file_name().to_str(), Some("target" | ".git")) {
            cp.arg(entry.path());
        }
    }
    cp.arg(&src);
    run(cp, "copying the workspace")?;
    let mut p = Command::new("patch");
    p.args(["-p1", "--quiet", "-d"])
        .arg(&src)
        .arg("-i")
        .arg(&patch);
    run(p, &format!("applying {}", patch.display()))?;
    // (--lib applies to every package named with it: the library and the command are two builds)
    for what in [
        &["-p", "scr-runtime", "--lib"][..],
        &["-p", "scr-launcher", "--bin", "scr"],
    ] {
        let mut b = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        b.args(["build", "--quiet"])
            .args(what)
            .current_dir(&src)
            .env("CARGO_TARGET_DIR", root.join("target"));
        run(b, "building the planted copy")?;
    }
    Ok(root.join("target/debug"))
}

fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}
