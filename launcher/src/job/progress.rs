//! Progress of a drain across nodes: bytes per node and in total, rate and time left.
//! On a terminal, indicatif bars (one per node while there are few, else the total alone);
//! otherwise plain lines a batch log can keep: one when a node finishes (while there are
//! few; failures always), one for the total every few seconds and at the end.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// More nodes than this show only the total bar.
const MAX_NODE_BARS: usize = 16;
/// How often the plain total line is repeated.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

struct NodeState {
    done: u64,
    total: u64,
    started: Instant,
    /// When it last reported: once it has copied everything, when it finished.
    last_heard: Instant,
    bar: Option<ProgressBar>,
}

/// Watches the copies of one drain.
pub struct DrainProgress {
    label: String,
    bars: Option<(MultiProgress, ProgressBar)>,
    nodes: HashMap<String, NodeState>,
    /// Bytes done and announced over all nodes, kept as nodes report (thousands of nodes
    /// each report a few times a second).
    done: u64,
    total: u64,
    expected_nodes: usize,
    started: Instant,
    last_plain: Instant,
}

/// A bar: `{prefix} [====>   ] bytes/total rate`, then `tail`.
fn bar_style(tail: &str) -> ProgressStyle {
    ProgressStyle::with_template(&format!(
        "{{prefix:>12}} [{{bar:30}}] {{binary_bytes}}/{{binary_total_bytes}} {{binary_bytes_per_sec}}{tail}"
    ))
    .expect("a valid template")
    .progress_chars("=> ")
}

fn bytes_text(n: u64) -> String {
    indicatif::BinaryBytes(n).to_string()
}

impl DrainProgress {
    /// Progress of copying from `nodes` nodes; bars only when stderr is a terminal.
    pub fn new(label: &str, nodes: usize) -> DrainProgress {
        DrainProgress::with_terminal(label, nodes, std::io::stderr().is_terminal())
    }

    /// Plain lines, whatever stderr is.
    pub fn plain(label: &str, nodes: usize) -> DrainProgress {
        DrainProgress::with_terminal(label, nodes, false)
    }

    fn with_terminal(label: &str, nodes: usize, terminal: bool) -> DrainProgress {
        let bars = terminal.then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let total = multi.add(ProgressBar::new(0));
            total.set_style(bar_style(" ETA {eta}"));
            total.set_prefix("total");
            (multi, total)
        });
        let now = Instant::now();
        DrainProgress {
            label: label.to_string(),
            bars,
            nodes: HashMap::new(),
            done: 0,
            total: 0,
            expected_nodes: nodes,
            started: now,
            last_plain: now,
        }
    }

    /// `node` has copied `done` of its `total` bytes.
    pub fn update(&mut self, node: &str, done: u64, total: u64) {
        let per_node_bars = self.expected_nodes <= MAX_NODE_BARS;
        let state = self.nodes.entry(node.to_string()).or_insert_with(|| {
            let bar = match &self.bars {
                Some((multi, _)) if per_node_bars => {
                    let bar = multi.add(ProgressBar::new(total));
                    bar.set_style(bar_style(""));
                    bar.set_prefix(node.to_string());
                    Some(bar)
                }
                _ => None,
            };
            NodeState {
                done: 0,
                total: 0,
                started: Instant::now(),
                last_heard: Instant::now(),
                bar,
            }
        });
        self.done = self.done - state.done + done;
        self.total = self.total - state.total + total;
        state.done = done;
        state.total = total;
        state.last_heard = Instant::now();
        if let Some(bar) = &state.bar {
            bar.set_length(total);
            bar.set_position(done);
        }
        match &self.bars {
            Some((_, bar)) => {
                bar.set_length(self.total);
                bar.set_position(self.done);
            }
            None if self.last_plain.elapsed() >= PLAIN_EVERY => {
                self.last_plain = Instant::now();
                eprintln!("{}", self.total_line());
            }
            None => {}
        }
    }

    fn rate(bytes: u64, secs: f64) -> String {
        let secs = secs.max(1e-3);
        format!("{}/s", bytes_text((bytes as f64 / secs) as u64))
    }

    fn total_line(&self) -> String {
        let (done, total) = (self.done, self.total);
        let rate_now = done as f64 / self.started.elapsed().as_secs_f64().max(1e-3);
        let eta = if rate_now > 0.0 && total > done {
            format!(", about {:.0} s left", (total - done) as f64 / rate_now)
        } else {
            String::new()
        };
        format!(
            "{}: {} of {} from {} of {} node(s), {}{eta}",
            self.label,
            bytes_text(done),
            bytes_text(total),
            self.nodes.len(),
            self.expected_nodes,
            Self::rate(done, self.started.elapsed().as_secs_f64()),
        )
    }

    /// `node` has finished (`ok` or not); `detail` says what it did or what went wrong.
    pub fn node_done(&mut self, node: &str, ok: bool, detail: &str) {
        let line = match self.nodes.get(node) {
            Some(n) => {
                let secs = (n.last_heard - n.started).as_secs_f64();
                format!(
                    "{}: {node}: {} {} in {:.1} s ({}){}",
                    self.label,
                    if ok { "copied" } else { "FAILED after" },
                    bytes_text(n.done),
                    secs,
                    Self::rate(n.done, secs),
                    if ok {
                        String::new()
                    } else {
                        format!(": {detail}")
                    },
                )
            }
            None => {
                let what = if ok { "nothing to copy" } else { "FAILED" };
                let detail = detail.trim();
                if detail.is_empty() {
                    format!("{}: {node}: {what}", self.label)
                } else {
                    format!("{}: {node}: {what}: {detail}", self.label)
                }
            }
        };
        // a line per node while there are few; failures always
        let worth_a_line = !ok || self.expected_nodes <= MAX_NODE_BARS;
        let bar = self.nodes.get(node).and_then(|n| n.bar.as_ref());
        match (&self.bars, bar) {
            (Some(_), Some(bar)) if ok => bar.finish(),
            (Some((multi, _)), bar) => {
                if let Some(bar) = bar {
                    bar.abandon();
                }
                if worth_a_line {
                    let _ = multi.println(&line);
                }
            }
            (None, _) if worth_a_line => eprintln!("{line}"),
            (None, _) => {}
        }
    }

    /// Ends the display with the total; returns the bytes copied.
    pub fn finish(self) -> u64 {
        if let Some((_, bar)) = &self.bars {
            bar.finish();
        }
        eprintln!("{}", self.total_line().replace(", about 0 s left", ""));
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_over_nodes_and_updates() {
        let mut p = DrainProgress::plain("drain", 3);
        p.update("n1", 0, 100);
        p.update("n2", 50, 200);
        p.update("n1", 100, 100);
        assert_eq!((p.done, p.total), (150, 300));
        let line = p.total_line();
        assert!(
            line.starts_with("drain: 150 B of 300 B from 2 of 3 node(s), "),
            "{line}"
        );
    }
}
