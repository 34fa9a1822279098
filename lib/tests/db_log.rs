//! SCR's database log from real MPI jobs into a real MariaDB server (a private `mariadbd`
//! per test) set up as a site did for SCR v3.1 (its tables, its insert-only account): a
//! job that fails and is restarted leaves the records of both runs, matched against what
//! the application printed and the files it wrote; a server that refuses the password, is
//! stopped or is down costs the job nothing but one message, and the text log keeps the
//! events. scr-run's own events (launches, how each run ended, how the job ended) join the
//! library's under the same job.

mod common;
#[path = "db_log/support.rs"]
mod support;

use common::scr_run::*;
use common::*;
use scr_db::test_server::TestServer;
use support::*;

/// The names of the datasets of kind `kind` among `events` (type, dset_name).
fn named<'a>(events: &'a [Vec<String>], kind: &str) -> Vec<&'a str> {
    events
        .iter()
        .filter(|e| e[0] == kind)
        .map(|e| e[1].as_str())
        .collect()
}

/// Bytes of the files of checkpoint `name` on the prefix.
fn bytes_on_prefix(job: &Job, name: &str) -> u64 {
    walk(&job.prefix().join(name))
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

#[test]
fn a_failed_and_restarted_job_leaves_both_runs_in_a_v3_1_database() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let env = db_env(&server, "pw-insert");
    let mut fail = borrowed(&env);
    fail.push(("TEST_API_FAIL_FIRST", "1"));
    let first = job.run(2, &["200000", "3"], &fail);
    assert_eq!(first.status.code(), Some(3), "{}", text(&first));
    let mut debug = borrowed(&env);
    debug.push(("SCR_LOG_DB_DEBUG", "1"));
    let second = job.run_ok(2, &["200000", "2"], &debug);
    assert!(!second.contains("database log off"), "{second}");

    // the application's own words: which checkpoint the second run restarted from
    let restarted_from = second
        .lines()
        .find_map(|l| l.strip_prefix("test_api: restarted from "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no restart printed: {second}"));
    assert_eq!(restarted_from, "ckpt.3");

    let prefix = job.prefix().display().to_string();
    assert_eq!(
        rows(
            &server,
            "SELECT u.name, n.name FROM scr.jobs j JOIN scr.usernames u ON u.id = j.username_id \
             JOIN scr.jobnames n ON n.id = j.jobname_id"
        ),
        vec![vec![user(), prefix.clone()]]
    );
    let events = rows(
        &server,
        "SELECT t.name, IFNULL(e.dset_name, ''), IFNULL(e.note, '') FROM scr.events e \
         JOIN scr.types t ON t.id = e.type_id ORDER BY e.id",
    );
    let kinds: Vec<&str> = events.iter().map(|e| e[0].as_str()).collect();
    // two runs: the first ended without END (it failed), the second restarted
    let starts: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == "START").collect();
    assert_eq!(starts.len(), 2, "{events:?}");
    assert!(!kinds[..starts[1]].contains(&"END"), "{events:?}");
    assert_eq!(kinds.last(), Some(&"END"), "{events:?}");
    assert!(
        events[starts[0]][2].contains("ranks=2") && events[starts[0]][2].contains("jobid=4242"),
        "{events:?}"
    );
    // v3.1's names: RESTART_SUCCESS, CHECKPOINT_END, FLUSH_SUCCESS
    assert_eq!(named(&events, "RESTART_SUCCESS"), vec![restarted_from]);
    let checkpoints = ["ckpt.1", "ckpt.2", "ckpt.3", "ckpt.4", "ckpt.5"];
    assert_eq!(named(&events, "CHECKPOINT_END"), checkpoints);
    assert_eq!(named(&events, "FLUSH_SUCCESS"), checkpoints);

    // each flush moved what is on the prefix now, into the prefix
    let flushes = rows(
        &server,
        "SELECT x.dset_name, x.bytes, x.`to`, x.files FROM scr.transfers x \
         JOIN scr.types t ON t.id = x.type_id WHERE t.name = 'FLUSH_SYNC' ORDER BY x.id",
    );
    assert_eq!(flushes.len(), 5, "{flushes:?}");
    for f in &flushes {
        let on_prefix = bytes_on_prefix(&job, &f[0]);
        assert!(on_prefix >= 400000, "{f:?}");
        // FLOAT keeps 24 bits: compare to its precision
        let logged: f64 = f[1].parse().unwrap();
        assert!(
            (logged - on_prefix as f64).abs() <= on_prefix as f64 * 1e-6,
            "{f:?} vs {on_prefix}"
        );
        assert_eq!(f[2], prefix);
        // the files it moved: those on the prefix now
        let files = walk(&job.prefix().join(&f[0])).len();
        assert_eq!(f[3], files.to_string(), "{f:?}");
    }

    // SCR_LOG_DB_DEBUG printed each statement of the second run, values in place
    let second_run_events = kinds.len() - starts[1];
    let printed = second
        .lines()
        .filter(|l| l.starts_with("SCR: INSERT INTO `events`"))
        .count();
    assert_eq!(printed, second_run_events, "{second}");
    assert!(
        second.contains(&format!("'{prefix}'")),
        "the job name's lookup printed with its value: {second}"
    );
}

/// Runs a job of three checkpoints with the log sent to `server`; returns what it printed
/// and its text log.
/// A run that ends without SCR_Finalize (it fails) while the server is behind: its exit
/// waits, a bounded time, for the records it handed over, so the checkpoints it completed
/// are in the database as they are in the text log.
#[test]
fn a_run_that_exits_without_finalize_leaves_its_records_when_the_server_is_behind() {
    use std::io::BufRead;
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let env = db_env(&server, "pw-insert");
    let mut run = borrowed(&env);
    run.extend([("TEST_API_FAIL_FIRST", "1"), ("TEST_API_SLEEP_MS", "300")]);
    let mut child = job
        .command(None, 2, &["1000", "3"], &run)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = String::new();
    let mut wait_for = |what: &str| {
        for line in lines.by_ref() {
            let line = line.unwrap();
            said += &line;
            said += "\n";
            if line.contains(what) {
                return;
            }
        }
        panic!("never said `{what}`: {said}");
    };
    // connected and registered (its START written), then the server stops answering for
    // the rest of the run (each statement may wait 2 s: this is less)
    wait_for("no checkpoint, starting from the beginning");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while rows(&server, "SELECT COUNT(*) FROM scr.events")[0][0] == "0" {
        assert!(std::time::Instant::now() < until, "no START written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.pause();
    wait_for("failing on purpose");
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.resume();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{said}");
    let events = rows(
        &server,
        "SELECT t.name, IFNULL(e.dset_name, ''), IFNULL(e.note, '') FROM scr.events e \
         JOIN scr.types t ON t.id = e.type_id ORDER BY e.id",
    );
    assert_eq!(
        named(&events, "CHECKPOINT_END"),
        ["ckpt.1", "ckpt.2", "ckpt.3"],
        "{events:?}"
    );
}

fn run_with(server: &TestServer, password: &str) -> (String, String) {
    let job = Job::new();
    let env = db_env(server, password);
    let out = job.run_ok(2, &["1000", "3"], &borrowed(&env));
    let log = std::fs::read_to_string(job.prefix().join(".scr/log")).unwrap();
    (out, log)
}

/// The job printed the database log's warning once, and its text log kept every event (a
/// checkpoint is logged when it is complete in cache, before the flush that is due at once:
/// its cost is its own, and a run killed while it flushes has logged it, as v3.1 does).
fn assert_said_once_and_logged(out: &str, log: &str, why: &str) {
    assert_eq!(
        out.matches("database log off").count(),
        1,
        "one warning ({why}): {out}"
    );
    assert!(out.contains(why), "{out}");
    // the server's or the system's words, not the client library's type names
    for wrapper in ["MySqlError {", "IoError {", "DriverError {", "TlsError {"] {
        assert!(!out.contains(wrapper), "{out}");
    }
    let kinds: Vec<&str> = log.lines().filter_map(|l| l.split(' ').nth(1)).collect();
    assert_eq!(
        kinds,
        [
            "event=START",
            "event=CHECKPOINT",
            "event=FLUSH",
            "event=CHECKPOINT",
            "event=FLUSH",
            "event=CHECKPOINT",
            "event=FLUSH",
            "event=END"
        ],
        "{log}"
    );
}

#[test]
fn a_server_refusing_stopped_or_down_costs_the_job_one_message() {
    let mut server = TestServer::start();
    server.v3_1_database();

    let (out, log) = run_with(&server, "wrong");
    assert_said_once_and_logged(&out, &log, "Access denied");

    // stopped: it takes connections and never answers
    server.pause();
    let (out, log) = run_with(&server, "pw-insert");
    server.resume();
    assert_said_once_and_logged(&out, &log, "cannot connect");

    server.stop();
    let (out, log) = run_with(&server, "pw-insert");
    assert_said_once_and_logged(&out, &log, "cannot connect");
}

#[test]
fn scr_run_records_each_run_and_how_it_ended_beside_the_librarys_events() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let app = job.app.display().to_string();
    let mut env = borrowed(&db_env(&server, "pw-insert"))
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect::<Vec<_>>();
    env.extend([
        ("SCR_NODELIST", "n[1-2]".to_string()),
        ("SCR_RUNS", "2".to_string()),
        ("TEST_API_FAIL_FIRST", "1".to_string()),
    ]);
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "2", &app, "2000", "2"],
        &borrowed(&env),
    ));
    assert!(out.status.success(), "{t}");
    assert!(!t.contains("database log off"), "{t}");
    // (what scr-run gives its runs is no unknown parameter to them)
    assert!(!t.contains("no SCR parameter has this name"), "{t}");

    // scr-run and each run's rank 0 write through connections of their own, so the rows'
    // order is not the events' across them: their times are (to the second)
    let events = rows(
        &server,
        "SELECT t.name, IFNULL(e.note, ''), e.job_id, UNIX_TIMESTAMP(e.start) FROM scr.events e \
         JOIN scr.types t ON t.id = e.type_id ORDER BY e.start, e.id",
    );
    let kinds: Vec<&str> = events.iter().map(|e| e[0].as_str()).collect();
    let times = |kind: &str| -> Vec<f64> {
        events
            .iter()
            .filter(|e| e[0] == kind)
            .map(|e| e[3].parse().unwrap())
            .collect()
    };
    // one job: scr-run's records and both runs' in the same prefix
    assert!(events.iter().all(|e| e[2] == events[0][2]), "{events:?}");
    let started = times("SCR_RUN_STARTED");
    assert_eq!(started.len(), 1, "{kinds:?}");
    assert!(
        events
            .iter()
            .all(|e| e[3].parse::<f64>().unwrap() >= started[0]),
        "{events:?}"
    );
    let launches = times("RUN_START");
    let ends: Vec<&Vec<String>> = events.iter().filter(|e| e[0] == "RUN_END").collect();
    assert_eq!(launches.len(), 2, "{kinds:?}");
    assert_eq!(ends.len(), 2, "{kinds:?}");
    // the first run failed on purpose with exit code 3 (test_api), the second ended well
    assert!(ends[0][1].contains("exit_code=3"), "{ends:?}");
    assert!(ends[1][1].contains("exit_code=0"), "{ends:?}");
    // each run's library records come after its launch
    let starts = times("START");
    assert_eq!(starts.len(), 2, "{kinds:?}");
    assert!(
        launches[0] <= starts[0] && launches[1] <= starts[1] && starts[0] < launches[1] + 1.0,
        "{events:?}"
    );
    assert!(kinds.contains(&"SCR_RUN_FINISHED"), "{kinds:?}");
    // though: scr-run's launch is on the server before the run starts, so in the rows' own
    // order each launch comes before its run's START
    let launches_and_starts = rows(
        &server,
        "SELECT t.name FROM scr.events e JOIN scr.types t ON t.id = e.type_id \
         WHERE t.name IN ('RUN_START', 'START') ORDER BY e.id",
    )
    .concat();
    assert_eq!(
        launches_and_starts,
        ["RUN_START", "START", "RUN_START", "START"],
        "{events:?}"
    );
    // and each run's START names the launch it ran as, as scr-run's record of it does
    let launch_ids = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e[0] == kind)
            .map(|e| {
                e[1].split(' ')
                    .find_map(|f| f.strip_prefix("launch="))
                    .unwrap_or_else(|| panic!("{kind} names no launch: {e:?}"))
                    .to_string()
            })
            .collect()
    };
    let ids = launch_ids("RUN_START");
    assert_eq!(ids, launch_ids("START"), "{events:?}");
    assert_ne!(ids[0], ids[1], "{events:?}");
}

