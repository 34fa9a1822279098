use super::*;
use std::collections::HashMap;

fn load(env: &[(&str, &str)], system: Option<&str>, user: Option<&str>) -> Result<Params> {
    load_with_app(env, system, user, None)
}

fn load_with_app(
    env: &[(&str, &str)],
    system: Option<&str>,
    user: Option<&str>,
    app: Option<&str>,
) -> Result<Params> {
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("scr.conf");
    if let Some(text) = system {
        std::fs::write(&sys, text).unwrap();
    }
    if let Some(text) = user {
        std::fs::write(dir.path().join(".scrconf"), text).unwrap();
    }
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let env_names = env.keys().cloned().collect();
    let lookup = move |k: &str| env.get(k).cloned();
    Params::load(&Sources {
        env: Box::new(lookup),
        env_names,
        system_config: Some(sys),
        prefix: Some(dir.path().into()),
        app_config: app.map(|text| ConfigFile::parse(text, "SCR_Config").unwrap()),
    })
}

#[test]
fn precedence_env_user_system_default() {
    let p = load(
        &[("SCR_FLUSH", "3")],
        Some("SCR_FLUSH=1\nSCR_CACHE_SIZE=4\nSCR_SET_SIZE=5"),
        Some("SCR_FLUSH=2\nSCR_CACHE_SIZE=6"),
    )
    .unwrap();
    assert_eq!(p.count("SCR_FLUSH"), Some(3));
    assert_eq!(p.setting("SCR_FLUSH").unwrap().origin, Origin::Environment);
    assert_eq!(p.count("SCR_CACHE_SIZE"), Some(6));
    assert_eq!(p.count("SCR_SET_SIZE"), Some(5));
    assert_eq!(p.count("SCR_FETCH_WIDTH"), Some(256));
    assert!(
        p.setting("SCR_SET_SIZE")
            .unwrap()
            .origin
            .to_string()
            .ends_with("scr.conf:3")
    );
}

#[test]
fn a_node_name_from_a_file_is_not_used_and_said_so() {
    let p = load(&[], None, Some("SCR_NODE_NAME=solo\nSCR_USER_NAME=cfguser")).unwrap();
    assert!(p.setting("SCR_NODE_NAME").is_none());
    assert_eq!(p.get("SCR_USER_NAME"), Some("cfguser"));
    assert!(
        p.warnings.iter().any(|w| w.ends_with(
            ".scrconf:1: SCR_NODE_NAME is not used: a configuration file is \
                 read for every node alike, and the node name is each process's own; set it in \
                 the environment of each node's processes"
        )),
        "{:?}",
        p.warnings
    );
    // each process's own environment names its node
    let p = load(&[("SCR_NODE_NAME", "n7")], None, None).unwrap();
    assert_eq!(p.get("SCR_NODE_NAME"), Some("n7"));
}

