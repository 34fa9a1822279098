//! How scr-run's runs read back from both logs (the prefix's text log and the v3.1
//! database, a private `mariadbd` per test): a run stopped for `scr halt --immediate` is
//! halted and a last run that died is died in every reading, runs logged in other time
//! zones keep their order, and scr-run's database log comes back after an outage.

mod common;
#[path = "db_log/support.rs"]
mod support;

use common::scr_run::*;
use common::*;
use scr_db::test_server::TestServer;
use support::*;

/// `scr halt --immediate` has scr-run stop the run under way: a run stopped on purpose,
/// which every reading of the job counts as halted and none as a run that died (no END, no
/// HALT of the library's: only scr-run knows why it ended): the prefix's report and the
/// interval from the text log, and the site report from the database.
#[test]
fn a_run_scr_halt_immediate_stops_is_a_halted_run_in_every_log() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let app = job.app.display().to_string();
    let mut env: Vec<(&str, String)> = db_env(&server, "pw-insert");
    env.extend([
        ("SCR_LOG_TXT_ENABLE", "1".to_string()),
        ("SCR_RUNS", "3".to_string()),
        ("TEST_API_SLEEP_MS", "300".to_string()),
    ]);
    let mut cmd = scr_run_in(
        &job,
        &[
            "mpiexec",
            "-launcher",
            "fork",
            "-n",
            "2",
            &app,
            "2000",
            "400",
        ],
        &borrowed(&env),
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let log = scr::event_log::log_path(&job.prefix());
    // two checkpoints in: the run computes and checkpoints when the halt comes
    wait_until(
        || "no checkpoint logged".into(),
        std::time::Duration::from_secs(90),
        || std::fs::read_to_string(&log).map_or(0, |l| l.matches("event=CHECKPOINT ").count()) >= 2,
    );
    let halt = std::process::Command::new(scr_command())
        .args(["halt", "--immediate"])
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(halt.status.success(), "{}", text(&halt));
    let out = wait_within(child, std::time::Duration::from_secs(90));
    let t = text(&out);
    assert!(
        t.contains("halted immediately (scr halt --immediate)"),
        "{t}"
    );
    assert_eq!(t.matches("launching").count(), 1, "{t}");

    let scr = |args: &[&str], db: bool| scr_json(&job, db.then_some(&server), args);
    let prefix = job.prefix().display().to_string();
    let report = scr(&["report", "--json", &prefix], false);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{report:#}");
    assert_eq!(runs[0]["ending"], "halted", "{report:#}");
    assert_eq!(report["failures"], serde_json::json!([]), "{report:#}");
    let interval = scr(&["ckpt-interval", "--json", "--prefix", &prefix], false);
    assert_eq!(interval["failures"], 0, "{interval:#}");
    let site = scr(&["report", "--db", "--json"], true);
    let apps = site["applications"].as_array().unwrap();
    assert_eq!(apps.len(), 1, "{site:#}");
    assert_eq!(apps[0]["runs"], 1, "{site:#}");
    assert_eq!(apps[0]["runs_died"], 0, "{site:#}");
    assert_eq!(apps[0]["failures"], 0, "{site:#}");
}

/// The database's times are each writer's local time, as v3.1 writes them. A job whose
/// first run logged in Tokyo's time and died, and whose second logged in New York's (a
/// login node's TZ, a daylight change between them), still has its runs in the order they
/// ran: the first died, the second restarted and finished.
#[test]
fn runs_logged_in_other_time_zones_keep_their_order_and_the_run_that_died() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let env = db_env(&server, "pw-insert");
    let mut first = borrowed(&env);
    first.extend([("TZ", "JST-9"), ("TEST_API_NO_FINALIZE", "1")]);
    job.run_ok(2, &["1000", "2"], &first);
    let mut second = borrowed(&env);
    second.push(("TZ", "EST5"));
    let said = job.run_ok(2, &["1000", "4"], &second);
    assert!(said.contains("test_api: done"), "{said}");
    // by the clock on the wall, the second run logged half a day before the first
    let starts = rows(
        &server,
        "SELECT e.start FROM scr.events e JOIN scr.types t ON t.id = e.type_id \
         WHERE t.name = 'START' ORDER BY e.id",
    );
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert!(starts[1] < starts[0], "{starts:?}");

    let report = |since: &[&str]| {
        let args: Vec<&str> = ["report", "--db", "--json"]
            .iter()
            .chain(since)
            .copied()
            .collect();
        scr_json(&job, Some(&server), &args)
    };
    let site = report(&[]);
    let app = &site["applications"][0];
    assert_eq!(app["runs"], 2, "{site:#}");
    assert_eq!(app["runs_died"], 1, "{site:#}");
    // --since takes instants too: an hour ago both runs, in an hour none, whatever the
    // zone each logged in
    let at = |hours: i64| {
        (chrono::Local::now() + chrono::Duration::hours(hours))
            .format("%Y-%m-%d %H:%M")
            .to_string()
    };
    let since = report(&["--since", &at(-1)]);
    assert_eq!(since["applications"][0]["runs"], 2, "{since:#}");
    let none = report(&["--since", &at(1)]);
    assert_eq!(none["applications"], serde_json::json!([]), "{none:#}");
}

