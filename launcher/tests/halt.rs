//! `scr halt` (SCR's `scr_halt`) writes the conditions the library and `scr retries-halt` read.

mod common;

use common::scr_args as scr;
use scr::HashView;

fn halt_file(dir: &std::path::Path) -> scr::halt::HaltFile {
    scr::halt::HaltFile::read(&scr::layout::halt_file(dir)).unwrap()
}

#[test]
fn conditions_are_set_listed_unset_and_removed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let o = scr(&[
        "halt",
        "--checkpoints",
        "2",
        "--seconds",
        "600",
        "--before",
        "@1900000000",
        p,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .starts_with(&format!("Updating halt file {p}/.scr/halt.scr")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let h = halt_file(d.path());
    assert_eq!(
        (
            h.checkpoints_left(),
            h.halt_seconds(),
            h.exit_before(),
            h.exit_reason()
        ),
        (Some(2), Some(600), Some(1_900_000_000), None)
    );
    let mode = std::fs::metadata(scr::layout::halt_file(d.path())).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600,
        "the user's alone (root's scr halt acts as the prefix's owner)"
    );
    assert_eq!(
        scr(&["retries-halt", "--dir", p]).status.code(),
        Some(1),
        "nothing due yet"
    );

    scr(&["halt", "--unset-checkpoints", "--after", "@1", p]);
    let h = halt_file(d.path());
    assert_eq!((h.checkpoints_left(), h.exit_after()), (None, Some(1)));
    assert_eq!(
        scr(&["retries-halt", "--dir", p]).status.code(),
        Some(0),
        "ExitAfter has passed"
    );

    let listed = String::from_utf8(scr(&["halt", "--list", p]).stdout).unwrap();
    assert!(
        listed.contains("HaltSeconds:     600") && listed.contains("ExitAfter:"),
        "{listed}"
    );

    assert!(scr(&["halt", "--remove", p]).status.success());
    assert!(!scr::layout::halt_file(d.path()).exists());
    // a mistyped prefix halts nothing and is not created
    let typo = d.path().join("no-such-prefix");
    for args in [vec!["halt"], vec!["halt", "-l"]] {
        let o = scr(&[&args[..], &[typo.to_str().unwrap()]].concat());
        assert_eq!(o.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("no such directory"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!typo.exists());
    }
}

#[test]
fn no_condition_halts_after_the_next_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    assert!(scr(&["halt", p]).status.success());
    assert_eq!(halt_file(d.path()).exit_reason(), Some("JOB_HALTED"));
    let o = scr(&["retries-halt", "--dir", p]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "scr_retries_halt: HALT RUN: Reason: JOB_HALTED.\n"
    );
}

#[test]
fn bad_times_are_rejected_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let o = scr(&["halt", "--before", "whenever", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read time \"whenever\""));
    assert!(!scr::layout::halt_file(d.path()).exists());
}

