//! Containers: with SCR_USE_CONTAINERS a flushed dataset's user files
//! are packed back to back into `ctr.<n>.scr` files of at most SCR_CONTAINER_SIZE bytes, in
//! `<prefix>/.scr/scr.dataset.<id>/`, so the parallel file system sees a few large files
//! instead of one per rank. A file that crosses a container boundary is stored as several
//! segments; the rank2file map lists them (`SEG <k> {FILE, OFFSET, LENGTH}`, FILE relative
//! to the prefix).
//!
//! [`place`] cuts a file at a position of the dataset's byte stream into segments; the
//! stream position of each rank comes from a reduce-then-scan across nodes (the runtime).
//! [`write_file`] and [`read_file`] move one file's bytes in and out, checksumming them.

use crate::rank2file::Segment;
use crate::{Error, Result, layout};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A container's path relative to the prefix.
pub fn container_rel(id: u64, n: u64) -> String {
    format!("{}/ctr.{n}.scr", layout::dataset_meta_rel(id))
}

/// The segments of a file of `length` bytes starting at `start` in dataset `id`'s stream
/// of containers of `container_size` bytes each. An empty file gets one empty segment, so
/// every file of a container dataset says where it is.
pub fn place(id: u64, start: u64, length: u64, container_size: u64) -> Vec<Segment> {
    let size = container_size.max(1);
    let mut out = Vec::new();
    let (mut at, end) = (start, start + length);
    loop {
        let n = at / size;
        let offset = at % size;
        let piece = (size - offset).min(end - at);
        out.push(Segment {
            container: container_rel(id, n),
            offset,
            length: piece,
        });
        at += piece;
        if at >= end {
            return out;
        }
    }
}

/// Writes `src` into the containers under `prefix` at `segments` (made by [`place`]),
/// syncing each container written. Returns the file's size and CRC32.
pub fn write_file(
    src: &Path,
    prefix: &Path,
    segments: &[Segment],
    copied: &mut dyn FnMut(u64),
) -> Result<(u64, u32)> {
    let input = File::open(src).map_err(|e| Error::io(src, "open", e))?;
    let len = input
        .metadata()
        .map_err(|e| Error::io(src, "stat", e))?
        .len();
    let planned: u64 = segments.iter().map(|s| s.length).sum();
    if planned != len {
        return Err(Error::invalid(
            src,
            format!(
                "{len} bytes, but {planned} were placed in containers (did it change during the flush?)"
            ),
        ));
    }
    let mut crc = crc32fast::Hasher::new();
    if len == 0 {
        return Ok((0, crc.finalize()));
    }
    // plain reads: a file that shrinks meanwhile is a read error, not a SIGBUS
    let mut buf = vec![0u8; (len.min(COPY_BUFFER as u64)) as usize];
    let mut at = 0u64;
    // containers mix many files' bytes: the user's alone, reached through directory handles
    let below = crate::safe_fs::Beneath::open(prefix)?;
    for seg in segments.iter().filter(|s| s.length > 0) {
        let path = prefix.join(&seg.container);
        // several ranks write one container side by side: create, never truncate
        let out = below.open_in_place(Path::new(&seg.container), 0o600, crate::layout::DIR_MODE)?;
        let mut done = 0u64;
        while done < seg.length {
            let piece = &mut buf[..(seg.length - done).min(COPY_BUFFER as u64) as usize];
            input
                .read_exact_at(piece, at)
                .map_err(|e| Error::io(src, "read", e))?;
            crc.update(piece);
            out.write_all_at(piece, seg.offset + done)
                .map_err(|e| Error::io(&path, "write", e))?;
            done += piece.len() as u64;
            at += piece.len() as u64;
        }
        out.sync_data().map_err(|e| Error::io(&path, "fsync", e))?;
        copied(seg.length);
    }
    Ok((len, crc.finalize()))
}

/// The most bytes a flush into containers reads at once.
const COPY_BUFFER: usize = 4 << 20;

