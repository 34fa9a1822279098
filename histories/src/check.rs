//! The checks run after every step: the prefix holds exactly the bytes of the checkpoints
//! the model says are flushed, and none of a checkpoint the window deleted; the index's
//! claims fit the model; the current checkpoint never moves backwards without a loss or an
//! operator to justify it; nothing outside SCR's directories changed; no temporary or process
//! is left behind.

use crate::driver::{Env, State};
use crate::history::{file_length, pattern, serial_in};
use crate::model::{Avail, Ckpt, Entry};
use crate::process::run_bounded;
use crate::script::Transcript;
use std::path::{Path, PathBuf};

type Checked = Result<(), (&'static str, String)>;

/// Every check, after a step.
pub fn after_step(env: &Env, s: &mut State, _t: &mut Transcript) -> Checked {
    outside(&s.job).map_err(|m| ("outside", m))?;
    prefix_files(s).map_err(|m| ("prefix-data", m))?;
    if !s.temporaries_may_stay {
        no_temporaries(&s.job.join("prefix")).map_err(|m| ("leftover", m))?;
    }
    index(env, s)
}

/// SPEC §4.11 ("nothing is left behind when a run ends"): the job directory holds only what
/// the history made, and the prefix only SCR's `.scr`, `scr.current` and the checkpoints'
/// directories.
fn outside(job: &Path) -> Result<(), String> {
    let mut top = names(job)?;
    top.sort();
    if top != ["cache", "cntl", "prefix", "scr.conf"] {
        return Err(format!("the job directory holds {top:?}"));
    }
    let conf = std::fs::read_to_string(job.join("scr.conf")).map_err(|e| e.to_string())?;
    if conf != format!("SCR_CNTL_BASE={}\n", job.join("cntl").display()) {
        return Err(format!("scr.conf changed: {conf:?}"));
    }
    for n in names(&job.join("prefix"))? {
        let numbered = |p: &str| n.strip_prefix(p).is_some_and(|s| s.parse::<u32>().is_ok());
        let ours = n == ".scr" || n == "scr.current" || numbered("ckpt.") || numbered("out.");
        if !ours {
            return Err(format!(
                "the prefix holds {n}, neither SCR's nor a checkpoint's"
            ));
        }
    }
    Ok(())
}

fn names(dir: &Path) -> Result<Vec<String>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

/// Whether `c`'s files are on `prefix` with exactly the bytes the application wrote: Err
/// says which is not.
pub fn holds(prefix: &Path, c: &Ckpt) -> Result<(), String> {
    let dir = prefix.join(c.name());
    for r in 0..c.writers {
        for k in 0..c.spec.nfiles {
            let f = dir.join(format!("rank_{r}.{k}"));
            let bytes = std::fs::read(&f)
                .map_err(|e| format!("{} is flushed, but {}: {e}", c.label(), f.display()))?;
            let len = file_length(c.spec.size, r, k);
            let right = bytes.len() as u64 == len
                && bytes
                    .iter()
                    .enumerate()
                    .all(|(i, b)| *b == pattern(c.serial, r, k, i as u64));
            if !right {
                let whose = serial_in(&bytes)
                    .filter(|&w| w != c.serial)
                    .map(|w| format!(" (it holds #{w}'s bytes)"))
                    .unwrap_or_default();
                return Err(format!(
                    "{} on the prefix does not hold what rank {r} wrote in {}{whose}",
                    f.display(),
                    c.label()
                ));
            }
        }
    }
    Ok(())
}

/// A flushed checkpoint's (or output's) files are on the prefix with exactly the bytes the
/// application wrote (guide quick.rst, quick-8: the file appears at its relative path under
/// the prefix once flushed); one the window deleted left none, unless another copy of its
/// name names them (README, SCR_PREFIX_SIZE).
fn prefix_files(s: &State) -> Result<(), String> {
    let prefix = s.job.join("prefix");
    for c in &s.model.ckpts {
        if c.surely_on_prefix() && !c.may_read_wrong && !c.rejected {
            holds(&prefix, c)?;
        }
        let dir = prefix.join(c.name());
        let other_copy = s
            .model
            .copies(&c.name())
            .any(|o| o.serial != c.serial && !o.window_deleted && o.prefix != Avail::No);
        if c.window_deleted && c.prefix == Avail::No && !other_copy && dir.exists() {
            let left: Vec<PathBuf> = walk(&dir);
            if !left.is_empty() {
                return Err(format!(
                    "SCR_PREFIX_SIZE deleted {} from the index, but its files stay: {left:?}",
                    c.label()
                ));
            }
        }
    }
    Ok(())
}

/// No temporary ( `.<file>.<kind>.<pid>.<n>`, the name every state file and flushed file is
/// written under before its rename) is left on the prefix after a step (SPEC §4.2, §4.11).
fn no_temporaries(prefix: &Path) -> Result<(), String> {
    for p in walk(prefix) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parts: Vec<&str> = name.split('.').collect();
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if name.starts_with('.')
            && parts.len() >= 5
            && numeric(parts[parts.len() - 1])
            && numeric(parts[parts.len() - 2])
        {
            return Err(format!("a temporary is left behind: {}", p.display()));
        }
    }
    Ok(())
}

