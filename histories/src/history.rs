//! What a history is — runs of the application under a configuration, faults and operator
//! commands between them — and how one is drawn at random from a seed.
//!
//! Faults and operator commands name their target by a `pick`, an index into whatever the
//! model says is eligible when the step is reached (taken modulo its length): a history
//! stays meaningful when the shrinker removes the steps before it.

use crate::model::Avail;
use crate::rng::Rng;

/// The redundancy scheme of a run's checkpoints (SCR_COPY_TYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// Files only in their own node's cache.
    Single,
    /// A full copy of each node's files on its partner node.
    Partner,
    /// XOR parity across the nodes of a set.
    Xor,
    /// Reed–Solomon parity across the nodes of a set: SCR_SET_FAILURES (2 by default)
    /// lost members of a set, at most one fewer than the set's nodes.
    Rs,
}

impl Scheme {
    /// SCR's name of the scheme, as SCR_COPY_TYPE takes it.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Single => "SINGLE",
            Scheme::Partner => "PARTNER",
            Scheme::Xor => "XOR",
            Scheme::Rs => "RS",
        }
    }
}

/// The parameters a run is started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// SCR_COPY_TYPE.
    pub scheme: Scheme,
    /// SCR_FLUSH: 0 never, N every Nth checkpoint (and at SCR_Finalize).
    pub flush: u32,
    /// SCR_PREFIX_SIZE: 0 keeps every checkpoint on the prefix, N a window of N.
    pub prefix_size: u32,
    /// SCR_CACHE_SIZE: checkpoints kept in cache.
    pub cache_size: u32,
    /// SCR_RESHAPE=1: the application reads a checkpoint written by another number of ranks.
    pub reshape: bool,
    /// SCR_FLUSH_ASYNC=1: flushes copy in the background (throttled, so that a run ending
    /// without SCR_Finalize cuts one short).
    pub flush_async: bool,
    /// SCR_USE_CONTAINERS=1: a flush packs the files into containers of
    /// [`CONTAINER_SIZE`] bytes on the prefix, so that files span containers.
    pub containers: bool,
}

impl Config {
    /// The environment the run gets for this configuration.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = vec![
            ("SCR_COPY_TYPE".into(), self.scheme.name().into()),
            ("SCR_FLUSH".into(), self.flush.to_string()),
            (
                "SCR_FLUSH_ASYNC".into(),
                u32::from(self.flush_async).to_string(),
            ),
            ("SCR_PREFIX_SIZE".into(), self.prefix_size.to_string()),
            ("SCR_CACHE_SIZE".into(), self.cache_size.to_string()),
            ("SCR_RESHAPE".into(), u32::from(self.reshape).to_string()),
        ];
        if self.flush_async {
            // bytes a second a node: a few tenths of a second for a checkpoint of the sizes
            // drawn, long enough for a run ending without SCR_Finalize to cut it short
            env.push(("SCR_FLUSH_ASYNC_BW".into(), ASYNC_BW.to_string()));
        }
        if self.containers {
            env.push(("SCR_USE_CONTAINERS".into(), "1".into()));
            env.push(("SCR_CONTAINER_SIZE".into(), CONTAINER_SIZE.to_string()));
        }
        env
    }
}

/// SCR_CONTAINER_SIZE of a run with SCR_USE_CONTAINERS=1: the least it may be (README,
/// "Containers"), smaller than the largest files drawn and than most checkpoints' bytes, so
/// a file is cut across containers and a container holds pieces of several ranks' files.
pub const CONTAINER_SIZE: u32 = 4096;

/// SCR_FLUSH_ASYNC_BW of a run with SCR_FLUSH_ASYNC=1.
pub const ASYNC_BW: u32 = 40_000;

/// One dataset a run writes: a checkpoint, or an output dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CkptSpec {
    /// An output dataset (SCR_FLAG_OUTPUT) rather than a checkpoint.
    pub output: bool,
    /// Files each rank writes (file 1 of a rank is always empty).
    pub nfiles: u32,
    /// The size class of the files (0: every file empty).
    pub size: u32,
    /// A rank that says its files are invalid (the checkpoint is then not complete).
    pub bad_rank: Option<u32>,
}

