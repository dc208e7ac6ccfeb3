//! [`MatrixBloom`]: the bit matrix, single-tuple insert and query (paper 003, Algorithms 1–2),
//! union, fill and serde.

use super::probe::{ColProbe, Geometry, RowProbe};
use super::shape::{MatrixLayout, MatrixShape};
use crate::bits::Bits;
use crate::error::{Error, Result};
use crate::hash::Key;
use serde::{Deserialize, Serialize, Serializer};

/// A matrix Bloom filter of 2-tuples `(a, b)`: `m1 × m2` bits, `k1` row hashes of `a` and `k2`
/// column hashes of `b`; a tuple sets (and a query tests) the `k1 · k2` bits where its rows and
/// columns cross. No false negatives (Assertion 1); the answer does not depend on which side is
/// hashed first (Assertion 3), so either side can be fixed in a batch ([`Self::contains_values`],
/// [`Self::contains_keys`], [`Self::contains_cross`]).
///
/// Rows are stored one after another, each padded to whole 64-bit words, in one [`Bits`].
///
/// ```
/// use chronobloom_core::matrix::MatrixBloom;
/// let mut cdn = MatrixBloom::with_fpr(10_000, 0.01, 7).unwrap();
/// cdn.insert(&"node-a", &1u32);
/// cdn.insert(&"node-a", &4u32);
/// assert!(cdn.contains(&"node-a", &4u32));
/// // "Does node A hold items 1, 4, 6?" hashes "node-a" once.
/// let held = cdn.contains_values(&"node-a", &[1u32, 4, 6]);
/// assert_eq!(&held[..2], &[true, true]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "MatrixFields<MatrixShape, Bits>")]
pub struct MatrixBloom {
    shape: MatrixShape,
    seed: u64,
    pub(super) geometry: Geometry,
    pub(super) bits: Bits,
}

/// How this build places a tuple's bits, serialized with them: 1 was enhanced double hashing
/// reduced by a remainder (before 2026-11-26; serialized without the field), 2 was
/// [`crate::hash::Spread`] with mixed words from the fifth position on (5b50153 to 805b55f), 3
/// is `Spread`. A matrix is read back only by a build that places bits the same way.
const POSITIONS: u16 = 3;

/// The serialized form: the shape, the seed, the bits and how they were placed; the geometry is
/// derived again, and the bits must have the shape's length.
#[derive(Serialize, Deserialize)]
struct MatrixFields<S, B> {
    shape: S,
    seed: u64,
    bits: B,
    #[serde(default = "first_positions")]
    positions: u16,
}

/// The placement of a matrix serialized before the field existed.
fn first_positions() -> u16 {
    1
}

impl Serialize for MatrixBloom {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        MatrixFields {
            shape: &self.shape,
            seed: self.seed,
            bits: &self.bits,
            positions: POSITIONS,
        }
        .serialize(s)
    }
}

impl TryFrom<MatrixFields<MatrixShape, Bits>> for MatrixBloom {
    type Error = Error;
    /// The bits read must have the shape's length, checked before anything is allocated: a
    /// shape from a corrupted file must not size an allocation.
    fn try_from(f: MatrixFields<MatrixShape, Bits>) -> Result<Self> {
        if f.positions != POSITIONS {
            return Err(Error::invalid(
                "positions",
                format!(
                    "bits placed by scheme {}, this build places them by scheme {POSITIONS}: \
                     rebuild the matrix from its tuples",
                    f.positions
                ),
            ));
        }
        let m = MatrixBloom::with_bits(f.shape, f.seed, f.bits)?;
        // Bits between a row's last column and its last word's end are never set by inserts;
        // set ones would count as occupied columns.
        let (words, tail) = ((m.geometry.stride / 64) as usize, m.shape.cols % 64);
        if tail != 0
            && m.bits
                .words()
                .chunks_exact(words)
                .any(|row| row.last().is_some_and(|w| w >> tail != 0))
        {
            return Err(Error::invalid(
                "bits",
                "bits are set past a row's last column",
            ));
        }
        Ok(m)
    }
}

/// `shape` as [`MatrixShape::new`] checks it.
fn checked(s: MatrixShape) -> Result<MatrixShape> {
    MatrixShape::new(
        s.rows,
        s.cols,
        s.classes,
        (s.row_hashes, s.col_hashes),
        s.layout,
    )
}

impl MatrixBloom {
    /// An empty matrix of the given shape (checked again, so a hand-built shape is refused as
    /// [`MatrixShape::new`] would refuse it).
    pub fn new(shape: MatrixShape, seed: u64) -> Result<Self> {
        let shape = checked(shape)?;
        Self::with_bits(shape, seed, Bits::try_new(shape.stored_bits())?)
    }

    /// A matrix of the given shape (checked) over `bits`, which must have its stored length.
    fn with_bits(shape: MatrixShape, seed: u64, bits: Bits) -> Result<Self> {
        let shape = checked(shape)?;
        if bits.len() != shape.stored_bits() {
            return Err(Error::ShapeMismatch {
                what: "stored bits vs matrix shape",
                left: bits.len(),
                right: shape.stored_bits(),
            });
        }
        let geometry = Geometry::of(&shape, seed)
            .ok_or_else(|| Error::invalid("rows, cols", "outside the checked shapes"))?;
        Ok(MatrixBloom {
            shape,
            seed,
            geometry,
            bits,
        })
    }

