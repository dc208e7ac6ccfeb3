//! The one bit array every filter uses: `u64` words, union, fold, change tracking, serde.
//!
//! Bit `i` lives in word `i / 64` at bit `i % 64`. Change tracking records which words changed
//! since the last [`Bits::drain_changed`]; the dataflow sends exactly those words as a delta.

use crate::changed::ChangedWords;
use crate::error::{Error, Result};
pub use lines::{LineBuf, LineWords};
use serde::{Deserialize, Serialize, Serializer};

mod lines;

/// A fixed-size array of `len` bits.
///
/// ```
/// use chronobloom_core::bits::Bits;
/// let mut b = Bits::new(100);
/// b.set(3);
/// b.set(99);
/// assert!(b.test(3) && !b.test(4));
/// assert_eq!(b.count_ones(), 2);
/// let folded = b.fold(50).unwrap(); // bit i goes to i mod 50
/// assert!(folded.test(3) && folded.test(49));
/// ```
///
/// Word 0 starts a 64-byte cache line, so each 8-word block of a blocked filter is one line.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "BitsRepr<Vec<u64>>")]
pub struct Bits {
    len: u64,
    words: LineWords,
    dirty: Dirty,
}

/// The serialized form: length and words, validated on the way in; written from a borrow of the
/// words (no copy of the array).
#[derive(Serialize, Deserialize)]
struct BitsRepr<W> {
    len: u64,
    words: W,
}

impl TryFrom<BitsRepr<Vec<u64>>> for Bits {
    type Error = Error;
    fn try_from(r: BitsRepr<Vec<u64>>) -> Result<Self> {
        Bits::from_words(r.len, r.words)
    }
}

impl Serialize for Bits {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        BitsRepr {
            len: self.len,
            words: self.words(),
        }
        .serialize(s)
    }
}

/// Equality is on the bits; the dirty record is bookkeeping.
impl PartialEq for Bits {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.words == other.words
    }
}

impl Eq for Bits {}

/// Which words changed since the last drain. Writes only flag the 8-word line they touch, with a
/// plain byte store (no read of the word: its cache line is usually still missing, and a flag
/// that depended on it would hold the insert up; and no read-modify-write of a shared flag word,
/// whose updates would queue behind each other); draining reads the flags 8 lines (64 words) at a
/// time and compares the flagged lines with a copy of the words as of the previous drain. The
/// copy doubles the memory of a tracked array; draining costs `len / 64` flag reads plus 8 words
/// per flagged line.
#[derive(Debug, Clone, Default)]
struct Dirty {
    enabled: bool,
    /// One byte per 8-word line (padded to whole groups of 8 lines), non-zero when written since
    /// the last drain.
    lines: Vec<u8>,
    /// The words as of the last drain (or of `track_dirty`).
    drained: Vec<u64>,
    /// Whether a line may have been flagged since the last drain (set by every write and by
    /// handing out a writer), so that a drain with nothing written does not scan the flags.
    written: bool,
}

impl Dirty {
    /// Flags the line of word `word` as written.
    #[inline]
    fn touch(&mut self, word: usize) {
        if self.enabled {
            if let Some(l) = self.lines.get_mut(word / 8) {
                *l = 1;
                self.written = true;
            }
        }
    }
}

impl Bits {
    /// `len` zero bits.
    pub fn new(len: u64) -> Self {
        Bits {
            len,
            words: LineWords::zeroed(words_for(len)),
            dirty: Dirty::default(),
        }
    }

    /// `len` zero bits, or [`Error::OutOfMemory`] where [`Bits::new`] would abort the process:
    /// constructors sized by their caller use this one.
    pub fn try_new(len: u64) -> Result<Self> {
        let out_of_memory = || Error::OutOfMemory { bits: len };
        let words = usize::try_from(len.div_ceil(64)).map_err(|_| out_of_memory())?;
        // Ask the allocator once, then allocate zeroed: `vec![0; n]` gets pages the kernel zeroes
        // on first touch, where `try_reserve` followed by `resize` would write every word now.
        Vec::<u64>::new()
            .try_reserve_exact(words.saturating_add(7))
            .map_err(|_| out_of_memory())?;
        Ok(Self::new(len))
    }

