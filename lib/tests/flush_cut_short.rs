//! A flush cut short by SIGKILL, with the plain launch a user makes (mpiexec, no scr-run,
//! so no drain follows): whatever instant the kill lands at, the prefix stays restartable
//! from the older checkpoint or from the new one, and what the dead flush left beside the
//! files goes with the next job. The kills land at known points: the test holds the
//! prefix's index lock, so the flush stops where it records the dataset in the index, after
//! its files are in their places; or the copy is throttled and the kill lands while a
//! temporary is still short, which the test sees before it kills. What a restart read is
//! checked by guide_steps (every byte says its rank and timestep), never taken from SCR's
//! records.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const HOSTS: &str = "n1,n2,n3,n4";
const RANKS: u32 = 4;
/// Bytes of data in each rank's file (guide_steps adds an 8-byte header).
const SIZE: usize = 200_000;

/// The environment of a job with its own job id, flushing every checkpoint.
fn env_of(
    job_id: &'static str,
    extra: &[(&'static str, &'static str)],
) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![
        ("SCR_JOB_ID", job_id),
        ("SCR_FLUSH", "1"),
        // the test holds the index lock for as long as it takes to see the files placed
        ("SCR_LOCK_TIMEOUT", "600"),
    ];
    env.extend_from_slice(extra);
    env
}

fn size_step() -> String {
    format!("size={SIZE}")
}

