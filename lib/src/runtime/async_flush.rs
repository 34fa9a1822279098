//! Asynchronous flush (SCR_FLUSH_ASYNC; manual §2.5, §9.7). Complete_checkpoint hands the
//! dataset's files to a background thread on each rank and returns to the application. The
//! thread copies them to the prefix throttled by SCR_FLUSH_ASYNC_BW (bytes per second per
//! node, shared by its ranks) and SCR_FLUSH_ASYNC_PERCENT (the share of its time it may
//! spend copying), and records each file as WRITTEN in the node's transfer file once it is
//! fsynced. Later collective calls (Need_checkpoint, Start, Complete, Finalize) notice when
//! every rank is done and publish the dataset — summary, rank2file, index — as a
//! synchronous flush does. Several flushes may be outstanding at once.
//!
//! A flush cut short (the job killed) leaves the flush file saying FLUSHING with the
//! dataset still in cache; the post-run drain then copies it from the caches (SCR loses it).

use super::{FileRecord, FlushTarget, Scr, comm, update_flush_file};
use mpi::traits::Communicator;
use scr::flush::Location;
use scr::io::{self, PRIVATE_FILE};
use scr::transfer::TransferFile;
use scr::{HashView, Result, layout};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One rank's part of a flush in the background.
pub(super) struct AsyncFlush {
    id: u64,
    started: Instant,
    worker: Option<JoinHandle<Copied>>,
}

/// What a rank's thread did.
struct Copied {
    records: std::result::Result<Vec<FileRecord>, String>,
    finished: Instant,
}

/// Paces a copy: at most `bytes_per_sec`, and busy at most `percent` of the time.
struct Throttle {
    started: Instant,
    bytes: u64,
    bytes_per_sec: f64,
    percent: f64,
    busy_since: Instant,
}

impl Throttle {
    fn new(bytes_per_sec: f64, percent: f64) -> Throttle {
        let now = Instant::now();
        Throttle {
            started: now,
            bytes: 0,
            bytes_per_sec,
            percent,
            busy_since: now,
        }
    }

    /// `n` more bytes were written: sleep as long as the limits ask.
    fn account(&mut self, n: u64) {
        self.bytes += n;
        let mut pause = Duration::ZERO;
        if self.percent > 0.0 && self.percent < 100.0 {
            let busy = self.busy_since.elapsed();
            pause = busy.mul_f64(100.0 / self.percent - 1.0);
        }
        if self.bytes_per_sec > 0.0 {
            let due = Duration::from_secs_f64(self.bytes as f64 / self.bytes_per_sec);
            pause = pause.max(due.saturating_sub(self.started.elapsed()));
        }
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        self.busy_since = Instant::now();
    }
}

impl Scr {
    fn transfer_file(&self) -> PathBuf {
        layout::transfer_file(self.filemap_path.parent().unwrap_or(Path::new(".")))
    }

    /// Starts flushing dataset `id` in the background and returns.
    pub(super) fn start_async_flush(&mut self, id: u64) -> Result<()> {
        if self.rank == 0 {
            update_flush_file(&self.prefix, |f| f.set_location(id, Location::Flushing))?;
        }
        let jobs = self.flush_targets(id)?;
        // the node's limit is shared by its ranks
        let node_ranks = self.node_comm.size().max(1) as f64;
        let bytes_per_sec =
            self.params.bytes("SCR_FLUSH_ASYNC_BW").unwrap_or(0) as f64 / node_ranks;
        let percent = self.params.float("SCR_FLUSH_ASYNC_PERCENT").unwrap_or(0.0);
        let transfer = self.transfer_file();
        TransferFile::update(&transfer, PRIVATE_FILE, |t| {
            for j in &jobs {
                let size = std::fs::metadata(&j.src).map(|m| m.len()).unwrap_or(0);
                t.add_file(&j.src.to_string_lossy(), &j.dst.to_string_lossy(), size);
            }
            t.set_limits(bytes_per_sec * node_ranks, percent);
            t.set_done(false);
            Ok(())
        })?;
        let want_crc = self.params.bool("SCR_CRC_ON_FLUSH");
        let buf = self.params.bytes("SCR_FILE_BUF_SIZE").unwrap_or(1 << 20) as usize;
        let worker = std::thread::spawn(move || {
            let records =
                copy_in_background(&jobs, &transfer, want_crc, buf, bytes_per_sec, percent)
                    .map_err(|e| e.to_string());
            Copied {
                records,
                finished: Instant::now(),
            }
        });
        self.async_flushes.push(AsyncFlush {
            id,
            started: Instant::now(),
            worker: Some(worker),
        });
        Ok(())
    }

