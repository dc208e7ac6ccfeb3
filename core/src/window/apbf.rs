//! The age-partitioned Bloom filter (APBF): a count window over the last insertions.
//!
//! Paper 001 §5 (Shtul, Baquero and Almeida's APBF) with the equations of FORMULAS.md: k + l slices
//! of `m = ceil(k g / ln 2)` bits in a ring (slice 0 newest), generations of g insertions, a
//! **shift** when a generation is complete (the oldest slice is cleared and becomes slice 0), the
//! insertion of a key into slices 0..k-1, and the consecutive-slice query scan (§5.3). The shape
//! (k, l) comes from a target ε and a level through F(k, l) (eq. 2, [`ApbfParams`]).
//!
//! Each physical slice of the ring keeps its own hash function (function p for ring position p),
//! so the k + l slices use k + l functions, all derived from the key's one [`KeyHash`].
//!
//! Guarantee: the last `l * g` insertions (plus the current generation) are always reported
//! present; an insertion is certainly gone after `(k + l) g` later ones.

use super::apbf_params::ApbfParams;
use super::scan::{position, scan};
use super::WindowFilter;
use crate::bits::Bits;
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};
use crate::temporal::Tick;
use serde::{Deserialize, Serialize};

/// The level [`Apbf::with_fpr`] uses: within a few percent of the fewest bits per item for ε from
/// 0.1 to 0.001, with k + l under 40 slices to scan.
pub const DEFAULT_LEVEL: u32 = 3;

/// Largest total size accepted, in bits (2^40, 128 GiB): a guard against sizes no machine holds.
pub const MAX_TOTAL_BITS: u64 = 1 << 40;

/// An age-partitioned Bloom filter over a count window.
///
/// ```
/// use chronobloom_core::window::{Apbf, WindowFilter};
/// // The last 1000 insertions at ε = 0.01.
/// let mut f = Apbf::with_fpr(1000, 0.01, 7).unwrap();
/// for i in 0..5000u64 {
///     f.insert(&i, i).unwrap();
/// }
/// assert!((4000..5000u64).all(|i| f.contains(&i, 5000)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ApbfRepr")]
pub struct Apbf {
    params: ApbfParams,
    generation: u64,
    seed: u64,
    modulus: FastMod,
    /// The ring, indexed by physical position; logical slice i is `slices[(newest + i) % len]`.
    slices: Vec<Bits>,
    newest: usize,
    /// Insertions in the current generation.
    count: u64,
    shifts: u64,
    now: Option<Tick>,
}

/// The serialized form, checked before it becomes an [`Apbf`].
#[derive(Deserialize)]
struct ApbfRepr {
    params: ApbfParams,
    generation: u64,
    seed: u64,
    modulus: FastMod,
    slices: Vec<Bits>,
    newest: usize,
    count: u64,
    shifts: u64,
    now: Option<Tick>,
}

impl TryFrom<ApbfRepr> for Apbf {
    type Error = Error;
    /// The slices read are checked against the generation size before anything is allocated
    /// for it: a size from a corrupted file must not size an allocation.
    fn try_from(r: ApbfRepr) -> Result<Self> {
        let modulus = slice_modulus(r.params, r.generation)?;
        if r.modulus != modulus {
            return Err(Error::ShapeMismatch {
                what: "slice modulus for the generation size",
                left: modulus.divisor(),
                right: r.modulus.divisor(),
            });
        }
        if r.slices.len() != r.params.slices() as usize {
            return Err(Error::ShapeMismatch {
                what: "slices for k + l",
                left: u64::from(r.params.slices()),
                right: r.slices.len() as u64,
            });
        }
        if let Some(bad) = r.slices.iter().find(|s| s.len() != modulus.divisor()) {
            return Err(Error::ShapeMismatch {
                what: "bits per slice",
                left: modulus.divisor(),
                right: bad.len(),
            });
        }
        if r.newest >= r.slices.len() {
            return Err(Error::invalid("newest", "ring position outside the ring"));
        }
        if r.count > r.generation {
            return Err(Error::invalid(
                "count",
                "more insertions in the generation than its size",
            ));
        }
        Ok(Apbf {
            params: r.params,
            generation: r.generation,
            seed: r.seed,
            modulus,
            slices: r.slices,
            newest: r.newest,
            count: r.count,
            shifts: r.shifts,
            now: r.now,
        })
    }
}

/// The modulus of slices for generations of `generation` insertions (at least 1):
/// `m = ceil(k g / ln 2)` bits each, at most [`MAX_TOTAL_BITS`] over the `k + l` slices.
fn slice_modulus(params: ApbfParams, generation: u64) -> Result<FastMod> {
    if generation == 0 {
        return Err(Error::invalid(
            "generation",
            "a generation needs at least one insertion",
        ));
    }
    let k = f64::from(params.k());
    let m = (k * generation as f64 / std::f64::consts::LN_2).ceil() as u64;
    let total = m.checked_mul(u64::from(params.slices()));
    match (FastMod::new(m), total) {
        (Some(modulus), Some(total)) if total <= MAX_TOTAL_BITS => Ok(modulus),
        _ => Err(Error::invalid(
            "generation",
            format!("{generation} insertions per generation need more than {MAX_TOTAL_BITS} bits"),
        )),
    }
}