    /// Builds from raw words (e.g. received from another worker); bits past `len` must be zero.
    pub fn from_words(len: u64, words: Vec<u64>) -> Result<Self> {
        if words.len() != words_for(len) {
            return Err(Error::ShapeMismatch {
                what: "words for the bit length",
                left: words_for(len) as u64,
                right: words.len() as u64,
            });
        }
        let bits = Bits {
            len,
            words: LineWords::copied(&words),
            dirty: Dirty::default(),
        };
        if bits.tail_mask_violated() {
            return Err(Error::invalid(
                "words",
                "bits are set past the array's length",
            ));
        }
        Ok(bits)
    }

    fn tail_mask_violated(&self) -> bool {
        let rem = self.len % 64;
        rem != 0 && self.words().last().is_some_and(|w| w >> rem != 0)
    }

    /// Number of bits.
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the array has no bits at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The words, low bits first.
    #[inline]
    pub fn words(&self) -> &[u64] {
        self.words.as_slice()
    }

    /// Sets bit `i` (`i < len`); returns whether it was newly set.
    #[inline]
    pub fn set(&mut self, i: u64) -> bool {
        debug_assert!(i < self.len);
        let w = (i / 64) as usize;
        let b = 1u64 << (i % 64);
        let word = &mut self.words.as_mut_slice()[w];
        let old = *word;
        // Store unconditionally: a branch on `old` would wait for the (usually missing) cache line
        // and mispredict about half the time while a filter fills.
        *word = old | b;
        self.dirty.touch(w);
        old & b == 0
    }

