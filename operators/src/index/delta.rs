//! Deltas: the words of a level that changed during one epoch, and the shipments carrying them.

use super::pairs;
use super::stats::LocalStats;
use chronobloom_core::changed::ChangedWords;
use chronobloom_core::hash::KeyHash;
use chronobloom_core::temporal::Allocation;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Words per digest block ([`crate::digest`]).
pub const BLOCK_WORDS: usize = 64;

/// The words (of `words`) that worker `me` holds of a level whose owner is `owner`
/// ([`crate::IndexConfig::level_owner`]) in the sharded placement: all of them when it owns the
/// level, none otherwise. Whole levels, so a record shipped as a hash costs a worker the probes
/// of its own levels only, and levels of equal bits spread the work by their count.
///
/// ```
/// use chronobloom_operators::delta::shard_words;
/// assert_eq!(shard_words(0, 300, 0), 0..300);
/// assert_eq!(shard_words(0, 300, 1), 0..0);
/// ```
pub fn shard_words(owner: usize, words: usize, me: usize) -> Range<usize> {
    if owner == me {
        0..words
    } else {
        0..0
    }
}

/// Bytes one sparse entry costs on the wire: a `u32` index and a `u64` word.
const SPARSE_ENTRY_BYTES: u64 = 12;

/// Changed words of one level, in whichever encoding is smallest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeltaWords {
    /// `(word index, word)` pairs, indices ascending: 12 bytes a word.
    Sparse(Vec<(u32, u64)>),
    /// The words whose bit is set in `present` (bit `j` stands for word `first + j`): one bit
    /// per word of the range plus 8 bytes a changed word.
    Bitmap {
        /// Index of the word bit 0 of `present` stands for.
        first: u32,
        /// Which words of the range are carried.
        present: Vec<u64>,
        /// The carried words, ascending.
        words: Vec<u64>,
    },
    /// Every word of `first..first + words.len()`: 8 bytes a word of the range.
    Dense {
        /// Index of the first word.
        first: u32,
        /// The words.
        words: Vec<u64>,
    },
}

impl DeltaWords {
    /// Encodes the words of `level_words` flagged in `changed` inside `range` (clipped to
    /// `level_words`), sparse, as a bitmap or dense, whichever has the fewest bytes
    /// ([`Self::wire_bytes`]). `None` when no changed word falls in `range`.
    pub fn encode(
        changed: &ChangedWords,
        level_words: &[u64],
        range: Range<usize>,
    ) -> Option<Self> {
        let len = level_words.len();
        let range = range.start.min(len)..range.end.min(len);
        let c = changed.count_in(range.clone());
        if c == 0 {
            return None;
        }
        let n = range.len() as u64;
        let sparse_bytes = c * SPARSE_ENTRY_BYTES;
        let bitmap_bytes = n.div_ceil(64) * 8 + c * 8;
        let dense_bytes = n * 8;
        Some(if sparse_bytes <= bitmap_bytes.min(dense_bytes) {
            DeltaWords::Sparse(
                changed
                    .indices_in(range)
                    .map(|i| (i as u32, level_words[i]))
                    .collect(),
            )
        } else if bitmap_bytes < dense_bytes {
            let present = changed.bitmap_in(range.clone());
            let mut words = Vec::with_capacity(c as usize);
            for (k, &f) in present.iter().enumerate() {
                let base = range.start + 64 * k;
                if f == u64::MAX {
                    words.extend_from_slice(&level_words[base..base + 64]);
                    continue;
                }
                let mut rest = f;
                while rest != 0 {
                    words.push(level_words[base + rest.trailing_zeros() as usize]);
                    rest &= rest - 1;
                }
            }
            DeltaWords::Bitmap {
                first: range.start as u32,
                present,
                words,
            }
        } else {
            DeltaWords::Dense {
                first: range.start as u32,
                words: level_words[range].to_vec(),
            }
        })
    }

    /// The payload size in bytes (12 per sparse entry; 8 per bitmap word and carried word; 8
    /// per dense word).
    pub fn wire_bytes(&self) -> u64 {
        match self {
            DeltaWords::Sparse(v) => v.len() as u64 * SPARSE_ENTRY_BYTES,
            DeltaWords::Bitmap { present, words, .. } => (present.len() + words.len()) as u64 * 8,
            DeltaWords::Dense { words, .. } => words.len() as u64 * 8,
        }
    }

