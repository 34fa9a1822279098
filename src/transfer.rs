//! Transfer file (`<cntldir>/transfer.scrinfo`): the protocol between the
//! library and the per-node asynchronous flush agent.
//!
//! ```text
//! FILES <src> {DESTINATION <dst>, SIZE <n>, WRITTEN <n>, CRC <crc32>, STAGED <temp>}
//! BW <bytes/s>  PERCENT <cpu share>  COMMAND RUN|STOP|EXIT  STATE RUNNING|STOPPED|EXITING  FLAG DONE
//! PID <agent process>
//! ```
//!
//! `CRC` (of a written file), `STAGED` (where its bytes wait beside the destination until
//! the library places every file of the dataset) and `PID` (so the library can tell a live
//! agent from a dead one) are this implementation's additions. [`copy_entry`] is the copy
//! both the agent and the library's own background thread make: paced by a [`Throttle`],
//! fsynced, recorded.

use crate::hash::{Hash, format_crc32};
use crate::view::{HashView, check_value, hash_view};
use crate::{Result, io};
use std::path::Path;
use std::time::{Duration, Instant};

hash_view!(
    /// The transfer file.
    TransferFile, "transfer file", validate = validate, max_bytes = 16 << 20
);

const FILES: &str = "FILES";
const DESTINATION: &str = "DESTINATION";
const SIZE: &str = "SIZE";
const WRITTEN: &str = "WRITTEN";
const BW: &str = "BW";
const PERCENT: &str = "PERCENT";
const COMMAND: &str = "COMMAND";
const STATE: &str = "STATE";
const FLAG: &str = "FLAG";
const DONE: &str = "DONE";
const CRC: &str = "CRC";
const PID: &str = "PID";
const STAGED: &str = "STAGED";
/// The directory a file's destination lies below (the prefix): the copy goes through it by
/// directory handles, never through a link (SCR's own transfer files do not record it).
const ROOT: &str = "ROOT";

fn validate(h: &Hash) -> Result<(), String> {
    check_value::<f64>(h, BW, "transfer file")?;
    check_value::<f64>(h, PERCENT, "transfer file")?;
    for (src, f) in h.get(FILES).into_iter().flat_map(Hash::iter) {
        check_value::<u64>(f, SIZE, &format!("transfer file entry {src}"))?;
        check_value::<u64>(f, WRITTEN, &format!("transfer file entry {src}"))?;
    }
    Ok(())
}

/// What the library asks the agent to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Run,
    Stop,
    Exit,
}

/// What the agent reports it is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    Stopped,
    Exiting,
}

macro_rules! names {
    ($t:ty { $($v:ident = $s:literal),* }) => {
        impl $t {
            pub fn as_str(self) -> &'static str { match self { $(Self::$v => $s),* } }
            pub fn parse(text: &str) -> Option<Self> { match text { $($s => Some(Self::$v),)* _ => None } }
        }
    };
}
names!(Command { Run = "RUN", Stop = "STOP", Exit = "EXIT" });
names!(State { Running = "RUNNING", Stopped = "STOPPED", Exiting = "EXITING" });

/// One file to copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferEntry {
    pub source: String,
    pub destination: String,
    pub size: u64,
    pub written: u64,
    pub crc: Option<u32>,
    /// The prefix the destination lies below.
    pub root: Option<String>,
    /// The temporary beside the destination holding the written bytes, relative to the
    /// root: a copy is put in its place only when every file of its dataset is right.
    pub staged: Option<String>,
}

impl TransferEntry {
    /// Whether the file is copied: all its bytes written, and (as every copy records one)
    /// its CRC, which also tells a copied empty file from one not yet looked at.
    pub fn is_written(&self) -> bool {
        self.written >= self.size && self.crc.is_some()
    }

    /// The written copy waiting beside the destination, relative to the root; None when
    /// nothing is staged (not written yet, or the destination is the source itself).
    pub fn staged_file(&self) -> Result<Option<crate::safe_fs::Staged>> {
        let (Some(temp), Some(root)) = (&self.staged, &self.root) else {
            return Ok(None);
        };
        let (_, target) = crate::safe_fs::below(Path::new(root), Path::new(&self.destination))?;
        Ok(Some(crate::safe_fs::Staged {
            temp: temp.into(),
            target,
        }))
    }
}

