//! What the section 1 pages say beyond the clap definitions: the variables each command
//! reads (SCR parameters described from the parameter table), examples written as
//! arguments of the command so each is checked against its parser, and the related pages.

use roff::{Roff, bold, roman};

/// What a command's page adds.
pub struct Extra {
    /// Environment variables the command reads; SCR parameters are described from the
    /// parameter table, the others from [`OTHER_VARIABLES`].
    pub environment: Vec<&'static str>,
    /// Examples: the arguments after the command's name, and what they do.
    pub examples: &'static [(&'static str, &'static str)],
    /// Related subcommands: their pages are scr-<name>(1).
    pub related: &'static [&'static str],
    /// Whether the command reads SCR's configuration (its page then names scr.conf(5)).
    pub reads_config: bool,
}

/// How every command that reads SCR's configuration finds it.
const CONFIG: &[&str] = &["SCR_CONF_FILE", "SCR_SYSTEM_CONF_FILE", "SCR_PREFIX"];

/// Variables that are not SCR parameters, with what the commands take from them.
pub const OTHER_VARIABLES: &[(&str, &str)] = &[
    (
        "SCR_SYSTEM_CONF_FILE",
        "the system configuration file to read instead of the built-in path (see scr.conf(5))",
    ),
    ("USER", "the user name, where SCR_USER_NAME is not set"),
    (
        "SLURM_JOBID",
        "inside a SLURM allocation: the job id (SCR_JOB_ID wins), and SLURM is the resource \
         manager asked for nodes, down nodes and the end time",
    ),
    (
        "SLURM_JOB_ID",
        "the same as SLURM_JOBID (newer SLURM's name)",
    ),
    (
        "SLURM_JOB_NODELIST",
        "the allocation's nodes inside a SLURM allocation, unless SCR_NODELIST is set",
    ),
    (
        "SLURM_NODELIST",
        "the same as SLURM_JOB_NODELIST (older SLURM's name)",
    ),
    (
        "PDSH_RCMD_TYPE",
        "how real nodes are reached: ssh (the default), or srun for a one-task job step on each \
         node where ssh to compute nodes is forbidden",
    ),
    ("PATH", "where ping, pdsh and ssh are looked for"),
];

const NONE: Extra = Extra {
    environment: Vec::new(),
    examples: &[],
    related: &[],
    reads_config: false,
};

