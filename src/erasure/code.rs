//! The code itself: which member holds what in each stripe, and the weights that rebuild
//! lost elements from surviving ones.

use super::gf;
use crate::meta::FileType;
use crate::xor;

/// A lost member and the weights of the surviving members' elements that rebuild it.
pub type RebuildWeights = (usize, Vec<(usize, u8)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    Xor,
    ReedSolomon,
}

/// What a member is in one stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// It contributes chunk `chunk` of its logical file as data element `index`.
    Data { chunk: usize, index: usize },
    /// It holds parity slot `slot` (0..k) of its parity file.
    Parity { slot: usize },
}

/// The code of one set: `n` members, `k` parity chunks per stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeCode {
    pub kind: CodeKind,
    pub n: usize,
    pub k: usize,
}

impl StripeCode {
    pub fn xor(n: usize) -> StripeCode {
        StripeCode {
            kind: CodeKind::Xor,
            n,
            k: 1,
        }
    }

    pub fn reed_solomon(n: usize, k: usize) -> StripeCode {
        StripeCode {
            kind: CodeKind::ReedSolomon,
            n,
            k,
        }
    }

    /// The parity file of member `pos` of set `group_id` (`xor.…` or `rs.…`).
    pub fn file_name(&self, group_id: u64, pos: u64) -> String {
        match self.kind {
            CodeKind::Xor => crate::layout::xor_file_name(group_id, pos, self.n as u64),
            CodeKind::ReedSolomon => crate::layout::rs_file_name(group_id, pos, self.n as u64),
        }
    }

    /// The meta data type of its parity files.
    pub fn file_type(&self) -> FileType {
        match self.kind {
            CodeKind::Xor => FileType::Xor,
            CodeKind::ReedSolomon => FileType::ReedSolomon,
        }
    }

    /// Chunks of its logical file each member contributes.
    pub fn data_chunks(&self) -> usize {
        self.n - self.k
    }

    pub fn role(&self, member: usize, stripe: usize) -> Role {
        let n = self.n;
        match self.kind {
            // SCR's rotation: stripe t is member t's parity; the others' chunks by chunk_for
            CodeKind::Xor if member == stripe => Role::Parity { slot: 0 },
            CodeKind::Xor => Role::Data {
                chunk: xor::chunk_for(member, stripe),
                index: (member + n - stripe - 1) % n,
            },
            CodeKind::ReedSolomon => {
                let offset = (member + n - stripe) % n;
                if offset < self.k {
                    Role::Parity { slot: offset }
                } else {
                    Role::Data {
                        chunk: offset - self.k,
                        index: offset - self.k,
                    }
                }
            }
        }
    }

    /// The stripe whose parity slot `slot` member `holder` holds.
    pub fn stripe_held(&self, holder: usize, slot: usize) -> usize {
        match self.kind {
            CodeKind::Xor => holder,
            CodeKind::ReedSolomon => (holder + self.n - slot) % self.n,
        }
    }

    /// The coefficient of data element `index` in parity slot `slot`.
    pub fn coefficient(&self, slot: usize, index: usize) -> u8 {
        match self.kind {
            CodeKind::Xor => 1,
            // Cauchy: 1 / (x_slot + y_index) with x = d + slot, y = index, all distinct, so
            // every square submatrix is invertible (the code is MDS)
            CodeKind::ReedSolomon => gf::inv(((self.data_chunks() + slot) ^ index) as u8),
        }
    }

    /// An element's row of the generator: its value in terms of the stripe's data elements.
    fn generator_row(&self, role: Role) -> Vec<u8> {
        let d = self.data_chunks();
        match role {
            Role::Data { index, .. } => (0..d).map(|i| u8::from(i == index)).collect(),
            Role::Parity { slot } => (0..d).map(|i| self.coefficient(slot, i)).collect(),
        }
    }

    /// For each lost member, the weights that turn surviving members' elements of
    /// `stripe` into its element: `(lost, [(survivor, weight)])`. Errs when more members
    /// are lost than the code survives.
    pub fn rebuild_weights(
        &self,
        stripe: usize,
        lost: &[usize],
    ) -> std::result::Result<Vec<RebuildWeights>, String> {
        if lost.len() > self.k {
            return Err(format!(
                "{} members of a set of {} are lost; it survives {}",
                lost.len(),
                self.n,
                self.k
            ));
        }
        let d = self.data_chunks();
        let survivors: Vec<usize> = (0..self.n).filter(|m| !lost.contains(m)).take(d).collect();
        let basis: Vec<Vec<u8>> = survivors
            .iter()
            .map(|&m| self.generator_row(self.role(m, stripe)))
            .collect();
        let inverse = gf::invert(basis).ok_or("the code's matrix is singular (a bug)")?;
        Ok(lost
            .iter()
            .map(|&l| {
                let row = self.generator_row(self.role(l, stripe));
                let weights = survivors
                    .iter()
                    .enumerate()
                    .map(|(t, &m)| {
                        let w = (0..d).fold(0u8, |acc, i| acc ^ gf::mul(row[i], inverse[i][t]));
                        (m, w)
                    })
                    .collect();
                (l, weights)
            })
            .collect())
    }
}
