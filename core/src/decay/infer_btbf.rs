//! The inferential BTBF (paper 004 §4): the sliding-window posterior `P(I_x < w | R_x)` from the
//! observation `(r_x, λ_x, c_x, b)` by Theorems 2–5, with the §4.4 caching.
//!
//! `F(r, c, j) ≈ t^c (1 − t)^{r−c}`, `t = ((1 − 1/m)^k)^{D(j)}` (eq. 21) is the probability that a
//! given `c` of `r` timers escape `j` insertions while the other `r − c` are touched. With
//! `L = ⌈(w − b)/B⌉`:
//!
//! - `λ_x > L` (an expired timer): 0 (Theorem 2);
//! - `λ_x = 0`: `1 − (1−p)^w / ((1 − (1−p)^b) / F(r, 0, b) + (1−p)^b)` (eq. 23);
//! - `0 < λ_x < L`: `1 − (1−p)^{w−(λ−1)B−b} / ((1 − (1−p)^B) / F(c, 0, B) + (1−p)^B)` (eq. 26;
//!   the paper's last line prints `(1 − (1−p)^w)` in the numerator of the fraction, a typo: the
//!   line before it, and the proof's algebra, give `(1 − (1−p)^B)`);
//! - `λ_x = L`: `(1 − (1−p)^{w−(λ−1)B−b}) / (1 − (1−p)^B (1 − F(c, 0, B)))` (eq. 27).
//!
//! Caching (§4.4): `(1 − 1/m)^k`, `D(B)` and `F(c, 0, B)` for every `c ≤ k` are computed once,
//! and an item's `ln(1 − p)` and `(1 − p)^B` can be kept too ([`ItemTerms`]), so eqs. 26 and 27
//! cost one exponential; only the rare `λ_x = 0` needs `D(b)`.

use super::btbf::TimerObservation;
use super::prior::DistinctModel;
use super::retro::{age_posterior, AgePosterior};
use super::shape::BtbfShape;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Posterior computations for one BTBF shape and `D(j)` model.
///
/// ```
/// use chronobloom_core::decay::{prior::DistinctModel, Btbf, BtbfInference, BtbfShape};
/// let shape = BtbfShape::for_bits(1_000, 8_000, 4).unwrap();
/// let mut f = Btbf::new(shape, 1).unwrap();
/// let inf = BtbfInference::new(shape, DistinctModel::uniform(2_000).unwrap());
/// for i in 0..5_000u64 {
///     f.insert(&(i % 2_000));
/// }
/// let p = inf.posterior(&f.observe(&999u64), 1.0 / 2_000.0); // the last insertion
/// assert!(p > 0.9);
/// ```
///
/// Read back with serde, the cache must be the one [`BtbfInference::new`] computes for its shape
/// (checked as [`BtbfShape::new`] checks it) and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "InferenceRepr")]
pub struct BtbfInference {
    shape: BtbfShape,
    distinct: DistinctModel,
    /// `(1 − 1/m)^k`: a timer escapes one insertion.
    escape: f64,
    /// `F(c, 0, B)` for `c = 0..=k`.
    touched_in_block: Vec<f64>,
}

/// The serialized form of [`BtbfInference`], checked on the way in.
#[derive(Deserialize)]
struct InferenceRepr {
    shape: BtbfShape,
    distinct: DistinctModel,
    escape: f64,
    touched_in_block: Vec<f64>,
}

impl TryFrom<InferenceRepr> for BtbfInference {
    type Error = Error;
    fn try_from(r: InferenceRepr) -> Result<Self> {
        let s = r.shape;
        if BtbfShape::new(s.window, s.timers, s.hashes, s.bpt, s.block)? != s {
            return Err(Error::invalid("shape", "not one BtbfShape::new builds"));
        }
        let rebuilt = BtbfInference::new(s, r.distinct);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        let cache_ok = same(rebuilt.escape, r.escape)
            && rebuilt.touched_in_block.len() == r.touched_in_block.len()
            && rebuilt
                .touched_in_block
                .iter()
                .zip(&r.touched_in_block)
                .all(|(&a, &b)| same(a, b));
        if !cache_ok {
            return Err(Error::invalid(
                "cache",
                "does not match the shape and model it is for",
            ));
        }
        Ok(rebuilt)
    }
}

impl BtbfInference {
    /// Precomputes the §4.4 cache for `shape` under the `D(j)` model `distinct`.
    pub fn new(shape: BtbfShape, distinct: DistinctModel) -> Self {
        let escape = escape_per_insert(&shape);
        let t = escape.powf(distinct.distinct(shape.block as f64));
        let touched_in_block = (0..=shape.hashes)
            .map(|c| (1.0 - t).powi(c as i32))
            .collect();
        BtbfInference {
            shape,
            distinct,
            escape,
            touched_in_block,
        }
    }

    /// The shape the cache is for.
    pub fn shape(&self) -> &BtbfShape {
        &self.shape
    }

    /// `P(I_x < w | R_x)` for an item of sample probability `p` (Theorems 2–5), from the cache.
    #[inline]
    pub fn posterior(&self, obs: &TimerObservation, p: f64) -> f64 {
        self.posterior_with(obs, &self.item(p))
    }

    /// The per-item terms of `p` for [`Self::posterior_with`].
    #[inline]
    pub fn item(&self, p: f64) -> ItemTerms {
        ItemTerms::new(p, self.shape.block)
    }

