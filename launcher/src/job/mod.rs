//! What a job is to the launcher (SCR 3's `scrjob` boundaries): the resource manager that
//! owns the allocation, the launcher that starts the application on it, down-node
//! detection, and the relaunch loop over them.

pub mod child;
pub mod drain;
mod nodes;
pub mod progress;
pub mod remote;
mod resource;
mod run_loop;

pub use nodes::{DownNodeQuery, NodeCheck, check_node, list_down_nodes};
pub use resource::{
    ResourceManager, detect as detect_resource_manager, local_host_name, local_node_cntl_dir,
};
pub use run_loop::{DownNode, Ending, Event, JobOps, LoopConfig, Outcome, run_loop};

use hostlist::HostSet;

/// How the application is started, and how down nodes are kept out of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// SLURM's `srun`: `--exclude=<down nodes>`, and `--overlap` where SLURM has it
    /// (20.11 and later): a step left behind on a node that died holds its CPUs until
    /// slurmctld gives up on it, and without sharing the next run waits behind it —
    /// seen here for ten minutes, until the allocation expired. scr-run runs one step at a
    /// time, so sharing takes nothing from anyone.
    Srun { overlap: bool },
    /// MPICH hydra's `mpiexec`/`mpirun`: `-hosts <up nodes>`.
    Mpiexec,
    /// Anything else runs as given (one node, no exclusion possible).
    Direct,
}

impl Launcher {
    pub fn of(command: &str) -> Launcher {
        match std::path::Path::new(command)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(command)
        {
            "srun" => Launcher::Srun { overlap: false },
            "mpiexec" | "mpirun" | "mpiexec.hydra" | "mpiexec.mpich" => Launcher::Mpiexec,
            _ => Launcher::Direct,
        }
    }

    /// [`Launcher::of`], asking the installed SLURM what its `srun` supports.
    pub fn detect(command: &str) -> Launcher {
        match Launcher::of(command) {
            Launcher::Srun { .. } => Launcher::Srun {
                overlap: srun_has_overlap(command),
            },
            other => other,
        }
    }

    /// The command line for one run on `nodes` minus `down`: `args` is what the user
    /// gave (launcher first).
    pub fn command(&self, args: &[String], nodes: &HostSet, down: &HostSet) -> Vec<String> {
        let mut out = args.to_vec();
        match self {
            Launcher::Srun { overlap } => {
                if !down.is_empty() {
                    out.insert(1, format!("--exclude={down}"));
                }
                if *overlap && !out.iter().any(|a| a == "--overlap") {
                    out.insert(1, "--overlap".into());
                }
            }
            Launcher::Mpiexec => {
                let up = nodes.difference(down);
                // the user's own host list, narrowed to the nodes still up
                let flag = out
                    .iter()
                    .position(|a| matches!(a.as_str(), "-hosts" | "-host" | "--hosts" | "--host"));
                match flag {
                    Some(i) if i + 1 < out.len() => {
                        let theirs: Option<HostSet> = out[i + 1].parse().ok();
                        if let Some(theirs) = theirs {
                            out[i + 1] = comma_list(&theirs.difference(down));
                        }
                    }
                    _ if nodes.count() > 1 || !down.is_empty() => {
                        out.insert(1, "-hosts".into());
                        out.insert(2, comma_list(&up));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        out
    }
}

/// Whether this `srun` takes `--overlap` (SLURM 20.11 and later); asked once.
pub fn srun_has_overlap(srun: &str) -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        child::read(srun, ["--version"]).is_ok_and(|v| slurm_version_at_least(&v, (20, 11)))
    })
}

/// Whether `srun --version` output ("slurm 22.05.8") is at least `want` (major, minor).
fn slurm_version_at_least(version: &str, want: (u32, u32)) -> bool {
    let mut numbers = version
        .split_whitespace()
        .last()
        .unwrap_or("")
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= want,
        _ => false,
    }
}

/// Hydra takes plain comma-separated host names, not bracket ranges.
fn comma_list(set: &HostSet) -> String {
    set.iter().collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn down_nodes_are_kept_out_of_each_launcher() {
        let nodes: HostSet = "node[1-4]".parse().unwrap();
        let down: HostSet = "node3".parse().unwrap();
        let none = HostSet::new();
        let srun = Launcher::Srun { overlap: false };
        assert_eq!(
            srun.command(&args(&["srun", "-N3", "./app"]), &nodes, &down),
            args(&["srun", "--exclude=node3", "-N3", "./app"])
        );
        assert_eq!(
            srun.command(&args(&["srun", "./app"]), &nodes, &none),
            args(&["srun", "./app"])
        );
        let srun = Launcher::Srun { overlap: true };
        assert_eq!(
            srun.command(&args(&["srun", "-N3", "./app"]), &nodes, &down),
            args(&["srun", "--overlap", "--exclude=node3", "-N3", "./app"])
        );
        assert_eq!(
            srun.command(&args(&["srun", "--overlap", "./app"]), &nodes, &none),
            args(&["srun", "--overlap", "./app"])
        );
        assert_eq!(
            Launcher::Mpiexec.command(&args(&["mpiexec", "-n", "3", "./app"]), &nodes, &down),
            args(&["mpiexec", "-hosts", "node1,node2,node4", "-n", "3", "./app"])
        );
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", "-hosts", "node1,node3", "./app"]),
                &nodes,
                &down
            ),
            args(&["mpiexec", "-hosts", "node1", "./app"])
        );
        let one: HostSet = "localhost".parse().unwrap();
        assert_eq!(
            Launcher::Mpiexec.command(&args(&["mpiexec", "-n", "2", "./app"]), &one, &none),
            args(&["mpiexec", "-n", "2", "./app"])
        );
        assert_eq!(Launcher::of("/usr/bin/mpirun"), Launcher::Mpiexec);
        assert_eq!(Launcher::of("./app"), Launcher::Direct);
    }

    #[test]
    fn overlap_needs_slurm_20_11() {
        assert!(slurm_version_at_least("slurm 22.05.8\n", (20, 11)));
        assert!(slurm_version_at_least("slurm 20.11.0", (20, 11)));
        assert!(slurm_version_at_least("slurm-wlm 23.02.1", (20, 11)));
        assert!(!slurm_version_at_least("slurm 20.02.7", (20, 11)));
        assert!(!slurm_version_at_least("garbage", (20, 11)));
    }
}
