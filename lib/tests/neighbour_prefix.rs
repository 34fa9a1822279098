//! A hostile neighbour and the prefix itself: what SCR makes there, whose the prefix is,
//! and names taken first. The job runs as root on a shared directory; the neighbour is
//! another user (nobody, through setpriv).

mod common;

use common::neighbour::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every directory below `dir`, `dir` excluded.
fn dirs_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                found.push(e.path());
                todo.push(e.path());
            }
        }
    }
    found
}

/// Every directory SCR makes on a shared prefix is the user's alone, whatever the umask
/// lets through: a flush, a background flush and a bypass write, the application's own
/// subdirectories among them, and `.scr` with the halt file in it.
#[test]
fn directories_scr_makes_on_the_prefix_are_the_users_alone() {
    let s = Shared::new();
    for env in [
        vec![("SCR_FLUSH", "1"), ("TEST_API_FILES", "2")],
        vec![
            ("SCR_FLUSH", "1"),
            ("SCR_FLUSH_ASYNC", "1"),
            ("TEST_API_FILES", "2"),
        ],
        vec![("SCR_CACHE_BYPASS", "1"), ("TEST_API_FILES", "2")],
    ] {
        let o = under_umask("022", &s.command(&["1000", "1"], &env))
            .output()
            .unwrap();
        assert!(o.status.success(), "{env:?}: {}", text(&o));
    }
    let hidden = s.prefix.join(".scr");
    assert_eq!(mode_of(&hidden), 0o700);
    let made = dirs_below(&s.prefix);
    // three datasets, each with its application subdirectory and its record under .scr
    for n in 1..=3 {
        for d in [
            s.prefix.join(format!("ckpt.{n}")),
            s.prefix.join(format!("ckpt.{n}/0")),
        ] {
            assert!(made.contains(&d), "{} missing: {made:?}", d.display());
        }
    }
    let records = made.iter().filter(|d| d.parent() == Some(&hidden)).count();
    assert!(records >= 3, "{made:?}");
    for d in made.iter().filter(|d| **d != hidden) {
        assert_eq!(mode_of(d), 0o700, "{}", d.display());
    }
    // the neighbour can list none of them
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "ls"])
        .arg(s.prefix.join("ckpt.1"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", text(&o));
}

/// A team directory as the prefix: sticky, everyone's to write, and someone else's, who
/// may rename anything in it (the sticky bit binds everyone but its owner). The job says
/// so; when the owner renames `.scr` and `scr.current` away, the next job refuses to start
/// over while the datasets it flushed are still there, and restarts once `.scr` is back.
#[test]
fn a_prefix_someone_else_owns_is_said_and_a_vanished_index_never_means_starting_over() {
    let s = Shared::new();
    std::os::unix::fs::chown(&s.prefix, Some(65534), Some(65534)).unwrap();
    let t = s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(
        t.contains(&format!(
            "the prefix {} belongs to user id 65534",
            s.prefix.display()
        )),
        "{t}"
    );
    as_nobody(&format!(
        "cd {} && mv .scr .scr.gone && mv scr.current gone.current",
        s.prefix.display()
    ));
    delete_caches(&s.job);
    let (ok, t) = s.run(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(!ok, "started over: {t}");
    assert!(
        t.contains("ckpt.1, ckpt.2") && t.contains("no index") && t.contains("index.scr"),
        "{t}"
    );
    assert!(!s.prefix.join("ckpt.3").exists(), "{t}");
    std::fs::rename(s.prefix.join(".scr.gone"), s.prefix.join(".scr")).unwrap();
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(t.contains("restarted from ckpt.2"), "{t}");
}

/// A prefix another user owns, though nobody else may write it: its owner may rename
/// anything in it while a job reads or writes there (swap a dataset's directory for one of
/// theirs), so SCR_Init refuses it before any work, naming the owner and the way to use it
/// anyway (SCR_PREFIX_SHARED=1, the user's word that they trust the owner; then it warns).
#[test]
fn a_prefix_someone_else_owns_is_refused_unless_the_user_says_it_is_shared() {
    use std::os::unix::fs::PermissionsExt;
    let s = Shared::new();
    std::os::unix::fs::chown(&s.prefix, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&s.prefix, std::fs::Permissions::from_mode(0o755)).unwrap();
    s.refused_before_any_work(&["belongs to user id 65534"]);
}

/// A prefix everyone may write (1777) where a neighbour took the names of the job's
/// datasets first (`ckpt.1`, `ckpt.2`: predictable): SCR writes into none of them, so its
/// checkpoints could reach the prefix never. The job says so in SCR_Init, before any work,
/// naming the prefix and what to do; SCR_PREFIX_SHARED=1 uses it anyway, and then the
/// neighbour's directories are refused and stay empty.
#[test]
fn a_prefix_anyone_can_take_names_in_is_refused_before_any_work() {
    let s = Shared::new();
    let taken: Vec<_> = (1..=2)
        .map(|n| neighbours_dir(&s.prefix, &format!("ckpt.{n}")))
        .collect();
    s.refused_before_any_work(&["writable by everyone"]);
    // chosen anyway: the taken directories are refused, not written into
    let (_, t) = s.run(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(t.contains("belongs to user id 65534"), "{t}");
    for d in &taken {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{t}");
    }
}

/// A prefix of the user's that a group may write through its access control list (a
/// project sharing it: sticky, or it is refused anyway) lets the group's members take the names of the next
/// datasets, or `.scr`, as much as one everyone may write: refused alike, before any work.
#[test]
fn a_prefix_a_group_can_take_names_in_through_an_acl_is_refused_before_any_work() {
    for mode in [0o1755, 0o1700] {
        let s = Shared::shared_by_acl(mode);
        as_nobody(&format!("mkdir -m 777 {}/ckpt.1", s.prefix.display()));
        s.refused_before_any_work(&["group id 65534", "access control list"]);
    }
}

/// A cache or control base that a group may write and that is not sticky (a project's
/// scratch directory, 2770): a member could rename the user's job directory there away,
/// and the next run would find no cached checkpoint. Refused at SCR_Init, naming the base,
/// who may write it and the fix; sticky, as the message says, it is used.
#[test]
fn a_base_a_group_may_rename_in_must_be_sticky() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    let base = job.dir.path().join("project-scratch");
    std::fs::create_dir(&base).unwrap();
    std::os::unix::fs::chown(&base, None, Some(65534)).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o2770)).unwrap();
    refused_as_either_base(&job, &base, &["group id 65534", "chmod +t"]);
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o3770)).unwrap();
    let env = [
        ("SCR_CACHE_BASE", base.to_str().unwrap()),
        ("SCR_CNTL_BASE", base.to_str().unwrap()),
    ];
    job.run_ok(2, &["1000", "1"], &env);
}

