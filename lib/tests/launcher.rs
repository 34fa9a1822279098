//! `scr-run` around real processes: a real `mpiexec` job (emulated nodes via SCR_NODELIST)
//! that fails its first run and succeeds on the second, runs exhausted, a halt file, too few
//! nodes, SCR_ENABLE=0, SIGTERM, and the JSON event stream.

mod common;

use common::scr_run::*;
use common::*;
use scr::HashView;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_run_that_fails_is_relaunched_and_restarts_from_its_checkpoint() {
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "4", &app, "2000", "2"],
        &[
            ("SCR_NODELIST", "n[1-4]"),
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_FLUSH", "0"),
            ("SCR_RUNS", "3"),
            ("TEST_API_FAIL_FIRST", "1"),
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("failing on purpose"), "{t}");
    assert!(t.contains("attempt 1: run ended: exit code 3"), "{t}");
    assert!(t.contains("attempt 2: launching on 4 node(s)"), "{t}");
    assert!(
        t.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{t}"
    );
    assert!(
        t.contains("Halt condition detected (Reason: SCR_FINALIZE_CALLED.)"),
        "the finished run ends the loop: {t}"
    );
    assert!(!t.contains("attempt 3"), "{t}");
    // SCR_FLUSH=0, and scr-run drains only after the last run: the second run restarted
    // from the first's cache, found under the job id both share, not from the prefix
    assert!(!job.prefix().join("ckpt.2").exists(), "{t}");
}

#[test]
fn a_run_whose_rank_exited_without_mpi_finalize_is_ended_and_relaunched() {
    // hydra waits forever for a rank that exited without MPI_Finalize, and the other ranks
    // wait for it in their next checkpoint; hydra's own timeout is taken out of the way
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "3", &app, "2000", "3"],
        &[
            ("MPIEXEC_TIMEOUT", "3600"),
            ("SCR_NODELIST", "n[1-3]"),
            ("SCR_FLUSH", "0"),
            ("SCR_RUNS", "2"),
            ("TEST_API_EXIT_FIRST", "1"),
        ],
    ));
    assert!(
        t.contains("rank 1 exits without MPI_Finalize (TEST_API_EXIT_FIRST)"),
        "{t}"
    );
    // ranks go round robin over the nodes SCR_NODELIST names: rank 1 ran on n2
    let ended = t
        .lines()
        .find(|l| l.contains("stopping the run"))
        .unwrap_or_else(|| panic!("scr-run never ended the run: {t}"));
    assert!(
        ended.contains("rank 1 (process ") && ended.contains(" on n2) ended without MPI_Finalize"),
        "{t}"
    );
    assert!(t.contains("attempt 2: launching on 3 node(s)"), "{t}");
    assert!(
        t.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{t}"
    );
    assert!(t.contains("test_api: done"), "{t}");
    assert_eq!(out.status.code(), Some(0), "{t}");
}

#[test]
fn runs_exhausted_returns_the_applications_exit_status() {
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "echo run; exit 7"],
        &[("SCR_RUNS", "2")],
    ));
    assert_eq!(out.status.code(), Some(7), "{t}");
    assert_eq!(t.matches("run\n").count(), 2, "{t}");
    assert!(t.contains("2 run(s) exhausted, ending run."), "{t}");
    // SCR_RETRIES is the legacy spelling of runs - 1
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "echo run; exit 5"],
        &[("SCR_RETRIES", "2")],
    ));
    assert_eq!(out.status.code(), Some(5), "{t}");
    assert_eq!(t.matches("run\n").count(), 3, "{t}");
}

#[test]
fn a_halt_file_stops_the_loop_after_the_current_run() {
    let job = Job::new();
    // the run itself asks for the halt, as a user's `scr halt` during the job would
    let halt = format!(
        "echo ran; {} halt {}; exit 1",
        scr_command().display(),
        job.prefix().display()
    );
    let (out, t) = output(scr_run_in(&job, &["sh", "-c", &halt], &[("SCR_RUNS", "5")]));
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("Halt condition detected (Reason: JOB_HALTED.)"),
        "{t}"
    );
    assert_eq!(t.matches("ran\n").count(), 1, "{t}");
}

