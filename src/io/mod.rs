//! File I/O with SCR's durability rules: hash files are replaced atomically (temporary in
//! the same directory, fsync, rename, directory fsync), and files shared between
//! processes are read-modify-written under an advisory lock.

use crate::error::{Error, Result};
use crate::hash::{FILE_HEADER_SIZE, Hash, check_header_len};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// open(2)'s O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
const O_NONBLOCK: i32 = libc::O_NONBLOCK;

/// Mode of SCR state files, the halt file included: private to the user. (SCR writes its
/// halt file 0666 so that administrators may halt a user's job; root may write any file,
/// and root's `scr halt` acts as the prefix's owner, so nobody else needs to.)
pub const PRIVATE_FILE: u32 = 0o600;

/// Whether two paths name the same file (device and inode), so copying one onto the other
/// would truncate the source.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Copies file `src` to `dst` (fsynced), returning its size and CRC32. `copied` hears of
/// each piece written.
///
/// Only a regular file is read (a FIFO or device in its place is an error, not a hang),
/// with plain reads, so a source that shrinks meanwhile is an error rather than a SIGBUS
/// of a mapping. The copy is written as a temporary beside `dst` and renamed over it: a
/// reader never sees half a file, and a symbolic link at `dst` is replaced, not followed.
/// With `root`, `dst` must lie below it with no symbolic link on the way (the prefix a
/// flush or drain writes to). The copy keeps `src`'s permission bits (the umask applies).
/// When `dst` already is `src` (a dataset written straight to the prefix, SCR_CACHE_BYPASS)
/// nothing is copied: the file is only measured and made durable.
pub fn copy_file_with_crc(
    src: &Path,
    dst: &Path,
    root: Option<&Path>,
    buf_size: usize,
    copied: &mut dyn FnMut(u64),
) -> Result<(u64, u32)> {
    let input = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(src)
        .map_err(|e| Error::io(src, "open", e))?;
    copy_open_file_with_crc(input, src, dst, root, buf_size, copied)
}

/// [`copy_file_with_crc`] below `root` without putting the copy in its place: it waits,
/// durable, beside `dst` ([`crate::safe_fs::Beneath::stage_file`]) until the caller places
/// it once every file of its dataset is right, or discards it. None when `dst` already is
/// `src` (nothing to place). What a flush or drain writes to the prefix goes this way, so a
/// file an older dataset names at `dst` is replaced only by a whole new dataset.
pub fn stage_copy_with_crc(
    src: &Path,
    dst: &Path,
    root: &Path,
    buf_size: usize,
    copied: &mut dyn FnMut(u64),
) -> Result<(u64, u32, Option<crate::safe_fs::Staged>)> {
    let input = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(src)
        .map_err(|e| Error::io(src, "open", e))?;
    copy_open(input, src, dst, Some(root), buf_size, copied, true)
}

/// [`copy_file_with_crc`] from a file already opened (`src` names it in messages): a source
/// read back from the prefix is opened through directory handles and checked first.
pub fn copy_open_file_with_crc(
    input: File,
    src: &Path,
    dst: &Path,
    root: Option<&Path>,
    buf_size: usize,
    copied: &mut dyn FnMut(u64),
) -> Result<(u64, u32)> {
    let (len, crc, _) = copy_open(input, src, dst, root, buf_size, copied, false)?;
    Ok((len, crc))
}

