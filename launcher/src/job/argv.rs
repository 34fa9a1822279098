//! The launcher's own words on a command line, read as that launcher reads them: which of
//! its options take a value (one word, two for hydra's `-genv` and Open MPI's `--mca`, or
//! attached: `-N4`, `--nodes=4`, `-n=8`), which take none, and where the program starts.
//! Everything from the program on is the application's and is never read or changed.
//!
//! An option a table does not know counts as taking no value: the next word is then taken
//! for the program, so at worst a count after it is not found and a relaunch asks for the
//! nodes it asked for before (and fails saying so), never rewriting the application's words.

use super::Launcher;

/// One option among the launcher's words: its name (without dashes) and where its value is
/// (`args[word][at..]`: attached after `at` characters, or the whole following word).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Opt {
    pub name: String,
    pub value: Option<(usize, usize)>,
}

/// The launcher's options on a command line, in order: the words before the program.
#[derive(Debug)]
pub(crate) struct LauncherWords {
    pub options: Vec<Opt>,
}

impl LauncherWords {
    /// Reads `args` (launcher first) as `launcher` would.
    pub fn of(launcher: Launcher, args: &[String]) -> LauncherWords {
        match launcher {
            Launcher::Srun { .. } => getopt(args, SRUN_SHORT_VALUE, SRUN_LONG_VALUE),
            Launcher::Mpiexec => one_dash(args, HYDRA_VALUE, HYDRA_TWO_VALUES),
            Launcher::OpenMpi { .. } => one_dash(args, OPEN_MPI_VALUE, OPEN_MPI_TWO_VALUES),
            Launcher::Direct => LauncherWords {
                options: Vec::new(),
            },
        }
    }

    /// Whether the launcher was given any of `names`.
    pub fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|o| names.contains(&o.name.as_str()))
    }

    /// Where the value of the last of `names` given is (the launchers let a later option
    /// override an earlier one).
    pub fn value_of(&self, names: &[&str]) -> Option<(usize, usize)> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
            .and_then(|o| o.value)
    }
}

/// srun's short options that take a value (srun(1)); `-I`, `-K` and `-k` take one only
/// attached, like every long option written `--opt[=value]`.
const SRUN_SHORT_VALUE: &str = "ABbCcDdeFGiJLMmNnopqrSTtWwx";
/// srun's long options that take a value, `--opt=value` or `--opt value` (srun(1)).
const SRUN_LONG_VALUE: &str = "\
    accel-bind account acctg-freq bb bbf bcast-exclude begin chdir cluster-constraint \
    clusters comment constraint container container-id core-spec cores-per-socket cpu-bind \
    cpu-freq cpus-per-gpu cpus-per-task deadline delay-boot dependency distribution epilog \
    error exclude export extra-node-info gid gpu-bind gpu-freq gpus gpus-per-node \
    gpus-per-socket gpus-per-task gres gres-flags het-group hint input job-name jobid \
    licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus mpi \
    msg-timeout network nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu \
    ntasks-per-node ntasks-per-socket open-mode output partition power prefer priority \
    profile prolog qos relative reservation signal slurmd-debug sockets-per-node switches \
    task-epilog task-prolog thread-spec threads threads-per-core time time-min tmp \
    tres-per-task uid wait wckey";

/// Hydra's options that take one value (`mpiexec -h`; `-opt`, `--opt` and `-opt=value`
/// alike); `-l`, `-prepend-rank`, `-verbose`, `-genvall` and the like take none.
const HYDRA_VALUE: &str = "\
    n np f hostfile machinefile hosts host wdir configfile genvlist envlist launcher \
    launcher-exec bootstrap bootstrap-exec rmk topolib bind-to binding map-by membind demux \
    iface ppn prepend-pattern outfile-pattern errfile-pattern nameserver order-nodes \
    localhost usize gpus-per-proc gpu-subdevs-per-proc ckpointlib ckpoint-prefix ckpoint-num \
    ckpoint-interval";
/// Hydra's options followed by a name and a value.
const HYDRA_TWO_VALUES: &str = "genv env";

