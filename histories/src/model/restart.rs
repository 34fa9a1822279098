//! The model's account of a restart: which checkpoints one may come to, how an attempt is
//! judged against them, and what a restart leaves in cache.

use super::{Attempt, Avail, Candidate, Ckpt, Model};
use crate::history::Scheme;

impl Model {
    /// Whether the cache of its writers' job holds `c` whole or can rebuild it after the
    /// nodes it lost.
    pub fn rebuildable(c: &Ckpt, ranks_per_node: u32) -> Avail {
        match (c.scheme, c.losses) {
            (_, 0) => c.cache,
            (_, _) if c.scheme_unsure => c.cache.min(Avail::Maybe),
            // README, "Runtime library": lost members are rebuilt from their partner or
            // XOR; SINGLE has no copy of a lost node's files
            (Scheme::Single, _) => Avail::No,
            (Scheme::Rs, l) if l <= c.rs_rebuilds(ranks_per_node) => c.cache,
            (_, 1) => c.cache,
            // two nodes lost: whether both were in one set is not modelled
            _ => c.cache.min(Avail::Maybe),
        }
    }

    /// The checkpoints a restart of a job of `ranks` ranks may come to, newest first.
    pub fn candidates(&self, ranks: u32, reshape: bool) -> Vec<Candidate> {
        let mut out = Vec::new();
        // guide manage.rst: with no current marker a restart starts from the most recent
        // valid checkpoint, and none marked failed is restarted; a fetch that found the
        // operator's current damaged marks it failed and current no more (README, "Which
        // checkpoint a restart takes"): whether a fetch tried it yet, the model does not say
        let current_may_have_failed = self
            .operator_current
            .is_some_and(|x| self.ckpts.iter().any(|c| c.serial == x && c.prefix_damaged));
        for c in self.ckpts.iter().rev() {
            // SPEC §4.12 / guide api.rst (api-69): a checkpoint the application rejected is
            // marked so no later run loads it (README, "SCR v3.1 programs", SCR_Complete_restart)
            if c.output || !c.complete || c.rejected {
                continue;
            }
            // README, "Beyond SCR": a checkpoint written by another number of ranks is offered
            // only to a program that says SCR_RESHAPE=1
            if c.writers != ranks && !reshape {
                continue;
            }
            let mut cache = if self.cache_ranks == Some(ranks) && c.writers == ranks {
                Model::rebuildable(c, self.ranks_per_node)
            } else {
                Avail::No
            };
            let mut prefix = if c.dropped {
                // guide manage.rst (manage-13): --drop removes the index entry, so no fetch
                // finds it
                Avail::No
            } else if c.prefix_damaged && c.writers == ranks {
                // README, "Runtime library": a fetch checks size and CRC32 against what the
                // flush recorded and marks a damaged checkpoint FAILED
                Avail::No
            } else if c.prefix_damaged {
                // README, "Beyond SCR": at another size the files are read in place, each
                // checked the first time it is routed: the checkpoint may be offered and its
                // restart then fail
                c.prefix.min(Avail::Maybe)
            } else {
                c.prefix
            };
            if let Some(x) = self.operator_current
                && c.serial > x
            {
                // guide manage.rst (manage-11): --current NAME sets the dataset restarts start
                // from; whether a newer cached one still comes first, the guide does not say
                prefix = if self.operator_current_superseded || current_may_have_failed {
                    prefix.min(Avail::Maybe)
                } else {
                    Avail::No
                };
                cache = cache.min(Avail::Maybe);
            }
            let mut status = cache.max(prefix);
            if c.may_read_wrong && status == Avail::Yes {
                status = Avail::Maybe;
            }
            if status != Avail::No {
                out.push(Candidate {
                    serial: c.serial,
                    step: c.step,
                    status,
                    may_read_wrong: c.may_read_wrong,
                    may_miss_files: c.prefix_damaged || c.may_read_wrong,
                });
            }
        }
        out
    }

