//! Picking §IV's layout from statistics of the data, declared or measured.

use super::filter::MatrixBloom;
use super::shape::{MatrixLayout, MatrixShape};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use std::collections::HashSet;

/// What the layout choice needs to know about a set of distinct tuples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TupleStats {
    /// Distinct tuples, `n`.
    pub tuples: u64,
    /// Distinct first components, `n_a`.
    pub first: u64,
    /// Distinct second components, `n_b`.
    pub second: u64,
}

impl TupleStats {
    /// Declared statistics, checked for consistency: `1 <= n_a, n_b <= n <= n_a · n_b`.
    pub fn new(tuples: u64, first: u64, second: u64) -> Result<Self> {
        let grid = first.saturating_mul(second);
        if first == 0 || second == 0 || first.max(second) > tuples || tuples > grid {
            return Err(Error::invalid(
                "tuple statistics",
                format!(
                    "{tuples} tuples over {first} first and {second} second components: \
                     need 1 <= each side <= tuples <= their product"
                ),
            ));
        }
        Ok(TupleStats {
            tuples,
            first,
            second,
        })
    }

    /// Measured statistics: counts the distinct tuples and components of `pairs` exactly (by
    /// their 128-bit key hashes; repeats are counted once).
    ///
    /// ```
    /// use chronobloom_core::matrix::TupleStats;
    /// let s = TupleStats::measure([(1u8, 'a' as u8), (1, 'b' as u8), (1, 'a' as u8)]);
    /// assert_eq!((s.tuples, s.first, s.second), (2, 1, 2));
    /// ```
    pub fn measure<A: Key, B: Key>(pairs: impl IntoIterator<Item = (A, B)>) -> Self {
        let (mut tuples, mut first, mut second) = (HashSet::new(), HashSet::new(), HashSet::new());
        for (a, b) in pairs {
            let (ha, hb) = (KeyHash::of(&a, 0), KeyHash::of(&b, 0));
            tuples.insert((ha, hb));
            first.insert(ha);
            second.insert(hb);
        }
        TupleStats {
            tuples: tuples.len() as u64,
            first: first.len() as u64,
            second: second.len() as u64,
        }
    }

    /// Whether second components (nearly, ≥ 90% of the tuples) never repeat: Case A or B of
    /// §IV-C, where Theorems 1 and 3 hold.
    pub fn second_unique(&self) -> bool {
        self.second.saturating_mul(10) >= self.tuples.saturating_mul(9)
    }

    /// The number of classes `j` of the minimum-storage j-matrix: `round(n / n_a)` when second
    /// components never repeat ([`Self::second_unique`]) — each first component then combines
    /// with about `j` of them, Case B — and 1 otherwise (Case A, or no structure to exploit).
    pub fn classes(&self) -> u64 {
        if self.second_unique() {
            (self.tuples as f64 / self.first.max(1) as f64)
                .round()
                .max(1.0) as u64
        } else {
            1
        }
    }

    /// The shape for a target false positive rate, by what is known of the data:
    ///
    /// 1. second components (nearly) never repeat: Case A or B of §IV-C, the minimum-storage
    ///    j-matrix with [`Self::classes`] (Theorem 3: a standard filter's rate for its bits);
    /// 2. otherwise Theorem 1 does not hold (repeats share rows and columns), but any data within
    ///    the `n_a × n_b` grid keeps the rate for new components below the product of the row and
    ///    column occupancies ([`MatrixShape::fpr_adaptive`]). Theorem 2's square matrix is taken
    ///    when that bound meets the target and it stores fewer bits than the maximum-adaptive
    ///    matrix; else the maximum-adaptive matrix ([`MatrixShape::max_adaptive`]), the paper's
    ///    choice for data without exploitable structure, at its storage cost.
    ///
    /// ```
    /// use chronobloom_core::matrix::{MatrixLayout, TupleStats};
    /// let dense = TupleStats::new(50_000, 1_000, 50).unwrap();
    /// assert_eq!(dense.shape_for(0.001).unwrap().layout, MatrixLayout::MaximumAdaptive);
    /// let one_to_one = TupleStats::new(50_000, 50_000, 50_000).unwrap();
    /// assert_eq!(one_to_one.shape_for(0.01).unwrap().layout, MatrixLayout::MinimumStorage);
    /// ```
    pub fn shape_for(&self, fpr: f64) -> Result<MatrixShape> {
        if self.second_unique() {
            return MatrixShape::min_storage(self.tuples, self.classes(), fpr);
        }
        let square = MatrixShape::for_fpr(self.tuples, fpr)?;
        let max = MatrixShape::max_adaptive(self.first, self.second, fpr)?;
        let bound = square.fpr_adaptive(self.first as f64, self.second as f64);
        Ok(
            if bound <= fpr && square.stored_bits() < max.stored_bits() {
                square
            } else {
                max
            },
        )
    }
}

impl MatrixBloom {
    /// A matrix in the layout [`TupleStats::shape_for`] picks for `stats` at rate `fpr`.
    pub fn for_stats(stats: &TupleStats, fpr: f64, seed: u64) -> Result<Self> {
        Self::new(stats.shape_for(fpr)?, seed)
    }

    /// The layout this matrix was sized as.
    pub fn layout(&self) -> MatrixLayout {
        self.shape().layout
    }
}