    /// Whether dataset `id` is being flushed in the background.
    pub(super) fn flushing_async(&self, id: u64) -> bool {
        self.async_flushes.iter().any(|f| f.id == id)
    }

    /// Publishes the background flushes every rank has finished, oldest first; waits for
    /// those up to dataset `wait_for` (every one with `u64::MAX`). Collective.
    pub(super) fn poll_async_flushes(&mut self, wait_for: Option<u64>) -> Result<()> {
        while let Some(front) = self.async_flushes.first() {
            // the list is the same on every rank, so is this decision
            let must_wait = wait_for.is_some_and(|w| front.id <= w);
            if !must_wait {
                let here = front.worker.as_ref().is_none_or(|w| w.is_finished());
                if !comm::all_true(&self.world, here) {
                    return Ok(());
                }
            }
            let mut flush = self.async_flushes.remove(0);
            let copied = flush
                .worker
                .take()
                .map(|w| w.join())
                .and_then(|r| r.ok())
                .unwrap_or(Copied {
                    records: Err("the flush thread panicked".into()),
                    finished: Instant::now(),
                });
            self.finish_async_flush(&flush, copied)?;
        }
        Ok(())
    }

    fn finish_async_flush(&mut self, flush: &AsyncFlush, copied: Copied) -> Result<()> {
        let id = flush.id;
        let secs = copied.finished.duration_since(flush.started).as_secs_f64();
        let (records, problem) = match copied.records {
            Ok(r) => (r, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        if let Some(e) = &problem {
            eprintln!(
                "SCR: ERROR: rank {}: asynchronous flush of dataset {id}: {e}",
                self.rank
            );
        }
        let bytes: u64 = records.iter().map(|r| r.size).sum();
        let total = comm::sum_u64(&self.world, bytes);
        let slowest = comm::max_u64(&self.world, (secs * 1e6) as u64) as f64 / 1e6;
        // the transfer file forgets this dataset's files
        let sources: Vec<String> = self.user_files(id);
        TransferFile::update(&self.transfer_file(), PRIVATE_FILE, |t| {
            for s in &sources {
                t.remove_file(s);
            }
            t.set_done(t.files().is_empty());
            Ok(())
        })?;
        let published = self.publish_flushed(id, records, problem.is_none())?;
        if published && self.rank == 0 && self.params.count("SCR_DEBUG").unwrap_or(0) > 0 {
            let nodes = self.nodes.max(1) as f64;
            eprintln!(
                "SCR: asynchronous flush of dataset {id} done: {total} bytes in {slowest:.3} s, {:.0} bytes/s per node",
                total as f64 / slowest.max(1e-9) / nodes
            );
        }
        Ok(())
    }
}

/// The thread's work: copy each file (paced), fsync it and its directory, record it as
/// WRITTEN in the node's transfer file.
fn copy_in_background(
    jobs: &[FlushTarget],
    transfer: &Path,
    want_crc: bool,
    buf: usize,
    bytes_per_sec: f64,
    percent: f64,
) -> Result<Vec<FileRecord>> {
    let mut throttle = Throttle::new(bytes_per_sec, percent);
    let mut records = Vec::new();
    for j in jobs {
        let (size, crc) =
            io::copy_file_with_crc(&j.src, &j.dst, buf, &mut |n| throttle.account(n))?;
        if let Some(dir) = j.dst.parent() {
            io::sync_dir(dir)?;
        }
        TransferFile::update(transfer, PRIVATE_FILE, |t| {
            t.set_written(&j.src.to_string_lossy(), size);
            Ok(())
        })?;
        records.push(FileRecord {
            name: j.orig.clone(),
            size,
            crc: want_crc.then_some(crc),
            segments: vec![],
        });
    }
    Ok(records)
}