/// Open MPI's options that take one value (mpirun(1)); `--oversubscribe`,
/// `--tag-output`, `--allow-run-as-root` and the like take none.
const OPEN_MPI_VALUE: &str = "\
    n np c H host hostfile machinefile default-hostfile wdir wd path prefix x am app tune \
    map-by rank-by bind-to npernode N npersocket ppr cpus-per-proc cpus-per-rank cpu-set \
    cpu-list rankfile rf output-filename output stdin launch-agent personality preload-files \
    timeout report-uri report-pid tmpdir runtime-options display";
/// Open MPI's options followed by a name and a value.
const OPEN_MPI_TWO_VALUES: &str = "mca gmca omca pmixmca prtemca";

/// Whether `name` is one of the whitespace-separated `names`.
fn listed(names: &str, name: &str) -> bool {
    names.split_whitespace().any(|n| n == name)
}

/// getopt_long's reading (srun): `-abc` bundles short options, the first one taking a
/// value takes the rest of the word or the next word; `--opt=value`, or `--opt value` for
/// an option whose value is required; `--` ends the options.
fn getopt(args: &[String], short_value: &str, long_value: &str) -> LauncherWords {
    let mut options = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let word = args[i].as_str();
        if word == "--" {
            return LauncherWords { options };
        }
        if let Some(long) = word.strip_prefix("--") {
            match long.split_once('=') {
                Some((name, _)) => options.push(Opt {
                    name: name.into(),
                    value: Some((i, name.len() + 3)),
                }),
                None if listed(long_value, long) => {
                    options.push(Opt {
                        name: long.into(),
                        value: (i + 1 < args.len()).then_some((i + 1, 0)),
                    });
                    i += 1;
                }
                None => options.push(Opt {
                    name: long.into(),
                    value: None,
                }),
            }
        } else if let Some(bundle) = word.strip_prefix('-').filter(|b| !b.is_empty()) {
            for (at, c) in bundle.char_indices() {
                let rest = at + 1 + c.len_utf8();
                let attached = (rest < word.len()).then_some((i, rest));
                if short_value.contains(c) {
                    let value = attached.or_else(|| {
                        i += 1;
                        (i < args.len()).then_some((i, 0))
                    });
                    options.push(Opt {
                        name: c.into(),
                        value,
                    });
                    break;
                }
                if matches!(c, 'I' | 'K' | 'k') {
                    options.push(Opt {
                        name: c.into(),
                        value: attached,
                    });
                    break;
                }
                options.push(Opt {
                    name: c.into(),
                    value: None,
                });
            }
        } else {
            return LauncherWords { options };
        }
        i += 1;
    }
    LauncherWords { options }
}

/// Hydra's and Open MPI's reading: `-opt` and `--opt` are the same option, a value follows
/// it as the next word (two words for `two_values`) or attached as `-opt=value`.
fn one_dash(args: &[String], value: &str, two_values: &str) -> LauncherWords {
    let mut options = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let word = args[i].as_str();
        let Some(name) = word
            .strip_prefix("--")
            .or_else(|| word.strip_prefix('-'))
            .filter(|n| !n.is_empty())
        else {
            return LauncherWords { options };
        };
        let dashes = word.len() - name.len();
        if let Some((name, _)) = name.split_once('=') {
            options.push(Opt {
                name: name.into(),
                value: Some((i, dashes + name.len() + 1)),
            });
        } else {
            let words = if listed(two_values, name) {
                2
            } else {
                usize::from(listed(value, name))
            };
            // the value of a two-word option is its second word
            options.push(Opt {
                name: name.into(),
                value: (words > 0 && i + words < args.len()).then_some((i + words, 0)),
            });
            i += words;
        }
        i += 1;
    }
    LauncherWords { options }
}

