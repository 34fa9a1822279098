//! The transfer agents scr-run starts on every node for asynchronous flushes.

use super::Reporter;
use crate::job;
use hostlist::HostSet;
use scr::layout;
use scr::params::Params;
use std::path::PathBuf;
use std::time::Duration;

/// SCR_FLUSH_ASYNC: one `scr transfer` agent per node for the whole job (SCR's scr_srun
/// starts `scr_transfer` the same way). Emulated nodes get local processes; real hosts
/// one started through remote execution, detached. Where nodes are reached only through
/// srun job steps (PDSH_RCMD_TYPE=srun) none is started: a step ends its processes, and the
/// library's own background thread flushes instead.
pub(super) struct Agents {
    local: Vec<(PathBuf, duct::Handle)>,
    remote: Option<(HostSet, PathBuf)>,
}

impl Agents {
    pub(super) fn start(
        params: &Params,
        rm: &dyn job::ResourceManager,
        nodes: &HostSet,
        job_id: &str,
        reporter: &Reporter,
    ) -> Agents {
        let mut agents = Agents {
            local: Vec::new(),
            remote: None,
        };
        let cntl = match crate::commands::drain::control_dir(params, job_id) {
            Ok(c) => c,
            Err(e) => {
                reporter.say(
                    "transfer_agent",
                    &format!("no transfer agents: {e}"),
                    serde_json::json!({"error": e.to_string()}),
                );
                return agents;
            }
        };
        if rm.nodes_are_hosts() {
            if job::remote::through_srun() {
                return agents;
            }
            let command = format!(
                "nohup {} transfer --cntldir {} >/dev/null 2>&1 </dev/null &",
                job::remote::scr_command_line(),
                job::remote::shell_quote(&cntl.to_string_lossy())
            );
            for r in job::remote::run_on_nodes(
                nodes,
                &command,
                256,
                job::remote::Rcmd::Remote,
                &mut |_, _| {},
            ) {
                if r.code != Some(0) {
                    reporter.say(
                        "transfer_agent",
                        &format!(
                            "{}: no transfer agent ({}); the library flushes itself",
                            r.node,
                            r.stderr.trim()
                        ),
                        serde_json::json!({"node": r.node, "error": r.stderr.trim()}),
                    );
                }
            }
            agents.remote = Some((nodes.clone(), cntl));
            return agents;
        }
        let scr = std::env::current_exe()
            .map(|p| p.with_file_name("scr"))
            .unwrap_or_else(|_| PathBuf::from("scr"));
        for node in nodes.iter() {
            let Ok(dir) = job::local_node_cntl_dir(&cntl, &node) else {
                continue; // host names pass as path components: checked where they entered
            };
            let dir_text = dir.to_string_lossy().into_owned();
            let (agent, line) = job::child::command(
                &scr.to_string_lossy(),
                ["transfer", "--cntldir", dir_text.as_str()],
            );
            match agent.stdin_null().stdout_null().unchecked().start() {
                Ok(handle) => agents.local.push((dir, handle)),
                Err(e) => reporter.say(
                    "transfer_agent",
                    &format!("{node}: {}", job::child::not_started(&line, &e)),
                    serde_json::json!({"node": node}),
                ),
            }
        }
        agents
    }

    /// Tells every agent to exit; waits a little for the local ones, then ends them.
    pub(super) fn stop(self) {
        for (dir, handle) in &self.local {
            let asked =
                scr::transfer::TransferFile::update_past_agent(&layout::transfer_file(dir), |t| {
                    t.set_command(scr::transfer::Command::Exit);
                    Ok(())
                });
            if asked.is_err() || !matches!(handle.wait_timeout(Duration::from_secs(5)), Ok(Some(_)))
            {
                let _ = handle.kill();
                // what its copies left half written goes with it
                for pid in handle.pids() {
                    scr::transfer::end_agent(&layout::transfer_file(dir), pid);
                }
            }
        }
        if let Some((nodes, cntl)) = self.remote {
            let command = format!(
                "{} transfer --cntldir {} --exit",
                job::remote::scr_command_line(),
                job::remote::shell_quote(&cntl.to_string_lossy())
            );
            job::remote::run_on_nodes(
                &nodes,
                &command,
                256,
                job::remote::Rcmd::Remote,
                &mut |_, _| {},
            );
        }
    }
}
