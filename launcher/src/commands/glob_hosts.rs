//! `scr glob-hosts` (SCR's `scr_glob_hosts`): hostlist algebra for batch scripts.

use hostlist::{HostList, HostSet};
use serde_json::json;
use std::io::{Read, Write};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Count, index, expand, compress and combine host lists",
    long_about = "Count, index, expand, compress and combine host lists such as node[01-08],login \
                  (SLURM and ClusterShell syntax: several prefixes, suffixes after ']', zero padding, \
                  several brackets, steps like 1-9/2).\n\n\
                  A LIST is a hostlist, @FILE (hosts one per line or comma-separated), or - for standard \
                  input. --hosts keeps the list as written (order and duplicates count for --count, --nth \
                  and --expand); --minus, --intersection, --union and --xor treat hosts as sets and give \
                  sorted results. A:B operands are split at the last colon.\n\n\
                  Exit codes: 0 success; 1 bad usage, a malformed list, or --nth out of range.",
    disable_help_flag = true
)]
#[command(group = clap::ArgGroup::new("input").required(true).args(["hosts", "minus", "intersection", "union", "xor", "compress"]))]
pub struct Args {
    /// Use this host list (alone: print its hosts comma-separated)
    #[arg(short = 'h', long, value_name = "LIST")]
    hosts: Option<String>,
    /// Hosts of A not in B
    #[arg(short = 'm', long, value_name = "A:B")]
    minus: Option<String>,
    /// Hosts in both A and B
    #[arg(short = 'i', long, value_name = "A:B")]
    intersection: Option<String>,
    /// Hosts in A or B
    #[arg(long, value_name = "A:B")]
    union: Option<String>,
    /// Hosts in exactly one of A and B
    #[arg(long, value_name = "A:B")]
    xor: Option<String>,
    /// Compress a comma-separated list of host names
    #[arg(short = 'C', long, value_name = "LIST")]
    compress: Option<String>,
    /// Print the number of hosts
    #[arg(short = 'c', long)]
    count: bool,
    /// Print the Nth host (1 is the first, -1 the last)
    #[arg(short = 'n', long, value_name = "N", allow_negative_numbers = true)]
    nth: Option<i64>,
    /// Print every host, one per line
    #[arg(long, conflicts_with_all = ["count", "nth"])]
    expand: bool,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
    /// Print help
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// What the command computed: a list as written, or a set.
enum Hosts {
    List(HostList),
    Set(HostSet),
}

/// Reads one LIST operand: a hostlist, `@FILE` (hosts one per line or comma-separated), or `-`
/// for standard input. Errors name the operand (or file and line) and the column.
pub(crate) fn read_list(operand: &str) -> Result<HostList, String> {
    let text = if operand == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("could not read standard input: {e}"))?;
        s
    } else if let Some(path) = operand.strip_prefix('@') {
        std::fs::read_to_string(path)
            .map_err(|e| format!("could not read host file {path}: {e}"))?
    } else {
        return operand
            .parse()
            .map_err(|e| format!("host list {operand:?}: {e}"));
    };
    let origin = if operand == "-" {
        "standard input".to_string()
    } else {
        operand[1..].to_string()
    };
    let mut list = HostList::default();
    for (n, line) in text.lines().enumerate() {
        let part: HostList = line
            .parse()
            .map_err(|e| format!("{origin}:{}: {e}", n + 1))?;
        list.extend(part);
    }
    Ok(list)
}

fn to_set(list: &HostList) -> Result<HostSet, String> {
    list.to_set().map_err(|e| format!("host list: {e}"))
}

fn read_pair(operand: &str, flag: &str) -> Result<(HostSet, HostSet), String> {
    let (a, b) = operand.rsplit_once(':').ok_or_else(|| {
        format!("{flag} needs two lists joined by a colon, as in node[1-8]:node[3-4]")
    })?;
    Ok((to_set(&read_list(a)?)?, to_set(&read_list(b)?)?))
}

fn compute(args: &Args) -> Result<Hosts, String> {
    if let Some(h) = &args.hosts {
        return Ok(Hosts::List(read_list(h)?));
    }
    if let Some(csv) = &args.compress {
        return Ok(Hosts::Set(to_set(&read_list(csv)?)?));
    }
    let (op, flag, operand): (fn(&HostSet, &HostSet) -> HostSet, &str, &String) =
        if let Some(p) = &args.minus {
            (HostSet::difference, "--minus", p)
        } else if let Some(p) = &args.intersection {
            (HostSet::intersection, "--intersection", p)
        } else if let Some(p) = &args.union {
            (HostSet::union, "--union", p)
        } else {
            (
                HostSet::symmetric_difference,
                "--xor",
                args.xor.as_ref().expect("clap requires one input"),
            )
        };
    let (a, b) = read_pair(operand, flag)?;
    Ok(Hosts::Set(op(&a, &b)))
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let hosts = match compute(&args) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("scr_glob_hosts: ERROR: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let count = match &hosts {
        Hosts::List(l) => l.count(),
        Hosts::Set(s) => s.count(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if let Some(n) = args.nth {
        let host = match &hosts {
            Hosts::List(l) => l.nth(n),
            Hosts::Set(s) => nth_of_set(s, n, count),
        };
        let Some(host) = host else {
            eprintln!(
                "scr_glob_hosts: ERROR: Host index ({n}) is out of range for specified host list."
            );
            return Ok(ExitCode::from(1));
        };
        print_one(&mut out, args.json, "host", json!(host))
    } else if args.count {
        print_one(&mut out, args.json, "count", json!(count))
    } else if args.expand {
        if args.json {
            let all: Vec<String> = match &hosts {
                Hosts::List(l) => l.iter().collect(),
                Hosts::Set(s) => s.iter().collect(),
            };
            writeln!(out, "{}", json!({ "hosts": all }))
        } else {
            let mut result = Ok(());
            let mut line = |h: &str| {
                if result.is_ok() {
                    result = out
                        .write_all(h.as_bytes())
                        .and_then(|()| out.write_all(b"\n"));
                }
            };
            match &hosts {
                Hosts::List(l) => l.for_each_host(&mut line),
                Hosts::Set(s) => s.iter().for_each(|h| line(&h)),
            }
            result
        }
    } else {
        // a list alone prints its hosts comma-separated, as SCR's scr_glob_hosts does (batch
        // scripts split that); set results print compressed
        let text = match &hosts {
            Hosts::List(l) => l.iter().collect::<Vec<_>>().join(","),
            Hosts::Set(s) => s.to_string(),
        };
        if args.json {
            writeln!(out, "{}", json!({ "hosts": text, "count": count }))
        } else {
            writeln!(out, "{text}")
        }
    };
    // a closed pipe (`| head`) is not an error worth reporting
    let _ = written.and_then(|()| out.flush());
    Ok(ExitCode::SUCCESS)
}

fn nth_of_set(set: &HostSet, n: i64, count: u64) -> Option<String> {
    let index = match n {
        0 => return None,
        n if n > 0 => n as u64 - 1,
        n => count.checked_sub(n.unsigned_abs())?,
    };
    set.iter().nth(usize::try_from(index).ok()?)
}

/// Prints one answer: as JSON `{key: value}` for scripts, else the value alone.
pub(crate) fn print_one(
    out: &mut dyn Write,
    json: bool,
    key: &str,
    value: serde_json::Value,
) -> std::io::Result<()> {
    if json {
        writeln!(out, "{}", json!({ key: value }))
    } else {
        match value {
            serde_json::Value::String(s) => writeln!(out, "{s}"),
            other => writeln!(out, "{other}"),
        }
    }
}
