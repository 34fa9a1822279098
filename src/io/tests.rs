use super::*;
use crate::temp_name::{is_temporary_name, temporary_writer};
use std::os::unix::fs::PermissionsExt;

#[test]
fn temporaries_are_told_from_files() {
    assert!(is_temporary_name(".rank_0.ckpt.tmp.1234.7"));
    assert_eq!(temporary_writer(".rank_0.ckpt.tmp.1234.7"), Some(1234));
    assert_eq!(temporary_writer("rank_0.ckpt.tmp.1234.7"), None);
    assert!(is_temporary_name(".xor.0_1_of_4.scr.new.99.0"));
    assert!(!is_temporary_name("rank_0.ckpt"));
    assert!(!is_temporary_name(".scrconf"));
    assert!(!is_temporary_name(".a.tmp.x.1"));
    assert!(!is_temporary_name("..tmp.1.2"));
}

#[test]
fn a_lock_held_by_another_process_times_out_naming_it_and_links_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("halt.scr");
    std::fs::write(&f, b"").unwrap();
    let mut holder = std::process::Command::new("flock")
        .args(["--no-fork", "-x", f.to_str().unwrap(), "sleep", "30"])
        .spawn()
        .expect("flock(1) from util-linux");
    // wait until it holds the lock
    let started = std::time::Instant::now();
    while lock_within(&f, 0o600, std::time::Duration::ZERO).is_ok() {
        assert!(started.elapsed().as_secs() < 10, "flock never locked");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let e = lock_within(&f, 0o600, std::time::Duration::from_millis(200))
        .unwrap_err()
        .to_string();
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        e.contains("is locked by process") && e.contains("SCR_LOCK_TIMEOUT"),
        "{e}"
    );
    assert!(lock_within(&f, 0o600, std::time::Duration::from_secs(5)).is_ok());
    // a link where the state file should be is refused, its target untouched
    let target = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, dir.path().join("index.scr")).unwrap();
    assert!(lock_within(&dir.path().join("index.scr"), 0o600, lock_timeout()).is_err());
    assert!(!target.exists());
}

#[test]
fn copying_a_file_onto_itself_keeps_it_and_measures_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("rank_0.ckpt");
    std::fs::write(&f, b"checkpoint bytes").unwrap();
    let via = dir.path().join(".").join("rank_0.ckpt");
    let (size, crc) = copy_file_with_crc(&f, &via, None, 4096, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), b"checkpoint bytes");
    assert_eq!(size, 16);
    assert_eq!(crc, crc32fast::hash(b"checkpoint bytes"));
}

#[test]
fn only_plain_absolute_paths_below_a_directory_are_within_it() {
    let dirs = [PathBuf::from("/c/scr.dataset.3"), PathBuf::from("/d/x")];
    let within = |p: &str| is_within_any(Path::new(p), &dirs);
    assert!(within("/c/scr.dataset.3/rank_0.ckpt"));
    assert!(within("/c/scr.dataset.3/sub/dir/f"));
    assert!(within("/d/x/y"));
    assert!(!within("/c/scr.dataset.3"), "the directory itself");
    assert!(!within("/c/scr.dataset.3/../../etc/passwd"));
    assert!(
        !within("/c/scr.dataset.30/f"),
        "a sibling sharing the prefix"
    );
    assert!(!within("c/scr.dataset.3/f"), "relative");
    assert!(!within("/etc/shadow"));
}

fn tempdir() -> PathBuf {
    tempfile::tempdir().unwrap().keep()
}

#[test]
fn atomic_write_then_read() {
    let dir = tempdir();
    let path = dir.join("x.scr");
    let mut h = Hash::new();
    h.set_value("NODES", 4);
    write_hash_file(&path, &h).unwrap();
    assert_eq!(read_hash_file(&path).unwrap(), h);
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // no temporaries left behind
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn errors_name_the_file() {
    let dir = tempdir();
    let err = read_hash_file(&dir.join("missing.scr")).unwrap_err();
    assert!(err.is_not_found());
    assert!(err.to_string().contains("missing.scr"), "{err}");
    let err = read_hash_file(&dir).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    fs::write(dir.join("empty.scr"), b"").unwrap();
    let err = read_hash_file(&dir.join("empty.scr")).unwrap_err();
    assert!(
        err.to_string().contains("empty.scr: file is empty"),
        "{err}"
    );
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn locked_update_creates_and_replaces() {
    let dir = tempdir();
    let path = dir.join("halt.scr");
    let (lock, h) = LockedHashFile::open(&path, PRIVATE_FILE, MAX_HASH_FILE_BYTES).unwrap();
    assert!(h.is_empty());
    let mut h = h;
    h.set_value("CheckpointsLeft", 3);
    lock.write_and_unlock(&h).unwrap();
    assert_eq!(read_hash_file(&path).unwrap(), h);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o077, 0);
    // locked through a lock file of the user's alone beside it
    assert_eq!(
        fs::metadata(dir.join(".halt.scr.lock"))
            .unwrap()
            .permissions()
            .mode()
            & 0o077,
        0
    );
    fs::remove_dir_all(dir).unwrap();
}

/// Open flags differ between architectures (O_NOFOLLOW is 0o400000 on x86-64 and 0x8000 on
/// aarch64, where 0o400000 is O_DIRECT on ppc64le): every flag comes from libc or rustix,
/// never a literal in the source.
#[test]
fn no_open_flag_is_a_literal() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offending = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = ["src", "lib/src", "launcher/src", "hostlist/src"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p.ends_with("io/tests.rs") {
                continue;
            }
            for (n, line) in std::fs::read_to_string(&p).unwrap().lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let literal_flags = code.contains("custom_flags(0")
                    || (code.contains("const O_") && code.contains("= 0"));
                if literal_flags {
                    offending.push(format!("{}:{}: {line}", p.display(), n + 1));
                }
            }
        }
    }
    assert!(offending.is_empty(), "{offending:#?}");
}