/// One run of the application: `SCR_Init`, the restart loop, checkpoints, then
/// `SCR_Finalize` or an end without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// Ranks of the job.
    pub ranks: u32,
    /// Its parameters.
    pub config: Config,
    /// Read the restart through the file-list API even at the writers' size.
    pub file_list: bool,
    /// The datasets it writes after its restart.
    pub ckpts: Vec<CkptSpec>,
    /// Whether it calls `SCR_Finalize`.
    pub finalize: bool,
    /// A rank killed with SIGKILL while it writes one of the datasets (the run ends there).
    pub kill: Option<Kill>,
    /// `scr halt --checkpoints K` before the run, which runs with SCR_HALT_EXIT=1: it stops
    /// in the SCR_Complete_output of its K-th complete checkpoint (one an invalid rank spoilt
    /// does not count), flushing it first; the operator removes the condition after the
    /// run. Never with a kill.
    pub halt: Option<u32>,
}

/// A rank of a run killed with SIGKILL in one of its datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kill {
    /// The rank.
    pub rank: u32,
    /// The dataset (an index into the run's `ckpts`).
    pub at: usize,
    /// When: 0 after `SCR_Start_output`, 1 after writing its files, 2 after
    /// `SCR_Complete_output`.
    pub when: u32,
}

impl RunSpec {
    /// The dataset in whose `SCR_Complete_output` the halt stops the run: its K-th complete
    /// checkpoint. Guide halt.rst: the library reads the halt file "during
    /// SCR_Complete_output after each complete checkpoint", and "if the last of the
    /// checkpoints is unsuccessful, the job continues until it completes a successful
    /// checkpoint" (so there is one to flush); an output dataset is no checkpoint.
    pub fn halted_at(&self) -> Option<usize> {
        let k = self.halt.filter(|_| self.kill.is_none())?;
        self.ckpts
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.output && c.bad_rank.is_none())
            .nth(k.checked_sub(1)? as usize)
            .map(|(i, _)| i)
    }

    /// The datasets the run gets to, with whether each is completed — a kill before its
    /// `SCR_Complete_output` leaves the one it hit incomplete; one right after it may cut
    /// short what the other ranks still do of it (recording it, publishing its flush) —
    /// and whether the run gets to its end (`SCR_Finalize` or the end without it).
    pub fn reached(&self) -> (Vec<(&CkptSpec, Avail)>, bool) {
        if let Some(at) = self.halted_at() {
            return (
                self.ckpts[..=at].iter().map(|c| (c, Avail::Yes)).collect(),
                false,
            );
        }
        match self.kill {
            Some(k) if k.at < self.ckpts.len() => (
                self.ckpts[..=k.at]
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let completed = match (i < k.at, k.when) {
                            (true, _) => Avail::Yes,
                            (false, 2) => Avail::Maybe,
                            (false, _) => Avail::No,
                        };
                        (c, completed)
                    })
                    .collect(),
                false,
            ),
            _ => (self.ckpts.iter().map(|c| (c, Avail::Yes)).collect(), true),
        }
    }
}

/// A fault between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A node of the cache's job loses its cache and control directories.
    LoseNode {
        /// Which node.
        pick: u32,
    },
    /// A byte of a cached file of a cached checkpoint flips.
    FlipCached {
        /// Which file.
        pick: u32,
    },
    /// A cached file of a cached checkpoint loses its last bytes.
    TruncateCached {
        /// Which file.
        pick: u32,
    },
    /// A byte of a checkpoint's file on the prefix flips.
    FlipPrefix {
        /// Which file.
        pick: u32,
    },
    /// A checkpoint's file on the prefix loses its last bytes.
    TruncatePrefix {
        /// Which file.
        pick: u32,
    },
}

/// An operator's command between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `scr index --drop NAME`.
    IndexDrop {
        /// Which checkpoint on the prefix.
        pick: u32,
    },
    /// `scr index --current NAME`.
    IndexCurrent {
        /// Which checkpoint on the prefix.
        pick: u32,
    },
    /// `scr postrun`: the drain after a job, with one node down (SCR_EXCLUDE_NODES) or none.
    Postrun {
        /// Which node of the cache's job is down, if one is.
        down: Option<u32>,
    },
}

/// One step of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A run of the application.
    Run(RunSpec),
    /// A fault.
    Fault(Fault),
    /// An operator's command.
    Operator(Operator),
}

