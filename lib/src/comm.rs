//! The few collectives SCR needs, over byte buffers and hashes, and the one way ranks
//! agree on the outcome of a step: [`agree`] (every rank's) and [`agree_root`] (rank 0's).

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::request::{Request, Scope};
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use scr::hash::Hash;
use scr::{Error, Result};
use std::collections::BTreeMap;

/// Broadcasts `bytes` from `root` (other ranks' input is ignored).
pub fn bcast_bytes(comm: &SimpleCommunicator, root: i32, bytes: Vec<u8>) -> Vec<u8> {
    let len = bcast_u64(comm, root, bytes.len() as u64);
    let mut buf = if comm.rank() == root {
        bytes
    } else {
        vec![0u8; len as usize]
    };
    if len > 0 {
        mpi::request::scope(|scope| {
            wait_relaxed(
                comm.process_at_rank(root)
                    .immediate_broadcast_into(scope, &mut buf[..]),
            )
        });
    }
    buf
}

/// Broadcasts a hash from `root`.
pub fn bcast_hash(comm: &SimpleCommunicator, root: i32, hash: &Hash) -> Hash {
    let bytes = if comm.rank() == root {
        hash.pack()
    } else {
        Vec::new()
    };
    Hash::unpack(&bcast_bytes(comm, root, bytes)).expect("a hash packed by this library")
}

/// Displacements for variable-count collectives, and the total length.
fn layout(lens: &[i32]) -> (Vec<i32>, usize) {
    let displs = lens
        .iter()
        .scan(0i32, |acc, &l| {
            let d = *acc;
            *acc += l;
            Some(d)
        })
        .collect();
    (displs, lens.iter().map(|&l| l as usize).sum())
}

/// A zero-length buffer at a real address. An empty `Vec<u8>`'s pointer is dangling
/// (address 1), and Open MPI reads address 1 as `MPI_IN_PLACE`: an empty buffer handed to
/// a collective then fails with MPI_ERR_ARG, or is taken as "in place".
pub fn real_address(buf: &[u8]) -> &[u8] {
    static NOTHING: [u8; 1] = [0];
    if buf.is_empty() { &NOTHING[..0] } else { buf }
}

