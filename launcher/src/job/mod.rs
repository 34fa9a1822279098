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
    /// Open MPI's `mpirun`/`mpiexec` (SCR 3's `scr_mpirun`): the user's `--host` list or
    /// hostfile narrowed to the nodes still up, else `--host <up nodes>`. Inside a SLURM
    /// allocation Open MPI takes the allocation and `--host` restricts it; it starts its
    /// daemons with `srun`, whose step on a dead node would hold the next run back as
    /// scr-run's own srun steps did, so `slurm_overlap` passes them `--overlap` too
    /// (`--mca plm_slurm_args --overlap`).
    OpenMpi { slurm_overlap: bool },
    /// Anything else runs as given (one node, no exclusion possible).
    Direct,
}

impl Launcher {
    pub fn of(command: &str) -> Launcher {
        match base_name(command) {
            "srun" => Launcher::Srun { overlap: false },
            "mpiexec" | "mpirun" | "mpiexec.hydra" | "mpiexec.mpich" | "mpirun.mpich" => {
                Launcher::Mpiexec
            }
            "mpirun.openmpi" | "mpiexec.openmpi" | "orterun" | "prterun" => Launcher::OpenMpi {
                slurm_overlap: false,
            },
            _ => Launcher::Direct,
        }
    }

    /// [`Launcher::of`], asking the installed SLURM what its `srun` supports.
    pub fn detect(command: &str) -> Launcher {
        let open_mpi = || Launcher::OpenMpi {
            slurm_overlap: in_slurm_allocation() && srun_has_overlap("srun"),
        };
        match Launcher::of(command) {
            Launcher::Srun { .. } => Launcher::Srun {
                overlap: srun_has_overlap(command),
            },
            // `mpirun` is MPICH's or Open MPI's, whichever the system's alternatives chose
            Launcher::Mpiexec if matches!(base_name(command), "mpirun" | "mpiexec") => {
                match child::read(command, ["--version"]) {
                    Ok(v) if is_open_mpi(&v) => open_mpi(),
                    _ => Launcher::Mpiexec,
                }
            }
            Launcher::OpenMpi { .. } => open_mpi(),
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
                // a rank that dies ends the step: without it (SLURM's KillOnBadExit=0
                // default) the others wait in MPI for it forever and the run never ends,
                // so scr-run never gets to relaunch
                let theirs = out.iter().any(|a| {
                    a == "-K" || a.starts_with("-K") || a.starts_with("--kill-on-bad-exit")
                });
                if !theirs {
                    out.insert(1, "--kill-on-bad-exit=1".into());
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
            Launcher::OpenMpi { slurm_overlap } => {
                open_mpi_hosts(&mut out, nodes, down);
                let theirs = out.windows(2).any(|w| w[1] == "plm_slurm_args");
                if *slurm_overlap && !theirs {
                    out.splice(
                        1..1,
                        ["--mca", "plm_slurm_args", "--overlap"].map(String::from),
                    );
                }
            }
            _ => {}
        }
        out
    }
}

/// Whether scr-run runs inside a SLURM allocation (Open MPI then takes its nodes from it).
fn in_slurm_allocation() -> bool {
    scr::layout::resource_manager_job_id(|k| std::env::var(k).ok()).is_some()
}

fn base_name(command: &str) -> &str {
    std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command)
}

/// Whether `mpirun --version` came from Open MPI ("mpirun (Open MPI) 4.1.4", or
/// "mpirun.openmpi (OpenRTE) 4.1.4" under Debian's name).
fn is_open_mpi(version: &str) -> bool {
    version.contains("Open MPI") || version.contains("OpenRTE")
}

/// Open MPI's host options, narrowed to the nodes still up: a `--host`/`-host`/`-H` list
/// (entries `name` or `name:slots`) loses the down nodes; a hostfile becomes a `--host` list
/// of its entries still up, slots kept (Open MPI has no exclude option); without either,
/// `--host` lists the up nodes (one slot each: give `--host n1:2,…` or a hostfile to run
/// several ranks per node).
fn open_mpi_hosts(out: &mut Vec<String>, nodes: &HostSet, down: &HostSet) {
    let is_down = |entry: &str| {
        let name = entry.split(':').next().unwrap_or(entry);
        down.contains(name)
    };
    let flag = |names: &[&str]| out.iter().position(|a| names.contains(&a.as_str()));
    if let Some(i) = flag(&["--host", "-host", "-H"]).filter(|i| i + 1 < out.len()) {
        let kept: Vec<&str> = out[i + 1].split(',').filter(|e| !is_down(e)).collect();
        out[i + 1] = kept.join(",");
        return;
    }
    let hostfile_flags = ["--hostfile", "-hostfile", "--machinefile", "-machinefile"];
    if let Some(i) = flag(&hostfile_flags).filter(|i| i + 1 < out.len()) {
        if down.is_empty() {
            return;
        }
        if let Ok(text) = std::fs::read_to_string(&out[i + 1]) {
            let kept: Vec<String> = hostfile_entries(&text)
                .into_iter()
                .filter(|e| !is_down(e))
                .collect();
            out.splice(i..i + 2, ["--host".to_string(), kept.join(",")]);
        }
        return;
    }
    if nodes.count() > 1 || !down.is_empty() {
        out.insert(1, "--host".into());
        out.insert(2, comma_list(&nodes.difference(down)));
    }
}