impl Step {
    /// The kind of the step, as the table counts it.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Run(_) => "run",
            Step::Fault(Fault::LoseNode { .. }) => "lose-node",
            Step::Fault(Fault::FlipCached { .. }) => "flip-cached",
            Step::Fault(Fault::TruncateCached { .. }) => "truncate-cached",
            Step::Fault(Fault::FlipPrefix { .. }) => "flip-prefix",
            Step::Fault(Fault::TruncatePrefix { .. }) => "truncate-prefix",
            Step::Operator(Operator::IndexDrop { .. }) => "index-drop",
            Step::Operator(Operator::IndexCurrent { .. }) => "index-current",
            Step::Operator(Operator::Postrun { down: None }) => "postrun",
            Step::Operator(Operator::Postrun { down: Some(_) }) => "postrun-down",
        }
    }
}

/// The generation of the drawing rules a new history is drawn with. Each generation draws
/// what it adds from a stream of its own, so a seed means the same history in the
/// generation it was found in; seeds kept from before RS was drawn are generation 2, from
/// before halts were drawn generation 3, from before containers were drawn generation 4.
pub const LATEST_GENERATION: u32 = 5;

/// A history's seed with the generation of the rules it is drawn with, written `SEED` for
/// generation 2 (the seeds kept before generations were named) and `G:SEED` otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Seed {
    /// The seed.
    pub seed: u64,
    /// The generation of the drawing rules.
    pub generation: u32,
}

impl Seed {
    /// A seed of the latest generation.
    pub fn latest(seed: u64) -> Seed {
        Seed {
            seed,
            generation: LATEST_GENERATION,
        }
    }
}

impl std::fmt::Display for Seed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.generation {
            2 => write!(f, "{}", self.seed),
            g => write!(f, "{g}:{}", self.seed),
        }
    }
}

impl std::str::FromStr for Seed {
    type Err = String;

    fn from_str(text: &str) -> Result<Seed, String> {
        let (generation, seed) = match text.split_once(':') {
            Some((g, s)) => (g.parse().map_err(|e| format!("generation {g:?}: {e}"))?, s),
            None => (2, text),
        };
        if !(2..=LATEST_GENERATION).contains(&generation) {
            return Err(format!(
                "generation {generation}: this checker draws generations 2 to {LATEST_GENERATION}"
            ));
        }
        let seed = seed.parse().map_err(|e| format!("seed {seed:?}: {e}"))?;
        Ok(Seed { seed, generation })
    }
}

/// A history: the steps, and the ranks each emulated node runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    /// The seed it was drawn from.
    pub seed: Seed,
    /// Ranks per emulated node (hydra's `n1:RPN,n2:RPN,…`).
    pub ranks_per_node: u32,
    /// Its steps in order.
    pub steps: Vec<Step>,
}

impl History {
    /// Draws a history from `seed`: the same seed always gives the same history.
    pub fn generate(seed: Seed) -> History {
        let generation = seed.generation;
        let seed_text = seed;
        let seed = seed.seed;
        let mut rng = Rng::new(seed);
        // what later versions added is drawn from a stream of its own (one per version), so
        // that a seed kept as a regression still draws the runs, faults and commands it drew
        // before
        let mut extra = Rng::new(seed ^ 0x0a5e_f1e5_d7a1_2b03);
        let mut third = Rng::new(seed ^ 0x3d1f_6b07_c2e9_55a1);
        let mut fourth = Rng::new(seed ^ 0x71c3_9e0b_a4d2_6f15);
        let mut fifth = Rng::new(seed ^ 0x5b2e_0c97_d381_4a6d);
        let ranks_per_node = rng.pick(&[1, 1, 2]);
        let base = rng.pick(&[2, 3, 4]) * ranks_per_node;
        let runs = rng.range(2, 5);
        let mut steps: Vec<Step> = Vec::new();
        let mut ranks = base;
        for i in 0..runs {
            if i > 0 {
                // the drain after a job, more often after one that ended without SCR_Finalize
                let ended =
                    matches!(steps.last(), Some(Step::Run(r)) if !r.finalize || r.kill.is_some());
                if extra.chance(1, if ended { 2 } else { 8 }) {
                    let down = extra.chance(1, 3).then(|| extra.below(1 << 16));
                    steps.push(Step::Operator(Operator::Postrun { down }));
                }
                for _ in 0..rng.range(0, 2) {
                    steps.push(between_runs(&mut rng));
                }
                // another number of ranks now and then (nodes lost without spares, or more)
                if rng.chance(1, 5) {
                    ranks = rng.pick(&[2, 3, 4]) * ranks_per_node;
                } else if rng.chance(1, 3) {
                    ranks = base;
                }
            }
            let third = (generation >= 3).then_some(&mut third);
            let mut spec = run(&mut rng, &mut extra, third, ranks);
            if generation >= 4 && spec.kill.is_none() && fourth.chance(1, 5) {
                spec.halt = Some(fourth.range(1, 3));
            }
            spec.config.containers = generation >= 5 && fifth.chance(1, 4);
            steps.push(Step::Run(spec));
        }
        History {
            seed: seed_text,
            ranks_per_node,
            steps,
        }
    }

