//! The application's side of a run (`app/hist_app.c`): building it against a `libscr.so`,
//! and reading what its rank 0 said (`hist: …` lines).

use crate::model::Attempt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rank 0's `hist:` lines in `text`, without the `hist: ` (read from where it starts:
/// another process's message may have been written before it on the same line).
pub fn said(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.find("hist: ").map(|at| &l[at + "hist: ".len()..]))
        .collect()
}

/// The attempts of a run's restart loop, as the application said them.
pub fn attempts_in(lines: &[&str]) -> Vec<Attempt> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("attempt "))
        .filter_map(|l| attempt(l, None))
        .collect()
}

/// One attempt, `NAME verified=V [rc=RC] serials=S,…` (without `rc=` when the application
/// said it before SCR_Complete_restart: then `rc`).
pub fn attempt(line: &str, rc: Option<i32>) -> Option<Attempt> {
    let mut w = line.split(' ');
    let name = w.next()?.to_string();
    let verified = w.next()?.strip_prefix("verified=")?.parse().ok()?;
    let rc = match rc {
        Some(rc) => rc,
        None => w.next()?.strip_prefix("rc=")?.parse().ok()?,
    };
    let serials = w
        .next()?
        .strip_prefix("serials=")?
        .split(',')
        .filter_map(|n| n.parse().ok())
        .filter(|&n| n != 0)
        .collect();
    Some(Attempt {
        name,
        verified,
        rc,
        serials,
    })
}

/// The last checkpoint the application said it read before SCR_Complete_restart (a
/// `read NAME verified=V serials=S` line), as an attempt whose SCR_Complete_restart never
/// returned (`rc` -1); only the last line when `last_line_only`.
pub fn last_read(lines: &[&str], last_line_only: bool) -> Option<Attempt> {
    let take = if last_line_only { 1 } else { lines.len() };
    lines
        .iter()
        .rev()
        .take(take)
        .find_map(|l| l.strip_prefix("read "))
        .and_then(|l| attempt(l, Some(-1)))
}

/// Builds the application in `bin` against the `scr.h` in `include` and the `libscr.so` in
/// `lib` (found there at run time too).
pub fn compile(bin: &Path, include: &Path, lib: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("app/hist_app.c");
    let app = bin.join("hist_app");
    let out = Command::new("mpicc")
        .arg(&source)
        .arg("-I")
        .arg(include)
        .arg(format!("-L{}", lib.display()))
        .arg("-lscr")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-o")
        .arg(&app)
        .output()
        .map_err(|e| format!("mpicc: {e} (scripts/setup.sh installs MPICH)"))?;
    if !out.status.success() {
        return Err(format!(
            "mpicc {}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(app)
}