    /// Tests bit `i` (`i < len`).
    #[inline]
    pub fn test(&self, i: u64) -> bool {
        debug_assert!(i < self.len);
        self.words()[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// Clears bit `i` (`i < len`); returns whether it was set. The generalized Bloom filter
    /// (paper 004 §5) resets cells as well as setting them.
    #[inline]
    pub fn clear(&mut self, i: u64) -> bool {
        debug_assert!(i < self.len);
        let w = (i / 64) as usize;
        let b = 1u64 << (i % 64);
        let word = &mut self.words.as_mut_slice()[w];
        let old = *word;
        *word = old & !b;
        self.dirty.touch(w);
        old & b != 0
    }

    /// The `width`-bit field (1 to 64 bits) starting at bit `at`, low bit first; the field must lie
    /// inside the array. Packed multi-bit cells (the timers of paper 004 §3) are read this way.
    #[inline]
    pub fn field(&self, at: u64, width: u32) -> u64 {
        debug_assert!((1..=64).contains(&width) && at + u64::from(width) <= self.len);
        let w = (at / 64) as usize;
        let off = (at % 64) as u32;
        let mask = u64::MAX >> (64 - width);
        let words = self.words();
        let low = words[w] >> off;
        let value = if off + width > 64 {
            low | words[w + 1] << (64 - off)
        } else {
            low
        };
        value & mask
    }

    /// Writes the low `width` bits of `value` into the field starting at bit `at` (see
    /// [`Self::field`]).
    #[inline]
    pub fn set_field(&mut self, at: u64, width: u32, value: u64) {
        debug_assert!((1..=64).contains(&width) && at + u64::from(width) <= self.len);
        let w = (at / 64) as usize;
        let off = (at % 64) as u32;
        let mask = u64::MAX >> (64 - width);
        let value = value & mask;
        let words = self.words.as_mut_slice();
        words[w] = (words[w] & !(mask << off)) | value << off;
        self.dirty.touch(w);
        if off + width > 64 {
            let spill = off + width - 64;
            let high = u64::MAX >> (64 - spill);
            words[w + 1] = (words[w + 1] & !high) | value >> (64 - off);
            self.dirty.touch(w + 1);
        }
    }

    /// The 8 words (512 bits) starting at word `first`, which must lie inside the array: one
    /// block of a blocked filter, fetched with a single bounds check.
    #[inline]
    pub(crate) fn block(&self, first: usize) -> &[u64; 8] {
        let words: &[u64] = &self.words()[first..];
        match words.first_chunk() {
            Some(block) => block,
            None => panic!("block at word {first} runs past {} words", self.words.len()),
        }
    }

    /// A writer of the array's bits ([`Writer`]): tracked or plain, decided once for a batch of
    /// writes.
    #[inline]
    pub(crate) fn writer(&mut self) -> Writer<'_> {
        let words = self.words.as_mut_slice();
        if self.dirty.enabled {
            self.dirty.written = true;
            Writer::Tracked(BitWriter {
                words,
                lines: &mut self.dirty.lines,
            })
        } else {
            Writer::Plain(BitWriter {
                words,
                lines: &mut [],
            })
        }
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.words().iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Fraction of set bits (0 for an empty array).
    pub fn fill_ratio(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.count_ones() as f64 / self.len as f64
        }
    }

    /// ORs `other` into `self`; both must have the same length.
    pub fn union_with(&mut self, other: &Bits) -> Result<()> {
        if self.len != other.len {
            return Err(Error::ShapeMismatch {
                what: "bit length",
                left: self.len,
                right: other.len,
            });
        }
        for (w, (a, b)) in self
            .words
            .as_mut_slice()
            .iter_mut()
            .zip(other.words())
            .enumerate()
        {
            if *b & !*a != 0 {
                *a |= *b;
                self.dirty.touch(w);
            }
        }
        Ok(())
    }

    /// ORs `word` into word `index` (applying one entry of a delta). A word index outside the array
    /// or bits past its length are refused before anything changes.
    pub fn or_word(&mut self, index: usize, word: u64) -> Result<()> {
        let words = self.words.len();
        if index >= words {
            return Err(Error::ShapeMismatch {
                what: "word index within the array",
                left: index as u64,
                right: words as u64,
            });
        }
        let rem = self.len % 64;
        if index + 1 == words && rem != 0 && word >> rem != 0 {
            return Err(Error::invalid(
                "word",
                "bits are set past the array's length",
            ));
        }
        let slot = &mut self.words.as_mut_slice()[index];
        if word & !*slot != 0 {
            *slot |= word;
            self.dirty.touch(index);
        }
        Ok(())
    }

    /// The array folded to `to` bits: bit `i` goes to `i mod to` (paper 000 §6). `to` must divide
    /// `len`. With probes reduced `mod m`, this equals the filter built directly with `to` bits.
    pub fn fold(&self, to: u64) -> Result<Bits> {
        if to == 0 || !self.len.is_multiple_of(to) {
            return Err(Error::NotADivisor { from: self.len, to });
        }
        let mut out = Bits::new(to);
        if to.is_multiple_of(64) {
            let per = (to / 64) as usize;
            for chunk in self.words().chunks(per) {
                for (o, w) in out.words.as_mut_slice().iter_mut().zip(chunk) {
                    *o |= w;
                }
            }
        } else {
            for (wi, &w) in self.words().iter().enumerate() {
                let mut rest = w;
                while rest != 0 {
                    let b = u64::from(rest.trailing_zeros());
                    rest &= rest - 1;
                    let i = wi as u64 * 64 + b;
                    let j = i % to;
                    out.words.as_mut_slice()[(j / 64) as usize] |= 1 << (j % 64);
                }
            }
        }
        Ok(out)
    }

    /// Starts recording which words change; recording is off by default (it costs a flag store
    /// per write and a copy of the words, see [`Self::memory_bits`]).
    pub fn track_dirty(&mut self) {
        if !self.dirty.enabled {
            self.dirty = Dirty {
                enabled: true,
                lines: vec![0; self.words.len().div_ceil(64) * 8],
                drained: self.words().to_vec(),
                written: false,
            };
        }
    }

    /// The words changed since the last drain (or since tracking started); clears the record.
    /// Empty when tracking is off.
    pub fn drain_changed(&mut self) -> ChangedWords {
        let mut out = ChangedWords::default();
        if !std::mem::take(&mut self.dirty.written) {
            return out;
        }
        let Dirty { lines, drained, .. } = &mut self.dirty;
        let (now_lines, now_tail) = self.words.as_slice().as_chunks::<8>();
        let (then_lines, then_tail) = drained.as_chunks_mut::<8>();
        // 8 line flags, read as one word, make a group of 64 words; a flagged line is compared
        // branch-free, as a whole line (the array's last, partial line word by word).
        for (group, flags) in lines.chunks_exact_mut(8).enumerate() {
            let mut read = [0u8; 8];
            read.copy_from_slice(flags);
            if u64::from_ne_bytes(read) == 0 {
                continue;
            }
            let mut changed = 0u64;
            for (l, flag) in flags.iter_mut().enumerate() {
                if std::mem::take(flag) == 0 {
                    continue;
                }
                let line = group * 8 + l;
                let differ = match (now_lines.get(line), then_lines.get_mut(line)) {
                    (Some(now), Some(then)) => differing(now, then),
                    _ => differing(now_tail, then_tail),
                };
                changed |= differ << (l * 8);
            }
            out.push(group as u32, changed);
        }
        out
    }

    /// Memory held, in bits: the words (with the up to 7 words that align them to a cache line),
    /// and when tracking changes also the copy of them and the line flags.
    pub fn memory_bits(&self) -> u64 {
        let record = self.dirty.drained.len() as u64 * 64 + self.dirty.lines.len() as u64 * 8;
        self.words.held() as u64 * 64 + record
    }
}

/// Writes the bits of a [`Bits`], with or without change tracking.
pub(crate) enum Writer<'a> {
    /// Each write flags its line.
    Tracked(BitWriter<'a, true>),
    /// Nothing is recorded.
    Plain(BitWriter<'a, false>),
}

/// Sets bits one at a time or block by block (8 words: one cache line, one line of the change
/// record); flags each written line when `TRACK`. Positions are below the array's length
/// (callers reduce them by it).
pub(crate) struct BitWriter<'a, const TRACK: bool> {
    words: &'a mut [u64],
    /// The change record's line flags (one per 8 words when `TRACK`).
    lines: &'a mut [u8],
}

impl<const TRACK: bool> BitWriter<'_, TRACK> {
    /// Asks the CPU to start loading the cache line of word `w` ([`crate::prefetch`]).
    #[inline]
    pub(crate) fn prefetch(&self, w: usize) {
        crate::prefetch::prefetch(self.words, w);
    }

