//! Applying a checkpoint's redundancy scheme once every rank has written it:
//! PARTNER sends each rank's files to its right neighbour in its set, XOR computes each
//! member's parity with the pipelined reduce-scatter ring (every data byte read once, the
//! XOR file written once, data moved in SCR_MPI_BUF_SIZE pieces).

use super::PARTNER_TAG;
use super::cache::CacheManager;
use super::descriptors::CkptDesc;
use super::job::Job;
use super::messages::CopyHeader;
use crate::shuffle::{self, Incoming, Outgoing};
use crate::{comm, phases};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use scr::erasure::{self, StripeCode};
use scr::filemap::Filemap;
use scr::hash::Hash;
use scr::meta::{FileType, Meta};
use scr::reddesc::{RedDesc, Scheme};
use scr::redset::RedundancySets;
use scr::xor::{self, MemberFiles, XorHeader};
use scr::{Error, Result, rank2file, safe_fs};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The checkpoint descriptors and the redundancy sets each chose in SCR_Init: which
/// descriptor a checkpoint takes, and applying its scheme (collective, with the set's
/// communicator the [`Job`] holds).
pub(super) struct Redundancy {
    pub(super) descriptors: Vec<CkptDesc>,
    /// Each descriptor's redundancy sets.
    pub(super) sets: Vec<RedundancySets>,
    /// SCR_MPI_BUF_SIZE: the piece size of the data moved between ranks.
    pub(super) mpi_buf: usize,
    /// SCR_CRC_ON_COPY: the parity file's CRC32 is computed as it is written.
    pub(super) crc_on_copy: bool,
}

impl Redundancy {
    /// The index of the descriptor for a dataset: an output one (`output`) takes the
    /// descriptor marked OUTPUT=1 if there is one; else a checkpoint takes the enabled one
    /// with the largest INTERVAL that divides its checkpoint id (output-only datasets,
    /// `None`, take the INTERVAL=1 one).
    pub(super) fn descriptor_index(&self, checkpoint_id: Option<u64>, output: bool) -> usize {
        if let Some(i) = self.descriptors.iter().position(|d| output && d.output) {
            return i;
        }
        let id = checkpoint_id.unwrap_or(1).max(1);
        self.descriptors
            .iter()
            .enumerate()
            .filter(|(_, d)| id.is_multiple_of(d.interval))
            .max_by_key(|(_, d)| d.interval)
            .map(|(i, _)| i)
            .expect("an INTERVAL=1 descriptor exists (checked in init)")
    }

    /// The descriptor for a checkpoint id (see [`Redundancy::descriptor_index`]).
    pub(super) fn descriptor_for(&self, checkpoint_id: Option<u64>, output: bool) -> &CkptDesc {
        &self.descriptors[self.descriptor_index(checkpoint_id, output)]
    }

    /// The stores the descriptors name, in descriptor order.
    pub(super) fn stores(&self) -> Vec<String> {
        self.descriptors.iter().map(|d| d.store.clone()).collect()
    }

    /// The redundancy descriptor of a checkpoint: its store, scheme and `rank`'s set.
    pub(super) fn reddesc_for(
        &self,
        checkpoint_id: Option<u64>,
        output: bool,
        cache: &CacheManager,
        rank: u64,
    ) -> RedDesc {
        let i = self.descriptor_index(checkpoint_id, output);
        let ckpt = &self.descriptors[i];
        let dir = cache.store_dir(&ckpt.store);
        let mut reddesc = RedDesc::create(
            true,
            ckpt.interval,
            false,
            &ckpt.store,
            &dir.to_string_lossy(),
            ckpt.scheme,
        );
        if ckpt.scheme != Scheme::Single {
            reddesc.set_position(self.sets[i].position(rank));
        }
        reddesc
    }

    /// Protects a completed dataset with its descriptor's scheme, on every rank. Errs on
    /// every rank when any rank failed (the dataset is then not protected). Collective.
    pub(super) fn apply(&self, job: &Job, cache: &mut CacheManager, id: u64) -> Result<()> {
        let ckpt = cache.checkpoint_of(id);
        let output = cache.dataset(id).is_output();
        let i = self.descriptor_index(ckpt, output);
        let reddesc = self.reddesc_for(ckpt, output, cache, job.rank);
        cache.filemap.set_reddesc(id, job.rank, &reddesc);
        let scheme = self.descriptors[i].scheme;
        let result = match scheme {
            // every rank has the same scheme: nothing to agree on
            Scheme::Single => return Ok(()),
            Scheme::Partner => self.apply_partner(job, cache, id, i),
            Scheme::Xor | Scheme::ReedSolomon => self.apply_parity(job, cache, id, i),
        };
        if let Err(e) = &result {
            say!(
                "SCR: ERROR: rank {}: applying {scheme} to dataset {id}: {e}",
                job.rank
            );
        }
        job.agree(
            result,
            &format!("dataset {id} could not be protected by {scheme} on every rank"),
        )
    }