/// The copy of [`copy_open_file_with_crc`]; with `stage` (and a `root`), the copy is left
/// staged beside `dst` and returned as such.
fn copy_open(
    mut input: File,
    src: &Path,
    dst: &Path,
    root: Option<&Path>,
    buf_size: usize,
    copied: &mut dyn FnMut(u64),
    stage: bool,
) -> Result<(u64, u32, Option<crate::safe_fs::Staged>)> {
    let meta = input.metadata().map_err(|e| Error::io(src, "stat", e))?;
    if !meta.is_file() {
        return Err(Error::invalid(
            src,
            "is not a regular file; SCR copies only regular files",
        ));
    }
    let len = meta.len();
    // the file read in place: its CRC is the opened file's, whatever `src` names by now
    // (someone who may rename in its directory could have swapped another in since)
    let same = src == dst || {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(dst).is_ok_and(|d| d.dev() == meta.dev() && d.ino() == meta.ino())
    };
    if same {
        let crc = open_file_crc32(src, &input)?;
        input.sync_all().map_err(|e| Error::io(src, "fsync", e))?;
        copied(len);
        return Ok((len, crc, None));
    }
    let copy = |output: &mut File| -> Result<u32> {
        let mut crc = crc32fast::Hasher::new();
        let mut buf = vec![0u8; buf_size.clamp(1 << 16, 16 << 20).min(len.max(1) as usize)];
        let mut done = 0u64;
        while done < len {
            let want = (len - done).min(buf.len() as u64) as usize;
            let got =
                read_up_to(&mut input, &mut buf[..want]).map_err(|e| Error::io(src, "read", e))?;
            if got < want {
                return Err(Error::invalid(
                    src,
                    format!(
                        "shrank to {} bytes while being copied ({len} expected)",
                        done + got as u64
                    ),
                ));
            }
            crc.update(&buf[..got]);
            output
                .write_all(&buf[..got])
                .map_err(|e| Error::io(dst, "write", e))?;
            done += got as u64;
            copied(got as u64);
        }
        Ok(crc.finalize())
    };
    // a copy SCR keeps is the user's to write alone: it is read back as such
    let mode = meta.mode() & 0o755;
    // below a root (the prefix a flush or drain writes to): through directory handles,
    // never through a link, only into directories of this user's
    if let Some(root) = root {
        if !root.is_dir() {
            fs::create_dir_all(root).map_err(|e| Error::io(root, "create directory", e))?;
        }
        let (root, rel) = crate::safe_fs::below(root, dst)?;
        let below = crate::safe_fs::Beneath::open(&root)?;
        if stage {
            let (crc, staged) = below.stage_file(&rel, mode, crate::layout::DIR_MODE, copy)?;
            return Ok((len, crc, Some(staged)));
        }
        let crc = below.write_file(&rel, mode, crate::layout::DIR_MODE, copy)?;
        return Ok((len, crc, None));
    }
    if let Some(dir) = dst.parent() {
        std::os::unix::fs::DirBuilderExt::mode(
            fs::DirBuilder::new().recursive(true),
            crate::layout::DIR_MODE,
        )
        .create(dir)
        .map_err(|e| Error::io(dir, "create directory", e))?;
    }
    let crc = replace_through_temporary(dst, mode, copy)?;
    Ok((len, crc, None))
}

/// Writes a file under a temporary name in `path`'s directory with `write`, fsyncs it and
/// renames it over `path`, so `path` is never seen half written; on an error the temporary
/// is removed and `path` is as it was.
fn replace_through_temporary<T>(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    let tmp = temporary_name(path, "tmp");
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, "create", e))?;
        let value = write(&mut file)?;
        file.sync_all().map_err(|e| Error::io(&tmp, "fsync", e))?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, "rename a temporary over", e))?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// CRC32 of a whole file.
pub fn file_crc32(path: &Path) -> Result<u32> {
    let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    open_file_crc32(path, &f)
}

/// CRC32 of the whole of an open file (`path` names it in errors), read from its start
/// whatever its position.
pub fn open_file_crc32(path: &Path, f: &File) -> Result<u32> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = crc32fast::Hasher::new();
    let mut at = 0u64;
    loop {
        let n = f
            .read_at(&mut buf, at)
            .map_err(|e| Error::io(path, "read", e))?;
        if n == 0 {
            return Ok(crc.finalize());
        }
        crc.update(&buf[..n]);
        at += n as u64;
    }
}

/// The most bytes a hash file of a kind with no bound of its own may hold. Each kind of
/// state file has a bound fit for it ([`crate::HashView::MAX_BYTES`]): anyone who can write
/// a file (a halt file an older version left everyone's) could make it a sparse terabyte, and a reader must
/// say so, not allocate it.
pub const MAX_HASH_FILE_BYTES: u64 = 1 << 30;

/// Reads a hash file of at most [`MAX_HASH_FILE_BYTES`]. Bytes after the size its header
/// records are ignored (an XOR file keeps its parity there).
pub fn read_hash_file(path: &Path) -> Result<Hash> {
    read_hash_file_limited(path, MAX_HASH_FILE_BYTES)
}

/// Reads a hash file whose hash holds at most `max_bytes`.
pub fn read_hash_file_limited(path: &Path, max_bytes: u64) -> Result<Hash> {
    let mut file = open_regular(path)?;
    decode_open_file(path, &mut file, false, max_bytes).map(|(hash, _)| hash)
}

/// [`read_hash_file_limited`] where a symbolic link is refused, not followed (SCR's own
/// files, which SCR never makes links: one there is someone's attempt to have SCR read, or
/// say something of, a file they may not read).
pub fn read_hash_file_no_link(path: &Path, max_bytes: u64) -> Result<Hash> {
    let mut file = open_regular_no_link(path)?;
    decode_open_file(path, &mut file, false, max_bytes).map(|(hash, _)| hash)
}

/// The hash of at most `max_bytes` in `file`, opened already (`path` names it in errors).
pub fn read_hash_from(path: &Path, mut file: File, max_bytes: u64) -> Result<Hash> {
    decode_open_file(path, &mut file, false, max_bytes).map(|(hash, _)| hash)
}

