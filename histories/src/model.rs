//! The reference model: a small, pure account of what the documentation promises about
//! every checkpoint a history wrote — whether it is in cache, on the prefix, whether a
//! restart may or must take it — built only from what the history did, never from SCR's own
//! records. Where a rule leaves a choice (a flush period whose count SCR keeps, a drain that
//! may not reach every node) the model says *maybe*, and a check accepts either outcome.
//!
//! Citations name the source of each rule: README sections, SPEC invariants
//! (/work/shared/SPEC.md §4), and SCR v3.1's user guide (`doc/rst/users/<file>.rst` at tag
//! v3.1.0 of LLNL/scr) with the row of doc/guide-conformance.md that states it.

use crate::history::{CkptSpec, Config, Scheme};

/// Whether something holds: for certain, perhaps, or certainly not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Avail {
    /// Certainly not.
    No,
    /// The promises allow either.
    Maybe,
    /// Certainly.
    Yes,
}

/// What the model knows of one checkpoint (or output dataset) a history wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ckpt {
    /// Its number in the history: what its bytes say (histories/app/hist_app.c).
    pub serial: u32,
    /// The application's step it was written at: its name is `ckpt.<step>`, which a
    /// restart from an older checkpoint makes the application write again.
    pub step: u32,
    /// An output dataset (SCR_FLAG_OUTPUT), named `out.<serial>`.
    pub output: bool,
    /// Its flush was started in the background and not yet seen to end.
    pub async_pending: bool,
    /// `scr postrun` reported it lost by name (an output dataset).
    pub reported_lost: bool,
    /// Ranks that wrote it.
    pub writers: u32,
    /// Its layout.
    pub spec: CkptSpec,
    /// Every rank said its files were valid.
    pub complete: bool,
    /// The scheme that protects it in cache.
    pub scheme: Scheme,
    /// Whether the cache holds it, whole or rebuildable.
    pub cache: Avail,
    /// Nodes lost since it was last protected.
    pub losses: u32,
    /// Whether its files, summary and index entry are on the prefix.
    pub prefix: Avail,
    /// A file of it on the prefix was damaged after its flush.
    pub prefix_damaged: bool,
    /// The prefix window deleted it for certain: none of its files may be left there.
    pub window_deleted: bool,
    /// A cached file of it was damaged where no CRC guards it: a restart may read wrong bytes.
    pub may_read_wrong: bool,
    /// The application rejected it in a restart: no later restart may load it.
    pub rejected: bool,
    /// `scr index --drop` removed its index entry.
    pub dropped: bool,
    /// A drain copied what the nodes up then held of it, and could not complete it: the
    /// copies wait on the prefix for a later drain to complete it.
    pub partly_drained: bool,
    /// Whether the scheme that protects it in cache is unknown between two: a restart
    /// loaded it under another scheme than its own, from cache (its own scheme) or fetched
    /// (the run's); after a lost node it may be rebuilt or not.
    pub scheme_unsure: bool,
}

impl Ckpt {
    /// Lost members of its set that RS rebuilds: SCR_SET_FAILURES (2, the default, which
    /// runs here keep), at most one fewer than the set's nodes (README, "Runtime library");
    /// a history has at most 8 nodes, so its writers' nodes are one set (SCR_SET_SIZE 8),
    /// of at least three for RS ([`Model::cached_scheme`]).
    pub fn rs_rebuilds(&self, ranks_per_node: u32) -> u32 {
        2.min(self.writers.div_ceil(ranks_per_node).saturating_sub(1))
    }

    /// The dataset name the application gives it.
    pub fn name(&self) -> String {
        if self.output {
            format!("out.{}", self.serial)
        } else {
            format!("ckpt.{}", self.step)
        }
    }

    /// How it appears in a message: its name, and its number when names repeat.
    pub fn label(&self) -> String {
        format!("{} (#{})", self.name(), self.serial)
    }

