//! Batch queries that hash the fixed side once (paper 003 §II, Assertions 2–3): one first
//! component with many second components, one second component with many first components, and
//! the cross product of two sets. Results come in the input order.
//!
//! Besides hashing the fixed side once, a batch may fold the fixed side's lines of the matrix into
//! one mask first, when the batch is large enough to pay for it:
//!
//! * a fixed first component: the AND of its `k1` rows (whole words, read in sequence) is an
//!   `m2`-bit mask; a second component passes iff its `k2` columns are set in it;
//! * a fixed second component: row `r` of an `m1`-bit mask is set iff the `k2` columns are all set
//!   in row `r`; a first component passes iff its `k1` rows are set in it.
//!
//! Both give exactly the answers of [`MatrixBloom::contains`] (the tests compare them).

use super::filter::MatrixBloom;
use super::probe::{ColProbe, RowProbe};
use crate::hash::Key;

/// A mask pays when building it costs at most this many words read per tuple of the batch: the
/// mask's words are read in sequence, the direct tests hit random lines (tuned with
/// `benches/matrix.rs`).
const MASK_WORDS_PER_TUPLE: u64 = 8;

impl MatrixBloom {
    /// "Which of `values` were inserted with `a`?" — `a` is hashed once.
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixBloom;
    /// let mut m = MatrixBloom::with_fpr(1_000, 0.001, 1).unwrap();
    /// m.insert(&"A", &1u32);
    /// m.insert(&"A", &6u32);
    /// assert_eq!(m.contains_values(&"A", &[6u32, 1])[..], [true, true]);
    /// ```
    pub fn contains_values<A: Key + ?Sized, B: Key>(&self, a: &A, values: &[B]) -> Vec<bool> {
        let rows = self.geometry.rows_of(a);
        let cols = values.iter().map(|b| self.geometry.cols_of(b));
        if self.row_mask_pays(values.len()) {
            let mut mask = Vec::new();
            self.row_mask(&rows, &mut mask);
            cols.map(|c| mask_has_all(&mask, c.cols())).collect()
        } else {
            cols.map(|c| self.contains_probes(&rows, &c)).collect()
        }
    }

    /// "Which of `keys` were inserted with `b`?" — `b` is hashed once.
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixBloom;
    /// let mut m = MatrixBloom::with_fpr(1_000, 0.001, 1).unwrap();
    /// m.insert(&"A", &3u32);
    /// m.insert(&"F", &3u32);
    /// assert_eq!(m.contains_keys(&["F", "A"], &3u32)[..], [true, true]);
    /// ```
    pub fn contains_keys<A: Key, B: Key + ?Sized>(&self, keys: &[A], b: &B) -> Vec<bool> {
        let cols = self.geometry.cols_of(b);
        let rows = keys.iter().map(|a| self.geometry.rows_of(a));
        if self.col_mask_pays(keys.len()) {
            let mask = self.col_mask(&cols);
            rows.map(|r| self.row_mask_has_all(&mask, &r)).collect()
        } else {
            rows.map(|r| self.contains_probes(&r, &cols)).collect()
        }
    }

    /// The cross product: entry `i · values.len() + j` answers `(keys[i], values[j])`. Each key
    /// and each value is hashed once.
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixBloom;
    /// let mut m = MatrixBloom::with_fpr(1_000, 0.001, 1).unwrap();
    /// m.insert(&1u64, &10u64);
    /// m.insert(&2u64, &20u64);
    /// let all = m.contains_cross(&[1u64, 2], &[10u64, 20]);
    /// assert!(all[0] && all[3]); // (1, 10) and (2, 20)
    /// ```
    pub fn contains_cross<A: Key, B: Key>(&self, keys: &[A], values: &[B]) -> Vec<bool> {
        let cols: Vec<ColProbe> = values.iter().map(|b| self.geometry.cols_of(b)).collect();
        let mut out = Vec::with_capacity(keys.len() * values.len());
        let masked = self.row_mask_pays(values.len());
        let mut mask = Vec::new();
        for a in keys {
            let rows = self.geometry.rows_of(a);
            if masked {
                self.row_mask(&rows, &mut mask);
                out.extend(cols.iter().map(|c| mask_has_all(&mask, c.cols())));
            } else {
                out.extend(cols.iter().map(|c| self.contains_probes(&rows, c)));
            }
        }
        out
    }

    /// Whether the AND of a first component's rows is cheaper than testing `batch` tuples
    /// directly.
    pub(super) fn row_mask_pays(&self, batch: usize) -> bool {
        let words = u64::from(self.shape().row_hashes) * (self.geometry.stride / 64);
        words <= MASK_WORDS_PER_TUPLE * batch as u64
    }

    /// Whether the column mask (`m1 · k2` scattered bit tests) is cheaper than testing `batch`
    /// tuples directly (about `k1` tests each): counted as words, a scattered test is a word.
    fn col_mask_pays(&self, batch: usize) -> bool {
        let s = self.shape();
        s.rows * u64::from(s.col_hashes) <= u64::from(s.row_hashes) * batch as u64
    }

    /// The AND of the rows in `rows`, word by word, into `mask` (`m2` bits, whole words).
    pub(crate) fn row_mask(&self, rows: &RowProbe, mask: &mut Vec<u64>) {
        let words = (self.geometry.stride / 64) as usize;
        let all = self.bits.words();
        mask.clear();
        mask.resize(words, u64::MAX);
        for &r in rows.offsets() {
            let first = (r / 64) as usize;
            if let Some(row) = all.get(first..first + words) {
                for (m, &w) in mask.iter_mut().zip(row) {
                    *m &= w;
                }
            }
        }
    }

    /// Row `r` of the mask is set iff every column of `cols` is set in row `r`.
    fn col_mask(&self, cols: &ColProbe) -> Vec<u64> {
        let rows = self.shape().rows;
        let mut mask = vec![0u64; rows.div_ceil(64) as usize];
        for r in 0..rows {
            let start = r * self.geometry.stride;
            if cols.cols().iter().all(|&c| self.bits.test(start + c)) {
                mask[(r / 64) as usize] |= 1 << (r % 64);
            }
        }
        mask
    }

    /// Whether every row of `rows` is set in a column mask.
    fn row_mask_has_all(&self, mask: &[u64], rows: &RowProbe) -> bool {
        let stride = self.geometry.stride;
        rows.offsets().iter().all(|&o| {
            let r = o / stride;
            mask.get((r / 64) as usize)
                .is_some_and(|w| w >> (r % 64) & 1 == 1)
        })
    }
}

/// Whether every bit of `indices` is set in `mask` (indices below the mask's length in bits).
#[inline]
pub(crate) fn mask_has_all(mask: &[u64], indices: &[u64]) -> bool {
    indices.iter().all(|&i| {
        mask.get((i / 64) as usize)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    })
}
