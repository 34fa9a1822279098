//! Applying a checkpoint's redundancy scheme once every rank has written it:
//! PARTNER sends each rank's files to its right neighbour in its set, XOR computes each
//! member's parity with the pipelined reduce-scatter ring (every data byte read once, the
//! XOR file written once, data moved in SCR_MPI_BUF_SIZE pieces).

use super::*;
use crate::shuffle::{self, Incoming, Outgoing};
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
            // every rank has the same scheme: nothing to agree on
            Scheme::Single => return Ok(()),
            Scheme::Partner => self.apply_partner(id, i),
            Scheme::Xor | Scheme::ReedSolomon => self.apply_parity(id, i),
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
            Err(Error::collective(format!(
                "dataset {id} could not be protected by {} on every rank",
                self.descriptors[i].scheme
            )))
        }
    }

    /// PARTNER: send this rank's files to the right neighbour (and, with REPLICAS=r, to the
    /// r nearest on the right; stored under `.scr/partner.<owner rank>/` in their caches,
    /// tagged with the owner's node) while receiving the left neighbours'.
    fn apply_partner(&mut self, id: u64, i: usize) -> Result<()> {
        self.ensure_set_comm(i);
        let set_size = self.sets[i].members(self.rank).len() as u64;
        let replicas = self.descriptors[i]
            .replicas
            .clamp(1, set_size.saturating_sub(1).max(1));
        for replica in 1..=replicas {
            self.send_partner_copy(id, i, self.descriptors[i].hop * replica)?;
        }
        Ok(())
    }

    /// One PARTNER copy: to the member `hop` places right, from the one `hop` places left.
    fn send_partner_copy(&mut self, id: u64, i: usize, hop: u64) -> Result<()> {
        let (left, right) = self.sets[i].neighbours(self.rank, hop);
        let (left_pos, right_pos) = (
            self.sets[i].position(left).group_rank as i32,
            self.sets[i].position(right).group_rank as i32,
        );
        let files = self.user_files_with_meta(id);
        let header = copy_header(&self.filemap, id, self.rank, &self.node_name, &files);
        let hidden = self.dataset_dir(id).join(".scr");
        let buf = self.mpi_buf_size();
        let comm = self.set_comms[i].as_ref().expect("made by apply_partner");
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
        shuffle::exchange(
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
        )?;
        let (owner, paths) =
            received.ok_or_else(|| failure("no copy arrived from the left neighbour"))?;
        mark_complete(&mut self.filemap, id, owner, &paths);
        self.filemap.write(&self.filemap_path)
    }

    /// XOR and Reed–Solomon: this rank's parity file (`.scr/xor.<set>_<pos+1>_of_<n>.scr`,
    /// `.scr/rs.…`) holds its `k` parity chunks ([`scr::erasure`]). Each slot is computed by
    /// the pipelined ring of the manual: in n-1 steps every member adds its (pre-multiplied)
    /// chunk for a target to what its left neighbour sent and passes it right, so what
    /// arrives last is its own parity; data moves in SCR_MPI_BUF_SIZE pieces, only between
    /// neighbours, nonblocking, while the next piece is read (double buffering).
    fn apply_parity(&mut self, id: u64, i: usize) -> Result<()> {
        self.ensure_set_comm(i);
        let comm = self.set_comms[i].as_ref().expect("made above");
        let n = comm.size() as usize;
        let me = comm.rank() as usize;
        let code = match self.descriptors[i].scheme {
            Scheme::ReedSolomon => {
                StripeCode::reed_solomon(n, (self.descriptors[i].failures as usize).clamp(1, n - 1))
            }
            _ => StripeCode::xor(n),
        };
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        let files = self.user_files_with_meta(id);
        let logical: u64 = files.iter().map(|(_, s, _)| s).sum();
        let chunk = xor::chunk_size(comm::max_u64(comm, logical), code.data_chunks() as u64);
        let mine = MemberFiles {
            rank: self.rank,
            files: files.iter().map(|(_, _, m)| m.clone()).collect(),
        };
        // every member's file list: each header carries its k left neighbours'
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
            current: mine.clone(),
            partner: mine,
            failures: None,
            far_partners: Vec::new(),
        };
        let header = erasure::header_for(code, me, &lists, &template)
            .to_hash()
            .to_file_bytes();
        let pos = self.sets[i].position(self.rank);
        let name = code.file_name(pos.group_id, pos.group_rank);
        let path = self.dataset_dir(id).join(".scr").join(&name);
        let key = path.to_string_lossy().into_owned();
        let mut meta = Meta::for_parity_file(
            &name,
            code.file_type(),
            header.len() as u64 + code.k as u64 * chunk,
            self.ranks,
        );
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
        // the ring's steps in order: (slot, offset in the chunk, piece length, step)
        let mut ops = Vec::new();
        for slot in 0..code.k {
            let mut offset = 0u64;
            while offset < chunk {
                let len = (chunk - offset).min(buf as u64) as usize;
                ops.extend((0..n - 1).map(|step| (slot, offset, len, step)));
                offset += len as u64;
            }
        }
        // what this member adds at a step: its chunk for the buffer's eventual holder
        let contribution = |&(slot, offset, _, step): &(usize, u64, usize, usize)| {
            let holder = (me + n - 1 - step) % n;
            match code.role(me, code.stripe_held(holder, slot)) {
                erasure::Role::Data { chunk: c, index } => {
                    Some((c as u64 * chunk + offset, code.coefficient(slot, index)))
                }
                erasure::Role::Parity { .. } => None,
            }
        };
        let read = |at: u64, into: &mut [u8]| input.as_ref().map(|f| f.read_at(at, into));
        let mut data = vec![0u8; buf];
        let mut next = vec![0u8; buf];
        let mut send = vec![0u8; buf];
        let mut recv = vec![0u8; buf];
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        if let Some(op) = ops.first()
            && let Some((at, _)) = contribution(op)
            && let Some(Err(e)) = read(at, &mut data[..op.2])
        {
            failed.get_or_insert(e);
        }
        // keep the ring turning after a local failure, so no member hangs; the next step's
        // chunk is read while this step's piece travels
        for (t, op) in ops.iter().enumerate() {
            let &(slot, offset, len, step) = op;
            if step == 0 {
                recv[..len].fill(0);
            }
            send[..len].copy_from_slice(&recv[..len]);
            if let Some((_, coefficient)) = contribution(op) {
                erasure::gf::mul_add(&mut send[..len], &data[..len], coefficient);
            }
            let prefetch = ops.get(t + 1).and_then(|o| Some((contribution(o)?.0, o.2)));
            let read_result = mpi::request::scope(|scope| {
                let sent = comm
                    .process_at_rank(right as i32)
                    .immediate_send(scope, &send[..len]);
                let received = comm
                    .process_at_rank(left as i32)
                    .immediate_receive_into(scope, &mut recv[..len]);
                let result = prefetch.and_then(|(at, l)| read(at, &mut next[..l]));
                received.wait();
                sent.wait();
                result
            });
            if let Some(Err(e)) = read_result {
                failed.get_or_insert(e);
            }
            std::mem::swap(&mut data, &mut next);
            if step == n - 2 {
                crc.update(&recv[..len]);
                let at = header.len() as u64 + slot as u64 * chunk + offset;
                if let Some(out) = &output
                    && let Err(e) = out.write_all_at(&recv[..len], at)
                {
                    failed.get_or_insert(Error::io(&path, "write", e));
                }
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

/// Creates a parity file (and its `.scr` directory, in the dataset's own) holding just its
/// header.
fn create_with_header(path: &Path, header: &[u8]) -> Result<std::fs::File> {
    let hidden = path.parent().expect("in .scr");
    safe_fs::create_dirs_in(hidden.parent().expect("in a dataset"), hidden, 0o700)?;
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
        let path = dest(owner, &cache_rel_path(&meta)?);
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

/// Where a file goes in a dataset's cache directory: a user file by the name it has on
/// the prefix, a redundancy file in `.scr/`. Refuses names that would escape.
pub(super) fn cache_rel_path(meta: &Meta) -> Result<String> {
    let rel = match meta.filetype() {
        Some(FileType::User) | None => meta.orig().or(meta.filename()),
        _ => None,
    }
    .map(str::to_string)
    .unwrap_or_else(|| format!(".scr/{}", meta.filename().unwrap_or("unnamed")));
    rank2file::check_relative(&rel).map_err(failure)?;
    Ok(rel)
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