/// Runs a variable-count gather into one buffer and splits it per rank.
fn gather_parts(
    lens: &[i32],
    gather: impl FnOnce(&mut PartitionMut<'_, [u8], &[i32], &[i32]>),
) -> Vec<Vec<u8>> {
    let (displs, total) = layout(lens);
    // never empty: see real_address
    let mut all = vec![0u8; total.max(1)];
    {
        let mut part = PartitionMut::new(&mut all[..total], lens, &displs[..]);
        gather(&mut part);
    }
    lens.iter()
        .zip(&displs)
        .map(|(&l, &d)| all[d as usize..(d + l) as usize].to_vec())
        .collect()
}

/// Tags of [`exchange`]'s messages, alternating from one call to the next: a rank that left
/// one call's barrier may send the next call's messages while another still takes this
/// call's, and the tag keeps them apart.
const TAG_EXCHANGE: [i32; 2] = [7201, 7202];

thread_local! {
    /// How many exchanges this thread began (the calls are collective, so every rank counts
    /// the same).
    static EXCHANGES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Sends each rank in `outgoing` its message and returns the messages sent to this rank
/// (by sender, empty ones left out). Collective; ranks may send to any subset.
///
/// A rank receives only what is sent to it, never a count from every rank (an all-to-all
/// of counts would bring each rank O(ranks) bytes): messages go out as synchronous sends,
/// each rank takes whatever arrives, and once its own sends were all taken it enters a
/// nonblocking barrier; when the barrier completes every message has been received (the
/// NBX algorithm of Hoefler, Siebert and Lumsdaine).
pub fn exchange(comm: &SimpleCommunicator, outgoing: &BTreeMap<u64, Vec<u8>>) -> Vec<Vec<u8>> {
    let call = EXCHANGES.with(|n| n.replace(n.get() + 1));
    let tag = TAG_EXCHANGE[call % 2];
    let mut received: Vec<(i32, Vec<u8>)> = Vec::new();
    let take = |received: &mut Vec<(i32, Vec<u8>)>| match comm
        .any_process()
        .immediate_matched_probe_with_tag(tag)
    {
        Some(probed) => {
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            received.push((status.source_rank(), bytes));
            true
        }
        None => false,
    };
    mpi::request::scope(|scope| {
        let mut sends: Vec<_> = outgoing
            .iter()
            .filter(|(_, msg)| !msg.is_empty())
            .map(|(&to, msg)| {
                comm.process_at_rank(to as i32)
                    .immediate_synchronous_send_with_tag(scope, &msg[..], tag)
            })
            .collect();
        let mut pause = std::time::Duration::from_micros(20);
        // until every own message was taken: receive, and see which sends completed
        while !sends.is_empty() {
            let progressed = take(&mut received);
            let before = sends.len();
            sends = sends.into_iter().filter_map(|r| r.test().err()).collect();
            relax(progressed || sends.len() < before, &mut pause);
        }
        // then receive until every rank got here
        let mut barrier = comm.immediate_barrier();
        loop {
            let progressed = take(&mut received);
            match barrier.test() {
                Ok(_) => break,
                Err(pending) => barrier = pending,
            }
            relax(progressed, &mut pause);
        }
    });
    // a message taken after the barrier's last test cannot exist: every sender's message
    // was received before that sender entered the barrier
    received.sort_by_key(|(from, _)| *from);
    received.into_iter().map(|(_, m)| m).collect()
}

/// Tag of [`neighbour_bytes`]' messages.
const TAG_NEIGHBOURS: i32 = 7301;

/// Sends `mine` to each rank of `to` and returns what each rank of `from` sent, in the
/// order of `from`: a point-to-point trade among neighbours, where an allgather would wait
/// for every rank of `comm` and bring each all the others' bytes. Every rank of `from`
/// must send to this one, and every rank of `to` receive from it.
pub fn neighbour_bytes(
    comm: &SimpleCommunicator,
    mine: &[u8],
    to: &[i32],
    from: &[i32],
) -> Vec<Vec<u8>> {
    let mut received: Vec<Option<Vec<u8>>> = vec![None; from.len()];
    mpi::request::scope(|scope| {
        let sends: Vec<_> = to
            .iter()
            .map(|&r| {
                comm.process_at_rank(r).immediate_send_with_tag(
                    scope,
                    real_address(mine),
                    TAG_NEIGHBOURS,
                )
            })
            .collect();
        while received.iter().any(Option::is_none) {
            let mut progressed = false;
            for (slot, &r) in received.iter_mut().zip(from) {
                if slot.is_none()
                    && let Some(probed) = comm
                        .process_at_rank(r)
                        .immediate_matched_probe_with_tag(TAG_NEIGHBOURS)
                {
                    *slot = Some(probed.matched_receive_vec::<u8>().0);
                    progressed = true;
                }
            }
            if !progressed {
                std::thread::yield_now();
            }
        }
        wait_all(sends);
    });
    received
        .into_iter()
        .map(|m| m.expect("every one received"))
        .collect()
}

/// Sleeps a little (longer each idle round, up to 100 µs) unless something happened.
fn relax(progressed: bool, pause: &mut std::time::Duration) {
    if progressed {
        *pause = std::time::Duration::from_micros(20);
    } else {
        std::thread::sleep(*pause);
        *pause = (*pause * 2).min(std::time::Duration::from_micros(100));
    }
}

/// Gathers every rank's bytes on every rank, in rank order.
pub fn allgather_bytes(comm: &SimpleCommunicator, mine: &[u8]) -> Vec<Vec<u8>> {
    let mut lens = vec![0i32; comm.size() as usize];
    let len = mine.len() as i32;
    // (nonblocking with sleeping waits: see wait_relaxed; the blocking allgather of the
    // parity members' file lists cost 10-15 ms of polling per checkpoint, 4 ranks on 2 cores)
    mpi::request::scope(|scope| {
        wait_relaxed(comm.immediate_all_gather_into(scope, &len, &mut lens[..]))
    });
    gather_parts(&lens, |part| {
        mpi::request::scope(|scope| {
            wait_relaxed(comm.immediate_all_gather_varcount_into(scope, real_address(mine), part))
        })
    })
}

/// Every rank's `N` numbers, in rank order (for small communicators: a set, a node).
pub fn allgather_u64s<const N: usize>(comm: &SimpleCommunicator, mine: [u64; N]) -> Vec<[u64; N]> {
    let mut all = vec![0u64; N * comm.size() as usize];
    mpi::request::scope(|scope| {
        wait_relaxed(comm.immediate_all_gather_into(scope, &mine[..], &mut all[..]))
    });
    all.chunks_exact(N)
        .map(|c| c.try_into().expect("chunks of N"))
        .collect()
}

/// The ranks of `comm` that passed the same `name`, in rank order. Collective.
///
/// No rank learns every rank's name: ranks split by a hash of their name, and only the
/// few in one hash bucket (a node's ranks, say) trade names, splitting again by name in the
/// rare bucket two names share.
pub fn split_by_name(comm: &SimpleCommunicator, name: &str) -> SimpleCommunicator {
    use std::hash::BuildHasher;
    let hash = foldhash::fast::FixedState::default().hash_one(name);
    let bucket = comm
        .split_by_color(Color::with_value((hash & 0x7fff_ffff) as i32))
        .expect("a color was given");
    let names = allgather_bytes(&bucket, name.as_bytes());
    if names.iter().all(|n| n == name.as_bytes()) {
        return bucket;
    }
    // every member saw the same names, so all take this branch together
    let first = names
        .iter()
        .position(|n| n == name.as_bytes())
        .expect("own name present");
    bucket
        .split_by_color(Color::with_value(first as i32))
        .expect("a color was given")
}

/// Gathers every rank's bytes on `root` only (other ranks get an empty list).
pub fn gather_bytes(comm: &SimpleCommunicator, root: i32, mine: &[u8]) -> Vec<Vec<u8>> {
    let root_proc = comm.process_at_rank(root);
    let len = mine.len() as i32;
    let mine = real_address(mine);
    if comm.rank() != root {
        mpi::request::scope(|scope| {
            wait_relaxed(root_proc.immediate_gather_into(scope, &len));
            wait_relaxed(root_proc.immediate_gather_varcount_into(scope, mine));
        });
        return Vec::new();
    }
    let mut lens = vec![0i32; comm.size() as usize];
    mpi::request::scope(|scope| {
        wait_relaxed(root_proc.immediate_gather_into_root(scope, &len, &mut lens[..]))
    });
    gather_parts(&lens, |part| {
        mpi::request::scope(|scope| {
            wait_relaxed(root_proc.immediate_gather_varcount_into_root(scope, mine, part))
        })
    })
}

/// Element-wise sums of `x` over all ranks: one collective for several counts.
pub fn sums_u64<const N: usize>(comm: &SimpleCommunicator, x: [u64; N]) -> [u64; N] {
    let mut out = [0u64; N];
    mpi::request::scope(|scope| {
        wait_relaxed(comm.immediate_all_reduce_into(
            scope,
            &x[..],
            &mut out[..],
            SystemOperation::sum(),
        ))
    });
    out
}

pub fn sum_u64(comm: &SimpleCommunicator, x: u64) -> u64 {
    sums_u64(comm, [x])[0]
}

fn reduce_u64(comm: &SimpleCommunicator, x: u64, op: SystemOperation) -> u64 {
    let mut out = 0u64;
    mpi::request::scope(|scope| {
        wait_relaxed(comm.immediate_all_reduce_into(scope, &x, &mut out, op))
    });
    out
}

/// The largest `x` of all ranks. Values must stay below 2^63: MPICH 4.0.2 (ch4:ucx, as
/// Debian ships it; Open MPI does not) compares MPI_UINT64_T as signed in MPI_MIN and
/// MPI_MAX (the minimum of 4 and u64::MAX comes out u64::MAX), so a sentinel for "none"
/// must be a value in range, not u64::MAX.
pub fn max_u64(comm: &SimpleCommunicator, x: u64) -> u64 {
    reduce_u64(comm, x, SystemOperation::max())
}

/// The smallest `x` of all ranks; values below 2^63 (see [`max_u64`]).
pub fn min_u64(comm: &SimpleCommunicator, x: u64) -> u64 {
    reduce_u64(comm, x, SystemOperation::min())
}

/// The sum of `x` over the ranks before this one (0 on rank 0).
pub fn exclusive_sum_u64(comm: &SimpleCommunicator, x: u64) -> u64 {
    let mut out = 0u64;
    mpi::request::scope(|scope| {
        wait_relaxed(comm.immediate_exclusive_scan_into(
            scope,
            &x,
            &mut out,
            SystemOperation::sum(),
        ))
    });
    // MPI leaves rank 0's result undefined
    if comm.rank() == 0 { 0 } else { out }
}

/// `root`'s value of `x` on every rank.
pub fn bcast_u64(comm: &SimpleCommunicator, root: i32, x: u64) -> u64 {
    let mut v = x;
    mpi::request::scope(|scope| {
        wait_relaxed(
            comm.process_at_rank(root)
                .immediate_broadcast_into(scope, &mut v),
        )
    });
    v
}

/// True when every rank passes true.
pub fn all_true(comm: &SimpleCommunicator, x: bool) -> bool {
    min_u64(comm, u64::from(x)) == 1
}

/// Rank 0's value of a flag on every rank.
pub fn bcast_bool(comm: &SimpleCommunicator, x: bool) -> bool {
    bcast_u64(comm, 0, u64::from(x)) == 1
}

/// Every rank's outcome of one step, agreed: on every rank `Ok` when every rank's step
/// went well; otherwise a rank's own error, or, on a rank whose step went well, an error
/// saying `elsewhere` (what failed on another rank, which says why itself). Collective: a
/// step that may fail on some ranks and not others ends here before the next collective,
/// so no rank goes on into one the others left.
pub fn agree<T>(comm: &SimpleCommunicator, outcome: Result<T>, elsewhere: &str) -> Result<T> {
    let everywhere = all_true(comm, outcome.is_ok());
    settle(everywhere, outcome, elsewhere)
}

/// Rank 0's outcome of a step only it takes (the others pass `Ok`), on every rank: rank 0's
/// own error there, an error saying `on_root` elsewhere. Collective.
pub fn agree_root<T>(comm: &SimpleCommunicator, outcome: Result<T>, on_root: &str) -> Result<T> {
    let went_well = bcast_bool(comm, outcome.is_ok());
    settle(went_well, outcome, on_root)
}

/// This rank's outcome once the ranks agreed whether the step went well.
fn settle<T>(went_well: bool, outcome: Result<T>, elsewhere: &str) -> Result<T> {
    match outcome {
        Ok(v) if went_well => Ok(v),
        Ok(_) => Err(Error::collective(elsewhere)),
        Err(e) => Err(e),
    }
}

/// A barrier that sleeps while it waits.
pub fn relaxed_barrier(comm: &SimpleCommunicator) {
    wait_relaxed(comm.immediate_barrier());
}

/// Waits for a nonblocking collective, sleeping between tests (50 µs, then 100 µs).
/// MPICH busy-polls in blocking collectives; with more ranks than cores on a node (common
/// in tests, and with hyperthreads) the pollers take the CPU from the ranks that still have
/// work, and a run of small collectives cost 10-20 ms each here instead of microseconds.
/// The pause stays short because a nonblocking collective advances only while its ranks
/// test it: with 2 ms pauses a 4-rank allreduce took 8-12 ms, with 100 µs about 1 ms.
fn wait_relaxed<'a, R: ?Sized, S: Scope<'a>>(mut request: Request<'a, R, S>) {
    let mut pause = std::time::Duration::from_micros(50);
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        relax(false, &mut pause);
    }
}

/// Waits for every request of a data transfer, yielding the processor between tests.
///
/// A blocking MPI wait busy-polls. Where a node runs more ranks than it has cores (tests,
/// hyperthreads, emulated nodes), a rank polling for its neighbour's piece takes the core
/// from the very rank that still has to compute or copy it: the parity ring ran 30 % faster
/// at 64 MiB per rank, 4 ranks on 2 cores, with yielding waits. With a core of its own, a
/// rank's yield returns at once, so the latency stays a test's (unlike the sleeping
/// [`wait_relaxed`], which suits collectives that carry no data).
pub fn wait_all<'a, R: ?Sized + 'a, S: Scope<'a>>(
    requests: impl IntoIterator<Item = Request<'a, R, S>>,
) {
    let mut pending: Vec<_> = requests.into_iter().collect();
    loop {
        pending = pending.into_iter().filter_map(|r| r.test().err()).collect();
        if pending.is_empty() {
            return;
        }
        std::thread::yield_now();
    }
}