    /// Number of words carried.
    pub fn len(&self) -> usize {
        match self {
            DeltaWords::Sparse(v) => v.len(),
            DeltaWords::Bitmap { words, .. } | DeltaWords::Dense { words, .. } => words.len(),
        }
    }

    /// True when no word is carried.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(index, word)` for every word carried, ascending.
    pub fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        match self {
            DeltaWords::Sparse(v) => v.iter().for_each(|&(i, w)| f(i as usize, w)),
            DeltaWords::Bitmap {
                first,
                present,
                words,
            } => {
                let mut it = words.iter();
                for (pi, &bits) in present.iter().enumerate() {
                    let mut rest = bits;
                    while rest != 0 {
                        let j = pi * 64 + rest.trailing_zeros() as usize;
                        rest &= rest - 1;
                        let Some(&w) = it.next() else { return };
                        f(*first as usize + j, w);
                    }
                }
            }
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

/// An epoch's records as key hashes with their ticks: what a receiver inserts to reach exactly
/// the bits the epoch's changed words would give it, sent instead of them when smaller.
///
/// A hash's `hi` half travels only for the standard layout (the blocked layout draws on `lo`
/// alone, hashing spec step 5); ticks travel as offsets from the epoch's first tick, 2 bytes
/// each when epochs are at most 65,536 ticks long, else 4.
///
/// ```
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_operators::delta::EpochRecords;
/// let mut r = EpochRecords::new(1_000, 1_000);
/// r.push(KeyHash::of(&7u64, 0), 1_003, false);
/// assert_eq!(r.iter().map(|(_, t)| t).collect::<Vec<_>>(), vec![1_003]);
/// assert_eq!(r.wire_bytes(), 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochRecords {
    /// The epoch's first tick (not on the wire: the shipment names the epoch).
    #[serde(skip)]
    pub start: u64,
    /// `lo` of each record's key hash.
    pub lo: Vec<u64>,
    /// `hi` of each record's key hash (standard layout), or empty (blocked layout).
    pub hi: Vec<u64>,
    /// Each record's tick minus `start`.
    pub offsets: Offsets,
}

/// Tick offsets from an epoch's first tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Offsets {
    /// Epochs of at most 2^16 ticks.
    Narrow(Vec<u16>),
    /// Epochs of at most 2^32 ticks.
    Wide(Vec<u32>),
}

impl EpochRecords {
    /// Empty records of an epoch of `epoch_len` ticks (at most 2^32) starting at `start`.
    pub fn new(start: u64, epoch_len: u64) -> Self {
        EpochRecords {
            start,
            lo: Vec::new(),
            hi: Vec::new(),
            offsets: if epoch_len <= 1 << 16 {
                Offsets::Narrow(Vec::new())
            } else {
                Offsets::Wide(Vec::new())
            },
        }
    }

    /// Bytes a record costs on the wire: 8 for `lo`, 8 for `hi` (standard layout), and 2 or 4
    /// for the tick offset.
    pub fn record_bytes(with_hi: bool, epoch_len: u64) -> u64 {
        8 + if with_hi { 8 } else { 0 } + if epoch_len <= 1 << 16 { 2 } else { 4 }
    }

    /// Appends a record at `tick` (at least [`Self::start`], inside the epoch).
    pub fn push(&mut self, hash: KeyHash, tick: u64, with_hi: bool) {
        self.lo.push(hash.lo);
        if with_hi {
            self.hi.push(hash.hi);
        }
        let o = tick - self.start;
        match &mut self.offsets {
            Offsets::Narrow(v) => v.push(o as u16),
            Offsets::Wide(v) => v.push(o as u32),
        }
    }