#[test]
fn a_halt_the_application_obeys_ends_the_loop_with_the_application_finished() {
    // SCR v3.1's default: SCR_Should_exit says stop, the application writes what follows
    // its loop and ends; scr-run does not relaunch it
    let job = Job::new();
    let halt = scr::layout::halt_file(&job.prefix());
    std::fs::create_dir_all(halt.parent().unwrap()).unwrap();
    let mut h = scr::halt::HaltFile::new();
    h.set_checkpoints_left(1);
    h.write(&halt).unwrap();
    let app = job.app.to_string_lossy().into_owned();
    let (out, t) = output(scr_run_in(
        &job,
        &["mpiexec", "-launcher", "fork", "-n", "2", &app, "1000", "4"],
        &[
            ("SCR_NODELIST", "n[1-2]"),
            ("SCR_RUNS", "3"),
            ("TEST_API_SHOULD_EXIT", "1"),
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("SCR_Should_exit says stop after timestep 1") && t.contains("test_api: done"),
        "{t}"
    );
    assert!(t.contains("Halt condition detected"), "{t}");
    assert!(!t.contains("attempt 2"), "{t}");
}

#[test]
fn a_halt_condition_before_the_first_run_launches_nothing() {
    let job = Job::new();
    let halt = scr::layout::halt_file(&job.prefix());
    std::fs::create_dir_all(halt.parent().unwrap()).unwrap();
    let mut h = scr::halt::HaltFile::new();
    h.set_exit_reason("JOB_HALTED");
    h.write(&halt).unwrap();
    let run = |env: &[(&str, &str)]| output(scr_run_in(&job, &["sh", "-c", "echo ran"], env));
    let (out, t) = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(!t.contains("ran\n") && !t.contains("launching on"), "{t}");
    assert!(
        t.contains("Halt condition detected before the first run (Reason: JOB_HALTED.)")
            && t.contains("scr halt -r"),
        "{t}"
    );
    // the allocation ends within SCR_HALT_SECONDS: no launch either (the halt file has none)
    h.unset(scr::halt::EXIT_REASON);
    h.write(&halt).unwrap();
    let end = (chrono::Utc::now().timestamp() + 600).to_string();
    let (out, t) = run(&[("SCR_END_TIME", &end), ("SCR_HALT_SECONDS", "3600")]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(!t.contains("ran\n"), "{t}");
    assert!(t.contains("is at most HaltSeconds (3600 s)"), "{t}");
    // which the halt file does not hold: `scr halt -r` would not clear it, and scr-run
    // names where it comes from instead
    assert!(
        t.contains("SCR_HALT_SECONDS=3600, set in the environment")
            && t.contains("`scr halt -r` does not clear it")
            && !t.contains("`scr halt -r` removes"),
        "{t}"
    );
    // set in a configuration file, it is that file that is named
    std::fs::write(job.dir.path().join("halt.conf"), "SCR_HALT_SECONDS=3600\n").unwrap();
    let conf = job
        .dir
        .path()
        .join("halt.conf")
        .to_string_lossy()
        .into_owned();
    let (out, t) = run(&[("SCR_END_TIME", &end), ("SCR_CONF_FILE", &conf)]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!("SCR_HALT_SECONDS=3600, set in {conf}")),
        "{t}"
    );
    // a previous job's finished run does not hold the next one back
    h.set_exit_reason("SCR_FINALIZE_CALLED");
    h.write(&halt).unwrap();
    let (out, t) = run(&[("SCR_RUNS", "1")]);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(t.matches("ran\n").count(), 1, "{t}");
}

#[test]
fn too_few_nodes_left_ends_the_job_without_launching() {
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "echo should-not-run"],
        &[
            ("SCR_NODELIST", "n[1-4]"),
            ("SCR_EXCLUDE_NODES", "n3"),
            ("SCR_MIN_NODES", "4"),
        ],
    ));
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("n3 is down: User excluded via SCR_EXCLUDE_NODES"),
        "{t}"
    );
    assert!(
        t.contains("(Nodes remaining=3) < (Nodes needed=4), ending run."),
        "{t}"
    );
    assert!(!t.contains("should-not-run"), "{t}");
}

