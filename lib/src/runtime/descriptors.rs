//! Checkpoint descriptors (`CKPT=` lines or the one SCR_COPY_TYPE implies) and the
//! redundancy sets each one chooses.

use crate::comm;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;
use scr::params::Params;
use scr::params::settings::Redundancy;
use scr::reddesc::Scheme;
use scr::redset::RedundancySets;
use scr::redset::{MAX_RS_CODE, balanced_set_id, members_needed, too_large_for_rs, too_small};
use scr::{Error, Result};

/// A checkpoint descriptor: which store a checkpoint goes to, how often, and which
/// redundancy scheme protects it.
#[derive(Clone, Debug)]
pub(super) struct CkptDesc {
    pub(super) interval: u64,
    pub(super) store: String,
    pub(super) scheme: Scheme,
    pub(super) set_size: u64,
    pub(super) failures: u64,
    pub(super) hop: u64,
    /// PARTNER: how many right neighbours hold a copy (SCR 3's REPLICAS).
    pub(super) replicas: u64,
    /// The failure group sets span: NODE (the default), WORLD, or a name from GROUPS= lines.
    pub(super) group: String,
    /// Files go straight to the prefix (BYPASS=1, SCR_CACHE_BYPASS): the cache keeps only
    /// the filemap, and the checkpoint is published on the prefix when it completes.
    /// Redundancy has nothing to protect in cache, so the scheme is SINGLE.
    pub(super) bypass: bool,
    /// How many datasets its store keeps in cache (SCR_CACHE_SIZE, or the store's COUNT).
    pub(super) cache_size: u64,
    /// OUTPUT=1: datasets flagged output take this descriptor.
    pub(super) output: bool,
    /// Whether checkpoints flush in the background, when its store's FLUSH= says
    /// (anything but SYNC); else SCR_FLUSH_TYPE and SCR_FLUSH_ASYNC decide.
    pub(super) flush_in_background: Option<bool>,
}

impl CkptDesc {
    /// From `CKPT=` (and 1.1-8 `CKPTDESC=`) lines where they apply
    /// ([`Params::descriptor_lines_apply`]), else the one SCR implies from SCR_CACHE_BASE
    /// and SCR_COPY_TYPE; one enabled descriptor must have INTERVAL=1.
    pub(super) fn from_params(params: &Params, implied: &Redundancy) -> Result<Vec<CkptDesc>> {
        let base = implied.cache_base.clone();
        let default_scheme = implied.scheme;
        let number = |text: Option<&str>, fallback: u64| {
            text.and_then(|t| t.parse().ok()).unwrap_or(fallback)
        };
        let mut out = Vec::new();
        let lines = params
            .descriptors_of("CKPT")
            .chain(params.descriptors_of("CKPTDESC"))
            .filter(|_| params.descriptor_lines_apply());
        let bypass_default = implied.bypass;
        for d in lines {
            if d.attr("ENABLED") == Some("0") {
                continue;
            }
            let store = d
                .attr("STORE")
                .or(d.attr("BASE"))
                .unwrap_or(&base)
                .to_string();
            // the STORE line describing the store: ENABLED=0 disables the descriptors
            // using it, FLUSH= is the transfer type of checkpoints flushed from it
            let store_line = params
                .descriptors_of("STORE")
                .filter(|s| std::path::Path::new(&s.name) == std::path::Path::new(&store))
                .last();
            if store_line.is_some_and(|s| s.attr("ENABLED") == Some("0")) {
                continue;
            }
            out.push(CkptDesc {
                output: d
                    .attr("OUTPUT")
                    .and_then(scr::params::parse_bool)
                    .unwrap_or(false),
                flush_in_background: store_line
                    .and_then(|s| s.attr("FLUSH"))
                    .map(|t| !t.eq_ignore_ascii_case("SYNC")),
                cache_size: params.cache_size(&store),
                bypass: d
                    .attr("BYPASS")
                    .and_then(scr::params::parse_bool)
                    .unwrap_or(bypass_default),
                interval: d.attr("INTERVAL").and_then(|i| i.parse().ok()).unwrap_or(1),
                store,
                scheme: d
                    .attr("TYPE")
                    .and_then(Scheme::parse)
                    .unwrap_or(default_scheme),
                set_size: number(d.attr("SET_SIZE"), implied.set_size),
                failures: number(d.attr("SET_FAILURES"), implied.set_failures),
                hop: number(d.attr("HOP_DISTANCE"), implied.hop_distance).max(1),
                replicas: d
                    .attr("REPLICAS")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(1)
                    .max(1),
                group: d
                    .attr("GROUP")
                    .map_or_else(|| implied.group.clone(), str::to_ascii_uppercase),
            });
        }
        if out.is_empty() {
            out.push(CkptDesc {
                cache_size: params.cache_size(&base),
                bypass: bypass_default,
                interval: 1,
                store: base,
                scheme: default_scheme,
                set_size: implied.set_size,
                failures: implied.set_failures,
                hop: implied.hop_distance,
                replicas: 1,
                group: implied.group.clone(),
                output: false,
                flush_in_background: None,
            });
        }
        if !out.iter().any(|d| d.interval == 1) {
            return Err(Error::Config {
                origin: "the checkpoint descriptors (CKPT)".into(),
                what: "no enabled one has INTERVAL=1; every checkpoint needs one (add e.g. \
                       CKPT=0 INTERVAL=1 to the configuration)"
                    .into(),
            });
        }
        for d in out.iter_mut().filter(|d| d.bypass) {
            d.scheme = Scheme::Single;
        }
        out.sort_by_key(|d| d.interval);
        Ok(out)
    }

