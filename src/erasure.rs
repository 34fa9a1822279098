//! The erasure codes of the redundancy sets as one linear code over GF(2^8): XOR (SCR's
//! RAID-5 rotation, parity coefficients all 1) and Reed–Solomon (systematic, Cauchy
//! coefficients, surviving `k` lost members of a set, like SCR 3 and FTI level 3).
//!
//! A set of `n` members is cut into `n` stripes. In every stripe, `k` members hold parity
//! and the other `n-k` each contribute one chunk of their logical file (the zero-padded
//! concatenation of their files, see [`crate::xor`]), so each member contributes `n-k`
//! chunks and holds `k` parity chunks. Any `n-k` elements of a stripe determine the rest,
//! which is what [`StripeCode::rebuild_weights`] computes: the coefficients that turn
//! surviving elements into lost ones. Parity files are the XOR header followed by the `k`
//! parity chunks in slot order.

use crate::meta::FileType;
use crate::xor::{self, LogicalFile, MemberFiles, XorHeader};
use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d).
pub mod gf {
    const fn tables() -> ([u8; 512], [u8; 256]) {
        let mut exp = [0u8; 512];
        let mut log = [0u8; 256];
        let mut x: u16 = 1;
        let mut i = 0;
        while i < 255 {
            exp[i] = x as u8;
            log[x as usize] = i as u8;
            x <<= 1;
            if x & 0x100 != 0 {
                x ^= 0x11d;
            }
            i += 1;
        }
        while i < 512 {
            exp[i] = exp[i - 255];
            i += 1;
        }
        (exp, log)
    }
    const TABLES: ([u8; 512], [u8; 256]) = tables();
    const EXP: [u8; 512] = TABLES.0;
    const LOG: [u8; 256] = TABLES.1;

    pub fn mul(a: u8, b: u8) -> u8 {
        if a == 0 || b == 0 {
            0
        } else {
            EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
        }
    }

    /// The inverse of a non-zero element.
    pub fn inv(a: u8) -> u8 {
        assert_ne!(a, 0, "zero has no inverse");
        EXP[255 - LOG[a as usize] as usize]
    }

    /// `dst ^= c * src`, byte by byte.
    pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
        match c {
            0 => {}
            1 => crate::xor::xor_into(dst, src),
            _ => {
                let len = dst.len().min(src.len());
                #[cfg(target_arch = "x86_64")]
                let done = if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 is present (checked just above)
                    unsafe { simd::mul_add_avx2(&mut dst[..len], &src[..len], c) }
                } else {
                    0
                };
                #[cfg(not(target_arch = "x86_64"))]
                let done = 0;
                let mut table = [0u8; 256];
                for (x, t) in table.iter_mut().enumerate() {
                    *t = mul(c, x as u8);
                }
                for (d, s) in dst[done..len].iter_mut().zip(&src[done..len]) {
                    *d ^= table[*s as usize];
                }
            }
        }
    }

    /// Multiplication by a constant as two 16-entry tables (low and high nibble), looked up
    /// 32 bytes at a time with a byte shuffle: near memory speed where a 256-entry table
    /// does one load per byte.
    #[cfg(target_arch = "x86_64")]
    mod simd {
        use std::arch::x86_64::*;

        /// `dst ^= c * src` over the largest multiple of 32 bytes; returns how many bytes.
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn mul_add_avx2(dst: &mut [u8], src: &[u8], c: u8) -> usize {
            let mut low = [0u8; 32];
            let mut high = [0u8; 32];
            for i in 0..16u8 {
                low[i as usize] = super::mul(c, i);
                high[i as usize] = super::mul(c, i << 4);
            }
            low.copy_within(0..16, 16);
            high.copy_within(0..16, 16);
            let blocks = dst.len() / 32;
            // SAFETY: every load and store below stays within the first blocks * 32 bytes
            // of src and dst; unaligned loads and stores are used throughout.
            unsafe {
                let low = _mm256_loadu_si256(low.as_ptr() as *const __m256i);
                let high = _mm256_loadu_si256(high.as_ptr() as *const __m256i);
                let mask = _mm256_set1_epi8(0x0f);
                for b in 0..blocks {
                    let s = _mm256_loadu_si256(src.as_ptr().add(b * 32) as *const __m256i);
                    let lo = _mm256_shuffle_epi8(low, _mm256_and_si256(s, mask));
                    let hi =
                        _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi64(s, 4), mask));
                    let d = dst.as_mut_ptr().add(b * 32) as *mut __m256i;
                    _mm256_storeu_si256(
                        d,
                        _mm256_xor_si256(_mm256_loadu_si256(d), _mm256_xor_si256(lo, hi)),
                    );
                }
            }
            blocks * 32
        }
    }

    /// Inverts a square matrix (rows of equal length); None if it is singular.
    pub fn invert(mut m: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
        let n = m.len();
        let mut out: Vec<Vec<u8>> = (0..n)
            .map(|i| (0..n).map(|j| u8::from(i == j)).collect())
            .collect();
        for col in 0..n {
            let pivot = (col..n).find(|&r| m[r][col] != 0)?;
            m.swap(col, pivot);
            out.swap(col, pivot);
            let scale = inv(m[col][col]);
            for j in 0..n {
                m[col][j] = mul(m[col][j], scale);
                out[col][j] = mul(out[col][j], scale);
            }
            for r in 0..n {
                let f = m[r][col];
                if r != col && f != 0 {
                    for j in 0..n {
                        let (a, b) = (m[col][j], out[col][j]);
                        m[r][j] ^= mul(f, a);
                        out[r][j] ^= mul(f, b);
                    }
                }
            }
        }
        Some(out)
    }
}

