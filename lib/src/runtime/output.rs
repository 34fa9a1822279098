//! Output and checkpoint datasets: when to checkpoint (SCR_Need_checkpoint), starting one
//! with its descriptor, and completing it (sizes, validity, redundancy, flush when due).

use super::cache::forget_cached;
use super::{FLAG_CHECKPOINT, FLAG_OUTPUT, Phase, Scr};
use crate::event_log;
use crate::{comm, phases};
use scr::dataset::{Dataset, Origin as DatasetOrigin};
use scr::event_log::kinds;
use scr::flush::Location;
use scr::{Error, HashView, Result, io, layout, safe_fs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Whether this process said why an older checkpoint left the cache before a new one was
/// written (said once a job: it holds for every checkpoint after).
static SAID_OLDER_GOES_FIRST: AtomicBool = AtomicBool::new(false);

impl Scr {
    /// `SCR_Need_checkpoint`.
    pub fn need_checkpoint(&mut self) -> Result<bool> {
        self.poll_async_flushes(None)?;
        let schedule = &self.config.settings.schedule;
        let rules = scr::schedule::Rules {
            interval: schedule.interval,
            seconds: schedule.seconds,
            overhead: schedule.overhead_percent,
        };
        let decided = self.schedule.need(rules, Instant::now());
        let due = self.job.root_decides(decided);
        Ok(due || self.halt_decision(false))
    }

    /// `SCR_Start_output` (and `SCR_Start_checkpoint` with `FLAG_CHECKPOINT`).
    pub(crate) fn start_output(&mut self, name: Option<&str>, flags: i32) -> Result<()> {
        if self.phase != Phase::Idle {
            return Err(Error::refused(
                "SCR_Start_output called while another output or restart is open; complete it first",
            ));
        }
        // one dataset for all: checked before any rank can refuse alone, so that a rank
        // whose name the local checks below refuse still joins this collective
        self.check_same_dataset(name, flags)?;
        if flags & (FLAG_CHECKPOINT | FLAG_OUTPUT) == 0 {
            return Err(Error::refused(format!(
                "SCR_Start_output: flags {flags} make the dataset neither SCR_FLAG_CHECKPOINT \
                 nor SCR_FLAG_OUTPUT (SCR_FLAG_NONE only initializes variables): pass \
                 SCR_FLAG_CHECKPOINT, SCR_FLAG_OUTPUT or both"
            )));
        }
        // a dataset name names directories and lines of the index: one plain component
        if let Some(n) = name {
            layout::check_component(n, "the dataset name given to SCR_Start_output")?;
            layout::refuse_reserved(Path::new(n), "the dataset name")?;
        }
        // an application that writes before asking for a restart is not restarting
        self.fetch_pending = false;
        // From here every rank enters the output, whatever fails: the failures below are
        // agreed (an asynchronous flush's publishing) or this rank's alone (its eviction
        // bookkeeping, its filemap, its directory), and a rank that returned before the
        // phase is set would skip the collective its Complete must join.
        let polled = self.poll_async_flushes(None);
        let is_ckpt = flags & FLAG_CHECKPOINT != 0;
        if is_ckpt {
            self.schedule.start(Instant::now());
        }
        self.dataset_id += 1;
        if is_ckpt {
            self.checkpoint_id += 1;
        }
        let id = self.dataset_id;
        // before any file of it exists, so that whatever later forgets it (a drop, a
        // reshape, lost caches) cannot give its id to another dataset
        self.prefix.note("the new dataset's id", |p| {
            scr::dataset_ids::record_started(p, id)
        });
        let ckpt = is_ckpt.then_some(self.checkpoint_id);
        let output = flags & FLAG_OUTPUT != 0;
        let desc = self.redundancy.descriptor_for(ckpt, output);
        let (store, bypass, keep) = (desc.store.clone(), desc.bypass, desc.cache_size);
        if bypass && is_ckpt && self.job.is_root() {
            self.warn_of_a_bypass_over_its_namesake(name.unwrap_or_default(), id);
        }
        let evicted = self.make_room(&store, keep, bypass);
        // every rank describes the dataset alike (the name and the parameters are the same
        // everywhere); only the creation time differs, and Complete replaces it with rank
        // 0's, which it learns in the collective it needs anyway, so Start broadcasts nothing
        let origin = self.dataset_origin();
        let default_name = format!("scr.dataset.{id}");
        let desc = Dataset::create(
            id,
            name.unwrap_or(&default_name),
            is_ckpt,
            flags & FLAG_OUTPUT != 0,
            &origin,
            is_ckpt.then_some(self.checkpoint_id),
        );
        // record the dataset before its directory exists (filemap first)
        let reddesc = self
            .redundancy
            .reddesc_for(ckpt, output, &self.cache, self.job.rank);
        let prepared = polled
            .and(evicted)
            .and_then(|()| {
                self.cache.record_dataset(
                    id,
                    &desc,
                    &reddesc,
                    0,
                    &self.config.settings.flush,
                    &self.job.hosts,
                )
            })
            .and_then(|()| {
                safe_fs::create_dirs_in(
                    &self.cache.store_dir(&store),
                    &self.cache.dataset_dir(id),
                    scr::layout::DIR_MODE,
                )
            });
        self.job.debug(
            1,
            format_args!(
                "Starting dataset {id} `{}'",
                desc.name().unwrap_or_default()
            ),
        );
        // a rank that could not prepare (a full control or cache directory) still enters
        // the output, so that its Complete joins the others' and fails the dataset for all
        self.phase = Phase::Output {
            id,
            flags,
            bypass,
            broken: prepared.as_ref().err().map(ToString::to_string),
        };
        prepared
    }

    /// A checkpoint written with SCR_CACHE_BYPASS=1 goes straight to the prefix: where it
    /// is named as a checkpoint the prefix holds whole, files at the same paths are
    /// overwritten as they are written, and a job killed before it completes has neither
    /// (SCR v3.1 too). Said on rank 0, naming both and the way out.
    fn warn_of_a_bypass_over_its_namesake(&self, name: &str, id: u64) {
        let Ok(index) = scr::index::IndexFile::read(&layout::index_file(self.prefix.path())) else {
            return;
        };
        if let Some(old) = index
            .usable_checkpoints()
            .into_iter()
            .find(|e| e.name == name)
        {
            say!(
                "SCR: WARNING: checkpoint {name} (dataset {id}) is written to the prefix as \
                 it goes (SCR_CACHE_BYPASS=1), where dataset {} of the same name is whole: \
                 the files it writes at that one's paths replace them, so until it completes \
                 a job that ends has neither; give each checkpoint a name of its own, or set \
                 SCR_CACHE_BYPASS=0",
                old.id
            );
        }
    }

    /// Every rank must start the same dataset (api.rst: identical names and flags on all
    /// processes): rank 0's name and flags go to every rank, and a rank given others fails
    /// Start, naming both; so do the rest, having been told. Collective.
    fn check_same_dataset(&self, name: Option<&str>, flags: i32) -> Result<()> {
        let encode = |name: Option<&str>, flags: i32| {
            let mut b = flags.to_le_bytes().to_vec();
            if let Some(n) = name {
                b.push(1);
                b.extend_from_slice(n.as_bytes());
            }
            b
        };
        let mine = encode(name, flags);
        let root = self.job.root_bytes(mine.clone());
        let same = if root == mine {
            Ok(())
        } else {
            let root_flags = i32::from_le_bytes(root[..4].try_into().expect("4 bytes"));
            let root_name = (root.len() > 4).then(|| String::from_utf8_lossy(&root[5..]));
            let shown =
                |n: Option<&str>| n.map_or("NULL (SCR names it)".into(), |n| format!("`{n}'"));
            let what = if root_flags != flags {
                format!("flags {flags}, rank 0 flags {root_flags}")
            } else {
                format!(
                    "named it {}, rank 0 {}",
                    shown(name),
                    shown(root_name.as_deref())
                )
            };
            Err(Error::refused(format!(
                "SCR_Start_output: rank {} {what}: every rank must pass the same name and flags",
                self.job.rank
            )))
        };
        self.job.agree(
            same,
            "SCR_Start_output: another rank passed a name or flags other than rank 0's (every \
             rank must pass the same; that rank says which)",
        )
    }

    /// Who creates a dataset now, as its descriptor records it.
    pub(super) fn dataset_origin(&self) -> DatasetOrigin {
        DatasetOrigin {
            user: Some(self.cache.place().user.clone()),
            jobname: self.config.settings.origin.job_name.clone(),
            jobid: Some(self.cache.place().jobid.clone()),
            cluster: self.config.settings.origin.cluster_name.clone(),
            created_us: chrono::Utc::now().timestamp_micros().max(0) as u64,
        }
    }

    /// Whether an output dataset is open on this rank (its Complete is still to come).
    pub(crate) fn in_output(&self) -> bool {
        matches!(self.phase, Phase::Output { .. })
    }

    /// Makes room in `store` for a new dataset, so that at most `keep` are cached
    /// (SCR_CACHE_SIZE): the oldest go, except the newest checkpoint while it is not on the
    /// prefix, which stays until the new one completes (it is the only copy there is). Its
    /// collective steps run on every rank whatever fails; the error returned is this
    /// rank's bookkeeping's, which the caller takes into the dataset's agreement.
    /// Collective.
    fn make_room(&mut self, store: &str, keep: u64, bypass: bool) -> Result<()> {
        // the datasets any rank caches there: ranks whose filemaps differ (a node that lost
        // its control directory knows none of a dataset the others still hold) choose the
        // same victims, and so enter the same collectives below
        let mut cached = self.job.union(&self.cache.datasets_in_store(store));
        let protected = self.newest_unflushed_checkpoint();
        let unfinished: Vec<u64> = cached
            .iter()
            .copied()
            .filter(|&d| self.cache.unfinished(d))
            .collect();
        let unfinished = self.job.union(&unfinished);
        let mut eviction =
            scr::cache::choose_eviction(&cached, keep as usize, protected, &unfinished);
        let mut freed_for_room = false;
        if let Some(kept) = eviction.deferred
            && !bypass
            && !self.room_beside(store, kept)
        {
            // a new checkpoint like it cannot be written beside it: SCR v3.1's order, which
            // frees the store before the next checkpoint is written
            if self.job.is_root() && !SAID_OLDER_GOES_FIRST.swap(true, Ordering::Relaxed) {
                say!(
                    "SCR: {} is deleted before the next checkpoint is written: its cache store {} has no room for two (SCR_CACHE_SIZE={keep}) and it is not on the prefix, so until the next one completes no checkpoint is cached; a larger store, SCR_CACHE_BYPASS=1 or a flush (SCR_FLUSH) keeps one",
                    self.cache.dataset_name(kept),
                    self.cache.store_dir(store).display()
                );
            }
            eviction.now.push(kept);
            eviction.deferred = None;
            freed_for_room = true;
        }
        if eviction.deferred.is_some() {
            self.cache.deferred_eviction = eviction.deferred;
        }
        for victim in &eviction.now {
            if self.flushes.flushing(*victim) {
                // the only wait an asynchronous flush imposes: its files must stay until copied
                self.poll_async_flushes(Some(*victim))?;
            }
            self.delete_cached(*victim);
        }
        if freed_for_room {
            // discarded files are unlinked in the background once the call returns; the
            // space this checkpoint needs must be free before the application writes it
            self.cache.release_discards();
            self.cache.wait_for_discards();
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
        self.cache.drop_held_before(keep_from)
    }

    /// Whether the store has room for a new checkpoint the size of `kept` beside it, on
    /// every node (the bytes of `kept` its ranks cache there against the store's free
    /// space). Collective, so that every rank evicts alike.
    fn room_beside(&self, store: &str, kept: u64) -> bool {
        let mine: u64 = self
            .cache
            .my_files(kept)
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        let on_node = comm::sum_u64(self.job.node_comm(), mine);
        let room =
            io::space_of(&self.cache.store_dir(store)).is_none_or(|(free, _)| free >= on_node);
        self.job.all(room)
    }

    /// `SCR_Complete_output`: records sizes, agrees on validity, applies the redundancy
    /// scheme, flushes when due. Returns whether every rank's output was valid.
    pub(crate) fn complete_output(&mut self, valid: bool) -> Result<bool> {
        let Phase::Output {
            id,
            flags,
            bypass,
            broken,
        } = self.phase.clone()
        else {
            return Err(Error::refused(
                "SCR_Complete_output called without SCR_Start_output",
            ));
        };
        self.phase = Phase::Idle;
        if let Some(why) = &broken {
            say!(
                "SCR: ERROR: rank {}: dataset {id} was not prepared here ({why}): it is marked invalid",
                self.job.rank
            );
        }
        phases::take();
        let mut lap = phases::Lap::start();
        let (desc, failed) = self.record_completion(id, valid && broken.is_none())?;
        lap.lap("record");
        let name = desc.name().unwrap_or_default().to_string();
        if failed > 0 && self.job.is_root() {
            say!(
                "SCR: ERROR: dataset {id} `{name}' is not complete: {failed} of {} rank(s) marked \
                 it invalid or lack a file they routed (those ranks say why); it is discarded",
                self.job.ranks
            );
        }
        if failed > 0 {
            let mut fields = vec![
                ("name", name),
                ("dset", id.to_string()),
                ("failed_ranks", failed.to_string()),
            ];
            // the time a failed checkpoint took is time lost (scr report counts it)
            if flags & FLAG_CHECKPOINT != 0
                && let Some(secs) = self.schedule.elapsed(Instant::now())
            {
                fields.push(("secs", format!("{secs:.3}")));
            }
            self.log.event(kinds::CHECKPOINT_FAILED, &fields);
            self.delete_cached(id);
            self.cache.deferred_eviction = None; // the older checkpoint is still the newest good one
            return Ok(false);
        }
        let is_ckpt = flags & FLAG_CHECKPOINT != 0;
        // as in SCR, a checkpoint its scheme could not protect is not a valid checkpoint
        if is_ckpt && let Err(e) = self.redundancy.apply(&self.job, &mut self.cache, id) {
            if self.job.is_root() {
                say!("SCR: ERROR: dataset {id} `{name}' is discarded: {e}");
            }
            self.delete_cached(id);
            self.cache.deferred_eviction = None;
            return Ok(false);
        }
        lap.lap("redundancy");
        self.publish_in_cache(id, &desc, is_ckpt)?;
        lap.lap("flush file");
        let every = self.config.settings.flush.every;
        // a dataset written to the prefix is published there at once: nothing to copy
        let due = bypass
            || flags & FLAG_OUTPUT != 0
            || (is_ckpt && every > 0 && self.checkpoint_id.is_multiple_of(every));
        // output datasets leave the cache once flushed: they go synchronously; a store's
        // FLUSH= decides for the checkpoints cached there
        let in_background = !bypass
            && is_ckpt
            && flags & FLAG_OUTPUT == 0
            && (self.redundancy)
                .descriptor_for(self.cache.checkpoint_of(id), false)
                .flush_in_background
                .unwrap_or(self.config.settings.flush.in_background);
        // a checkpoint is complete, and logged with what it cost, before its flush: the
        // flush is the prefix's to log (FLUSH), and a run killed while it flushes still
        // logged the checkpoint it has in cache
        let total_bytes = desc.size().unwrap_or(0);
        let secs = self.schedule.elapsed(Instant::now()).filter(|_| is_ckpt);
        let mut fields = vec![("name", name), ("dset", id.to_string())];
        match secs {
            Some(secs) => fields.extend(event_log::timing(total_bytes, secs)),
            None => fields.push(("bytes", total_bytes.to_string())),
        }
        if let Some(files) = desc.files() {
            fields.push(("files", files.to_string()));
        }
        if is_ckpt {
            self.log.event(kinds::CHECKPOINT, &fields);
        }
        if due {
            self.flush_dataset(id, in_background)?;
            lap.lap("flush");
        }
        if flags & FLAG_OUTPUT != 0 && !is_ckpt {
            self.delete_cached(id);
        }
        if !is_ckpt {
            // an output is complete once on the prefix, where it lives
            self.log.event(kinds::OUTPUT, &fields);
        }
        if let Some(secs) = secs {
            self.job.debug(
                1,
                format_args!(
                    "scr_complete_output: {}",
                    self.cache.transfer_cost(id, secs)
                ),
            );
        }
        self.job.debug(
            1,
            format_args!("Completed dataset {id} `{}'", self.dataset_name(id)),
        );
        if is_ckpt {
            // a new checkpoint supersedes the one restarted from
            self.restart = None;
            self.reshaped = None;
            self.schedule.complete(Instant::now());
            // the halt decision rank 0 sends is the last step every rank waits for
            self.check_halt(true)?;
        } else {
            self.job.barrier();
        }
        lap.lap("halt check");
        if self.job.debugging(2) && self.job.is_root() {
            say!(
                "SCR: rank 0: scr_complete_output phases: {}",
                phases::format(&phases::take())
            );
        }
        Ok(true)
    }

    /// Records this rank's files of `id` (sizes, CRCs with SCR_CRC_ON_COPY, completeness)
    /// and the job's totals in the dataset. Returns the dataset and how many ranks failed.
    fn record_completion(&mut self, id: u64, valid: bool) -> Result<(Dataset, u64)> {
        let crc_on_copy = self.config.settings.crc.on_copy;
        let rank = self.job.rank;
        let started = Instant::now();
        // no barrier first: the sums below wait for every rank, sleeping as they do
        let (mut files, mut bytes, mut ok) = (0u64, 0u64, valid);
        for f in self.cache.my_files(id) {
            let mut meta = self.cache.filemap.meta(id, rank, &f).unwrap_or_default();
            let stat = std::fs::metadata(&f);
            if let Ok(m) = &stat {
                meta.set_mode(std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
            }
            let size = stat.map(|m| m.len());
            if size.is_err() {
                say!("SCR: ERROR: rank {rank}: {f} was routed for dataset {id} but not written");
            }
            let mut complete = valid && size.is_ok();
            meta.set_size(*size.as_ref().unwrap_or(&0));
            if crc_on_copy && complete {
                // an unreadable file makes the checkpoint incomplete on every rank (through
                // the sums below), where leaving the call here would hang the others
                match io::file_crc32(Path::new(&f)) {
                    Ok(crc) => meta.set_crc32(crc),
                    Err(e) => {
                        say!("SCR: ERROR: rank {rank}: {e}");
                        complete = false;
                    }
                }
            }
            ok &= complete;
            meta.set_complete(complete);
            self.cache.filemap.set_meta(id, rank, &f, &meta);
            files += 1;
            bytes += size.unwrap_or(0);
        }
        // (each rank the application told would say only that; a full file system is news)
        let full = if valid {
            String::new()
        } else {
            full_file_system_note(&self.cache.dataset_dir(id))
        };
        if !valid && (!full.is_empty() || self.config.settings.debug >= 1) {
            say!(
                "SCR: ERROR: rank {rank}: dataset {id} is marked invalid here (SCR_Complete_output \
                 was called with valid=0{full})"
            );
        }
        self.cache.filemap.set_expected_files(id, rank, files);
        let mut desc = self.cache.dataset(id);
        let created_here = if self.job.is_root() {
            desc.created_us().unwrap_or(0)
        } else {
            0
        };
        phases::add("record: files", started.elapsed());
        let started = Instant::now();
        let [total_files, total_bytes, failed, created] = crate::comm::sums_u64(
            self.job.world(),
            [files, bytes, u64::from(!ok), created_here],
        );
        desc.set_totals(total_files, total_bytes, failed == 0);
        desc.set_created_us(created);
        self.cache.filemap.set_dataset(id, rank, &desc);
        phases::add("record: totals", started.elapsed());
        let started = Instant::now();
        // the other ranks go on into the scheme and the halt decision: a control directory
        // that cannot take the filemap now (full, failing) is warned of, and the filemap is
        // written again as the checkpoint goes on; until then a restart finds the dataset
        // incomplete here and uses another
        if let Err(e) = self.cache.write() {
            say!("SCR: WARNING: rank {rank}: {e}");
        }
        phases::add("record: filemap", started.elapsed());
        Ok((desc, failed))
    }

    /// A completed dataset takes its place in cache: the checkpoint kept until this one
    /// completed goes now, recorded in the same flush-file update as the new dataset (each
    /// one is a locked, fsynced write on the prefix).
    fn publish_in_cache(&mut self, id: u64, desc: &Dataset, is_ckpt: bool) -> Result<()> {
        let evicted = if is_ckpt {
            self.cache.deferred_eviction.take()
        } else {
            None
        };
        if let Some(old) = evicted {
            if self.flushes.flushing(old) {
                self.poll_async_flushes(Some(old))?;
            }
            self.cache.discard(old);
        }
        self.prefix
            .note_in_flush_file("the new dataset in the flush file", |f| {
                // nothing of an older dataset's entry (its locations) may describe this one
                f.remove(id);
                f.describe_dataset(id, desc);
                f.set_location(id, Location::Cache);
                if let Some(old) = evicted {
                    forget_cached(f, old);
                }
            });
        Ok(())
    }
}

/// Why a write into `dir` may have failed, when the reason is its file system: full, or
/// nearly (an application told of a short write marks its output invalid, and says no more).
fn full_file_system_note(dir: &Path) -> String {
    let Some((free, size)) = scr::io::space_of(dir) else {
        return String::new();
    };
    if size > 0 && free < (size / 100).max(1 << 20) {
        format!(
            "; its cache directory {} is full ({free} of {size} bytes free): if the application \
             marked it invalid because a write failed, the cache is too small for this dataset \
             (a larger store, a smaller SCR_CACHE_SIZE, or SCR_CACHE_BYPASS=1)",
            dir.display()
        )
    } else {
        String::new()
    }
}
