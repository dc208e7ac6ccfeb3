//! Format-blind mutations: bit flips, interesting values, truncation, chunk duplication and
//! removal, splicing; a target's format-aware edits are mixed in by [`mutate`].

use super::rng::Rng;

/// Bytes worth trying anywhere: the edges of signed and unsigned bytes.
const BYTES: [u8; 6] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff];

/// Multi-byte values worth trying where a length, count or offset may live.
pub const WORDS: [u64; 16] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fff0,
    0xffff_fffe,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
];

/// A format-aware edit of one input (a target's knowledge of its format).
pub type Edit = fn(&mut Rng, &mut Vec<u8>);

/// The next input: a seed or an earlier accepted input, mutated 1 to 4 times (a format-aware
/// edit, when the target has one, about a third of the time), at most `max_len` bytes.
pub fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], edit: Option<Edit>, max_len: usize) -> Vec<u8> {
    let mut input = rng.pick(corpus).clone();
    for _ in 0..=rng.below(4) {
        match edit {
            Some(edit) if rng.one_in(3) => edit(rng, &mut input),
            _ => blind(rng, &mut input, corpus),
        }
    }
    input.truncate(max_len);
    input
}

/// One format-blind mutation; splicing takes its second input from `corpus` (from the input
/// itself when `corpus` is empty).
pub fn blind(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    match rng.below(10) {
        0 | 1 => flip_bit(rng, input),
        2 => set_byte(rng, input),
        3 | 4 => {
            let at = rng.below(input.len() + 1);
            set_word(rng, input, at);
        }
        5 => add_small(rng, input),
        6 => input.truncate(rng.below(input.len() + 1)),
        7 => duplicate_chunk(rng, input),
        8 => remove_chunk(rng, input),
        _ => {
            let other = if corpus.is_empty() {
                input.clone()
            } else {
                rng.pick(corpus).clone()
            };
            splice(rng, input, &other);
        }
    }
}

fn flip_bit(rng: &mut Rng, input: &mut [u8]) {
    if !input.is_empty() {
        let at = rng.below(input.len());
        input[at] ^= 1 << rng.below(8);
    }
}

fn set_byte(rng: &mut Rng, input: &mut [u8]) {
    if !input.is_empty() {
        let at = rng.below(input.len());
        input[at] = if rng.one_in(4) {
            rng.byte()
        } else {
            *rng.pick(&BYTES)
        };
    }
}

/// Writes an interesting 2-, 4- or 8-byte value, little- or big-endian, at `at` (as far as the
/// input reaches).
pub fn set_word(rng: &mut Rng, input: &mut [u8], at: usize) {
    let value = *rng.pick(&WORDS);
    let value = if rng.one_in(4) {
        value.wrapping_sub(rng.below(16) as u64)
    } else {
        value
    };
    let width = *rng.pick(&[2usize, 4, 4, 8]);
    write_word(input, at, value, width, rng.one_in(2));
}

/// Writes the low `width` bytes of `value` at `at`, clipped to the input.
pub fn write_word(input: &mut [u8], at: usize, value: u64, width: usize, big_endian: bool) {
    let bytes = if big_endian {
        value.to_be_bytes()[8 - width..].to_vec()
    } else {
        value.to_le_bytes()[..width].to_vec()
    };
    for (i, b) in bytes.into_iter().enumerate() {
        if let Some(slot) = input.get_mut(at + i) {
            *slot = b;
        }
    }
}

fn add_small(rng: &mut Rng, input: &mut [u8]) {
    if !input.is_empty() {
        let at = rng.below(input.len());
        let delta = rng.below(33) as u8;
        input[at] = if rng.one_in(2) {
            input[at].wrapping_add(delta)
        } else {
            input[at].wrapping_sub(delta)
        };
    }
}

/// A random range of the input: start and length (at most 64 bytes, usually fewer).
fn chunk(rng: &mut Rng, len: usize) -> (usize, usize) {
    let start = rng.below(len + 1);
    let n = rng.below((len - start).min(64) + 1);
    (start, n)
}

fn duplicate_chunk(rng: &mut Rng, input: &mut Vec<u8>) {
    let (start, n) = chunk(rng, input.len());
    let piece = input[start..start + n].to_vec();
    let at = rng.below(input.len() + 1);
    input.splice(at..at, piece);
}

fn remove_chunk(rng: &mut Rng, input: &mut Vec<u8>) {
    let (start, n) = chunk(rng, input.len());
    input.drain(start..start + n);
}

/// A prefix of the input followed by a suffix of `other`.
fn splice(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    let cut = rng.below(input.len() + 1);
    let from = rng.below(other.len() + 1);
    input.truncate(cut);
    input.extend_from_slice(&other[from..]);
}