/// The names of `parts`, each once, in order.
fn vars(parts: &[&[&'static str]]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for name in parts.iter().flat_map(|p| p.iter()) {
        if !out.contains(name) {
            out.push(name);
        }
    }
    out
}

const IDENTITY: &[&str] = &[
    "SCR_USER_NAME",
    "USER",
    "SCR_JOB_ID",
    "SLURM_JOBID",
    "SLURM_JOB_ID",
];
const NODES: &[&str] = &["SCR_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"];

/// The extra page content of subcommand `sub` (None: the `scr` page itself).
pub fn extra(sub: Option<&str>) -> Extra {
    let Some(sub) = sub else {
        return Extra {
            environment: Vec::new(),
            examples: &[
                (
                    "run srun -N4 ./app",
                    "run ./app on 4 nodes under SCR, relaunching it around failed nodes",
                ),
                (
                    "index --list",
                    "list the checkpoints in the working directory's prefix",
                ),
                (
                    "halt",
                    "stop the job of this prefix after its next checkpoint",
                ),
                ("list-dir control", "print this job's control directory"),
                (
                    "install-links ~/bin",
                    "install SCR's command names (scr_index, scr_halt, ...) in ~/bin",
                ),
            ],
            related: &[],
            reads_config: true,
        };
    };
    match sub {
        "print" => Extra {
            examples: &[
                (
                    ".scr/index.scr",
                    "print the prefix's index as SCR's scr_print_hash_file does",
                ),
                ("--json .scr/halt.scr", "print the halt file as JSON"),
            ],
            related: &["index", "flush-file"],
            ..NONE
        },
        "glob-hosts" => Extra {
            examples: &[
                ("-c -h 'node[1-8]'", "count the hosts: 8"),
                ("-n 1 -h 'node[1-8]'", "the first host: node1"),
                (
                    "-m 'node[1-8]:node[3,5]'",
                    "the hosts of the first list not in the second",
                ),
                ("-C node1,node2,node3", "compress the list: node[1-3]"),
            ],
            related: &["hostlist"],
            ..NONE
        },
        "hostlist" => Extra {
            examples: &[
                ("--count 'node[1-8]'", "count the hosts: 8"),
                ("--expand -d ' ' 'node[1-3]'", "node1 node2 node3"),
                ("--minus 'node[1-8]' 'node[3,5]'", "node[1-2,4,6-8]"),
            ],
            related: &["glob-hosts"],
            ..NONE
        },
        "index" => Extra {
            examples: &[
                (
                    "--list -p /p/lscratch/run1",
                    "list the checkpoints of a prefix",
                ),
                (
                    "--current ckpt.40",
                    "restart from ckpt.40 rather than the newest",
                ),
                ("--drop ckpt.50", "forget ckpt.50 (its files stay)"),
                (
                    "--build 12",
                    "check, rebuild and index dataset 12 after a scavenge",
                ),
            ],
            related: &["inspect", "postrun", "scavenge"],
            ..NONE
        },
        "halt" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[
                (
                    "",
                    "stop the job of the working directory's prefix after its next checkpoint",
                ),
                (
                    "--before '3pm tomorrow' --seconds 1800",
                    "stop it half an hour before 3 pm tomorrow",
                ),
                (
                    "--checkpoints 2 /p/lscratch/run1",
                    "stop the job of that prefix after two more checkpoints",
                ),
                ("--list", "show the conditions set"),
                ("--remove", "remove every condition"),
            ],
            related: &["should-exit", "run", "halt-cntl"],
            reads_config: true,
        },
        "prefix" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[(
                "",
                "print the prefix directory a job started here would use",
            )],
            related: &["list-dir"],
            reads_config: true,
        },
        "list-dir" => Extra {
            environment: vars(&[&["SCR_CNTL_BASE", "SCR_CACHE_BASE"], IDENTITY, CONFIG]),
            examples: &[
                ("control", "print this job's control directory"),
                ("--base cache", "print the cache bases only"),
                (
                    "-u alice -j 1234 cache",
                    "the cache directories of alice's job 1234",
                ),
            ],
            related: &["prefix", "env"],
            reads_config: true,
        },
        "install-links" => Extra {
            examples: &[(
                "~/bin",
                "create scr_srun, scr_index, scr_halt, ... in ~/bin as links to scr",
            )],
            ..NONE
        },
        "flush-file" => Extra {
            examples: &[
                (
                    "--dir /p/lscratch/run1 --latest",
                    "print the newest dataset's id",
                ),
                (
                    "--dir /p/lscratch/run1 --needflush 12",
                    "exit 0 when dataset 12 is only in cache",
                ),
            ],
            related: &["postrun", "scavenge"],
            ..NONE
        },
        "retries-halt" => Extra {
            environment: vars(&[&["SCR_HALT_SECONDS", "SCR_END_TIME"], CONFIG]),
            examples: &[(
                "--dir /p/lscratch/run1",
                "exit 0 when the job of that prefix should not be relaunched",
            )],
            related: &["halt", "should-exit"],
            reads_config: true,
        },
        "nodes-file" => Extra {
            examples: &[(
                "--dir /p/lscratch/run1",
                "print how many nodes the last run used",
            )],
            related: &["env"],
            ..NONE
        },
        "rebuild-xor" => Extra {
            examples: &[(
                "4 1 .scr/scr.dataset.3/xor.1_2_of_4.scr .scr/scr.dataset.3/xor.0_1_of_4.scr .scr/scr.dataset.3/xor.2_3_of_4.scr .scr/scr.dataset.3/xor.3_4_of_4.scr",
                "rebuild the second member of a set of four, and its files",
            )],
            related: &["rebuild-rs", "index"],
            ..NONE
        },
        "rebuild-rs" => Extra {
            examples: &[(
                "2 .scr/scr.dataset.3/rs.0_1_of_4.scr .scr/scr.dataset.3/rs.1_2_of_4.scr .scr/scr.dataset.3/rs.2_3_of_4.scr .scr/scr.dataset.3/rs.3_4_of_4.scr",
                "rebuild the members of the set whose files are missing",
            )],
            related: &["rebuild-xor", "index"],
            ..NONE
        },
        "run" => Extra {
            environment: vars(&[
                &[
                    "SCR_ENABLE",
                    "SCR_RUNS",
                    "SCR_RETRIES",
                    "SCR_RUN_DELAY",
                    "SCR_MIN_NODES",
                    "SCR_EXCLUDE_NODES",
                    "SCR_END_TIME",
                    "SCR_HALT_SECONDS",
                    "SCR_WATCHDOG",
                    "SCR_WATCHDOG_TIMEOUT",
                    "SCR_WATCHDOG_TIMEOUT_PFS",
                    "SCR_FLUSH_ASYNC",
                    "SCR_CNTL_BASE",
                    "SCR_CACHE_BASE",
                    "SCR_FILE_BUF_SIZE",
                    "PDSH_RCMD_TYPE",
                ],
                IDENTITY,
                NODES,
                CONFIG,
            ]),
            examples: &[
                (
                    "srun -N4 -n16 ./app input",
                    "run ./app on 4 nodes of a SLURM allocation",
                ),
                (
                    "srun -N4 ./app",
                    "in an allocation of 5 nodes (salloc -N5 --no-kill): a node that fails is left \
                     out of the next run, and the spare takes its place",
                ),
                ("mpiexec -n 8 ./app", "run ./app with MPICH's mpiexec"),
                (
                    "mpirun -np 8 --hostfile hosts ./app",
                    "run ./app with Open MPI's mpirun",
                ),
                (
                    "--json srun -N4 ./app",
                    "report each decision as a JSON object",
                ),
            ],
            related: &["halt", "postrun", "list-down-nodes", "prerun"],
            reads_config: true,
        },
        "list-down-nodes" => Extra {
            environment: vars(&[
                &[
                    "SLURM_JOBID",
                    "SLURM_JOB_ID",
                    "SCR_EXCLUDE_NODES",
                    "SCR_CNTL_BASE",
                    "SCR_CACHE_BASE",
                ],
                NODES,
                CONFIG,
            ]),
            examples: &[
                ("", "print the allocation's nodes that cannot be used"),
                ("--reason", "and why, one node a line"),
                (
                    "--down node3 'node[1-8]'",
                    "check node1 to node8, node3 known down",
                ),
            ],
            related: &["check-node", "run"],
            reads_config: true,
        },
        "check-node" => Extra {
            environment: vars(&[&["SCR_CNTL_BASE", "SCR_CACHE_BASE"], CONFIG]),
            examples: &[
                (
                    "",
                    "test the control and cache directories the configuration names",
                ),
                (
                    "--cntl /dev/shm:64MB --cache /ssd:100GB",
                    "test these, with the capacity each needs",
                ),
            ],
            related: &["list-down-nodes"],
            reads_config: true,
        },
        "env" => Extra {
            environment: vars(&[&["SCR_END_TIME"], IDENTITY, NODES]),
            examples: &[
                ("--jobid", "print the job id"),
                ("--nodes", "print the allocation's nodes"),
                (
                    "--runnodes --prefix /p/lscratch/run1",
                    "print the nodes the last run used",
                ),
            ],
            related: &["list-dir", "nodes-file"],
            ..NONE
        },
        "prerun" => Extra {
            environment: vars(&[&["SCR_ENABLE"], CONFIG]),
            examples: &[(
                "--prefix /p/lscratch/run1",
                "prepare that prefix for a new job (scr-run does this itself)",
            )],
            related: &["postrun", "run"],
            reads_config: true,
        },
        "test-runtime" => Extra {
            environment: vec!["SLURM_JOBID", "SLURM_JOB_ID", "PATH"],
            examples: &[("", "exit 0 when what the launcher needs is here")],
            related: &["run"],
            ..NONE
        },
        "copy" => Extra {
            examples: &[(
                "--cntldir /dev/shm/alice/scr.1234 --id 12 --dstdir /p/lscratch/run1",
                "copy this node's files of dataset 12 to the prefix",
            )],
            related: &["scavenge", "postrun"],
            ..NONE
        },
        "transfer" => Extra {
            environment: vars(&[&["SCR_TRANSFER_SECS", "SCR_FILE_BUF_SIZE"], CONFIG]),
            examples: &[
                (
                    "--cntldir /dev/shm/alice/scr.1234",
                    "run this node's agent (scr-run starts it)",
                ),
                ("--cntldir /dev/shm/alice/scr.1234 --exit", "ask it to exit"),
            ],
            related: &["run"],
            reads_config: true,
        },
        "scavenge" => Extra {
            environment: vars(&[
                &["SCR_CNTL_BASE", "SCR_FILE_BUF_SIZE", "PDSH_RCMD_TYPE"],
                IDENTITY,
                NODES,
                CONFIG,
            ]),
            examples: &[(
                "--id 12 --to /p/lscratch/run1 --down node3",
                "copy dataset 12 from every node but node3",
            )],
            related: &["copy", "postrun", "index"],
            reads_config: true,
        },
        "postrun" => Extra {
            environment: vars(&[
                &[
                    "SCR_ENABLE",
                    "SCR_EXCLUDE_NODES",
                    "SCR_CNTL_BASE",
                    "SCR_FILE_BUF_SIZE",
                    "PDSH_RCMD_TYPE",
                ],
                IDENTITY,
                NODES,
                CONFIG,
            ]),
            examples: &[(
                "--prefix /p/lscratch/run1",
                "after the job's last run: copy what is only in cache to the prefix",
            )],
            related: &["scavenge", "index", "run"],
            reads_config: true,
        },
        "halt-cntl" => Extra {
            examples: &[
                ("-f .scr/halt.scr -l", "list a halt file's settings"),
                ("-f .scr/halt.scr -c 1", "halt after one more checkpoint"),
                ("-f .scr/halt.scr -xr", "remove the exit reason"),
            ],
            related: &["halt"],
            ..NONE
        },
        "should-exit" => Extra {
            environment: vars(&[&["SCR_HALT_SECONDS", "SCR_END_TIME"], CONFIG]),
            examples: &[
                (
                    "--prefix /p/lscratch/run1",
                    "exit 0, saying why, when that job should stop",
                ),
                (
                    "--prefix /p/lscratch/run1 --down node7 --min-nodes 16 -v",
                    "also stop when, without node7, fewer than 16 nodes are left; say what \
                     was checked",
                ),
            ],
            related: &["halt", "retries-halt"],
            reads_config: true,
        },
        "ckpt-interval" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[
                (
                    "--stats",
                    "the interval by Daly's formula, and what it was computed from",
                ),
                ("--young --prefix /p/lscratch/run1", "by Young's formula"),
            ],
            related: &["inspect", "report"],
            reads_config: true,
        },
        "inspect" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[(
                "--prefix /p/lscratch/run1",
                "list each dataset: complete, incomplete, failed, or to be scavenged",
            )],
            related: &["index", "postrun"],
            reads_config: true,
        },
        "report" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[
                (
                    "/p/lscratch/run1",
                    "write /p/lscratch/run1/.scr/report.html and print its path",
                ),
                (
                    "/p/lscratch/run1 -o run1.html",
                    "write the page to run1.html, to open in a browser or attach to a ticket",
                ),
                (
                    "--svg charts /p/lscratch/run1",
                    "only the charts, each as charts/<name>.svg",
                ),
                (
                    "--json /p/lscratch/run1",
                    "the figures for a script: time lost, interval in use, Young, Daly …",
                ),
            ],
            related: &["ckpt-interval", "inspect", "index"],
            reads_config: true,
        },
        "config" => Extra {
            environment: CONFIG.to_vec(),
            examples: &[
                (
                    "",
                    "every parameter in effect here, and where each value comes from",
                ),
                ("SCR_CACHE_BASE SCR_FLUSH", "only these"),
                (
                    "--prefix /p/lscratch/run1 CKPT",
                    "the checkpoint descriptors of that prefix's job",
                ),
                ("--json", "all of it as JSON"),
            ],
            related: &["prefix", "list-dir"],
            reads_config: true,
        },
        "db" => Extra {
            environment: vec![
                "SCR_LOG_DB_HOST",
                "SCR_LOG_DB_NAME",
                "SCR_LOG_DB_USER",
                "SCR_LOG_DB_PASS",
            ],
            examples: &[
                (
                    "init --option-file ~/scr-admin.cnf",
                    "create the database and its tables as the administrator that file names (mode 600)",
                ),
                ("schema", "print the tables, to read or to run by hand"),
                (
                    "grant alice --option-file ~/scr-admin.cnf",
                    "give alice's accounts a database of their own records, scr_alice",
                ),
            ],
            related: &["config"],
            reads_config: true,
        },
        "kill-jobstep" => Extra {
            examples: &[("--jobstepid 1234.5", "cancel step 5 of job 1234")],
            related: &["run"],
            ..NONE
        },
        other => panic!("no page content for subcommand {other}"),
    }
}

