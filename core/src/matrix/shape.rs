//! The shape of a matrix Bloom filter and the sizing rules of paper 003: Theorems 1–3 and the
//! maximum-adaptive matrix of §IV-B.

use crate::error::{Error, Result};
use crate::hash::MAX_SPREAD;
use serde::{Deserialize, Serialize};
use std::f64::consts::LN_2;

/// The most hash functions on one side (rows or columns). A side's positions are kept in a fixed
/// array of this length, so a batch that fixes one side never allocates for it.
pub const MAX_SIDE_HASHES: u32 = 16;

/// Columns in one class of a line-local matrix ([`MatrixShape::line_local`]): the 512 bits of one
/// 64-byte cache line of a row.
pub const LINE_COLS: u64 = 512;

/// Which of §IV's two layouts a matrix was sized as. It only changes the false positive formula
/// ([`MatrixShape::fpr`]) and the fill-based estimate; insertion and queries are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MatrixLayout {
    /// §IV-B: the rows are a Bloom filter over the distinct first components and the columns one
    /// over the distinct second components; a false positive needs both to pass.
    MaximumAdaptive,
    /// §IV-C: Theorem 1's sizing (Case A, one square matrix, `classes = 1`) or the j-matrix of
    /// Case B (`classes = j` square matrices side by side, chosen by a class hash of the second
    /// component). Its false positive rate is the standard filter's for the same bits (Theorem 3).
    MinimumStorage,
}

impl MatrixLayout {
    /// A number for error messages.
    pub(crate) fn code(self) -> u64 {
        match self {
            MatrixLayout::MaximumAdaptive => 0,
            MatrixLayout::MinimumStorage => 1,
        }
    }
}

/// `m1 × m2` bits with `k1` row hashes of the first component and `k2` column hashes of the
/// second; the `m2` columns are `classes` blocks of `m2 / classes` columns (a j-matrix when
/// `classes > 1`).
///
/// ```
/// use chronobloom_core::matrix::MatrixShape;
/// // Theorem 2: one million random tuples at 1% false positives.
/// let s = MatrixShape::for_fpr(1_000_000, 0.01).unwrap();
/// assert_eq!(s.hashes(), s.row_hashes * s.col_hashes);
/// assert!(s.fpr(1_000_000.0) <= 0.0101);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatrixShape {
    /// Rows, `m1`.
    pub rows: u64,
    /// Columns, `m2` (all classes together).
    pub cols: u64,
    /// Square blocks of columns selected by the class hash, `j` (1: a plain matrix).
    pub classes: u64,
    /// Row hashes of the first component, `k1`.
    pub row_hashes: u32,
    /// Column hashes of the second component, `k2`.
    pub col_hashes: u32,
    /// The layout the shape was sized as.
    pub layout: MatrixLayout,
}

impl MatrixShape {
    /// A shape from its parts, checked: at least one row and column, `classes` dividing `cols`,
    /// `1..=16` hashes per side, at most 2^32 rows and columns per class, and `rows × cols` (rows
    /// padded to whole words) fitting in `u64`.
    pub fn new(
        rows: u64,
        cols: u64,
        classes: u64,
        (row_hashes, col_hashes): (u32, u32),
        layout: MatrixLayout,
    ) -> Result<Self> {
        if rows == 0 || cols == 0 {
            return Err(Error::invalid(
                "rows, cols",
                "a matrix needs at least one of each",
            ));
        }
        if classes == 0 || !cols.is_multiple_of(classes) {
            return Err(Error::invalid(
                "classes",
                format!("{classes} must be a positive divisor of the {cols} columns"),
            ));
        }
        for (name, k) in [("row_hashes", row_hashes), ("col_hashes", col_hashes)] {
            if !(1..=MAX_SIDE_HASHES).contains(&k) {
                return Err(Error::invalid(
                    name,
                    format!("{k} is outside 1..={MAX_SIDE_HASHES}"),
                ));
            }
        }
        let shape = MatrixShape {
            rows,
            cols,
            classes,
            row_hashes,
            col_hashes,
            layout,
        };
        if shape.stride().and_then(|s| s.checked_mul(rows)).is_none() {
            return Err(Error::invalid("rows, cols", "rows × cols overflows u64"));
        }
        if rows > MAX_SPREAD || shape.class_cols() > MAX_SPREAD {
            return Err(Error::invalid(
                "rows, cols",
                format!(
                    "{rows} rows and {} columns per class: at most 2^32 each",
                    shape.class_cols()
                ),
            ));
        }
        Ok(shape)
    }