/// run.rst, "The SCR wrapper scripts": a run avoids the nodes that are down and may use
/// spare nodes of the allocation. Hydra's `-hosts n1:2,n2:2` with n2 excluded runs n2's two
/// ranks on the spare n3, never on n2: the cached files say where each rank ran.
#[test]
fn an_excluded_node_of_hydra_s_host_list_gives_its_ranks_to_a_spare() {
    let job = Job::new();
    let app = job.app.to_str().unwrap();
    let (out, t) = output(scr_run_in(
        &job,
        &hydra_on("n1:2,n2:2", 4, &[app, "1000", "1"]),
        &[
            ("SCR_NODELIST", "n[1-3]"),
            ("SCR_EXCLUDE_NODES", "n2"),
            ("SCR_MIN_NODES", "2"),
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    let cached_on = |node: &str| {
        walk(&job.dir.path().join("cache"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(&format!("/node.{node}/")))
            .filter(|p| p.to_string_lossy().ends_with(".ckpt"))
            .count()
    };
    assert_eq!(cached_on("n2"), 0, "{t}");
    assert_eq!(cached_on("n1"), 2, "{t}");
    assert_eq!(cached_on("n3"), 2, "{t}");
}

/// config.rst: SCR_EXCLUDE_NODES may be set in the prefix's `.scrconf`; scr-run reads it
/// again before each relaunch, as v3.1's scripts do at every loop: a run that failed and
/// named a bad node there is relaunched without it.
#[test]
fn an_exclusion_written_into_scrconf_between_runs_is_read_before_the_relaunch() {
    use std::os::unix::fs::PermissionsExt;
    let job = Job::new();
    let app = job.dir.path().join("app.sh");
    std::fs::write(
        &app,
        format!(
            // (each rank's first attempt fails, rank 0's naming n2; the second runs)
            "#!/bin/sh\n\
             mkdir \"{dir}/tried.$PMI_RANK\" 2>/dev/null || exec \"{test_api}\" 1000 1\n\
             [ \"$PMI_RANK\" = 0 ] && echo SCR_EXCLUDE_NODES=n2 > \"{prefix}/.scrconf\"\n\
             exit 1\n",
            dir = job.dir.path().display(),
            prefix = job.prefix().display(),
            test_api = job.app.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, t) = output(scr_run_in(
        &job,
        &hydra_on("n1,n2", 2, &[app.to_str().unwrap()]),
        &[
            ("SCR_NODELIST", "n[1-3]"),
            ("SCR_MIN_NODES", "2"),
            ("SCR_RUNS", "2"),
        ],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("attempt 2: launching on 2 node(s), excluding n2"),
        "{t}"
    );
}

/// api.rst, "SCR_Finalize": the halt condition it records keeps the job from being
/// relaunched. The application sets its own prefix (`SCR_Configf("SCR_PREFIX=…")`, as
/// integration.rst suggests): scr-run reads that halt file, where the application's control
/// directory says its prefix is, and launches once.
#[test]
fn a_finished_run_is_not_relaunched_when_the_application_sets_its_own_prefix() {
    let job = steps_job();
    let own = job.dir.path().join("apps-own-prefix");
    std::fs::create_dir(&own).unwrap();
    let (out, t) = run_with_apps_own_prefix(
        &job,
        &own,
        &["init", "ckpt=ckpt.1:1", "finalize"],
        &[("SCR_RUNS", "3")],
    );
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(answers(&t, "init").len(), 1, "launched once: {t}");
    assert!(t.contains("the application's prefix is"), "{t}");
    assert!(own.join("ckpt.1").is_dir(), "{t}");
}

#[test]
fn scr_enable_0_runs_the_command_once_unchanged() {
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "echo plain; exit 4"],
        &[("SCR_ENABLE", "0"), ("SCR_RUNS", "3")],
    ));
    assert_eq!(out.status.code(), Some(4), "{t}");
    assert_eq!(t.matches("plain").count(), 1, "{t}");
    assert!(!t.contains("scr-run:"), "{t}");
}

#[test]
fn sigterm_stops_the_run_and_the_loop() {
    let job = Job::new();
    let mut cmd = scr_run_in(
        &job,
        &["sh", "-c", "sleep 30"],
        &[("SCR_RUNS", "-1"), ("SCR_LOG_ENABLE", "1")],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: signals the scr-run process this test started
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = wait_within(child, Duration::from_secs(10));
    let t = text(&out);
    assert!(t.contains("stopping the run"), "{t}");
    assert!(t.contains("asked to stop, ending run."), "{t}");
    assert_ne!(out.status.code(), Some(0), "{t}");
    // stopped on purpose (scancel, a time limit): halted in the log, no failure of the run
    let log = std::fs::read_to_string(scr::event_log::log_path(&job.prefix())).unwrap();
    let ended: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("event=SCR_RUN_RUN_ENDED"))
        .collect();
    assert!(ended.len() == 1 && ended[0].contains(" halted=1"), "{log}");
    let report = Command::new(scr_command())
        .args(["report", "--json"])
        .arg(job.prefix())
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    // (a launch ended badly before SCR_Init would count as a run that died)
    let runs = report["runs"].as_array().unwrap();
    assert!(runs.iter().all(|r| r["ending"] != "died"), "{report:#}");
    assert_eq!(
        report["failures"].as_array().map(Vec::len),
        Some(0),
        "{report:#}"
    );
}

#[test]
fn json_event_stream_for_batch_tooling() {
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["--json", "sh", "-c", "exit 0"],
        &[("SCR_RUNS", "1")],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "started");
    assert!(
        names.contains(&"launch") && names.contains(&"run_ended"),
        "{names:?}"
    );
    let ended = events.iter().find(|e| e["event"] == "run_ended").unwrap();
    assert_eq!(ended["exit_code"], 0);
    assert!(events.iter().all(|e| e["time"].is_string()));
    // the end of the job as data, not Rust's debug text
    let finished = events.iter().find(|e| e["event"] == "finished").unwrap();
    assert_eq!(finished["ending"], "runs_exhausted", "{finished}");
    assert_eq!(finished["runs"], 1, "{finished}");
    for e in &events {
        for (k, v) in e.as_object().unwrap() {
            let v = v.to_string();
            assert!(
                !(v.contains(" { ") || v.contains("Some(") || v.contains("HostSet")),
                "{k}: {v}"
            );
        }
    }
}

#[test]
fn a_run_scr_run_stopped_never_reports_exit_code_0() {
    // the application catches SIGTERM and exits 0: the watchdog stopped it all the same
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait"],
        &[
            ("SCR_RUNS", "1"),
            ("SCR_WATCHDOG", "1"),
            ("SCR_WATCHDOG_TIMEOUT", "2"),
        ],
    ));
    assert!(t.contains("run ended: stopped by scr-run (watchdog"), "{t}");
    assert!(!t.contains("run ended: exit code 0"), "{t}");
    assert_ne!(out.status.code(), Some(0), "{t}");
}