/// The run's command line for `up` nodes where it asks for more (SCR_RESHAPE: the
/// application restarts on any number of ranks): srun's node count (`-N`, `--nodes`) becomes
/// `up` and its task count (`-n`, `--ntasks`) keeps the ranks per node; hydra's and Open
/// MPI's process count (`-n`, `-np`) keeps the ranks per node of the `allocated` nodes. A
/// line without such counts, or asking for no more than `up` nodes, is left as it is. Only
/// the launcher's options are read ([`LauncherWords`]), so the application's own `-n` is
/// never touched.
pub fn reshape_for(launcher: Launcher, args: &[String], allocated: u64, up: u64) -> Vec<String> {
    let mut out = args.to_vec();
    let words = LauncherWords::of(launcher, args);
    let count = |names: &[&str]| -> Option<((usize, usize), u64)> {
        let (word, at) = words.value_of(names)?;
        Some(((word, at), args[word][at..].parse().ok()?))
    };
    let (nodes, tasks) = match launcher {
        Launcher::Srun { .. } => (count(&["N", "nodes"]), count(&["n", "ntasks"])),
        Launcher::Mpiexec | Launcher::OpenMpi { .. } => (None, count(&["n", "np"])),
        Launcher::Direct => (None, None),
    };
    let asked = nodes.map_or(allocated, |(_, n)| n);
    if asked <= up || asked == 0 {
        return out;
    }
    let mut set = |(word, at): (usize, usize), n: u64| {
        out[word] = format!("{}{n}", &args[word][..at]);
    };
    if let Some((place, _)) = nodes {
        set(place, up);
    }
    if let Some((place, ranks)) = tasks {
        set(place, (ranks * up / asked).max(1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

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
    #[test]
    fn a_reshaped_relaunch_never_touches_the_applications_arguments() {
        let srun = Launcher::Srun { overlap: false };
        let ompi = Launcher::OpenMpi {
            slurm_overlap: false,
        };
        let line = |s: &str| args(&s.split(' ').collect::<Vec<_>>());
        // (launcher, command line, allocated nodes, nodes up, the relaunch)
        let table = [
            // flags take no value: the word after them is the program
            (
                srun,
                "srun -N4 --exclusive ./app -n 9",
                4,
                3,
                "srun -N3 --exclusive ./app -n 9",
            ),
            (
                srun,
                "srun -N4 -n8 -l ./app -N 2 -n 9",
                4,
                3,
                "srun -N3 -n6 -l ./app -N 2 -n 9",
            ),
            (
                srun,
                "srun --nodes=4 -n4 ./app -N 2",
                4,
                3,
                "srun --nodes=3 -n3 ./app -N 2",
            ),
            // getopt's bundled short options, and optional values only attached
            (srun, "srun -lN4 -n8 ./app", 4, 2, "srun -lN2 -n4 ./app"),
            (
                srun,
                "srun -K -N4 ./app -n 8",
                4,
                3,
                "srun -K -N3 ./app -n 8",
            ),
            (
                srun,
                "srun --kill-on-bad-exit -n8 ./app -n 8",
                4,
                2,
                "srun --kill-on-bad-exit -n4 ./app -n 8",
            ),
            // an option's value is never taken for the program, even when it looks like one
            (srun, "srun -J -n -N4 ./app", 4, 3, "srun -J -n -N3 ./app"),
            (
                srun,
                "srun --export ALL -n 8 ./app -n 8",
                4,
                2,
                "srun --export ALL -n 4 ./app -n 8",
            ),
            // `--` ends srun's options
            (
                srun,
                "srun -N4 -- ./app -N 4",
                4,
                3,
                "srun -N3 -- ./app -N 4",
            ),
            // hydra: -l and -prepend-rank are flags, -genv takes two words, `=` values
            (
                Launcher::Mpiexec,
                "mpiexec -l ./show -n 8",
                4,
                3,
                "mpiexec -l ./show -n 8",
            ),
            (
                Launcher::Mpiexec,
                "mpiexec -l -n 8 ./show -n 8",
                4,
                3,
                "mpiexec -l -n 6 ./show -n 8",
            ),
            (
                Launcher::Mpiexec,
                "mpiexec -genv A -n -np 8 ./app -np 8",
                4,
                2,
                "mpiexec -genv A -n -np 4 ./app -np 8",
            ),
            (
                Launcher::Mpiexec,
                "mpiexec --n=8 -prepend-rank ./app -n 8",
                4,
                2,
                "mpiexec --n=4 -prepend-rank ./app -n 8",
            ),
            // Open MPI: --mca takes two words, --oversubscribe none
            (
                ompi,
                "mpirun --mca btl self -np 8 ./app -np 8",
                4,
                2,
                "mpirun --mca btl self -np 4 ./app -np 8",
            ),
            (
                ompi,
                "mpirun --oversubscribe ./app -np 8",
                4,
                2,
                "mpirun --oversubscribe ./app -np 8",
            ),
        ];
        for (launcher, given, allocated, up, want) in table {
            assert_eq!(
                reshape_for(launcher, &line(given), allocated, up).join(" "),
                want,
                "{given} on {up} of {allocated} nodes"
            );
        }
    }
}
