//! Format-aware edits: the header fields of pcap and pcapng where a reader can go wrong (magic,
//! link type, snap length, record and block lengths, interface options) and CSV fields replaced
//! by the values a parser must refuse.

use super::mutate::{blind, write_word, WORDS};
use super::rng::Rng;

const PCAP_MAGICS: [u32; 4] = [0xa1b2_c3d4, 0xd4c3_b2a1, 0xa1b2_3c4d, 0x4d3c_b2a1];
const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;
const LINKTYPES: [u64; 12] = [
    0,
    1,
    12,
    14,
    101,
    113,
    228,
    229,
    276,
    0x1000_0001,
    0xffff,
    0xffff_ffff,
];
const LENGTHS: [u64; 14] = [
    0,
    1,
    4,
    12,
    13,
    14,
    20,
    65_535,
    65_536,
    8_000_000,
    0x7fff_ffff,
    0xffff_fff0,
    0xffff_fffc,
    0xffff_ffff,
];

/// Reads a `u32` at `at` in the given byte order, if the input reaches that far.
fn read_u32(input: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let b: [u8; 4] = input.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// A value for a length field: an interesting one, or the current one nudged.
fn length(rng: &mut Rng, current: Option<u32>) -> u64 {
    match (rng.below(3), current) {
        (0, Some(c)) => {
            u64::from(c)
                .wrapping_add(rng.below(9) as u64)
                .wrapping_sub(4)
                & 0xffff_ffff
        }
        (1, _) => *rng.pick(&WORDS),
        _ => *rng.pick(&LENGTHS),
    }
}

// ------------------------------------------------------------------------------------ pcap

/// One edit of a classic pcap file: a global header field, a record header field, or a byte of
/// a frame's link or IP header.
pub fn pcap(rng: &mut Rng, input: &mut Vec<u8>) {
    let big = matches!(input.first(), Some(0xa1));
    let records = pcap_records(input, big);
    match rng.below(8) {
        0 => {
            let magic = if rng.one_in(5) {
                PCAPNG_MAGIC
            } else {
                *rng.pick(&PCAP_MAGICS)
            };
            write_word(input, 0, u64::from(magic), 4, true);
        }
        1 => write_word(input, 4 + 2 * rng.below(2), *rng.pick(&WORDS), 2, big),
        2 => {
            let v = length(rng, read_u32(input, 16, big));
            write_word(input, 16, v, 4, big);
        }
        3 => write_word(input, 20, *rng.pick(&LINKTYPES), 4, big),
        4 | 5 if !records.is_empty() => {
            let at = *rng.pick(&records);
            let field = rng.below(4);
            let v = match field {
                1 => *rng.pick(&[999_999, 1_000_000, 999_999_999, 1_000_000_000, 0xffff_ffff]),
                _ => length(rng, read_u32(input, at + 4 * field, big)),
            };
            write_word(input, at + 4 * field, v, 4, big);
        }
        6 if !records.is_empty() => {
            let at = *rng.pick(&records) + 16;
            frame(rng, input, at);
        }
        _ => blind(rng, input, &[]),
    }
}

/// Offsets of the record headers that the incl_len fields chain together.
fn pcap_records(input: &[u8], big: bool) -> Vec<usize> {
    let mut at = 24;
    let mut found = Vec::new();
    while at + 16 <= input.len() && found.len() < 4096 {
        found.push(at);
        let Some(incl) = read_u32(input, at + 8, big) else {
            break;
        };
        at = at + 16 + incl as usize;
    }
    found
}

/// One edit of a frame starting at `at`, read as Ethernet: the ethertype, a VLAN tag, the IP
/// version and header length, or the transport protocol.
fn frame(rng: &mut Rng, input: &mut [u8], at: usize) {
    match rng.below(4) {
        0 => {
            let ethertype = *rng.pick(&[0x0800, 0x86dd, 0x8100, 0x88a8, 0x9100, 0x0806, 0]);
            write_word(input, at + 12, ethertype, 2, true);
        }
        1 => {
            let v = *rng.pick(&[0x45, 0x46, 0x4f, 0x40, 0x44, 0x60, 0x00, 0xff]);
            write_word(input, at + 14, v, 1, true);
        }
        2 => write_word(input, at + 23, *rng.pick(&[0, 1, 6, 17, 58, 255]), 1, true),
        _ => {
            let v = *rng.pick(&[0, 6, 17, 44, 58, 59, 0xff]);
            write_word(input, at + 20, v, 1, true);
        }
    }
}

// ---------------------------------------------------------------------------------- pcapng

/// Block types worth trying: section header, interface description, the packet blocks, name
/// resolution, statistics, and some no reader knows.
const BLOCK_TYPES: [u64; 11] = [
    PCAPNG_MAGIC as u64,
    1,
    2,
    3,
    4,
    5,
    6,
    0x0000_0bad,
    0x4000_0000,
    0x8000_0001,
    0,
];

/// One edit of a pcapng file: a block's type or lengths, an interface's link type or options,
/// a packet block's interface, timestamp or lengths, the byte-order magic, or whole blocks
/// duplicated, removed or swapped.
pub fn pcapng(rng: &mut Rng, input: &mut Vec<u8>) {
    let big = input.get(8..12) == Some(&[0x1a, 0x2b, 0x3c, 0x4d]);
    let blocks = pcapng_blocks(input, big);
    if blocks.is_empty() {
        return blind(rng, input, &[]);
    }
    let &(at, len) = rng.pick(&blocks);
    let kind = read_u32(input, at, big).unwrap_or(0);
    match rng.below(10) {
        0 => write_word(input, at, *rng.pick(&BLOCK_TYPES), 4, big),
        1 => {
            let v = length(rng, Some(len as u32));
            write_word(input, at + 4, v, 4, big);
        }
        2 if len >= 12 => {
            let v = length(rng, Some(len as u32));
            write_word(input, at + len - 4, v, 4, big);
        }
        3 | 4 => block_body(rng, input, at, len, kind, big),
        5 => {
            let magic = if rng.one_in(2) {
                0x1a2b_3c4d
            } else {
                0x4d3c_2b1a
            };
            write_word(input, 8, magic, 4, true);
        }
        6 => {
            let block = input[at..at + len].to_vec();
            let &(to, _) = rng.pick(&blocks);
            input.splice(to..to, block);
        }
        7 => {
            input.drain(at..at + len);
        }
        8 => {
            let &(other, other_len) = rng.pick(&blocks);
            if other > at + len {
                let second = input[other..other + other_len].to_vec();
                let first = input[at..at + len].to_vec();
                input.splice(other..other + other_len, first);
                input.splice(at..at + len, second);
            }
        }
        _ => blind(rng, input, &[]),
    }
}

/// Offsets and lengths of the blocks the length fields chain together (the last one may run
/// past the end).
fn pcapng_blocks(input: &[u8], big: bool) -> Vec<(usize, usize)> {
    let mut at = 0;
    let mut found = Vec::new();
    while at + 12 <= input.len() && found.len() < 4096 {
        let Some(len) = read_u32(input, at + 4, big) else {
            break;
        };
        let len = (len as usize).min(input.len() - at);
        if len < 12 {
            break;
        }
        found.push((at, len));
        at += len;
    }
    found
}

/// One edit inside a block's body, by block type.
fn block_body(rng: &mut Rng, input: &mut [u8], at: usize, len: usize, kind: u32, big: bool) {
    let body = at + 8;
    match kind {
        PCAPNG_MAGIC => {
            // version, then the section length
            if rng.one_in(2) {
                write_word(input, body + 4, *rng.pick(&WORDS), 2, big);
            } else {
                write_word(input, body + 8, *rng.pick(&WORDS), 8, big);
            }
        }
        1 => match rng.below(3) {
            0 => write_word(input, body, *rng.pick(&LINKTYPES), 2, big),
            1 => write_word(input, body + 4, *rng.pick(&LENGTHS), 4, big),
            _ => interface_option(rng, input, body + 8, at + len.saturating_sub(4), big),
        },
        6 => {
            let field = rng.below(5);
            let v = match field {
                0 => *rng.pick(&[0, 1, 2, 0xffff, 0xffff_ffff]),
                1 | 2 => *rng.pick(&WORDS),
                _ => length(rng, read_u32(input, body + 4 * field, big)),
            };
            write_word(input, body + 4 * field, v, 4, big);
        }
        _ => {
            let at = body + rng.below(len.saturating_sub(8).max(1));
            write_word(input, at, *rng.pick(&WORDS), 4, big);
        }
    }
}

/// Rewrites the first option of an interface description as `if_tsresol` or `if_tsoffset`
/// with an edge value, or gives it a bad length.
fn interface_option(rng: &mut Rng, input: &mut [u8], at: usize, end: usize, big: bool) {
    if at + 4 > end {
        return;
    }
    match rng.below(3) {
        0 => {
            write_word(input, at, 9, 2, big);
            write_word(input, at + 2, 1, 2, big);
            let r = *rng.pick(&[0, 3, 6, 9, 10, 19, 20, 63, 64, 0x7f, 0x80, 0x8a, 0xbf, 0xff]);
            write_word(input, at + 4, r, 1, big);
        }
        1 => {
            write_word(input, at, 14, 2, big);
            write_word(input, at + 2, 8, 2, big);
            write_word(input, at + 4, *rng.pick(&WORDS), 8, big);
        }
        _ => write_word(input, at + 2, *rng.pick(&[0, 3, 7, 0xfff0, 0xffff]), 2, big),
    }
}

// ------------------------------------------------------------------------------------- CSV

/// Field values a CSV parser must refuse or read exactly.
const CSV_VALUES: [&str; 30] = [
    "",
    " ",
    "-1",
    "-0",
    "+1",
    "0",
    "255",
    "256",
    "65535",
    "65536",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "18446744073.709551615",
    "18446744074",
    "1.",
    ".5",
    "1.999999999",
    "1.0000000001",
    "1e9",
    "NaN",
    "0x10",
    "::",
    "::ffff:10.0.0.1",
    "10.0.0.1%eth0",
    "[::1]",
    "255.255.255.255",
    "1.2.3",
    "\u{feff}1",
    "\u{0661}",
];

/// Bytes that are not UTF-8 (a lone continuation byte, an overlong form, a surrogate).
const NOT_UTF8: [&[u8]; 4] = [b"\xff", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80"];

/// One edit of a CSV flow list: a field replaced, swapped, dropped or added, bytes that are not
/// UTF-8, a very long field, lines duplicated or dropped, other line ends, a byte-order mark.
pub fn csv(rng: &mut Rng, input: &mut Vec<u8>) {
    let mut lines: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    // Mostly data lines; the header now and then.
    let i = if lines.len() > 1 && !rng.one_in(8) {
        1 + rng.below(lines.len() - 1)
    } else {
        0
    };
    match rng.below(12) {
        0..=7 => csv_field(rng, &mut lines[i]),
        8 => {
            let line = lines[i].clone();
            for _ in 0..=rng.below(8) {
                lines.insert(i, line.clone());
            }
        }
        9 => {
            lines.remove(i);
        }
        10 => {
            let ends: [&[u8]; 4] = [b"\r", b"\r\r", b"\x00", b"\x0b"];
            let end = *rng.pick(&ends);
            lines[i].extend_from_slice(end);
        }
        _ if rng.one_in(2) => {
            lines[0].splice(0..0, "\u{feff}".bytes());
        }
        _ => lines.retain(|l| !l.is_empty()),
    }
    *input = lines.join(&b'\n');
}

/// One edit of one field of a CSV line.
fn csv_field(rng: &mut Rng, line: &mut Vec<u8>) {
    let mut fields: Vec<Vec<u8>> = line.split(|&b| b == b',').map(<[u8]>::to_vec).collect();
    let f = rng.below(fields.len());
    match rng.below(8) {
        0..=2 => fields[f] = rng.pick(&CSV_VALUES).as_bytes().to_vec(),
        3 => {
            let g = rng.below(fields.len());
            fields.swap(f, g);
        }
        4 => {
            let at = rng.below(fields[f].len() + 1);
            let bad = rng.pick(&NOT_UTF8);
            fields[f].splice(at..at, bad.iter().copied());
        }
        5 => {
            fields.remove(f);
        }
        6 => fields.insert(f, b"1".to_vec()),
        _ => fields[f] = vec![b'9'; 1 + rng.below(2_000)],
    }
    *line = fields.join(&b',');
}
