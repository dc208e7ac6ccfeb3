//! Deltas: the words of a level that changed during one epoch, and the shipments carrying them.

use crate::stats::LocalStats;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Words per digest block ([`crate::digest`]).
pub const BLOCK_WORDS: usize = 1024;

/// Bytes one sparse entry costs on the wire: a `u32` index and a `u64` word.
const SPARSE_ENTRY_BYTES: u64 = 12;

/// Changed words of one level, in whichever encoding is smaller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeltaWords {
    /// `(word index, word)` pairs, indices ascending.
    Sparse(Vec<(u32, u64)>),
    /// Every word of `first..first + words.len()`.
    Dense {
        /// Index of the first word.
        first: u32,
        /// The words.
        words: Vec<u64>,
    },
}

impl DeltaWords {
    /// Encodes the words of `level_words` whose indices are in `changed` (ascending) and inside
    /// `range`: sparse when 12 bytes per changed word is less than 8 bytes per word of `range`,
    /// dense otherwise. `None` when no changed word falls in `range`.
    pub fn encode(changed: &[u32], level_words: &[u64], range: Range<usize>) -> Option<Self> {
        let lo = changed.partition_point(|&i| (i as usize) < range.start);
        let hi = changed.partition_point(|&i| (i as usize) < range.end);
        let inside = &changed[lo..hi];
        if inside.is_empty() {
            return None;
        }
        let sparse_bytes = inside.len() as u64 * SPARSE_ENTRY_BYTES;
        let dense_bytes = range.len() as u64 * 8;
        Some(if sparse_bytes <= dense_bytes {
            DeltaWords::Sparse(
                inside
                    .iter()
                    .map(|&i| (i, level_words[i as usize]))
                    .collect(),
            )
        } else {
            DeltaWords::Dense {
                first: range.start as u32,
                words: level_words[range].to_vec(),
            }
        })
    }

    /// The payload size in bytes (12 per sparse entry, 8 per dense word).
    pub fn wire_bytes(&self) -> u64 {
        match self {
            DeltaWords::Sparse(v) => v.len() as u64 * SPARSE_ENTRY_BYTES,
            DeltaWords::Dense { words, .. } => words.len() as u64 * 8,
        }
    }

    /// Calls `f(index, word)` for every word carried.
    pub fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        match self {
            DeltaWords::Sparse(v) => v.iter().for_each(|&(i, w)| f(i as usize, w)),
            DeltaWords::Dense { first, words } => words
                .iter()
                .enumerate()
                .for_each(|(j, &w)| f(*first as usize + j, w)),
        }
    }
}

/// The changed words of one level of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelDelta {
    /// The partition.
    pub partition: u64,
    /// The level (0 = finest).
    pub level: u32,
    /// The changed words.
    pub words: DeltaWords,
}

/// What one worker sends one destination worker when an epoch closes: the deltas the
/// destination must merge.
///
/// A worker that saw records in an epoch sends a shipment to every worker, even an empty one, so
/// every worker learns which epochs had records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shipment {
    /// The closed epoch.
    pub epoch: u64,
    /// The sending worker.
    pub from: u32,
    /// The receiving worker.
    pub dest: u32,
    /// Changed words per level.
    pub deltas: Vec<LevelDelta>,
    /// The sender's own epoch statistics, on the shipment it sends itself.
    pub local: Option<LocalStats>,
}

impl Shipment {
    /// The payload size in bytes of all deltas.
    pub fn wire_bytes(&self) -> u64 {
        self.deltas.iter().map(|d| d.words.wire_bytes()).sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sparse_or_dense_whichever_is_smaller() {
        let words: Vec<u64> = (0..10).collect();
        let few = DeltaWords::encode(&[2, 7], &words, 0..10).unwrap();
        assert_eq!(few, DeltaWords::Sparse(vec![(2, 2), (7, 7)]));
        assert_eq!(few.wire_bytes(), 24);
        let many = DeltaWords::encode(&[0, 1, 2, 3, 4, 5, 6, 7], &words, 0..10).unwrap();
        assert!(matches!(many, DeltaWords::Dense { first: 0, .. }));
        assert_eq!(many.wire_bytes(), 80);
        assert_eq!(DeltaWords::encode(&[2, 7], &words, 3..7), None);
        let mut seen = vec![];
        DeltaWords::encode(&[3, 4, 5], &words, 3..6)
            .unwrap()
            .for_each(|i, w| seen.push((i, w)));
        assert_eq!(seen, vec![(3, 3), (4, 4), (5, 5)]);
    }
}