/// A sticky base another user made first, at the path the user configured: its owner may
/// rename anything in it all the same. Refused at SCR_Init, naming the owner.
#[test]
fn a_base_another_user_owns_is_refused_sticky_or_not() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    let base = job.dir.path().join("made-by-a-neighbour");
    std::fs::create_dir(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::chown(&base, Some(65534), Some(65534)).unwrap();
    refused_as_either_base(&job, &base, &["belongs to user id 65534"]);
}

/// A base reached through a neighbour's link in a sticky scratch directory (to a sticky
/// directory of root's, as /dev/shm), or one inside a project directory its group may write
/// without the sticky bit: either way another user may change where the base leads, and
/// swap the job's cached checkpoints or lead them to a directory of theirs between two of
/// SCR's steps. Refused at SCR_Init, naming who may; a base on a way only root and the user
/// may change is used.
#[test]
fn a_base_whose_way_another_user_may_change_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let roots = job.dir.path().join("shm");
    std::fs::create_dir(&roots).unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let linked = neighbours_link(&sticky_tmp(&job), "fastcache", &roots);
    refused_as_either_base(&job, &linked, &["user id 65534"]);
    let proj = job.dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::os::unix::fs::chown(&proj, Some(0), Some(65534)).unwrap();
    std::fs::set_permissions(&proj, std::fs::Permissions::from_mode(0o2770)).unwrap();
    let inside = proj.join("vcache");
    std::fs::create_dir(&inside).unwrap();
    refused_as_either_base(&job, &inside, &["writable by its group"]);
    let env = [
        ("SCR_CACHE_BASE", roots.to_str().unwrap()),
        ("SCR_CNTL_BASE", roots.to_str().unwrap()),
    ];
    job.run_ok(2, &["1000", "1"], &env);
}

/// A run with `base` as its cache base, then as its control base, fails at SCR_Init
/// naming the base, the parameter and each of `said`.
fn refused_as_either_base(job: &Job, base: &Path, said: &[&str]) {
    for param in ["SCR_CACHE_BASE", "SCR_CNTL_BASE"] {
        let o = job.run(2, &["1000", "1"], &[(param, base.to_str().unwrap())]);
        let t = text(&o);
        assert!(!o.status.success(), "{param}: {t}");
        assert!(
            t.contains(&base.display().to_string()) && t.contains(param),
            "{param}: {t}"
        );
        for words in said {
            assert!(t.contains(words), "{param}, {words}: {t}");
        }
    }
}

