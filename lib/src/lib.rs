//! The SCR runtime library that MPI applications link: SCR v3.1's API (a superset of
//! v1.2/v2.0's) as a Rust type ([`Scr`]), as the C ABI of `include/scr.h` (`libscr.so`,
//! `libscr.a`) and as gfortran-convention Fortran symbols. The MPI-free rules (file
//! formats, parameters, layout, redundancy arithmetic) live in the `scr` core crate; this
//! crate does the communication: caching, redundancy, flush, fetch, restart and halts.

#[macro_use]
mod say;
mod abort;
mod api;
mod comm;
mod config_api;
pub mod configf;
mod event_log;
pub mod ffi;
pub mod fortran;
mod mpi_mix;
mod phases;
mod runtime;
mod shuffle;

pub use api::{Output, Restart};

/// `SCR_Config` for Rust callers: before [`Scr::init`] sets (`KEY=VALUE`), unsets (`KEY=`)
/// or queries (`KEY`, `CKPT=0 TYPE`); after it, queries only. A set returns `None`.
pub fn config(line: &str) -> scr::Result<Option<String>> {
    ffi::config_line(line)
}
pub use runtime::{FLAG_CHECKPOINT, FLAG_OUTPUT, Scr};
