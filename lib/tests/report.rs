//! `scr report` of a real job, looked at in a real browser: a first run checkpoints (one
//! checkpoint fails) and dies, a second restarts from its last checkpoint, checkpoints
//! and flushes; the page `scr report` writes is rendered by headless Chromium, and the DOM
//! it rendered must hold the charts and tables with what the application itself said:
//! the checkpoints it completed and when, the one that failed, the run that died.
//!
//! SCR_REPORT_SCREENSHOT=FILE keeps a copy of Chromium's screenshot of the page.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Headless Chromium with a profile of its own in `profile`, nothing fetched from the
/// network, given `args` and the page.
fn chromium(profile: &Path, args: &[&str], page: &Path) -> std::process::Output {
    std::fs::create_dir_all(profile).unwrap();
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()));
    let out = output_within(&mut cmd, Duration::from_secs(120));
    assert!(out.status.success(), "chromium: {}", text(&out));
    out
}

/// When the application said checkpoint `t` returned, and whether it said it failed.
fn completed(out: &str) -> Vec<(u64, f64)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("test_api: checkpoint ")?;
            let (t, at) = rest.split_once(" ended at ")?;
            Some((t.parse().ok()?, at.parse().ok()?))
        })
        .collect()
}

/// The text of every `<text>` element of the SVG inside `<figure id="chart-NAME">`.
fn chart_texts(dom: &str, name: &str) -> Vec<String> {
    let start = dom
        .find(&format!("<figure id=\"chart-{name}\">"))
        .unwrap_or_else(|| panic!("no {name} chart in the rendered page"));
    let figure = &dom[start..start + dom[start..].find("</figure>").unwrap()];
    assert!(figure.contains("<svg"), "{name}: no SVG");
    figure
        .split("<text")
        .skip(1)
        .map(|t| {
            let body = &t[t.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim().to_string()
        })
        .collect()
}

/// The opening tag of the table row with `attr` (e.g. `data-name="ckpt.1"`) in table
/// `table`, and the row up to its end.
fn row<'a>(dom: &'a str, table: &str, attr: &str) -> Option<&'a str> {
    let t = dom.find(&format!("<table id=\"{table}\""))?;
    let body = &dom[t..t + dom[t..].find("</table>")?];
    let at = body.find(attr)?;
    let from = body[..at].rfind("<tr")?;
    Some(&body[from..from + body[from..].find("</tr>")?])
}

/// The `datetime` of a row's `<time>`, in seconds since the epoch.
fn row_time(row: &str) -> f64 {
    let at = row.find("datetime=\"").unwrap() + "datetime=\"".len();
    let value = &row[at..at + row[at..].find('"').unwrap()];
    chrono::DateTime::parse_from_rfc3339(value)
        .unwrap()
        .timestamp_millis() as f64
        / 1000.0
}

