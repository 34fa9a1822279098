//! What a job is to the launcher (SCR 3's `scrjob` boundaries): the resource manager that
//! owns the allocation, the launcher that starts the application on it, down-node
//! detection, and the relaunch loop over them.

mod argv;
pub mod child;
pub mod drain;
mod node_test;
mod nodes;
pub mod progress;
pub mod remote;
mod resource;
mod run_loop;

use argv::LauncherWords;
pub use argv::reshape_for;
pub use node_test::{NodeCheck, check_node};
pub use nodes::{DownNodeQuery, list_down_nodes};
pub use resource::{
    ResourceManager, detect as detect_resource_manager, local_host_name, local_node_cntl_dir,
};
pub use run_loop::{
    DownNode, Ending, Event, HaltCondition, JobOps, LoopConfig, NotEnded, Outcome, run_loop,
};

use hostlist::HostSet;
use std::path::Path;

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

    /// `argv` (a run's command line, launcher first) passing each variable of `names` to
    /// every rank: Open MPI's mpirun gives the environment to the ranks on its own node
    /// alone (its daemons elsewhere start from a login's) unless each is named with `-x`;
    /// the other launchers pass theirs on.
    pub fn passing_env(&self, mut argv: Vec<String>, names: &[&str]) -> Vec<String> {
        if matches!(self, Launcher::OpenMpi { .. }) {
            let named = names.iter().flat_map(|n| ["-x".to_string(), n.to_string()]);
            argv.splice(1..1, named);
        }
        argv
    }

    /// The command line for one run on `nodes` minus `down`: `args` is what the user
    /// gave (launcher first).
    pub fn command(&self, args: &[String], nodes: &HostSet, down: &HostSet) -> Vec<String> {
        let mut out = args.to_vec();
        // only the launcher's own options count: the application's words are its own
        let words = LauncherWords::of(*self, args);
        match self {
            Launcher::Srun { overlap } => {
                if !down.is_empty() {
                    out.insert(1, format!("--exclude={down}"));
                }
                if *overlap && !words.has(&["overlap"]) {
                    out.insert(1, "--overlap".into());
                }
                // a rank that dies ends the step: without it (SLURM's KillOnBadExit=0
                // default) the others wait in MPI for it forever and the run never ends,
                // so scr-run never gets to relaunch
                if !words.has(&["K", "kill-on-bad-exit"]) {
                    out.insert(1, "--kill-on-bad-exit=1".into());
                }
            }
            Launcher::Mpiexec => {
                let up = nodes.difference(down);
                // the user's own host list, narrowed to the nodes still up
                let host_file = words.value_of(&["f", "hostfile", "machinefile"]);
                match words.value_of(&["hosts", "host"]) {
                    Some((word, at)) => {
                        let kept = hydra_hosts_without(&args[word][at..], nodes, down);
                        out[word] = format!("{}{kept}", &args[word][..at]);
                    }
                    // the user's host file names the hosts (hydra takes no `-hosts` beside
                    // it): as it is while every node is up; without the nodes that are down,
                    // as a host list, once some are
                    None if host_file.is_some() => {
                        let (word, at) = host_file.expect("a host file");
                        if let Some(listed) = (!down.is_empty())
                            .then(|| hydra_host_file(Path::new(&args[word][at..])))
                            .flatten()
                        {
                            let kept = hydra_hosts_without(&listed, nodes, down);
                            if at == 0 {
                                out[word - 1] = "-hosts".into();
                                out[word] = kept;
                            } else {
                                out[word] = "-hosts".into();
                                out.insert(word + 1, kept);
                            }
                        }
                    }
                    None if nodes.count() > 1 || !down.is_empty() => {
                        out.insert(1, "-hosts".into());
                        out.insert(2, comma_list(&up));
                    }
                    None => {}
                }
            }
            Launcher::OpenMpi { slurm_overlap } => {
                open_mpi_hosts(&mut out, &words, nodes, down);
                let theirs = words.options.iter().any(|o| {
                    o.name == "mca"
                        && o.value
                            .is_some_and(|(w, at)| at == 0 && args[w - 1] == "plm_slurm_args")
                });
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
fn open_mpi_hosts(out: &mut Vec<String>, words: &LauncherWords, nodes: &HostSet, down: &HostSet) {
    let is_down = |entry: &str| {
        let name = entry.split(':').next().unwrap_or(entry);
        down.contains(name)
    };
    if let Some((word, at)) = words.value_of(&["host", "H"]) {
        let kept: Vec<&str> = out[word][at..].split(',').filter(|e| !is_down(e)).collect();
        out[word] = format!("{}{}", &out[word][..at], kept.join(","));
        return;
    }
    if let Some((word, at)) = words.value_of(&["hostfile", "machinefile"]) {
        if down.is_empty() {
            return;
        }
        if let Ok(text) = std::fs::read_to_string(&out[word][at..]) {
            let kept: Vec<String> = hostfile_entries(&text)
                .into_iter()
                .filter(|e| !is_down(e))
                .collect();
            // the option and its value, one word (`--hostfile=f`) or two
            let option = if at > 0 { word } else { word - 1 };
            out.splice(option..=word, ["--host".to_string(), kept.join(",")]);
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
/// A hydra host list (`n1,n2` or `n1:2,n2:2`, a host and its process count) for a run on
/// `nodes` minus `down`: each host that is down gives its place, and its count, to a spare
/// (an allocated node up and not in the list), in the allocation's order; with no spare
/// left it is dropped. A list written as a range (`n[1-4]`) is taken as its hosts.
/// A hydra host file (`host` or `host:count` a line, `#` comments) as a `-hosts` list; None
/// when it cannot be read (hydra then says so itself).
fn hydra_host_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let hosts: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split('#').next()?.split_whitespace().next())
        .collect();
    Some(hosts.join(","))
}

fn hydra_hosts_without(list: &str, nodes: &HostSet, down: &HostSet) -> String {
    let entries: Vec<(String, Option<&str>)> = list
        .split(',')
        .filter(|e| !e.is_empty())
        .flat_map(|e| {
            let (hosts, count) = match e.rsplit_once(':') {
                Some((h, c)) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => {
                    (h, Some(c))
                }
                _ => (e, None),
            };
            // a range is its hosts, each with the count
            let names: Vec<String> = hosts
                .parse::<HostSet>()
                .map(|set| set.iter().collect())
                .unwrap_or_else(|_| vec![hosts.to_string()]);
            names.into_iter().map(move |n| (n, count))
        })
        .collect();
    let listed = HostSet::from_names(entries.iter().map(|(h, _)| h.as_str()));
    let mut spares = nodes
        .difference(down)
        .difference(&listed)
        .iter()
        .collect::<Vec<_>>()
        .into_iter();
    entries
        .into_iter()
        .filter_map(|(host, count)| {
            let host = if down.contains(&host) {
                spares.next()?
            } else {
                host
            };
            Some(match count {
                Some(c) => format!("{host}:{c}"),
                None => host,
            })
        })
        .collect::<Vec<_>>()
        .join(",")
}

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
            args(&["mpiexec", "-hosts", "node1,node2", "./app"])
        );
        // hydra's host:count entries keep their counts; the down host's goes to a spare,
        // and with no spare left the entry is dropped
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", "-hosts", "node3:2,node1:2", "-n", "4", "./app"]),
                &nodes,
                &down
            ),
            args(&["mpiexec", "-hosts", "node2:2,node1:2", "-n", "4", "./app"])
        );
        let three: HostSet = "node[1-3]".parse().unwrap();
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", "-hosts", "node1:2,node2:2,node3:2", "./app"]),
                &three,
                &down
            ),
            args(&["mpiexec", "-hosts", "node1:2,node2:2", "./app"])
        );
        // the user's host file: as it is while every node is up, narrowed to a host list
        // (counts kept) once one is down
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(&file, "# the job's nodes\nnode1:2\nnode3:2 # second\n").unwrap();
        let f = file.to_str().unwrap();
        for given in [vec!["mpiexec", "-f", f], vec!["mpiexec", "--hostfile", f]] {
            let run = |down: &HostSet| {
                let mut a = given.clone();
                a.extend(["-n", "4", "./app"]);
                Launcher::Mpiexec.command(&args(&a), &nodes, down)
            };
            let mut same = given.clone();
            same.extend(["-n", "4", "./app"]);
            assert_eq!(run(&none), args(&same));
            assert_eq!(
                run(&down),
                args(&["mpiexec", "-hosts", "node1:2,node2:2", "-n", "4", "./app"])
            );
        }
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", &format!("--machinefile={f}"), "./app"]),
                &nodes,
                &down
            ),
            args(&["mpiexec", "-hosts", "node1:2,node2:2", "./app"])
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
    fn the_applications_own_options_never_count_as_the_launchers() {
        let nodes: HostSet = "node[1-4]".parse().unwrap();
        let down: HostSet = "node3".parse().unwrap();
        let srun = Launcher::Srun { overlap: true };
        assert_eq!(
            srun.command(&args(&["srun", "./app", "-K", "--overlap"]), &nodes, &down),
            args(&[
                "srun",
                "--kill-on-bad-exit=1",
                "--overlap",
                "--exclude=node3",
                "./app",
                "-K",
                "--overlap"
            ])
        );
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", "-n", "3", "./app", "-hosts", "node1,node3"]),
                &nodes,
                &down
            ),
            args(&[
                "mpiexec",
                "-hosts",
                "node1,node2,node4",
                "-n",
                "3",
                "./app",
                "-hosts",
                "node1,node3"
            ])
        );
        assert_eq!(
            Launcher::Mpiexec.command(
                &args(&["mpiexec", "-hosts=node1,node3", "./app"]),
                &nodes,
                &down
            ),
            args(&["mpiexec", "-hosts=node1,node2", "./app"])
        );
        let ompi = Launcher::OpenMpi {
            slurm_overlap: false,
        };
        assert_eq!(
            ompi.command(&args(&["mpirun", "./app", "-H", "node3"]), &nodes, &down),
            args(&[
                "mpirun",
                "--host",
                "node1,node2,node4",
                "./app",
                "-H",
                "node3"
            ])
        );
    }

    #[test]
    fn open_mpi_is_told_the_variables_every_rank_needs_and_the_others_pass_them_on() {
        let line = args(&["mpirun", "-np", "2", "./app"]);
        let ompi = Launcher::OpenMpi {
            slurm_overlap: false,
        };
        assert_eq!(
            ompi.passing_env(line.clone(), &["SCR_JOB_ID", "SCR_LAUNCH_ID"]),
            args(&[
                "mpirun",
                "-x",
                "SCR_JOB_ID",
                "-x",
                "SCR_LAUNCH_ID",
                "-np",
                "2",
                "./app"
            ])
        );
        for other in [Launcher::Srun { overlap: false }, Launcher::Mpiexec] {
            assert_eq!(other.passing_env(line.clone(), &["SCR_JOB_ID"]), line);
        }
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
