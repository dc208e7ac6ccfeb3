//! [`PartitionSketch`]: what one partition taught, as FM sketches of its (key, bucket) pairs per
//! level and probe counts per level; merged across workers by OR and addition.

use crate::error::{Error, Result};
use chronobloom_core::alloc::FilterStats;
use chronobloom_core::hash::KeyHash;
use chronobloom_core::sketch::FmSketch;
use chronobloom_core::temporal::{dyadic_cover, Tick, TimeRange};
use serde::{Deserialize, Serialize};

/// What one partition taught one worker (or, merged, all of them): an FM sketch of the distinct
/// (key, bucket) pairs of every level and exact probe counts per level.
///
/// ```
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_core::temporal::TimeRange;
/// use chronobloom_operators::PartitionSketch;
/// let mut a = PartitionSketch::new(3, 64, 7).unwrap(); // a PBF-2 over 4 ticks has 3 levels
/// let mut b = a.clone();
/// a.insert(KeyHash::of(&1u64, 7), 0);
/// b.insert(KeyHash::of(&2u64, 7), 3);
/// b.observe_query(TimeRange::new(0, 2).unwrap()); // cover: [0, 1] at level 1, [2, 2] at level 0
/// a.merge(&b).unwrap();
/// let stats = a.filter_stats();
/// assert_eq!(a.queries(), 1);
/// assert_eq!(stats.iter().map(|s| s.frequency).collect::<Vec<_>>(), vec![1.0, 1.0, 0.0]);
/// assert!(stats[0].distinct > 1.5 && stats[0].distinct < 2.5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SketchRepr")]
pub struct PartitionSketch {
    distinct: Vec<FmSketch>,
    probes: Vec<u64>,
    queries: u64,
}

/// The serialized form, checked on the way in: a sketch and a probe count per level, the
/// sketches alike (as [`PartitionSketch::new`] makes them), and at most two probes per level
/// and query (a dyadic cover has at most two blocks per level).
#[derive(Deserialize)]
struct SketchRepr {
    distinct: Vec<FmSketch>,
    probes: Vec<u64>,
    queries: u64,
}

impl TryFrom<SketchRepr> for PartitionSketch {
    type Error = Error;
    fn try_from(r: SketchRepr) -> Result<Self> {
        let alike = r
            .distinct
            .windows(2)
            .all(|w| w[0].bitmaps() == w[1].bitmaps() && w[0].seed() == w[1].seed());
        let per_level = r.queries.saturating_mul(2);
        if r.distinct.len() != r.probes.len() || !alike || r.probes.iter().any(|&p| p > per_level) {
            return Err(chronobloom_core::Error::invalid(
                "partition sketch",
                "levels, sketch shapes or probe counts do not match",
            )
            .into());
        }
        Ok(PartitionSketch {
            distinct: r.distinct,
            probes: r.probes,
            queries: r.queries,
        })
    }
}

impl PartitionSketch {
    /// An empty sketch for a PBF-2 of `levels` levels, with `bitmaps` FM bitmaps per level
    /// hashing with `seed`.
    pub fn new(levels: u32, bitmaps: usize, seed: u64) -> Result<Self> {
        let fm = FmSketch::new(bitmaps, seed)?;
        Ok(PartitionSketch {
            distinct: vec![fm; levels as usize],
            probes: vec![0; levels as usize],
            queries: 0,
        })
    }

    /// Counts a record with key hash `hash` at the partition's local tick `tick`.
    pub fn insert(&mut self, hash: KeyHash, tick: Tick) {
        for (level, fm) in self.distinct.iter_mut().enumerate() {
            fm.insert_hash(hash.at(tick >> level));
        }
    }

    /// Counts a query over `range` (local ticks; the part past the partition's `2^(levels − 1)`
    /// ticks is cut off, which also bounds the cover at two blocks per level).
    pub fn observe_query(&mut self, range: TimeRange) {
        let Some(top) = (self.probes.len() as u32).checked_sub(1) else {
            return;
        };
        let span = 1u64.checked_shl(top).unwrap_or(u64::MAX);
        let Some(range) = range.clamp_below(span) else {
            return;
        };
        self.queries = self.queries.saturating_add(1);
        for block in dyadic_cover(range, top) {
            if let Some(p) = self.probes.get_mut(block.level as usize) {
                *p = p.saturating_add(1);
            }
        }
    }

    /// Adds `other` in: FM sketches by OR, probe and query counts by addition.
    pub fn merge(&mut self, other: &PartitionSketch) -> Result<()> {
        if self.distinct.len() != other.distinct.len() || self.probes.len() != other.probes.len() {
            return Err(chronobloom_core::Error::ShapeMismatch {
                what: "levels",
                left: self.distinct.len() as u64,
                right: other.distinct.len() as u64,
            }
            .into());
        }
        for (a, b) in self.distinct.iter_mut().zip(&other.distinct) {
            a.merge(b)?;
        }
        for (a, b) in self.probes.iter_mut().zip(&other.probes) {
            *a = a.saturating_add(*b);
        }
        self.queries = self.queries.saturating_add(other.queries);
        Ok(())
    }

    /// Queries counted.
    pub fn queries(&self) -> u64 {
        self.queries
    }

    /// The allocation's input per level: d_ℓ, the FM estimate, and f_ℓ, probes per query (1 for
    /// every level when no query was counted).
    pub fn filter_stats(&self) -> Vec<FilterStats> {
        let q = self.queries.max(1) as f64;
        self.distinct
            .iter()
            .zip(&self.probes)
            .map(|(fm, &p)| {
                let f = if self.queries == 0 { 1.0 } else { p as f64 / q };
                FilterStats::new(fm.estimate(), f)
            })
            .collect()
    }

    /// Bytes held by the FM bitmaps and the counters.
    pub fn memory_bytes(&self) -> u64 {
        let fm: usize = self.distinct.iter().map(FmSketch::memory_bytes).sum();
        (fm + 8 * self.probes.len() + 8) as u64
    }
}
