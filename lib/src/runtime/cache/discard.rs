//! Deleting cached datasets: their files go through `.trash/` (unlinked in the background,
//! see [`Discards`]), then their filemap entries; only files inside the dataset's cache
//! directories are ever touched.

use super::*;

impl CacheManager {
    /// Deletes a dataset's files from cache, then its filemap entries: this rank's, the
    /// copies it keeps for partners, and (on the node master) the held ones.
    ///
    /// A failure here (a full or failing cache or control directory on this node) is a
    /// warning, not an error: every caller is between collectives its peers go on into, and
    /// leaving early would hang them. What is left is harmless: a file that could not be
    /// removed stays until the job's cache is cleaned, and an entry whose files are gone
    /// fails verification.
    pub(in crate::runtime) fn discard(&mut self, dset: u64) {
        if self.debug >= 1 && self.rank == 0 {
            say!(
                "SCR: Deleting dataset {dset} `{}' from cache",
                self.dataset_name(dset)
            );
        }
        if let Err(e) = self.try_discard(dset) {
            say!(
                "SCR: WARNING: rank {}: dataset {dset} left the cache, but not cleanly: {e}",
                self.rank
            );
        }
    }

    /// [`CacheManager::discard`], and the flush file told the dataset left the cache (the
    /// drain must not look for it there).
    pub(in crate::runtime) fn delete(&mut self, prefix: &PrefixStore, dset: u64) {
        self.discard(dset);
        prefix.note_in_flush_file("that a dataset left the cache", |f| forget_cached(f, dset));
    }

    fn try_discard(&mut self, dset: u64) -> Result<()> {
        if self.crc_on_delete {
            self.report_corrupt_files(dset);
        }
        let confine = self.cache_dirs_of(dset);
        remove_dataset_files(&mut self.filemap, dset, &confine, &mut self.discards)?;
        // the dataset's directory is shared by the node's ranks: each removes what its own
        // files leave empty, so none deletes another's files before that one is done
        for dir in &confine {
            remove_empty_dirs(dir);
        }
        self.write()?;
        self.drop_held(dset)
    }

    /// Discards the datasets written by a job of another number of ranks (their newest
    /// checkpoint was drained to the prefix): this job can never restart them from cache,
    /// and a later job of their size must not find them newer than what this one writes.
    pub(in crate::runtime) fn discard_written_by_other_jobs(&mut self) {
        let written_by_other = |map: &Filemap, d: u64| {
            map.ranks_by_dataset(d).into_iter().any(|r| {
                map.files(d, r).into_iter().any(|f| {
                    map.meta(d, r, f)
                        .and_then(|m| m.ranks())
                        .is_some_and(|n| n != self.ranks)
                })
            })
        };
        let mut others: Vec<u64> = self
            .filemap
            .datasets()
            .into_iter()
            .filter(|&d| written_by_other(&self.filemap, d))
            .collect();
        if let Some(held) = self.held() {
            others.extend(
                held.datasets()
                    .into_iter()
                    .filter(|&d| written_by_other(held, d)),
            );
        }
        others.sort_unstable();
        others.dedup();
        for d in others {
            self.discard(d);
        }
    }

    /// Discards every dataset this rank's filemap records and the node's held copies.
    pub(in crate::runtime) fn discard_all(&mut self) {
        let mut cached = self.filemap.datasets();
        if let Some(held) = self.held() {
            cached.extend(held.datasets());
        }
        cached.sort_unstable();
        cached.dedup();
        for d in cached {
            self.discard(d);
        }
    }

