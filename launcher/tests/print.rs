//! `scr print` (and its SCR name `scr_print_hash_file`) against files written by SCR v2.0.0.

mod common;

use common::scr_args as scr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden")
}

fn binaries_and_dumps() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let mut dirs = vec![golden()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "txt") {
                out.push((p.with_extension(""), p));
            }
        }
    }
    assert!(out.len() >= 14);
    out
}

#[test]
fn print_matches_scr_print_hash_file_byte_for_byte() {
    for (bin, txt) in binaries_and_dumps() {
        let out = scr(&["print", bin.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            std::fs::read_to_string(&txt).unwrap(),
            "{}",
            bin.display()
        );
    }
}

#[test]
fn scr_name_dispatches_on_argv0() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("scr_print_hash_file");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_scr"), &link).unwrap();
    let file = golden().join("xor/prefix/.scr/halt.scr");
    let out = Command::new(&link).arg(&file).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "  ExitReason\n    SCR_FINALIZE_CALLED\n"
    );
    // SCR's usage error exits 1
    let out = Command::new(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn json_output_is_parseable() {
    let out = scr(&[
        "print",
        "--json",
        golden().join("xor/prefix/.scr/flush.scr").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["DATASET"]["3"]["LOCATION"],
        serde_json::json!(["PFS", "CACHE"])
    );
    assert_eq!(v["DATASET"]["3"]["NAME"], "ckpt.3");
}

#[test]
fn hostile_files_give_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(golden().join("xor/prefix/.scr/index.scr")).unwrap();
    let mut corrupt = good.clone();
    corrupt[100] ^= 0xff;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.scr", vec![], "file is empty"),
        (
            "short.scr",
            good[..12].to_vec(),
            "shorter than the 20-byte header",
        ),
        (
            "truncated.scr",
            good[..good.len() - 10].to_vec(),
            "truncated",
        ),
        (
            "magic.scr",
            [&[0u8, 1, 2, 3][..], &good[4..]].concat(),
            "bad magic number",
        ),
        ("corrupt.scr", corrupt, "CRC32 mismatch"),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = scr(&["print", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(name) && err.contains(needle), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = scr(&["print", dir.path().to_str().unwrap()]);
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("is a directory")
    );
    let out = scr(&["print", dir.path().join("missing.scr").to_str().unwrap()]);
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("No such file")
    );
}
