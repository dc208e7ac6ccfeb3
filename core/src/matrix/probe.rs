//! The positions of one component, computed once and reused: the `k1` rows of a first component
//! ([`RowProbe`]) and the `k2` columns of a second ([`ColProbe`]).

use super::shape::{MatrixShape, MAX_SIDE_HASHES};
use crate::hash::{mix64, probe_array, FastMod, Key, KeyHash, LowBits, Probes, Reduce};

const SIDES: usize = MAX_SIDE_HASHES as usize;

/// Mixed into the seed for the second component, so that the pair `(x, x)` does not put its rows
/// and its columns at the same hash.
const COLUMN_SALT: u64 = 0x6a09_e667_f3bc_c908;

/// The seed second components are hashed with: `mix64(seed ⊕ 0x6a09e667f3bcc908)`.
pub(crate) fn column_seed(seed: u64) -> u64 {
    mix64(seed ^ COLUMN_SALT)
}

/// What a matrix needs to turn a key hash into positions; copied out of the matrix so that probes
/// can be built without borrowing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) rows: FastMod,
    pub(crate) class_cols: FastMod,
    /// `rows` as one AND, when a power of two ([`by_reducer!`]).
    pub(crate) rows_low: Option<LowBits>,
    /// `class_cols` as one AND, when a power of two.
    pub(crate) class_cols_low: Option<LowBits>,
    pub(crate) classes: FastMod,
    /// Bits per stored row (whole words).
    pub(crate) stride: u64,
    pub(crate) row_hashes: u32,
    pub(crate) col_hashes: u32,
    pub(crate) row_seed: u64,
    pub(crate) col_seed: u64,
}

impl Geometry {
    /// The geometry of a checked shape (every divisor is positive).
    pub(crate) fn of(shape: &MatrixShape, seed: u64) -> Option<Self> {
        Some(Geometry {
            rows: FastMod::new(shape.rows)?,
            class_cols: FastMod::new(shape.class_cols())?,
            rows_low: LowBits::new(shape.rows),
            class_cols_low: LowBits::new(shape.class_cols()),
            classes: FastMod::new(shape.classes)?,
            stride: shape.stride()?,
            row_hashes: shape.row_hashes,
            col_hashes: shape.col_hashes,
            row_seed: seed,
            col_seed: column_seed(seed),
        })
    }

    /// The rows of the first component `a`.
    #[inline]
    pub(crate) fn rows_of<A: Key + ?Sized>(&self, a: &A) -> RowProbe {
        self.rows_of_hash(KeyHash::of(a, self.row_seed))
    }

    /// The rows of a first component hashed with the matrix seed: the `k1` probe positions of
    /// the crate's enhanced double hashing reduced by `m1`, as offsets of whole rows.
    #[inline]
    pub(crate) fn rows_of_hash(&self, hash: KeyHash) -> RowProbe {
        let mut out = RowProbe {
            offsets: [0; SIDES],
            len: self.row_hashes as u8,
        };
        for (slot, r) in out
            .offsets
            .iter_mut()
            .zip(hash.probes(self.row_hashes, self.rows))
        {
            *slot = r * self.stride;
        }
        out
    }

    /// The single row `row mod m1`, not hashed: a direct-mapped first component (the row
    /// function of the paper's Appendix C, for small integers such as time buckets).
    #[inline]
    pub(crate) fn row_at(&self, row: u64) -> RowProbe {
        let mut out = RowProbe {
            offsets: [0; SIDES],
            len: 1,
        };
        out.offsets[0] = self.rows.reduce(row) * self.stride;
        out
    }

    /// The columns of the second component `b`.
    #[inline]
    pub(crate) fn cols_of<B: Key + ?Sized>(&self, b: &B) -> ColProbe {
        self.cols_of_hash(KeyHash::of(b, self.col_seed))
    }

    /// The columns of the second component `b`, as an iterator ([`Self::cols_of_hash`]).
    #[inline]
    pub(crate) fn col_indices<B: Key + ?Sized>(&self, b: &B) -> impl Iterator<Item = u64> {
        self.col_indices_of_hash(KeyHash::of(b, self.col_seed))
    }

    /// [`Self::cols_of_hash`] as an iterator.
    #[inline]
    pub(crate) fn col_indices_of_hash(&self, hash: KeyHash) -> impl Iterator<Item = u64> {
        self.col_indices_by(hash, self.class_cols)
    }

    /// [`Self::col_indices_of_hash`] with the columns of a class reduced by `class_cols`
    /// (`self.class_cols` or, for a power of two, `self.class_cols_low`: the same columns).
    #[inline]
    pub(crate) fn col_indices_by<R: Reduce>(
        &self,
        hash: KeyHash,
        class_cols: R,
    ) -> impl Iterator<Item = u64> {
        let base = self.class_base(hash);
        Probes::new(hash, self.col_hashes, class_cols).map(move |c| base + c)
    }

    /// The first of the columns [`Self::col_indices_by`] gives (one reduction: enough to request
    /// its line).
    #[inline]
    pub(crate) fn first_col_by<R: Reduce>(&self, hash: KeyHash, class_cols: R) -> u64 {
        self.class_base(hash) + class_cols.reduce(hash.lo)
    }

