//! The XOR scheme's arithmetic and files (manual §6.3; reference §4.5), shared by the
//! runtime library (encode, rebuild in Init) and the serial rebuild command.
//!
//! Each member of a set of `n` sees its files as one logical file: their concatenation in
//! the order the XOR header lists them, zero-padded to `(n-1) * chunk` bytes, split into
//! `n-1` chunks. Member `t`'s XOR file holds the parity of the one chunk every other member
//! contributes for it ([`chunk_for`]), RAID-5 style, so any one lost member is the XOR of
//! the others' chunks and parities.
//!
//! The XOR file is a hash file (the header below, SCR v2.0's key order) immediately
//! followed by the `chunk` parity bytes:
//! `CHUNK`, `PARTNER {RANK FILES FILE{i meta}}` (the left neighbour's file list, so a lost
//! member's meta can be recovered from its right neighbour), `CURRENT {FILE FILES RANK}`,
//! `DSET`, `RANKS`, `GROUP {RANKS RANK{i world rank}}`.

use crate::dataset::Dataset;
use crate::hash::Hash;
use crate::meta::Meta;
use crate::view::HashView;
use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes per chunk: the largest logical file spread over `n-1` chunks, at least one byte.
pub fn chunk_size(max_logical_bytes: u64, set_size: u64) -> u64 {
    max_logical_bytes
        .div_ceil(set_size.saturating_sub(1).max(1))
        .max(1)
}

/// Which of `member`'s chunks goes into `target`'s parity (`member != target`).
pub fn chunk_for(member: usize, target: usize) -> usize {
    debug_assert_ne!(member, target);
    if target < member { target } else { target - 1 }
}

/// One member's file list as the header records it.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberFiles {
    pub rank: u64,
    pub files: Vec<Meta>,
}

impl MemberFiles {
    /// The section as a hash; `rank_first` is SCR's key order for PARTNER, the reverse
    /// for CURRENT.
    pub fn to_hash(&self, rank_first: bool) -> Hash {
        let mut h = Hash::new();
        let mut list = Hash::new();
        for (i, m) in self.files.iter().enumerate() {
            list.set(i.to_string(), m.hash().clone());
        }
        if rank_first {
            h.set_value("RANK", self.rank);
            h.set_value("FILES", self.files.len());
            h.set("FILE", list);
        } else {
            h.set("FILE", list);
            h.set_value("FILES", self.files.len());
            h.set_value("RANK", self.rank);
        }
        h
    }

    pub fn from_hash(h: &Hash, what: &str) -> std::result::Result<Self, String> {
        let rank = h
            .parsed::<u64>("RANK")
            .ok()
            .flatten()
            .ok_or_else(|| format!("{what}: RANK missing"))?;
        let count = h.parsed::<usize>("FILES").ok().flatten().unwrap_or(0);
        let mut files = Vec::with_capacity(count);
        for i in 0..count {
            let m = h
                .get_path(&[&"FILE", &i])
                .ok_or_else(|| format!("{what}: file {i} of {count} missing"))?;
            files.push(Meta::from_hash(m.clone()).map_err(|e| format!("{what}: {e}"))?);
        }
        Ok(MemberFiles { rank, files })
    }

    /// Total bytes of the logical file (before padding).
    pub fn logical_size(&self) -> u64 {
        self.files.iter().map(|m| m.size().unwrap_or(0)).sum()
    }
}

/// The hash at the start of an XOR file.
#[derive(Clone, Debug, PartialEq)]
pub struct XorHeader {
    pub chunk: u64,
    /// World size of the job that wrote it.
    pub ranks: u64,
    /// World ranks of the set, in set order.
    pub group: Vec<u64>,
    pub dataset: Dataset,
    pub current: MemberFiles,
    pub partner: MemberFiles,
}

