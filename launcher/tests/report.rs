//! `scr report` on a crafted prefix: a log of four runs over two jobs (two runs that die,
//! a halt, failed checkpoints and a failed fetch), an index, a flush file and a user's
//! `scr.current` link. Every expected figure is worked out here by hand from the lines
//! written, not from the code under test. (A real job's report, rendered in Chromium, is
//! tested in lib/tests/report.rs.)

mod common;

use common::*;
use scr::HashView;
use std::path::Path;

/// The log: (time after 10:00:00 on 2026-11-23, in seconds; the rest of the line).
const LOG: &[(u32, &str)] = &[
    // run 1, job 100: dies after a failed checkpoint at 10:20:00
    (0, "event=START ranks=4 nodes=2 jobid=100"),
    (
        60,
        "event=CHECKPOINT name=ckpt.1 dset=1 bytes=1048576 secs=2 mb_per_s=0.5 jobid=100",
    ),
    (
        70,
        "event=FLUSH name=ckpt.1 dset=1 bytes=4194304 secs=4 mb_per_s=1.0 jobid=100",
    ),
    (
        360,
        "event=CHECKPOINT_FAILED name=ckpt.2 dset=2 failed_ranks=1 secs=3 jobid=100",
    ),
    (
        660,
        "event=CHECKPOINT name=ckpt.3 dset=3 bytes=1048576 secs=4 jobid=100",
    ),
    (
        1200,
        "event=CHECKPOINT_FAILED name=ckpt.4 dset=4 failed_ranks=4 secs=5 jobid=100",
    ),
    // run 2, same job: fetches ckpt.3 and restarts from it, dies at 10:40:00
    (1320, "event=START ranks=4 nodes=2 jobid=100"),
    (
        1470,
        "event=FETCH name=ckpt.3 dset=3 bytes=1048576 secs=25 jobid=100",
    ),
    (1470, "event=RESTART name=ckpt.3 dset=3 jobid=100"),
    (
        2070,
        "event=CHECKPOINT name=ckpt.5 dset=5 bytes=1048576 secs=6 jobid=100",
    ),
    (
        2400,
        "event=CHECKPOINT name=ckpt.6 dset=6 bytes=1048576 secs=2 jobid=100",
    ),
    // run 3, a new job at 12:00:00: ckpt.6 cannot be fetched, ckpt.5 is; halted
    (7200, "event=START ranks=4 nodes=2 jobid=200"),
    (7210, "event=FETCH_FAILED name=ckpt.6 dset=6 jobid=200"),
    (7240, "event=RESTART name=ckpt.5 dset=5 jobid=200"),
    (
        7840,
        "event=CHECKPOINT name=<i>7</i> dset=7 bytes=1048576 secs=4 jobid=200",
    ),
    (7841, "event=HALT exits=true jobid=200"),
    (
        7850,
        "event=FLUSH name=<i>7</i> dset=7 bytes=10485760 secs=10 jobid=200",
    ),
    // run 4, same job: restarts from the halted run's checkpoint and ends
    (7920, "event=START ranks=4 nodes=2 jobid=200"),
    (7920, "event=RESTART name=<i>7</i> dset=7 jobid=200"),
    (
        8400,
        "event=CHECKPOINT name=ckpt.8 dset=8 bytes=1048576 secs=2 jobid=200",
    ),
    (8460, "event=END jobid=200"),
];

/// A prefix holding the log, an index (ckpt.1 and `<i>7</i>` flushed, the latter current),
/// a flush file (ckpt.8 in cache only) and the user's `scr.current` naming ckpt.1.
fn crafted_prefix() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path();
    let hidden = scr::layout::prefix_hidden_dir(prefix);
    std::fs::create_dir_all(&hidden).unwrap();
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-23T10:00:00+00:00").unwrap();
    let lines: Vec<String> = LOG
        .iter()
        .map(|(t, rest)| {
            let at = start + chrono::Duration::seconds(i64::from(*t));
            format!(
                "{} {rest}",
                at.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
            )
        })
        .collect();
    std::fs::write(hidden.join("log"), lines.join("\n") + "\n").unwrap();

    let origin = scr::dataset::Origin::default();
    let ckpt = |id: u64, name: &str| {
        scr::dataset::Dataset::create(id, name, true, false, &origin, Some(id))
    };
    let mut index = scr::index::IndexFile::default();
    for (id, name) in [(1, "ckpt.1"), (7, "<i>7</i>")] {
        index.add(&ckpt(id, name), name, true);
        index.set_flushed(id, name, chrono::Local::now());
    }
    index.set_current("<i>7</i>").unwrap();
    index.write(&scr::layout::index_file(prefix)).unwrap();
    let mut flush = scr::flush::FlushFile::default();
    use scr::flush::Location::{Cache, Pfs};
    for (id, name, places) in [
        (1, "ckpt.1", &[Pfs][..]),
        (7, "<i>7</i>", &[Cache, Pfs][..]),
        (8, "ckpt.8", &[Cache][..]),
    ] {
        flush.describe_dataset(id, &ckpt(id, name));
        for p in places {
            flush.set_location(id, *p);
        }
    }
    flush.write(&scr::layout::flush_file(prefix)).unwrap();
    std::os::unix::fs::symlink("ckpt.1", scr::layout::current_link(prefix)).unwrap();
    dir
}