/// A lost member and the weights of the surviving members' elements that rebuild it.
pub type RebuildWeights = (usize, Vec<(usize, u8)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    Xor,
    ReedSolomon,
}

/// What a member is in one stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// It contributes chunk `chunk` of its logical file as data element `index`.
    Data { chunk: usize, index: usize },
    /// It holds parity slot `slot` (0..k) of its parity file.
    Parity { slot: usize },
}

/// The code of one set: `n` members, `k` parity chunks per stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeCode {
    pub kind: CodeKind,
    pub n: usize,
    pub k: usize,
}

impl StripeCode {
    pub fn xor(n: usize) -> StripeCode {
        StripeCode {
            kind: CodeKind::Xor,
            n,
            k: 1,
        }
    }

    pub fn reed_solomon(n: usize, k: usize) -> StripeCode {
        StripeCode {
            kind: CodeKind::ReedSolomon,
            n,
            k,
        }
    }

    /// The parity file of member `pos` of set `group_id` (`xor.…` or `rs.…`).
    pub fn file_name(&self, group_id: u64, pos: u64) -> String {
        match self.kind {
            CodeKind::Xor => crate::layout::xor_file_name(group_id, pos, self.n as u64),
            CodeKind::ReedSolomon => crate::layout::rs_file_name(group_id, pos, self.n as u64),
        }
    }

    /// The meta data type of its parity files.
    pub fn file_type(&self) -> FileType {
        match self.kind {
            CodeKind::Xor => FileType::Xor,
            CodeKind::ReedSolomon => FileType::ReedSolomon,
        }
    }

    /// Chunks of its logical file each member contributes.
    pub fn data_chunks(&self) -> usize {
        self.n - self.k
    }

    pub fn role(&self, member: usize, stripe: usize) -> Role {
        let n = self.n;
        match self.kind {
            // SCR's rotation: stripe t is member t's parity; the others' chunks by chunk_for
            CodeKind::Xor if member == stripe => Role::Parity { slot: 0 },
            CodeKind::Xor => Role::Data {
                chunk: xor::chunk_for(member, stripe),
                index: (member + n - stripe - 1) % n,
            },
            CodeKind::ReedSolomon => {
                let offset = (member + n - stripe) % n;
                if offset < self.k {
                    Role::Parity { slot: offset }
                } else {
                    Role::Data {
                        chunk: offset - self.k,
                        index: offset - self.k,
                    }
                }
            }
        }
    }

    /// The stripe whose parity slot `slot` member `holder` holds.
    pub fn stripe_held(&self, holder: usize, slot: usize) -> usize {
        match self.kind {
            CodeKind::Xor => holder,
            CodeKind::ReedSolomon => (holder + self.n - slot) % self.n,
        }
    }

    /// The coefficient of data element `index` in parity slot `slot`.
    pub fn coefficient(&self, slot: usize, index: usize) -> u8 {
        match self.kind {
            CodeKind::Xor => 1,
            // Cauchy: 1 / (x_slot + y_index) with x = d + slot, y = index, all distinct, so
            // every square submatrix is invertible (the code is MDS)
            CodeKind::ReedSolomon => gf::inv(((self.data_chunks() + slot) ^ index) as u8),
        }
    }

    /// An element's row of the generator: its value in terms of the stripe's data elements.
    fn generator_row(&self, role: Role) -> Vec<u8> {
        let d = self.data_chunks();
        match role {
            Role::Data { index, .. } => (0..d).map(|i| u8::from(i == index)).collect(),
            Role::Parity { slot } => (0..d).map(|i| self.coefficient(slot, i)).collect(),
        }
    }

