//! Hostile input to the commands: names that would run commands, leave their directory or
//! pass for options are refused where they enter, with a message naming the source, and
//! nothing runs.

mod common;

use common::*;

/// A marker a successful injection would create.
fn marker(dir: &std::path::Path) -> std::path::PathBuf {
    dir.join("injected")
}

#[test]
fn shell_metacharacters_in_a_node_list_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    std::fs::create_dir_all(prefix.join(".scr")).unwrap();
    // a checkpoint only in cache: postrun goes on to drain it from the nodes
    scr::prefix::update_flush_file(&prefix, |f| {
        f.describe(1, "ckpt.1", Some(1), None);
        f.set_location(1, scr::flush::Location::Cache);
    })
    .unwrap();
    let m = marker(dir.path());
    // (a space, not ${IFS}: SCR expands $NAME in parameter values, as v3.1 does, and an
    // unset IFS is refused before the host list is read)
    let hostile = format!("n1,n2';touch {};'", m.display());
    for (var, args) in [
        (
            "SCR_NODELIST",
            vec!["postrun", "-p", prefix.to_str().unwrap()],
        ),
        ("SCR_NODELIST", vec!["list-down-nodes"]),
        ("SCR_EXCLUDE_NODES", vec!["list-down-nodes"]),
    ] {
        let mut env = vec![(var, hostile.as_str())];
        if var != "SCR_NODELIST" {
            env.push(("SCR_NODELIST", "n1,n2"));
        }
        let o = scr(&args, &env);
        let t = text(&o);
        assert!(!o.status.success(), "{args:?}: {t}");
        assert!(t.contains(var), "names the source: {t}");
        assert!(t.contains("cannot be part of a host name"), "{t}");
        assert!(!m.exists(), "{args:?} ran the injected command");
    }
}