    /// The runs of the history.
    pub fn runs(&self) -> impl Iterator<Item = &RunSpec> {
        self.steps.iter().filter_map(|s| match s {
            Step::Run(r) => Some(r),
            _ => None,
        })
    }

    /// The features the history exercises (scheme, flush period, window, faults…), for the
    /// table's counts of features and of pairs that met in one history.
    pub fn features(&self) -> Vec<String> {
        let mut f: Vec<String> = Vec::new();
        let mut last_ranks = None;
        for s in &self.steps {
            match s {
                Step::Run(r) => {
                    f.push(r.config.scheme.name().into());
                    f.push(match r.config.flush {
                        0 => "flush=0".into(),
                        1 => "flush=1".into(),
                        _ => "flush=N".into(),
                    });
                    if r.config.prefix_size > 0 {
                        f.push("prefix-window".into());
                    }
                    if r.config.cache_size > 1 {
                        f.push("cache-size>1".into());
                    }
                    if !r.finalize {
                        f.push("no-finalize".into());
                    }
                    if r.file_list {
                        f.push("file-list".into());
                    }
                    if r.config.flush_async {
                        f.push("flush-async".into());
                    }
                    if r.config.containers {
                        f.push("containers".into());
                    }
                    if let Some(k) = r.kill {
                        f.push(format!(
                            "kill-{}",
                            ["at-start", "before-complete", "after-complete"][k.when as usize % 3]
                        ));
                    }
                    if r.halt.is_some() {
                        f.push(if r.halted_at().is_some() {
                            "halt".into()
                        } else {
                            "halt-not-reached".into()
                        });
                    }
                    if last_ranks.is_some_and(|l| l != r.ranks) {
                        f.push(if r.config.reshape {
                            "other-size+reshape".into()
                        } else {
                            "other-size".into()
                        });
                    }
                    last_ranks = Some(r.ranks);
                    for c in &r.ckpts {
                        if c.output {
                            f.push("output".into());
                        }
                        if c.bad_rank.is_some() {
                            f.push("invalid-rank".into());
                        }
                        if c.size == 0 {
                            f.push("empty-files".into());
                        }
                        if c.nfiles > 1 {
                            f.push("many-files".into());
                        }
                    }
                }
                other => f.push(other.kind().into()),
            }
        }
        f.sort();
        f.dedup();
        f
    }
}

/// A run; `third` is generation 3's stream (absent in generation 2).
fn run(rng: &mut Rng, extra: &mut Rng, mut third: Option<&mut Rng>, ranks: u32) -> RunSpec {
    let scheme = match rng.pick(&[Scheme::Single, Scheme::Partner, Scheme::Xor]) {
        Scheme::Xor if third.as_mut().is_some_and(|t| t.chance(1, 2)) => Scheme::Rs,
        drawn => drawn,
    };
    let config = Config {
        scheme,
        flush: rng.pick(&[0, 1, 1, 2, 3]),
        prefix_size: rng.pick(&[0, 0, 1, 2]),
        cache_size: rng.pick(&[1, 1, 2]),
        reshape: rng.chance(1, 2),
        flush_async: extra.chance(1, 5),
        containers: false,
    };
    let ckpts: Vec<CkptSpec> = (0..rng.range(0, 3))
        .map(|_| {
            let nfiles = rng.pick(&[1, 1, 2, 3]);
            let size = rng.pick(&[0, 100, 1000, 5000]);
            let bad_rank = rng.chance(1, 10).then(|| rng.below(ranks));
            let output = extra.chance(1, 6);
            CkptSpec {
                output,
                nfiles,
                size,
                // an output dataset is always valid: its promise is about completed ones
                bad_rank: bad_rank.filter(|_| !output),
            }
        })
        .collect();
    let file_list = rng.chance(1, 4);
    let finalize = rng.chance(7, 10);
    let kill = (!ckpts.is_empty() && extra.chance(1, 8)).then(|| Kill {
        rank: extra.below(ranks),
        at: extra.below(ckpts.len() as u32) as usize,
        when: extra.below(3),
    });
    RunSpec {
        ranks,
        config,
        file_list,
        ckpts,
        finalize,
        kill,
        halt: None,
    }
}

