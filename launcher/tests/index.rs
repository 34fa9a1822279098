//! `scr index` (SCR's `scr_index`) on a prefix written by real SCR v2.0.0.

mod common;

use common::{scr_args as scr, stdout_ok as stdout};
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_prefix_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/xor/prefix/.scr");
    let dst = dir.path().join("prefix/.scr");
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["index.scr", "flush.scr", "halt.scr", "nodes.scr"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    let prefix = dir.path().join("prefix");
    (dir, prefix)
}

#[test]
fn lists_a_prefix_written_by_scr_2_0_0_in_scrs_format() {
    let (_d, prefix) = golden_prefix_copy();
    let out = stdout(&scr(&["index", "--list", "-p", prefix.to_str().unwrap()]));
    assert_eq!(
        out,
        "DSET VALID FLUSHED             CUR NAME\n   3 YES   2026-11-22T04:51:15   * ckpt.3\n   2 YES   2026-11-22T04:51:15     ckpt.2\n   1 YES   2026-11-22T04:51:14     ckpt.1\n"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&scr(&[
        "index",
        "--json",
        "-p",
        prefix.to_str().unwrap(),
    ])))
    .unwrap();
    assert_eq!(json["datasets"][0]["name"], "ckpt.3");
    assert_eq!(json["datasets"][0]["current"], true);
}

#[test]
fn current_drop_and_drop_after_update_the_index() {
    let (_d, prefix) = golden_prefix_copy();
    let p = prefix.to_str().unwrap();
    stdout(&scr(&["index", "-p", p, "--current", "ckpt.2"]));
    let out = stdout(&scr(&["index", "-p", p]));
    assert!(
        out.contains("   2 YES   2026-11-22T04:51:15   * ckpt.2"),
        "{out}"
    );
    // the index stays the user's alone, locked through its private lock file
    let index = prefix.join(".scr/index.scr");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&index).unwrap().permissions())
            & 0o777,
        0o600
    );
    assert!(prefix.join(".scr/.index.scr.lock").is_file());
    stdout(&scr(&["index", "-p", p, "--drop-after", "ckpt.1"]));
    let out = stdout(&scr(&["index", "-p", p]));
    assert_eq!(out.lines().count(), 2, "{out}");
    stdout(&scr(&["index", "-p", p, "--drop", "ckpt.1"]));
    assert_eq!(stdout(&scr(&["index", "-p", p])).lines().count(), 1);
    // the SCR name works the same way
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("scr_index");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_scr"), &link).unwrap();
    let out = Command::new(&link).args(["-p", p]).output().unwrap();
    assert_eq!(stdout(&out), "DSET VALID FLUSHED             CUR NAME\n");
}

/// A directory with no index (no job flushed to it, or not the prefix at all: `scr index`
/// run in the job's directory) is said, with the index's path and how to name the prefix,
/// and exits 1 as SCR v3.1's "Failed to read index file" does: an empty list would look as
/// if nothing had been saved. Without -p, SCR_PREFIX names the prefix, as for the other
/// commands.
#[test]
fn a_directory_without_an_index_is_said_and_scr_prefix_names_the_prefix() {
    let fresh = tempfile::tempdir().unwrap();
    for json in [false, true] {
        let mut args = vec!["index", "-p", fresh.path().to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let o = scr(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(".scr/index.scr") && err.contains("SCR_PREFIX") && err.contains("-p"),
            "{err}"
        );
    }
    // a prefix that is not there is a mistake, said with its name
    let gone = fresh.path().join("no-such-prefix");
    let o = scr(&["index", "-p", gone.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no-such-prefix"), "{err}");
    // SCR_PREFIX, from another working directory
    let (_d, prefix) = golden_prefix_copy();
    let o = Command::new(env!("CARGO_BIN_EXE_scr"))
        .arg("index")
        .current_dir(fresh.path())
        .env("SCR_PREFIX", &prefix)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ckpt."));
}

#[test]
fn unknown_names_and_missing_indexes_fail_clearly() {
    let (_d, prefix) = golden_prefix_copy();
    let o = scr(&[
        "index",
        "-p",
        prefix.to_str().unwrap(),
        "--current",
        "ckpt.9",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ckpt.9 is not in the index"));
    let empty = tempfile::tempdir().unwrap();
    let o = scr(&[
        "index",
        "-p",
        empty.path().to_str().unwrap(),
        "--current",
        "ckpt.1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !scr::layout::index_file(empty.path()).exists(),
        "a failed change creates no empty index"
    );
}

#[test]
fn choosing_the_current_dataset_moves_the_link_too() {
    // a restart follows the user's own scr.current first: `--current` moves it with the
    // index (manage.rst: the library restarts from the current dataset)
    use scr::HashView;
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path();
    std::fs::create_dir(prefix.join(".scr")).unwrap();
    for id in 1..=2u64 {
        let name = format!("ckpt.{id}");
        let ds =
            scr::dataset::Dataset::create(id, &name, true, false, &Default::default(), Some(id));
        scr::prefix::update_index(prefix, |i| {
            i.add(&ds, &name, true);
            Ok(())
        })
        .unwrap();
    }
    scr::prefix::update_current_link(prefix, "ckpt.2").unwrap();
    let o = common::scr(
        &[
            "index",
            "--prefix",
            prefix.to_str().unwrap(),
            "--current",
            "ckpt.1",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(
        std::fs::read_link(prefix.join("scr.current")).unwrap(),
        std::path::Path::new("ckpt.1")
    );
    let index = scr::index::IndexFile::read(&scr::layout::index_file(prefix)).unwrap();
    assert_eq!(index.current(), Some("ckpt.1"));
}

/// `scr index --current ckpt.2` on a copy of the golden prefix whose index `change` made
/// first: it must fail, name the checkpoints a restart can load and leave the index as it
/// was. Its standard error.
fn refused_current_of_ckpt2(change: impl FnOnce(&mut scr::index::IndexFile)) -> String {
    use scr::HashView;
    let (_d, prefix) = golden_prefix_copy();
    let path = prefix.join(".scr/index.scr");
    scr::index::IndexFile::update(&path, 0o600, |i| {
        change(i);
        Ok(())
    })
    .unwrap();
    let before = std::fs::read(&path).unwrap();
    let o = scr(&[
        "index",
        "-p",
        prefix.to_str().unwrap(),
        "--current",
        "ckpt.2",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("ckpt.3, ckpt.1"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    err
}

/// `--current` of a copy a restart cannot load (incomplete: VALID NO) is refused, naming the
/// checkpoints it could be: made current, the next restart would pass over every newer
/// checkpoint, and start over when no older one is whole. The index stays as it was.
#[test]
fn a_checkpoint_a_restart_cannot_load_is_not_made_current() {
    let err = refused_current_of_ckpt2(|i| i.set_complete(2, "ckpt.2", false));
    assert!(
        err.contains("ckpt.2 is not a checkpoint a restart can load"),
        "{err}"
    );
}

/// A checkpoint a fetch marked failed is skipped by every restart: made current, the next
/// restart would start over from an older one without a word, so `--current` refuses it,
/// saying when it failed and which ones a restart can load.
#[test]
fn a_checkpoint_marked_failed_is_not_made_current() {
    let err = refused_current_of_ckpt2(|i| i.mark_failed(2, "ckpt.2", chrono::Local::now()));
    assert!(
        err.contains("ckpt.2") && err.contains("marked failed"),
        "{err}"
    );
}
