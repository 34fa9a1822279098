//! Remote execution on many nodes at once, keeping each node's output and exit code (SCR 3's
//! pdsh wrapper loses the codes). With `pdsh` on the PATH it is used (rcmd from
//! PDSH_RCMD_TYPE, else ssh; the exit code travels as a marker line); without it, ssh
//! processes run in parallel waves of `fanout`.

use hostlist::HostSet;
use std::process::{Command, Stdio};

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

/// Quotes a word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:,=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Runs the shell command `command` on every node of `nodes`.
pub fn run_on_nodes(nodes: &HostSet, command: &str, fanout: usize) -> Vec<NodeResult> {
    let names: Vec<String> = nodes.iter().collect();
    if names.is_empty() {
        return Vec::new();
    }
    if on_path("pdsh") {
        with_pdsh(&names, command, fanout)
    } else {
        with_ssh(&names, command, fanout)
    }
}

fn with_pdsh(names: &[String], command: &str, fanout: usize) -> Vec<NodeResult> {
    let rcmd = std::env::var("PDSH_RCMD_TYPE").unwrap_or_else(|_| "ssh".into());
    let out = Command::new("pdsh")
        .args([
            "-R",
            &rcmd,
            "-f",
            &fanout.max(1).to_string(),
            "-w",
            &names.join(","),
        ])
        .arg(format!("{command}; echo {EXIT_MARKER}$?"))
        .stdin(Stdio::null())
        .output();
    let mut results: Vec<NodeResult> = names
        .iter()
        .map(|n| NodeResult {
            node: n.clone(),
            stdout: String::new(),
            stderr: String::new(),
            code: None,
        })
        .collect();
    let Ok(out) = out else {
        for r in &mut results {
            r.stderr = "pdsh could not be started".into();
        }
        return results;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((node, text)) = line.split_once(": ") else {
            continue;
        };
        if let Some(r) = results.iter_mut().find(|r| r.node == node) {
            match text.strip_prefix(EXIT_MARKER) {
                Some(code) => r.code = code.trim().parse().ok(),
                None => {
                    r.stdout.push_str(text);
                    r.stdout.push('\n');
                }
            }
        }
    }
    // pdsh reports its own failures as "pdsh@host: node: message"
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        let rest = line.split_once(": ").map_or(line, |(_, r)| r);
        if let Some((node, text)) = rest.split_once(": ")
            && let Some(r) = results.iter_mut().find(|r| r.node == node)
        {
            r.stderr.push_str(text);
            r.stderr.push('\n');
        }
    }
    results
}

fn with_ssh(names: &[String], command: &str, fanout: usize) -> Vec<NodeResult> {
    let mut results = Vec::with_capacity(names.len());
    for wave in names.chunks(fanout.max(1)) {
        let children: Vec<_> = wave
            .iter()
            .map(|node| {
                let child = Command::new("ssh")
                    .args([
                        "-o",
                        "BatchMode=yes",
                        "-o",
                        "ConnectTimeout=5",
                        node,
                        command,
                    ])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn();
                (node.clone(), child)
            })
            .collect();
        for (node, child) in children {
            results.push(match child.and_then(|c| c.wait_with_output()) {
                // ssh's own failures exit 255
                Ok(out) => NodeResult {
                    node,
                    stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    code: out.status.code().filter(|&c| c != 255),
                },
                Err(e) => NodeResult {
                    node,
                    stdout: String::new(),
                    stderr: format!("ssh could not be started: {e}"),
                    code: None,
                },
            });
        }
    }
    results
}