    /// The communicator of this rank's set under descriptor `i`.
    fn set_comm<'j>(&self, job: &'j Job, i: usize) -> Result<&'j SimpleCommunicator> {
        job.set_comm(i).ok_or_else(|| Error::Config {
            origin: "SCR_Init".into(),
            what: format!(
                "no redundancy set was made for {} (checkpoint descriptor {i})",
                self.descriptors[i].scheme
            ),
        })
    }

    /// PARTNER: send this rank's files to the right neighbour (and, with REPLICAS=r, to the
    /// r nearest on the right; stored under `.scr/partner.<owner rank>/` in their caches,
    /// tagged with the owner's node) while receiving the left neighbours'. Collective.
    fn apply_partner(&self, job: &Job, cache: &mut CacheManager, id: u64, i: usize) -> Result<()> {
        let set_size = self.sets[i].members(job.rank).len() as u64;
        let replicas = self.descriptors[i]
            .replicas
            .clamp(1, set_size.saturating_sub(1).max(1));
        // every replica's exchange runs even after one failed here: its peers wait in it
        let mut first_error = None;
        for replica in 1..=replicas {
            let hop = self.descriptors[i].hop * replica;
            if let Err(e) = self.send_partner_copy(job, cache, id, i, hop, (true, true)) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One PARTNER copy: to the member `hop` places right, from the one `hop` places left,
    /// where `(send, receive)` say so. Collective over the set (every member calls it).
    pub(super) fn send_partner_copy(
        &self,
        job: &Job,
        cache: &mut CacheManager,
        id: u64,
        i: usize,
        hop: u64,
        (send, receive): (bool, bool),
    ) -> Result<()> {
        let comm = self.set_comm(job, i)?;
        let (left, right) = self.sets[i].neighbours(job.rank, hop);
        let (left_pos, right_pos) = (
            self.sets[i].position(left).group_rank as i32,
            self.sets[i].position(right).group_rank as i32,
        );
        let files = cache.user_files_with_meta(id);
        let header = copy_header(&cache.filemap, id, job.rank, job.node.name(), &files);
        let hidden = cache.dataset_dir(id).join(".scr");
        let mut received: Option<(u64, Vec<String>)> = None;
        let mut place = |h: &Hash| -> Result<Vec<shuffle::Placed>> {
            let header = read_copy_header(h)?;
            let (owner, placed) = place_copy(&mut cache.filemap, id, &header, |owner, rel| {
                hidden.join(format!("partner.{owner}")).join(rel)
            })?;
            cache.filemap.set_tag(id, owner, PARTNER_TAG, &header.node);
            cache.write()?;
            received = Some((
                owner,
                placed
                    .iter()
                    .map(|(p, _, _)| p.to_string_lossy().into_owned())
                    .collect(),
            ));
            Ok(placed)
        };
        shuffle::exchange(
            comm,
            send.then(|| Outgoing {
                to: right_pos,
                header,
                files: files.iter().map(|(p, s, _)| (p.clone(), *s)).collect(),
            }),
            receive.then_some(Incoming {
                from: left_pos,
                place: &mut place,
            }),
            self.mpi_buf,
        )?;
        if !receive {
            return Ok(());
        }
        let (owner, paths) =
            received.ok_or_else(|| Error::collective("no copy arrived from the left neighbour"))?;
        cache.mark_complete(id, owner, &paths)
    }

    /// XOR and Reed–Solomon: this rank's parity file (`.scr/xor.<set>_<pos+1>_of_<n>.scr`,
    /// `.scr/rs.…`) holds its `k` parity chunks ([`scr::erasure`]), computed by the
    /// pipelined ring of [`ParityRing`]: data moves in SCR_MPI_BUF_SIZE pieces, a window at
    /// a time, only between neighbours. Collective over the set.
    fn apply_parity(&self, job: &Job, cache: &mut CacheManager, id: u64, i: usize) -> Result<()> {
        let comm = self.set_comm(job, i)?;
        let rank = job.rank;
        let n = comm.size() as usize;
        let me = comm.rank() as usize;
        let code = match self.descriptors[i].scheme {
            Scheme::ReedSolomon => {
                StripeCode::reed_solomon(n, (self.descriptors[i].failures as usize).clamp(1, n - 1))
            }
            _ => StripeCode::xor(n),
        };
        let files = cache.user_files_with_meta(id);
        let logical: u64 = files.iter().map(|(_, s, _)| s).sum();
        let chunk = xor::chunk_size(comm::max_u64(comm, logical), code.data_chunks() as u64);
        let mine = MemberFiles {
            rank,
            files: files.iter().map(|(_, _, m)| m.clone()).collect(),
        };
        // each header carries its k left neighbours' file lists: this member's goes to the
        // k on its right (and header_for reads no other member's)
        let k = code.k;
        let right: Vec<i32> = (1..=k).map(|s| ((me + s) % n) as i32).collect();
        let left: Vec<i32> = (1..=k).map(|s| ((me + n - s) % n) as i32).collect();
        let mut lists = vec![mine.clone(); n];
        // a list that cannot be read fails this member after the ring, not before it: the
        // others would wait in the ring for it forever
        let mut unreadable: Option<Error> = None;
        let mut lap = phases::Lap::start();
        let packed = mine.to_hash(true).pack();
        for (bytes, &from) in comm::neighbour_bytes(comm, &packed, &right, &left)
            .iter()
            .zip(&left)
        {
            match Hash::unpack(bytes)
                .map_err(|e| Error::corrupt(format!("a member's file list: {e}")))
                .and_then(|h| {
                    MemberFiles::from_hash(&h, "member file list").map_err(Error::corrupt)
                }) {
                Ok(list) => lists[from as usize] = list,
                Err(e) => unreadable = Some(e),
            }
        }
        lap.lap("parity: file lists");
        // every file's CRC32 goes into the headers that carry its list, so that any rebuild
        // can be checked: the encode computes them on the way, and the header is written
        // over at the end (until then it carries placeholders)
        let template = XorHeader {
            chunk,
            ranks: job.ranks,
            group: self.sets[i].members(rank).to_vec(),
            dataset: cache.dataset(id),
            current: mine.clone(),
            partner: mine,
            failures: None,
            far_partners: Vec::new(),
        };
        let header = erasure::padded_header_bytes(
            code,
            me,
            &erasure::with_placeholders(&lists),
            &template,
            None,
        );
        let pos = self.sets[i].position(rank);
        let name = code.file_name(pos.group_id, pos.group_rank);
        let path = cache.dataset_dir(id).join(".scr").join(&name);
        let key = path.to_string_lossy().into_owned();
        let mut meta = Meta::for_parity_file(
            &name,
            code.file_type(),
            header.len() as u64 + code.k as u64 * chunk,
            job.ranks,
        );
        let expected = cache.filemap.expected_files(id, rank).unwrap_or(0);
        cache.filemap.add_file(id, rank, &key);
        cache.filemap.set_meta(id, rank, &key, &meta);
        cache.filemap.set_expected_files(id, rank, expected + 1);
        // (recorded before the file exists, so a crash leaves it known to be cleaned up; a
        // failure to record it fails this member after the ring, which the others wait in)
        let recorded = cache
            .write()
            .and_then(|()| super::fault::point("encode", rank));
        let input = shuffle::SourceFiles::open(
            &files
                .iter()
                .map(|(p, s, _)| (p.clone(), *s))
                .collect::<Vec<_>>(),
        );
        let output = create_with_header(&path, &header);
        lap.lap("parity: create");
        let ring = ParityRing {
            comm,
            code,
            me,
            chunk,
            piece: self.mpi_buf.min(chunk as usize).max(1),
        };
        let sizes: Vec<u64> = files.iter().map(|(_, s, _)| *s).collect();
        let mut own_crcs = erasure::FileCrcs::new(&sizes, chunk);
        let encoded = ring.encode(
            input,
            output,
            self.crc_on_copy,
            &header,
            &path,
            &mut own_crcs,
        );
        lap.lap("parity: ring");
        // the files' CRCs to the members whose headers carry this member's list (every
        // member takes part, whatever happened to it in the ring)
        let crcs = own_crcs.finish();
        let packed: Vec<u8> = crcs.iter().flat_map(|c| c.to_le_bytes()).collect();
        let mut mismatch = None;
        for (bytes, &from) in comm::neighbour_bytes(comm, &packed, &right, &left)
            .iter()
            .zip(&left)
        {
            let theirs = &mut lists[from as usize].files;
            if bytes.len() != 4 * theirs.len() {
                // a header left with placeholders would fail every rebuild's check later
                mismatch.get_or_insert(Error::corrupt(format!(
                    "set member {from} sent {} CRC32s for the {} files its list holds",
                    bytes.len() / 4,
                    theirs.len()
                )));
                continue;
            }
            for (m, c) in theirs.iter_mut().zip(bytes.chunks_exact(4)) {
                m.set_crc32(u32::from_le_bytes(c.try_into().expect("4 bytes")));
            }
        }
        for (m, c) in lists[me].files.iter_mut().zip(&crcs) {
            m.set_crc32(*c);
        }
        lap.lap("parity: crcs");
        let (output, slots) = encoded?;
        if let Some(e) = unreadable.or(mismatch) {
            return Err(e);
        }
        recorded?;
        let first = header.len();
        let header = erasure::parity_header_bytes(code, me, &lists, &template);
        if header.len() != first {
            return Err(Error::corrupt(format!(
                "{}: the header with the files' CRCs is {} bytes, not the {first} written",
                path.display(),
                header.len()
            )));
        }
        write_final_header(&output, &header, &path)?;
        lap.lap("parity: header+fsync");
        for ((f, _, _), c) in files.iter().zip(&crcs) {
            let key = f.to_string_lossy();
            if let Some(mut m) = cache.filemap.meta(id, rank, &key) {
                m.set_crc32(*c);
                cache.filemap.set_meta(id, rank, &key, &m);
            }
        }
        if let Some(slots) = slots {
            let mut crc = crc32fast::Hasher::new();
            crc.update(&header);
            for slot in &slots {
                crc.combine(slot);
            }
            meta.set_crc32(crc.finalize());
        }
        meta.set_complete(true);
        cache.filemap.set_meta(id, rank, &key, &meta);
        let written = cache.write();
        lap.lap("parity: filemap");
        written
    }
}

/// How much data the parity ring reads at a time and adds to its sums while it is in the
/// processor's cache (per core L2 caches hold a few hundred KiB).
pub(super) const CACHE_BLOCK: usize = 128 << 10;

/// One member's part in computing its set's parity: a pipelined ring over the set's
/// communicator in which the sums travel only through the members that add to them.
///
/// A stripe's k parity holders are consecutive members, and its n-k data members follow
/// them (see [`StripeCode::role`]). So in each of n-k steps every member adds its data to
/// the k sums of one stripe (the stripe whose data members it is the step-th of) and
/// passes them right; after the last step the sum of slot s goes s+1 places right, to the
/// member that holds it. Each member thus sends k x SIZE bytes, the least any code
/// tolerating k losses can move (every parity element needs all n-k data elements of its
/// stripe); running XOR's n-1 step ring for each slot instead, through the members that
/// only pass a sum on, moved (n-1)/(n-k) times as much: 3 x SIZE instead of 2 for
/// Reed–Solomon with 2 failures in sets of 4. For XOR (k = 1) both are the same ring.
///
/// Every chunk is cut in pieces of at most `piece` bytes, and a window of pieces
/// ([`shuffle::pieces_in_flight`]) travels together.
struct ParityRing<'c> {
    comm: &'c SimpleCommunicator,
    code: StripeCode,
    me: usize,
    chunk: u64,
    piece: usize,
}