    /// Bits per stored row: `cols` rounded up to whole 64-bit words, so that a row is a run of
    /// words (a batch with a fixed first component ANDs its rows word by word).
    pub(crate) fn stride(&self) -> Option<u64> {
        self.cols.div_ceil(64).checked_mul(64)
    }

    /// Logical bits, `m = m1 · m2`.
    pub fn bits(&self) -> u64 {
        self.rows * self.cols
    }

    /// Bits stored: `m1` rows of `m2` bits each rounded up to whole words.
    pub fn stored_bits(&self) -> u64 {
        self.rows * self.cols.div_ceil(64) * 64
    }

    /// Columns per class, `m2 / j`.
    pub fn class_cols(&self) -> u64 {
        self.cols / self.classes
    }

    /// Bits tested per tuple, `k = k1 · k2`.
    pub fn hashes(&self) -> u32 {
        self.row_hashes * self.col_hashes
    }

    /// The false positive rate after `items` distinct tuples.
    ///
    /// * [`MatrixLayout::MinimumStorage`]: Theorem 1 (Theorem 3 for a j-matrix),
    ///   `(1 − e^{−k n / m})^k` with `k = k1 k2`, assuming no repeats within a class.
    /// * [`MatrixLayout::MaximumAdaptive`]: use [`Self::fpr_adaptive`]; here `items` is read as
    ///   tuples of a one-to-one dataset and Theorem 1 applies as well.
    pub fn fpr(&self, items: f64) -> f64 {
        theorem1(self.bits() as f64, self.hashes(), items)
    }

    /// The largest `k1 · k2` for which [`Self::fpr_exact`] enumerates the query's cells.
    pub const EXACT_MAX_CELLS: u32 = 12;