#[test]
fn node_names_that_read_as_options_are_refused() {
    for list in ["-oProxyCommand=touch", "n1,-n2", "n[1-2],-x"] {
        let o = scr(&["list-down-nodes"], &[("SCR_NODELIST", list)]);
        let t = text(&o);
        assert!(!o.status.success(), "{list}: {t}");
        assert!(t.contains("cannot start with '-'"), "{list}: {t}");
    }
    let o = scr(&["glob-hosts", "-c", "-h", "n1,-oProxyCommand=x"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn job_ids_that_leave_the_control_directory_are_refused() {
    for id in ["x/../../elsewhere", "..", "a\nb"] {
        let o = scr(
            &["list-dir", "control"],
            &[("SCR_JOB_ID", id), ("USER", "u")],
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{id:?}: {t}");
        assert_eq!(stdout(&o), "INVALID\n", "{id:?}");
        assert!(t.contains("SCR_JOB_ID"), "names the source: {t}");
    }
}

/// Runs a shell command as another user (nobody), as a neighbour sharing a directory would.
fn as_nobody(script: &str) {
    let o = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("setpriv (util-linux)");
    assert!(o.status.success(), "{script}: {}", text(&o));
}

#[test]
fn a_metadata_directory_another_user_planted_in_a_shared_prefix_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("run.sh"), "#!/bin/sh\necho mine\n").unwrap();
    // the neighbour plants SCR's metadata directory, with a link to the victim's home
    as_nobody(&format!(
        "mkdir {0}/.scr && chmod 777 {0}/.scr && ln -s {1} {0}/.scr/h && echo planted > {0}/.scr/flush.scr",
        shared.display(),
        home.display()
    ));
    let p = shared.to_str().unwrap();
    for args in [
        vec!["postrun", "-p", p],
        vec!["index", "--prefix", p, "--build", "1"],
        vec!["index", "--prefix", p, "--list"],
        vec!["halt", "--checkpoints", "1", p],
        vec!["inspect", "-p", p],
    ] {
        let o = scr(&args, &[("SCR_NODELIST", "n1")]);
        let t = text(&o);
        assert!(!o.status.success(), "{args:?}: {t}");
        assert!(
            t.contains(".scr") && t.contains("belongs to user id 65534, not to you"),
            "{args:?}: {t}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join("run.sh")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 1);
}

#[test]
fn a_halt_file_that_is_a_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    std::fs::create_dir_all(prefix.join(".scr")).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, prefix.join(".scr/halt.scr")).unwrap();
    let o = scr(
        &["halt", "--checkpoints", "1", prefix.to_str().unwrap()],
        &[],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(!elsewhere.exists(), "written through the link");
    // .scr itself a link: refused before anything is read or written
    let p2 = dir.path().join("p2");
    std::fs::create_dir(&p2).unwrap();
    std::os::unix::fs::symlink(&prefix, p2.join(".scr")).unwrap();
    let o = scr(&["halt", "--checkpoints", "1", p2.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(!o.status.success() && t.contains("symbolic link"), "{t}");
}

#[test]
fn a_drain_copies_only_the_job_users_own_regular_files() {
    use scr::HashView;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cntl = dir.path().join("cntl");
    std::fs::create_dir(&cntl).unwrap();
    std::fs::set_permissions(&cntl, std::fs::Permissions::from_mode(0o700)).unwrap();
    let prefix = dir.path().join("prefix");
    std::fs::create_dir(&prefix).unwrap();
    // another user's secret, which a filemap lists as if it were a checkpoint file
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let secret = theirs.join("secret");
    as_nobody(&format!("umask 077; echo s3cret > {}", secret.display()));
    let mut map = scr::filemap::Filemap::new();
    let key = secret.to_string_lossy().into_owned();
    let mut meta =
        scr::meta::Meta::for_user_file("secret", 1, "ckpt.1/secret", "/p/ckpt.1", "secret");
    meta.set_size(7);
    meta.set_complete(true);
    map.add_file(1, 0, &key);
    map.set_meta(1, 0, &key, &meta);
    map.set_expected_files(1, 0, 1);
    let fm = cntl.join("filemap_0.scrinfo");
    map.write(&fm).unwrap();
    let mut master = scr::filemap::MasterFilemap::new();
    master.add(&fm.to_string_lossy());
    master.write(&cntl.join("filemap.scrinfo")).unwrap();
    let o = scr(
        &[
            "copy",
            "--cntldir",
            cntl.to_str().unwrap(),
            "--id",
            "1",
            "--prefix",
            prefix.to_str().unwrap(),
        ],
        &[],
    );
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("not a regular file of the job's user"), "{t}");
    assert!(
        !prefix.join("ckpt.1/secret").exists(),
        "the secret was copied"
    );
}

#[test]
fn a_fifo_or_huge_user_config_and_an_empty_prefix_are_errors_not_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path();
    let fifo = prefix.join(".scrconf");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // (a command that waits on the FIFO is killed after 10 s, failing the test)
    let o = scr_within(
        10,
        &["list-down-nodes"],
        &[
            ("SCR_PREFIX", prefix.to_str().unwrap()),
            ("SCR_NODELIST", "n1"),
        ],
    );
    let t = text(&o);
    assert!(
        !o.status.success() && t.contains("not a regular file"),
        "{t}"
    );
    std::fs::remove_file(&fifo).unwrap();
    let f = std::fs::File::create(&fifo).unwrap();
    f.set_len(64 << 20).unwrap();
    let o = scr(
        &["list-down-nodes"],
        &[
            ("SCR_PREFIX", prefix.to_str().unwrap()),
            ("SCR_NODELIST", "n1"),
        ],
    );
    let t = text(&o);
    assert!(!o.status.success() && t.contains("is not one"), "{t}");
    let o = scr(&["inspect"], &[("SCR_PREFIX", "")]);
    let t = text(&o);
    assert!(
        !o.status.success() && t.contains("SCR_PREFIX") && t.contains("empty"),
        "{t}"
    );
}

#[test]
fn a_sparse_terabyte_halt_file_is_an_error_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().to_str().unwrap();
    assert!(
        scr(&["halt", "--checkpoints", "5", p], &[])
            .status
            .success()
    );
    let halt = scr::layout::halt_file(dir.path());
    // a halt file an older version left everyone's to write: a neighbour makes it a sparse
    // 1 TiB file whose header claims all of it (magic, type 1, version 1, size 2^40, flags)
    std::fs::set_permissions(
        halt.parent().unwrap(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&halt, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    as_nobody(&format!(
        "printf '\\225\\037\\303\\365\\000\\001\\000\\001\\000\\000\\001\\000\\000\\000\\000\\000\\000\\000\\000\\000' > {0} && truncate -s 1T {0}",
        halt.display()
    ));
    for args in [
        vec!["halt", "--list", p],
        vec!["should-exit", "-p", p],
        vec!["retries-halt", "--dir", p],
    ] {
        let o = scr(&args, &[]);
        let t = text(&o);
        // an error naming the file and what to do, never an abort (signal) or a halt; the
        // commands whose 1 means "go on" say an error with 2
        let error = if args[0] == "halt" { 1 } else { 2 };
        assert_eq!(o.status.code(), Some(error), "{args:?}: {t}");
        assert!(
            t.contains("halt.scr") && t.contains("at most 65536") && t.contains("remove it"),
            "{args:?}: {t}"
        );
    }
    // the user can still halt their own job: the file is replaced by what they ask for
    let o = scr(&["halt", "--checkpoints", "3", p], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("at most 65536") && t.contains("replacing it"),
        "{t}"
    );
    let o = scr(&["halt", "--list", p], &[]);
    assert!(text(&o).contains("CheckpointsLeft"), "{}", text(&o));
    // and it can still be removed, by the one command that needs not read it
    let o = scr(&["halt", "-r", p], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!halt.exists());
}
