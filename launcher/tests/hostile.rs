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
    let hostile = format!("n1,n2';touch${{IFS}}{};'", m.display());
    for (var, args) in [
        ("SCR_NODELIST", vec!["postrun", "-p", prefix.to_str().unwrap()]),
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
        let o = scr(&["list-dir", "control"], &[("SCR_JOB_ID", id), ("USER", "u")]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{id:?}: {t}");
        assert_eq!(stdout(&o), "INVALID\n", "{id:?}");
        assert!(t.contains("SCR_JOB_ID"), "names the source: {t}");
    }
}