    /// The false positive rate for a query of two new components without Theorem 1's
    /// independence approximation, after `first` first components were each inserted with
    /// `per_first` second components that never repeat (one-to-one: `per_first = 1`; Case B:
    /// `per_first = j`).
    ///
    /// A query's `k1 × k2` cells are a grid, and one inserted tuple covers a sub-grid of it (the
    /// query rows among its rows × the query columns among its columns), so the cells are
    /// positively correlated, and more so when tuples share their rows; the rate is somewhat above
    /// Theorem 1's. For a query with `d1` distinct rows and `d2` distinct columns, by
    /// inclusion–exclusion over the set `S` of its cells left clear,
    /// `FPR = Σ_S (−1)^{|S|} P(no tuple of one first component covers a cell of S)^{first}`. A first
    /// component's `k1` rows cover exactly a given set `A` of the query's rows with the
    /// probability that `k1` independent draws from `m1` hit every row of `A` and none of the
    /// others (inclusion–exclusion over the rows of `A` they miss); each of its `per_first`
    /// tuples lands in the query's class with probability `1/j` and then covers exactly a set `B`
    /// of the query's columns likewise (`k2` draws from `m2 / j`). The query's own `k1` rows (`k2`
    /// columns) are independent draws too, so they are `d1 < k1` distinct ones with the
    /// probability of that many distinct values among `k1` draws of `m1`: fewer cells to find
    /// set, a rate several times higher. The rate is the sum over `(d1, d2)` weighted so: exact
    /// for independent positions ([`crate::hash::Spread`]). `None` when `k1 · k2 > 12` (the sum
    /// has up to `2^{k1 k2}` terms).
    pub fn fpr_exact(&self, first: f64, per_first: f64) -> Option<f64> {
        let (k1, k2) = (self.row_hashes, self.col_hashes);
        if k1 * k2 > Self::EXACT_MAX_CELLS {
            return None;
        }
        let (m1, m2) = (self.rows as f64, self.class_cols() as f64);
        let same_class = 1.0 / self.classes as f64;
        // The rate for a query of d1 distinct rows and d2 distinct columns.
        let grid = |d1: u32, d2: u32| {
            let rows = exact_cover(d1, k1, m1);
            let cols = exact_cover(d2, k2, m2);
            (0u32..1 << (d1 * d2))
                .map(|clear| {
                    // Sum over the query rows A a first component covers, then over the query
                    // columns B each of its tuples covers: the tuple misses S iff A × B misses it.
                    let none: f64 = (0u32..1 << d1)
                        .map(|a| {
                            let misses: f64 = (0u32..1 << d2)
                                .filter(|&b| {
                                    (0..d1).all(|i| a >> i & 1 == 0 || (b << (i * d2)) & clear == 0)
                                })
                                .map(|b| cols[b.count_ones() as usize])
                                .sum();
                            let per_tuple = 1.0 - same_class + same_class * misses;
                            rows[a.count_ones() as usize] * per_tuple.powf(per_first)
                        })
                        .sum();
                    let sign = if clear.count_ones() % 2 == 0 {
                        1.0
                    } else {
                        -1.0
                    };
                    sign * none.powf(first)
                })
                .sum::<f64>()
        };
        let rows = distinct_draws(k1, m1);
        let cols = distinct_draws(k2, m2);
        let fpr = (1..=k1)
            .flat_map(|d1| (1..=k2).map(move |d2| (d1, d2)))
            .filter(|&(d1, d2)| rows[d1 as usize] * cols[d2 as usize] > 0.0)
            .map(|(d1, d2)| rows[d1 as usize] * cols[d2 as usize] * grid(d1, d2))
            .sum::<f64>();
        Some(fpr.clamp(0.0, 1.0))
    }

    /// §IV-B's false positive rate of a maximum-adaptive matrix holding every combination of
    /// `first` distinct first components and `second` distinct second components, for a query
    /// whose components are both new: the row filter's rate times the column filter's,
    /// `(1 − e^{−k1 n_a / m1})^{k1} · (1 − e^{−k2 n_b / m2})^{k2}` (`(1/2)^{k1 + k2}` at the
    /// optimum). A query with a known first component passes the row test: its rate is the
    /// column factor alone.
    pub fn fpr_adaptive(&self, first: f64, second: f64) -> f64 {
        self.row_fpr(first) * self.col_fpr(second)
    }

    /// The row filter's false positive rate over `first` distinct first components.
    pub fn row_fpr(&self, first: f64) -> f64 {
        theorem1(self.rows as f64, self.row_hashes, first)
    }

    /// The column filter's false positive rate over `second` distinct second components.
    pub fn col_fpr(&self, second: f64) -> f64 {
        theorem1(self.cols as f64, self.col_hashes, second)
    }

    /// Theorem 2's shape for `items` random tuples at false positive rate `fpr`: the `(k1, k2)`
    /// whose product `k` needs the fewest bits, `m = −k n / ln(1 − p^{1/k})` (at the optimum
    /// `k = (m/n) ln 2`, `p = 2^{−k}`, the standard filter's), preferring the most balanced pair
    /// among those within 1% of the fewest bits; then a square matrix of at least `m` bits with
    /// whole-word rows.
    pub fn for_fpr(items: u64, fpr: f64) -> Result<Self> {
        Self::min_storage(items, 1, fpr)
    }