impl ParityRing<'_> {
    /// What this member adds at `step`: the logical offset of its data chunk in the stripe
    /// it works on then and the chunk's index among the stripe's data (none where the
    /// layout would make it a parity holder, which the ring's order rules out).
    fn contribution(&self, step: usize) -> Option<(u64, usize)> {
        let n = self.code.n;
        let stripe = (self.me + 2 * n - self.code.k - step) % n;
        match self.code.role(self.me, stripe) {
            erasure::Role::Data { chunk, index } => Some((chunk as u64 * self.chunk, index)),
            erasure::Role::Parity { .. } => None,
        }
    }

    /// Runs the ring, writing this member's parity after `header` in `output`, and returns
    /// the parity file's CRC32 when asked (`with_crc`, SCR_CRC_ON_COPY). The data is read
    /// from the files with plain reads as it is added. A member that cannot read its data or
    /// write its file keeps the ring turning (so no member hangs) and returns its error at
    /// the end.
    fn encode(
        &self,
        input: Result<shuffle::SourceFiles>,
        output: Result<std::fs::File>,
        with_crc: bool,
        header: &[u8],
        path: &Path,
        own: &mut erasure::FileCrcs,
    ) -> Result<(std::fs::File, Option<Vec<crc32fast::Hasher>>)> {
        let (n, k) = (self.code.n, self.code.k);
        let mut failed: Option<Error> = None;
        let (input, output) = match (input, output) {
            (Ok(i), Ok(o)) => (Some(i), Some(o)),
            (i, o) => {
                failed = i.err().or(o.err());
                (None, None)
            }
        };
        // (the k sums of a piece travel together: the window holds 8 MiB of sums)
        let window = shuffle::pieces_in_flight(self.piece * k);
        // the sum of piece j, slot s is at (j * k + s) * piece
        let span = window * k * self.piece;
        let (mut send, mut recv) = (vec![0u8; span], vec![0u8; span]);
        // the data is read a block at a time into a buffer that stays in the processor's
        // cache while the block is added to each slot's sum: reading a whole piece first
        // and adding it after sent every byte through memory twice more (the read's copy
        // out, the kernel's read back)
        let block = CACHE_BLOCK.min(self.piece);
        let mut scratch = vec![0u8; block];
        // the file is the header, then slot 0's chunk, slot 1's…: one CRC per slot, joined
        // in that order at the end
        let mut crcs = with_crc.then(|| vec![crc32fast::Hasher::new(); k]);
        let offsets: Vec<u64> = (0..self.chunk).step_by(self.piece).collect();
        for first in offsets.chunks(window) {
            let pieces: Vec<(u64, usize)> = first
                .iter()
                .map(|&o| (o, (self.chunk - o).min(self.piece as u64) as usize))
                .collect();
            for step in 0..n - k {
                let mine = self.contribution(step);
                // the sums start at zero: the first step sends the data times its
                // coefficient (XOR's data is read straight into what is sent), with no sum
                // to zero and read back
                let first_step = step == 0;
                let kernel_started = std::time::Instant::now();
                let mut reading = std::time::Duration::ZERO;
                for (j, &(offset, len)) in pieces.iter().enumerate() {
                    for from in (0..len).step_by(block) {
                        let blen = (len - from).min(block);
                        let read_started = std::time::Instant::now();
                        let data = match (mine, &input) {
                            (Some((at, index)), Some(d))
                                if first_step && k == 1 && self.code.coefficient(0, index) == 1 =>
                            {
                                let at = at + offset + from as u64;
                                let out = &mut send[j * self.piece + from..][..blen];
                                d.read_at(at, out);
                                own.update(at, out);
                                reading += read_started.elapsed();
                                continue;
                            }
                            (Some((at, index)), Some(d)) => {
                                let at = at + offset + from as u64;
                                let bytes = d.bytes(at, blen, &mut scratch);
                                own.update(at, bytes);
                                Some((bytes, index))
                            }
                            _ => None,
                        };
                        reading += read_started.elapsed();
                        for slot in 0..k {
                            let at = (j * k + slot) * self.piece + from;
                            let out = &mut send[at..at + blen];
                            match (data, first_step) {
                                (Some((data, index)), true) => erasure::gf::scaled(
                                    out,
                                    data,
                                    self.code.coefficient(slot, index),
                                ),
                                (Some((data, index)), false) => erasure::gf::sum_mul_add(
                                    out,
                                    &recv[at..at + blen],
                                    data,
                                    self.code.coefficient(slot, index),
                                ),
                                (None, true) => out.fill(0),
                                (None, false) => out.copy_from_slice(&recv[at..at + blen]),
                            }
                        }
                    }
                }
                phases::add("parity: read", reading);
                phases::add("parity: kernel", kernel_started.elapsed() - reading);
                let mpi_started = std::time::Instant::now();
                // the last step delivers each slot to its holder, s+1 places right, and
                // this member's own slots arrive from s+1 places left
                let last = step + 1 == n - k;
                let route = |slot: usize| {
                    let hop = if last { slot + 1 } else { 1 };
                    ((self.me + hop) % n, (self.me + n - hop) % n)
                };
                mpi::request::scope(|scope| {
                    let mut requests = Vec::with_capacity(2 * k * pieces.len());
                    // piece by piece, slot by slot: the buffers' order
                    let slots = pieces
                        .iter()
                        .flat_map(|&(_, len)| (0..k).map(move |s| (s, len)));
                    for ((slot, len), (out, sum)) in
                        slots.zip(send.chunks(self.piece).zip(recv.chunks_mut(self.piece)))
                    {
                        let (to, from) = route(slot);
                        requests.push(
                            self.comm
                                .process_at_rank(to as i32)
                                .immediate_send(scope, &out[..len]),
                        );
                        requests.push(
                            self.comm
                                .process_at_rank(from as i32)
                                .immediate_receive_into(scope, &mut sum[..len]),
                        );
                    }
                    comm::wait_all(requests);
                });
                phases::add("parity: mpi", mpi_started.elapsed());
            }
            let write_started = std::time::Instant::now();
            for (j, &(offset, len)) in pieces.iter().enumerate() {
                for slot in 0..k {
                    let at = (j * k + slot) * self.piece;
                    let parity = &recv[at..at + len];
                    if let Some(c) = &mut crcs {
                        c[slot].update(parity);
                    }
                    let at = header.len() as u64 + slot as u64 * self.chunk + offset;
                    if let Some(out) = &output
                        && let Err(e) = out.write_all_at(parity, at)
                    {
                        failed.get_or_insert(Error::io(path, "write", e));
                    }
                }
            }
            phases::add("parity: write", write_started.elapsed());
        }
        if let Some(e) = input.as_ref().and_then(shuffle::SourceFiles::take_error) {
            failed.get_or_insert(e);
        }
        match (failed, output) {
            (Some(e), _) => Err(e),
            (None, Some(out)) => Ok((out, crcs)),
            (None, None) => Err(Error::io(
                path,
                "create",
                std::io::Error::other("the parity file was never opened"),
            )),
        }
    }
}