/// Reads a hash file and returns the hash and the size its header records, which is where
/// any payload after the hash starts (the hash itself at most `max_bytes`).
pub fn read_hash_file_with_size(path: &Path, max_bytes: u64) -> Result<(Hash, u64)> {
    let mut file = open_regular(path)?;
    decode_open_file(path, &mut file, false, max_bytes)
}

/// Opens a file SCR reads for reading: only a regular file, opened so that a FIFO in its
/// place cannot block the open (it is then refused).
pub fn open_regular(path: &Path) -> Result<File> {
    open_regular_with(path, O_NONBLOCK)
}

/// [`open_regular`] where a symbolic link is refused, not followed (SCR's own state files,
/// which SCR never makes links).
/// The permission bits of an open file when others than its owner may read it (a file
/// holding a password must not be), else None.
pub fn readable_by_others(file: &File) -> Option<u32> {
    let mode = file.metadata().ok()?.mode() & 0o7777;
    (mode & 0o044 != 0).then_some(mode)
}

pub fn open_regular_no_link(path: &Path) -> Result<File> {
    open_regular_with(path, O_NONBLOCK | O_NOFOLLOW).map_err(|e| match e {
        Error::Io { source, .. } if source.raw_os_error() == Some(libc::ELOOP) => Error::untrusted(
            path,
            "is a symbolic link; SCR reads its state through no link it did not create",
        ),
        e => e,
    })
}

fn open_regular_with(path: &Path, flags: i32) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| Error::io(path, "open", e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if meta.is_dir() {
        return Err(Error::invalid(path, "is a directory, expected a file"));
    }
    if !meta.is_file() {
        return Err(Error::invalid(
            path,
            "is not a regular file (a FIFO or device?); remove it",
        ));
    }
    Ok(file)
}

/// Reads a small text file SCR is given (a configuration file): a regular file of at most
/// `limit` bytes, so neither a FIFO nor a huge file can stall or exhaust the reader.
pub fn read_small_file(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "stat", e))?
        .len();
    read_open_file(path, file, len, limit)
}

/// The bytes of an opened regular file `len` bytes long, if no more than `limit`.
pub fn read_open_file(path: &Path, file: File, len: u64, limit: u64) -> Result<Vec<u8>> {
    if len > limit {
        return Err(Error::invalid(
            path,
            format!("is {len} bytes; a configuration file of more than {limit} bytes is not one"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    Ok(bytes)
}

fn decode_open_file(
    path: &Path,
    file: &mut File,
    empty_is_empty_hash: bool,
    max_bytes: u64,
) -> Result<(Hash, u64)> {
    let meta = file.metadata().map_err(|e| Error::io(path, "stat", e))?;
    if meta.is_dir() {
        return Err(Error::invalid(
            path,
            "is a directory, expected an SCR hash file",
        ));
    }
    if meta.len() == 0 && empty_is_empty_hash {
        return Ok((Hash::new(), 0));
    }
    let available = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut header = [0u8; FILE_HEADER_SIZE];
    let got = read_up_to(file, &mut header).map_err(|e| Error::io(path, "read", e))?;
    let recorded = check_header_len(&header[..got], available).map_err(|source| Error::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    if recorded as u64 > max_bytes {
        return Err(Error::invalid(
            path,
            format!(
                "records a hash of {recorded} bytes; a file of this kind holds at most \
                 {max_bytes} (a file planted or grown by someone else?): remove it"
            ),
        ));
    }
    // `recorded` is bounded by the file's real length, so this allocation is too.
    let mut bytes = Vec::with_capacity(recorded);
    bytes.extend_from_slice(&header);
    file.take((recorded - header.len()) as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "read", e))?;
    let (hash, size) = Hash::from_file_bytes(&bytes).map_err(|source| Error::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((hash, size as u64))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Writes a hash file atomically with mode 0600.
pub fn write_hash_file(path: &Path, hash: &Hash) -> Result<()> {
    write_atomic(path, &hash.to_file_bytes(), PRIVATE_FILE)
}

/// [`write_hash_file`] of `rel` below `root` (a prefix's `.scr/…`), every directory on the
/// way opened below the last with no link followed ([`crate::safe_fs::Beneath`]): a
/// directory swapped for a link by whoever may rename in `root` is refused, never written
/// through. Directories missing on the way are created 0700.
pub fn write_hash_file_below(root: &Path, rel: &Path, hash: &Hash) -> Result<()> {
    let bytes = hash.to_file_bytes();
    crate::safe_fs::Beneath::open(root)?.write_file(rel, PRIVATE_FILE, 0o700, |file| {
        file.write_all(&bytes)
            .map_err(|e| Error::io(root.join(rel), "write", e))
    })
}

/// Replaces `path` with `bytes` so that a reader, or a crash at any instant, sees either
/// the old content or the new, never a mix: temporary in the same directory, fsync,
/// rename, fsync of the directory.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    replace_through_temporary(path, mode, |file| {
        file.write_all(bytes)
            .map_err(|e| Error::io(path, "write", e))
    })?;
    sync_dir(&parent_dir(path))
}

/// [`write_atomic`] through `path`'s directory opened once, no link followed (as a
/// [`LockedHashFile`]'s update is): a directory swapped for a link meanwhile is never
/// written through. Empty `bytes` with `remove_when_empty` removes the file instead.
pub fn replace_in_held_dir(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    remove_when_empty: bool,
) -> Result<()> {
    let (held, pinned) = HeldDir::holding(path)?;
    let done = if remove_when_empty && bytes.is_empty() {
        remove_durably(&pinned)
    } else {
        write_atomic(&pinned, bytes, mode)
    };
    done.map_err(|e| held.unpin(e))
}

/// The bytes free to an unprivileged user on `dir`'s file system, and its size.
pub fn space_of(dir: &Path) -> Option<(u64, u64)> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some((
        st.f_bavail.saturating_mul(st.f_frsize),
        st.f_blocks.saturating_mul(st.f_frsize),
    ))
}

/// Fsyncs a directory so a rename or create inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, "fsync directory", e))
}

/// Removes a file; a file already gone is fine. Returns whether there was one.
pub fn remove_if_present(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, "remove", e)),
    }
}

