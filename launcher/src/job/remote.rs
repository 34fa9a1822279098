//! Remote execution on many nodes at once, keeping each node's output and exit code (SCR 3's
//! pdsh wrapper loses the codes). With `pdsh` on the PATH it is used (rcmd from
//! PDSH_RCMD_TYPE, else ssh; emulated nodes through its exec module; the exit code travels
//! as a marker line); without it, ssh (or local shell) processes run in parallel waves of
//! `fanout`.

use super::child;
use hostlist::HostSet;
use std::io::{BufRead, BufReader};

/// What one node answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeResult {
    pub node: String,
    pub stdout: String,
    pub stderr: String,
    /// None when the node could not be reached or gave no exit code.
    pub code: Option<i32>,
}

const EXIT_MARKER: &str = "__SCR_EXIT_CODE=";

/// Whether `program` is on the PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// The `scr` command beside the running program, which other nodes reach at the same path
/// (a shared file system), quoted for their shell.
pub fn scr_command_line() -> String {
    let scr = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.with_file_name("scr").to_str()?.to_string()))
        .unwrap_or_else(|| "scr".into());
    shell_quote(&scr)
}

pub use super::child::shell_quote;

/// Doubles each `%` of a literal that goes into a command pdsh's exec module runs: it
/// replaces `%h` with the node's name and `%%` with `%` (and our own runner does the same).
pub fn exec_escape(literal: &str) -> String {
    literal.replace('%', "%%")
}

/// pdsh's exec module's substitution: `%h` becomes the node, `%%` a `%`; any other `%`
/// sequence stays as written.
fn exec_substitute(command: &str, node: &str) -> String {
    let mut out = String::with_capacity(command.len() + node.len());
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('h')) => {
                chars.next();
                out.push_str(node);
            }
            ('%', Some('%')) => {
                chars.next();
                out.push('%');
            }
            _ => out.push(c),
        }
    }
    out
}

/// How a command reaches the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rcmd {
    /// Real hosts: pdsh with PDSH_RCMD_TYPE (default ssh; `srun` for a job step on the
    /// node where ssh to compute nodes is forbidden), else ssh (or srun) processes.
    Remote,
    /// Emulated nodes on this machine: the command runs here once per node with `%h`
    /// replaced by the node's name (pdsh's exec module, else local shells).
    Exec,
}

/// Runs the shell command `command` on every node of `nodes`, `fanout` at a time.
/// `on_line(node, line)` hears each line a node prints on stdout as it arrives (through
/// pdsh; without pdsh, when that node finishes).
pub fn run_on_nodes(
    nodes: &HostSet,
    command: &str,
    fanout: usize,
    rcmd: Rcmd,
    on_line: &mut dyn FnMut(&str, &str),
) -> Vec<NodeResult> {
    let names: Vec<String> = nodes.iter().collect();
    if names.is_empty() {
        return Vec::new();
    }
    if on_path("pdsh") {
        with_pdsh(&names, command, fanout, rcmd, on_line)
    } else {
        with_processes(&names, command, fanout, rcmd, on_line)
    }
}

fn with_pdsh(
    names: &[String],
    command: &str,
    fanout: usize,
    rcmd: Rcmd,
    on_line: &mut dyn FnMut(&str, &str),
) -> Vec<NodeResult> {
    // a newline, not "; ": the command may end in "&" (an agent started in the background),
    // after which ";" is a syntax error
    let marked = format!("{command}\necho {EXIT_MARKER}$?");
    let module = match rcmd {
        Rcmd::Remote => rcmd_type(),
        Rcmd::Exec => "exec".into(),
    };
    // exec runs its arguments as they are: the shell (and srun) are ours to add
    let prefix = match module.as_str() {
        "srun" => Some(srun_step("%h")),
        "exec" => Some(Vec::new()),
        _ => None,
    };
    let mut args = vec![
        "-R".to_string(),
        if prefix.is_some() {
            "exec".into()
        } else {
            module
        },
        "-f".into(),
        fanout.max(1).to_string(),
        "-w".into(),
        names.join(","),
    ];
    if let Some(prefix) = prefix {
        args.extend(prefix);
        args.extend(["sh".into(), "-c".into()]);
    }
    args.push(marked);
    let mut results: Vec<NodeResult> = names
        .iter()
        .map(|n| NodeResult {
            node: n.clone(),
            stdout: String::new(),
            stderr: String::new(),
            code: None,
        })
        .collect();
    let (pdsh, line) = child::command("pdsh", &args);
    let reader = match pdsh.stdin_null().stderr_capture().unchecked().reader() {
        Ok(r) => r,
        Err(e) => {
            let e = child::not_started(&line, &e);
            for r in &mut results {
                r.stderr = e.to_string();
            }
            return results;
        }
    };
    for line in BufReader::new(&reader).lines().map_while(|l| l.ok()) {
        let Some((node, text)) = line.split_once(": ") else {
            continue;
        };
        if let Some(r) = results.iter_mut().find(|r| r.node == node) {
            match text.strip_prefix(EXIT_MARKER) {
                Some(code) => r.code = code.trim().parse().ok(),
                None => {
                    on_line(node, text);
                    r.stdout.push_str(text);
                    r.stdout.push('\n');
                }
            }
        }
    }
    let stderr = match reader.try_wait() {
        Ok(Some(out)) => String::from_utf8_lossy(&out.stderr).into_owned(),
        _ => String::new(),
    };
    // the nodes' own stderr comes as "node: text", pdsh's reports as "pdsh@host: node: text"
    for line in stderr.lines() {
        let rest = if line.starts_with("pdsh@") {
            line.split_once(": ").map_or(line, |(_, r)| r)
        } else {
            line
        };
        if let Some((node, text)) = rest.split_once(": ")
            && let Some(r) = results.iter_mut().find(|r| r.node == node)
        {
            r.stderr.push_str(text);
            r.stderr.push('\n');
        }
    }
    results
}

