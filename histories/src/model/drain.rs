//! The model's account of `scr postrun`, the drain after a job (README, "The drain"): every
//! output dataset still only in cache, oldest first, then the newest checkpoint, stepping
//! back to older ones when one cannot be completed but never past a checkpoint already on
//! the prefix.

use super::{Avail, Ckpt, Model};
use crate::history::Scheme;

impl Model {
    /// Whether a drain can complete `c` from the caches of the cache's job with `down` of
    /// its nodes unavailable (excluded, or not among the draining job's nodes). README, "The
    /// drain": each node still up copies what it holds, then the nodes holding PARTNER
    /// copies of the nodes that are down, or up with nothing of their own left, copy
    /// those, and `scr index --build` rebuilds lost members from XOR or RS parity. So one
    /// node lost or excluded leaves PARTNER whole, two may not (whether they were partners,
    /// the model does not follow); SINGLE has no copy of any node's files.
    pub fn drainable(c: &Ckpt, down: u32, ranks_per_node: u32) -> Avail {
        let whole = match (c.scheme, c.losses, down) {
            (_, 0, 0) => c.cache,
            _ if c.scheme_unsure => c.cache.min(Avail::Maybe),
            (Scheme::Single, _, _) => Avail::No,
            (Scheme::Partner, l, d) if l + d == 1 => c.cache,
            (Scheme::Partner, _, _) => c.cache.min(Avail::Maybe),
            (Scheme::Xor, l, d) if l + d == 1 => c.cache,
            // two nodes lost: whether both were in one set is not modelled
            (Scheme::Xor, _, _) => c.cache.min(Avail::Maybe),
            (Scheme::Rs, l, d) if l + d <= c.rs_rebuilds(ranks_per_node) => c.cache,
            // more than that lost: whether some were the same node is not modelled
            (Scheme::Rs, _, _) => c.cache.min(Avail::Maybe),
        };
        // a damaged cached file no CRC guards is copied as it is
        if c.may_read_wrong {
            whole.min(Avail::Maybe)
        } else {
            whole
        }
    }

    /// Whether SCR_Init of a job of `ranks` ranks may stop because the cache holds a
    /// checkpoint of another size that this job's nodes may not complete: SPEC §4.4 (the
    /// newest complete checkpoint's only copy is never destroyed) — the job stops saying how
    /// to keep it rather than discard it (lib/tests/reshape.rs).
    pub fn init_may_stop(&self, ranks: u32) -> bool {
        let Some(old) = self.cache_ranks.filter(|&r| r != ranks) else {
            return false;
        };
        let missing = self.nodes(old).saturating_sub(self.nodes(ranks));
        self.ckpts.iter().any(|c| {
            !c.output
                && c.complete
                && c.writers == old
                && c.cache != Avail::No
                && Model::drainable(c, missing, self.ranks_per_node) != Avail::Yes
        })
    }

    /// SCR_Init stopped as [`Model::init_may_stop`] allows: the caches stay as they were;
    /// the other size's outputs it drained first may be on the prefix, and so may the files
    /// it copied of a checkpoint it could not complete.
    pub fn init_stopped(&mut self) {
        let old = self.cache_ranks;
        for c in self.ckpts.iter_mut().filter(|c| c.cache != Avail::No) {
            if c.output {
                c.prefix = c.prefix.max(Avail::Maybe);
            } else if c.complete && !c.rejected && Some(c.writers) == old {
                // README, "The drain": an incomplete dataset's copied files stay on the
                // prefix for the missing ones to arrive later
                c.partly_drained = true;
            }
        }
    }

    /// `scr postrun` with `down` nodes of the cache's job unavailable (SCR_EXCLUDE_NODES).
    /// Returns the output datasets whose fate the prefix and the drain's words decide (the
    /// promise, SPEC §4.11: a completed output reaches the prefix or is reported lost by
    /// name).
    pub fn drain(&mut self, down: u32) -> Vec<u32> {
        // README, "Containers": the drain writes plain files
        self.packing = false;
        let Some(ranks) = self.cache_ranks else {
            return Vec::new();
        };
        let rpn = self.ranks_per_node;
        let mut undecided = Vec::new();
        // README, "The drain": every output dataset, oldest first
        for c in self.ckpts.iter_mut() {
            if !c.output || !c.complete || c.cache == Avail::No || c.prefix == Avail::Yes {
                continue;
            }
            if Model::drainable(c, down, rpn) == Avail::Yes {
                c.prefix = Avail::Yes;
            } else {
                c.prefix = c.prefix.max(Avail::Maybe);
                undecided.push(c.serial);
            }
            c.async_pending = false;
        }
        // then the newest checkpoint, stepping back to older ones but never past a checkpoint
        // already on the prefix (an older one is neither copied nor made current)
        let mut unsure = false;
        let mut drained = None;
        for c in self.ckpts.iter_mut().rev() {
            if c.output || !c.complete {
                continue;
            }
            if c.prefix == Avail::Yes {
                break;
            }
            if c.writers != ranks {
                // (not in these caches)
                unsure |= c.prefix != Avail::No;
                continue;
            }
            let whole = if c.rejected || c.cache == Avail::No {
                Avail::No
            } else {
                Model::drainable(c, down, rpn)
            };
            match (whole, unsure) {
                (Avail::Yes, false) => {
                    drained = Some(c.serial);
                    break;
                }
                // README, "The drain": an incomplete dataset's copied files stay on the
                // prefix for the missing ones to arrive later, so a later drain that copies
                // the rest (a node down the first time, up now) may complete it
                (Avail::No, _) if c.partly_drained => c.prefix = c.prefix.max(Avail::Maybe),
                (Avail::No, _) => {}
                _ => c.prefix = c.prefix.max(Avail::Maybe),
            }
            if c.cache != Avail::No && !c.rejected {
                c.partly_drained = true;
            }
            // a checkpoint flushed already, or one the drain may complete: where the walk
            // stops is not certain from here on
            unsure |= c.prefix != Avail::No || whole != Avail::No;
        }
        if let Some(serial) = drained {
            // README, "The drain": the first complete checkpoint becomes current (publishing
            // never moves CURRENT backwards); the drain knows no SCR_PREFIX_SIZE window. One
            // that SCR_FLUSH's count may have flushed already the drain may find there, and
            // then it copies and publishes nothing ("already been flushed")
            if self.get(serial).is_some_and(|c| c.prefix == Avail::Maybe) {
                self.flushed_perhaps_already(serial, Avail::Yes);
            } else {
                self.flushed(serial, Avail::Yes, 0);
            }
        }
        undecided
    }

    /// What the prefix and the drain's words said of an output dataset whose drain was not
    /// certain: on the prefix whole, or reported lost.
    pub fn output_fate(&mut self, serial: u32, on_prefix: bool) {
        let c = self.get_mut(serial);
        if on_prefix {
            c.prefix = Avail::Yes;
        } else {
            c.reported_lost = true;
            c.prefix = Avail::No;
        }
    }
}