    /// This rank's failure group under this descriptor: its node (NODE), one group for all
    /// (WORLD), or the value GROUPS= lines give its node for the group's name
    /// (`GROUPS=host1 POWER=pdu1`; the first line naming the node with that name wins); a
    /// node no line names is a group of its own.
    pub(super) fn failure_group(&self, params: &Params, node: &str) -> String {
        match self.group.as_str() {
            "NODE" => node.to_string(),
            "WORLD" => "WORLD".into(),
            name => params
                .descriptors_of("GROUPS")
                .filter(|d| d.name == node)
                .find_map(|d| {
                    d.attrs
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| format!("{name}={v}"))
                })
                .unwrap_or_else(|| format!("node {node}")),
        }
    }

    /// This rank's redundancy set under this descriptor, and the set's communicator (none
    /// for SINGLE). Collective.
    ///
    /// Each rank learns its own set only, in a few splits and sums, never the job's node
    /// list: the ranks split by failure group, the i-th rank of every group joins
    /// across-list i, PARTNER takes the list as one ring and XOR and RS cut it into balanced
    /// sets. That is [`RedundancySets::select`]'s rule, which computes every set from every
    /// rank's group. A scheme the groups cannot satisfy falls back to SINGLE, and rank 0
    /// says so (SCR 1.2 downgrades silently).
    pub(super) fn select_sets(
        &mut self,
        world: &SimpleCommunicator,
        node: &NodePlace<'_>,
        params: &Params,
    ) -> (RedundancySets, Option<SimpleCommunicator>) {
        let rank = world.rank() as u64;
        let ranks = world.size() as u64;
        let single = || RedundancySets::own(Scheme::Single, vec![rank], rank, ranks);
        if self.scheme == Scheme::Single {
            return (single(), None);
        }
        // `within`: this rank's place in its group; the across-list: every group's rank there
        let (within, across_groups) = if self.group == "NODE" {
            (node.local_rank, None)
        } else {
            let group = comm::split_by_name(world, &self.failure_group(params, node.name));
            let within = group.rank() as u64;
            let across = world
                .split_by_color(Color::with_value(within as i32))
                .expect("a color was given");
            (within, Some(across))
        };
        let across = across_groups.as_ref().unwrap_or(node.across);
        let set = match self.scheme {
            Scheme::Partner => across.duplicate(),
            _ => {
                let (i, n) = (across.rank() as u64, across.size() as u64);
                let id = balanced_set_id(i, n, self.set_size);
                across
                    .split_by_color(Color::with_value(id as i32))
                    .expect("a color was given")
            }
        };
        let members: Vec<u64> = comm::allgather_u64s(&set, [rank])
            .into_iter()
            .map(|[r]| r)
            .collect();
        let leader = members[0] == rank;
        // sets are numbered by their first world rank, as the whole-job rule numbers them
        let before = comm::exclusive_sum_u64(world, u64::from(leader));
        let id = comm::bcast_u64(&set, 0, before);
        let [total, groups] = comm::sums_u64(world, [u64::from(leader), u64::from(within == 0)]);
        let size = members.len() as u64;
        let needed = members_needed(self.scheme, self.failures);
        let problem = if comm::min_u64(world, size) < needed {
            // `ranks`, not u64::MAX, stands for "none": see comm::min_u64
            let short_leader = if leader && size < needed { rank } else { ranks };
            let first = comm::min_u64(world, short_leader);
            let first_size = comm::max_u64(world, if rank == first { size } else { 0 });
            Some(too_small(
                self.scheme,
                needed,
                first,
                first_size,
                ranks,
                groups,
            ))
        } else if self.scheme == Scheme::ReedSolomon {
            let largest = comm::max_u64(world, size);
            (largest + self.failures > MAX_RS_CODE)
                .then(|| too_large_for_rs(largest, self.failures))
        } else {
            None
        };
        match problem {
            None => (
                RedundancySets::own(self.scheme, members, id, total),
                Some(set),
            ),
            Some(why) => {
                if rank == 0 {
                    say!(
                        "SCR: WARNING: redundancy is disabled for checkpoints in {}: {why}. \
                         They are cached with SINGLE: losing a node loses them until they are flushed.",
                        self.store
                    );
                }
                self.scheme = Scheme::Single;
                (single(), None)
            }
        }
    }
}

/// Where a rank sits among the nodes: what set selection needs of the node grouping.
pub(super) struct NodePlace<'a> {
    pub(super) name: &'a str,
    pub(super) local_rank: u64,
    /// The ranks with this rank's place on their nodes.
    pub(super) across: &'a SimpleCommunicator,
}
