//! Asynchronous flush (SCR_FLUSH_ASYNC): Complete_checkpoint returns while a background
//! thread on each rank copies the checkpoint to the prefix at the configured bandwidth; the
//! dataset is published (summary, index, current) once every rank is done; a job killed
//! during the flush is completed by the post-run drain (see drain.rs).

mod common;

use common::*;
use scr::HashView;
use std::path::PathBuf;

/// The seconds each checkpoint took, from test_api's TEST_API_TIMES lines.
fn checkpoint_seconds(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("test_api: checkpoint "))
        .filter_map(|l| l.split(" took ").nth(1)?.strip_suffix(" s")?.parse().ok())
        .collect()
}

#[test]
fn the_application_computes_while_the_flush_runs_at_the_capped_bandwidth() {
    let job = Job::new();
    const MIB: u64 = 1 << 20;
    let cap = 8 * MIB; // per node: two nodes of two ranks, 4 MiB each: about 1 s of flushing
    // the pace sleeps after each buffer it wrote: each rank's first buffer goes at once
    const BUF: u64 = 256 << 10;
    let out = run_ok_on(
        &job,
        "n1:2,n2:2",
        4,
        &[&(4 * MIB).to_string(), "1"],
        &[
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_FLUSH_ASYNC_BW", &cap.to_string()),
            ("SCR_FILE_BUF_SIZE", &BUF.to_string()),
            ("TEST_API_TIMES", "1"),
            ("TEST_API_SLEEP_MS", "3000"),
        ],
    );
    let took = checkpoint_seconds(&out);
    assert_eq!(took.len(), 1, "{out}");
    // that the checkpoint did not wait for its flush is shown by order, not by how long it
    // took (a loaded machine stretches a checkpoint, never the order of events): it returned
    // while the flush still wrote the prefix's files
    let returned = checkpoint_ended_at(&out, 1);
    let flushed = (0..4)
        .map(|r| write_interval(&job.prefix().join(format!("ckpt.1/rank_{r}.ckpt"))).1)
        .fold(0.0, f64::max);
    assert!(
        returned < flushed,
        "the checkpoint returned at {returned:.3}, after its flush ended at {flushed:.3}: {out}"
    );
    // the rate each node's files were written on the prefix, from the file system's times
    for (node, ranks) in [("n1", [0, 1]), ("n2", [2, 3])] {
        let spans: Vec<(f64, f64)> = ranks
            .iter()
            .map(|r| write_interval(&job.prefix().join(format!("ckpt.1/rank_{r}.ckpt"))))
            .collect();
        let first = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let last = spans.iter().map(|s| s.1).fold(0.0, f64::max);
        let per_node = 2.0 * (4 * MIB + 8 - BUF) as f64 / (last - first);
        let ratio = per_node / cap as f64;
        eprintln!(
            "async flush {node}: {per_node:.0} bytes/s, {ratio:.3} of the cap; checkpoint took {:.3} s",
            took[0]
        );
        // the cap holds (no flush runs faster than it, whatever the load); how far below it
        // a flush runs is the machine's scheduling, which no test asserts
        assert!(
            ratio <= 1.1,
            "{node}: {per_node:.0} bytes/s against a cap of {cap}: {out}"
        );
    }
    let e = job.index_entry("ckpt.1");
    assert!(e.complete && e.is_current, "{e:?}");
    // the transfer files say every file was written, and nothing is left to do
    for node in ["n1", "n2"] {
        let cntl = node_dirs(&job, node)[1].clone();
        let t = scr::transfer::TransferFile::read(&scr::layout::transfer_file(&cntl)).unwrap();
        assert!(
            t.files().is_empty() && t.is_done(),
            "{node}: {:?}",
            t.files()
        );
    }
    delete_caches(&job);
    let out = run_ok_on(&job, "n1:2,n2:2", 4, &[&(4 * MIB).to_string(), "0"], &[]);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

#[test]
fn several_flushes_may_be_outstanding_and_finalize_completes_them() {
    let job = Job::new();
    let out = run_ok_on(
        &job,
        "n1,n2",
        2,
        &["1000000", "3"],
        &[
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            // 1 MB at 250 kB/s per node: each flush takes 4 s, far longer than the three
            // checkpoints and the 200 ms between them take even on a loaded machine
            ("SCR_FLUSH_ASYNC_BW", "250000"),
            ("SCR_FILE_BUF_SIZE", "65536"),
            ("SCR_CACHE_SIZE", "3"),
            ("TEST_API_TIMES", "1"),
            ("TEST_API_SLEEP_MS", "200"),
        ],
    );
    // that no checkpoint waited for a flush is shown by order, below, not by how long each
    // took (a loaded machine stretches a checkpoint's time, never the order of events)
    assert_eq!(checkpoint_seconds(&out).len(), 3, "{out}");
    for name in ["ckpt.1", "ckpt.2", "ckpt.3"] {
        assert!(job.index_entry(name).complete, "{name}: {out}");
    }
    // when checkpoint 3 returned, the flushes of checkpoints 1 and 2 had not ended (their
    // summaries, written when a flush is published, came later): three flushes were
    // outstanding (begun or queued, none complete) while the application went on
    let ckpt3_returned = checkpoint_ended_at(&out, 3);
    for id in [1, 2] {
        let published = write_interval(
            &job.prefix()
                .join(format!(".scr/scr.dataset.{id}/summary.scr")),
        )
        .1;
        assert!(
            published > ckpt3_returned,
            "ckpt.{id} was published at {published:.6}, before checkpoint 3 returned at {ckpt3_returned:.6}: {out}"
        );
    }
    for t in 1..=3 {
        for r in 0..2 {
            check_file(
                &job.prefix().join(format!("ckpt.{t}/rank_{r}.ckpt")),
                r,
                t,
                1000000,
            );
        }
    }
    let index = job.index();
    assert_eq!(index.current(), Some("ckpt.3"));
}

#[test]
fn a_cached_file_that_shrank_before_its_background_copy_fails_the_flush_by_name() {
    let job = Job::new();
    const SIZE: u64 = 2_000_000;
    // two files of 2 MB at 1 MB/s: the second waits about 2 s while the first is copied
    let mut launch = job.command(
        Some("n1"),
        1,
        &[&SIZE.to_string(), "1"],
        &[
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_FLUSH_ASYNC_BW", "1000000"),
            ("SCR_FILE_BUF_SIZE", "65536"),
            ("TEST_API_FILES", "2"),
        ],
    );
    let child = launch
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the file whose copy has not begun while the other's temporary is on the prefix (the
    // temporaries of SCR's own files there, the flush file's at SCR_Init, are no copy)
    let started = std::time::Instant::now();
    let waiting = loop {
        let copying: Vec<PathBuf> = walk(&job.prefix())
            .into_iter()
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    // (the state files in .scr are written through temporaries too)
                    n.contains(".tmp.") && n.contains("rank_0.")
                })
            })
            .collect();
        if let [one] = copying.as_slice() {
            let name = one.file_name().unwrap().to_string_lossy().into_owned();
            let other = if name.contains("rank_0.0.ckpt") { 1 } else { 0 };
            break job.cached(&format!("rank_0.{other}.ckpt")).remove(0);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no background copy began"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(&waiting)
        .unwrap()
        .set_len(100)
        .unwrap();
    // the flush fails, within a bound, naming the file (it was copied again and again)
    let out = wait_within(child, std::time::Duration::from_secs(60));
    let t = text(&out);
    let name = waiting.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        t.lines()
            .any(|l| l.contains("ERROR") && l.contains(&name) && l.contains("100 bytes")),
        "{t}"
    );
    let published = scr::index::IndexFile::read(&scr::layout::index_file(&job.prefix()))
        .is_ok_and(|i| i.entries().iter().any(|e| e.complete));
    assert!(!published, "a flush of a changed file was published: {t}");
    // and the damaged checkpoint is not restarted from cache as good
    let out = job.run_ok(1, &[&SIZE.to_string(), "0"], &[("TEST_API_FILES", "2")]);
    assert!(!out.contains("restarted from ckpt.1"), "{out}");
}