impl XorHeader {
    pub fn to_hash(&self) -> Hash {
        let mut h = Hash::new();
        h.set_value("CHUNK", self.chunk);
        h.set("PARTNER", self.partner.to_hash(true));
        h.set("CURRENT", self.current.to_hash(false));
        h.set("DSET", self.dataset.hash().clone());
        h.set_value("RANKS", self.ranks);
        let g = h.child("GROUP");
        g.set_value("RANKS", self.group.len());
        let list = g.child("RANK");
        for (i, r) in self.group.iter().enumerate() {
            list.child(i.to_string()).child(r.to_string());
        }
        h
    }

    pub fn from_hash(h: &Hash) -> std::result::Result<XorHeader, String> {
        let num = |k: &str| {
            h.parsed::<u64>(k)
                .ok()
                .flatten()
                .ok_or_else(|| format!("XOR header: {k} missing or not a number"))
        };
        let g = h.get("GROUP").ok_or("XOR header: GROUP missing")?;
        let n = g.parsed::<usize>("RANKS").ok().flatten().unwrap_or(0);
        let mut group = Vec::with_capacity(n);
        for i in 0..n {
            let r = g
                .get_path(&[&"RANK", &i])
                .and_then(|x| x.keys().next())
                .and_then(|k| k.parse().ok())
                .ok_or_else(|| format!("XOR header: member {i} of {n} missing"))?;
            group.push(r);
        }
        let section = |k: &str| {
            h.get(k)
                .ok_or_else(|| format!("XOR header: {k} missing"))
                .and_then(|s| MemberFiles::from_hash(s, k))
        };
        Ok(XorHeader {
            chunk: num("CHUNK")?,
            ranks: num("RANKS")?,
            group,
            dataset: Dataset::wrap(h.get("DSET").cloned().unwrap_or_default()),
            current: section("CURRENT")?,
            partner: section("PARTNER")?,
        })
    }

    /// Reads the header of an XOR file; returns it and the offset where the parity starts.
    pub fn read(path: &Path) -> Result<(XorHeader, u64)> {
        let (h, len) = crate::io::read_hash_file_with_size(path)?;
        let header = XorHeader::from_hash(&h).map_err(|e| Error::invalid(path, e))?;
        Ok((header, len))
    }
}

/// A member's files read or written as one zero-padded logical file.
pub struct LogicalFile {
    parts: Vec<(PathBuf, File, u64)>,
}

impl LogicalFile {
    /// Opens existing files for reading, with the sizes the filemap records.
    pub fn open(files: &[(PathBuf, u64)]) -> Result<LogicalFile> {
        let mut parts = Vec::with_capacity(files.len());
        for (path, size) in files {
            let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
            parts.push((path.clone(), f, *size));
        }
        Ok(LogicalFile { parts })
    }

    /// Creates (truncates) files to be rebuilt, each of its recorded size.
    pub fn create(files: &[(PathBuf, u64)]) -> Result<LogicalFile> {
        let mut parts = Vec::with_capacity(files.len());
        for (path, size) in files {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            }
            let f = File::create(path).map_err(|e| Error::io(path, "create", e))?;
            f.set_len(*size).map_err(|e| Error::io(path, "resize", e))?;
            parts.push((path.clone(), f, *size));
        }
        Ok(LogicalFile { parts })
    }

    /// Fills `buf` from logical offset `offset`; bytes past the end read as zero.
    pub fn read_at(&self, mut offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0;
        for (path, f, size) in &self.parts {
            if done == buf.len() {
                break;
            }
            if offset >= *size {
                offset -= size;
                continue;
            }
            let n = ((size - offset) as usize).min(buf.len() - done);
            f.read_exact_at(&mut buf[done..done + n], offset)
                .map_err(|e| Error::io(path, "read", e))?;
            done += n;
            offset = 0;
        }
        buf[done..].fill(0);
        Ok(())
    }

    /// Writes `buf` at logical offset `offset`, dropping what falls in the padding.
    pub fn write_at(&self, mut offset: u64, buf: &[u8]) -> Result<()> {
        let mut done = 0;
        for (path, f, size) in &self.parts {
            if done == buf.len() {
                break;
            }
            if offset >= *size {
                offset -= size;
                continue;
            }
            let n = ((size - offset) as usize).min(buf.len() - done);
            f.write_all_at(&buf[done..done + n], offset)
                .map_err(|e| Error::io(path, "write", e))?;
            done += n;
            offset = 0;
        }
        Ok(())
    }

    pub fn sync(&self) -> Result<()> {
        for (path, f, _) in &self.parts {
            f.sync_all().map_err(|e| Error::io(path, "fsync", e))?;
        }
        Ok(())
    }
}

