//! A matrix per PBF level: temporal membership for batches of keys (paper 003 §II-A, Example 2:
//! the tmt-query as a batch 2-tuple partial existence test).
//!
//! Level ℓ holds the tuple (bucket ⌊t / 2^ℓ⌋, key) for every record (key, t), as PBF-2 holds the
//! pair (paper 000 §4.2). The bucket is the first component (the rows), so a block of a query's
//! dyadic cover is located once and its row — whole words in sequence — is the mask over the key
//! columns that every key of the batch tests its `k2` columns in. A key is hashed once for all
//! levels (its columns at each level are reductions of that hash). "Which of these 1,000 source
//! addresses appeared in [s, e]?" costs one mask per block and `k2` column positions per key and
//! level, where PBF-2 answers key by key with a bucket hash and up to `k` probes per block.
//!
//! Rows are direct-mapped, one per bucket (`bucket mod rows`: the row function of the paper's
//! Appendix C, `k1 = 1`), not hashed. All of a bucket's keys share its row, so with hashed rows a
//! block whose rows are also another bucket's lets every key of that bucket pass: on 2,000 keys
//! at 5 ticks each over 4,096 ticks, at 2·10^6 bits, hashed rows (`k1` = 1 to 3) gave 42–56%
//! false positives for keys seen at other times, against PBF-2's 0.6%. Direct-mapped rows share
//! nothing while a level has a word per bucket, which makes each level one small Bloom filter per
//! bucket (the vBF of Appendix C) rather than PBF-2's one filter of pairs.

use super::batch::mask_has_all;
use super::filter::MatrixBloom;
use super::probe::column_seed;
use super::shape::{MatrixLayout, MatrixShape};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::temporal::{dyadic_cover, Block, Pbf2, Tick, TimeRange};
use serde::{Deserialize, Serialize};

/// A static temporal filter over ticks `0..horizon`: one [`MatrixBloom`] of (bucket, key) per
/// PBF-2 level. No false negatives.
///
/// ```
/// use chronobloom_core::matrix::MatrixPbf;
/// use chronobloom_core::temporal::TimeRange;
/// let mut f = MatrixPbf::uniform(1_024, 2_000_000, 7, 7).unwrap();
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