/// The index's claims against the model, and CURRENT never backwards (SPEC §4.7).
fn index(env: &Env, s: &mut State) -> Checked {
    let prefix = s.job.join("prefix");
    if !scr::layout::index_file(&prefix).exists() {
        if let Some(c) = s
            .model
            .ckpts
            .iter()
            .find(|c| c.surely_on_prefix() && !c.rejected)
        {
            return Err((
                "index",
                format!("{} is flushed, but the prefix has no index", c.name()),
            ));
        }
        return Ok(());
    }
    let mut cmd = env.scr(&s.job);
    cmd.args(["index", "--json", "-p"]).arg(&prefix);
    let (status, out) = run_bounded(cmd).map_err(|e| ("hang", e))?;
    if !status.success() {
        return Err((
            "command",
            format!("scr index --json exited {status}:\n{out}"),
        ));
    }
    let json: serde_json::Value = serde_json::from_str(&out)
        .map_err(|e| ("command", format!("scr index --json: {e}:\n{out}")))?;
    // SPEC §4.11: dataset ids never repeat within a prefix. The index's ids are SCR's own,
    // so only their constancy is judged: an id once seen naming a dataset never names
    // another later
    for d in json["datasets"].as_array().into_iter().flatten() {
        let (Some(id), Some(name)) = (d["dset"].as_u64(), d["name"].as_str()) else {
            continue;
        };
        match s.ids.get(&id) {
            Some(before) if before != name => {
                return Err((
                    "dataset-id",
                    format!(
                        "dataset id {id} named {before} before and names {name} now: an id was given twice"
                    ),
                ));
            }
            Some(_) => {}
            None => {
                s.ids.insert(id, name.to_string());
            }
        }
    }
    let entries: Vec<Entry> = json["datasets"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| Entry {
                    name: d["name"].as_str().unwrap_or_default().to_string(),
                    valid: d["valid"].as_bool().unwrap_or(false),
                    current: d["current"].as_bool().unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default();
    if env.peer.is_some()
        && let Some(older) = s.model.next_older_after_drop
        && entries
            .iter()
            .any(|e| e.current && s.model.current_copy(&e.name) == Some(older))
    {
        return Err((
            crate::peer::CURRENT_MOVED_BACK,
            format!("scr_index --remove of the current entry made #{older} current"),
        ));
    }
    s.model.judge_index(&entries).map_err(|m| ("index", m))?;
    let current = entries
        .iter()
        .find(|e| e.current)
        .and_then(|e| s.model.current_copy(&e.name));
    if let (Some(before), Some(now)) = (s.current, current)
        && now < before
        && !s.operator_since
        && s.model
            .get(before)
            .is_some_and(|c| c.surely_on_prefix() && !c.rejected)
    {
        return Err((
            "index",
            format!(
                "CURRENT moved back from #{before} to #{now}, and #{before} is still whole on the prefix"
            ),
        ));
    }
    s.current = current;
    s.operator_since = false;
    Ok(())
}

/// No process of the application outlives its run (SPEC §4.11: nothing is left behind).
pub fn no_process_left(app: &Path) -> Result<(), String> {
    for _ in 0..30 {
        let left = processes_of(app);
        if left.is_empty() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(format!(
        "processes of {} outlive their run: {:?}",
        app.display(),
        processes_of(app)
    ))
}

fn processes_of(app: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == app))
        .collect()
}

/// Every file below `dir` (none when it is missing).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(walk(&p)),
            Ok(_) => out.push(p),
            Err(_) => {}
        }
    }
    out
}
