//! A hostile neighbour on a shared prefix: the prefix is a directory everyone can write
//! (1777, as scratch areas and /tmp are), the job runs as root (no root exception helps the
//! attacker), and the neighbour is another user (nobody, through setpriv) who plants files,
//! directories and links there. Nothing the neighbour writes is trusted: each attack is
//! refused or passed over with a message, and nothing of the job's is lost.

mod common;

use common::neighbour::*;
use common::*;
use scr::HashView;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

#[test]
fn a_planted_user_configuration_is_passed_over() {
    let s = Shared::new();
    s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    // purge everything at the next SCR_Init; restart from the neighbour's prefix
    let theirs = neighbours_dir(s.job.dir.path(), "theirs");
    as_nobody(&format!(
        "printf 'SCR_PREFIX_PURGE=1\\nSCR_PREFIX={}\\n' > {}/.scrconf",
        theirs.display(),
        s.prefix.display()
    ));
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    // (a shared prefix's `.scrconf` is not read, whoever's it is)
    assert!(t.contains(".scrconf is not read"), "{t}");
    assert!(t.contains("restarted from ckpt.2"), "{t}");
    assert!(s.prefix.join("ckpt.1").is_dir(), "nothing purged: {t}");
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0, "{t}");
    // nor can one the user cannot read, a FIFO or a directory in its place stop the job
    for plant in ["touch {0} && chmod 600 {0}", "mkfifo {0}", "mkdir {0}"] {
        let conf = s.prefix.join(".scrconf");
        let _ = std::fs::remove_file(&conf);
        let _ = std::fs::remove_dir(&conf);
        as_nobody(&plant.replace("{0}", &conf.display().to_string()));
        let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
        assert!(t.contains(".scrconf is not read"), "{plant}: {t}");
        assert!(t.contains("restarted from ckpt."), "{plant}: {t}");
    }
}

#[test]
fn a_planted_metadata_directory_and_its_settings_are_refused() {
    let s = Shared::new();
    // before the first run: .scr with SCR_Config settings that move the cache elsewhere
    let theirs = neighbours_dir(s.job.dir.path(), "theirs");
    as_nobody(&format!(
        "mkdir -m 777 {0}/.scr && printf 'SCR_CACHE_BASE={1}\\n' > {0}/.scr/app.conf",
        s.prefix.display(),
        theirs.display()
    ));
    let (ok, t) = s.run(&["1000", "1"], &[]);
    assert!(!ok, "{t}");
    assert!(
        t.contains(".scr") && t.contains("belongs to user id 65534, not to you"),
        "{t}"
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0, "{t}");
}

#[test]
fn a_dataset_directory_planted_before_the_flush_is_not_written_into() {
    let s = Shared::new();
    let planted = neighbours_dir(&s.prefix, "ckpt.1");
    let (_, t) = s.run(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(
        t.contains("ckpt.1") && t.contains("belongs to user id 65534"),
        "{t}"
    );
    assert_eq!(
        std::fs::read_dir(&planted).unwrap().count(),
        0,
        "nothing written there: {t}"
    );
    // ckpt.1 never became usable from the prefix; ckpt.2 did
    assert!(s.index().id_of("ckpt.2").is_some(), "{t}");
    let e1 = s.index().entries().into_iter().find(|e| e.name == "ckpt.1");
    assert!(e1.as_ref().is_none_or(|e| !e.complete), "{e1:?}");
}

#[test]
fn files_on_the_prefix_another_user_could_have_swapped_are_not_fetched() {
    let s = Shared::new();
    s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    // the user's own mistake opens ckpt.2 to everyone; the neighbour puts a file of theirs
    // in place of rank 1's (the same bytes: only its owner gives it away)
    let dir = s.prefix.join("ckpt.2");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    as_nobody(&format!(
        "t=$(mktemp) && cp {0}/rank_1.ckpt $t && rm -f {0}/rank_1.ckpt && cp $t {0}/rank_1.ckpt \
         && rm -f $t",
        dir.display()
    ));
    delete_caches(&s.job);
    let t = s.run_ok(&["1000", "1"], &[]);
    assert!(!t.contains("restarted from ckpt.2"), "{t}");
    assert!(
        t.contains("writable by everyone") || t.contains("belongs to user id 65534"),
        "{t}"
    );
    assert!(
        t.contains("restarted from ckpt.1"),
        "the older one, intact: {t}"
    );
}

#[test]
fn pruning_the_prefix_never_deletes_through_a_link() {
    let s = Shared::new();
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    // ckpt.1 becomes a link to someone's directory holding a file of the same name
    let victim = s.job.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("rank_0.ckpt"), b"precious").unwrap();
    std::fs::remove_dir_all(s.prefix.join("ckpt.1")).unwrap();
    std::os::unix::fs::symlink(&victim, s.prefix.join("ckpt.1")).unwrap();
    // SCR_PREFIX_SIZE=1: the next flush prunes ckpt.1, and must not follow the link
    let t = s.run_ok(
        &["1000", "1"],
        &[("SCR_FLUSH", "1"), ("SCR_PREFIX_SIZE", "1")],
    );
    assert_eq!(
        std::fs::read(victim.join("rank_0.ckpt")).unwrap(),
        b"precious",
        "{t}"
    );
    assert!(
        t.contains("ckpt.1 stays on the prefix") && t.contains("symbolic link"),
        "said: {t}"
    );
    assert_eq!(
        s.index().current(),
        Some("ckpt.2"),
        "the new checkpoint is published: {t}"
    );
}

