//! SCR's event log from real jobs: the text log in `<prefix>/.scr/log` read back by
//! `scr ckpt-interval` after a run that failed and was restarted (the Daly interval
//! computed here by hand from the same log), and syslog through a real rsyslogd.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// (time in ms, kind, secs field) of each line, parsed here without the library's parser.
fn events(log: &str) -> Vec<(i64, String, Option<f64>)> {
    log.lines()
        .map(|l| {
            let mut words = l.split(' ');
            let t = chrono::DateTime::parse_from_rfc3339(words.next().unwrap())
                .unwrap()
                .timestamp_millis();
            let mut kind = String::new();
            let mut secs = None;
            for w in words {
                if let Some(k) = w.strip_prefix("event=") {
                    kind = k.to_string();
                }
                if let Some(s) = w.strip_prefix("secs=") {
                    secs = Some(s.parse().unwrap());
                }
            }
            (t, kind, secs)
        })
        .collect()
}

#[test]
fn the_text_log_records_a_failed_run_and_ckpt_interval_gives_dalys_interval() {
    let job = Job::new();
    let env = [
        ("SCR_LOG_ENABLE", "1"),
        ("SCR_LOG_SYSLOG_ENABLE", "0"),
        ("SCR_FLUSH", "1"),
    ];
    let fail = [env[0], env[1], env[2], ("TEST_API_FAIL_FIRST", "1")];
    let first = job.run(2, &["200000", "3"], &fail);
    assert_eq!(first.status.code(), Some(3), "{}", text(&first));
    job.run_ok(2, &["200000", "2"], &env);
    let log = std::fs::read_to_string(job.prefix().join(".scr/log")).unwrap();
    let ev = events(&log);
    let kinds: Vec<&str> = ev.iter().map(|e| e.1.as_str()).collect();
    for k in ["START", "CHECKPOINT", "FLUSH", "RESTART", "END"] {
        assert!(kinds.contains(&k), "{k} in {log}");
    }
    assert_eq!(kinds.iter().filter(|k| **k == "START").count(), 2, "{log}");
    assert_eq!(kinds.iter().filter(|k| **k == "END").count(), 1, "{log}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "CHECKPOINT").count(),
        5,
        "{log}"
    );
    assert!(log.lines().all(|l| l.contains(" jobid=4242")), "{log}");
    assert!(
        log.contains("event=FLUSH name=ckpt.3 dset=3 bytes=400016"),
        "{log}"
    );

    // by hand: the first run failed (no END before the next START); M = run time / 1
    let starts: Vec<usize> = (0..ev.len()).filter(|&i| ev[i].1 == "START").collect();
    let run1 = (ev[starts[1] - 1].0 - ev[starts[0]].0) as f64 / 1000.0;
    let run2 = (ev.last().unwrap().0 - ev[starts[1]].0) as f64 / 1000.0;
    let m = run1 + run2;
    let c = mean_checkpoint_cost(&ev);
    let daly = if c >= 2.0 * m {
        m
    } else {
        (2.0 * c * m).sqrt() * (1.0 + (c / (2.0 * m)).sqrt() / 3.0 + c / (2.0 * m) / 9.0) - c
    };
    let scr = scr_command();
    let prefix = job.prefix();
    let out = Command::new(&scr)
        .args(["ckpt-interval", "--json", "-p"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failures"], 1);
    assert_eq!(v["checkpoints"], 5);
    let got = v["daly_seconds"].as_f64().unwrap();
    assert!((got - daly).abs() < 1e-6, "daly {got} vs by hand {daly}");
    let out = Command::new(&scr)
        .args(["ckpt-interval", "-p"])
        .arg(&prefix)
        .output()
        .unwrap();
    // whole seconds, at least one (0 would turn SCR_CHECKPOINT_SECONDS off)
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (daly.round().max(1.0) as u64).to_string()
    );
    // with no failure logged yet it still advises (as v3.1's prints a number): the job ran
    // at least its logged time without one, and the interval says it is a lower bound
    let job2 = Job::new();
    job2.run_ok(2, &["1000", "2"], &env);
    let log = std::fs::read_to_string(job2.prefix().join(".scr/log")).unwrap();
    let ev = events(&log);
    let observed = (ev.last().unwrap().0 - ev[0].0) as f64 / 1000.0;
    let c = mean_checkpoint_cost(&ev);
    let out = Command::new(&scr)
        .args(["ckpt-interval", "--json", "-p"])
        .arg(job2.prefix())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["failures"].as_u64(), v["mtbf_lower_bound"].as_bool()),
        (Some(0), Some(true))
    );
    let m = v["mtbf_seconds"].as_f64().unwrap();
    assert!(
        (m - observed).abs() < 1e-6,
        "MTBF {m} vs the run time observed {observed}"
    );
    let young = v["young_seconds"].as_f64().unwrap();
    assert!(
        (young - (2.0 * c * observed).sqrt()).abs() < 1e-6,
        "{young}"
    );
    let out = Command::new(&scr)
        .args(["ckpt-interval", "-p"])
        .arg(job2.prefix())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no failure in the log yet"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u64>()
            .is_ok()
    );
}