    /// The first column of the hash's class.
    #[inline]
    pub(crate) fn class_base(&self, hash: KeyHash) -> u64 {
        if self.classes.divisor() == 1 {
            0
        } else {
            self.classes.reduce(mix64(hash.lo ^ hash.hi)) * self.class_cols.divisor()
        }
    }

    /// The columns of a second component hashed with the column seed: its class
    /// `mix64(lo ⊕ hi) mod j` picks a block of `m2 / j` columns and the `k2` probe positions
    /// reduced by `m2 / j` pick columns inside it.
    #[inline]
    pub(crate) fn cols_of_hash(&self, hash: KeyHash) -> ColProbe {
        let base = self.class_base(hash);
        let mut out = ColProbe {
            cols: [0; SIDES],
            len: self.col_hashes as u8,
        };
        for (slot, c) in out
            .cols
            .iter_mut()
            .zip(hash.probes(self.col_hashes, self.class_cols))
        {
            *slot = base + c;
        }
        out
    }
}

/// Evaluates `$body` with `$r` bound to `$low` (a [`LowBits`]) when it is `Some`, else to
/// `$fast` (a [`FastMod`] of the same divisor): the body is compiled once for each reduction, and
/// the choice is made once, outside whatever loop the body holds.
macro_rules! by_reducer {
    ($low:expr, $fast:expr, |$r:ident| $body:expr) => {
        match $low {
            Some($r) => $body,
            None => {
                let $r = $fast;
                $body
            }
        }
    };
}
pub(crate) use by_reducer;

/// How many columns a second component has, fixed for a batch: a constant for the common counts
/// ([`by_col_count!`]), so that computing a value's columns is straight-line code rather than a
/// loop over a count read at run time (measured: a 16-value key-fixed batch of the 3,072-column
/// square in `benches/matrix.rs`, `k2` = 3, 11.5 → 9.9 ns per tuple).
pub(crate) trait ColCount: Copy {
    /// The columns of one second component.
    type Cols: AsRef<[u64]> + Copy;

    /// A placeholder to fill arrays of columns with.
    const NONE: Self::Cols;

    /// The columns of the second component hashed to `hash` ([`Geometry::col_indices_by`]).
    fn cols<R: Reduce>(self, g: &Geometry, hash: KeyHash, class_cols: R) -> Self::Cols;
}

/// Exactly `K` columns (`K` = the matrix's `k2`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed<const K: usize>;

impl<const K: usize> ColCount for Fixed<K> {
    type Cols = [u64; K];
    const NONE: [u64; K] = [0; K];

    #[inline]
    fn cols<R: Reduce>(self, g: &Geometry, hash: KeyHash, class_cols: R) -> [u64; K] {
        let base = g.class_base(hash);
        probe_array::<K, R>(hash, class_cols).map(|c| base + c)
    }
}

/// The matrix's `k2` columns, however many.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnyCount;

impl ColCount for AnyCount {
    type Cols = ColProbe;
    const NONE: ColProbe = ColProbe {
        cols: [0; SIDES],
        len: 0,
    };

    #[inline]
    fn cols<R: Reduce>(self, g: &Geometry, hash: KeyHash, class_cols: R) -> ColProbe {
        let mut out = ColProbe {
            cols: [0; SIDES],
            len: g.col_hashes as u8,
        };
        for (slot, c) in out.cols.iter_mut().zip(g.col_indices_by(hash, class_cols)) {
            *slot = c;
        }
        out
    }
}

/// Evaluates `$body` with `$c` bound to a [`ColCount`] for `$k2` columns: [`Fixed`] for 1 to 4
/// (Theorem 2's shapes down to a rate of 2^−16 have `k2 ≤ 4`), [`AnyCount`] beyond. Like
/// [`by_reducer!`], the choice is made once per batch and the body compiled once for each.
macro_rules! by_col_count {
    ($k2:expr, |$c:ident| $body:expr) => {
        match $k2 {
            1 => {
                let $c = $crate::matrix::probe::Fixed::<1>;
                $body
            }
            2 => {
                let $c = $crate::matrix::probe::Fixed::<2>;
                $body
            }
            3 => {
                let $c = $crate::matrix::probe::Fixed::<3>;
                $body
            }
            4 => {
                let $c = $crate::matrix::probe::Fixed::<4>;
                $body
            }
            _ => {
                let $c = $crate::matrix::probe::AnyCount;
                $body
            }
        }
    };
}
pub(crate) use by_col_count;

/// The `k1` rows of one first component, as bit offsets of the rows' starts: hash it once, then
/// test it against any number of second components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowProbe {
    offsets: [u64; SIDES],
    len: u8,
}

impl RowProbe {
    /// The bit offsets of the rows' starts.
    #[inline]
    pub fn offsets(&self) -> &[u64] {
        &self.offsets[..usize::from(self.len)]
    }
}

/// The `k2` columns of one second component: hash it once, then test it against any number of
/// first components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColProbe {
    cols: [u64; SIDES],
    len: u8,
}

impl ColProbe {
    /// The column indices.
    #[inline]
    pub fn cols(&self) -> &[u64] {
        &self.cols[..usize::from(self.len)]
    }
}

impl AsRef<[u64]> for ColProbe {
    #[inline]
    fn as_ref(&self) -> &[u64] {
        self.cols()
    }
}
