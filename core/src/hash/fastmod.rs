//! Exact `a mod d` (and `a / d`) for 64-bit `a` and `d` without a hardware division.
//!
//! Barrett reduction with one correction step: with `M = floor((2^64 - 1) / d)`, the estimate
//! `q = floor(a M / 2^64)` satisfies `floor(a / d) - 1 <= q <= floor(a / d)`, because
//! `a M / 2^64 > a / d - a / 2^64 > a / d - 1`. So `r = a - q d` lies in `[0, 2d)` and one
//! conditional subtraction of `d` gives `a mod d`, exactly, for every `a` and every `d >= 1`
//! (tests compare it with `%`). It costs one widening multiplication and one ordinary one; Lemire,
//! Kaser and Kurz's direct computation (2019), which this replaced, costs four for 64-bit
//! operands, and the probe loop of a Bloom query is bound by them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::num::NonZeroU64;

/// A precomputed divisor: `reduce(a)` is `a % d`, computed with two multiplications.
///
/// ```
/// use chronobloom_core::hash::FastMod;
/// let m = FastMod::new(1_000_003).unwrap();
/// assert_eq!(m.reduce(u64::MAX), u64::MAX % 1_000_003);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastMod {
    m: u64,
    d: u64,
}

impl FastMod {
    /// Precomputes the constant for divisor `d`; `None` when `d` is zero.
    pub fn new(d: u64) -> Option<Self> {
        NonZeroU64::new(d).map(Self::nonzero)
    }

    /// Precomputes the constant for divisor `d`.
    pub fn nonzero(d: NonZeroU64) -> Self {
        FastMod {
            m: u64::MAX / d,
            d: d.get(),
        }
    }

    /// The divisor.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// `a % divisor()`.
    #[inline]
    pub fn reduce(&self, a: u64) -> u64 {
        let (_, r) = self.estimate(a);
        // When r < d, r - d wraps above r and `min` keeps r; a select, not a branch.
        r.min(r.wrapping_sub(self.d))
    }

    /// `a / divisor()`, the same way: the estimate, one more when the remainder left is a
    /// whole divisor.
    ///
    /// ```
    /// use chronobloom_core::hash::FastMod;
    /// let m = FastMod::new(3_751).unwrap();
    /// assert_eq!(m.quotient(u64::MAX), u64::MAX / 3_751);
    /// ```
    #[inline]
    pub fn quotient(&self, a: u64) -> u64 {
        let (q, r) = self.estimate(a);
        q + u64::from(r >= self.d)
    }

    /// The quotient estimate `q` (`a / d` or one less) and `a - q d`, in `[0, 2d)`.
    #[inline]
    fn estimate(&self, a: u64) -> (u64, u64) {
        let q = ((u128::from(a) * u128::from(self.m)) >> 64) as u64;
        // q <= a / d, so q * d <= a: neither operation wraps.
        (q, a - q * self.d)
    }
}

// Only the divisor is stored: the constant is derived, so a serialized filter cannot carry a
// constant that disagrees with its size.
impl Serialize for FastMod {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.d.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FastMod {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let d = u64::deserialize(de)?;
        FastMod::new(d).ok_or_else(|| serde::de::Error::custom("divisor must be positive"))
    }
}

#[cfg(test)]
mod tests {
    use super::FastMod;
    use crate::hash::mix64;
    use proptest::prelude::*;

    #[test]
    fn zero_is_refused() {
        assert!(FastMod::new(0).is_none());
    }

    #[test]
    fn edge_divisors_and_dividends() {
        let divisors = [
            1,
            2,
            3,
            7,
            63,
            64,
            65,
            1_000_003,
            95_850_584,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &d in &divisors {
            let m = FastMod::new(d).expect("nonzero divisor");
            let mut dividends = vec![0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1];
            dividends.extend((1..=4u64).map(|k| d.wrapping_mul(k)));
            dividends.extend((1..=4u64).map(|k| d.wrapping_mul(k).wrapping_sub(1)));
            dividends.extend((u64::MAX / d).checked_mul(d));
            dividends.extend((0..1000).map(mix64));
            for a in dividends {
                assert_eq!(m.reduce(a), a % d, "{a} mod {d}");
                assert_eq!(m.quotient(a), a / d, "{a} / {d}");
            }
        }
    }

    proptest! {
        #[test]
        fn reduce_is_remainder(a in any::<u64>(), d in 1u64..) {
            let m = FastMod::new(d).expect("nonzero divisor");
            prop_assert_eq!(m.reduce(a), a % d);
        }

        #[test]
        fn reduce_is_remainder_small_divisors(a in any::<u64>(), d in 1u64..100_000) {
            let m = FastMod::new(d).expect("nonzero divisor");
            prop_assert_eq!(m.reduce(a), a % d);
        }

        #[test]
        fn quotient_is_division(a in any::<u64>(), d in 1u64..) {
            let m = FastMod::new(d).expect("nonzero divisor");
            prop_assert_eq!(m.quotient(a), a / d);
        }

        #[test]
        fn quotient_is_division_small(a in 0u64..1 << 42, d in 1u64..100_000) {
            let m = FastMod::new(d).expect("nonzero divisor");
            prop_assert_eq!(m.quotient(a), a / d);
        }
    }
}
