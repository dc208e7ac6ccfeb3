//! The shape (k, l) of an age-partitioned filter and its false positive rate F(k, l).
//!
//! Paper 001 §5.4 (eq. 2) gives the worst-case fill ratios just before a shift,
//! `r_i = (i + 1) / (2k)` for the k insertion-zone slices and `1/2` for the l older ones; the
//! recursion F(a, i) of FORMULAS.md ("Age-Partitioned Bloom Filter") turns them into the
//! probability that k *consecutive* slices all match. A target ε and a level fix
//! `k = ceil(log2(1/ε)) + level`, and l is the largest value with `F(k, l) <= ε` (computed, never
//! read from the published table, which picks the nearest value and sometimes lands above ε).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Largest number of hash functions k accepted (ε down to about 2^-60).
pub const MAX_K: u32 = 64;
/// Largest number of slices k + l accepted.
pub const MAX_SLICES: u32 = 4096;
/// Largest level accepted by [`ApbfParams::for_fpr`].
pub const MAX_LEVEL: u32 = 8;

/// The shape of an age-partitioned filter: k insertion-zone slices and l older ones.
///
/// ```
/// use chronobloom_core::window::ApbfParams;
/// let p = ApbfParams::for_fpr(0.01, 3).unwrap();
/// assert_eq!(p.k(), 10);
/// assert!(p.fpr() <= 0.01);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ParamsRepr")]
pub struct ApbfParams {
    k: u32,
    l: u32,
}

#[derive(Deserialize)]
struct ParamsRepr {
    k: u32,
    l: u32,
}

impl TryFrom<ParamsRepr> for ApbfParams {
    type Error = Error;
    fn try_from(r: ParamsRepr) -> Result<Self> {
        ApbfParams::new(r.k, r.l)
    }
}

impl ApbfParams {
    /// An explicit shape: `1 <= k <= MAX_K`, `l >= 1`, `k + l <= MAX_SLICES`.
    pub fn new(k: u32, l: u32) -> Result<Self> {
        if k == 0 || k > MAX_K {
            return Err(Error::invalid(
                "k",
                format!("{k} hash functions; use 1 to {MAX_K}"),
            ));
        }
        if l == 0 || l > MAX_SLICES - k {
            return Err(Error::invalid(
                "l",
                format!("{l} older slices; use 1 to {}", MAX_SLICES - k),
            ));
        }
        Ok(ApbfParams { k, l })
    }

    /// The shape for a target false positive rate at a level: `k = ceil(log2(1/fpr)) + level` and
    /// the largest l with `F(k, l) <= fpr`. Higher levels use more, smaller slices: fewer bits per
    /// item up to a point, longer query scans.
    pub fn for_fpr(fpr: f64, level: u32) -> Result<Self> {
        if !(fpr.is_finite() && fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid(
                "fpr",
                format!("{fpr}; use a rate strictly between 0 and 1"),
            ));
        }
        if level > MAX_LEVEL {
            return Err(Error::invalid(
                "level",
                format!("{level}; use 0 to {MAX_LEVEL}"),
            ));
        }
        let base = (1.0 / fpr).log2().ceil().max(1.0);
        if base > f64::from(MAX_K - level) {
            return Err(Error::invalid(
                "fpr",
                format!("{fpr} needs more than {MAX_K} hash functions at level {level}"),
            ));
        }
        let k = base as u32 + level;
        let fits = |l: u32| fpr_of(k, l) <= fpr;
        if !fits(1) {
            return Err(Error::invalid(
                "level",
                format!("no l reaches fpr {fpr} with k = {k}; use another level"),
            ));
        }
        // F grows with l (one more slice can only add chances of a run), so bracket the boundary by
        // doubling and then bisect it.
        let max_l = MAX_SLICES - k;
        let (mut lo, mut hi) = (1u32, 2u32);
        while hi <= max_l && fits(hi) {
            lo = hi;
            hi = hi.saturating_mul(2);
        }
        hi = hi.min(max_l + 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        ApbfParams::new(k, lo)
    }

    /// Hash functions per insertion: the number of slices in the insertion zone.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Slices beyond the insertion zone: the guaranteed window spans l generations.
    pub fn l(&self) -> u32 {
        self.l
    }

    /// Total number of slices, k + l.
    pub fn slices(&self) -> u32 {
        self.k + self.l
    }

    /// F(k, l): the false positive rate with the worst-case fills just before a shift.
    pub fn fpr(&self) -> f64 {
        fpr_of(self.k, self.l)
    }

    /// Bits per item of the guaranteed window with slices of `ceil(k g / ln 2)` bits:
    /// `(k + l) k / (l ln 2)`.
    pub fn bits_per_item(&self) -> f64 {
        f64::from(self.slices()) * f64::from(self.k) / (f64::from(self.l) * std::f64::consts::LN_2)
    }
}

fn fpr_of(k: u32, l: u32) -> f64 {
    let fills: Vec<f64> = (0..k + l)
        .map(|i| {
            if i < k {
                f64::from(i + 1) / f64::from(2 * k)
            } else {
                0.5
            }
        })
        .collect();
    run_probability(&fills, k as usize)
}

/// The probability that some k consecutive slices all match a key, when slice i matches
/// independently with probability `fills[i]`: F(0, 0) of FORMULAS.md, computed from the last slice
/// down so that each F(a, i) is evaluated once.
pub fn run_probability(fills: &[f64], k: usize) -> f64 {
    if k == 0 {
        return 1.0;
    }
    // next[a] = F(a, i + 1) for a < k; F(k, _) = 1 and F(a, len) = 0.
    let mut next = vec![0.0; k];
    let mut cur = vec![0.0; k];
    for &r in fills.iter().rev() {
        for a in 0..k {
            let hit = if a + 1 == k { 1.0 } else { next[a + 1] };
            cur[a] = r * hit + (1.0 - r) * next[0];
        }
        std::mem::swap(&mut next, &mut cur);
    }
    next[0]
}
