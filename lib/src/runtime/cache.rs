//! The cache manager: where datasets live in cache, eviction, and deleting cached
//! datasets (files go through `.trash/`, unlinked in the background).

use super::*;

impl Scr {
    /// This node's cache directory in a store.
    pub(super) fn store_dir(&self, store: &str) -> PathBuf {
        self.node
            .job_dir(Path::new(store), &self.config.user, &self.config.jobid)
            .expect("the user, job and node names were checked in SCR_Init")
    }

    /// This node's cache directory in every store the descriptors name.
    pub(super) fn store_dirs(&self) -> Vec<PathBuf> {
        self.config
            .descriptors
            .iter()
            .map(|d| self.store_dir(&d.store))
            .collect()
    }

    /// A cached dataset's directory, from the store its redundancy descriptor records (one
    /// of this job's stores: a filemap naming another directory is not followed there).
    pub(super) fn dataset_dir(&self, id: u64) -> PathBuf {
        let stores = self.store_dirs();
        let dir = self
            .cache
            .filemap
            .reddesc(id, self.rank)
            .and_then(|r| r.directory().map(PathBuf::from))
            .filter(|d| stores.contains(d));
        layout::cache_dataset_dir(&dir.unwrap_or_else(|| stores[0].clone()), id)
    }

    /// The directories a dataset's cached files may be in: its directory in each store.
    /// Nothing outside them is ever deleted as part of the dataset.
    pub(super) fn cache_dirs_of(&self, id: u64) -> Vec<PathBuf> {
        self.store_dirs()
            .iter()
            .map(|s| layout::cache_dataset_dir(s, id))
            .collect()
    }