/// Removes a file and makes the removal durable; a file already gone is fine.
pub fn remove_durably(path: &Path) -> Result<()> {
    if remove_if_present(path)? {
        sync_dir(&parent_dir(path))?;
    }
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether a file name is one of [`temporary_name`]'s: `.<file>.tmp.<pid>.<n>` and
/// `.<file>.new.<pid>.<n>`, which a writer killed mid-copy leaves behind
/// ([`crate::safe_fs::Beneath::remove_temporaries`] removes them).
pub(crate) fn is_temporary_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let mut parts = rest.rsplitn(4, '.');
    let (n, pid, kind) = (parts.next(), parts.next(), parts.next());
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(n)
        && digits(pid)
        && matches!(kind, Some("tmp" | "new"))
        && parts.next().is_some_and(|f| !f.is_empty())
}

/// The process id a [`temporary_name`] carries (`.<file>.<kind>.<pid>.<n>`).
pub(crate) fn temporary_writer(name: &str) -> Option<u32> {
    if !is_temporary_name(name) {
        return None;
    }
    name.rsplit('.').nth(1)?.parse().ok()
}

/// A hidden temporary beside `path`, `.<file>.<kind>.<pid>.<n>` (`kind` is `tmp` for a
/// replacement renamed over the file, `new` for a file linked into place):
/// [`is_temporary_name`] recognises exactly these names.
pub fn temporary_name(path: &Path, kind: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // the counter keeps this process's names apart; random bits from the kernel make them
    // unguessable to anyone who would take one ahead in a directory others can write
    let mut random = [0u8; 8];
    // SAFETY: getrandom writes at most random.len() bytes into it
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    let salt = if got == random.len() as isize {
        u64::from_le_bytes(random)
    } else {
        // (no getrandom: the clock's low bits, which still differ between two runs)
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()))
    };
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) ^ (salt << 16);
    parent_dir(path).join(format!(".{name}.{kind}.{}.{n}", std::process::id()))
}

/// Whether `path` lies inside one of `dirs`, judged on the names alone: an absolute path
/// with no `..` component, under one of them (and not the directory itself). Paths
/// read from metadata pass this before SCR deletes, copies or writes them.
pub fn is_within_any(path: &Path, dirs: &[PathBuf]) -> bool {
    use std::path::Component;
    path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && dirs.iter().any(|d| path.starts_with(d) && path != d)
}

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
struct HeldDir {
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
    fn holding(path: &Path) -> Result<(HeldDir, PathBuf)> {
        let name = path
            .file_name()
            .ok_or_else(|| Error::invalid(path, "names no file"))?;
        let held = HeldDir::open(&parent_dir(path))?;
        let pinned = held.pinned.join(name);
        Ok((held, pinned))
    }

    /// An error about a path in the held directory, told with the directory's own path.
    fn unpin(&self, e: Error) -> Error {
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

/// open(2)'s O_NOFOLLOW on Linux: a state file SCR locks and rewrites is never reached
/// through a symbolic link.
const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;

/// How long a lock is waited for before SCR gives up with a message naming the holder:
/// anyone who can read a state file can lock it, and a job must not hang forever on a lock
/// someone else holds. `SCR_LOCK_TIMEOUT` (seconds) changes it.
pub fn lock_timeout() -> std::time::Duration {
    let secs = std::env::var("SCR_LOCK_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
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
fn lock_within(path: &Path, mode: u32, timeout: std::time::Duration) -> Result<File> {
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

#[cfg(test)]
mod tests;