/// Where a member's files live outside the cache: user files under `root` by their name
/// relative to the prefix (`ORIG`), else by file name next to the XOR files.
fn member_paths(files: &[Meta], root: &Path, xor_dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    files
        .iter()
        .map(|m| {
            let path = match m.orig() {
                Some(orig) => {
                    crate::rank2file::check_relative(orig)
                        .map_err(|e| Error::invalid(xor_dir, e))?;
                    root.join(orig)
                }
                None => {
                    let name = m.filename().unwrap_or_default();
                    if name.is_empty() || name.contains('/') {
                        return Err(Error::invalid(
                            xor_dir,
                            format!("file name {name:?} in an XOR header is not a plain name"),
                        ));
                    }
                    xor_dir.join(name)
                }
            };
            Ok((path, m.size().unwrap_or(0)))
        })
        .collect()
}

/// Rebuilds the member at position `lost` of an XOR set of `size` from the other members'
/// XOR files (`remaining`, in set order) and their files, without MPI: the serial rebuild
/// the drain runs (SCR's `scr_rebuild_xor`). User files are found and written under `root`
/// (the prefix) by their `ORIG` names; the rebuilt XOR file goes to `missing`. Returns the
/// paths written.
pub fn rebuild_member(
    size: usize,
    lost: usize,
    missing: &Path,
    remaining: &[PathBuf],
    root: &Path,
    buf_size: usize,
) -> Result<Vec<PathBuf>> {
    if size < 2 || lost >= size || remaining.len() != size - 1 {
        return Err(Error::invalid(
            missing,
            format!(
                "an XOR set of {size} needs the lost member's position below {size} and {} \
                 remaining XOR files, got position {lost} and {} files",
                size.saturating_sub(1),
                remaining.len()
            ),
        ));
    }
    let xor_dir = missing.parent().unwrap_or(Path::new("."));
    // member position -> (header, parity offset, xor file)
    let mut members: Vec<Option<(XorHeader, u64, &PathBuf)>> = vec![None; size];
    for (j, path) in remaining.iter().enumerate() {
        let pos = if j < lost { j } else { j + 1 };
        let (header, offset) = XorHeader::read(path)?;
        if header.group.len() != size {
            return Err(Error::invalid(
                path,
                format!("belongs to a set of {}, not {size}", header.group.len()),
            ));
        }
        members[pos] = Some((header, offset, path));
    }
    let first = members
        .iter()
        .flatten()
        .next()
        .expect("size >= 2")
        .0
        .clone();
    let chunk = first.chunk;
    for (header, _, path) in members.iter().flatten() {
        if header.chunk != chunk || header.group != first.group {
            return Err(Error::invalid(
                path,
                "its set or chunk size differs from the other XOR files; list the files of one set",
            ));
        }
    }
    let right = &members[(lost + 1) % size].as_ref().expect("a survivor").0;
    let left = &members[(lost + size - 1) % size]
        .as_ref()
        .expect("a survivor")
        .0;
    let lost_files = right.partner.clone();
    let header = XorHeader {
        chunk,
        ranks: right.ranks,
        group: first.group.clone(),
        dataset: right.dataset.clone(),
        current: lost_files.clone(),
        partner: left.current.clone(),
    }
    .to_hash()
    .to_file_bytes();

    let mut inputs: Vec<Option<(LogicalFile, File, u64)>> = Vec::with_capacity(size);
    for m in &members {
        inputs.push(match m {
            Some((h, offset, path)) => {
                let data = LogicalFile::open(&member_paths(&h.current.files, root, xor_dir)?)?;
                let parity = File::open(path).map_err(|e| Error::io(path, "open", e))?;
                Some((data, parity, *offset))
            }
            None => None,
        });
    }
    let outputs = member_paths(&lost_files.files, root, xor_dir)?;
    let data_out = LogicalFile::create(&outputs)?;
    let parity_out = File::create(missing).map_err(|e| Error::io(missing, "create", e))?;
    parity_out
        .write_all_at(&header, 0)
        .map_err(|e| Error::io(missing, "write", e))?;

    let buf_len = buf_size.clamp(1, chunk.max(1) as usize);
    let mut acc = vec![0u8; buf_len];
    let mut piece = vec![0u8; buf_len];
    for target in 0..size {
        let mut offset = 0u64;
        while offset < chunk {
            let len = (chunk - offset).min(buf_len as u64) as usize;
            acc[..len].fill(0);
            for (i, input) in inputs.iter().enumerate() {
                let Some((data, parity, header_len)) = input else {
                    continue;
                };
                if i == target {
                    parity
                        .read_exact_at(&mut piece[..len], header_len + offset)
                        .map_err(|e| Error::io(remaining[0].as_path(), "read parity", e))?;
                } else {
                    data.read_at(
                        chunk_for(i, target) as u64 * chunk + offset,
                        &mut piece[..len],
                    )?;
                }
                xor_into(&mut acc[..len], &piece[..len]);
            }
            if target == lost {
                parity_out
                    .write_all_at(&acc[..len], header.len() as u64 + offset)
                    .map_err(|e| Error::io(missing, "write", e))?;
            } else {
                data_out.write_at(chunk_for(lost, target) as u64 * chunk + offset, &acc[..len])?;
            }
            offset += len as u64;
        }
    }
    data_out.sync()?;
    parity_out
        .sync_all()
        .map_err(|e| Error::io(missing, "fsync", e))?;
    // a rebuilt file must match the CRC its owner recorded
    for ((path, _), meta) in outputs.iter().zip(&lost_files.files) {
        if let Some(want) = meta.crc32() {
            let got = crate::io::file_crc32(path)?;
            if got != want {
                return Err(Error::invalid(
                    path,
                    format!(
                        "rebuilt with CRC32 {}, its owner recorded {}: an input file is damaged",
                        crate::hash::format_crc32(got),
                        crate::hash::format_crc32(want)
                    ),
                ));
            }
        }
    }
    let mut written: Vec<PathBuf> = outputs.into_iter().map(|(p, _)| p).collect();
    written.push(missing.to_path_buf());
    Ok(written)
}

