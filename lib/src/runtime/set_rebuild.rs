//! Rebuilding the lost members of XOR and Reed–Solomon sets in SCR_Init: the members of each
//! set that lost some trade their parity headers (which record every member's files), each
//! lost member recreates its files and parity file empty (recorded in its filemap first),
//! and every stripe element it had is summed back along a chain of the survivors that
//! contribute to it ([`scr::erasure`] gives the weights), ending at the lost member.

use super::messages::{MemberDescription, SetRebuild};
use super::rebuild::Recovery;
use super::redundancy::{CACHE_BLOCK, cache_rel_path};
use crate::comm;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use scr::erasure::{self, MemberStore, StripeCode};
use scr::meta::Meta;
use scr::reddesc::RedDesc;
use scr::xor::{MemberFiles, XorHeader};
use scr::{Error, Result, io, layout, safe_fs};
use std::path::PathBuf;

/// What the members of one set agree on before rebuilding it.
struct SetView {
    code: StripeCode,
    /// This rank's position in the set, and the lost positions.
    me: usize,
    lost: Vec<usize>,
    /// A survivor's parity header: the chunk size and dataset every member shares.
    template: XorHeader,
    /// Every member's files, as the survivors' headers record them.
    lists: Vec<MemberFiles>,
    /// A member's redundancy descriptor, the model for a lost member's.
    reddesc: Option<RedDesc>,
    /// This rank's parity file when it survived: path, header, where the parity starts.
    survivor: Option<(PathBuf, XorHeader, u64)>,
}

impl SetView {
    fn am_lost(&self) -> bool {
        self.lost.contains(&self.me)
    }
}

