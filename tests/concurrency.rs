//! Real processes sharing SCR state files: locked read-modify-write loses no update, and a
//! writer SIGKILLed at any instant leaves the file old or new, never torn.
//!
//! The test binary re-executes itself as the child process (`SCR_TEST_CHILD` selects the
//! role), so no helper binary is needed.

use scr::HashView;
use scr::halt::HaltFile;
use scr::hash::Hash;
use scr::io::{LockedHashFile, SHARED_FILE, read_hash_file, write_hash_file};
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
                LockedHashFile::open(&file, SHARED_FILE, scr::io::MAX_HASH_FILE_BYTES).unwrap();
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
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("index.scr");
    write_hash_file(&file, &version(1)).unwrap();
    let (a, b) = (version(1), version(2));
    // a fixed-seed sequence of kill delays between 1 and 60 ms
    let mut seed: u64 = 0x5eed;
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
        std::thread::sleep(Duration::from_millis(30 + (seed >> 33) % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let got = read_hash_file(&file).unwrap_or_else(|e| panic!("round {round}: torn file: {e}"));
        assert!(
            got == a || got == b,
            "round {round}: content is neither version"
        );
    }
}
