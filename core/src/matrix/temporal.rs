//! A matrix per PBF level: temporal membership for batches of keys (paper 003 §II-A, Example 2:
//! the tmt-query as a batch 2-tuple partial existence test).
//!
//! Level ℓ holds the tuple (bucket ⌊t / 2^ℓ⌋, key) for every record (key, t), as PBF-2 holds the
//! pair (paper 000 §4.2). The bucket is the first component, so a block of a query's dyadic cover
//! is hashed once and its `k1` rows — whole words in sequence — are ANDed once into a mask over
//! the key columns; every key of the batch then tests its `k2` columns in each block's mask.
//! Every level has the same key columns and seed, so a key's columns are computed once for all
//! levels. "Which of these 1,000 source addresses appeared in [s, e]?" costs one mask per block
//! and `k2` column positions per key, where PBF-2 answers key by key with a bucket hash and `k`
//! probes per block and key.

use super::batch::mask_has_all;
use super::filter::MatrixBloom;
use super::shape::{MatrixLayout, MatrixShape};
use crate::error::{Error, Result};
use crate::hash::Key;
use crate::temporal::{dyadic_cover, Block, Pbf2, Tick, TimeRange};
use serde::{Deserialize, Serialize};

/// A static temporal filter over ticks `0..horizon`: one [`MatrixBloom`] of (bucket, key) per
/// PBF-2 level. No false negatives.
///
/// ```
/// use chronobloom_core::matrix::MatrixPbf;
/// use chronobloom_core::temporal::TimeRange;
/// let mut f = MatrixPbf::uniform(1_024, 2_000_000, 2_048, (2, 4), 7).unwrap();
/// f.insert(&"10.0.0.1", 100).unwrap();
/// f.insert(&"10.0.0.3", 900).unwrap();
/// let seen = f.query_keys(&["10.0.0.1", "10.0.0.2", "10.0.0.3"], TimeRange::new(0, 500).unwrap());
/// assert!(seen[0]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "MatrixPbfFields")]
pub struct MatrixPbf {
    horizon: Tick,
    levels: Vec<MatrixBloom>,
}

/// The serialized form, checked: PBF-2's level count for the horizon, and one seed, one key side
/// (columns and hashes) for every level.
#[derive(Deserialize)]
struct MatrixPbfFields {
    horizon: Tick,
    levels: Vec<MatrixBloom>,
}

impl TryFrom<MatrixPbfFields> for MatrixPbf {
    type Error = Error;
    fn try_from(f: MatrixPbfFields) -> Result<Self> {
        let expected = u64::from(Pbf2::levels_for(f.horizon)?);
        if f.levels.len() as u64 != expected {
            return Err(Error::ShapeMismatch {
                what: "levels for the horizon",
                left: expected,
                right: f.levels.len() as u64,
            });
        }
        if let Some(first) = f.levels.first() {
            let (s, seed) = (first.shape(), first.seed());
            for level in &f.levels {
                let t = level.shape();
                for (what, left, right) in [
                    ("key columns", s.cols, t.cols),
                    ("key hashes", s.col_hashes.into(), t.col_hashes.into()),
                    ("classes", 1, t.classes),
                    ("seed", seed, level.seed()),
                ] {
                    if left != right {
                        return Err(Error::ShapeMismatch { what, left, right });
                    }
                }
            }
        }
        Ok(MatrixPbf {
            horizon: f.horizon,
            levels: f.levels,
        })
    }
}

impl MatrixPbf {
    /// A matrix PBF over ticks `0..horizon` (PBF-2's ⌈log2 T⌉ + 1 levels) with `total_bits`
    /// spread evenly over the levels: each level has `key_cols` key columns and as many bucket
    /// rows as its share of the bits allows, but no more than `⌈buckets · k1 / ln 2⌉` (a level
    /// with few buckets cannot use more rows). `bucket_hashes` is `k1`, `key_hashes` is `k2`.
    ///
    /// Every key of a bucket sets `k2` columns of the same `k1` rows, so a level whose buckets
    /// hold many keys needs enough key columns: about `keys per bucket · k2 / ln 2` keeps a
    /// single bucket's rows half full.
    pub fn uniform(
        horizon: Tick,
        total_bits: u64,
        key_cols: u64,
        (bucket_hashes, key_hashes): (u32, u32),
        seed: u64,
    ) -> Result<Self> {
        let levels = Pbf2::levels_for(horizon)?;
        let per_level = total_bits / u64::from(levels);
        let stride = key_cols.div_ceil(64).saturating_mul(64).max(64);
        let levels = (0..levels)
            .map(|level| {
                let buckets = (horizon - 1) >> level;
                let useful = ((buckets + 1) as f64 * f64::from(bucket_hashes)
                    / std::f64::consts::LN_2)
                    .ceil() as u64;
                let rows = (per_level / stride).clamp(1, useful.max(1));
                let shape = MatrixShape::new(
                    rows,
                    key_cols,
                    1,
                    (bucket_hashes, key_hashes),
                    MatrixLayout::MinimumStorage,
                )?;
                MatrixBloom::new(shape, seed)
            })
            .collect::<Result<_>>()?;
        Ok(MatrixPbf { horizon, levels })
    }

