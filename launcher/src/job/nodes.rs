//! Down-node detection (SCR's `scr_list_down_nodes`) and the node test (`scr_check_node`).
//! A node is down when the resource manager says so, when it does not answer a ping (all
//! nodes pinged at once; SCR pings one after another), when SCR_EXCLUDE_NODES or the
//! caller names it, or when its control or cache directory fails the node test.

use super::child;
use super::remote::{Rcmd, scr_command_line, shell_quote};
use super::{DownNode, ResourceManager};
use hostlist::HostSet;
use std::path::PathBuf;

/// Which directories a node must offer, with the capacity each must have.
#[derive(Clone, Debug, Default)]
pub struct NodeCheck {
    pub dirs: Vec<(PathBuf, Option<u64>)>,
    /// Compare free space instead of capacity (SCR checks free space on the first run).
    pub free: bool,
}

impl NodeCheck {
    /// The `scr check-node` arguments that run this test on another node.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.free {
            args.push("--free".to_string());
        }
        if !self.dirs.is_empty() {
            args.push("--cntl".into());
            args.push(
                self.dirs
                    .iter()
                    .map(|(d, b)| match b {
                        Some(b) => format!("{}:{b}", d.display()),
                        None => d.display().to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        args
    }
}

/// Runs the node test here; the failures in SCR's wording.
pub fn check_node(check: &NodeCheck) -> Vec<String> {
    let mut failures = Vec::new();
    for (dir, bytes) in &check.dirs {
        // one handle for every test of the directory: a name swapped on the way between two
        // of them (a neighbour's link in a shared base) leads none of them elsewhere
        // (opened as a directory only: a FIFO in its place is refused, never waited on)
        let opened = std::os::unix::fs::OpenOptionsExt::custom_flags(
            std::fs::OpenOptions::new().read(true),
            libc::O_DIRECTORY | libc::O_NONBLOCK,
        )
        .open(dir);
        let Ok(handle) = opened.and_then(|f| {
            f.metadata()?
                .is_dir()
                .then_some(f)
                .ok_or_else(|| std::io::Error::other("not a directory"))
        }) else {
            failures.push(format!(
                "FAIL: Could not access directory: {}",
                dir.display()
            ));
            continue;
        };
        if let Some(bytes) = bytes {
            let expected_kb = bytes / 1024;
            match space_kb(&handle, check.free) {
                Some(found_kb) if found_kb >= expected_kb => {}
                Some(found_kb) => failures.push(format!(
                    "FAIL: Insufficient space in directory: {}, expected {expected_kb} KB, found {found_kb} KB",
                    dir.display()
                )),
                None => failures.push(format!(
                    "FAIL: Could not determine space in directory: {}",
                    dir.display()
                )),
            }
        }
        // the directories tested are often shared (a 1777 /tmp or /dev/shm): the test file
        // has a name nobody can guess ahead and is created only where nothing is, so a
        // link planted there is never followed and a file planted there takes nothing
        let probe = scr::io::temporary_name(&dir.join("testfile"), "tmp");
        let name = probe.file_name().expect("a file name");
        match touch_and_remove(&handle, name) {
            Ok(()) => {}
            Err((Step::Touch, e)) => failures.push(format!(
                "FAIL: Could not touch test file: {} ({e})",
                probe.display()
            )),
            Err((Step::Remove, e)) => failures.push(format!(
                "FAIL: Could not rm test file: {} ({e})",
                probe.display()
            )),
        }
    }
    failures
}

/// Capacity (or free space) of the file system holding the directory open as `dir`, in KB.
fn space_kb(dir: &std::fs::File, free: bool) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the call and st a properly sized out-parameter
    if unsafe { libc::fstatvfs(dir.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    let blocks = if free { st.f_bavail } else { st.f_blocks };
    Some(blocks as u64 * st.f_frsize as u64 / 1024)
}

/// The step of the node test's file that failed (SCR's messages name it).
enum Step {
    Touch,
    Remove,
}

/// Creates `name` in the directory open as `dir` (exclusively, 0600, no link followed),
/// then removes it there: both through the handle, never by path.
fn touch_and_remove(
    dir: &std::fs::File,
    name: &std::ffi::OsStr,
) -> Result<(), (Step, std::io::Error)> {
    use scr::safe_fs::{OpenIn, open_in, remove_in};
    drop(open_in(dir, name, OpenIn::CreateNew).map_err(|e| (Step::Touch, e))?);
    remove_in(dir, name).map_err(|e| (Step::Remove, e))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_test_reports_missing_directories_and_space() {
        let dir = tempfile::tempdir().unwrap();
        let check = NodeCheck {
            dirs: vec![(dir.path().to_path_buf(), Some(1024))],
            free: true,
        };
        assert!(check_node(&check).is_empty());
        let check = NodeCheck {
            dirs: vec![
                (dir.path().join("missing"), None),
                (dir.path().to_path_buf(), Some(u64::MAX / 2)),
            ],
            free: false,
        };
        let failures = check_node(&check);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("FAIL: Could not access directory: "));
        assert!(failures[1].starts_with("FAIL: Insufficient space in directory: "));
    }

    /// A FIFO where a directory to test should be (a neighbour's, in a shared base) fails
    /// the test at once; opening it for reading would wait for a writer for good.
    #[test]
    fn a_fifo_in_a_tested_directory_s_place_fails_at_once() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cntl");
        let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string naming a path in a directory of the test's own
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let check = NodeCheck {
            dirs: vec![(fifo, None)],
            free: true,
        };
        let failures = check_node(&check);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].starts_with("FAIL: Could not access directory: "));
    }
}