/// A job of the user's on `prefix`, in its directories otherwise.
fn run_on_prefix(job: &Job, prefix: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let o = job
        .command(None, 2, args, env)
        .current_dir(prefix)
        .env("SCR_PREFIX", prefix)
        .output()
        .unwrap();
    (o.status.success(), text(&o))
}

/// A prefix in a project directory its group may write, not sticky (a group's members may
/// rename the runs in it: swap two runs' prefixes, and the next job of one restarts from
/// the other's checkpoints and writes its own into the other's index): refused before any
/// work, naming the directory and the fix; SCR_PREFIX_SHARED=1 uses it anyway.
#[test]
fn a_prefix_in_a_directory_a_group_may_rename_in_is_refused_before_any_work() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let proj = job.dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::os::unix::fs::chown(&proj, Some(0), Some(65534)).unwrap();
    std::fs::set_permissions(&proj, std::fs::Permissions::from_mode(0o2770)).unwrap();
    let run_a = proj.join("runA");
    std::fs::create_dir(&run_a).unwrap();
    let (ok, t) = run_on_prefix(&job, &run_a, &["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(!ok, "{t}");
    assert!(
        t.contains(&proj.display().to_string())
            && t.contains("writable by its group")
            && t.contains("SCR_PREFIX_SHARED=1"),
        "{t}"
    );
    assert!(job.cached("rank_0.ckpt").is_empty(), "work began: {t}");
    // chosen anyway
    let (ok, t) = run_on_prefix(
        &job,
        &run_a,
        &["1000", "2"],
        &[("SCR_FLUSH", "1"), ("SCR_PREFIX_SHARED", "1")],
    );
    assert!(ok, "{t}");
    assert!(run_a.join("ckpt.2").is_dir(), "{t}");
}

/// A prefix of the user's that its group may write (a project's run directory, 2770): the
/// group's members may take the names of the next datasets, or `.scr`, or swap two
/// checkpoints' directories, as much as through an ACL. Refused alike before any work, by
/// the library and by scr-run before it launches anything, naming the group and the fix;
/// SCR_PREFIX_SHARED=1 uses it anyway.
#[test]
fn a_prefix_its_group_may_write_is_refused_before_any_work() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let proj = job.dir.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::os::unix::fs::chown(&proj, Some(0), Some(65534)).unwrap();
    std::fs::set_permissions(&proj, std::fs::Permissions::from_mode(0o2770)).unwrap();
    let said = |t: &str| {
        t.contains(&proj.display().to_string())
            && t.contains("writable by its group (group id 65534")
            && t.contains("chmod g-w")
            && t.contains("SCR_PREFIX_SHARED=1")
    };
    let (ok, t) = run_on_prefix(&job, &proj, &["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(!ok && said(&t), "{t}");
    assert!(job.cached("rank_0.ckpt").is_empty(), "work began: {t}");
    // scr-run says it before it prepares the prefix or launches a run
    let out = Command::new(scr_command().with_file_name("scr-run"))
        .args(["mpiexec", "-launcher", "fork", "-n", "1", "/bin/true"])
        .current_dir(&proj)
        .env("SCR_PREFIX", &proj)
        .env("SCR_NODELIST", "n1")
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env_remove("SCR_PREFIX_SHARED")
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap();
    let t = text(&out);
    // (root's scr-run refuses a prefix others may redirect at all, saying so in its words)
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("writable by its group (group id 65534"), "{t}");
    assert!(!t.contains("launching"), "{t}");
    assert!(!proj.join(".scr").exists(), "{t}");
    // chosen anyway
    let (ok, t) = run_on_prefix(
        &job,
        &proj,
        &["1000", "2"],
        &[("SCR_FLUSH", "1"), ("SCR_PREFIX_SHARED", "1")],
    );
    assert!(ok, "{t}");
    assert!(proj.join("ckpt.2").is_dir(), "{t}");
}

/// A neighbour's link in a sticky scratch directory, at the name the user is about to use
/// as a prefix, leading to another prefix of the user's: a job there would restart from
/// that one's checkpoints (or delete them, with SCR_PREFIX_PURGE). Refused, naming the
/// neighbour; the other prefix keeps its checkpoints and its index as they were.
#[test]
fn a_prefix_a_neighbours_link_leads_to_is_refused_and_the_other_prefix_is_untouched() {
    let job = Job::new();
    job.run_ok(2, &["1000", "2"], &[("SCR_FLUSH", "1")]);
    let home = job.prefix();
    let index = std::fs::read(scr::layout::index_file(&home)).unwrap();
    let scratch = sticky_tmp(&job);
    let planted = neighbours_link(&scratch, "vnew", &home);
    for env in [vec![], vec![("SCR_PREFIX_PURGE", "1")]] {
        let (ok, t) = run_on_prefix(&job, &planted, &["1000", "1"], &env);
        assert!(!ok, "{t}");
        assert!(
            t.contains("user id 65534") && t.contains("SCR_PREFIX_SHARED=1"),
            "{t}"
        );
        assert!(!t.contains("restarted from"), "{t}");
        assert!(
            home.join("ckpt.1").is_dir() && home.join("ckpt.2").is_dir(),
            "{t}"
        );
        assert_eq!(
            std::fs::read(scr::layout::index_file(&home)).unwrap(),
            index,
            "{t}"
        );
    }
}

/// The user's `scr halt --immediate DIR` (and `-p DIR`) given a prefix that another user's
/// link leads to (another prefix of the user's, whose job would stop at once): refused as a
/// prefix found from SCR_PREFIX is, and nothing is written there. The user is nobody; the
/// other user's link is daemon's.
#[test]
fn the_users_halt_of_a_prefix_another_users_link_leads_to_writes_nothing_there() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let other = job.dir.path().join("other-run");
    std::fs::create_dir(&other).unwrap();
    std::os::unix::fs::chown(&other, Some(65534), Some(65534)).unwrap();
    let link = sticky_tmp(&job).join("vpre");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(1), Some(1)).unwrap();
    let scr = scr_command();
    for form in ["", "-p "] {
        let o = try_as_nobody(&format!(
            "{} halt --immediate {form}{}",
            scr.display(),
            link.display()
        ));
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(
            t.contains("user id 1") && t.contains("SCR_PREFIX_SHARED=1"),
            "{t}"
        );
        assert!(!other.join(".scr").exists(), "{t}");
    }
}