    /// §IV-C's j-matrix for `items` tuples whose first components each combine with about
    /// `classes` second components: Theorem 2's bits and hashes for `items` ([`Self::for_fpr`]),
    /// as `classes` square matrices of side `w` side by side (`w` rows, `classes · w` columns).
    /// By Theorem 3 its rate is a standard filter's with the same bits.
    pub fn min_storage(items: u64, classes: u64, fpr: f64) -> Result<Self> {
        check_target(items, fpr)?;
        if classes == 0 {
            return Err(Error::invalid("classes", "must be at least 1"));
        }
        let (k1, k2, bits) = optimal_pair(items as f64, fpr);
        // Each square holds bits / j; its side is a whole number of words when j = 1 (so no
        // padding), and rounds up otherwise.
        let side = (bits / classes as f64).sqrt().ceil().max(1.0) as u64;
        let (rows, cols) = if classes == 1 {
            let cols = side.div_ceil(64) * 64;
            ((bits / cols as f64).ceil().max(1.0) as u64, cols)
        } else {
            (side, side * classes)
        };
        Self::new(rows, cols, classes, (k1, k2), MatrixLayout::MinimumStorage)
    }

    /// Theorem 2's hashes for `items` random tuples at rate `fpr` ([`Self::for_fpr`]) in a
    /// **line-local** matrix: the columns are classes of [`LINE_COLS`] (a j-matrix of tall
    /// classes side by side, chosen by the class hash of the second component), so a second
    /// component's `k2` columns lie in one cache line of each row and a tuple's `k1 · k2` cells in
    /// `k1` lines; a batch that fixes either side reads one line per row and tuple instead of up
    /// to `k2`. The rows are a power of two and so are a class's columns, so both reduce by one
    /// AND. Each class holds about `n / j` tuples in `m / j` bits, so Theorem 1's rate holds as
    /// for the square (the tests measure it against [`Self::fpr_exact`]). The bits are Theorem
    /// 2's rounded up to whole classes (at most one class more; of the two powers of two nearest
    /// `√m` for the rows, the one that rounds up less). Under `512 × 512` bits it is Theorem 2's
    /// square instead: too few rows to split.
    ///
    /// ```
    /// use chronobloom_core::matrix::{MatrixShape, LINE_COLS};
    /// let s = MatrixShape::line_local(1_000_000, 0.01).unwrap();
    /// assert_eq!(s.class_cols(), LINE_COLS);
    /// assert!(s.rows.is_power_of_two());
    /// assert!(s.fpr(1_000_000.0) <= 0.01);
    /// ```
    pub fn line_local(items: u64, fpr: f64) -> Result<Self> {
        check_target(items, fpr)?;
        let (k1, k2, bits) = optimal_pair(items as f64, fpr);
        match line_grid(bits, f64::ceil) {
            Some((rows, classes)) => Self::new(
                rows,
                classes * LINE_COLS,
                classes,
                (k1, k2),
                MatrixLayout::MinimumStorage,
            ),
            None => Self::for_fpr(items, fpr),
        }
    }

    /// A line-local shape ([`Self::line_local`]) of at most `bits` bits for `items` tuples (for
    /// comparisons at equal bits): whole classes of [`LINE_COLS`] columns and a power of two of
    /// rows, and the `(k1, k2)`, `k1 ≥ 2` where the best product allows it, minimising Theorem 1's
    /// rate (a single row per first component would make all its tuples share it).
    pub fn line_local_bits(bits: u64, items: u64) -> Result<Self> {
        check_target(items, 0.5)?;
        let Some((rows, classes)) = line_grid(bits as f64, f64::floor) else {
            return Self::min_storage_bits(bits, items, 1);
        };
        let stored = (rows * classes * LINE_COLS) as f64;
        let cost = |k| theorem1(stored, k, items as f64);
        let (k1, k2) = balanced_pair(cost);
        let (k1, k2) = if k1 == 1 && k2 >= 4 {
            // the best product whose most balanced pair has two rows or more
            let pairs =
                (2..=MAX_SIDE_HASHES).flat_map(|a| (a..=MAX_SIDE_HASHES).map(move |b| (a, b)));
            pairs
                .min_by(|&(a, b), &(c, d)| cost(a * b).total_cmp(&cost(c * d)))
                .unwrap_or((k1, k2))
        } else {
            (k1, k2)
        };
        Self::new(
            rows,
            classes * LINE_COLS,
            classes,
            (k1, k2),
            MatrixLayout::MinimumStorage,
        )
    }