fn between_runs(rng: &mut Rng) -> Step {
    let pick = rng.below(1 << 16);
    match rng.weighted(&[4, 2, 2, 2, 2, 2, 2]) {
        0 => Step::Fault(Fault::LoseNode { pick }),
        1 => Step::Fault(Fault::FlipCached { pick }),
        2 => Step::Fault(Fault::TruncateCached { pick }),
        3 => Step::Fault(Fault::FlipPrefix { pick }),
        4 => Step::Fault(Fault::TruncatePrefix { pick }),
        5 => Step::Operator(Operator::IndexDrop { pick }),
        _ => Step::Operator(Operator::IndexCurrent { pick }),
    }
}

/// Length in bytes of file `k` of rank `r` in a checkpoint of size class `size`, as the
/// application writes it (histories/app/hist_app.c, `file_length`).
pub fn file_length(size: u32, r: u32, k: u32) -> u64 {
    if size == 0 || k == 1 {
        0
    } else {
        u64::from(size) + 8 * u64::from(r) + 3 * u64::from(k)
    }
}

/// Byte `i` of file `k` of rank `r` of checkpoint `serial`, as the application writes it:
/// every byte says where it belongs.
pub fn pattern(serial: u32, r: u32, k: u32, i: u64) -> u8 {
    let w = (u64::from(serial) << 40)
        | ((u64::from(r) & 0xffff) << 24)
        | ((u64::from(k) & 0xff) << 16)
        | ((i / 8) & 0xffff);
    (w >> (8 * (i % 8))) as u8
}