    /// Whether an index entry of it may be on the prefix.
    pub fn may_be_indexed(&self) -> bool {
        !self.dropped && !self.window_deleted && (self.prefix != Avail::No || self.prefix_damaged)
    }

    /// Certainly on the prefix, intact and indexed: its files must be there, whole.
    pub fn surely_on_prefix(&self) -> bool {
        self.prefix == Avail::Yes && !self.prefix_damaged && !self.dropped
    }
}

/// A checkpoint a restart may come to, newest first, with whether it must load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The checkpoint.
    pub serial: u32,
    /// Its name's step (`ckpt.<step>`).
    pub step: u32,
    /// Yes: a restart that reaches it loads it; Maybe: it may load it or pass it over.
    pub status: Avail,
    /// The application may find wrong bytes in it (a damaged cached file).
    pub may_read_wrong: bool,
    /// SCR may fail to route a file of it (a damaged file it reads in place on the prefix).
    pub may_miss_files: bool,
}

/// One restart attempt as the application reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The dataset SCR offered.
    pub name: String,
    /// 1 every byte right, 0 a byte wrong, -1 a file SCR would not route.
    pub verified: i32,
    /// What SCR_Complete_restart returned.
    pub rc: i32,
    /// The checkpoints of that name whose every byte the application found (several only
    /// when their bytes are alike: empty files).
    pub serials: Vec<u32>,
}

/// The model of one history's prefix and caches.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Every checkpoint written so far, oldest first.
    pub ckpts: Vec<Ckpt>,
    /// The number of ranks of the job whose checkpoints the caches hold.
    pub cache_ranks: Option<u32>,
    /// The checkpoint an operator made current with `scr index --current`, until a flush
    /// publishes a newer one.
    pub operator_current: Option<u32>,
    /// Ranks per emulated node.
    pub ranks_per_node: u32,
    /// `scr index --drop` removed an entry since the last certain flush: the index may mark
    /// nothing current.
    pub current_may_be_unset: bool,
    /// A flush that may have happened since the operator's `--current` published a newer
    /// checkpoint, which may then be current instead.
    pub operator_current_superseded: bool,
    /// The application's step in the run under way (the name of its next checkpoint is
    /// `ckpt.<step + 1>`).
    pub step: u32,
}

impl Model {
    /// An empty prefix and empty caches.
    pub fn new(ranks_per_node: u32) -> Model {
        Model {
            ranks_per_node,
            ..Model::default()
        }
    }

    /// The emulated nodes a job of `ranks` ranks runs on.
    pub fn nodes(&self, ranks: u32) -> u32 {
        ranks.div_ceil(self.ranks_per_node)
    }

    /// The scheme a job of `ranks` ranks caches checkpoints with under SCR_COPY_TYPE
    /// `scheme`. README, "Runtime library": a plain warning, not a silent downgrade, when
    /// the nodes cannot satisfy a scheme, and the checkpoint is then cached with SINGLE:
    /// PARTNER and XOR need two nodes, RS sets of three.
    pub fn cached_scheme(&self, scheme: Scheme, ranks: u32) -> Scheme {
        let least = if scheme == Scheme::Rs { 3 } else { 2 };
        if self.nodes(ranks) < least {
            Scheme::Single
        } else {
            scheme
        }
    }

    fn get_mut(&mut self, serial: u32) -> &mut Ckpt {
        self.ckpts
            .iter_mut()
            .find(|c| c.serial == serial)
            .expect("a checkpoint of the history")
    }

    /// The checkpoint numbered `serial`.
    pub fn get(&self, serial: u32) -> Option<&Ckpt> {
        self.ckpts.iter().find(|c| c.serial == serial)
    }

    /// The next checkpoint's number.
    pub fn next_serial(&self) -> u32 {
        self.ckpts.last().map_or(1, |c| c.serial + 1)
    }

    /// The copies of a dataset name, oldest first.
    pub fn copies(&self, name: &str) -> impl Iterator<Item = &Ckpt> {
        self.ckpts.iter().filter(move |c| c.name() == name)
    }

