//! Positions from the four 32-bit words of a key hash, each scaled into `0..d` with one
//! multiplication: the cheap independent positions the matrix Bloom filter uses on each side.

use super::KeyHash;

/// The largest side [`Spread`] scales into: a 32-bit word times `d` must fit 64 bits.
pub const MAX_SPREAD: u64 = 1 << 32;

/// The positions of a key hash in `0..d`: position `i < 4` is the hash's word `i` (`lo`'s low and
/// high halves, then `hi`'s) scaled into `0..d` as `(word · d) >> 32` (Lemire's multiply-shift);
/// position `i ≥ 4` scales the high half of `g_i = lo + i · hi + (i³ − i) / 6` (wrapping), the
/// crate's enhanced double hashing ([`super::Probes`]) read from the top.
///
/// Unlike [`super::Probes`] (`g_i mod m`), the first four positions are as independent as the
/// hash's words, and each costs one 64-bit multiplication and a shift where a remainder costs two
/// multiplications and a correction; a further position costs one multiplication more. A 32-bit
/// word puts each position within `d / 2^32` of uniform.
///
/// ```
/// use chronobloom_core::hash::{KeyHash, Spread};
/// let s = Spread::new(1_000).unwrap();
/// let h = KeyHash { lo: 0xffff_ffff_0000_0000, hi: 0x8000_0000 };
/// assert_eq!(s.array::<4>(h), [0, 999, 500, 0]);
/// assert!(s.positions(h, 6).all(|p| p < 1_000));
/// assert!(Spread::new(0).is_none() && Spread::new((1 << 32) + 1).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    d: u64,
}

impl Spread {
    /// Positions in `0..d`; `None` unless `1 ≤ d ≤ 2^32` ([`MAX_SPREAD`]).
    pub fn new(d: u64) -> Option<Self> {
        (1..=MAX_SPREAD).contains(&d).then_some(Spread { d })
    }

    /// `d`.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// The 32-bit word position `i` scales.
    #[inline]
    fn word(hash: KeyHash, i: u32) -> u64 {
        match i {
            // lo's low and high halves, then hi's: a select and a shift, no jump table
            0..=3 => {
                let half = if i < 2 { hash.lo } else { hash.hi };
                (half >> ((i & 1) * 32)) & 0xffff_ffff
            }
            _ => {
                // (i³ − i) / 6 exactly (i³ can pass 2^64), then modulo 2^64 as the steps wrap
                let i128 = u128::from(i);
                let cubic = ((i128 * i128 * i128 - i128) / 6) as u64;
                let i = u64::from(i);
                hash.lo
                    .wrapping_add(i.wrapping_mul(hash.hi))
                    .wrapping_add(cubic)
                    >> 32
            }
        }
    }

    /// Position `i` of `hash`.
    #[inline]
    pub fn nth(&self, hash: KeyHash, i: u32) -> u64 {
        (Self::word(hash, i) * self.d) >> 32
    }

    /// The first `k` positions of `hash` (from the fifth on, `g_i` is stepped as [`super::Probes`]
    /// steps it: no division per position).
    #[inline]
    pub fn positions(self, hash: KeyHash, k: u32) -> Positions {
        Positions {
            hash,
            d: self.d,
            i: 0,
            k,
            // g_4 = lo + 4 hi + 10 and its step d_4 = hi + 10
            g: hash
                .lo
                .wrapping_add(hash.hi.wrapping_mul(4))
                .wrapping_add(10),
            step: hash.hi.wrapping_add(10),
        }
    }

    /// The first `K` positions of `hash`, as an array (no count checked per position).
    #[inline]
    pub fn array<const K: usize>(self, hash: KeyHash) -> [u64; K] {
        std::array::from_fn(|i| self.nth(hash, i as u32))
    }
}

/// The positions of one hash ([`Spread::positions`]).
#[derive(Debug, Clone)]
pub struct Positions {
    hash: KeyHash,
    d: u64,
    i: u32,
    k: u32,
    /// `g_i` for the next position from the fifth on, and its step `d_i`.
    g: u64,
    step: u64,
}

impl Iterator for Positions {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i >= self.k {
            return None;
        }
        let word = if self.i < 4 {
            Spread::word(self.hash, self.i)
        } else {
            let w = self.g >> 32;
            self.g = self.g.wrapping_add(self.step);
            self.step = self.step.wrapping_add(u64::from(self.i) + 1);
            w
        };
        self.i += 1;
        Some((word * self.d) >> 32)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.k.saturating_sub(self.i) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Positions {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn positions_stay_in_range(lo in any::<u64>(), hi in any::<u64>(), d in 1..=MAX_SPREAD) {
            let (s, h) = (Spread::new(d).expect("a side in range"), KeyHash { lo, hi });
            prop_assert!(s.positions(h, 16).all(|p| p < d));
        }

        #[test]
        fn arrays_are_the_positions(lo in any::<u64>(), hi in any::<u64>(), d in 1..=MAX_SPREAD) {
            let (s, h) = (Spread::new(d).expect("a side in range"), KeyHash { lo, hi });
            prop_assert!(s.array::<3>(h).into_iter().eq(s.positions(h, 3)));
            prop_assert!(s.array::<16>(h).into_iter().eq(s.positions(h, 16)));
        }
    }

    #[test]
    fn far_positions_are_the_stepped_ones() {
        // position 3,000,000, where i³ passes 2^64, as the iterator reaches it
        let s = Spread::new(1_000_003).expect("a side in range");
        for h in [KeyHash { lo: 1, hi: 2 }, KeyHash::of(&"far", 9)] {
            assert_eq!(s.positions(h, 3_000_001).last(), Some(s.nth(h, 3_000_000)));
        }
    }

    #[test]
    fn each_position_is_even_over_the_side() {
        // 70,000 hashed keys over 7 cells: every position fills each cell within 4 standard
        // deviations of 10,000 (sd ≈ 93).
        let s = Spread::new(7).expect("a side in range");
        let mut counts = [[0u32; 7]; 6];
        for key in 0..70_000u64 {
            let h = KeyHash::of(&key, 3);
            for (i, p) in s.positions(h, 6).enumerate() {
                counts[i][p as usize] += 1;
            }
        }
        for row in counts {
            assert!(row.iter().all(|&c| c.abs_diff(10_000) < 372), "{row:?}");
        }
    }
}
