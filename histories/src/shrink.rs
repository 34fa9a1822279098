//! Shrinking a history that broke a promise: fewer steps, fewer checkpoints, fewer ranks,
//! files and bytes, for as long as the same check still fails.

use crate::driver::{Env, Outcome};
use crate::history::{History, Step};

/// Smaller variants of `h`, the boldest first.
fn candidates(h: &History) -> Vec<History> {
    let mut out = Vec::new();
    let with = |steps: Vec<Step>| History { steps, ..h.clone() };
    // a drain with every node up
    for (i, step) in h.steps.iter().enumerate() {
        if let Step::Operator(crate::history::Operator::Postrun { down: Some(_) }) = step {
            let mut steps = h.steps.clone();
            steps[i] = Step::Operator(crate::history::Operator::Postrun { down: None });
            out.push(with(steps));
        }
    }
    // drop a step (a run only when another is left)
    for i in (0..h.steps.len()).rev() {
        let runs = h.runs().count();
        if matches!(h.steps[i], Step::Run(_)) && runs <= 1 {
            continue;
        }
        let mut steps = h.steps.clone();
        steps.remove(i);
        out.push(with(steps));
    }
    for (i, step) in h.steps.iter().enumerate() {
        let Step::Run(run) = step else { continue };
        let mut push = |f: &dyn Fn(&mut crate::history::RunSpec)| {
            let mut r = run.clone();
            f(&mut r);
            if &r != run {
                let mut steps = h.steps.clone();
                steps[i] = Step::Run(r);
                out.push(with(steps));
            }
        };
        for j in (0..run.ckpts.len()).rev() {
            push(&|r| {
                r.ckpts.remove(j);
                // the kill stays with the dataset it hit
                r.kill = match r.kill {
                    Some(k) if k.at == j => None,
                    Some(k) if k.at > j => Some(crate::history::Kill { at: k.at - 1, ..k }),
                    k => k,
                };
            });
        }
        push(&|r| r.file_list = false);
        push(&|r| r.kill = None);
        push(&|r| r.halt = None);
        push(&|r| r.config.flush_async = false);
        push(&|r| r.config.containers = false);
        push(&|r| r.config.prefix_size = 0);
        push(&|r| r.config.cache_size = 1);
        push(&|r| {
            for c in &mut r.ckpts {
                c.nfiles = 1;
            }
        });
        push(&|r| {
            for c in &mut r.ckpts {
                c.size = c.size.min(100);
            }
        });
        push(&|r| {
            for c in &mut r.ckpts {
                c.bad_rank = None;
            }
        });
    }
    // fewer ranks in every run at once (runs of one size stay of one size)
    let smaller = |n: u32| (n / h.ranks_per_node / 2).max(2) * h.ranks_per_node;
    let mut steps = h.steps.clone();
    for s in &mut steps {
        if let Step::Run(r) = s {
            r.ranks = smaller(r.ranks);
            for c in &mut r.ckpts {
                c.bad_rank = c.bad_rank.map(|b| b % r.ranks);
            }
            if let Some(k) = &mut r.kill {
                k.rank %= r.ranks;
            }
        }
    }
    if steps != h.steps {
        out.push(with(steps));
    }
    if h.ranks_per_node > 1 {
        let mut one = h.clone();
        one.ranks_per_node = 1;
        for s in &mut one.steps {
            if let Step::Run(r) = s {
                r.ranks = (r.ranks / h.ranks_per_node).max(2);
                for c in &mut r.ckpts {
                    c.bad_rank = c.bad_rank.map(|b| b % r.ranks);
                }
                if let Some(k) = &mut r.kill {
                    k.rank %= r.ranks;
                }
            }
        }
        out.push(one);
    }
    out
}

/// Shrinks `history`, whose run gave `outcome` with a violation, to a history no candidate
/// of which fails the same check; at most `budget` more runs of a history.
pub fn shrink(env: &Env, history: &History, outcome: Outcome, budget: usize) -> (History, Outcome) {
    let check = outcome.violation.as_ref().map(|v| v.check);
    let mut best = (history.clone(), outcome);
    let mut tries = 0;
    'outer: loop {
        for c in candidates(&best.0) {
            if tries >= budget {
                break 'outer;
            }
            tries += 1;
            let o = env.run(&c);
            if o.violation.as_ref().map(|v| v.check) == check {
                best = (c, o);
                continue 'outer;
            }
        }
        break;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_candidate_is_smaller_and_keeps_a_run() {
        for seed in 0..50 {
            let h = History::generate(crate::history::Seed::latest(seed));
            for c in candidates(&h) {
                assert!(c.runs().count() >= 1);
                assert_ne!(c, h);
                for r in c.runs() {
                    assert!(r.ranks >= 2);
                    assert!(
                        r.ckpts
                            .iter()
                            .all(|k| k.bad_rank.is_none_or(|b| b < r.ranks))
                    );
                }
            }
        }
    }
}
