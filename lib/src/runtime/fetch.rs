//! Fetch: copying a checkpoint from the prefix into cache for a restart (the fetch loop
//! over the index, the copies with their CRC checks; which checkpoint to try, its file
//! lists and what a failure means are in `fetch_choice`).

use super::cache::CacheManager;
use super::fetch_choice::Verdict;
use super::flush::log_transfer;
use super::job::Job;
use super::messages::FetchChoice;
use super::prefix_store::PrefixStore;
use super::redundancy::Redundancy;
use super::reshape::{self, PrefixRestart};
use crate::comm;
use crate::event_log::EventLog;
use scr::dataset::Dataset;
use scr::event_log::kinds;
use scr::flush::Location;
use scr::meta::Meta;
use scr::params::Settings;
use scr::prefix::{update_flush_file, update_index};
use scr::rank2file::{self, FileRecord};
use scr::{Error, ErrorKind, Result, container, io, layout, safe_fs};
use std::time::Instant;

/// What a fetch needs: the job, the cache it fills, the prefix it reads, the descriptors a
/// fetched dataset is recorded with. Every method is collective.
pub(super) struct Fetch<'a> {
    pub(super) job: &'a Job,
    pub(super) cache: &'a mut CacheManager,
    pub(super) prefix: &'a PrefixStore,
    pub(super) redundancy: &'a Redundancy,
    pub(super) settings: &'a Settings,
    pub(super) log: &'a EventLog,
    /// What the fetch already told the user (rank 0): each is said once in the job, not at
    /// every fallback.
    pub(super) told: &'a mut std::collections::BTreeSet<Told>,
}

/// Something a fetch tells the user once in the job.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Told {
    /// A checkpoint of another size is not offered.
    NotOffered(String),
    /// The prefix's index is there but does not read: nothing on the prefix is offered.
    UnreadableIndex,
}

/// What the fetch loop ended with.
pub(super) enum FetchOutcome {
    /// A checkpoint to restart from.
    Fetched(Fetched),
    /// None on the prefix could be fetched: a clean start.
    Nothing,
    /// The newest checkpoint the prefix holds is intact, but this job's nodes cannot read it
    /// (their cache or control directory is full or failing; the ranks said why): an older
    /// one must not be restarted, since what the job then writes would supersede it.
    UnreadableHere { name: String },
}

/// The checkpoint a fetch brought into cache (or, for a job of another size than the one
/// that wrote it, made ready to be read in place).
pub(super) struct Fetched {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) checkpoint_id: u64,
    pub(super) reshaped: Option<PrefixRestart>,
}