    /// [`Self::posterior`] with the item's prior terms computed beforehand (once per distinct
    /// `p_x`: for a uniform stream, once).
    #[inline]
    pub fn posterior_with(&self, obs: &TimerObservation, item: &ItemTerms) -> f64 {
        let f_block = |c: u32| {
            self.touched_in_block
                .get(c as usize)
                .copied()
                .unwrap_or_else(|| (1.0 - self.escape_over(self.shape.block)).powi(c as i32))
        };
        self.theorems(obs, item, f_block)
    }

    /// [`Self::posterior`] without the cache: `(1 − 1/m)^k`, `D(B)` and `F(c, 0, B)` are computed
    /// for the query (the §4.4 baseline the benchmark compares against).
    pub fn posterior_uncached(&self, obs: &TimerObservation, p: f64) -> f64 {
        let f_block = |c: u32| {
            let escape = escape_per_insert(&self.shape);
            let t = escape.powf(self.distinct.distinct(self.shape.block as f64));
            (1.0 - t).powi(c as i32)
        };
        self.theorems(obs, &self.item(p), f_block)
    }

    /// Theorems 2–5 with `F(c, 0, B)` from `f_block`.
    #[inline]
    fn theorems(
        &self,
        obs: &TimerObservation,
        item: &ItemTerms,
        f_block: impl Fn(u32) -> f64,
    ) -> f64 {
        let s = &self.shape;
        let (b, live) = (obs.in_block, obs.live);
        let Some(lambda) = obs.oldest.filter(|&l| l <= live) else {
            return 0.0; // Theorem 2
        };
        let pow = |n: u64| item.survive(n);
        let value = if lambda == 0 {
            let f = (1.0 - self.escape_over(b)).powi(obs.distinct as i32);
            if b == 0 || f == 0.0 {
                // b = 0 with age 0 cannot be observed (no insertion yet in the block): the prior
                return 1.0 - pow(s.window);
            }
            let pb = pow(b);
            1.0 - pow(s.window) / ((1.0 - pb) / f + pb) // eq. 23
        } else {
            // (λ − 1)B + b < w whenever λ ≤ L
            let rest = s.window.saturating_sub((lambda - 1) * s.block + b);
            let f = f_block(obs.at_oldest);
            let pb = item.block;
            if lambda < live {
                if f == 0.0 {
                    return 1.0;
                }
                1.0 - pow(rest) / ((1.0 - pb) / f + pb) // eq. 26
            } else {
                (1.0 - pow(rest)) / (1.0 - pb * (1.0 - f)) // eq. 27
            }
        };
        value.clamp(0.0, 1.0)
    }

    /// `t = ((1 − 1/m)^k)^{D(j)}`: a timer escapes `j` insertions.
    #[inline]
    fn escape_over(&self, j: u64) -> f64 {
        self.escape.powf(self.distinct.distinct(j as f64))
    }

    /// `F(r, c, j)` (eq. 21).
    fn f(&self, r: u32, c: u32, j: u64) -> f64 {
        let t = self.escape_over(j);
        t.powi(c as i32) * (1.0 - t).powi((r - c.min(r)) as i32)
    }

    /// The posterior of the insertion age (most likely value, `E[I_x | R_x]` within
    /// `tolerance`, any window): [`age_posterior`] over [`Self::likelihood`].
    pub fn age(
        &self,
        obs: &TimerObservation,
        p: f64,
        tolerance: f64,
        max_terms: u64,
    ) -> Result<AgePosterior> {
        age_posterior(p, |i| self.likelihood(obs, i), tolerance, max_terms)
    }

    /// `P(R_x | I_x = i)` (Lemmas 4.1 and 4.2). With an expired timer the paper gives no
    /// likelihood; this uses 0 inside the window and 1 beyond it (the posterior is then the prior
    /// conditioned on `I_x ≥ w`), ignoring what the other timers say.
    pub fn likelihood(&self, obs: &TimerObservation, i: u64) -> f64 {
        let s = &self.shape;
        let b = obs.in_block;
        match obs.oldest.filter(|&l| l <= obs.live) {
            None => f64::from(u8::from(i >= s.window)),
            Some(0) if i < b => 1.0,
            Some(0) => self.f(obs.distinct, 0, b),
            Some(lambda) => {
                let since = (lambda - 1) * s.block + b;
                if i < since {
                    0.0
                } else if i < since + s.block {
                    self.f(obs.distinct, obs.at_oldest, since)
                } else {
                    // eq. 25
                    self.f(obs.at_oldest, 0, s.block) * self.f(obs.distinct, obs.at_oldest, since)
                }
            }
        }
    }
}

/// The prior terms of one item (§4.4): `ln(1 − p)` and `(1 − p)^B`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ItemTerms {
    ln_survive: f64,
    block: f64,
}

impl ItemTerms {
    /// The terms of sample probability `p` for blocks of `block` insertions.
    #[inline]
    pub fn new(p: f64, block: u64) -> Self {
        let ln_survive = (-p).ln_1p();
        ItemTerms {
            ln_survive,
            block: (block as f64 * ln_survive).exp(),
        }
    }

    /// `(1 − p)^n`.
    #[inline]
    fn survive(&self, n: u64) -> f64 {
        (n as f64 * self.ln_survive).exp()
    }
}

/// `(1 − 1/m)^k`.
fn escape_per_insert(shape: &BtbfShape) -> f64 {
    (1.0 - 1.0 / shape.timers as f64).powi(shape.hashes as i32)
}
