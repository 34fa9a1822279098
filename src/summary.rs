//! Summary file (`<prefix>/.scr/scr.dataset.<id>/summary.scr`).
//!
//! VERSION 6 (what we write, and SCR v1.1.8+): `VERSION 6  COMPLETE 0|1  DSET {dataset}`,
//! with the rank2file tree beside it. 1.1-8 also embedded the map under `RANK2FILE`.
//! VERSION 5 (read only): `VERSION 5  CKPT <id> {COMPLETE, RANKS, RANK <r> FILE <name> {SIZE, CRC}}`.

use crate::dataset::Dataset;
use crate::hash::Hash;
use crate::rank2file::{self, RankFiles};
use crate::view::{HashView, hash_view};

hash_view!(
    /// The summary file.
    Summary, "summary file", validate = validate
);

pub const VERSION_CURRENT: u64 = 6;
const VERSION: &str = "VERSION";
const COMPLETE: &str = "COMPLETE";
const DSET: &str = "DSET";
const CKPT: &str = "CKPT";
const RANKS: &str = "RANKS";

fn validate(h: &Hash) -> Result<(), String> {
    match h.parsed::<u64>(VERSION).map_err(|e| e.to_string())? {
        Some(6) => {
            if let Some(d) = h.get(DSET) {
                Dataset::validate(d)?;
            }
            if let Some(embedded) = h.get(rank2file::EMBEDDED) {
                rank2file::parse_leaf(embedded, &mut RankFiles::new())?;
            }
            Ok(())
        }
        Some(5) => {
            let ckpts = h.get(CKPT).map_or(0, Hash::len);
            if ckpts != 1 {
                return Err(format!(
                    "version 5 summary must describe one checkpoint, found {ckpts}"
                ));
            }
            let (id, c) = h
                .get(CKPT)
                .and_then(|c| c.iter().next())
                .expect("one checkpoint");
            id.parse::<u64>()
                .map_err(|_| format!("checkpoint id {id:?} is not a number"))?;
            rank2file::parse_leaf(c, &mut RankFiles::new())
        }
        Some(v) => Err(format!(
            "summary VERSION {v} is not supported (5 and 6 are)"
        )),
        None => Err("summary has no VERSION".into()),
    }
}

impl Summary {
    /// A VERSION 6 summary in SCR's key order.
    pub fn create(dataset: &Dataset, complete: bool) -> Self {
        let mut h = Hash::new();
        h.set(DSET, dataset.hash().clone());
        h.set_value(COMPLETE, u8::from(complete));
        h.set_value(VERSION, VERSION_CURRENT);
        Summary(h)
    }

    pub fn version(&self) -> Option<u64> {
        self.0.parsed(VERSION).ok().flatten()
    }

    pub fn is_complete(&self) -> bool {
        let h = if self.version() == Some(5) {
            self.v5_checkpoint().map(|(_, c)| c)
        } else {
            Some(&self.0)
        };
        h.is_some_and(|h| h.parsed::<u8>(COMPLETE) == Ok(Some(1)))
    }

    /// The dataset descriptor; for VERSION 5 one is made from the checkpoint id.
    pub fn dataset(&self) -> Option<Dataset> {
        match self.version() {
            Some(5) => {
                let (id, c) = self.v5_checkpoint()?;
                let mut d = Hash::new();
                d.set_value("ID", id);
                d.set_value("CKPT", id);
                d.set_value("FLAG_CKPT", 1);
                d.set_value("COMPLETE", c.first_value(COMPLETE).unwrap_or("0"));
                Some(Dataset::wrap(d))
            }
            _ => self.0.get(DSET).map(|h| Dataset::wrap(h.clone())),
        }
    }

    /// Number of ranks for VERSION 5 summaries (VERSION 6 keeps it in the rank2file tree).
    pub fn ranks(&self) -> Option<u64> {
        self.v5_checkpoint()?.1.parsed(RANKS).ok().flatten()
    }

    /// The rank-to-file map a VERSION 5 summary or a 1.1-8 summary carries inside itself.
    pub fn embedded_rank2file(&self) -> Option<RankFiles> {
        let leaf = match self.version() {
            Some(5) => self.v5_checkpoint()?.1,
            _ => self.0.get(rank2file::EMBEDDED)?,
        };
        let mut out = RankFiles::new();
        rank2file::parse_leaf(leaf, &mut out).ok()?;
        Some(out)
    }

    fn v5_checkpoint(&self) -> Option<(u64, &Hash)> {
        let (id, c) = self.0.get(CKPT)?.iter().next()?;
        Some((id.parse().ok()?, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Origin;

    #[test]
    fn version6_layout() {
        let d = Dataset::create(3, "ckpt.3", true, false, &Origin::default(), Some(3));
        let s = Summary::create(&d, true);
        assert_eq!(
            s.hash().keys().collect::<Vec<_>>(),
            ["DSET", "COMPLETE", "VERSION"]
        );
        assert!(s.is_complete());
        assert_eq!(s.dataset().unwrap().id(), Some(3));
    }

    #[test]
    fn version5_reads() {
        let mut h = Hash::new();
        h.set_value("VERSION", 5);
        let c = h.set_kv("CKPT", 18);
        c.set_value("COMPLETE", 1);
        c.set_value("RANKS", 2);
        c.set_path(&[&"RANK", &0, &"FILE", &"rank_0.ckpt"])
            .set_value("SIZE", 524294);
        c.set_path(&[&"RANK", &1, &"FILE", &"rank_1.ckpt"])
            .set_value("SIZE", 524295);
        let s = Summary::from_hash(h).unwrap();
        assert!(s.is_complete());
        assert_eq!(s.ranks(), Some(2));
        assert_eq!(s.dataset().unwrap().checkpoint_id(), Some(18));
        assert_eq!(s.embedded_rank2file().unwrap()[&1][0].size, 524295);
    }

    #[test]
    fn unknown_versions_are_refused() {
        let mut h = Hash::new();
        h.set_value("VERSION", 9);
        assert!(Summary::from_hash(h).unwrap_err().contains("VERSION 9"));
    }
}
