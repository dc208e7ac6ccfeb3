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

    /// The number of classes `j` of the minimum-storage j-matrix: `round(n / n_a)` when second
    /// components (nearly, ≥ 90%) never repeat — each first component then combines with about
    /// `j` of them, Case B — and 1 otherwise (Case A, or no structure to exploit).
    pub fn classes(&self) -> u64 {
        if self.second.saturating_mul(10) >= self.tuples.saturating_mul(9) {
            (self.tuples as f64 / self.first.max(1) as f64)
                .round()
                .max(1.0) as u64
        } else {
            1
        }
    }

    /// The shape for a target false positive rate: the minimum-storage j-matrix
    /// ([`MatrixShape::min_storage`] with [`Self::classes`]) or the maximum-adaptive matrix
    /// ([`MatrixShape::max_adaptive`]), whichever stores fewer bits; on a tie the
    /// maximum-adaptive one, whose rate also holds for new components on either side. Dense data
    /// (most of the `n_a × n_b` grid present, e.g. full-repeating) goes to maximum adaptive;
    /// sparse data (one-to-one, one-to-j) to minimum storage.
    ///
    /// ```
    /// use chronobloom_core::matrix::{MatrixLayout, TupleStats};
    /// let dense = TupleStats::new(50_000, 1_000, 50).unwrap();
    /// assert_eq!(dense.shape_for(0.01).unwrap().layout, MatrixLayout::MaximumAdaptive);
    /// let one_to_one = TupleStats::new(50_000, 50_000, 50_000).unwrap();
    /// assert_eq!(one_to_one.shape_for(0.01).unwrap().layout, MatrixLayout::MinimumStorage);
    /// ```
    pub fn shape_for(&self, fpr: f64) -> Result<MatrixShape> {
        let min = MatrixShape::min_storage(self.tuples, self.classes(), fpr)?;
        let max = MatrixShape::max_adaptive(self.first, self.second, fpr)?;
        Ok(if max.stored_bits() <= min.stored_bits() {
            max
        } else {
            min
        })
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
