//! The XOR scheme's arithmetic and files, shared by the
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

/// The most bytes a parity file's header may hold: its members' file lists (a set of 255
/// members of many files each stays far below), never the parity after it.
pub const MAX_HEADER_BYTES: u64 = 256 << 20;

/// Bytes per chunk: the largest logical file spread over `data_chunks` chunks (`n-1` for
/// XOR, SCR's rule), at least one byte.
pub fn chunk_size(max_logical_bytes: u64, data_chunks: u64) -> u64 {
    max_logical_bytes.div_ceil(data_chunks.max(1)).max(1)
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
        // a count is believed only as far as the entries it counts are there
        let present = h.get("FILE").map_or(0, Hash::len);
        if count > present {
            return Err(format!(
                "{what}: FILES says {count} but {present} file entries are present"
            ));
        }
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

/// The largest redundancy set a parity header may describe (SCR's SET_SIZE limit; Reed–
/// Solomon over GF(2^8) needs fewer than 256 members anyway).
pub const MAX_SET_SIZE: usize = 255;

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
    /// Reed–Solomon only: how many lost members the set survives (XOR survives one and
    /// writes no such key).
    pub failures: Option<u64>,
    /// Reed–Solomon only: the file lists of the left neighbours 2, 3, … `failures` steps
    /// away, so any lost member's list survives on some member to its right.
    pub far_partners: Vec<MemberFiles>,
}

impl XorHeader {
    /// The file list of the member `steps` places left (1 = the PARTNER section).
    pub fn partner_at(&self, steps: usize) -> Option<&MemberFiles> {
        match steps {
            0 => Some(&self.current),
            1 => Some(&self.partner),
            s => self.far_partners.get(s - 2),
        }
    }

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
        if let Some(k) = self.failures {
            h.set_value("FAILURES", k);
            let far = h.child("PARTNERS");
            for (i, m) in self.far_partners.iter().enumerate() {
                far.set((i + 2).to_string(), m.to_hash(true));
            }
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
        if !(2..=MAX_SET_SIZE).contains(&n) {
            return Err(format!(
                "XOR header: a set of {n} members; SCR's sets have 2 to {MAX_SET_SIZE}"
            ));
        }
        let present = g.get("RANK").map_or(0, Hash::len);
        if n > present {
            return Err(format!(
                "XOR header: GROUP RANKS says {n} but {present} members are listed"
            ));
        }
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
        let failures = h.parsed::<u64>("FAILURES").ok().flatten();
        if let Some(k) = failures
            && (k == 0 || k as usize >= n)
        {
            return Err(format!(
                "XOR header: FAILURES {k} in a set of {n}; a set survives 1 to {} losses",
                n - 1
            ));
        }
        Ok(XorHeader {
            chunk: num("CHUNK")?,
            ranks: num("RANKS")?,
            group,
            dataset: Dataset::wrap(h.get("DSET").cloned().unwrap_or_default()),
            current: section("CURRENT")?,
            partner: section("PARTNER")?,
            failures,
            far_partners: {
                let far = h.get("PARTNERS");
                let count = far.map_or(0, Hash::len);
                (0..count)
                    .map(|i| {
                        far.and_then(|f| f.get(&(i + 2).to_string()))
                            .ok_or_else(|| format!("RS header: PARTNERS {} missing", i + 2))
                            .and_then(|m| MemberFiles::from_hash(m, "PARTNERS"))
                    })
                    .collect::<std::result::Result<_, _>>()?
            },
        })
    }

    /// Reads the header of an XOR file; returns it and the offset where the parity starts.
    pub fn read(path: &Path) -> Result<(XorHeader, u64)> {
        let (h, len) = crate::io::read_hash_file_with_size(path, MAX_HEADER_BYTES)?;
        let header = XorHeader::from_hash(&h).map_err(|e| Error::invalid(path, e))?;
        Ok((header, len))
    }
}

/// A member's files read or written as one zero-padded logical file. Files being recreated
/// are written as temporaries ([`crate::safe_fs::NewFile`]) and get their names only in
/// [`LogicalFile::commit`].
pub struct LogicalFile {
    parts: Vec<(PathBuf, File, u64)>,
    created: Vec<crate::safe_fs::NewFile>,
}

impl LogicalFile {
    /// Opens existing files for reading, with the sizes the filemap records: below
    /// `within`'s root through directory handles when given (files on the prefix), else
    /// by path (SCR's own cache).
    pub fn open(
        files: &[(PathBuf, u64)],
        within: Option<&crate::safe_fs::Beneath>,
    ) -> Result<LogicalFile> {
        let mut parts = Vec::with_capacity(files.len());
        for (path, size) in files {
            let f = match within {
                Some(beneath) => beneath.open_path(path)?,
                None => File::open(path).map_err(|e| Error::io(path, "open", e))?,
            };
            parts.push((path.clone(), f, *size));
        }
        Ok(LogicalFile {
            parts,
            created: Vec::new(),
        })
    }

    /// Starts recreating missing files, each of its recorded size: none of them may exist
    /// (a rebuild never replaces a file), and until [`LogicalFile::commit`] they are hidden
    /// temporaries beside their names. Below `within`'s root when given, as
    /// [`crate::safe_fs::NewFile::create_in`].
    pub fn create(
        files: &[(PathBuf, u64)],
        within: Option<&crate::safe_fs::Beneath>,
    ) -> Result<LogicalFile> {
        let mut parts = Vec::with_capacity(files.len());
        let mut created = Vec::with_capacity(files.len());
        for (path, size) in files {
            let new = crate::safe_fs::NewFile::create_in(within, path, crate::layout::DIR_MODE)?;
            new.file()
                .set_len(*size)
                .map_err(|e| Error::io(path, "resize", e))?;
            let f = new
                .file()
                .try_clone()
                .map_err(|e| Error::io(path, "reopen", e))?;
            parts.push((path.clone(), f, *size));
            created.push(new);
        }
        Ok(LogicalFile { parts, created })
    }

