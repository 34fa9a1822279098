//! The packed hash and the hash file format.
//!
//! Packed hash: `u32 count` then `count × (key bytes, NUL, packed child)`, big-endian.
//! Hash file: 20-byte header (magic, type 1, version 1, u64 total size, u32 flags), the
//! packed hash, and a zlib CRC32 of everything before it when flag bit 0 is set.
//! Decoding never sizes an allocation by a number from the input beyond a small bound: a
//! level claiming many elements grows as they arrive.

use super::{Hash, Level};

pub const FILE_MAGIC: u32 = 0x951f_c3f5;
pub const FILE_TYPE_HASH: u16 = 1;
pub const FILE_VERSION_HASH_1: u16 = 1;
pub const FILE_HEADER_SIZE: usize = 20;
pub const FILE_FLAG_CRC32: u32 = 0x1;

/// Deepest nesting a decoder accepts. SCR's deepest files (filemaps) nest 8 levels; the
/// bound keeps a hostile file from exhausting the stack.
pub const MAX_DEPTH: usize = 256;

/// Smallest possible packed element: an empty key (one NUL) and an empty child (a count).
const MIN_ELEMENT_SIZE: usize = 1 + 4;

/// Where and why a packed hash or hash file could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} (at byte {offset})")]
pub struct DecodeError {
    pub offset: usize,
    pub problem: DecodeProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeProblem {
    #[error("file is empty")]
    Empty,
    #[error("file is {len} bytes, shorter than the 20-byte header: truncated")]
    ShortHeader { len: usize },
    #[error("bad magic number {found:#010x} (expected 0x951fc3f5): not an SCR hash file")]
    BadMagic { found: u32 },
    #[error("file type {found} is not a hash file (expected 1)")]
    BadType { found: u16 },
    #[error("hash file version {found} is not supported (expected 1)")]
    BadVersion { found: u16 },
    #[error("header records a size of {recorded} bytes, which cannot hold a header{crc}")]
    SizeTooSmall { recorded: u64, crc: &'static str },
    #[error("header records {recorded} bytes but only {available} are present: truncated")]
    Truncated { recorded: u64, available: usize },
    #[error(
        "CRC32 mismatch: stored {stored:#010x}, computed {computed:#010x}: the file is corrupt"
    )]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("element count is cut off: truncated")]
    CountCutOff,
    #[error("element count {count} cannot fit in the {remaining} bytes left")]
    CountTooLarge { count: u32, remaining: usize },
    #[error("key has no terminating NUL byte")]
    KeyWithoutNul,
    #[error("key is not valid UTF-8")]
    KeyNotUtf8,
    #[error("nesting is deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("{extra} bytes follow the packed hash inside the recorded size")]
    TrailingBytes { extra: usize },
}

impl DecodeError {
    fn at(offset: usize, problem: DecodeProblem) -> Self {
        DecodeError { offset, problem }
    }
}

impl Hash {
    /// Bytes [`Hash::pack`] will produce.
    pub fn pack_size(&self) -> usize {
        match &self.level {
            Level::Empty => 4,
            Level::Value(key) => 4 + key.len() + 1 + 4,
            Level::Many { elems, .. } => {
                4 + elems
                    .iter()
                    .map(|(k, v)| k.len() + 1 + v.pack_size())
                    .sum::<usize>()
            }
        }
    }

    pub fn pack(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.pack_into(&mut out);
        out
    }

    pub fn pack_into(&self, out: &mut Vec<u8>) {
        match &self.level {
            Level::Empty => out.extend_from_slice(&0u32.to_be_bytes()),
            Level::Value(key) => {
                out.extend_from_slice(&1u32.to_be_bytes());
                push_key(out, key);
                out.extend_from_slice(&0u32.to_be_bytes());
            }
            Level::Many { elems, .. } => {
                out.extend_from_slice(&(elems.len() as u32).to_be_bytes());
                for (key, child) in elems {
                    push_key(out, key);
                    child.pack_into(out);
                }
            }
        }
    }

    /// Decodes a packed hash that fills `buf` exactly.
    pub fn unpack(buf: &[u8]) -> Result<Hash, DecodeError> {
        let mut reader = Reader { buf, pos: 0 };
        let hash = reader.hash(0)?;
        if reader.pos != buf.len() {
            return Err(DecodeError::at(
                reader.pos,
                DecodeProblem::TrailingBytes {
                    extra: buf.len() - reader.pos,
                },
            ));
        }
        Ok(hash)
    }

