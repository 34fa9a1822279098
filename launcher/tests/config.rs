//! `scr config` (`scr params`): the configuration a job started here would get, with each
//! value's origin, from the same resolution SCR_Init uses.

mod common;

use common::*;
use std::process::Command;

#[test]
fn each_value_comes_with_where_it_was_set() {
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path().join("prefix");
    std::fs::create_dir_all(prefix.join(".scr")).unwrap();
    std::fs::write(
        prefix.join(".scrconf"),
        "SCR_CACHE_SIZE=2\nCKPT=0 TYPE=PARTNER\n",
    )
    .unwrap();
    let system = d.path().join("system.conf");
    std::fs::write(&system, "SCR_CACHE_BASE=/dev/shm\n").unwrap();
    // what an earlier run set through SCR_Config
    std::fs::write(prefix.join(".scr/app.conf"), "SCR_CHECKPOINT_INTERVAL=4\n").unwrap();
    let p = prefix.to_str().unwrap();
    let env = [
        ("SCR_FLUSH", "3"),
        ("SCR_SYSTEM_CONF_FILE", system.to_str().unwrap()),
    ];
    let out = stdout_ok(&scr(&["config", "-p", p], &env));
    let line = |setting: &str| {
        out.lines()
            .find(|l| {
                l.starts_with(&format!("{setting} ")) || l.starts_with(&format!("{setting}\t"))
            })
            .unwrap_or_else(|| panic!("no {setting}: {out}"))
            .to_string()
    };
    assert!(line("SCR_FLUSH=3").ends_with("# environment"), "{out}");
    let user = line("SCR_CACHE_SIZE=2");
    assert!(user.ends_with(&format!("# {p}/.scrconf:1")), "{user}");
    assert!(
        line("SCR_CACHE_BASE=/dev/shm").ends_with(&format!("# {}:1", system.display())),
        "{out}"
    );
    assert!(
        line("SCR_CHECKPOINT_INTERVAL=4").contains("SCR_Config settings"),
        "{out}"
    );
    assert!(
        line("SCR_HALT_SECONDS=0").ends_with("# built-in default"),
        "{out}"
    );
    assert!(
        line("CKPT=0 TYPE=PARTNER").ends_with(&format!("# {p}/.scrconf:2")),
        "{out}"
    );

    // one name, as JSON, under SCR's other name for it
    let o = scr(&["params", "-p", p, "--json", "scr_flush"], &env);
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{"setting": "SCR_FLUSH=3", "origin": "environment"}])
    );
    // a bad line is an error naming the file and line, as SCR_Init's would be
    std::fs::write(prefix.join(".scrconf"), "SCR_CACHE_SIZE=two\n").unwrap();
    let o = scr(&["config", "-p", p], &env);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(".scrconf:1") && err.contains("SCR_CACHE_SIZE"),
        "{err}"
    );
}

#[test]
fn an_scr_environment_variable_no_parameter_has_is_warned_of_with_the_name_meant() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let env = [
        ("SCR_FLUSH_ASYNK", "1"),
        ("SCR_HALT_SECOND", "600"),
        // not parameters, but what SCR, its tools, sites' modules and tests set
        ("SCR_JOB_ID", "7"),
        ("SCR_ROOT", "/opt/scr"),
        ("SCR_INSTALL_DIR", "/opt/scr"),
        ("SCR_LIBRARY", "/opt/scr/lib/libscr.so"),
        ("SCR_TEST_ANYTHING", "1"),
    ];
    let o = scr(&["config", "-p", p], &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let warned = |name: &str| err.lines().filter(|l| l.contains(name)).count();
    assert_eq!(warned("SCR_FLUSH_ASYNK"), 1, "{err}");
    assert!(
        err.contains("environment variable SCR_FLUSH_ASYNK") && err.contains("SCR_FLUSH_ASYNC"),
        "names the parameter meant: {err}"
    );
    assert!(
        err.contains("SCR_HALT_SECOND ") || err.contains("SCR_HALT_SECOND:"),
        "{err}"
    );
    assert!(err.contains("SCR_HALT_SECONDS"), "{err}");
    for quiet in [
        "SCR_JOB_ID",
        "SCR_ROOT",
        "SCR_INSTALL_DIR",
        "SCR_LIBRARY",
        "SCR_TEST_ANYTHING",
        "SCR_SYSTEM_CONF_FILE",
    ] {
        assert_eq!(warned(quiet), 0, "{quiet}: {err}");
    }
}

#[test]
fn every_value_in_effect_is_shown_the_working_directory_prefix_and_unset_ones_too() {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_scr"))
        .arg("config")
        .current_dir(d.path())
        .env_remove("SCR_PREFIX")
        .env_remove("SCR_CURRENT")
        .env_remove("SCR_END_TIME")
        .env_remove("SCR_HALT_EXIT")
        .env_remove("SCR_CONF_FILE")
        .env("SCR_SYSTEM_CONF_FILE", "/nonexistent/scr.conf")
        .output()
        .unwrap();
    let out = stdout_ok(&o);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name}: {out}"))
            .to_string()
    };
    let cwd = d.path().canonicalize().unwrap();
    let prefix = line("SCR_PREFIX");
    assert!(
        prefix.starts_with(&format!("SCR_PREFIX={} ", cwd.display()))
            && prefix.contains("working directory"),
        "{prefix}"
    );
    assert!(
        line("SCR_HALT_EXIT").starts_with("SCR_HALT_EXIT=0 "),
        "{out}"
    );
    for unset in ["SCR_CURRENT", "SCR_END_TIME"] {
        let l = line(unset);
        assert!(
            l.starts_with(&format!("{unset}= ")) && l.contains("unset"),
            "{l}"
        );
    }
}