/// XORs `src` into `dst`.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_rule() {
        assert_eq!(chunk_size(65546, 4), 21849);
        assert_eq!(chunk_size(0, 4), 1);
        assert_eq!(chunk_size(10, 2), 10);
        // every member contributes a distinct chunk to each other member's parity
        for n in 2..9 {
            for m in 0..n {
                let mut used: Vec<usize> = (0..n)
                    .filter(|&t| t != m)
                    .map(|t| chunk_for(m, t))
                    .collect();
                used.sort();
                assert_eq!(used, (0..n - 1).collect::<Vec<_>>());
            }
        }
    }

    /// Encode a set in memory and rebuild each member from the others.
    #[test]
    fn any_one_member_is_the_xor_of_the_rest() {
        let n = 5;
        let chunk = 7;
        let data: Vec<Vec<u8>> = (0..n)
            .map(|m| {
                (0..(n - 1) * chunk)
                    .map(|i| (i * 31 + m * 7) as u8)
                    .collect()
            })
            .collect();
        let piece = |m: usize, c: usize| &data[m][c * chunk..(c + 1) * chunk];
        let parity: Vec<Vec<u8>> = (0..n)
            .map(|t| {
                let mut p = vec![0; chunk];
                for m in (0..n).filter(|&m| m != t) {
                    xor_into(&mut p, piece(m, chunk_for(m, t)));
                }
                p
            })
            .collect();
        for lost in 0..n {
            for t in (0..n).filter(|&t| t != lost) {
                let mut got = parity[t].clone();
                for m in (0..n).filter(|&m| m != t && m != lost) {
                    xor_into(&mut got, piece(m, chunk_for(m, t)));
                }
                assert_eq!(got, piece(lost, chunk_for(lost, t)));
            }
        }
    }

    #[test]
    fn logical_file_concatenates_and_pads() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("sub/b");
        std::fs::write(&a, b"abc").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(&b, b"").unwrap();
        let c = dir.path().join("c");
        std::fs::write(&c, b"defg").unwrap();
        let files = [(a.clone(), 3), (b.clone(), 0), (c.clone(), 4)];
        let lf = LogicalFile::open(&files).unwrap();
        let mut buf = [0xffu8; 10];
        lf.read_at(1, &mut buf).unwrap();
        assert_eq!(&buf, b"bcdefg\0\0\0\0");
        let out =
            LogicalFile::create(&[(dir.path().join("x"), 2), (dir.path().join("y"), 5)]).unwrap();
        out.write_at(0, b"hello world").unwrap();
        out.sync().unwrap();
        assert_eq!(std::fs::read(dir.path().join("x")).unwrap(), b"he");
        assert_eq!(std::fs::read(dir.path().join("y")).unwrap(), b"llo w");
    }

    #[test]
    fn golden_xor_header_round_trips() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/xor/cache/node1/scr.dataset.3/.scr/xor.0_2_of_4.scr");
        let (header, offset) = XorHeader::read(&path).unwrap();
        assert_eq!(header.chunk, 21849);
        assert_eq!(header.group, [0, 1, 2, 3]);
        assert_eq!(header.current.rank, 1);
        assert_eq!(header.partner.rank, 0);
        assert_eq!(header.partner.files[0].size(), Some(65543));
        assert_eq!(header.dataset.name(), Some("ckpt.3"));
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len - offset, header.chunk, "parity follows the header");
        let (raw, _) = crate::io::read_hash_file_with_size(&path).unwrap();
        assert_eq!(
            header.to_hash().to_file_bytes(),
            raw.to_file_bytes(),
            "our header encodes as SCR wrote it"
        );
    }

    /// Writes a set of `n` members (member m has files of sizes `sizes[m]`) under `root`
    /// as a drain leaves it: user files by ORIG, XOR files in `.scr/`.
    fn write_set(root: &Path, sizes: &[Vec<usize>]) -> Vec<PathBuf> {
        let n = sizes.len();
        let xor_dir = root.join(".scr");
        std::fs::create_dir_all(&xor_dir).unwrap();
        let mut members = Vec::new();
        let mut logical = Vec::new();
        for (m, files) in sizes.iter().enumerate() {
            let mut metas = Vec::new();
            let mut data = Vec::new();
            for (k, &size) in files.iter().enumerate() {
                let orig = format!("ckpt/rank_{m}.{k}");
                let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + m * 13 + k) as u8).collect();
                std::fs::create_dir_all(root.join("ckpt")).unwrap();
                std::fs::write(root.join(&orig), &bytes).unwrap();
                let mut meta =
                    Meta::for_user_file(&format!("rank_{m}.{k}"), n as u64, &orig, "/p", "x");
                meta.set_size(size as u64);
                meta.set_crc32(crc32fast::hash(&bytes));
                meta.set_complete(true);
                metas.push(meta);
                data.extend(bytes);
            }
            members.push(MemberFiles {
                rank: m as u64,
                files: metas,
            });
            logical.push(data);
        }
        let max = logical.iter().map(Vec::len).max().unwrap() as u64;
        let chunk = chunk_size(max, n as u64);
        for l in &mut logical {
            l.resize((n - 1) * chunk as usize, 0);
        }
        (0..n)
            .map(|t| {
                let mut parity = vec![0u8; chunk as usize];
                for m in (0..n).filter(|&m| m != t) {
                    let c = chunk_for(m, t) * chunk as usize;
                    xor_into(&mut parity, &logical[m][c..c + chunk as usize]);
                }
                let header = XorHeader {
                    chunk,
                    ranks: n as u64,
                    group: (0..n as u64).collect(),
                    dataset: Dataset::new(),
                    current: members[t].clone(),
                    partner: members[(t + n - 1) % n].clone(),
                };
                let mut bytes = header.to_hash().to_file_bytes();
                bytes.extend(parity);
                let path = xor_dir.join(crate::layout::xor_file_name(0, t as u64, n as u64));
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect()
    }

    #[test]
    fn serial_rebuild_restores_any_lost_member_byte_for_byte() {
        // members with differing counts and sizes, one with no files, one empty file
        let sizes = vec![vec![1000, 0], vec![], vec![2500], vec![10, 20, 30]];
        for lost in 0..sizes.len() {
            let dir = tempfile::tempdir().unwrap();
            let xor_files = write_set(dir.path(), &sizes);
            let before: Vec<Vec<u8>> = (0..sizes[lost].len())
                .map(|k| std::fs::read(dir.path().join(format!("ckpt/rank_{lost}.{k}"))).unwrap())
                .collect();
            let parity_before = std::fs::read(&xor_files[lost]).unwrap();
            for k in 0..sizes[lost].len() {
                std::fs::remove_file(dir.path().join(format!("ckpt/rank_{lost}.{k}"))).unwrap();
            }
            std::fs::remove_file(&xor_files[lost]).unwrap();
            let remaining: Vec<PathBuf> = xor_files
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != lost)
                .map(|(_, p)| p.clone())
                .collect();
            let written = rebuild_member(
                sizes.len(),
                lost,
                &xor_files[lost],
                &remaining,
                dir.path(),
                333,
            )
            .unwrap();
            assert_eq!(written.len(), sizes[lost].len() + 1);
            for (k, bytes) in before.iter().enumerate() {
                let path = dir.path().join(format!("ckpt/rank_{lost}.{k}"));
                assert_eq!(
                    &std::fs::read(path).unwrap(),
                    bytes,
                    "member {lost} file {k}"
                );
            }
            assert_eq!(std::fs::read(&xor_files[lost]).unwrap(), parity_before);
        }
    }

    #[test]
    fn serial_rebuild_refuses_bad_input_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let xor_files = write_set(dir.path(), &[vec![300], vec![200], vec![100]]);
        let err = rebuild_member(3, 0, &xor_files[0], &xor_files[1..2], dir.path(), 64)
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 remaining XOR files"), "{err}");
        // a damaged survivor: the rebuilt file fails its owner's CRC
        let victim = dir.path().join("ckpt/rank_1.0");
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[160] ^= 0xff; // in the chunk that rebuilds part of member 0
        std::fs::write(&victim, bytes).unwrap();
        let err = rebuild_member(3, 0, &xor_files[0], &xor_files[1..], dir.path(), 64)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an input file is damaged"), "{err}");
        // a path escaping the root is refused
        let (mut header, offset) = XorHeader::read(&xor_files[2]).unwrap();
        let mut evil = Meta::for_user_file("passwd", 3, "../../etc/passwd", "/p", "x");
        evil.set_size(200);
        header.partner.files[0] = evil;
        let mut bytes = header.to_hash().to_file_bytes();
        bytes.extend(&std::fs::read(&xor_files[2]).unwrap()[offset as usize..]);
        std::fs::write(&xor_files[2], bytes).unwrap();
        let err = rebuild_member(
            3,
            1,
            &xor_files[1],
            &[xor_files[0].clone(), xor_files[2].clone()],
            dir.path(),
            64,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(".."), "{err}");
    }
}