    /// The checkpoint an index entry named `name` stands for when the index marks it
    /// current: the newest copy of the name that may be indexed.
    pub fn current_copy(&self, name: &str) -> Option<u32> {
        self.copies(name)
            .filter(|c| c.may_be_indexed())
            .map(|c| c.serial)
            .max()
    }

    /// SCR_Init of a job of `ranks` ranks: a cache written by a job of another size is
    /// drained to the prefix and discarded.
    pub fn begin_run(&mut self, ranks: u32) {
        // hist_app.c: the step counter starts at 0, and a restart sets it
        self.step = 0;
        for c in &mut self.ckpts {
            // README, "Runtime library" (asynchronous flush): a job killed mid-flush leaves
            // the checkpoint in cache for `scr postrun` to drain; whether the flush got
            // published before the run ended is what its Maybe says
            c.async_pending = false;
        }
        if let Some(old) = self.cache_ranks.filter(|&r| r != ranks) {
            // the nodes of the old size this job runs on (a history's nodes are n1, n2, …)
            let (old_nodes, here) = (self.nodes(old), self.nodes(ranks));
            for c in &mut self.ckpts {
                if c.cache == Avail::No {
                    continue;
                }
                if c.prefix == Avail::No {
                    // README, "Beyond SCR: restart on another number of ranks": a checkpoint
                    // only in cache written by a job of another size is drained to the
                    // prefix by the new job's SCR_Init first, "the old-size cache
                    // discarded"; one this job's nodes cannot complete is left for scr
                    // postrun: maybe.
                    c.prefix = Avail::Maybe;
                    if here >= old_nodes {
                        c.cache = Avail::No;
                    } else {
                        // discarded on this job's nodes; the nodes it does not run on keep
                        // theirs, from which a later job of the writers' size may rebuild it:
                        // "the next older checkpoint of this job's size is restarted"
                        // (README, same section) when nothing newer of its size is there
                        c.losses += here;
                        c.cache = c.cache.min(Avail::Maybe);
                    }
                } else {
                    // one flushed already (or perhaps) is not drained, and no document
                    // says its cache goes: a later job of its size may find it there
                    c.cache = c.cache.min(Avail::Maybe);
                }
            }
        }
        self.cache_ranks = Some(ranks);
    }

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
                prefix = if self.operator_current_superseded {
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
    fn attempted<'a>(
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

    /// A dataset written by a run of `ranks` ranks under `config`; `completed`: whether the
    /// run got through its `SCR_Complete_output` (Maybe: a rank was killed right after it,
    /// which may cut short what the others still did of it). Returns its number.
    pub fn checkpoint(
        &mut self,
        spec: &CkptSpec,
        ranks: u32,
        config: &Config,
        completed: Avail,
    ) -> u32 {
        let serial = self.next_serial();
        let complete = spec.bad_rank.is_none() && completed != Avail::No;
        if !spec.output {
            // hist_app.c: each checkpoint is named after the step counter, counted on
            self.step += 1;
        }
        self.make_room(config.cache_size);
        // README, "Runtime library": a plain warning, not a silent downgrade, when the nodes
        // cannot satisfy a scheme; the checkpoint is then cached with SINGLE
        let scheme = self.cached_scheme(config.scheme, ranks);
        let flushed = match (complete, config.flush) {
            (false, _) => Avail::No,
            // README, "SCR v3.1 programs": a dataset flagged SCR_FLAG_OUTPUT is flushed at
            // once and leaves the cache
            _ if spec.output => Avail::Yes,
            // README, "SCR v3.1 programs": SCR_FLUSH=0 never flushes
            (_, 0) => Avail::No,
            // guide config.rst (config-22): SCR_FLUSH=1 flushes every checkpoint
            (_, 1) => Avail::Yes,
            // guide config.rst (config-89): every Nth checkpoint; SCR keeps the count (across
            // restarts too: integration-33), which the model does not
            _ => Avail::Maybe,
        };
        // README, "Runtime library" (asynchronous flush): the flush goes on in the background
        // and a later collective call publishes it; Finalize waits for it
        let background = config.flush_async && flushed != Avail::No;
        let cache = match (complete, spec.output && !background) {
            (false, _) => Avail::No,
            // (a kill may have cut its flush short, leaving it in cache)
            (true, true) if completed == Avail::Yes => Avail::No,
            (true, true) => Avail::Maybe,
            (true, false) => completed,
        };
        let flushed = flushed.min(completed);
        self.ckpts.push(Ckpt {
            serial,
            step: self.step,
            output: spec.output,
            // (a flush that SCR_FLUSH's count may not have started stays a Maybe)
            async_pending: background && flushed == Avail::Yes,
            reported_lost: false,
            writers: ranks,
            spec: spec.clone(),
            complete,
            scheme,
            cache,
            losses: 0,
            prefix: Avail::No,
            prefix_damaged: false,
            window_deleted: false,
            may_read_wrong: false,
            rejected: false,
            dropped: false,
            partly_drained: false,
            scheme_unsure: false,
        });
        if complete && !spec.output {
            self.evict(config.cache_size);
        }
        if flushed != Avail::No {
            let how = if background { Avail::Maybe } else { flushed };
            self.flushed(serial, how, config.prefix_size);
        }
        serial
    }

    /// README, "SCR v3.1 programs", SCR_Init row: the cached copy of the newest checkpoint
    /// stays until the next one completes, so a checkpoint that fails never costs the last
    /// good one; one already on the prefix may go when the next one starts, as in v3.1
    /// (guide api.rst, api-51), since the prefix holds it (SPEC §4.4: never the *only*
    /// complete copy). An older one beyond the newest SCR_CACHE_SIZE - 1 may go to make
    /// room for the new dataset whether or not the prefix has it (guide config.rst,
    /// config-28/29: at most SCR_CACHE_SIZE checkpoints in cache; SPEC §4.4 protects only
    /// the newest): a run with a smaller SCR_CACHE_SIZE than the one before may evict it.
    fn make_room(&mut self, cache_size: u32) {
        let mut kept = 0;
        // another size's checkpoint left in cache is on nodes this job does not run on
        let here = self.cache_ranks;
        for c in self.ckpts.iter_mut().rev() {
            if c.cache != Avail::No && c.complete && !c.output && Some(c.writers) == here {
                kept += 1;
                if kept >= cache_size && (kept > 1 || c.prefix != Avail::No) {
                    c.cache = c.cache.min(Avail::Maybe);
                }
            }
        }
    }

    /// Guide config.rst (config-28/29, config-76): at most SCR_CACHE_SIZE checkpoints in
    /// cache; README, "SCR v3.1 programs": the newest stays until the next one completes.
    fn evict(&mut self, cache_size: u32) {
        let mut kept = 0;
        // another size's checkpoint left in cache is on nodes this job does not run on
        let here = self.cache_ranks;
        for c in self.ckpts.iter_mut().rev() {
            if c.cache != Avail::No && c.complete && !c.output && Some(c.writers) == here {
                kept += 1;
                if kept > cache_size {
                    c.cache = Avail::No;
                }
            }
        }
    }

    /// What publishing checkpoint `serial` (named `name`; `empty`: all its files empty),
    /// certainly or perhaps, does to the others.
    fn published(&mut self, serial: u32, name: &str, empty: bool, how: Avail) {
        for older in self
            .ckpts
            .iter_mut()
            .filter(|o| o.serial < serial && o.name() == name)
        {
            // README, SCR_PREFIX_SIZE / "The drain": a name written again after a restart
            // from an older checkpoint is written at the same paths; the newer copy's files
            // replace the older one's, which a fetch then finds changed (its CRC32). Empty
            // files are alike whichever wrote them.
            if empty && older.spec.size == 0 || older.prefix == Avail::No {
                continue;
            }
            if how == Avail::Yes {
                older.prefix_damaged = true;
            } else {
                older.prefix = older.prefix.min(Avail::Maybe);
            }
        }
        // SPEC §4.7 and README, "The drain": publishing makes the newest checkpoint current
        // and never moves CURRENT backwards
        if self.operator_current.is_some_and(|x| x < serial) {
            if how == Avail::Yes {
                self.operator_current = None;
                self.operator_current_superseded = false;
            } else {
                self.operator_current_superseded = true;
            }
        }
        if how == Avail::Yes {
            self.current_may_be_unset = false;
        }
    }

    /// A flush of `serial` (certain or perhaps) under a window of `window` checkpoints; an
    /// output dataset's flush applies the window too ("after each flush").
    fn flushed(&mut self, serial: u32, how: Avail, window: u32) {
        let c = self.get_mut(serial);
        c.prefix = c.prefix.max(how);
        // flushed again after the window deleted it: its files are back, indexed
        c.window_deleted &= how == Avail::No;
        if how == Avail::Yes {
            c.async_pending = false;
        }
        let (name, empty, output) = (c.name(), c.spec.size == 0, c.output);
        if !output {
            self.published(serial, &name, empty, how);
        }
        self.window(how, window);
    }

    /// SCR_PREFIX_SIZE=`window` applied after a flush that happened (`ran`: Yes) or may
    /// have.
    fn window(&mut self, ran: Avail, window: u32) {
        if window == 0 {
            return;
        }
        // README, "SCR v3.1 programs", SCR_PREFIX_SIZE: after each flush, complete checkpoints
        // beyond the newest N leave the prefix (files, metadata, index), never the current
        // one; the N are checkpoints a restart can load
        let loadable = |c: &Ckpt| {
            !c.output && c.complete && !c.dropped && !c.rejected && c.prefix != Avail::No
        };
        let surely = |c: &Ckpt| loadable(c) && c.prefix == Avail::Yes && !c.prefix_damaged;
        let operator_current = self.operator_current;
        let n = self.ckpts.len();
        for i in 0..n {
            if !loadable(&self.ckpts[i]) {
                continue;
            }
            let newer = &self.ckpts[i + 1..];
            let sure_newer = newer.iter().filter(|c| surely(c)).count() as u32;
            let maybe_newer = newer.iter().filter(|c| loadable(c)).count() as u32;
            let c = &mut self.ckpts[i];
            let may_be_current = operator_current == Some(c.serial);
            if sure_newer >= window && ran == Avail::Yes && !may_be_current {
                // gone either way: deleted if it was complete there; a copy that may be
                // incomplete (a drain that could not finish it) is no checkpoint the window
                // counts or deletes (README: "complete checkpoints beyond the newest N")
                c.window_deleted = c.prefix == Avail::Yes;
                c.prefix = Avail::No;
            } else if maybe_newer >= window {
                c.prefix = c.prefix.min(Avail::Maybe);
            }
        }
    }

    /// SCR_Finalize of a run under `config`.
    pub fn finalize(&mut self, config: &Config) {
        // README, "Runtime library" (asynchronous flush): Finalize waits for every flush
        // still running in the background and publishes it
        let pending: Vec<(u32, bool)> = self
            .ckpts
            .iter()
            .filter(|c| c.async_pending)
            .map(|c| (c.serial, c.cache == Avail::Yes && !c.may_read_wrong))
            .collect();
        for (serial, sure) in pending {
            let how = if sure { Avail::Yes } else { Avail::Maybe };
            self.flushed(serial, how, config.prefix_size);
            let c = self.get_mut(serial);
            c.async_pending = false;
            if c.output {
                c.cache = Avail::No;
            }
        }
        if config.flush == 0 {
            // README, "SCR v3.1 programs": SCR_FLUSH=0 never flushes, not even at Finalize
            return;
        }
        // guide api.rst (api-13) and integration.rst (integration-7): SCR_Finalize flushes
        // the newest cached dataset that still needs it. One the cache may have lost (a
        // member not rebuilt) may not be there, so the next older may be the one flushed.
        let newest_first: Vec<(u32, Avail, Avail)> = self
            .ckpts
            .iter()
            .rev()
            .filter(|c| !c.output && c.complete && !c.rejected && c.cache != Avail::No)
            .map(|c| {
                let sure = c.cache == Avail::Yes && !c.may_read_wrong;
                (c.serial, if sure { Avail::Yes } else { Avail::Maybe }, c.prefix)
            })
            .collect();
        let mut how_sure = Avail::Yes;
        for (serial, how, prefix) in newest_first {
            let how = how.min(how_sure);
            if prefix != Avail::Yes {
                self.finalize_flush(serial, how, prefix, config.prefix_size);
            }
            if self.get(serial).is_some_and(|c| c.cache == Avail::Yes) {
                break;
            }
            how_sure = Avail::Maybe;
        }
    }

    /// SCR_Finalize's flush of `serial` (`how`: certainly or perhaps), which stood at
    /// `prefix` before.
    fn finalize_flush(&mut self, serial: u32, how: Avail, prefix: Avail, window: u32) {
        if prefix == Avail::No && how == Avail::Yes {
            self.flushed(serial, how, window);
            return;
        }
        // flushed already (by SCR_FLUSH's count, perhaps in an earlier run under another
        // window) or perhaps now: whether this run's window runs is not certain, nor whether
        // this flush publishes it over a current the operator chose since (nor whether it
        // marks one current where a drop left none)
        let (operator_current, unset) = (self.operator_current, self.current_may_be_unset);
        self.flushed(serial, how, 0);
        if operator_current.is_some_and(|x| x < serial) {
            self.operator_current = operator_current;
            self.operator_current_superseded = true;
        }
        self.current_may_be_unset = unset;
        self.window(Avail::Maybe, window);
    }

    /// A node of the cache's job loses its cache and control directories.
    pub fn lose_node(&mut self) {
        for c in &mut self.ckpts {
            if c.cache != Avail::No {
                c.losses += 1;
            }
        }
    }

    /// Checkpoints with a cached file a fault can damage.
    pub fn cached(&self) -> Vec<u32> {
        self.ckpts
            .iter()
            .filter(|c| c.cache != Avail::No && c.complete && !c.output)
            .map(|c| c.serial)
            .collect()
    }

    /// A cached file of `serial` was damaged (no CRC guards a cached file by default).
    pub fn damage_cached(&mut self, serial: u32) {
        self.get_mut(serial).may_read_wrong = true;
    }

    /// Checkpoints certainly on the prefix, intact, and the only copy of their name the
    /// index may hold (a command naming it then means this one): targets of prefix faults
    /// and operators.
    pub fn on_prefix(&self) -> Vec<u32> {
        self.ckpts
            .iter()
            .filter(|c| c.surely_on_prefix() && !c.rejected && !c.output)
            .filter(|c| {
                self.copies(&c.name())
                    .filter(|o| o.may_be_indexed())
                    .count()
                    == 1
            })
            .map(|c| c.serial)
            .collect()
    }

    /// A file of `serial` on the prefix was damaged.
    pub fn damage_prefix(&mut self, serial: u32) {
        self.get_mut(serial).prefix_damaged = true;
    }

    /// `scr index --drop` of `serial`.
    pub fn drop_entry(&mut self, serial: u32) {
        self.get_mut(serial).dropped = true;
        // guide manage.rst (manage-13): --drop removes the entry only, so dropping the current
        // one may leave none current; manage-12: restarts then take the newest valid one
        self.current_may_be_unset = true;
        if self.operator_current == Some(serial) {
            // guide api.rst (api-80): dropping the current checkpoint moves CURRENT to the
            // next older one
            self.operator_current = None;
            self.operator_current_superseded = false;
        }
    }

    /// `scr index --current` of `serial`.
    pub fn set_current(&mut self, serial: u32) {
        self.operator_current = Some(serial);
        self.operator_current_superseded = false;
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

mod drain;
mod index;
pub use index::Entry;
#[cfg(test)]
mod tests;
