//! [`Reduce`]: `a mod d` for a fixed divisor, as [`FastMod`] (any divisor) or [`LowBits`] (a
//! power of two: one AND). Both give the same value for the same divisor, so a structure may pick
//! the cheaper one once per batch without changing a single position.

use super::FastMod;

/// `a mod divisor`, exactly.
pub trait Reduce: Copy {
    /// `a % divisor`.
    fn reduce(&self, a: u64) -> u64;
}

impl Reduce for FastMod {
    #[inline]
    fn reduce(&self, a: u64) -> u64 {
        FastMod::reduce(self, a)
    }
}

/// `a mod 2^j` as `a & (2^j − 1)`.
///
/// ```
/// use chronobloom_core::hash::{FastMod, LowBits, Reduce};
/// let (low, exact) = (LowBits::new(512).unwrap(), FastMod::new(512).unwrap());
/// assert_eq!(Reduce::reduce(&low, 123_456_789), exact.reduce(123_456_789));
/// assert!(LowBits::new(3_000).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LowBits {
    mask: u64,
}

impl LowBits {
    /// The reduction by `divisor`; `None` unless it is a power of two.
    pub fn new(divisor: u64) -> Option<Self> {
        divisor
            .is_power_of_two()
            .then(|| LowBits { mask: divisor - 1 })
    }
}

impl Reduce for LowBits {
    #[inline]
    fn reduce(&self, a: u64) -> u64 {
        a & self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn low_bits_equal_fast_mod(a in any::<u64>(), j in 0u32..64) {
            let d = 1u64 << j;
            let low = LowBits::new(d).expect("a power of two");
            prop_assert_eq!(Reduce::reduce(&low, a), FastMod::new(d).expect("nonzero").reduce(a));
        }
    }
}