    /// Makes room for `additional` more records (with their `hi` halves when `with_hi`).
    pub fn reserve(&mut self, additional: usize, with_hi: bool) {
        self.lo.reserve(additional);
        if with_hi {
            self.hi.reserve(additional);
        }
        match &mut self.offsets {
            Offsets::Narrow(v) => v.reserve(additional),
            Offsets::Wide(v) => v.reserve(additional),
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.lo.len()
    }

    /// True when there is no record.
    pub fn is_empty(&self) -> bool {
        self.lo.is_empty()
    }

    /// The payload size in bytes.
    pub fn wire_bytes(&self) -> u64 {
        let offsets = match &self.offsets {
            Offsets::Narrow(v) => 2 * v.len(),
            Offsets::Wide(v) => 4 * v.len(),
        };
        (8 * (self.lo.len() + self.hi.len()) + offsets) as u64
    }

    /// Keeps one record per distinct key hash and time point (`tick / resolution`, the index's
    /// [`crate::IndexConfig::resolution`]), sorted by hash then point: inserting the rest would
    /// set no new bit, so receivers reach the same state from fewer bytes, and
    /// [`crate::MergedState`] inserts records that arrive sorted without sorting them again.
    /// The record kept for a point carries the point's first tick inside the epoch.
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// use chronobloom_operators::delta::EpochRecords;
    /// let mut r = EpochRecords::new(1_000, 1_000);
    /// for t in [1_900, 1_003, 1_400] {
    ///     r.push(KeyHash::of(&7u64, 0), t, false);
    /// }
    /// r.push(KeyHash::of(&8u64, 0), 1_001, false);
    /// r.dedup_points(500);
    /// let mut kept: Vec<u64> = r.iter().map(|(_, t)| t).collect();
    /// kept.sort();
    /// // 7 at points 2 and 3, 8 at point 2: each at its point's first tick in the epoch
    /// assert_eq!(kept, vec![1_000, 1_000, 1_500]);
    /// ```
    pub fn dedup_points(&mut self, resolution: u64) {
        let resolution = resolution.max(1);
        let with_hi = !self.hi.is_empty();
        // sized up front: the iterator cannot tell its length, and growing copies the triples
        let mut triples: Vec<(u64, u64, u64)> = Vec::with_capacity(self.lo.len());
        triples.extend(self.iter().map(|(h, t)| (h.lo, h.hi, t / resolution)));
        pairs::sort_dedup(&mut triples, &mut Vec::new());
        let start = self.start;
        let mut kept = EpochRecords {
            start,
            lo: Vec::with_capacity(triples.len()),
            hi: Vec::new(),
            offsets: match self.offsets {
                Offsets::Narrow(_) => Offsets::Narrow(Vec::with_capacity(triples.len())),
                Offsets::Wide(_) => Offsets::Wide(Vec::with_capacity(triples.len())),
            },
        };
        for (lo, hi, point) in triples {
            // the point's first tick, or the epoch's when the point began before it
            let tick = point.saturating_mul(resolution).max(start);
            kept.push(KeyHash { lo, hi }, tick, with_hi);
        }
        *self = kept;
    }

    /// The records as `(hash, tick)` pairs (`hi` = 0 when it did not travel; records without
    /// an offset are left out).
    pub fn iter(&self) -> impl Iterator<Item = (KeyHash, u64)> + '_ {
        self.iter_from(self.start)
    }

    /// [`Self::iter`] for an epoch starting at `start` (a receiver knows it from the shipment).
    pub fn iter_from(&self, start: u64) -> impl Iterator<Item = (KeyHash, u64)> + '_ {
        self.lo.iter().enumerate().filter_map(move |(i, &lo)| {
            let hi = self.hi.get(i).copied().unwrap_or(0);
            let o = match &self.offsets {
                Offsets::Narrow(v) => u64::from(*v.get(i)?),
                Offsets::Wide(v) => u64::from(*v.get(i)?),
            };
            Some((KeyHash { lo, hi }, start + o))
        })
    }
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
    /// The epoch's records, when they are fewer bytes than the changed words (`deltas` is then
    /// empty).
    pub records: Option<EpochRecords>,
    /// The partition this epoch belongs to and its allocation, on the sender's first shipment
    /// of a partition: the receiver creates the partition with it.
    pub announce: Option<(u64, Allocation)>,
    /// The sender's own epoch statistics, on the shipment it sends itself.
    pub local: Option<LocalStats>,
}