/// How real hosts are reached: PDSH_RCMD_TYPE, else ssh.
fn rcmd_type() -> String {
    std::env::var("PDSH_RCMD_TYPE").unwrap_or_else(|_| "ssh".into())
}

/// PDSH_RCMD_TYPE=srun: where ssh to compute nodes is forbidden, each node is reached by a
/// one-task job step on it (SCR 3 does the same through pdsh's exec module).
pub fn through_srun() -> bool {
    rcmd_type() == "srun"
}

/// `srun` running one task on `node` (sharing the allocation's CPUs with any step a dead
/// node left behind, where SLURM allows).
fn srun_step(node: &str) -> Vec<String> {
    let mut argv: Vec<String> = ["srun", "-N1", "-n1", "-w", node]
        .map(str::to_string)
        .to_vec();
    if super::srun_has_overlap("srun") {
        argv.insert(1, "--overlap".into());
    }
    argv
}

/// The command line that runs the shell command `command` on `node` without pdsh: ssh
/// (the node after `--`, so no name reads as an option), a one-task srun step, or for
/// emulated nodes a local shell with `%h` replaced by the node's name. Node names are
/// host names checked where they entered (letters, digits, `-`, `.`, `_`), so the
/// replacement cannot change how the shell splits the command.
pub(crate) fn node_argv(rcmd: Rcmd, via_srun: bool, node: &str, command: &str) -> Vec<String> {
    let shell = ["sh".to_string(), "-c".into()];
    match rcmd {
        Rcmd::Remote if via_srun => srun_step(node)
            .into_iter()
            .chain(shell)
            .chain([command.to_string()])
            .collect(),
        Rcmd::Remote => ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "--"]
            .into_iter()
            .chain([node, command])
            .map(str::to_string)
            .collect(),
        Rcmd::Exec => shell
            .into_iter()
            .chain([exec_substitute(command, node)])
            .collect(),
    }
}

/// Without pdsh: one process per node (ssh, or a local shell for emulated nodes), in
/// parallel waves of `fanout`.
fn with_processes(
    names: &[String],
    command: &str,
    fanout: usize,
    rcmd: Rcmd,
    on_line: &mut dyn FnMut(&str, &str),
) -> Vec<NodeResult> {
    let mut results = Vec::with_capacity(names.len());
    for wave in names.chunks(fanout.max(1)) {
        let sessions: Vec<_> = wave
            .iter()
            .map(|node| {
                let argv = node_argv(rcmd, through_srun(), node, command);
                let (program, args) = argv.split_first().expect("a program");
                let (expr, line) = child::command(program, args);
                let handle = expr
                    .stdin_null()
                    .stdout_capture()
                    .stderr_capture()
                    .unchecked()
                    .start();
                (
                    node.clone(),
                    handle.map_err(|e| child::not_started(&line, &e)),
                )
            })
            .collect();
        for (node, handle) in sessions {
            let waited =
                handle.and_then(|h| h.into_output().map_err(|e| child::not_started(&node, &e)));
            results.push(match waited {
                Ok(out) => {
                    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                    for line in stdout.lines() {
                        on_line(&node, line);
                    }
                    NodeResult {
                        node,
                        stdout,
                        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                        // ssh's own failures exit 255
                        code: out
                            .status
                            .code()
                            .filter(|&c| rcmd == Rcmd::Exec || through_srun() || c != 255),
                    }
                }
                Err(e) => NodeResult {
                    node,
                    stdout: String::new(),
                    stderr: e.to_string(),
                    code: None,
                },
            });
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our runner substitutes as pdsh's exec module does (pdsh is installed by setup).
    #[test]
    fn exec_substitution_matches_pdsh() {
        // not a lone '%' at the end: pdsh reads past the string there (it printed
        // "100%SHELL=/bin/bash" here), which is why every literal '%' is doubled
        assert_eq!(exec_substitute(&exec_escape("100%"), "n7"), "100%");
        for arg in [
            "a%%b",
            "x%hy",
            "p%zq",
            "%%h",
            "%%%h",
            "/tmp/o'dd %h dir%%/scr.1",
        ] {
            let (cmd, _) =
                child::command("pdsh", ["-R", "exec", "-w", "n7", "printf", "%s\\n", arg]);
            let out = cmd
                .stderr_null()
                .read()
                .expect("pdsh runs (scripts/setup.sh installs it)");
            let theirs = out.strip_prefix("n7: ").unwrap_or(&out).to_string();
            assert_eq!(exec_substitute(arg, "n7"), theirs, "{arg}");
            assert_eq!(
                exec_substitute(&exec_escape(arg), "n7"),
                arg,
                "escaped {arg}"
            );
        }
    }
}
