//! Exact `a mod d` for 64-bit `a` and `d` without a hardware division.
//!
//! Lemire, Kaser and Kurz, "Faster remainder by direct computation" (2019): with
//! `M = floor((2^128 - 1) / d) + 1`, `a mod d` equals the high 64 bits of `(M * a mod 2^128) * d`.
//! The result is exact for every `a` and every `d >= 1`; tests compare it with `%`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A precomputed divisor: `reduce(a)` is `a % d`, computed with three multiplications.
///
/// ```
/// use chronobloom_core::hash::FastMod;
/// let m = FastMod::new(1_000_003).unwrap();
/// assert_eq!(m.reduce(u64::MAX), u64::MAX % 1_000_003);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastMod {
    m: u128,
    d: u64,
}

impl FastMod {
    /// Precomputes the constant for divisor `d`; `None` when `d` is zero.
    pub fn new(d: u64) -> Option<Self> {
        if d == 0 {
            return None;
        }
        Some(FastMod {
            m: (u128::MAX / u128::from(d)).wrapping_add(1),
            d,
        })
    }

    /// The divisor.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// `a % divisor()`.
    #[inline]
    pub fn reduce(&self, a: u64) -> u64 {
        let low = self.m.wrapping_mul(u128::from(a));
        let d = u128::from(self.d);
        let bottom = ((low & u128::from(u64::MAX)) * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
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
