//! A deterministic digest of a merged state.
//!
//! # Definition
//!
//! * A **block** is up to [`BLOCK_WORDS`] consecutive words of a level's bit array; its hash is
//!   xxh3-64 of the words' little-endian bytes.
//! * A **level digest** is xxh3-64 of: the level index (`u32` LE), the level's bit length (`u64`
//!   LE; 0 for a level without bits, which has no blocks), then its block hashes (`u64` LE).
//! * A **partition digest** is xxh3-64 of its level digests (`u64` LE), finest level first.
//! * The **state digest** is xxh3-64 of the pairs (partition index, partition digest) (`u64` LE
//!   each) of every partition that holds a filter, ascending. A partition no record reached holds
//!   none.
//!
//! Blocks let a worker holding only whole blocks of a level (a shard) hash its part: in the sharded
//! placement owners send their changed block hashes ([`DigestUpdate`]) and every worker combines
//! them into the same digest as the replicated placement's.

use super::delta::BLOCK_WORDS;
use chronobloom_core::bloom::Filter;
use chronobloom_core::temporal::{Allocation, Pbf2};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

/// The merged state's digest after an epoch, as one worker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EpochDigest {
    /// The epoch after whose merge the digest was taken.
    pub epoch: u64,
    /// The worker that computed it.
    pub worker: u32,
    /// The state digest.
    pub digest: u64,
}

/// The hash of one block of words (at most [`BLOCK_WORDS`]; longer input is cut).
pub fn block_hash(words: &[u64]) -> u64 {
    let mut bytes = [0u8; BLOCK_WORDS * 8];
    let n = words.len().min(BLOCK_WORDS);
    for (chunk, w) in bytes.chunks_exact_mut(8).zip(&words[..n]) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    xxh3_64(&bytes[..n * 8])
}

/// The block hashes of a run of words starting on a block boundary.
pub fn block_hashes(words: &[u64]) -> impl Iterator<Item = u64> + '_ {
    words.chunks(BLOCK_WORDS).map(block_hash)
}

/// A level digest from its block hashes.
pub fn level_digest(level: u32, bit_len: u64, blocks: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = Xxh3Default::new();
    h.update(&level.to_le_bytes());
    h.update(&bit_len.to_le_bytes());
    for b in blocks {
        h.update(&b.to_le_bytes());
    }
    h.digest()
}

/// A partition digest from its level digests, finest first.
pub fn combine_levels(levels: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = Xxh3Default::new();
    for l in levels {
        h.update(&l.to_le_bytes());
    }
    h.digest()
}

/// The state digest from (partition, partition digest) pairs, ascending by partition.
pub fn combine_partitions(partitions: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut h = Xxh3Default::new();
    for (p, d) in partitions {
        h.update(&p.to_le_bytes());
        h.update(&d.to_le_bytes());
    }
    h.digest()
}

/// The digest of one partition's PBF-2.
pub fn partition_digest(pbf: &Pbf2) -> u64 {
    combine_levels((0..pbf.levels()).map(|l| match pbf.level(l) {
        Some(f) => level_digest(l, f.bit_len(), block_hashes(f.bits().words())),
        None => level_digest(l, 0, []),
    }))
}

/// The state digest of partitions given as (index, PBF-2) pairs, ascending by index: what a
/// single-threaded reference compares the dataflow's digests with.
///
/// ```
/// use chronobloom_core::temporal::{Pbf2, TemporalFilter};
/// use chronobloom_operators::digest::state_digest;
/// let mut a = Pbf2::uniform(64, 4_096, 3, 1).unwrap();
/// let b = a.clone();
/// assert_eq!(state_digest([(0, &a)]), state_digest([(0, &b)]));
/// a.insert(&7u64, 9).unwrap();
/// assert_ne!(state_digest([(0, &a)]), state_digest([(0, &b)]));
/// assert_ne!(state_digest([(0, &b)]), state_digest([(1, &b)]));
/// ```
pub fn state_digest<'a>(partitions: impl IntoIterator<Item = (u64, &'a Pbf2)>) -> u64 {
    combine_partitions(
        partitions
            .into_iter()
            .map(|(p, pbf)| (p, partition_digest(pbf))),
    )
}

/// A held block's new hash after an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockUpdate {
    /// The partition.
    pub partition: u64,
    /// The level.
    pub level: u32,
    /// The block's index in the level.
    pub block: u32,
    /// The block's hash.
    pub hash: u64,
}

/// What one worker's merge sends for one epoch in the sharded placement: the partitions it
/// learned of and the hashes of its blocks that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DigestUpdate {
    /// The merged epoch.
    pub epoch: u64,
    /// Partitions created, with their allocations.
    pub partitions: Vec<(u64, Allocation)>,
    /// Changed block hashes.
    pub blocks: Vec<BlockUpdate>,
}

/// Every block hash of a merged state, refreshed block by block, so a digest after each epoch
/// costs the blocks the epoch changed plus one pass over the block hashes.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct DigestTable {
    /// Partition → level → (bit length, block hashes).
    blocks: BTreeMap<u64, Vec<(u64, Vec<u64>)>>,
}

impl DigestTable {
    /// Checks a restored table: every level has one hash per block of its bits.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (p, levels) in &self.blocks {
            for (l, (bits, hashes)) in levels.iter().enumerate() {
                let blocks = bits.div_ceil(64).div_ceil(BLOCK_WORDS as u64);
                if hashes.len() as u64 != blocks {
                    return Err(format!(
                        "partition {p} level {l}: {} block hashes for {bits} bits",
                        hashes.len()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Adds a partition with every block zero (owners then send the blocks they hold).
    pub(crate) fn announce(&mut self, p: u64, allocation: &Allocation) {
        self.blocks.entry(p).or_insert_with(|| {
            allocation
                .shapes()
                .iter()
                .map(|s| {
                    let words = s.bits.div_ceil(64) as usize;
                    let hashes = (0..words.div_ceil(BLOCK_WORDS))
                        .map(|b| block_hash(&ZEROS[..(words - b * BLOCK_WORDS).min(BLOCK_WORDS)]))
                        .collect();
                    (s.bits, hashes)
                })
                .collect()
        });
    }

    /// Stores block hashes; blocks of unknown partitions or outside a level are ignored.
    pub(crate) fn update(&mut self, blocks: &[BlockUpdate]) {
        for u in blocks {
            if let Some(h) = self
                .blocks
                .get_mut(&u.partition)
                .and_then(|l| l.get_mut(u.level as usize))
                .and_then(|(_, b)| b.get_mut(u.block as usize))
            {
                *h = u.hash;
            }
        }
    }

    /// The state digest.
    pub(crate) fn digest(&self) -> u64 {
        combine_partitions(self.blocks.iter().map(|(&p, levels)| {
            let d =
                combine_levels(levels.iter().enumerate().map(|(l, (bits, blocks))| {
                    level_digest(l as u32, *bits, blocks.iter().copied())
                }));
            (p, d)
        }))
    }
}

static ZEROS: [u64; BLOCK_WORDS] = [0; BLOCK_WORDS];