fn json_of(prefix: &Path) -> serde_json::Value {
    let out = scr(&["report", prefix.to_str().unwrap(), "--json"], &[]);
    serde_json::from_str(&stdout_ok(&out)).unwrap()
}

fn close(a: &serde_json::Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-6)
}

#[test]
fn the_figures_of_a_crafted_log_are_the_ones_worked_out_by_hand() {
    let dir = crafted_prefix();
    let v = json_of(dir.path());
    let endings: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ending"].as_str().unwrap())
        .collect();
    assert_eq!(endings, ["died", "died", "halted", "ended"]);
    assert_eq!(v["runs"][1]["restarted_from"], "ckpt.3");

    // failures in the order they happened, and what each cost
    let f = v["failures"].as_array().unwrap();
    let kinds: Vec<(&str, u64)> = f
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["run"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("checkpoint-failed", 1),
            ("checkpoint-failed", 1),
            ("run-died", 1),
            ("run-died", 2),
            ("fetch-failed", 3)
        ]
    );
    // ckpt.2 failed before ckpt.3, which run 2 restarted from: its 3 s are lost
    assert!(close(&f[0]["time_lost_seconds"], 3.0), "{}", f[0]);
    // ckpt.4 failed after it: run 1's lost work holds its time
    assert!(close(&f[1]["time_lost_seconds"], 0.0), "{}", f[1]);
    assert!(f[1]["note"].as_str().unwrap().contains("lost work"));
    // run 1: from ckpt.3 (10:11:00) to its last event (10:20:00), then until run 2's
    // RESTART (10:24:30, after its fetch), in the same job
    assert!(close(&f[2]["lost_work_seconds"], 540.0), "{}", f[2]);
    assert!(close(&f[2]["restart_seconds"], 270.0), "{}", f[2]);
    // run 2: from ckpt.5 (10:34:30), which run 3 restarted from, to 10:40:00; run 3 is
    // another job, so its restart counts from its START (12:00:00) to RESTART (12:00:40)
    assert!(close(&f[3]["lost_work_seconds"], 330.0), "{}", f[3]);
    assert!(close(&f[3]["restart_seconds"], 40.0), "{}", f[3]);
    assert!(close(&f[4]["time_lost_seconds"], 0.0), "{}", f[4]);
    assert!(close(&v["time_lost_seconds"], 3.0 + 810.0 + 370.0));

    // C: (2 + 4 + 6 + 2 + 4 + 2) / 6; M: (1200 + 1080 + 650 + 540) s of runs / 2 that died
    let (c, m) = (20.0 / 6.0, 3470.0 / 2.0);
    let i = &v["interval"];
    assert!(close(&i["mean_checkpoint_seconds"], c), "{i}");
    assert!(close(&i["mtbf_seconds"], m), "{i}");
    assert_eq!(i["mtbf_lower_bound"], false);
    assert!(close(&i["young_seconds"], (2.0 * c * m).sqrt()), "{i}");
    let r = c / (2.0 * m);
    let daly = (2.0 * c * m).sqrt() * (1.0 + r.sqrt() / 3.0 + r / 9.0) - c;
    assert!(close(&i["daly_seconds"], daly), "{i}");
    // in use: ckpt.1 (10:01:00) to ckpt.3's start (10:11:00 - 4 s), ckpt.5 (10:34:30) to
    // ckpt.6's start (10:40:00 - 2 s)
    assert!(close(&i["in_use_seconds"], (596.0 + 328.0) / 2.0), "{i}");
    assert_eq!(i["gaps_measured"], 2);
    assert!(close(&v["wall_seconds"], 8460.0));

    // flushes: the logged bandwidth, else bytes over seconds (10 MiB in 10 s)
    let bw: Vec<f64> = v["flushes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["mib_per_s"].as_f64().unwrap())
        .collect();
    assert_eq!(bw, [1.0, 1.0]);

    // where the datasets are; the user's scr.current link wins over CURRENT
    let places: Vec<(u64, &str, bool)> = v["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["dset"].as_u64().unwrap(),
                d["location"].as_str().unwrap(),
                d["current"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            (8, "cache only", false),
            (7, "cache and prefix", false),
            (1, "prefix", true)
        ]
    );
    assert_eq!(v["current"], "ckpt.1");
}

