//! Where a [`super::BloomFilter`] puts a key's `k` bits: anywhere in `m` bits (the standard layout
//! the analysis assumes) or inside one 512-bit block (one cache line per key).
//!
//! The exact blocked positions are step 5 of the hashing specification ([`crate::hash`]).

use super::FilterShape;
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};
use serde::{Deserialize, Serialize};

/// Bits per block of the blocked layout: one 64-byte cache line.
pub const BLOCK_BITS: u64 = 512;

/// Words per block.
pub(crate) const BLOCK_WORDS: usize = (BLOCK_BITS / 64) as usize;

/// The multiplier that steps the in-block hash from one probe to the next (odd, so a bijection).
pub(crate) const BLOCK_STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// `g_0` of the blocked positions of a hash whose low half is `lo` (step 5).
#[inline]
pub(crate) fn block_seed(lo: u64) -> u64 {
    lo.wrapping_mul(BLOCK_STEP)
}

/// The `k` in-block offsets `g_i >> 55` from `g_0 = g`, `g_{i+1} = g_i · C` (step 5).
#[inline]
pub(crate) fn block_offsets(mut g: u64, k: u32) -> impl Iterator<Item = u64> {
    (0..k).map(move |_| {
        let o = g >> 55;
        g = g.wrapping_mul(BLOCK_STEP);
        o
    })
}

/// How a Bloom filter lays its bits out.
///
/// ```
/// use chronobloom_core::bloom::{BloomFilter, Filter, FilterShape, Layout};
/// let shape = FilterShape::new(4 * 512, 4).unwrap();
/// let mut f = BloomFilter::with_layout(shape, 7, Layout::Blocked).unwrap();
/// f.insert(&"x");
/// assert!(f.contains(&"x"));
/// assert!(BloomFilter::with_layout(FilterShape::new(1000, 4).unwrap(), 7, Layout::Blocked).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Layout {
    /// `k` probes anywhere in `m` bits, reduced `mod m` (paper 000's analysis, eqs. 1–3).
    #[default]
    Standard,
    /// All `k` probes in one of `m / 512` blocks of 512 bits; `m` must be a positive multiple of
    /// 512. One cache miss per key, at a somewhat higher false positive rate ([`Layout::fpr`]).
    Blocked,
}

/// What a layout mismatch names in [`crate::Error::ShapeMismatch`], with the codes' meaning.
pub(crate) const LAYOUT_MISMATCH: &str = "layout (0 standard, 1 blocked)";

impl Layout {
    /// A number for error messages: 0 standard, 1 blocked.
    pub(crate) fn code(self) -> u64 {
        match self {
            Layout::Standard => 0,
            Layout::Blocked => 1,
        }
    }

    /// Checks that a filter of this layout can have `bits` bits (at least one; whole blocks when
    /// blocked).
    pub fn check_bits(self, bits: u64) -> Result<()> {
        match self {
            Layout::Standard if bits == 0 => Err(Error::invalid(
                "bits",
                "a Bloom filter needs at least one bit",
            )),
            Layout::Blocked if bits == 0 || !bits.is_multiple_of(BLOCK_BITS) => {
                Err(Error::NotWholeBlocks {
                    bits,
                    block_bits: BLOCK_BITS,
                })
            }
            _ => Ok(()),
        }
    }

    /// The modulus probes are reduced by: `m` for the standard layout, the block count `m / 512`
    /// for the blocked one.
    pub(crate) fn modulus(self, bits: u64) -> Result<FastMod> {
        self.check_bits(bits)?;
        let d = match self {
            Layout::Standard => bits,
            Layout::Blocked => bits / BLOCK_BITS,
        };
        FastMod::new(d).ok_or(Error::NotWholeBlocks {
            bits,
            block_bits: BLOCK_BITS,
        })
    }

    /// `bits` rounded down to what this layout accepts (whole blocks when blocked; 0 means no
    /// filter).
    pub fn round_down(self, bits: u64) -> u64 {
        match self {
            Layout::Standard => bits,
            Layout::Blocked => bits - bits % BLOCK_BITS,
        }
    }

