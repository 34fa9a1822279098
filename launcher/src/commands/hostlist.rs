//! `scr hostlist` (SCR v3.1's `scr_hostlist`): the host-list tool of v3.1's job scripts.
//! It takes host lists as positional operands and concatenates them, or with `--minus` /
//! `--intersection` filters the first by the others; it can keep the first or last N hosts,
//! then prints them compressed (the default), expanded with a delimiter, counted, or the Nth.
//!
//! Parsing, compression and set membership come from the `hostlist` crate, and operands
//! are read as `scr glob-hosts` reads them ([`super::glob_hosts::read_list`]), so `@FILE`
//! and `-` work here too.
//!
//! Where v3.1 (`scripts/python/scr_hostlist.py` and `scrjob/hostlist.py`, without
//! ClusterShell) misbehaves, this command does better:
//! - v3.1 reorders each list by the last number in each comma-separated item, ignoring the
//!   prefix (`n3,n1` expands to `n1,n3`). Here each list keeps its written order, as
//!   SLURM's `scontrol show hostnames` does.
//! - v3.1's `--minus` removes one occurrence of the first list's hosts for each occurrence
//!   in a later list, so a duplicate can survive (`-m n1,n1,n2 n1` leaves `n1,n2`). Here a
//!   host in any later list is removed wherever it appears.
//! - v3.1's compressor prints duplicates as a one-number range (`n[1-1]` for `n1,n1`) and
//!   merges padded and unpadded numbers (`n01,n1` becomes `n[1-1]`). Here the compressed
//!   form is a set, as ClusterShell's `nodeset -f` prints it: `n1` and `n[1,01]`.
//! - v3.1 treats `--nth 0` as "no --nth" and prints the compressed list; out-of-range
//!   indexes end in a Python traceback. Here 0 is out of range like any other index
//!   beyond the list: one error line and exit status 1.

use super::glob_hosts::{print_one, read_list};
use hostlist::{HostList, HostSet};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Compress, expand, count, index, subtract and intersect host lists (SCR v3.1)",
    long_about = "Compress, expand, count, index, subtract and intersect host lists, as SCR v3.1's \
                  scr_hostlist does for job scripts.\n\n\
                  Each HOSTS operand is a hostlist such as node[01-08],login (SLURM and ClusterShell \
                  syntax), @FILE (hosts one per line or comma-separated), or - for standard input. \
                  Without --minus or --intersection the lists are joined in the order given, each \
                  in its written order, duplicates kept. --minus keeps the hosts of the first list \
                  that are in none of the others; --intersection keeps those that are in all of \
                  them; both keep the first list's order and duplicates. --size then keeps the \
                  first N hosts (-N: the last N).\n\n\
                  Output: the compressed form by default (a set: sorted, duplicates removed, e.g. \
                  node[1-3,5]); --expand prints the hosts joined by --delimiter; --count prints how \
                  many there are (duplicates included); --nth prints one (1 is the first, -1 the \
                  last).\n\n\
                  Exit codes: 0 success; 1 bad usage, a malformed list, or --nth out of range."
)]
#[command(group = clap::ArgGroup::new("combine").args(["minus", "intersection"]))]
#[command(group = clap::ArgGroup::new("output").args(["expand", "count", "nth"]))]
pub struct Args {
    /// Host lists: a hostlist, @FILE, or - for standard input
    #[arg(value_name = "HOSTS", required = true, num_args = 1..)]
    hosts: Vec<String>,
    /// Separator for --expand; the two characters \n and \t mean newline and tab
    #[arg(short = 'd', long, value_name = "C", default_value = ",")]
    delimiter: String,
    /// Keep the first N hosts (-N: the last N)
    #[arg(short = 's', long, value_name = "N", allow_negative_numbers = true)]
    size: Option<i64>,
    /// Hosts of the first list that are in none of the others
    #[arg(short = 'm', long)]
    minus: bool,
    /// Hosts of the first list that are in all of the others
    #[arg(short = 'i', long)]
    intersection: bool,
    /// Print every host, joined by --delimiter
    #[arg(short = 'e', long)]
    expand: bool,
    /// Print the number of hosts
    #[arg(short = 'c', long)]
    count: bool,
    /// Print the Nth host (1 is the first, -1 the last)
    #[arg(short = 'n', long, value_name = "N", allow_negative_numbers = true)]
    nth: Option<i64>,
    /// Print JSON for scripts
    #[arg(long)]
    json: bool,
}

/// The hosts the operands select, before `--size`: `list` (the first list with
/// `--minus`/`--intersection`, else all lists joined), of which a host is kept when its
/// membership in `filter`'s set equals `filter`'s flag.
struct Selected {
    list: HostList,
    filter: Option<(HostSet, bool)>,
    /// `--size` applied: the kept hosts are positions `start..start + len` of the selection.
    start: u64,
    len: u64,
}

