//! The positions of one component, computed once and reused: the `k1` rows of a first component
//! ([`RowProbe`]) and the `k2` columns of a second ([`ColProbe`]).

use super::shape::{MatrixShape, MAX_SIDE_HASHES};
use crate::hash::{mix64, FastMod, Key, KeyHash, Spread};

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
    pub(crate) rows: Spread,
    /// `rows` as a remainder, for direct-mapped rows ([`Self::row_at`]).
    pub(crate) rows_exact: FastMod,
    pub(crate) class_cols: Spread,
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
            rows: Spread::new(shape.rows)?,
            rows_exact: FastMod::new(shape.rows)?,
            class_cols: Spread::new(shape.class_cols())?,
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

    /// The rows of a first component hashed with the matrix seed: its first `k1` [`Spread`]
    /// positions in `0..m1`, as offsets of whole rows.
    #[inline]
    pub(crate) fn rows_of_hash(&self, hash: KeyHash) -> RowProbe {
        let mut out = RowProbe {
            offsets: [0; SIDES],
            len: self.row_hashes as u8,
        };
        for (slot, r) in out
            .offsets
            .iter_mut()
            .zip(self.rows.positions(hash, self.row_hashes))
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
        out.offsets[0] = self.rows_exact.reduce(row) * self.stride;
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
        let base = self.class_base(hash);
        self.class_cols
            .positions(hash, self.col_hashes)
            .map(move |c| base + c)
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
    /// `mix64(lo ⊕ hi) mod j` picks a block of `m2 / j` columns and its first `k2` [`Spread`]
    /// positions in `0..m2 / j` pick columns inside it.
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
            .zip(self.class_cols.positions(hash, self.col_hashes))
        {
            *slot = base + c;
        }
        out
    }
}

/// How many columns a second component has, fixed for a batch: a constant for the common counts
/// ([`by_col_count!`]), so that computing a value's columns is straight-line code rather than a
/// loop over a count read at run time (measured: a 16-value key-fixed batch of the 3,072-column
/// square in `benches/matrix.rs`, `k2` = 3, 11.5 → 9.9 ns per tuple).
pub(crate) trait ColCount: Copy {
    /// The columns of one second component.
    type Cols: AsRef<[u64]> + Copy;

    /// A placeholder to fill arrays of columns with.
    const NONE: Self::Cols;

    /// The columns of the second component hashed to `hash` ([`Geometry::col_indices_of_hash`]).
    fn cols(self, g: &Geometry, hash: KeyHash) -> Self::Cols;

    /// The words (`column / 64`) of `cols` and the bits of the columns in them, for testing the
    /// columns in a row word by word: the words of two columns may repeat.
    fn word_masks(self, cols: &Self::Cols) -> (Self::Cols, Self::Cols);
}

/// Exactly `K` columns (`K` = the matrix's `k2`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed<const K: usize>;

impl<const K: usize> ColCount for Fixed<K> {
    type Cols = [u64; K];
    const NONE: [u64; K] = [0; K];

    #[inline]
    fn cols(self, g: &Geometry, hash: KeyHash) -> [u64; K] {
        let base = g.class_base(hash);
        g.class_cols.array::<K>(hash).map(|c| base + c)
    }

    /// One word and one bit per column, `K` of each, repeats kept: a test is then `K`
    /// straight-line loads, the same for every value (a count that changed with how the columns
    /// fell would cost a mispredicted loop exit per key).
    #[inline]
    fn word_masks(self, cols: &[u64; K]) -> ([u64; K], [u64; K]) {
        (cols.map(|c| c / 64), cols.map(|c| 1 << (c % 64)))
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
    fn cols(self, g: &Geometry, hash: KeyHash) -> ColProbe {
        let mut out = ColProbe {
            cols: [0; SIDES],
            len: g.col_hashes as u8,
        };
        for (slot, c) in out.cols.iter_mut().zip(g.col_indices_of_hash(hash)) {
            *slot = c;
        }
        out
    }

    /// Each distinct word once, with the bits of all its columns: beyond four columns a row's
    /// columns often share words (a small square's row is a few words), and a load saved per
    /// shared word outweighs a loop count that varies.
    #[inline]
    fn word_masks(self, cols: &ColProbe) -> (ColProbe, ColProbe) {
        let (mut words, mut bits) = (Self::NONE, Self::NONE);
        for &c in cols.cols() {
            let (word, bit) = (c / 64, 1 << (c % 64));
            let n = usize::from(words.len);
            match words.cols[..n].iter().position(|&w| w == word) {
                Some(i) => bits.cols[i] |= bit,
                None => {
                    words.cols[n] = word;
                    bits.cols[n] = bit;
                    words.len += 1;
                    bits.len += 1;
                }
            }
        }
        (words, bits)
    }
}

/// Evaluates `$body` with `$c` bound to a [`ColCount`] for `$k2` columns: [`Fixed`] for 1 to 4
/// (Theorem 2's shapes down to a rate of 2^−16 have `k2 ≤ 4`), [`AnyCount`] beyond. The choice
/// is made once per batch and the body compiled once for each.
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