    /// A minimum-storage shape of about `bits` bits for `items` tuples (for comparisons at equal
    /// bits): the `(k1, k2)` minimising Theorem 1's rate, and `classes` squares of side about
    /// `√(bits / j)` whose stored bits (rows padded to whole words) stay within `bits` (for
    /// `j = 1`, whole-word rows and as many rows as fit).
    pub fn min_storage_bits(bits: u64, items: u64, classes: u64) -> Result<Self> {
        check_target(items, 0.5)?;
        if classes == 0 || bits < classes {
            return Err(Error::invalid(
                "bits",
                format!("{bits} bits cannot hold {classes} classes"),
            ));
        }
        let (k1, k2) = balanced_pair(|k| theorem1(bits as f64, k, items as f64));
        let mut side = ((bits / classes) as f64).sqrt().floor().max(1.0) as u64;
        let (rows, cols) = if classes == 1 {
            let cols = (side / 64).max(1) * 64;
            ((bits / cols).max(1), cols)
        } else {
            // Rows are padded to whole words: shrink the squares until the padding fits too.
            while side > 1 && side * (side * classes).div_ceil(64) * 64 > bits {
                side -= 1;
            }
            (side, side * classes)
        };
        Self::new(rows, cols, classes, (k1, k2), MatrixLayout::MinimumStorage)
    }

    /// A maximum-adaptive shape of about `bits` bits for `first` and `second` distinct
    /// components (for comparisons at equal bits): `m1 / m2 = n_a / n_b`, so both sides hold the
    /// same bits per component, and `k_i = round((m_i / n_i) ln 2)` (1 to 16).
    pub fn max_adaptive_bits(first: u64, second: u64, bits: u64) -> Result<Self> {
        check_target(first.min(second), 0.5)?;
        // Whole-word rows when a row has a word or more, so the padding stays within `bits`.
        let m2 = (bits as f64 * second as f64 / first as f64).sqrt();
        let m2 = if m2 >= 64.0 {
            (m2 / 64.0).round() as u64 * 64
        } else {
            (m2.round() as u64).max(1)
        };
        let m1 = (bits / (m2.div_ceil(64) * 64)).max(1);
        let k = |m: u64, n: u64| {
            (m as f64 / n as f64 * LN_2)
                .round()
                .clamp(1.0, f64::from(MAX_SIDE_HASHES)) as u32
        };
        Self::max_adaptive_with(first, second, (k(m1, first), k(m2, second)), (m1, m2))
    }

    /// §IV-B's maximum-adaptive shape for `first` distinct first components and `second` distinct
    /// second components at false positive rate `fpr` for new components: each side is a
    /// standard filter at `√fpr` (the two sides "both expected to hold the lowest possible false
    /// positive rate"), `k_i = round(−log2 √p)`, `m_i = ceil(−n_i ln √p / (ln 2)^2)`.
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixShape;
    /// let s = MatrixShape::max_adaptive(1_000, 50, 0.0001).unwrap();
    /// assert_eq!((s.row_hashes, s.col_hashes), (7, 7));
    /// assert!(s.fpr_adaptive(1_000.0, 50.0) < 0.00012);
    /// ```
    pub fn max_adaptive(first: u64, second: u64, fpr: f64) -> Result<Self> {
        check_target(first.min(second), fpr)?;
        let side = fpr.sqrt();
        let optimal = (-side.log2()).round().max(1.0);
        let k = optimal.min(f64::from(MAX_SIDE_HASHES)) as u32;
        let bits = |n: u64| {
            let n = n as f64;
            let m = if optimal > f64::from(MAX_SIDE_HASHES) {
                // the hash count is capped: the bits that reach √p with k hashes (Theorem 1)
                bits_for_hashes(n, f64::from(k), side)
            } else {
                -n * side.ln() / (LN_2 * LN_2)
            };
            m.ceil().max(1.0) as u64
        };
        Self::max_adaptive_with(first, second, (k, k), (bits(first), bits(second)))
    }