#[test]
fn the_report_and_ckpt_interval_agree_on_the_optimum() {
    let dir = crafted_prefix();
    let p = dir.path().to_str().unwrap();
    let report = json_of(dir.path());
    let interval: serde_json::Value =
        serde_json::from_str(&stdout_ok(&scr(&["ckpt-interval", "--json", "-p", p], &[]))).unwrap();
    assert_eq!(interval["failures"], 2, "the halted run is no failure");
    assert_eq!(report["interval"]["daly_seconds"], interval["daly_seconds"]);
    assert_eq!(
        report["interval"]["young_seconds"],
        interval["young_seconds"]
    );
}

#[test]
fn the_page_is_self_contained_and_escapes_what_the_log_names() {
    let dir = crafted_prefix();
    let p = dir.path().to_str().unwrap();
    let out = scr(&["report", p], &[]);
    let printed = stdout_ok(&out);
    let default = scr::layout::prefix_hidden_dir(dir.path()).join("report.html");
    assert_eq!(printed.trim(), default.to_str().unwrap());
    let page = std::fs::read_to_string(&default).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // charts inline, nothing fetched, no script
    for chart in [
        "timeline",
        "checkpoint-cost",
        "flush-bandwidth",
        "time-lost",
        "interval",
    ] {
        let at = page
            .find(&format!("<figure id=\"chart-{chart}\"><svg"))
            .unwrap_or_else(|| panic!("no {chart} chart"));
        assert!(page[at..].contains("</svg></figure>"));
    }
    for absent in [
        "<script",
        "<link",
        "<img",
        "src=",
        "url(",
        "@import",
        "href=\"http",
    ] {
        assert!(!page.contains(absent), "{absent} in the page");
    }
    // a dataset name with markup is text, in the tables and in the charts alike
    assert!(!page.contains("<i>7</i>"));
    assert!(page.contains("&lt;i&gt;7&lt;/i&gt;"));
    // the same page to standard output
    let out = scr(&["report", p, "-o", "-"], &[]);
    let to_stdout = stdout_ok(&out);
    assert!(to_stdout.starts_with("<!DOCTYPE html>") && to_stdout.ends_with("</html>\n"));
}

#[test]
fn svg_alone_writes_each_chart_and_no_page() {
    let dir = crafted_prefix();
    let charts = dir.path().join("charts");
    let out = scr(
        &[
            "report",
            "--prefix",
            dir.path().to_str().unwrap(),
            "--svg",
            charts.to_str().unwrap(),
        ],
        &[],
    );
    let printed = stdout_ok(&out);
    for name in [
        "timeline",
        "checkpoint-cost",
        "flush-bandwidth",
        "time-lost",
        "interval",
    ] {
        let path = charts.join(format!("{name}.svg"));
        assert!(printed.contains(path.to_str().unwrap()), "{printed}");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }
    assert!(
        !scr::layout::prefix_hidden_dir(dir.path())
            .join("report.html")
            .exists()
    );
}

#[test]
fn without_a_log_the_error_names_the_file_and_how_to_record_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().to_str().unwrap();
    let out = scr(&["report", p], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains(&format!("{p}/.scr/log")), "{said}");
    assert!(said.contains("SCR_LOG_ENABLE=1"), "{said}");
    let out = scr(&["report", p, "--json", "-o", "-"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("standard output"), "{}", text(&out));
}

#[test]
fn absurd_measures_in_a_log_are_left_out_and_the_page_is_still_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let hidden = scr::layout::prefix_hidden_dir(dir.path());
    std::fs::create_dir_all(&hidden).unwrap();
    // a cost of 1e308 s, a flush of 5 bytes in 1e-320 s, a NaN, a torn last line
    std::fs::write(
        hidden.join("log"),
        "2026-11-23T10:00:00+00:00 event=START\n\
         2026-11-23T10:00:01+00:00 event=CHECKPOINT name=a dset=1 secs=1e308\n\
         2026-11-23T10:00:02+00:00 event=CHECKPOINT name=b dset=2 secs=NaN\n\
         2026-11-23T10:00:03+00:00 event=FLUSH name=b dset=2 secs=1e-320 bytes=5\n\
         2026-11-23T10:00:04+00:00 event=CHECKPOINT name=c dset=3 secs=2\n\
         2026-11-23T10:00:05+00:00 event=STA",
    )
    .unwrap();
    let p = dir.path().to_str().unwrap();
    let page = dir.path().join("page.html");
    stdout_ok(&scr_within(
        30,
        &["report", p, "-o", page.to_str().unwrap()],
        &[],
    ));
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("chart-timeline")
    );
    let v = json_of(dir.path());
    assert!(close(&v["interval"]["mean_checkpoint_seconds"], 2.0), "{v}");
    assert_eq!(v["flushes"][0]["mib_per_s"], serde_json::Value::Null);
}

