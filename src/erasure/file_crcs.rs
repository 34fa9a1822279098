//! The CRC32 of each file of a member's logical file, computed while the encode reads it.
//! The encode reads each data chunk from its start to its end, but the chunks interleaved
//! (one piece of every chunk per turn of the ring), so every part of a file that lies in
//! one chunk has a hasher of its own, and a file's CRC joins its parts in file order.

use std::collections::BTreeMap;

/// Per-file CRC32s of a logical file read chunk by chunk.
pub struct FileCrcs {
    /// Each file's range in the logical file.
    files: Vec<(u64, u64)>,
    chunk: u64,
    /// (file, chunk) → the hasher of the part of the file in that chunk.
    parts: BTreeMap<(usize, u64), crc32fast::Hasher>,
}

impl FileCrcs {
    /// For files of these sizes, concatenated, read in chunks of `chunk` bytes.
    pub fn new(sizes: &[u64], chunk: u64) -> FileCrcs {
        let mut at = 0;
        let files = sizes
            .iter()
            .map(|&s| {
                let range = (at, at + s);
                at += s;
                range
            })
            .collect();
        FileCrcs {
            files,
            chunk: chunk.max(1),
            parts: BTreeMap::new(),
        }
    }

    /// `bytes` read at logical `offset`, within one chunk and after what was read of that
    /// chunk so far (bytes past the last file are padding, and ignored).
    pub fn update(&mut self, offset: u64, bytes: &[u8]) {
        let end = offset + bytes.len() as u64;
        let chunk = offset / self.chunk;
        let first = self.files.partition_point(|&(_, e)| e <= offset);
        for (i, &(s, e)) in self.files.iter().enumerate().skip(first) {
            if s >= end {
                break;
            }
            let (from, to) = (s.max(offset), e.min(end));
            if from < to {
                let piece = &bytes[(from - offset) as usize..(to - offset) as usize];
                self.parts.entry((i, chunk)).or_default().update(piece);
            }
        }
    }

    /// Each file's CRC32, in file order (an empty file's is that of no bytes).
    pub fn finish(self) -> Vec<u32> {
        let mut crcs: Vec<crc32fast::Hasher> = vec![crc32fast::Hasher::new(); self.files.len()];
        // (file, chunk) in order: each file's parts are joined in chunk order
        for ((file, _), part) in self.parts {
            crcs[file].combine(&part);
        }
        crcs.into_iter().map(crc32fast::Hasher::finalize).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_read_interleaved_give_each_files_crc() {
        // files of 5, 0, 17 and 9 bytes; chunks of 8; pieces of 3, the chunks interleaved
        let sizes = [5u64, 0, 17, 9];
        let data: Vec<u8> = (0..31u32).map(|i| (i * 37 + 11) as u8).collect();
        let chunk = 8;
        let chunks = data.len().div_ceil(chunk);
        let mut crcs = FileCrcs::new(&sizes, chunk as u64);
        for piece_start in (0..chunk).step_by(3) {
            for c in (0..chunks).rev() {
                let from = c * chunk + piece_start;
                let to = (from + 3).min((c + 1) * chunk);
                // (a real read pads past the end with zeros)
                let mut bytes: Vec<u8> = data.get(from..to.min(data.len())).unwrap_or(&[]).to_vec();
                bytes.resize(to - from, 0);
                crcs.update(from as u64, &bytes);
            }
        }
        let mut at = 0;
        let want: Vec<u32> = sizes
            .iter()
            .map(|&s| {
                let c = crc32fast::hash(&data[at..at + s as usize]);
                at += s as usize;
                c
            })
            .collect();
        assert_eq!(crcs.finish(), want);
    }
}
