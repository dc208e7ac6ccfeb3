//! A capture's bytes kept as they were read ([`super::PcapTrace::keep_frames`]), so that a job can
//! write some of its records back out byte for byte: each record's packet record (pcap) or block
//! (pcapng), and what came before it that every copy keeps — the file header, pcapng section
//! headers, interface descriptions and the other blocks that are not packets, and the frames
//! that are not records (no IP: never a duplicate of anything).

use pcap_file::Endianness;

/// The bytes a capture holds for the record just read, and those before it (see the module).
///
/// Writing `before` of every record read, and `record` of those chosen, in order, then `before`
/// once the capture has ended (what follows the last record), gives a capture in the input's
/// format holding exactly the chosen records and everything that is not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptFrame<'a> {
    /// What the capture holds between the previous record and this one that is not a record
    /// (the file header before the first; blocks that are not packets; frames without IP), as
    /// the file holds it; often empty. Once the capture has ended: what follows the last record.
    pub before: &'a [u8],
    /// The record's packet record (pcap: its 16-byte header and its bytes) or packet block
    /// (pcapng), as the file holds it.
    pub record: &'a [u8],
}

/// The kept bytes of a capture being read.
#[derive(Debug, Default)]
pub(super) struct Kept {
    before: Vec<u8>,
    record: Vec<u8>,
    /// Whether `record` was lent as the last record, so the next read starts a new `before`.
    lent: bool,
}

impl Kept {
    /// A record will be read: what came before the last one is gone.
    pub(super) fn start(&mut self) {
        if std::mem::take(&mut self.lent) {
            self.before.clear();
        }
    }

    /// The capture's header, or a block that is not a packet: every copy needs it.
    pub(super) fn before_mut(&mut self) -> &mut Vec<u8> {
        &mut self.before
    }

    /// A packet's bytes, written by `write` (a frame that turns out not to be a record is
    /// forgotten at the next).
    pub(super) fn packet(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        self.record.clear();
        write(&mut self.record);
    }

    /// The packet just kept is the record lent.
    pub(super) fn lend(&mut self) {
        self.lent = true;
    }

    /// The record lent is left out by its reader: what came before it stays for the next.
    pub(super) fn unlend(&mut self) {
        self.lent = false;
    }

    /// The packet just kept is not a record (no IP): it goes with what every copy keeps.
    pub(super) fn pass_through(&mut self) {
        self.before.extend_from_slice(&self.record);
    }

    /// The last record's bytes and those before it.
    pub(super) fn frame(&self) -> KeptFrame<'_> {
        KeptFrame {
            before: &self.before,
            record: &self.record,
        }
    }
}

/// Appends `fields` to `out` in `endianness`.
pub(super) fn put_u32s(out: &mut Vec<u8>, endianness: Endianness, fields: &[u32]) {
    for &f in fields {
        out.extend_from_slice(&match endianness {
            Endianness::Big => f.to_be_bytes(),
            Endianness::Little => f.to_le_bytes(),
        });
    }
}

/// The byte order of a pcapng section, from its header block's body (the byte-order magic).
pub(super) fn section_endianness(shb_body: &[u8]) -> Endianness {
    match shb_body.get(..4) {
        Some([0x1A, 0x2B, 0x3C, 0x4D]) => Endianness::Big,
        _ => Endianness::Little,
    }
}