#[test]
fn a_bad_syslog_facility_is_an_error_naming_the_parameter() {
    let job = Job::new();
    let out = job.run(
        2,
        &["1000", "1"],
        &[
            ("SCR_LOG_ENABLE", "1"),
            ("SCR_LOG_SYSLOG_FACILITY", "LOG_NOWHERE"),
        ],
    );
    assert!(
        text(&out).contains("SCR_LOG_SYSLOG_FACILITY=\"LOG_NOWHERE\" is not valid"),
        "{}",
        text(&out)
    );
}

/// A real rsyslogd writing what reaches `socket` to `dir/messages`, stopped on drop.
struct Rsyslogd {
    child: std::process::Child,
    created_socket: Option<std::path::PathBuf>,
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(s) = &self.created_socket {
            let _ = std::fs::remove_file(s);
        }
    }
}

fn start_rsyslogd(dir: &Path, socket: &Path) -> Rsyslogd {
    let conf = dir.join("rsyslog.conf");
    std::fs::write(
        &conf,
        format!(
            "global(workDirectory=\"{dir}\")\n\
             module(load=\"imuxsock\" SysSock.Name=\"{sock}\")\n\
             template(name=\"t\" type=\"string\" string=\"%syslogfacility-text%.%syslogseverity-text% %syslogtag%%msg%\\n\")\n\
             *.* action(type=\"omfile\" file=\"{dir}/messages\" template=\"t\")\n",
            dir = dir.display(),
            sock = socket.display()
        ),
    )
    .unwrap();
    let child = Command::new("rsyslogd")
        .args(["-n", "-f"])
        .arg(&conf)
        .arg("-i")
        .arg(dir.join("rsyslogd.pid"))
        .spawn()
        .expect("rsyslogd (scripts/setup.sh installs rsyslog)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "rsyslogd did not create {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Rsyslogd {
        child,
        created_socket: Some(socket.to_path_buf()),
    }
}

#[test]
fn events_reach_a_real_syslog_daemon_with_the_configured_facility_level_and_identity() {
    let job = Job::new();
    let dir = job.dir.path().join("syslog");
    std::fs::create_dir(&dir).unwrap();
    // glibc's syslog() writes to /dev/log: the daemon listens there, or — where a daemon
    // of the machine has it — the job runs in a mount namespace where /dev/log is ours
    let dev_log = Path::new("/dev/log");
    let taken = dev_log.symlink_metadata().is_ok();
    let socket = if taken {
        dir.join("log.sock")
    } else {
        dev_log.to_path_buf()
    };
    let daemon = start_rsyslogd(&dir, &socket);
    let env = [
        ("SCR_LOG_ENABLE", "1"),
        ("SCR_LOG_TXT_ENABLE", "0"),
        ("SCR_LOG_SYSLOG_FACILITY", "LOG_LOCAL3"),
        ("SCR_LOG_SYSLOG_LEVEL", "LOG_NOTICE"),
        ("SCR_LOG_SYSLOG_PREFIX", "SCRTEST"),
        ("SCR_FLUSH", "1"),
    ];
    let cmd = job.command(None, 2, &["1000", "2"], &env);
    let out = if taken {
        let mut wrapped = Command::new("unshare");
        wrapped
            .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg("mount --bind \"$0\" /dev/log && exec \"$@\"")
            .arg(&socket)
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .current_dir(job.prefix());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        wrapped.output().unwrap()
    } else {
        let mut cmd = cmd;
        cmd.output().unwrap()
    };
    assert!(out.status.success(), "{}", text(&out));
    let messages = dir.join("messages");
    let deadline = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = std::fs::read_to_string(&messages).unwrap_or_default();
        if got.contains("event=END") || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(daemon);
    let ours: Vec<&str> = got.lines().filter(|l| l.contains("SCRTEST[")).collect();
    assert!(
        ours.iter().all(|l| l.starts_with("local3.notice SCRTEST[")),
        "{got}"
    );
    for kind in ["START", "CHECKPOINT", "FLUSH", "END"] {
        assert!(
            ours.iter().any(|l| l.contains(&format!("event={kind} "))),
            "{kind} in {got}"
        );
    }
    assert!(
        !job.prefix().join(".scr/log").exists(),
        "SCR_LOG_TXT_ENABLE=0"
    );
}

/// The mean of the logged checkpoints' costs, in seconds.
fn mean_checkpoint_cost(ev: &[(i64, String, Option<f64>)]) -> f64 {
    let costs: Vec<f64> = ev
        .iter()
        .filter(|e| e.1 == "CHECKPOINT")
        .map(|e| e.2.unwrap())
        .collect();
    costs.iter().sum::<f64>() / costs.len() as f64
}

/// `scr postrun` by hand (an epilog's, an operator's) logs each dataset it drains as a flush
/// in the prefix's text log, as the library logs its own: the checkpoint's bytes (what the
/// application wrote) and seconds, marked as the drain's, under the job's user and id.
#[test]
fn scr_postrun_logs_the_dataset_it_drains_as_a_flush() {
    let job = Job::new();
    let log = [("SCR_LOG_ENABLE", "1"), ("SCR_LOG_SYSLOG_ENABLE", "0")];
    let mut env = vec![
        ("SCR_COPY_TYPE", "PARTNER"),
        ("TEST_API_NO_FINALIZE", "1"),
        ("SCR_FLUSH", "0"),
    ];
    env.extend_from_slice(&log);
    run_ok_on(&job, "n1,n2", 4, &["3000", "2"], &env);
    let path = scr::event_log::log_path(&job.prefix());
    let before = std::fs::read_to_string(&path).unwrap();
    assert!(!before.contains("event=FLUSH"), "{before}");
    let mut cmd = scr_for(&job);
    cmd.env("SCR_NODELIST", "n[1-2]").envs(log);
    let out = cmd
        .args(["postrun", "-p"])
        .arg(job.prefix())
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("dataset 2 (ckpt.2) drained"), "{said}");
    let after = std::fs::read_to_string(&path).unwrap();
    let flushes: Vec<&str> = after
        .lines()
        .filter(|l| l.contains(" event=FLUSH "))
        .collect();
    assert_eq!(flushes.len(), 1, "{after}");
    // test_api writes one file a rank: an 8-byte header and SIZE bytes
    let bytes = 4 * (8 + 3000);
    let user = scr::layout::user_name();
    for field in [
        "name=ckpt.2".to_string(),
        "dset=2".to_string(),
        format!("bytes={bytes}"),
        "drain=1".to_string(),
        format!("user={user}"),
        format!("jobid={JOB_ID}"),
    ] {
        assert!(
            flushes[0].split(' ').any(|f| f == field),
            "{field}: {after}"
        );
    }
    let (_, _, secs) = events(flushes[0])[0].clone();
    assert!(secs.is_some_and(|s| s >= 0.0), "{after}");
}