#[test]
fn scr_halt_immediate_stops_the_running_job_now() {
    let job = Job::new();
    let mut cmd = scr_run_in(&job, &["sh", "-c", "sleep 30"], &[("SCR_RUNS", "3")]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    // scr-run says it watches the prefix from its prerun on
    while !scr::prefix::watch::is_watched(&job.prefix()) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "scr-run never watched"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let halt_now = || {
        Command::new(scr_command())
            .args(["halt", "--immediate"])
            .arg(job.prefix())
            .output()
            .unwrap()
    };
    let halt = halt_now();
    assert!(halt.status.success(), "{}", text(&halt));
    assert!(text(&halt).contains("ExitNow"), "{}", text(&halt));
    assert!(
        !text(&halt).contains("no scr-run watches"),
        "{}",
        text(&halt)
    );
    let out = wait_within(
        child,
        Duration::from_secs(15).saturating_sub(started.elapsed()),
    );
    let t = text(&out);
    assert!(
        t.contains("halted immediately (scr halt --immediate)"),
        "{t}"
    );
    assert!(
        t.contains("Halt condition detected (Reason: JOB_HALTED.)"),
        "{t}"
    );
    assert_eq!(t.matches("launching").count(), 1, "{t}");
    // the halt stays: the next job launches nothing until the user removes it (halt.rst)
    let halt = scr::halt::HaltFile::read(&scr::layout::halt_file(&job.prefix())).unwrap();
    assert!(halt.exit_now());
    // with no scr-run to stop a job at once, the user is told so, and what stops it now
    let unwatched = halt_now();
    assert!(unwatched.status.success(), "{}", text(&unwatched));
    assert!(
        text(&unwatched).contains("no scr-run watches") && text(&unwatched).contains("scancel"),
        "{}",
        text(&unwatched)
    );
    let next = || {
        output(scr_run_in(
            &job,
            &["sh", "-c", "exit 0"],
            &[("SCR_RUNS", "1")],
        ))
    };
    let (_, t) = next();
    assert!(
        t.contains("before the first run (Reason: JOB_HALTED.)") && !t.contains("run ended"),
        "{t}"
    );
    let removed = Command::new(scr_command())
        .args(["halt", "-r"])
        .arg(job.prefix())
        .output()
        .unwrap();
    assert!(removed.status.success(), "{}", text(&removed));
    let (_, t) = next();
    assert!(t.contains("run ended: exit code 0"), "{t}");
}

#[test]
fn the_watchdog_kills_a_run_that_makes_no_progress() {
    let job = Job::new();
    // two runs of a program that sleeps 60 s, each stopped by the watchdog after 2 s
    let out = output_within(
        &mut scr_run_in(
            &job,
            &["sh", "-c", "sleep 60"],
            &[
                ("SCR_RUNS", "2"),
                ("SCR_WATCHDOG", "1"),
                ("SCR_WATCHDOG_TIMEOUT", "2"),
            ],
        ),
        Duration::from_secs(20),
    );
    let t = text(&out);
    assert_eq!(
        t.matches("stopping the run (SIGTERM to its processes): watchdog: no checkpoint or flush progress for 2 s (SCR_WATCHDOG_TIMEOUT)")
            .count(),
        2,
        "{t}"
    );
    assert!(t.contains("2 run(s) exhausted"), "{t}");
    assert_ne!(out.status.code(), Some(0));
    // without a timeout the watchdog cannot work: a clear error before anything runs
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "exit 0"],
        &[("SCR_WATCHDOG", "1")],
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        t.contains("SCR_WATCHDOG=1 needs SCR_WATCHDOG_TIMEOUT"),
        "{t}"
    );
}

