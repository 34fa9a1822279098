//! SCR v3.1's calls that manage checkpoints by name: `SCR_Current` chooses the one a
//! restart loads, `SCR_Drop` forgets one in the index, `SCR_Delete` removes one from cache
//! and prefix. Each is collective; rank 0 changes the prefix's files.

use super::cache::forget_cached;
use super::prefix_store::say_deletions;
use super::{Phase, Scr};
use scr::HashView;
use scr::index::IndexFile;
use scr::{Error, Result, layout, prefix};

impl Scr {
    /// The id of dataset `name`: the index's on rank 0 (else the one a summary on the
    /// prefix gives, for a dataset already dropped from the index), or any rank's cached
    /// copy's (0 when none knows it). Collective.
    fn dataset_id_of(&self, name: &str) -> u64 {
        let indexed = if self.job.is_root() {
            IndexFile::read(&layout::index_file(self.prefix.path()))
                .ok()
                .and_then(|i| i.id_of(name))
                .or_else(|| {
                    prefix::inspect_flushed(self.prefix.path(), name)
                        .ok()
                        .flatten()
                        .map(|d| d.id)
                })
                .unwrap_or(0)
        } else {
            0
        };
        let cached = self
            .cache
            .datasets_where(|x| x.name() == Some(name))
            .max()
            .unwrap_or(0);
        self.job.max(indexed.max(cached))
    }

    /// Every dataset named `name`, newest first: each copy the index lists under it on rank 0
    /// (else the one a summary on the prefix gives), and each rank's cached ones. A name
    /// written again (after a fallback restart) names several. Collective.
    fn dataset_ids_named(&self, name: &str) -> Vec<u64> {
        let mut known: Vec<u64> = self
            .cache
            .datasets_where(|x| x.name() == Some(name))
            .collect();
        if self.job.is_root() {
            let dir = self.prefix.path();
            let indexed: Vec<u64> = IndexFile::read(&layout::index_file(dir))
                .map(|i| {
                    i.entries()
                        .into_iter()
                        .filter(|e| e.name == name)
                        .map(|e| e.id)
                        .collect()
                })
                .unwrap_or_default();
            if indexed.is_empty() {
                known.extend(
                    prefix::inspect_flushed(dir, name)
                        .ok()
                        .flatten()
                        .map(|d| d.id),
                );
            }
            known.extend(indexed);
        }
        let mut ids = self.job.union(&known);
        ids.reverse();
        ids
    }

    fn unknown(&self, call: &str, name: &str) {
        if self.job.is_root() {
            say!(
                "SCR: WARNING: {call}: no dataset {name} in cache or in the index of {}; nothing changed",
                self.prefix.path().display()
            );
        }
    }

    /// `SCR_Drop`: forgets `name` in the prefix's index; its files stay. An unknown name
    /// changes nothing (a warning on rank 0), as in SCR v3.1.
    pub fn drop_dataset(&mut self, name: &str) -> Result<()> {
        let mut dropped = false;
        self.prefix
            .agreed(&self.job, &format!("SCR_Drop of {name}"), |dir| {
                if let Some(d) = prefix::drop_dataset(dir, name)? {
                    dropped = true;
                    if let Some(w) = d.link_warning {
                        say!("SCR: WARNING: {w}");
                    }
                }
                Ok(())
            })?;
        if !self.job.root_decides(dropped) {
            self.unknown("SCR_Drop", name);
        }
        Ok(())
    }