/// A site gives a user a database of their own records (`scr db grant`, as the
/// administrator, the password from an option file): a real job run as that user, with the
/// two settings the command names, logs there; the user reads their checkpoints back and
/// nothing of the log's own tables, where the administrator sees the job under their name.
#[test]
fn scr_db_grant_gives_a_users_jobs_a_database_of_their_own_records() {
    use std::os::unix::fs::OpenOptionsExt;
    let server = TestServer::start();
    server.v3_1_database();
    server.create_user("admin", "pw-admin");
    server.sql("GRANT ALL ON *.* TO 'admin'@'localhost' WITH GRANT OPTION");
    server.create_user("alice", "pw-alice");
    let admin_options = server.dir().join("admin.cnf");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&admin_options)
        .unwrap();
    std::io::Write::write_all(&mut file, b"[client]\nuser=admin\npassword=pw-admin\n").unwrap();
    let socket = server.socket().display().to_string();
    // `scr` as the administrator, the password from the option file alone
    let as_admin = |args: &[&str]| {
        std::process::Command::new(scr_command())
            .args(args)
            .arg("--option-file")
            .arg(&admin_options)
            .env("SCR_LOG_DB_HOST", &socket)
            .env("SCR_LOG_DB_NAME", "scr")
            .env_remove("SCR_LOG_DB_PASS")
            .output()
            .unwrap()
    };
    let granted = as_admin(&["db", "grant", "alice"]);
    assert!(granted.status.success(), "{}", text(&granted));
    assert!(
        text(&granted).contains("SCR_LOG_DB_NAME=scr_alice SCR_LOG_DB_USER=alice"),
        "{}",
        text(&granted)
    );

    let job = Job::new();
    let env = [
        ("SCR_LOG_ENABLE", "1"),
        ("SCR_LOG_SYSLOG_ENABLE", "0"),
        ("SCR_LOG_DB_ENABLE", "1"),
        ("SCR_LOG_DB_HOST", socket.as_str()),
        ("SCR_LOG_DB_NAME", "scr_alice"),
        ("SCR_LOG_DB_USER", "alice"),
        ("SCR_LOG_DB_PASS", "pw-alice"),
        ("SCR_USER_NAME", "alice"),
        ("SCR_FLUSH", "1"),
    ];
    let out = job.run_ok(2, &["1000", "2"], &env);
    assert!(!out.contains("database log off"), "{out}");

    let checkpoints = server
        .try_sql_as(
            "alice",
            "pw-alice",
            "SELECT e.dset_name FROM scr_alice.events e JOIN scr_alice.types t \
             ON t.id = e.type_id WHERE t.name = 'CHECKPOINT_END' ORDER BY e.id",
        )
        .unwrap();
    assert_eq!(checkpoints, "ckpt.1\nckpt.2\n");
    let refused = server
        .try_sql_as("alice", "pw-alice", "SELECT COUNT(*) FROM scr.events")
        .unwrap_err();
    assert!(refused.contains("denied"), "{refused}");
    // the administrator's site report takes in alice's database, her job hers
    let report = as_admin(&["report", "--db", "--json"]);
    assert!(report.status.success(), "{}", text(&report));
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let jobs: Vec<(&str, &str, &str)> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["database"].as_str().unwrap(),
                j["user"].as_str().unwrap(),
                j["job_name"].as_str().unwrap(),
            )
        })
        .collect();
    let prefix = job.prefix().display().to_string();
    assert_eq!(jobs, [("scr_alice", "alice", prefix.as_str())], "{json:#}");
}

