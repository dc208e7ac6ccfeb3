//! pcap and pcapng files, read with the `pcap-file` crate and decoded by [`super::decode`].
//!
//! The container crate does the framing; this reader adds what it leaves out: format detection,
//! link-type checks, the pcapng interface's timestamp resolution and offset (`if_tsresol`,
//! `if_tsoffset`; `pcap-file` 2 leaves raw units in its `Duration`), byte offsets for
//! error messages, and a classic-pcap path that accepts `orig_len > snaplen`, which real
//! captures contain and `pcap-file`'s checked conversion rejects.

use super::kept::{put_u32s, section_endianness, Kept, KeptFrame};
use super::packet::{decode_into, LinkType, PacketError};
use super::{FlowRecord, TraceError, TraceStats};
use byteorder_slice::{BigEndian, LittleEndian};
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader, RawBlock};
use pcap_file::{Endianness, PcapError, TsResolution};
use std::fs::File;
use std::io::{Chain, Cursor, ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The container format of a capture file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic libpcap format (either byte order, micro- or nanosecond timestamps).
    Pcap,
    /// pcapng.
    PcapNg,
}

/// The bytes read to detect the format, then the rest of the input, a chunk at a time.
type Input = Chunked<Chain<Cursor<Vec<u8>>, Box<dyn Read + Send>>>;

/// The most bytes a read asks for.
const READ_CHUNK: usize = 256 * 1024;

/// A reader whose reads ask for at most [`READ_CHUNK`] bytes. `pcap-file` buffers 8 MB and
/// refills its buffer with one read, so with whole-buffer reads all 8 MB become resident; with
/// chunks only the first `READ_CHUNK` bytes and a partial record do, and a record as large as
/// the buffer still parses (over several refills).
struct Chunked<R>(R);

impl<R: Read> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(READ_CHUNK);
        self.0.read(&mut buf[..n])
    }
}

/// One pcapng interface, as far as decoding needs it.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link: LinkType,
    /// `if_tsresol`: bit 7 clear means 10^-n seconds per unit, set means 2^-n.
    tsresol: u8,
    /// `if_tsoffset`, in seconds.
    tsoffset: u64,
}

impl Interface {
    /// The time of a raw pcapng timestamp, in nanoseconds since the epoch.
    fn nanos(&self, raw: u64) -> Option<u64> {
        let exp = u32::from(self.tsresol & 0x7f);
        let raw = u128::from(raw);
        let frac = if self.tsresol & 0x80 == 0 {
            if exp <= 9 {
                raw.checked_mul(10u128.pow(9 - exp))?
            } else {
                10u128.checked_pow(exp - 9).map_or(0, |d| raw / d)
            }
        } else {
            (raw * 1_000_000_000) >> exp
        };
        let total = frac.checked_add(u128::from(self.tsoffset) * 1_000_000_000)?;
        u64::try_from(total).ok()
    }
}

enum Source {
    Pcap {
        reader: PcapReader<Input>,
        link: LinkType,
        nanos_per_frac: u32,
        /// The byte order of the file's fields.
        order: Endianness,
    },
    PcapNg {
        reader: PcapNgReader<Input>,
        interfaces: Vec<Interface>,
    },
}

/// A capture file read as [`FlowRecord`]s: one item per IP packet, or a [`TraceError`].
///
/// Frames that carry no IP are counted in [`TraceStats::not_ip`] and skipped. After an error
/// that is not a [record error](TraceError::is_record_error) the iterator ends.
///
/// ```no_run
/// use chronobloom::trace::PcapTrace;
/// let trace = PcapTrace::open("data/icmp_ttl.pcap")?;
/// let records = trace.collect::<Result<Vec<_>, _>>()?;
/// # Ok::<(), chronobloom::trace::TraceError>(())
/// ```
pub struct PcapTrace {
    path: PathBuf,
    format: CaptureFormat,
    source: Source,
    /// Byte offset of the next packet record or block.
    offset: u64,
    stats: TraceStats,
    done: bool,
    /// The last packet's record, decoded in place ([`PcapTrace::next_ref`]).
    record: FlowRecord,
    /// The bytes read, as the file holds them, when kept ([`PcapTrace::keep_frames`]).
    kept: Option<Kept>,
}