impl Recovery<'_> {
    /// Rebuilds the lost members of each listed set, every set at once (a communicator
    /// each; ranks of no listed set return at once). Collective. A rebuilt member checks
    /// its files against the CRCs their headers record as it writes them: returns whether
    /// it did (the caller need not read them back).
    pub(super) fn rebuild_sets(&mut self, d: u64, sets: &[SetRebuild]) -> Result<bool> {
        let rank = self.job.rank;
        let mine = sets
            .iter()
            .enumerate()
            .find(|(_, s)| s.members.contains(&rank));
        let color = mine.map_or(Color::undefined(), |(i, _)| Color::with_value(i as i32));
        let key = mine.map_or(0, |(_, s)| {
            s.members.iter().position(|&r| r == rank).unwrap_or(0) as i32
        });
        let comm = self.job.world().split_by_color_with_key(color, key);
        let (Some(comm), Some((_, set))) = (comm, mine) else {
            return Ok(false);
        };
        // what every member learns from the others is the same on all of them, so an error
        // there is every member's
        let view = self.describe_set(d, &comm, set)?;
        // an error in this member's own files is kept: it still takes its part in every
        // chain (adding and writing nothing), so no member waits for it, and returns it
        let opened = if view.am_lost() {
            self.recreate_member(d, &view)
        } else {
            self.open_survivor(d, &view)
                .map(|store| (store, Vec::new()))
        };
        let chains = RebuildChains {
            comm: &comm,
            code: view.code,
            me: view.me,
            chunk: view.template.chunk,
            piece: self
                .redundancy
                .mpi_buf
                .min(CHAIN_PIECE)
                .min(view.template.chunk as usize)
                .max(1),
        };
        let (store, keys) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                // the chains' own errors (the weights) are every member's, like the view's
                chains.run(None, &view.lost, None)?;
                return Err(e);
            }
        };
        let files = &view.lists[view.me].files;
        let mut written = view.am_lost().then(|| {
            let sizes: Vec<u64> = files.iter().map(|m| m.size().unwrap_or(0)).collect();
            erasure::FileCrcs::new(&sizes, view.template.chunk)
        });
        chains.run(Some(&store), &view.lost, written.as_mut())?;
        let Some(written) = written else {
            return Ok(false);
        };
        store.sync()?;
        for (meta, crc) in files.iter().zip(written.finish()) {
            if meta.crc32().is_some_and(|recorded| recorded != crc) {
                return Err(Error::corrupt(format!(
                    "rebuilt file {} does not match the CRC32 recorded when it was written",
                    meta.filename().unwrap_or("?")
                )));
            }
        }
        store.commit()?;
        self.cache.mark_complete(d, rank, &keys)?;
        Ok(true)
    }

    /// Every member's parity header (the lost send none) and redundancy descriptor, traded
    /// over the set's communicator.
    fn describe_set(&self, d: u64, comm: &SimpleCommunicator, set: &SetRebuild) -> Result<SetView> {
        let n = set.members.len();
        let me = comm.rank() as usize;
        let lost: Vec<usize> = set
            .lost
            .iter()
            .filter_map(|l| set.members.iter().position(|r| r == l))
            .collect();
        // a survivor without its parity file sends no header: the others still hear from it
        let survivor = if lost.contains(&me) {
            None
        } else {
            self.cache.parity_file(d)
        };
        let mine = MemberDescription {
            header: survivor.as_ref().map(|(_, header, _)| header.clone()),
            reddesc: self.cache.filemap.reddesc(d, self.job.rank),
        };
        // every member decodes the same descriptions: one that does not decode fails the
        // rebuild on every member alike, said
        let described: Vec<MemberDescription> = comm::allgather_bytes(comm, &mine.to_bytes())
            .iter()
            .enumerate()
            .map(|(pos, b)| {
                MemberDescription::from_bytes(b)
                    .map_err(|e| Error::corrupt(format!("set member {pos}'s description: {e}")))
            })
            .collect::<Result<_>>()?;
        let headers: Vec<Option<XorHeader>> = described.iter().map(|m| m.header.clone()).collect();
        let template = headers
            .iter()
            .flatten()
            .next()
            .ok_or_else(|| Error::corrupt("no surviving member sent its parity header"))?
            .clone();
        // the code that wrote the parity, as its headers record it (a Reed–Solomon set
        // that tolerates one failure is not XOR: its weights differ)
        let code = match template.failures {
            Some(k) => StripeCode::reed_solomon(n, k as usize),
            None => StripeCode::xor(n),
        };
        let lists = (0..n)
            .map(|pos| {
                erasure::member_files(&headers, pos, code.k).ok_or_else(|| {
                    Error::corrupt(format!("no surviving header records member {pos}'s files"))
                })
            })
            .collect::<Result<_>>()?;
        let reddesc = described.into_iter().find_map(|m| m.reddesc);
        Ok(SetView {
            code,
            me,
            lost,
            template,
            lists,
            reddesc,
            survivor,
        })
    }

    /// A surviving member's files and parity file, opened for reading.
    fn open_survivor(&self, d: u64, view: &SetView) -> Result<MemberStore> {
        let (path, _, offset) = view.survivor.clone().ok_or_else(|| {
            Error::corrupt(format!(
                "dataset {d}: no parity file of this rank's set is in cache"
            ))
        })?;
        let files: Vec<(PathBuf, u64)> = self
            .cache
            .user_files_with_meta(d)
            .into_iter()
            .map(|(p, s, _)| (p, s))
            .collect();
        let layout = (view.code, view.me, view.template.chunk);
        MemberStore::open(layout, &files, &path, offset, None)
    }

    /// A lost member's files and parity file, recorded in its filemap (incomplete) before
    /// they are created empty; returns the store and the filemap keys to mark complete.
    fn recreate_member(&mut self, d: u64, view: &SetView) -> Result<(MemberStore, Vec<String>)> {
        let (code, me, chunk) = (view.code, view.me, view.template.chunk);
        let (rank, ranks) = (self.job.rank, self.job.ranks);
        self.job.debug_rank(
            1,
            format_args!(
                "Rebuilding files of dataset {d} from {} segments",
                match code.kind {
                    scr::erasure::CodeKind::Xor => "XOR",
                    scr::erasure::CodeKind::ReedSolomon => "Reed-Solomon",
                }
            ),
        );
        let mut reddesc = view
            .reddesc
            .clone()
            .ok_or_else(|| Error::corrupt("no member sent its redundancy descriptor"))?;
        let mut pos = reddesc
            .position()
            .ok_or_else(|| Error::corrupt("its redundancy descriptor records no set position"))?;
        pos.group_rank = me as u64;
        reddesc.set_position(pos);
        let store_dir = self.cache.store_dir(reddesc.store().unwrap_or("/tmp"));
        reddesc.set_directory(&store_dir.to_string_lossy());
        let base = layout::cache_dataset_dir(&store_dir, d);
        let map = &mut self.cache.filemap;
        map.set_dataset(d, rank, &view.template.dataset);
        map.set_reddesc(d, rank, &reddesc);
        let mut files = Vec::new();
        let mut keys = Vec::new();
        for meta in &view.lists[me].files {
            let path = base.join(cache_rel_path(meta)?);
            let key = path.to_string_lossy().into_owned();
            let mut m = meta.clone();
            m.set_complete(false);
            map.add_file(d, rank, &key);
            map.set_meta(d, rank, &key, &m);
            files.push((path, meta.size().unwrap_or(0)));
            keys.push(key);
        }
        let header = erasure::parity_header_bytes(code, me, &view.lists, &view.template);
        let name = code.file_name(pos.group_id, me as u64);
        let parity_path = base.join(".scr").join(&name);
        let parity_key = parity_path.to_string_lossy().into_owned();
        let meta = Meta::for_parity_file(
            &name,
            code.file_type(),
            header.len() as u64 + code.k as u64 * chunk,
            ranks,
        );
        map.add_file(d, rank, &parity_key);
        map.set_meta(d, rank, &parity_key, &meta);
        map.set_expected_files(d, rank, files.len() as u64 + 1);
        self.cache.write()?;
        let hidden = parity_path.parent().expect("in .scr");
        safe_fs::create_dirs_in(
            hidden.parent().expect("in a dataset"),
            hidden,
            scr::layout::DIR_MODE,
        )?;
        // what a damaged copy left under these names in this node's own cache goes first:
        // a rebuild recreates files, it never writes into one
        for path in files.iter().map(|(p, _)| p).chain([&parity_path]) {
            io::remove_if_present(path)?;
        }
        keys.push(parity_key);
        let store = MemberStore::create((code, me, chunk), &files, &parity_path, &header, None)?;
        store
            .data
            .set_modes(view.lists[me].files.iter().map(Meta::mode))?;
        Ok((store, keys))
    }
}