/// `scr halt` and a `scr postrun` run by hand log to the database too, each under the job
/// of the prefix it acts on, beside the library's records of that job: the drain's lines
/// and whether it drained, the halt's conditions.
#[test]
fn scr_halt_and_a_hand_run_postrun_log_under_the_job_of_their_prefix() {
    let server = TestServer::start();
    server.v3_1_database();
    let job = Job::new();
    let env = db_env(&server, "pw-insert");
    let mut cache_only = borrowed(&env);
    cache_only.extend([("SCR_FLUSH", "0"), ("TEST_API_NO_FINALIZE", "1")]);
    run_ok_on(&job, "n1,n2", 2, &["1000", "2"], &cache_only);

    let scr = |args: &[&str]| {
        let mut cmd = scr_for(&job);
        cmd.args(args)
            .current_dir(job.prefix())
            .env("SCR_PREFIX", job.prefix())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        text(&out)
    };
    let drained = scr(&["postrun"]);
    assert!(
        drained.contains("(ckpt.2) drained and current"),
        "{drained}"
    );
    scr(&["halt", "--checkpoints", "3"]);
    // the same prefix written otherwise (relative, a trailing `/`, through a link) is the
    // same job
    let link = job.dir.path().join("prefix-link");
    std::os::unix::fs::symlink(job.prefix(), &link).unwrap();
    let name = job
        .prefix()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mut other_ways = scr_for(&job);
    other_ways
        .args(["halt", "--checkpoints", "4"])
        .arg(format!("../{name}/"))
        .current_dir(job.prefix())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let out = other_ways.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut through_link = scr_for(&job);
    through_link
        .args(["halt", "--checkpoints", "3"])
        .arg(&link)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let out = through_link.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let jobs = rows(&server, "SELECT id FROM scr.jobs");
    assert_eq!(jobs.len(), 1, "one job, the prefix's: {jobs:?}");
    let events = rows(
        &server,
        "SELECT t.name, REGEXP_REPLACE(IFNULL(e.note, ''), ' ?utc_offset=[^ ]*$', '') FROM scr.events e \
         JOIN scr.types t ON t.id = e.type_id \
         WHERE t.name IN ('START', 'SCR_POSTRUN', 'SCR_HALT') ORDER BY e.id",
    );
    let kinds: Vec<&str> = events.iter().map(|e| e[0].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"START"), "{events:?}");
    let postrun: Vec<&str> = events
        .iter()
        .filter(|e| e[0] == "SCR_POSTRUN")
        .map(|e| e[1].as_str())
        .collect();
    assert!(
        postrun
            .iter()
            .any(|n| n.contains("message=") && n.contains("(ckpt.2) drained and current")),
        "{events:?}"
    );
    assert_eq!(postrun.last(), Some(&"drained=true"), "{events:?}");
    assert_eq!(
        events.last().map(|e| (e[0].as_str(), e[1].as_str())),
        Some(("SCR_HALT", "checkpoints=3")),
        "{events:?}"
    );
}

