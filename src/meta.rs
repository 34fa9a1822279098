//! Meta data of one cached file: what it is, whose it is, and how to verify it.
//!
//! ```text
//! FILE rank_0.ckpt   TYPE USER   RANKS 4   ORIG ckpt.3/rank_0.ckpt
//! PATH /prefix/ckpt.3   NAME rank_0.ckpt   SIZE 65543   CRC 0x166ef86a   COMPLETE 1
//! ```

use crate::hash::Hash;
use crate::view::{check_value, hash_view};

hash_view!(
    /// Meta data for one file in cache.
    Meta, "meta data", validate = validate
);

/// What wrote a file: the application (`USER`; `FULL` before v1.2), or a redundancy scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    User,
    Partner,
    Xor,
    ReedSolomon,
}

impl FileType {
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::User => "USER",
            FileType::Partner => "PARTNER",
            FileType::Xor => "XOR",
            FileType::ReedSolomon => "RS",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "USER" | "FULL" => Some(FileType::User),
            "PARTNER" => Some(FileType::Partner),
            "XOR" => Some(FileType::Xor),
            "RS" => Some(FileType::ReedSolomon),
            _ => None,
        }
    }
}

const FILE: &str = "FILE";
const TYPE: &str = "TYPE";
const SIZE: &str = "SIZE";
const CRC: &str = "CRC";
const COMPLETE: &str = "COMPLETE";
const RANKS: &str = "RANKS";
const RANK: &str = "RANK";
const CKPT: &str = "CKPT";
const ORIG: &str = "ORIG";
const PATH: &str = "PATH";
const NAME: &str = "NAME";
/// The file's permission bits when it completed (octal): a file SCR recreates gets them.
const MODE: &str = "MODE";

fn validate(h: &Hash) -> Result<(), String> {
    check_value::<u64>(h, SIZE, "meta data")?;
    check_value::<u64>(h, RANKS, "meta data")?;
    check_value::<u64>(h, RANK, "meta data")?;
    check_value::<u64>(h, CKPT, "meta data")?;
    check_value::<u8>(h, COMPLETE, "meta data")?;
    h.crc32(CRC).map_err(|e| format!("meta data: {e}"))?;
    if let Some(t) = h.value(TYPE).map_err(|e| e.to_string())? {
        FileType::parse(t).ok_or_else(|| format!("meta data: unknown file TYPE {t:?}"))?;
    }
    Ok(())
}

impl Meta {
    /// Meta for a file the application writes: `file` is its name in cache, `orig` the name
    /// the application asked for, `dir` the directory it belongs in on the prefix.
    pub fn for_user_file(file: &str, ranks: u64, orig: &str, dir: &str, name: &str) -> Self {
        let mut meta = Meta::new();
        meta.set_filename(file);
        meta.set_filetype(FileType::User);
        meta.set_ranks(ranks);
        meta.0.set_value(ORIG, orig);
        meta.0.set_value(PATH, dir);
        meta.0.set_value(NAME, name);
        meta
    }

    /// Meta for a redundancy file (XOR or RS parity) about to be written: marked
    /// incomplete until it is.
    pub fn for_parity_file(file: &str, filetype: FileType, size: u64, ranks: u64) -> Self {
        let mut meta = Meta::new();
        meta.set_filename(file);
        meta.set_filetype(filetype);
        meta.set_size(size);
        meta.set_ranks(ranks);
        meta.set_complete(false);
        meta
    }

    pub fn filename(&self) -> Option<&str> {
        self.0.first_value(FILE)
    }
    pub fn set_filename(&mut self, name: &str) {
        self.0.set_value(FILE, name);
    }

    pub fn filetype(&self) -> Option<FileType> {
        self.0.first_value(TYPE).and_then(FileType::parse)
    }
    pub fn set_filetype(&mut self, t: FileType) {
        self.0.set_value(TYPE, t.as_str());
    }

