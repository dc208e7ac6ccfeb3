//! [`LineWords`]: the words of a [`super::Bits`] (or of any bit array probed in 512-bit blocks),
//! with word 0 at the start of a 64-byte cache line, in safe code.
//!
//! The allocator aligns a `Vec<u64>` to 16 bytes at best (glibc's large, mmapped blocks start 16
//! bytes into a page), so 8-word blocks of a blocked filter would straddle two cache lines, and a
//! probe of one block would miss twice. The words are therefore kept inside a buffer 7 words
//! longer than needed, starting at its first line boundary. A copy of the buffer (a clone) lands
//! elsewhere and finds its own boundary; moving the `Vec` does not move its heap block. Arrays
//! shorter than [`ALIGN_FROM`] words are not padded: 7 words would be a large share of them, and
//! their few lines stay cached.

/// Words per 64-byte cache line.
const LINE: usize = 8;

/// The shortest array, in words, that is aligned (and padded by up to `LINE - 1` words, at
/// most 11% of it).
const ALIGN_FROM: usize = 8 * LINE;

/// `len` words whose first word starts a cache line (from 64 words on), so that each 8-word block
/// of a blocked filter is one line. Dereferences to the words.
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
pub struct LineWords {
    buf: Vec<u64>,
    start: usize,
    len: usize,
}

/// Words to skip from the start of `buf` to its first cache-line boundary.
fn lead(buf: &[u64]) -> usize {
    (buf.as_ptr().addr().wrapping_neg() % (LINE * 8)) / 8
}

impl LineWords {
    /// `len` zero words, aligned from 64 words on (shorter arrays are not padded). The buffer comes zeroed from the
    /// allocator (pages are zeroed by the kernel on first touch), so a large, sparse array costs
    /// no writes up front.
    pub fn zeroed(len: usize) -> Self {
        if len < ALIGN_FROM {
            return LineWords {
                buf: vec![0; len],
                start: 0,
                len,
            };
        }
        let buf = vec![0; len + LINE - 1];
        let start = lead(&buf);
        LineWords { buf, start, len }
    }

    /// A copy of `words`, aligned.
    pub fn copied(words: &[u64]) -> Self {
        let mut out = Self::zeroed(words.len());
        out.as_mut_slice().copy_from_slice(words);
        out
    }

    /// Words held, alignment padding included (for the bytes' sake: at most 7 more than the
    /// words' count).
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    /// The words.
    #[inline]
    pub fn as_slice(&self) -> &[u64] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The words, mutable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl std::ops::Deref for LineWords {
    type Target = [u64];

    #[inline]
    fn deref(&self) -> &[u64] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for LineWords {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u64] {
        self.as_mut_slice()
    }
}

impl Clone for LineWords {
    fn clone(&self) -> Self {
        Self::copied(self.as_slice())
    }
}

impl PartialEq for LineWords {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for LineWords {}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(w: &LineWords) -> bool {
        w.as_slice().as_ptr().addr().is_multiple_of(64)
    }

    #[test]
    fn words_start_a_cache_line_and_clones_too() {
        for len in [ALIGN_FROM, ALIGN_FROM + 1, 1000, 1 << 16] {
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
        for len in [0, 1, 7, ALIGN_FROM - 1] {
            let w = LineWords::zeroed(len);
            assert_eq!((w.len(), w.held(), w.as_slice().len()), (len, len, len));
        }
        assert_eq!(LineWords::zeroed(ALIGN_FROM).held(), ALIGN_FROM + LINE - 1);
    }

    #[test]
    fn copied_keeps_the_words() {
        let words: Vec<u64> = (0..ALIGN_FROM as u64 + 37).collect();
        let w = LineWords::copied(&words);
        assert!(aligned(&w));
        assert_eq!(w.as_slice(), &words[..]);
    }
}
