//! Priors (paper 004 §2.3.1, §2.5): the per-item sample probability `p_x`, the prior `P(i)` of
//! the insertion age (eqs. 3–5), and the expected number of distinct items `D(j)` among `j`
//! insertions (eqs. 15–18).

use crate::error::{Error, Result};
use crate::hash::KeyHash;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Euler's constant γ (eq. 17).
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// `(1 − p)^n` for real `n`, accurate for tiny `p`.
#[inline]
pub fn survive(p: f64, n: f64) -> f64 {
    (n * (-p).ln_1p()).exp()
}

/// The continuous-stream prior `P(I_x = i) = p_x (1 − p_x)^i` (eq. 4).
pub fn prior(p: f64, i: u64) -> f64 {
    p * survive(p, i as f64)
}

/// `P(α ≤ I_x < β) = (1 − p_x)^α − (1 − p_x)^β` (eq. 5); 0 when `β ≤ α`.
pub fn prior_range(p: f64, alpha: u64, beta: u64) -> f64 {
    if beta <= alpha {
        return 0.0;
    }
    survive(p, alpha as f64) - survive(p, beta as f64)
}

/// A supply of sample probabilities `p_x`: the probability that the next insertion is `x`
/// (Definition 5).
pub trait SampleProbability {
    /// `p_x` of the item with key hash `hash`, in `[0, 1]`.
    fn p_x(&self, hash: KeyHash) -> f64;
}

/// The same `p_x` for every item (a uniform stream over `|U|` items has `1 / |U|`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64")]
pub struct ConstantProbability(f64);

/// Read back with serde, `p` is checked as [`ConstantProbability::new`] checks it.
impl TryFrom<f64> for ConstantProbability {
    type Error = Error;
    fn try_from(p: f64) -> Result<Self> {
        ConstantProbability::new(p)
    }
}

impl ConstantProbability {
    /// `p` for every item; `p` must lie in `(0, 1]`.
    pub fn new(p: f64) -> Result<Self> {
        if !(p > 0.0 && p <= 1.0) {
            return Err(Error::invalid("p_x", format!("{p} is not in (0, 1]")));
        }
        Ok(ConstantProbability(p))
    }
}

impl SampleProbability for ConstantProbability {
    fn p_x(&self, _hash: KeyHash) -> f64 {
        self.0
    }
}

/// `p_x` from a function of the key hash (for instance a known rank-to-probability law).
#[derive(Debug, Clone, Copy)]
pub struct FnProbability<F>(pub F);

impl<F: Fn(KeyHash) -> f64> SampleProbability for FnProbability<F> {
    fn p_x(&self, hash: KeyHash) -> f64 {
        (self.0)(hash).clamp(0.0, 1.0)
    }
}

/// The larger of two supplies' `p_x`: a per-item `p_x` (a frequency table, say) floored by a
/// stream-wide one (an [`AnswerRatePrior`](super::AnswerRatePrior)), so that an item whose
/// long-run frequency is far below its rate in a burst is not taken for absent while it is in
/// the window.
///
/// ```
/// use chronobloom_core::decay::prior::{AtLeast, ConstantProbability, SampleProbability};
/// use chronobloom_core::hash::KeyHash;
/// let rare = ConstantProbability::new(1e-6).unwrap();
/// let floor = ConstantProbability::new(0.01).unwrap();
/// assert_eq!(AtLeast(&rare, &floor).p_x(KeyHash::of(&1u64, 0)), 0.01);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct AtLeast<A, B>(pub A, pub B);

impl<A: SampleProbability, B: SampleProbability> SampleProbability for AtLeast<A, B> {
    fn p_x(&self, hash: KeyHash) -> f64 {
        self.0.p_x(hash).max(self.1.p_x(hash))
    }
}

impl<T: SampleProbability + ?Sized> SampleProbability for &T {
    fn p_x(&self, hash: KeyHash) -> f64 {
        (**self).p_x(hash)
    }
}

/// `p_x` learned from observed frequencies (paper 004 §6.4.2): `count(x) / total`, with unseen
/// items given `floor / total` (a pseudo-count, so a never-seen item is not certain to be absent).
///
/// Read back with serde, the floor is checked as [`FrequencyTable::new`] checks it and the
/// counts must add up to the total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TableRepr")]
pub struct FrequencyTable {
    counts: HashMap<u64, u64>,
    total: u64,
    floor: f64,
}

/// The serialized form of [`FrequencyTable`], checked on the way in.
#[derive(Deserialize)]
struct TableRepr {
    counts: HashMap<u64, u64>,
    total: u64,
    floor: f64,
}

