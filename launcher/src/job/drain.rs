//! The post-run drain across nodes (SCR's `scr_scavenge` and `scr_postrun`): run
//! `scr copy` on every node still up through pdsh (ssh to real hosts, its exec module for
//! emulated nodes), then a second round on the nodes holding partners' copies of the
//! nodes that failed, then index (rebuilding from parity what is still missing).

use super::progress::DrainProgress;
use super::remote::{self, Rcmd};
use hostlist::HostSet;
use scr::layout;
use std::path::Path;

/// What one node's `scr copy` reported.
#[derive(Clone, Debug, Default)]
pub struct NodeCopy {
    pub node: String,
    pub ok: bool,
    pub partners: Vec<String>,
    /// The ranks whose own files it copied.
    pub ranks: Vec<u64>,
    pub detail: String,
}

/// Where the drain runs and what it copies.
pub struct Scavenge<'a> {
    /// The job's control directory (`<SCR_CNTL_BASE>/<user>/scr.<jobid>`).
    pub cntl_dir: &'a Path,
    pub prefix: &'a Path,
    pub id: u64,
    pub buf_size: usize,
    /// Real hosts, or emulated nodes on this machine (their control directories are
    /// `node.<name>` inside `cntl_dir`), reached through pdsh's exec module.
    pub rcmd: Rcmd,
    /// Remote fan-out width.
    pub fanout: usize,
}

