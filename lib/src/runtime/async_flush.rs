//! Asynchronous flush (SCR_FLUSH_ASYNC). Complete_checkpoint hands the
//! dataset's files to a background thread on each rank and returns to the application. The
//! thread copies them to the prefix throttled by SCR_FLUSH_ASYNC_BW (bytes per second per
//! node, shared by its ranks) and SCR_FLUSH_ASYNC_PERCENT (the share of its time it may
//! spend copying), and records each file as WRITTEN in the node's transfer file once it is
//! fsynced. Later collective calls (Need_checkpoint, Start, Complete, Finalize) notice when
//! every rank is done and publish the dataset — summary, rank2file, index — as a
//! synchronous flush does. Several flushes may be outstanding at once.
//!
//! With `scr transfer` running on the node (scr-run starts one per node), the thread only
//! watches the transfer file while the agent copies, and copies what is left itself
//! should the agent go away.
//!
//! A flush cut short (the job killed) leaves the flush file saying FLUSHING with the
//! dataset still in cache; the post-run drain then copies it from the caches (SCR loses it).

use super::flush::Flush;
use mpi::traits::Communicator;
use scr::flush::FlushTarget;
use scr::flush::Location;
use scr::rank2file::FileRecord;
use scr::transfer::{self, Agent, Command, State, Throttle, TransferEntry, TransferFile};
use scr::{HashView, Result, layout};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The flushes running in the background on this rank, oldest first (the same list on
/// every rank: they start and are published in collective calls).
#[derive(Default)]
pub(super) struct AsyncFlushes {
    running: Vec<AsyncFlush>,
}

/// One rank's part of a flush in the background.
struct AsyncFlush {
    id: u64,
    started: Instant,
    worker: Option<JoinHandle<Copied>>,
    /// Held until the flush is published or failed: no sweep of a dead flush touches its
    /// copies meanwhile.
    _writing: Vec<scr::prefix::writing::Writing>,
}

/// What a rank's thread did.
struct Copied {
    records: std::result::Result<Vec<FileRecord>, String>,
    finished: Instant,
}

/// The node's transfer file, in its control directory.
fn transfer_file(flush: &Flush) -> PathBuf {
    layout::transfer_file(flush.cache.control_dir())
}

impl AsyncFlushes {
    /// Starts flushing dataset `id` in the background and returns. Collective (every rank
    /// keeps the same list of background flushes).
    pub(super) fn start(&mut self, flush: &Flush, id: u64) -> Result<()> {
        let (job, settings) = (flush.job, flush.settings);
        let prefix = flush.prefix.path();
        // taken before anything says the flush runs
        let writing = flush.hold_writing(id);
        job.barrier();
        flush
            .prefix
            .note_in_flush_file("the flush's start in the flush file", |f| {
                f.set_location(id, Location::Flushing)
            });
        flush.record_dataset_dir(id);
        // the node's limit is shared by its ranks
        let node_ranks = job.node_comm().size().max(1) as f64;
        let bytes_per_sec = settings.flush.async_bytes_per_sec as f64 / node_ranks;
        let percent = settings.flush.async_percent;
        let transfer = transfer_file(flush);
        let planned = flush.cache.flush_targets(id).and_then(|jobs| {
            TransferFile::update_past_agent(&transfer, |t| {
                for j in &jobs {
                    // what the file was when the dataset completed: a copy of anything
                    // else fails (a file that changed since has no size to copy up to)
                    let size = j
                        .size
                        .unwrap_or_else(|| std::fs::metadata(&j.src).map_or(0, |m| m.len()));
                    t.add_file(
                        &j.src.to_string_lossy(),
                        &j.dst.to_string_lossy(),
                        &prefix.to_string_lossy(),
                        size,
                    );
                }
                t.set_limits(bytes_per_sec * node_ranks, percent);
                t.set_command(Command::Run);
                t.set_done(false);
                Ok(())
            })?;
            Ok(jobs)
        });
        let jobs = match planned {
            Ok(jobs) => jobs,
            Err(e) => {
                // this rank's flush fails where every rank's is published, in the list of
                // background flushes every rank keeps alike (returning here would leave the
                // others waiting in the collectives after this call)
                let problem = e.to_string();
                let worker = std::thread::spawn(move || Copied {
                    records: Err(problem),
                    finished: Instant::now(),
                });
                self.running.push(AsyncFlush {
                    id,
                    started: Instant::now(),
                    worker: Some(worker),
                    _writing: writing,
                });
                return Ok(());
            }
        };
        if job.debugging(1) {
            job.debug(
                1,
                format_args!(
                    "Initiating async flush of dataset {id} `{}'",
                    flush.cache.dataset_name(id)
                ),
            );
            let through = match TransferFile::read(&transfer) {
                Ok(t) if agent_alive(&t) => {
                    format!(
                        "the node's transfer agent (pid {})",
                        t.agent_pid().unwrap_or(0)
                    )
                }
                _ => "a background thread".into(),
            };
            job.debug_rank(1, format_args!("dataset {id} flushes through {through}"));
        }
        let want_crc = settings.crc.on_flush;
        let buf = settings.buffers.file;
        let pace = Pace {
            bytes_per_sec,
            percent,
            stall: Duration::from_secs(settings.flush.async_stall_secs),
        };
        let rank = job.rank;
        let worker = std::thread::spawn(move || {
            let records = copy_or_watch(&jobs, &transfer, want_crc, buf, pace, rank)
                .map_err(|e| e.to_string());
            Copied {
                records,
                finished: Instant::now(),
            }
        });
        self.running.push(AsyncFlush {
            id,
            started: Instant::now(),
            worker: Some(worker),
            _writing: writing,
        });
        Ok(())
    }

    /// Whether dataset `id` is being flushed in the background.
    pub(super) fn flushing(&self, id: u64) -> bool {
        self.running.iter().any(|f| f.id == id)
    }

    /// Publishes the background flushes every rank has finished, oldest first; waits for
    /// those up to dataset `wait_for` (every one with `u64::MAX`). Collective.
    pub(super) fn poll(&mut self, flush: &Flush, wait_for: Option<u64>) -> Result<()> {
        while let Some(front) = self.running.first() {
            // the list is the same on every rank, so is this decision
            let must_wait = wait_for.is_some_and(|w| front.id <= w);
            if !must_wait {
                let here = front.worker.as_ref().is_none_or(|w| w.is_finished());
                if !flush.job.all(here) {
                    return Ok(());
                }
            }
            let mut running = self.running.remove(0);
            let copied = running
                .worker
                .take()
                .map(|w| w.join())
                .and_then(|r| r.ok())
                .unwrap_or(Copied {
                    records: Err("the flush thread panicked".into()),
                    finished: Instant::now(),
                });
            finish(flush, &running, copied)?;
        }
        Ok(())
    }
}

/// Publishes one background flush once every rank's thread is done. Collective.
fn finish(flush: &Flush, running: &AsyncFlush, copied: Copied) -> Result<()> {
    let (job, cache) = (flush.job, flush.cache);
    let id = running.id;
    let secs = copied
        .finished
        .duration_since(running.started)
        .as_secs_f64();
    let (records, copied) = match copied.records {
        Ok(r) => (r, Ok(())),
        Err(e) => (Vec::new(), Err(scr::Error::refused(e))),
    };
    if let Err(e) = &copied {
        say!(
            "SCR: ERROR: rank {}: asynchronous flush of dataset {id}: {e}",
            job.rank
        );
    }
    let bytes: u64 = records.iter().map(|r| r.size).sum();
    let total = job.sum(bytes);
    let slowest = job.max((secs * 1e6) as u64) as f64 / 1e6;
    // the transfer file forgets this dataset's files, once the copies waiting beside their
    // places (written by the agent or by this rank's thread) are taken from it
    let sources: Vec<String> = cache.user_files(id);
    let mut staged = Vec::new();
    let forgotten = TransferFile::update_past_agent(&transfer_file(flush), |t| {
        for e in t.files().iter().filter(|e| sources.contains(&e.source)) {
            staged.extend(e.staged_file()?);
        }
        for s in &sources {
            t.remove_file(s);
        }
        t.set_done(t.files().is_empty());
        Ok(())
    });
    // copies this rank cannot name cannot be placed: the flush fails with this rank, and
    // the others go on to that outcome with it
    let copied = match (copied, forgotten) {
        (Ok(()), Err(e)) => {
            say!(
                "SCR: ERROR: rank {}: asynchronous flush of dataset {id}: {e}",
                job.rank
            );
            Err(e)
        }
        (copied, _) => copied,
    };
    let published = flush.publish(id, records, staged, copied)?;
    if published {
        let name = cache.dataset_name(id);
        let mut fields = vec![("name", name.clone()), ("dset", id.to_string())];
        fields.extend(crate::event_log::timing(total, slowest));
        fields.push(("async", "1".to_string()));
        if let Some(files) = cache.dataset(id).files() {
            fields.push(("files", files.to_string()));
        }
        flush.log.event(scr::event_log::kinds::FLUSH, &fields);
        let nodes = job.nodes.max(1) as f64;
        job.debug(
            1,
            format_args!(
                "asynchronous flush of dataset {id} done: {total} bytes in {slowest:.3} s, {:.0} bytes/s per node",
                total as f64 / slowest.max(1e-9) / nodes
            ),
        );
        job.debug(1, format_args!("Flush succeeded for dataset {id} `{name}'"));
    }
    Ok(())
}

/// How a background flush is paced, and how long an agent may go without progress.
#[derive(Clone, Copy)]
struct Pace {
    bytes_per_sec: f64,
    percent: f64,
    stall: Duration,
}

impl Pace {
    /// How long the agent may take to finish a file of `bytes` before the rank takes over:
    /// the stall allowance plus three times the file's time at the configured bandwidth
    /// (100 MB/s when unlimited).
    fn patience(&self, bytes: u64) -> Duration {
        let rate = if self.bytes_per_sec > 0.0 {
            self.bytes_per_sec
        } else {
            100e6
        };
        self.stall + Duration::from_secs_f64(3.0 * bytes as f64 / rate)
    }
}

/// The thread's work. With a live transfer agent on the node (`scr transfer`, which scr-run
/// starts) it watches the transfer file until the agent has written this rank's files;
/// without one, once the agent is gone, or when it has finished none of them for longer
/// than [`Pace::patience`] allows (stopped with SIGSTOP, or hung on a file system), it
/// copies what is left itself, paced alike. Returns what the rank2file map records of
/// each file.
fn copy_or_watch(
    jobs: &[FlushTarget],
    transfer: &Path,
    want_crc: bool,
    buf: usize,
    pace: Pace,
    rank: u64,
) -> Result<Vec<FileRecord>> {
    let mut throttle = Throttle::new(pace.bytes_per_sec, pace.percent);
    let sources: Vec<String> = jobs
        .iter()
        .map(|j| j.src.to_string_lossy().into_owned())
        .collect();
    let mut progress = (usize::MAX, Instant::now());
    loop {
        let t = TransferFile::read(transfer)?;
        let mine: Vec<TransferEntry> = t
            .files()
            .into_iter()
            .filter(|e| sources.contains(&e.source))
            .collect();
        let pending: Vec<&TransferEntry> = mine.iter().filter(|e| !e.is_written()).collect();
        if pending.is_empty() {
            return jobs
                .iter()
                .zip(&sources)
                .map(|(j, src)| {
                    let e = mine.iter().find(|e| &e.source == src);
                    let (size, crc) = (e.map_or(0, |e| e.written), e.and_then(|e| e.crc));
                    // (a file written in place on the prefix, SCR_CACHE_BYPASS, is no copy)
                    if e.is_none_or(|e| e.staged.is_some()) {
                        j.check_copied(size, crc)?;
                    }
                    Ok(FileRecord {
                        name: j.orig.clone(),
                        size,
                        crc: crc.filter(|_| want_crc),
                        segments: vec![],
                    })
                })
                .collect();
        }
        if agent_alive(&t) {
            let done = mine.len() - pending.len();
            if done != progress.0 {
                progress = (done, Instant::now());
            }
            let largest = pending.iter().map(|e| e.size).max().unwrap_or(0);
            if progress.1.elapsed() < pace.patience(largest) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            let pid = t.agent_pid().unwrap_or(0);
            say!(
                "SCR: WARNING: rank {rank}: the node's transfer agent (pid {pid}) finished no file for {:.0} s; ending it and copying this rank's files without it",
                progress.1.elapsed().as_secs_f64()
            );
            // ended first: a copy of its landing after this rank's own (over a newer
            // dataset's file of the same name) would undo the flush
            if !transfer::end_agent(transfer, pid) {
                say!(
                    "SCR: WARNING: rank {rank}: the node's transfer agent (pid {pid}) did not end when killed"
                );
            }
        } else if let Some(pid) = t.agent_pid()
            && t.agent() == Agent::Gone
        {
            // an agent that died mid-copy (killed, or its node's processes ended) left its
            // half-written temporaries beside the files this rank now writes itself
            transfer::end_agent(transfer, pid);
        }
        for e in pending {
            transfer::copy_entry(transfer, e, buf, &mut throttle)?;
        }
    }
}

/// Whether the node's transfer agent says it runs and its process is there (stopped or
/// not: a stopped one is ended once it has made no progress for the stall allowance).
fn agent_alive(t: &TransferFile) -> bool {
    t.state() == Some(State::Running) && t.agent() != Agent::Gone
}
