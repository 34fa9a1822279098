//! State files read-modify-written under an advisory lock, through their directory held
//! open.

use super::*;

/// A hash file held under an exclusive advisory lock for a read-modify-write
/// (SCR's `lock_open_read` / `write_close_unlock`). The lock is on a private lock file
/// beside it ([`lock_file_of`]), never on the file itself: anyone who can open a file can
/// lock it, and a state file an earlier version left readable (or writable) to others —
/// the halt file was everyone's — could otherwise be held locked by a neighbour for good.
/// Only the user (and root) can open the lock file, in a directory only the user may write.
///
/// The file's directory is opened once, without following a link, and every later step
/// (the lock file, the read, the sweep of dead writers' temporaries, the temporary and its
/// rename) goes through that open directory: whoever may rename in the directory above
/// (the owner of a team's prefix swapping `.scr` for a link to a directory of the user's)
/// cannot make SCR write, replace or delete files with its state files' names elsewhere.
pub struct LockedHashFile {
    path: PathBuf,
    /// `path` through the held directory: where every step reads and writes.
    pinned: PathBuf,
    held: HeldDir,
    mode: u32,
    _lock: File,
}

/// A directory held open, reached by the path `/proc/self/fd/N` of its handle: a path below
/// it stays in that directory whatever its own path comes to name meanwhile.
pub(super) struct HeldDir {
    _dir: File,
    pinned: PathBuf,
    real: PathBuf,
}

impl HeldDir {
    /// Opens `dir` (its last component no link) and pins it. Without /proc (no Linux
    /// procfs mounted) the directory is held by its path, as before.
    fn open(dir: &Path) -> Result<HeldDir> {
        use std::os::fd::AsRawFd;
        let handle = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | O_NOFOLLOW)
            .open(dir)
            .map_err(|e| Error::io(dir, "open directory (no link is followed)", e))?;
        let pinned = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
        let pinned = if pinned.is_dir() {
            pinned
        } else {
            dir.to_path_buf()
        };
        Ok(HeldDir {
            _dir: handle,
            pinned,
            real: dir.to_path_buf(),
        })
    }

    /// The directory of the file `path` held open, and the file's path through it.
    pub(super) fn holding(path: &Path) -> Result<(HeldDir, PathBuf)> {
        let name = path
            .file_name()
            .ok_or_else(|| Error::invalid(path, "names no file"))?;
        let held = HeldDir::open(&parent_dir(path))?;
        let pinned = held.pinned.join(name);
        Ok((held, pinned))
    }

    /// An error about a path in the held directory, told with the directory's own path.
    pub(super) fn unpin(&self, e: Error) -> Error {
        let real = |p: PathBuf| match p.strip_prefix(&self.pinned) {
            Ok(rest) => self.real.join(rest),
            Err(_) => p,
        };
        match e {
            Error::Io {
                path,
                action,
                source,
            } => Error::Io {
                path: real(path),
                action,
                source,
            },
            Error::Decode { path, source } => Error::Decode {
                path: real(path),
                source,
            },
            Error::Invalid { path, what } => Error::Invalid {
                path: real(path),
                what,
            },
            Error::Untrusted { path, what } => Error::Untrusted {
                path: real(path),
                what,
            },
            other => other,
        }
    }
}

impl LockedHashFile {
    /// Locks `path` and reads it (a hash of at most `max_bytes`); a missing or empty file
    /// reads as an empty hash. The replacement is written with `mode`.
    pub fn open(path: &Path, mode: u32, max_bytes: u64) -> Result<(Self, Hash)> {
        Self::open_waiting(path, mode, max_bytes, lock_timeout())
    }

    /// [`LockedHashFile::open`] waiting at most `wait` for the lock.
    pub fn open_waiting(
        path: &Path,
        mode: u32,
        max_bytes: u64,
        wait: std::time::Duration,
    ) -> Result<(Self, Hash)> {
        Self::open_watching_holder(path, mode, max_bytes, wait, &mut |_| {})
    }

    /// [`LockedHashFile::open_waiting`] calling `holding` with the lock's holder (as
    /// /proc/locks names it) each second the lock is waited for: a caller that knows the
    /// holder can never release it (a process stopped for good) may end it.
    pub fn open_watching_holder(
        path: &Path,
        mode: u32,
        max_bytes: u64,
        wait: std::time::Duration,
        holding: &mut dyn FnMut(Option<u32>),
    ) -> Result<(Self, Hash)> {
        let (held, pinned) = HeldDir::holding(path)?;
        let locked = (|| {
            let lock = lock_within_watching(&lock_file_of(&pinned), PRIVATE_FILE, wait, holding)?;
            remove_dead_writers_temporaries(&pinned);
            let hash = match open_regular_no_link(&pinned) {
                Ok(mut file) => decode_open_file(&pinned, &mut file, true, max_bytes)?.0,
                Err(e) if e.is_not_found() => Hash::new(),
                Err(e) => return Err(e),
            };
            Ok((lock, hash))
        })();
        let (lock, hash) = locked.map_err(|e| held.unpin(e))?;
        let locked = LockedHashFile {
            path: path.to_path_buf(),
            pinned,
            held,
            mode,
            _lock: lock,
        };
        Ok((locked, hash))
    }

