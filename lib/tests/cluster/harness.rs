//! The cluster the scenarios run on (tests/cluster/cluster.sh), the job they run under
//! salloc and scr-run, and what they read back from what the application printed.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const STATE: &str = "/var/lib/scr-cluster";

pub fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cluster/cluster.sh")
}

/// A running cluster; torn down when dropped.
pub struct Cluster {
    /// Shared "parallel file system" for this test: the prefix and the application.
    pub dir: PathBuf,
    pub app: PathBuf,
}

impl Cluster {
    pub fn up(nodes: u32, name: &str) -> Cluster {
        Cluster::up_with(nodes, name, Mpi::Mpich)
    }

    /// A cluster whose application and libscr are built against `mpi`.
    pub fn up_with(nodes: u32, name: &str, mpi: Mpi) -> Cluster {
        let out = Command::new(harness())
            .args(["up", &nodes.to_string()])
            .output()
            .expect("tests/cluster/cluster.sh runs");
        assert!(out.status.success(), "cluster up: {}", text(&out));
        // the prefix and the binaries must be outside /tmp, which every node has its own of
        let dir = Path::new(STATE).join("jobs").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("prefix")).unwrap();
        // real copies, not links into the build tree: it may live under /tmp too
        let lib = match mpi {
            Mpi::Mpich => library("libscr_runtime.so"),
            Mpi::OpenMpi => open_mpi_library("libscr_runtime.so"),
        };
        std::fs::copy(lib, dir.join("libscr.so")).unwrap();
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        for exe in ["scr", "scr-run"] {
            std::fs::copy(scr_command().with_file_name(exe), dir.join("bin").join(exe)).unwrap();
        }
        let source = workspace().join("examples/c/test_api.c");
        let app = build_with(mpi.cc(), &dir, &source, "test_api");
        Cluster { dir, app }
    }

    /// The `scr` command in the shared directory, where every node sees it.
    pub fn scr(&self) -> PathBuf {
        self.dir.join("bin/scr")
    }

    pub fn scr_run_bin(&self) -> PathBuf {
        self.dir.join("bin/scr-run")
    }

    pub fn prefix(&self) -> PathBuf {
        self.dir.join("prefix")
    }

    /// `tool` (salloc, sbatch) under a bound of 300 s; KILL follows TERM after 10 s, because
    /// a salloc whose test was killed from outside may ignore TERM and hold the cluster.
    pub fn bounded(&self, tool: &str) -> Command {
        let mut cmd = self.cmd(Path::new("timeout"));
        cmd.args(["-k", "10", "300", tool]);
        cmd
    }

    pub fn cmd(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.prefix())
            .env("SLURM_CONF", Path::new(STATE).join("slurm.conf"))
            .env("PDSH_RCMD_TYPE", "ssh")
            .env("USER", "root")
            .env("SCR_PREFIX", self.prefix())
            .env("SCR_RUN_DELAY", "0")
            .env_remove("SCR_CONF_FILE")
            .env_remove("SCR_NODELIST")
            .env_remove("SCR_JOB_ID")
            .env_remove("SLURM_JOBID")
            .env_remove("SLURM_JOB_ID")
            .env_remove("SCR_SYSTEM_CONF_FILE");
        cmd
    }

    /// `salloc --no-kill -N<nodes> scr-run srun -N<ranks> -n<ranks> test_api <args>`.
    pub fn scr_run(&self, alloc: u32, ranks: u32, args: &[&str], env: &[(&str, &str)]) -> Command {
        self.scr_run_in(&[&format!("-N{alloc}")], ranks, args, env)
    }

    /// [`Cluster::scr_run`] with `salloc` options of the test's own (`-N4 -t 2`).
    pub fn scr_run_in(
        &self,
        salloc: &[&str],
        ranks: u32,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Command {
        let mut cmd = self.bounded("salloc");
        cmd.args(["--no-kill"])
            .args(salloc)
            .arg(self.scr_run_bin())
            .args(["srun", &format!("-N{ranks}"), &format!("-n{ranks}")])
            .arg(&self.app)
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn control(&self, args: &[&str]) {
        let out = Command::new(harness()).args(args).output().unwrap();
        assert!(out.status.success(), "cluster {args:?}: {}", text(&out));
    }

    pub fn index_entry(&self, name: &str) -> scr::index::IndexEntry {
        use scr::HashView;
        scr::index::IndexFile::read(&scr::layout::index_file(&self.prefix()))
            .unwrap()
            .entries()
            .into_iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} not in the index"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(harness()).arg("down").output();
    }
}

pub fn run(mut cmd: Command) -> (Output, String) {
    let out = cmd.output().unwrap();
    let t = text(&out);
    (out, t)
}

/// The newest checkpoint the application saw complete (test_api's TEST_API_TIMES lines,
/// printed after a Complete that succeeded) before it first restarted: the application's
/// own word, not SCR's index.
pub fn newest_completed(t: &str) -> u32 {
    completed_checkpoints(
        t.lines()
            .take_while(|l| !l.starts_with("test_api: restarted from ")),
    )
    .max()
    .unwrap_or_else(|| panic!("no checkpoint completed: {t}"))
}

/// The checkpoints test_api's TEST_API_TIMES lines say completed, in order.
pub fn completed_checkpoints<'a>(
    lines: impl Iterator<Item = &'a str>,
) -> impl Iterator<Item = u32> {
    lines.filter_map(|l| {
        l.strip_prefix("test_api: checkpoint ")?
            .split(" took ")
            .next()?
            .parse()
            .ok()
    })
}

/// Asserts the job's output shows a verified restart from the newest checkpoint the first
/// run completed, which was never flushed (SCR_FLUSH=0): it came from the cache, rebuilt.
pub fn restarted_from_cache(c: &Cluster, t: &str) {
    let newest = newest_completed(t);
    assert!(
        t.contains(&format!(
            "test_api: restarted from ckpt.{newest} (timestep {newest}), data verified"
        )),
        "not restarted from ckpt.{newest}, the newest the first run completed: {t}"
    );
    assert!(
        !c.prefix().join(format!("ckpt.{newest}")).exists() || t.contains("attempt 2"),
        "{t}"
    );
}

/// Kills node `i` once the application has written `after` checkpoints.
pub fn kill_node_after_checkpoint(
    cluster: &Cluster,
    i: u32,
    after: u32,
) -> std::thread::JoinHandle<()> {
    kill_nodes_after_checkpoint(cluster, &[i], after)
}

/// Kills nodes `nodes` (at once) once the application has written `after` checkpoints.
pub fn kill_nodes_after_checkpoint(
    cluster: &Cluster,
    nodes: &[u32],
    after: u32,
) -> std::thread::JoinHandle<()> {
    let nodes = nodes.to_vec();
    let harness = harness();
    let flush = scr::layout::flush_file(&cluster.prefix());
    std::thread::spawn(move || {
        use scr::HashView;
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let latest = scr::flush::FlushFile::read(&flush)
                .ok()
                .and_then(|f| f.latest())
                .unwrap_or(0);
            if latest >= after as u64 {
                for i in &nodes {
                    let _ = Command::new(&harness)
                        .args(["kill-node", &i.to_string()])
                        .output();
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the application never reached checkpoint {after}");
    })
}