#[test]
fn a_locked_update_removes_what_killed_writers_of_its_file_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index.scr");
    // what a writer killed between writing and renaming leaves, and look-alikes
    let dead = dir.path().join(".index.scr.tmp.4242.7");
    let another_files = dir.path().join(".flush.scr.tmp.4242.8");
    let not_a_temporary = dir.path().join(".index.scr.lock.keep");
    for f in [&dead, &another_files, &not_a_temporary] {
        std::fs::write(f, b"half written").unwrap();
    }
    let (lock, hash) = LockedHashFile::open(&index, 0o600, 4096).unwrap();
    assert!(hash.is_empty());
    assert!(!dead.exists(), "the killed writer's temporary is removed");
    lock.write_and_unlock(&Hash::new()).unwrap();
    assert!(another_files.exists() && not_a_temporary.exists());
}

/// Whoever may rename in the directory above a state file's (the owner of a team's prefix)
/// swaps that directory for a link to another directory of the user's while SCR holds the
/// lock: the update lands in the directory SCR opened, and nothing is written, replaced or
/// removed in the other. A directory that is a link when SCR comes is refused.
#[test]
fn a_state_file_s_directory_swapped_for_a_link_is_never_written_through() {
    let root = tempfile::tempdir().unwrap();
    let hidden = root.path().join(".scr");
    let elsewhere = root.path().join("users-data");
    fs::create_dir(&hidden).unwrap();
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("flush.scr"), b"the user's own file").unwrap();
    fs::write(
        elsewhere.join(".flush.scr.tmp.1.2"),
        b"another file of the user's",
    )
    .unwrap();
    let state = hidden.join("flush.scr");
    let (locked, _) = LockedHashFile::open(&state, PRIVATE_FILE, 1 << 20).unwrap();
    // the swap, between the read and the write
    fs::rename(&hidden, root.path().join(".scr.moved")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &hidden).unwrap();
    let mut h = Hash::new();
    h.set_value("K", 1);
    locked.write_and_unlock(&h).unwrap();
    assert_eq!(
        fs::read(elsewhere.join("flush.scr")).unwrap(),
        b"the user's own file"
    );
    let mut left: Vec<_> = fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, [".flush.scr.tmp.1.2", "flush.scr"]);
    let written = read_hash_file(&root.path().join(".scr.moved/flush.scr")).unwrap();
    assert_eq!(written.first_value("K"), Some("1"));
    // the link is there when SCR comes: refused, naming the directory
    let e = LockedHashFile::open(&state, PRIVATE_FILE, 1 << 20)
        .err()
        .expect("a linked directory is refused")
        .to_string();
    assert!(e.contains(".scr") && !e.contains("/proc/"), "{e}");
    assert!(!elsewhere.join(".flush.scr.lock").exists());
}

#[test]
fn a_file_read_in_place_is_measured_through_its_handle_not_its_name() {
    // a fetch that reads a checkpoint file where it is opened it once; a file swapped in
    // under its name since then is not what it judges
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank_0.ckpt");
    std::fs::write(&path, b"the checkpoint's own bytes").unwrap();
    let opened = File::open(&path).unwrap();
    let other = dir.path().join("other");
    std::fs::write(&other, b"bytes of someone else, longer").unwrap();
    std::fs::rename(&other, &path).unwrap();
    let (len, crc) =
        copy_open_file_with_crc(opened, &path, &path, None, 1 << 16, &mut |_| {}).unwrap();
    assert_eq!(len, 26);
    assert_eq!(crc, crc32fast::hash(b"the checkpoint's own bytes"));
}

#[test]
fn a_fifo_in_a_directory_s_place_is_refused_not_waited_on() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ckpt");
    let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string naming a path in a directory of the test's own
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    assert!(sync_dir(&fifo).is_err());
    assert!(sync_dir(dir.path()).is_ok());
}
