//! A cache-line-blocked Bloom filter (Putze, Sanders and Singler, 2007): the key's `lo` hash picks
//! one 512-bit block, its `hi` hash the `k` bits inside it, so a probe costs one cache miss.
//!
//! It trades accuracy for speed: blocks fill unevenly, so its false positive rate is above eq. 2's
//! for the same (m, k). Its in-block positions are an arithmetic progression drawn from 17 bits of
//! `hi`; [`super::Layout::Blocked`], the layout temporal filters can choose, draws them from all
//! of `lo` instead (hashing specification, step 5), so the two do not share bits.

use super::{Filter, FilterShape, BLOCK_BITS};
use crate::bits::Bits;
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};
use serde::{Deserialize, Serialize};

/// A blocked Bloom filter of `blocks * 512` bits.
///
/// ```
/// use chronobloom_core::bloom::{BlockedBloomFilter, Filter};
/// let mut f = BlockedBloomFilter::with_fpr(10_000, 0.01, 3).unwrap();
/// f.insert(&"x");
/// assert!(f.contains(&"x"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BlockedFields")]
pub struct BlockedBloomFilter {
    hashes: u32,
    seed: u64,
    blocks: FastMod,
    bits: Bits,
}

/// The serialized form, checked on the way in (whole blocks, a valid hash count).
#[derive(Deserialize)]
struct BlockedFields {
    hashes: u32,
    seed: u64,
    blocks: FastMod,
    bits: Bits,
}

impl TryFrom<BlockedFields> for BlockedBloomFilter {
    type Error = Error;
    fn try_from(f: BlockedFields) -> Result<Self> {
        FilterShape::new(f.bits.len(), f.hashes)?;
        if f.blocks.divisor().checked_mul(BLOCK_BITS) != Some(f.bits.len()) {
            return Err(Error::ShapeMismatch {
                what: "blocks vs bit length",
                left: f.blocks.divisor(),
                right: f.bits.len(),
            });
        }
        Ok(BlockedBloomFilter {
            hashes: f.hashes,
            seed: f.seed,
            blocks: f.blocks,
            bits: f.bits,
        })
    }
}

impl BlockedBloomFilter {
    /// A filter of at least `bits` bits (rounded up to whole blocks) and `hashes` hash functions.
    pub fn new(bits: u64, hashes: u32, seed: u64) -> Result<Self> {
        let shape = FilterShape::new(bits, hashes)?;
        let blocks = FastMod::new(shape.bits.div_ceil(BLOCK_BITS))
            .ok_or_else(|| Error::invalid("bits", "a Bloom filter needs at least one bit"))?;
        let len = blocks
            .divisor()
            .checked_mul(BLOCK_BITS)
            .ok_or(Error::OutOfMemory { bits })?;
        Ok(BlockedBloomFilter {
            hashes,
            seed,
            blocks,
            bits: Bits::try_new(len)?,
        })
    }

    /// A filter sized like [`super::BloomFilter::with_fpr`] (same bits and hashes).
    pub fn with_fpr(items: u64, fpr: f64, seed: u64) -> Result<Self> {
        let s = FilterShape::for_fpr(items, fpr)?;
        Self::new(s.bits, s.hashes, seed)
    }

    /// ORs `other` into `self`; refuses another shape or seed.
    pub fn union(&mut self, other: &BlockedBloomFilter) -> Result<()> {
        if self.hashes != other.hashes {
            return Err(Error::ShapeMismatch {
                what: "hash functions",
                left: self.hashes.into(),
                right: other.hashes.into(),
            });
        }
        if self.seed != other.seed {
            return Err(Error::ShapeMismatch {
                what: "seed",
                left: self.seed,
                right: other.seed,
            });
        }
        self.bits.union_with(&other.bits)
    }

    #[inline]
    fn block_and_inner(&self, hash: KeyHash) -> (u64, KeyHash) {
        let base = self.blocks.reduce(hash.lo) * BLOCK_BITS;
        let inner = KeyHash {
            lo: hash.hi,
            hi: hash.hi.rotate_left(32) | 1,
        };
        (base, inner)
    }
}

impl Filter for BlockedBloomFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    #[inline]
    fn insert_hash(&mut self, hash: KeyHash) {
        let (base, inner) = self.block_and_inner(hash);
        let mut g = inner.lo;
        for _ in 0..self.hashes {
            self.bits.set(base + (g & (BLOCK_BITS - 1)));
            g = g.wrapping_add(inner.hi);
        }
    }

    #[inline]
    fn contains_hash(&self, hash: KeyHash) -> bool {
        let (base, inner) = self.block_and_inner(hash);
        let mut g = inner.lo;
        for _ in 0..self.hashes {
            if !self.bits.test(base + (g & (BLOCK_BITS - 1))) {
                return false;
            }
            g = g.wrapping_add(inner.hi);
        }
        true
    }

    fn bit_len(&self) -> u64 {
        self.bits.len()
    }

    fn hashes(&self) -> u32 {
        self.hashes
    }

    fn ones(&self) -> u64 {
        self.bits.count_ones()
    }

    fn memory_bits(&self) -> u64 {
        self.bits.memory_bits()
    }
}