    /// This rank's cached files of a dataset (owned, so the filemap can change meanwhile).
    pub(super) fn my_files(&self, id: u64) -> Vec<String> {
        self.cache
            .filemap
            .files(id, self.rank)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// This rank's files of a dataset the application wrote (not redundancy files), in
    /// filemap order.
    pub(super) fn user_files(&self, id: u64) -> Vec<String> {
        self.cache.filemap.user_files(id, self.rank)
    }

    /// Deletes the oldest cached datasets so that a new one fits SCR_CACHE_SIZE.
    pub(super) fn evict_for(&mut self, store: &str) -> Result<()> {
        let keep = self.config.params.cache_size(store) as usize;
        let in_store = |d: &u64| {
            let recorded = self
                .cache
                .filemap
                .reddesc(*d, self.rank)
                .and_then(|r| r.store().map(str::to_string));
            recorded.is_none_or(|s| Path::new(&s) == Path::new(store))
        };
        let mut cached: Vec<u64> = self
            .cache
            .filemap
            .datasets()
            .into_iter()
            .filter(in_store)
            .collect();
        // the newest complete checkpoint, when it is not on the prefix, is the only copy
        // there is: it stays until the new dataset completes (see complete_output)
        let protected = self.newest_unflushed_checkpoint()?;
        let eviction = scr::cache::choose_eviction(&cached, keep, protected);
        if eviction.deferred.is_some() {
            self.cache.deferred_eviction = eviction.deferred;
        }
        for victim in &eviction.now {
            if self.flushing_async(*victim) {
                // the only wait an asynchronous flush imposes: its files must stay until copied
                self.poll_async_flushes(Some(*victim))?;
            }
            self.delete_cached(*victim);
        }
        cached.retain(|d| !eviction.now.contains(d) && Some(*d) != eviction.deferred);
        // copies held for ranks that moved away go with the datasets of their age
        let keep_from = self
            .cache
            .deferred_eviction
            .into_iter()
            .chain(cached.first().copied())
            .min()
            .unwrap_or(self.dataset_id);
        // (this rank's own bookkeeping, after the collectives: a failure here is this
        // rank's alone, and the caller must still take it into the dataset's agreement)
        fault::point("evict", self.rank)?;
        let held: Vec<u64> = self
            .cache
            .held
            .as_ref()
            .map(|(_, h)| h.datasets())
            .unwrap_or_default();
        for d in held.into_iter().filter(|&d| d < keep_from) {
            self.drop_held(d)?;
        }
        Ok(())
    }

    /// The datasets this rank's filemap records whose descriptor satisfies `keep`.
    pub(super) fn cached_datasets_where(
        &self,
        keep: impl Fn(&Dataset) -> bool,
    ) -> impl Iterator<Item = u64> {
        self.cache.filemap.datasets().into_iter().filter(move |&d| {
            self.cache
                .filemap
                .dataset(d, self.rank)
                .is_some_and(|x| keep(&x))
        })
    }

    /// The newest checkpoint complete in every rank's cache, if the flush file says it is
    /// not on the prefix (the same answer on every rank).
    pub(super) fn newest_unflushed_checkpoint(&self) -> Result<Option<u64>> {
        let newest = self
            .cached_datasets_where(|x| x.is_checkpoint() && x.is_complete())
            .max()
            .unwrap_or(0);
        let newest = comm::min_u64(&self.world, newest);
        let unflushed = self.rank == 0
            && newest > 0
            && FlushFile::read(&layout::flush_file(&self.config.prefix))
                .map_or(true, |f| f.needs_flush(newest));
        Ok(comm::bcast_bool(&self.world, unflushed).then_some(newest))
    }

    /// Deletes a dataset's files from cache, then its filemap entries: this rank's, the
    /// copies it keeps for partners, and (on the node master) the held ones.
    pub(super) fn delete_cached(&mut self, dset: u64) {
        self.discard_cached(dset);
        self.note_on_prefix("that a dataset left the cache", || {
            update_flush_file(&self.config.prefix, |f| forget_cached(f, dset))
        });
    }

    /// Starts unlinking the cache files this call discarded (see [`Discards`]): every SCR
    /// call ends with it.
    pub fn release_discards(&mut self) {
        self.cache.discards.release();
    }

    /// [`Scr::delete_cached`] but for the flush file, which the caller updates.
    ///
    /// A failure here (a full or failing cache or control directory on this node) is a
    /// warning, not an error: every caller is between collectives its peers go on into, and
    /// leaving early would hang them. What is left is harmless: a file that could not be
    /// removed stays until the job's cache is cleaned, and an entry whose files are gone
    /// fails verification.
    pub(super) fn discard_cached(&mut self, dset: u64) {
        self.debug(
            1,
            format_args!(
                "Deleting dataset {dset} `{}' from cache",
                self.dataset_name(dset)
            ),
        );
        if let Err(e) = self.try_discard_cached(dset) {
            say!(
                "SCR: WARNING: rank {}: dataset {dset} left the cache, but not cleanly: {e}",
                self.rank
            );
        }
    }

    fn try_discard_cached(&mut self, dset: u64) -> Result<()> {
        if self.config.settings.crc.on_delete {
            self.report_corrupt_files(dset);
        }
        let confine = self.cache_dirs_of(dset);
        remove_dataset_files(
            &mut self.cache.filemap,
            dset,
            &confine,
            &mut self.cache.discards,
        )?;
        // the dataset's directory is shared by the node's ranks: each removes what its own
        // files leave empty, so none deletes another's files before that one is done
        for dir in &confine {
            remove_empty_dirs(dir);
        }
        if self.restart.as_ref().is_some_and(|(id, _)| *id == dset) {
            self.restart = None;
        }
        self.cache.filemap.write(&self.cache.filemap_path)?;
        self.drop_held(dset)
    }

    /// SCR_CRC_ON_DELETE: before this rank's cached files of `dset` go, each one whose meta
    /// data records a CRC32 is read once more and a mismatch is reported (the cache's
    /// medium corrupted data that redundancy or a flush may have carried on).
    fn report_corrupt_files(&self, dset: u64) {
        for f in self.my_files(dset) {
            let Some(want) = self
                .cache
                .filemap
                .meta(dset, self.rank, &f)
                .and_then(|m| m.crc32())
            else {
                continue;
            };
            match io::file_crc32(Path::new(&f)) {
                Ok(got) if got == want => {}
                Ok(got) => say!(
                    "SCR: WARNING: rank {}: {f}: CRC32 {} where {} was recorded: the cache corrupted it",
                    self.rank,
                    scr::hash::format_crc32(got),
                    scr::hash::format_crc32(want)
                ),
                Err(e) => say!(
                    "SCR: WARNING: rank {}: CRC32 check before deleting: {e}",
                    self.rank
                ),
            }
        }
    }

    /// Node master: deletes the held files of dataset `dset` of `ranks` and their entries.
    /// A failure is a warning: what stays is only space, until the dataset is evicted.
    pub(super) fn drop_held_ranks(&mut self, dset: u64, ranks: &[u64]) {
        if ranks.is_empty() {
            return;
        }
        let confine = self.cache_dirs_of(dset);
        let Some((path, held)) = &mut self.cache.held else {
            return;
        };
        let dropped = ranks
            .iter()
            .try_for_each(|&r| remove_rank_files(held, dset, r, &confine, &mut self.cache.discards))
            .and_then(|()| held.write(path));
        if let Err(e) = dropped {
            say!(
                "SCR: WARNING: rank {}: copies of dataset {dset} no rank needs stay in cache: {e}",
                self.rank
            );
        }
    }

    /// Node master: deletes held files of a dataset and their entries.
    pub(super) fn drop_held(&mut self, dset: u64) -> Result<()> {
        let confine = self.cache_dirs_of(dset);
        if let Some((path, held)) = &mut self.cache.held
            && !held.ranks_by_dataset(dset).is_empty()
        {
            remove_dataset_files(held, dset, &confine, &mut self.cache.discards)?;
            held.write(path)?;
        }
        Ok(())
    }
}

/// The flush file's record that a dataset is no longer in cache: the drain must not look
/// for it there.
pub(super) fn forget_cached(f: &mut FlushFile, dset: u64) {
    f.unset_location(dset, Location::Cache);
    if f.locations(dset).is_empty() {
        f.remove(dset);
    }
}

/// Takes every file a filemap records for a dataset out of cache, then the entries. Only
/// files inside `confine` (the dataset's cache directories) are deleted: a file written
/// straight to the prefix (SCR_CACHE_BYPASS, SCR_FETCH_BYPASS) is the prefix's, and a path a
/// damaged or planted filemap names elsewhere is never touched.
pub(super) fn remove_dataset_files(
    map: &mut Filemap,
    dset: u64,
    confine: &[PathBuf],
    discards: &mut Discards,
) -> Result<()> {
    for rank in map.ranks_by_dataset(dset) {
        remove_rank_files(map, dset, rank, confine, discards)?;
    }
    map.remove_dataset(dset);
    Ok(())
}

/// [`remove_dataset_files`] for one rank's files of a dataset and its entry.
pub(super) fn remove_rank_files(
    map: &mut Filemap,
    dset: u64,
    rank: u64,
    confine: &[PathBuf],
    discards: &mut Discards,
) -> Result<()> {
    let files = map
        .files(dset, rank)
        .into_iter()
        .map(PathBuf::from)
        .filter(|f| io::is_within_any(f, confine))
        .collect();
    discards.discard(files)?;
    map.remove_rank_by_dataset(dset, rank);
    Ok(())
}

/// Removes `dir` and the directories below it that hold no files (what is not empty stays).
fn remove_empty_dirs(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Cache files on their way out. Freeing a large file's pages is slow (a 64 MiB file on
/// tmpfs takes 10-20 ms to unlink), and evicting the previous checkpoint was most of what
/// SCR_Complete_checkpoint cost on top of writing. Each file is renamed into the store's
/// `.trash/` at once — out of the dataset, so a crash leaves nothing the filemap does not
/// know — and unlinked by a background thread once the SCR call that discarded it returns
/// ([`Discards::release`]): started inside the call, the unlinking took the processor from
/// the call's own last steps (SINGLE's Complete at 64 MiB per rank, 4 ranks on 2 cores:
/// 17 ms instead of 8), while after it the application's computing hides it. Init empties
/// `.trash/` of a job that died.
#[derive(Default)]
pub(super) struct Discards {
    threads: Vec<std::thread::JoinHandle<()>>,
    /// renamed into `.trash/`, not yet handed to a thread
    pending: Vec<PathBuf>,
    renamed: u64,
}

impl Discards {
    pub(super) fn discard(&mut self, files: Vec<PathBuf>) -> Result<()> {
        for f in files {
            let moved = trash_dir_for(&f).and_then(|trash| {
                safe_fs::create_dirs_in(trash.parent()?, &trash, 0o700).ok()?;
                self.renamed += 1;
                let to = trash.join(format!("{}.{}", std::process::id(), self.renamed));
                std::fs::rename(&f, &to).ok().map(|()| to)
            });
            match moved {
                Some(to) => self.pending.push(to),
                None => {
                    io::remove_if_present(&f)?;
                }
            }
        }
        Ok(())
    }

    /// Starts unlinking what was discarded (called as an SCR call returns).
    pub(super) fn release(&mut self) {
        self.threads.retain(|t| !t.is_finished());
        if self.pending.is_empty() {
            return;
        }
        let files = std::mem::take(&mut self.pending);
        self.threads.push(std::thread::spawn(move || {
            for f in files {
                let _ = std::fs::remove_file(f);
            }
        }));
    }

    /// Waits until every discarded file is gone.
    pub(super) fn wait(&mut self) {
        self.release();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                say!(
                    "SCR: WARNING: removing discarded cache files failed; some may be left in .trash"
                );
            }
        }
    }
}

/// `<store>/.trash` for a cached file: the directory above its `scr.dataset.<id>`, which is
/// on the same file system, so moving the file there is a rename.
pub(super) fn trash_dir_for(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("scr.dataset."))
        })
        .and_then(Path::parent)
        .map(|store| store.join(TRASH_DIR))
}

/// Where discarded cache files wait for their deletion, in each store directory.
pub(super) const TRASH_DIR: &str = ".trash";