/// The serialized form, checked: PBF-2's level count for the horizon, and one seed, one pair of
/// hash counts and one class for every level.
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
                    (
                        "bucket hashes (rows are direct-mapped)",
                        1,
                        t.row_hashes.into(),
                    ),
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
    /// spread evenly over the levels and `key_hashes` (`k2`) column hashes per key.
    ///
    /// Level ℓ has one row per bucket (`⌈T / 2^ℓ⌉` rows) when its share of the bits allows a
    /// word per row, and as many rows as whole words fit otherwise (bucket `b` then shares row
    /// `b mod rows` with buckets `rows` apart); its columns take the rest of its share.
    pub fn uniform(horizon: Tick, total_bits: u64, key_hashes: u32, seed: u64) -> Result<Self> {
        let levels = Pbf2::levels_for(horizon)?;
        let per_level = total_bits / u64::from(levels);
        let levels = (0..levels)
            .map(|level| {
                let buckets = ((horizon - 1) >> level) + 1;
                let rows = buckets.min((per_level / 64).max(1));
                let cols = (per_level / rows / 64).max(1) * 64;
                let shape =
                    MatrixShape::new(rows, cols, 1, (1, key_hashes), MatrixLayout::MinimumStorage)?;
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

    /// Level ℓ's shape: one row per bucket (or bucket modulo the rows), the key columns.
    pub fn level_shape(&self, level: u32) -> Option<MatrixShape> {
        self.level(level).map(MatrixBloom::shape)
    }

    /// Level ℓ's matrix. Not public: its rows are direct-mapped, which
    /// [`MatrixBloom::contains`] (hashed rows) does not know.
    pub(crate) fn level(&self, level: u32) -> Option<&MatrixBloom> {
        self.levels.get(level as usize)
    }

    /// Memory held by the levels' bit arrays, in bits.
    pub fn memory_bits(&self) -> u64 {
        self.levels.iter().map(MatrixBloom::memory_bits).sum()
    }

    /// Records that `key` appeared at `tick`; [`Error::BeyondHorizon`] past the horizon.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, tick: Tick) -> Result<()> {
        let hash = self.key_hash(key);
        self.insert_hash(hash, tick)
    }

    /// [`Self::insert`] for a key already hashed by [`Self::key_hash`] (of this filter or of
    /// any filter with the same seed).
    pub fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        if tick >= self.horizon {
            return Err(Error::BeyondHorizon {
                tick,
                horizon: self.horizon,
            });
        }
        for (level, m) in self.levels.iter_mut().enumerate() {
            let rows = m.geometry.row_at(tick >> level);
            let cols = m.geometry.cols_of_hash(hash);
            m.insert_probes(&rows, &cols);
        }
        Ok(())
    }

    /// "Did `key` appear in `range`?" One key, block by block: the reference the batch query is
    /// tested against. The part of `range` past the horizon holds nothing.
    pub fn query<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> bool {
        let hash = self.key_hash(key);
        self.cover(range).any(|b| {
            self.level(b.level).is_some_and(|m| {
                let rows = m.geometry.row_at(b.bucket);
                m.has_cols(&rows, m.geometry.col_indices_of_hash(hash))
            })
        })
    }

    /// "Which of `keys` appeared in `range`?", in the order of `keys`: each block of the range's
    /// cover is located once (its row copied out as a mask when the batch pays for it), each key
    /// hashed once. The same answers as [`Self::query`] key by key.
    pub fn query_keys<K: Key>(&self, keys: &[K], range: TimeRange) -> Vec<bool> {
        let hashes: Vec<KeyHash> = keys.iter().map(|k| self.key_hash(k)).collect();
        self.query_hashes(&hashes, range)
    }

    /// [`Self::query_keys`] for keys already hashed by [`Self::key_hash`].
    pub fn query_hashes(&self, hashes: &[KeyHash], range: TimeRange) -> Vec<bool> {
        let keys = hashes;
        let blocks: Vec<(&MatrixBloom, BlockTest)> = self
            .cover(range)
            .filter_map(|b| {
                let m = self.level(b.level)?;
                let rows = m.geometry.row_at(b.bucket);
                Some(if m.row_mask_pays(keys.len()) {
                    let mut mask = Vec::new();
                    m.row_mask(&rows, &mut mask);
                    (m, BlockTest::Mask(mask))
                } else {
                    (m, BlockTest::Rows(rows))
                })
            })
            .collect();
        keys.iter()
            .map(|&hash| {
                blocks.iter().any(|(m, test)| {
                    let cols = m.geometry.col_indices_of_hash(hash);
                    match test {
                        BlockTest::Mask(mask) => mask_has_all(mask, cols),
                        BlockTest::Rows(rows) => m.has_cols(rows, cols),
                    }
                })
            })
            .collect()
    }

    /// "In which of `ranges` did `key` appear?", in the order of `ranges`: the key is hashed
    /// once and its columns computed once per level, then every block of every range's cover is
    /// one row test. The same answers as [`Self::query`] range by range.
    ///
    /// ```
    /// use chronobloom_core::matrix::MatrixPbf;
    /// use chronobloom_core::temporal::TimeRange;
    /// let mut f = MatrixPbf::uniform(1_024, 2_000_000, 7, 7).unwrap();
    /// f.insert(&"10.0.0.1", 100).unwrap();
    /// let hours = [TimeRange::new(0, 99).unwrap(), TimeRange::new(100, 199).unwrap()];
    /// assert!(f.query_ranges(&"10.0.0.1", &hours)[1]);
    /// ```
    pub fn query_ranges<K: Key + ?Sized>(&self, key: &K, ranges: &[TimeRange]) -> Vec<bool> {
        let hash = self.key_hash(key);
        let cols: Vec<_> = self
            .levels
            .iter()
            .map(|m| m.geometry.cols_of_hash(hash))
            .collect();
        ranges
            .iter()
            .map(|&range| {
                self.cover(range).any(|b| {
                    let level = b.level as usize;
                    match (self.levels.get(level), cols.get(level)) {
                        (Some(m), Some(c)) => {
                            m.has_cols(&m.geometry.row_at(b.bucket), c.cols().iter().copied())
                        }
                        _ => false,
                    }
                })
            })
            .collect()
    }

    /// The hash seed (every level has the same one; there is always a level: PBF-2 has at least
    /// one for any horizon, and a read-back filter is checked for its count).
    pub fn seed(&self) -> u64 {
        self.levels.first().map_or(0, MatrixBloom::seed)
    }

    /// The key's hash, shared by every level and by every matrix PBF of the same seed: hash a
    /// key once for [`Self::insert_hash`] and [`Self::query_hashes`].
    pub fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        Self::hash_key(self.seed(), key)
    }

    /// [`Self::key_hash`] for the matrix PBFs of seed `seed`, without one at hand.
    pub fn hash_key<K: Key + ?Sized>(seed: u64, key: &K) -> KeyHash {
        KeyHash::of(key, column_seed(seed))
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
enum BlockTest {
    Mask(Vec<u64>),
    Rows(super::probe::RowProbe),
}