    /// The files in logical order: (path, open file, recorded size).
    pub fn files(&self) -> impl Iterator<Item = (&Path, &File, u64)> {
        self.parts.iter().map(|(p, f, s)| (p.as_path(), f, *s))
    }

    /// The CRC32 of each recreated file, by its final name, before it has that name.
    pub fn created_crc32s(&self) -> Result<Vec<(PathBuf, u32)>> {
        self.created
            .iter()
            .map(|n| {
                Ok((
                    n.target().to_path_buf(),
                    crate::io::open_file_crc32(n.temp_path(), n.file())?,
                ))
            })
            .collect()
    }

    /// Gives the recreated files their names (each fsynced first).
    pub fn commit(self) -> Result<()> {
        self.created.into_iter().try_for_each(|n| n.commit())
    }

    /// Gives the recreated files the permission bits their metadata records (`modes`, in
    /// the order given to [`LogicalFile::create`]; None leaves one readable by the user
    /// alone): as readable as the files they recreate, never more.
    pub fn set_modes(&self, modes: impl IntoIterator<Item = Option<u32>>) -> Result<()> {
        for (new, mode) in self.created.iter().zip(modes) {
            if let Some(m) = mode {
                new.set_mode(m)?;
            }
        }
        Ok(())
    }

    /// The pieces of `[offset, offset + len)` inside the files: (part, offset in its file,
    /// start in the caller's buffer, length). What lies past the last file is not covered.
    fn pieces(&self, mut offset: u64, len: usize) -> Vec<(usize, u64, usize, usize)> {
        let mut out = Vec::new();
        let mut done = 0;
        for (i, (_, _, size)) in self.parts.iter().enumerate() {
            if done == len {
                break;
            }
            if offset >= *size {
                offset -= size;
                continue;
            }
            let n = ((size - offset) as usize).min(len - done);
            out.push((i, offset, done, n));
            done += n;
            offset = 0;
        }
        out
    }

    /// Fills `buf` from logical offset `offset`; bytes past the end read as zero.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut filled = 0;
        for (i, at, start, n) in self.pieces(offset, buf.len()) {
            let (path, f, _) = &self.parts[i];
            f.read_exact_at(&mut buf[start..start + n], at)
                .map_err(|e| Error::io(path, "read", e))?;
            filled = start + n;
        }
        buf[filled..].fill(0);
        Ok(())
    }

    /// Writes `buf` at logical offset `offset`, dropping what falls in the padding.
    pub fn write_at(&self, offset: u64, buf: &[u8]) -> Result<()> {
        for (i, at, start, n) in self.pieces(offset, buf.len()) {
            let (path, f, _) = &self.parts[i];
            f.write_all_at(&buf[start..start + n], at)
                .map_err(|e| Error::io(path, "write", e))?;
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
        assert_eq!(chunk_size(65546, 3), 21849, "SCR's chunk for a set of 4");
        assert_eq!(chunk_size(0, 3), 1);
        assert_eq!(chunk_size(10, 1), 10);
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
        let lf = LogicalFile::open(&files, None).unwrap();
        let mut buf = [0xffu8; 10];
        lf.read_at(1, &mut buf).unwrap();
        assert_eq!(&buf, b"bcdefg\0\0\0\0");
        let out = LogicalFile::create(
            &[(dir.path().join("x"), 2), (dir.path().join("y"), 5)],
            None,
        )
        .unwrap();
        out.write_at(0, b"hello world").unwrap();
        out.sync().unwrap();
        assert!(!dir.path().join("x").exists(), "named only when committed");
        out.commit().unwrap();
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
        let (raw, _) = crate::io::read_hash_file_with_size(&path, MAX_HEADER_BYTES).unwrap();
        assert_eq!(
            header.to_hash().to_file_bytes(),
            raw.to_file_bytes(),
            "our header encodes as SCR wrote it"
        );
    }

    #[test]
    fn counts_in_a_header_are_believed_only_as_far_as_they_go() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/xor/cache/node1/scr.dataset.3/.scr/xor.0_2_of_4.scr");
        let (header, _) = XorHeader::read(&path).unwrap();
        let good = header.to_hash();
        let with = |path: &[&str], value: &str| {
            let mut h = good.clone();
            let (last, dirs) = path.split_last().unwrap();
            let mut at = &mut h;
            for d in dirs {
                at = at.get_mut(d).unwrap();
            }
            at.unset(last);
            at.set_value(last, value);
            XorHeader::from_hash(&h).unwrap_err()
        };
        assert!(with(&["GROUP", "RANKS"], "4611686018427387904").contains("a set of"));
        assert!(with(&["GROUP", "RANKS"], "300").contains("2 to 255"));
        assert!(with(&["GROUP", "RANKS"], "7").contains("4 members are listed"));
        assert!(with(&["CURRENT", "FILES"], "1000000000000000").contains("entries are present"));
        assert!(with(&["FAILURES"], "4").contains("1 to 3 losses"));
        assert!(with(&["FAILURES"], "0").contains("1 to 3 losses"));
    }
}
