//! Down-node detection (SCR's `scr_list_down_nodes`) and the node test (`scr_check_node`).
//! A node is down when the resource manager says so, when it does not answer a ping (all
//! nodes pinged at once; SCR pings one after another), when SCR_EXCLUDE_NODES or the
//! caller names it, or when its control or cache directory fails the node test.

use super::child;
use super::node_test::{NodeCheck, check_node};
use super::remote::{Rcmd, scr_command_line, shell_quote};
use super::{DownNode, ResourceManager};
use hostlist::HostSet;

/// What to test when listing down nodes.
pub struct DownNodeQuery<'a> {
    pub resource_manager: &'a dyn ResourceManager,
    pub nodes: HostSet,
    /// Nodes already known down (`--down`): once down, always down.
    pub known_down: HostSet,
    /// SCR_EXCLUDE_NODES.
    pub exclude: HostSet,
    /// The node test to run on each node still up (None: skip it).
    pub node_check: Option<NodeCheck>,
}

/// Every down node with the first reason found, in node order.
pub fn list_down_nodes(q: &DownNodeQuery) -> Vec<DownNode> {
    let mut down: Vec<DownNode> = Vec::new();
    let add = |down: &mut Vec<DownNode>, node: String, reason: &str| {
        if !down.iter().any(|d| d.node == node) {
            down.push(DownNode {
                node,
                reason: reason.to_string(),
            });
        }
    };
    for d in q.resource_manager.down_nodes(&q.nodes) {
        add(&mut down, d.node, &d.reason);
    }
    if q.resource_manager.nodes_are_hosts() {
        let candidates: Vec<String> = q
            .nodes
            .iter()
            .filter(|n| !down.iter().any(|d| &d.node == n))
            .collect();
        for node in unreachable(&candidates) {
            add(&mut down, node, "Failed to ping");
        }
    }
    for node in q.nodes.intersection(&q.exclude).iter() {
        add(&mut down, node, "User excluded via SCR_EXCLUDE_NODES");
    }
    for node in q.nodes.intersection(&q.known_down).iter() {
        add(&mut down, node, "Specified on command line");
    }
    if let Some(check) = &q.node_check {
        let up: Vec<String> = q
            .nodes
            .iter()
            .filter(|n| !down.iter().any(|d| &d.node == n))
            .collect();
        if !q.resource_manager.nodes_are_hosts() {
            // every node is this machine: one test speaks for all
            if let Some(first) = check_node(check).into_iter().next() {
                for node in up {
                    add(&mut down, node, &first);
                }
            }
        } else if !up.is_empty() {
            let quoted: Vec<String> = check.to_args().iter().map(|a| shell_quote(a)).collect();
            let command = format!("{} check-node {}", scr_command_line(), quoted.join(" "));
            let up_set = HostSet::from_names(up.iter().map(String::as_str));
            for r in
                super::remote::run_on_nodes(&up_set, &command, 256, Rcmd::Remote, &mut |_, _| {})
            {
                match r.code {
                    Some(0) => {}
                    Some(_) => {
                        let why = r
                            .stdout
                            .lines()
                            .find(|l| l.starts_with("FAIL"))
                            .unwrap_or("FAIL: node test failed")
                            .to_string();
                        add(&mut down, r.node, &why);
                    }
                    None => add(
                        &mut down,
                        r.node,
                        &format!("Could not run the node test: {}", r.stderr.trim()),
                    ),
                }
            }
        }
    }
    let order: Vec<String> = q.nodes.iter().collect();
    down.sort_by_key(|d| order.iter().position(|n| *n == d.node));
    down
}

/// Nodes that do not answer one ping within 1 s; all pinged at once, in waves of 256.
fn unreachable(nodes: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for wave in nodes.chunks(256) {
        let pings: Vec<_> = wave
            .iter()
            .map(|n| {
                let (ping, _) = child::command("ping", ["-c", "1", "-W", "1", "--", n.as_str()]);
                let handle = ping
                    .stdin_null()
                    .stdout_null()
                    .stderr_null()
                    .unchecked()
                    .start()
                    .ok();
                (n.clone(), handle)
            })
            .collect();
        for (node, handle) in pings {
            let answered = handle.is_some_and(|h| h.wait().is_ok_and(|o| o.status.success()));
            if !answered {
                out.push(node);
            }
        }
    }
    out
}
