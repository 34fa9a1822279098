//! SCR v3.1's calls that manage checkpoints by name: `SCR_Current` chooses the one a
//! restart loads, `SCR_Drop` forgets one in the index, `SCR_Delete` removes one from cache
//! and prefix. Each is collective; rank 0 changes the prefix's files.

use super::{Phase, Scr, failure, update_flush_file};
use crate::comm;
use scr::HashView;
use scr::index::IndexFile;
use scr::{Result, layout, prefix};

impl Scr {
    /// The id of dataset `name`: the index's on rank 0 (else the one a summary on the
    /// prefix gives, for a dataset already dropped from the index), or any rank's cached
    /// copy's (0 when none knows it). Collective.
    fn dataset_id_of(&self, name: &str) -> u64 {
        let indexed = if self.rank == 0 {
            IndexFile::read(&layout::index_file(&self.config.prefix))
                .ok()
                .and_then(|i| i.id_of(name))
                .or_else(|| {
                    prefix::inspect_flushed(&self.config.prefix, name)
                        .ok()
                        .flatten()
                        .map(|d| d.id)
                })
                .unwrap_or(0)
        } else {
            0
        };
        let cached = self
            .cached_datasets_where(|x| x.name() == Some(name))
            .max()
            .unwrap_or(0);
        comm::max_u64(&self.world, indexed.max(cached))
    }

    fn unknown(&self, call: &str, name: &str) {
        if self.rank == 0 {
            say!(
                "SCR: WARNING: {call}: no dataset {name} in cache or in the index of {}; nothing changed",
                self.config.prefix.display()
            );
        }
    }

    /// `SCR_Drop`: forgets `name` in the prefix's index; its files stay. An unknown name
    /// changes nothing (a warning on rank 0), as in SCR v3.1.
    pub fn drop_dataset(&mut self, name: &str) -> Result<()> {
        let mut dropped = false;
        self.agreed_on_prefix(&format!("SCR_Drop of {name}"), || {
            if let Some(d) = prefix::drop_dataset(&self.config.prefix, name)? {
                dropped = true;
                if let Some(w) = d.link_warning {
                    say!("SCR: WARNING: {w}");
                }
            }
            Ok(())
        })?;
        if !comm::bcast_bool(&self.world, dropped) {
            self.unknown("SCR_Drop", name);
        }
        Ok(())
    }

    /// `SCR_Delete`: removes `name`'s files from cache and prefix, its `.scr/scr.dataset.<id>`
    /// directories and its index entry.
    pub fn delete_dataset(&mut self, name: &str) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(failure(
                "SCR_Delete called while an output or restart is open",
            ));
        }
        let id = self.dataset_id_of(name);
        if id == 0 {
            self.unknown("SCR_Delete", name);
            return Ok(());
        }
        self.poll_async_flushes(Some(u64::MAX))?;
        self.delete_cached(id);
        comm::relaxed_barrier(&self.world);
        self.agreed_on_prefix(&format!("SCR_Delete of {name}"), || {
            if let Some(w) = prefix::delete_dataset(&self.config.prefix, id, name)? {
                say!("SCR: WARNING: {w}");
            }
            update_flush_file(&self.config.prefix, |f| f.remove(id))
        })
    }

    /// SCR_CACHE_PURGE and SCR_PREFIX_PURGE, in SCR_Init: every cached dataset, and every
    /// dataset on the prefix, deleted before the restart is chosen.
    pub(super) fn purge(&mut self) -> Result<()> {
        if self.config.settings.cache.purge {
            self.discard_whole_cache();
            self.note_on_prefix("the purged cache in the flush file", || {
                update_flush_file(&self.config.prefix, |f| {
                    for d in f.datasets() {
                        super::forget_cached(f, d);
                    }
                })
            });
        }
        if self.config.settings.prefix.purge {
            self.agreed_on_prefix("SCR_PREFIX_PURGE", || {
                let done = prefix::purge(&self.config.prefix);
                super::say_deletions(&done, "SCR_PREFIX_PURGE=1");
                match done.failed.first() {
                    Some((name, _)) => Err(scr::Error::invalid(
                        &self.config.prefix,
                        format!("SCR_PREFIX_PURGE=1 could not delete {name} (said above)"),
                    )),
                    None => Ok(()),
                }
            })?;
        }
        Ok(())
    }

    /// Discards every dataset this rank's filemap records and the node's held copies.
    pub(super) fn discard_whole_cache(&mut self) {
        let mut cached = self.cache.filemap.datasets();
        if let Some((_, held)) = &self.cache.held {
            cached.extend(held.datasets());
        }
        cached.sort_unstable();
        cached.dedup();
        for d in cached {
            self.discard_cached(d);
        }
    }

    /// `SCR_Current`: makes `name` the checkpoint a restart loads (and the index's
    /// current one). Newer checkpoints leave the cache, so later runs start from `name`
    /// too; it is rebuilt in cache if it is there, else fetched from the prefix.
    pub fn set_current(&mut self, name: &str) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(failure(
                "SCR_Current called while an output or restart is open",
            ));
        }
        let id = self.dataset_id_of(name);
        if id == 0 {
            return Err(failure(format!(
                "SCR_Current: no checkpoint {name} in cache or in the index of {}",
                self.config.prefix.display()
            )));
        }
        self.agreed_on_prefix(&format!("SCR_Current of {name}"), || {
            let index_path = layout::index_file(&self.config.prefix);
            let indexed = IndexFile::read(&index_path).is_ok_and(|i| i.id_of(name).is_some());
            if indexed {
                prefix::update_index(&self.config.prefix, |idx| {
                    idx.set_current(name)
                        .map_err(|what| scr::Error::invalid(&index_path, what))
                })?;
                if let Some(w) = prefix::update_current_link(&self.config.prefix, name)? {
                    say!("SCR: WARNING: {w}");
                }
            }
            Ok(())
        })?;
        // the fetch SCR_Init left pending is of the newest checkpoint: `name` replaces it
        self.fetch_pending = false;
        if self.restart.as_ref().is_some_and(|(d, _)| *d == id) {
            return Ok(());
        }
        self.restart = None;
        loop {
            let newer = comm::max_u64(&self.world, self.newest_cached(u64::MAX, true));
            if newer <= id {
                break;
            }
            self.delete_cached(newer);
        }
        let cached = comm::max_u64(&self.world, self.newest_cached(id + 1, true));
        if cached == id && self.recover(id)? {
            let desc = self.cache.filemap.dataset(id, self.rank);
            let ckpt = desc.as_ref().and_then(|d| d.checkpoint_id()).unwrap_or(id);
            self.checkpoint_id = comm::max_u64(&self.world, ckpt);
            self.restart = Some((id, name.to_string()));
            return Ok(());
        }
        if self.config.settings.fetch.enabled {
            // the fetch loop starts at the index's current checkpoint, now `name`
            self.fetch(Some(id + 1))?;
        }
        match &self.restart {
            Some((_, n)) if n == name => Ok(()),
            _ => Err(failure(format!(
                "SCR_Current: {name} could not be loaded from cache or the prefix"
            ))),
        }
    }
}
