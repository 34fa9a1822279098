//! The erasure codes of the redundancy sets as one linear code over GF(2^8): XOR (SCR's
//! RAID-5 rotation, parity coefficients all 1) and Reed–Solomon (systematic, Cauchy
//! coefficients, surviving `k` lost members of a set, like SCR 3 and FTI level 3).
//!
//! A set of `n` members is cut into `n` stripes. In every stripe, `k` members hold parity
//! and the other `n-k` each contribute one chunk of their logical file (the zero-padded
//! concatenation of their files, see [`crate::xor`]), so each member contributes `n-k`
//! chunks and holds `k` parity chunks. Any `n-k` elements of a stripe determine the rest,
//! which is what [`StripeCode::rebuild_weights`] computes: the coefficients that turn
//! surviving elements into lost ones. Parity files are the XOR header followed by the `k`
//! parity chunks in slot order.

mod code;
mod file_crcs;
pub mod gf;
mod serial;

pub use code::*;
pub use file_crcs::FileCrcs;
pub use serial::*;

#[cfg(test)]
mod tests;
