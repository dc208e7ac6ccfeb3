//! The trace layer's error type, its read counters, and the `--skip-bad` adapter.

use super::packet::PacketError;
use super::FlowRecord;
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong while reading a trace.
///
/// Messages name the file and where in it (packet number and byte offset, or line number), so
/// they can be shown to a user as they are. [`TraceError::is_record_error`] tells a malformed
/// record, which `--skip-bad` may skip, from an error that ends the read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened (missing, unreadable).
    #[error("cannot open trace file {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Reading an open file failed.
    #[error("cannot read trace file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The file is neither pcap nor pcapng.
    #[error(
        "{} is not a pcap or pcapng capture (it starts with {magic:#010x}); use --csv for flow lists",
        path.display()
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// Its first four bytes, big-endian.
        magic: u32,
    },
    /// The capture's link-layer type is not one this reader decodes.
    #[error(
        "{}: unsupported link type {linktype} (interface {interface}); supported: {}",
        path.display(),
        super::packet::SUPPORTED_LINKTYPES
    )]
    UnknownLinkType {
        /// The file.
        path: PathBuf,
        /// The `LINKTYPE_` number.
        linktype: u32,
        /// The pcapng interface index (0 for pcap).
        interface: u32,
    },
    /// The file ends inside a header, packet record or block.
    #[error("{} is truncated: it ends inside the {what} starting at byte offset {offset}", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// What was being read.
        what: &'static str,
        /// Byte offset at which that started.
        offset: u64,
    },
    /// The capture's framing is broken (bad header field, inconsistent block lengths), so
    /// nothing after it can be trusted.
    #[error("{} is malformed at byte offset {offset}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Byte offset of the header or block at fault.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// One packet could not be decoded; the next one can still be read.
    #[error("{}: packet {packet} (byte offset {offset}): {reason}", path.display())]
    BadPacket {
        /// The file.
        path: PathBuf,
        /// 1-based packet number, as Wireshark numbers frames.
        packet: u64,
        /// Byte offset of the packet's record or block.
        offset: u64,
        /// Why it could not be decoded.
        #[source]
        reason: PacketError,
    },
    /// A CSV file without the expected header line.
    #[error(
        "{}: line 1 must be the header `{expected}`, found `{found}`",
        path.display(),
        expected = super::csv::HEADER
    )]
    CsvHeader {
        /// The file.
        path: PathBuf,
        /// The first line as found (empty for an empty file).
        found: String,
    },
    /// One CSV line could not be parsed; the next one can still be read.
    #[error("{}: line {line}: {reason}", path.display())]
    BadCsvLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number (the header is line 1).
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A duration argument that does not parse.
    #[error("invalid duration `{input}`: {reason}")]
    InvalidDuration {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Another argument outside its domain.
    #[error("invalid {name} `{value}`: expected {expected}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
}

impl TraceError {
    /// Whether this is one malformed record (a packet or a CSV line) after which reading can go
    /// on: what `--skip-bad` counts and skips. Every other error ends the read.
    pub fn is_record_error(&self) -> bool {
        matches!(
            self,
            TraceError::BadPacket { .. } | TraceError::BadCsvLine { .. }
        )
    }
}

/// Counts kept by a trace reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Packets (pcap records, pcapng packet blocks) or CSV data lines read.
    pub read: u64,
    /// Records yielded.
    pub records: u64,
    /// Frames skipped because they carry no IP (ARP, LLDP, ...); always 0 for CSV.
    pub not_ip: u64,
    /// Malformed packets or lines reported as [`TraceError::is_record_error`] errors.
    pub malformed: u64,
}

/// `--skip-bad`: passes records and fatal errors through, counts and drops malformed records.
///
/// The first skipped error is kept so that a summary can show an example.
#[derive(Debug)]
pub struct SkipBad<I> {
    inner: I,
    skipped: u64,
    first: Option<TraceError>,
}

impl<I> SkipBad<I> {
    /// Wraps a reader.
    pub fn new(inner: I) -> Self {
        SkipBad {
            inner,
            skipped: 0,
            first: None,
        }
    }

    /// Malformed records skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The first malformed record skipped, if any.
    pub fn first_skipped(&self) -> Option<&TraceError> {
        self.first.as_ref()
    }

    /// The wrapped reader (for its own counters).
    pub fn inner(&self) -> &I {
        &self.inner
    }
}

impl<I: Iterator<Item = Result<FlowRecord, TraceError>>> Iterator for SkipBad<I> {
    type Item = Result<FlowRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next()? {
                Err(e) if e.is_record_error() => {
                    self.skipped += 1;
                    self.first.get_or_insert(e);
                }
                other => return Some(other),
            }
        }
    }
}