/// A server that stops answering while scr-run's first run goes on turns scr-run's database
/// log off; once it answers again, the next run's bounds take the log up again, so how each
/// run ended and how the job ended are in the database, not lost for the rest of the
/// allocation.
#[test]
fn scr_run_takes_the_database_log_up_again_after_an_outage() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let app = job.app.display().to_string();
    let mut env: Vec<(&str, String)> = db_env(&server, "pw-insert");
    env.extend([
        ("SCR_NODELIST", "n1".to_string()),
        ("SCR_RUNS", "2".to_string()),
        ("TEST_API_FAIL_FIRST", "1".to_string()),
        ("TEST_API_SLEEP_MS", "500".to_string()),
    ]);
    let said = job.dir.path().join("scr-run.out");
    let mut cmd = scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "2", &app, "2000", "8"],
        &borrowed(&env),
    );
    cmd.stdout(std::fs::File::create(&said).unwrap())
        .stderr(std::fs::File::create(job.dir.path().join("scr-run.err")).unwrap());
    server.pause();
    let child = cmd.spawn().unwrap();
    // the outage is real: scr-run said its log went off
    let err = job.dir.path().join("scr-run.err");
    wait_until(
        || {
            format!(
                "the log never went off: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            )
        },
        std::time::Duration::from_secs(60),
        || std::fs::read_to_string(&err).is_ok_and(|t| t.contains("database log off")),
    );
    server.resume();
    let out = wait_within(child, std::time::Duration::from_secs(180));
    let t = format!(
        "{}{}",
        std::fs::read_to_string(&said).unwrap(),
        std::fs::read_to_string(&err).unwrap()
    );
    assert!(out.status.success(), "{t}");
    // said once by scr-run, whose log was opened again at each run's bounds, and at most
    // once more by the first run's library if it met the outage too
    let warned = t.matches("database log off").count();
    assert!((1..=2).contains(&warned), "{t}");
    let ends = rows(
        &server,
        "SELECT IFNULL(e.note, '') FROM scr.events e JOIN scr.types t ON t.id = e.type_id \
         WHERE t.name = 'RUN_END' ORDER BY e.id",
    );
    assert_eq!(ends.len(), 2, "{ends:?}\n{t}");
    assert!(ends[0][0].contains("exit_code=3"), "{ends:?}");
    assert!(ends[1][0].contains("exit_code=0"), "{ends:?}");
    assert_eq!(
        server.sql(
            "SELECT COUNT(*) FROM scr.events e JOIN scr.types t ON t.id = e.type_id \
             WHERE t.name = 'SCR_RUN_FINISHED'"
        ),
        "1\n"
    );
}

/// A job whose last run died: scr-run saw it end badly and says so in the text log as in the
/// database, so the prefix's report, the interval and the site report all count it as a run
/// that died, none as one still running.
#[test]
fn a_last_run_that_died_is_died_in_the_text_log_and_the_database_alike() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let app = job.app.display().to_string();
    let mut env: Vec<(&str, String)> = db_env(&server, "pw-insert");
    env.extend([
        ("SCR_NODELIST", "n1".to_string()),
        ("SCR_RUNS", "1".to_string()),
        ("TEST_API_FAIL_FIRST", "1".to_string()),
    ]);
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "2", &app, "2000", "3"],
        &borrowed(&env),
    ));
    assert!(!out.status.success(), "{t}");
    let log = std::fs::read_to_string(scr::event_log::log_path(&job.prefix())).unwrap();
    assert!(
        log.contains("event=SCR_RUN_LAUNCH") && log.contains("event=SCR_RUN_RUN_ENDED"),
        "{log}"
    );
    let scr = |args: &[&str], db: bool| scr_json(&job, db.then_some(&server), args);
    let prefix = job.prefix().display().to_string();
    let report = scr(&["report", "--json", &prefix], false);
    assert_eq!(report["runs"][0]["ending"], "died", "{report:#}");
    let interval = scr(&["ckpt-interval", "--json", &prefix], false);
    assert_eq!(interval["failures"], 1, "{interval:#}");
    let site = scr(&["report", "--db", "--json"], true);
    assert_eq!(site["applications"][0]["runs_died"], 1, "{site:#}");
}

