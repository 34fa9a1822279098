//! Applying a checkpoint's redundancy scheme once every rank has written it (manual §6):
//! PARTNER sends each rank's files to its right neighbour in its set, XOR computes each
//! member's parity with the pipelined reduce-scatter ring (every data byte read once, the
//! XOR file written once, data moved in SCR_MPI_BUF_SIZE pieces).

use super::*;
use crate::shuffle::{self, Incoming, Outgoing};
use mpi::collective::SystemOperation;
use mpi::topology::Color;
use scr::erasure::{self, StripeCode};
use scr::xor::{self, LogicalFile, MemberFiles, XorHeader};
use std::os::unix::fs::FileExt;

impl Scr {
    /// Makes the communicator of this rank's set under descriptor `i` (collective).
    pub(super) fn ensure_set_comm(&mut self, i: usize) {
        if self.set_comms[i].is_none() {
            let pos = self.sets[i].position(self.rank);
            let comm = self
                .world
                .split_by_color_with_key(
                    Color::with_value(pos.group_id as i32),
                    pos.group_rank as i32,
                )
                .expect("a color was given");
            self.set_comms[i] = Some(comm);
        }
    }

    pub(super) fn mpi_buf_size(&self) -> usize {
        self.params.bytes("SCR_MPI_BUF_SIZE").unwrap_or(4 << 20) as usize
    }

    /// This rank's user files of a dataset with the sizes and meta the filemap records.
    pub(super) fn user_files_with_meta(&self, id: u64) -> Vec<(PathBuf, u64, Meta)> {
        self.user_files(id)
            .into_iter()
            .map(|f| {
                let meta = self.filemap.meta(id, self.rank, &f).unwrap_or_default();
                (PathBuf::from(f), meta.size().unwrap_or(0), meta)
            })
            .collect()
    }

    /// Protects a completed dataset with its descriptor's scheme, on every rank. Errs on
    /// every rank when any rank failed (the dataset is then not protected).
    pub(super) fn apply_redundancy(&mut self, id: u64) -> Result<()> {
        let ckpt = self
            .filemap
            .dataset(id, self.rank)
            .and_then(|d| d.checkpoint_id());
        let i = self.descriptor_index(ckpt);
        let reddesc = self.reddesc_for(ckpt);
        self.filemap.set_reddesc(id, self.rank, &reddesc);
        let result = match self.descriptors[i].scheme {
            Scheme::Single => Ok(()),
            Scheme::Partner => self.apply_partner(id, i),
            Scheme::Xor => self.apply_xor(id, i),
            Scheme::ReedSolomon => self.apply_rs(id, i),
        };
        if let Err(e) = &result {
            eprintln!(
                "SCR: ERROR: rank {}: applying {} to dataset {id}: {e}",
                self.rank, self.descriptors[i].scheme
            );
        }
        if comm::all_true(&self.world, result.is_ok()) {
            Ok(())
        } else {
            Err(failure(format!(
                "dataset {id} could not be protected by {} on every rank",
                self.descriptors[i].scheme
            )))
        }
    }

    /// PARTNER: send this rank's files to the right neighbour (stored under
    /// `.scr/partner.<owner rank>/` in its cache, tagged with the owner's node) while
    /// receiving the left neighbour's.
    fn apply_partner(&mut self, id: u64, i: usize) -> Result<()> {
        self.ensure_set_comm(i);
        let hop = self.descriptors[i].hop;
        let (left, right) = self.sets[i].neighbours(self.rank, hop);
        let (left_pos, right_pos) = (
            self.sets[i].position(left).group_rank as i32,
            self.sets[i].position(right).group_rank as i32,
        );
        let files = self.user_files_with_meta(id);
        let header = copy_header(&self.filemap, id, self.rank, &self.node_name, &files);
        let hidden = self.dataset_dir(id).join(".scr");
        let buf = self.mpi_buf_size();
        let comm = self.set_comms[i].as_ref().expect("made above");
        let (filemap, filemap_path) = (&mut self.filemap, &self.filemap_path);
        let mut received: Option<(u64, Vec<String>)> = None;
        let mut place = |h: &Hash| -> Result<Vec<(PathBuf, u64)>> {
            let (owner, placed) = place_copy(filemap, id, h, |owner, rel| {
                hidden.join(format!("partner.{owner}")).join(rel)
            })?;
            let tag = h.first_value("NODE").unwrap_or("unknown").to_string();
            filemap.set_tag(id, owner, PARTNER_TAG, &tag);
            filemap.write(filemap_path)?;
            received = Some((
                owner,
                placed
                    .iter()
                    .map(|(p, _)| p.to_string_lossy().into_owned())
                    .collect(),
            ));
            Ok(placed)
        };
        let result = shuffle::exchange(
            comm,
            Some(Outgoing {
                to: right_pos,
                header,
                files: files.iter().map(|(p, s, _)| (p.clone(), *s)).collect(),
            }),
            Some(Incoming {
                from: left_pos,
                place: &mut place,
            }),
            buf,
        );
        result?;
        let (owner, paths) =
            received.ok_or_else(|| failure("no copy arrived from the left neighbour"))?;
        mark_complete(&mut self.filemap, id, owner, &paths);
        self.filemap.write(&self.filemap_path)
    }

