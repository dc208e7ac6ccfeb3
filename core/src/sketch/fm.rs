//! Flajolet–Martin probabilistic counting with stochastic averaging (PCSA): the paper's estimator
//! of the distinct items d_i of each filter (paper 000 §6, its reference [17]: Flajolet and Martin,
//! "Probabilistic counting algorithms for data base applications", 1985).
//!
//! Each item's 128-bit key hash picks one of m bitmaps from its low half and a bit ρ — the number
//! of trailing zeros of its high half, so bit ρ is hit with probability 2^{−(ρ+1)} — and sets that
//! bit. With R_j the position of the lowest zero bit of bitmap j and A = (1/m) Σ R_j, Flajolet and
//! Martin's estimate is (m / φ) · 2^A with φ = 0.77351; its relative standard error is about
//! 0.78 / √m once n is large compared with m. For n up to a few m it is biased upwards, so two
//! small-range corrections apply:
//!
//! * while the linear-counting estimate m ln(m / E) (E empty bitmaps; Whang, Vander-Zanden and
//!   Taylor 1990) is at most [`LINEAR_COUNTING_LIMIT`]·m, it is the estimate;
//! * above that, (m / φ) · (2^A − 2^{−κA}) with κ = 1.75 (Scheuermann and Mauve 2007), which
//!   removes the bias of small A and tends to the classic estimate as A grows.
//!
//! Measured over 200 seeds (see the tests), the relative RMS error stays below 1.35 × 0.78 / √m
//! for every n, the excess being confined to n ≈ m..4m, and below 1.15 × 0.78 / √m for n ≥ 8m.
//! Sketches of the same shape and seed merge by OR into the sketch of the union.

use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use serde::{Deserialize, Serialize};

/// Flajolet and Martin's bias correction φ.
pub const PHI: f64 = 0.77351;
/// The estimate switches from linear counting to PCSA at this many items per bitmap.
pub const LINEAR_COUNTING_LIMIT: f64 = 2.0;
/// Scheuermann and Mauve's small-range exponent κ.
const KAPPA: f64 = 1.75;
/// The most bitmaps a sketch may have.
pub const MAX_BITMAPS: usize = 1 << 20;
/// Flajolet and Martin's constant: the relative standard error is about `STD_ERROR / √m`.
const STD_ERROR: f64 = 0.78;

/// A PCSA distinct-count sketch of `m` 32-bit bitmaps.
///
/// ```
/// use chronobloom_core::sketch::FmSketch;
/// let mut a = FmSketch::new(256, 7).unwrap();
/// let mut b = FmSketch::new(256, 7).unwrap();
/// (0..6_000u64).for_each(|k| a.insert(&k));
/// (4_000..10_000u64).for_each(|k| b.insert(&k));
/// a.merge(&b).unwrap(); // the union: 10,000 distinct keys
/// let (lo, hi) = a.bounds(3.0);
/// assert!(lo <= 10_000.0 && 10_000.0 <= hi);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FmParts")]
pub struct FmSketch {
    seed: u64,
    bitmaps: Vec<u32>,
}

/// The serialized form, validated into a sketch.
#[derive(Deserialize)]
struct FmParts {
    seed: u64,
    bitmaps: Vec<u32>,
}

impl TryFrom<FmParts> for FmSketch {
    type Error = Error;

    fn try_from(p: FmParts) -> Result<Self> {
        check_bitmaps(p.bitmaps.len())?;
        Ok(FmSketch {
            seed: p.seed,
            bitmaps: p.bitmaps,
        })
    }
}

fn check_bitmaps(m: usize) -> Result<()> {
    if !(1..=MAX_BITMAPS).contains(&m) {
        return Err(Error::invalid(
            "bitmaps",
            format!("{m} is outside 1..={MAX_BITMAPS}"),
        ));
    }
    Ok(())
}