/// A prefix whose log holds `lines`, each "<seconds after 10:00:00> <rest of the line>".
fn prefix_with_log(lines: &[(u32, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let hidden = scr::layout::prefix_hidden_dir(dir.path());
    std::fs::create_dir_all(&hidden).unwrap();
    let start = chrono::DateTime::parse_from_rfc3339("2026-11-23T10:00:00+00:00").unwrap();
    let text: String = lines
        .iter()
        .map(|(t, rest)| {
            let at = start + chrono::Duration::seconds(i64::from(*t));
            format!(
                "{} {rest}\n",
                at.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
            )
        })
        .collect();
    std::fs::write(hidden.join("log"), text).unwrap();
    dir
}

#[test]
fn a_log_with_garbage_and_over_long_lines_says_what_it_skipped_and_counts_events_only() {
    // a checkpoint line padded past the longest line read: were it read, C would be 251 s
    let padded = format!(
        "event=CHECKPOINT name=big dset=2 secs=500 pad={}",
        "p".repeat(scr::event_log::MAX_LINE_BYTES)
    );
    let dir = prefix_with_log(&[
        (0, "event=START jobid=1".into()),
        (
            10,
            "event=CHECKPOINT name=small dset=1 secs=2 jobid=1".into(),
        ),
        (20, padded),
        (30, "event=END jobid=1".into()),
    ]);
    let log = scr::event_log::log_path(dir.path());
    // and a line that is no event, from whoever could write there
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.insert_str(text.find('\n').unwrap() + 1, "rm -rf / # not an event\n");
    std::fs::write(&log, text).unwrap();

    let p = dir.path().to_str().unwrap();
    let out = scr(&["report", p, "--json"], &[]);
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(&out)).unwrap();
    assert_eq!(v["skipped"]["malformed_lines"], 1, "{v}");
    assert_eq!(v["skipped"]["over_long_lines"], 1, "{v}");
    assert_eq!(v["skipped"]["head_bytes"], 0, "{v}");
    let names: Vec<&str> = v["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["small"]);
    assert!(close(&v["interval"]["mean_checkpoint_seconds"], 2.0), "{v}");
    assert_eq!(v["runs"][0]["checkpoints"], 1);
    // said on standard error too, naming the log
    let said = String::from_utf8_lossy(&out.stderr);
    let bound = scr::event_log::MAX_LINE_BYTES;
    assert!(said.contains(log.to_str().unwrap()), "{said}");
    assert!(said.contains("1 line that is no event"), "{said}");
    assert!(
        said.contains(&format!("1 line of more than {bound} bytes")),
        "{said}"
    );

    let page = stdout_ok(&scr(&["report", p, "-o", "-"], &[]));
    let at = page
        .find("<p id=\"skipped\">")
        .expect("the page says what it skipped");
    let said = &page[at..at + page[at..].find("</p>").unwrap()];
    assert!(said.contains("1 line that is no event"), "{said}");
    assert!(
        said.contains(&format!("1 line of more than {bound} bytes")),
        "{said}"
    );
}

#[test]
fn beyond_the_rows_listed_the_figures_still_count_every_run_and_failure() {
    // 1005 runs of one job, 100 s apart: each checkpoints at +10 s and flushes at +50 s;
    // all but the last die there and the next restarts from that checkpoint at its start,
    // losing 40 s of work and 50 s of restart
    let runs = 1005u32;
    let mut lines = Vec::new();
    for i in 0..runs {
        let t = 100 * i;
        lines.push((t, "event=START jobid=1".to_string()));
        if i > 0 {
            lines.push((t, format!("event=RESTART name=ckpt.{i} dset={i} jobid=1")));
        }
        let (n, d) = (i + 1, i + 1);
        lines.push((
            t + 10,
            format!("event=CHECKPOINT name=ckpt.{n} dset={d} secs=1 jobid=1"),
        ));
        lines.push((
            t + 50,
            format!("event=FLUSH name=ckpt.{n} dset={d} secs=1 jobid=1"),
        ));
    }
    lines.push((100 * (runs - 1) + 60, "event=END jobid=1".to_string()));
    let dir = prefix_with_log(&lines);
    let p = dir.path().to_str().unwrap();
    let v = json_of(dir.path());

    let listed = scr_launcher::commands::report::figures::MAX_ROWS;
    let runs_listed = v["runs"].as_array().unwrap();
    assert_eq!(runs_listed.len(), listed);
    // the newest are listed, numbered as in the whole log
    let first = runs as usize - listed + 1;
    assert_eq!(runs_listed[0]["run"], first);
    assert_eq!(runs_listed[listed - 1]["run"], runs);
    assert_eq!(v["unlisted"]["runs"], runs as usize - listed);
    // the failures of the runs listed, and every failure in the time lost
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures[0]["run"], first);
    assert_eq!(failures.len(), runs as usize - first);
    assert_eq!(v["unlisted"]["failures"], first - 1);
    assert!(
        close(&v["time_lost_seconds"], 90.0 * f64::from(runs - 1)),
        "{}",
        v["time_lost_seconds"]
    );
    assert!(close(
        &v["wall_seconds"],
        100.0 * f64::from(runs - 1) + 60.0
    ));
    // only checkpoints of listed runs are listed
    assert_eq!(v["checkpoints"].as_array().unwrap().len(), listed);
    assert_eq!(v["checkpoints"][0]["name"], format!("ckpt.{first}"));

    let page = stdout_ok(&scr(&["report", p, "-o", "-"], &[]));
    assert!(
        page.contains(&format!("<div class=\"value\">{runs}</div>")),
        "the Runs card"
    );
    assert_eq!(page.matches("<tr class=\"run ").count(), listed);
    let at = page
        .find("<p id=\"unlisted\">")
        .expect("the page says what it does not list");
    let said = &page[at..at + page[at..].find("</p>").unwrap()];
    assert!(said.contains(&format!("{} runs", first - 1)), "{said}");
}

/// A page goes nowhere another user may change: not into a directory of theirs, where they
/// could swap or remove what is written.
#[test]
fn the_page_is_not_written_into_another_users_directory() {
    let prefix = crafted_prefix();
    let p = prefix.path().to_str().unwrap();
    let theirs = nobodys_dir(&prefix.path().join("theirs"), 0o755);
    let page = theirs.join("report.html");
    let out = scr(&["report", p, "-o", page.to_str().unwrap()], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("user id 65534"), "{said}");
    assert!(!page.exists());
    // a directory of the user's own takes it
    let mine = prefix.path().join("mine.html");
    let out = scr(&["report", p, "-o", mine.to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(mine.is_file());
}

/// The charts go nowhere another user may change either (--svg judges its directory as -o
/// does), and neither a page nor a chart replaces what is not a file: a FIFO stays a FIFO
/// (as root's `-o /dev/null` leaves the device).
#[test]
fn charts_and_pages_go_only_where_a_page_may() {
    use std::os::unix::fs::FileTypeExt;
    let prefix = crafted_prefix();
    let p = prefix.path().to_str().unwrap();
    let theirs = nobodys_dir(&prefix.path().join("their-charts"), 0o777);
    let out = scr(&["report", p, "--svg", theirs.to_str().unwrap()], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    let fifo = prefix.path().join("fifo.html");
    nix_mkfifo(&fifo);
    let out = scr(&["report", p, "-o", fifo.to_str().unwrap()], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no regular file"), "{said}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // a directory of the user's own takes the charts
    let mine = prefix.path().join("charts");
    let out = scr(&["report", p, "--svg", mine.to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(mine.join("timeline.svg").is_file());
}

/// A directory at `path` of another user's (nobody's) with `mode`.
fn nobodys_dir(path: &std::path::Path, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    path.to_path_buf()
}

/// Makes a FIFO at `path`.
fn nix_mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The site's choices (--user, --app, --since, --option-file) without --db are an error that
/// says so, not options quietly ignored on one prefix's page.
#[test]
fn the_sites_choices_without_db_are_refused() {
    let prefix = crafted_prefix();
    let p = prefix.path().to_str().unwrap();
    for flag in [["--user", "bob"], ["--app", "x"], ["--since", "1d"]] {
        let out = scr(&["report", p, flag[0], flag[1]], &[]);
        assert_eq!(out.status.code(), Some(1), "{flag:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(flag[0]) && said.contains("--db"), "{said}");
    }
}