    pub fn size(&self) -> Option<u64> {
        self.0.parsed(SIZE).ok().flatten()
    }
    pub fn set_size(&mut self, size: u64) {
        self.0.set_value(SIZE, size);
    }

    /// The permission bits recorded when the file completed.
    pub fn mode(&self) -> Option<u32> {
        self.0
            .first_value(MODE)
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .map(|m| m & 0o777)
    }
    pub fn set_mode(&mut self, mode: u32) {
        self.0.set_value(MODE, format!("{:o}", mode & 0o777));
    }

    pub fn crc32(&self) -> Option<u32> {
        self.0.crc32(CRC).ok().flatten()
    }
    pub fn set_crc32(&mut self, crc: u32) {
        self.0.set_crc32(CRC, crc);
    }

    /// True when the application marked the file valid.
    pub fn is_complete(&self) -> bool {
        self.0.parsed::<u8>(COMPLETE) == Ok(Some(1))
    }
    pub fn set_complete(&mut self, complete: bool) {
        self.0.set_value(COMPLETE, u8::from(complete));
    }

    pub fn ranks(&self) -> Option<u64> {
        self.0.parsed(RANKS).ok().flatten()
    }
    pub fn set_ranks(&mut self, ranks: u64) {
        self.0.set_value(RANKS, ranks);
    }

    pub fn rank(&self) -> Option<u64> {
        self.0.parsed(RANK).ok().flatten()
    }

    pub fn checkpoint(&self) -> Option<u64> {
        self.0.parsed(CKPT).ok().flatten()
    }

    /// The name the application passed to `SCR_Route_file`.
    pub fn orig(&self) -> Option<&str> {
        self.0.first_value(ORIG)
    }
    /// The directory the file belongs in on the prefix.
    pub fn orig_dir(&self) -> Option<&str> {
        self.0.first_value(PATH)
    }
    /// The file's name within [`Meta::orig_dir`].
    pub fn orig_name(&self) -> Option<&str> {
        self.0.first_value(NAME)
    }

    /// Checks a file against this meta: size always, CRC when both sides have one.
    pub fn verify(&self, size: u64, crc: Option<u32>) -> Result<(), String> {
        if let Some(expected) = self.size()
            && expected != size
        {
            return Err(format!(
                "size is {size} bytes, meta data records {expected}"
            ));
        }
        if let (Some(expected), Some(actual)) = (self.crc32(), crc)
            && expected != actual
        {
            return Err(format!(
                "CRC32 is {}, meta data records {}",
                crate::hash::format_crc32(actual),
                crate::hash::format_crc32(expected)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::HashView;

    #[test]
    fn user_file_meta_has_scr_keys_in_scr_order() {
        let mut m = Meta::for_user_file(
            "rank_0.ckpt",
            4,
            "ckpt.3/rank_0.ckpt",
            "/p/prefix/ckpt.3",
            "rank_0.ckpt",
        );
        m.set_size(65543);
        m.set_complete(true);
        assert_eq!(
            m.hash().keys().collect::<Vec<_>>(),
            [
                "FILE", "TYPE", "RANKS", "ORIG", "PATH", "NAME", "SIZE", "COMPLETE"
            ]
        );
        assert_eq!(m.filetype(), Some(FileType::User));
        assert!(m.is_complete());
        assert!(m.verify(65543, Some(1)).is_ok());
        assert!(m.verify(1, None).unwrap_err().contains("65543"));
        m.set_crc32(0xabc);
        assert!(m.verify(65543, Some(0xabd)).unwrap_err().contains("0xabc"));
    }

    #[test]
    fn bad_fields_are_rejected() {
        let mut h = Hash::new();
        h.set_value("SIZE", "lots");
        assert!(Meta::from_hash(h).unwrap_err().contains("SIZE"));
        let mut h = Hash::new();
        h.set_value("TYPE", "MAGIC");
        assert!(Meta::from_hash(h).unwrap_err().contains("MAGIC"));
    }
}
