//! The post-run drain across nodes (SCR's `scr_scavenge` and `scr_postrun`): run
//! `scr copy` on every node still up through pdsh (ssh to real hosts, its exec module for
//! emulated nodes), then a second round on the nodes holding partners' copies of the
//! nodes that failed, then index (rebuilding from parity what is still missing).

use super::progress::DrainProgress;
use super::remote::{self, Rcmd};
use hostlist::HostSet;
use scr::layout;
use std::path::{Path, PathBuf};

/// What one node's `scr copy` reported.
#[derive(Clone, Debug, Default)]
pub struct NodeCopy {
    pub node: String,
    pub ok: bool,
    pub partners: Vec<String>,
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
    fn node_cntl_dir(&self, nodes: &[String]) -> PathBuf {
        let emulated = nodes.iter().any(|n| *n != super::local_host_name());
        if self.rcmd == Rcmd::Exec && emulated {
            layout::emulated_node_dir(self.cntl_dir, "%h")
        } else {
            self.cntl_dir.to_path_buf()
        }
    }

    fn copy_on(
        &self,
        nodes: &[String],
        failed: &[String],
        progress: &mut DrainProgress,
    ) -> Vec<NodeCopy> {
        let quote = |p: &Path| remote::shell_quote(&p.to_string_lossy());
        let failed: Vec<String> = failed.iter().map(|f| remote::shell_quote(f)).collect();
        let command = format!(
            "{} copy --progress --cntldir {} --id {} --dstdir {} --buf {} {}",
            remote::scr_command_line(),
            quote(&self.node_cntl_dir(nodes)),
            self.id,
            quote(self.prefix),
            self.buf_size,
            failed.join(" ")
        );
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
                }
                if copy.detail.is_empty() && !copy.ok {
                    copy.detail = "no exit code: the node could not be reached".into();
                }
                progress.node_done(&copy.node, copy.ok, &copy.detail);
                copy
            })
            .collect()
    }

    /// Copies from every node in `up`, then partners' copies of the nodes in `down` and of
    /// those whose copy failed. Returns what every node reported, both rounds.
    pub fn run(&self, up: &HostSet, down: &HostSet, progress: &mut DrainProgress) -> Vec<NodeCopy> {
        let up_nodes: Vec<String> = up.iter().collect();
        let mut results = self.copy_on(&up_nodes, &[], progress);
        let mut failed: Vec<String> = down.iter().collect();
        failed.extend(results.iter().filter(|r| !r.ok).map(|r| r.node.clone()));
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
