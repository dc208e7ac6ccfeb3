//! The deduplicated capture (`--out-pcap FILE|-`), written as the job runs: the reader keeps each
//! record's frame, as the capture holds it, until the dataflow has decided the record's epoch,
//! then writes the frames of the records that passed, in input order. Frames wait at most as long
//! as their records are in flight (`--in-flight`, `--in-flight-records`), so memory stays bounded
//! whatever the capture's length, and a pipe in gives a pipe out.

use crate::error::JobError;
use crate::stream;
use chronobloom::core::temporal::Tick;
use pcap_file::pcap::{PcapHeader, RawPcapPacket};
use pcap_file::Endianness;
use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A frame waiting for its record's decision: the record's position and tick, and the frame's
/// header fields as the capture holds them (seconds, fraction, included length — its bytes in
/// [`PcapOut::bytes`] — and original length).
struct Waiting {
    seq: u64,
    tick: Tick,
    head: [u32; 4],
}

/// The deduplicated capture being written.
pub struct PcapOut {
    path: PathBuf,
    out: BufWriter<Box<dyn Write>>,
    /// The byte order of the capture's header fields, kept in the output.
    endianness: Endianness,
    waiting: VecDeque<Waiting>,
    /// The waiting frames' bytes, back to back in input order, from `consumed` on (the bytes
    /// before are written or forgotten, and moved out once they are half the buffer).
    bytes: Vec<u8>,
    consumed: usize,
    /// Positions of passed records whose frames are not written yet, sorted at each release.
    passed: Vec<u64>,
    written: u64,
}

impl PcapOut {
    /// Creates `path` (standard output for `-`) with the input capture's file header.
    pub fn create(path: &Path, header: PcapHeader) -> Result<Self, JobError> {
        let failed = |reason: String| JobError::Output {
            flag: "out-pcap",
            path: path.to_path_buf(),
            reason,
        };
        let sink: Box<dyn Write> = if path == Path::new(stream::STDIN) {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::fs::File::create(path).map_err(|e| failed(e.to_string()))?)
        };
        let mut out = BufWriter::new(sink);
        header
            .write_to(&mut out)
            .map_err(|e| failed(e.to_string()))?;
        Ok(PcapOut {
            path: path.to_path_buf(),
            out,
            endianness: header.endianness,
            waiting: VecDeque::new(),
            bytes: Vec::new(),
            consumed: 0,
            passed: Vec::new(),
            written: 0,
        })
    }

    /// Keeps the frame of the record at position `seq` and tick `tick` until it is decided
    /// (positions increase in input order, as a capture's do).
    pub fn keep(&mut self, seq: u64, tick: Tick, frame: &RawPcapPacket<'_>) {
        self.bytes.extend_from_slice(&frame.data);
        self.waiting.push_back(Waiting {
            seq,
            tick,
            head: [frame.ts_sec, frame.ts_frac, frame.incl_len, frame.orig_len],
        });
    }

    /// Positions of records that passed (any order; their frames may still be waiting).
    pub fn passed(&mut self, seqs: impl IntoIterator<Item = u64>) {
        self.passed.extend(seqs);
    }

    /// Writes or forgets, in input order, the waiting frames whose records are decided:
    /// `decided(tick)` says that every record at `tick` is, and every position that passed
    /// among them was handed to [`PcapOut::passed`]. Stops at the first undecided one (a
    /// later tick may come before an earlier one in the capture; its frame waits for it).
    pub fn release(&mut self, decided: impl Fn(Tick) -> bool) -> Result<(), JobError> {
        // the waiting frames are in position order: walk the sorted passed positions beside them
        self.passed.sort_unstable();
        let mut next = 0;
        while let Some(w) = self.waiting.front().filter(|w| decided(w.tick)) {
            let len = w.head[2] as usize;
            while self.passed.get(next).is_some_and(|&p| p < w.seq) {
                next += 1;
            }
            if self.passed.get(next) == Some(&w.seq) {
                next += 1;
                let data = self.bytes.get(self.consumed..self.consumed + len);
                let data = data.unwrap_or_default();
                if let Err(e) = write_frame(&mut self.out, self.endianness, w.head, data) {
                    return Err(self.failed(e.to_string()));
                }
                self.written += 1;
            }
            self.consumed += len;
            self.waiting.pop_front();
        }
        self.passed.drain(..next);
        if self.consumed * 2 >= self.bytes.len() {
            self.bytes.drain(..self.consumed);
            self.consumed = 0;
        }
        Ok(())
    }

    /// Writes a frame at once (a record decided as it is read: the exact baseline).
    pub fn write(&mut self, frame: &RawPcapPacket<'_>) -> Result<(), JobError> {
        let head = [frame.ts_sec, frame.ts_frac, frame.incl_len, frame.orig_len];
        write_frame(&mut self.out, self.endianness, head, &frame.data)
            .map_err(|e| self.failed(e.to_string()))?;
        self.written += 1;
        Ok(())
    }

    /// Flushes the capture; the number of packets written.
    pub fn finish(mut self) -> Result<u64, JobError> {
        self.out.flush().map_err(|e| self.failed(e.to_string()))?;
        Ok(self.written)
    }

    fn failed(&self, reason: String) -> JobError {
        JobError::Output {
            flag: "out-pcap",
            path: self.path.clone(),
            reason,
        }
    }
}

/// Writes a packet record: its header's fields in the capture's byte order, then its bytes.
fn write_frame(
    out: &mut impl Write,
    endianness: Endianness,
    head: [u32; 4],
    data: &[u8],
) -> std::io::Result<()> {
    let mut bytes = [0u8; 16];
    for (field, to) in head.iter().zip(bytes.chunks_exact_mut(4)) {
        to.copy_from_slice(&match endianness {
            Endianness::Big => field.to_be_bytes(),
            Endianness::Little => field.to_le_bytes(),
        });
    }
    out.write_all(&bytes)?;
    out.write_all(data)
}
