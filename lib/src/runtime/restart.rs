//! Routing names to files and the restart phase (SCR_Route_file, Have/Start/Complete_restart).

use super::fetch::{Fetch, FetchOutcome, Fetched};
use super::reshape::PrefixRestart;
use super::{Phase, Scr};
use scr::event_log::kinds;
use scr::index::IndexFile;
use scr::meta::Meta;
use scr::prefix::update_index;
use scr::rank2file::FileRecord;
use scr::{Error, HashView, Result, layout, safe_fs};
use std::path::{Path, PathBuf};

impl Scr {
    /// Where a name the application uses lives on the prefix: (absolute path, path relative to the prefix).
    pub(super) fn prefix_path(&self, name: &str) -> Result<(PathBuf, PathBuf)> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::io(".", "read the working directory", e))?;
        let abs = scr::layout::lexically_normal(&cwd.join(name));
        // the prefix as given, or as the file system resolves it: the working directory
        // comes back resolved when SCR_PREFIX goes through a symbolic link
        let prefix = self.prefix.path();
        let resolved = std::fs::canonicalize(prefix).ok();
        let rel = [Some(scr::layout::lexically_normal(prefix)), resolved]
            .into_iter()
            .flatten()
            .find_map(|p| abs.strip_prefix(p).ok().map(Path::to_path_buf))
            .ok_or_else(|| {
                Error::refused(format!(
                    "{name} is outside the prefix directory {}; write it under SCR_PREFIX",
                    prefix.display()
                ))
            })?;
        if rel.as_os_str().is_empty() {
            return Err(Error::refused(format!(
                "{name} names the prefix directory itself, not a file"
            )));
        }
        layout::refuse_reserved(&rel, "the file")?;
        Ok((abs, rel))
    }

    /// `SCR_Route_file`: where to write (during an output) or read (during a restart) `name`.
    pub(crate) fn route_file(&mut self, name: &str) -> Result<PathBuf> {
        let routed = self.route_file_to(name);
        if let Ok(path) = &routed {
            self.job.debug_rank(
                3,
                format_args!("SCR_Route_file: {name} -> {}", path.display()),
            );
        }
        routed
    }

    fn route_file_to(&mut self, name: &str) -> Result<PathBuf> {
        if name.is_empty() || name.len() >= 1024 {
            return Err(Error::refused(format!(
                "file name {name:?} must be non-empty and shorter than 1024 bytes"
            )));
        }
        match self.phase.clone() {
            Phase::Output {
                broken: Some(why), ..
            } => Err(Error::refused(format!(
                "this rank could not prepare the output it is in ({why}); complete it as \
                 invalid"
            ))),
            Phase::Output { id, bypass, .. } => {
                let (abs, rel) = self.prefix_path(name)?;
                let prefix = self.prefix.path();
                let dataset_dir = self.cache.dataset_dir(id);
                let cached = if bypass {
                    abs.clone()
                } else {
                    dataset_dir.join(&rel)
                };
                let key = cached.to_string_lossy().into_owned();
                let dir = abs
                    .parent()
                    .unwrap_or(prefix)
                    .to_string_lossy()
                    .into_owned();
                let base = abs
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let meta =
                    Meta::for_user_file(&base, self.job.ranks, &rel.to_string_lossy(), &dir, &base);
                self.cache.record_file(id, &key, &meta)?;
                if let Some(parent) = cached.parent() {
                    if bypass {
                        // the application's own directory on the prefix, as a flush makes
                        // it: through directory handles, each the user's (a directory a
                        // neighbour made in a shared prefix is refused, not written into)
                        let (root, rel_dir) = safe_fs::below(prefix, parent)?;
                        safe_fs::Beneath::open(&root)?.create_dirs(&rel_dir, layout::DIR_MODE)?;
                    } else {
                        safe_fs::create_dirs_in(&dataset_dir, parent, scr::layout::DIR_MODE)?;
                    }
                }
                Ok(cached)
            }
            Phase::Restart { id } => {
                let routed = self.restart_file(id, name);
                // only data proven bad (a size or CRC32 that does not match) is the
                // checkpoint's fault
                if routed
                    .as_ref()
                    .is_err_and(|e| e.kind() != scr::ErrorKind::Corrupt)
                {
                    self.restart_route_refused = true;
                }
                routed
            }
            // the v1.1 idiom: outside an output, a name of the restart checkpoint means its
            // cached file; any other name comes back unchanged, as SCR v2.0 returns it (so
            // before a pending fetch, the name is the file on the prefix itself)
            Phase::Idle => Ok(self
                .restart
                .clone()
                .and_then(|(id, _)| self.restart_file(id, name).ok())
                .unwrap_or_else(|| PathBuf::from(name))),
        }
    }

    /// The file of restart dataset `id` that `name` means: the one whose path relative to
    /// the prefix is `name`'s, else (as SCR v2.0, which keeps cache files flat and routes
    /// by file name) the one file with `name`'s file name. This rank's cached file, or, for
    /// a checkpoint written by another number of ranks, any file of it where it is read
    /// (see [`super::reshape::PrefixRestart::route`]).
    pub(super) fn restart_file(&mut self, id: u64, name: &str) -> Result<PathBuf> {
        let rel = self
            .prefix_path(name)
            .map(|(_, rel)| rel.to_string_lossy().into_owned())
            .ok();
        if let Some(reshaped) = &mut self.reshaped {
            let routed = reshaped.route(
                self.prefix.path(),
                &mut self.cache,
                id,
                self.job.ranks,
                rel.as_deref(),
                name,
            );
            // this job's own trouble: a cache that could not take a file copied out of its
            // container (the prefix failing says nothing of this job's nodes)
            if routed
                .as_ref()
                .is_err_and(|e| e.kind() == scr::ErrorKind::Io && !e.is_io_in(self.prefix.path()))
            {
                self.restart_trouble_here = true;
            }
            return routed;
        }
        let base = Path::new(name)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let (map, rank) = (&self.cache.filemap, self.job.rank);
        let files: Vec<(&str, Meta)> = map
            .files(id, rank)
            .into_iter()
            .filter_map(|f| Some((f, map.meta(id, rank, f)?)))
            .collect();
        let by_path = files
            .iter()
            .find(|(_, meta)| rel.is_some() && meta.orig() == rel.as_deref());
        let (found, meta) = match by_path {
            Some(pair) => pair,
            None => {
                let same_name: Vec<&(&str, Meta)> = files
                    .iter()
                    .filter(|(_, meta)| base.is_some() && meta.orig_name() == base.as_deref())
                    .collect();
                match same_name.as_slice() {
                    [] => return self.route_other_ranks_file(id, rel.as_deref(), name),
                    [pair] => *pair,
                    several => {
                        let paths: Vec<&str> =
                            several.iter().filter_map(|(_, m)| m.orig()).collect();
                        return Err(Error::refused(format!(
                            "{name} matches {} restart files of this rank ({}); route it by its \
                             path relative to the prefix",
                            paths.len(),
                            paths.join(", ")
                        )));
                    }
                }
            }
        };
        let path = PathBuf::from(found);
        // this rank's file on the prefix (written bypassing the cache, or fetched in place)
        // is opened through directory handles, as every file a restart reads there is:
        // each directory on the way and the file this user's alone, with the size recorded
        if !path.starts_with(self.cache.dataset_dir(id))
            && let (Some(orig), Some(size)) = (meta.orig(), meta.size())
        {
            let prefix = self.prefix.path();
            let record = FileRecord {
                name: orig.to_string(),
                size,
                crc: None,
                segments: Vec::new(),
            };
            let beneath = safe_fs::Beneath::open(prefix)?;
            record.open_in(&beneath).map_err(|e| e.blaming(prefix))?;
            return Ok(path);
        }
        match std::fs::File::open(&path) {
            Ok(_) => Ok(path),
            Err(e) => Err(Error::io(&path, "open the restart file", e)),
        }
    }

    /// A file of restart dataset `id` this rank did not write: where a restart of this
    /// job's size reads the prefix, the file there (from the dataset's whole file list,
    /// checked as a reshaped restart's files are: see
    /// [`super::reshape::PrefixRestart::route`]); a restart from cache is file-per-process
    /// (another rank's file may be on another node), so it is refused, saying how to
    /// read with shared access.
    fn route_other_ranks_file(
        &mut self,
        id: u64,
        rel: Option<&str>,
        name: &str,
    ) -> Result<PathBuf> {
        if !self.restart_reads_prefix {
            return Err(Error::refused(format!(
                "{name} is not one of this rank's files of the restart dataset, which is \
                 read from cache, each rank its own files; to read other ranks' files during \
                 a restart, set SCR_GLOBAL_RESTART=1 (the restart then reads the prefix)"
            )));
        }
        let prefix = self.prefix.path();
        let shared = match &mut self.restart_shared {
            Some(shared) => shared,
            None => self
                .restart_shared
                .insert(PrefixRestart::read(prefix, id).map_err(|e| e.blaming(prefix))?),
        };
        shared.route(prefix, &mut self.cache, id, self.job.ranks, rel, name)
    }

    /// Whether this rank reads a file of restart dataset `id` on the prefix (one of its
    /// files is not in the dataset's cache directory: bypassed, or fetched in place).
    fn reads_prefix(&self, id: u64) -> bool {
        let dir = self.cache.dataset_dir(id);
        self.cache
            .user_files(id)
            .iter()
            .any(|f| !Path::new(f).starts_with(&dir))
    }

    /// The files of the restart dataset this rank may route, as paths on the prefix (what
    /// `SCR_Route_file` takes): its own, when the job has as many ranks as the one that
    /// wrote the checkpoint; every file of the checkpoint, in the order of the ranks that
    /// wrote them, when it has not (any rank may route any of them). Between
    /// Start_restart and Complete_restart.
    pub fn restart_files(&self) -> Result<Vec<PathBuf>> {
        let Phase::Restart { id } = self.phase else {
            return Err(Error::refused(
                "the restart's files are listed between SCR_Start_restart and SCR_Complete_restart",
            ));
        };
        let prefix = self.prefix.path();
        if let Some(reshaped) = &self.reshaped {
            return Ok(reshaped.paths(prefix));
        }
        let (map, rank) = (&self.cache.filemap, self.job.rank);
        Ok(self
            .cache
            .user_files(id)
            .iter()
            .filter_map(|f| map.meta(id, rank, f)?.orig().map(|o| prefix.join(o)))
            .collect())
    }

    /// How many ranks wrote the restart dataset (this job's number when it is the same).
    /// Between Start_restart and Complete_restart.
    pub fn restart_writers(&self) -> Result<u64> {
        if !matches!(self.phase, Phase::Restart { .. }) {
            return Err(Error::refused(
                "the restart's writers are known between SCR_Start_restart and SCR_Complete_restart",
            ));
        }
        Ok(self.reshaped.as_ref().map_or(self.job.ranks, |r| r.writers))
    }

    /// `SCR_Have_restart`: the name of the dataset a restart would load, fetching the
    /// prefix's newest checkpoint first when the cache had none. Collective.
    pub fn have_restart(&mut self) -> Result<Option<String>> {
        if self.phase != Phase::Idle {
            return Err(Error::refused(
                "SCR_Have_restart called while an output or restart is open; complete it first",
            ));
        }
        self.fetch_if_pending()?;
        Ok(self.restart.as_ref().map(|(_, n)| n.clone()))
    }

    /// Runs the fetch SCR_Init left for the first call that asks for a restart.
    pub(super) fn fetch_if_pending(&mut self) -> Result<()> {
        if std::mem::take(&mut self.fetch_pending) {
            let older_in_cache = self.older_in_cache.take();
            self.fetch(None, older_in_cache)?;
            if let Some((id, name)) = self.restart.clone() {
                self.log_restart(id, name);
            }
        }
        Ok(())
    }

    pub(super) fn log_restart(&self, id: u64, name: String) {
        self.log
            .event(kinds::RESTART, &[("name", name), ("dset", id.to_string())]);
    }

    /// `SCR_Start_restart`: begins reading the restart dataset; returns its name.
    pub(crate) fn start_restart(&mut self) -> Result<String> {
        self.restart_trouble_here = false;
        if self.phase != Phase::Idle {
            return Err(Error::refused(
                "SCR_Start_restart called while an output or restart is open",
            ));
        }
        self.fetch_if_pending()?;
        let (id, name) = self.restart.clone().ok_or_else(|| {
            Error::refused("SCR_Start_restart called but there is no checkpoint to restart from")
        })?;
        // any rank may route any file when the restart reads the prefix (on any rank: a
        // rank with no files of its own reads the others' too)
        self.restart_reads_prefix = !self.job.all(!self.reads_prefix(id));
        self.restart_shared = None;
        self.restart_route_refused = false;
        self.phase = Phase::Restart { id };
        Ok(name)
    }

    /// `SCR_Complete_restart`: true when every rank read its files. A failed restart drops
    /// the dataset, so the next `have_restart` offers an older one (none yet without fetch).
    pub(crate) fn complete_restart(&mut self, valid: bool) -> Result<bool> {
        let Phase::Restart { id } = self.phase.clone() else {
            return Err(Error::refused(
                "SCR_Complete_restart called without SCR_Start_restart",
            ));
        };
        self.phase = Phase::Idle;
        let ok = self.job.all(valid);
        // a restart this job's nodes could not read (a full cache: a file copied out of its
        // container had nowhere to go) is not the checkpoint's fault: it is not marked
        // failed, and no older one replaces it (what the job wrote next would supersede it)
        let trouble_here = !self
            .job
            .all(!std::mem::take(&mut self.restart_trouble_here));
        let route_refused = !self
            .job
            .all(!std::mem::take(&mut self.restart_route_refused));
        self.restart_reads_prefix = false;
        self.restart_shared = None;
        let name = self.restart.take().map(|(_, n)| n).unwrap_or_default();
        if !ok && trouble_here {
            self.stop_for_unreadable(&name);
        }
        let reshaped = self.reshaped.take();
        // a restart that failed after SCR_Route_file refused a name (one not in the
        // checkpoint, a file this job may not read) says nothing of the checkpoint's data:
        // SCR v3.1 marks it failed all the same, and the runs after restart from ever older
        // ones; here it is only passed over for this run
        let route_refused = !ok && reshaped.is_none() && route_refused;
        if route_refused && self.job.is_root() {
            say!(
                "SCR: the restart of {name} failed after SCR_Route_file refused a file (the \
                 ranks above say which); it is not marked failed, as its data was not found \
                 bad: this run is offered an older checkpoint, and a later one {name} again"
            );
        }
        if !ok && let Some(r) = &reshaped {
            // an application that cannot re-partition fails every checkpoint of another
            // size: that says nothing of the checkpoint, which a job of its own size restarts
            if self.job.is_root() {
                say!(
                    "SCR: the restart of {name}, written by {} rank(s), failed in this job of \
                     {}; it is not marked failed (a job of {} ranks restarts it)",
                    r.writers,
                    self.job.ranks,
                    r.writers
                );
            }
        }
        if !ok {
            // mark it (unless written by another number of ranks), drop it, and offer the
            // next older dataset on the prefix
            if reshaped.is_none() && !route_refused {
                self.prefix
                    .note("the failed restart in the index", |prefix| {
                        update_index(prefix, |idx| {
                            if idx.id_of(&name).is_some() {
                                idx.mark_failed(id, &name, chrono::Local::now());
                            }
                            Ok(())
                        })
                    });
            }
            self.delete_cached(id);
            self.offer_next_older(id)?;
        }
        Ok(ok)
    }

    /// Offers the next most recent checkpoint below dataset `id` (a restart of it failed,
    /// or the application deleted it before reading it): an older one still in cache
    /// (SCR_Init rebuilt it) unless the prefix has a newer one below `id`; one that is both
    /// in cache and on the prefix comes from cache (the prefix copy may be damaged where
    /// the cached one is whole, and its fetch would delete the cached one first); else the
    /// fetch loop below `id`. Collective.
    pub(super) fn offer_next_older(&mut self, id: u64) -> Result<()> {
        let indexed = match self.job.is_root() {
            true => IndexFile::read(&layout::index_file(self.prefix.path())).ok(),
            false => None,
        };
        let on_prefix = self.job.max(
            indexed
                .and_then(|i| i.usable_checkpoints().into_iter().find(|e| e.id < id))
                .map_or(0, |e| e.id),
        );
        let mut below = id;
        loop {
            let older = self.job.max(self.cache.newest_cached(below, true));
            if older < on_prefix || older == 0 {
                break;
            }
            if self.recovery().recover(older)? {
                self.restart = Some((older, self.cache.dataset_name(older)));
                return Ok(());
            }
            below = older;
        }
        if self.config.settings.fetch.enabled {
            self.fetch(Some(id), None)?;
        }
        Ok(())
    }

    /// In SCR_Init, after the restart from cache: a restart never goes back to a checkpoint
    /// in cache older than one the prefix holds complete and loadable. Dataset ids grow with
    /// time within a prefix, so a cached checkpoint whose id is below the prefix's newest
    /// usable one was superseded — by another job step of the allocation, run on other
    /// nodes, that went further and flushed — and the job's work since would be lost. Such
    /// a cached checkpoint is passed over: the pending fetch starts where it always does
    /// (the checkpoint the user made current, else the newest), tries the prefix's
    /// checkpoints newer than the cached one, and falls back to it only when none of those
    /// can be fetched. A current checkpoint older than the cached one is the user's choice
    /// (SCR never moves CURRENT back on its own): it is fetched, and the cached one is not
    /// offered. A cached checkpoint as new as anything on the prefix is restarted from
    /// cache. SCR_FETCH=0 loads nothing from the prefix, and SCR_GLOBAL_RESTART reads the
    /// restart from the prefix anyway: both leave the choice as it is. With
    /// `named_current_follows` (SCR_CURRENT, applied next, chooses the restart) the cache's
    /// newer checkpoint is not what the restart takes, and nothing is said of it.
    /// Collective.
    pub(super) fn pass_over_superseded_cache(&mut self, named_current_follows: bool) {
        let Some((cached, cached_name)) = self.restart.clone() else {
            return;
        };
        if self.config.settings.fetch.global_restart {
            return;
        }
        // rank 0 reads the index: its newest usable checkpoint, and where a fetch starts
        let on_prefix = self
            .job
            .is_root()
            .then(|| IndexFile::read(&layout::index_file(self.prefix.path())).ok())
            .flatten()
            .map(|index| {
                let link = scr::prefix::read_current_link(self.prefix.path());
                let start = index.restart_candidates(link.as_deref()).into_iter().next();
                let dropped =
                    scr::prefix::dropped_from_index(self.prefix.path(), Some(&index), cached);
                (index.newest_usable_checkpoint(), start, dropped)
            });
        let (newest, start, dropped) = on_prefix.unwrap_or_default();
        let id_of = |e: &Option<scr::index::IndexEntry>| e.as_ref().map_or(0, |e| e.id);
        let newest_id = self.job.max(id_of(&newest));
        let start_id = self.job.max(id_of(&start));
        if dropped && newest_id <= cached && !named_current_follows {
            // the drop edits the index only (as in SCR v3.1): the allocation's cache still
            // holds the checkpoint, and within it the cache is the restart; said, since the
            // user who dropped it may have meant never to load it again
            let back = match &start {
                Some(e) => format!("set SCR_CURRENT={} for the relaunch", e.name),
                None => "set SCR_CURRENT to an older checkpoint for the relaunch".to_string(),
            };
            say!(
                "SCR: {cached_name} (dataset {cached}) was dropped from the index of {} \
                    (`scr index --drop` or SCR_Drop), but this allocation's cache holds it and \
                    nothing newer is on the prefix: the restart takes it. To go back past it, \
                    {back} (it applies once per allocation); `scr index --add {cached_name}` \
                    indexes its flushed copy again",
                self.prefix.path().display()
            );
        } else if newest_id <= cached
            && start_id != 0
            && start_id < newest_id
            && !named_current_follows
            && self.job.is_root()
        {
            // a current checkpoint older than the prefix's newest was made current by the
            // user (SCR itself only moves CURRENT forward); within an allocation the cache's
            // newer checkpoint is the restart all the same, as in SCR v3.1: said, with how
            // to get the user's
            let start_name = start.as_ref().map_or("", |e| e.name.as_str());
            say!(
                "SCR: the prefix's current checkpoint is {start_name} (dataset {start_id}), but \
                 this allocation's cache holds the newer {cached_name} (dataset {cached}), which \
                 the restart takes; to restart from {start_name}, set SCR_CURRENT={start_name} \
                 for the relaunch (it applies once per allocation)"
            );
        }
        if newest_id <= cached || start_id == 0 {
            return;
        }
        let name_of = |e: &Option<scr::index::IndexEntry>| {
            e.as_ref().map_or_else(String::new, |e| e.name.clone())
        };
        let (newest_name, start_name) = (name_of(&newest), name_of(&start));
        let passed_over = format!(
            "{cached_name} (dataset {cached}) in cache is older than {newest_name} (dataset \
             {newest_id}) on the prefix"
        );
        if !self.config.settings.fetch.enabled {
            self.job.debug(
                1,
                format_args!("{passed_over}; SCR_FETCH=0: the restart is the one in cache"),
            );
            return;
        }
        self.restart = None;
        self.checkpoint_id = 0;
        let fallback = format!(
            "restarts from {cached_name} in cache only if no checkpoint newer than it can be \
             fetched"
        );
        let said = if start_id == newest_id {
            format!("{passed_over}: the restart fetches {newest_name}, and {fallback}")
        } else if start_id > cached {
            format!(
                "{passed_over}: the restart fetches the prefix's current checkpoint, \
                 {start_name} (dataset {start_id}), and {fallback}"
            )
        } else {
            format!(
                "{passed_over}, whose current checkpoint is the older {start_name} (dataset \
                 {start_id}), the user's choice: the restart fetches it"
            )
        };
        self.job.debug(1, format_args!("{said}"));
        if start_id > cached {
            self.older_in_cache = Some((cached, cached_name));
        }
    }

    /// Runs the fetch loop (see [`Fetch::fetch`]) and takes what it fetched as the restart.
    /// A newest checkpoint that is intact but that this job's nodes cannot read stops the
    /// job (every rank alike): going on from an older one would let the job's next
    /// checkpoints supersede it. Collective.
    ///
    /// `older_in_cache` is a checkpoint SCR_Init recovered in cache and passed over for a
    /// newer one on the prefix (see [`Scr::pass_over_superseded_cache`]): only the prefix's
    /// checkpoints newer than it are tried, and it is the restart when none of them can be
    /// fetched, so the fallback goes from newest to oldest wherever each one is.
    pub(super) fn fetch(
        &mut self,
        below: Option<u64>,
        older_in_cache: Option<(u64, String)>,
    ) -> Result<()> {
        let above = older_in_cache.as_ref().map_or(0, |(id, _)| *id);
        let outcome = Fetch {
            job: &self.job,
            cache: &mut self.cache,
            prefix: &self.prefix,
            redundancy: &self.redundancy,
            settings: &self.config.settings,
            log: &self.log,
            told: &mut self.fetch_told,
        }
        .fetch(below, above)?;
        match outcome {
            FetchOutcome::Fetched(Fetched {
                id,
                name,
                checkpoint_id,
                reshaped,
            }) => {
                self.checkpoint_id = self.checkpoint_id.max(checkpoint_id);
                self.restart = Some((id, name));
                self.reshaped = reshaped;
            }
            FetchOutcome::Nothing => {
                if let Some((id, name)) = older_in_cache {
                    self.job.debug(
                        1,
                        format_args!(
                            "no checkpoint on the prefix newer than {name} (dataset {id}) could \
                             be fetched: restarting from {name} in cache"
                        ),
                    );
                    let ckpt = self.cache.checkpoint_of(id).unwrap_or(id);
                    self.checkpoint_id = self.job.max(ckpt);
                    self.restart = Some((id, name));
                }
            }
            FetchOutcome::UnreadableHere { name } => self.stop_for_unreadable(&name),
        }
        Ok(())
    }

    /// Stops the job (every rank calls it): checkpoint `name` is intact on the prefix, and
    /// current, but this job's nodes could not read it; a restart from anything older
    /// would be superseded by what the job writes next.
    fn stop_for_unreadable(&self, name: &str) -> ! {
        let prefix = self.prefix.path().display();
        if !self.job.is_root() {
            crate::abort::abort_job_after_another("rank 0 stops the job (it says why)");
        }
        crate::abort::abort_job(&format!(
            "checkpoint {name} on {prefix} is intact, but this job's nodes could not read it \
             (their cache or control directory is full or failing: the ranks above say where); \
             it is not marked failed and stays current. Free space on those nodes (scr \
             list-dir names the directories) or run elsewhere, and restart"
        ))
    }
}
