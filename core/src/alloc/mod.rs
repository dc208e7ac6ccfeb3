//! Bit allocation across the Bloom filters of a PBF (paper 000 §5, Appendix C).
//!
//! A PBF-1 (filters b_1..b_u plus the SBF b_{u+1}) or PBF-2 (one filter per level) answers a query
//! wrongly when any filter it consults gives a false positive. With d_i distinct items in filter i,
//! f_i expected probes of it per query and the optimal k_i = (m_i / d_i) ln 2, a filter's false
//! positive rate is 2^{−(ln 2) m_i / d_i} (eq. 3) and the probability that a query is answered
//! without error is Π_i (1 − 2^{−(ln 2) m_i / d_i})^{f_i}. The strategies here split a budget of m
//! bits over the filters:
//!
//! * [`Strategy::Optimal`] ([`solve`]): maximises Σ f_i ln(1 − 2^{−(ln 2) m_i / d_i}) subject to
//!   Σ m_i = m by the Lagrange condition (eqs. 10–13);
//! * [`Strategy::Proportional`] ([`proportional`]): m_i ∝ d_i, the allocation of Lemma C.2 under
//!   which every filter has the same false positive rate;
//! * [`Strategy::Uniform`]: m / (u + 1) bits each, the paper's default.
//!
//! Every strategy returns an [`Allocation`] that spends exactly m bits, with
//! k_i = ⌈(m_i / d_i) ln 2⌉ capped at `k_max` ([`DEFAULT_K_MAX`] = 16). [`bits_for_fpr`] is the
//! sizing rule of eq. 14, and [`Pbf1Workload`] / [`Pbf2Workload`] count the exact d_i and f_i of a
//! data set and query workload for offline allocation (the paper's β1-opt and β2-opt, Table 2); the
//! [`crate::sketch`] module estimates them online (§6).
//!
//! ```
//! use chronobloom_core::alloc::{predicted_fpr, FilterStats, Strategy};
//! // Three filters: a large one probed once per query, a small one probed twice, one never probed.
//! let stats = [
//!     FilterStats::new(10_000.0, 1.0),
//!     FilterStats::new(100.0, 2.0),
//!     FilterStats::new(5_000.0, 0.0),
//! ];
//! let opt = Strategy::Optimal.allocate(&stats, 200_000, 16).unwrap();
//! assert_eq!(opt.total_bits(), 200_000);
//! assert_eq!(opt.shapes()[2].bits, 0); // never probed: no bits
//! let uni = Strategy::Uniform.allocate(&stats, 200_000, 16).unwrap();
//! assert!(predicted_fpr(&opt, &stats).unwrap() < predicted_fpr(&uni, &stats).unwrap());
//! ```

mod lagrange;
mod online;
mod proportional;
mod sizing;
mod workload;

pub use lagrange::{solve, Solution};
pub use online::OnlineStrategy;
pub use proportional::proportional;
pub use sizing::{bits_for_fpr, fpr_for_bits};
pub use workload::{Pbf1Workload, Pbf2Workload};

use crate::bloom::FilterShape;
use crate::error::{Error, Result};
use crate::temporal::Allocation;
use serde::{Deserialize, Serialize};

/// The hash-count cap k_max used unless the caller chooses another.
pub const DEFAULT_K_MAX: u32 = 16;

/// What the allocation needs to know about one filter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FilterStats {
    /// d_i: distinct items inserted into the filter (an FM estimate online, so fractional).
    pub distinct: f64,
    /// f_i: expected membership probes of the filter per query (0..=1 for a PBF-1 node, 0..=2 for a
    /// PBF-2 level, up to about g for the SBF of a PBF-1).
    pub frequency: f64,
}

impl FilterStats {
    /// Statistics of one filter: `distinct` items, `frequency` probes per query.
    pub fn new(distinct: f64, frequency: f64) -> Self {
        FilterStats {
            distinct,
            frequency,
        }
    }

    /// True when the objective gains from giving this filter bits (d_i > 0 and f_i > 0).
    fn is_live(&self) -> bool {
        self.distinct > 0.0 && self.frequency > 0.0
    }
}

/// How a budget of bits is split over filters; all spend the budget exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// The Lagrange optimum of eqs. 10–13 ([`solve`]).
    Optimal,
    /// m_i ∝ d_i (Lemma C.2, [`proportional`]).
    Proportional,
    /// m / (u + 1) bits per filter, hash counts still chosen per filter from d_i.
    Uniform,
}

impl Strategy {
    /// Splits `budget` bits over the filters described by `stats`, with hash counts capped at
    /// `k_max`.
    pub fn allocate(&self, stats: &[FilterStats], budget: u64, k_max: u32) -> Result<Allocation> {
        match self {
            Strategy::Optimal => solve(stats, budget)?.allocation(stats, k_max),
            Strategy::Proportional => proportional(stats, budget, k_max),
            Strategy::Uniform => {
                check_stats(stats, budget, k_max)?;
                let n = stats.len() as u64;
                let bits = (0..n).map(|i| budget / n + u64::from(i < budget % n));
                shapes(bits.collect(), stats, k_max)
            }
        }
    }
}