impl Shipment {
    /// The payload size in bytes of all deltas or records and the announced allocation (12
    /// bytes a level).
    pub fn wire_bytes(&self) -> u64 {
        let announce = self
            .announce
            .as_ref()
            .map_or(0, |(_, a)| 8 + 12 * a.shapes().len() as u64);
        announce
            + self.records.as_ref().map_or(0, EpochRecords::wire_bytes)
            + self
                .deltas
                .iter()
                .map(|d| d.words.wire_bytes())
                .sum::<u64>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The change record flagging `indices`.
    fn changed(indices: &[usize]) -> ChangedWords {
        let mut flags = vec![0u64; indices.iter().max().map_or(0, |m| m / 64 + 1)];
        for &i in indices {
            flags[i / 64] |= 1 << (i % 64);
        }
        ChangedWords::from_flags(&flags)
    }

    #[test]
    fn sparse_bitmap_or_dense_whichever_is_smallest() {
        let words: Vec<u64> = (0..10).collect();
        let few = DeltaWords::encode(&changed(&[2, 7]), &words, 0..10).unwrap();
        assert_eq!(few, DeltaWords::Sparse(vec![(2, 2), (7, 7)]));
        assert_eq!(few.wire_bytes(), 24);
        let many = DeltaWords::encode(&changed(&[0, 1, 2, 3, 4, 5, 6, 7]), &words, 0..10).unwrap();
        assert!(matches!(many, DeltaWords::Bitmap { first: 0, .. }));
        assert_eq!(many.wire_bytes(), 72);
        let all: Vec<usize> = (0..10).collect();
        let all = DeltaWords::encode(&changed(&all), &words, 0..10).unwrap();
        assert!(matches!(all, DeltaWords::Dense { first: 0, .. }));
        assert_eq!(all.wire_bytes(), 80);
        assert_eq!(DeltaWords::encode(&changed(&[2, 7]), &words, 3..7), None);
        let mut seen = vec![];
        DeltaWords::encode(&changed(&[3, 4, 5]), &words, 3..6)
            .unwrap()
            .for_each(|i, w| seen.push((i, w)));
        assert_eq!(seen, vec![(3, 3), (4, 4), (5, 5)]);
    }

    /// Bitmaps over ranges that start anywhere (shards start on 8-word blocks, not on flag
    /// words) carry exactly the changed words of the range.
    #[test]
    fn bitmaps_carry_exactly_the_changed_words_of_any_range() {
        let big: Vec<u64> = (0..1000).collect();
        let every_third: Vec<usize> = (0..1000).step_by(3).collect();
        let c = changed(&every_third);
        for range in [0..1000, 72..900, 8..65, 130..131, 999..1000] {
            let want: Vec<(usize, u64)> = every_third
                .iter()
                .filter(|&&i| range.contains(&i))
                .map(|&i| (i, i as u64))
                .collect();
            let mut got = vec![];
            if let Some(d) = DeltaWords::encode(&c, &big, range.clone()) {
                assert_eq!(d.len(), want.len());
                d.for_each(|i, w| got.push((i, w)));
            }
            assert_eq!(got, want, "{range:?}");
        }
        let bitmap = DeltaWords::encode(&c, &big, 0..1000).unwrap();
        assert!(matches!(bitmap, DeltaWords::Bitmap { first: 0, .. }));
        assert_eq!(bitmap.wire_bytes(), 16 * 8 + 334 * 8);
    }

    /// A range or flags past the level's words are clipped to it, not a panic.
    #[test]
    fn ranges_past_the_level_are_clipped() {
        let words: Vec<u64> = (0..10).collect();
        let all: Vec<usize> = (0..20).collect();
        let d = DeltaWords::encode(&changed(&all), &words, 0..30).unwrap();
        assert_eq!(
            d,
            DeltaWords::Dense {
                first: 0,
                words: words.clone()
            }
        );
        assert_eq!(DeltaWords::encode(&changed(&[15]), &words, 12..40), None);
        let mut seen = vec![];
        DeltaWords::encode(&changed(&[9, 15]), &words, 8..40)
            .unwrap()
            .for_each(|i, w| seen.push((i, w)));
        assert_eq!(seen, vec![(9, 9)]);
    }
}
