//! `scr list-down-nodes`, `scr check-node`, `scr env` and `scr prerun`: SCR's flags, output
//! and exit codes, on this machine (no resource manager; SCR_NODELIST names the nodes).

mod common;

use common::*;
use scr::HashView;

#[test]
fn check_node_passes_or_names_each_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let o = scr(
        &["check-node", "--cntl", &d, "--cache", &format!("{d}:1MB")],
        &[],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "PASS\n");
    let o = scr(
        &[
            "check-node",
            "--free",
            "--cntl",
            &format!("{d}/gone"),
            "--cache",
            &format!("{d}:1000PB"),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains(&format!("FAIL: Could not access directory: {d}/gone")),
        "{text}"
    );
    assert!(
        text.contains("FAIL: Insufficient space in directory: "),
        "{text}"
    );
    // SCR's name works too
    let o = scr(&["check-node", "--cntl", "bad:size"], &[]);
    assert_eq!(o.status.code(), Some(1), "a bad size is a usage error");
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad:size"));
}

#[test]
fn list_down_nodes_reasons_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().display().to_string();
    let env = [
        ("SCR_NODELIST", "n[1-5]"),
        ("SCR_CNTL_BASE", base.as_str()),
        ("SCR_CACHE_BASE", base.as_str()),
    ];
    let o = scr(&["list-down-nodes"], &env);
    assert_eq!(o.status.code(), Some(0), "all up: exit 0, no output");
    assert_eq!(stdout(&o), "");
    let mut with_exclude = env.to_vec();
    with_exclude.push(("SCR_EXCLUDE_NODES", "n2"));
    let o = scr(&["list-down-nodes", "--down", "n4"], &with_exclude);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "n[2,4]\n");
    let o = scr(
        &["list-down-nodes", "--reason", "--down", "n4"],
        &with_exclude,
    );
    assert_eq!(
        stdout(&o),
        "n2: User excluded via SCR_EXCLUDE_NODES\nn4: Specified on command line\n"
    );
    // an explicit nodeset, and a node test that fails on this machine fails every node
    let o = scr(
        &["list-down-nodes", "n[1-2]"],
        &[("SCR_CACHE_BASE", "/nonexistent/cache")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "n[1-2]\n");
    let o = scr(
        &["list-down-nodes", "--reason", "n1"],
        &[("SCR_CACHE_BASE", "/nonexistent/cache")],
    );
    assert_eq!(
        stdout(&o),
        "n1: FAIL: Could not access directory: /nonexistent/cache\n"
    );
    let o = scr(&["list-down-nodes", "n[1-"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("n[1-"));
}

#[test]
fn env_answers_like_scr_env() {
    let o = scr(&["env", "--nodes"], &[("SCR_NODELIST", "n[1-3],m1")]);
    assert_eq!(stdout(&o), "m1,n[1-3]\n");
    let o = scr(&["env", "--jobid"], &[("SCR_JOB_ID", "77")]);
    assert_eq!(stdout(&o), "77\n");
    let o = scr(&["env", "--endtime"], &[("SCR_END_TIME", "1800000000")]);
    assert_eq!(stdout(&o), "1800000000\n");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let o = scr(&["env", "--runnodes", "--prefix", &d], &[]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(1), "0\n".to_string()));
    std::fs::create_dir_all(dir.path().join(".scr")).unwrap();
    scr::nodes::NodesFile::with_nodes(3)
        .write(&scr::layout::nodes_file(dir.path()))
        .unwrap();
    let o = scr(&["env", "--runnodes", "--prefix", &d], &[]);
    assert_eq!((o.status.code(), stdout(&o)), (Some(0), "3\n".to_string()));
}

#[test]
fn prerun_clears_the_last_jobs_state_but_keeps_a_user_halt() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join(".scr")).unwrap();
    scr::nodes::NodesFile::with_nodes(4)
        .write(&scr::layout::nodes_file(p))
        .unwrap();
    let mut flush = scr::flush::FlushFile::new();
    flush.set_location(3, scr::flush::Location::Cache);
    flush.write(&scr::layout::flush_file(p)).unwrap();
    let mut halt = scr::halt::HaltFile::new();
    halt.set_exit_reason("SCR_FINALIZE_CALLED");
    halt.set_checkpoints_left(5);
    halt.write(&scr::layout::halt_file(p)).unwrap();
    let o = scr(&["prerun", "-p", &p.display().to_string()], &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!scr::layout::nodes_file(p).exists());
    assert!(!scr::layout::flush_file(p).exists());
    let halt = scr::halt::HaltFile::read(&scr::layout::halt_file(p)).unwrap();
    assert_eq!(
        halt.exit_reason(),
        None,
        "the finished job's reason is gone"
    );
    assert_eq!(
        halt.checkpoints_left(),
        Some(5),
        "the user's condition stays"
    );
}

/// The node test writes a file in each directory it tests, which are often shared (a 1777
/// `/tmp` or `/dev/shm` as SCR_CACHE_BASE). A neighbour who planted a link (or a file) where
/// the test writes must neither make it write through the link (truncating whatever the
/// user may write) nor make the node look down. In a new process id namespace the test runs
/// as process 1, so a name made of its process id is one the neighbour could plant.
#[test]
fn the_node_test_writes_through_no_link_a_neighbour_planted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("precious");
    std::fs::write(&victim, b"a week of work").unwrap();
    // the neighbour's links, for every process id the test may run as in its namespace
    for pid in 1..=4 {
        let o = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "ln",
                "-s",
            ])
            .arg(&victim)
            .arg(shared.join(format!("testfile.{pid}.txt")))
            .output()
            .expect("setpriv (util-linux)");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_scr"))
        .args(["check-node", "--cntl"])
        .arg(&shared)
        .output()
        .expect("unshare (util-linux)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"a week of work",
        "the node test wrote through a planted link: {text}"
    );
    assert_eq!(o.status.code(), Some(0), "the node is up: {text}");
    // and it leaves nothing of its own behind
    let left: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("testfile."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Root's node test runs with the job's user's rights: named with --user (as scr-run names
/// it to each node it tests over pdsh, where the environment is root's), or by
/// SCR_USER_NAME. A directory only root may write fails for the user, and passes for root.
#[test]
fn root_tests_a_node_with_the_job_users_rights() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "root's node test of a user's job: run the tests as root (CI does)"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = dir.path().display().to_string();
    let root_only = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["check-node"];
        all.extend(args);
        all.extend(["--cntl", d.as_str()]);
        scr(&all, env)
    };
    let o = root_only(&[], &[("USER", "root")]);
    assert_eq!((o.status.code(), stdout(&o).as_str()), (Some(0), "PASS\n"));
    for (args, env) in [
        (vec!["--user", "nobody"], vec![("USER", "root")]),
        (vec![], vec![("SCR_USER_NAME", "nobody")]),
    ] {
        let o = root_only(&args, &env);
        assert_eq!(o.status.code(), Some(1), "{args:?} {env:?}");
        let text = stdout(&o);
        assert!(
            text.contains("FAIL: Could not touch test file: ")
                && text.contains("Permission denied")
                && text.contains("as user nobody"),
            "{args:?} {env:?}: {text}"
        );
    }
    // a user without an account is no user to test as
    let o = root_only(&["--user", "no-such-user-here"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("no such account"), "{}", stdout(&o));
    // nothing was left in the directory
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
