//! Resource managers: who owns the allocation, which nodes it has, which of them the
//! manager itself reports down, and when it ends. SLURM, and the local machine when no
//! resource manager is present; another (LSF, Flux) is one more implementation.

use super::DownNode;
use super::child;
use hostlist::HostSet;
use scr::layout;
use std::path::{Path, PathBuf};

pub trait ResourceManager {
    fn name(&self) -> &'static str;
    /// The allocation's nodes. SCR_NODELIST, when set, overrides.
    fn nodes(&self) -> Result<HostSet, String>;
    /// Nodes of `nodes` the manager reports down or drained.
    fn down_nodes(&self, nodes: &HostSet) -> Vec<DownNode>;
    /// When the allocation ends, in seconds since the epoch.
    fn end_time(&self) -> Option<i64>;
    /// Whether node names are real hosts one can ping and reach.
    fn nodes_are_hosts(&self) -> bool;
    /// Whether this is a SLURM allocation (where srun can run a job).
    fn is_slurm(&self) -> bool {
        self.name() == "SLURM"
    }
}

fn nodelist_override() -> Option<Result<HostSet, String>> {
    let text = std::env::var("SCR_NODELIST")
        .ok()
        .filter(|s| !s.is_empty())?;
    Some(
        text.parse::<HostSet>()
            .map_err(|e| format!("SCR_NODELIST={text:?} is not a host list: {e}")),
    )
}

/// The resource manager of this environment: SLURM inside a SLURM allocation, else the
/// local machine.
pub fn detect() -> Box<dyn ResourceManager> {
    match scr::layout::resource_manager_job_id(|k| std::env::var(k).ok()) {
        Some(id) => Box::new(Slurm { job_id: id }),
        None => Box::new(Local),
    }
}

pub struct Slurm {
    job_id: String,
}

impl ResourceManager for Slurm {
    fn name(&self) -> &'static str {
        "SLURM"
    }
    fn nodes(&self) -> Result<HostSet, String> {
        if let Some(o) = nodelist_override() {
            return o;
        }
        let list = std::env::var("SLURM_JOB_NODELIST")
            .or_else(|_| std::env::var("SLURM_NODELIST"))
            .map_err(|_| {
                "SLURM_NODELIST is not set: could not identify the allocation's nodes".to_string()
            })?;
        list.parse::<HostSet>()
            .map_err(|e| format!("SLURM_NODELIST={list:?}: {e}"))
    }
    fn down_nodes(&self, nodes: &HostSet) -> Vec<DownNode> {
        // down, drained, failing and silent nodes are all unusable (SCR asks only for down)
        let list = nodes.to_string();
        let states = [
            "-h",
            "-o",
            "%N",
            "-t",
            "down,drain,fail,no_respond",
            "-n",
            &list,
        ];
        let out = match child::read("sinfo", states) {
            Ok(out) => out,
            Err(e) => {
                // the other node tests still run; say why this one could not
                eprintln!(
                    "{}: could not ask SLURM which nodes are down: {e}",
                    crate::program_name()
                );
                return Vec::new();
            }
        };
        out.split_whitespace()
            .filter_map(|l| l.parse::<HostSet>().ok())
            .flat_map(|s| s.iter().collect::<Vec<_>>())
            .filter(|n| nodes.contains(n))
            .map(|node| DownNode {
                node,
                reason: "Reported down by resource manager".into(),
            })
            .collect()
    }
    fn end_time(&self) -> Option<i64> {
        let text = child::read("scontrol", ["show", "job", &self.job_id])
            .map_err(|e| {
                eprintln!(
                    "{}: could not read the allocation's end time: {e}",
                    crate::program_name()
                )
            })
            .ok()?;
        let end = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("EndTime="))?;
        let naive = chrono::NaiveDateTime::parse_from_str(end, "%Y-%m-%dT%H:%M:%S").ok()?;
        naive
            .and_local_timezone(chrono::Local)
            .single()
            .map(|t| t.timestamp())
    }
    fn nodes_are_hosts(&self) -> bool {
        true
    }
}

/// No resource manager: this machine. SCR_NODELIST may name emulated nodes (MPICH's
/// `-hosts` names them, the library keeps their caches apart).
pub struct Local;

impl ResourceManager for Local {
    fn name(&self) -> &'static str {
        "local"
    }
    fn nodes(&self) -> Result<HostSet, String> {
        nodelist_override().unwrap_or_else(|| {
            let host = local_host_name();
            hostlist::check_host_name(&host)
                .map_err(|e| format!("this machine's name: {e}; set SCR_NODELIST"))?;
            Ok(HostSet::from_names([host.as_str()]))
        })
    }
    fn down_nodes(&self, _nodes: &HostSet) -> Vec<DownNode> {
        Vec::new()
    }
    fn end_time(&self) -> Option<i64> {
        None
    }
    fn nodes_are_hosts(&self) -> bool {
        false
    }
}

pub fn local_host_name() -> String {
    layout::host_name()
}

/// A node's control directory inside the job's, for nodes on this machine: the library's
/// rule is that a node named other than the host is an emulated one, whose directories
/// are kept apart by name.
pub fn local_node_cntl_dir(cntl: &Path, node: &str) -> scr::Result<PathBuf> {
    layout::node_dir(cntl, node)
}