    /// `SCR_Delete`: removes `name`'s files from cache and prefix, its `.scr/scr.dataset.<id>`
    /// directories and its index entry. Every dataset of that name goes: a name written
    /// again names several, and deleting one copy's files could take the others' (they may
    /// share paths), leaving an entry that looks valid without its files.
    pub fn delete_dataset(&mut self, name: &str) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(Error::refused(
                "SCR_Delete called while an output or restart is open",
            ));
        }
        let ids = self.dataset_ids_named(name);
        if ids.is_empty() {
            self.unknown("SCR_Delete", name);
            return Ok(());
        }
        self.poll_async_flushes(Some(u64::MAX))?;
        // the checkpoint SCR_Init chose for the restart, not yet read: the application
        // deleting it is offered the next older one, as after a failed restart
        let offered = self
            .restart
            .as_ref()
            .map(|(r, _)| *r)
            .filter(|r| ids.contains(r) && self.reshaped.is_none());
        for &id in &ids {
            self.delete_cached(id);
        }
        self.job.barrier();
        self.prefix
            .agreed(&self.job, &format!("SCR_Delete of {name}"), |dir| {
                // newest first: each drop of the name makes the next older copy current
                // while it is still listed, then the checkpoint before them all
                for &id in &ids {
                    if let Some(w) = prefix::delete_dataset(dir, id, name)? {
                        say!("SCR: WARNING: {w}");
                    }
                }
                prefix::update_flush_file(dir, |f| ids.iter().for_each(|&id| f.remove(id)))
            })?;
        match offered {
            Some(id) => self.offer_next_older(id),
            None => Ok(()),
        }
    }

    /// SCR_CACHE_PURGE and SCR_PREFIX_PURGE, in SCR_Init: every cached dataset, and every
    /// dataset on the prefix, deleted before the restart is chosen.
    pub(super) fn purge(&mut self) -> Result<()> {
        if self.config.settings.cache.purge {
            self.cache.discard_all();
            self.prefix
                .note_in_flush_file("the purged cache in the flush file", |f| {
                    for d in f.datasets() {
                        forget_cached(f, d);
                    }
                });
        }
        if self.config.settings.prefix.purge {
            self.prefix.agreed(&self.job, "SCR_PREFIX_PURGE", |dir| {
                let done = prefix::purge(dir);
                say_deletions(&done, "SCR_PREFIX_PURGE=1");
                match done.failed.first() {
                    Some((name, _)) => Err(scr::Error::invalid(
                        dir,
                        format!("SCR_PREFIX_PURGE=1 could not delete {name} (said above)"),
                    )),
                    None => Ok(()),
                }
            })?;
        }
        Ok(())
    }

    /// A checkpoint named `name` that SCR does not know, but that the application wrote
    /// itself in `<prefix>/<name>` (a simulation turning SCR on mid-run), is adopted: rank 0
    /// records it as SCR's checkpoint (see [`scr::bootstrap`]), newer than any dataset the
    /// job knows. Returns its id; 0 when there is no such directory. Collective.
    fn adopt(&mut self, name: &str) -> Result<u64> {
        let candidate =
            self.job.is_root() && scr::bootstrap::is_candidate(self.prefix.path(), name);
        if !self.job.root_decides(candidate) {
            return Ok(0);
        }
        let id = self.dataset_id + 1;
        let origin = self.dataset_origin();
        self.prefix
            .agreed(&self.job, &format!("adopting {name}"), |dir| {
                scr::dataset_ids::record_started(dir, id)?;
                let adopted = scr::bootstrap::adopt(dir, name, id, &origin)?;
                say!(
                    "SCR: adopted {}, written without SCR, as checkpoint {name} (dataset {id}: \
                     {} files, {} bytes, the CRC32 of each recorded: a file changed from now \
                     on is refused); SCR restarts from it and takes over",
                    dir.join(name).display(),
                    adopted.files,
                    adopted.bytes
                );
                if let Some(w) = adopted.warning {
                    say!("SCR: WARNING: {w}");
                }
                Ok(())
            })?;
        self.dataset_id = id;
        Ok(id)
    }

    /// Whether SCR_CURRENT=`name` was applied in this allocation already (see
    /// [`Scr::apply_named_current`]): a relaunch then restarts from the newest checkpoint,
    /// which is said at SCR_DEBUG=1. Collective.
    pub(super) fn named_current_applied(&self, name: &str) -> bool {
        let applied_here = self.cache.place().jobid_given
            && self.job.local_rank == 0
            && self.cache.named_current_applied().as_deref() == Some(name);
        let applied = !self.job.all(!applied_here);
        if applied {
            self.job.debug(
                1,
                format_args!(
                    "SCR_CURRENT={name} was applied in this allocation already: the newest checkpoint is restarted"
                ),
            );
        }
        applied
    }

    /// SCR_CURRENT: the checkpoint the user names is restarted from once in the job's
    /// allocation (as SCR v3.1 does); the caller applies it only where
    /// [`Scr::named_current_applied`] says it was not yet. Each node's control directory, which lives as long as
    /// the allocation's job id, records that it was applied; a relaunch in the same
    /// allocation, where the batch script's SCR_CURRENT is still set, restarts from the
    /// newest checkpoint instead of going back to the named one and dropping what the job
    /// wrote since. A run with no job id at all (`defjobid`: no resource manager, no
    /// SCR_JOB_ID, under scr-run or not) is an allocation of its own. Collective.
    pub(super) fn apply_named_current(&mut self, name: &str) -> Result<()> {
        let allocation = self.cache.place().jobid_given;
        // a name no checkpoint has is said, with those there are, and the restart goes on
        // as if SCR_CURRENT were unset, as SCR v3.1 does (a typo must not stop the job, nor
        // keep it from its newest checkpoint)
        match self.named_checkpoint(name)? {
            0 => {
                if self.job.is_root() {
                    let known = self.indexed_checkpoint_names();
                    say!(
                        "SCR: WARNING: SCR_CURRENT={name}: no checkpoint of that name is in \
                         cache, in the index of {} or there to adopt (the index lists {}); \
                         restarting as if SCR_CURRENT were unset: {}",
                        self.prefix.path().display(),
                        match known.is_empty() {
                            true => "none".to_string(),
                            false => known.join(", "),
                        },
                        self.restart_without_a_named_current()
                    );
                }
            }
            id => self.make_current(name, id)?,
        }
        if allocation
            && self.job.local_rank == 0
            && let Err(e) = self.cache.record_named_current(name)
        {
            say!(
                "SCR: WARNING: rank {}: SCR_CURRENT={name} may be applied again at a relaunch: {e}",
                self.job.rank
            );
        }
        Ok(())
    }

    /// `SCR_Current`: makes `name` the checkpoint a restart loads (and the index's
    /// current one). Newer checkpoints leave the cache, so later runs start from `name`
    /// too; it is rebuilt in cache if it is there, else fetched from the prefix.
    pub fn set_current(&mut self, name: &str) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(Error::refused("called while an output or restart is open"));
        }
        match self.named_checkpoint(name)? {
            0 => Err(Error::refused(format!(
                "no checkpoint {name} in cache, in the index of {}, or as a directory there to \
                 adopt",
                self.prefix.path().display()
            ))),
            id => self.make_current(name, id),
        }
    }

    /// The dataset id of checkpoint `name`: in cache, in the prefix's index, or a directory
    /// the application wrote there itself, adopted now; 0 when there is none. An output
    /// that is no checkpoint is refused. Collective.
    pub(super) fn named_checkpoint(&mut self, name: &str) -> Result<u64> {
        self.refuse_output_as_current(name)?;
        match self.dataset_id_of(name) {
            0 => self.adopt(name),
            id => Ok(id),
        }
    }

    /// Rank 0: where the restart goes when no checkpoint is named: the one this run's
    /// caches give back, else the one a fetch starts from (the index's current, a
    /// `scr.current` link the user set, else the newest), said for a message.
    fn restart_without_a_named_current(&self) -> String {
        if let Some((_, cached)) = &self.restart {
            return format!("from {cached}, in cache");
        }
        let prefix = self.prefix.path();
        let link = prefix::read_current_link(prefix);
        let start = IndexFile::read(&layout::index_file(prefix))
            .ok()
            .and_then(|i| i.restart_candidates(link.as_deref()).into_iter().next());
        match start {
            Some(e) => format!("from {}, the prefix's current checkpoint", e.name),
            None => "no checkpoint to restart from".to_string(),
        }
    }

    /// The checkpoints the prefix's index lists as restartable, newest first (rank 0; none
    /// elsewhere): what a message naming a checkpoint that does not exist offers instead.
    pub(super) fn indexed_checkpoint_names(&self) -> Vec<String> {
        IndexFile::read(&layout::index_file(self.prefix.path()))
            .map(|i| i.usable_checkpoints().into_iter().map(|e| e.name).collect())
            .unwrap_or_default()
    }

    /// Marks `name` current in the prefix's index (and `scr.current`), when the index lists
    /// it. Returns whether it does, and the checkpoint id it records for it (0 when the
    /// entry is no checkpoint). Collective.
    fn mark_current_in_index(&self, name: &str) -> Result<(bool, u64)> {
        let (mut listed, mut indexed_ckpt) = (false, 0);
        self.prefix
            .agreed(&self.job, &format!("SCR_Current of {name}"), |dir| {
                let index_path = layout::index_file(dir);
                let index = IndexFile::read(&index_path).ok();
                let at = index.as_ref().and_then(|i| i.id_of(name));
                if let (Some(index), Some(at)) = (&index, at) {
                    listed = true;
                    if let Some(d) = index.dataset(at, name).filter(|d| d.is_checkpoint()) {
                        indexed_ckpt = d.checkpoint_id().unwrap_or(at);
                    }
                    prefix::update_index(dir, |idx| {
                        idx.set_current(name)
                            .map_err(|what| scr::Error::invalid(&index_path, what))
                    })?;
                    if let Some(w) = prefix::update_current_link(dir, name)? {
                        say!("SCR: WARNING: {w}");
                    }
                }
                Ok(())
            })?;
        Ok((self.job.max(u64::from(listed)) == 1, indexed_ckpt))
    }

    /// [`Scr::set_current`] of checkpoint `name`, dataset `id`. Collective.
    pub(super) fn make_current(&mut self, name: &str, id: u64) -> Result<()> {
        let (listed, indexed_ckpt) = self.mark_current_in_index(name)?;
        // the fetch SCR_Init left pending is of the newest checkpoint: `name` replaces it
        self.fetch_pending = false;
        self.older_in_cache = None;
        if self.restart.as_ref().is_some_and(|(d, _)| *d == id) {
            return Ok(());
        }
        self.restart = None;
        self.reshaped = None;
        loop {
            let newer = self.job.max(self.cache.newest_cached(u64::MAX, true));
            if newer <= id {
                break;
            }
            self.delete_cached(newer);
        }
        let cached = self.job.max(self.cache.newest_cached(id + 1, true));
        if cached == id && self.recovery().recover(id)? {
            let ckpt = self.cache.checkpoint_of(id).unwrap_or(id);
            self.checkpoint_id = self.job.max(ckpt);
            self.restart = Some((id, name.to_string()));
            if !listed {
                self.flush_to_make_current(name, id)?;
            }
            return Ok(());
        }
        if self.config.settings.fetch.enabled {
            // the fetch loop starts at the index's current checkpoint, now `name`
            self.fetch(Some(id + 1), None)?;
        }
        let indexed_ckpt = self.job.max(indexed_ckpt);
        match &self.restart {
            Some((_, n)) if n == name => Ok(()),
            // SCR_FETCH=0: the application reads the prefix itself and names what it read
            // (integration.rst, "Restart without SCR"): new checkpoints count on from it
            _ if !self.config.settings.fetch.enabled && indexed_ckpt > 0 => {
                self.checkpoint_id = indexed_ckpt;
                Ok(())
            }
            _ => Err(Error::refused(format!(
                "{name} could not be loaded from cache or the prefix"
            ))),
        }
    }

    /// A checkpoint made current that only the cache holds is flushed now and marked
    /// current in the index: the newer checkpoints on the prefix it was chosen over must
    /// not be what a later run (a relaunch, another job, a fetch after a lost cache)
    /// starts from. With SCR_FLUSH=0 nothing is flushed, and that is said. Collective.
    fn flush_to_make_current(&mut self, name: &str, id: u64) -> Result<()> {
        if self.config.settings.flush.every == 0 {
            if self.job.is_root() {
                // what a job that finds it gone from the cache restarts from: the index's
                // current checkpoint, where one newer is current
                let index = IndexFile::read(&layout::index_file(self.prefix.path())).ok();
                let newer = index.as_ref().and_then(|i| {
                    let current = i.current()?;
                    (i.id_of(current)? > id).then(|| current.to_string())
                });
                let then = match newer {
                    Some(current) => format!(
                        "the prefix's index still names {current} current, which a job that \
                         finds {name} gone from the cache restarts from"
                    ),
                    None => {
                        format!("a job that finds {name} gone from the cache cannot restart it")
                    }
                };
                say!(
                    "SCR: WARNING: {name} is current for this run, but only the cache holds it \
                     and SCR_FLUSH=0 flushes nothing: {then}"
                );
            }
            return Ok(());
        }
        self.poll_async_flushes(Some(u64::MAX))?;
        if self.prefix.needs_flush(&self.job, id) {
            self.flush_part().flush(id)?;
        }
        self.mark_current_in_index(name).map(|_| ())
    }

    /// `SCR_Current` of a dataset that is an output and no checkpoint (in the index of
    /// the prefix, or in any rank's cache) fails on every rank, said once by rank 0: a
    /// restart loads only checkpoints. Collective.
    fn refuse_output_as_current(&self, name: &str) -> Result<()> {
        let is_checkpoint = |d: &scr::dataset::Dataset| d.is_checkpoint();
        let indexed = self
            .job
            .is_root()
            .then(|| IndexFile::read(&layout::index_file(self.prefix.path())).ok())
            .flatten();
        let in_index = indexed.as_ref().and_then(|i| {
            let id = i.id_of(name)?;
            i.dataset(id, name).map(|d| (id, is_checkpoint(&d)))
        });
        let cached_output = !self.job.all(
            self.cache
                .datasets_where(|d| d.name() == Some(name) && !d.is_checkpoint())
                .next()
                .is_none(),
        );
        // rank 0 decides, by the index where it lists the name, else by the caches
        let output = match in_index {
            Some((_, checkpoint)) => !checkpoint,
            None => cached_output,
        };
        if self.job.root_bytes(vec![u8::from(output)]) != [1] {
            return Ok(());
        }
        if !self.job.is_root() {
            return Err(Error::SaidByRoot {
                what: format!("{name} is an output, not a checkpoint"),
            });
        }
        let newest = indexed
            .as_ref()
            .and_then(|i| i.current().map(str::to_string))
            .map(|c| format!(" (the index's current one is {c})"))
            .unwrap_or_default();
        Err(Error::refused(format!(
            "{name} is an output, not a checkpoint (SCR_FLAG_OUTPUT without \
             SCR_FLAG_CHECKPOINT; {}): a restart loads only checkpoints, so name one of \
             those{newest}",
            match in_index {
                Some((id, _)) => format!(
                    "dataset {id} in the index of {}",
                    self.prefix.path().display()
                ),
                None => "in cache".into(),
            }
        )))
    }
}