/// The false positive rate the analysis predicts for a query: 1 − Π_i (1 − p_i)^{f_i}, with p_i
/// the eq. 2 rate of filter i's actual shape holding d_i items (the objective of §5, evaluated for
/// integer m_i and k_i). An empty filter (d_i = 0) never answers yes; a filter holding items but
/// given no bits answers "maybe", so any f_i > 0 on it makes the rate 1.
pub fn predicted_fpr(allocation: &Allocation, stats: &[FilterStats]) -> Result<f64> {
    if allocation.shapes().len() != stats.len() {
        return Err(Error::AllocationLength {
            expected: stats.len(),
            got: allocation.shapes().len(),
        });
    }
    let mut log_ok = 0.0;
    for (shape, s) in allocation.shapes().iter().zip(stats) {
        check_one(s)?;
        if !s.is_live() {
            continue;
        }
        let p = shape.fpr(s.distinct);
        if p >= 1.0 {
            return Ok(1.0);
        }
        log_ok += s.frequency * (-p).ln_1p();
    }
    Ok(-log_ok.exp_m1())
}

/// Validates the inputs every strategy shares.
fn check_stats(stats: &[FilterStats], budget: u64, k_max: u32) -> Result<()> {
    if stats.is_empty() {
        return Err(Error::invalid("stats", "there must be at least one filter"));
    }
    if budget == 0 {
        return Err(Error::invalid("budget", "must be at least 1 bit"));
    }
    if k_max == 0 {
        return Err(Error::invalid("k_max", "must be at least 1"));
    }
    FilterShape::new(1, k_max)?;
    stats.iter().try_for_each(check_one)
}

fn check_one(s: &FilterStats) -> Result<()> {
    if !(s.distinct.is_finite() && s.distinct >= 0.0) {
        return Err(Error::invalid(
            "distinct",
            format!("{} is not a finite count >= 0", s.distinct),
        ));
    }
    if !(s.frequency.is_finite() && s.frequency >= 0.0) {
        return Err(Error::invalid(
            "frequency",
            format!("{} is not a finite rate >= 0", s.frequency),
        ));
    }
    Ok(())
}

/// Rounds non-negative real bit counts to integers summing to exactly `budget` (largest
/// remainder): each filter gets ⌊x_i⌋ and the shortfall goes one bit at a time to the largest
/// fractional parts (ties to the lower index). Only filters with `eligible[i]` gain or lose bits,
/// and the real values may miss `budget` by floating point error. Selection, not sorting, keeps
/// this linear in the number of filters.
fn round_to_budget(real: &[f64], eligible: &[bool], budget: u64) -> Vec<u64> {
    let mut bits: Vec<u64> = real.iter().map(|&x| x.max(0.0).floor() as u64).collect();
    let mut order: Vec<(f64, usize)> = (0..real.len())
        .filter(|&i| eligible[i])
        .map(|i| (real[i] - real[i].floor(), i))
        .collect();
    let largest_first =
        |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let mut total: u64 = bits.iter().sum();
    while total < budget && !order.is_empty() {
        let need = (budget - total).min(order.len() as u64) as usize;
        if need < order.len() {
            order.select_nth_unstable_by(need, largest_first);
        }
        order[..need].iter().for_each(|&(_, i)| bits[i] += 1);
        total += need as u64;
    }
    while total > budget {
        order.retain(|&(_, i)| bits[i] > 0);
        if order.is_empty() {
            break;
        }
        let excess = (total - budget).min(order.len() as u64) as usize;
        let keep = order.len() - excess;
        if keep > 0 {
            order.select_nth_unstable_by(keep, largest_first);
        }
        order[keep..].iter().for_each(|&(_, i)| bits[i] -= 1);
        total -= excess as u64;
    }
    bits
}

/// Pairs each filter's bits with its hash count k_i = ⌈(m_i / d_i) ln 2⌉ capped at `k_max`.
fn shapes(bits: Vec<u64>, stats: &[FilterStats], k_max: u32) -> Result<Allocation> {
    Allocation::new(
        bits.into_iter()
            .zip(stats)
            .map(|(m, s)| FilterShape {
                bits: m,
                hashes: hashes_for(m, s.distinct, k_max),
            })
            .collect(),
    )
}

/// ⌈(m / d) ln 2⌉ in `1..=k_max`; 0 for a filter without bits, 1 for an empty one.
fn hashes_for(bits: u64, distinct: f64, k_max: u32) -> u32 {
    if bits == 0 {
        return 0;
    }
    if distinct <= 0.0 {
        return 1;
    }
    let k = (bits as f64 / distinct * std::f64::consts::LN_2).ceil();
    k.clamp(1.0, f64::from(k_max)) as u32
}

#[cfg(test)]
mod tests;