/// The drain after scr-run's last run copies the newest checkpoint to the prefix: a flush
/// like the library's, in the text log and the database alike with its bytes and seconds,
/// so the flush bandwidth of the prefix's report and of the site report counts it (with
/// SCR_FLUSH=0 it is the job's only flush).
#[test]
fn the_drain_after_the_last_run_is_a_flush_in_the_text_log_and_the_database() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let app = job.app.display().to_string();
    let mut env: Vec<(&str, String)> = db_env(&server, "pw-insert");
    env.extend([
        ("SCR_NODELIST", "n[1-2]".to_string()),
        ("SCR_FLUSH", "0".to_string()),
    ]);
    let (out, t) = output(scr_run_in(
        &job,
        &hydra_on("n1,n2", 2, &[&app, "2000", "3"]),
        &borrowed(&env),
    ));
    assert!(out.status.success(), "{t}");
    assert!(t.contains("dataset 3 (ckpt.3) drained"), "{t}");
    // test_api writes one file a rank: an 8-byte header and SIZE bytes
    let bytes = 2 * (8 + 2000);
    let log = std::fs::read_to_string(scr::event_log::log_path(&job.prefix())).unwrap();
    let flushes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" event=FLUSH "))
        .collect();
    assert_eq!(flushes.len(), 1, "{log}");
    for field in ["name=ckpt.3", "drain=1", &format!("bytes={bytes}"), "secs="] {
        assert!(
            flushes[0].split(' ').any(|f| f.starts_with(field)),
            "{field}: {log}"
        );
    }
    let prefix = job.prefix().display().to_string();
    // (scr-run waits for its database records before it exits)
    let db_flushes = rows(
        &server,
        "SELECT x.dset_name, x.bytes, x.`to` FROM scr.transfers x \
         JOIN scr.types t ON t.id = x.type_id WHERE t.name = 'FLUSH_SYNC'",
    );
    let expected = vec![vec![
        "ckpt.3".to_string(),
        bytes.to_string(),
        prefix.clone(),
    ]];
    assert_eq!(db_flushes, expected);
    let scr = |args: &[&str], db: bool| scr_json(&job, db.then_some(&server), args);
    let report = scr(&["report", "--json", &prefix], false);
    assert_eq!(report["flushes"][0]["bytes"], bytes, "{report:#}");
    // the drain after the run is no run of its own, and leaves the run ended
    assert_eq!(
        report["runs"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    assert_eq!(report["runs"][0]["ending"], "ended", "{report:#}");
    let site = scr(&["report", "--db", "--json"], true);
    assert!(
        site["applications"][0]["flush_mib_per_s"].is_number(),
        "{site:#}"
    );
    assert_eq!(site["applications"][0]["runs_died"], 0, "{site:#}");
}

/// A user who floods their own database with events (here node-down records, each naming a
/// node of its own) costs the administrator's site report a bounded amount: that database
/// is read up to the bound and named as read in part, its later jobs not at all, and every
/// other user's jobs are read whole.
#[test]
fn a_users_database_flooded_with_events_is_read_to_a_bound_and_named() {
    use scr_db::read::MOST_EVENTS_OF_A_USER;
    let server = TestServer::start();
    server.v3_1_database();
    // the administrator's reader (the log's account, here reading every database)
    server.sql_for_accounts("scr", "GRANT SELECT ON *.* TO {account}");
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost' WITH GRANT OPTION");
    server.create_user("mallory", "pw-m");
    let admin = scr_db::Target {
        address: scr_db::Address::Socket(server.socket()),
        user: "admin".into(),
        password: Some("pw-admin".into()),
        database: "scr".into(),
        debug: false,
        timeout: scr_db::TIMEOUT,
        ssl_ca: None,
    };
    scr_db::Connection::open(&admin, false)
        .unwrap()
        .grant_own_records("scr", "mallory", None)
        .unwrap();
    let flood = MOST_EVENTS_OF_A_USER + 10;
    let event = |db: &str, job: u32, kind: &str, note: &str| {
        format!(
            "INSERT IGNORE INTO {db}.types (name) VALUES ('{kind}'); \
             INSERT INTO {db}.events (job_id, type_id, start, note) SELECT {job}, id, NOW(), \
             '{note}' FROM {db}.types WHERE name = '{kind}';"
        )
    };
    let job = |db: &str, user: &str, name: &str| {
        format!(
            "INSERT IGNORE INTO {db}.usernames (name) VALUES ('{user}'); \
             INSERT INTO {db}.jobnames (name) VALUES ('{name}'); \
             INSERT INTO {db}.jobs (username_id, jobname_id, start) SELECT u.id, n.id, NOW() \
             FROM {db}.usernames u, {db}.jobnames n WHERE u.name = '{user}' AND n.name = '{name}';"
        )
    };
    server.sql(
        &[
            job("scr", "alice", "/p/alice/run"),
            event("scr", 1, "START", "ranks=2"),
            event("scr", 1, "NODE_FAIL", "n7: it stopped answering"),
            // a job's records dated where no job ran: a run that died in the year 1000 and a
            // node down in 9999 would stretch the weeks and the time lost over centuries
            "INSERT INTO scr.events (job_id, type_id, start, note) SELECT 1, id, \
         '1000-01-01 00:00:00', 'ranks=2' FROM scr.types WHERE name = 'START'; \
         INSERT INTO scr.events (job_id, type_id, start, note) SELECT 1, id, \
         '9999-12-31 00:00:00', 'n8: later' FROM scr.types WHERE name = 'NODE_FAIL';"
                .to_string(),
            job("scr_mallory", "mallory", "/p/m/flood"),
            job("scr_mallory", "mallory", "/p/m/later"),
            event("scr_mallory", 2, "START", "ranks=2 app=later"),
            format!(
                "INSERT IGNORE INTO scr_mallory.types (name) VALUES ('NODE_FAIL'); \
             INSERT INTO scr_mallory.events (job_id, type_id, start, note) SELECT 1, t.id, NOW(), \
             CONCAT('node=k', s.seq, ' reason=r') FROM scr_mallory.types t, \
             scr_mallory.seq_1_to_{flood} s WHERE t.name = 'NODE_FAIL';"
            ),
        ]
        .concat(),
    );
    let job = Job::new();
    let site = scr_json(&job, Some(&server), &["report", "--db", "--json"]);
    let unread = site["unread"].to_string();
    assert!(
        unread.contains("scr_mallory") && unread.contains("read in part"),
        "{unread}"
    );
    let nodes = site["nodes"].as_array().unwrap();
    // alice's node and the bound's worth of mallory's
    assert_eq!(nodes.len(), MOST_EVENTS_OF_A_USER + 1);
    assert!(nodes.iter().any(|n| n["node"] == "n7"), "{:?}", &nodes[..3]);
    assert!(
        !nodes.iter().any(|n| n["node"] == "n8"),
        "a node down in 9999"
    );
    assert!(unread.contains("2 event(s) dated before 2000"), "{unread}");
    let alice = &site["jobs"].as_array().unwrap()[0];
    assert_eq!(
        (alice["job_name"].as_str(), alice["runs"].as_u64()),
        (Some("/p/alice/run"), Some(1))
    );
    let jobs: Vec<&str> = site["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["job_name"].as_str())
        .collect();
    assert!(
        jobs.contains(&"/p/alice/run") && !jobs.contains(&"/p/m/later"),
        "{jobs:?}"
    );
}

/// With no server at all, a job under scr-run says so twice, not once an attempt: once by
/// scr-run (which opens its log again at each run's bounds and for its drain) and once by
/// the run's library, and the job runs as without the database log.
#[test]
fn with_no_server_scr_run_and_the_library_each_say_it_once() {
    let job = Job::new();
    let app = job.app.display().to_string();
    let nowhere = job.dir.path().join("no-server.sock").display().to_string();
    let env: Vec<(&str, String)> = vec![
        ("SCR_LOG_ENABLE", "1".into()),
        ("SCR_LOG_SYSLOG_ENABLE", "0".into()),
        ("SCR_LOG_DB_ENABLE", "1".into()),
        ("SCR_LOG_DB_HOST", nowhere),
        ("SCR_LOG_DB_NAME", "scr".into()),
        ("SCR_LOG_DB_USER", "scr_insert".into()),
        ("SCR_NODELIST", "n[1-2]".into()),
        // (the drain, not the library's Finalize, takes the checkpoint to the prefix)
        ("SCR_FLUSH", "0".into()),
    ];
    let (out, t) = output(scr_run_in(
        &job,
        &hydra_on("n1,n2", 2, &[&app, "2000", "2"]),
        &borrowed(&env),
    ));
    assert!(out.status.success(), "{t}");
    assert!(t.contains("dataset 2 (ckpt.2) drained"), "{t}");
    assert_eq!(t.matches("database log off").count(), 2, "{t}");
}