/// Writes a parity file's final header over the one it was created with (the same size:
/// the parity after it stays where it is), then makes the file durable.
fn write_final_header(output: &std::fs::File, header: &[u8], path: &Path) -> Result<()> {
    output
        .write_all_at(header, 0)
        .map_err(|e| Error::io(path, "write", e))?;
    output.sync_all().map_err(|e| Error::io(path, "fsync", e))
}

/// Creates a parity file (and its `.scr` directory, in the dataset's own) holding just its
/// header.
fn create_with_header(path: &Path, header: &[u8]) -> Result<std::fs::File> {
    let hidden = path.parent().expect("in .scr");
    safe_fs::create_dirs_in(
        hidden.parent().expect("in a dataset"),
        hidden,
        scr::layout::DIR_MODE,
    )?;
    // parity holds the bytes of every member's files: the user's alone
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(path, "create", e))?;
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
    let mut entry = filemap.entry_hash(id, rank).cloned().unwrap_or_default();
    entry.unset(PARTNER_TAG);
    CopyHeader {
        rank,
        node: node.to_string(),
        entry,
        order: files
            .iter()
            .map(|(path, _, _)| path.to_string_lossy().into_owned())
            .collect(),
    }
    .to_hash()
}

/// Reads a received copy's header (see [`CopyHeader`]).
pub(super) fn read_copy_header(h: &Hash) -> Result<CopyHeader> {
    CopyHeader::from_hash(h).map_err(|e| Error::corrupt(format!("a copy's header: {e}")))
}