#[test]
fn a_real_job_s_report_renders_in_chromium_with_its_checkpoints_and_its_failure() {
    let job = Job::new();
    let env = [
        ("SCR_LOG_ENABLE", "1"),
        ("SCR_LOG_SYSLOG_ENABLE", "0"),
        ("SCR_FLUSH", "2"),
        ("TEST_API_TIMES", "1"),
        // room between checkpoints, so the timeline has space for their names
        ("TEST_API_SLEEP_MS", "500"),
    ];
    // run 1: checkpoints 1 to 5, number 3 marked invalid, then dies without SCR_Finalize
    let mut first_env = env.to_vec();
    first_env.extend([("TEST_API_INVALID", "3"), ("TEST_API_FAIL_FIRST", "1")]);
    let first = job.run(2, &["200000", "5"], &first_env);
    let said1 = text(&first);
    assert_eq!(first.status.code(), Some(3), "{said1}");
    assert!(said1.contains("test_api: checkpoint 3 failed"), "{said1}");
    // run 2: restarts from checkpoint 5 and writes 6 to 8; SCR_Finalize flushes the last
    let said2 = job.run_ok(2, &["200000", "3"], &env);
    assert!(said2.contains("restarted from ckpt.5"), "{said2}");
    let done: Vec<(u64, f64)> = completed(&said1)
        .into_iter()
        .chain(completed(&said2))
        .collect();
    let ids: Vec<u64> = done.iter().map(|d| d.0).collect();
    assert_eq!(ids, [1, 2, 4, 5, 6, 7, 8], "{said1}{said2}");

    let page = job.dir.path().join("report.html");
    let out = Command::new(scr_command())
        .arg("report")
        .arg(job.prefix())
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));

    let profile = job.dir.path().join("chromium-profile");
    let dom = chromium(&profile, &["--dump-dom"], &page);
    let dom = String::from_utf8(dom.stdout).unwrap();
    let screenshot = job.dir.path().join("report.png");
    let shot = format!("--screenshot={}", screenshot.display());
    chromium(&profile, &[&shot, "--window-size=1280,2000"], &page);

    // the timeline names every checkpoint the application completed, the failed one and
    // the run that died; the cost chart holds as many points, one per checkpoint
    let timeline = chart_texts(&dom, "timeline");
    for (t, _) in &done {
        let name = format!("ckpt.{t}");
        assert!(timeline.contains(&name), "{name} not on {timeline:?}");
    }
    assert!(!timeline.contains(&"ckpt.3".to_string()), "{timeline:?}");
    assert!(
        timeline.contains(&"ckpt.3 failed".to_string()),
        "{timeline:?}"
    );
    assert!(timeline.contains(&"died".to_string()), "{timeline:?}");
    assert!(
        timeline.iter().any(|t| t.starts_with("run 1")),
        "{timeline:?}"
    );
    assert!(
        timeline.iter().any(|t| t.starts_with("run 2")),
        "{timeline:?}"
    );
    let cost = chart_texts(&dom, "checkpoint-cost");
    assert!(
        cost.contains(&format!("checkpoint cost ({})", done.len())),
        "{cost:?}"
    );
    chart_texts(&dom, "flush-bandwidth");
    chart_texts(&dom, "time-lost");

    // each checkpoint's row says when it completed: within the second before the
    // application saw SCR_Complete_checkpoint return (the log keeps milliseconds)
    for (t, ended) in &done {
        let r = row(&dom, "checkpoint-table", &format!("data-name=\"ckpt.{t}\""))
            .unwrap_or_else(|| panic!("no row for ckpt.{t}"));
        let logged = row_time(r);
        assert!(
            logged <= ended + 0.001 && logged > ended - 1.0,
            "ckpt.{t} logged at {logged}, returned at {ended}"
        );
    }
    assert!(row(&dom, "checkpoint-table", "data-name=\"ckpt.3\"").is_none());
    // the failures: checkpoint 3, and run 1, which died after checkpoint 5 returned
    let failed = row(&dom, "failure-table", "data-kind=\"checkpoint-failed\"").unwrap();
    assert!(
        failed.contains("ckpt.3") && failed.contains("data-run=\"1\""),
        "{failed}"
    );
    let died = row(&dom, "failure-table", "data-kind=\"run-died\"").unwrap();
    assert!(died.contains("data-run=\"1\""), "{died}");
    let (_, last_of_run1) = done.iter().find(|d| d.0 == 5).unwrap();
    assert!(
        (row_time(died) - last_of_run1).abs() < 1.0,
        "run 1 died after checkpoint 5: {died}"
    );
    let run1 = row(&dom, "run-table", "data-run=\"1\"").unwrap();
    assert!(run1.contains("data-ending=\"died\""), "{run1}");
    let run2 = row(&dom, "run-table", "data-run=\"2\"").unwrap();
    assert!(
        run2.contains("data-ending=\"ended\"") && run2.contains("ckpt.5"),
        "{run2}"
    );
    // the last checkpoint was flushed by SCR_Finalize: on the prefix, and current
    let last = row(&dom, "dataset-table", ">ckpt.8<").unwrap();
    assert!(
        last.contains("current") && last.contains("prefix"),
        "{last}"
    );

    // the screenshot: a PNG of the window's size
    let png = std::fs::read(&screenshot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (1280, 2000));
    if let Some(keep) = std::env::var_os("SCR_REPORT_SCREENSHOT") {
        std::fs::copy(&screenshot, &keep).unwrap();
        std::fs::copy(&page, Path::new(&keep).with_extension("html")).unwrap();
    }
}