/// `scr report` writes its page and charts only where nobody but the user and root may
/// change the way: through a neighbour's link in a sticky scratch directory they would go
/// where the neighbour chose (over a file of the user's), whatever fs.protected_symlinks is.
#[test]
fn scr_report_writes_nothing_through_a_neighbour_s_link() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    let logged = [("SCR_FLUSH", "1"), ("SCR_LOG_ENABLE", "1")];
    run_ok_on(&job, "n1,n2", 2, &["1000", "1"], &logged);
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let scratch = job.dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mine = job.dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    as_nobody(&format!(
        "ln -s {} {}/charts",
        mine.display(),
        scratch.display()
    ));
    let via = scratch.join("charts");
    for args in [
        vec!["--svg".to_string(), via.display().to_string()],
        vec![
            "-o".to_string(),
            via.join("page.html").display().to_string(),
        ],
    ] {
        let o = scr_for(&job)
            .args(["report", "-p"])
            .arg(job.prefix())
            .args(&args)
            .output()
            .unwrap();
        let t = text(&o);
        assert!(!o.status.success(), "{args:?}: {t}");
        assert!(t.contains("user id 65534"), "{args:?}: {t}");
        assert_eq!(
            std::fs::read_dir(&mine).unwrap().count(),
            0,
            "{args:?}: {t}"
        );
    }
    // a directory of the user's own in the scratch area is fine
    let own = scratch.join("own");
    let o = scr_for(&job)
        .args(["report", "-p"])
        .arg(job.prefix())
        .arg("--svg")
        .arg(&own)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(own.join("timeline.svg").is_file(), "{}", text(&o));
}

/// Whoever may rename in the prefix swaps `.scr` for a link to a directory of theirs (or to
/// another prefix's `.scr` of the user's) while a job runs: the event log's lines go on into
/// the `.scr` the job opened, never through the link.
#[test]
fn the_event_log_is_never_appended_through_a_swapped_hidden_directory() {
    let job = Job::with_c_program("guide_steps.c");
    let elsewhere = job.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let prefix = job.prefix();
    let swap = format!(
        "sh=mv {0}/.scr {0}/.scr.gone && ln -s {1} {0}/.scr",
        prefix.display(),
        elsewhere.display()
    );
    let steps = ["init", "ckpt=ckpt.1:1", &swap, "ckpt=ckpt.2:1", "finalize"];
    let out = job.run_ok(2, &steps, &[("SCR_LOG_ENABLE", "1"), ("SCR_FLUSH", "0")]);
    assert!(!elsewhere.join("log").exists(), "{out}");
    let log = std::fs::read_to_string(prefix.join(".scr.gone/log")).unwrap();
    assert!(log.contains("name=ckpt.2"), "{log}");
}
