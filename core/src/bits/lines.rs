//! [`LineBuf`]: the items of a [`super::Bits`] (its words) or of a cuckoo table (its slots) —
//! any array probed in 64-byte pieces — with item 0 at the start of a cache line, in safe code.
//!
//! The allocator aligns a `Vec` to 16 bytes at best (glibc's large, mmapped blocks start 16
//! bytes into a page), so 8-word blocks of a blocked filter, or 32-byte buckets of a table,
//! would straddle two cache lines, and a probe of one block would miss twice. The items are
//! therefore kept inside a buffer up to a line longer than needed, starting at its first line
//! boundary. A copy of the buffer (a clone) lands elsewhere and finds its own boundary; moving
//! the `Vec` does not move its heap block. Arrays shorter than [`ALIGN_FROM`] bytes are not
//! padded: a line would be a large share of them, and their few lines stay cached.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::TryReserveError;

/// Bytes per cache line.
const LINE: usize = 64;

/// What every allocation is aligned to (glibc on 64-bit targets; Rust's allocator passes it
/// through for `Vec`s of small items).
const MALLOC_ALIGN: usize = 16;

/// The shortest array, in bytes, that is aligned (and padded by less than a line, at most 11%
/// of it).
const ALIGN_FROM: usize = 8 * LINE;

/// `len` items whose first item starts a cache line (for arrays of 512 bytes or more), so that
/// each 64-byte piece of the array (a blocked filter's 8-word block, two 32-byte buckets) is
/// one line. Dereferences to the items; serialized as a plain sequence. The items' size must
/// divide 64.
///
/// ```
/// use chronobloom_core::bits::LineWords;
/// let mut w = LineWords::zeroed(1000);
/// w[999] = 7;
/// assert_eq!(w.as_ptr().addr() % 64, 0);
/// assert_eq!((w.len(), w.iter().sum::<u64>()), (1000, 7));
/// assert_eq!(LineWords::copied(&w), w);
/// ```
#[derive(Debug)]
pub struct LineBuf<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

/// A bit array's words from a cache-line boundary.
pub type LineWords = LineBuf<u64>;

/// Items to skip from the start of `buf` to its first cache-line boundary.
fn lead<T>(buf: &[T]) -> usize {
    (buf.as_ptr().addr().wrapping_neg() % LINE) / size_of::<T>()
}

/// Items of padding an array of `len` items gets.
fn padding<T>(len: usize) -> usize {
    if len.saturating_mul(size_of::<T>()) < ALIGN_FROM {
        0
    } else {
        LINE / size_of::<T>() - 1
    }
}

impl<T: Copy + Default> LineBuf<T> {
    /// `len` default items (zeros), aligned from 512 bytes on (shorter arrays are not padded).
    /// For integers the buffer comes zeroed from the allocator (pages are zeroed by the kernel
    /// on first touch), so a large, sparse array costs no writes up front.
    pub fn zeroed(len: usize) -> Self {
        let buf = vec![T::default(); len.saturating_add(padding::<T>(len))];
        Self::within(buf, len)
    }

    /// [`Self::zeroed`] for an array probed in pieces of `piece` bytes, or the allocator's
    /// refusal instead of an abort. Pieces of at most 16 bytes (what every allocation is aligned
    /// to) never straddle a line, so their array is not padded.
    pub fn try_zeroed(len: usize, piece: usize) -> Result<Self, TryReserveError> {
        let pad = if piece > MALLOC_ALIGN {
            padding::<T>(len)
        } else {
            0
        };
        let total = len.saturating_add(pad);
        let mut buf = Vec::new();
        buf.try_reserve_exact(total)?;
        buf.resize(total, T::default());
        Ok(Self::within(buf, len))
    }

    /// `len` items of `buf` from its first line boundary (`buf` has the padding `len` needs).
    fn within(buf: Vec<T>, len: usize) -> Self {
        let start = if buf.len() > len { lead(&buf) } else { 0 };
        LineBuf { buf, start, len }
    }

    /// A copy of `items`, aligned.
    pub fn copied(items: &[T]) -> Self {
        let mut out = Self::zeroed(items.len());
        out.as_mut_slice().copy_from_slice(items);
        out
    }

    /// Items held, alignment padding included (for the bytes' sake: less than a line more than
    /// the items' count).
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// The items.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The items, mutable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl<T: Copy + Default> std::ops::Deref for LineBuf<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default> std::ops::DerefMut for LineBuf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Copy + Default> Clone for LineBuf<T> {
    fn clone(&self) -> Self {
        Self::copied(self.as_slice())
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for LineBuf<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq> Eq for LineBuf<T> {}

impl<T: Copy + Default + Serialize> Serialize for LineBuf<T> {
    /// As a sequence of the items, like a `Vec<T>`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de, T: Copy + Default + Deserialize<'de>> Deserialize<'de> for LineBuf<T> {
    /// From a sequence of items (a `Vec<T>`'s form), copied to an aligned buffer.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Vec::<T>::deserialize(d)?;
        Ok(Self::copied(&items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned<T: Copy + Default>(w: &LineBuf<T>) -> bool {
        w.as_slice().as_ptr().addr().is_multiple_of(64)
    }

    #[test]
    fn words_start_a_cache_line_and_clones_too() {
        for len in [ALIGN_FROM / 8, ALIGN_FROM / 8 + 1, 1000, 1 << 16] {
            let mut w = LineWords::zeroed(len);
            assert_eq!(w.len(), len);
            assert!(aligned(&w), "{len} words");
            assert!(w.as_slice().iter().all(|&x| x == 0));
            w.as_mut_slice()[len - 1] = 7;
            // several clones, so that at least one lands at another offset of the allocator
            let clones: Vec<LineWords> = (0..8).map(|_| w.clone()).collect();
            for c in &clones {
                assert!(aligned(c));
                assert_eq!(c, &w);
            }
        }
    }

    #[test]
    fn short_arrays_are_not_padded() {
        for len in [0, 1, 7, ALIGN_FROM / 8 - 1] {
            let w = LineWords::zeroed(len);
            assert_eq!((w.len(), w.held(), w.as_slice().len()), (len, len, len));
        }
        assert_eq!(LineWords::zeroed(ALIGN_FROM / 8).held(), ALIGN_FROM / 8 + 7);
    }

    #[test]
    fn copied_keeps_the_words() {
        let words: Vec<u64> = (0..ALIGN_FROM as u64 / 8 + 37).collect();
        let w = LineWords::copied(&words);
        assert!(aligned(&w));
        assert_eq!(w.as_slice(), &words[..]);
    }

    #[test]
    fn slots_of_other_widths_start_a_cache_line_and_travel_as_a_vec() {
        let mut s = LineBuf::<u32>::try_zeroed(4096, 32).unwrap();
        assert!(aligned(&s) && s.len() == 4096 && s.held() == 4096 + 15);
        s[17] = 9;
        assert!(aligned(&s.clone()));
        let bytes = bincode::serialize(&s).unwrap();
        assert_eq!(bytes, bincode::serialize(&s.to_vec()).unwrap());
        let back: LineBuf<u32> = bincode::deserialize(&bytes).unwrap();
        assert!(aligned(&back) && back == s);
        let small = LineBuf::<u16>::zeroed(100);
        assert_eq!((small.len(), small.held()), (100, 100));
        let narrow = LineBuf::<u16>::try_zeroed(4096, 16).unwrap();
        assert_eq!((narrow.len(), narrow.held()), (4096, 4096));
    }
}
