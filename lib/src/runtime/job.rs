//! Where this process runs and how it talks to the others: the job's communicators (every
//! rank, the node's ranks, the ranks with the same place on their nodes, each redundancy
//! set's), this rank's place among them, and what SCR_DEBUG lets it say.
//!
//! The rule the runtime keeps: **a function that takes a `&Job` is collective** (every rank
//! of the job calls it, in the same order), and one that does not is not. The parts that
//! keep state of their own (the cache manager, the prefix store, the redundancy
//! descriptors) hold no communicator; the collective steps that use them take the `Job`
//! beside them. A step that may fail on some ranks and not others ends in [`Job::agree`]
//! (or [`Job::agree_root`] for rank 0's work), so no rank goes on into a collective the
//! others left.

use crate::comm;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use scr::Result;
use scr::layout::Node;

/// This process's place in the job and its communicators.
pub(super) struct Job {
    world: SimpleCommunicator,
    /// The ranks on this node.
    node_comm: SimpleCommunicator,
    /// The ranks with this rank's place on their nodes (the node masters' one orders the
    /// nodes for container offsets).
    across: SimpleCommunicator,
    /// Each checkpoint descriptor's redundancy set of this rank (none for SINGLE).
    set_comms: Vec<Option<SimpleCommunicator>>,
    /// This process's node: its name, and whether it shares this machine with others.
    pub(super) node: Node,
    pub(super) rank: u64,
    pub(super) ranks: u64,
    /// This rank's place among its node's ranks (0: the node master).
    pub(super) local_rank: u64,
    /// How many nodes the job has.
    pub(super) nodes: u64,
    /// The job's nodes, as a host list (`n[1-4]`): what its datasets record as their
    /// writers' nodes.
    pub(super) hosts: String,
    /// SCR_DEBUG.
    debug: u64,
}

/// The ranks grouped by node (what [`Job::group`] makes before the sets exist).
pub(super) struct NodeGroups {
    pub(super) node_comm: SimpleCommunicator,
    pub(super) across: SimpleCommunicator,
    pub(super) local_rank: u64,
    pub(super) nodes: u64,
    pub(super) hosts: String,
}

impl NodeGroups {
    /// Groups the ranks of `world` by node name (`name` is this rank's), in world order,
    /// and learns the job's host list. Collective over `world`.
    pub(super) fn of(world: &SimpleCommunicator, name: &str) -> NodeGroups {
        let node_comm = comm::split_by_name(world, name);
        let local_rank = node_comm.rank() as u64;
        let across = world
            .split_by_color(mpi::topology::Color::with_value(local_rank as i32))
            .expect("a color was given");
        let nodes = comm::sum_u64(world, u64::from(local_rank == 0));
        // the node masters' names, gathered by world rank 0 (the first master) and
        // compressed, for every rank
        let names = if local_rank == 0 {
            comm::gather_bytes(&across, 0, name.as_bytes())
        } else {
            Vec::new()
        };
        let hosts =
            hostlist::HostSet::from_names(names.iter().filter_map(|n| std::str::from_utf8(n).ok()))
                .to_string();
        let hosts =
            String::from_utf8(comm::bcast_bytes(world, 0, hosts.into_bytes())).unwrap_or_default();
        NodeGroups {
            node_comm,
            across,
            local_rank,
            nodes,
            hosts,
        }
    }
}

impl Job {
    pub(super) fn new(
        world: SimpleCommunicator,
        groups: NodeGroups,
        set_comms: Vec<Option<SimpleCommunicator>>,
        node: Node,
        debug: u64,
    ) -> Job {
        Job {
            rank: world.rank() as u64,
            ranks: world.size() as u64,
            world,
            node_comm: groups.node_comm,
            across: groups.across,
            set_comms,
            node,
            local_rank: groups.local_rank,
            nodes: groups.nodes,
            hosts: groups.hosts,
            debug,
        }
    }

    pub(super) fn world(&self) -> &SimpleCommunicator {
        &self.world
    }

    pub(super) fn node_comm(&self) -> &SimpleCommunicator {
        &self.node_comm
    }

    pub(super) fn across(&self) -> &SimpleCommunicator {
        &self.across
    }

    /// The communicator of this rank's set under checkpoint descriptor `i` (none where the
    /// descriptor's scheme is SINGLE).
    pub(super) fn set_comm(&self, i: usize) -> Option<&SimpleCommunicator> {
        self.set_comms.get(i).and_then(Option::as_ref)
    }

    pub(super) fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// Every rank's outcome of one step, agreed ([`comm::agree`]): `Ok` on every rank when
    /// the step went well everywhere, else this rank's own error or one saying `elsewhere`.
    pub(super) fn agree<T>(&self, outcome: Result<T>, elsewhere: &str) -> Result<T> {
        comm::agree(&self.world, outcome, elsewhere)
    }

    /// Rank 0's outcome of a step only it takes, on every rank ([`comm::agree_root`]).
    pub(super) fn agree_root<T>(&self, outcome: Result<T>, on_root: &str) -> Result<T> {
        comm::agree_root(&self.world, outcome, on_root)
    }

    /// True on every rank when `each` is true on every rank: a decision that depends on
    /// every rank's state (not a step's outcome: those go through [`Job::agree`]).
    pub(super) fn all(&self, each: bool) -> bool {
        comm::all_true(&self.world, each)
    }

    /// Rank 0's bytes, on every rank (what the others pass is ignored).
    pub(super) fn root_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        comm::bcast_bytes(&self.world, 0, bytes)
    }

    /// Rank 0's decision, on every rank (what the others pass is ignored).
    pub(super) fn root_decides(&self, decision: bool) -> bool {
        comm::bcast_bool(&self.world, decision)
    }

    /// The largest `x` of all ranks (below 2^63: see [`comm::max_u64`]).
    pub(super) fn max(&self, x: u64) -> u64 {
        comm::max_u64(&self.world, x)
    }

    /// Every value any rank passes, each once, ascending: a set the ranks hold apart (the
    /// datasets their filemaps record, which differ after a node lost its control
    /// directory) made the same on every rank, so decisions taken from it agree. Values
    /// must be nonzero and below 2^63; one reduction per value found, plus one.
    pub(super) fn union(&self, mine: &[u64]) -> Vec<u64> {
        let mut all = Vec::new();
        let mut below = u64::MAX;
        loop {
            let next = mine.iter().copied().filter(|&x| x < below).max();
            let x = self.max(next.unwrap_or(0));
            if x == 0 {
                break;
            }
            all.push(x);
            below = x;
        }
        all.reverse();
        all
    }

    pub(super) fn sum(&self, x: u64) -> u64 {
        comm::sum_u64(&self.world, x)
    }

    /// A barrier that sleeps while it waits.
    pub(super) fn barrier(&self) {
        comm::relaxed_barrier(&self.world);
    }

    /// An SCR_DEBUG message of `level` about the job, said once (by rank 0).
    pub(super) fn debug(&self, level: u64, text: std::fmt::Arguments) {
        if self.rank == 0 && self.debug >= level {
            say!("SCR: {text}");
        }
    }

    /// An SCR_DEBUG message of `level` about this rank's own part, naming it.
    pub(super) fn debug_rank(&self, level: u64, text: std::fmt::Arguments) {
        if self.debug >= level {
            say!("SCR: rank {}: {text}", self.rank);
        }
    }

    /// Whether SCR_DEBUG is at least `level` (to skip work only a message needs).
    pub(super) fn debugging(&self, level: u64) -> bool {
        self.debug >= level
    }
}
