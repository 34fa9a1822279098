//! The table a batch of histories prints: histories, steps, operations and faults by kind,
//! pairs of features that met in one history, restarts verified, violations with seeds.

use crate::driver::{Outcome, Violation};
use crate::history::{History, Seed};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// Totals over a batch.
#[derive(Debug, Default)]
pub struct Report {
    /// Histories run.
    pub histories: u64,
    /// Steps run.
    pub steps: u64,
    /// Operations by kind.
    pub ops: BTreeMap<String, u64>,
    /// Histories each feature appeared in.
    pub features: BTreeMap<String, u64>,
    /// Histories each pair of features met in.
    pub pairs: BTreeMap<(String, String), u64>,
    /// Violations: the history's seed, what broke, the shrunk script.
    pub violations: Vec<(Seed, Violation, String)>,
    /// Against real SCR v2.0.0: the known disagreements histories stopped at, with how
    /// many and the first seed.
    pub known: BTreeMap<&'static str, (u64, Seed)>,
    /// Time spent.
    pub elapsed: Duration,
}

impl Report {
    /// Adds one history's outcome.
    pub fn add(&mut self, h: &History, o: &Outcome) {
        self.histories += 1;
        self.steps += o.steps as u64;
        for (k, v) in &o.ops {
            *self.ops.entry(k.clone()).or_default() += v;
        }
        let f = h.features();
        for (i, a) in f.iter().enumerate() {
            *self.features.entry(a.clone()).or_default() += 1;
            for b in &f[i + 1..] {
                *self.pairs.entry((a.clone(), b.clone())).or_default() += 1;
            }
        }
        if let Some(k) = o.known {
            self.known.entry(k).or_insert((0, h.seed)).0 += 1;
        }
        self.elapsed += o.elapsed;
    }

    /// The table.
    pub fn table(&self, seed: Seed) -> String {
        let mut s = String::new();
        let minutes = self.elapsed.as_secs_f64() / 60.0;
        let _ = writeln!(
            s,
            "| seed | histories | steps | restarts verified | violations | time | histories/minute |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|");
        let _ = writeln!(
            s,
            "| {seed} | {} | {} | {} | {} | {:.0} s | {:.1} |",
            self.histories,
            self.steps,
            self.ops.get("restart-verified").copied().unwrap_or(0),
            self.violations.len(),
            self.elapsed.as_secs_f64(),
            if minutes > 0.0 {
                self.histories as f64 / minutes
            } else {
                0.0
            }
        );
        let _ = writeln!(s, "\n| operation or fault | count |\n|---|---|");
        for (k, v) in &self.ops {
            let _ = writeln!(s, "| {k} | {v} |");
        }
        let _ = writeln!(s, "\n| feature | histories |\n|---|---|");
        for (k, v) in &self.features {
            let _ = writeln!(s, "| {k} | {v} |");
        }
        let all = self.features.len() * self.features.len().saturating_sub(1) / 2;
        let _ = writeln!(
            s,
            "\npairs of features that met in one history: {} of {all}",
            self.pairs.len()
        );
        let mut missing = Vec::new();
        let names: Vec<&String> = self.features.keys().collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                if !self.pairs.contains_key(&((*a).clone(), (*b).clone())) {
                    missing.push(format!("{a}+{b}"));
                }
            }
        }
        if !missing.is_empty() {
            let _ = writeln!(s, "never met: {}", missing.join(", "));
        }
        if !self.known.is_empty() {
            let _ = writeln!(
                s,
                "\n| known disagreement with SCR v2.0.0 | histories | first seed | verdict |\n|---|---|---|---|"
            );
            for (k, (n, seed)) in &self.known {
                let verdict = crate::peer::known(k).map_or("", |k| k.verdict);
                let _ = writeln!(s, "| {k} | {n} | {seed} | {verdict} |");
            }
        }
        if self.violations.is_empty() {
            let _ = writeln!(s, "\nviolations: none");
        } else {
            let _ = writeln!(
                s,
                "\n| violation seed | check | what broke |\n|---|---|---|"
            );
            for (seed, v, _) in &self.violations {
                let first = v.message.lines().next().unwrap_or_default();
                let _ = writeln!(s, "| {seed} | {} | {first} |", v.check);
            }
        }
        s
    }
}
