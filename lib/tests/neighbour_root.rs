//! Root's `scr` commands on a user's prefix: the user (nobody, through setpriv) may change
//! their own prefix while root works there, so root acts as them and writes nowhere they
//! could not, whatever `.scr` has become.

mod common;

use common::neighbour::{neighbours_link, sticky_tmp};
use common::*;
use scr::HashView;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A job's prefix with two checkpoints flushed, then given to nobody (as a user's own
/// prefix is theirs), in a directory everyone may enter; and a directory only root may
/// write, beside it.
fn users_prefix() -> (Job, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    job.run_ok(
        2,
        &["1000", "2"],
        &[("SCR_FLUSH", "1"), ("SCR_LOG_ENABLE", "1")],
    );
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = job.prefix();
    let o = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let root_only = job.dir.path().join("root-only");
    std::fs::create_dir(&root_only).unwrap();
    std::fs::set_permissions(&root_only, std::fs::Permissions::from_mode(0o700)).unwrap();
    (job, prefix, root_only)
}

/// Every file below `dir` that is not nobody's.
fn not_the_users(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).unwrap().uid() != 65534)
        .collect()
}

/// Waits until /proc/locks lists a lock on the file with inode `ino`.
fn wait_for_lock(ino: u64) {
    let started = Instant::now();
    let on_file = format!(":{ino} ");
    while !std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .any(|l| l.contains(&on_file))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the user never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until process `pid` has `file` open (the halt file it tries to lock).
fn wait_until_open(pid: u32, file: &Path) {
    let started = Instant::now();
    let fds = PathBuf::from(format!("/proc/{pid}/fd"));
    loop {
        let open = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == file));
        if open {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} never opened",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Root's `scr halt` waits for the halt file's lock (its private lock file beside it), which
/// the user holds (root has it open, trying the lock); meanwhile the user makes `.scr` a
/// link to a directory only root may write. Root's halt then writes nothing there: it acts
/// as the user.
#[test]
fn root_s_halt_waiting_for_the_lock_writes_nowhere_the_user_could_not() {
    let (job, prefix, root_only) = users_prefix();
    let halt = scr::layout::halt_file(&prefix).with_file_name(".halt.scr.lock");
    std::fs::write(&halt, b"").unwrap();
    std::os::unix::fs::chown(&halt, Some(65534), Some(65534)).unwrap();
    let go = job.dir.path().join("go");
    let mut holder = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "flock", "-x"])
        .arg(&halt)
        .args([
            "sh",
            "-c",
            "while [ ! -e \"$0\" ]; do sleep 0.05; done; mv \"$1/.scr\" \"$1/.scr.old\" && ln -s \"$2\" \"$1/.scr\"",
        ])
        .arg(&go)
        .arg(&prefix)
        .arg(&root_only)
        .process_group(0)
        .spawn()
        .unwrap();
    let ino = std::fs::metadata(&halt).unwrap().ino();
    wait_for_lock(ino);
    let root_s = Command::new(scr_command())
        .args(["halt", "--checkpoints", "1"])
        .arg(&prefix)
        .env("SCR_LOCK_TIMEOUT", "120")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_open(root_s.id(), &halt);
    std::fs::write(&go, b"").unwrap();
    let swapped = holder.wait().unwrap();
    assert!(swapped.success());
    let out = wait_within(root_s, Duration::from_secs(120));
    assert_eq!(
        std::fs::read_dir(&root_only).unwrap().count(),
        0,
        "root wrote into its own directory through the user's link: {}",
        text(&out)
    );
}

/// Root's `scr report`, `scr index --current` and `scr index --drop` on a user's prefix
/// leave every file there the user's: root acted as them.
#[test]
fn root_s_report_and_index_changes_leave_the_prefix_the_users() {
    let (_job, prefix, _) = users_prefix();
    for args in [
        vec!["report", "-p"],
        vec!["index", "--current", "ckpt.1", "--prefix"],
        vec!["index", "--drop", "ckpt.2", "--prefix"],
    ] {
        let o = Command::new(scr_command())
            .args(&args)
            .arg(&prefix)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        assert_eq!(
            not_the_users(&prefix),
            Vec::<PathBuf>::new(),
            "{args:?}: {}",
            text(&o)
        );
    }
    assert!(prefix.join(".scr/report.html").exists());
    // read as bytes: the library, as root, reads no `.scr` of another user's (it is for
    // the user's own commands, or root's acting as them)
    let bytes = std::fs::read(scr::layout::index_file(&prefix)).unwrap();
    let (hash, _) = scr::hash::Hash::from_file_bytes(&bytes).unwrap();
    let index = <scr::index::IndexFile as scr::HashView>::from_hash(hash).unwrap();
    assert!(index.id_of("ckpt.2").is_none());
}

