//! `scr glob-hosts` against the real tools on generated corpora: expansion against SLURM's
//! `scontrol show hostnames`, compression and set operations against ClusterShell (the
//! library behind `nodeset`). Both are installed by scripts/setup.sh.

mod common;

use common::{scr_args as scr, stdout_ok as stdout};
use std::io::Write;
use std::process::{Command, Stdio};

/// A small deterministic generator (xorshift64*), so the corpus is the same every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn ranges(rng: &mut Rng, pad: usize) -> String {
    let mut parts = Vec::new();
    let mut at = rng.below(20);
    for _ in 0..1 + rng.below(3) {
        let lo = at + rng.below(5);
        let hi = lo + rng.below(12);
        parts.push(if lo == hi {
            format!("{lo:0pad$}")
        } else {
            format!("{lo:0pad$}-{hi:0pad$}")
        });
        at = hi + 2;
    }
    parts.join(",")
}

/// Hostlists in the forms SLURM 22.05 accepts (names end in a bracket or digits).
fn slurm_corpus() -> Vec<String> {
    let mut rng = Rng(0x51ee7);
    (0..150)
        .map(|_| {
            let groups = 1 + rng.below(3);
            (0..groups)
                .map(|_| {
                    let prefix = rng.pick(&["node", "n", "rack-a", "cn", "x"]);
                    match rng.below(4) {
                        0 => format!("{prefix}{}", rng.below(300)),
                        1 => format!(
                            "rack[{}]-{prefix}[{}]",
                            ranges(&mut rng, 1),
                            ranges(&mut rng, 2)
                        ),
                        _ => {
                            let pad = rng.pick(&["0", "1", "2", "3"]).parse().unwrap();
                            format!("{prefix}[{}]", ranges(&mut rng, pad))
                        }
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

#[test]
fn expansion_matches_scontrol_show_hostnames() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    std::fs::write(&conf, "ClusterName=test\nSlurmctldHost=localhost\n").unwrap();
    for list in slurm_corpus() {
        let theirs = Command::new("scontrol")
            .args(["show", "hostnames", &list])
            .env("SLURM_CONF", &conf)
            .output()
            .expect("scontrol must be installed (scripts/setup.sh installs slurm-client)");
        let ours = scr(&["glob-hosts", "--expand", "-h", &list]);
        assert_eq!(stdout(&ours), stdout(&theirs), "{list}");
        let count = stdout(&scr(&["glob-hosts", "-c", "-h", &list]));
        assert_eq!(
            count.trim().parse::<usize>().unwrap(),
            stdout(&theirs).lines().count(),
            "{list}"
        );
    }
}

/// Runs ClusterShell's NodeSet on many cases in one Python process; each line of the
/// result is `fold(A)|fold(A-B)|fold(A&B)|fold(A|B)|fold(A^B)|sorted expansion of A`.
fn clustershell(cases: &[(String, String)]) -> Vec<String> {
    let script = r#"
import sys
from ClusterShell.NodeSet import NodeSet
for line in sys.stdin:
    a, b = line.rstrip("\n").split("|")
    A, B = NodeSet(a), NodeSet(b)
    out = [str(A), str(A.difference(B)), str(A.intersection(B)), str(A.union(B)), str(A.symmetric_difference(B)), " ".join(sorted(A))]
    print("|".join(out))
"#;
    // Debian's interpreter, the one its `nodeset` runs on (a pyenv python3 may be first on PATH)
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = cases.iter().map(|(a, b)| format!("{a}|{b}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "ClusterShell must be installed (python3-clustershell): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// One-dimensional names (one digit run), with padding, suffixes and several prefixes,
/// written as names and as ranges.
fn set_corpus() -> Vec<(String, String)> {
    let mut rng = Rng(0xc1a5);
    let mut list = || {
        let mut items = Vec::new();
        for _ in 0..1 + rng.below(6) {
            let prefix = rng.pick(&["node", "n", "cn", "login", "a"]);
            let suffix = rng.pick(&["", "", ".llnl.gov", "-ib"]);
            let pad: usize = rng.pick(&["0", "0", "2", "3"]).parse().unwrap();
            if rng.below(3) == 0 {
                items.push(format!("{prefix}{:0pad$}{suffix}", rng.below(120)));
            } else {
                items.push(format!("{prefix}[{}]{suffix}", ranges(&mut rng, pad)));
            }
        }
        items.join(",")
    };
    (0..200).map(|_| (list(), list())).collect()
}

#[test]
fn compression_and_set_operations_match_clustershell() {
    let cases = set_corpus();
    let theirs = clustershell(&cases);
    assert_eq!(theirs.len(), cases.len());
    for ((a, b), expected) in cases.iter().zip(theirs) {
        let e: Vec<&str> = expected.split('|').collect();
        let pair = format!("{a}:{b}");
        let ours = [
            stdout(&scr(&["glob-hosts", "-C", a])),
            stdout(&scr(&["glob-hosts", "-m", &pair])),
            stdout(&scr(&["glob-hosts", "-i", &pair])),
            stdout(&scr(&["glob-hosts", "--union", &pair])),
            stdout(&scr(&["glob-hosts", "--xor", &pair])),
        ];
        for (what, (ours, theirs)) in ["compress", "minus", "intersection", "union", "xor"]
            .iter()
            .zip(ours.iter().zip(&e))
        {
            assert_eq!(ours.trim_end(), *theirs, "{what} of {a} : {b}");
        }
        let mut expanded: Vec<String> = stdout(&scr(&["glob-hosts", "--expand", "-C", a]))
            .lines()
            .map(str::to_string)
            .collect();
        expanded.sort();
        assert_eq!(expanded.join(" "), e[5], "expansion of {a}");
    }
}

#[test]
fn multi_dimensional_sets_match_clustershell_as_sets() {
    let mut rng = Rng(0xd1);
    let cases: Vec<(String, String)> = (0..60)
        .map(|_| {
            let mut l = || {
                format!(
                    "rack[{}]-node[{}],x{}y{}",
                    ranges(&mut rng, 1),
                    ranges(&mut rng, 2),
                    rng.below(3),
                    rng.below(3)
                )
            };
            (l(), l())
        })
        .collect();
    let theirs = clustershell(&cases);
    for ((a, b), expected) in cases.iter().zip(theirs) {
        let e: Vec<&str> = expected.split('|').collect();
        for (flag, theirs) in [
            ("-m", e[1]),
            ("-i", e[2]),
            ("--union", e[3]),
            ("--xor", e[4]),
        ] {
            let mut ours: Vec<String> =
                stdout(&scr(&["glob-hosts", "--expand", flag, &format!("{a}:{b}")]))
                    .lines()
                    .map(str::to_string)
                    .collect();
            ours.sort();
            let mut theirs: Vec<String> = stdout(&scr(&["glob-hosts", "--expand", "-C", theirs]))
                .lines()
                .map(str::to_string)
                .collect();
            theirs.sort();
            assert_eq!(ours, theirs, "{flag} {a} : {b}");
        }
    }
}

#[test]
fn scr_flags_and_messages() {
    assert_eq!(
        stdout(&scr(&["glob-hosts", "-c", "-h", "n[1-3],n1"])),
        "4\n",
        "a list counts duplicates"
    );
    assert_eq!(
        stdout(&scr(&["glob-hosts", "-n", "-1", "-h", "n[1-3]"])),
        "n3\n"
    );
    assert_eq!(
        stdout(&scr(&["glob-hosts", "-n", "2", "-m", "n[1-5]:n2"])),
        "n3\n"
    );
    // alone, the list as written, expanded and comma-separated (SCR v1.2/v2.0)
    assert_eq!(
        stdout(&scr(&["glob-hosts", "-h", "n3,n1,n[2-3]"])),
        "n3,n1,n2,n3\n"
    );
    assert_eq!(stdout(&scr(&["glob-hosts", "-C", "n3,n1,n2"])), "n[1-3]\n");
    let o = scr(&["glob-hosts", "-n", "0", "-h", "n[1-3]"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Host index (0) is out of range for specified host list.")
    );
    // split at the last colon: the first operand "a:b[1-3]" then names a host with a ':',
    // which no host name holds
    let o = scr(&["glob-hosts", "-m", "a:b[1-3]:b2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("':' cannot be part of a host name"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = scr(&["glob-hosts", "-c"]);
    assert_eq!(o.status.code(), Some(1), "no list is a usage error");
}

#[test]
fn malformed_lists_fail_with_column_and_hint() {
    for bad in [
        "node[",
        "node[1-3",
        "node[3-1]",
        "node[a-b]",
        "node[1,,3]",
        "node[1-3]]",
        "n]",
        "node[]",
    ] {
        let o = scr(&["glob-hosts", "-c", "-h", bad]);
        assert_eq!(o.status.code(), Some(1), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("column") && err.contains('('), "{bad}: {err}");
        assert!(o.stdout.is_empty(), "{bad}: nothing on stdout");
    }
}

#[test]
fn lists_from_files_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hosts.txt");
    let many: String = (0..40_000).map(|i| format!("node{i}\n")).collect(); // > 128 KiB
    std::fs::write(&file, many).unwrap();
    let at = format!("@{}", file.display());
    assert_eq!(stdout(&scr(&["glob-hosts", "-C", &at])), "node[0-39999]\n");
    // a list alone prints its hosts comma-separated, as SCR's scr_glob_hosts
    let expanded = stdout(&scr(&["glob-hosts", "-h", &at]));
    assert_eq!(expanded.trim_end().split(',').count(), 40_000);
    assert!(expanded.starts_with("node0,node1,node2,"));
    assert_eq!(
        stdout(&scr(&[
            "glob-hosts",
            "-c",
            "-m",
            &format!("{at}:node[0-9]")
        ])),
        "39990\n"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_scr"))
        .args(["glob-hosts", "-c", "-h", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"a1,a2\na[3-4]\n")
        .unwrap();
    assert_eq!(stdout(&child.wait_with_output().unwrap()), "4\n");
    let o = scr(&["glob-hosts", "-h", "@/nonexistent/hosts"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/hosts"));
}

/// The exit status, stdout and stderr of `scr hostlist ARGS`.
fn hostlist(args: &[&str]) -> (Option<i32>, String, String) {
    let o = scr(&[&["hostlist"], args].concat());
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn hostlist_compresses_expands_counts_and_indexes() {
    // several lists are joined, then compressed as a set (sorted, duplicates removed)
    assert_eq!(
        stdout(&scr(&["hostlist", "n[1-3]", "n5", "n2,m7"])),
        "m7,n[1-3,5]\n"
    );
    // --expand keeps each list's written order and duplicates, joined by ','
    assert_eq!(
        stdout(&scr(&["hostlist", "--expand", "n3,n1", "n[1-2]"])),
        "n3,n1,n1,n2\n"
    );
    // the two characters \n mean newline
    assert_eq!(
        stdout(&scr(&["hostlist", "-e", "-d", "\\n", "n[1-3]", "x"])),
        "n1\nn2\nn3\nx\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "-e", "-d", "\\t", "n[1-2]"])),
        "n1\tn2\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "--count", "n[1-3]", "n1", "x[1-4]"])),
        "8\n"
    );
    // --nth indexes the joined list, 1-based, negative from the end
    assert_eq!(
        stdout(&scr(&["hostlist", "--nth", "4", "n[1-3]", "m[7-9]"])),
        "m7\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "-n", "-1", "n[1-3]", "m[7-9]"])),
        "m9\n"
    );
    for n in ["7", "-7", "0"] {
        let (code, out, err) = hostlist(&["-n", n, "n[1-3]", "m[7-9]"]);
        assert_eq!(code, Some(1), "--nth {n}");
        assert!(out.is_empty(), "--nth {n}: {out}");
        assert_eq!(
            err,
            format!(
                "scr_hostlist: ERROR: --nth {n} is out of range for the specified host list (6 hosts)\n"
            )
        );
    }
}

#[test]
fn hostlist_size_minus_and_intersection() {
    assert_eq!(
        stdout(&scr(&["hostlist", "-e", "--size", "2", "n[5-9]", "a1"])),
        "n5,n6\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "-e", "-s", "-2", "n[5-9]", "a1"])),
        "n9,a1\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "-s", "-2", "n[1-9]"])),
        "n[8-9]\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "-c", "-s", "20", "n[1-9]"])),
        "9\n"
    );
    // the first list minus all the others, in the first list's order
    assert_eq!(
        stdout(&scr(&[
            "hostlist", "--minus", "n[1-10]", "n[2-3]", "n[7,9]"
        ])),
        "n[1,4-6,8,10]\n"
    );
    // a host in a later list goes wherever it appears (SCR v3.1 would keep one n1)
    assert_eq!(
        stdout(&scr(&["hostlist", "-m", "-e", "n9,n1,n5,n1", "n1", "n2"])),
        "n9,n5\n"
    );
    // hosts of the first list that are in every other list
    assert_eq!(
        stdout(&scr(&[
            "hostlist",
            "--intersection",
            "n[1-10]",
            "n[3-12]",
            "n[0-5,9]"
        ])),
        "n[3-5,9]\n"
    );
    assert_eq!(
        stdout(&scr(&[
            "hostlist", "-i", "-e", "n9,n4,n3", "n[1-9]", "n[3-9]"
        ])),
        "n9,n4,n3\n"
    );
    // --size applies after --minus
    assert_eq!(
        stdout(&scr(&[
            "hostlist", "-m", "-n", "-1", "-s", "2", "n[1-9]", "n1"
        ])),
        "n3\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "--json", "-m", "n[1-9]", "n[2-8]"])),
        "{\"hosts\":\"n[1,9]\",\"count\":2}\n"
    );
    assert_eq!(
        stdout(&scr(&["hostlist", "--json", "-e", "n[1-2]", "a"])),
        "{\"hosts\":[\"n1\",\"n2\",\"a\"]}\n"
    );
}

#[test]
fn hostlist_rejects_bad_lists_and_usage() {
    let (code, out, err) = hostlist(&["-c", "n[1-3]", "node[1-3"]);
    assert_eq!(code, Some(1));
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with("scr_hostlist: ERROR: host list \"node[1-3\": column 5")
            && err.lines().count() == 1,
        "{err}"
    );
    for usage in [
        &["-m", "-i", "a", "b"][..],
        &["-e", "-c", "a"],
        &["-c"],
        &["-n", "x", "a"],
    ] {
        assert_eq!(hostlist(usage).0, Some(1), "{usage:?}");
    }
}

#[test]
fn hostlist_runs_as_scr_hostlist() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    stdout(&scr(&["install-links", bin.to_str().unwrap()]));
    let o = Command::new(bin.join("scr_hostlist"))
        .args(["-m", "n[1-6]", "n[3,5]"])
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "n[1-2,4,6]\n");
    let o = Command::new(bin.join("scr_hostlist"))
        .args(["-n", "9", "n[1-6]"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("scr_hostlist: ERROR: --nth 9"));
}
