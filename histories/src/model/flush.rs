//! The model's account of flushes: the cache's room, what publishing a checkpoint does to
//! older ones of its name, the prefix window (SCR_PREFIX_SIZE) and SCR_Finalize's flush.

use super::{Avail, Ckpt, Model};
use crate::history::Config;

impl Model {
    /// README, "SCR v3.1 programs", SCR_Init row: the cached copy of the newest checkpoint
    /// stays until the next one completes, so a checkpoint that fails never costs the last
    /// good one; one already on the prefix may go when the next one starts, as in v3.1
    /// (guide api.rst, api-51), since the prefix holds it (SPEC §4.4: never the *only*
    /// complete copy). An older one beyond the newest SCR_CACHE_SIZE - 1 may go to make
    /// room for the new dataset whether or not the prefix has it (guide config.rst,
    /// config-28/29: at most SCR_CACHE_SIZE checkpoints in cache; SPEC §4.4 protects only
    /// the newest): a run with a smaller SCR_CACHE_SIZE than the one before may evict it.
    pub(super) fn make_room(&mut self, cache_size: u32) {
        let (evict_at_start, here) = (self.evict_at_start, self.cache_ranks);
        let mut kept = 0;
        for c in self.ckpts.iter_mut().rev() {
            let cached = c.cache != Avail::No && c.complete && !c.output && Some(c.writers) == here;
            // v2.0.0 keeps an output dataset in cache after its flush, where it takes a place
            // of SCR_CACHE_SIZE as a checkpoint does (ours flushes it and lets it go)
            let held_output = evict_at_start && c.output && c.complete && Some(c.writers) == here;
            if !cached && !held_output {
                continue;
            }
            kept += 1;
            if cached && kept >= cache_size && (kept > 1 || c.prefix != Avail::No || evict_at_start)
            {
                c.cache = c.cache.min(Avail::Maybe);
            }
        }
    }

    /// The complete checkpoints the caches of this job's nodes may hold, newest first:
    /// another size's checkpoint left in cache is on nodes this job does not run on.
    fn cached_checkpoints_here(&mut self) -> impl Iterator<Item = &mut Ckpt> {
        let here = self.cache_ranks;
        self.ckpts.iter_mut().rev().filter(move |c| {
            c.cache != Avail::No && c.complete && !c.output && Some(c.writers) == here
        })
    }

    /// Guide config.rst (config-28/29, config-76): at most SCR_CACHE_SIZE checkpoints in
    /// cache; README, "SCR v3.1 programs": the newest stays until the next one completes.
    pub(super) fn evict(&mut self, cache_size: u32) {
        for c in self.cached_checkpoints_here().skip(cache_size as usize) {
            c.cache = Avail::No;
        }
    }

    /// What publishing checkpoint `serial` (named `name`; `empty`: all its files empty),
    /// certainly or perhaps, does to the others.
    pub(super) fn published(&mut self, serial: u32, name: &str, empty: bool, how: Avail) {
        let packed = self.get(serial).is_some_and(|c| c.may_be_packed);
        for older in self
            .ckpts
            .iter_mut()
            .filter(|o| o.serial < serial && o.name() == name)
        {
            // README, SCR_PREFIX_SIZE / "The drain": a name written again after a restart
            // from an older checkpoint is written at the same paths; the newer copy's files
            // replace the older one's, which a fetch then finds changed (its CRC32). Empty
            // files are alike whichever wrote them.
            if empty && older.spec.size == 0 || older.prefix == Avail::No {
                continue;
            }
            // README, "Containers": packed files lie in their own dataset's containers, and
            // plain ones at paths containers never touch: no file of the older copy need be
            // replaced; whether its index entry stays, no document says
            if packed || older.may_be_packed {
                older.prefix = older.prefix.min(Avail::Maybe);
            } else if how == Avail::Yes {
                older.prefix_damaged = true;
            } else {
                older.prefix = older.prefix.min(Avail::Maybe);
            }
        }
        // SPEC §4.7 and README, "The drain": publishing makes the newest checkpoint current
        // and never moves CURRENT backwards
        if self.operator_current.is_some_and(|x| x < serial) {
            if how == Avail::Yes {
                self.operator_current = None;
                self.operator_current_superseded = false;
            } else {
                self.operator_current_superseded = true;
            }
        }
        if how == Avail::Yes {
            self.current_may_be_unset = false;
        }
    }

    /// A flush of `serial` (certain or perhaps) under a window of `window` checkpoints; an
    /// output dataset's flush applies the window too ("after each flush").
    pub(super) fn flushed(&mut self, serial: u32, how: Avail, window: u32) {
        let packing = self.packing;
        let c = self.get_mut(serial);
        c.prefix = c.prefix.max(how);
        c.may_be_packed |= packing && how != Avail::No;
        // flushed again after the window deleted it: its files are back, indexed
        c.window_deleted &= how == Avail::No;
        if how == Avail::Yes {
            c.async_pending = false;
        }
        let (name, empty, output) = (c.name(), c.spec.size == 0, c.output);
        if !output {
            self.published(serial, &name, empty, how);
        }
        self.window(how, window);
    }