    /// For each lost member, the weights that turn surviving members' elements of
    /// `stripe` into its element: `(lost, [(survivor, weight)])`. Errs when more members
    /// are lost than the code survives.
    pub fn rebuild_weights(
        &self,
        stripe: usize,
        lost: &[usize],
    ) -> std::result::Result<Vec<RebuildWeights>, String> {
        if lost.len() > self.k {
            return Err(format!(
                "{} members of a set of {} are lost; it survives {}",
                lost.len(),
                self.n,
                self.k
            ));
        }
        let d = self.data_chunks();
        let survivors: Vec<usize> = (0..self.n).filter(|m| !lost.contains(m)).take(d).collect();
        let basis: Vec<Vec<u8>> = survivors
            .iter()
            .map(|&m| self.generator_row(self.role(m, stripe)))
            .collect();
        let inverse = gf::invert(basis).ok_or("the code's matrix is singular (a bug)")?;
        Ok(lost
            .iter()
            .map(|&l| {
                let row = self.generator_row(self.role(l, stripe));
                let weights = survivors
                    .iter()
                    .enumerate()
                    .map(|(t, &m)| {
                        let w = (0..d).fold(0u8, |acc, i| acc ^ gf::mul(row[i], inverse[i][t]));
                        (m, w)
                    })
                    .collect();
                (l, weights)
            })
            .collect())
    }
}

/// Where a member's files live outside the cache: user files under `root` by their name
/// relative to the prefix (`ORIG`), else by file name next to the parity files.
fn member_paths(
    files: &MemberFiles,
    root: &Path,
    parity_dir: &Path,
) -> Result<Vec<(PathBuf, u64)>> {
    files
        .files
        .iter()
        .map(|m| {
            let path = match m.orig() {
                Some(orig) => {
                    crate::rank2file::check_relative(orig)
                        .map_err(|e| Error::invalid(parity_dir, e))?;
                    root.join(orig)
                }
                None => {
                    let name = m.filename().unwrap_or_default();
                    if name.is_empty() || name.contains('/') {
                        return Err(Error::invalid(
                            parity_dir,
                            format!("file name {name:?} in a parity header is not a plain name"),
                        ));
                    }
                    parity_dir.join(name)
                }
            };
            Ok((path, m.size().unwrap_or(0)))
        })
        .collect()
}

/// The file list of set member `pos` from the headers at hand: its own, or the nearest
/// member to its right that recorded it.
pub fn member_files(headers: &[Option<XorHeader>], pos: usize, k: usize) -> Option<MemberFiles> {
    let n = headers.len();
    (0..=k).find_map(|steps| {
        headers[(pos + steps) % n]
            .as_ref()?
            .partner_at(steps)
            .cloned()
    })
}

/// The header a member's parity file carries, given every member's file list.
pub fn header_for(
    code: StripeCode,
    pos: usize,
    lists: &[MemberFiles],
    template: &XorHeader,
) -> XorHeader {
    let n = code.n;
    let left = |steps: usize| lists[(pos + n - steps) % n].clone();
    XorHeader {
        chunk: template.chunk,
        ranks: template.ranks,
        group: template.group.clone(),
        dataset: template.dataset.clone(),
        current: left(0),
        partner: left(1),
        failures: (code.kind == CodeKind::ReedSolomon).then_some(code.k as u64),
        far_partners: match code.kind {
            CodeKind::ReedSolomon => (2..=code.k).map(left).collect(),
            CodeKind::Xor => Vec::new(),
        },
    }
}

/// One member's files under a stripe code: its logical file and its parity file, whose
/// parity chunks start after the header at `parity_start`.
pub struct MemberStore {
    /// The set's code, this member's position in it, and the chunk size.
    pub code: StripeCode,
    pub member: usize,
    pub chunk: u64,
    pub data: LogicalFile,
    pub parity: File,
    pub parity_path: PathBuf,
    pub parity_start: u64,
    /// A recreated member's parity file until it is committed.
    new_parity: Option<crate::safe_fs::NewFile>,
}

impl MemberStore {
    /// Opens a surviving member's files.
    pub fn open(
        (code, member, chunk): (StripeCode, usize, u64),
        data: &[(PathBuf, u64)],
        parity_path: &Path,
        parity_start: u64,
    ) -> Result<Self> {
        Ok(MemberStore {
            code,
            member,
            chunk,
            data: LogicalFile::open(data)?,
            parity: File::open(parity_path).map_err(|e| Error::io(parity_path, "open", e))?,
            parity_path: parity_path.to_path_buf(),
            parity_start,
            new_parity: None,
        })
    }