impl Scavenge<'_> {
    /// The control directory `scr copy` reads on each node: on real hosts the job's; on
    /// this machine the library's rule ([`super::local_node_cntl_dir`]) applies, `%h`
    /// standing for the node in the one command pdsh's exec module runs for all.
    /// Returns the component below the job's control directory, if any: `node.%h`.
    fn node_cntl_dir(&self, nodes: &[String]) -> Option<String> {
        let emulated = nodes
            .iter()
            .any(|n| layout::Node::named(n).shares_machine());
        (self.rcmd == Rcmd::Exec && emulated).then(|| {
            let dir = layout::emulated_node_dir(Path::new(""), "%h").expect("a plain component");
            dir.to_string_lossy().into_owned()
        })
    }

    /// The shell command each node runs: `scr copy` of its control directory, the failed
    /// nodes after `--` (operands, never options). Every path is quoted; `%h` (pdsh's and
    /// our stand-in for the node's name) sits inside a quoted path, which is sound because
    /// node names are checked host names.
    fn copy_command(&self, nodes: &[String], failed: &[String]) -> String {
        // pdsh's exec module reads '%' sequences in the command: a literal one is doubled
        let literal = |p: &Path| {
            let text = p.to_string_lossy();
            match self.rcmd {
                Rcmd::Exec => remote::exec_escape(&text),
                Rcmd::Remote => text.into_owned(),
            }
        };
        let cntl = match self.node_cntl_dir(nodes) {
            Some(placeholder) => format!("{}/{placeholder}", literal(self.cntl_dir)),
            None => literal(self.cntl_dir),
        };
        let failed: Vec<String> = failed.iter().map(|f| remote::shell_quote(f)).collect();
        format!(
            "{} copy --progress --cntldir {} --id {} --dstdir {} --buf {} -- {}",
            remote::scr_command_line(),
            remote::shell_quote(&cntl),
            self.id,
            remote::shell_quote(&literal(self.prefix)),
            self.buf_size,
            failed.join(" ")
        )
    }

    fn copy_on(
        &self,
        nodes: &[String],
        failed: &[String],
        progress: &mut DrainProgress,
    ) -> Vec<NodeCopy> {
        let command = self.copy_command(nodes, failed);
        let nodes = HostSet::from_names(nodes.iter().map(String::as_str));
        let mut on_line = |node: &str, line: &str| {
            let numbers = line.split(": Progress: ").nth(1).and_then(|p| {
                let (done, total) = p.split_once(' ')?;
                Some((done.trim().parse().ok()?, total.trim().parse().ok()?))
            });
            if let Some((done, total)) = numbers {
                progress.update(node, done, total);
            }
        };
        let results = remote::run_on_nodes(&nodes, &command, self.fanout, self.rcmd, &mut on_line);
        results
            .into_iter()
            .map(|r| {
                let mut copy = NodeCopy {
                    node: r.node.clone(),
                    ok: r.code == Some(0),
                    partners: Vec::new(),
                    ranks: Vec::new(),
                    // "scr_copy: <host>: ERROR: why" → "ERROR: why": the node is named already
                    detail: r
                        .stderr
                        .lines()
                        .map(|l| {
                            l.strip_prefix("scr_copy: ")
                                .and_then(|rest| rest.split_once(": "))
                                .map_or(l, |(_, why)| why)
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                for line in r.stdout.lines() {
                    if let Some(list) = line.split(": Partners: ").nth(1) {
                        copy.partners = list.split_whitespace().map(str::to_string).collect();
                    }
                    if let Some(list) = line.split(": Ranks: ").nth(1) {
                        copy.ranks = list
                            .split_whitespace()
                            .filter_map(|r| r.parse().ok())
                            .collect();
                    }
                }
                if copy.detail.is_empty() && !copy.ok {
                    copy.detail = "no exit code: the node could not be reached".into();
                }
                progress.node_done(&copy.node, copy.ok, &copy.detail);
                copy
            })
            .collect()
    }

    /// Copies from every node in `up`, then partners' copies of the nodes in `down`, of
    /// those whose copy failed, and of those up that copied no rank of their own while
    /// another node holds partner copies of theirs (a node that came back with an empty
    /// cache). Returns what every node reported, both rounds.
    pub fn run(&self, up: &HostSet, down: &HostSet, progress: &mut DrainProgress) -> Vec<NodeCopy> {
        let up_nodes: Vec<String> = up.iter().collect();
        let mut results = self.copy_on(&up_nodes, &[], progress);
        let mut failed: Vec<String> = down.iter().collect();
        failed.extend(results.iter().filter(|r| !r.ok).map(|r| r.node.clone()));
        let owners: std::collections::BTreeSet<&String> =
            results.iter().flat_map(|r| &r.partners).collect();
        failed.extend(
            results
                .iter()
                .filter(|r| r.ok && r.ranks.is_empty() && owners.contains(&r.node))
                .map(|r| r.node.clone()),
        );
        if failed.is_empty() {
            return results;
        }
        let holders: Vec<String> = results
            .iter()
            .filter(|r| r.ok && r.partners.iter().any(|p| failed.contains(p)))
            .map(|r| r.node.clone())
            .collect();
        if !holders.is_empty() {
            results.extend(self.copy_on(&holders, &failed, progress));
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Names the host-name check accepts.
    fn host_name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_][A-Za-z0-9._-]{0,20}".prop_filter("a checked host name", |n| {
            hostlist::check_host_name(n).is_ok()
        })
    }

    proptest! {
        /// Whatever checked names the nodes have, and whatever a prefix holds, each node's
        /// command splits (by a shell word splitter we did not write) into the words meant:
        /// the node's control directory as one word, each failed node as one operand.
        #[test]
        fn every_accepted_name_stays_one_argument(
            nodes in proptest::collection::vec(host_name(), 1..4),
            failed in proptest::collection::vec(host_name(), 0..3),
            prefix in "/[ -~]{1,30}",
        ) {
            let cntl = Path::new("/tmp/o'dd %h dir%%/scr.1");
            let prefix = std::path::PathBuf::from(prefix);
            let run = Scavenge {
                cntl_dir: cntl,
                prefix: &prefix,
                id: 7,
                buf_size: 1 << 20,
                rcmd: Rcmd::Exec,
                fanout: 4,
            };
            let command = run.copy_command(&nodes, &failed);
            for node in &nodes {
                let argv = remote::node_argv(Rcmd::Exec, false, node, &command);
                prop_assert_eq!(&argv[..2], &["sh".to_string(), "-c".to_string()]);
                let words = shell_words::split(&argv[2]).unwrap();
                let at = words.iter().position(|w| w == "--cntldir").unwrap();
                let want = match run.node_cntl_dir(&nodes) {
                    None => cntl.to_path_buf(),
                    Some(_) => cntl.join(format!("node.{node}")),
                };
                prop_assert_eq!(&words[at + 1], &want.to_string_lossy().into_owned());
                let dst = words.iter().position(|w| w == "--dstdir").unwrap();
                prop_assert_eq!(&words[dst + 1], &prefix.to_string_lossy().into_owned());
                let dashes = words.iter().position(|w| w == "--").unwrap();
                prop_assert_eq!(&words[dashes + 1..], &failed[..]);
                let ssh = remote::node_argv(Rcmd::Remote, false, node, &command);
                let dashes = ssh.iter().position(|w| w == "--").unwrap();
                prop_assert_eq!(&ssh[dashes + 1..], &[node.clone(), command.clone()]);
            }
        }
    }
}