/// What the page says a variable is: a parameter's help from the table, else its entry
/// in [`OTHER_VARIABLES`].
pub fn describe(name: &str) -> String {
    if let Some(spec) = scr::params::spec(name) {
        return match spec.default {
            Some(d) => format!("{} (default {d})", spec.help),
            None => spec.help.to_string(),
        };
    }
    OTHER_VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, what)| what.to_string())
        .unwrap_or_else(|| panic!("no description of the variable {name}"))
}

/// The sections the page `own_name` adds, for a command that `invocation` runs (`scr
/// index`, `scr_index`): `leading` are the arguments a compatibility name puts first
/// (`scr_srun` is `scr run srun`): examples that do not start with them are left out, those
/// that do are shown without them. `same_as` is the page of the same command under its scr
/// name, for compatibility names; `also` more pages to name under SEE ALSO.
pub fn render(
    extra: &Extra,
    invocation: &str,
    leading: &[&str],
    same_as: Option<&str>,
    own_name: &str,
    also: &[String],
) -> String {
    let mut r = Roff::new();
    if !extra.environment.is_empty() {
        r.control("SH", ["ENVIRONMENT"]);
        let mut intro = String::from("The command reads these variables.");
        if extra.reads_config {
            intro.push_str(
                " The SCR parameters among them may also be set in SCR's configuration files \
                 (the environment wins; see scr.conf(5)).",
            );
        }
        r.text([roman(intro)]);
        for name in &extra.environment {
            r.control("TP", [])
                .text([bold(*name)])
                .text([roman(describe(name))]);
        }
    }
    let examples: Vec<(String, &str)> = examples(extra, leading)
        .map(|(args, what)| {
            let line = if args.is_empty() {
                invocation.to_string()
            } else {
                format!("{invocation} {args}")
            };
            (line, what)
        })
        .collect();
    if !examples.is_empty() {
        r.control("SH", ["EXAMPLES"]);
        for (line, what) in &examples {
            r.control("TP", [])
                .text([bold(line.as_str())])
                .text([roman(*what)]);
        }
    }
    if invocation != own_name {
        r.control("SH", ["NOTES"]);
        r.text([roman(format!(
            "The command is typed as {invocation}: this page is named {own_name} after it, \
             as git names its commands' pages, and there is no {own_name} program."
        ))]);
    }
    r.control("SH", ["SEE ALSO"]);
    let see_also = see_also(extra, same_as, own_name, also);
    // page names are not hyphenated at line ends
    r.control("nh", [])
        .text([roman(see_also.join(", "))])
        .control("hy", []);
    r.render()
}