    /// XOR: this rank's parity file `.scr/xor.<set>_<pos+1>_of_<n>.scr`, computed with
    /// the ring of the manual: in n-1 steps each member adds its chunk for a target to what
    /// its left neighbour sent and passes it right; what arrives last is its own parity.
    fn apply_xor(&mut self, id: u64, i: usize) -> Result<()> {
        self.ensure_set_comm(i);
        let comm = self.set_comms[i].as_ref().expect("made above");
        let n = comm.size() as usize;
        let me = comm.rank() as usize;
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        let files = self.user_files_with_meta(id);
        let logical: u64 = files.iter().map(|(_, s, _)| s).sum();
        let chunk = xor::chunk_size(comm::max_u64(comm, logical), n as u64);
        let mine = MemberFiles {
            rank: self.rank,
            files: files.iter().map(|(_, _, m)| m.clone()).collect(),
        };
        let left_files =
            comm::ring_exchange_hash(comm, right as i32, left as i32, &mine.to_hash(true));
        let partner =
            MemberFiles::from_hash(&left_files, "left neighbour's file list").map_err(failure)?;
        let header = XorHeader {
            chunk,
            ranks: self.ranks,
            group: self.sets[i].members(self.rank).to_vec(),
            dataset: self.filemap.dataset(id, self.rank).unwrap_or_default(),
            current: mine,
            partner,
            failures: None,
            far_partners: Vec::new(),
        }
        .to_hash()
        .to_file_bytes();
        let pos = self.sets[i].position(self.rank);
        let name = layout::xor_file_name(pos.group_id, pos.group_rank, pos.group_size);
        let path = self.dataset_dir(id).join(".scr").join(&name);
        let key = path.to_string_lossy().into_owned();
        let mut meta = Meta::new();
        meta.set_filename(&name);
        meta.set_filetype(FileType::Xor);
        meta.set_size(header.len() as u64 + chunk);
        meta.set_ranks(self.ranks);
        meta.set_complete(false);
        let expected = self.filemap.expected_files(id, self.rank).unwrap_or(0);
        self.filemap.add_file(id, self.rank, &key);
        self.filemap.set_meta(id, self.rank, &key, &meta);
        self.filemap.set_expected_files(id, self.rank, expected + 1);
        self.filemap.write(&self.filemap_path)?;

        let buf = self.mpi_buf_size().min(chunk as usize).max(1);
        let mut failed: Option<Error> = None;
        let input = LogicalFile::open(
            &files
                .iter()
                .map(|(p, s, _)| (p.clone(), *s))
                .collect::<Vec<_>>(),
        );
        let output = create_with_header(&path, &header);
        let (input, output) = match (input, output) {
            (Ok(i), Ok(o)) => (Some(i), Some(o)),
            (i, o) => {
                failed = i.err().or(o.err());
                (None, None)
            }
        };
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        let mut send = vec![0u8; buf];
        let mut recv = vec![0u8; buf];
        let mut offset = 0u64;
        // keep the ring turning after a local failure, so no member hangs
        while offset < chunk {
            let len = (chunk - offset).min(buf as u64) as usize;
            recv[..len].fill(0);
            for step in 0..n - 1 {
                let target = (me + n - 1 - step) % n;
                let at = xor::chunk_for(me, target) as u64 * chunk + offset;
                if let Some(input) = &input
                    && let Err(e) = input.read_at(at, &mut send[..len])
                {
                    failed.get_or_insert(e);
                }
                xor::xor_into(&mut send[..len], &recv[..len]);
                mpi::point_to_point::send_receive_into(
                    &send[..len],
                    &comm.process_at_rank(right as i32),
                    &mut recv[..len],
                    &comm.process_at_rank(left as i32),
                );
            }
            crc.update(&recv[..len]);
            if let Some(out) = &output
                && let Err(e) = out.write_all_at(&recv[..len], header.len() as u64 + offset)
            {
                failed.get_or_insert(Error::io(&path, "write", e));
            }
            offset += len as u64;
        }
        if let Some(out) = &output
            && let Err(e) = out.sync_all()
        {
            failed.get_or_insert(Error::io(&path, "fsync", e));
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if self.params.bool("SCR_CRC_ON_COPY") {
            meta.set_crc32(crc.finalize());
        }
        meta.set_complete(true);
        self.filemap.set_meta(id, self.rank, &key, &meta);
        self.filemap.write(&self.filemap_path)
    }

    /// Reed–Solomon: `k` parity chunks per member over GF(2^8) ([`scr::erasure`]), each
    /// computed by an XOR-reduction of the contributors' pre-multiplied chunks to the
    /// member that holds it, piece by piece.
    fn apply_rs(&mut self, id: u64, i: usize) -> Result<()> {
        self.ensure_set_comm(i);
        let comm = self.set_comms[i].as_ref().expect("made above");
        let n = comm.size() as usize;
        let me = comm.rank() as usize;
        let code =
            StripeCode::reed_solomon(n, (self.descriptors[i].failures as usize).clamp(1, n - 1));
        let files = self.user_files_with_meta(id);
        let logical: u64 = files.iter().map(|(_, s, _)| s).sum();
        let chunk = xor::chunk_size_over(comm::max_u64(comm, logical), code.data_chunks() as u64);
        let mine = MemberFiles {
            rank: self.rank,
            files: files.iter().map(|(_, _, m)| m.clone()).collect(),
        };
        // every member's file list, so each header can carry its k left neighbours'
        let lists = comm::allgather_bytes(comm, &mine.to_hash(true).pack())
            .into_iter()
            .map(|b| {
                Hash::unpack(&b)
                    .map_err(|e| failure(format!("a member's file list: {e}")))
                    .and_then(|h| MemberFiles::from_hash(&h, "member file list").map_err(failure))
            })
            .collect::<Result<Vec<_>>>()?;
        let template = XorHeader {
            chunk,
            ranks: self.ranks,
            group: self.sets[i].members(self.rank).to_vec(),
            dataset: self.filemap.dataset(id, self.rank).unwrap_or_default(),
            current: mine,
            partner: MemberFiles {
                rank: 0,
                files: vec![],
            },
            failures: None,
            far_partners: Vec::new(),
        };
        let header = erasure::header_for(code, me, &lists, &template)
            .to_hash()
            .to_file_bytes();
        let pos = self.sets[i].position(self.rank);
        let name = layout::rs_file_name(pos.group_id, pos.group_rank, pos.group_size);
        let path = self.dataset_dir(id).join(".scr").join(&name);
        let key = path.to_string_lossy().into_owned();
        let mut meta = Meta::new();
        meta.set_filename(&name);
        meta.set_filetype(FileType::ReedSolomon);
        meta.set_size(header.len() as u64 + code.k as u64 * chunk);
        meta.set_ranks(self.ranks);
        meta.set_complete(false);
        let expected = self.filemap.expected_files(id, self.rank).unwrap_or(0);
        self.filemap.add_file(id, self.rank, &key);
        self.filemap.set_meta(id, self.rank, &key, &meta);
        self.filemap.set_expected_files(id, self.rank, expected + 1);
        self.filemap.write(&self.filemap_path)?;

        let mut failed: Option<Error> = None;
        let input = LogicalFile::open(
            &files
                .iter()
                .map(|(p, s, _)| (p.clone(), *s))
                .collect::<Vec<_>>(),
        );
        let output = create_with_header(&path, &header);
        let (input, output) = match (input, output) {
            (Ok(i), Ok(o)) => (Some(i), Some(o)),
            (i, o) => {
                failed = i.err().or(o.err());
                (None, None)
            }
        };
        let buf = self.mpi_buf_size().min(chunk as usize).max(1);
        let mut data = vec![0u8; buf];
        let mut send = vec![0u8; buf];
        let mut recv = vec![0u8; buf];
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        let mut parity = vec![0u8; code.k * chunk as usize];
        let mut offset = 0u64;
        // keep the reductions going after a local failure, so no member hangs
        while offset < chunk {
            let len = (chunk - offset).min(buf as u64) as usize;
            for stripe in 0..n {
                let role = code.role(me, stripe);
                if let (erasure::Role::Data { chunk: c, .. }, Some(input)) = (role, &input)
                    && let Err(e) = input.read_at(c as u64 * chunk + offset, &mut data[..len])
                {
                    failed.get_or_insert(e);
                }
                for slot in 0..code.k {
                    let holder = (0..n)
                        .find(|&m| code.role(m, stripe) == erasure::Role::Parity { slot })
                        .expect("every stripe has k holders");
                    send[..len].fill(0);
                    if let erasure::Role::Data { index, .. } = role {
                        erasure::gf::mul_add(
                            &mut send[..len],
                            &data[..len],
                            code.coefficient(slot, index),
                        );
                    }
                    let root = comm.process_at_rank(holder as i32);
                    if holder == me {
                        root.reduce_into_root(
                            &send[..len],
                            &mut recv[..len],
                            SystemOperation::bitwise_xor(),
                        );
                        let at = slot * chunk as usize + offset as usize;
                        parity[at..at + len].copy_from_slice(&recv[..len]);
                    } else {
                        root.reduce_into(&send[..len], SystemOperation::bitwise_xor());
                    }
                }
            }
            offset += len as u64;
        }
        for slot in 0..code.k {
            let at = slot * chunk as usize;
            let bytes = &parity[at..at + chunk as usize];
            crc.update(bytes);
            if let Some(out) = &output
                && let Err(e) = out.write_all_at(bytes, header.len() as u64 + at as u64)
            {
                failed.get_or_insert(Error::io(&path, "write", e));
            }
        }
        if let Some(out) = &output
            && let Err(e) = out.sync_all()
        {
            failed.get_or_insert(Error::io(&path, "fsync", e));
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if self.params.bool("SCR_CRC_ON_COPY") {
            meta.set_crc32(crc.finalize());
        }
        meta.set_complete(true);
        self.filemap.set_meta(id, self.rank, &key, &meta);
        self.filemap.write(&self.filemap_path)
    }
}

/// Creates a parity file (and its `.scr` directory) holding just its header.
pub(super) fn create_with_header(path: &Path, header: &[u8]) -> Result<std::fs::File> {
    io::create_dirs(path.parent().expect("in .scr"), 0o700)?;
    let f = std::fs::File::create(path).map_err(|e| Error::io(path, "create", e))?;
    f.write_all_at(header, 0)
        .map_err(|e| Error::io(path, "write", e))?;
    Ok(f)
}

/// What a copy of (id, rank) carries: its filemap entry, its owner and node, and the order
/// of the files that follow.
pub(super) fn copy_header(
    filemap: &Filemap,
    id: u64,
    rank: u64,
    node: &str,
    files: &[(PathBuf, u64, Meta)],
) -> Hash {
    let mut h = Hash::new();
    h.set_value("RANK", rank);
    h.set_value("NODE", node);
    let mut entry = filemap.entry_hash(id, rank).cloned().unwrap_or_default();
    entry.unset(PARTNER_TAG);
    h.set("ENTRY", entry);
    let order = h.child("ORDER");
    for (i, (path, _, _)) in files.iter().enumerate() {
        order.child(i.to_string()).child(path.to_string_lossy());
    }
    h
}

/// Records a received copy in `filemap` under its owner's rank, with every file marked
/// incomplete until it has arrived, and returns where its files go (`dest(owner, name)`
/// for each file's name relative to its dataset). Refuses names that escape the cache.
pub(super) fn place_copy(
    filemap: &mut Filemap,
    id: u64,
    h: &Hash,
    dest: impl Fn(u64, &str) -> PathBuf,
) -> Result<(u64, Vec<(PathBuf, u64)>)> {
    let owner = h
        .parsed::<u64>("RANK")
        .ok()
        .flatten()
        .ok_or_else(|| failure("the sender could not read its files"))?;
    let entry = h.get("ENTRY").cloned().unwrap_or_default();
    let mut old = Filemap::new();
    old.set_entry(id, owner, entry.clone());
    let count = h.get("ORDER").map_or(0, Hash::len);
    let mut new_entry = entry;
    new_entry.unset("FILE");
    let mut placed = Vec::with_capacity(count);
    let mut fresh = Filemap::new();
    fresh.set_entry(id, owner, new_entry);
    for i in 0..count {
        let src = h
            .get_path(&[&"ORDER", &i])
            .and_then(|x| x.keys().next())
            .ok_or_else(|| failure(format!("copy of rank {owner}: file {i} missing")))?;
        let mut meta = old
            .meta(id, owner, src)
            .ok_or_else(|| failure(format!("copy of rank {owner}: no meta data for {src}")))?;
        let rel = match meta.filetype() {
            Some(FileType::User) | None => meta.orig().or(meta.filename()),
            _ => None,
        }
        .map(str::to_string)
        .unwrap_or_else(|| format!(".scr/{}", meta.filename().unwrap_or("unnamed")));
        rank2file::check_relative(&rel).map_err(failure)?;
        let path = dest(owner, &rel);
        let size = meta.size().unwrap_or(0);
        meta.set_complete(false);
        let key = path.to_string_lossy().into_owned();
        fresh.add_file(id, owner, &key);
        fresh.set_meta(id, owner, &key, &meta);
        placed.push((path, size));
    }
    filemap.remove_rank_by_dataset(id, owner);
    filemap.merge(&fresh);
    Ok((owner, placed))
}

/// Marks received files complete.
pub(super) fn mark_complete(filemap: &mut Filemap, id: u64, owner: u64, paths: &[String]) {
    for p in paths {
        if let Some(mut meta) = filemap.meta(id, owner, p) {
            meta.set_complete(true);
            filemap.set_meta(id, owner, p, &meta);
        }
    }
}
