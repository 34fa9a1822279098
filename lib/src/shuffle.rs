//! File shuffle: moving one rank's copy of a dataset (a hash describing it, then its files)
//! to another process over MPI, in pieces of SCR_MPI_BUF_SIZE bytes. PARTNER sends every
//! rank's copy to its right neighbour while receiving its left neighbour's; the restart
//! moves copies from the node that holds them to the rank that now owns them.
//!
//! A sender and its receiver walk the same sequence of pieces in lockstep (both know both
//! lengths after the first message), each piece sent nonblocking while the next is
//! received, so a ring of exchanges never deadlocks and reading, sending and writing overlap.

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use scr::Hash;
use scr::xor::LogicalFile;
use scr::{Error, Result};
use std::path::PathBuf;

const TAG_SIZES: i32 = 7101;
const TAG_DATA: i32 = 7102;

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

/// A byte stream of a packed header followed by a logical file.
struct Stream {
    header: Vec<u8>,
    data: Option<LogicalFile>,
    total: u64,
}

impl Stream {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let h = self.header.len() as u64;
        let mut done = 0usize;
        if offset < h {
            let n = ((h - offset) as usize).min(buf.len());
            buf[..n].copy_from_slice(&self.header[offset as usize..offset as usize + n]);
            done = n;
        }
        if done < buf.len() {
            let data = self.data.as_ref().expect("the sender opened its files");
            data.read_at(offset + done as u64 - h, &mut buf[done..])?;
        }
        Ok(())
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
    // the sender's header and total length
    let mut failure: Option<Error> = None;
    let out = match send {
        Some(o) => {
            let header = o.header.pack();
            let data_len: u64 = o.files.iter().map(|(_, s)| s).sum();
            let data = match LogicalFile::open(&o.files) {
                Ok(d) => Some(d),
                Err(e) => {
                    failure = Some(e);
                    None
                }
            };
            // a sender that cannot read its files sends an empty header instead, which the
            // receiver's placement refuses
            let header = if data.is_some() {
                header
            } else {
                Hash::new().pack()
            };
            let total = header.len() as u64 + if data.is_some() { data_len } else { 0 };
            Some((
                o.to,
                Stream {
                    header,
                    data,
                    total,
                },
            ))
        }
        None => None,
    };
    let mut sizes_in = [0u64; 2];
    let sizes_out = out
        .as_ref()
        .map(|(_, s)| [s.header.len() as u64, s.total])
        .unwrap_or([0, 0]);
    mpi::request::scope(|scope| {
        let req = out.as_ref().map(|(to, _)| {
            comm.process_at_rank(*to)
                .immediate_send_with_tag(scope, &sizes_out, TAG_SIZES)
        });
        if let Some(r) = &recv {
            comm.process_at_rank(r.from)
                .receive_into_with_tag(&mut sizes_in, TAG_SIZES);
        }
        if let Some(req) = req {
            req.wait();
        }
    });
    let send_total = out.as_ref().map_or(0, |(_, s)| s.total);
    let recv_total = if recv.is_some() { sizes_in[1] } else { 0 };
    let header_len = sizes_in[0];
    let steps = send_total.max(recv_total).div_ceil(buf_size);

    let mut recv_header = Vec::with_capacity(header_len as usize);
    let mut sink: Option<LogicalFile> = None;
    let mut sink_failed = false;
    let mut out_buf = vec![0u8; buf_size as usize];
    let mut in_buf = vec![0u8; buf_size as usize];
    let mut recv = recv;
    for step in 0..steps {
        let offset = step * buf_size;
        let send_len = send_total.saturating_sub(offset).min(buf_size) as usize;
        let recv_len = recv_total.saturating_sub(offset).min(buf_size) as usize;
        if send_len > 0 {
            let (_, stream) = out.as_ref().expect("sending");
            if let Err(e) = stream.read(offset, &mut out_buf[..send_len]) {
                failure.get_or_insert(e);
            }
        }
        mpi::request::scope(|scope| {
            let req = (send_len > 0).then(|| {
                let (to, _) = out.as_ref().expect("sending");
                comm.process_at_rank(*to).immediate_send_with_tag(
                    scope,
                    &out_buf[..send_len],
                    TAG_DATA,
                )
            });
            if recv_len > 0 {
                let from = recv.as_ref().expect("receiving").from;
                comm.process_at_rank(from)
                    .receive_into_with_tag(&mut in_buf[..recv_len], TAG_DATA);
            }
            if let Some(req) = req {
                req.wait();
            }
        });
        if recv_len == 0 || sink_failed {
            continue;
        }
        // the received piece: header bytes first, then file data
        let mut piece = &in_buf[..recv_len];
        let mut at = offset;
        if at < header_len {
            let n = ((header_len - at) as usize).min(piece.len());
            recv_header.extend_from_slice(&piece[..n]);
            piece = &piece[n..];
            at += n as u64;
        }
        if sink.is_none() && recv_header.len() as u64 == header_len {
            let placed = Hash::unpack(&recv_header)
                .map_err(|e| Error::invalid("received copy", e.to_string()))
                .and_then(|h| (recv.as_mut().expect("receiving").place)(&h))
                .and_then(|files| LogicalFile::create(&files));
            match placed {
                Ok(f) => sink = Some(f),
                Err(e) => {
                    failure.get_or_insert(e);
                    sink_failed = true;
                    continue;
                }
            }
        }
        if !piece.is_empty()
            && let Some(f) = &sink
            && let Err(e) = f.write_at(at - header_len, piece)
        {
            failure.get_or_insert(e);
            sink_failed = true;
        }
    }
    if let Some(f) = &sink
        && let Err(e) = f.sync()
    {
        failure.get_or_insert(e);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