impl TryFrom<TableRepr> for FrequencyTable {
    type Error = Error;
    fn try_from(r: TableRepr) -> Result<Self> {
        let empty = FrequencyTable::new(r.floor)?;
        let sum = r.counts.values().try_fold(0u64, |s, &c| s.checked_add(c));
        if sum != Some(r.total) {
            return Err(Error::invalid(
                "counts",
                format!("do not add up to the total {}", r.total),
            ));
        }
        Ok(FrequencyTable {
            counts: r.counts,
            total: r.total,
            ..empty
        })
    }
}

impl FrequencyTable {
    /// An empty table giving unseen items the pseudo-count `floor` (`0 < floor ≤ 1`).
    pub fn new(floor: f64) -> Result<Self> {
        if !(floor > 0.0 && floor <= 1.0) {
            return Err(Error::invalid("floor", format!("{floor} is not in (0, 1]")));
        }
        Ok(FrequencyTable {
            counts: HashMap::new(),
            total: 0,
            floor,
        })
    }

    /// Counts one occurrence of the item with key hash `hash`.
    pub fn observe(&mut self, hash: KeyHash) {
        let count = self.counts.entry(hash.lo).or_insert(0);
        *count = count.saturating_add(1);
        self.total = self.total.saturating_add(1);
    }

    /// Occurrences counted in all.
    pub fn total(&self) -> u64 {
        self.total
    }
}

impl SampleProbability for FrequencyTable {
    fn p_x(&self, hash: KeyHash) -> f64 {
        let count = self.counts.get(&hash.lo).map_or(self.floor, |&c| c as f64);
        (count / self.total.max(1) as f64).min(1.0)
    }
}

/// A model of `D(j)`, the expected number of distinct items among `j` insertions (§2.5). Every
/// model is capped at `j`: `j` insertions hold at most `j` distinct items.
///
/// Read back with serde, a model is checked as its constructor checks it (for Zipf, the
/// harmonic number within the bounds `ln |U| < H_|U| ≤ ln |U| + 1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ModelRepr")]
pub enum DistinctModel {
    /// `D(j) = j`: every insertion a new item (ignores repeats).
    Identity,
    /// Uniform sampling from `|U|` items: `D(j) = |U| (1 − (1 − 1/|U|)^j)` (eq. 16).
    Uniform {
        /// `|U|`.
        universe: f64,
    },
    /// Zipf-like sampling `p_x = 1 / (H_|U| x)`: `D(j) ≈ (j / H)(1 − γ + ln(|U| H / j))` (eq. 17).
    /// The approximation exceeds `j` for tiny `j` and turns negative far past `|U|`; it is
    /// clamped to `[1, min(j, |U|)]` for `j ≥ 1`.
    Zipf {
        /// `|U|`.
        universe: f64,
        /// `H_|U|`, the `|U|`-th harmonic number.
        harmonic: f64,
    },
    /// Measured `(j, D(j))` points, interpolated logarithmically between them (eq. 18) and
    /// extrapolated along the nearest segment's log-log slope.
    Measured {
        /// Points with increasing, positive `j` and positive `D(j)`.
        points: Vec<(f64, f64)>,
    },
}

/// The serialized form of [`DistinctModel`], checked on the way in.
#[derive(Deserialize)]
enum ModelRepr {
    Identity,
    Uniform { universe: f64 },
    Zipf { universe: f64, harmonic: f64 },
    Measured { points: Vec<(f64, f64)> },
}

impl TryFrom<ModelRepr> for DistinctModel {
    type Error = Error;
    fn try_from(r: ModelRepr) -> Result<Self> {
        let universe_ok = |u: f64| u >= 1.0 && u.is_finite();
        match r {
            ModelRepr::Identity => Ok(DistinctModel::Identity),
            ModelRepr::Uniform { universe } if universe_ok(universe) => {
                Ok(DistinctModel::Uniform { universe })
            }
            ModelRepr::Zipf { universe, harmonic }
                if universe_ok(universe)
                    && harmonic > universe.ln()
                    && harmonic <= universe.ln() + 1.0 =>
            {
                Ok(DistinctModel::Zipf { universe, harmonic })
            }
            ModelRepr::Measured { points } => {
                let sorted = points.windows(2).all(|w| w[0].0 < w[1].0);
                let finite = points.iter().all(|&(j, d)| j.is_finite() && d.is_finite());
                if !sorted || !finite {
                    return Err(Error::invalid(
                        "points",
                        "need finite points in increasing order of j",
                    ));
                }
                DistinctModel::measured(points)
            }
            _ => Err(Error::invalid("universe", "must be a finite number ≥ 1")),
        }
    }
}

impl DistinctModel {
    /// The uniform model over `universe ≥ 1` items.
    pub fn uniform(universe: u64) -> Result<Self> {
        if universe == 0 {
            return Err(Error::invalid("universe", "must be at least 1"));
        }
        Ok(DistinctModel::Uniform {
            universe: universe as f64,
        })
    }