/// `scr` under one of SCR's names, through a link in the job's directory.
fn scr_as(job: &Job, name: &str) -> Command {
    let link = job.dir.path().join(name);
    if !link.exists() {
        std::os::unix::fs::symlink(scr_command(), &link).unwrap();
    }
    let mut cmd = Command::new(link);
    cmd.current_dir(job.prefix())
        .env("SCR_PREFIX", job.prefix())
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID");
    cmd
}

#[test]
fn scr_srun_help_and_no_arguments_print_usage_and_launch_nothing() {
    let job = Job::new();
    for help in ["--help", "-h"] {
        let out = scr_as(&job, "scr_srun").arg(help).output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(0), "{t}");
        assert!(
            t.contains("Usage: scr_srun") && t.contains("--run-cmd"),
            "{t}"
        );
        // srun's own help would say this
        assert!(!t.contains("Usage: srun"), "srun ran: {t}");
    }
    for (name, args) in [("scr_srun", &[][..]), ("scr-run", &["mpiexec"][..])] {
        let out = scr_as(&job, name).args(args).output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {t}");
        assert!(
            t.contains("give the launcher's arguments and the program"),
            "{t}"
        );
        assert!(!t.contains("launching"), "{t}");
    }
    let out = scr_as(&job, "scr-run").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("Usage: scr-run"), "{}", text(&out));
    // outside an allocation, srun cannot run a job: said, with how
    let out = scr_as(&job, "scr_srun")
        .args(["-N2", "hostname"])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.starts_with("scr_srun: ERROR:") && t.contains("salloc --no-kill") && t.contains("sbatch"),
        "the message says the name the user ran: {t}"
    );
}

#[test]
fn scr_run_takes_v3_1_s_run_and_restart_commands() {
    let job = Job::new();
    let app = job.app.to_string_lossy().into_owned();
    let run_cmd = format!("--run-cmd={app} 1000 2");
    let run = || {
        output(scr_run_in(
            &job,
            &["env", &run_cmd, "-rs", "echo restarting from SCR_CKPT_NAME"],
            &[("SCR_RUNS", "1"), ("SCR_FLUSH", "1")],
        ))
    };
    // no checkpoint yet: the run command (test_api, as an MPI singleton) writes two
    let (out, t) = run();
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("test_api: done") && !t.contains("restarting from"),
        "{t}"
    );
    // now there is one: the restart command, with its name
    let (out, t) = run();
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("restarting from ckpt.2"), "{t}");
    assert!(!t.contains("test_api:"), "{t}");
    // a flag without its command is an error before anything runs
    let (out, t) = output(scr_run_in(&job, &["env", "-rc"], &[]));
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("-rc needs a command"), "{t}");
}