    /// Replaces the file with `hash` atomically (a new file of the user's, whatever the one
    /// it replaces was), then releases the lock.
    pub fn write_and_unlock(self, hash: &Hash) -> Result<()> {
        write_atomic(&self.pinned, &hash.to_file_bytes(), self.mode).map_err(|e| self.held.unpin(e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Removes the temporaries of `path` that writers killed between writing and renaming left
/// (`.<name>.tmp.<pid>.<n>`, [`temporary_name`]). Called holding `path`'s lock: every writer
/// of a locked state file holds that lock from its temporary's creation to its rename, so
/// no temporary of one still being written exists while another holds it.
fn remove_dead_writers_temporaries(path: &Path) {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let dir = parent_dir(path);
    let start = format!(".{name}.tmp.");
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&start) {
            // unlink removes a name, never what a link names; one already gone is fine
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The private lock file beside a state file (`.<name>.lock`).
fn lock_file_of(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_dir(path).join(format!(".{name}.lock"))
}

/// The process's SCR_LOCK_TIMEOUT once its parameters are read ([`set_lock_timeout`]), as
/// the bits of an f64; none (all ones, a NaN) before.
static LOCK_TIMEOUT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Sets the process's SCR_LOCK_TIMEOUT (seconds) from its parameters, environment and
/// configuration files alike (SCR_Init does).
pub fn set_lock_timeout(secs: f64) {
    LOCK_TIMEOUT.store(secs.to_bits(), std::sync::atomic::Ordering::Relaxed);
}

/// How long a lock is waited for before SCR gives up with a message naming the holder:
/// anyone who can read a state file can lock it, and a job must not hang forever on a lock
/// someone else holds. `SCR_LOCK_TIMEOUT` (seconds) changes it: the parameter once a
/// process has read its parameters, the environment's before (a command).
pub fn lock_timeout() -> std::time::Duration {
    let set = f64::from_bits(LOCK_TIMEOUT.load(std::sync::atomic::Ordering::Relaxed));
    let secs = Some(set)
        .filter(|s| !s.is_nan())
        .or_else(|| std::env::var("SCR_LOCK_TIMEOUT").ok()?.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(60.0);
    std::time::Duration::from_secs_f64(secs)
}

/// The process holding a lock on the file `locked` describes, from /proc/locks.
fn lock_holder(locked: &fs::Metadata) -> Option<u32> {
    let dev = locked.dev();
    let (major, minor) = (
        ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff),
        (dev & 0xff) | ((dev >> 12) & !0xff),
    );
    let want = format!("{major:02x}:{minor:02x}:{}", locked.ino());
    fs::read_to_string("/proc/locks")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|w| *w == want)?;
            f.get(at.checked_sub(1)?)?.parse().ok()
        })
}

/// Opens `path` (created with `mode` where missing, never through a link) and takes an
/// exclusive lock on it, waiting at most `timeout`.
#[cfg(test)]
pub(super) fn lock_within(path: &Path, mode: u32, timeout: std::time::Duration) -> Result<File> {
    lock_within_watching(path, mode, timeout, &mut |_| {})
}

/// [`lock_within`], calling `holding` with the holder each second of the wait.
fn lock_within_watching(
    path: &Path,
    mode: u32,
    timeout: std::time::Duration,
    holding: &mut dyn FnMut(Option<u32>),
) -> Result<File> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(mode)
            .custom_flags(O_NOFOLLOW | O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(path, "open", e))?;
        let opened = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
        if !opened.is_file() {
            return Err(Error::invalid(path, "is not a regular file; remove it"));
        }
        let waited = std::time::Instant::now();
        let mut told = std::time::Duration::ZERO;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if waited.elapsed() < timeout => {
                    if waited.elapsed() >= told + std::time::Duration::from_secs(1) {
                        told = waited.elapsed();
                        holding(lock_holder(&opened));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    let holder = lock_holder(&opened)
                        .map_or("another process".to_string(), |pid| {
                            format!("process {pid}")
                        });
                    return Err(Error::invalid(
                        path,
                        format!(
                            "is locked by {holder} and stayed locked for {:.0} s; a process of \
                             another user may be holding it (SCR_LOCK_TIMEOUT sets the wait)",
                            timeout.as_secs_f64()
                        ),
                    ));
                }
                Err(fs::TryLockError::Error(e)) => return Err(Error::io(path, "lock", e)),
            }
        }
        let locked = opened;
        match fs::metadata(path) {
            Ok(now) if now.ino() == locked.ino() && now.dev() == locked.dev() => return Ok(file),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(path, "stat", e)),
        }
    }
}
