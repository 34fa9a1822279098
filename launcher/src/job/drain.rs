//! The post-run drain across nodes (SCR's `scr_scavenge` and `scr_postrun`): run
//! `scr copy` on every node still up — in this process for emulated nodes, else through
//! remote execution — then a second round on the nodes holding partners' copies of the
//! nodes that failed, then index (rebuilding from parity what is still missing).

use super::remote;
use hostlist::HostSet;
use scr::scavenge::{self, CopyOptions, CopyReport};
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
    /// Emulated nodes on this machine (their control directories are `node.<name>`
    /// inside `cntl_dir`), or real hosts reached remotely.
    pub local: bool,
    /// Remote fan-out width.
    pub fanout: usize,
}

impl Scavenge<'_> {
    fn node_cntl_dir(&self, node: &str) -> PathBuf {
        let emulated = self.cntl_dir.join(format!("node.{node}"));
        if emulated.is_dir() {
            emulated
        } else {
            self.cntl_dir.to_path_buf()
        }
    }

    fn copy_here(&self, node: &str, failed: &[String]) -> NodeCopy {
        let opts = CopyOptions {
            buf_size: self.buf_size,
            failed_owners: failed.to_vec(),
        };
        match scavenge::copy_node(&self.node_cntl_dir(node), self.id, self.prefix, &opts) {
            Ok(CopyReport {
                partners,
                errors,
                files,
                bytes,
                ..
            }) => NodeCopy {
                node: node.to_string(),
                ok: errors.is_empty(),
                partners,
                detail: if errors.is_empty() {
                    format!("{files} file(s), {bytes} bytes")
                } else {
                    errors.join("; ")
                },
            },
            Err(e) => NodeCopy {
                node: node.to_string(),
                ok: false,
                partners: Vec::new(),
                detail: e.to_string(),
            },
        }
    }

    fn copy_remote(&self, nodes: &HostSet, failed: &[String]) -> Vec<NodeCopy> {
        let quote = |p: &Path| remote::shell_quote(&p.to_string_lossy());
        let failed: Vec<String> = failed.iter().map(|f| remote::shell_quote(f)).collect();
        let command = format!(
            "{} copy --cntldir {} --id {} --dstdir {} --buf {} {}",
            remote::scr_command_line(),
            quote(self.cntl_dir),
            self.id,
            quote(self.prefix),
            self.buf_size,
            failed.join(" ")
        );
        remote::run_on_nodes(nodes, &command, self.fanout)
            .into_iter()
            .map(|r| {
                let mut copy = NodeCopy {
                    node: r.node.clone(),
                    ok: r.code == Some(0),
                    partners: Vec::new(),
                    detail: r.stderr.trim().to_string(),
                };
                for line in r.stdout.lines() {
                    if let Some(list) = line.split(": Partners: ").nth(1) {
                        copy.partners = list.split_whitespace().map(str::to_string).collect();
                    }
                }
                copy
            })
            .collect()
    }

    fn copy_on(&self, nodes: &[String], failed: &[String]) -> Vec<NodeCopy> {
        if self.local {
            // emulated nodes share this machine; copy them side by side
            std::thread::scope(|s| {
                let handles: Vec<_> = nodes
                    .iter()
                    .map(|n| s.spawn(move || self.copy_here(n, failed)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a copy thread panicked"))
                    .collect()
            })
        } else {
            self.copy_remote(
                &HostSet::from_names(nodes.iter().map(String::as_str)),
                failed,
            )
        }
    }

    /// Copies from every node in `up`, then partners' copies of the nodes in `down` and of
    /// those whose copy failed. Returns what every node reported, both rounds.
    pub fn run(&self, up: &HostSet, down: &HostSet) -> Vec<NodeCopy> {
        let up_nodes: Vec<String> = up.iter().collect();
        let mut results = self.copy_on(&up_nodes, &[]);
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
            results.extend(self.copy_on(&holders, &failed));
        }
        results
    }
}