impl Fetch<'_> {
    /// The fetch loop: copies the newest complete, not-failed dataset from the prefix into
    /// cache (starting at a user-adjusted `scr.current`, else the index's CURRENT, and only
    /// below `below` when given, and only above `above`, the id of a checkpoint in cache
    /// that comes before anything older on the prefix). Collective; `Nothing` when there is
    /// nothing (more) to fetch.
    ///
    /// What a failure means decides what follows. A dataset that is broken on the prefix
    /// (a file missing there, a size or CRC32 that does not match, a file list that does
    /// not decode) is marked FAILED in the index and the next older one is tried; the one
    /// fetched then becomes current, as in SCR. A dataset this job cannot read on the prefix
    /// for a reason that says nothing of its data (a file refused because others could
    /// write it, a permission, an I/O error) is passed over for this restart only: the next
    /// older one is tried, and the dataset stays as it was, so a later restart takes it once
    /// the cause is put right. A failure of this job's own
    /// nodes (a cache or control directory that is full or failing) says nothing about the
    /// dataset: it is read in place on the prefix instead (as SCR_FETCH_BYPASS does), and
    /// if even that fails here the loop ends saying so ([`FetchOutcome::UnreadableHere`]):
    /// the checkpoint is not marked failed, and no older one is restarted in its place
    /// (what the job wrote next would supersede the intact newer one).
    pub(super) fn fetch(&mut self, below: Option<u64>, above: u64) -> Result<FetchOutcome> {
        let mut below = below;
        let job = self.job;
        // the datasets this fetch tried and passed over (failed or unreadable)
        let mut passed_over: Vec<String> = Vec::new();
        // those of them this job could not read (files others may write among them), newest
        // first: a restart that takes none of them says so, naming them
        let mut unreadable: Vec<String> = Vec::new();
        let mut in_place = self.settings.fetch.in_place;
        loop {
            // rank 0 picks the candidate and reads its file list
            let (choice, root) = match job.is_root() {
                true => self.next_candidate(below, above, &passed_over).unzip(),
                false => (None, None),
            };
            let bytes = comm::bcast_bytes(job.world(), 0, FetchChoice::to_bytes(choice.as_ref()));
            let choice = job.agree_root(
                FetchChoice::from_bytes(&bytes).map_err(|e| {
                    Error::corrupt(format!("rank 0's choice of the checkpoint to fetch: {e}"))
                }),
                "rank 0's choice of the checkpoint to fetch could not be read",
            )?;
            let Some(FetchChoice {
                id,
                name,
                dataset: desc,
                writers,
                embedded,
            }) = choice
            else {
                if job.is_root() && !unreadable.is_empty() {
                    say!(
                        "SCR: WARNING: no checkpoint on the prefix {} is restarted from: {} could \
                         not be read (the ranks above say why: a file others may write, or one \
                         this job may not read, is never read back) and {} left as {} {}, not \
                         marked failed. Put right what the ranks name, and a later restart takes \
                         {} again",
                        self.prefix.path().display(),
                        unreadable.join(", "),
                        if unreadable.len() == 1 { "is" } else { "are" },
                        if unreadable.len() == 1 { "it" } else { "they" },
                        if unreadable.len() == 1 { "is" } else { "are" },
                        if unreadable.len() == 1 { "it" } else { "them" },
                    );
                }
                return Ok(FetchOutcome::Nothing);
            };
            job.debug(1, format_args!("Attempting fetch: {name}"));
            let fetch_started = Instant::now();
            let mut reshaped = None;
            let result = if writers != job.ranks {
                // written by another number of ranks: read in place, any file by any rank
                let restart = PrefixRestart::new(embedded.unwrap_or_default());
                let prepared = self.prepare_reshaped(id, &desc, &restart);
                reshaped = Some(restart);
                prepared
            } else {
                let mine = match embedded {
                    Some(mut map) => Ok(map.remove(&job.rank).unwrap_or_default()),
                    None => self.scatter_rank2file(root.flatten()),
                };
                match mine {
                    Ok(mine) => self.fetch_files_in_waves(id, &desc, &mine, in_place),
                    Err(e) if e.kind() == ErrorKind::Corrupt => {
                        Err(Error::corrupt(format!("{name}: file list: {e}")))
                    }
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = &result {
                say!("SCR: rank {}: fetch of {name} failed: {e}", job.rank);
            }
            let verdict_here = match &result {
                Err(e) => Verdict::of(e, self.prefix.path()),
                Ok(_) => Verdict::HereOnly,
            };
            let agreed = job.agree(result, &format!("another rank could not fetch {name}"));
            if agreed.is_ok() {
                log_transfer(self.log, self.cache, kinds::FETCH, id, fetch_started);
                let secs = fetch_started.elapsed().as_secs_f64();
                job.debug(
                    1,
                    format_args!("scr_fetch: {}", self.cache.transfer_cost(id, secs)),
                );
                job.debug(1, format_args!("Fetch of dataset {id} `{name}' succeeded"));
                self.prefix.note("the fetch", |prefix| {
                    let mut current_now: Option<String> = None;
                    update_index(prefix, |idx| {
                        idx.mark_fetched(id, &name, chrono::Local::now());
                        // the checkpoint restarted from becomes the current one, as in SCR,
                        // where the current one failed (or there is none); a current one
                        // that is still usable stays (a restart of another size that the
                        // application could not read says nothing against it)
                        let current_usable = idx
                            .current()
                            .is_some_and(|c| idx.usable_checkpoints().iter().any(|e| e.name == c));
                        if current_usable {
                            current_now = idx.current().map(str::to_string);
                            return Ok(());
                        }
                        current_now = Some(name.clone());
                        idx.set_current(&name)
                            .map_err(|what| Error::invalid(layout::index_file(prefix), what))
                    })?;
                    // `scr.current` follows the index (a failed current passed CURRENT on
                    // when it was marked)
                    if let Some(current) = current_now
                        && scr::prefix::read_current_link(prefix).as_deref() != Some(&current)
                        && let Some(w) = scr::prefix::update_current_link(prefix, &current)?
                    {
                        say!("SCR: WARNING: {w}");
                    }
                    update_flush_file(prefix, |f| {
                        f.describe_dataset(id, &desc);
                        f.set_location(id, Location::Cache);
                        f.set_location(id, Location::Pfs);
                    })
                });
                let checkpoint_id = desc.checkpoint_id().unwrap_or(id);
                if reshaped.is_none() && !in_place {
                    self.protect_fetched(id, &name);
                }
                if let Some(r) = &reshaped {
                    job.debug(
                        1,
                        format_args!(
                            "{name} was written by {} rank(s), this job has {}: its files are read in place on the prefix, any by any rank",
                            r.writers, job.ranks
                        ),
                    );
                }
                return Ok(FetchOutcome::Fetched(Fetched {
                    id,
                    name,
                    checkpoint_id,
                    reshaped,
                }));
            }
            job.debug(1, format_args!("Failed to fetch dataset {id} `{name}'"));
            self.log.event(
                kinds::FETCH_FAILED,
                &[("name", name.clone()), ("dset", id.to_string())],
            );
            self.cache.delete(self.prefix, id);
            let verdict = Verdict::from_max(job.max(verdict_here as u64));
            if verdict == Verdict::HereOnly && !in_place {
                if job.is_root() {
                    say!(
                        "SCR: the cache could not take {name} (the ranks above say why); \
                         reading it in place on the prefix instead"
                    );
                }
                in_place = true;
                continue;
            }
            match verdict {
                Verdict::HereOnly => return Ok(FetchOutcome::UnreadableHere { name }),
                Verdict::Unreadable => {
                    unreadable.push(name.clone());
                    if job.is_root() {
                        say!(
                            "SCR: {name} cannot be read here (the ranks above say why); it is \
                             not marked failed: this restart tries an older checkpoint, and a \
                             later one takes {name} again once what they name is put right"
                        );
                    }
                }
                Verdict::Broken => self.prefix.note("the failed fetch in the index", |prefix| {
                    update_index(prefix, |idx| {
                        idx.mark_failed(id, &name, chrono::Local::now());
                        Ok(())
                    })
                }),
            }
            passed_over.push(name);
            // the loop goes back, never forward: a failure that made a current checkpoint
            // current no more must not send this restart to a newer one
            below = Some(below.map_or(id, |b| b.min(id)));
        }
    }

    /// Protects a checkpoint fetched into cache with its descriptor's scheme, as one this
    /// job wrote is (and as SCR does): a node lost before the job's next checkpoint then
    /// leaves it to a rebuild in cache, not to the prefix copy, which may be damaged by
    /// then. What cannot be done is said; the checkpoint stays fetched. Collective.
    fn protect_fetched(&mut self, id: u64, name: &str) {
        if self.redundancy.apply(self.job, self.cache, id).is_err() && self.job.is_root() {
            say!(
                "SCR: WARNING: {name} (dataset {id}) was fetched but could not be protected in \
                 cache (the ranks above say why): a node lost before the next checkpoint leaves \
                 it to its copy on the prefix"
            );
        }
    }

    /// A checkpoint written by another number of ranks, read in place: recorded in this
    /// rank's cache (where a file copied out of a container goes), and every file checked
    /// to be on the prefix with its size (shared out over the ranks). This rank's outcome.
    fn prepare_reshaped(&mut self, id: u64, desc: &Dataset, restart: &PrefixRestart) -> Result<()> {
        // recorded only so that what a restart copies out of containers is known and
        // cleaned: as a cached copy it is incomplete, never one a relaunch restarts from
        // (it holds no rank's files)
        let mut in_place = desc.clone();
        in_place.set_totals(desc.files().unwrap_or(0), desc.size().unwrap_or(0), false);
        self.record_fetched(id, &in_place, 0)?;
        reshape::check_files(self.job, self.prefix.path(), &restart.files)
    }

    /// Records dataset `id` in this rank's cache for a fetch of `files` of its files,
    /// replacing what a failed recovery left of it.
    fn record_fetched(&mut self, id: u64, desc: &Dataset, files: u64) -> Result<()> {
        let rank = self.job.rank;
        if self.cache.filemap.have_rank_by_dataset(id, rank) {
            self.cache.delete(self.prefix, id);
        }
        let reddesc =
            self.redundancy
                .reddesc_for(desc.checkpoint_id(), desc.is_output(), self.cache, rank);
        self.cache.record_dataset(
            id,
            desc,
            &reddesc,
            files,
            &self.settings.flush,
            &self.job.hosts,
        )
    }

    /// [`Fetch::fetch_files`], at most SCR_FETCH_WIDTH ranks reading the prefix at once:
    /// ranks go in waves, as the flush's writers do. Collective.
    fn fetch_files_in_waves(
        &mut self,
        id: u64,
        desc: &Dataset,
        files: &[FileRecord],
        in_place: bool,
    ) -> Result<()> {
        let width = self.settings.fetch.width;
        let mut result = Ok(());
        for wave in 0..self.job.ranks.div_ceil(width) {
            if wave > 0 {
                self.job.barrier();
            }
            if self.job.rank / width == wave {
                result = self
                    .fetch_files(id, desc, files, in_place)
                    .map_err(|e| e.blaming(self.prefix.path()));
            }
        }
        result
    }

    /// Copies this rank's files of a dataset from the prefix into cache (or, `in_place`,
    /// uses them where they are), checking sizes and CRCs, recording each file in the
    /// filemap before it is created. An error reading the prefix is the caller's to blame
    /// on the dataset (see [`Error::blaming`]).
    fn fetch_files(
        &mut self,
        id: u64,
        desc: &Dataset,
        files: &[FileRecord],
        in_place: bool,
    ) -> Result<()> {
        let (rank, ranks) = (self.job.rank, self.job.ranks);
        let prefix_dir = self.prefix.path();
        self.record_fetched(id, desc, files.len() as u64)?;
        let buf = self.settings.buffers.file;
        // a checkpoint its descriptor bypasses the cache for is read where it is, as
        // SCR_FETCH_BYPASS has every fetch do
        let in_place = in_place
            || self
                .redundancy
                .descriptor_for(desc.checkpoint_id(), desc.is_output())
                .bypass;
        // what is read back from the prefix is opened through directory handles: every
        // directory on the way and the file this user's, nobody else's to swap
        let prefix = safe_fs::Beneath::open(prefix_dir)?;
        for rec in files {
            rank2file::check_relative(&rec.name).map_err(Error::refused)?;
            let src = prefix_dir.join(&rec.name);
            let opened = if rec.segments.is_empty() {
                Some(rec.open_in(&prefix)?)
            } else {
                None
            };
            // SCR_FETCH_BYPASS: the restart reads the prefix's file where it is (measured and
            // CRC-checked like a copy); the cache keeps only the filemap entry
            let dataset_dir = self.cache.dataset_dir(id);
            let dst = if in_place && rec.segments.is_empty() {
                src.clone()
            } else {
                dataset_dir.join(&rec.name)
            };
            let key = dst.to_string_lossy().into_owned();
            let base = src
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = src
                .parent()
                .unwrap_or(prefix_dir)
                .to_string_lossy()
                .into_owned();
            let mut meta = Meta::for_user_file(&base, ranks, &rec.name, &dir, &base);
            self.cache.record_file(id, &key, &meta)?;
            let (size, crc) = match opened {
                Some(file) => {
                    let (size, crc) = io::copy_open_file_with_crc(
                        file,
                        &src,
                        &dst,
                        Some(&dataset_dir),
                        buf,
                        &mut |_| {},
                    )?;
                    (size, rec.crc.is_some().then_some(crc))
                }
                None => {
                    let (size, crc) = container::read_file(&prefix, &rec.segments, &dst, buf)?;
                    (size, Some(crc))
                }
            };
            if size != rec.size {
                return Err(Error::corrupt(format!(
                    "{}: {size} bytes, the summary records {}",
                    src.display(),
                    rec.size
                )));
            }
            if let (Some(want), Some(got)) = (rec.crc, crc) {
                if want != got {
                    // read in place, the file is fetched nowhere: name it once
                    let fetched = if dst == src {
                        format!("reading file {} in place", src.display())
                    } else {
                        format!("fetching file from {} to {}", src.display(), dst.display())
                    };
                    return Err(Error::corrupt(format!(
                        "CRC32 mismatch detected when {fetched} of dataset {id}: it has {}, \
                         the summary records {}",
                        scr::hash::format_crc32(got),
                        scr::hash::format_crc32(want)
                    )));
                }
                meta.set_crc32(got);
            }
            meta.set_size(size);
            meta.set_complete(true);
            self.cache.filemap.set_meta(id, rank, &key, &meta);
        }
        self.cache.write()
    }
}
