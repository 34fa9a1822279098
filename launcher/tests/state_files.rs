//! `scr flush-file`, `scr retries-halt` and `scr nodes-file` with SCR's outputs and exit codes.

mod common;

use common::scr_args as scr;
use scr::HashView;
use std::path::Path;
use std::process::{Command, Output};

fn golden() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden/xor/prefix")
        .display()
        .to_string()
}

fn says(o: &Output, code: i32, text: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), text);
}

#[test]
fn flush_file_queries_a_golden_prefix() {
    let p = golden();
    says(&scr(&["flush-file", "--dir", &p, "--latest"]), 0, "3\n");
    says(
        &scr(&["flush-file", "--dir", &p, "--needflush", "3"]),
        1,
        "",
    );
    says(
        &scr(&["flush-file", "--dir", &p, "--location", "3"]),
        0,
        "PFS\n",
    );
    says(
        &scr(&["flush-file", "--dir", &p, "--location", "7"]),
        1,
        "NONE\n",
    );
    says(
        &scr(&["flush-file", "--dir", &p, "--subdir", "3"]),
        0,
        "ckpt.3\n",
    );
    says(&scr(&["nodes-file", "--dir", &p]), 0, "4\n");
}

#[test]
fn missing_files_mean_nothing_recorded() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    says(&scr(&["flush-file", "--dir", p, "--latest"]), 1, "");
    says(&scr(&["flush-file", "--dir", p, "--needflush", "1"]), 1, "");
    says(&scr(&["nodes-file", "--dir", p]), 1, "0\n");
    says(
        &scr(&["retries-halt", "--dir", p]),
        1,
        "scr_retries_halt: CONTINUE RUN: No halt file found.\n",
    );
}

#[test]
fn retries_halt_decides_like_scr() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    std::fs::create_dir_all(d.path().join(".scr")).unwrap();
    let write = |f: &dyn Fn(&mut scr::halt::HaltFile)| {
        let mut h = scr::halt::HaltFile::new();
        f(&mut h);
        h.write(&scr::layout::halt_file(d.path())).unwrap();
    };
    write(&|h| h.set_checkpoints_left(3));
    says(
        &scr(&["retries-halt", "--dir", p]),
        1,
        "scr_retries_halt: CONTINUE RUN: No halt condition.\n",
    );
    write(&|h| h.set_checkpoints_left(0));
    says(
        &scr(&["retries-halt", "--dir", p]),
        0,
        "scr_retries_halt: HALT RUN: No checkpoints remaining.\n",
    );
    write(&|h| h.set_exit_after(1));
    let o = scr(&["retries-halt", "--dir", p]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("is past ExitAfter time"));
    // the SCR name, as scr_srun calls it
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("scr_retries_halt");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_scr"), &link).unwrap();
    write(&|h| h.set_exit_reason("JOB_HALTED"));
    let o = Command::new(&link).args(["--dir", p]).output().unwrap();
    says(&o, 0, "scr_retries_halt: HALT RUN: Reason: JOB_HALTED.\n");
}