    /// Creates a lost member's files: its data files at their sizes, and its parity file
    /// holding `header`.
    pub fn create(
        (code, member, chunk): (StripeCode, usize, u64),
        data: &[(PathBuf, u64)],
        parity_path: &Path,
        header: &[u8],
    ) -> Result<Self> {
        if let Some(dir) = parity_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
        }
        let new_parity = crate::safe_fs::NewFile::create(parity_path)?;
        let parity = new_parity
            .file()
            .try_clone()
            .map_err(|e| Error::io(parity_path, "reopen", e))?;
        parity
            .write_all_at(header, 0)
            .map_err(|e| Error::io(parity_path, "write", e))?;
        Ok(MemberStore {
            code,
            member,
            chunk,
            data: LogicalFile::create(data)?,
            parity,
            parity_path: parity_path.to_path_buf(),
            parity_start: header.len() as u64,
            new_parity: Some(new_parity),
        })
    }

    /// Gives a recreated member's files and parity file their names.
    pub fn commit(self) -> Result<()> {
        self.data.commit()?;
        match self.new_parity {
            Some(p) => p.commit(),
            None => Ok(()),
        }
    }

    /// Where this member's element of `stripe` lies, `offset` bytes in: in the parity file
    /// (true) or the logical file (false), and at which byte.
    fn place(&self, stripe: usize, offset: u64) -> (bool, u64) {
        match self.code.role(self.member, stripe) {
            Role::Data { chunk: c, .. } => (false, c as u64 * self.chunk + offset),
            Role::Parity { slot } => (true, self.parity_start + slot as u64 * self.chunk + offset),
        }
    }

    /// Reads this member's element of `stripe` at `offset` into `buf`.
    pub fn read_element(&self, stripe: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
        match self.place(stripe, offset) {
            (true, at) => self
                .parity
                .read_exact_at(buf, at)
                .map_err(|e| Error::io(&self.parity_path, "read", e)),
            (false, at) => self.data.read_at(at, buf),
        }
    }

    /// Writes this member's element of `stripe` at `offset`.
    pub fn write_element(&self, stripe: usize, offset: u64, buf: &[u8]) -> Result<()> {
        match self.place(stripe, offset) {
            (true, at) => self
                .parity
                .write_all_at(buf, at)
                .map_err(|e| Error::io(&self.parity_path, "write", e)),
            (false, at) => self.data.write_at(at, buf),
        }
    }

    /// Makes both files durable.
    pub fn sync(&self) -> Result<()> {
        self.data.sync()?;
        self.parity
            .sync_all()
            .map_err(|e| Error::io(&self.parity_path, "fsync", e))
    }
}

