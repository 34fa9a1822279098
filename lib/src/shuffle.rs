//! File shuffle: moving one rank's copy of a dataset (a hash describing it, then its files)
//! to another process over MPI, in pieces of SCR_MPI_BUF_SIZE bytes. PARTNER sends every
//! rank's copy to its right neighbour while receiving its left neighbour's; the restart
//! moves copies from the node that holds them to the rank that now owns them.
//!
//! A sender and its receiver first trade the lengths and the header, then walk the same
//! sequence of data pieces in lockstep, each piece sent nonblocking while the next is
//! received, so a ring of exchanges never deadlocks. The sender's files are mapped: a piece
//! inside one file is sent straight from its page cache, a copy fewer than read-then-send.

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use scr::Hash;
use scr::xor::LogicalFile;
use scr::{Error, Result};
use std::fs::File;
use std::path::PathBuf;

const TAG_SIZES: i32 = 7101;
const TAG_HEADER: i32 = 7102;
const TAG_DATA: i32 = 7103;

/// What one process sends: the description and the files it describes, with their sizes.
pub struct Outgoing {
    pub to: i32,
    pub header: Hash,
    pub files: Vec<(PathBuf, u64)>,
}

/// Given a received header, the files to write and their sizes.
pub type Placement<'a> = &'a mut dyn FnMut(&Hash) -> Result<Vec<(PathBuf, u64)>>;

/// Where a received copy goes: given the header, the paths and sizes to write (the callback
/// records them in the filemap before they are created).
pub struct Incoming<'a> {
    pub from: i32,
    pub place: Placement<'a>,
}

/// The sender's files seen as one logical byte range through read-only mappings (empty
/// files unmapped; a mapping outlives the file handle it was made from).
struct Mapped {
    /// (logical start, length, mapping)
    parts: Vec<(u64, u64, Option<memmap2::Mmap>)>,
}

impl Mapped {
    fn open(files: &[(PathBuf, u64)]) -> Result<Self> {
        let mut parts = Vec::with_capacity(files.len());
        let mut start = 0;
        for (path, size) in files {
            let f = File::open(path).map_err(|e| Error::io(path, "open", e))?;
            let actual = f.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
            if actual != *size {
                return Err(Error::invalid(
                    path,
                    format!("{actual} bytes, the filemap records {size}"),
                ));
            }
            // SAFETY: cached files are not changed while the job runs SCR calls
            let map = (*size > 0)
                .then(|| unsafe { memmap2::Mmap::map(&f) })
                .transpose()
                .map_err(|e| Error::io(path, "map", e))?;
            parts.push((start, *size, map));
            start += size;
        }
        Ok(Mapped { parts })
    }

    /// `[offset, offset + len)` when it lies inside one file.
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let (start, size, map) = self
            .parts
            .iter()
            .find(|(start, size, _)| offset >= *start && offset < start + size)?;
        if offset + len as u64 > start + size {
            return None;
        }
        let at = (offset - start) as usize;
        Some(&map.as_ref()?[at..at + len])
    }

    /// Copies `[offset, offset + buf.len())` across files.
    fn read_at(&self, mut offset: u64, buf: &mut [u8]) {
        let mut done = 0;
        for (start, size, map) in &self.parts {
            if done == buf.len() {
                break;
            }
            let Some(map) = map else { continue };
            if offset >= start + size || offset < *start {
                continue;
            }
            let at = (offset - start) as usize;
            let n = (*size as usize - at).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&map[at..at + n]);
            done += n;
            offset += n as u64;
        }
    }
}

