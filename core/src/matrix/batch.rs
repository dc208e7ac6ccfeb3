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
use super::probe::{by_col_count, ColCount, ColProbe, RowProbe};
use super::shape::MAX_SIDE_HASHES;
use crate::hash::{Key, KeyHash};
use crate::prefetch::prefetch;

/// A mask pays when building it costs at most this many words read per tuple of the batch: the
/// mask's words are read in sequence, the direct tests hit random lines. A judgement, not a tuned
/// value: in `benches/matrix.rs` (2 rows of 49 words) it switches to the mask from 13 tuples,
/// and 16-tuple batches run at 23 ns per tuple against 39 ns for 4-tuple ones tested directly.
const MASK_WORDS_PER_TUPLE: u64 = 16;

/// A column mask tests `k2` bits in every row, a cache line each; a direct tuple test hashes a key
/// and tests `k1` rows. One direct tuple test costs about this many mask tests (measured with
/// `benches/matrix.rs` on a 3067 × 3136 matrix, `k = 2 × 3`: 1,000 keys took 40 µs directly and
/// 60 µs through the mask).
const COL_MASK_TESTS_PER_TUPLE: u64 = 3;

const SIDES: usize = MAX_SIDE_HASHES as usize;

/// Values of a masked batch whose columns are computed while the rows load.
const VALUES_AHEAD: usize = 16;

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
        let mut out = Vec::with_capacity(values.len());
        self.contains_values_into(a, values, &mut out);
        out
    }

    /// [`Self::contains_values`], appending the answers to `out` (a buffer reused from batch to
    /// batch saves an allocation per batch).
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixBloom;
    /// let mut m = MatrixBloom::with_fpr(1_000, 0.001, 1).unwrap();
    /// m.insert(&"A", &1u32);
    /// let mut out = vec![false];
    /// m.contains_values_into(&"A", &[1u32], &mut out);
    /// assert_eq!(out, [false, true]);
    /// ```
    pub fn contains_values_into<A: Key + ?Sized, B: Key>(
        &self,
        a: &A,
        values: &[B],
        out: &mut Vec<bool>,
    ) {
        out.reserve(values.len());
        let rows = self.geometry.rows_of(a);
        if self.row_mask_pays(values.len()) {
            let g = &self.geometry;
            by_col_count!(g.col_hashes, |count| self
                .values_masked(&rows, values, count, out));
        } else {
            let mut row_words = [0; SIDES];
            let k1 = fill(&mut row_words, rows.offsets().iter().map(|&o| o / 64));
            by_col_count!(self.geometry.col_hashes, |count| self.test_values(
                &row_words[..k1],
                values,
                count,
                out
            ));
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
        let mut out = Vec::with_capacity(keys.len());
        self.contains_keys_into(keys, b, &mut out);
        out
    }

    /// [`Self::contains_keys`], appending the answers to `out` (a buffer reused from batch to
    /// batch saves an allocation per batch).
    pub fn contains_keys_into<A: Key, B: Key + ?Sized>(
        &self,
        keys: &[A],
        b: &B,
        out: &mut Vec<bool>,
    ) {
        out.reserve(keys.len());
        let g = &self.geometry;
        let hash = KeyHash::of(b, g.col_seed);
        by_col_count!(g.col_hashes, |count| {
            let cols = count.cols(g, hash);
            if self.col_mask_pays(keys.len()) {
                let mask = self.col_mask(cols.as_ref());
                out.extend(keys.iter().map(|a| {
                    let h = KeyHash::of(a, g.row_seed);
                    mask_has_all(&mask, g.rows.positions(h, g.row_hashes))
                }));
            } else {
                self.test_keys(&cols, keys, count, out);
            }
        })
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
        // Built once per value and read once per key: an array per value is worth it here.
        let mut out = Vec::with_capacity(keys.len() * values.len());
        let masked = self.row_mask_pays(values.len());
        let mut mask = Vec::new();
        for a in keys {
            let rows = self.geometry.rows_of(a);
            if masked {
                self.row_mask(&rows, &mut mask);
                out.extend(
                    cols.iter()
                        .map(|c| mask_has_all(&mask, c.cols().iter().copied())),
                );
            } else {
                out.extend(
                    cols.iter()
                        .map(|c| self.has_cols(&rows, c.cols().iter().copied())),
                );
            }
        }
        out
    }

    /// Appends to `out` whether each of `values` is present with the first component whose rows
    /// are `rows`, through the AND of those rows (a mask of `m2` bits).
    pub(super) fn values_masked<B: Key, C: ColCount>(
        &self,
        rows: &RowProbe,
        values: &[B],
        count: C,
        out: &mut Vec<bool>,
    ) {
        // The rows' lines load while the first values are hashed.
        self.prefetch_rows(rows);
        let g = &self.geometry;
        let cols_of = |b: &B| count.cols(g, KeyHash::of(b, g.col_seed));
        let mut first = [C::NONE; VALUES_AHEAD];
        let ahead = values.len().min(VALUES_AHEAD);
        for (slot, b) in first.iter_mut().zip(values) {
            *slot = cols_of(b);
        }
        with_mask((g.stride / 64) as usize, |mask| {
            self.and_rows(rows, mask);
            let has = |cols: &C::Cols| mask_has_all(mask, cols.as_ref().iter().copied());
            out.extend(first[..ahead].iter().map(has));
            out.extend(values[ahead..].iter().map(|b| has(&cols_of(b))));
        });
    }

    /// Whether the AND of a first component's rows is cheaper than testing `batch` tuples
    /// directly.
    pub(super) fn row_mask_pays(&self, batch: usize) -> bool {
        let words = u64::from(self.shape().row_hashes) * (self.geometry.stride / 64);
        words <= MASK_WORDS_PER_TUPLE * batch as u64
    }

    /// Whether the column mask (`m1 · k2` bit tests, row after row in memory order) is cheaper
    /// than testing `batch` tuples directly (a key hash and `k1` rows at random each): counted
    /// as `COL_MASK_TESTS_PER_TUPLE` mask tests per direct tuple test.
    fn col_mask_pays(&self, batch: usize) -> bool {
        let s = self.shape();
        s.rows * u64::from(s.col_hashes)
            <= COL_MASK_TESTS_PER_TUPLE * u64::from(s.row_hashes) * batch as u64
    }

    /// Starts loading every line of the rows in `rows`.
    fn prefetch_rows(&self, rows: &RowProbe) {
        let (all, words) = (self.bits.words(), (self.geometry.stride / 64) as usize);
        for &r in rows.offsets() {
            let first = (r / 64) as usize;
            for w in (first..first + words).step_by(8) {
                prefetch(all, w);
            }
        }
    }

    /// The AND of the rows in `rows`, word by word, into `mask` (`m2` bits, whole words).
    pub(crate) fn row_mask(&self, rows: &RowProbe, mask: &mut Vec<u64>) {
        mask.clear();
        mask.resize((self.geometry.stride / 64) as usize, u64::MAX);
        self.and_rows(rows, mask);
    }

    /// ANDs the rows in `rows` into `mask` (one row's words long), word by word.
    fn and_rows(&self, rows: &RowProbe, mask: &mut [u64]) {
        let all = self.bits.words();
        for &r in rows.offsets() {
            let first = (r / 64) as usize;
            if let Some(row) = all.get(first..first + mask.len()) {
                for (m, &w) in mask.iter_mut().zip(row) {
                    *m &= w;
                }
            }
        }
    }

    /// Row `r` of the mask is set iff every column of `cols` is set in row `r`.
    fn col_mask(&self, cols: &[u64]) -> Vec<u64> {
        let rows = self.shape().rows;
        let mut mask = vec![0u64; rows.div_ceil(64) as usize];
        for r in 0..rows {
            let start = r * self.geometry.stride;
            if cols.iter().all(|&c| self.bits.test(start + c)) {
                mask[(r / 64) as usize] |= 1 << (r % 64);
            }
        }
        mask
    }

    /// Whether the tuple of the fixed `rows` and the columns `cols` is present: the varying
    /// columns drive the loop, so they are never stored.
    #[inline]
    pub(crate) fn has_cols(&self, rows: &RowProbe, mut cols: impl Iterator<Item = u64>) -> bool {
        cols.all(|c| rows.offsets().iter().all(|&r| self.bits.test(r + c)))
    }
}

