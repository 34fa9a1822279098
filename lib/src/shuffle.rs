//! File shuffle: moving one rank's copy of a dataset (a hash describing it, then its files)
//! to another process over MPI, in pieces of SCR_MPI_BUF_SIZE bytes. PARTNER sends every
//! rank's copy to its right neighbour while receiving its left neighbour's; the restart
//! moves copies from the node that holds them to the rank that now owns them.
//!
//! A sender and its receiver first trade the lengths and the header, then walk the same
//! sequence of data pieces, a window of them at a time ([`pieces_in_flight`]), every send
//! nonblocking and posted before the receives, so a ring of exchanges never deadlocks. The
//! sender's files are read with plain reads ([`SourceFiles`]).

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use scr::Hash;
use scr::xor::LogicalFile;
use scr::{Error, Result};
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
pub type Placement<'a> = &'a mut dyn FnMut(&Hash) -> Result<Vec<Placed>>;

/// Where one received file goes: its path, its size, and the permission bits of the file
/// it copies (the copy is never more readable; None: the user's alone).
pub type Placed = (PathBuf, u64, Option<u32>);

/// Where a received copy goes: given the header, the paths and sizes to write (the callback
/// records them in the filemap before they are created).
pub struct Incoming<'a> {
    pub from: i32,
    pub place: Placement<'a>,
}

/// A rank's cached files read as one logical byte range, with plain reads: a file that
/// shrinks meanwhile (the application, a fault) is a read error, said once the exchange
/// is over, where a mapping would have killed the rank with SIGBUS inside a collective.
pub(crate) struct SourceFiles {
    files: LogicalFile,
    len: u64,
    /// The first read that failed; what it should have read was sent as zeros.
    error: std::cell::RefCell<Option<Error>>,
}

impl SourceFiles {
    /// Opens the files, each of the size the filemap records (another size is an error).
    pub(crate) fn open(files: &[(PathBuf, u64)]) -> Result<Self> {
        let files = LogicalFile::open(files, None)?;
        let mut len = 0;
        for (path, f, size) in files.files() {
            let actual = f.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
            if actual != size {
                return Err(Error::invalid(
                    path,
                    format!("{actual} bytes, the filemap records {size}"),
                ));
            }
            len += size;
        }
        Ok(SourceFiles {
            files,
            len,
            error: std::cell::RefCell::new(None),
        })
    }

    /// The bytes of all the files.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Reads `[offset, offset + buf.len())` across files; what lies past the last is zero.
    /// A read that fails leaves zeros and is kept for [`SourceFiles::take_error`]: the partner
    /// is still sent every byte it waits for.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) {
        if let Err(e) = self.files.read_at(offset, buf) {
            buf.fill(0);
            self.error.borrow_mut().get_or_insert(e);
        }
    }

    /// `len` bytes from `offset`, read into `scratch`.
    pub(crate) fn bytes<'a>(&self, offset: u64, len: usize, scratch: &'a mut [u8]) -> &'a [u8] {
        self.read_at(offset, &mut scratch[..len]);
        &scratch[..len]
    }

    /// The first read that failed, if one did.
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.error.borrow_mut().take()
    }
}

/// How many pieces of `buf_size` bytes travel at once: enough for 8 MiB in flight, at least
/// two. Waiting for each piece before sending the next costs a round trip per piece, which
/// on a node running more ranks than cores is a scheduler time slice each.
pub fn pieces_in_flight(buf_size: usize) -> usize {
    ((8usize << 20) / buf_size.max(1)).clamp(2, 64)
}

