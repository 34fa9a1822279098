//! What the database log's tests share: a job's settings for a test server's v3.1
//! database, its rows, and SCR's commands read as JSON.
#![allow(dead_code)]

use super::common::*;
use scr_db::test_server::TestServer;

/// The parameters that send a job's log to `server`'s v3.1 database, as its insert-only
/// account with `password`.
pub fn db_env(server: &TestServer, password: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SCR_LOG_ENABLE", "1".into()),
        ("SCR_LOG_SYSLOG_ENABLE", "0".into()),
        ("SCR_LOG_DB_ENABLE", "1".into()),
        ("SCR_LOG_DB_HOST", server.socket().display().to_string()),
        ("SCR_LOG_DB_NAME", "scr".into()),
        ("SCR_LOG_DB_USER", "scr_insert".into()),
        ("SCR_LOG_DB_PASS", password.into()),
        ("SCR_FLUSH", "1".into()),
    ]
}

pub fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Rows of a query, each a vector of its columns.
pub fn rows(server: &TestServer, sql: &str) -> Vec<Vec<String>> {
    server
        .sql(sql)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// What `scr ARGS` printed as JSON, run in `job`'s directory, asserting it succeeded; with
/// `server`, reading its log as the administrator's account (`scr report --db`).
pub fn scr_json(job: &Job, server: Option<&TestServer>, args: &[&str]) -> serde_json::Value {
    let mut cmd = std::process::Command::new(scr_command());
    cmd.args(args).current_dir(job.dir.path());
    if let Some(server) = server {
        cmd.env("SCR_LOG_DB_HOST", server.socket())
            .env("SCR_LOG_DB_NAME", "scr")
            .env("SCR_LOG_DB_USER", "scr")
            .env("SCR_LOG_DB_PASS", "pw-all");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// Waits, at most `limit`, until `done` holds; `what` says, in the failure, what did not.
pub fn wait_until(
    what: impl Fn() -> String,
    limit: std::time::Duration,
    mut done: impl FnMut() -> bool,
) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{}", what());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
