//! Running `scr-run` on the job's emulated nodes.

use super::*;
use std::time::Duration;

/// The `scr-run` built beside `scr`.
pub fn scr_run() -> PathBuf {
    scr_command().with_file_name("scr-run")
}

/// MPICH's hydra on emulated nodes: `mpiexec -launcher fork -hosts HOSTS -n RANKS`, then
/// the program and its arguments.
pub fn hydra_on(hosts: &str, ranks: u32, program: &[&str]) -> Vec<String> {
    let ranks = ranks.to_string();
    [
        "mpiexec",
        "-launcher",
        "fork",
        "-hosts",
        hosts,
        "-n",
        &ranks,
    ]
    .iter()
    .chain(program)
    .map(|a| a.to_string())
    .collect()
}

/// scr-run with the job's directories, job id 5151 and no pause between runs.
pub fn scr_run_in<A: AsRef<std::ffi::OsStr>>(
    job: &Job,
    args: &[A],
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = Command::new(scr_run());
    cmd.args(args)
        .current_dir(job.prefix())
        .env("MPIEXEC_TIMEOUT", "120")
        .env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_PREFIX", job.prefix())
        .env("SCR_JOB_ID", "5151")
        .env("SCR_RUN_DELAY", "0")
        .env_remove("SCR_CONF_FILE")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// scr-run of the job's steps program on n1,n2 that sets its own prefix `own`
/// (`SCR_Configf("SCR_PREFIX=…")`, as integration.rst suggests, and runs there) and then
/// `steps`; SCR_PREFIX is set nowhere, so scr-run's prefix is its working directory and
/// nothing in the environment overrides the application's.
pub fn run_with_apps_own_prefix(
    job: &Job,
    own: &Path,
    steps: &[&str],
    env: &[(&str, &str)],
) -> (Output, String) {
    let app = job.app.to_str().unwrap();
    let configf = format!("configf=SCR_PREFIX:{}", own.display());
    let chdir = format!("chdir={}", own.display());
    let program: Vec<&str> = [app, &configf, &chdir]
        .into_iter()
        .chain(steps.iter().copied())
        .collect();
    let mut cmd = scr_run_in(job, &hydra_on("n1,n2", 2, &program), env);
    cmd.env("SCR_NODELIST", "n[1-2]").env_remove("SCR_PREFIX");
    output(cmd)
}

/// Runs scr-run, bounded: a run that should end and hangs fails the test (the tests that
/// measure how soon scr-run stops ask for less).
pub fn output(mut cmd: Command) -> (Output, String) {
    let out = output_within(&mut cmd, Duration::from_secs(180));
    let t = text(&out);
    (out, t)
}