    /// SCR_PREFIX_SIZE=`window` applied after a flush that happened (`ran`: Yes) or may
    /// have.
    pub(super) fn window(&mut self, ran: Avail, window: u32) {
        if window == 0 {
            return;
        }
        // README, "SCR v3.1 programs", SCR_PREFIX_SIZE: after each flush, complete checkpoints
        // beyond the newest N leave the prefix (files, metadata, index), never the current
        // one; the N are checkpoints a restart can load
        let loadable = |c: &Ckpt| {
            !c.output && c.complete && !c.dropped && !c.rejected && c.prefix != Avail::No
        };
        let surely = |c: &Ckpt| loadable(c) && c.prefix == Avail::Yes && !c.prefix_damaged;
        let operator_current = self.operator_current;
        let n = self.ckpts.len();
        for i in 0..n {
            if !loadable(&self.ckpts[i]) {
                continue;
            }
            let newer = &self.ckpts[i + 1..];
            let sure_newer = newer.iter().filter(|c| surely(c)).count() as u32;
            let maybe_newer = newer.iter().filter(|c| loadable(c)).count() as u32;
            let c = &mut self.ckpts[i];
            let may_be_current = operator_current == Some(c.serial);
            if sure_newer >= window && ran == Avail::Yes && !may_be_current {
                // gone either way: deleted if it was complete there; a copy that may be
                // incomplete (a drain that could not finish it) is no checkpoint the window
                // counts or deletes (README: "complete checkpoints beyond the newest N")
                c.window_deleted = c.prefix == Avail::Yes;
                c.prefix = Avail::No;
            } else if maybe_newer >= window {
                c.prefix = c.prefix.min(Avail::Maybe);
            }
        }
    }

    /// SCR_Init of a run of `ranks` ranks under `config`, after its cache rebuild: SCR
    /// v2.0.0 and v3.1.0 (scr.c, SCR_Init: `scr_check_flush` / `scr_flush_restart` after
    /// `scr_cache_rebuild`) flush each dataset rebuilt in cache that this run's SCR_FLUSH
    /// says is due, as if it had just completed — found when the model was run against real
    /// v2.0.0. No document promises or forbids it, so the model allows it (Maybe) whenever
    /// the run flushes: a checkpoint a run without SCR_FLUSH left in cache may reach the
    /// prefix at a later run's SCR_Init.
    pub fn init_flush(&mut self, ranks: u32, config: &Config) {
        // from here on the run's own flushes (its SCR_Init's, its checkpoints', its
        // SCR_Finalize's) pack as it says
        self.packing = config.containers;
        if config.flush == 0 {
            return;
        }
        let due: Vec<u32> = self
            .ckpts
            .iter()
            .filter(|c| {
                c.cache != Avail::No
                    && c.complete
                    && !c.rejected
                    && c.prefix == Avail::No
                    && c.writers == ranks
            })
            .map(|c| c.serial)
            .collect();
        for serial in due {
            self.flushed(serial, Avail::Maybe, config.prefix_size);
        }
    }

    /// SCR_Finalize of a run under `config`.
    pub fn finalize(&mut self, config: &Config) {
        // README, "Runtime library" (asynchronous flush): Finalize waits for every flush
        // still running in the background and publishes it
        let pending: Vec<(u32, bool)> = self
            .ckpts
            .iter()
            .filter(|c| c.async_pending)
            .map(|c| (c.serial, c.cache == Avail::Yes && !c.may_read_wrong))
            .collect();
        for (serial, sure) in pending {
            let how = if sure { Avail::Yes } else { Avail::Maybe };
            self.flushed(serial, how, config.prefix_size);
            let c = self.get_mut(serial);
            c.async_pending = false;
            if c.output {
                c.cache = Avail::No;
            }
        }
        if config.flush == 0 {
            // README, "SCR v3.1 programs": SCR_FLUSH=0 never flushes, not even at Finalize
            return;
        }
        // guide api.rst (api-13) and integration.rst (integration-7): SCR_Finalize flushes
        // the newest cached dataset that still needs it. One the cache may have lost (a
        // member not rebuilt) may not be there, so the next older may be the one flushed.
        let newest_first: Vec<(u32, Avail, Avail)> = self
            .ckpts
            .iter()
            .rev()
            .filter(|c| !c.output && c.complete && !c.rejected && c.cache != Avail::No)
            .map(|c| {
                let sure = c.cache == Avail::Yes && !c.may_read_wrong;
                (
                    c.serial,
                    if sure { Avail::Yes } else { Avail::Maybe },
                    c.prefix,
                )
            })
            .collect();
        let mut how_sure = Avail::Yes;
        for (serial, how, prefix) in newest_first {
            let how = how.min(how_sure);
            if prefix != Avail::Yes {
                self.finalize_flush(serial, how, prefix, config.prefix_size);
            }
            if self.get(serial).is_some_and(|c| c.cache == Avail::Yes) {
                break;
            }
            how_sure = Avail::Maybe;
        }
    }

    /// SCR_Finalize's flush of `serial` (`how`: certainly or perhaps), which stood at
    /// `prefix` before.
    pub(super) fn finalize_flush(&mut self, serial: u32, how: Avail, prefix: Avail, window: u32) {
        if prefix == Avail::No && how == Avail::Yes {
            self.flushed(serial, how, window);
            return;
        }
        // flushed already (by SCR_FLUSH's count, perhaps in an earlier run under another
        // window) or perhaps now: whether this run's window runs is not certain
        self.flushed_perhaps_already(serial, how);
        self.window(Avail::Maybe, window);
    }

    /// A flush or drain that leaves `serial` on the prefix (`how`) where it may have been
    /// already: finding it there, the flush copies and publishes nothing, so whether it
    /// moves CURRENT past a checkpoint the operator chose since, or marks one current where
    /// a drop left none, is not certain.
    pub(super) fn flushed_perhaps_already(&mut self, serial: u32, how: Avail) {
        let (operator_current, unset) = (self.operator_current, self.current_may_be_unset);
        self.flushed(serial, how, 0);
        if operator_current.is_some_and(|x| x < serial) {
            self.operator_current = operator_current;
            self.operator_current_superseded = true;
        }
        self.current_may_be_unset = unset;
    }
}