/// The largest piece a chain moves, [`CHAIN_WINDOW`] at a time. Every member after the
/// first waits for a whole batch before adding to it, so the lost member hears nothing
/// until a batch has crossed every hop: a chain of four members with 8 MiB batches (the
/// encode's window) spent a third of a 64 MiB rebuild filling the pipeline; 2 MiB batches
/// measured a fifth faster at 64 and 256 MiB, and smaller ones no faster.
const CHAIN_PIECE: usize = 512 << 10;
const CHAIN_WINDOW: usize = 4;

/// One lost stripe element summed along its chain: the survivors that contribute, in set
/// order starting after the lost member, then the lost member.
struct ChainTask {
    chain: Vec<usize>,
    stripe: usize,
    /// This member's weight in the sum (none: it only passes the sum on, or receives it).
    weight: Option<u8>,
}

/// One member's part in rebuilding its set: each lost element's pieces travel its chain,
/// every survivor adding its weighted element to what its predecessor sent. Elements whose
/// chains run through the same members (with XOR, all of them) stream as one sequence, a
/// batch of pieces ([`CHAIN_WINDOW`] of at most [`CHAIN_PIECE`]) at a time, so the pipeline
/// never drains between them.
struct RebuildChains<'c> {
    comm: &'c SimpleCommunicator,
    code: StripeCode,
    me: usize,
    chunk: u64,
    piece: usize,
}