#[test]
fn a_planted_scr_current_neither_fails_publishing_nor_steers_a_restart() {
    for planted_as in ["link", "directory"] {
        let s = Shared::new();
        let theirs = neighbours_dir(s.job.dir.path(), "theirs");
        let link = s.prefix.join("scr.current");
        match planted_as {
            "link" => as_nobody(&format!("ln -s {} {}", theirs.display(), link.display())),
            _ => as_nobody(&format!("mkdir {}", link.display())),
        }
        let t = s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
        assert_eq!(s.index().current(), Some("ckpt.2"), "{planted_as}: {t}");
        match planted_as {
            // root may replace anyone's link: it is SCR's now
            "link" => assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("ckpt.2")),
            // a directory is left alone, and said so
            _ => assert!(t.contains("scr.current is not SCR's link"), "said: {t}"),
        }
        let left: Vec<_> = std::fs::read_dir(&s.prefix)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("tmp"))
            .collect();
        assert!(left.is_empty(), "{planted_as}: temporaries left: {left:?}");
        delete_caches(&s.job);
        let t = s.run_ok(&["1000", "1"], &[]);
        assert!(t.contains("restarted from ckpt.2"), "{planted_as}: {t}");
    }
    // a link of another user's is not followed for a restart: the neighbour's points at
    // the older checkpoint (a user's own link there would choose it)
    let s = Shared::new();
    s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    let link = s.prefix.join("scr.current");
    std::fs::remove_file(&link).unwrap();
    as_nobody(&format!("ln -s ckpt.1 {}", link.display()));
    delete_caches(&s.job);
    let t = s.run_ok(&["1000", "1"], &[]);
    assert!(t.contains("restarted from ckpt.2"), "{t}");
}

#[test]
fn a_link_planted_at_a_dataset_directory_is_not_written_through_by_a_background_flush() {
    let s = Shared::new();
    let victim = s.job.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    as_nobody(&format!(
        "ln -s {} {}/ckpt.1",
        victim.display(),
        s.prefix.display()
    ));
    let (_, t) = s.run(
        &["1000", "2"],
        &[("SCR_FLUSH", "1"), ("SCR_FLUSH_ASYNC", "1")],
    );
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "written through the link: {t}"
    );
    assert!(s.index().id_of("ckpt.2").is_some(), "{t}");
}

#[test]
fn nobody_else_can_hold_the_index_lock() {
    let s = Shared::new();
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    // the neighbour cannot even open SCR's state files to lock them
    let index = scr::layout::index_file(&s.prefix);
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "flock",
            "-x",
            "-w",
            "1",
        ])
        .arg(&index)
        .arg("true")
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "the neighbour locked {}: {}",
        index.display(),
        text(&o)
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&index).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "index mode {mode:o}");
    // an index an earlier version left readable to all, locked by the neighbour for a
    // minute: SCR's own lock is elsewhere, so publishing does not wait for it
    std::fs::set_permissions(&index, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let mut holder = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "flock",
            "-x",
        ])
        .arg(&index)
        .args(["sleep", "60"])
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let t = s.run_ok(
        &["1000", "1"],
        &[("SCR_FLUSH", "1"), ("SCR_LOCK_TIMEOUT", "20")],
    );
    // the holder and its sleep, as a group
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{}", holder.id())])
        .status();
    let _ = holder.wait();
    assert_eq!(s.index().current(), Some("ckpt.2"), "{t}");
    assert!(!t.contains("locked"), "{t}");
    assert!(
        started.elapsed().as_secs() < 15,
        "waited for the neighbour's lock: {t}"
    );
}