    /// The expected false positive rate of a filter of this layout and `shape` holding `items`
    /// distinct items.
    ///
    /// * Standard: eq. 2, `(1 − e^{−kn/m})^k`.
    /// * Blocked: the mixture over block loads. A block receives `j ~ Poisson(λ)` keys,
    ///   `λ = n / B` with `B = m / 512` blocks (the binomial load, for `B` not tiny); with `j`
    ///   keys of `k` independent uniform bits each a given bit is clear with probability
    ///   `q^{kj}`, `q = 1 − 1/512`, so the rate is `Σ_j P(j) (1 − q^{kj})^k` (Putze, Sanders and
    ///   Singler, 2007). It is above eq. 2 because blocks fill unevenly.
    ///
    /// A zero-bit shape answers "maybe" always: 1.
    ///
    /// ```
    /// use chronobloom_core::bloom::{FilterShape, Layout};
    /// let s = FilterShape::new(512 * 1000, 4).unwrap();
    /// let (std, blk) = (Layout::Standard.fpr(s, 20_000.0), Layout::Blocked.fpr(s, 20_000.0));
    /// assert!(blk > std && blk < 1.5 * std);
    /// ```
    pub fn fpr(self, shape: FilterShape, items: f64) -> f64 {
        if shape.bits == 0 {
            return 1.0;
        }
        match self {
            Layout::Standard => shape.fpr(items),
            Layout::Blocked => {
                blocked_fpr(shape.bits as f64 / BLOCK_BITS as f64, shape.hashes, items)
            }
        }
    }
}

/// `Σ_j Poisson(λ = n/B)(j) · (1 − q^{kj})^k`, summed over `λ ± (12√λ + 30)` (the rest of the
/// Poisson mass is below 1e-30).
fn blocked_fpr(blocks: f64, hashes: u32, items: f64) -> f64 {
    let lambda = items.max(0.0) / blocks;
    if lambda == 0.0 {
        return 0.0;
    }
    let k = f64::from(hashes);
    let ln_clear = k * (1.0 - 1.0 / BLOCK_BITS as f64).ln(); // ln q^k
    let width = 12.0 * lambda.sqrt() + 30.0;
    let first = (lambda - width).max(0.0).floor();
    let last = (lambda + width).ceil();
    // ln P(first) by Stirling's series for ln(first!), exact enough (1e-10) for first >= 1.
    let mut ln_p = -lambda + first * lambda.ln() - ln_factorial(first);
    let mut j = first;
    let mut sum = 0.0;
    while j <= last {
        let fill = -(ln_clear * j).exp_m1(); // 1 − q^{kj}
        sum += ln_p.exp() * fill.powf(k);
        j += 1.0;
        ln_p += lambda.ln() - j.ln();
    }
    sum.min(1.0)
}

fn ln_factorial(n: f64) -> f64 {
    if n < 2.0 {
        return 0.0;
    }
    let tau = 2.0 * std::f64::consts::PI;
    n * n.ln() - n + 0.5 * (tau * n).ln() + 1.0 / (12.0 * n) - 1.0 / (360.0 * n * n * n)
}

/// The `k` bit positions of `hash` in a blocked filter of `blocks` blocks (hashing specification,
/// step 5): the block `b = lo mod B`, then `b · 512 + (g_i >> 55)` with `g_0 = lo · C`,
/// `g_{i+1} = g_i · C`, `C = 0x9e3779b97f4a7c15` (wrapping). Only `lo` is used.
///
/// ```
/// use chronobloom_core::bloom::{blocked_probes, BLOCK_BITS};
/// use chronobloom_core::hash::{FastMod, KeyHash};
/// let h = KeyHash::of(&42u64, 7);
/// let p: Vec<u64> = blocked_probes(h, 4, FastMod::new(100).unwrap()).collect();
/// assert!(p.iter().all(|&i| i / BLOCK_BITS == p[0] / BLOCK_BITS)); // one block
/// ```
#[inline]
pub fn blocked_probes(hash: KeyHash, k: u32, blocks: FastMod) -> impl Iterator<Item = u64> {
    probes_in_block(blocks.reduce(hash.lo), hash.lo, k)
}

/// [`blocked_probes`] of a hash with low half `lo` whose block `lo mod B` is known already
/// (a caller that requested the block's line computed it).
///
/// ```
/// use chronobloom_core::bloom::{blocked_probes, probes_in_block};
/// use chronobloom_core::hash::{FastMod, KeyHash};
/// let (h, m) = (KeyHash::of(&42u64, 7), FastMod::new(100).unwrap());
/// assert!(probes_in_block(m.reduce(h.lo), h.lo, 4).eq(blocked_probes(h, 4, m)));
/// ```
#[inline]
pub fn probes_in_block(block: u64, lo: u64, k: u32) -> impl Iterator<Item = u64> {
    let base = block * BLOCK_BITS;
    block_offsets(block_seed(lo), k).map(move |o| base + o)
}
