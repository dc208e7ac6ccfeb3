//! The deduplicated capture (`--out-pcap FILE|-`), written as the job runs: the reader keeps each
//! record's bytes, as the capture holds them, until the dataflow has decided the record's epoch,
//! then writes those of the records that passed, in input order, with everything around them
//! that is not a record (the file header, pcapng interfaces, frames without IP): a capture of the
//! input's format.
//! Bytes wait at most as long as their records are in flight (`--in-flight`,
//! `--in-flight-records`), so memory stays bounded whatever the capture's length, and a pipe in
//! gives a pipe out.

use crate::checkpoint::OutMark;
use crate::error::JobError;
use crate::stream;
use chronobloom::core::temporal::Tick;
use chronobloom::trace::KeptFrame;
use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Bytes waiting in [`PcapOut::bytes`]: a record's (its position and tick), written if it
/// passed, or what the capture holds between records (`record` `None`), always written.
struct Waiting {
    record: Option<(u64, Tick)>,
    len: usize,
}

/// The deduplicated capture being written.
pub struct PcapOut {
    path: PathBuf,
    out: BufWriter<Box<dyn Write>>,
    waiting: VecDeque<Waiting>,
    /// The waiting bytes, back to back in input order, from `consumed` on (the bytes before are
    /// written or forgotten, and moved out once they are half the buffer).
    bytes: Vec<u8>,
    consumed: usize,
    /// Positions of passed records whose bytes are not written yet, sorted at each release.
    passed: Vec<u64>,
    written: u64,
    /// Bytes of the file so far.
    position: u64,
}

impl PcapOut {
    /// Creates `path` (standard output for `-`).
    pub fn create(path: &Path) -> Result<Self, JobError> {
        let sink: Box<dyn Write> = if path == Path::new(stream::STDIN) {
            Box::new(std::io::stdout())
        } else {
            let file = std::fs::File::create(path).map_err(|e| JobError::Output {
                flag: "out-pcap",
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            Box::new(file)
        };
        Ok(Self::create_with(path, sink))
    }

    fn create_with(path: &Path, sink: Box<dyn Write>) -> Self {
        PcapOut {
            path: path.to_path_buf(),
            out: BufWriter::new(sink),
            waiting: VecDeque::new(),
            bytes: Vec::new(),
            consumed: 0,
            passed: Vec::new(),
            written: 0,
            position: 0,
        }
    }

    /// Opens `path` again at a checkpoint's `mark`: the file cut back to the bytes written before
    /// the boundary (what a stopped run wrote after it is written again). A file shorter than
    /// the mark was not the one the checkpoint's run wrote: refused.
    pub fn resume(path: &Path, mark: OutMark) -> Result<Self, JobError> {
        let failed = |reason: String| JobError::Output {
            flag: "out-pcap",
            path: path.to_path_buf(),
            reason,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| {
                failed(format!(
                    "{e}; the checkpoint expects {} bytes in it",
                    mark.bytes
                ))
            })?;
        let len = file.metadata().map_err(|e| failed(e.to_string()))?.len();
        if len < mark.bytes {
            return Err(failed(format!(
                "{len} bytes, shorter than the {} the checkpoint's run had written: resume \
                 with that file or a new --checkpoint-dir",
                mark.bytes
            )));
        }
        let cut = file
            .set_len(mark.bytes)
            .and_then(|()| std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)));
        cut.map_err(|e| failed(e.to_string()))?;
        let mut out = Self::create_with(path, Box::new(file));
        (out.position, out.written) = (mark.bytes, mark.packets);
        Ok(out)
    }

    /// Keeps the bytes of the record at position `seq` and tick `tick` until it is decided, and
    /// those before it (positions increase in input order, as a capture's do).
    pub fn keep(&mut self, seq: u64, tick: Tick, kept: KeptFrame<'_>) {
        if !kept.before.is_empty() {
            self.bytes.extend_from_slice(kept.before);
            let len = kept.before.len();
            self.waiting.push_back(Waiting { record: None, len });
        }
        self.bytes.extend_from_slice(kept.record);
        let len = kept.record.len();
        self.waiting.push_back(Waiting {
            record: Some((seq, tick)),
            len,
        });
    }

    /// What the capture held after its last record: written after every record.
    pub fn keep_tail(&mut self, tail: &[u8]) {
        self.bytes.extend_from_slice(tail);
        self.waiting.push_back(Waiting {
            record: None,
            len: tail.len(),
        });
    }

    /// Positions of records that passed (any order; their bytes may still be waiting).
    pub fn passed(&mut self, seqs: impl IntoIterator<Item = u64>) {
        self.passed.extend(seqs);
    }

    /// Writes or forgets, in input order, the waiting bytes whose records are decided:
    /// `decided(tick)` says that every record at `tick` is, and every position that passed
    /// among them was handed to [`PcapOut::passed`]. Stops at the first undecided record (a
    /// later tick may come before an earlier one in the capture; its bytes wait for it).
    pub fn release(&mut self, decided: impl Fn(Tick) -> bool) -> Result<(), JobError> {
        // the waiting records are in position order: walk the sorted passed positions beside
        self.passed.sort_unstable();
        let mut next = 0;
        while let Some(w) = self.waiting.front() {
            let write = match w.record {
                None => true,
                Some((_, tick)) if !decided(tick) => break,
                Some((seq, _)) => {
                    while self.passed.get(next).is_some_and(|&p| p < seq) {
                        next += 1;
                    }
                    let passed = self.passed.get(next) == Some(&seq);
                    next += usize::from(passed);
                    self.written += u64::from(passed);
                    passed
                }
            };
            let end = self.consumed + w.len;
            if write {
                let data = self.bytes.get(self.consumed..end).unwrap_or_default();
                if let Err(e) = self.out.write_all(data) {
                    return Err(self.failed(e));
                }
                self.position += data.len() as u64;
            }
            self.consumed = end;
            self.waiting.pop_front();
        }
        self.passed.drain(..next);
        if self.consumed * 2 >= self.bytes.len() {
            self.bytes.drain(..self.consumed);
            self.consumed = 0;
        }
        Ok(())
    }

    /// Writes a record decided as it is read (the exact baseline): the bytes before it, and its
    /// own when it passed.
    pub fn write(&mut self, kept: KeptFrame<'_>, passed: bool) -> Result<(), JobError> {
        let record: &[u8] = if passed { kept.record } else { &[] };
        let written = self.out.write_all(kept.before);
        written
            .and_then(|()| self.out.write_all(record))
            .map_err(|e| self.failed(e))?;
        self.written += u64::from(passed);
        self.position += (kept.before.len() + record.len()) as u64;
        Ok(())
    }

    /// Writes what the capture held after its last record (the exact baseline).
    pub fn write_tail(&mut self, tail: &[u8]) -> Result<(), JobError> {
        self.out.write_all(tail).map_err(|e| self.failed(e))?;
        self.position += tail.len() as u64;
        Ok(())
    }

    /// Flushes what is written: how much of the file and how many packets (for a checkpoint).
    pub fn mark(&mut self) -> Result<OutMark, JobError> {
        self.out.flush().map_err(|e| self.failed(e))?;
        Ok(OutMark {
            bytes: self.position,
            packets: self.written,
        })
    }

    /// Flushes the capture; the number of packets written.
    pub fn finish(mut self) -> Result<u64, JobError> {
        self.out.flush().map_err(|e| self.failed(e))?;
        Ok(self.written)
    }

    fn failed(&self, e: std::io::Error) -> JobError {
        JobError::Output {
            flag: "out-pcap",
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }
}
