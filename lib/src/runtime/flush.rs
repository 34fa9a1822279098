//! Flushing a cached dataset to the prefix: the synchronous flush, and publishing a flushed
//! dataset there (its rank2file tree, summary, index entry and `scr.current`), which the
//! background flush ends with too.

use super::cache::CacheManager;
use super::job::Job;
use super::prefix_store::{PrefixStore, say_deletions};
use crate::comm;
use crate::event_log::{self, EventLog};
use mpi::topology::Color;
use mpi::traits::*;
use scr::container;
use scr::event_log::kinds;
use scr::flush::Location;
use scr::hash::Hash;
use scr::params::Settings;
use scr::rank2file::{self, FileRecord, RankFiles};
use scr::{Error, Result, io, layout, safe_fs};
use std::path::Path;
use std::time::Instant;

/// What a flush needs: the job to do it with, the cache it copies from, the prefix it
/// publishes on. Every method is collective.
pub(super) struct Flush<'a> {
    pub(super) job: &'a Job,
    pub(super) cache: &'a CacheManager,
    pub(super) prefix: &'a PrefixStore,
    pub(super) settings: &'a Settings,
    pub(super) log: &'a EventLog,
}

impl Flush<'_> {
    /// Synchronous flush of a cached dataset to the prefix. Collective.
    pub(super) fn flush(&self, id: u64) -> Result<()> {
        let name = self.cache.dataset_name(id);
        self.job
            .debug(1, format_args!("Initiating flush of dataset {id} `{name}'"));
        // held until the flush ends, taken before anything says it runs
        let _writing = self.hold_writing(id);
        self.job.barrier();
        self.prefix
            .note_in_flush_file("the flush's start in the flush file", |f| {
                f.set_location(id, Location::Flushing)
            });
        self.record_dataset_dir(id);
        self.job.barrier();
        let started = Instant::now();
        let want_crc = self.settings.crc.on_flush;
        let buf = self.settings.buffers.file;
        // at most SCR_FLUSH_WIDTH ranks write to the prefix at once: ranks go in waves
        let width = self.settings.flush.width;
        let (rank, ranks) = (self.job.rank, self.job.ranks);
        let waves = ranks.div_ceil(width);
        let containers = self.settings.flush.containers.then(|| {
            let mine = self
                .cache
                .user_files(id)
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum();
            let size = self.settings.flush.container_size;
            (self.container_start(mine), size)
        });
        let mut records = Vec::new();
        let mut staged = Vec::new();
        let mut result = Ok(());
        for wave in 0..waves {
            if wave > 0 {
                self.job.barrier();
            }
            if rank / width != wave {
                continue;
            }
            result = self.copy_to_prefix(id, want_crc, buf, containers, &mut records, &mut staged);
        }
        if let Err(e) = &result {
            say!("SCR: ERROR: rank {rank}: flush of dataset {id}: {e}");
        }
        let copy_secs = started.elapsed().as_secs_f64();
        // ranks done early wait sleeping, not in the gather's busy-poll
        self.job.barrier();
        let copied = self.publish(id, records, staged, result)?;
        self.job.debug_rank(
            2,
            format_args!(
                "flush of dataset {id}: copied in {copy_secs:.3} s, all ranks done after {:.3} s",
                started.elapsed().as_secs_f64()
            ),
        );
        self.job.barrier();
        if copied {
            log_transfer(self.log, self.cache, kinds::FLUSH, id, started);
            let secs = started.elapsed().as_secs_f64();
            self.job.debug(
                1,
                format_args!("scr_flush_sync: {}", self.cache.transfer_cost(id, secs)),
            );
            self.job.debug(
                1,
                format_args!("scr_flush_sync: Flush succeeded for dataset {id} `{name}'"),
            );
            Ok(())
        } else {
            self.job.debug(
                1,
                format_args!("scr_flush_sync: Flush failed for dataset {id} `{name}'"),
            );
            Err(Error::collective(format!(
                "flush of dataset {id} failed on at least one rank"
            )))
        }
    }

    /// Where this rank's bytes start in the dataset's container stream: the node's total is
    /// summed on the node, node masters scan across nodes, ranks scan within their node,
    /// so each node's files lie together.
    fn container_start(&self, my_bytes: u64) -> u64 {
        let node = self.job.node_comm();
        let node_total = comm::sum_u64(node, my_bytes);
        let node_start = if node.rank() == 0 {
            comm::exclusive_sum_u64(self.job.across(), node_total)
        } else {
            0
        };
        comm::bcast_u64(node, 0, node_start) + comm::exclusive_sum_u64(node, my_bytes)
    }

    /// Records in the flush file the prefix subdirectory every file of dataset `id` lies
    /// below, when there is one: rank 0's first file's top directory, if every rank's files
    /// are below it. A flush of the dataset that a kill cuts short leaves its copies there,
    /// and the next job, whatever its job id, finds them by it. Collective.
    pub(super) fn record_dataset_dir(&self, id: u64) {
        let prefix = self.prefix.path();
        let targets = self.cache.flush_targets(id).unwrap_or_default();
        let top = |dst: &Path| -> Option<String> {
            let mut parts = dst.strip_prefix(prefix).ok()?.components();
            let first = parts.next()?;
            // (a file right in the prefix has no directory of its dataset's own)
            parts.next()?;
            Some(first.as_os_str().to_string_lossy().into_owned())
        };
        let proposed = match self.job.is_root() {
            true => targets
                .first()
                .and_then(|t| top(&t.dst))
                .unwrap_or_default(),
            false => String::new(),
        };
        let dir = comm::bcast_bytes(self.job.world(), 0, proposed.into_bytes());
        let dir = String::from_utf8(dir).unwrap_or_default();
        let fits = targets.iter().all(|t| top(&t.dst).as_deref() == Some(&dir));
        if self.job.all(!dir.is_empty() && fits) {
            self.prefix
                .note_in_flush_file("the dataset's directory in the flush file", |f| {
                    f.set_dir(id, &dir)
                });
        }
    }

    /// SCR_Init: a flush a previous run began and never finished (the flush file still says
    /// FLUSHING: a rank killed mid-copy) may have left temporaries of its copies on the
    /// prefix. Every rank removes them from the directories its own files of such a dataset
    /// go to (through handles), before any flush of this run writes there; rank 0 sweeps
    /// the directory the flush file records for each, whatever job left it. Only below a
    /// directory no live writer holds ([`scr::prefix::writing`]): a transfer agent of the
    /// last run still copying, or a flush of another job on the same prefix, keeps its
    /// temporaries. Collective.
    pub(super) fn sweep_interrupted(&self) {
        let prefix_dir = self.prefix.path();
        let mut dirs = std::collections::BTreeSet::new();
        let interrupted = self.prefix.interrupted_flushes(self.job);
        for &id in &interrupted {
            for target in self.cache.flush_targets(id).unwrap_or_default() {
                // (not the prefix itself, which others may share: SCR's temporaries of a
                // dataset are in the directories below it)
                if let Some(rel) = target
                    .dst
                    .parent()
                    .and_then(|p| p.strip_prefix(prefix_dir).ok())
                    .filter(|rel| !rel.as_os_str().is_empty())
                {
                    dirs.insert(rel.to_path_buf());
                }
            }
        }
        if !dirs.is_empty()
            && let Ok(prefix) = safe_fs::Beneath::open(prefix_dir)
        {
            for dir in &dirs {
                // (the ranks sweeping beside this one hold the lock a moment only)
                if let Some(quiet) = quiet_below(prefix_dir, dir) {
                    prefix.remove_temporaries(dir);
                    quiet.release();
                }
            }
        }
        self.job.barrier();
        if !interrupted.is_empty() {
            self.prefix.note("what a flush cut short left", |prefix| {
                let (_, live) = scr::prefix::writing::sweep_dead_flushes(prefix, &interrupted)?;
                for id in live {
                    self.job.debug(
                        1,
                        format_args!(
                            "dataset {id}'s flush was cut short, but a flush still writes where \
                             it did: what it left stays until that one ends"
                        ),
                    );
                }
                Ok(())
            });
        }
        self.job.barrier();
    }

    /// What this rank holds while it may write dataset `id`'s copies below the prefix: the
    /// lock of each of their top directories, so no sweep of a dead flush touches them.
    pub(super) fn hold_writing(&self, id: u64) -> Vec<scr::prefix::writing::Writing> {
        let targets = self.cache.flush_targets(id).unwrap_or_default();
        let rank = self.job.rank;
        scr::prefix::writing::writing_below_all(
            self.prefix.path(),
            targets.iter().map(|t| t.dst.as_path()),
            &mut |e| say!("SCR: WARNING: rank {rank}: flush of dataset {id}: {e}"),
        )
    }

    /// The end of every flush, synchronous or not, in the order that keeps the prefix
    /// restartable however it is cut short (see [`scr::prefix::placing`]): when every rank
    /// copied its files (`copied` is this rank's outcome; `staged`, its copies waiting
    /// beside their places), the ranks record where their copies wait and write the
    /// dataset's rank2file tree, rank 0 writes its summary (the commit), each rank puts its
    /// copies in their places, and rank 0 publishes the dataset and forgets the records.
    /// Before the commit, a failure removes the copies: what stands at their places (an
    /// older checkpoint's files at the same paths) stays as it was, and the flush file
    /// stops saying FLUSHING. After it, rank 0 places what a rank could not. Collective;
    /// returns whether published.
    pub(super) fn publish(
        &self,
        id: u64,
        records: Vec<FileRecord>,
        staged: Vec<safe_fs::Staged>,
        copied: Result<()>,
    ) -> Result<bool> {
        let copied = self.job.agree(
            copied,
            &format!("another rank could not copy its files of dataset {id}"),
        );
        let desc = self.cache.dataset(id);
        let committed = copied.and_then(|()| {
            let leaves = self.write_rank2file_leaves(id, records, &staged)?;
            let ranks = self.job.ranks;
            self.prefix.agreed(
                self.job,
                &format!("committing dataset {id} on the prefix"),
                |prefix| {
                    // the leaves' entries are read here, where a failure is every rank's
                    let entries = leaves
                        .iter()
                        .map(|bytes| rank2file::unpack_entry(bytes).map_err(Error::corrupt))
                        .collect::<Result<Vec<_>>>()?;
                    rank2file::write_upper(prefix, &layout::dataset_meta_rel(id), ranks, entries)?;
                    scr::prefix::placing::commit(prefix, id, &desc)
                },
            )
        });
        if committed.is_err() {
            self.discard(&staged);
            self.prefix.note("the abandoned flush's records", |prefix| {
                scr::prefix::placing::abandon(prefix, id)
            });
            self.prefix
                .note_in_flush_file("the flush's end in the flush file", |f| {
                    f.unset_location(id, Location::Flushing)
                });
            return Ok(false);
        }
        let placed = self.place(&staged);
        if let Err(e) = &placed {
            say!(
                "SCR: ERROR: rank {}: flush of dataset {id}: {e}; rank 0 puts its files in place",
                self.job.rank
            );
        }
        let all_placed = self.job.all(placed.is_ok());
        let keep = self.settings.prefix.size;
        self.prefix.agreed(
            self.job,
            &format!("publishing dataset {id} on the prefix"),
            |prefix| {
                if !all_placed {
                    scr::prefix::placing::place_recorded(prefix, id)?;
                }
                if let Some(w) = scr::prefix::publish_written(prefix, id, &desc, true)? {
                    say!("SCR: WARNING: {w}");
                }
                scr::prefix::placing::clear(prefix, id)?;
                // the dataset is published; an older one that cannot be deleted stays (said)
                let done = scr::prefix::enforce_window(prefix, keep);
                say_deletions(&done, &format!("SCR_PREFIX_SIZE={keep}"));
                Ok(())
            },
        )?;
        Ok(true)
    }

    /// The leaves of a flushed dataset's rank2file tree, written where the file lists are:
    /// the ranks' lists, in rank order, are cut into leaves by their byte offsets
    /// ([`rank2file::LEAF_SHARE`] each; a larger list gets a leaf of its own), each leaf's
    /// first rank gathers and writes it, and rank 0 gets each leaf's entry, packed
    /// (returned there, empty elsewhere), for the levels above. No rank receives more than a leaf's lists and the leaves' entries, where
    /// gathering every list on rank 0 grows with the job. Collective; fails on every rank
    /// when a leaf could not be written.
    fn write_rank2file_leaves(
        &self,
        id: u64,
        records: Vec<FileRecord>,
        staged: &[safe_fs::Staged],
    ) -> Result<Vec<Vec<u8>>> {
        let (world, rank) = (self.job.world(), self.job.rank);
        let mut mine = RankFiles::new();
        mine.insert(rank, records);
        let leaf = rank2file::leaf_hash(&mine).pack();
        let share = rank2file::LEAF_SHARE as u64;
        let size = leaf.len() as u64;
        let offset = comm::exclusive_sum_u64(world, size);
        let most = rank2file::ENTRIES_BUDGET as u64;
        if !self.job.all(size <= most) {
            return Err(Error::collective(format!(
                "a rank's list of files of dataset {id} exceeds {most} bytes: too many files for one rank"
            )));
        }
        // a list larger than a share gets a leaf of its own (the next rank's offset is past
        // its share, so no other list shares its bucket's second color)
        let bucket = offset / share;
        let color = Color::with_value((2 * bucket + u64::from(size > share)) as i32);
        let leaf_comm = world
            .split_by_color_with_key(color, rank as i32)
            .expect("a color was given");
        let lists = comm::gather_bytes(&leaf_comm, 0, &leaf);
        // where each rank's copies wait, recorded beside its leaf (the commit's records)
        let copies =
            comm::gather_bytes(&leaf_comm, 0, &scr::prefix::placing::to_hash(staged).pack());
        let writer = leaf_comm.rank() == 0;
        let written = if writer {
            let prefix = self.prefix.path();
            (|| {
                let mut map = RankFiles::new();
                for bytes in &lists {
                    let h = Hash::unpack(bytes)
                        .map_err(|e| Error::corrupt(format!("rank file list: {e}")))?;
                    rank2file::parse_leaf(&h, &mut map).map_err(Error::corrupt)?;
                }
                safe_fs::create_dirs_in(
                    prefix,
                    &layout::dataset_meta_dir(prefix, id),
                    layout::DIR_MODE,
                )?;
                let mut waiting = Hash::new();
                for bytes in &copies {
                    let h = Hash::unpack(bytes)
                        .map_err(|e| Error::corrupt(format!("rank copy list: {e}")))?;
                    scr::prefix::placing::merge(&mut waiting, &h);
                }
                scr::prefix::placing::write_record(prefix, id, rank, &waiting)?;
                rank2file::write_leaf(prefix, &layout::dataset_meta_rel(id), &map)
            })()
        } else {
            Ok(None)
        };
        if let Err(e) = &written {
            say!("SCR: ERROR: rank {rank}: writing a rank2file leaf: {e}");
        }
        let written = self.job.agree(
            written,
            &format!("the rank2file map of dataset {id} could not be written on the prefix"),
        )?;
        let writers_color = if writer {
            Color::with_value(0)
        } else {
            Color::undefined()
        };
        let mut entries = Vec::new();
        if let Some(writers) = world.split_by_color(writers_color) {
            let entry = written
                .map(|e| rank2file::pack_entry(&e))
                .unwrap_or_default();
            entries = comm::gather_bytes(&writers, 0, &entry);
            entries.retain(|e| !e.is_empty());
        }
        Ok(entries)
    }

    /// Puts this rank's staged copies in their places. On an error, those not placed yet
    /// keep waiting: the flush committed, and rank 0 places them from the records.
    fn place(&self, staged: &[safe_fs::Staged]) -> Result<()> {
        if staged.is_empty() {
            return Ok(());
        }
        let prefix = safe_fs::Beneath::open(self.prefix.path())?;
        staged.iter().try_for_each(|s| prefix.place(s))
    }

    /// Removes this rank's staged copies of a flush that is not published (their places
    /// keep what they hold).
    fn discard(&self, staged: &[safe_fs::Staged]) {
        if staged.is_empty() {
            return;
        }
        let removed = safe_fs::Beneath::open(self.prefix.path())
            .and_then(|prefix| staged.iter().try_for_each(|s| prefix.discard(s)));
        if let Err(e) = removed {
            say!("SCR: WARNING: rank {}: {e}", self.job.rank);
        }
    }

    /// Copies this rank's files of a dataset beside their places under the prefix (each
    /// into `staged`, placed by [`Flush::publish`]), or into containers from stream
    /// position `start` (of containers of `size` bytes) when given: a dataset's own
    /// directory under `.scr`, which no other dataset names.
    fn copy_to_prefix(
        &self,
        id: u64,
        want_crc: bool,
        buf: usize,
        containers: Option<(u64, u64)>,
        records: &mut Vec<FileRecord>,
        staged: &mut Vec<safe_fs::Staged>,
    ) -> Result<()> {
        // the new directory entries must be durable too before the index says COMPLETE
        let mut dirs = std::collections::BTreeSet::new();
        let mut at = containers.map(|(start, _)| start);
        let prefix = self.prefix.path();
        // files of a checkpoint written in place that a restart would refuse (others may
        // write them): how many, and why the first is
        let mut refused: (usize, Option<Error>) = (0, None);
        let is_ckpt = self.cache.checkpoint_of(id).is_some();
        for target in self.cache.flush_targets(id)? {
            let (src, dst) = (&target.src, &target.dst);
            let (size, crc, segments) = match (&mut at, containers) {
                (Some(at), Some((_, container_size))) => {
                    let len = std::fs::metadata(src)
                        .map_err(|e| Error::io(src, "stat", e))?
                        .len();
                    let segments = container::place(id, *at, len, container_size);
                    *at += len;
                    let (size, crc) = container::write_file(src, prefix, &segments, &mut |_| {})?;
                    target.check_copied(size, Some(crc))?;
                    // an empty file takes no container: nothing of this rank's need be in
                    // the containers' directory (nor need it exist, when every file is empty)
                    if size > 0 {
                        dirs.insert(layout::dataset_meta_dir(prefix, id));
                    }
                    (size, want_crc.then_some(crc), segments)
                }
                _ => {
                    // what was recorded when the checkpoint completed (its size, and its CRC
                    // with SCR_CRC_ON_COPY) is checked on the way: a file the cache changed
                    // since is not published (its copy waits beside its place, removed with
                    // the flush's other staged copies)
                    let (size, got, copy) =
                        io::stage_copy_with_crc(src, dst, prefix, buf, &mut |_| {})?;
                    // (a file written in place on the prefix, SCR_CACHE_BYPASS, is no copy:
                    // ranks sharing it each recorded its size when they completed)
                    let copied = copy.is_some();
                    staged.extend(copy);
                    if copied {
                        target.check_copied(size, Some(got))?;
                    } else if is_ckpt
                        && let Err(e) = read_back_as_a_restart(prefix, dst)
                        && e.is_untrusted()
                    {
                        refused.0 += 1;
                        refused.1.get_or_insert(e);
                    }
                    if let Some(dir) = dst.parent() {
                        dirs.insert(dir.to_path_buf());
                    }
                    (size, want_crc.then_some(got), vec![])
                }
            };
            records.push(FileRecord {
                name: target.orig.clone(),
                size,
                crc,
                segments,
            });
        }
        if let (n, Some(why)) = refused {
            say!(
                "SCR: WARNING: rank {}: {n} file(s) of dataset {id} `{}' written in place on \
                 the prefix (SCR_CACHE_BYPASS) will not be read back by a restart, which reads \
                 only files nobody else may write: {why}. A default access control list on the \
                 directory they are written in gives every file created there such an entry: \
                 remove it there (setfacl -k DIR) or take write away from the files (chmod g-w \
                 narrows the ACL's mask), and a restart takes this checkpoint",
                self.job.rank,
                self.cache.dataset_name(id)
            );
        }
        dirs.iter().try_for_each(|d| io::sync_dir(d))
    }
}

