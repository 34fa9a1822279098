//! A neighbour and the halt file: it is the user's alone, locked through a private lock
//! file beside it, so another user can neither change the conditions, nor grow it, nor
//! hold off a halt check, SCR_Finalize's record or `scr halt` by holding a lock. A halt
//! file an older version left everyone's (0666) is still honoured, and replaced by the
//! user's next write.

mod common;

use common::neighbour::*;
use common::*;
use scr::HashView;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

/// The neighbour holding an exclusive lock on `file` until dropped.
struct HeldLock(Child);

impl HeldLock {
    fn on(file: &Path) -> HeldLock {
        let child = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "flock",
                "-x",
            ])
            .arg(file)
            .args(["sleep", "600"])
            .process_group(0)
            .spawn()
            .unwrap();
        // the lock is taken once /proc/locks lists the file's inode
        let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(file).unwrap());
        let listed = format!(":{ino} ");
        let started = std::time::Instant::now();
        while !std::fs::read_to_string("/proc/locks")
            .unwrap()
            .lines()
            .any(|l| l.contains(&listed))
        {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the neighbour never took the lock"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        HeldLock(child)
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // the holder and its sleep, as a group
        let _ = Command::new("kill")
            .args(["-9", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

fn scr_halt(prefix: &Path, args: &[&str]) -> std::process::Output {
    output_within(
        Command::new(scr_command())
            .arg("halt")
            .args(args)
            .arg(prefix)
            .env("SCR_LOCK_TIMEOUT", "600"),
        Duration::from_secs(90),
    )
}

fn halt_file(prefix: &Path) -> scr::halt::HaltFile {
    scr::halt::HaltFile::read(&scr::layout::halt_file(prefix)).unwrap()
}

#[test]
fn a_neighbour_holding_the_halt_files_lock_holds_off_no_halt() {
    let s = Shared::new();
    let halt = scr::layout::halt_file(&s.prefix);
    let o = scr_halt(&s.prefix, &["-c", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    halt_file_left_everyones(&s.prefix);
    let held = HeldLock::on(&halt);
    // its conditions still hold: the job stops after two checkpoints, and SCR_Finalize
    // records that it was called (scr-run relaunches no finished job)
    let run = output_within(
        &mut s.command(
            &["1000", "5"],
            &[
                ("SCR_FLUSH", "1"),
                ("SCR_LOCK_TIMEOUT", "600"),
                ("TEST_API_SHOULD_EXIT", "1"),
            ],
        ),
        Duration::from_secs(120),
    );
    let t = text(&run);
    assert!(run.status.success(), "{t}");
    assert!(t.contains("says stop after timestep 2"), "{t}");
    assert!(s.prefix.join("ckpt.2").is_dir(), "{t}");
    assert!(!s.prefix.join("ckpt.3").exists(), "{t}");
    assert!(!t.contains("not checked"), "{t}");
    assert!(!t.contains("could not record"), "{t}");
    assert_eq!(
        halt_file(&s.prefix).exit_reason(),
        Some("SCR_FINALIZE_CALLED"),
        "{t}"
    );
    assert_eq!(
        mode_of(&halt) & 0o077,
        0,
        "replaced as the user's alone: {t}"
    );
    drop(held);

    // nor does the user's own `scr halt`, nor scr-run's prerun, wait for it
    halt_file_left_everyones(&s.prefix);
    let _held = HeldLock::on(&halt);
    let o = scr_halt(&s.prefix, &["-c", "5"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(halt_file(&s.prefix).checkpoints_left(), Some(5));
    halt_file_left_everyones(&s.prefix);
    let _held_again = HeldLock::on(&halt);
    let prerun = output_within(
        Command::new(scr_command())
            .args(["prerun", "-p"])
            .arg(&s.prefix)
            .env("SCR_LOCK_TIMEOUT", "600"),
        Duration::from_secs(90),
    );
    let t = text(&prerun);
    assert!(prerun.status.success(), "{t}");
    assert!(!t.contains("WARNING"), "{t}");
    assert_eq!(halt_file(&s.prefix).exit_reason(), None, "{t}");
    assert_eq!(halt_file(&s.prefix).checkpoints_left(), Some(5), "{t}");
}

#[test]
fn the_halt_file_is_the_users_alone() {
    let s = Shared::new();
    let o = scr_halt(&s.prefix, &["-c", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    let halt = scr::layout::halt_file(&s.prefix);
    assert_eq!(mode_of(&halt) & 0o077, 0, "{}", text(&o));
    // the neighbour can neither change the conditions nor store data in it, even where
    // it may reach it (a `.scr` an older version made everyone's to enter)
    std::fs::set_permissions(
        halt.parent().unwrap(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let wrote = try_as_nobody(&format!("head -c 100000 /dev/zero >> {}", halt.display()));
    assert!(!wrote.status.success(), "{}", text(&wrote));
    assert!(std::fs::metadata(&halt).unwrap().len() < 1000);
    // and a job's own write leaves it so
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert_eq!(mode_of(&halt) & 0o077, 0);
    assert_eq!(halt_file(&s.prefix).checkpoints_left(), Some(1));
}