    /// A maximum-adaptive shape with the hashes per side given and the bits per side given, or,
    /// for a side given 0 bits, the side's optimum `m_i = round(k_i n_i / ln 2)` (§V-B's
    /// experiments fix `k` and derive the sides from it).
    pub fn max_adaptive_with(
        first: u64,
        second: u64,
        (k1, k2): (u32, u32),
        (m1, m2): (u64, u64),
    ) -> Result<Self> {
        let optimal = |n: u64, k: u32| (f64::from(k) * n as f64 / LN_2).round().max(1.0) as u64;
        let m1 = if m1 == 0 { optimal(first, k1) } else { m1 };
        let m2 = if m2 == 0 { optimal(second, k2) } else { m2 };
        Self::new(m1, m2, 1, (k1, k2), MatrixLayout::MaximumAdaptive)
    }
}

/// A line-local grid for about `bits` bits: a power of two of rows, from a quarter of `√bits` to
/// twice it, and `classes` of [`LINE_COLS`] columns, `round` (`ceil` or `floor`) turning
/// `bits / (rows · 512)` into whole classes; the grid nearest `bits`, and among equally near ones
/// the rows nearest `√bits` (fewer rows share each first component's rows more often). `None`
/// under `512 × 512` bits or when no class fits.
fn line_grid(bits: f64, round: fn(f64) -> f64) -> Option<(u64, u64)> {
    let line = LINE_COLS as f64;
    if bits < line * line {
        return None;
    }
    let top = bits.sqrt().log2().floor() as i32;
    (top - 2..=top + 1)
        .map(|j| 2f64.powi(j))
        .map(|rows| (rows, round(bits / (rows * line))))
        .filter(|&(_, classes)| classes >= 1.0)
        .min_by(|a, b| {
            let off = |(rows, classes): (f64, f64)| {
                let skew = (rows.log2() - bits.sqrt().log2()).abs();
                ((rows * classes * line - bits).abs(), skew)
            };
            let (x, y) = (off(*a), off(*b));
            x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1))
        })
        .map(|(rows, classes)| (rows as u64, classes as u64))
}

/// `p[a]`: the probability that `k` independent uniform draws from `m` values hit a given `a` of
/// `d` given distinct values and miss the other `d − a` (`a` in `0..=d`): by inclusion–exclusion
/// over the hit values the draws miss, `Σ_t C(a, t) (−1)^t (1 − (d − a + t) / m)^k`.
fn exact_cover(d: u32, k: u32, m: f64) -> Vec<f64> {
    (0..=d)
        .map(|a| {
            let mut binomial = 1.0;
            (0..=a)
                .map(|t| {
                    let term = binomial * (1.0 - f64::from(d - a + t) / m).powi(k as i32);
                    binomial = binomial * f64::from(a - t) / f64::from(t + 1);
                    if t % 2 == 0 {
                        term
                    } else {
                        -term
                    }
                })
                .sum::<f64>()
                .max(0.0)
        })
        .collect()
}

/// `p[d]`: the probability that `k` independent uniform draws from `m` values take exactly `d`
/// distinct values (`d` in `0..=k`).
fn distinct_draws(k: u32, m: f64) -> Vec<f64> {
    let mut p = vec![0.0; k as usize + 1];
    p[0] = 1.0;
    for _ in 0..k {
        for d in (1..p.len()).rev() {
            let old = (d - 1) as f64;
            p[d] = p[d] * d as f64 / m + p[d - 1] * (m - old) / m;
        }
        p[0] = 0.0;
    }
    p
}