/// LLNL's testing/TEST (v3.1.0) checks that `scr_srun`'s output names `scr_prerun` and
/// `scr_postrun`, which it runs before the first run and after the last, and that no line
/// says `exit` with a non-zero number.
#[test]
fn scr_srun_says_it_ran_scr_prerun_and_scr_postrun() {
    let job = Job::new();
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "echo run"],
        &[("SCR_RUNS", "1")],
    ));
    assert_eq!(out.status.code(), Some(0), "{t}");
    let prerun = t.find("scr_prerun: ").unwrap_or_else(|| panic!("{t}"));
    let launched = t
        .find("attempt 1: launching")
        .unwrap_or_else(|| panic!("{t}"));
    let postrun = t.find("scr_postrun: ").unwrap_or_else(|| panic!("{t}"));
    assert!(prerun < launched && launched < postrun, "{t}");
    assert!(
        !t.lines().any(|l| l
            .split_once("exit")
            .is_some_and(|(_, rest)| rest.contains(|c: char| ('1'..='9').contains(&c)))),
        "{t}"
    );
}

/// SCR_RESHAPE=1 with a node down relaunches with fewer ranks, changing only the
/// launcher's own options: `-l` takes no value, so the word after it is the program, and
/// the program's own `-n 8` reaches every rank as given.
#[test]
fn a_reshaped_run_leaves_the_applications_own_arguments_alone() {
    let job = Job::new();
    let show = job.dir.path().join("show");
    // (each rank lives a moment: MPICH's mpiexec dies of SIGPIPE now and then when every
    // rank ends before it is done starting them — 42 of 300 plain `mpiexec -n 3` runs of
    // an echo under load, none of 100 whose ranks live 0.3 s)
    std::fs::write(&show, "#!/bin/sh\necho \"args: $*\"\nsleep 0.3\n").unwrap();
    std::fs::set_permissions(&show, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let show = show.to_string_lossy().into_owned();
    let line = ["mpiexec", "-l", &show, "-n", "8"];
    let env = [
        ("HYDRA_LAUNCHER", "fork"),
        ("SCR_NODELIST", "n[1-4]"),
        ("SCR_EXCLUDE_NODES", "n4"),
        ("SCR_RESHAPE", "1"),
        ("SCR_MIN_NODES", "3"),
        ("SCR_RUNS", "1"),
    ];
    let (out, t) = output(scr_run_in(&job, &line, &env));
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(t.matches("args: -n 8").count(), 3, "{t}");
    assert!(!t.contains("args: -n 6"), "{t}");
}

/// scr-run killed with SIGKILL (its allocation ending, an operator's kill) takes its run
/// with it: the launcher, in a process group of its own, is told by the kernel and ends.
#[test]
fn a_run_ends_when_scr_run_is_killed() {
    let job = Job::new();
    let pid_file = job.dir.path().join("launcher.pid");
    let script = format!("echo $$ > {}; exec sleep 300", pid_file.display());
    let mut cmd = scr_run_in(&job, &["sh", "-c", &script], &[("SCR_RUNS", "1")]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut scr_run = cmd.spawn().unwrap();
    let launched = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            launched.elapsed() < Duration::from_secs(60),
            "never launched"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    scr_run.kill().unwrap();
    scr_run.wait().unwrap();
    let killed = Instant::now();
    while running(pid as u32) {
        if killed.elapsed() > Duration::from_secs(30) {
            // SAFETY: ends the process this test's run left, so nothing outlives the test
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the run (pid {pid}) outlived scr-run's kill");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A cache base missing on every node is a setting, not nodes that failed: scr-run says so,
/// naming the directory, rather than leave the user to look for broken nodes.
#[test]
fn a_cache_base_no_node_has_is_said_to_be_a_setting() {
    let job = Job::new();
    let missing = job.dir.path().join("no-such-base");
    let (out, t) = output(scr_run_in(
        &job,
        &["sh", "-c", "exit 0"],
        &[
            ("SCR_RUNS", "1"),
            ("SCR_CACHE_BASE", missing.to_str().unwrap()),
        ],
    ));
    assert_ne!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains(&format!(
            "every node failed the node test on {}",
            missing.display()
        )) && t.contains("a setting to fix"),
        "{t}"
    );
    assert!(!t.contains("launching"), "{t}");
}