    /// The ticks covered: `0..horizon`.
    pub fn horizon(&self) -> Tick {
        self.horizon
    }

    /// Number of levels.
    pub fn levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Level ℓ's matrix of (bucket, key).
    pub fn level(&self, level: u32) -> Option<&MatrixBloom> {
        self.levels.get(level as usize)
    }

    /// Memory held by the levels' bit arrays, in bits.
    pub fn memory_bits(&self) -> u64 {
        self.levels.iter().map(MatrixBloom::memory_bits).sum()
    }

    /// Records that `key` appeared at `tick`; [`Error::BeyondHorizon`] past the horizon.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, tick: Tick) -> Result<()> {
        if tick >= self.horizon {
            return Err(Error::BeyondHorizon {
                tick,
                horizon: self.horizon,
            });
        }
        let Some(first) = self.levels.first() else {
            return Ok(());
        };
        let cols = first.geometry.cols_of(key);
        for (level, m) in self.levels.iter_mut().enumerate() {
            let rows = m.geometry.rows_of(&(tick >> level));
            m.insert_probes(&rows, &cols);
        }
        Ok(())
    }

    /// "Did `key` appear in `range`?" One key, block by block: the reference the batch query is
    /// tested against. The part of `range` past the horizon holds nothing.
    pub fn query<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> bool {
        let Some(first) = self.levels.first() else {
            return false;
        };
        let cols = first.geometry.cols_of(key);
        self.cover(range).any(|b| {
            self.level(b.level).is_some_and(|m| {
                let rows = m.geometry.rows_of(&b.bucket);
                m.contains_probes(&rows, &cols)
            })
        })
    }

    /// "Which of `keys` appeared in `range`?", in the order of `keys`: each block of the range's
    /// cover is hashed once (and its rows ANDed into a mask when the batch pays for it), each key
    /// once. The same answers as [`Self::query`] key by key.
    pub fn query_keys<K: Key>(&self, keys: &[K], range: TimeRange) -> Vec<bool> {
        let Some(first) = self.levels.first() else {
            return vec![false; keys.len()];
        };
        let blocks: Vec<BlockTest> = self
            .cover(range)
            .filter_map(|b| {
                let m = self.level(b.level)?;
                let rows = m.geometry.rows_of(&b.bucket);
                Some(if m.row_mask_pays(keys.len()) {
                    let mut mask = Vec::new();
                    m.row_mask(&rows, &mut mask);
                    BlockTest::Mask(mask)
                } else {
                    BlockTest::Rows(m, rows)
                })
            })
            .collect();
        keys.iter()
            .map(|k| {
                let cols = first.geometry.cols_of(k);
                blocks.iter().any(|t| match t {
                    BlockTest::Mask(mask) => mask_has_all(mask, cols.cols()),
                    BlockTest::Rows(m, rows) => m.contains_probes(rows, &cols),
                })
            })
            .collect()
    }

    /// The dyadic cover of `range` cut at the horizon (empty when it starts past it).
    fn cover(&self, range: TimeRange) -> impl Iterator<Item = Block> {
        let top = self.levels().saturating_sub(1);
        range
            .clamp_below(self.horizon)
            .into_iter()
            .flat_map(move |r| dyadic_cover(r, top))
    }
}

/// How one block of a batch query is tested: by its rows' AND, or by its rows directly.
enum BlockTest<'a> {
    Mask(Vec<u64>),
    Rows(&'a MatrixBloom, super::probe::RowProbe),
}