impl TransferFile {
    /// Lists a file to copy to `destination`, which lies below `root` (the prefix).
    pub fn add_file(&mut self, source: &str, destination: &str, root: &str, size: u64) {
        let f = self.0.set_kv(FILES, source);
        f.set_value(DESTINATION, destination);
        f.set_value(SIZE, size);
        f.set_value(WRITTEN, 0);
        f.set_value(ROOT, root);
    }

    pub fn files(&self) -> Vec<TransferEntry> {
        self.0
            .get(FILES)
            .into_iter()
            .flat_map(Hash::iter)
            .map(|(src, f)| TransferEntry {
                source: src.to_string(),
                destination: f.first_value(DESTINATION).unwrap_or_default().to_string(),
                size: f.parsed(SIZE).ok().flatten().unwrap_or(0),
                written: f.parsed(WRITTEN).ok().flatten().unwrap_or(0),
                crc: f.crc32(CRC).ok().flatten(),
                root: f.first_value(ROOT).map(str::to_string),
                staged: f.first_value(STAGED).map(str::to_string),
            })
            .collect()
    }

    /// Records bytes written and fsynced for one file, their CRC32, and the temporary they
    /// wait in (relative to the root) when staged.
    pub fn set_written(&mut self, source: &str, written: u64, crc: u32, staged: Option<&Path>) {
        if let Some(f) = self.0.get_kv_mut(FILES, source) {
            f.set_value(WRITTEN, written);
            f.set_value(CRC, format_crc32(crc));
            match staged {
                Some(temp) => f.set_value(STAGED, temp.display()),
                None => {
                    f.unset(STAGED);
                }
            }
        }
    }

    /// The files not yet written in full.
    pub fn pending(&self) -> Vec<TransferEntry> {
        self.files()
            .into_iter()
            .filter(|f| !f.is_written())
            .collect()
    }

    /// The agent's process id.
    pub fn agent_pid(&self) -> Option<u32> {
        self.0.parsed(PID).ok().flatten()
    }
    pub fn set_agent_pid(&mut self, pid: Option<u32>) {
        match pid {
            Some(p) => self.0.set_value(PID, p),
            None => {
                self.0.unset(PID);
            }
        }
    }

    /// Forgets one file (its flush is over).
    pub fn remove_file(&mut self, source: &str) {
        if let Some(files) = self.0.get_mut(FILES) {
            files.unset(source);
        }
        if self.0.get(FILES).is_some_and(|f| f.iter().next().is_none()) {
            self.0.unset(FILES);
        }
    }

    pub fn set_limits(&mut self, bytes_per_sec: f64, cpu_percent: f64) {
        self.0.set_value(BW, format!("{bytes_per_sec:.6}"));
        self.0.set_value(PERCENT, format!("{cpu_percent:.6}"));
    }
    pub fn bandwidth(&self) -> Option<f64> {
        self.0.parsed(BW).ok().flatten()
    }
    pub fn percent(&self) -> Option<f64> {
        self.0.parsed(PERCENT).ok().flatten()
    }

    pub fn command(&self) -> Option<Command> {
        self.0.first_value(COMMAND).and_then(Command::parse)
    }
    pub fn set_command(&mut self, c: Command) {
        self.0.set_value(COMMAND, c.as_str());
    }
    pub fn state(&self) -> Option<State> {
        self.0.first_value(STATE).and_then(State::parse)
    }
    pub fn set_state(&mut self, s: State) {
        self.0.set_value(STATE, s.as_str());
    }

    pub fn is_done(&self) -> bool {
        self.0.first_value(FLAG) == Some(DONE)
    }
    pub fn set_done(&mut self, done: bool) {
        if done {
            self.0.set_value(FLAG, DONE)
        } else {
            self.0.unset(FLAG);
        }
    }
}

/// The node's transfer agent, as the process table shows the one a transfer file names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// None: none is named, or its process is gone (or is not this user's `scr transfer`:
    /// a process id used again by anything else is no agent).
    Gone,
    /// Its process runs (or sleeps): it may copy.
    Live(u32),
    /// Its process is stopped (SIGSTOP): it copies nothing until continued, and may hold
    /// the transfer file's lock all that while.
    Stopped(u32),
}