impl std::fmt::Debug for PcapTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapTrace")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("offset", &self.offset)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl PcapTrace {
    /// Opens a pcap or pcapng file, telling them apart by magic number, and reads its file
    /// header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|source| TraceError::Open {
            path: path.clone(),
            source,
        })?;
        Self::from_reader(path, file)
    }

    /// Reads a capture from any reader (a file, a socket, bytes in memory), telling pcap from
    /// pcapng by magic number, and reads its file header; `path` is used in messages only.
    ///
    /// ```
    /// use chronobloom::trace::{PcapTrace, TraceError};
    /// let bytes = b"not a capture".to_vec();
    /// let e = PcapTrace::from_reader("inline.pcap", std::io::Cursor::new(bytes)).unwrap_err();
    /// assert!(matches!(e, TraceError::UnknownFormat { .. }));
    /// ```
    pub fn from_reader(
        path: impl Into<PathBuf>,
        input: impl Read + Send + 'static,
    ) -> Result<Self, TraceError> {
        let path = path.into();
        let mut input: Box<dyn Read + Send> = Box::new(input);
        let mut head = Vec::with_capacity(12);
        (&mut input)
            .take(12)
            .read_to_end(&mut head)
            .map_err(|source| TraceError::Read {
                path: path.clone(),
                source,
            })?;
        let truncated_header = |path: &Path| TraceError::Truncated {
            path: path.to_path_buf(),
            what: "file header",
            offset: 0,
        };
        let magic = match head.get(..4) {
            Some(m) => u32::from_be_bytes([m[0], m[1], m[2], m[3]]),
            None => return Err(truncated_header(&path)),
        };
        let format = match magic {
            0xA1B2_C3D4 | 0xD4C3_B2A1 | 0xA1B2_3C4D | 0x4D3C_B2A1 => CaptureFormat::Pcap,
            0x0A0D_0D0A => CaptureFormat::PcapNg,
            _ => return Err(TraceError::UnknownFormat { path, magic }),
        };
        let shb_len = match (format, head.get(4..12)) {
            (CaptureFormat::Pcap, _) => 24,
            (CaptureFormat::PcapNg, Some(h)) => {
                let len = [h[0], h[1], h[2], h[3]];
                match h[4..8] {
                    [0x1A, 0x2B, 0x3C, 0x4D] => u64::from(u32::from_be_bytes(len)),
                    _ => u64::from(u32::from_le_bytes(len)),
                }
            }
            (CaptureFormat::PcapNg, None) => return Err(truncated_header(&path)),
        };
        let input = Chunked(Cursor::new(head).chain(input));
        let header_error = |e| container_error(&path, e, "file header", 0);
        let source = match format {
            CaptureFormat::Pcap => {
                let reader = PcapReader::new(input).map_err(header_error)?;
                let header = reader.header();
                // The upper 16 bits may carry an FCS length, which does not change the type.
                let linktype = u32::from(header.datalink) & 0xffff;
                let link = LinkType::from_linktype(linktype).ok_or_else(|| {
                    TraceError::UnknownLinkType {
                        path: path.clone(),
                        linktype,
                        interface: 0,
                    }
                })?;
                let nanos_per_frac = match header.ts_resolution {
                    TsResolution::MicroSecond => 1_000,
                    TsResolution::NanoSecond => 1,
                };
                Source::Pcap {
                    reader,
                    link,
                    nanos_per_frac,
                    order: header.endianness,
                }
            }
            CaptureFormat::PcapNg => Source::PcapNg {
                reader: PcapNgReader::new(input).map_err(header_error)?,
                interfaces: Vec::new(),
            },
        };
        Ok(PcapTrace {
            path,
            format,
            source,
            offset: shb_len,
            stats: TraceStats::default(),
            done: false,
            record: FlowRecord::UNSPECIFIED,
            kept: None,
        })
    }

    /// Keeps, from here on, the bytes of each record as the file holds them and of what comes
    /// between records that is not a packet (the file header first), until the next record is
    /// read ([`PcapTrace::kept`]). Call it before the first read.
    pub fn keep_frames(&mut self) -> Result<(), TraceError> {
        let mut kept = Kept::default();
        let header = kept.before_mut();
        let written = match &self.source {
            Source::Pcap { reader, .. } => reader.header().write_to(header).map(drop),
            Source::PcapNg { reader, .. } => {
                let shb = Block::SectionHeader(reader.section().clone());
                match reader.section().endianness {
                    Endianness::Big => shb.write_to::<BigEndian, _>(header),
                    Endianness::Little => shb.write_to::<LittleEndian, _>(header),
                }
                .map(drop)
                .map_err(PcapError::IoError)
            }
        };
        written.map_err(|e| container_error(&self.path, e, "file header", 0))?;
        self.kept = Some(kept);
        Ok(())
    }

    /// Leaves out the record just read (a reader that drops it, as too late): what the capture
    /// held before it stays in the next record's [`KeptFrame::before`], so a copy of everything
    /// else still has it.
    pub fn skip_record(&mut self) {
        if let Some(kept) = self.kept.as_mut() {
            kept.unlend();
        }
    }

    /// The bytes of the last record read (the one [`PcapTrace::next_ref`] lent) and of what came
    /// before it since the record before, as the file holds them, when kept
    /// ([`PcapTrace::keep_frames`]); once the capture has ended, `before` is what follows the
    /// last record. Writing every record's `before` and the chosen records' `record`, in order,
    /// then the last `before`, gives a capture of the input's format holding the chosen records
    /// and everything that is not a record.
    ///
    /// ```no_run
    /// use chronobloom::trace::PcapTrace;
    /// let mut trace = PcapTrace::open("data/real.pcap")?;
    /// trace.keep_frames()?;
    /// let mut https = Vec::new(); // the TLS packets, and what is not a record
    /// while let Some(record) = trace.next_ref() {
    ///     let chosen = record?.dport == 443;
    ///     let kept = trace.kept().expect("kept");
    ///     https.extend_from_slice(kept.before);
    ///     if chosen {
    ///         https.extend_from_slice(kept.record);
    ///     }
    /// }
    /// https.extend_from_slice(trace.kept().expect("kept").before);
    /// # Ok::<(), chronobloom::trace::TraceError>(())
    /// ```
    pub fn kept(&self) -> Option<KeptFrame<'_>> {
        self.kept.as_ref().map(Kept::frame)
    }

    /// The detected container format.
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// Counts so far.
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next packet and returns its byte offset and fate; `Ok(None)` at the end of the
    /// file. Non-packet pcapng blocks are consumed on the way.
    fn next_packet(&mut self) -> Result<Option<(u64, Fate)>, TraceError> {
        loop {
            let at = self.offset;
            match &mut self.source {
                Source::Pcap {
                    reader,
                    link,
                    nanos_per_frac,
                    order,
                } => {
                    let raw = match reader.next_raw_packet() {
                        None => return Ok(None),
                        Some(Err(e)) => {
                            return Err(container_error(&self.path, e, "packet record", at))
                        }
                        Some(Ok(raw)) => raw,
                    };
                    self.offset += 16 + u64::from(raw.incl_len);
                    if let Some(kept) = self.kept.as_mut() {
                        kept.packet(|out| {
                            let head = [raw.ts_sec, raw.ts_frac, raw.incl_len, raw.orig_len];
                            put_u32s(out, *order, &head);
                            out.extend_from_slice(&raw.data);
                        });
                    }
                    let ts = u64::from(raw.ts_frac)
                        .checked_mul(u64::from(*nanos_per_frac))
                        .filter(|&n| n < 1_000_000_000)
                        .map(|n| u64::from(raw.ts_sec) * 1_000_000_000 + n)
                        .ok_or(PacketError::Record {
                            reason: "timestamp fraction is a second or more",
                        });
                    return Ok(Some((at, packet(*link, ts, &raw.data, &mut self.record))));
                }
                Source::PcapNg { reader, interfaces } => {
                    // A section header block parses itself whatever this says, and updates it
                    // for the blocks after it.
                    let endianness = reader.section().endianness;
                    let raw = match reader.next_raw_block() {
                        None => return Ok(None),
                        Some(Err(e)) => return Err(container_error(&self.path, e, "block", at)),
                        Some(Ok(raw)) => raw,
                    };
                    self.offset += u64::from(raw.initial_len);
                    let is_packet = matches!(raw.type_, 2 | 3 | 6);
                    if let Some(kept) = self.kept.as_mut() {
                        // a section header is in its own byte order, every other block in its
                        // section's
                        let order = match raw.type_ {
                            0x0A0D_0D0A => section_endianness(&raw.body),
                            _ => endianness,
                        };
                        let write = |out: &mut Vec<u8>| {
                            put_u32s(out, order, &[raw.type_, raw.initial_len]);
                            out.extend_from_slice(&raw.body);
                            put_u32s(out, order, &[raw.trailer_len]);
                        };
                        if is_packet {
                            kept.packet(write);
                        } else {
                            write(kept.before_mut());
                        }
                    }
                    let block = match parse_block(raw, endianness) {
                        Ok(block) => block,
                        // A packet block with a bad body: the framing held, so go on.
                        Err(e) if is_packet => {
                            let reason = match e {
                                PcapError::InvalidField(reason) => reason,
                                PcapError::Utf8Error(_) | PcapError::FromUtf8Error(_) => {
                                    "packet block option is not valid UTF-8"
                                }
                                _ => "packet block body is malformed",
                            };
                            return Ok(Some((at, Fate::Bad(PacketError::Record { reason }))));
                        }
                        Err(e) => return Err(container_error(&self.path, e, "block", at)),
                    };
                    let (interface, raw_ts, data) = match &block {
                        Block::SectionHeader(_) => {
                            interfaces.clear();
                            continue;
                        }
                        Block::InterfaceDescription(idb) => {
                            let index = u32::try_from(interfaces.len()).unwrap_or(u32::MAX);
                            interfaces.push(interface(&self.path, idb, index)?);
                            continue;
                        }
                        Block::EnhancedPacket(epb) => {
                            // pcap-file stores the raw count in units of `if_tsresol` as nanos.
                            let raw_ts =
                                u64::try_from(epb.timestamp.as_nanos()).unwrap_or(u64::MAX);
                            (epb.interface_id, raw_ts, &epb.data)
                        }
                        Block::Packet(pb) => (u32::from(pb.interface_id), pb.timestamp, &pb.data),
                        Block::SimplePacket(_) => {
                            return Err(TraceError::Malformed {
                                path: self.path.clone(),
                                offset: at,
                                reason:
                                    "simple packet blocks carry no timestamp and are not supported"
                                        .into(),
                            })
                        }
                        _ => continue,
                    };
                    let Some(iface) = interfaces.get(interface as usize) else {
                        return Err(TraceError::Malformed {
                            path: self.path.clone(),
                            offset: at,
                            reason: format!(
                                "packet refers to interface {interface}, but {} are described",
                                interfaces.len()
                            ),
                        });
                    };
                    let ts = iface.nanos(raw_ts).ok_or(PacketError::Record {
                        reason: "timestamp beyond the year 2554",
                    });
                    return Ok(Some((at, packet(iface.link, ts, data, &mut self.record))));
                }
            }
        }
    }
}

