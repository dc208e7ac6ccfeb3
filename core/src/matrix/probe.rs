//! The positions of one component, computed once and reused: the `k1` rows of a first component
//! ([`RowProbe`]) and the `k2` columns of a second ([`ColProbe`]).

use super::shape::{MatrixShape, MAX_SIDE_HASHES};
use crate::hash::{mix64, FastMod, Key, KeyHash, Probes};

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

    /// The row indices (not offsets) of the first component `a`, as an iterator: for the
    /// varying side of a batch, where building a [`RowProbe`] would copy its array per tuple.
    #[inline]
    pub(crate) fn row_indices<A: Key + ?Sized>(&self, a: &A) -> Probes {
        KeyHash::of(a, self.row_seed).probes(self.row_hashes, self.rows)
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
        hash.probes(self.col_hashes, self.class_cols)
            .map(move |c| base + c)
    }

    /// The first column of the hash's class.
    #[inline]
    fn class_base(&self, hash: KeyHash) -> u64 {
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
