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
    /// A flush of it may have packed its files into containers (a run with
    /// SCR_USE_CONTAINERS=1 flushed it, or may have): its files may be in a dataset's
    /// containers rather than at their paths, and nothing of it at its paths is replaced
    /// by a newer copy of its name.
    pub may_be_packed: bool,
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
    /// SCR v2.0.0's and v3.1's cache rule instead of ours: `SCR_Start_output` deletes the
    /// oldest cached checkpoint when the cache holds SCR_CACHE_SIZE of them, flushed or not
    /// (README, "SCR v3.1 programs": "v3.1 deletes it in SCR_Start_output"; ours keeps the
    /// newest until the next one completes). Set when the histories run against real
    /// v2.0.0.
    pub evict_at_start: bool,
    /// `scr index --drop` of the operator's current checkpoint, until the next run: the
    /// next older complete checkpoint on the prefix then, which SCR v2.0.0's `scr_index
    /// --remove` makes current (as v3.1's SCR_Drop does, guide api.rst api-80), where v3.1's
    /// `scr_index --drop` removes the entry only (manage-13).
    pub next_older_after_drop: Option<u32>,
    /// The flushes of the run now going pack the files into containers (SCR_USE_CONTAINERS=1;
    /// README, "Containers": the post-run drain writes plain files).
    pub packing: bool,
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
        self.next_older_after_drop = None;
        for c in &mut self.ckpts {
            // README, "Runtime library" (asynchronous flush): a job killed mid-flush leaves
            // the checkpoint in cache for `scr postrun` to drain; whether the flush got
            // published before the run ended is what its Maybe says
            c.async_pending = false;
        }
        if let Some(old) = self.cache_ranks.filter(|&r| r != ranks) {
            // the nodes of the old size this job runs on (a history's nodes are n1, n2, …)
            let (old_nodes, here) = (self.nodes(old), self.nodes(ranks));
            let mut drained = Vec::new();
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
                    drained.push((c.serial, c.name(), c.spec.size == 0, c.output));
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
                    if c.prefix == Avail::Maybe {
                        // perhaps not flushed after all, and drained now
                        drained.push((c.serial, c.name(), c.spec.size == 0, c.output));
                    }
                }
            }
            // the drain publishes what it completes like any flush: one newer than a current
            // the operator chose becomes current (SPEC §4.7, "never moves CURRENT backwards")
            for (serial, name, empty, output) in drained {
                if !output {
                    self.published(serial, &name, empty, Avail::Maybe);
                }
            }
        }
        self.cache_ranks = Some(ranks);
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
            may_be_packed: false,
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
            self.next_older_after_drop = self
                .ckpts
                .iter()
                .filter(|c| {
                    c.serial < serial
                        && !c.output
                        && c.complete
                        && !c.dropped
                        && !c.rejected
                        && c.prefix != Avail::No
                })
                .map(|c| c.serial)
                .max();
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

mod drain;
mod flush;
mod index;
mod restart;
pub use index::Entry;
#[cfg(test)]
mod tests;