/// Sends and/or receives one copy; `buf_size` bounds each message. Errors on either side
/// are returned after the exchange finished, so the partner never hangs.
pub fn exchange(
    comm: &SimpleCommunicator,
    send: Option<Outgoing>,
    recv: Option<Incoming<'_>>,
    buf_size: usize,
) -> Result<()> {
    let buf_size = buf_size.max(4096) as u64;
    let mut failure: Option<Error> = None;
    // a sender that cannot read its files sends an empty header, which placement refuses
    let (to, header, source) = match send {
        Some(o) => match Mapped::open(&o.files) {
            Ok(m) => (Some(o.to), o.header.pack(), Some(m)),
            Err(e) => {
                failure = Some(e);
                (Some(o.to), Hash::new().pack(), None)
            }
        },
        None => (None, Vec::new(), None),
    };
    let send_data: u64 = source
        .as_ref()
        .map_or(0, |m| m.parts.iter().map(|p| p.1).sum());
    let from = recv.as_ref().map(|r| r.from);

    // lengths, then the header
    let sizes_out = [header.len() as u64, send_data];
    let mut sizes_in = [0u64; 2];
    mpi::request::scope(|scope| {
        let sent = to.map(|t| {
            comm.process_at_rank(t)
                .immediate_send_with_tag(scope, &sizes_out, TAG_SIZES)
        });
        if let Some(f) = from {
            comm.process_at_rank(f)
                .receive_into_with_tag(&mut sizes_in, TAG_SIZES);
        }
        if let Some(r) = sent {
            r.wait();
        }
    });
    let mut header_in = vec![0u8; sizes_in[0] as usize];
    mpi::request::scope(|scope| {
        let sent = to.map(|t| {
            comm.process_at_rank(t)
                .immediate_send_with_tag(scope, &header[..], TAG_HEADER)
        });
        if let Some(f) = from {
            comm.process_at_rank(f)
                .receive_into_with_tag(&mut header_in[..], TAG_HEADER);
        }
        if let Some(r) = sent {
            r.wait();
        }
    });
    let recv_data = if from.is_some() { sizes_in[1] } else { 0 };
    let mut sink: Option<LogicalFile> = None;
    if let Some(r) = recv {
        let placed = Hash::unpack(&header_in)
            .map_err(|e| Error::invalid("received copy", e.to_string()))
            .and_then(|h| (r.place)(&h))
            .and_then(|files| {
                let total: u64 = files.iter().map(|(_, s)| s).sum();
                if total != recv_data {
                    return Err(Error::invalid(
                        "received copy",
                        format!("{recv_data} bytes announced, the file list sums to {total}"),
                    ));
                }
                // a stale file under a name in this node's own cache is replaced, as the
                // copy being received supersedes it (received files are recreated, never
                // written into)
                for (path, _) in &files {
                    match std::fs::remove_file(path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(path, "remove", e)),
                    }
                }
                LogicalFile::create(&files)
            });
        match placed {
            Ok(m) => sink = Some(m),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }

    // the data, piece by piece; pieces inside one file go straight from and to the mappings
    let mut out_buf = vec![0u8; buf_size as usize];
    let mut in_buf = vec![0u8; buf_size as usize];
    let steps = send_data.max(recv_data).div_ceil(buf_size);
    for step in 0..steps {
        let offset = step * buf_size;
        let send_len = send_data.saturating_sub(offset).min(buf_size) as usize;
        let recv_len = recv_data.saturating_sub(offset).min(buf_size) as usize;
        let direct_out = source.as_ref().and_then(|s| s.slice(offset, send_len));
        if send_len > 0
            && direct_out.is_none()
            && let Some(s) = &source
        {
            s.read_at(offset, &mut out_buf[..send_len]);
        }
        mpi::request::scope(|scope| {
            let sent = (send_len > 0).then(|| {
                let piece = direct_out.unwrap_or(&out_buf[..send_len]);
                comm.process_at_rank(to.expect("sending"))
                    .immediate_send_with_tag(scope, piece, TAG_DATA)
            });
            if recv_len > 0 {
                comm.process_at_rank(from.expect("receiving"))
                    .receive_into_with_tag(&mut in_buf[..recv_len], TAG_DATA);
            }
            if let Some(r) = sent {
                r.wait();
            }
        });
        // written with pwrite: receiving straight into a fresh mapping faults on every page
        if recv_len > 0
            && let Some(s) = &sink
            && let Err(e) = s.write_at(offset, &in_buf[..recv_len])
        {
            failure.get_or_insert(e);
            sink = None;
        }
    }
    if let Some(s) = sink
        && let Err(e) = s.sync().and_then(|()| s.commit())
    {
        failure.get_or_insert(e);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
