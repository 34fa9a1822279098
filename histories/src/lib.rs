//! A history checker for SCR in Rust: the oracle for "SCR keeps its promises in every
//! order" (SPEC §4.11).
//!
//! A *history* is a random sequence of runs of a small C application
//! (`histories/app/hist_app.c`, linked against this workspace's libscr) as real MPICH jobs on
//! emulated nodes, each under its own configuration (scheme, SCR_FLUSH, SCR_PREFIX_SIZE,
//! SCR_CACHE_SIZE, SCR_RESHAPE, SCR_FLUSH_ASYNC), writing checkpoints (named after the
//! application's step, so a restart from an older one writes names again) and output
//! datasets, now and then with a rank killed or a halt condition set (`scr halt
//! --checkpoints K`), with faults (a node's cache and control
//! directory lost, a cached or flushed file damaged) and operator commands (`scr index
//! --drop/--current`, `scr postrun`) between them. The application checks every byte a restart reads against where it belongs;
//! a [reference model](model) of what the README, SPEC and SCR v3.1's user guide promise says
//! which restarts are allowed and what the prefix and its index may hold. A violation is
//! shrunk to a minimal history and printed as a shell script that reproduces it.
//!
//! ```no_run
//! use scr_histories::{driver::Env, history::{History, Seed}};
//! let env = Env::prepare(std::path::Path::new("target/debug"), None).unwrap();
//! let history = History::generate(Seed::latest(42));
//! let outcome = env.run(&history);
//! assert!(outcome.violation.is_none(), "{:?}", outcome.violation);
//! ```
#![deny(missing_docs)]

pub mod app;
pub mod check;
pub mod driver;
pub mod history;
pub mod model;
pub mod peer;
pub mod planted;
pub mod process;
pub mod report;
pub mod rng;
pub mod script;
pub mod shrink;