/// Rebuilds the lost members of a set serially, without MPI, from the other members'
/// parity files (`parity[pos]`, None for the lost) and files: the drain's rebuild (SCR's
/// `scr_rebuild_xor`, and the same for RS). User files are read and written under `root`
/// (the prefix) by their `ORIG` names; `missing[i]` is where lost member `lost[i]`'s
/// parity file goes. Rebuilt files are checked against their owner's CRCs. Returns the
/// paths written.
pub fn rebuild_serial(
    code: StripeCode,
    lost: &[usize],
    missing: &[PathBuf],
    parity: &[Option<PathBuf>],
    root: &Path,
    buf_size: usize,
) -> Result<Vec<PathBuf>> {
    let n = code.n;
    if lost.len() > code.k || lost.iter().any(|&l| l >= n) {
        return Err(Error::invalid(
            missing.first().map_or(Path::new("."), |m| m.as_path()),
            format!(
                "{} members of a set of {n} are lost; it survives {}",
                lost.len(),
                code.k
            ),
        ));
    }
    let parity_dir = missing
        .first()
        .and_then(|m| m.parent())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut headers: Vec<Option<XorHeader>> = vec![None; n];
    let mut offsets = vec![0u64; n];
    for (pos, p) in parity.iter().enumerate() {
        if let Some(path) = p {
            let (h, offset) = XorHeader::read(path)?;
            if h.group.len() != n {
                return Err(Error::invalid(
                    path,
                    format!("belongs to a set of {}, not {n}", h.group.len()),
                ));
            }
            if code.kind == CodeKind::ReedSolomon && h.failures != Some(code.k as u64) {
                return Err(Error::invalid(
                    path,
                    format!("is not a Reed–Solomon file surviving {} losses", code.k),
                ));
            }
            headers[pos] = Some(h);
            offsets[pos] = offset;
        }
    }
    let first = headers
        .iter()
        .flatten()
        .next()
        .ok_or_else(|| Error::invalid(&parity_dir, "no surviving parity file given"))?
        .clone();
    for (pos, h) in headers.iter().enumerate() {
        if let Some(h) = h
            && (h.chunk != first.chunk || h.group != first.group)
        {
            return Err(Error::invalid(
                parity[pos].as_ref().expect("read above"),
                "its set or chunk size differs from the other parity files; list the files of one set",
            ));
        }
    }
    let chunk = first.chunk;
    let lists: Vec<MemberFiles> = (0..n)
        .map(|pos| {
            member_files(&headers, pos, code.k).ok_or_else(|| {
                Error::invalid(
                    &parity_dir,
                    format!("no surviving header records member {pos}'s files"),
                )
            })
        })
        .collect::<Result<_>>()?;
    // the chunk follows from the members' sizes, and each parity file holds exactly its
    // header and its chunks: a header claiming more would have the rebuild write without end
    let largest = lists
        .iter()
        .map(MemberFiles::logical_size)
        .max()
        .unwrap_or(0);
    let want_chunk = xor::chunk_size(largest, code.data_chunks() as u64);
    if chunk != want_chunk {
        return Err(Error::invalid(
            &parity_dir,
            format!(
                "the parity headers give CHUNK {chunk}, but the members' files ({largest} bytes at most) make it {want_chunk}"
            ),
        ));
    }
    for (pos, p) in parity.iter().enumerate() {
        if let Some(path) = p {
            let len = std::fs::metadata(path)
                .map_err(|e| Error::io(path, "stat", e))?
                .len();
            let want = offsets[pos] + code.k as u64 * chunk;
            if len != want {
                return Err(Error::invalid(
                    path,
                    format!(
                        "is {len} bytes; its header and {} chunk(s) of {chunk} make {want}",
                        code.k
                    ),
                ));
            }
        }
    }

    let mut stores: Vec<MemberStore> = Vec::with_capacity(n);
    let mut outputs = Vec::new();
    for pos in 0..n {
        let paths = member_paths(&lists[pos], root, &parity_dir)?;
        match lost.iter().position(|&l| l == pos) {
            None => {
                let path = parity[pos].as_ref().expect("a survivor's parity file");
                stores.push(MemberStore::open(
                    (code, pos, chunk),
                    &paths,
                    path,
                    offsets[pos],
                )?);
            }
            Some(i) => {
                // what is recreated stays inside the prefix, through no planted link
                for (path, _) in &paths {
                    crate::safe_fs::check_no_links_below(root, path)?;
                }
                crate::safe_fs::check_no_links_below(root, &missing[i])?;
                let header = header_for(code, pos, &lists, &first)
                    .to_hash()
                    .to_file_bytes();
                stores.push(MemberStore::create(
                    (code, pos, chunk),
                    &paths,
                    &missing[i],
                    &header,
                )?);
                outputs.extend(
                    paths
                        .into_iter()
                        .map(|(p, _)| p)
                        .zip(std::iter::repeat(pos)),
                );
            }
        }
    }

    let buf_len = buf_size.clamp(1, chunk.max(1) as usize);
    let mut acc = vec![0u8; buf_len];
    let mut piece = vec![0u8; buf_len];
    for stripe in 0..n {
        let weights = code
            .rebuild_weights(stripe, lost)
            .map_err(|e| Error::invalid(&parity_dir, e))?;
        let mut offset = 0u64;
        while offset < chunk {
            let len = (chunk - offset).min(buf_len as u64) as usize;
            for (l, from) in &weights {
                acc[..len].fill(0);
                for &(m, w) in from {
                    stores[m].read_element(stripe, offset, &mut piece[..len])?;
                    gf::mul_add(&mut acc[..len], &piece[..len], w);
                }
                stores[*l].write_element(stripe, offset, &acc[..len])?;
            }
            offset += len as u64;
        }
    }
    for &l in lost {
        stores[l].sync()?;
    }
    // a rebuilt file must match the CRC its owner recorded before it gets its name;
    // without a recorded CRC it is said to be unchecked
    for &l in lost {
        let crcs = stores[l].data.created_crc32s()?;
        for ((path, got), meta) in crcs.iter().zip(&lists[l].files) {
            match meta.crc32() {
                Some(want) if want != *got => {
                    return Err(Error::invalid(
                        path,
                        format!(
                            "rebuilt with CRC32 {}, its owner recorded {}: an input file is damaged; nothing was written",
                            crate::hash::format_crc32(*got),
                            crate::hash::format_crc32(want)
                        ),
                    ));
                }
                Some(_) => {}
                None => eprintln!(
                    "scr: WARNING: {}: rebuilt, but its owner recorded no CRC32 to check it against",
                    path.display()
                ),
            }
        }
    }
    let mut stores: Vec<Option<MemberStore>> = stores.into_iter().map(Some).collect();
    for &l in lost {
        stores[l].take().expect("each lost member once").commit()?;
    }
    let mut written: Vec<PathBuf> = outputs.into_iter().map(|(p, _)| p).collect();
    written.extend(missing.iter().cloned());
    Ok(written)
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // index loops read best for matrices
mod tests {
    use super::*;

    #[test]
    fn field_arithmetic() {
        for a in 1..=255u8 {
            assert_eq!(gf::mul(a, gf::inv(a)), 1);
            assert_eq!(gf::mul(a, 1), a);
            assert_eq!(gf::mul(a, 0), 0);
        }
        assert_eq!(gf::mul(2, 0x80), 0x1d, "reduction by 0x11d");
        let m = vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 10]];
        let inv = gf::invert(m.clone()).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let x = (0..3).fold(0, |acc, t| acc ^ gf::mul(m[i][t], inv[t][j]));
                assert_eq!(x, u8::from(i == j));
            }
        }
        assert!(gf::invert(vec![vec![1, 1], vec![1, 1]]).is_none());
    }

    #[test]
    fn vector_multiply_add_matches_the_field() {
        let src: Vec<u8> = (0..1000).map(|i| (i * 37 + 11) as u8).collect();
        for c in [2u8, 0x1d, 0x8e, 0xff] {
            for len in [0, 1, 31, 32, 33, 999] {
                let mut dst: Vec<u8> = (0..len).map(|i| (i * 5) as u8).collect();
                let expect: Vec<u8> = dst
                    .iter()
                    .zip(&src)
                    .map(|(d, s)| d ^ gf::mul(c, *s))
                    .collect();
                gf::mul_add(&mut dst, &src[..len], c);
                assert_eq!(dst, expect, "c={c} len={len}");
            }
        }
    }

    #[test]
    fn every_member_contributes_each_chunk_once_and_holds_k_parities() {
        for code in [
            StripeCode::xor(5),
            StripeCode::reed_solomon(7, 3),
            StripeCode::reed_solomon(4, 2),
        ] {
            for m in 0..code.n {
                let mut chunks = Vec::new();
                let mut slots = Vec::new();
                for s in 0..code.n {
                    match code.role(m, s) {
                        Role::Data { chunk, .. } => chunks.push(chunk),
                        Role::Parity { slot } => slots.push(slot),
                    }
                }
                for slot in 0..code.k {
                    let s = code.stripe_held(m, slot);
                    assert_eq!(code.role(m, s), Role::Parity { slot }, "{code:?}");
                }
                chunks.sort();
                slots.sort();
                assert_eq!(chunks, (0..code.data_chunks()).collect::<Vec<_>>());
                assert_eq!(slots, (0..code.k).collect::<Vec<_>>());
            }
            for s in 0..code.n {
                let mut idx: Vec<usize> = (0..code.n)
                    .filter_map(|m| match code.role(m, s) {
                        Role::Data { index, .. } => Some(index),
                        _ => None,
                    })
                    .collect();
                idx.sort();
                assert_eq!(idx, (0..code.data_chunks()).collect::<Vec<_>>());
            }
        }
    }

    /// Encodes random stripes and rebuilds every combination of up to k lost members.
    #[test]
    fn any_k_lost_members_are_rebuilt() {
        for code in [
            StripeCode::xor(4),
            StripeCode::reed_solomon(5, 2),
            StripeCode::reed_solomon(6, 3),
        ] {
            let d = code.data_chunks();
            for stripe in 0..code.n {
                let data: Vec<u8> = (0..d).map(|i| (i * 37 + stripe * 11 + 5) as u8).collect();
                let value = |m: usize| match code.role(m, stripe) {
                    Role::Data { index, .. } => data[index],
                    Role::Parity { slot } => (0..d).fold(0, |acc, i| {
                        acc ^ gf::mul(code.coefficient(slot, i), data[i])
                    }),
                };
                for mask in 1u32..(1 << code.n) {
                    let lost: Vec<usize> = (0..code.n).filter(|m| mask & (1 << m) != 0).collect();
                    if lost.len() > code.k {
                        assert!(code.rebuild_weights(stripe, &lost).is_err());
                        continue;
                    }
                    for (l, from) in code.rebuild_weights(stripe, &lost).unwrap() {
                        let got = from
                            .iter()
                            .fold(0, |acc, &(m, w)| acc ^ gf::mul(w, value(m)));
                        assert_eq!(got, value(l), "{code:?} stripe {stripe} lost {lost:?}");
                    }
                }
            }
        }
    }

    use crate::dataset::Dataset;
    use crate::meta::Meta;

    /// Writes a set (member m has files of sizes `sizes[m]`) under `root` as a drain leaves
    /// it: user files by ORIG, parity files in `.scr/`, encoded with `code`.
    fn write_set(code: StripeCode, root: &Path, sizes: &[Vec<usize>]) -> Vec<PathBuf> {
        let n = sizes.len();
        let dir = root.join(".scr");
        std::fs::create_dir_all(root.join("ckpt")).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let mut lists = Vec::new();
        let mut logical = Vec::new();
        for (m, files) in sizes.iter().enumerate() {
            let mut metas = Vec::new();
            let mut data = Vec::new();
            for (k, &size) in files.iter().enumerate() {
                let orig = format!("ckpt/rank_{m}.{k}");
                let bytes: Vec<u8> = (0..size).map(|i| (i * 7 + m * 13 + k) as u8).collect();
                std::fs::write(root.join(&orig), &bytes).unwrap();
                let mut meta =
                    Meta::for_user_file(&format!("rank_{m}.{k}"), n as u64, &orig, "/p", "x");
                meta.set_size(size as u64);
                meta.set_crc32(crc32fast::hash(&bytes));
                meta.set_complete(true);
                metas.push(meta);
                data.extend(bytes);
            }
            lists.push(MemberFiles {
                rank: m as u64,
                files: metas,
            });
            logical.push(data);
        }
        let max = logical.iter().map(Vec::len).max().unwrap() as u64;
        let chunk = xor::chunk_size(max, code.data_chunks() as u64) as usize;
        for l in &mut logical {
            l.resize(code.data_chunks() * chunk, 0);
        }
        let template = XorHeader {
            chunk: chunk as u64,
            ranks: n as u64,
            group: (0..n as u64).collect(),
            dataset: Dataset::new(),
            current: lists[0].clone(),
            partner: lists[0].clone(),
            failures: None,
            far_partners: Vec::new(),
        };
        (0..n)
            .map(|p| {
                let mut parity = vec![0u8; code.k * chunk];
                for s in 0..n {
                    let Role::Parity { slot } = code.role(p, s) else {
                        continue;
                    };
                    for m in 0..n {
                        if let Role::Data { chunk: c, index } = code.role(m, s) {
                            gf::mul_add(
                                &mut parity[slot * chunk..(slot + 1) * chunk],
                                &logical[m][c * chunk..(c + 1) * chunk],
                                code.coefficient(slot, index),
                            );
                        }
                    }
                }
                let mut bytes = header_for(code, p, &lists, &template)
                    .to_hash()
                    .to_file_bytes();
                bytes.extend(parity);
                let path = dir.join(code.file_name(0, p as u64));
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect()
    }

    fn lose_and_rebuild(code: StripeCode, sizes: &[Vec<usize>], lost: &[usize]) {
        let dir = tempfile::tempdir().unwrap();
        let parity = write_set(code, dir.path(), sizes);
        let user = |m: usize, k: usize| dir.path().join(format!("ckpt/rank_{m}.{k}"));
        let mut before = Vec::new();
        for &l in lost {
            for k in 0..sizes[l].len() {
                before.push((user(l, k), std::fs::read(user(l, k)).unwrap()));
                std::fs::remove_file(user(l, k)).unwrap();
            }
            before.push((parity[l].clone(), std::fs::read(&parity[l]).unwrap()));
            std::fs::remove_file(&parity[l]).unwrap();
        }
        let given: Vec<Option<PathBuf>> = (0..code.n)
            .map(|m| (!lost.contains(&m)).then(|| parity[m].clone()))
            .collect();
        let missing: Vec<PathBuf> = lost.iter().map(|&l| parity[l].clone()).collect();
        let written = rebuild_serial(code, lost, &missing, &given, dir.path(), 333).unwrap();
        assert_eq!(written.len(), before.len());
        for (path, bytes) in before {
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "{code:?} lost {lost:?}: {}",
                path.display()
            );
        }
    }

    #[test]
    fn serial_rebuild_restores_lost_members_byte_for_byte() {
        // differing counts and sizes, a member without files, an empty file
        let sizes = vec![
            vec![1000, 0],
            vec![],
            vec![2500],
            vec![10, 20, 30],
            vec![700],
        ];
        for l in 0..5 {
            lose_and_rebuild(StripeCode::xor(5), &sizes, &[l]);
        }
        for lost in [[0, 1], [1, 3], [2, 4], [0, 4]] {
            lose_and_rebuild(StripeCode::reed_solomon(5, 2), &sizes, &lost);
        }
        lose_and_rebuild(StripeCode::reed_solomon(5, 2), &sizes, &[3]);
    }

    #[test]
    fn a_chunk_the_members_and_the_file_length_do_not_back_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let code = StripeCode::xor(3);
        let parity = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
        std::fs::remove_file(dir.path().join("ckpt/rank_0.0")).unwrap();
        let lost = parity[0].clone();
        std::fs::remove_file(&lost).unwrap();
        let given = vec![None, Some(parity[1].clone()), Some(parity[2].clone())];
        let refused = || {
            rebuild_serial(
                code,
                &[0],
                std::slice::from_ref(&lost),
                &given,
                dir.path(),
                64,
            )
            .unwrap_err()
            .to_string()
        };
        // a header claiming a huge CHUNK, the file grown to match: refused, nothing written
        for p in &parity[1..] {
            let (mut header, offset) = XorHeader::read(p).unwrap();
            header.chunk = 1 << 40;
            let mut bytes = header.to_hash().to_file_bytes();
            bytes.extend(&std::fs::read(p).unwrap()[offset as usize..]);
            std::fs::write(p, &bytes).unwrap();
        }
        let e = refused();
        assert!(
            e.contains("CHUNK 1099511627776") && e.contains("make it"),
            "{e}"
        );
        // the right CHUNK but a parity file longer than its header and chunk
        let parity2 = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
        std::fs::remove_file(dir.path().join("ckpt/rank_0.0")).unwrap();
        std::fs::remove_file(&parity2[0]).unwrap();
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&parity2[1])
            .unwrap();
        f.set_len(std::fs::metadata(&parity2[1]).unwrap().len() + 4096)
            .unwrap();
        let e = refused();
        assert!(e.contains("header and 1 chunk(s)"), "{e}");
        assert!(!lost.exists() && !dir.path().join("ckpt/rank_0.0").exists());
    }

    #[test]
    fn serial_rebuild_refuses_bad_input_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let code = StripeCode::xor(3);
        let parity = write_set(code, dir.path(), &[vec![300], vec![200], vec![100]]);
        let given = |skip: usize| -> Vec<Option<PathBuf>> {
            (0..3)
                .map(|m| (m != skip).then(|| parity[m].clone()))
                .collect()
        };
        // a member that is not lost: its files exist and are never written into
        let err = rebuild_serial(code, &[0], &[parity[0].clone()], &given(0), dir.path(), 64)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("already exists") && err.contains("never replaces"),
            "{err}"
        );
        // a damaged survivor: the rebuilt file fails its owner's CRC, and nothing is written
        let lost0 = [dir.path().join("ckpt/rank_0.0"), parity[0].clone()];
        let kept: Vec<Vec<u8>> = lost0.iter().map(|p| std::fs::read(p).unwrap()).collect();
        for p in &lost0 {
            std::fs::remove_file(p).unwrap();
        }
        let listing = |d: &Path| {
            let mut v: Vec<_> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        let before = [
            listing(&dir.path().join("ckpt")),
            listing(&dir.path().join(".scr")),
        ];
        let victim = dir.path().join("ckpt/rank_1.0");
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[160] ^= 0xff; // in the chunk that rebuilds part of member 0
        std::fs::write(&victim, &bytes).unwrap();
        let err = rebuild_serial(code, &[0], &[parity[0].clone()], &given(0), dir.path(), 64)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an input file is damaged"), "{err}");
        let after = [
            listing(&dir.path().join("ckpt")),
            listing(&dir.path().join(".scr")),
        ];
        assert_eq!(
            before, after,
            "no file or temporary left by the refused rebuild"
        );
        bytes[160] ^= 0xff;
        std::fs::write(&victim, &bytes).unwrap();
        for (p, b) in lost0.iter().zip(kept) {
            std::fs::write(p, b).unwrap();
        }
        // a path escaping the root is refused
        let (mut header, offset) = XorHeader::read(&parity[2]).unwrap();
        let mut evil = Meta::for_user_file("passwd", 3, "../../etc/passwd", "/p", "x");
        evil.set_size(200);
        header.partner.files[0] = evil;
        let mut bytes = header.to_hash().to_file_bytes();
        bytes.extend(&std::fs::read(&parity[2]).unwrap()[offset as usize..]);
        std::fs::write(&parity[2], bytes).unwrap();
        let err = rebuild_serial(code, &[1], &[parity[1].clone()], &given(1), dir.path(), 64)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".."), "{err}");
        // XOR files are not RS files
        let err = rebuild_serial(
            StripeCode::reed_solomon(3, 2),
            &[1],
            &[parity[1].clone()],
            &given(1),
            dir.path(),
            64,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not a Reed–Solomon file"), "{err}");
    }
}