/// A packet's fate before its number and offset are attached (a record is decoded in place).
enum Fate {
    Record,
    NotIp,
    Bad(PacketError),
}

fn packet(link: LinkType, ts: Result<u64, PacketError>, data: &[u8], out: &mut FlowRecord) -> Fate {
    match ts.and_then(|ts| decode_into(link, data, ts, out)) {
        Ok(true) => Fate::Record,
        Ok(false) => Fate::NotIp,
        Err(e) => Fate::Bad(e),
    }
}

fn parse_block(raw: RawBlock<'_>, endianness: Endianness) -> Result<Block<'_>, PcapError> {
    match endianness {
        Endianness::Big => raw.try_into_block::<BigEndian>(),
        Endianness::Little => raw.try_into_block::<LittleEndian>(),
    }
}

fn interface(
    path: &Path,
    idb: &InterfaceDescriptionBlock<'_>,
    index: u32,
) -> Result<Interface, TraceError> {
    let linktype = u32::from(idb.linktype);
    let link = LinkType::from_linktype(linktype).ok_or_else(|| TraceError::UnknownLinkType {
        path: path.to_path_buf(),
        linktype,
        interface: index,
    })?;
    let mut iface = Interface {
        link,
        tsresol: 6,
        tsoffset: 0,
    };
    for option in &idb.options {
        match option {
            InterfaceDescriptionOption::IfTsResol(r) => iface.tsresol = *r,
            InterfaceDescriptionOption::IfTsOffset(o) => iface.tsoffset = *o,
            _ => {}
        }
    }
    Ok(iface)
}

/// Maps a `pcap-file` error at `offset` to ours.
fn container_error(path: &Path, e: PcapError, what: &'static str, offset: u64) -> TraceError {
    let path = path.to_path_buf();
    match e {
        PcapError::IoError(e) if e.kind() == ErrorKind::UnexpectedEof => {
            TraceError::Truncated { path, what, offset }
        }
        PcapError::IncompleteBuffer => TraceError::Truncated { path, what, offset },
        PcapError::IoError(source) => TraceError::Read { path, source },
        other => TraceError::Malformed {
            path,
            offset,
            reason: format!("{what}: {other}"),
        },
    }
}

impl PcapTrace {
    /// The next record, decoded in place and lent: what [`Iterator::next`] returns, without
    /// moving the record out (a reader that hashes or routes it reads its fields where they
    /// were written).
    pub fn next_ref(&mut self) -> Option<Result<&FlowRecord, TraceError>> {
        if let Some(kept) = self.kept.as_mut() {
            kept.start();
        }
        while !self.done {
            match self.next_packet() {
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(Some((at, fate))) => {
                    self.stats.read += 1;
                    match fate {
                        Fate::Record => {
                            self.stats.records += 1;
                            if let Some(kept) = self.kept.as_mut() {
                                kept.lend();
                            }
                            return Some(Ok(&self.record));
                        }
                        Fate::NotIp => {
                            self.stats.not_ip += 1;
                            if let Some(kept) = self.kept.as_mut() {
                                kept.pass_through();
                            }
                        }
                        Fate::Bad(reason) => {
                            self.stats.malformed += 1;
                            return Some(Err(TraceError::BadPacket {
                                path: self.path.clone(),
                                packet: self.stats.read,
                                offset: at,
                                reason,
                            }));
                        }
                    }
                }
            }
        }
        None
    }
}

impl Iterator for PcapTrace {
    type Item = Result<FlowRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.copied())
    }
}