impl Apbf {
    /// An empty filter of shape `params` with generations of `generation` insertions (at least 1):
    /// it guarantees the last `l * generation` insertions.
    pub fn new(params: ApbfParams, generation: u64, seed: u64) -> Result<Self> {
        let modulus = slice_modulus(params, generation)?;
        Ok(Apbf {
            params,
            generation,
            seed,
            modulus,
            slices: vec![Bits::new(modulus.divisor()); params.slices() as usize],
            newest: 0,
            count: 0,
            shifts: 0,
            now: None,
        })
    }

    /// A filter guaranteeing the last `window` insertions at false positive rate `fpr`, with the
    /// shape of [`DEFAULT_LEVEL`].
    pub fn with_fpr(window: u64, fpr: f64, seed: u64) -> Result<Self> {
        Self::with_fpr_level(window, fpr, DEFAULT_LEVEL, seed)
    }

    /// A filter guaranteeing the last `window` insertions at false positive rate `fpr`, with the
    /// shape [`ApbfParams::for_fpr`] gives for `level`; generations of `ceil(window / l)`.
    pub fn with_fpr_level(window: u64, fpr: f64, level: u32, seed: u64) -> Result<Self> {
        if window == 0 {
            return Err(Error::invalid(
                "window",
                "a count window needs at least one insertion",
            ));
        }
        let params = ApbfParams::for_fpr(fpr, level)?;
        Self::new(params, window.div_ceil(u64::from(params.l())), seed)
    }

    /// The shape (k, l).
    pub fn params(&self) -> ApbfParams {
        self.params
    }

    /// Insertions per generation, g.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Bits per slice, m.
    pub fn slice_bits(&self) -> u64 {
        self.modulus.divisor()
    }

    /// The guaranteed count window, `l * g` insertions.
    pub fn window(&self) -> u64 {
        u64::from(self.params.l()) * self.generation
    }

    /// The design false positive rate F(k, l), reached just before a shift.
    pub fn expected_fpr(&self) -> f64 {
        self.params.fpr()
    }

    /// The false positive rate implied by the slices' current fills (F with the measured fills).
    pub fn estimated_fpr(&self) -> f64 {
        let fills: Vec<f64> = (0..self.slices.len())
            .map(|i| self.slice(i).fill_ratio())
            .collect();
        super::apbf_params::run_probability(&fills, self.params.k() as usize)
    }

    #[inline]
    fn physical(&self, logical: usize) -> usize {
        let i = self.newest + logical;
        if i >= self.slices.len() {
            i - self.slices.len()
        } else {
            i
        }
    }

    fn slice(&self, logical: usize) -> &Bits {
        &self.slices[self.physical(logical)]
    }

    /// Drops the oldest slice and reuses it, cleared, as the new slice 0.
    fn shift(&mut self) {
        self.newest = self.physical(self.slices.len() - 1);
        self.slices[self.newest] = Bits::new(self.slice_bits());
        self.count = 0;
        self.shifts = self.shifts.saturating_add(1);
    }

    fn observe(&mut self, now: Tick) -> Result<()> {
        match self.now {
            Some(last) if now < last => Err(Error::TimeWentBackwards { now, last }),
            _ => {
                self.now = Some(now);
                Ok(())
            }
        }
    }
}

impl WindowFilter for Apbf {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, now: Tick) -> Result<()> {
        self.observe(now)?;
        if self.count == self.generation {
            self.shift();
        }
        for j in 0..self.params.k() as usize {
            let p = self.physical(j);
            let bit = position(hash, p as u64, self.modulus);
            self.slices[p].set(bit);
        }
        self.count += 1;
        Ok(())
    }

    /// A count window's answer depends on the insertions only, not on `now`.
    fn contains_hash(&self, hash: KeyHash, _now: Tick) -> bool {
        scan(self.slices.len(), self.params.k() as usize, |i| {
            let p = self.physical(i);
            self.slices[p].test(position(hash, p as u64, self.modulus))
        })
    }

    /// A count window retires by insertions, not by time: this only checks that time does not go
    /// backwards.
    fn advance(&mut self, now: Tick) -> Result<()> {
        self.observe(now)
    }

    fn memory_bits(&self) -> u64 {
        self.slices.iter().map(Bits::memory_bits).sum()
    }

    /// Insertions with a bit left in some slice: the current generation and the previous
    /// `k + l - 1` ones.
    fn items(&self) -> u64 {
        let older = self.shifts.min(self.slices.len() as u64 - 1);
        self.count + older * self.generation
    }
}

#[cfg(test)]
mod tests;
