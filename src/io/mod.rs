//! File I/O with SCR's durability rules: hash files are replaced atomically (temporary in
//! the same directory, fsync, rename, directory fsync), and files shared between
//! processes are read-modify-written under an advisory lock.

use crate::error::{Error, Result};
use crate::hash::{FILE_HEADER_SIZE, Hash, check_header_len};
use crate::plain_io::{O_NOFOLLOW, O_NONBLOCK};
use crate::temp_name::{parent_dir, temporary_name};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use crate::plain_io::{read_open_file, readable_by_others, sync_dir};
pub use crate::safe_fs::{open_regular, open_regular_no_link};

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
            // the file the user named, not the temporary they never asked for
            .map_err(|e| Error::io(path, "create a temporary file beside", e))?;
        let value = write(&mut file)?;
        file.sync_all()
            .map_err(|e| Error::io(path, "fsync the temporary file of", e))?;
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

mod locked;
use locked::HeldDir;
#[cfg(test)]
use locked::lock_within;
pub use locked::{LockedHashFile, lock_timeout, set_lock_timeout};

#[cfg(test)]
mod tests;
