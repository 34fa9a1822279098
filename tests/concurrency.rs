//! Real processes sharing SCR state files: locked read-modify-write loses no update; a
//! writer SIGKILLed at any instant leaves the file old or new, never torn; and a state file
//! is made durable in the order a power loss needs (the file fsynced before it replaces the
//! old one, its directory after), as `strace` sees the writer's system calls.
//!
//! The test binary re-executes itself as the child process (`SCR_TEST_CHILD` selects the
//! role), so no helper binary is needed.

use scr::HashView;
use scr::halt::HaltFile;
use scr::hash::Hash;
use scr::io::{LockedHashFile, PRIVATE_FILE, read_hash_file, write_hash_file};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn spawn_child(test: &str, role: &str, file: &Path, arg: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("SCR_TEST_CHILD", role)
        .env("SCR_TEST_FILE", file)
        .env("SCR_TEST_ARG", arg.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn child_role() -> Option<(String, PathBuf, u64)> {
    let role = std::env::var("SCR_TEST_CHILD").ok()?;
    let file = PathBuf::from(std::env::var("SCR_TEST_FILE").unwrap());
    let arg = std::env::var("SCR_TEST_ARG").unwrap().parse().unwrap();
    Some((role, file, arg))
}

const INCREMENTS: u64 = 40;
const WRITERS: u64 = 6;

#[test]
fn locked_updates_from_many_processes_lose_nothing() {
    if let Some((role, file, _)) = child_role() {
        assert_eq!(role, "increment");
        for _ in 0..INCREMENTS {
            let (lock, hash) =
                LockedHashFile::open(&file, PRIVATE_FILE, scr::io::MAX_HASH_FILE_BYTES).unwrap();
            let mut halt = HaltFile::from_hash(hash).unwrap();
            let n = halt.checkpoints_left().unwrap_or(0);
            halt.set_checkpoints_left(n + 1);
            lock.write_and_unlock(halt.hash()).unwrap();
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("halt.scr");
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            spawn_child(
                "locked_updates_from_many_processes_lose_nothing",
                "increment",
                &file,
                i,
            )
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let halt = HaltFile::read(&file).unwrap();
    assert_eq!(halt.checkpoints_left(), Some((INCREMENTS * WRITERS) as i64));
}

fn version(n: u64) -> Hash {
    let mut h = Hash::new();
    h.set_value("VERSION", n);
    // big enough that a write takes several system calls
    for r in 0..4000 {
        h.set_kv("RANK", r)
            .set_value("FILE", format!("rank_{r}.ckpt.{n}"));
    }
    h
}

#[test]
fn a_killed_writer_never_leaves_a_torn_file() {
    if let Some((role, file, _)) = child_role() {
        assert_eq!(role, "rewrite");
        let (a, b) = (version(1), version(2));
        for i in 0.. {
            write_hash_file(&file, if i % 2 == 0 { &a } else { &b }).unwrap();
            if i == 0 {
                // the parent kills only a writer that is writing
                std::fs::write(file.with_extension("writing"), b"").unwrap();
            }
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.scr");
    write_hash_file(&file, &version(1)).unwrap();
    let (a, b) = (version(1), version(2));
    // a fixed-seed sequence of kill delays between 0 and 60 ms after the first write
    let mut seed: u64 = 0x5eed;
    let writing = file.with_extension("writing");
    for round in 0..25 {
        let mut child = spawn_child(
            "a_killed_writer_never_leaves_a_torn_file",
            "rewrite",
            &file,
            round,
        );
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // (a child that ran no test never says it writes: the round fails, not passes)
        let started = std::time::Instant::now();
        while !writing.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "round {round}: the writer never wrote"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the writer ended"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::fs::remove_file(&writing).unwrap();
        std::thread::sleep(Duration::from_millis((seed >> 33) % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let got = read_hash_file(&file).unwrap_or_else(|e| panic!("round {round}: torn file: {e}"));
        assert!(
            got == a || got == b,
            "round {round}: content is neither version"
        );
    }
}

/// The system calls `strace` saw a child make while it wrote `file` once, one a line.
fn traced_write(test: &str, file: &Path) -> String {
    let log = file.with_extension("strace");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
        ])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("SCR_TEST_CHILD", "write-once")
        .env("SCR_TEST_FILE", file)
        .env("SCR_TEST_ARG", "0")
        .stdout(Stdio::null())
        .status()
        .expect("strace must be installed (scripts/setup.sh installs it)");
    assert!(status.success());
    std::fs::read_to_string(&log).unwrap()
}

/// The quoted paths and the result of one strace line.
fn call(line: &str) -> (Vec<&str>, Option<&str>) {
    let paths = line.split('"').skip(1).step_by(2).collect();
    (paths, line.rsplit(" = ").next().map(str::trim))
}

#[test]
fn a_state_file_is_fsynced_before_it_replaces_the_old_and_its_directory_after() {
    let test = "a_state_file_is_fsynced_before_it_replaces_the_old_and_its_directory_after";
    if let Some((role, file, _)) = child_role() {
        assert_eq!(role, "write-once");
        write_hash_file(&file, &version(2)).unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.scr");
    write_hash_file(&file, &version(1)).unwrap();
    let trace = traced_write(test, &file);
    let lines: Vec<&str> = trace.lines().collect();
    let target = file.to_str().unwrap();
    // the rename of a temporary over the file
    let at = lines
        .iter()
        .position(|l| l.contains("rename") && call(l).0.last() == Some(&target))
        .unwrap_or_else(|| panic!("no rename over {target}:\n{trace}"));
    let temporary = call(lines[at]).0[0];
    assert_ne!(temporary, target);
    // the temporary's descriptor, and an fsync of it before the rename
    let opened = lines[..at]
        .iter()
        .rposition(|l| l.contains("openat(") && call(l).0.first() == Some(&temporary))
        .unwrap_or_else(|| panic!("{temporary} never opened:\n{trace}"));
    let fd = call(lines[opened]).1.unwrap();
    let synced = |from: usize, to: usize, fd: &str| {
        lines[from..to]
            .iter()
            .any(|l| l.contains(&format!("fsync({fd})")) || l.contains(&format!("fdatasync({fd})")))
    };
    assert!(
        synced(opened, at, fd),
        "{temporary} (fd {fd}) not fsynced before the rename:\n{trace}"
    );
    // the directory opened and fsynced after it
    let parent = dir.path().to_str().unwrap();
    let dir_opened = lines[at..]
        .iter()
        .position(|l| l.contains("openat(") && call(l).0.first() == Some(&parent))
        .map(|i| at + i)
        .unwrap_or_else(|| panic!("{parent} not opened after the rename:\n{trace}"));
    let dir_fd = call(lines[dir_opened]).1.unwrap();
    assert!(
        synced(dir_opened, lines.len(), dir_fd),
        "{parent} (fd {dir_fd}) not fsynced after the rename:\n{trace}"
    );
    assert_eq!(read_hash_file(&file).unwrap(), version(2));
}
