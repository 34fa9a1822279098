//! The SCR runtime library that MPI applications link: SCR v1.2/v2.0's API as a Rust type
//! ([`Scr`]) and as the C ABI of `include/scr.h` (`libscr.so`, `libscr.a`).
//!
//! Work in progress (issue 4): cached datasets use the SINGLE scheme, flush is synchronous,
//! and a restart reads the newest checkpoint every rank has complete in cache. Fetching
//! from the prefix, halting, Fortran wrappers and redistribution when ranks move are not
//! there yet.

mod api;
mod comm;
mod config_api;
pub mod ffi;
pub mod fortran;
mod runtime;
mod shuffle;

pub use api::{Output, Restart};
pub use runtime::{FLAG_CHECKPOINT, FLAG_OUTPUT, Scr};