/// Reassembles a file from its `segments` under `prefix` into `dst` (fsynced). Returns its
/// size and CRC32. A container too short for a segment is an error naming it.
pub fn read_file(
    prefix: &crate::safe_fs::Beneath,
    segments: &[Segment],
    dst: &Path,
    buf_size: usize,
) -> Result<(u64, u32)> {
    if let Some(dir) = dst.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    let out = File::create(dst).map_err(|e| Error::io(dst, "create", e))?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; buf_size.clamp(1 << 16, 16 << 20)];
    let mut written = 0u64;
    for seg in segments.iter().filter(|s| s.length > 0) {
        let path = prefix.root().join(&seg.container);
        // read back from the prefix: through directory handles, this user's files only
        let input = prefix.open_file(Path::new(&seg.container))?;
        let mut done = 0u64;
        while done < seg.length {
            let want = (seg.length - done).min(buf.len() as u64) as usize;
            input
                .read_exact_at(&mut buf[..want], seg.offset + done)
                .map_err(|e| match e.kind() {
                    // a container shorter than the map says is the dataset broken; any other
                    // failing read says nothing of its data
                    std::io::ErrorKind::UnexpectedEof => Error::invalid(
                        &path,
                        format!(
                            "cannot read {want} bytes at offset {} ({e}): the container is shorter than the rank2file map says",
                            seg.offset + done
                        ),
                    ),
                    _ => Error::io(&path, "read", e),
                })?;
            crc.update(&buf[..want]);
            out.write_all_at(&buf[..want], written)
                .map_err(|e| Error::io(dst, "write", e))?;
            done += want as u64;
            written += want as u64;
        }
    }
    out.sync_all().map_err(|e| Error::io(dst, "fsync", e))?;
    Ok((written, crc.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_cut_at_container_boundaries() {
        // an example: containers of 300000 bytes, a file of 524296 bytes at 524295
        let segs = place(7, 524_295, 524_296, 300_000);
        let got: Vec<(String, u64, u64)> = segs
            .iter()
            .map(|s| (s.container.clone(), s.offset, s.length))
            .collect();
        assert_eq!(
            got,
            vec![
                (".scr/scr.dataset.7/ctr.1.scr".into(), 224_295, 75_705),
                (".scr/scr.dataset.7/ctr.2.scr".into(), 0, 300_000),
                (".scr/scr.dataset.7/ctr.3.scr".into(), 0, 148_591),
            ]
        );
        assert_eq!(place(1, 300_000, 0, 300_000)[0].length, 0);
        assert_eq!(place(1, 10, 5, 300_000).len(), 1);
    }

    #[test]
    fn files_written_side_by_side_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix");
        std::fs::create_dir(&prefix).unwrap();
        let sizes = [1000u64, 0, 2500, 333];
        let mut at = 0;
        let mut placed = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let src = dir.path().join(format!("f{i}"));
            let bytes: Vec<u8> = (0..size).map(|b| (b * 7 + i as u64) as u8).collect();
            std::fs::write(&src, &bytes).unwrap();
            let segs = place(3, at, size, 700);
            at += size;
            let (n, crc) = write_file(&src, &prefix, &segs, &mut |_| {}).unwrap();
            assert_eq!((n, crc), (size, crc32fast::hash(&bytes)));
            placed.push((bytes, segs));
        }
        // 3833 bytes in containers of 700: six of them, the last one partly filled
        let ctr = layout::dataset_meta_dir(&prefix, 3);
        assert_eq!(
            std::fs::metadata(ctr.join("ctr.5.scr")).unwrap().len(),
            3833 - 5 * 700
        );
        for (i, (bytes, segs)) in placed.iter().enumerate() {
            let back = dir.path().join(format!("back{i}"));
            let (n, crc) = read_file(
                &crate::safe_fs::Beneath::open(&prefix).unwrap(),
                segs,
                &back,
                64,
            )
            .unwrap();
            assert_eq!((n, crc), (bytes.len() as u64, crc32fast::hash(bytes)));
            assert_eq!(&std::fs::read(&back).unwrap(), bytes);
        }
        // a container cut short is reported, naming it
        std::fs::OpenOptions::new()
            .write(true)
            .open(ctr.join("ctr.5.scr"))
            .unwrap()
            .set_len(10)
            .unwrap();
        let err = read_file(
            &crate::safe_fs::Beneath::open(&prefix).unwrap(),
            &placed[3].1,
            &dir.path().join("x"),
            64,
        )
        .unwrap_err();
        assert!(err.to_string().contains("ctr.5.scr"), "{err}");
        assert!(
            err.to_string()
                .contains("shorter than the rank2file map says"),
            "{err}"
        );
    }

    #[test]
    fn a_file_that_changed_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("f");
        std::fs::write(&src, [1u8; 10]).unwrap();
        let err = write_file(&src, dir.path(), &place(1, 0, 12, 100), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("10 bytes, but 12"), "{err}");
    }
}