    /// Encodes a complete hash file (header, packed hash, CRC32 trailer).
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&FILE_MAGIC.to_be_bytes());
        out.extend_from_slice(&FILE_TYPE_HASH.to_be_bytes());
        out.extend_from_slice(&FILE_VERSION_HASH_1.to_be_bytes());
        out.extend_from_slice(&[0; 8]); // total size, known once packed
        out.extend_from_slice(&FILE_FLAG_CRC32.to_be_bytes());
        self.pack_into(&mut out);
        let total = out.len() as u64 + 4;
        out[8..16].copy_from_slice(&total.to_be_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes a hash file from the start of `bytes`. Bytes after the size the header
    /// records are left alone (an XOR file carries its parity chunk there); returns the
    /// hash and that recorded size.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<(Hash, usize), DecodeError> {
        let recorded = check_header(bytes)?;
        let has_crc = read_u32(bytes, 16) & FILE_FLAG_CRC32 != 0;
        let body_end = if has_crc {
            let body_end = recorded - 4;
            let stored = read_u32(bytes, body_end);
            let computed = crc32fast::hash(&bytes[..body_end]);
            if stored != computed {
                return Err(DecodeError::at(
                    body_end,
                    DecodeProblem::CrcMismatch { stored, computed },
                ));
            }
            body_end
        } else {
            recorded
        };
        let hash = Hash::unpack(&bytes[FILE_HEADER_SIZE..body_end])
            .map_err(|e| DecodeError::at(e.offset + FILE_HEADER_SIZE, e.problem))?;
        Ok((hash, recorded))
    }
}

/// Validates the 20-byte header against the bytes present and returns the recorded size.
/// `bytes` may be just the header when `available` says how long the file is.
pub fn check_header_len(header: &[u8], available: usize) -> Result<usize, DecodeError> {
    if available == 0 {
        return Err(DecodeError::at(0, DecodeProblem::Empty));
    }
    if header.len() < FILE_HEADER_SIZE || available < FILE_HEADER_SIZE {
        return Err(DecodeError::at(
            0,
            DecodeProblem::ShortHeader {
                len: available.min(header.len()),
            },
        ));
    }
    let magic = read_u32(header, 0);
    if magic != FILE_MAGIC {
        return Err(DecodeError::at(0, DecodeProblem::BadMagic { found: magic }));
    }
    let kind = u16::from_be_bytes([header[4], header[5]]);
    if kind != FILE_TYPE_HASH {
        return Err(DecodeError::at(4, DecodeProblem::BadType { found: kind }));
    }
    let version = u16::from_be_bytes([header[6], header[7]]);
    if version != FILE_VERSION_HASH_1 {
        return Err(DecodeError::at(
            6,
            DecodeProblem::BadVersion { found: version },
        ));
    }
    let recorded = u64::from_be_bytes(header[8..16].try_into().expect("8 bytes"));
    let has_crc = read_u32(header, 16) & FILE_FLAG_CRC32 != 0;
    let minimum = FILE_HEADER_SIZE as u64 + 4 + if has_crc { 4 } else { 0 };
    if recorded < minimum {
        let crc = if has_crc {
            ", a hash and a CRC"
        } else {
            " and a hash"
        };
        return Err(DecodeError::at(
            8,
            DecodeProblem::SizeTooSmall { recorded, crc },
        ));
    }
    if recorded > available as u64 {
        return Err(DecodeError::at(
            8,
            DecodeProblem::Truncated {
                recorded,
                available,
            },
        ));
    }
    Ok(recorded as usize)
}

fn check_header(bytes: &[u8]) -> Result<usize, DecodeError> {
    check_header_len(bytes, bytes.len())
}

