//! Dataset descriptor: the attributes of one checkpoint or output set, as rank 0 creates it
//! in `SCR_Start_output` and as the filemap, summary and index record it.
//!
//! ```text
//! ID 3  NAME ckpt.3  FLAG_CKPT 1  FLAG_OUTPUT 0  CREATED 1795323075410473  USER root
//! JOBID gXOR  CKPT 3  FILES 4  SIZE 262178  COMPLETE 1
//! ```

use crate::hash::Hash;
use crate::view::{check_value, hash_view};

hash_view!(
    /// Dataset descriptor (`DSET`/`DSETDESC` in other files).
    Dataset, "dataset descriptor", validate = validate
);

const ID: &str = "ID";
const NAME: &str = "NAME";
const FLAG_CKPT: &str = "FLAG_CKPT";
const FLAG_OUTPUT: &str = "FLAG_OUTPUT";
const CREATED: &str = "CREATED";
const USER: &str = "USER";
const JOBNAME: &str = "JOBNAME";
const JOBID: &str = "JOBID";
const CLUSTER: &str = "CLUSTER";
const CKPT: &str = "CKPT";
const FILES: &str = "FILES";
const SIZE: &str = "SIZE";
const COMPLETE: &str = "COMPLETE";
/// This implementation's: the checkpoint was written without SCR and adopted
/// (`crate::bootstrap`); its files are the application's, which SCR never deletes on its own.
const ADOPTED: &str = "ADOPTED";

fn validate(h: &Hash) -> Result<(), String> {
    for key in [ID, CKPT, FILES, SIZE, CREATED] {
        check_value::<u64>(h, key, "dataset")?;
    }
    for key in [FLAG_CKPT, FLAG_OUTPUT, COMPLETE, ADOPTED] {
        check_value::<u8>(h, key, "dataset")?;
    }
    Ok(())
}

/// Who created a dataset and when; the identity part of a new descriptor.
#[derive(Clone, Debug, Default)]
pub struct Origin {
    pub user: Option<String>,
    pub jobname: Option<String>,
    pub jobid: Option<String>,
    pub cluster: Option<String>,
    /// Microseconds since the epoch.
    pub created_us: u64,
}

impl Dataset {
    /// A new descriptor with SCR's key order. `ckpt` is the checkpoint id for checkpoint
    /// datasets (output-only datasets have none).
    pub fn create(
        id: u64,
        name: &str,
        is_ckpt: bool,
        is_output: bool,
        origin: &Origin,
        ckpt: Option<u64>,
    ) -> Self {
        let mut h = Hash::new();
        h.set_value(ID, id);
        h.set_value(NAME, name);
        h.set_value(FLAG_CKPT, u8::from(is_ckpt));
        h.set_value(FLAG_OUTPUT, u8::from(is_output));
        h.set_value(CREATED, origin.created_us);
        for (key, value) in [
            (USER, &origin.user),
            (JOBNAME, &origin.jobname),
            (JOBID, &origin.jobid),
            (CLUSTER, &origin.cluster),
        ] {
            if let Some(v) = value {
                h.set_value(key, v);
            }
        }
        if let Some(c) = ckpt {
            h.set_value(CKPT, c);
        }
        Dataset(h)
    }

    pub fn id(&self) -> Option<u64> {
        self.0.parsed(ID).ok().flatten()
    }
    pub fn name(&self) -> Option<&str> {
        self.0.first_value(NAME)
    }
    pub fn is_checkpoint(&self) -> bool {
        self.0.parsed::<u8>(FLAG_CKPT) == Ok(Some(1))
            || (self.0.get(FLAG_CKPT).is_none() && self.0.contains(CKPT))
    }
    pub fn is_output(&self) -> bool {
        self.0.parsed::<u8>(FLAG_OUTPUT) == Ok(Some(1))
    }
    pub fn checkpoint_id(&self) -> Option<u64> {
        self.0.parsed(CKPT).ok().flatten()
    }
    /// Creation time in microseconds since the epoch.
    pub fn created_us(&self) -> Option<u64> {
        self.0.parsed(CREATED).ok().flatten()
    }

    pub fn set_created_us(&mut self, us: u64) {
        self.0.set_value(CREATED, us);
    }
    pub fn user(&self) -> Option<&str> {
        self.0.first_value(USER)
    }
    pub fn jobid(&self) -> Option<&str> {
        self.0.first_value(JOBID)
    }
    pub fn files(&self) -> Option<u64> {
        self.0.parsed(FILES).ok().flatten()
    }
    pub fn size(&self) -> Option<u64> {
        self.0.parsed(SIZE).ok().flatten()
    }
    pub fn is_complete(&self) -> bool {
        self.0.parsed::<u8>(COMPLETE) == Ok(Some(1))
    }

    /// Says whether the dataset was completed (as every record of it must for a drain).
    pub fn set_complete(&mut self, complete: bool) {
        self.0.set_value(COMPLETE, u8::from(complete));
    }

    /// Whether SCR adopted this checkpoint, written without it.
    pub fn is_adopted(&self) -> bool {
        self.0.parsed::<u8>(ADOPTED) == Ok(Some(1))
    }

    pub fn set_adopted(&mut self) {
        self.0.set_value(ADOPTED, 1u8);
    }

    /// Records the totals agreed by all ranks in `Complete_output`.
    pub fn set_totals(&mut self, files: u64, bytes: u64, complete: bool) {
        self.0.set_value(FILES, files);
        self.0.set_value(SIZE, bytes);
        self.0.set_value(COMPLETE, u8::from(complete));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::HashView;

    #[test]
    fn created_descriptor_matches_scr_layout() {
        let origin = Origin {
            user: Some("root".into()),
            jobid: Some("gXOR".into()),
            created_us: 1795323075410473,
            ..Default::default()
        };
        let mut d = Dataset::create(3, "ckpt.3", true, false, &origin, Some(3));
        d.set_totals(4, 262178, true);
        assert_eq!(
            d.hash().keys().collect::<Vec<_>>(),
            [
                "ID",
                "NAME",
                "FLAG_CKPT",
                "FLAG_OUTPUT",
                "CREATED",
                "USER",
                "JOBID",
                "CKPT",
                "FILES",
                "SIZE",
                "COMPLETE"
            ]
        );
        assert!(d.is_checkpoint() && !d.is_output() && d.is_complete());
        assert_eq!(
            (d.id(), d.name(), d.size()),
            (Some(3), Some("ckpt.3"), Some(262178))
        );
    }
}