    #[inline]
    fn flag(&mut self, line: usize) {
        if TRACK {
            if let Some(l) = self.lines.get_mut(line) {
                *l = 1;
            }
        }
    }

    /// Sets bit `i`: what [`Bits::set`] does, without the answer.
    #[inline]
    pub(crate) fn set(&mut self, i: u64) {
        let w = (i / 64) as usize;
        debug_assert!(w < self.words.len());
        if let Some(word) = self.words.get_mut(w) {
            *word |= 1u64 << (i % 64);
        }
        self.flag(w / 8);
    }

    /// Sets bit `o` of block `b` (words `8 b .. 8 b + 8`) for each offset `o < 512`, with one
    /// bounds check and one flag store for the block.
    #[inline]
    pub(crate) fn set_in_block(&mut self, b: usize, offsets: impl IntoIterator<Item = u64>) {
        let (blocks, _) = self.words.as_chunks_mut::<8>();
        debug_assert!(b < blocks.len());
        let Some(block) = blocks.get_mut(b) else {
            return;
        };
        for o in offsets {
            block[(o >> 6) as usize & 7] |= 1u64 << (o & 63);
        }
        self.flag(b);
    }
}

/// Bit `i` set where `now[i] != then[i]` (up to 8 words); `then` becomes `now`.
#[inline]
fn differing(now: &[u64], then: &mut [u64]) -> u64 {
    let mut differ = 0u64;
    for (i, (a, b)) in now.iter().zip(then.iter_mut()).enumerate() {
        differ |= u64::from(*a != *b) << i;
        *b = *a;
    }
    differ
}

fn words_for(len: u64) -> usize {
    len.div_ceil(64) as usize
}

#[cfg(test)]
mod tests;