/// Polls `ready` every 20 ms for up to two minutes; panics naming `what` (with the job's
/// output so far) when it never holds.
fn wait_for(what: &str, job: &Job, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > Duration::from_secs(120) {
            let out =
                std::fs::read_to_string(job.dir.path().join("killed.out")).unwrap_or_default();
            panic!("{what} never happened:\n{out}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The timestep in the header of the file at `path`, if it has one.
fn timestep_of(path: &Path) -> Option<i64> {
    let bytes = std::fs::read(path).ok()?;
    Some(i64::from_ne_bytes(bytes.get(..8)?.try_into().ok()?))
}

/// The processes below `pid` (its children, theirs, …), from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // the parent is the second field after the command's closing parenthesis
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
            parent_of.push((p, ppid));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let here = found[i];
        found.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == here)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// SIGKILLs the job `child` started, its ranks first, and waits for the launcher.
fn kill_job(mut child: Child) {
    let processes = descendants(child.id());
    for &p in processes.iter().rev() {
        unsafe { libc::kill(p as i32, libc::SIGKILL) };
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // SIGKILL takes effect when a process leaves the kernel: a rank in the middle of a
    // write on a loaded disk still holds its files (and its lock on the directory it
    // flushes to) a while, as a live writer the next job must leave alone. A resource
    // manager starts the next job once the killed one's processes are gone; so does this.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while processes.iter().any(|&p| running(p)) {
        assert!(
            std::time::Instant::now() < until,
            "the killed job's processes did not end: {processes:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Starts a job of guide_steps `steps` (in the background, its output in `killed.out`)
/// that stops at a `sh` step until the test lets it go, and returns it once it waits there.
/// The steps name the pause as `PAUSE`.
fn start_paused(job: &Job, steps: &[&str], env: &[(&str, &str)]) -> Child {
    let dir = job.dir.path();
    let pause = format!(
        "sh=touch {0}/paused; while [ ! -e {0}/go ]; do sleep 0.05; done",
        dir.display()
    );
    let steps: Vec<&str> = steps
        .iter()
        .map(|s| if *s == "PAUSE" { pause.as_str() } else { s })
        .collect();
    let out = std::fs::File::create(dir.join("killed.out")).unwrap();
    let child = job
        .command(Some(HOSTS), RANKS, &steps, env)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the job's pause", job, || dir.join("paused").exists());
    child
}

/// Takes the prefix's index lock, as any writer of the index takes it: whoever then
/// records a dataset in the index waits for the test.
fn hold_index_lock(job: &Job) -> std::fs::File {
    let lock = job.prefix().join(".scr/.index.scr.lock");
    let f = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .unwrap();
    f.lock().unwrap();
    f
}

/// Every temporary (SCR's `.<file>.tmp.<pid>.<n>`) below the prefix, but for SCR's own
/// state files' in `.scr` (and what `scr.current` leads to, seen where it is).
fn temporaries(job: &Job) -> Vec<PathBuf> {
    let prefix = job.prefix();
    let (state, link) = (prefix.join(".scr"), prefix.join("scr.current"));
    walk(&prefix)
        .into_iter()
        .filter(|p| !p.starts_with(&state) && !p.starts_with(&link))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with('.') && name.contains(".tmp.")
        })
        .collect()
}

/// The name a temporary's file has in its place (`.rank_0.ckpt.tmp.<pid>.<n>`: `rank_0.ckpt`).
fn placed_name(temporary: &Path) -> String {
    let name = temporary.file_name().unwrap().to_string_lossy();
    let name = name.strip_prefix('.').unwrap_or(&name);
    name.split(".tmp.").next().unwrap_or(name).to_string()
}

/// Every copy the index offers a restart records, for each of its files, the CRC32 the
/// file on the prefix has: none names bytes that are no longer there.
fn index_matches_the_files(job: &Job) {
    let prefix = job.prefix();
    for e in job.index().usable_checkpoints() {
        let root = scr::layout::rank2file_root(&prefix, e.id);
        let files = scr::rank2file::read_tree(&prefix, &root)
            .unwrap_or_else(|err| panic!("{} (dataset {}): {err}", e.name, e.id));
        for rec in files.values().flatten() {
            let on_prefix = scr::io::file_crc32(&prefix.join(&rec.name)).ok();
            assert_eq!(
                rec.crc.map(Some),
                Some(on_prefix),
                "{} (dataset {}) records {} as it no longer is",
                e.name,
                e.id,
                rec.name
            );
        }
    }
}

/// Job A writes `ckpt.fixed` at timesteps 1 and 2 and ends; job B restarts from it and
/// writes `ckpt.fixed` at timestep 3, and is killed once its flush has put every rank's
/// file in its place and waits to record the dataset in the index. Job C, of another job
/// id, must restart from timestep 3 (or 2), its data whole.
fn killed_while_recording_a_name_written_again(flush: &[(&'static str, &'static str)]) {
    let job = steps_job();
    let size = size_step();
    let out = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &[
            &size,
            "init",
            "ckpt=ckpt.fixed:1",
            "ckpt=ckpt.fixed:2",
            "finalize",
        ],
        &env_of("7001", flush),
    );
    assert!(!out.contains("ERROR"), "{out}");
    let b = start_paused(
        &job,
        &[
            &size,
            "init",
            "restart",
            "PAUSE",
            "ckpt=ckpt.fixed:3",
            "finalize",
        ],
        &env_of("7002", flush),
    );
    let lock = hold_index_lock(&job);
    std::fs::write(job.dir.path().join("go"), "").unwrap();
    let files: Vec<PathBuf> = (0..RANKS)
        .map(|r| job.prefix().join(format!("ckpt.fixed/rank_{r}.ckpt")))
        .collect();
    wait_for("every rank's timestep-3 file in its place", &job, || {
        files.iter().all(|f| timestep_of(f) == Some(3))
    });
    kill_job(b);
    drop(lock);
    let said = std::fs::read_to_string(job.dir.path().join("killed.out")).unwrap();
    assert!(
        said.contains("guide: restart -> ckpt.fixed t=2 data=verified rc=0"),
        "job B restarted from timestep 2: {said}"
    );

    let out = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &[&size, "init", "restart", "quit"],
        &env_of("7003", flush),
    );
    let restarted = answer(&out, "restart");
    assert!(
        restarted == "ckpt.fixed t=3 data=verified rc=0"
            || restarted == "ckpt.fixed t=2 data=verified rc=0",
        "the old checkpoint or the new one, whole: {out}"
    );
    assert!(
        !out.contains("only in that run's node caches"),
        "its files are on the prefix: {out}"
    );
    assert_eq!(temporaries(&job), Vec::<PathBuf>::new(), "{out}");
    index_matches_the_files(&job);
}

#[test]
fn a_sync_flush_killed_before_it_records_a_name_written_again_leaves_a_checkpoint_to_restart_from()
{
    killed_while_recording_a_name_written_again(&[("SCR_FLUSH_ASYNC", "0")]);
}

#[test]
fn a_background_flush_killed_before_it_records_a_name_written_again_leaves_a_checkpoint_to_restart_from()
 {
    // (the default of a plain launch: every checkpoint flushes in the background)
    killed_while_recording_a_name_written_again(&[]);
}

/// Job A writes checkpoints `old` (at timesteps 1 and 2) and ends; job B restarts from the
/// second and writes `new` at timestep 3, flushed in the background at 20 kB/s, and is
/// killed while a rank's copy is still short of the file. Job C, of another job id,
/// restarts from timestep 2 and leaves nothing of the dead flush on the prefix; returns
/// what it said. With `prerun`, `scr prerun` prepares the prefix for job C first, as
/// scr-run does.
fn killed_mid_copy(old: [&str; 2], new: &str) -> (Job, String) {
    killed_mid_copy_then(old, new, false)
}

/// Whether some rank's copy to the prefix is under way: a temporary shorter than its file.
fn a_copy_is_under_way(job: &Job) -> bool {
    temporaries(job)
        .iter()
        .any(|t| std::fs::metadata(t).is_ok_and(|m| (m.len() as usize) < 8 + SIZE))
}

fn killed_mid_copy_then(old: [&str; 2], new: &str, prerun: bool) -> (Job, String) {
    let job = steps_job();
    let size = size_step();
    let (one, two) = (format!("ckpt={}:1", old[0]), format!("ckpt={}:2", old[1]));
    run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &[&size, "init", &one, &two, "finalize"],
        &env_of("7101", &[]),
    );
    let three = format!("ckpt={new}:3");
    let b = start_paused(
        &job,
        &[&size, "init", "restart", "PAUSE", &three, "finalize"],
        &env_of(
            "7102",
            &[
                ("SCR_FLUSH_ASYNC", "1"),
                ("SCR_FLUSH_ASYNC_BW", "20000"),
                // (the copy goes 64 kB at a time, each followed by its pause)
                ("SCR_FILE_BUF_SIZE", "65536"),
            ],
        ),
    );
    std::fs::write(job.dir.path().join("go"), "").unwrap();
    wait_for("a copy under way", &job, || a_copy_is_under_way(&job));
    kill_job(b);
    assert!(
        a_copy_is_under_way(&job),
        "the kill landed mid-copy: {:?}",
        temporaries(&job)
    );
    if prerun {
        let out = scr_for(&job)
            .args(["prerun", "-p"])
            .arg(job.prefix())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }

    let out = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &[&size, "init", "restart", "quit"],
        &env_of("7103", &[]),
    );
    assert_eq!(
        answer(&out, "restart"),
        format!("{} t=2 data=verified rc=0", old[1]),
        "{out}"
    );
    assert_eq!(temporaries(&job), Vec::<PathBuf>::new(), "{out}");
    // (`scr prerun` leaves no word of where that dataset was, only of its flush)
    assert!(
        prerun || out.contains("was cut short before every rank had copied its files"),
        "{out}"
    );
    index_matches_the_files(&job);
    (job, out)
}

