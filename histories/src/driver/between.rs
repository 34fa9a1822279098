//! The steps between runs: faults done to the files themselves, and operator commands
//! through `scr` (`scr index`, `scr postrun`).

use super::{Checked, Env, JOB_ID, State};
use crate::check;
use crate::history::{Fault, Operator, file_length, serial_in};
use crate::process::run_bounded;
use crate::script::Transcript;
use std::path::{Path, PathBuf};

impl Env {
    /// Does `fault` to the files and tells the model; false when nothing is eligible.
    pub(super) fn fault(&self, s: &mut State, fault: Fault, t: &mut Transcript) -> Checked<bool> {
        let io = |p: &Path, e: std::io::Error| ("fault", format!("{}: {e}", p.display()));
        match fault {
            Fault::LoseNode { pick } => {
                let Some(ranks) = s.model.cache_ranks else {
                    return Ok(false);
                };
                let k = pick % s.model.nodes(ranks);
                let dirs = match &self.peer {
                    Some(peer) => peer.node_dirs(&s.job.join("cache"), k, &s.job_id).to_vec(),
                    None => ["cache", "cntl"]
                        .map(|d| {
                            s.job
                                .join(d)
                                .join(scr::layout::user_name())
                                .join(format!("scr.{JOB_ID}"))
                                .join(format!("node.n{}", k + 1))
                        })
                        .to_vec(),
                };
                for dir in dirs {
                    t.line(&format!("rm -rf {}", t.path(&dir)));
                    if dir.exists() {
                        std::fs::remove_dir_all(&dir).map_err(|e| io(&dir, e))?;
                    }
                }
                s.model.lose_node();
            }
            Fault::FlipCached { pick } | Fault::TruncateCached { pick } => {
                let targets = s.model.cached();
                if targets.is_empty() {
                    return Ok(false);
                }
                let serial = targets[pick as usize % targets.len()];
                let dir = s.model.get(serial).map(|c| c.name()).unwrap_or_default();
                // (copies of a name written again lie in their own dataset's directory: the
                // file's bytes say which checkpoint it belongs to)
                let mut files: Vec<PathBuf> = check::walk(&s.job.join("cache"))
                    .into_iter()
                    .filter(|p| {
                        // (v2.0.0 names a dataset's cache directory by its id, not its name)
                        self.peer.is_some()
                            || p.parent()
                                .and_then(|d| d.file_name())
                                .is_some_and(|d| d == dir.as_str())
                    })
                    .filter(|p| std::fs::read(p).is_ok_and(|b| serial_in(&b) == Some(serial)))
                    .collect();
                files.sort();
                if files.is_empty() {
                    return Ok(false);
                }
                let file = &files[(pick as usize / targets.len()) % files.len()];
                damage(file, matches!(fault, Fault::FlipCached { .. }), t)
                    .map_err(|e| io(file, e))?;
                s.model.damage_cached(serial);
            }
            Fault::FlipPrefix { pick } | Fault::TruncatePrefix { pick } => {
                let mut files = Vec::new();
                for serial in s.model.on_prefix() {
                    let c = s.model.get(serial).expect("on the prefix");
                    for r in 0..c.writers {
                        for k in 0..c.spec.nfiles {
                            let len = file_length(c.spec.size, r, k);
                            if len > 0 {
                                files.push((serial, r, k, len));
                            }
                        }
                    }
                }
                if files.is_empty() {
                    return Ok(false);
                }
                let (serial, r, k, len) = files[pick as usize % files.len()];
                let c = s.model.get(serial).expect("on the prefix");
                let prefix = s.job.join("prefix");
                let flip = matches!(fault, Fault::FlipPrefix { .. });
                // (the last step's checks found each file at its path, or whole in a
                // container when its flush may have packed it)
                match check::locate(&prefix, c, r, k, &mut None) {
                    check::Located::AtItsPath(file) => {
                        damage(&file, flip, t).map_err(|e| io(&file, e))?;
                    }
                    // the one byte in its middle flips, or the container that holds its
                    // last byte is cut there
                    check::Located::Packed { stream, start } => {
                        let byte = start + if flip { len / 2 } else { len - 1 };
                        let (part, at) = stream.part_of(byte).expect("within the stream");
                        if flip {
                            flip_byte(part, at, t).map_err(|e| io(part, e))?;
                        } else {
                            cut(part, at, t).map_err(|e| io(part, e))?;
                        }
                    }
                    check::Located::EmptyPacked | check::Located::Nowhere { .. } => {
                        return Err((
                            "prefix-data",
                            format!(
                                "{}/rank_{r}.{k} of #{serial} is neither at its path nor in a container",
                                c.name()
                            ),
                        ));
                    }
                }
                s.model.damage_prefix(serial);
            }
        }
        Ok(true)
    }

