//! The Lagrange-optimal allocation (paper 000 §5.1–5.2, eqs. 10–13).
//!
//! Maximising Σ f_i ln(1 − 2^{−(ln 2) m_i / d_i}) subject to Σ m_i = m gives, for every filter with
//! d_i > 0 and f_i > 0 (eq. 10, with μ = −λ > 0 and c = ln² 2),
//!
//! ```text
//! m_i(μ) = (d_i / c) · ln(1 + f_i c / (d_i μ)),
//! ```
//!
//! and m_i = 0 for the others. The budget function B(μ) = Σ m_i(μ) falls strictly from ∞ to 0, so
//! eq. 12 / 13, B(μ) = m, has exactly one root. The solver works in ν = ln μ, where every m_i is a
//! softplus, (d_i / c) · ln(1 + e^{a_i − ν}) with a_i = ln(f_i c / d_i), so no quantity under- or
//! overflows however large the budget (the original Java solver gave up with
//! `TooManyEvaluations` once λ became tiny). B is convex and decreasing in ν. Two closed forms
//! bracket the root: softplus(x) ≥ x gives a ν with B ≥ m, and softplus(x) ≤ e^x one with B ≤ m;
//! the bracket is widened by doubling steps should rounding make either fail. Inside it the solver
//! takes Newton steps, falling back to bisection whenever a step would leave the bracket, so it
//! always converges and usually needs fewer than ten passes over the filters.

use super::{check_stats, round_to_budget, shapes, FilterStats};
use crate::error::{Error, Result};
use crate::temporal::Allocation;
use serde::{Deserialize, Serialize};

/// ln² 2: the constant of eqs. 10–13.
const C: f64 = std::f64::consts::LN_2 * std::f64::consts::LN_2;
/// The solver stops once the bracket is this narrow relative to ν, or after this many passes.
const REL_WIDTH: f64 = 1e-15;
const MAX_PASSES: u32 = 300;

/// The continuous optimum of eqs. 10–13 for one budget: λ and the real m_i.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Solution {
    budget: u64,
    log_mu: f64,
    bits: Vec<f64>,
    passes: u32,
}

impl Solution {
    /// The paper's multiplier λ (negative). It underflows to −0 for budgets of more than about
    /// 1,000 bits per item; [`Self::log_neg_lambda`] stays exact.
    pub fn lambda(&self) -> f64 {
        -self.log_mu.exp()
    }

    /// ln(−λ): the variable the solver works in.
    pub fn log_neg_lambda(&self) -> f64 {
        self.log_mu
    }

    /// The real-valued m_i of eq. 10, in filter order; they sum to the budget up to rounding.
    pub fn bits(&self) -> &[f64] {
        &self.bits
    }

    /// The budget m the solution spends.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Passes over the filters the solver made (evaluations of the budget function).
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// The integer allocation: m_i rounded so that Σ m_i = m exactly (largest remainder), and
    /// k_i = ⌈(m_i / d_i) ln 2⌉ capped at `k_max`. `stats` must be the statistics solved for.
    pub fn allocation(&self, stats: &[FilterStats], k_max: u32) -> Result<Allocation> {
        check_stats(stats, self.budget, k_max)?;
        if stats.len() != self.bits.len() {
            return Err(Error::AllocationLength {
                expected: self.bits.len(),
                got: stats.len(),
            });
        }
        let live: Vec<bool> = stats.iter().map(FilterStats::is_live).collect();
        shapes(
            round_to_budget(&self.bits, &live, self.budget),
            stats,
            k_max,
        )
    }
}