#[test]
fn what_a_flush_killed_mid_copy_leaves_beside_a_name_written_again_goes_with_the_next_job() {
    let (job, _) = killed_mid_copy(["ckpt.fixed", "ckpt.fixed"], "ckpt.fixed");
    for r in 0..RANKS as usize {
        let file = job.prefix().join(format!("ckpt.fixed/rank_{r}.ckpt"));
        assert_eq!(timestep_of(&file), Some(2), "{}", file.display());
    }
}

#[test]
fn a_flush_killed_mid_copy_leaves_neither_its_copies_nor_its_directory() {
    let (job, out) = killed_mid_copy(["ckpt.1", "ckpt.2"], "ckpt.3");
    assert!(!job.prefix().join("ckpt.3").exists(), "{out}");
}

/// scr-run's `scr prerun` before the next job clears the last job's flush file: what a
/// flush cut short left is still swept by the next job's SCR_Init.
#[test]
fn what_a_flush_killed_mid_copy_leaves_goes_with_the_next_job_after_scr_prerun() {
    let (job, out) = killed_mid_copy_then(["ckpt.1", "ckpt.2"], "ckpt.3", true);
    assert!(!job.prefix().join("ckpt.3").exists(), "{out}");
}

/// Job X's background flush of ckpt.1 is under way (at 10 kB/s a node, 200 kB a rank: a
/// copy is short for seconds) when job Y, of another job id, starts on the same prefix:
/// Y's SCR_Init leaves X's copies alone, and X publishes ckpt.1 whole.
#[test]
fn a_live_flush_of_another_job_keeps_its_copies_when_a_job_starts_beside_it() {
    let job = steps_job();
    let size = size_step();
    let x = start_paused(
        &job,
        &[&size, "init", "PAUSE", "ckpt=ckpt.1:1", "finalize"],
        &env_of(
            "7201",
            &[
                ("SCR_FLUSH_ASYNC", "1"),
                ("SCR_FLUSH_ASYNC_BW", "10000"),
                ("SCR_FILE_BUF_SIZE", "65536"),
            ],
        ),
    );
    std::fs::write(job.dir.path().join("go"), "").unwrap();
    wait_for("a copy under way", &job, || a_copy_is_under_way(&job));
    let copies = temporaries(&job);
    let y = run_ok_on(
        &job,
        HOSTS,
        RANKS,
        &[&size, "init", "quit"],
        &env_of("7202", &[]),
    );
    // (a copy X finished meanwhile was renamed into its place, not removed)
    let left: Vec<&PathBuf> = copies
        .iter()
        .filter(|c| !c.exists() && !c.with_file_name(placed_name(c)).exists())
        .collect();
    let mut x = x;
    let status = x.wait().unwrap();
    let out = std::fs::read_to_string(job.dir.path().join("killed.out")).unwrap();
    assert!(left.is_empty(), "job Y removed {left:?}:\n{y}");
    assert!(status.success(), "{out}");
    assert_eq!(answer(&out, "ckpt=ckpt.1:1"), "rc=0", "{out}");
    for r in 0..RANKS as usize {
        check_file(
            &job.prefix().join(format!("ckpt.1/rank_{r}.ckpt")),
            r,
            1,
            SIZE,
        );
    }
    assert_eq!(temporaries(&job), Vec::<PathBuf>::new());
}