/// Root's queries of a user's prefix read nothing of root's through the user's links:
/// neither a `.scr` made a link to a directory only root may read, nor a link in a real
/// `.scr` to a file of root's. Each query either fails, saying so, or answers from what
/// the user may read; none prints what root's files hold.
#[test]
fn root_s_queries_of_a_user_s_prefix_follow_none_of_the_user_s_links() {
    use scr::flush::{FlushFile, Location};
    let (_job, prefix, root_only) = users_prefix();
    scr::nodes::NodesFile::with_nodes(4321)
        .write(&root_only.join("nodes.scr"))
        .unwrap();
    let mut flush = FlushFile::new();
    flush.describe(4711, "ckpt.4711", Some(4711), None);
    flush.set_location(4711, Location::Cache);
    flush.write(&root_only.join("flush.scr")).unwrap();
    let mut halt = scr::halt::HaltFile::new();
    halt.set_exit_reason("ROOTS_SECRET");
    halt.write(&root_only.join("halt.scr")).unwrap();
    let p = prefix.to_str().unwrap();
    let halt_file = scr::layout::halt_file(&prefix);
    let halt_file = halt_file.to_str().unwrap();
    let queries: [(&[&str], &str); 8] = [
        (&["nodes-file", "-d", p], "4321"),
        (&["env", "--runnodes", "-p", p], "4321"),
        (&["flush-file", "-d", p, "--latest"], "4711"),
        (&["inspect", "-p", p], "4711"),
        (&["retries-halt", "-d", p], "ROOTS_SECRET"),
        (&["should-exit", "-p", p], "ROOTS_SECRET"),
        (&["halt", "--list", p], "ROOTS_SECRET"),
        (&["halt-cntl", "-f", halt_file, "-l"], "ROOTS_SECRET"),
    ];
    let as_user = common::neighbour::as_nobody;
    let hidden = prefix.join(".scr");
    // links in a real `.scr`, to root's files
    as_user(&format!(
        "cd {0} && for f in nodes flush halt; do rm -f $f.scr; ln -s {1}/$f.scr $f.scr; done",
        hidden.display(),
        root_only.display()
    ));
    // then `.scr` itself a link to root's directory
    let swapped = prefix.join(".scr.user");
    for (setup, what) in [
        (None, "links in .scr"),
        (
            Some(format!(
                "mv {0} {1} && ln -s {2} {0}",
                hidden.display(),
                swapped.display(),
                root_only.display()
            )),
            ".scr a link",
        ),
    ] {
        if let Some(script) = setup {
            as_user(&script);
        }
        for (args, secret) in &queries {
            let o = Command::new(scr_command()).args(*args).output().unwrap();
            let t = text(&o);
            assert!(
                !t.contains(secret),
                "{what}: root's {args:?} read root's file: {t}"
            );
        }
    }
}

/// Root's `scr postrun` of a user's job (an epilog, an operator) drains as that user: the
/// user may swap `.scr` or a `drained/` directory for links while root copies and deletes
/// there, so root writes and removes nothing the user could not. Every file the drain
/// leaves in the prefix is the user's, and the checkpoint it drained restarts. The user is
/// the job's (the owner of its control directory), also where the prefix is a team's
/// directory another user owns.
#[test]
fn root_s_postrun_of_a_user_s_job_drains_as_the_user() {
    root_s_postrun_drains_as_the_job_s_user(None);
}

#[test]
fn root_s_postrun_in_a_team_s_prefix_drains_as_the_job_s_user_not_the_prefix_s_owner() {
    // the prefix is daemon's (uid 1), and its group (nobody's) may write it
    root_s_postrun_drains_as_the_job_s_user(Some("1:65534"));
}

/// A job of nobody's leaves ckpt.3 only in its caches; root's `scr postrun` drains it.
/// `team`: the owner (uid:gid) of a group-writable prefix that is not the user's.
fn root_s_postrun_drains_as_the_job_s_user(team: Option<&str>) {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    // ckpt.2 reaches the prefix, ckpt.3 stays in the caches of nobody's job
    let nobody = [
        ("SCR_USER_NAME", "nobody"),
        ("SCR_FLUSH", "2"),
        ("TEST_API_NO_FINALIZE", "1"),
    ];
    run_ok_on(&job, "n1,n2", 2, &["1000", "3"], &nobody);
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for d in ["prefix", "cache/nobody", "cntl/nobody"] {
        let o = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(job.dir.path().join(d))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    if let Some(owner) = team {
        let o = Command::new("chown")
            .arg(owner)
            .arg(job.prefix())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        std::fs::set_permissions(job.prefix(), std::fs::Permissions::from_mode(0o2770)).unwrap();
    }
    let o = scr_for(&job)
        .env("SCR_USER_NAME", "nobody")
        .env("SCR_NODELIST", "n[1-2]")
        .args(["postrun", "-p"])
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(job.prefix().join("ckpt.3").is_dir(), "{}", text(&o));
    let below: Vec<PathBuf> = not_the_users(&job.prefix())
        .into_iter()
        .filter(|p| p != &job.prefix())
        .collect();
    assert_eq!(below, Vec::<PathBuf>::new(), "{}", text(&o));
    for rank in 0..2 {
        check_file(
            &job.prefix().join(format!("ckpt.3/rank_{rank}.ckpt")),
            rank,
            3,
            1000,
        );
    }
}

/// Root's `scr halt -p` given a neighbour's link to a directory only root may write: the
/// link is the neighbour's to point anywhere (at root's directory while root looks whose it
/// is, at their own after), so root acts as the neighbour and writes nothing there.
#[test]
fn root_s_halt_through_a_neighbour_s_link_to_root_s_directory_writes_nothing_there() {
    let (job, _, root_only) = users_prefix();
    let link = neighbours_link(&sticky_tmp(&job), "newrun", &root_only);
    let o = Command::new(scr_command())
        .args(["halt", "--checkpoints", "1", "-p"])
        .arg(&link)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_dir(&root_only).unwrap().count(),
        0,
        "root wrote into its own directory through the neighbour's link: {}",
        text(&o)
    );
}