#[test]
fn cntl_base_is_the_users_to_set_as_in_v3_1() {
    // config.rst: "SCR_CNTL_BASE=/dev/shm/test1" in each test case's own file
    let p = load(&[], Some("SCR_CNTL_BASE=/ssd"), Some("SCR_CNTL_BASE=/user")).unwrap();
    assert_eq!(p.get("SCR_CNTL_BASE"), Some("/user"));
    let p = load(
        &[("SCR_CNTL_BASE", "/env")],
        Some("SCR_CNTL_BASE=/ssd"),
        Some("SCR_CNTL_BASE=/user"),
    )
    .unwrap();
    assert_eq!(p.get("SCR_CNTL_BASE"), Some("/env"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn bad_values_name_their_origin() {
    let e = load(&[("SCR_FLUSH", "often")], None, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("environment variable SCR_FLUSH") && e.contains("non-negative integer"),
        "{e}"
    );
    let e = load(&[], None, Some("\nSCR_COPY_TYPE=RAID5"))
        .unwrap_err()
        .to_string();
    assert!(e.contains(".scrconf:2") && e.contains("RAID5"), "{e}");
    let e = load(&[], Some("CKPT=0 TYPE=MIRROR"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("scr.conf:1") && e.contains("MIRROR"), "{e}");
    let e = load(&[], Some("CNTLDIR=/tmp BYTES=lots"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("BYTES=lots"), "{e}");
    // an unknown attribute is ignored and said, as an unknown parameter is
    let p = load(&[], Some("STORE=/tmp COLOR=blue\nCKPT=0 FOO=1"), None).unwrap();
    for said in [
        "STORE does not take COLOR (ignored",
        "CKPT does not take FOO (ignored",
    ] {
        assert!(
            p.warnings.iter().any(|w| w.contains(said)),
            "{:?}",
            p.warnings
        );
    }
    // config.rst, "Group, store, and checkpoint descriptors": a store's FLUSH is a transfer
    // type, as SCR_FLUSH_TYPE's
    let e = load(&[], Some("STORE=/ssd FLUSH=FAST"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("FLUSH=FAST") && e.contains("PTHREAD"), "{e}");
    load(&[], Some("STORE=/ssd FLUSH=pthread"), None).unwrap();
    let e = load(&[("SCR_MPI_BUF_SIZE", "4QB")], None, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown unit"), "{e}");
}

#[test]
fn descriptors_in_both_syntaxes() {
    let p = load(
        &[],
        Some("CACHEDESC=0 BASE=/tmp SIZE=2\nCKPTDESC=0 INTERVAL=1 BASE=/tmp TYPE=LOCAL HOP_DISTANCE=1\nCNTLDIR=/tmp BYTES=1GB"),
        Some("STORE=/dev/shm GROUP=NODE COUNT=1\nCKPT=0 INTERVAL=1 TYPE=XOR SET_SIZE=4\nGROUPS=host1 POWER=psu1"),
    )
    .unwrap();
    let kinds: Vec<_> = p.descriptors.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "CACHEDESC",
            "CKPTDESC",
            "CNTLDIR",
            "STORE",
            "CKPT",
            "GROUPS"
        ]
    );
    assert_eq!(
        p.descriptors_of("CKPT").next().unwrap().attr("SET_SIZE"),
        Some("4")
    );
}

#[test]
fn round_trips_through_a_hash_for_broadcast() {
    let p = load(
        &[("SCR_FLUSH", "3")],
        Some("CKPT=0 INTERVAL=1 TYPE=XOR SET_SIZE=4\nSTORE=/dev/shm COUNT=2"),
        None,
    )
    .unwrap();
    let back = Params::from_hash(&crate::hash::Hash::unpack(&p.to_hash().pack()).unwrap());
    assert_eq!(back.count("SCR_FLUSH"), Some(3));
    assert_eq!(back.get("SCR_CACHE_BASE"), Some("/tmp"));
    assert_eq!(back.descriptors, p.descriptors);
}

#[test]
fn unknown_parameters_warn() {
    let p = load(&[], None, Some("SCR_FLUHS=3")).unwrap();
    assert!(p.warnings[0].contains("SCR_FLUHS"));
}

#[test]
fn scr_conf_file_must_exist_when_named() {
    let e = load(&[("SCR_CONF_FILE", "/nonexistent/x.conf")], None, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/x.conf does not exist"), "{e}");
}

#[test]
fn scr_config_ranks_between_the_user_file_and_the_system_file() {
    let system = Some("SCR_FLUSH=1\nSCR_CACHE_SIZE=3\nSCR_CHECKPOINT_INTERVAL=7\n");
    let user = Some("SCR_CACHE_SIZE=4\n");
    let app = Some("SCR_FLUSH=2\nSCR_CACHE_SIZE=5\nSCR_CHECKPOINT_INTERVAL=8\n");
    let p = load_with_app(&[("SCR_CHECKPOINT_INTERVAL", "9")], system, user, app).unwrap();
    assert_eq!(
        p.get("SCR_FLUSH"),
        Some("2"),
        "SCR_Config over the system file"
    );
    assert_eq!(
        p.get("SCR_CACHE_SIZE"),
        Some("4"),
        "the user file over SCR_Config"
    );
    assert_eq!(
        p.get("SCR_CHECKPOINT_INTERVAL"),
        Some("9"),
        "the environment over all"
    );
    let err = load_with_app(&[], None, None, Some("SCR_FLUSH=often\n")).unwrap_err();
    assert!(err.to_string().contains("SCR_Config"), "{err}");
}

#[test]
fn ckpt_lines_apply_with_copy_type_file_or_when_it_is_set_nowhere() {
    let lines = "CKPT=0 INTERVAL=1 TYPE=PARTNER\n";
    let p = load(&[], Some(lines), None).unwrap();
    assert!(p.descriptor_lines_apply() && p.warnings.is_empty());
    let p = load(&[("SCR_COPY_TYPE", "FILE")], Some(lines), None).unwrap();
    assert!(p.descriptor_lines_apply());
    let p = load(&[("SCR_COPY_TYPE", "file")], Some(lines), None).unwrap();
    assert!(p.descriptor_lines_apply());
    let p = load(&[("SCR_COPY_TYPE", "XOR")], Some(lines), None).unwrap();
    assert!(!p.descriptor_lines_apply());
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("ignored because SCR_COPY_TYPE=XOR") && w.contains("environment")),
        "{:?}",
        p.warnings
    );
    let p = load(
        &[],
        Some("SCR_COPY_TYPE=SINGLE\nCKPT=0 INTERVAL=1 TYPE=XOR\n"),
        None,
    )
    .unwrap();
    assert!(!p.descriptor_lines_apply());
    assert!(load(&[("SCR_COPY_TYPE", "FILES")], None, None).is_err());
}

#[test]
fn values_nobody_set_stay_defaults_through_the_broadcast_form() {
    let p = load(
        &[("SCR_FLUSH", "3")],
        Some("CKPT=0 INTERVAL=1 TYPE=XOR\n"),
        None,
    )
    .unwrap();
    let q = Params::from_hash(&p.to_hash());
    assert_eq!(q.setting("SCR_COPY_TYPE").unwrap().origin, Origin::Default);
    assert_ne!(q.setting("SCR_FLUSH").unwrap().origin, Origin::Default);
    assert!(q.descriptor_lines_apply());
}

#[test]
fn the_system_config_is_the_run_time_choice_then_the_build_time_one_then_v2_then_v3() {
    let none = |_: &str| None;
    let set = |k: &str| (k == "SCR_SYSTEM_CONF_FILE").then(|| "/run/scr.conf".to_string());
    let only_v3 = |p: &Path| p == Path::new(SYSTEM_CONFIG_PATH_V3);
    let both = |_: &Path| true;
    let neither = |_: &Path| false;
    assert_eq!(
        system_config_path(&set, Some("/opt/scr/etc/scr.conf"), &both),
        Path::new("/run/scr.conf")
    );
    assert_eq!(
        system_config_path(&none, Some("/opt/scr/etc/scr.conf"), &both),
        Path::new("/opt/scr/etc/scr.conf")
    );
    assert_eq!(
        system_config_path(&none, None, &both),
        Path::new("/etc/scr.conf")
    );
    assert_eq!(
        system_config_path(&none, None, &neither),
        Path::new("/etc/scr.conf")
    );
    assert_eq!(
        system_config_path(&none, None, &only_v3),
        Path::new("/etc/scr/scr.conf")
    );
}

#[test]
fn a_store_keeps_its_own_count_else_the_cache_size_and_at_least_one() {
    let lines = "STORE=/dev/shm COUNT=3\nSTORE=/ssd\n";
    let p = load(&[("SCR_CACHE_SIZE", "2")], Some(lines), None).unwrap();
    assert_eq!(p.cache_size("/dev/shm"), 3);
    assert_eq!(p.cache_size("/ssd"), 2);
    let p = load(&[("SCR_CACHE_SIZE", "0")], None, None).unwrap();
    assert_eq!(p.cache_size("/tmp"), 1);
}

#[test]
fn every_default_said_to_differ_from_v31_does() {
    for d in V31_DEFAULTS {
        let spec = spec(d.name).unwrap_or_else(|| panic!("{} is not a parameter", d.name));
        assert_ne!(spec.default, Some(d.v31), "{}", d.name);
        check_value(spec, d.v31).unwrap_or_else(|e| panic!("v3.1's default: {e}"));
    }
    let mut names: Vec<&str> = V31_DEFAULTS.iter().map(|d| d.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), V31_DEFAULTS.len(), "a parameter listed twice");
}

#[test]
fn environment_values_expand_variables_as_in_v3_1() {
    let p = load(
        &[("SCR_PREFIX", "$MYDIR/p"), ("MYDIR", "/scratch/u")],
        None,
        None,
    )
    .unwrap();
    assert_eq!(p.get("SCR_PREFIX"), Some("/scratch/u/p"));
    let e = load(&[("SCR_PREFIX", "$NOT_SET_HERE/p")], None, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("environment variable SCR_PREFIX") && e.contains("NOT_SET_HERE"),
        "{e}"
    );
}

#[test]
fn typed_settings_take_the_tables_defaults_and_what_is_set() {
    let default = |name: &str| spec(name).unwrap().default.unwrap();
    // (under scr-run: a job no drain follows flushes each checkpoint, tested below)
    let s = load(&[("SCR_DRAIN_FOLLOWS", "1")], None, None)
        .unwrap()
        .typed();
    assert_eq!(s.flush.every.to_string(), default("SCR_FLUSH"));
    assert!(!s.flush.in_background && !s.flush.each_for_want_of_a_drain);
    assert_eq!(s.flush.width.to_string(), default("SCR_FLUSH_WIDTH"));
    assert_eq!(s.fetch.width.to_string(), default("SCR_FETCH_WIDTH"));
    assert_eq!(s.buffers.file.to_string(), default("SCR_FILE_BUF_SIZE"));
    assert_eq!(s.buffers.mpi.to_string(), default("SCR_MPI_BUF_SIZE"));
    assert_eq!(
        s.launch.run_delay_secs.to_string(),
        default("SCR_RUN_DELAY")
    );
    assert_eq!(s.places.cntl_base, default("SCR_CNTL_BASE"));
    assert_eq!(s.redundancy.cache_base, default("SCR_CACHE_BASE"));
    assert_eq!(s.redundancy.group, default("SCR_GROUP"));
    assert_eq!(s.log.facility, default("SCR_LOG_SYSLOG_FACILITY"));
    assert!(s.enable && s.crc.on_flush && !s.crc.on_copy && s.fetch.enabled);
    assert_eq!(
        (s.halt.end_time, s.launch.runs, s.current),
        (None, None, None)
    );

    let s = load(
        &[
            ("SCR_FLUSH", "3"),
            ("SCR_GLOBAL_RESTART", "1"),
            ("SCR_END_TIME", "1700000000"),
            ("SCR_FLUSH_TYPE", "PTHREAD"),
            ("SCR_RUNS", "-1"),
            ("SCR_GROUP", "power"),
        ],
        None,
        Some("SCR_MPI_BUF_SIZE=1MB\nSCR_CURRENT=ckpt.4"),
    )
    .unwrap()
    .typed();
    assert_eq!(s.flush.every, 3);
    assert!(s.flush.on_restart && s.fetch.in_place && s.fetch.global_restart);
    assert!(s.flush.in_background);
    assert_eq!(s.halt.end_time, Some(1_700_000_000));
    assert_eq!(s.launch.runs, Some(-1));
    assert_eq!(s.redundancy.group, "POWER");
    assert_eq!(s.buffers.mpi, 1 << 20);
    assert_eq!(s.current.as_deref(), Some("ckpt.4"));
}

#[test]
fn a_job_no_drain_follows_flushes_each_checkpoint_in_the_background_unless_a_flush_is_set() {
    let each = |env: &[(&str, &str)], user: Option<&str>, app: Option<&str>| {
        let p = load_with_app(env, None, user, app).unwrap();
        // what every rank uses: rank 0's values, broadcast
        let s = Params::from_hash(&p.to_hash()).typed();
        assert_eq!(
            s.flush.each_for_want_of_a_drain,
            p.typed().flush.each_for_want_of_a_drain
        );
        (
            s.flush.every,
            s.flush.in_background,
            s.flush.each_for_want_of_a_drain,
        )
    };
    assert_eq!(each(&[], None, None), (1, true, true));
    assert_eq!(
        each(&[("SCR_DRAIN_FOLLOWS", "0")], None, None),
        (1, true, true)
    );
    // scr-run's runs: v2.0's defaults, the drain takes what is left in cache
    assert_eq!(
        each(&[("SCR_DRAIN_FOLLOWS", "1")], None, None),
        (10, false, false)
    );
    // a flush the user chose, wherever: theirs
    assert_eq!(each(&[("SCR_FLUSH", "10")], None, None), (10, false, false));
    assert_eq!(each(&[], Some("SCR_FLUSH=0"), None), (0, false, false));
    assert_eq!(each(&[], None, Some("SCR_FLUSH=4")), (4, false, false));
    assert_eq!(
        each(&[("SCR_FLUSH_ASYNC", "0")], None, None),
        (10, false, false)
    );
    assert_eq!(
        each(&[("SCR_FLUSH_ASYNC", "1")], None, None),
        (10, true, false)
    );
    assert_eq!(
        each(&[("SCR_FLUSH_TYPE", "SYNC")], None, None),
        (10, false, false)
    );
    assert_eq!(
        each(&[], Some("STORE=/tmp FLUSH=SYNC"), None),
        (10, false, false)
    );
}

/// A `.scrconf` in a prefix others may create names in is not read, even one of the user's
/// own with a single name: a neighbour may have linked a file of the user's there, then
/// the user removed its other name. The warning names the file and what to use instead.
#[test]
fn a_scrconf_in_a_prefix_others_may_create_names_in_is_not_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join(".scrconf");
    std::fs::write(&conf, "SCR_PREFIX_PURGE=1\n").unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o600)).unwrap();
    let load_here = || {
        Params::load(&Sources {
            env: Box::new(|_: &str| None),
            env_names: Vec::new(),
            system_config: None,
            prefix: Some(dir.path().into()),
            app_config: None,
        })
        .unwrap()
    };
    // the user's own prefix: read
    assert!(load_here().bool("SCR_PREFIX_PURGE"));
    // a shared prefix (sticky, everyone may create names): passed over, said
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let p = load_here();
    assert!(!p.bool("SCR_PREFIX_PURGE"));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains(".scrconf is not read") && w.contains("SCR_CONF_FILE")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn the_database_password_is_never_shown_only_where_it_was_set() {
    let p = load(
        &[
            ("SCR_LOG_DB_USER", "scr_insert"),
            ("SCR_LOG_DB_PASS", "s3cret"),
        ],
        Some("SCR_LOG_DB_ENABLE=1\n"),
        None,
    )
    .unwrap();
    let lines = p.effective(None);
    let shown = lines
        .iter()
        .find(|(l, _)| l.starts_with("SCR_LOG_DB_PASS="))
        .unwrap();
    assert_eq!(shown.0, "SCR_LOG_DB_PASS=(hidden)");
    assert_eq!(shown.1, "environment");
    assert!(lines.iter().all(|(l, _)| !l.contains("s3cret")));
    let db = p.typed().log.db;
    assert!(db.enable);
    assert_eq!(db.user.as_deref(), Some("scr_insert"));
    assert!(!format!("{db:?}").contains("s3cret"));
    assert_eq!(db.pass.as_deref(), Some("s3cret"));
}

#[test]
fn a_database_password_in_a_file_others_can_read_is_not_used_and_the_warning_says_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("scr.conf");
    std::fs::write(&conf, "SCR_LOG_DB_ENABLE=1\nSCR_LOG_DB_PASS=s3cret\n").unwrap();
    let sources = |conf: &Path| Sources {
        env: Box::new(|_: &str| None),
        env_names: Vec::new(),
        system_config: Some(conf.into()),
        prefix: Some(dir.path().into()),
        app_config: None,
    };
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = Params::load(&sources(&conf)).unwrap();
    assert_eq!(p.typed().log.db.pass, None);
    let warning = p.warnings.join("\n");
    assert!(
        warning.contains(&format!("{}:2", conf.display())),
        "{warning}"
    );
    // every user reads the system's file: the fix is each user's own file, not a mode
    assert!(!warning.contains("chmod 600"), "{warning}");
    assert!(warning.contains("~/.my.cnf"), "{warning}");
    // a user's own file (SCR_CONF_FILE) readable by others: the fix is its mode
    let own = dir.path().join("mine.conf");
    std::fs::write(&own, "SCR_LOG_DB_PASS=s3cret\n").unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o644)).unwrap();
    let named = own.clone();
    let p = Params::load(&Sources {
        env: Box::new(move |k: &str| (k == "SCR_CONF_FILE").then(|| named.display().to_string())),
        env_names: Vec::new(),
        system_config: None,
        prefix: Some(dir.path().into()),
        app_config: None,
    })
    .unwrap();
    assert_eq!(p.typed().log.db.pass, None);
    let warning = p.warnings.join("\n");
    assert!(
        warning.contains(&format!("chmod 600 {}", own.display())),
        "{warning}"
    );
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o600)).unwrap();
    let p = Params::load(&sources(&conf)).unwrap();
    assert_eq!(p.typed().log.db.pass.as_deref(), Some("s3cret"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn a_named_configuration_file_in_a_directory_others_may_rename_in_is_refused() {
    // the file is the user's own and 0600, but everyone may write the (not sticky)
    // directory it is in: anyone could swap it for a file of theirs by name
    use std::os::unix::fs::PermissionsExt;
    let (_dir, open, conf) = conf_in_a_directory_anyone_may_rename_in();
    let e = load(&[("SCR_CONF_FILE", conf.to_str().unwrap())], None, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(conf.to_str().unwrap()) && e.contains("swap"),
        "{e}"
    );
    // the same file where only its user may change the way is read
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).unwrap();
    let p = load(&[("SCR_CONF_FILE", conf.to_str().unwrap())], None, None).unwrap();
    assert_eq!(p.count("SCR_FLUSH"), Some(3));
}

#[test]
fn a_configuration_file_reached_through_a_link_of_the_user_s_is_judged_where_it_lies() {
    // the link is the user's own, in a directory of theirs; the file it leads to is theirs
    // and 0600, but everyone may rename in the (not sticky) directory that holds it
    use std::os::unix::fs::PermissionsExt;
    let (dir, open, conf) = conf_in_a_directory_anyone_may_rename_in();
    let link = dir.path().join("link.conf");
    std::os::unix::fs::symlink(&conf, &link).unwrap();
    let e = load(&[("SCR_CONF_FILE", link.to_str().unwrap())], None, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(link.to_str().unwrap())
            && e.contains(&format!("{} is writable", open.display())),
        "{e}"
    );
    // a relative link, and a chain of two, lead to the same place
    let rel = dir.path().join("rel.conf");
    std::os::unix::fs::symlink("link.conf", &rel).unwrap();
    assert!(load(&[("SCR_CONF_FILE", rel.to_str().unwrap())], None, None).is_err());
    // where only the user may change the way, the link is followed and the file read
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).unwrap();
    let p = load(&[("SCR_CONF_FILE", rel.to_str().unwrap())], None, None).unwrap();
    assert_eq!(p.count("SCR_FLUSH"), Some(3));
}