/// A key as packed: its bytes and a NUL.
fn push_key(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(key.as_bytes());
    out.push(0);
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn hash(&mut self, depth: usize) -> Result<Hash, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::at(self.pos, DecodeProblem::TooDeep));
        }
        let remaining = self.buf.len() - self.pos;
        if remaining < 4 {
            return Err(DecodeError::at(self.pos, DecodeProblem::CountCutOff));
        }
        let count = read_u32(self.buf, self.pos);
        if count as usize > (remaining - 4) / MIN_ELEMENT_SIZE {
            return Err(DecodeError::at(
                self.pos,
                DecodeProblem::CountTooLarge {
                    count,
                    remaining: remaining - 4,
                },
            ));
        }
        self.pos += 4;
        if count == 1 {
            let key = self.key()?;
            let child = self.hash(depth + 1)?;
            return Ok(Hash::one(super::Key::from(key), child));
        }
        let mut level = super::LevelBuilder::with_capacity(count as usize);
        for _ in 0..count {
            let key = self.key()?;
            let child = self.hash(depth + 1)?;
            level.insert_or_merge(key, child);
        }
        Ok(level.finish())
    }

    fn key(&mut self) -> Result<&'a str, DecodeError> {
        let start = self.pos;
        let buf: &'a [u8] = self.buf;
        let rest = &buf[start..];
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| DecodeError::at(start, DecodeProblem::KeyWithoutNul))?;
        let key = std::str::from_utf8(&rest[..nul])
            .map_err(|_| DecodeError::at(start, DecodeProblem::KeyNotUtf8))?;
        self.pos += nul + 1;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Hash {
        let mut h = Hash::new();
        h.set_kv("DATASET", 24).set_value("CKPT", 1);
        let loc = h.set_kv("DATASET", 24).child("LOCATION");
        loc.child("PFS");
        loc.child("CACHE");
        h
    }

    #[test]
    fn pack_unpack_round_trip() {
        let h = sample();
        let packed = h.pack();
        assert_eq!(packed.len(), h.pack_size());
        assert_eq!(Hash::unpack(&packed).unwrap(), h);
        let file = h.to_file_bytes();
        let (back, size) = Hash::from_file_bytes(&file).unwrap();
        assert_eq!((back, size), (h, file.len()));
    }

    #[test]
    fn empty_hash_packs_as_a_zero_count() {
        assert_eq!(Hash::new().pack(), [0, 0, 0, 0]);
    }

    fn problem(bytes: &[u8]) -> DecodeProblem {
        Hash::from_file_bytes(bytes).unwrap_err().problem
    }

    #[test]
    fn hostile_files_are_errors() {
        let good = sample().to_file_bytes();
        assert_eq!(problem(&[]), DecodeProblem::Empty);
        assert!(matches!(
            problem(&good[..10]),
            DecodeProblem::ShortHeader { len: 10 }
        ));
        assert!(matches!(
            problem(&good[..good.len() - 1]),
            DecodeProblem::Truncated { .. }
        ));
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert!(matches!(problem(&bad), DecodeProblem::BadMagic { .. }));
        let mut bad = good.clone();
        bad[5] = 2;
        assert!(matches!(problem(&bad), DecodeProblem::BadType { found: 2 }));
        let mut bad = good.clone();
        bad[7] = 9;
        assert!(matches!(
            problem(&bad),
            DecodeProblem::BadVersion { found: 9 }
        ));
        let mut bad = good.clone();
        bad[30] ^= 0x40;
        assert!(matches!(problem(&bad), DecodeProblem::CrcMismatch { .. }));
        let mut bad = good.clone();
        bad[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(problem(&bad), DecodeProblem::Truncated { .. }));
        let mut bad = good.clone();
        bad[8..16].copy_from_slice(&3u64.to_be_bytes());
        assert!(matches!(problem(&bad), DecodeProblem::SizeTooSmall { .. }));
    }

    #[test]
    fn hostile_packed_hashes_are_errors() {
        // count far larger than the data
        assert!(matches!(
            Hash::unpack(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0])
                .unwrap_err()
                .problem,
            DecodeProblem::CountTooLarge { .. }
        ));
        // key without NUL
        assert_eq!(
            Hash::unpack(&[0, 0, 0, 1, b'A', b'B', b'C', b'D', b'E'])
                .unwrap_err()
                .problem,
            DecodeProblem::KeyWithoutNul
        );
        // invalid UTF-8 key
        assert_eq!(
            Hash::unpack(&[0, 0, 0, 1, 0xff, 0, 0, 0, 0, 0])
                .unwrap_err()
                .problem,
            DecodeProblem::KeyNotUtf8
        );
        // cut-off child count
        assert_eq!(
            Hash::unpack(&[0, 0, 0, 1, b'A', 0, 0, 0])
                .unwrap_err()
                .problem,
            DecodeProblem::CountTooLarge {
                count: 1,
                remaining: 4
            }
        );
        // trailing bytes
        assert!(matches!(
            Hash::unpack(&[0, 0, 0, 0, 7]).unwrap_err().problem,
            DecodeProblem::TrailingBytes { extra: 1 }
        ));
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        let mut packed = Vec::new();
        for _ in 0..100_000 {
            packed.extend_from_slice(&[0, 0, 0, 1, b'k', 0]);
        }
        packed.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(
            Hash::unpack(&packed).unwrap_err().problem,
            DecodeProblem::TooDeep
        );
    }

    #[test]
    fn repeated_keys_merge_like_scr() {
        // {A:{x}, A:{y}} reads as {A:{x,y}}
        let packed = [
            0, 0, 0, 2, b'A', 0, 0, 0, 0, 1, b'x', 0, 0, 0, 0, 0, b'A', 0, 0, 0, 0, 1, b'y', 0, 0,
            0, 0, 0,
        ];
        let h = Hash::unpack(&packed).unwrap();
        assert_eq!(h.get("A").unwrap().keys().collect::<Vec<_>>(), ["x", "y"]);
    }
}