#[test]
fn size_parameters_out_of_bounds_are_refused_by_name() {
    let s = Shared::new();
    for (name, value) in [
        ("SCR_CONTAINER_SIZE", "0"),
        ("SCR_MPI_BUF_SIZE", "0"),
        ("SCR_MPI_BUF_SIZE", "4GB"),
        ("SCR_FILE_BUF_SIZE", "0"),
        ("SCR_SET_SIZE", "1"),
        ("SCR_SET_SIZE", "100000"),
    ] {
        let (ok, t) = s.run(&["1000", "1"], &[(name, value)]);
        assert!(!ok, "{name}={value}: {t}");
        assert!(
            t.contains(name) && (t.contains("between") || t.contains("at least")),
            "{name}={value}: {t}"
        );
    }
}

#[test]
fn what_scr_derives_is_no_more_readable_than_its_source() {
    for scheme in ["XOR", "PARTNER"] {
        // the application's files are 0600 (umask 077)
        let job = Job::new();
        let env = [
            ("SCR_COPY_TYPE", scheme),
            ("SCR_FLUSH", "0"),
            ("TEST_API_NO_FINALIZE", "1"),
        ];
        job.run_ok_under_umask("077", Some("n1,n2,n3,n4"), 4, &["4000", "1"], &env);
        let cached = walk(&job.dir.path().join("cache"));
        let derived: Vec<_> = cached
            .iter()
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("xor.") || p.to_string_lossy().contains("/partner.")
            })
            .collect();
        assert!(!derived.is_empty(), "{scheme}: {cached:?}");
        for p in &derived {
            assert_eq!(mode_of(p), 0o600, "{scheme}: {}", p.display());
        }
        // a lost node's files rebuilt in SCR_Init, and the drain's copies on the prefix
        lose_node(&job, "n3");
        job.run_ok_under_umask(
            "022",
            Some("n1,n2,n3,n4"),
            4,
            &["4000", "0"],
            &[("SCR_COPY_TYPE", scheme), ("SCR_FLUSH", "0")],
        );
        let rebuilt = job.cached("rank_2.ckpt");
        assert!(!rebuilt.is_empty(), "{scheme}");
        for p in &rebuilt {
            assert_eq!(mode_of(p), 0o600, "{scheme}: {}", p.display());
        }
    }
    // files the application left readable stay as readable when rebuilt
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "0")];
    job.run_ok_under_umask("022", Some("n1,n2,n3,n4"), 4, &["4000", "1"], &env);
    lose_node(&job, "n2");
    job.run_ok_under_umask("077", Some("n1,n2,n3,n4"), 4, &["4000", "0"], &env);
    for p in job.cached("rank_1.ckpt") {
        assert_eq!(mode_of(&p), 0o644, "{}", p.display());
    }
}

#[test]
fn a_prefix_everyone_may_rename_in_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let s = Shared::new();
    std::fs::set_permissions(&s.prefix, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (ok, t) = s.run(&["1000", "1"], &[]);
    assert!(!ok, "{t}");
    assert!(
        t.contains("writable by everyone and not sticky") && t.contains("chmod +t"),
        "{t}"
    );
}

#[test]
fn bypass_writes_no_file_into_a_directory_another_user_planted() {
    let s = Shared::new();
    let planted = neighbours_dir(&s.prefix, "ckpt.1");
    let (_, t) = s.run(&["1000", "1"], &[("SCR_CACHE_BYPASS", "1")]);
    assert_eq!(
        std::fs::read_dir(&planted).unwrap().count(),
        0,
        "written there: {t}"
    );
    assert!(t.contains("belongs to user id 65534"), "{t}");
    let e1 = scr::index::IndexFile::read(&scr::layout::index_file(&s.prefix))
        .ok()
        .and_then(|i| i.entries().into_iter().find(|e| e.name == "ckpt.1"));
    assert!(e1.as_ref().is_none_or(|e| !e.complete), "{e1:?}");
}

