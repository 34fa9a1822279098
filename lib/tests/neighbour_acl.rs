//! A project that shares the job's prefix through an access control list, as projects
//! share a directory (`setfacl -m g:proj:rwx -d -m g:proj:rwx`): the prefix is the user's
//! (root's), its mode shows nothing of the project, and every file and directory created
//! there inherits the project group's entry. A member of that group (nobody, group
//! nogroup, through setpriv) changes what the entry lets them change; SCR sees the entry
//! on the handle it opens, so nothing a member could have written is trusted.

mod common;

use common::neighbour::*;
use common::route_then_read::*;
use common::*;
use std::os::unix::fs::PermissionsExt;

const SIZE: &str = "6000";

/// `plain_checkpoint` (an application without SCR) writes `ckpt.5` in `s`'s prefix with
/// four ranks.
fn plain_checkpoint(s: &Shared) {
    let plain = build_c(
        s.job.dir.path(),
        &workspace().join("lib/tests/c/plain_checkpoint.c"),
        "plain_checkpoint",
    );
    let out = Mpi::current()
        .launch(None, 4, 60, &plain, &[SIZE, "5"])
        .current_dir(&s.prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_configuration_the_group_may_write_through_an_acl_is_passed_over() {
    let s = Shared::shared_by_acl(0o1770);
    s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    // the user's own configuration, created as an editor creates it: the default entry
    // lets the group write it
    let conf = s.prefix.join(".scrconf");
    std::fs::write(&conf, "SCR_FLUSH=1\n").unwrap();
    as_nobody(&format!(
        "printf 'SCR_PREFIX_PURGE=1\\n' >> {}",
        conf.display()
    ));
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(
        t.contains(".scrconf")
            && t.contains("group id 65534")
            && t.contains("access control list")
            && t.contains(".scrconf is not read"),
        "{t}"
    );
    assert!(s.prefix.join("ckpt.1").is_dir(), "purged: {t}");
    assert!(t.contains("restarted from ckpt.2"), "{t}");
}

#[test]
fn a_prefix_a_group_may_rename_in_through_an_acl_must_be_sticky() {
    let s = Shared::shared_by_acl(0o770);
    let (ok, t) = s.run(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(!ok, "{t}");
    assert!(
        t.contains(&s.prefix.display().to_string())
            && t.contains("group id 65534")
            && t.contains("access control list")
            && t.contains("not sticky")
            && t.contains("chmod +t"),
        "{t}"
    );
    assert!(!s.prefix.join("ckpt.1").exists(), "{t}");
    // sticky, as the message says: the group can no longer swap what SCR keeps there
    std::fs::set_permissions(&s.prefix, std::fs::Permissions::from_mode(0o1770)).unwrap();
    s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    let o = try_as_nobody(&format!(
        "cd {} && mv ckpt.1 x && mv ckpt.2 ckpt.1 && mv x ckpt.2",
        s.prefix.display()
    ));
    assert!(!o.status.success(), "{}", text(&o));
    delete_caches(&s.job);
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(t.contains("restarted from ckpt.2"), "{t}");
    assert!(
        s.index().entries().iter().all(|e| e.failed.is_empty()),
        "{t}"
    );
}

#[test]
fn an_adopted_checkpoint_the_group_may_change_through_an_acl_is_not_served() {
    let s = Shared::shared_by_acl(0o1770);
    plain_checkpoint(&s);
    let named = [("SCR_CURRENT", "ckpt.5")];
    let (_, t) = s.run(&[SIZE, "0"], &named);
    assert!(
        t.contains("ckpt.5/rank_")
            && t.contains("group id 65534")
            && t.contains("access control list"),
        "{t}"
    );
    assert!(!t.contains("restarted from ckpt.5"), "{t}");
    // a member changes rank 1's data in place, its size kept
    let file = s.prefix.join("ckpt.5/rank_1.ckpt");
    as_nobody(&format!(
        "printf 'theirs..' | dd of={} bs=1 seek=800 conv=notrunc",
        file.display()
    ));
    let (_, t) = s.run(&[SIZE, "0"], &named);
    assert!(
        !t.contains("restarted from ckpt.5") && !t.contains("failed verification"),
        "the member's bytes were read: {t}"
    );
}

#[test]
fn a_directory_the_group_may_swap_between_route_and_open_is_never_read() {
    let mut s = Shared::shared_by_acl(0o1770);
    use_route_then_read(&mut s.job);
    // a checkpoint the application wrote without SCR, in directories it made (the
    // default entry lets the group write them); its files only the user may write
    let part = s.prefix.join("step.9/part");
    std::fs::create_dir_all(&part).unwrap();
    for name in ["a.dat", "b.dat"] {
        let f = part.join(name);
        std::fs::write(&f, format!("the application's {name}\n")).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    // once routed, a member puts a directory of theirs where `part` was, with files of the
    // same names
    let t = route_then_read(
        s.job.dir.path(),
        &mut s.command(&[], &[("SCR_CURRENT", "step.9")]),
        || {
            as_nobody(&format!(
                "cd {} && mv part part.old && mkdir part && printf \"the neighbour's a\\n\" > \
                 part/a.dat && printf \"the neighbour's b\\n\" > part/b.dat",
                s.prefix.join("step.9").display()
            ))
        },
    );
    assert!(!t.contains("the neighbour's"), "{t}");
    assert!(
        t.contains("step.9") && t.contains("access control list"),
        "{t}"
    );
}

/// Checkpoints written straight to a prefix whose default ACL lets the group write the
/// application's files: each is said when it completes, naming a file and the fix, and
/// when the next start passes them over and starts from the beginning, it says so at the
/// default debug level, naming them.
#[test]
fn bypass_checkpoints_the_group_may_write_are_said_when_written_and_when_passed_over() {
    let s = Shared::shared_by_acl(0o1770);
    let bypass = [("SCR_CACHE_BYPASS", "1")];
    let t = s.run_ok(&["1000", "2"], &bypass);
    assert!(
        t.contains("ckpt.2/rank_0.ckpt")
            && t.contains("group id 65534")
            && t.contains("setfacl")
            && t.contains("restart"),
        "{t}"
    );
    delete_caches(&s.job);
    let t = s.run_ok(&["1000", "1"], &bypass);
    assert!(t.contains("starting from the beginning"), "{t}");
    assert!(t.contains("group id 65534"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.contains("no checkpoint on the prefix") && l.contains("ckpt.2, ckpt.1")),
        "the checkpoints passed over are not said: {t}"
    );
    println!("{t}");
}