/// `scr report --db` of a site's database (v3.1's tables, as a site set them up): alice's
/// job under scr-run (node n3 excluded, its first run dies, scr-run relaunches it) and
/// bob's job that ends at once, both of the same program. The site's page, rendered in
/// Chromium, and its JSON show one application with both users, the runs and checkpoints
/// the applications said they made, alice's run that died in this week, n3 found down;
/// --user bob shows bob's job alone.
#[test]
fn the_site_report_from_the_database_shows_an_application_across_users_and_nodes() {
    use common::scr_run::*;
    let server = scr_db::test_server::TestServer::start();
    server.v3_1_database();
    let socket = server.socket().display().to_string();
    let logging = |user: &'static str| {
        vec![
            ("SCR_LOG_ENABLE", "1".to_string()),
            ("SCR_LOG_SYSLOG_ENABLE", "0".into()),
            ("SCR_LOG_DB_ENABLE", "1".into()),
            ("SCR_LOG_DB_HOST", socket.clone()),
            ("SCR_LOG_DB_NAME", "scr".into()),
            ("SCR_LOG_DB_USER", "scr_insert".into()),
            ("SCR_LOG_DB_PASS", "pw-insert".into()),
            ("SCR_USER_NAME", user.into()),
            ("SCR_FLUSH", "1".into()),
            ("TEST_API_TIMES", "1".into()),
            // runs that last seconds: the database keeps times to the second
            ("TEST_API_SLEEP_MS", "1200".into()),
        ]
    };
    let borrow = |env: &[(&'static str, String)]| -> Vec<(&'static str, String)> { env.to_vec() };

    let alices = Job::new();
    let mut env = borrow(&logging("alice"));
    env.extend([
        ("SCR_NODELIST", "n[1-3]".to_string()),
        ("SCR_EXCLUDE_NODES", "n3".into()),
        ("SCR_MIN_NODES", "2".into()),
        ("SCR_RUNS", "2".into()),
        ("TEST_API_FAIL_FIRST", "1".into()),
    ]);
    let app = alices.app.display().to_string();
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, alice_said) = output(scr_run_in(
        &alices,
        &hydra_on("n1,n2", 2, &[&app, "2000", "2"]),
        &env_ref,
    ));
    assert!(out.status.success(), "{alice_said}");
    let alice_checkpoints = completed_count(&alice_said);

    let bobs = Job::new();
    let env = logging("bob");
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let bob_said = bobs.run_ok(2, &["2000", "3"], &env_ref);
    let bob_checkpoints = completed_count(&bob_said);
    assert_eq!(bob_checkpoints, 3, "{bob_said}");
    let program = alices
        .app
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(
        Some(program.as_str()),
        bobs.app.file_name().and_then(|n| n.to_str())
    );

    let report = |args: &[&str]| {
        let out = Command::new(scr_command())
            .args(["report", "--db"])
            .args(args)
            .current_dir(alices.dir.path())
            .env("SCR_LOG_DB_HOST", &socket)
            .env("SCR_LOG_DB_NAME", "scr")
            .env("SCR_LOG_DB_USER", "scr")
            .env("SCR_LOG_DB_PASS", "pw-all")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        out
    };
    let json: serde_json::Value =
        serde_json::from_slice(&report(&["--json"]).stdout).expect("JSON on stdout");
    let apps = json["applications"].as_array().unwrap();
    assert_eq!(apps.len(), 1, "{json:#}");
    let a = &apps[0];
    assert_eq!(a["application"], program.as_str(), "{json:#}");
    assert_eq!(a["users"], serde_json::json!(["alice", "bob"]), "{json:#}");
    assert_eq!(a["jobs"], 2, "{json:#}");
    // alice's two runs (the first died) and bob's one
    assert_eq!(a["runs"], 3, "{json:#}");
    assert_eq!(a["runs_died"], 1, "{json:#}");
    assert_eq!(
        a["checkpoints"].as_u64(),
        Some((alice_checkpoints + bob_checkpoints) as u64),
        "{alice_said}{bob_said}{json:#}"
    );
    assert!(a["checkpoint_seconds"].as_f64().unwrap() > 0.0, "{json:#}");
    assert!(a["flush_mib_per_s"].as_f64().unwrap() > 0.0, "{json:#}");
    assert!(a["young_seconds"].as_f64().unwrap() > 0.0, "{json:#}");
    // 1.2 s between checkpoints, measured from records to the second: a second at least,
    // less a checkpoint's own cost (the start of each is cut to its second)
    assert!(
        a["interval_in_use_seconds"].as_f64().unwrap() > 0.0,
        "{json:#}"
    );
    // the run that died, in this ISO week
    let week = chrono::Local::now().format("%G-W%V").to_string();
    assert_eq!(
        json["weeks"],
        serde_json::json!([{"week": week, "runs_died": 1, "checkpoints_failed": 0, "fetches_failed": 0}]),
        "{json:#}"
    );
    // n3, found down before the first launch (and kept out of the second: once down,
    // always down, said once)
    let nodes = json["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{json:#}");
    assert_eq!(nodes[0]["node"], "n3");
    assert_eq!(nodes[0]["times_down"], 1, "{alice_said}{json:#}");
    // whose jobs said so
    assert_eq!(nodes[0]["users"], serde_json::json!(["alice"]), "{json:#}");
    assert!(
        nodes[0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("SCR_EXCLUDE_NODES"),
        "{json:#}"
    );
    let jobs = json["jobs"].as_array().unwrap();
    let prefixes: Vec<&str> = jobs
        .iter()
        .map(|j| j["job_name"].as_str().unwrap())
        .collect();
    let alices_prefix = alices.prefix().display().to_string();
    let bobs_prefix = bobs.prefix().display().to_string();
    assert_eq!(prefixes, [alices_prefix.as_str(), bobs_prefix.as_str()]);

    // one user's jobs alone
    let bob_only: serde_json::Value =
        serde_json::from_slice(&report(&["--json", "--user", "bob"]).stdout).unwrap();
    assert_eq!(
        bob_only["jobs"].as_array().unwrap().len(),
        1,
        "{bob_only:#}"
    );
    assert_eq!(bob_only["jobs"][0]["user"], "bob");
    assert_eq!(bob_only["jobs"][0]["runs_died"], 0);
    assert_eq!(bob_only["weeks"], serde_json::json!([]));
    assert!(!bob_only.to_string().contains("-0.0"), "{bob_only}");

    // one application: by its program's name, or a part of a job name
    let by_app: serde_json::Value =
        serde_json::from_slice(&report(&["--json", "--app", &program]).stdout).unwrap();
    assert_eq!(by_app["jobs"].as_array().unwrap().len(), 2, "{by_app:#}");
    let none: serde_json::Value =
        serde_json::from_slice(&report(&["--json", "--app", "no-such-program"]).stdout).unwrap();
    assert_eq!(none["jobs"], serde_json::json!([]), "{none:#}");

    // the page, in a real browser
    let page = alices.dir.path().join("site.html");
    report(&["-o", page.to_str().unwrap()]);
    let profile = alices.dir.path().join("chromium-profile");
    let dom = chromium(&profile, &["--dump-dom"], &page);
    let dom = String::from_utf8(dom.stdout).unwrap();
    let app_row =
        row(&dom, "apps", &format!("data-app=\"{program}\"")).expect("the application's row");
    assert!(app_row.contains("alice, bob"), "{app_row}");
    let node_row = row(&dom, "nodes", "data-node=\"n3\"").expect("n3's row");
    assert!(node_row.contains(">1<"), "{node_row}");
    let week_row = row(&dom, "weeks", &format!("data-week=\"{week}\"")).expect("this week's row");
    assert!(week_row.contains(">1<"), "{week_row}");
    let bars = chart_texts(&dom, "weeks");
    assert!(bars.contains(&week), "{bars:?}");
    assert!(
        dom.contains(&escape_html(&alices_prefix)),
        "alice's prefix on the page"
    );
    if let Some(keep) = std::env::var_os("SCR_SITE_REPORT_SCREENSHOT") {
        let shot = format!("--screenshot={}", Path::new(&keep).display());
        chromium(&profile, &[&shot, "--window-size=1280,1600"], &page);
        std::fs::copy(&page, Path::new(&keep).with_extension("html")).unwrap();
    }

    // carol's program dies before SCR_Init: scr-run's records alone tell of that run
    let carols = Job::new();
    let mut env = borrow(&logging("carol"));
    env.extend([("SCR_NODELIST", "n1".to_string()), ("SCR_RUNS", "1".into())]);
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, carol_said) = output(scr_run_in(
        &carols,
        &hydra_on("n1", 1, &["false"]),
        &env_ref,
    ));
    assert!(!out.status.success(), "{carol_said}");
    let carol_only: serde_json::Value =
        serde_json::from_slice(&report(&["--json", "--user", "carol"]).stdout).unwrap();
    let carol_jobs = carol_only["jobs"].as_array().unwrap();
    assert_eq!(carol_jobs.len(), 1, "{carol_said}{carol_only:#}");
    assert_eq!(carol_jobs[0]["runs"], 1, "{carol_only:#}");
    assert_eq!(carol_jobs[0]["runs_died"], 1, "{carol_only:#}");

    // dave sets a halt condition on a prefix no job has run in: no job to show yet
    let daves = Job::new();
    let mut halt = Command::new(scr_command());
    halt.args(["halt", "--checkpoints", "1"])
        .arg(daves.prefix());
    for (k, v) in logging("dave") {
        halt.env(k, v);
    }
    let said = halt.output().unwrap();
    assert!(said.status.success(), "{}", text(&said));
    let logged = server.sql(
        "SELECT COUNT(*) FROM scr.events e JOIN scr.jobs j ON j.id = e.job_id \
         JOIN scr.usernames u ON u.id = j.username_id WHERE u.name = 'dave'",
    );
    assert_eq!(logged.trim(), "1", "scr halt's record");
    let dave_only: serde_json::Value =
        serde_json::from_slice(&report(&["--json", "--user", "dave"]).stdout).unwrap();
    assert_eq!(dave_only["jobs"], serde_json::json!([]), "{dave_only:#}");
}

/// How many checkpoints the application said returned complete.
fn completed_count(out: &str) -> usize {
    completed(out).len()
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