/// Sends and/or receives one copy; `buf_size` bounds each message. Errors on either side
/// are returned after the exchange finished, so the partner never hangs.
pub fn exchange(
    comm: &SimpleCommunicator,
    send: Option<Outgoing>,
    recv: Option<Incoming<'_>>,
    buf_size: usize,
) -> Result<()> {
    let mut failure: Option<Error> = None;
    // a sender that cannot read its files sends an empty header, which placement refuses
    let (to, header, source) = match send {
        Some(o) => match SourceFiles::open(&o.files) {
            Ok(m) => (Some(o.to), o.header.pack(), Some(m)),
            Err(e) => {
                failure = Some(e);
                (Some(o.to), Hash::new().pack(), None)
            }
        },
        None => (None, Vec::new(), None),
    };
    let send_data: u64 = source.as_ref().map_or(0, SourceFiles::len);
    let from = recv.as_ref().map(|r| r.from);
    let (header_in, recv_data) = trade_headers(comm, (to, &header, send_data), from);
    let mut sink = None;
    if let Some(r) = recv {
        match open_sink(&header_in, recv_data, r.place) {
            Ok(m) => sink = Some(m),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    let link = Link {
        comm,
        to,
        from,
        piece: buf_size.max(4096) as u64,
    };
    link.move_data(
        (source.as_ref(), send_data),
        (&mut sink, recv_data),
        &mut failure,
    );
    if let Some(e) = source.as_ref().and_then(SourceFiles::take_error) {
        failure.get_or_insert(e);
    }
    let sync_started = std::time::Instant::now();
    if let Some(s) = sink
        && let Err(e) = s.sync().and_then(|()| s.commit())
    {
        failure.get_or_insert(e);
    }
    crate::phases::add("copy: fsync", sync_started.elapsed());
    failure.map_or(Ok(()), Err)
}

/// The lengths, then the header: sends `(to, header, data length)` where there is a
/// receiver, and returns what `from` sent (its header and data length; none without one).
fn trade_headers(
    comm: &SimpleCommunicator,
    (to, header, send_data): (Option<i32>, &[u8], u64),
    from: Option<i32>,
) -> (Vec<u8>, u64) {
    let sizes_out = [header.len() as u64, send_data];
    let mut sizes_in = [0u64; 2];
    mpi::request::scope(|scope| {
        let sent = to.map(|t| {
            comm.process_at_rank(t)
                .immediate_send_with_tag(scope, &sizes_out, TAG_SIZES)
        });
        let received = from.map(|f| {
            comm.process_at_rank(f)
                .immediate_receive_into_with_tag(scope, &mut sizes_in, TAG_SIZES)
        });
        crate::comm::wait_all(received.into_iter().chain(sent));
    });
    let mut header_in = vec![0u8; sizes_in[0] as usize];
    mpi::request::scope(|scope| {
        let sent = to.map(|t| {
            comm.process_at_rank(t)
                .immediate_send_with_tag(scope, header, TAG_HEADER)
        });
        let received = from.map(|f| {
            comm.process_at_rank(f).immediate_receive_into_with_tag(
                scope,
                &mut header_in[..],
                TAG_HEADER,
            )
        });
        crate::comm::wait_all(received.into_iter().chain(sent));
    });
    (header_in, if from.is_some() { sizes_in[1] } else { 0 })
}

/// Where a received copy goes: the placement callback's files, which must sum to the
/// announced length, created afresh as temporaries.
fn open_sink(header: &[u8], length: u64, place: Placement<'_>) -> Result<LogicalFile> {
    let h = Hash::unpack(header).map_err(|e| Error::invalid("received copy", e.to_string()))?;
    let placed = place(&h)?;
    let files: Vec<(PathBuf, u64)> = placed.iter().map(|(p, s, _)| (p.clone(), *s)).collect();
    let total: u64 = files.iter().map(|(_, s)| s).sum();
    if total != length {
        return Err(Error::invalid(
            "received copy",
            format!("{length} bytes announced, the file list sums to {total}"),
        ));
    }
    // a stale file under a name in this node's own cache is replaced, as the copy being
    // received supersedes it (received files are recreated, never written into)
    for (path, _) in &files {
        scr::io::remove_if_present(path)?;
    }
    let sink = LogicalFile::create(&files, None)?;
    sink.set_modes(placed.iter().map(|(_, _, m)| *m))?;
    Ok(sink)
}

/// One side of an exchange: where this process sends and receives, in pieces of `piece`.
struct Link<'c> {
    comm: &'c SimpleCommunicator,
    to: Option<i32>,
    from: Option<i32>,
    piece: u64,
}

impl Link<'_> {
    /// Bytes of piece `step` of a stream of `total`.
    fn len(&self, total: u64, step: u64) -> usize {
        total.saturating_sub(step * self.piece).min(self.piece) as usize
    }

    /// The data: a window of pieces in flight at once, read into a buffer and sent from it,
    /// received into the window's buffers and written once the window has arrived (writing
    /// one window while the next travels measured no faster: MPI moves nothing while this
    /// rank is in the write). A failed write stops the writing, not the receiving.
    fn move_data(
        &self,
        (source, send_data): (Option<&SourceFiles>, u64),
        (sink, recv_data): (&mut Option<LogicalFile>, u64),
        failure: &mut Option<Error>,
    ) {
        let window = pieces_in_flight(self.piece as usize) as u64;
        let steps = send_data.max(recv_data).div_ceil(self.piece);
        // a window's buffer for a direction with data (a rank that only sends needs no
        // receive buffers); allocated once, as zeroing one for every window would write
        // each byte moved once more
        let window_buffer = |data: u64| {
            vec![
                0u8;
                if data > 0 {
                    (window * self.piece) as usize
                } else {
                    0
                }
            ]
        };
        let mut received = window_buffer(recv_data);
        // the window's pieces, read for sending
        let mut staging = window_buffer(send_data);
        for first in (0..steps).step_by(window as usize) {
            let pieces = first..(first + window).min(steps);
            let outgoing = crate::phases::time("copy: read", || {
                self.stage(source, send_data, pieces.clone(), &mut staging)
            });
            let staged: &[u8] = &staging;
            let mpi_started = std::time::Instant::now();
            mpi::request::scope(|scope| {
                let sends: Vec<_> = outgoing
                    .iter()
                    .filter(|(len, _)| *len > 0)
                    .map(|&(len, at)| {
                        let piece = &staged[at..at + len];
                        self.comm
                            .process_at_rank(self.to.expect("sending"))
                            .immediate_send_with_tag(scope, piece, TAG_DATA)
                    })
                    .collect();
                let receives: Vec<_> = received
                    .chunks_mut(self.piece as usize)
                    .zip(pieces.clone())
                    .filter(|(_, step)| self.len(recv_data, *step) > 0)
                    .map(|(slot, step)| {
                        self.comm
                            .process_at_rank(self.from.expect("receiving"))
                            .immediate_receive_into_with_tag(
                                scope,
                                &mut slot[..self.len(recv_data, step)],
                                TAG_DATA,
                            )
                    })
                    .collect();
                crate::comm::wait_all(receives.into_iter().chain(sends));
            });
            crate::phases::add("copy: mpi", mpi_started.elapsed());
            let write_started = std::time::Instant::now();
            for (slot, step) in received.chunks(self.piece as usize).zip(pieces) {
                let len = self.len(recv_data, step);
                if len > 0
                    && let Some(s) = sink.as_ref()
                    && let Err(e) = s.write_at(step * self.piece, &slot[..len])
                {
                    failure.get_or_insert(e);
                    *sink = None;
                }
            }
            crate::phases::add("copy: write", write_started.elapsed());
        }
    }

    /// Reads the window's pieces into `staging`, one after another, and returns each
    /// piece's (length, offset in `staging`).
    fn stage(
        &self,
        source: Option<&SourceFiles>,
        send_data: u64,
        pieces: std::ops::Range<u64>,
        staging: &mut [u8],
    ) -> Vec<(usize, usize)> {
        let mut at = 0;
        pieces
            .map(|step| {
                let len = self.len(send_data, step);
                let slot = &mut staging[at..at + len];
                match source {
                    Some(s) => s.read_at(step * self.piece, slot),
                    None => slot.fill(0),
                }
                at += len;
                (len, at - len)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_files_read_as_one_range_zero_past_the_end_and_a_short_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, empty) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("e"),
        );
        std::fs::write(&a, b"abcd").unwrap();
        std::fs::write(&empty, b"").unwrap();
        std::fs::write(&b, b"efg").unwrap();
        let m = SourceFiles::open(&[(a.clone(), 4), (empty.clone(), 0), (b.clone(), 3)]).unwrap();
        assert_eq!(m.len(), 7);
        let mut scratch = [0xffu8; 8];
        assert_eq!(m.bytes(1, 3, &mut scratch), b"bcd");
        assert_eq!(
            m.bytes(2, 4, &mut scratch),
            b"cdef",
            "gathered across the empty file"
        );
        let mut scratch = [0xffu8; 8];
        assert_eq!(
            m.bytes(5, 6, &mut scratch),
            b"fg\0\0\0\0",
            "zero past the last file"
        );
        assert!(m.take_error().is_none());
        // a file that shrinks after it was opened: zeros, and the error kept (not SIGBUS)
        std::fs::write(&b, b"").unwrap();
        let mut scratch = [0xffu8; 8];
        assert_eq!(m.bytes(3, 3, &mut scratch), b"\0\0\0");
        let err = m.take_error().expect("the short read").to_string();
        assert!(err.contains("/b"), "{err}");
        let err = SourceFiles::open(&[(a, 5)]).err().unwrap().to_string();
        assert!(err.contains("4 bytes, the filemap records 5"), "{err}");
    }

    #[test]
    fn a_window_holds_about_eight_mebibytes_and_at_least_two_pieces() {
        assert_eq!(pieces_in_flight(4 << 20), 2);
        assert_eq!(pieces_in_flight(128 << 10), 64);
        assert_eq!(pieces_in_flight(1 << 20), 8);
        assert_eq!(pieces_in_flight(64 << 20), 2);
        assert_eq!(pieces_in_flight(0), 64);
    }
}
