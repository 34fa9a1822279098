//! The serial rebuild the drain and the rebuild commands use, without MPI: each lost
//! member's files and parity file recreated from the survivors'.

use super::{CodeKind, Role, StripeCode, gf};
use crate::safe_fs::Beneath;
use crate::xor::{self, LogicalFile, MemberFiles, XorHeader};
use crate::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

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

/// The CRC a file's metadata carries in a parity header until the encode has computed the
/// real one: a wide value, so the real one is never longer, and a wrong one, so a header
/// the encode could not finish makes every rebuild from it fail its check.
pub const CRC_PLACEHOLDER: u32 = u32::MAX;

/// How long the padding of a parity header is at least (see [`padded_header_bytes`]).
const MIN_PAD: usize = 8;

/// The bytes of member `pos`'s parity header with the files' CRCs, the size it had when the
/// encode wrote it with [`CRC_PLACEHOLDER`]s: what the encode writes at the end, and what a
/// rebuild of the member writes again, byte for byte.
pub fn parity_header_bytes(
    code: StripeCode,
    pos: usize,
    lists: &[MemberFiles],
    template: &XorHeader,
) -> Vec<u8> {
    let size = padded_header_bytes(code, pos, &with_placeholders(lists), template, None).len();
    padded_header_bytes(code, pos, lists, template, Some(size))
}

/// `lists` with every file's CRC a placeholder (the header the encode starts with).
pub fn with_placeholders(lists: &[MemberFiles]) -> Vec<MemberFiles> {
    let mut lists = lists.to_vec();
    for list in lists.iter_mut() {
        for m in list.files.iter_mut() {
            m.set_crc32(CRC_PLACEHOLDER);
        }
    }
    lists
}