/// The hosts of an Open MPI hostfile as `--host` entries: `node slots=2` → `node:2`;
/// comments and blank lines skipped.
fn hostfile_entries(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next().unwrap_or("");
            let slots = words.find_map(|w| w.strip_prefix("slots="));
            match slots {
                Some(n) => format!("{name}:{n}"),
                None => name.to_string(),
            }
        })
        .collect()
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
/// The run's command line for `up` nodes where it asks for more (SCR_RESHAPE: the
/// application restarts on any number of ranks): srun's node count (`-N`, `--nodes`) becomes
/// `up` and its task count (`-n`, `--ntasks`) keeps the ranks per node; hydra's and Open
/// MPI's process count (`-n`, `-np`) keeps the ranks per node of the `allocated` nodes. A
/// line without such counts, or asking for no more than `up` nodes, is left as it is. Only
/// the launcher's options are read: they end at the first word that is neither an option
/// nor the value after one (so the application's own `-n` is never touched).
pub fn reshape_for(launcher: Launcher, args: &[String], allocated: u64, up: u64) -> Vec<String> {
    let mut out = args.to_vec();
    // the launcher's own words: up to the program, the first word that is not an option and
    // does not follow an option waiting for its value
    let options_end = (1..out.len())
        .find(|&i| {
            let (word, before) = (&out[i], &out[i - 1]);
            // `-N` or `--nodes` wait for a value; `-N4` and `--nodes=4` hold theirs
            let waits = (before.len() == 2 && before.starts_with('-'))
                || (before.starts_with("--") && !before.contains('='));
            !word.starts_with('-') && (i == 1 || !waits)
        })
        .unwrap_or(out.len());
    let find = |out: &[String], short: &str, long: &[&str]| -> Option<(usize, bool, u64)> {
        (1..options_end).find_map(|i| {
            let a = out[i].as_str();
            if a == short || long.contains(&a) {
                return Some((i, false, out.get(i + 1)?.parse().ok()?));
            }
            let attached = long
                .iter()
                .find_map(|l| a.strip_prefix(&format!("{l}=")))
                .or_else(|| a.strip_prefix(short).filter(|v| !v.is_empty()))?;
            Some((i, true, attached.parse().ok()?))
        })
    };
    let set = |out: &mut Vec<String>, (i, attached, _): (usize, bool, u64), flag: &str, n: u64| {
        if attached {
            out[i] = format!("{flag}{n}");
        } else {
            out[i + 1] = n.to_string();
        }
    };
    let (nodes, tasks) = match launcher {
        Launcher::Srun { .. } => (
            find(&out, "-N", &["--nodes"]),
            find(&out, "-n", &["--ntasks"]),
        ),
        Launcher::Mpiexec | Launcher::OpenMpi { .. } => {
            (None, find(&out, "-n", &["-np", "--n", "--np"]))
        }
        Launcher::Direct => (None, None),
    };
    let asked = nodes.map_or(allocated, |(_, _, n)| n);
    if asked <= up || asked == 0 {
        return out;
    }
    if let Some(n) = nodes {
        let flag = if n.1 && out[n.0].starts_with("--") {
            "--nodes="
        } else {
            "-N"
        };
        set(&mut out, n, flag, up);
    }
    if let Some(t) = tasks {
        let ranks = (t.2 * up / asked).max(1);
        let flag = match (t.1, out[t.0].split('=').next()) {
            (true, Some(long)) if long.starts_with("--") => format!("{long}="),
            _ => "-n".to_string(),
        };
        set(&mut out, t, &flag, ranks);
    }
    out
}

