//! Remote execution on many nodes at once, keeping each node's output and exit code (SCR 3's
//! pdsh wrapper loses the codes). With `pdsh` on the PATH it is used (rcmd from
//! PDSH_RCMD_TYPE, else ssh; the exit code travels as a marker line); without it, ssh
//! processes run in parallel waves of `fanout`.

use super::child;
use hostlist::HostSet;

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
    let fanout = fanout.max(1).to_string();
    let marked = format!("{command}; echo {EXIT_MARKER}$?");
    let out = child::capture(
        "pdsh",
        ["-R", &rcmd, "-f", &fanout, "-w", &names.join(","), &marked],
    );
    let mut results: Vec<NodeResult> = names
        .iter()
        .map(|n| NodeResult {
            node: n.clone(),
            stdout: String::new(),
            stderr: String::new(),
            code: None,
        })
        .collect();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            for r in &mut results {
                r.stderr = e.to_string();
            }
            return results;
        }
    };
    for line in out.stdout.lines() {
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
    for line in out.stderr.lines() {
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
        let sessions: Vec<_> = wave
            .iter()
            .map(|node| {
                let ssh_args = [
                    "-o",
                    "BatchMode=yes",
                    "-o",
                    "ConnectTimeout=5",
                    node,
                    command,
                ];
                let (ssh, line) = child::command("ssh", ssh_args);
                let handle = ssh
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
                handle.and_then(|h| h.into_output().map_err(|e| child::not_started("ssh", &e)));
            results.push(match waited {
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
                    stderr: e.to_string(),
                    code: None,
                },
            });
        }
    }
    results
}