    /// The candidate an attempt stands for: one of its name whose bytes the application
    /// found; or, when it found none, the newest of its name not newer than the attempt
    /// before (`last`). None when the promises allow no checkpoint of that name.
    pub(super) fn attempted<'a>(
        candidates: &'a [Candidate],
        a: &Attempt,
        last: Option<u32>,
    ) -> Option<&'a Candidate> {
        let step: u32 = a.name.strip_prefix("ckpt.")?.parse().ok()?;
        let mut named = candidates.iter().filter(|c| c.step == step);
        if a.verified == 1 {
            return named.find(|c| a.serials.contains(&c.serial));
        }
        let named: Vec<&Candidate> = named.collect();
        named
            .iter()
            .find(|c| last.is_none_or(|l| c.serial <= l))
            .or(named.first())
            .copied()
    }

    /// Judges a run's restart loop against the candidates: `Err` says what broke which rule;
    /// `Ok` gives the checkpoint each attempt stands for and the one loaded.
    pub fn judge_restart(
        candidates: &[Candidate],
        attempts: &[Attempt],
        restarted: Option<&str>,
    ) -> Result<(Vec<u32>, Option<u32>), String> {
        let mut last: Option<u32> = None;
        let mut resolved = Vec::new();
        for a in attempts {
            if !a.name.starts_with("ckpt.") {
                return Err(format!(
                    "restart offered `{}`, no checkpoint the application wrote",
                    a.name
                ));
            }
            let Some(c) = Model::attempted(candidates, a, last) else {
                let bytes = if a.verified == 1 {
                    format!(" (holding the bytes of #{:?})", a.serials)
                } else {
                    String::new()
                };
                return Err(format!(
                    "restart offered {}{bytes}, which no promise allows here (allowed: {})",
                    a.name,
                    describe(candidates)
                ));
            };
            let s = c.serial;
            // guide integration.rst (integration-26): the loop walks from newer to older
            if last.is_some_and(|l| s > l) {
                return Err(format!("restart offered {} after an older one", a.name));
            }
            last = Some(s);
            resolved.push(s);
            match a.verified {
                // SPEC §4.11: a restart reads exactly the bytes some allowed checkpoint wrote
                0 if !c.may_read_wrong => {
                    return Err(format!(
                        "restart from {} (#{s}) read bytes that checkpoint never wrote",
                        a.name
                    ));
                }
                -1 if !c.may_miss_files => {
                    return Err(format!(
                        "restart from {} (#{s}) could not route or open a file of it",
                        a.name
                    ));
                }
                1 if a.rc != 0 => {
                    return Err(format!(
                        "SCR_Complete_restart failed ({}) for {} though every rank read it whole",
                        a.rc, a.name
                    ));
                }
                _ => {}
            }
        }
        let first_sure = candidates.iter().position(|c| c.status == Avail::Yes);
        let loaded = match restarted {
            None => None,
            Some(name) if attempts.last().is_some_and(|a| a.name == name) => {
                resolved.last().copied()
            }
            Some(name) => {
                return Err(format!("restarted from {name}, which no attempt offered"));
            }
        };
        match (loaded, first_sure) {
            (None, None) => {}
            (None, Some(i)) => {
                return Err(format!(
                    "no restart, but {} must load (allowed: {})",
                    candidates[i].label(),
                    describe(candidates)
                ));
            }
            (Some(s), sure) => {
                // SPEC §4.11: the newest checkpoint the promises allow; guide config.rst
                // (config-12): by default SCR loads the most recent checkpoint
                let allowed = &candidates[..sure.map_or(candidates.len(), |i| i + 1)];
                if !allowed.iter().any(|c| c.serial == s) {
                    return Err(format!(
                        "restarted from #{s}; allowed: {}",
                        describe(allowed)
                    ));
                }
            }
        }
        Ok((resolved, loaded))
    }

    /// Takes in what a run's restart did (already judged; `resolved`, the checkpoint each
    /// attempt stands for): rejected checkpoints, and the one loaded, now in cache and
    /// protected again, whose step the application goes on from.
    pub fn after_restart(
        &mut self,
        attempts: &[Attempt],
        resolved: &[u32],
        loaded: Option<u32>,
        ranks: u32,
        scheme: Scheme,
    ) {
        let scheme = self.cached_scheme(scheme, ranks);
        for (a, s) in attempts.iter().zip(resolved) {
            if a.rc != 0
                && let Some(c) = self.ckpts.iter_mut().find(|c| c.serial == *s)
                // a restart at another size that failed marks nothing: a job of the writers'
                // size may still restart it (README, "Beyond SCR")
                && c.writers == ranks
            {
                // README, "SCR v3.1 programs": a failed SCR_Complete_restart marks the failed
                // checkpoint so no later run loads it
                c.rejected = true;
                c.cache = Avail::No;
            }
        }
        for c in &mut self.ckpts {
            if Some(c.serial) == loaded && c.writers == ranks {
                // README, "Runtime library": restart from cache rebuilds lost members and
                // protects the dataset again; a fetch puts it in cache, protected with this
                // run's scheme
                // (a restart from cache protects it with its own scheme; a fetch with the
                // run's: one that was not in cache was fetched, else it may be either)
                if c.cache == Avail::No {
                    c.scheme = scheme;
                    c.scheme_unsure = false;
                } else if c.scheme != scheme {
                    c.scheme_unsure = true;
                }
                c.cache = Avail::Yes;
                c.losses = 0;
            } else if loaded.is_some_and(|l| c.serial > l) && c.writers == ranks && !c.output {
                // README, "Runtime library": restart from cache rebuilds the newest dataset,
                // "else the next older one": one it passed over could not be recovered
                // (or is newer than the operator's current, which leaves the cache)
                c.cache = Avail::No;
            } else if c.losses > 0 {
                // whether the restart rebuilt other cached datasets too, no document says;
                // one it cannot rebuild is gone from the cache's account
                c.cache = Model::rebuildable(c, self.ranks_per_node).min(Avail::Maybe);
            }
        }
        if let Some(c) = loaded.and_then(|s| self.get(s)) {
            self.step = c.step;
        }
    }
}

impl Candidate {
    /// How it appears in a message.
    pub fn label(&self) -> String {
        format!("ckpt.{} (#{})", self.step, self.serial)
    }
}

fn describe(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "none".into();
    }
    candidates
        .iter()
        .map(|c| {
            format!(
                "{}{}",
                c.label(),
                if c.status == Avail::Yes { "" } else { "?" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