/// Root (an operator, an epilog) running `scr halt` on a user's prefix acts as its owner
/// and logs the change in the owner's name, under the owner's job of that prefix, whatever
/// root's environment says its user is.
#[test]
fn root_halting_a_users_prefix_logs_in_the_owners_name() {
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "acting as a prefix's owner is root's: run the tests as root (CI does)"
    );
    let server = TestServer::start();
    server.v3_1_database();
    // the owner reaches the server's socket as any local user would
    std::fs::set_permissions(server.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let job = Job::new();
    std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = job.prefix();
    std::os::unix::fs::chown(&prefix, Some(65534), Some(65534)).unwrap();

    let env = db_env(&server, "pw-insert");
    let out = scr_for(&job)
        .args(["halt", "--checkpoints", "3"])
        .env("SCR_PREFIX", &prefix)
        .env("USER", "root")
        .env_remove("SCR_USER_NAME")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("database log off"), "{}", text(&out));
    let logged = rows(
        &server,
        "SELECT u.name, n.name, SUBSTRING_INDEX(IFNULL(e.note, ''), ' utc_offset=', 1) FROM scr.events e \
         JOIN scr.types t ON t.id = e.type_id JOIN scr.jobs j ON j.id = e.job_id \
         JOIN scr.usernames u ON u.id = j.username_id JOIN scr.jobnames n ON n.id = j.jobname_id \
         WHERE t.name = 'SCR_HALT'",
    );
    let owner = nix_name(65534);
    assert_eq!(
        logged,
        [vec![
            owner,
            prefix.display().to_string(),
            "checkpoints=3".to_string()
        ]]
    );
    assert_eq!(
        rows(
            &server,
            "SELECT name FROM scr.usernames WHERE name = 'root'"
        )
        .len(),
        0
    );
}

/// The account name of user id `uid`, from the password database.
fn nix_name(uid: u32) -> String {
    let out = std::process::Command::new("id")
        .args(["-nu", &uid.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "id -nu {uid}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
