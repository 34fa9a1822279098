//! The MPI-free core of SCR (Scalable Checkpoint/Restart) in Rust.
//!
//! Everything here runs without MPI, so the serial commands (`scr print`, `scr index`,
//! `scr copy`, `scr halt` …) and the runtime library share one implementation of:
//!
//! - [`hash`]: SCR's hash (kvtree) and its binary file format, byte-compatible with
//!   SCR v1.2/v2.0;
//! - typed views of every SCR file: [`filemap`], [`meta`], [`dataset`], [`reddesc`],
//!   [`index`], [`summary`], [`rank2file`], [`flush`], [`halt`], [`nodes`], [`transfer`],
//!   [`rank_process`];
//! - redundancy: [`redset`] (which ranks protect each other), [`xor`] (the XOR
//!   scheme's chunk rule and files) and [`erasure`] (XOR and Reed–Solomon as one code,
//!   and the serial rebuild);
//! - the drain: [`scavenge`] (copy a node's cache to the prefix, check, rebuild, index);
//! - [`params`] and [`config`]: SCR's parameters, defaults and configuration syntax;
//! - [`layout`]: where control, cache and prefix files live; [`prefix`]: publishing a
//!   dataset there (rank2file, summary, index, `scr.current`, flush location);
//! - [`io`]: atomic replacement, locked read-modify-write and private directories.

pub mod app_config;
pub mod bootstrap;
pub mod cache;
pub mod config;
pub mod container;
pub mod dataset;
pub mod dataset_ids;
pub mod erasure;
pub mod error;
pub mod event_log;
pub mod filemap;
pub mod flush;
pub mod halt;
pub mod hash;
pub mod index;
pub mod io;
pub mod layout;
pub mod meta;
pub mod nodes;
pub mod params;
mod plain_io;
pub mod prefix;
pub mod rank2file;
pub mod rank_process;
pub mod reddesc;
pub mod redset;
pub mod safe_fs;
pub mod scavenge;
pub mod schedule;
pub mod summary;
pub mod temp_name;
pub mod text;
pub mod transfer;
pub mod units;
mod view;
pub mod xor;

pub use error::{Error, ErrorKind, Result};
pub use hash::Hash;
pub use view::HashView;
