//! The proportional allocation of Lemma C.2 (paper 000 Appendix C.1): m_i = θ·d_i with
//! θ = m / Σ d_i.
//!
//! Under it every filter holds θ bits per item and so has the same false positive rate,
//! 2^{−(ln 2) θ}: the PBF behaves exactly like the auxiliary single filter S of Definition C.1. The
//! optimum of eqs. 10–13 is never worse, which is how eq. 14 bounds the space of an optimised PBF.
//! It ignores the probe frequencies, so it suits a workload that is not known yet.

use super::{check_stats, round_to_budget, shapes, FilterStats};
use crate::error::{Error, Result};
use crate::temporal::Allocation;

/// Splits `budget` bits in proportion to the filters' distinct item counts (Lemma C.2), rounded to
/// spend exactly `budget`; k_i = ⌈(m_i / d_i) ln 2⌉ capped at `k_max`. Probe frequencies are
/// validated but otherwise unused. Errors when every d_i is 0.
///
/// ```
/// use chronobloom_core::alloc::{proportional, FilterStats};
/// let stats = [FilterStats::new(300.0, 1.0), FilterStats::new(100.0, 0.0)];
/// let a = proportional(&stats, 4_000, 16).unwrap();
/// assert_eq!(a.shapes()[0].bits, 3_000);
/// assert_eq!(a.shapes()[1].bits, 1_000);
/// assert_eq!(a.shapes()[0].hashes, 7); // ⌈10 ln 2⌉
/// ```
pub fn proportional(stats: &[FilterStats], budget: u64, k_max: u32) -> Result<Allocation> {
    check_stats(stats, budget, k_max)?;
    let total: f64 = stats.iter().map(|s| s.distinct).sum();
    if total <= 0.0 {
        return Err(Error::invalid(
            "stats",
            "every filter is empty (all d_i = 0): there is nothing to allocate",
        ));
    }
    let theta = budget as f64 / total;
    let real: Vec<f64> = stats.iter().map(|s| theta * s.distinct).collect();
    let holds_items: Vec<bool> = stats.iter().map(|s| s.distinct > 0.0).collect();
    shapes(round_to_budget(&real, &holds_items, budget), stats, k_max)
}