impl RebuildChains<'_> {
    /// Runs every chain this member is on; a member that cannot read or write keeps its
    /// chains moving (so none hangs) and returns its error at the end.
    /// A lost member passes `written` to have the CRCs of its files computed as it writes
    /// their pieces.
    fn run(
        &self,
        store: Option<&MemberStore>,
        lost: &[usize],
        mut written: Option<&mut erasure::FileCrcs>,
    ) -> Result<()> {
        let n = self.comm.size() as usize;
        let mut tasks = Vec::new();
        for stripe in 0..n {
            let weights = self
                .code
                .rebuild_weights(stripe, lost)
                .map_err(Error::corrupt)?;
            for (l, from) in weights {
                let chain: Vec<usize> = (1..n)
                    .map(|step| (l + step) % n)
                    .filter(|m| from.iter().any(|(x, w)| x == m && *w != 0))
                    .chain(std::iter::once(l))
                    .collect();
                let weight = from.iter().find(|(m, _)| *m == self.me).map(|(_, w)| *w);
                tasks.push(ChainTask {
                    chain,
                    stripe,
                    weight,
                });
            }
        }
        let mut failed: Option<Error> = None;
        // every member groups the same tasks the same way: consecutive ones on one chain
        for group in tasks.chunk_by(|a, b| a.chain == b.chain) {
            if let Some(place) = group[0].chain.iter().position(|&m| m == self.me) {
                self.stream(group, place, store, written.as_deref_mut(), &mut failed);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// The pieces of a group of tasks on one chain, this member at `place` on it.
    fn stream(
        &self,
        group: &[ChainTask],
        place: usize,
        store: Option<&MemberStore>,
        mut written: Option<&mut erasure::FileCrcs>,
        failed: &mut Option<Error>,
    ) {
        let chain = &group[0].chain;
        let previous = place
            .checked_sub(1)
            .map(|p| self.comm.process_at_rank(chain[p] as i32));
        let following = chain
            .get(place + 1)
            .map(|&m| self.comm.process_at_rank(m as i32));
        // (task, offset in its element, length)
        let pieces: Vec<(&ChainTask, u64, usize)> = group
            .iter()
            .flat_map(|t| {
                (0..self.chunk)
                    .step_by(self.piece)
                    .map(move |o| (t, o, (self.chunk - o).min(self.piece as u64) as usize))
            })
            .collect();
        let window = CHAIN_WINDOW;
        let batches: Vec<_> = pieces.chunks(window).collect();
        // the batch being summed here, and the next one arriving while this one leaves
        let mut sums = vec![0u8; window * self.piece];
        let mut arriving = vec![0u8; window * self.piece];
        // read a cache-sized block at a time and add it while it is in the processor's
        // cache, as the encode does
        let block = CACHE_BLOCK.min(self.piece);
        let mut element = vec![0u8; block];
        if let Some(p) = &previous
            && let Some(first) = batches.first()
        {
            mpi::request::scope(|scope| {
                comm::wait_all(receive_batch(p, scope, &mut sums, first, self.piece))
            });
        }
        // the chain's first member starts each sum: its weighted element, read straight into
        // the sum when the weight is 1 (no zeroed sum to add to)
        let starts = previous.is_none();
        for (b, batch) in batches.iter().enumerate() {
            let batch: &[(&ChainTask, u64, usize)] = batch;
            for (sum, &(task, offset, len)) in sums.chunks_mut(self.piece).zip(batch) {
                let sum = &mut sum[..len];
                let (Some(w), Some(store)) = (task.weight, store) else {
                    if starts {
                        sum.fill(0);
                    }
                    continue;
                };
                if starts && w == 1 {
                    if let Err(e) = store.read_element(task.stripe, offset, sum) {
                        failed.get_or_insert(e);
                    }
                    continue;
                }
                for from in (0..len).step_by(block) {
                    let blen = (len - from).min(block);
                    let added = store
                        .read_element(task.stripe, offset + from as u64, &mut element[..blen])
                        .map(|()| &element[..blen]);
                    let sum = &mut sum[from..from + blen];
                    match added {
                        Ok(src) if starts => erasure::gf::scaled(sum, src, w),
                        Ok(src) => erasure::gf::mul_add(sum, src, w),
                        Err(e) => {
                            failed.get_or_insert(e);
                            if starts {
                                sum.fill(0);
                            }
                        }
                    }
                }
            }
            let next = batches.get(b + 1).filter(|_| previous.is_some());
            mpi::request::scope(|scope| {
                // this batch leaves while the next one arrives
                let sends: Vec<_> = match &following {
                    Some(f) => sums
                        .chunks(self.piece)
                        .zip(batch)
                        .map(|(sum, &(_, _, len))| f.immediate_send(scope, &sum[..len]))
                        .collect(),
                    None => Vec::new(),
                };
                let receives = match (next, &previous) {
                    (Some(next), Some(p)) => {
                        receive_batch(p, scope, &mut arriving, next, self.piece)
                    }
                    _ => Vec::new(),
                };
                if following.is_none()
                    && let Some(store) = store
                {
                    for (sum, &(task, offset, len)) in sums.chunks(self.piece).zip(batch) {
                        let sum = &sum[..len];
                        if let Err(e) = store.write_element(task.stripe, offset, sum) {
                            failed.get_or_insert(e);
                        }
                        if let (Some(crcs), erasure::Role::Data { chunk, .. }) =
                            (written.as_deref_mut(), self.code.role(self.me, task.stripe))
                        {
                            crcs.update(chunk as u64 * self.chunk + offset, sum);
                        }
                    }
                }
                comm::wait_all(receives.into_iter().chain(sends));
            });
            std::mem::swap(&mut sums, &mut arriving);
        }
    }
}

/// Posts the receives of a batch of pieces from `from`, each into its slot of `into`.
fn receive_batch<'a, S: mpi::request::Scope<'a> + Copy>(
    from: &mpi::topology::Process<'_>,
    scope: S,
    into: &'a mut [u8],
    batch: &[(&ChainTask, u64, usize)],
    piece: usize,
) -> Vec<mpi::request::Request<'a, [u8], S>> {
    into.chunks_mut(piece)
        .zip(batch)
        .map(|(slot, &(_, _, len))| from.immediate_receive_into(scope, &mut slot[..len]))
        .collect()
}