    /// Theorem 2's square matrix for `items` random (one-to-one) tuples at rate `fpr`.
    pub fn with_fpr(items: u64, fpr: f64, seed: u64) -> Result<Self> {
        Self::new(MatrixShape::for_fpr(items, fpr)?, seed)
    }

    /// §IV-B's maximum-adaptive matrix for `first` and `second` distinct components
    /// ([`MatrixShape::max_adaptive`]).
    pub fn max_adaptive(first: u64, second: u64, fpr: f64, seed: u64) -> Result<Self> {
        Self::new(MatrixShape::max_adaptive(first, second, fpr)?, seed)
    }

    /// §IV-C's j-matrix for `items` tuples whose first components each combine with about
    /// `classes` second components ([`MatrixShape::min_storage`]).
    pub fn min_storage(items: u64, classes: u64, fpr: f64, seed: u64) -> Result<Self> {
        Self::new(MatrixShape::min_storage(items, classes, fpr)?, seed)
    }

    /// The shape.
    pub fn shape(&self) -> MatrixShape {
        self.shape
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The bit array (rows of whole words, one after another).
    pub fn bits(&self) -> &Bits {
        &self.bits
    }

    /// Set bits.
    pub fn ones(&self) -> u64 {
        self.bits.count_ones()
    }

    /// Memory held by the bit array, in bits (rows padded to whole words).
    pub fn memory_bits(&self) -> u64 {
        self.bits.memory_bits()
    }

    /// Inserts the tuple `(a, b)` (Algorithm 1).
    pub fn insert<A: Key + ?Sized, B: Key + ?Sized>(&mut self, a: &A, b: &B) {
        let (rows, cols) = (self.geometry.rows_of(a), self.geometry.cols_of(b));
        self.insert_probes(&rows, &cols);
    }

    /// Inserts the tuple whose rows and columns are given (probes of this matrix).
    pub(crate) fn insert_probes(&mut self, rows: &RowProbe, cols: &ColProbe) {
        for &r in rows.offsets() {
            for &c in cols.cols() {
                self.bits.set(r + c);
            }
        }
    }

    /// "Was `(a, b)` inserted?" (Algorithm 2). False is certain; true may be a false positive.
    pub fn contains<A: Key + ?Sized, B: Key + ?Sized>(&self, a: &A, b: &B) -> bool {
        self.has_cols(&self.geometry.rows_of(a), self.geometry.col_indices(b))
    }

    /// ORs `other` into `self`. Refuses a matrix of another shape, layout or seed
    /// ([`Error::ShapeMismatch`]): its bits mean different tuples.
    pub fn union(&mut self, other: &MatrixBloom) -> Result<()> {
        let (a, b) = (&self.shape, &other.shape);
        let pairs = [
            ("rows", a.rows, b.rows),
            ("columns", a.cols, b.cols),
            ("classes", a.classes, b.classes),
            ("row hashes", a.row_hashes.into(), b.row_hashes.into()),
            ("column hashes", a.col_hashes.into(), b.col_hashes.into()),
            (
                "layout (0 maximum adaptive, 1 minimum storage)",
                a.layout.code(),
                b.layout.code(),
            ),
            ("seed", self.seed, other.seed),
        ];
        match pairs.into_iter().find(|(_, l, r)| l != r) {
            Some((what, left, right)) => Err(Error::ShapeMismatch { what, left, right }),
            None => self.bits.union_with(&other.bits),
        }
    }

    /// The load factor: set bits over the `m1 · m2` bits of the matrix (§V-B, Table II; about 25%
    /// for a fully loaded maximum-adaptive matrix, 50% for Theorem 2's optimum).
    pub fn load_factor(&self) -> f64 {
        self.ones() as f64 / self.shape.bits() as f64
    }

    /// The fractions of rows and of columns holding at least one set bit. In a maximum-adaptive
    /// matrix they are the row and column filters' fills (about one half each at the optimum).
    pub fn occupancy(&self) -> (f64, f64) {
        let words = (self.geometry.stride / 64) as usize;
        let mut any_col = vec![0u64; words];
        let mut rows = 0u64;
        for row in self.bits.words().chunks_exact(words.max(1)) {
            let mut any = 0;
            for (acc, &w) in any_col.iter_mut().zip(row) {
                *acc |= w;
                any |= w;
            }
            rows += u64::from(any != 0);
        }
        let cols: u64 = any_col.iter().map(|w| u64::from(w.count_ones())).sum();
        (
            rows as f64 / self.shape.rows as f64,
            cols as f64 / self.shape.cols as f64,
        )
    }

    /// The false positive rate implied by the current bits for a tuple of new components:
    ///
    /// * minimum storage: Theorem 1 with the realized fill, `load^{k1 k2}`;
    /// * maximum adaptive: §IV-B's product with the realized row and column fills,
    ///   `rows^{k1} · cols^{k2}` ([`Self::occupancy`]).
    pub fn estimated_fpr(&self) -> f64 {
        match self.shape.layout {
            MatrixLayout::MinimumStorage => self.load_factor().powi(self.shape.hashes() as i32),
            MatrixLayout::MaximumAdaptive => {
                let (rows, cols) = self.occupancy();
                rows.powi(self.shape.row_hashes as i32) * cols.powi(self.shape.col_hashes as i32)
            }
        }
    }
}