/// What process `pid` is to the library: an agent of this user's, and whether stopped.
pub fn agent_process(pid: u32) -> Agent {
    use std::os::unix::fs::MetadataExt;
    let proc = Path::new("/proc").join(pid.to_string());
    let Ok(stat) = std::fs::read_to_string(proc.join("stat")) else {
        return Agent::Gone;
    };
    // "pid (comm) S …": the state follows the last parenthesis (comm may hold any)
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    let own =
        std::fs::metadata(&proc).is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw());
    let cmdline = std::fs::read(proc.join("cmdline")).unwrap_or_default();
    let agent = cmdline.split(|&b| b == 0).nth(1) == Some(b"transfer".as_slice());
    match state {
        _ if !own || !agent => Agent::Gone,
        None | Some('Z' | 'X') => Agent::Gone,
        Some('T' | 't') => Agent::Stopped(pid),
        Some(_) => Agent::Live(pid),
    }
}

impl TransferFile {
    /// The agent this file names ([`agent_process`] of its PID).
    pub fn agent(&self) -> Agent {
        self.agent_pid().map_or(Agent::Gone, agent_process)
    }

    /// [`HashView::update`] of the transfer file at `path` as the library and the commands
    /// make it: an agent stopped while it held the file's lock would hold it for good, so
    /// one found stopped holding it is ended ([`end_agent`]) rather than waited for, and
    /// the user told so on stderr: the flush goes on without the agent.
    pub fn update_past_agent<R>(
        path: &Path,
        change: impl FnOnce(&mut TransferFile) -> Result<R>,
    ) -> Result<R> {
        let mut holding = |holder: Option<u32>| {
            if let Some(pid) = holder
                && agent_process(pid) == Agent::Stopped(pid)
            {
                // one write: every rank of a job shares the launcher's stream
                let line = format!(
                    "SCR: WARNING: the transfer agent (pid {pid}) is stopped holding the lock of {}; ending it, the flush goes on without it\n",
                    path.display()
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
                end_agent(path, pid);
            }
        };
        Self::update_waiting(
            path,
            io::PRIVATE_FILE,
            io::lock_timeout(),
            &mut holding,
            change,
        )
    }
}

/// Ends the agent `pid` of the transfer file at `transfer` when it is still this user's
/// `scr transfer` (SIGKILL, which ends a stopped process too), waits up to 2 s for it to
/// go, and removes what its copies left half written: the temporaries named with its
/// process id beside the destinations the file lists. An agent that made no progress
/// (stopped, or stuck) is ended so that none of its copies can land after the ranks
/// copied the files themselves. Returns whether it is gone.
pub fn end_agent(transfer: &Path, pid: u32) -> bool {
    if agent_process(pid) != Agent::Gone {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("a recorded agent pid is positive"),
            rustix::process::Signal::KILL,
        );
        let asked = Instant::now();
        while agent_process(pid) != Agent::Gone {
            if asked.elapsed() > Duration::from_secs(2) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // (read without the lock: the agent that held it is gone, and a listed file only
    // names directories to look in)
    let listed = TransferFile::read(transfer).unwrap_or_default();
    // a copy it finished and recorded waits for the library to place it: not a leftover
    let recorded: Vec<std::path::PathBuf> = listed
        .files()
        .into_iter()
        .filter_map(|e| e.staged.map(std::path::PathBuf::from))
        .collect();
    let mut dirs: std::collections::BTreeMap<
        String,
        std::collections::BTreeSet<std::path::PathBuf>,
    > = Default::default();
    for e in listed.files() {
        let Some(root) = e.root else { continue };
        if let Some(rel) = Path::new(&e.destination)
            .parent()
            .and_then(|d| d.strip_prefix(&root).ok())
            .filter(|rel| !rel.as_os_str().is_empty())
        {
            dirs.entry(root).or_default().insert(rel.to_path_buf());
        }
    }
    for (root, rels) in dirs {
        if let Ok(below) = crate::safe_fs::Beneath::open(Path::new(&root)) {
            for rel in rels {
                below.remove_temporaries_of(&rel, Some(pid), &recorded);
            }
        }
    }
    true
}

/// Paces a copy: at most `bytes_per_sec` (0: no cap), and busy at most `percent` of the
/// time (0 or 100: no cap).
pub struct Throttle {
    started: Instant,
    bytes: u64,
    bytes_per_sec: f64,
    percent: f64,
    busy_since: Instant,
}

impl Throttle {
    pub fn new(bytes_per_sec: f64, percent: f64) -> Throttle {
        let now = Instant::now();
        Throttle {
            started: now,
            bytes: 0,
            bytes_per_sec,
            percent,
            busy_since: now,
        }
    }

    /// `n` more bytes were written: sleeps as long as the limits ask.
    pub fn account(&mut self, n: u64) {
        self.bytes += n;
        let mut pause = Duration::ZERO;
        if self.percent > 0.0 && self.percent < 100.0 {
            pause = self
                .busy_since
                .elapsed()
                .mul_f64(100.0 / self.percent - 1.0);
        }
        if self.bytes_per_sec > 0.0 {
            let due = Duration::from_secs_f64(self.bytes as f64 / self.bytes_per_sec);
            pause = pause.max(due.saturating_sub(self.started.elapsed()));
        }
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        self.busy_since = Instant::now();
    }
}

/// Copies one listed file beside its destination (paced by `throttle`), fsynced, and records
/// it WRITTEN, with its CRC32 and the temporary it waits in, in the transfer file at
/// `transfer`: the library places it ([`TransferEntry::staged_file`]) once every rank's
/// files of the dataset are copied, so a file an older dataset names at the destination is
/// never replaced by part of a flush that fails.
pub fn copy_entry(
    transfer: &Path,
    entry: &TransferEntry,
    buf_size: usize,
    throttle: &mut Throttle,
) -> Result<(u64, u32)> {
    let dst = Path::new(&entry.destination);
    // the copy goes below the prefix the library named, as every copy to the prefix does
    let root = entry.root.as_deref().map(Path::new).ok_or_else(|| {
        crate::Error::invalid(
            transfer,
            format!(
                "names no prefix (ROOT) for {}: only SCR's library lists files here",
                entry.source
            ),
        )
    })?;
    let src = Path::new(&entry.source);
    // the library listed the file at the size its dataset completed with: one that has
    // changed size since is not that checkpoint, and copying it again would never make it
    // so (the copy would stay short of SIZE and be taken up again forever)
    let len = io::open_regular(src)?
        .metadata()
        .map_err(|e| crate::Error::io(src, "stat", e))?
        .len();
    if len != entry.size {
        return Err(crate::Error::corrupt(format!(
            "{}: {len} bytes where {} were listed when its dataset completed: the cached file changed since, so it is not flushed",
            entry.source, entry.size
        )));
    }
    // held while this copy may write below the prefix: no sweep of a dead flush touches it
    let _writing = crate::prefix::writing::writing_below_all(root, [dst], &mut |_| {});
    let (size, crc, staged) =
        io::stage_copy_with_crc(src, dst, root, buf_size, &mut |n| throttle.account(n))?;
    // the first copy recorded is the one placed: a copy made while another copier (the
    // agent resumed after a stop, or the rank that took over from it) already recorded its
    // own, or after the flush ended and forgot the file, is nobody's to place
    let mut first = false;
    let recorded = TransferFile::update_past_agent(transfer, |t| {
        let open = t
            .files()
            .iter()
            .any(|e| e.source == entry.source && !e.is_written());
        if open {
            let temp = staged.as_ref().map(|s| s.temp.as_path());
            t.set_written(&entry.source, size, crc, temp);
            first = true;
        }
        Ok(())
    });
    if (recorded.is_err() || !first)
        && let Some(staged) = &staged
    {
        let _ = crate::safe_fs::Beneath::open(root).and_then(|b| b.discard(staged));
    }
    recorded?;
    Ok((size, crc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::HashView;

    #[test]
    fn a_dead_agents_temporaries_go_and_every_other_writers_stay() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix");
        std::fs::create_dir_all(prefix.join("ckpt.1")).unwrap();
        // a process id that is certainly gone: a child that ended and was reaped
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let alive = std::process::id();
        let its = prefix.join(format!("ckpt.1/.rank_0.ckpt.tmp.{dead}.7"));
        let others = prefix.join(format!("ckpt.1/.rank_1.ckpt.tmp.{alive}.8"));
        let users = prefix.join("ckpt.1/rank_0.ckpt");
        let recorded = prefix.join(format!("ckpt.1/.rank_2.ckpt.tmp.{dead}.9"));
        for f in [&its, &others, &users, &recorded] {
            std::fs::write(f, b"x").unwrap();
        }
        let path = dir.path().join("transfer.scrinfo");
        let mut t = TransferFile::new();
        t.add_file(
            "/c/rank_0.ckpt",
            &prefix.join("ckpt.1/rank_0.ckpt").to_string_lossy(),
            &prefix.to_string_lossy(),
            1,
        );
        // a copy it finished and recorded, waiting to be placed by the library
        t.add_file(
            "/c/rank_2.ckpt",
            &prefix.join("ckpt.1/rank_2.ckpt").to_string_lossy(),
            &prefix.to_string_lossy(),
            1,
        );
        t.set_written(
            "/c/rank_2.ckpt",
            1,
            0,
            Some(Path::new(&format!("ckpt.1/.rank_2.ckpt.tmp.{dead}.9"))),
        );
        t.set_agent_pid(Some(dead));
        t.write(&path).unwrap();
        assert_eq!(t.agent(), Agent::Gone);
        assert!(end_agent(&path, dead));
        assert!(!its.exists(), "the dead agent's temporary stays");
        assert!(others.exists() && users.exists() && recorded.exists());
    }

    #[test]
    fn protocol_fields() {
        let mut t = TransferFile::new();
        t.add_file("/c/rank_0.ckpt", "/p/ckpt.1/rank_0.ckpt", "/p", 524294);
        t.set_limits(52428800.0, 0.0);
        t.set_command(Command::Run);
        t.set_written(
            "/c/rank_0.ckpt",
            524294,
            7,
            Some(Path::new("ckpt.1/.rank_0.ckpt.tmp.1.2")),
        );
        t.set_done(true);
        let back = TransferFile::from_hash(t.hash().clone()).unwrap();
        assert_eq!(back.files()[0].written, 524294);
        assert_eq!(back.files()[0].crc, Some(7));
        let staged = back.files()[0].staged_file().unwrap().unwrap();
        assert_eq!(staged.target, Path::new("ckpt.1/rank_0.ckpt"));
        assert!(back.pending().is_empty());
        assert_eq!(back.command(), Some(Command::Run));
        assert_eq!(back.bandwidth(), Some(52428800.0));
        assert!(back.is_done());
    }

    #[test]
    fn a_copy_waits_beside_its_destination_and_only_the_first_recorded_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, prefix) = (dir.path().join("cache"), dir.path().join("prefix"));
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::create_dir_all(prefix.join("state")).unwrap();
        let src = cache.join("rank_0.ckpt");
        let dst = prefix.join("state/rank_0.ckpt");
        std::fs::write(&src, b"new").unwrap();
        // an older checkpoint's file at the same path
        std::fs::write(&dst, b"old").unwrap();
        let transfer = dir.path().join("transfer.scrinfo");
        let (s, d, p) = (
            src.to_str().unwrap(),
            dst.to_str().unwrap(),
            prefix.to_str().unwrap(),
        );
        TransferFile::update(&transfer, io::PRIVATE_FILE, |t| {
            t.add_file(s, d, p, 3);
            Ok(())
        })
        .unwrap();
        let entry = TransferFile::read(&transfer).unwrap().files()[0].clone();
        let mut throttle = Throttle::new(0.0, 0.0);
        copy_entry(&transfer, &entry, 1 << 16, &mut throttle).unwrap();
        // a second copier of the same entry (an agent resumed after the rank took over)
        copy_entry(&transfer, &entry, 1 << 16, &mut throttle).unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), b"old", "nothing placed yet");
        let names = || {
            let mut v: Vec<String> = std::fs::read_dir(prefix.join("state"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names().len(), 2, "the file and one copy: {:?}", names());
        let written = TransferFile::read(&transfer).unwrap().files()[0].clone();
        assert!(written.is_written());
        let staged = written.staged_file().unwrap().unwrap();
        crate::safe_fs::Beneath::open(&prefix)
            .unwrap()
            .place(&staged)
            .unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), b"new");
        assert_eq!(names(), ["rank_0.ckpt"]);
    }
}
