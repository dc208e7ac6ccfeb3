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
//! Blocks let a worker holding only whole blocks of a level (a shard) hash its part.

use crate::delta::BLOCK_WORDS;
use chronobloom_core::bloom::Filter;
use chronobloom_core::temporal::Pbf2;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
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

/// The hash of one block of words.
pub fn block_hash(words: &[u64]) -> u64 {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    xxh3_64(&bytes)
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

/// Block hashes of every partition of a merged state, refreshed block by block as deltas land,
/// so a digest after each epoch costs the blocks the epoch changed, not the whole state.
#[derive(Debug, Default)]
pub(crate) struct DigestCache {
    /// Partition → level → block hashes (empty for a level without bits).
    blocks: BTreeMap<u64, Vec<Vec<u64>>>,
}

impl DigestCache {
    /// Rehashes the `touched` (level, block) pairs of partition `p` (every block the first time
    /// the partition is seen).
    pub(crate) fn refresh(&mut self, p: u64, pbf: &Pbf2, touched: &BTreeSet<(u32, usize)>) {
        let hashes = |l: u32| {
            pbf.level(l)
                .map_or_else(Vec::new, |f| block_hashes(f.bits().words()).collect())
        };
        let Some(levels) = self.blocks.get_mut(&p) else {
            self.blocks
                .insert(p, (0..pbf.levels()).map(hashes).collect());
            return;
        };
        for &(l, b) in touched {
            let (Some(f), Some(slot)) = (pbf.level(l), levels.get_mut(l as usize)) else {
                continue;
            };
            let words = f.bits().words();
            let start = b * BLOCK_WORDS;
            if let (Some(h), Some(chunk)) = (slot.get_mut(b), words.get(start..)) {
                *h = block_hash(&chunk[..chunk.len().min(BLOCK_WORDS)]);
            }
        }
    }

    /// The state digest of the partitions seen so far, given each partition's PBF-2 for the
    /// level bit lengths.
    pub(crate) fn digest<'a>(&self, pbf: impl Fn(u64) -> Option<&'a Pbf2>) -> u64 {
        combine_partitions(self.blocks.iter().filter_map(|(&p, levels)| {
            let f = pbf(p)?;
            let d = combine_levels(levels.iter().enumerate().map(|(l, blocks)| {
                let bits = f.level(l as u32).map_or(0, |x| x.bit_len());
                level_digest(l as u32, bits, blocks.iter().copied())
            }));
            Some((p, d))
        }))
    }
}