    /// The Zipf model over `universe ≥ 1` items.
    pub fn zipf(universe: u64) -> Result<Self> {
        if universe == 0 {
            return Err(Error::invalid("universe", "must be at least 1"));
        }
        Ok(DistinctModel::Zipf {
            universe: universe as f64,
            harmonic: harmonic(universe),
        })
    }

    /// The interpolated model through measured points (at least two, `j` strictly increasing).
    pub fn measured(mut points: Vec<(f64, f64)>) -> Result<Self> {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if points.len() < 2 {
            return Err(Error::invalid(
                "points",
                "need at least two (j, D(j)) points",
            ));
        }
        if points
            .iter()
            .any(|&(j, d)| !(j >= 1.0 && d > 0.0 && d <= j))
        {
            return Err(Error::invalid("points", "need j ≥ 1 and 0 < D(j) ≤ j"));
        }
        if points.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid("points", "two points share the same j"));
        }
        Ok(DistinctModel::Measured { points })
    }

    /// `D(j)`.
    pub fn distinct(&self, j: f64) -> f64 {
        if j <= 0.0 {
            return 0.0;
        }
        let d = match self {
            DistinctModel::Identity => j,
            DistinctModel::Uniform { universe } => {
                universe * -(j * (-1.0 / universe).ln_1p()).exp_m1()
            }
            DistinctModel::Zipf { universe, harmonic } => {
                let d = j / harmonic * (1.0 - EULER_GAMMA + (universe * harmonic / j).ln());
                d.clamp(1.0, universe.max(1.0))
            }
            DistinctModel::Measured { points } => log_interpolate(points, j),
        };
        d.min(j)
    }
}

/// `H_n = Σ_{i=1}^{n} 1/i`, summed smallest first.
pub fn harmonic(n: u64) -> f64 {
    (1..=n).rev().map(|i| 1.0 / i as f64).sum()
}

/// Eq. 18 between the two points around `j` (the outermost two beyond the ends).
fn log_interpolate(points: &[(f64, f64)], j: f64) -> f64 {
    let seg = points
        .partition_point(|&(x, _)| x <= j)
        .clamp(1, points.len() - 1);
    let ((j1, d1), (j3, d3)) = (points[seg - 1], points[seg]);
    (d1.ln() + (d3 / d1).ln() * (j / j1).ln() / (j3 / j1).ln()).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq5_is_the_sum_of_eq4() {
        let p = 0.01;
        let direct: f64 = (10..50).map(|i| prior(p, i)).sum();
        assert!((prior_range(p, 10, 50) - direct).abs() < 1e-12);
        assert_eq!(prior_range(p, 5, 5), 0.0);
    }

    #[test]
    fn uniform_matches_eq15() {
        let u = 1000u64;
        let m = DistinctModel::uniform(u).expect("universe");
        let eq15 = |j: f64| u as f64 * (1.0 - (1.0 - 1.0 / u as f64).powf(j));
        for j in [1.0, 10.0, 1000.0, 1e5] {
            assert!((m.distinct(j) - eq15(j)).abs() < 1e-6 * eq15(j));
        }
    }

    #[test]
    fn zipf_is_close_to_eq15_in_its_range() {
        let u = 1 << 12;
        let model = DistinctModel::zipf(u).expect("universe");
        let h = harmonic(u);
        for j in [100.0, 1000.0, 4000.0] {
            let exact: f64 = (1..=u)
                .map(|x| 1.0 - (1.0 - 1.0 / (h * x as f64)).powf(j))
                .sum();
            let rel = (model.distinct(j) - exact).abs() / exact;
            assert!(
                rel < 0.05,
                "j {j}: eq. 17 {} vs eq. 15 {exact}",
                model.distinct(j)
            );
        }
    }

    #[test]
    fn measured_reproduces_its_points_and_interpolates_in_log_space() {
        let m = DistinctModel::measured(vec![(1.0, 1.0), (100.0, 10.0), (10_000.0, 100.0)])
            .expect("points");
        assert!((m.distinct(100.0) - 10.0).abs() < 1e-9);
        // a power law between points: D(1000) = sqrt(1000)
        assert!((m.distinct(1000.0) - 1000f64.sqrt()).abs() < 1e-9);
        assert!(DistinctModel::measured(vec![(1.0, 2.0), (5.0, 1.0)]).is_err());
    }

    #[test]
    fn frequency_table_learns_rates() {
        let mut t = FrequencyTable::new(0.5).expect("floor");
        let (a, b) = (KeyHash::of(&1u64, 0), KeyHash::of(&2u64, 0));
        for _ in 0..3 {
            t.observe(a);
        }
        t.observe(b);
        assert_eq!(t.p_x(a), 0.75);
        assert_eq!(t.p_x(KeyHash::of(&3u64, 0)), 0.125);
    }
}