/// Opens `path`, a file below `prefix`, as a restart reads it back
/// ([`safe_fs::Beneath::open_file`]): an error says why a restart would refuse it.
fn read_back_as_a_restart(prefix: &std::path::Path, path: &std::path::Path) -> Result<()> {
    let (root, rel) = safe_fs::below(prefix, path)?;
    safe_fs::Beneath::open(&root)?.open_file(&rel).map(drop)
}

/// The exclusive lock of the top directory `dir` (relative to `prefix`) is in, taken
/// within a second: none while a writer holds it.
fn quiet_below(prefix: &Path, dir: &Path) -> Option<scr::prefix::writing::NoWriter> {
    let top = scr::prefix::writing::top_dir(prefix, &dir.join("-"))?;
    for _ in 0..50 {
        match scr::prefix::writing::no_writer(prefix, &top) {
            Ok(Some(quiet)) => return Some(quiet),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(_) => return None,
        }
    }
    None
}

/// Logs a flush or fetch of dataset `id` that started at `started`: its size, time and
/// bandwidth.
pub(super) fn log_transfer(
    log: &EventLog,
    cache: &CacheManager,
    kind: &str,
    id: u64,
    started: Instant,
) {
    let desc = cache.dataset(id);
    let mut fields = vec![
        ("name", desc.name().unwrap_or_default().to_string()),
        ("dset", id.to_string()),
    ];
    let bytes = desc.size().unwrap_or(0);
    fields.extend(event_log::timing(bytes, started.elapsed().as_secs_f64()));
    // (how many files it moved: the database's transfers keep it, as v3.1's do)
    if let Some(files) = desc.files() {
        fields.push(("files", files.to_string()));
    }
    log.event(kind, &fields);
}