#[test]
fn the_flush_in_effect_is_shown_where_no_drain_follows() {
    // what `scr config` and SCR_DEBUG=1 list: the flush a job started here gets
    let shown = |env: &[(&str, &str)]| {
        let lines = load(env, None, None).unwrap().effective(None);
        let get = |name: &str| {
            lines
                .iter()
                .find(|(l, _)| l.split_once('=').is_some_and(|(n, _)| n == name))
                .cloned()
                .unwrap()
        };
        (get("SCR_FLUSH"), get("SCR_FLUSH_ASYNC"))
    };
    let (flush, asynchronous) = shown(&[]);
    assert_eq!(flush.0, "SCR_FLUSH=1");
    assert!(flush.1.contains("no drain follows"), "{flush:?}");
    assert_eq!(asynchronous.0, "SCR_FLUSH_ASYNC=1");
    let (flush, asynchronous) = shown(&[("SCR_DRAIN_FOLLOWS", "1")]);
    assert_eq!(flush.0, "SCR_FLUSH=10");
    assert_eq!(asynchronous.0, "SCR_FLUSH_ASYNC=0");
    let (flush, _) = shown(&[("SCR_FLUSH", "3")]);
    assert_eq!(
        flush,
        ("SCR_FLUSH=3".to_string(), "environment".to_string())
    );
}

/// A configuration file of the user's, 0600, `SCR_FLUSH=3`, in a directory (not sticky)
/// everyone may write: the temporary directory, that directory, the file.
fn conf_in_a_directory_anyone_may_rename_in() -> (tempfile::TempDir, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let conf = open.join("scr.conf");
    std::fs::write(&conf, "SCR_FLUSH=3\n").unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, open, conf)
}