    /// Runs the operator's command `op` and tells the model; false when nothing is eligible.
    pub(super) fn operator(
        &self,
        s: &mut State,
        op: Operator,
        t: &mut Transcript,
    ) -> Checked<bool> {
        let (flag, pick) = match op {
            Operator::IndexDrop { pick } => ("--drop", pick),
            Operator::IndexCurrent { pick } => ("--current", pick),
            Operator::Postrun { down } => return self.postrun(s, down, t),
        };
        let targets = s.model.on_prefix();
        if targets.is_empty() {
            return Ok(false);
        }
        let serial = targets[pick as usize % targets.len()];
        let name = s.model.get(serial).map(|c| c.name()).unwrap_or_default();
        let cmd = match &self.peer {
            Some(peer) => peer.index_command(&s.job.join("prefix"), flag, &name, t),
            None => {
                t.line(&format!("\"$SCR\" index -p \"$J/prefix\" {flag} {name}"));
                let mut cmd = self.scr(&s.job);
                cmd.args(["index", "-p"])
                    .arg(s.job.join("prefix"))
                    .args([flag, &name]);
                cmd
            }
        };
        let (status, out) = run_bounded(cmd).map_err(|e| ("hang", e))?;
        // `scr index --help`: exit 0 on success, 1 when the named dataset is not in the index
        if !status.success() {
            return Err((
                "command",
                format!("scr index {flag} {name} exited {status}:\n{out}"),
            ));
        }
        match op {
            Operator::IndexDrop { .. } => s.model.drop_entry(serial),
            _ => {
                s.model.set_current(serial);
                s.operator_since = true;
            }
        }
        Ok(true)
    }

    /// `scr postrun` for the cache's job, with node `down` (a pick) excluded.
    fn postrun(&self, s: &mut State, down: Option<u32>, t: &mut Transcript) -> Checked<bool> {
        let Some(ranks) = s.model.cache_ranks else {
            return Ok(false);
        };
        let nodes = s.model.nodes(ranks);
        let down = down.map(|p| format!("n{}", p % nodes + 1));
        let nodelist = format!("n[1-{nodes}]");
        let mut cmd = self.scr(&s.job);
        cmd.env("SCR_NODELIST", &nodelist)
            .args(["postrun", "-p"])
            .arg(s.job.join("prefix"));
        let mut line = format!("SCR_NODELIST='{nodelist}' ");
        if let Some(d) = &down {
            cmd.env("SCR_EXCLUDE_NODES", d);
            line.push_str(&format!("SCR_EXCLUDE_NODES={d} "));
        }
        t.line(&format!("{line}\"$SCR\" postrun -p \"$J/prefix\" || true"));
        let (status, out) = run_bounded(cmd).map_err(|e| ("hang", e))?;
        // `scr postrun --help`: 0 when everything drained (or nothing needed it), 1 when an
        // output dataset was lost or no checkpoint the drain tried could be completed
        if !matches!(status.code(), Some(0 | 1)) {
            return Err(("command", format!("scr postrun exited {status}:\n{out}")));
        }
        let undecided = s.model.drain(u32::from(down.is_some()));
        for serial in undecided {
            let Some(c) = s.model.get(serial) else {
                continue;
            };
            let name = c.name();
            let whole = check::holds(&s.job.join("prefix"), c).is_ok();
            let reported = out.lines().any(|l| l.contains(&name) && l.contains("lost"));
            // SPEC §4.11: a completed output reaches the prefix or is reported lost by name
            if !whole && !reported {
                return Err((
                    "output",
                    format!(
                        "scr postrun neither drained output {name} whole nor reported it lost:\n{out}"
                    ),
                ));
            }
            s.model.output_fate(serial, whole);
        }
        Ok(true)
    }
}

/// Flips the byte in the middle of `file`, or cuts its last byte off.
fn damage(file: &Path, flip: bool, t: &mut Transcript) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if flip {
        flip_byte(file, len / 2, t)
    } else {
        cut(file, len - 1, t)
    }
}

/// Flips byte `at` of `file`.
fn flip_byte(file: &Path, at: u64, t: &mut Transcript) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)?;
    let mut b = [0u8];
    f.read_exact_at(&mut b, at)?;
    b[0] ^= 0xff;
    t.line(&format!(
        "printf '\\{:03o}' | dd of={} bs=1 seek={at} conv=notrunc status=none",
        b[0],
        t.path(file),
    ));
    f.write_all_at(&b, at)?;
    f.sync_all()
}

/// Cuts `file` to its first `len` bytes.
fn cut(file: &Path, len: u64, t: &mut Transcript) -> std::io::Result<()> {
    t.line(&format!("truncate -s {len} {}", t.path(file)));
    let f = std::fs::OpenOptions::new().write(true).open(file)?;
    f.set_len(len)?;
    f.sync_all()
}
