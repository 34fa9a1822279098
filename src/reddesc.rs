//! Redundancy descriptor (SCR's `REDDESC`): which store a dataset is cached in,
//! which scheme protects it, and which redundancy set this rank belongs to, so a later run
//! can rebuild the same sets.

use crate::hash::Hash;
use crate::view::{check_value, hash_view};

hash_view!(
    /// Redundancy descriptor as stored in a filemap.
    RedDesc, "redundancy descriptor", validate = validate
);

/// A redundancy scheme. `LOCAL` (1.1-8) reads as [`Scheme::Single`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    Single,
    Partner,
    Xor,
    ReedSolomon,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Single => "SINGLE",
            Scheme::Partner => "PARTNER",
            Scheme::Xor => "XOR",
            Scheme::ReedSolomon => "RS",
        }
    }

    /// Parses a scheme name as SCR's config and descriptors spell it (case-insensitive).
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "SINGLE" | "LOCAL" => Some(Scheme::Single),
            "PARTNER" => Some(Scheme::Partner),
            "XOR" => Some(Scheme::Xor),
            "RS" | "REED_SOLOMON" | "REEDSOLOMON" => Some(Scheme::ReedSolomon),
            _ => None,
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const ENABLED: &str = "ENABLED";
const INDEX: &str = "INDEX";
const INTERVAL: &str = "INTERVAL";
const OUTPUT: &str = "OUTPUT";
const STORE: &str = "STORE";
const BASE: &str = "BASE";
const DIRECTORY: &str = "DIRECTORY";
const TYPE: &str = "TYPE";
const HOP_DISTANCE: &str = "HOP_DISTANCE";
const SET_SIZE: &str = "SET_SIZE";
const SET_FAILURES: &str = "SET_FAILURES";
const GROUPS: &str = "GROUPS";
const GROUP_ID: &str = "GROUP_ID";
const GROUP_SIZE: &str = "GROUP_SIZE";
const GROUP_RANK: &str = "GROUP_RANK";

fn validate(h: &Hash) -> Result<(), String> {
    for key in [
        INDEX,
        INTERVAL,
        HOP_DISTANCE,
        SET_SIZE,
        SET_FAILURES,
        GROUPS,
        GROUP_ID,
        GROUP_SIZE,
        GROUP_RANK,
    ] {
        check_value::<u64>(h, key, "redundancy descriptor")?;
    }
    for key in [ENABLED, OUTPUT] {
        check_value::<u8>(h, key, "redundancy descriptor")?;
    }
    if let Some(t) = h.value(TYPE).map_err(|e| e.to_string())? {
        Scheme::parse(t).ok_or_else(|| {
            format!("redundancy descriptor: unknown TYPE {t:?} (SINGLE, PARTNER, XOR or RS)")
        })?;
    }
    Ok(())
}

/// This rank's place in its redundancy set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetPosition {
    pub groups: u64,
    pub group_id: u64,
    pub group_size: u64,
    pub group_rank: u64,
}

impl RedDesc {
    /// A descriptor with SCR v2.0's key order.
    pub fn create(
        enabled: bool,
        interval: u64,
        output: bool,
        store: &str,
        directory: &str,
        scheme: Scheme,
    ) -> Self {
        let mut h = Hash::new();
        h.set_value(ENABLED, u8::from(enabled));
        h.set_value(INTERVAL, interval);
        h.set_value(OUTPUT, u8::from(output));
        h.set_value(STORE, store);
        h.set_value(DIRECTORY, directory);
        h.set_value(TYPE, scheme);
        RedDesc(h)
    }

    pub fn set_position(&mut self, p: SetPosition) {
        self.0.set_value(GROUPS, p.groups);
        self.0.set_value(GROUP_ID, p.group_id);
        self.0.set_value(GROUP_SIZE, p.group_size);
        self.0.set_value(GROUP_RANK, p.group_rank);
    }

    pub fn position(&self) -> Option<SetPosition> {
        let get = |k| self.0.parsed::<u64>(k).ok().flatten();
        Some(SetPosition {
            groups: get(GROUPS)?,
            group_id: get(GROUP_ID)?,
            group_size: get(GROUP_SIZE)?,
            group_rank: get(GROUP_RANK)?,
        })
    }

    pub fn interval(&self) -> Option<u64> {
        self.0.parsed(INTERVAL).ok().flatten()
    }
    pub fn scheme(&self) -> Option<Scheme> {
        self.0.first_value(TYPE).and_then(Scheme::parse)
    }
    /// The cache store (`STORE`; `BASE` in 1.1-8).
    pub fn store(&self) -> Option<&str> {
        self.0
            .first_value(STORE)
            .or_else(|| self.0.first_value(BASE))
    }
    /// The directory dataset directories are created in.
    pub fn directory(&self) -> Option<&str> {
        self.0.first_value(DIRECTORY)
    }
    /// Points the descriptor at this node's cache directory (a copy moved to another node).
    pub fn set_directory(&mut self, directory: &str) {
        self.0.set_value(DIRECTORY, directory);
    }
    pub fn set_size(&self) -> Option<u64> {
        self.0.parsed(SET_SIZE).ok().flatten()
    }
    pub fn hop_distance(&self) -> Option<u64> {
        self.0.parsed(HOP_DISTANCE).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::HashView;

    #[test]
    fn descriptor_layout_and_position() {
        let mut d = RedDesc::create(true, 1, false, "/n0", "/n0/root/scr.gXOR", Scheme::Xor);
        d.set_position(SetPosition {
            groups: 1,
            group_id: 0,
            group_size: 4,
            group_rank: 0,
        });
        assert_eq!(
            d.hash().keys().collect::<Vec<_>>(),
            [
                "ENABLED",
                "INTERVAL",
                "OUTPUT",
                "STORE",
                "DIRECTORY",
                "TYPE",
                "GROUPS",
                "GROUP_ID",
                "GROUP_SIZE",
                "GROUP_RANK"
            ]
        );
        assert_eq!(d.position().unwrap().group_size, 4);
        assert_eq!(d.scheme(), Some(Scheme::Xor));
        assert_eq!(Scheme::parse("local"), Some(Scheme::Single));
    }

    #[test]
    fn unknown_scheme_is_an_error() {
        let mut h = Hash::new();
        h.set_value("TYPE", "RAID6");
        assert!(RedDesc::from_hash(h).unwrap_err().contains("RAID6"));
    }
}
