//! The per-node transfer agents scr-run starts with SCR_FLUSH_ASYNC=1 (`scr transfer`): they
//! do the copying, the ranks take over from one that stalls, and none outlives its job or
//! leaves anything half written on the prefix, whatever was done to it.

mod common;

use common::scr_run::*;
use common::*;
use scr::HashView;
use std::process::Command;

/// `mpiexec -launcher fork -n 4 APP BYTES 2`: two checkpoints, four ranks on the nodes
/// SCR_NODELIST names.
fn mpiexec_on_two_nodes<'a>(app: &'a str, bytes: &'a str) -> [&'a str; 8] {
    ["mpiexec", "-launcher", "fork", "-n", "4", app, bytes, "2"]
}

#[test]
fn with_async_flush_scr_run_starts_a_transfer_agent_per_node_that_does_the_copying() {
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = output(scr_run_in(
        &job,
        &mpiexec_on_two_nodes(&app, "200000"),
        &[
            ("SCR_NODELIST", "n[1-2]"),
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_DEBUG", "1"),
            ("SCR_RUNS", "1"),
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    // (the ranks' lines may interleave, so they are counted, not matched whole)
    assert!(
        t.matches("flushes through the node's transfer agent")
            .count()
            >= 4,
        "{t}"
    );
    assert!(!t.contains("through a background thread"), "{t}");
    let e = job.index_entry("ckpt.2");
    assert!(e.complete && e.is_current, "{e:?}");
    // scr-run told both agents to exit at the end
    for node in ["n1", "n2"] {
        let cntl = scr::layout::job_dir(&job.dir.path().join("cntl"), &user(), "5151")
            .unwrap()
            .join(format!("node.{node}"));
        let tf = scr::transfer::TransferFile::read(&scr::layout::transfer_file(&cntl)).unwrap();
        assert_eq!(tf.state(), Some(scr::transfer::State::Exiting), "{node}");
        assert!(tf.files().is_empty() && tf.agent_pid().is_none(), "{node}");
    }
}

#[test]
fn a_stopped_transfer_agent_does_not_hold_the_flush_the_ranks_take_over() {
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let cntl = job.dir.path().join("cntl").display().to_string();
    // stop each node's agent once it has said it runs (its transfer file names it): an
    // agent stopped before that is none the ranks know of, and they would flush without
    // it from the start. Stopped for good: the ranks end it. Never while it holds the
    // transfer file's lock (it writes "running" under it): one stopped so is ended at the
    // next update of the file, not for making no progress (the next test's case).
    let stopper = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        // each stopped agent, and when and at what point of the copies (should the ranks
        // not take over, whether the stop came too late to matter)
        let mut stopped = std::collections::BTreeMap::new();
        while started.elapsed().as_secs() < 60 && stopped.len() < 2 {
            for node in ["n1", "n2"] {
                let file = scr::layout::transfer_file(
                    &scr::layout::job_dir(std::path::Path::new(&cntl), &user(), "5151")
                        .unwrap()
                        .join(format!("node.{node}")),
                );
                let lock = file.with_file_name(format!(
                    ".{}.lock",
                    file.file_name().unwrap().to_string_lossy()
                ));
                if let Ok(t) = scr::transfer::TransferFile::read(&file)
                    && t.state() == Some(scr::transfer::State::Running)
                    && let Some(pid) = t.agent_pid()
                    && !stopped.contains_key(&pid)
                {
                    signal(pid, "-STOP");
                    // (a stopped process's state settles at once; its locks are as it left them)
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    if holds_the_lock_of(pid, &lock) {
                        signal(pid, "-CONT");
                    } else {
                        let files = t.files();
                        let written = files.iter().filter(|e| e.is_written()).count();
                        let when = format!(
                            "{node} at {} ms, {written} of {} listed files written",
                            started.elapsed().as_millis(),
                            files.len()
                        );
                        stopped.insert(pid, when);
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stopped
    });
    let (out, t) = output(scr_run_in(
        &job,
        &mpiexec_on_two_nodes(&app, "2000000"),
        &[
            ("SCR_NODELIST", "n[1-2]"),
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_FLUSH_ASYNC_STALL", "1"),
            // each agent's copy of a checkpoint takes 4 s: stopped within that time, however
            // late a loaded machine lets the stopper look, no agent has finished both
            // checkpoints' files, so the ranks take one over
            ("SCR_FLUSH_ASYNC_BW", "500000"),
            ("TEST_API_SLEEP_MS", "500"),
            ("SCR_RUNS", "1"),
        ],
    ));
    let stopped = stopper.join().unwrap();
    assert_eq!(stopped.len(), 2, "both nodes' agents stopped: {t}");
    for &pid in stopped.keys() {
        let outlived = running(pid);
        if outlived {
            signal(pid, "-KILL");
        }
        assert!(!outlived, "stopped agent {pid} outlived its job: {t}");
    }
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("finished no file for") && t.contains("copying this rank's files without it"),
        "agents stopped {stopped:?}: {t}"
    );
    let e = job.index_entry("ckpt.2");
    assert!(e.complete && e.is_current, "{e:?}");
}

/// The process ids of this job's transfer agents.
fn agents(cntl: &str) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(["-f", &format!("transfer --cntldir {cntl}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The files process `pid` holds locks on, as the kernel's /proc/locks names them
/// (`… PID MAJ:MIN:INODE …`).
fn locked_by(pid: u32) -> Vec<String> {
    std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.get(4) == Some(&pid.to_string().as_str()))
        .filter_map(|f| f.get(5).map(|d| d.to_string()))
        .collect()
}

/// Whether process `pid` holds a lock on the file at `path` (the lock file beside a
/// locked file).
fn holds_the_lock_of(pid: u32, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(inode) = std::fs::metadata(path).map(|m| m.ino().to_string()) else {
        return false;
    };
    locked_by(pid)
        .iter()
        .any(|d| d.rsplit(':').next() == Some(inode.as_str()))
}

/// Whether process `pid` holds a lock.
fn holds_a_lock(pid: u32) -> bool {
    !locked_by(pid).is_empty()
}

fn signal(pid: u32, sig: &str) {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn an_agent_stopped_holding_the_transfer_file_lock_is_ended_and_leaves_nothing() {
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let cntl = job.dir.path().join("cntl").display().to_string();
    // many small files: the agent takes the transfer file's lock for each one it writes.
    // Stop it until it is caught holding that lock, and leave it stopped for good.
    let catcher = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while started.elapsed().as_secs() < 90 {
            for pid in agents(&cntl) {
                signal(pid, "-STOP");
                // (a stopped process's state settles at once; its locks are as it left them)
                std::thread::sleep(std::time::Duration::from_millis(1));
                if holds_a_lock(pid) {
                    return Some(pid);
                }
                signal(pid, "-CONT");
            }
            std::thread::sleep(std::time::Duration::from_micros(300));
        }
        None
    });
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "4", &app, "2000", "3"],
        &[
            ("SCR_NODELIST", "n[1-2]"),
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("SCR_FLUSH_ASYNC_STALL", "1"),
            ("SCR_LOCK_TIMEOUT", "30"),
            ("TEST_API_FILES", "150"),
            ("TEST_API_SLEEP_MS", "300"),
            ("SCR_RUNS", "1"),
        ],
    ));
    let caught = catcher.join().unwrap();
    let Some(pid) = caught else {
        panic!("no transfer agent was caught holding its lock: {t}");
    };
    assert_eq!(out.status.code(), Some(0), "{t}");
    // the agent is gone (stopped, it would have stayed for good), and with it anything it
    // had half written
    let outlived = running(pid);
    if outlived {
        signal(pid, "-KILL");
    }
    assert!(!outlived, "agent {pid} outlived its job: {t}");
    // whoever came first ended it, saying why: a rank or command that wanted the lock, or
    // a rank that saw no progress for its stall allowance
    assert!(
        t.contains(&format!(
            "the transfer agent (pid {pid}) is stopped holding the lock of"
        )) || t.contains(&format!("transfer agent (pid {pid}) finished no file for")),
        "the user is told why the agent ended: {t}"
    );
    let temporaries: Vec<_> = walk(&job.prefix())
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with('.') && (name.contains(".tmp.") || name.contains(".new."))
        })
        .collect();
    assert!(temporaries.is_empty(), "{temporaries:?}: {t}");
    // every checkpoint was flushed: the last one restarts from the prefix alone, every
    // byte checked by the application
    delete_caches(&job);
    let out = job.run_ok(4, &["2000", "0"], &[("TEST_API_FILES", "150")]);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}
