//! SCR v3.1's job commands: `scr should-exit`, `scr inspect`, `scr kill-jobstep`
//! (`scr ckpt-interval` is tested on a real job's log in lib/tests/event_log.rs).

mod common;

use common::*;
use scr::HashView;
use std::process::Command;

#[test]
fn should_exit_answers_from_the_halt_file_and_the_time_left() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let o = scr(&["should-exit", "-p", p], &[]);
    assert_eq!(o.status.code(), Some(1), "nothing says stop: {}", text(&o));
    // 30 s left in the allocation, SCR_HALT_SECONDS=60: stop
    let end = (chrono::Utc::now().timestamp() + 30).to_string();
    let env = [("SCR_END_TIME", end.as_str()), ("SCR_HALT_SECONDS", "60")];
    let o = scr(&["should-exit", "-p", p], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("the job should stop"), "{}", text(&o));
    // ample time left: go on
    let end = (chrono::Utc::now().timestamp() + 3600).to_string();
    let o = scr(
        &["should-exit", "-p", p],
        &[("SCR_END_TIME", &end), ("SCR_HALT_SECONDS", "60")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // scr halt's condition, under the SCR name
    assert!(scr(&["halt", "--after", "@1", p], &[]).status.success());
    let o = Command::new(env!("CARGO_BIN_EXE_scr"))
        .arg0_compat("scr_should_exit")
        .args(["--dir", p])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn should_exit_takes_v3_1_s_node_options() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_str().unwrap();
    let nodes = [("SCR_NODELIST", "n[1-4]")];
    // one of four down, three needed: go on; four needed: stop
    let o = scr(
        &[
            "should-exit",
            "-p",
            p,
            "--down",
            "n2",
            "--min-nodes",
            "3",
            "-v",
        ],
        &nodes,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("3 node(s) left"), "{}", text(&o));
    let o = scr(
        &[
            "should-exit",
            "-p",
            p,
            "--down",
            "n2",
            "--min-nodes",
            "4",
            "--runs",
            "0",
        ],
        &nodes,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("nodes_remaining=3 < nodes_needed=4"),
        "{}",
        text(&o)
    );
}

/// Runs the binary under another name, as SCR's command names do.
trait Arg0 {
    fn arg0_compat(&mut self, name: &str) -> &mut Self;
}
impl Arg0 for Command {
    fn arg0_compat(&mut self, name: &str) -> &mut Self {
        std::os::unix::process::CommandExt::arg0(self, name)
    }
}

#[test]
fn inspect_tells_complete_from_failed_from_what_needs_a_scavenge() {
    use scr::dataset::{Dataset, Origin};
    use scr::flush::Location;
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path();
    std::fs::create_dir_all(scr::layout::prefix_hidden_dir(prefix)).unwrap();
    scr::prefix::update_index(prefix, |idx| {
        for (id, complete) in [(1, true), (2, false), (3, true)] {
            let name = format!("ckpt.{id}");
            let ds = Dataset::create(id, &name, true, false, &Origin::default(), Some(id));
            idx.add(&ds, &name, complete);
        }
        idx.mark_failed(3, "ckpt.3", chrono::Local::now());
        Ok(())
    })
    .unwrap();
    scr::prefix::update_flush_file(prefix, |f| {
        f.describe(4, "ckpt.4", Some(4), None);
        f.set_location(4, Location::Cache);
    })
    .unwrap();
    let o = scr(&["inspect", "-p", prefix.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        lines,
        [
            "4 SCAVENGE ckpt.4",
            "3 FAILED ckpt.3",
            "2 INCOMPLETE ckpt.2",
            "1 COMPLETE ckpt.1"
        ]
    );
    let o = scr(&["inspect", "-p", prefix.to_str().unwrap(), "--json"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["datasets"][0]["state"], "SCAVENGE");
    let _ = scr::index::IndexFile::read(&scr::layout::index_file(prefix)).unwrap();
}

#[test]
fn kill_jobstep_takes_only_a_step_id_and_reports_scancel_failing() {
    for bad in ["", "12;rm", "-1", "1.2.3", "a.1"] {
        let o = scr(&["kill-jobstep", &format!("--jobstepid={bad}")], &[]);
        assert_eq!(o.status.code(), Some(1), "{bad}");
        assert!(
            text(&o).contains("not a job step id"),
            "{bad}: {}",
            text(&o)
        );
    }
    // a SLURM whose controller does not answer: scancel's failure is reported, naming it
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=t\nSlurmctldHost=localhost\nSlurmctldPort=1\nMessageTimeout=1\n",
    )
    .unwrap();
    let o = scr(
        &["kill-jobstep", "-j", "999999.0"],
        &[("SLURM_CONF", conf.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("scancel"), "{}", text(&o));
}
