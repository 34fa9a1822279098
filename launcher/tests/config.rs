//! `scr config` (`scr params`): the configuration a job started here would get, with each
//! value's origin, from the same resolution SCR_Init uses.

mod common;

use common::*;

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