/// The checkpoint whose bytes a file written by [`pattern`] holds, read from its first
/// eight bytes (None for a shorter file).
pub fn serial_in(bytes: &[u8]) -> Option<u32> {
    let w = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    Some((w >> 40) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_tells_which_checkpoint_wrote_it() {
        let bytes: Vec<u8> = (0..16).map(|i| pattern(70_000, 3, 2, i)).collect();
        assert_eq!(serial_in(&bytes), Some(70_000));
        assert_eq!(serial_in(&bytes[..7]), None);
    }

    #[test]
    fn a_seed_always_gives_the_same_history() {
        for seed in 0..50 {
            let seed = Seed::latest(seed);
            assert_eq!(History::generate(seed), History::generate(seed));
        }
        assert_ne!(
            History::generate(Seed::latest(1)),
            History::generate(Seed::latest(2))
        );
    }

    #[test]
    fn a_second_generation_seed_draws_no_rs_and_the_third_draws_it_in_place_of_xor() {
        let scheme_lists = |generation| {
            (0..300)
                .map(|seed| {
                    History::generate(Seed { seed, generation })
                        .runs()
                        .map(|r| r.config.scheme)
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let (second, third) = (scheme_lists(2), scheme_lists(3));
        assert!(second.iter().flatten().all(|s| *s != Scheme::Rs));
        assert!(third.iter().flatten().any(|s| *s == Scheme::Rs));
        // the same draws but for RS in place of some XOR
        for (a, b) in second.iter().zip(&third) {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!(
                    x == y || (*x == Scheme::Xor && *y == Scheme::Rs),
                    "{x:?} {y:?}"
                );
            }
        }
    }

    /// Each history of `generation` is the one of the generation before from the same
    /// seed, once `undo` takes from each run what the generation adds.
    fn adds_only(generation: u32, undo: impl Fn(&mut RunSpec)) {
        for seed in 0..300 {
            let older = History::generate(Seed {
                seed,
                generation: generation - 1,
            });
            let mut newer = History::generate(Seed { seed, generation });
            for s in &mut newer.steps {
                if let Step::Run(r) = s {
                    undo(r);
                }
            }
            newer.seed = older.seed;
            assert_eq!(older, newer);
        }
    }

    #[test]
    fn the_fourth_generation_adds_halts_to_the_third_s_draws() {
        adds_only(4, |r| {
            assert!(r.halt.is_none() || r.kill.is_none());
            r.halt = None;
        });
        let halted = (0..300)
            .flat_map(|seed| History::generate(Seed::latest(seed)).steps)
            .filter(|s| matches!(s, Step::Run(r) if r.halted_at().is_some()))
            .count();
        assert!(halted > 20, "{halted}");
    }

    #[test]
    fn the_fifth_generation_adds_containers_to_the_fourth_s_draws() {
        adds_only(5, |r| r.config.containers = false);
        let packed: Vec<RunSpec> = (0..300)
            .flat_map(|seed| History::generate(Seed::latest(seed)).steps)
            .filter_map(|s| match s {
                Step::Run(r) if r.config.containers => Some(r),
                _ => None,
            })
            .collect();
        assert!(packed.len() > 50, "{}", packed.len());
        // files larger than a container are drawn: they are cut across containers
        assert!(
            packed
                .iter()
                .flat_map(|r| &r.ckpts)
                .any(|c| c.size > CONTAINER_SIZE)
        );
        let env = packed[0].config.env();
        assert!(env.contains(&("SCR_USE_CONTAINERS".into(), "1".into())));
    }

    #[test]
    fn a_halt_stops_the_run_at_its_kth_complete_checkpoint() {
        let ckpt = |output, bad_rank| CkptSpec {
            output,
            nfiles: 1,
            size: 100,
            bad_rank,
        };
        let run = RunSpec {
            ranks: 2,
            config: Config {
                scheme: Scheme::Single,
                flush: 0,
                prefix_size: 0,
                cache_size: 1,
                reshape: false,
                flush_async: false,
                containers: false,
            },
            file_list: false,
            ckpts: vec![
                ckpt(false, Some(1)),
                ckpt(true, None),
                ckpt(false, None),
                ckpt(false, None),
            ],
            finalize: true,
            kill: None,
            halt: Some(1),
        };
        // the spoilt one and the output do not count
        assert_eq!(run.halted_at(), Some(2));
        let (reached, to_the_end) = run.reached();
        assert_eq!((reached.len(), to_the_end), (3, false));
        assert_eq!(
            RunSpec {
                halt: Some(2),
                ..run.clone()
            }
            .halted_at(),
            Some(3)
        );
        // a third complete checkpoint it never writes: it runs to its end
        assert!(
            RunSpec {
                halt: Some(3),
                ..run.clone()
            }
            .reached()
            .1
        );
    }

    #[test]
    fn seeds_read_back_as_they_are_written() {
        for text in ["17458899590654907321", "3:17458899590654907321"] {
            assert_eq!(text.parse::<Seed>().unwrap().to_string(), text);
        }
        assert_eq!("5".parse::<Seed>().unwrap().generation, 2);
        assert!("9:5".parse::<Seed>().is_err());
        assert_eq!("5:5".parse::<Seed>().unwrap().generation, 5);
        assert_eq!("4:5".parse::<Seed>().unwrap().generation, 4);
        assert!("3:x".parse::<Seed>().is_err());
    }

    #[test]
    fn every_history_starts_with_a_run_and_ranks_fit_the_nodes() {
        for seed in 0..200 {
            let h = History::generate(Seed::latest(seed));
            assert!(matches!(h.steps[0], Step::Run(_)));
            for r in h.runs() {
                assert!(r.ranks >= 2 && r.ranks.div_ceil(h.ranks_per_node) <= 8);
                assert!(
                    r.ckpts
                        .iter()
                        .all(|c| c.bad_rank.is_none_or(|b| b < r.ranks))
                );
            }
        }
    }

    #[test]
    fn the_pattern_tells_every_eight_bytes_apart() {
        let a: Vec<u8> = (0..16).map(|i| pattern(3, 1, 0, i)).collect();
        let b: Vec<u8> = (0..16).map(|i| pattern(3, 2, 0, i)).collect();
        let c: Vec<u8> = (0..16).map(|i| pattern(4, 1, 0, i)).collect();
        assert_ne!(a[..8], a[8..]);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }
}
