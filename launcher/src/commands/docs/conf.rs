//! scr.conf(5): the configuration files and every parameter, rendered from the parameter
//! table the library and the commands read (`scr::params::PARAMS`), its descriptor
//! attributes and its list of defaults that differ from SCR v3.1, so the page cannot
//! drift from what SCR accepts.

use roff::{Roff, bold, italic, roman};
use scr::params::{
    BUILT_SYSTEM_CONFIG, DESCRIPTOR_KEYS, Kind, PARAMS, ParamSpec, SYSTEM_CONFIG_PATH,
    SYSTEM_CONFIG_PATH_V3, V31_DEFAULTS, allowed_children, bounds,
};

/// The values a parameter takes, as the page states them: its kind's, within the range
/// the parser enforces where it has one.
fn values(spec: &ParamSpec) -> String {
    let kind = match spec.kind {
        // the range says it is not negative
        Kind::Count => "an integer",
        kind => kind_values(kind),
    };
    match bounds(spec.name) {
        Some((lo, u64::MAX)) => format!("{kind}, at least {lo}"),
        Some((lo, hi)) => format!("{kind} from {lo} to {hi}"),
        None => kind_values(spec.kind).to_string(),
    }
}

fn kind_values(kind: Kind) -> &'static str {
    match kind {
        Kind::Bool => "0 or 1",
        Kind::Count => "a non-negative integer",
        Kind::Int => "an integer",
        Kind::Bytes => "a byte count: 4194304, 4MB, 4MiB or 4M",
        Kind::Float => "a non-negative number",
        Kind::Scheme => "SINGLE, PARTNER, XOR, RS or FILE",
        Kind::Text => "text",
        Kind::FlushType => "SYNC, PTHREAD, BBAPI or DATAWARP",
    }
}

/// What each descriptor line's value is, and what the line is, for its entry on the page.
fn descriptor_about(key: &str) -> (&'static str, &'static str) {
    let value = match key {
        "STORE" | "CNTLDIR" | "CACHEDIR" => "directory",
        "GROUPS" => "host",
        _ => "number",
    };
    let about = match key {
        "STORE" => {
            "a cache store: the directory, how many datasets it keeps (COUNT, default \
             SCR_CACHE_SIZE), whether it is on (ENABLED, default 1: ENABLED=0 turns off the \
             checkpoint descriptors using it) and the transfer type of checkpoints flushed from \
             it (FLUSH, default SCR_FLUSH_TYPE); GROUP and MKDIR are accepted and have no \
             effect: a cache store is node-local and SCR creates its directories"
        }
        "CKPT" => {
            "a checkpoint descriptor, numbered from 0: every INTERVAL-th checkpoint goes to \
             STORE with redundancy TYPE over SET_SIZE members of failure group GROUP; OUTPUT=1 \
             takes output datasets; BYPASS=1 writes to the prefix directly. The lines apply \
             when SCR_COPY_TYPE is FILE or set nowhere"
        }
        "GROUPS" => {
            "one line per node: GROUPS=<host> then NAME=VALUE pairs; nodes with the same value \
             of NAME form one failure group NAME"
        }
        "CACHEDESC" => "SCR 1.1-8's cache descriptor (read as a STORE line)",
        "CKPTDESC" => "SCR 1.1-8's checkpoint descriptor (TYPE=LOCAL is SINGLE)",
        "CNTLDIR" | "CACHEDIR" => {
            "capacity a node must have in that control or cache directory (BYTES), checked \
             by scr check-node before each run"
        }
        _ => "",
    };
    (value, about)
}