/// The bytes of member `pos`'s parity header, padded to exactly `size` bytes when given:
/// the encode writes the header with [`CRC_PLACEHOLDER`]s before the parity, and the same
/// header with the files' real CRCs over it once it knows them, and the parity must not
/// move. The padding is a `PAD` key of zeros, which readers pass over.
pub fn padded_header_bytes(
    code: StripeCode,
    pos: usize,
    lists: &[MemberFiles],
    template: &XorHeader,
    size: Option<usize>,
) -> Vec<u8> {
    let with_pad = |pad: usize| {
        let mut h = header_for(code, pos, lists, template).to_hash();
        h.set_value("PAD", "0".repeat(pad));
        h.to_file_bytes()
    };
    let bytes = with_pad(MIN_PAD);
    match size {
        Some(size) if size > bytes.len() => with_pad(MIN_PAD + size - bytes.len()),
        _ => bytes,
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
    /// Opens a surviving member's files (below `within`'s root through directory handles
    /// when given, as [`LogicalFile::open`]).
    pub fn open(
        (code, member, chunk): (StripeCode, usize, u64),
        data: &[(PathBuf, u64)],
        parity_path: &Path,
        parity_start: u64,
        within: Option<&Beneath>,
    ) -> Result<Self> {
        let parity = match within {
            Some(beneath) => beneath.open_path(parity_path)?,
            None => File::open(parity_path).map_err(|e| Error::io(parity_path, "open", e))?,
        };
        Ok(MemberStore {
            code,
            member,
            chunk,
            data: LogicalFile::open(data, within)?,
            parity,
            parity_path: parity_path.to_path_buf(),
            parity_start,
            new_parity: None,
        })
    }

    /// Creates a lost member's files: its data files at their sizes, and its parity file
    /// holding `header` (below `within`'s root through directory handles when given, as
    /// [`LogicalFile::create`]).
    pub fn create(
        (code, member, chunk): (StripeCode, usize, u64),
        data: &[(PathBuf, u64)],
        parity_path: &Path,
        header: &[u8],
        within: Option<&Beneath>,
    ) -> Result<Self> {
        let new_parity =
            crate::safe_fs::NewFile::create_in(within, parity_path, crate::layout::DIR_MODE)?;
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
            data: LogicalFile::create(data, within)?,
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
    pub fn place(&self, stripe: usize, offset: u64) -> (bool, u64) {
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
    rebuild_serial_in(code, lost, missing, parity, (root, root), buf_size)
}

/// [`rebuild_serial`] with the user files under `user_dir`, a directory below `root` (where
/// a drain's files wait for their dataset to be whole), the parity files anywhere below
/// `root`.
pub fn rebuild_serial_in(
    code: StripeCode,
    lost: &[usize],
    missing: &[PathBuf],
    parity: &[Option<PathBuf>],
    (root, user_dir): (&Path, &Path),
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
    let (headers, offsets, first) = read_headers(code, parity, &parity_dir)?;
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
    check_chunk(code, parity, &offsets, chunk, &lists, &parity_dir)?;

    let set = SetFiles {
        code,
        lists: &lists,
        header: &first,
        root,
        user_dir,
        parity_dir: &parity_dir,
    };
    let (stores, outputs) = set.open_stores(lost, missing, parity, &offsets)?;

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
        check_rebuilt_crcs(&stores[l], &lists[l])?;
    }
    let mut stores: Vec<Option<MemberStore>> = stores.into_iter().map(Some).collect();
    for &l in lost {
        stores[l].take().expect("each lost member once").commit()?;
    }
    let mut written = outputs;
    written.extend(missing.iter().cloned());
    Ok(written)
}

/// One set's files as a serial rebuild sees them.
struct SetFiles<'a> {
    code: StripeCode,
    lists: &'a [MemberFiles],
    /// A survivor's header, the model of the lost members' new ones.
    header: &'a XorHeader,
    root: &'a Path,
    /// Where user files are, by their ORIG names: the root or a directory below it.
    user_dir: &'a Path,
    parity_dir: &'a Path,
}

impl SetFiles<'_> {
    /// Every member's store: the survivors' files and parity opened, the lost members'
    /// created from their recorded names, all below the root through directory handles
    /// (the prefix: no planted link followed, no directory of another user's used).
    /// Returns the stores by position and the user files to be recreated.
    fn open_stores(
        &self,
        lost: &[usize],
        missing: &[PathBuf],
        parity: &[Option<PathBuf>],
        offsets: &[u64],
    ) -> Result<(Vec<MemberStore>, Vec<PathBuf>)> {
        let (code, chunk) = (self.code, self.header.chunk);
        let mut stores: Vec<MemberStore> = Vec::with_capacity(code.n);
        let mut outputs = Vec::new();
        let beneath = Beneath::open(self.root)?;
        for pos in 0..code.n {
            let paths = member_paths(&self.lists[pos], self.user_dir, self.parity_dir)?;
            let Some(i) = lost.iter().position(|&l| l == pos) else {
                let path = parity[pos].as_ref().expect("a survivor's parity file");
                let layout = (code, pos, chunk);
                let store = MemberStore::open(layout, &paths, path, offsets[pos], Some(&beneath));
                stores.push(store?);
                continue;
            };
            let header = parity_header_bytes(code, pos, self.lists, self.header);
            let layout = (code, pos, chunk);
            let store = MemberStore::create(layout, &paths, &missing[i], &header, Some(&beneath))?;
            // as readable as the files they recreate, never more
            store
                .data
                .set_modes(self.lists[pos].files.iter().map(crate::meta::Meta::mode))?;
            stores.push(store);
            outputs.extend(paths.into_iter().map(|(p, _)| p));
        }
        Ok((stores, outputs))
    }
}

/// The surviving members' parity headers (by position) and where their parity starts,
/// and one of them; all must belong to one set of `code`, with one chunk size.
fn read_headers(
    code: StripeCode,
    parity: &[Option<PathBuf>],
    parity_dir: &Path,
) -> Result<(Vec<Option<XorHeader>>, Vec<u64>, XorHeader)> {
    let n = code.n;
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
        .ok_or_else(|| Error::invalid(parity_dir, "no surviving parity file given"))?
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
    Ok((headers, offsets, first))
}

/// The chunk follows from the members' sizes, and each parity file holds exactly its
/// header and its chunks: a header claiming more would have the rebuild write without end.
fn check_chunk(
    code: StripeCode,
    parity: &[Option<PathBuf>],
    offsets: &[u64],
    chunk: u64,
    lists: &[MemberFiles],
    parity_dir: &Path,
) -> Result<()> {
    let largest = lists
        .iter()
        .map(MemberFiles::logical_size)
        .max()
        .unwrap_or(0);
    let want_chunk = xor::chunk_size(largest, code.data_chunks() as u64);
    if chunk != want_chunk {
        return Err(Error::invalid(
            parity_dir,
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
    Ok(())
}

/// A rebuilt file must match the CRC its owner recorded before it gets its name; without
/// a recorded CRC it is said to be unchecked.
fn check_rebuilt_crcs(store: &MemberStore, list: &MemberFiles) -> Result<()> {
    let crcs = store.data.created_crc32s()?;
    for ((path, got), meta) in crcs.iter().zip(&list.files) {
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
    Ok(())
}