impl Selected {
    fn keeps(&self, host: &str) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|(set, member)| set.contains(host) == *member)
    }

    /// The selected hosts in order, after `--size`.
    fn iter(&self) -> impl Iterator<Item = String> + '_ {
        self.list
            .iter()
            .filter(|h| self.keeps(h))
            .skip(usize::try_from(self.start).unwrap_or(usize::MAX))
            .take(usize::try_from(self.len).unwrap_or(usize::MAX))
    }

    /// The host at 0-based `index` of the kept hosts.
    fn get(&self, index: u64) -> Option<String> {
        if self.filter.is_none() {
            return self.list.get(self.start + index);
        }
        self.iter().nth(usize::try_from(index).ok()?)
    }

    /// The kept hosts as a set; by set algebra on ranges when `--size` kept everything.
    fn to_set(&self, total: u64) -> Result<HostSet, String> {
        if self.start == 0 && self.len == total {
            let first = self.list.to_set().map_err(|e| format!("host list: {e}"))?;
            return Ok(match &self.filter {
                None => first,
                Some((set, true)) => first.intersection(set),
                Some((set, false)) => first.difference(set),
            });
        }
        let names: Vec<String> = self.iter().collect();
        Ok(HostSet::from_names(names.iter().map(String::as_str)))
    }
}

/// Reads the operands and applies `--minus`/`--intersection` and `--size`; returns the
/// selection and how many hosts it had before `--size`.
fn select(args: &Args) -> Result<(Selected, u64), String> {
    if args.hosts.iter().filter(|h| *h == "-").count() > 1 {
        return Err("HOSTS: - (standard input) can be given only once".into());
    }
    let mut lists = Vec::with_capacity(args.hosts.len());
    for operand in &args.hosts {
        lists.push((operand, read_list(operand)?));
    }
    let mut lists = lists.into_iter();
    let (_, mut list) = lists.next().expect("clap requires one HOSTS");
    let mut filter = None;
    if args.minus || args.intersection {
        let mut combined: Option<HostSet> = None;
        for (operand, other) in lists {
            let set = other
                .to_set()
                .map_err(|e| format!("host list {operand:?}: {e}"))?;
            combined = Some(match combined {
                None => set,
                Some(c) if args.minus => c.union(&set),
                Some(c) => c.intersection(&set),
            });
        }
        // with one list alone, --minus and --intersection leave it as it is (as v3.1)
        filter = combined.map(|set| (set, args.intersection));
    } else {
        for (_, other) in lists {
            list.extend(other);
        }
    }
    let mut selected = Selected {
        list,
        filter,
        start: 0,
        len: 0,
    };
    let total = if selected.filter.is_none() {
        selected.list.count()
    } else {
        let mut n = 0u64;
        selected.list.for_each_host(|h| {
            if selected.keeps(h) {
                n += 1;
            }
        });
        n
    };
    let (start, len) = match args.size {
        None => (0, total),
        Some(n) => {
            let len = n.unsigned_abs().min(total);
            if n >= 0 { (0, len) } else { (total - len, len) }
        }
    };
    selected.start = start;
    selected.len = len;
    Ok((selected, total))
}

/// `--delimiter`: `\n` and `\t` as written on a command line mean newline and tab.
fn delimiter(given: &str) -> &str {
    match given {
        "\\n" => "\n",
        "\\t" => "\t",
        other => other,
    }
}

/// 0-based index of `--nth n` among `len` hosts (1 is the first, -1 the last).
fn nth_index(n: i64, len: u64) -> Option<u64> {
    match n {
        0 => None,
        n if n > 0 => Some(n as u64 - 1).filter(|&i| i < len),
        n => len.checked_sub(n.unsigned_abs()),
    }
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let fail = |e: String| {
        eprintln!("scr_hostlist: ERROR: {e}");
        Ok(ExitCode::from(1))
    };
    let (selected, total) = match select(&args) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if let Some(n) = args.nth {
        let Some(host) = nth_index(n, selected.len).and_then(|i| selected.get(i)) else {
            return fail(format!(
                "--nth {n} is out of range for the specified host list ({} hosts)",
                selected.len
            ));
        };
        print_one(&mut out, args.json, "host", json!(host))
    } else if args.count {
        print_one(&mut out, args.json, "count", json!(selected.len))
    } else if args.expand {
        if args.json {
            let all: Vec<String> = selected.iter().collect();
            writeln!(out, "{}", json!({ "hosts": all }))
        } else {
            let sep = delimiter(&args.delimiter);
            let mut result = Ok(());
            for (i, host) in selected.iter().enumerate() {
                if i > 0 {
                    result = out.write_all(sep.as_bytes());
                }
                result = result.and_then(|()| out.write_all(host.as_bytes()));
                if result.is_err() {
                    break;
                }
            }
            result.and_then(|()| out.write_all(b"\n"))
        }
    } else {
        let set = match selected.to_set(total) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        if args.json {
            writeln!(
                out,
                "{}",
                json!({ "hosts": set.to_string(), "count": set.count() })
            )
        } else {
            writeln!(out, "{set}")
        }
    };
    // a closed pipe (`| head`) is not an error worth reporting
    let _ = written.and_then(|()| out.flush());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_index_is_one_based_and_bounded() {
        assert_eq!(nth_index(1, 3), Some(0));
        assert_eq!(nth_index(3, 3), Some(2));
        assert_eq!(nth_index(4, 3), None);
        assert_eq!(nth_index(-1, 3), Some(2));
        assert_eq!(nth_index(-3, 3), Some(0));
        assert_eq!(nth_index(-4, 3), None);
        assert_eq!(nth_index(0, 3), None);
        assert_eq!(nth_index(i64::MIN, 3), None);
    }

    #[test]
    fn delimiter_escapes() {
        assert_eq!(delimiter("\\n"), "\n");
        assert_eq!(delimiter("\\t"), "\t");
        assert_eq!(delimiter(" "), " ");
        assert_eq!(delimiter("\\x"), "\\x");
    }
}