#[test]
fn halt_cntl_takes_scr_s_own_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("halt.scr");
    let f = file.to_str().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_scr"))
            .arg("halt-cntl")
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["-f", f, "-c", "3", "-s", "600", "-r", "MAINTENANCE"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h = scr::halt::HaltFile::read(&file).unwrap();
    assert_eq!(
        (h.checkpoints_left(), h.halt_seconds(), h.exit_reason()),
        (Some(3), Some(600), Some("MAINTENANCE"))
    );
    // -xc is one flag: unset CheckpointsLeft
    let o = run(&["-f", f, "-xc", "-xr"]);
    assert!(o.status.success());
    let h = scr::halt::HaltFile::read(&file).unwrap();
    assert_eq!(
        (h.checkpoints_left(), h.exit_reason(), h.halt_seconds()),
        (None, None, Some(600))
    );
    let o = run(&["-f", f, "-l"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("HaltSeconds:     600"));
    for bad in [
        &["-c", "3"][..],
        &["-f", f, "-c", "three"],
        &["-f", f, "-q"],
    ] {
        let o = run(bad);
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
    }
}

/// The halt sequence of LLNL's own test plan (testing/TEST, v3.1), with the ISO times its
/// TESTING.sh and the user guide use: each call's output holds what the plan checks.
#[test]
fn scr_halt_prints_what_scr_prints_at_each_step() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let step = |args: &[&str], must: &[&str], must_not: &[&str]| -> String {
        let mut all = vec!["halt"];
        all.extend_from_slice(args);
        all.push(p);
        let o = scr(&all);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{args:?}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        for m in must {
            assert!(out.contains(m), "{args:?} must print {m:?}: {out}");
        }
        for m in must_not {
            assert!(!out.contains(m), "{args:?} must not print {m:?}: {out}");
        }
        out
    };
    let line = |out: &str, key: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line: {out}"))
            .to_string()
    };
    let listed = step(&["--list"], &["Halt file settings for", "None"], &[]);
    assert!(listed.contains(&format!("{p}/.scr/halt.scr")), "{listed}");
    let o = step(
        &["--before", "2100-07-04T21:00:00"],
        &[
            "Setting ExitBefore",
            "ExitBefore:",
            "Sun Jul  4 21:00:00 2100",
        ],
        &["None"],
    );
    let before = line(&o, "ExitBefore:");
    let o = step(
        &["--after", "2100-07-04T16:00:00"],
        &["Setting ExitAfter", "ExitBefore:", "ExitAfter:"],
        &[],
    );
    assert_eq!(line(&o, "ExitBefore:"), before);
    let after = line(&o, "ExitAfter:");
    let o = step(
        &["--seconds", "1200"],
        &[
            "Setting HaltSeconds",
            "ExitBefore:",
            "ExitAfter:",
            "HaltSeconds:     1200",
        ],
        &[],
    );
    assert_eq!(
        (line(&o, "ExitBefore:"), line(&o, "ExitAfter:")),
        (before, after)
    );
    assert!(
        line(&o, "ExitBefore - HaltSeconds:").ends_with("Sun Jul  4 20:40:00 2100"),
        "{o}"
    );
    step(
        &["--unset-before"],
        &["Unsetting ExitBefore", "ExitAfter:", "HaltSeconds:"],
        &["ExitBefore:"],
    );
    let o = step(
        &["--unset-after"],
        &["Unsetting ExitAfter"],
        &["ExitAfter:"],
    );
    assert_eq!(line(&o, "HaltSeconds:"), "  HaltSeconds:     1200");
    step(
        &["--unset-seconds"],
        &["Unsetting HaltSeconds", "None"],
        &[],
    );
    step(
        &[],
        &["Setting ExitReason", "ExitReason:      JOB_HALTED"],
        &[],
    );
    step(
        &["--checkpoints", "5"],
        &[
            "Setting CheckpointsLeft",
            "CheckpointsLeft: 5",
            "ExitReason:",
        ],
        &[],
    );
    let o = step(
        &["--unset-checkpoints"],
        &["Unsetting CheckpointsLeft"],
        &[],
    );
    assert_eq!(line(&o, "ExitReason:"), "  ExitReason:      JOB_HALTED");
    step(&["--unset-reason"], &["Unsetting ExitReason", "None"], &[]);
    step(&["-v", "--remove"], &["Updating halt file", "removed"], &[]);
    assert!(!scr::layout::halt_file(d.path()).exists());
    // -v/--verbose names the file first
    step(
        &["--verbose", "--list"],
        &[&format!("scr_halt: halt file {p}/.scr/halt.scr")],
        &[],
    );
}

/// `-p DIR` names a prefix as it does for `scr index` and `scr postrun`; SCR's own operand
/// form goes on working beside it.
#[test]
fn a_prefix_given_with_p_is_halted_as_an_operand_is() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = scr(&[
        "halt",
        "--checkpoints",
        "3",
        "-p",
        a.path().to_str().unwrap(),
        b.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for d in [&a, &b] {
        assert_eq!(halt_file(d.path()).checkpoints_left(), Some(3));
    }
}
