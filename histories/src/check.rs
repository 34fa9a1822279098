//! The checks run after every step: the prefix holds exactly the bytes of the checkpoints
//! the model says are flushed, and none of a checkpoint the window deleted; the index's
//! claims fit the model; the current checkpoint never moves backwards without a loss or an
//! operator to justify it; nothing outside SCR's directories changed; no temporary or process
//! is left behind.

use crate::driver::{Env, State};
use crate::history::{CONTAINER_SIZE, file_length, pattern, serial_in};
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
/// says which is not. A file of a checkpoint that may have been packed
/// ([`Ckpt::may_be_packed`]) may lie in a dataset's containers instead of at its path
/// ([`Containers::find`]); an empty file takes no bytes of one.
pub fn holds(prefix: &Path, c: &Ckpt) -> Result<(), String> {
    holds_with(prefix, c, &mut None)
}

/// [`holds`], with the prefix's containers read once for every checkpoint judged.
fn holds_with(prefix: &Path, c: &Ckpt, containers: &mut Option<Containers>) -> Result<(), String> {
    for r in 0..c.writers {
        for k in 0..c.spec.nfiles {
            let (path, there) = match locate(prefix, c, r, k, containers) {
                Located::AtItsPath(_) | Located::EmptyPacked => continue,
                Located::Packed { stream, .. } => {
                    stream
                        .packed_as_promised()
                        .map_err(|e| format!("{}: {e}", c.label()))?;
                    continue;
                }
                Located::Nowhere { path, there } => (path, there),
            };
            return Err(match there {
                Ok(bytes) => {
                    let whose = serial_in(&bytes)
                        .filter(|&w| w != c.serial)
                        .map(|w| format!(" (it holds #{w}'s bytes)"))
                        .unwrap_or_default();
                    let nor = if c.may_be_packed {
                        ", nor do the containers"
                    } else {
                        ""
                    };
                    format!(
                        "{} on the prefix does not hold what rank {r} wrote in {}{whose}{nor}",
                        path.display(),
                        c.label()
                    )
                }
                Err(e) if c.may_be_packed => format!(
                    "{} is flushed, but rank {r}'s file {k} is neither at {} ({e}) nor whole in the containers of any dataset on the prefix",
                    c.label(),
                    path.display()
                ),
                Err(e) => format!("{} is flushed, but {}: {e}", c.label(), path.display()),
            });
        }
    }
    Ok(())
}

/// Where rank `r`'s file `k` of a flushed checkpoint lies whole on the prefix.
pub enum Located<'a> {
    /// At its own path, `<prefix>/<name>/rank_<r>.<k>`.
    AtItsPath(PathBuf),
    /// Whole and contiguous in a dataset's containers read in order, from byte `start` of
    /// their stream.
    Packed {
        /// The containers that hold it.
        stream: &'a ContainerStream,
        /// Where its first byte lies in their stream.
        start: u64,
    },
    /// Empty, of a checkpoint its flush may have packed: an empty file takes no bytes of a
    /// container, and its path need not exist.
    EmptyPacked,
    /// Nowhere: what its path holds instead, or why that could not be read.
    Nowhere {
        /// Its path.
        path: PathBuf,
        /// The bytes at its path.
        there: std::io::Result<Vec<u8>>,
    },
}

/// Finds rank `r`'s file `k` of `c` on `prefix`: at its path with its own bytes, or, when a
/// flush may have packed `c` ([`Ckpt::may_be_packed`]), in the prefix's containers (read
/// into `containers` the first time they are needed).
pub fn locate<'a>(
    prefix: &Path,
    c: &Ckpt,
    r: u32,
    k: u32,
    containers: &'a mut Option<Containers>,
) -> Located<'a> {
    let path = prefix.join(c.name()).join(format!("rank_{r}.{k}"));
    let len = file_length(c.spec.size, r, k);
    let there = std::fs::read(&path);
    if there
        .as_ref()
        .is_ok_and(|bytes| is_file_of(bytes, c.serial, r, k, len))
    {
        return Located::AtItsPath(path);
    }
    if c.may_be_packed {
        if len == 0 {
            return Located::EmptyPacked;
        }
        let containers = containers.get_or_insert_with(|| Containers::of(prefix));
        if let Some((stream, start)) = containers.find(c.serial, r, k, len) {
            return Located::Packed { stream, start };
        }
    }
    Located::Nowhere { path, there }
}

/// Whether `bytes` are exactly rank `r`'s file `k` of checkpoint `serial`, `len` bytes.
pub fn is_file_of(bytes: &[u8], serial: u32, r: u32, k: u32, len: u64) -> bool {
    bytes.len() as u64 == len
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(serial, r, k, i as u64))
}