#[test]
fn a_neighbours_link_to_someones_configuration_is_not_followed() {
    let s = Shared::new();
    // a configuration file root owns (a site's, another project's), linked by the neighbour
    let theirs = s.job.dir.path().join("some.conf");
    std::fs::write(&theirs, "SCR_PREFIX_PURGE=1\n").unwrap();
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    as_nobody(&format!(
        "ln -s {} {}/.scrconf",
        theirs.display(),
        s.prefix.display()
    ));
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(t.contains(".scrconf is not read"), "{t}");
    assert!(s.prefix.join("ckpt.1").is_dir(), "nothing purged: {t}");
}

#[test]
fn names_taken_ahead_for_scr_s_temporaries_do_not_stop_publishing() {
    let s = Shared::new();
    // every name of the old pattern, for every process id this machine hands out
    as_nobody(&format!(
        "cd {} && for i in $(seq 1 $(cat /proc/sys/kernel/pid_max)); do : > .scr.current.tmp.$i; done",
        s.prefix.display()
    ));
    let t = s.run_ok(&["1000", "2"], &[("SCR_FLUSH", "1")]);
    assert!(!t.contains("failed") && !t.contains("ERROR"), "{t}");
    assert_eq!(s.index().current(), Some("ckpt.2"), "{t}");
}

#[test]
fn containers_of_private_files_are_private() {
    let job = Job::new();
    let env = [
        ("SCR_FLUSH", "1"),
        ("SCR_USE_CONTAINERS", "1"),
        ("SCR_COPY_TYPE", "SINGLE"),
    ];
    job.run_ok_under_umask("077", Some("n1,n2,n3,n4"), 4, &["4000", "1"], &env);
    let containers: Vec<_> = walk(&job.prefix().join(".scr"))
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("ctr."))
        .collect();
    assert!(!containers.is_empty(), "{:?}", walk(&job.prefix()));
    for c in containers {
        assert_eq!(mode_of(&c), 0o600, "{}", c.display());
    }
}

#[test]
fn a_damaged_halt_file_does_not_hide_the_allocations_end() {
    let s = Shared::new();
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    let halt = halt_file_left_everyones(&s.prefix);
    as_nobody(&format!("printf garbage > {}", halt.display()));
    let end = (chrono::Utc::now().timestamp() + 60).to_string();
    let t = s.run_ok(
        &["1000", "3"],
        &[
            ("SCR_FLUSH", "1"),
            ("SCR_HALT_SECONDS", "3600"),
            ("SCR_END_TIME", &end),
        ],
    );
    assert!(
        t.contains("halt file's conditions not checked")
            && t.contains("Job exiting: Remaining time"),
        "{t}"
    );
}

/// A neighbour who can write a file of the user's (anyone may write it) links it into the
/// shared prefix as `.scrconf` and writes settings into it: the file is the user's, but
/// who put it there cannot be told, so a `.scrconf` in a prefix others may create names in
/// is not read at all — also once the user removed the file's other name and it looks the
/// user's own, with one name — and nothing tells the user to make it trusted as it is.
#[test]
fn a_configuration_file_with_another_name_is_passed_over_without_advice_to_trust_it() {
    let s = Shared::new();
    s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    let notes = s.job.dir.path().join("notes");
    std::fs::write(&notes, b"").unwrap();
    std::fs::set_permissions(&notes, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    as_nobody(&format!(
        "ln {0} {1}/.scrconf && printf 'SCR_PREFIX_PURGE=1\\n' > {1}/.scrconf",
        notes.display(),
        s.prefix.display()
    ));
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(
        t.contains(".scrconf is not read") && t.contains("SCR_CONF_FILE"),
        "{t}"
    );
    assert!(!t.contains("chmod"), "{t}");
    assert!(t.contains("restarted from ckpt.1"), "{t}");
    assert!(s.prefix.join("ckpt.1").is_dir(), "nothing purged: {t}");
    // the user removes the file's other name: `.scrconf` is now the user's, with one name
    std::fs::remove_file(&notes).unwrap();
    let t = s.run_ok(&["1000", "1"], &[("SCR_FLUSH", "1")]);
    assert!(t.contains(".scrconf is not read"), "{t}");
    assert!(t.contains("restarted from ckpt.2"), "{t}");
    assert!(s.prefix.join("ckpt.1").is_dir(), "nothing purged: {t}");
}