/// Solves eqs. 12 / 13 for λ and eq. 10 for the m_i, spending `budget` bits over the filters
/// described by `stats` (PBF-1: nodes in [`crate::temporal::Pbf1::layout`] order, then the SBF;
/// PBF-2: levels, finest first).
///
/// Errors when `stats` is empty, `budget` is 0, any d_i or f_i is negative or not finite, or no
/// filter has both d_i > 0 and f_i > 0.
///
/// ```
/// use chronobloom_core::alloc::{solve, FilterStats};
/// let stats = [FilterStats::new(1_000.0, 1.0), FilterStats::new(1_000.0, 1.0)];
/// let s = solve(&stats, 20_000).unwrap();
/// assert!((s.bits()[0] - 10_000.0).abs() < 1e-6); // symmetric filters split evenly
/// ```
pub fn solve(stats: &[FilterStats], budget: u64) -> Result<Solution> {
    check_stats(stats, budget, 1)?;
    let live = Live::new(stats);
    if live.weight.is_empty() {
        return Err(Error::invalid(
            "stats",
            "no filter has both distinct items and probes: there is nothing to allocate",
        ));
    }
    let m = budget as f64;
    let mut passes = 0;
    let excess = |nu: f64, passes: &mut u32| {
        *passes += 1;
        let (b, db) = live.budget(nu);
        (b - m, db)
    };

    // softplus(x) >= x: B(nu_lo) >= m.  softplus(x) <= e^x: B(nu_hi) <= m.
    let total_weight: f64 = live.weight.iter().sum();
    let weighted_a: f64 = live.weight.iter().zip(&live.a).map(|(w, a)| w * a).sum();
    let mut lo = (weighted_a - m) / total_weight;
    let mut hi = (live.frequency / m).ln();
    let (mut g_lo, mut dg_lo) = excess(lo, &mut passes);
    let mut step = 1.0;
    while g_lo < 0.0 {
        lo -= step;
        step *= 2.0;
        (g_lo, dg_lo) = excess(lo, &mut passes);
    }
    let mut step = 1.0;
    while excess(hi, &mut passes).0 > 0.0 {
        hi += step;
        step *= 2.0;
    }

    // Safeguarded Newton from the left end: B is convex, so Newton steps from a point with
    // B >= m stay left of the root; bisection takes over if a step leaves the bracket.
    let (mut x, mut g, mut dg) = (lo, g_lo, dg_lo);
    while g != 0.0 && hi - lo > REL_WIDTH * lo.abs().max(hi.abs()).max(1.0) && passes < MAX_PASSES {
        let newton = x - g / dg;
        x = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        (g, dg) = excess(x, &mut passes);
        if g > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        if g.abs() <= 1e-12 * m {
            break;
        }
    }
    let bits = live.bits(x, stats);
    Ok(Solution {
        budget,
        log_mu: x,
        bits,
        passes,
    })
}

/// ln(1 + e^x) and its derivative, the logistic σ(x), from one exponential.
#[inline]
fn softplus(x: f64) -> (f64, f64) {
    let e = (-x.abs()).exp();
    let sp = x.max(0.0) + e.ln_1p();
    let sigma = if x >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    (sp, sigma)
}

/// The filters with d_i > 0 and f_i > 0, as weights d_i / c and offsets a_i = ln(f_i c / d_i).
struct Live {
    weight: Vec<f64>,
    a: Vec<f64>,
    /// Σ f_i over live filters.
    frequency: f64,
}

impl Live {
    fn new(stats: &[FilterStats]) -> Self {
        let live = stats.iter().filter(|s| s.is_live());
        Live {
            weight: live.clone().map(|s| s.distinct / C).collect(),
            a: live
                .clone()
                .map(|s| (s.frequency * C / s.distinct).ln())
                .collect(),
            frequency: live.map(|s| s.frequency).sum(),
        }
    }

    /// Eq. 10 in the log domain, m_i = (d_i / c) · softplus(a_i − ν), in filter order (0 for the
    /// filters that are not live).
    fn bits(&self, nu: f64, stats: &[FilterStats]) -> Vec<f64> {
        let mut live = self.weight.iter().zip(&self.a);
        stats
            .iter()
            .map(|s| match s.is_live() {
                true => live.next().map_or(0.0, |(w, a)| w * softplus(a - nu).0),
                false => 0.0,
            })
            .collect()
    }

    /// B(ν) and dB/dν.
    fn budget(&self, nu: f64) -> (f64, f64) {
        let (mut b, mut db) = (0.0, 0.0);
        for (w, a) in self.weight.iter().zip(&self.a) {
            let (sp, sigma) = softplus(a - nu);
            b += w * sp;
            db -= w * sigma;
        }
        (b, db)
    }
}