/// The examples of `extra` that apply to a name whose leading arguments are `leading`
/// (those that start with them), with those arguments removed.
pub fn examples<'a>(
    extra: &'a Extra,
    leading: &[&str],
) -> impl Iterator<Item = (String, &'a str)> + 'a {
    let leading = leading.join(" ");
    extra.examples.iter().filter_map(move |(args, what)| {
        if leading.is_empty() {
            return Some((args.to_string(), *what));
        }
        let rest = args.strip_prefix(leading.as_str())?;
        match rest.strip_prefix(' ') {
            Some(rest) => Some((rest.to_string(), *what)),
            None if rest.is_empty() => Some((String::new(), *what)),
            None => None,
        }
    })
}

/// The pages a page names under SEE ALSO, as `name(section)`.
pub fn see_also(
    extra: &Extra,
    same_as: Option<&str>,
    own_name: &str,
    also: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |page: String| {
        if page != format!("{own_name}(1)") && !out.contains(&page) {
            out.push(page);
        }
    };
    add("scr(1)".into());
    if let Some(page) = same_as {
        add(format!("{page}(1)"));
    }
    for sub in extra.related {
        add(format!("scr-{sub}(1)"));
    }
    for page in also {
        add(page.clone());
    }
    if extra.reads_config {
        add("scr.conf(5)".into());
    }
    add("scr(7)".into());
    out
}