impl FmSketch {
    /// An empty sketch of `bitmaps` bitmaps (1..=2^20) hashing keys with `seed`.
    pub fn new(bitmaps: usize, seed: u64) -> Result<Self> {
        check_bitmaps(bitmaps)?;
        Ok(FmSketch {
            seed,
            bitmaps: vec![0; bitmaps],
        })
    }

    /// The smallest sketch whose relative standard error 0.78 / √m is at most `relative_error`.
    pub fn with_accuracy(relative_error: f64, seed: u64) -> Result<Self> {
        if !(relative_error > 0.0 && relative_error < 1.0) {
            return Err(Error::invalid(
                "relative_error",
                format!("{relative_error} is not in (0, 1)"),
            ));
        }
        let m = (STD_ERROR / relative_error).powi(2).ceil();
        if m > MAX_BITMAPS as f64 {
            return Err(Error::invalid(
                "relative_error",
                format!("{relative_error} needs more than {MAX_BITMAPS} bitmaps"),
            ));
        }
        Self::new(m as usize, seed)
    }

    /// Number of bitmaps m.
    pub fn bitmaps(&self) -> usize {
        self.bitmaps.len()
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Memory held by the bitmaps, in bytes.
    pub fn memory_bytes(&self) -> usize {
        4 * self.bitmaps.len()
    }

    /// Counts `key`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(KeyHash::of(key, self.seed));
    }

    /// Counts a pre-hashed key (hashed with [`Self::seed`], or derived from such a hash, e.g. the
    /// (key, bucket) hash [`KeyHash::at`] of a PBF level).
    #[inline]
    pub fn insert_hash(&mut self, hash: KeyHash) {
        // Multiply-shift maps the low half onto 0..m without a division.
        let j = ((u128::from(hash.lo) * self.bitmaps.len() as u128) >> 64) as usize;
        let rho = hash.hi.trailing_zeros().min(31);
        self.bitmaps[j] |= 1 << rho;
    }

    /// ORs in a sketch of the same size and seed: afterwards this sketch counts the union.
    pub fn merge(&mut self, other: &FmSketch) -> Result<()> {
        if self.seed != other.seed {
            return Err(Error::ShapeMismatch {
                what: "seed",
                left: self.seed,
                right: other.seed,
            });
        }
        if self.bitmaps.len() != other.bitmaps.len() {
            return Err(Error::ShapeMismatch {
                what: "bitmaps",
                left: self.bitmaps.len() as u64,
                right: other.bitmaps.len() as u64,
            });
        }
        for (a, b) in self.bitmaps.iter_mut().zip(&other.bitmaps) {
            *a |= b;
        }
        Ok(())
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.bitmaps.iter().all(|&b| b == 0)
    }

    /// The estimated number of distinct keys counted.
    pub fn estimate(&self) -> f64 {
        let m = self.bitmaps.len() as f64;
        let empty = self.bitmaps.iter().filter(|&&b| b == 0).count();
        if empty > 0 {
            let linear = m * (m / empty as f64).ln();
            if linear <= LINEAR_COUNTING_LIMIT * m {
                return linear;
            }
        }
        let r: u32 = self.bitmaps.iter().map(|b| b.trailing_ones()).sum();
        let a = f64::from(r) / m;
        m / PHI * (a.exp2() - (-KAPPA * a).exp2())
    }

    /// The relative standard error of [`Self::estimate`], 0.78 / √m.
    pub fn relative_standard_error(&self) -> f64 {
        STD_ERROR / (self.bitmaps.len() as f64).sqrt()
    }

    /// The estimate ∓ `std_devs` standard errors, the lower end clamped at 0 (about 95% coverage
    /// for 2, 99.7% for 3 when m is large enough for the error to be near normal).
    pub fn bounds(&self, std_devs: f64) -> (f64, f64) {
        let e = self.estimate();
        let spread = std_devs * self.relative_standard_error() * e;
        ((e - spread).max(0.0), e + spread)
    }
}
