//! `scr prefix` and `scr list-dir` (SCR's `scr_prefix`, `scr_list_dir`, `scr_cntl_dir`).

use std::process::{Command, Output};

fn scr_in(
    dir: &std::path::Path,
    exe: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut c = Command::new(exe);
    c.args(args)
        .env("SCR_SYSTEM_CONF_FILE", dir.join("scr.conf"))
        .env("SCR_PREFIX", dir)
        .env_remove("SCR_CONF_FILE")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID")
        .env_remove("SCR_JOB_ID")
        .env_remove("SCR_USER_NAME");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn out(o: &Output) -> (i32, String) {
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn directories_follow_the_configuration() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("scr.conf"),
        "SCR_CNTL_BASE=/dev/shm\nSCR_CACHE_BASE=/tmp\nCKPT=0 INTERVAL=1 STORE=/ssd\n",
    )
    .unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_scr"));
    let env = [("USER", "alice"), ("SCR_JOB_ID", "1145655")];
    assert_eq!(
        out(&scr_in(d.path(), exe, &["list-dir", "control"], &env)),
        (0, "/dev/shm/alice/scr.1145655\n".into())
    );
    assert_eq!(
        out(&scr_in(d.path(), exe, &["list-dir", "cache"], &env)),
        (0, "/tmp/alice/scr.1145655 /ssd/alice/scr.1145655\n".into())
    );
    assert_eq!(
        out(&scr_in(
            d.path(),
            exe,
            &["list-dir", "--base", "cache"],
            &env
        )),
        (0, "/tmp /ssd\n".into())
    );
    assert_eq!(
        out(&scr_in(
            d.path(),
            exe,
            &["list-dir", "-u", "bob", "-j", "9", "control"],
            &[]
        )),
        (0, "/dev/shm/bob/scr.9\n".into())
    );
    // no resource manager and no SCR_JOB_ID: the directory the library uses then
    assert_eq!(
        out(&scr_in(
            d.path(),
            exe,
            &["list-dir", "control"],
            &[("USER", "carol")]
        )),
        (0, "/dev/shm/carol/scr.defjobid\n".into())
    );
    assert_eq!(
        out(&scr_in(d.path(), exe, &["prefix"], &[])),
        (0, format!("{}\n", d.path().display()))
    );

    // the 1.1-8 name
    let link = d.path().join("scr_cntl_dir");
    std::os::unix::fs::symlink(exe, &link).unwrap();
    assert_eq!(
        out(&scr_in(d.path(), &link, &[], &env)),
        (0, "/dev/shm/alice/scr.1145655\n".into())
    );
    assert_eq!(
        out(&scr_in(d.path(), &link, &["--cache"], &env)),
        (0, "/tmp/alice/scr.1145655 /ssd/alice/scr.1145655\n".into())
    );
}

#[test]
fn install_links_makes_scr_names_work() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    let o = Command::new(env!("CARGO_BIN_EXE_scr"))
        .args(["install-links", bin.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in [
        "scr_print_hash_file",
        "scr_glob_hosts",
        "scr_index",
        "scr_halt",
        "scr_retries_halt",
        "scr_flush_file",
        "scr_nodes_file",
        "scr_prefix",
        "scr_list_dir",
        "scr_cntl_dir",
    ] {
        assert!(bin.join(name).exists(), "{name}");
    }
    let o = Command::new(bin.join("scr_glob_hosts"))
        .args(["-c", "-h", "n[1-4]"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "4\n");
    // a second run refuses to clobber, unless forced
    let again = Command::new(env!("CARGO_BIN_EXE_scr"))
        .args(["install-links", bin.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    let forced = Command::new(env!("CARGO_BIN_EXE_scr"))
        .args(["install-links", "--force", bin.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(forced.status.success());
}