    /// SCR_CRC_ON_DELETE: before this rank's cached files of `dset` go, each one whose meta
    /// data records a CRC32 is read once more and a mismatch is reported (the cache's
    /// medium corrupted data that redundancy or a flush may have carried on).
    fn report_corrupt_files(&self, dset: u64) {
        for f in self.my_files(dset) {
            let Some(want) = self
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
    pub(in crate::runtime) fn drop_held_ranks(&mut self, dset: u64, ranks: &[u64]) {
        if ranks.is_empty() {
            return;
        }
        let confine = self.cache_dirs_of(dset);
        let Some((path, held)) = &mut self.held else {
            return;
        };
        let dropped = ranks
            .iter()
            .try_for_each(|&r| remove_rank_files(held, dset, r, &confine, &mut self.discards))
            .and_then(|()| held.write(path));
        if let Err(e) = dropped {
            say!(
                "SCR: WARNING: rank {}: copies of dataset {dset} no rank needs stay in cache: {e}",
                self.rank
            );
        }
    }

    /// Node master: deletes held files of a dataset and their entries.
    pub(in crate::runtime) fn drop_held(&mut self, dset: u64) -> Result<()> {
        let confine = self.cache_dirs_of(dset);
        if let Some((path, held)) = &mut self.held
            && !held.ranks_by_dataset(dset).is_empty()
        {
            remove_dataset_files(held, dset, &confine, &mut self.discards)?;
            held.write(path)?;
        }
        Ok(())
    }

    /// Node master: drops the copies its node holds of datasets older than `keep_from`
    /// (those that go with the datasets of their age). This rank's own bookkeeping: a
    /// failure here is this rank's alone, and the caller takes it into the dataset's
    /// agreement.
    pub(in crate::runtime) fn drop_held_before(&mut self, keep_from: u64) -> Result<()> {
        fault::point("evict", self.rank)?;
        let held: Vec<u64> = self.held().map(|h| h.datasets()).unwrap_or_default();
        for d in held.into_iter().filter(|&d| d < keep_from) {
            self.drop_held(d)?;
        }
        Ok(())
    }

    /// Drops this rank's redundancy files of `d` (XOR/RS parity, before the scheme is
    /// applied anew) and the copies its node holds of `d`.
    pub(in crate::runtime) fn clear_redundancy(&mut self, d: u64) -> Result<()> {
        let old: Vec<String> = self
            .my_files(d)
            .into_iter()
            .filter(|f| {
                self.filemap
                    .meta(d, self.rank, f)
                    .and_then(|m| m.filetype())
                    .is_some_and(|t| t != FileType::User)
            })
            .collect();
        for f in &old {
            io::remove_if_present(Path::new(f))?;
            self.filemap.remove_file(d, self.rank, f);
        }
        let expected = self.filemap.expected_files(d, self.rank).unwrap_or(0);
        self.filemap
            .set_expected_files(d, self.rank, expected.saturating_sub(old.len() as u64));
        self.write()?;
        self.drop_held(d)
    }

    /// Starts unlinking the cache files this call discarded (see [`Discards`]): every SCR
    /// call ends with it.
    pub(in crate::runtime) fn release_discards(&mut self) {
        self.discards.release();
    }

    /// Waits until every discarded file is gone (SCR_Finalize).
    pub(in crate::runtime) fn wait_for_discards(&mut self) {
        self.discards.wait();
    }
}

/// Takes every file a filemap records for a dataset out of cache, then the entries. Only
/// files inside `confine` (the dataset's cache directories) are deleted: a file written
/// straight to the prefix (SCR_CACHE_BYPASS, SCR_FETCH_BYPASS) is the prefix's, and a path a
/// damaged or planted filemap names elsewhere is never touched.
fn remove_dataset_files(
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
fn remove_rank_files(
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
    fn discard(&mut self, files: Vec<PathBuf>) -> Result<()> {
        for f in files {
            let moved = trash_dir_for(&f).and_then(|trash| {
                safe_fs::create_dirs_in(trash.parent()?, &trash, scr::layout::DIR_MODE).ok()?;
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
    fn release(&mut self) {
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
    fn wait(&mut self) {
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
fn trash_dir_for(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("scr.dataset."))
        })
        .and_then(Path::parent)
        .map(|store| store.join(TRASH_DIR))
}

/// Where discarded cache files wait for their deletion, in each store directory.
pub(in crate::runtime) const TRASH_DIR: &str = ".trash";