/// Runs `f` on a mask of `words` words, all ones: on the stack, in the smallest of a few sizes
/// that holds it (filling a larger array would cost more than the batch's tests), up to 256 words
/// (16,384 columns); on the heap beyond.
#[inline]
fn with_mask<R>(words: usize, f: impl FnOnce(&mut [u64]) -> R) -> R {
    macro_rules! on_stack {
        ($n:literal) => {{
            let mut mask = [u64::MAX; $n];
            f(&mut mask[..words])
        }};
    }
    match words {
        0..=32 => on_stack!(32),
        33..=64 => on_stack!(64),
        65..=128 => on_stack!(128),
        129..=256 => on_stack!(256),
        _ => f(&mut vec![u64::MAX; words]),
    }
}

/// Whether every bit of `indices` is set in `mask` (indices below the mask's length in bits).
/// Every index is tested, without an early exit: the mask is in L1, and a branch per bit of a
/// half-full mask would be mispredicted every other time.
#[inline]
pub(crate) fn mask_has_all(mask: &[u64], indices: impl Iterator<Item = u64>) -> bool {
    indices.fold(1u64, |acc, i| {
        acc & mask.get((i / 64) as usize).map_or(0, |w| w >> (i % 64))
    }) & 1
        == 1
}

/// Writes `items` into the front of `slots`; returns how many were written.
#[inline]
pub(super) fn fill<T>(slots: &mut [T], items: impl Iterator<Item = T>) -> usize {
    let mut n = 0;
    for (slot, item) in slots.iter_mut().zip(items) {
        *slot = item;
        n += 1;
    }
    n
}
