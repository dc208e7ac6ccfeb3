//! The shape of one Bloom filter: bits and hash functions.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Number of bits `m` and hash functions `k` of one filter. `m = 0` is allowed in allocations and
/// means "this filter gets no bits and is never consulted".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FilterShape {
    /// Bits, `m`.
    pub bits: u64,
    /// Hash functions, `k`.
    pub hashes: u32,
}

/// The largest number of hash functions accepted.
pub const MAX_HASHES: u32 = 64;

impl FilterShape {
    /// A shape from `m` bits and `k` hashes; `k` must be in `1..=64` unless `m` is 0.
    pub fn new(bits: u64, hashes: u32) -> Result<Self> {
        if bits > 0 && !(1..=MAX_HASHES).contains(&hashes) {
            return Err(Error::invalid(
                "hashes",
                format!("{hashes} is outside 1..={MAX_HASHES}"),
            ));
        }
        Ok(FilterShape { bits, hashes })
    }

    /// The shape that holds `items` distinct items at false positive rate `fpr` with the fewest
    /// bits: `m = ceil(-n ln p / (ln 2)^2)`, `k = round(-log2 p)` (paper 000 eq. 3). A rate
    /// needing more than [`MAX_HASHES`] hash functions (below about `2^-64.5`) is refused: the
    /// equation's `m` would not reach it with fewer.
    ///
    /// ```
    /// use chronobloom_core::bloom::FilterShape;
    /// let s = FilterShape::for_fpr(1_000_000, 0.01).unwrap();
    /// assert_eq!((s.bits, s.hashes), (9_585_059, 7));
    /// ```
    pub fn for_fpr(items: u64, fpr: f64) -> Result<Self> {
        if items == 0 {
            return Err(Error::invalid("items", "must be at least 1"));
        }
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
        }
        let hashes = (-fpr.log2()).round().max(1.0);
        if hashes > f64::from(MAX_HASHES) {
            return Err(Error::invalid(
                "fpr",
                format!("{fpr} needs more than {MAX_HASHES} hash functions"),
            ));
        }
        let ln2 = std::f64::consts::LN_2;
        let bits = (-(items as f64) * fpr.ln() / (ln2 * ln2)).ceil() as u64;
        Ok(FilterShape {
            bits,
            hashes: hashes as u32,
        })
    }

    /// The hash count that minimises the false positive rate for `items` distinct items in
    /// `bits` bits, `ceil((m / n) ln 2)` (the allocation's rule, paper 000 §5), capped at `k_max`.
    pub fn optimal_hashes(bits: u64, items: u64, k_max: u32) -> u32 {
        if items == 0 {
            return 1;
        }
        let k = (bits as f64 / items as f64 * std::f64::consts::LN_2).ceil();
        k.clamp(1.0, f64::from(k_max.max(1))) as u32
    }

    /// The false positive rate of this shape holding `items` distinct items: paper 000 eq. 2,
    /// `(1 - e^{-kn/m})^k`. A zero-bit shape answers "maybe" always: 1.
    pub fn fpr(&self, items: f64) -> f64 {
        if self.bits == 0 {
            return 1.0;
        }
        let k = f64::from(self.hashes);
        (1.0 - (-k * items / self.bits as f64).exp()).powf(k)
    }
}