/// One dataset's containers on the prefix, `ctr.<n>.scr` in order of n, and their bytes
/// one after the other. SCR's design of containers (/work/shared/seeds/containers.txt):
/// "Application file data is packed sequentially within a container until the container
/// is full, and then the remaining data spills over to the next container", their ids
/// counting up from 0. (Where a dataset's containers lie is this implementation's:
/// `.scr/scr.dataset.<id>/`, README "Containers".)
pub struct ContainerStream {
    /// Each container's number, path and length, in order.
    pub parts: Vec<(u64, PathBuf, u64)>,
    /// Their bytes, concatenated (up to a container that could not be read).
    pub bytes: Vec<u8>,
}

impl ContainerStream {
    /// The container holding byte `at` of the stream, and that byte's offset in it.
    pub fn part_of(&self, at: u64) -> Option<(&Path, u64)> {
        let mut start = 0;
        for (_, path, len) in &self.parts {
            if at < start + len {
                return Some((path, at - start));
            }
            start += len;
        }
        None
    }

    /// The containers are as the design packs them: numbered from 0 with none missing,
    /// each but the last full ([`CONTAINER_SIZE`], the only size the histories give).
    pub fn packed_as_promised(&self) -> Result<(), String> {
        for (i, (n, path, len)) in self.parts.iter().enumerate() {
            if *n != i as u64 {
                return Err(format!("{}: container {i} is missing", path.display()));
            }
            let last = i + 1 == self.parts.len();
            if !last && *len != u64::from(CONTAINER_SIZE) {
                return Err(format!(
                    "{} holds {len} bytes, not SCR_CONTAINER_SIZE ({CONTAINER_SIZE}), and is not the last",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

/// The container streams of every dataset directory below a prefix's `.scr` that holds
/// any.
pub struct Containers(Vec<ContainerStream>);

impl Containers {
    /// The containers below `prefix`.
    pub fn of(prefix: &Path) -> Containers {
        let Ok(dirs) = std::fs::read_dir(prefix.join(".scr")) else {
            return Containers(Vec::new());
        };
        let mut out = Vec::new();
        for dir in dirs.filter_map(|d| d.ok()).map(|d| d.path()) {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut numbered: Vec<(u64, PathBuf)> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n = name
                        .strip_prefix("ctr.")?
                        .strip_suffix(".scr")?
                        .parse()
                        .ok()?;
                    Some((n, e.path()))
                })
                .collect();
            if numbered.is_empty() {
                continue;
            }
            numbered.sort();
            let mut stream = ContainerStream {
                parts: Vec::new(),
                bytes: Vec::new(),
            };
            for (n, path) in numbered {
                // (the stream ends at a container it cannot read: the bytes after it would
                // stand at the wrong offsets)
                let Ok(bytes) = std::fs::read(&path) else {
                    break;
                };
                stream.parts.push((n, path, bytes.len() as u64));
                stream.bytes.extend(bytes);
            }
            out.push(stream);
        }
        Containers(out)
    }

    /// Where rank `r`'s file `k` of checkpoint `serial` (`len` bytes) lies whole and in one
    /// piece: the stream and the file's first byte in it; None for an empty file. Each
    /// 8 bytes of a file say which checkpoint, rank, file and word they are
    /// ([`pattern`]), so the bytes of a file of 16 or more (every size the histories draw
    /// but 0) match nowhere else.
    pub fn find(&self, serial: u32, r: u32, k: u32, len: u64) -> Option<(&ContainerStream, u64)> {
        if len == 0 {
            return None;
        }
        let want: Vec<u8> = (0..len).map(|i| pattern(serial, r, k, i)).collect();
        let head = &want[..want.len().min(8)];
        self.0.iter().find_map(|s| {
            s.bytes
                .windows(head.len())
                .enumerate()
                .filter(|(_, w)| *w == head)
                .map(|(at, _)| at)
                .find(|&at| s.bytes.get(at..at + want.len()) == Some(want.as_slice()))
                .map(|at| (s, at as u64))
        })
    }
}

/// A flushed checkpoint's (or output's) files are on the prefix with exactly the bytes the
/// application wrote (guide quick.rst, quick-8: the file appears at its relative path under
/// the prefix once flushed; README "Containers": or whole in its dataset's containers); one
/// the window deleted left none, unless another copy of its name names them (README,
/// SCR_PREFIX_SIZE), nor any container.
fn prefix_files(s: &State) -> Result<(), String> {
    let prefix = s.job.join("prefix");
    let mut containers = None;
    for c in &s.model.ckpts {
        if c.surely_on_prefix() && !c.may_read_wrong && !c.rejected {
            holds_with(&prefix, c, &mut containers)?;
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
        if c.window_deleted && c.prefix == Avail::No && c.may_be_packed {
            // its containers go with it (its bytes are its own: no other dataset holds them)
            let containers = containers.get_or_insert_with(|| Containers::of(&prefix));
            let kept = (0..c.writers)
                .flat_map(|r| (0..c.spec.nfiles).map(move |k| (r, k)))
                .find(|&(r, k)| {
                    let len = file_length(c.spec.size, r, k);
                    containers.find(c.serial, r, k, len).is_some()
                });
            if let Some((r, k)) = kept {
                return Err(format!(
                    "SCR_PREFIX_SIZE deleted {} from the index, but a container still holds rank {r}'s file {k}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of checkpoint 7 packed one after the other into containers of `size` bytes in
    /// `dir`, as seeds/containers.txt describes.
    fn pack(dir: &Path, files: &[(u32, u32, u64)], size: usize) {
        let bytes: Vec<u8> = files
            .iter()
            .flat_map(|&(r, k, len)| (0..len).map(move |i| pattern(7, r, k, i)))
            .collect();
        let ds = dir.join(".scr/scr.dataset.3");
        std::fs::create_dir_all(&ds).unwrap();
        for (n, part) in bytes.chunks(size).enumerate() {
            std::fs::write(ds.join(format!("ctr.{n}.scr")), part).unwrap();
        }
    }

    #[test]
    fn a_file_cut_across_containers_is_found_whole_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap();
        // 11 containers: ctr.10.scr comes after ctr.9.scr, not after ctr.1.scr
        pack(dir.path(), &[(0, 0, 2503), (1, 0, 2511), (1, 2, 2517)], 700);
        let containers = Containers::of(dir.path());
        assert_eq!(containers.0.len(), 1);
        assert_eq!(containers.0[0].parts.len(), 11);
        let (stream, start) = containers.find(7, 1, 0, 2511).unwrap();
        assert_eq!(start, 2503);
        // its middle byte, 2503 + 1255 into the stream, is 258 bytes into ctr.5.scr
        let (part, at) = stream.part_of(start + 1255).unwrap();
        assert!(part.ends_with("ctr.5.scr"), "{part:?}");
        assert_eq!(at, 258);
        assert!(containers.find(7, 1, 2, 2517).is_some());
        // another checkpoint's, rank's or file's bytes, or a longer file, are not there
        assert!(containers.find(8, 1, 0, 2511).is_none());
        assert!(containers.find(7, 2, 0, 2511).is_none());
        assert!(containers.find(7, 0, 1, 2503).is_none());
        // (two bytes longer: its byte 2503 is 0, as the next file's first byte happens to be)
        assert!(containers.find(7, 0, 0, 2505).is_none());
        assert!(containers.find(7, 0, 1, 0).is_none());
        // a container cut short loses the file whose bytes it held
        let last = &containers.0[0].parts[10].1;
        std::fs::write(last, &std::fs::read(last).unwrap()[..10]).unwrap();
        let containers = Containers::of(dir.path());
        assert!(containers.find(7, 1, 2, 2517).is_none());
        assert!(containers.find(7, 0, 0, 2503).is_some());
    }

    #[test]
    fn containers_not_packed_as_the_design_says_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let size = CONTAINER_SIZE as usize;
        pack(dir.path(), &[(0, 0, 5003), (1, 0, 5011)], size);
        let ds = dir.path().join(".scr/scr.dataset.3");
        assert!(Containers::of(dir.path()).0[0].packed_as_promised().is_ok());
        // a full container cut short, though not the last
        let first = ds.join("ctr.0.scr");
        let bytes = std::fs::read(&first).unwrap();
        std::fs::write(&first, &bytes[..size - 1]).unwrap();
        let e = Containers::of(dir.path()).0[0]
            .packed_as_promised()
            .unwrap_err();
        assert!(
            e.contains(&format!("ctr.0.scr holds {} bytes", size - 1)),
            "{e}"
        );
        // a container missing
        std::fs::write(&first, &bytes).unwrap();
        std::fs::remove_file(ds.join("ctr.1.scr")).unwrap();
        let e = Containers::of(dir.path()).0[0]
            .packed_as_promised()
            .unwrap_err();
        assert!(e.contains("container 1 is missing"), "{e}");
    }
}