fn comma_list(set: &HostSet) -> String {
    set.iter().collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_reshaped_relaunch_keeps_the_ranks_per_node() {
        let srun = Launcher::Srun { overlap: false };
        let line = |s: &str| args(&s.split(' ').collect::<Vec<_>>());
        assert_eq!(
            reshape_for(srun, &line("srun -N4 -n8 ./app 5"), 4, 3),
            line("srun -N3 -n6 ./app 5")
        );
        assert_eq!(
            reshape_for(srun, &line("srun --nodes=4 --ntasks 4 ./app"), 6, 2),
            line("srun --nodes=2 --ntasks 2 ./app")
        );
        assert_eq!(
            reshape_for(srun, &line("srun -N 4 -n 4 ./app -n 9"), 4, 3),
            line("srun -N 3 -n 3 ./app -n 9")
        );
        // enough nodes, no counts, or a launcher scr-run cannot narrow: as given
        assert_eq!(
            reshape_for(srun, &line("srun -N2 -n2 ./app"), 4, 3),
            line("srun -N2 -n2 ./app")
        );
        assert_eq!(
            reshape_for(srun, &line("srun ./app"), 4, 3),
            line("srun ./app")
        );
        assert_eq!(
            reshape_for(Launcher::Direct, &line("./app -n 4"), 4, 3),
            line("./app -n 4")
        );
        // hydra: the ranks per node of the allocation
        assert_eq!(
            reshape_for(Launcher::Mpiexec, &line("mpiexec -n 8 ./app"), 4, 3),
            line("mpiexec -n 6 ./app")
        );
        assert_eq!(
            reshape_for(Launcher::Mpiexec, &line("mpiexec -np 8 ./app -n 2"), 4, 2),
            line("mpiexec -np 4 ./app -n 2")
        );
        // the application's -n is its own
        assert_eq!(
            reshape_for(srun, &line("srun -N4 ./app -n 8"), 4, 3),
            line("srun -N3 ./app -n 8")
        );
    }
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn open_mpi_host_lists_and_hostfiles_lose_the_down_nodes() {
        let nodes: HostSet = "n[1-4]".parse().unwrap();
        let down: HostSet = "n3".parse().unwrap();
        let ompi = Launcher::OpenMpi {
            slurm_overlap: false,
        };
        assert_eq!(
            ompi.command(&args(&["mpirun", "-np", "3", "./app"]), &nodes, &down),
            args(&["mpirun", "--host", "n1,n2,n4", "-np", "3", "./app"])
        );
        assert_eq!(
            ompi.command(
                &args(&["mpirun", "-H", "n1:2,n3:2,n4", "./app"]),
                &nodes,
                &down
            ),
            args(&["mpirun", "-H", "n1:2,n4", "./app"])
        );
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hosts");
        std::fs::write(&hostfile, "# nodes\nn1 slots=2\nn3 slots=2  # bad\n\nn4\n").unwrap();
        let hf = hostfile.to_str().unwrap();
        assert_eq!(
            ompi.command(
                &args(&["mpirun", "--hostfile", hf, "-np", "3", "./app"]),
                &nodes,
                &down
            ),
            args(&["mpirun", "--host", "n1:2,n4", "-np", "3", "./app"])
        );
        // nothing down: the hostfile stays as given
        assert_eq!(
            ompi.command(
                &args(&["mpirun", "--hostfile", hf, "./app"]),
                &nodes,
                &HostSet::new()
            ),
            args(&["mpirun", "--hostfile", hf, "./app"])
        );
        assert_eq!(
            Launcher::OpenMpi {
                slurm_overlap: true
            }
            .command(&args(&["mpirun", "-np", "3", "./app"]), &nodes, &down),
            args(&[
                "mpirun",
                "--mca",
                "plm_slurm_args",
                "--overlap",
                "--host",
                "n1,n2,n4",
                "-np",
                "3",
                "./app"
            ])
        );
        assert_eq!(
            Launcher::of("/usr/bin/mpirun.openmpi"),
            Launcher::OpenMpi {
                slurm_overlap: false
            }
        );
        assert!(is_open_mpi(
            "mpirun.openmpi (OpenRTE) 4.1.4\n\nReport bugs to"
        ));
        assert!(is_open_mpi("mpirun (Open MPI) 5.0.3"));
        assert!(!is_open_mpi("HYDRA build details:\n    Version: 4.0.2"));
    }

    #[test]
    fn down_nodes_are_kept_out_of_each_launcher() {
        let nodes: HostSet = "node[1-4]".parse().unwrap();
        let down: HostSet = "node3".parse().unwrap();
        let none = HostSet::new();
        let srun = Launcher::Srun { overlap: false };
        assert_eq!(
            srun.command(&args(&["srun", "-N3", "./app"]), &nodes, &down),
            args(&[
                "srun",
                "--kill-on-bad-exit=1",
                "--exclude=node3",
                "-N3",
                "./app"
            ])
        );
        assert_eq!(
            srun.command(&args(&["srun", "./app"]), &nodes, &none),
            args(&["srun", "--kill-on-bad-exit=1", "./app"])
        );
        // the user's own choice stands
        assert_eq!(
            srun.command(&args(&["srun", "-K0", "./app"]), &nodes, &none),
            args(&["srun", "-K0", "./app"])
        );
        let srun = Launcher::Srun { overlap: true };
        assert_eq!(
            srun.command(&args(&["srun", "-N3", "./app"]), &nodes, &down),
            args(&[
                "srun",
                "--kill-on-bad-exit=1",
                "--overlap",
                "--exclude=node3",
                "-N3",
                "./app"
            ])
        );
        assert_eq!(
            srun.command(&args(&["srun", "--overlap", "-K", "./app"]), &nodes, &none),
            args(&["srun", "--overlap", "-K", "./app"])
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