/// Theorem 1 (and the standard filter's eq. 2): `(1 − e^{−k n / m})^k`.
fn theorem1(bits: f64, hashes: u32, items: f64) -> f64 {
    let k = f64::from(hashes);
    (1.0 - (-k * items / bits).exp()).powf(k)
}

/// The bits `m` at which `k` hashes give `items` items the rate `fpr` by Theorem 1:
/// `m = −k n / ln(1 − p^{1/k})`. `ln_1p` keeps a tiny `p^{1/k}` from rounding the logarithm to 0
/// (which made the cost −∞, and the least).
fn bits_for_hashes(items: f64, k: f64, fpr: f64) -> f64 {
    -k * items / (-fpr.powf(1.0 / k)).ln_1p()
}

fn check_target(items: u64, fpr: f64) -> Result<()> {
    if items == 0 {
        return Err(Error::invalid("items", "must be at least 1"));
    }
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
    }
    Ok(())
}

/// Theorem 2 over integer pairs: the `(k1, k2, bits)` meeting `fpr` for `items` tuples with the
/// fewest bits.
fn optimal_pair(items: f64, fpr: f64) -> (u32, u32, f64) {
    let bits_for = |k: u32| bits_for_hashes(items, f64::from(k), fpr);
    let (k1, k2) = balanced_pair(bits_for);
    (k1, k2, bits_for(k1 * k2).ceil())
}

/// The pair `k1 <= k2` (each at most 16) whose product has the least `cost`, the most balanced
/// among those within 1% of the least (a balanced pair hashes the varying side of a batch fewer
/// times).
fn balanced_pair(cost: impl Fn(u32) -> f64) -> (u32, u32) {
    let pairs = (1..=MAX_SIDE_HASHES).flat_map(|a| (a..=MAX_SIDE_HASHES).map(move |b| (a, b)));
    let least = pairs
        .clone()
        .map(|(a, b)| cost(a * b))
        .fold(f64::INFINITY, f64::min);
    pairs
        .filter(|&(a, b)| cost(a * b) <= least * 1.01)
        .max_by_key(|&(a, b)| (a, std::cmp::Reverse(b)))
        .unwrap_or((1, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_distinct_as_counted() {
        // Two draws of 10 values coincide one time in ten; three draws take three values with
        // probability 9/10 · 8/10.
        let two = distinct_draws(2, 10.0);
        assert!((two[1] - 0.1).abs() < 1e-12 && (two[2] - 0.9).abs() < 1e-12);
        let three = distinct_draws(3, 10.0);
        assert!((three[3] - 0.72).abs() < 1e-12 && (three[1] - 0.01).abs() < 1e-12);
        assert!((three.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn covers_of_every_subset_sum_to_one() {
        // Over the 2^d subsets a component's draws can hit, the probabilities sum to one; one
        // draw hits exactly one given value with probability 1/m.
        for (d, k, m) in [(1, 1, 7.0), (2, 2, 156.0), (3, 3, 512.0), (4, 2, 9.0)] {
            let p = exact_cover(d, k, m);
            let mut total = 0.0;
            let mut binomial = 1.0;
            for (a, pa) in p.iter().enumerate() {
                total += binomial * pa;
                binomial = binomial * f64::from(d - a as u32) / (a as f64 + 1.0);
            }
            assert!((total - 1.0).abs() < 1e-12, "d {d} k {k} m {m}: {total}");
        }
        assert!((exact_cover(1, 1, 7.0)[1] - 1.0 / 7.0).abs() < 1e-12);
        // Two draws cannot hit three values.
        assert!(exact_cover(3, 2, 50.0)[3].abs() < 1e-12);
    }
}