/// The parameters SCR_Config refuses, grouped by why: "A, B (it …); C (…)".
fn not_settable() -> String {
    use scr::app_config::{NOT_SETTABLE, NotSettable};
    [NotSettable::Place, NotSettable::Launch]
        .iter()
        .map(|&kind| {
            let names: Vec<&str> = NOT_SETTABLE
                .iter()
                .filter(|(_, k)| *k == kind)
                .map(|(name, _)| *name)
                .collect();
            format!("{} ({})", names.join(", "), kind.why())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn section(r: &mut Roff, name: &str) {
    r.control("SH", [name]);
}

fn para(r: &mut Roff, text: &str) {
    r.control("PP", []).text([roman(text)]);
}

/// An indented literal example.
fn example(r: &mut Roff, lines: &[&str]) {
    r.control("PP", []).control("RS", ["4"]).control("nf", []);
    for line in lines {
        r.text([roman(*line)]);
    }
    r.control("fi", []).control("RE", []);
}

/// The default as the page shows it.
fn default_of(spec: &ParamSpec) -> String {
    match spec.default {
        Some(d) => d.to_string(),
        None => "unset".to_string(),
    }
}

/// scr.conf(5) as roff.
pub fn render() -> String {
    let version = format!("scr {}", env!("CARGO_PKG_VERSION"));
    let system = BUILT_SYSTEM_CONFIG.unwrap_or(SYSTEM_CONFIG_PATH);
    let mut r = Roff::new();
    r.control("TH", ["SCR.CONF", "5", "", &version, "SCR in Rust"]);

    section(&mut r, "NAME");
    r.text([roman(
        "scr.conf, .scrconf - SCR configuration files and the parameters they set",
    )]);

    section(&mut r, "SYNOPSIS");
    r.text([bold(system)]).control("br", []);
    r.text([
        bold("$SCR_CONF_FILE"),
        roman(", else "),
        bold("<prefix>/.scrconf"),
    ]);

    section(&mut r, "DESCRIPTION");
    r.text([roman(
        "SCR, the library applications link and the scr commands that run their jobs, take \
         their settings from parameters. Each parameter is read from the first of these \
         places that sets it:",
    )]);
    let places = [
        (
            "1.",
            "the environment: a variable of the parameter's name (export SCR_CACHE_SIZE=2);"
                .to_string(),
        ),
        (
            "2.",
            "the user configuration file: the file SCR_CONF_FILE names, else .scrconf in the \
             prefix directory (SCR_PREFIX, else the working directory);"
                .to_string(),
        ),
        (
            "3.",
            format!(
                "what the application set with SCR_Config in this run (recorded in \
                 <prefix>/.scr/app.conf for SCR's commands; a later run of the library does not \
                 read it). SCR_Config sets any parameter but those SCR's commands \
                 read without the application, which it refuses, saying why: {};",
                not_settable()
            ),
        ),
        (
            "4.",
            format!(
                "the system configuration file: the file SCR_SYSTEM_CONF_FILE names, else {system}{};",
                if BUILT_SYSTEM_CONFIG.is_some() {
                    " (the path this installation was built with: scripts/install.sh --config-file)"
                        .to_string()
                } else {
                    format!(", or {SYSTEM_CONFIG_PATH_V3} when only that exists (SCR v3.1's place)")
                }
            ),
        ),
        (
            "5.",
            "the built-in default listed under PARAMETERS.".to_string(),
        ),
    ];
    for (n, text) in &places {
        r.control("IP", [*n, "4"]).text([roman(text.as_str())]);
    }
    para(
        &mut r,
        "SCR_CNTL_BASE, the control directory's base, is set as other parameters are (as in \
         SCR v3.1; SCR_Config cannot set it). A bad value anywhere is an error naming the file and line \
         (or the environment variable) and the parameter; an unknown parameter in a file is a \
         warning, and so is an SCR_* environment variable that names no parameter (a typo: \
         SCR_FLUSH_ASYNK), with the parameter most likely meant.",
    );

    section(&mut r, "SYNTAX");
    r.text([roman(
        "A configuration file is text, one setting per line. Blank lines are ignored and '#' \
         starts a comment anywhere on a line. A setting is",
    )]);
    example(&mut r, &["KEY=VALUE"]);
    para(
        &mut r,
        "with spaces or tabs allowed around '='. Keys are case-insensitive (read upper-cased); \
         values are kept as written, and cannot hold spaces, tabs or '='. A key or value is at \
         most 1024 characters.",
    );
    r.control("SS", ["Environment variables in values"]);
    r.text([
        roman("In a value, "),
        bold("$NAME"),
        roman(" and "),
        bold("${NAME}"),
        roman(
            " are replaced by the environment variable NAME when the file is read \
             (SCR_PREFIX=$HOME/run, SCR_CACHE_BASE=/dev/shm/$SLURM_JOBID). A variable that is \
             not set is an error naming it. A backslash makes the next character literal: \
             \\$ is a '$', \\\\ a backslash.",
        ),
    ]);
    r.control("SS", ["Descriptor lines"]);
    r.text([roman(
        "A line whose key is one of the following describes storage, redundancy or failure \
         groups: its first KEY=VALUE pair names it, and the pairs after it on the same line are \
         its attributes.",
    )]);
    for key in DESCRIPTOR_KEYS {
        let (value, about) = descriptor_about(key);
        r.control("TP", [])
            .text([bold(format!("{key}=")), italic(value)]);
        r.text([roman(about)]);
        match allowed_children(key) {
            Some(attrs) => {
                r.control("br", []);
                r.text([roman("Attributes: "), bold(attrs.join(", "))]);
            }
            None => {
                r.control("br", []);
                r.text([roman("Attributes: any group names.")]);
            }
        }
    }
    para(&mut r, "For example:");
    example(
        &mut r,
        &[
            "STORE=/dev/shm  GROUP=NODE  COUNT=1",
            "STORE=/ssd      GROUP=NODE  COUNT=2",
            "CKPT=0 INTERVAL=1 STORE=/dev/shm TYPE=XOR SET_SIZE=8",
            "CKPT=1 INTERVAL=4 STORE=/ssd     TYPE=RS  SET_SIZE=8 SET_FAILURES=2",
        ],
    );
    para(
        &mut r,
        "Without CKPT lines (or with SCR_COPY_TYPE set to a scheme) one descriptor is implied: \
         CKPT=0 INTERVAL=1 GROUP=$SCR_GROUP STORE=$SCR_CACHE_BASE TYPE=$SCR_COPY_TYPE \
         SET_SIZE=$SCR_SET_SIZE BYPASS=$SCR_CACHE_BYPASS.",
    );

    section(&mut r, "PARAMETERS");
    r.text([roman(
        "Every parameter SCR reads, with its built-in default and the values it takes. \
         Where the default differs from SCR v3.1's, the entry says so (see also DEFAULTS \
         THAT DIFFER FROM SCR V3.1).",
    )]);
    for spec in PARAMS {
        r.control("TP", []).text([
            bold(spec.name),
            roman(format!(
                " (default: {}; {})",
                default_of(spec),
                values(spec)
            )),
        ]);
        r.text([roman(spec.help)]);
        if let Some(d) = V31_DEFAULTS.iter().find(|d| d.name == spec.name) {
            r.control("br", []);
            r.text([roman(format!(
                "SCR v3.1's default is {}. {}.",
                d.v31, d.why
            ))]);
        }
    }

    section(&mut r, "DEFAULTS THAT DIFFER FROM SCR V3.1");
    r.text([roman(
        "Programs and job scripts written for SCR v3.1 run unchanged, but these defaults are \
         not v3.1's (set the parameter to v3.1's value to get its behaviour):",
    )]);
    for d in V31_DEFAULTS {
        let here = PARAMS
            .iter()
            .find(|p| p.name == d.name)
            .map(default_of)
            .unwrap_or_default();
        r.control("TP", []).text([
            bold(d.name),
            roman(format!(": {here} here, {} in v3.1", d.v31)),
        ]);
        r.text([roman(format!("{}.", d.why))]);
    }
    // a default that depends on how the job was launched, not a value of the table
    r.control("TP", []).text([
        bold("SCR_FLUSH, SCR_FLUSH_ASYNC"),
        roman(": 10 and 0 under scr-run, as in v3.1; set nowhere in a job launched without it"),
    ]);
    r.text([roman(
        "(plain srun or mpiexec, where no drain follows) they act as 1 and 1: every checkpoint \
         is flushed in the background as it completes, so a job killed before SCR_Finalize \
         leaves its work on the prefix, as v3.1's default SCR_CACHE_BYPASS=1 does. Set \
         SCR_FLUSH (and SCR_FLUSH_ASYNC) to choose; scr-run sets SCR_DRAIN_FOLLOWS=1 in the \
         runs it launches, and a script that runs scr postrun itself may set it too.",
    )]);

    section(&mut r, "ENVIRONMENT");
    r.text([roman(
        "Every parameter above may be set as an environment variable of its name, which wins \
         over every file. Besides them:",
    )]);
    for (name, what) in [
        (
            "SCR_CONF_FILE",
            "the user configuration file (default: <prefix>/.scrconf); it must exist",
        ),
        (
            "SCR_SYSTEM_CONF_FILE",
            "another system configuration file than the built-in path, e.g. for a test or an \
             install without root",
        ),
    ] {
        r.control("TP", []).text([bold(name)]).text([roman(what)]);
    }

    section(&mut r, "FILES");
    let files = [
        (system.to_string(), "the system configuration file"),
        (
            "<prefix>/.scrconf".to_string(),
            "the user configuration file, unless SCR_CONF_FILE names another",
        ),
        (
            "<prefix>/.scr/app.conf".to_string(),
            "what the application set with SCR_Config in its last run, for SCR's commands (the \
             drain); later runs of the library do not read it",
        ),
    ];
    for (path, what) in &files {
        r.control("TP", [])
            .text([bold(path.as_str())])
            .text([roman(*what)]);
    }

    section(&mut r, "EXAMPLES");
    r.text([roman(
        "A system configuration: control and cache in memory, every node checked for space \
         before each run:",
    )]);
    example(
        &mut r,
        &[
            "SCR_CNTL_BASE=/dev/shm",
            "SCR_CACHE_BASE=/dev/shm",
            "CNTLDIR=/dev/shm BYTES=64MB",
            "CACHEDIR=/dev/shm BYTES=4GB",
        ],
    );
    para(
        &mut r,
        "A user configuration (<prefix>/.scrconf): two checkpoints in cache, XOR over sets of \
         8 nodes, every 4th checkpoint flushed, a job-specific cache directory:",
    );
    example(
        &mut r,
        &[
            "SCR_CACHE_SIZE=2",
            "SCR_COPY_TYPE=XOR",
            "SCR_SET_SIZE=8",
            "SCR_FLUSH=4",
            "SCR_CACHE_BASE=/dev/shm/$SLURM_JOBID",
        ],
    );
    para(
        &mut r,
        "A setting in a batch script, which wins over the files:",
    );
    example(&mut r, &["export SCR_FLUSH=1", "scr-run srun -N4 ./app"]);

    section(&mut r, "SEE ALSO");
    r.control("nh", [])
        .text([roman(
            "scr(7), scr(1), scr-run(1), scr-list-dir(1), scr-check-node(1)",
        )])
        .control("hy", []);
    r.render()
}
