//! SCR v3.1's user guide, `manage.rst` (Manage datasets): the index and `scr_index` on a
//! prefix real jobs of `lib/tests/c/guide_steps.c` wrote. Expected values come from the
//! guide and from what the program itself wrote and read back.

mod common;

use common::*;
use scr::HashView;
use std::process::Command;

const SINGLE: (&str, &str) = ("SCR_COPY_TYPE", "SINGLE");

/// `scr index ARGS -p PREFIX`'s standard output; it must succeed.
fn scr_index(job: &Job, args: &[&str]) -> String {
    let o = Command::new(scr_command())
        .arg("index")
        .args(args)
        .arg("-p")
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// manage.rst, "Manage datasets": run inside the prefix directory, scr_index needs no
/// `--prefix`, and lists the checkpoints as `DSET VALID FLUSHED CUR NAME`, the current one
/// marked `*`.
#[test]
fn scr_index_run_in_the_prefix_needs_no_prefix_option() {
    let job = steps_job();
    job.run_ok(
        2,
        &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"],
        &[SINGLE, ("SCR_FLUSH", "1")],
    );
    let o = Command::new(scr_command())
        .arg("index")
        .current_dir(job.prefix())
        .env_remove("SCR_PREFIX")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "DSET VALID FLUSHED             CUR NAME", "{out}");
    assert!(
        lines[1].starts_with("   2 YES   ") && lines[1].ends_with("   * ckpt.2"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("   1 YES   ") && lines[2].ends_with("     ckpt.1"),
        "{out}"
    );
}

/// manage.rst, "Manage datasets": with no checkpoint marked current, a restart starts from
/// the newest valid one (never one marked failed, here by a restart that rejected it).
#[test]
fn with_no_current_checkpoint_a_restart_starts_from_the_newest_valid_one() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    write_steps_checkpoints(&job, 3, &env);
    let out = job.run_ok(2, &["init", "restart=reject", "quit"], &env);
    assert_eq!(answer(&out, "restart"), "ckpt.3 t=3 data=verified rc=1");
    // no current checkpoint: neither in the index nor as a scr.current link
    let path = scr::layout::index_file(&job.prefix());
    let mut index = scr::index::IndexFile::read(&path).unwrap();
    index.unset_current();
    index.write(&path).unwrap();
    let _ = std::fs::remove_file(job.prefix().join("scr.current"));
    assert!(!scr_index(&job, &[]).contains('*'));
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.2 t=2 data=verified rc=0");
}

/// manage.rst, "Manage datasets": `--drop NAME` removes the index entry and keeps the
/// files; `--add NAME` puts it back from its metadata in `.scr/scr.dataset.<id>`, checked
/// complete; `--current NAME` makes it the one restarts start from.
#[test]
fn scr_index_drop_keeps_the_files_and_add_puts_the_dataset_back() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    job.run_ok(2, &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"], &env);
    scr_index(&job, &["--drop", "ckpt.2"]);
    assert!(!scr_index(&job, &[]).contains("ckpt.2"));
    for r in 0..2 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            1000,
        );
    }
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");

    let added = scr_index(&job, &["--add", "ckpt.2"]);
    // the job's restart made ckpt.1 current; the re-added, newer ckpt.2 is not, and the
    // user is told how to restart from it
    assert!(
        added.contains("`ckpt.1'") && added.contains("scr index --current ckpt.2"),
        "{added}"
    );
    let list = scr_index(&job, &[]);
    // indexed again as flushed: the FLUSHED column holds a time
    assert!(
        list.lines().any(|l| l.starts_with("   2 YES   ")
            && l[11..].starts_with(|c: char| c.is_ascii_digit())
            && l.ends_with(" ckpt.2")),
        "{list}"
    );
    scr_index(&job, &["--current", "ckpt.2"]);
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.2 t=2 data=verified rc=0");
}

/// api.rst, "SCR_Delete": SCR_Delete(name) when two checkpoints share the name (a name
/// written again, as after a fallback restart): every dataset of that name goes — its files, its index entry — and the
/// call succeeds; the older checkpoint becomes current and still restarts.
#[test]
fn scr_delete_of_a_name_two_checkpoints_share_deletes_both() {
    let job = steps_job();
    let env = [SINGLE, ("SCR_FLUSH", "1")];
    let out = job.run_ok(
        2,
        &[
            "init",
            "ckpt=ckpt.1:1",
            "ckpt=ckpt.2:2",
            "start=ckpt.2:c",
            "write=again/rank_%r.ckpt:3",
            "complete",
            "quit",
        ],
        &env,
    );
    assert_eq!(answer(&out, "complete"), "rc=0", "{out}");
    let named_twice = scr_index(&job, &[]);
    assert_eq!(
        named_twice
            .lines()
            .filter(|l| l.ends_with(" ckpt.2"))
            .count(),
        2,
        "{named_twice}"
    );
    let out = job.run_ok(2, &["init", "delete=ckpt.2", "quit"], &env);
    assert_eq!(answer(&out, "delete=ckpt.2"), "rc=0", "{out}");
    let list = scr_index(&job, &[]);
    assert!(!list.contains("ckpt.2"), "{list}");
    assert!(
        list.lines().any(|l| l.ends_with("* ckpt.1")),
        "the older checkpoint is current: {list}"
    );
    for r in 0..2 {
        for gone in [
            format!("ckpt.2/rank_{r}.ckpt"),
            format!("again/rank_{r}.ckpt"),
        ] {
            assert!(!job.prefix().join(&gone).exists(), "{gone} deleted");
        }
    }
    delete_caches(&job);
    assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
}

/// api.rst, "SCR_Delete": it removes the named dataset only. The checkpoint SCR_Init chose for the
/// restart, deleted by the application before it asks for its restart, gives way to the
/// next older one (in cache, and on the prefix once the cache is gone), as after a failed
/// restart; the job does not start over while ckpt.1 is complete.
#[test]
fn deleting_the_checkpoint_chosen_for_the_restart_offers_the_next_older_one() {
    for flush in ["1", "0"] {
        let job = Job::with_c_program("guide_steps.c");
        let env = [SINGLE, ("SCR_FLUSH", flush), ("SCR_CACHE_SIZE", "2")];
        job.run_ok(
            2,
            &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "finalize"],
            &env,
        );
        let out = job.run_ok(2, &["init", "delete=ckpt.2", "restart", "quit"], &env);
        assert_eq!(answer(&out, "delete=ckpt.2"), "rc=0", "{out}");
        assert_eq!(
            answer(&out, "restart"),
            "ckpt.1 t=1 data=verified rc=0",
            "SCR_FLUSH={flush}: {out}"
        );
        if flush == "1" {
            delete_caches(&job);
            assert_restarts(&job, 2, &env, "ckpt.1 t=1 data=verified rc=0");
        }
    }
}