/// Root's `scr copy` of a control directory whose path a neighbour's link leads to another
/// user's directory: two users may change where it leads, so root refuses, naming why,
/// and copies nothing into the user's prefix.
#[test]
fn root_s_copy_through_a_neighbour_s_link_to_a_user_s_directory_is_refused() {
    let (job, prefix, _) = users_prefix();
    // the user's real control directory (the job's, with its filemaps), reached through
    // the neighbour's link
    let cntl = job.dir.path().join("cntl");
    let users_cntl = walk(&cntl)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "filemap.scrinfo"))
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .expect("a node's control directory of the job");
    let o = Command::new("chown")
        .args(["-R", "65533:65533"])
        .arg(&cntl)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let link = neighbours_link(&sticky_tmp(&job), "victim", users_cntl.parent().unwrap());
    let through = link.join(users_cntl.file_name().unwrap());
    let before = walk(&prefix);
    let o = Command::new(scr_command())
        .args(["copy", "--id", "2", "--dstdir"])
        .arg(&prefix)
        .arg("--cntldir")
        .arg(&through)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("user ids"), "{}", text(&o));
    assert_eq!(walk(&prefix), before, "{}", text(&o));
}

/// Root's `scr prerun -p` of a prefix reached through a neighbour's link to a directory
/// only root may write: root prepares it as the neighbour, so nothing of root's appears
/// there (the neighbour may not write it).
#[test]
fn root_s_prerun_through_a_neighbour_s_link_makes_nothing_in_root_s_directory() {
    let (job, _, root_only) = users_prefix();
    let link = neighbours_link(&sticky_tmp(&job), "r2", &root_only);
    let o = Command::new(scr_command())
        .args(["prerun", "-p"])
        .arg(link.join("victim/x"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_dir(&root_only).unwrap().count(),
        0,
        "root made a directory through the neighbour's link: {}",
        text(&o)
    );
}

/// Root's scr-run in a prefix a neighbour's link leads to: root would stay root for the
/// whole job, so it refuses, saying who may redirect the prefix and to run it as the
/// job's user; nothing is made there.
#[test]
fn root_s_scr_run_refuses_a_prefix_a_neighbour_may_redirect() {
    let (job, _, root_only) = users_prefix();
    let link = neighbours_link(&sticky_tmp(&job), "run", &root_only);
    let o = Command::new(common::scr_run::scr_run())
        .args(["mpiexec", "-n", "1", "true"])
        .env("SCR_PREFIX", &link)
        .env("SCR_JOB_ID", "77")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("user id 65534"), "{}", text(&o));
    assert_eq!(
        std::fs::read_dir(&root_only).unwrap().count(),
        0,
        "{}",
        text(&o)
    );
}

/// Root's scr-run whose application set its own prefix (SCR_Configf) to a directory a
/// neighbour may redirect (they own a directory on the way; the application was told to use
/// it anyway): what the job's control directory records is only its writer's word, so root
/// follows it nowhere it would refuse to go when told to. It says so, and reads no halt file
/// there.
#[test]
fn root_s_scr_run_follows_no_recorded_prefix_a_neighbour_may_redirect() {
    use common::scr_run::run_with_apps_own_prefix;
    use std::os::unix::fs::PermissionsExt;
    let job = steps_job();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = job.dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let own = theirs.join("apps-own-prefix");
    std::fs::create_dir(&own).unwrap();
    let (out, t) = run_with_apps_own_prefix(
        &job,
        &own,
        &["init", "ckpt=ckpt.1:1", "finalize"],
        &[("SCR_RUNS", "2"), ("SCR_PREFIX_SHARED", "1")],
    );
    assert!(
        t.contains(&format!(
            "not following the prefix {} that the job's control directory records",
            own.display()
        )) && t.contains("user id 65534"),
        "{t}"
    );
    assert!(!t.contains("the application's prefix is"), "{t}");
    // the application's halt record there was not read: the run was launched again
    assert_eq!(answers(&t, "init").len(), 2, "{t}");
    assert_eq!(out.status.code(), Some(0), "{t}");
}