/// Records a received copy in `filemap` under its owner's rank, with every file marked
/// incomplete until it has arrived, and returns where its files go (`dest(owner, name)`
/// for each file's name relative to its dataset). Refuses names that escape the cache.
pub(super) fn place_copy(
    filemap: &mut Filemap,
    id: u64,
    header: &CopyHeader,
    dest: impl Fn(u64, &str) -> PathBuf,
) -> Result<(u64, Vec<shuffle::Placed>)> {
    let owner = header.rank;
    let mut old = Filemap::new();
    old.set_entry(id, owner, header.entry.clone());
    let mut new_entry = header.entry.clone();
    new_entry.unset("FILE");
    let mut placed = Vec::with_capacity(header.order.len());
    let mut fresh = Filemap::new();
    fresh.set_entry(id, owner, new_entry);
    for src in &header.order {
        let mut meta = old.meta(id, owner, src).ok_or_else(|| {
            Error::corrupt(format!("copy of rank {owner}: no meta data for {src}"))
        })?;
        let path = dest(owner, &cache_rel_path(&meta)?);
        let size = meta.size().unwrap_or(0);
        meta.set_complete(false);
        let key = path.to_string_lossy().into_owned();
        fresh.add_file(id, owner, &key);
        fresh.set_meta(id, owner, &key, &meta);
        placed.push((path, size, meta.mode()));
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
    rank2file::check_relative(&rel).map_err(Error::refused)?;
    Ok(rel)
}
