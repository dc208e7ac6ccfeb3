//! Exact per-filter statistics of a data set and a query workload, for offline allocation (the
//! paper's β1-opt and β2-opt, Table 2: "an offline pass over A and a query workload W").
//!
//! * d_i is counted exactly: the (key hash, tick) pairs are kept, sorted and deduplicated, so the
//!   memory is 32 bytes per distinct pair (compacted as the pairs arrive).
//! * f_i is the number of membership probes the query algorithm sends to filter i, averaged over
//!   the queries (§5.1). It is counted for a key that is absent everywhere, so that every filter the
//!   algorithm may consult is counted: every cover filter, every partly covered leaf of a PBF-1, and
//!   every SBF tick probe behind such a leaf (up to g − 1 per partial leaf). Queries are clipped to
//!   the horizon as the PBFs clip them; a query wholly past it counts but probes nothing.

use super::FilterStats;
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use crate::temporal::{dyadic_cover, Pbf1, Pbf2, Tick, TimeRange};

/// d_ℓ and f_ℓ of a static PBF-2 over ticks `0..horizon` (one filter per level, finest first).
///
/// ```
/// use chronobloom_core::alloc::Pbf2Workload;
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_core::temporal::TimeRange;
/// let mut w = Pbf2Workload::new(8).unwrap(); // 4 levels
/// let k = KeyHash::of(&"k", 0);
/// w.insert(k, 0).unwrap();
/// w.insert(k, 1).unwrap();
/// w.query(TimeRange::new(0, 5).unwrap()); // cover: [0, 3] (level 2) and [4, 5] (level 1)
/// assert_eq!(w.distinct(), vec![2, 1, 1, 1]);
/// assert_eq!(w.frequency(), vec![0.0, 1.0, 1.0, 0.0]);
/// ```
#[derive(Debug, Clone)]
pub struct Pbf2Workload {
    horizon: Tick,
    levels: u32,
    pairs: Pairs,
    probes: Vec<u64>,
    queries: u64,
}

impl Pbf2Workload {
    /// An empty workload for a PBF-2 over ticks `0..horizon`.
    pub fn new(horizon: Tick) -> Result<Self> {
        let levels = Pbf2::levels_for(horizon)?;
        Ok(Pbf2Workload {
            horizon,
            levels,
            pairs: Pairs::default(),
            probes: vec![0; levels as usize],
            queries: 0,
        })
    }

    /// Number of filters (levels).
    pub fn filters(&self) -> usize {
        self.levels as usize
    }

    /// Records that the key with hash `hash` appeared at `tick`.
    pub fn insert(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        self.pairs.insert(hash, tick, self.horizon)
    }

    /// Records one query: one probe per block of the canonical dyadic cover of `range`.
    pub fn query(&mut self, range: TimeRange) {
        self.queries += 1;
        if let Some(range) = range.clamp_below(self.horizon) {
            for block in dyadic_cover(range, self.levels - 1) {
                self.probes[block.level as usize] += 1;
            }
        }
    }

    /// Queries recorded so far.
    pub fn queries(&self) -> u64 {
        self.queries
    }

    /// d_ℓ: distinct (key, ⌊t / 2^ℓ⌋) pairs per level, finest first.
    pub fn distinct(&mut self) -> Vec<u64> {
        let mut d = vec![0; self.levels as usize];
        let levels = self.levels;
        self.pairs.for_each_pair(|tick, prev| {
            // Consecutive sorted ticks of one key share level ℓ's bucket iff they agree above bit ℓ,
            // so the pair is new exactly at the levels up to their highest differing bit.
            let top = prev.map_or(levels, |p| changed_bits(tick, p).min(levels));
            d[..top as usize].iter_mut().for_each(|x| *x += 1);
        });
        d
    }

    /// f_ℓ: probes per query per level (all zero before any query).
    pub fn frequency(&self) -> Vec<f64> {
        per_query(&self.probes, self.queries)
    }

    /// d_ℓ and f_ℓ together, ready for [`super::solve`].
    pub fn stats(&mut self) -> Vec<FilterStats> {
        zip_stats(&self.distinct(), &self.frequency())
    }
}

/// d_i and f_i of a static PBF-1 over ticks `0..horizon` with leaves of `g` ticks: the tree nodes
/// in [`Pbf1::layout`] order, then the SBF.
///
/// ```
/// use chronobloom_core::alloc::Pbf1Workload;
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_core::temporal::TimeRange;
/// let mut w = Pbf1Workload::new(8, 2).unwrap(); // root [0,7]; [0,3], [4,7]; four leaves; SBF
/// w.insert(KeyHash::of(&"z", 0), 6).unwrap();
/// w.query(TimeRange::new(3, 7).unwrap()); // cover [4, 7]; partial leaf [2, 3] and 1 SBF tick
/// assert_eq!(w.distinct(), vec![1, 0, 1, 0, 0, 0, 1, 1]);
/// assert_eq!(w.frequency(), vec![0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
/// ```
#[derive(Debug, Clone)]
pub struct Pbf1Workload {
    horizon: Tick,
    g: u64,
    /// Nodes per height, leaves first.
    counts: Vec<u64>,
    /// Index in layout order of the first node of each height.
    offsets: Vec<usize>,
    pairs: Pairs,
    /// Probes per filter in layout order, the SBF last.
    probes: Vec<u64>,
    queries: u64,
}

impl Pbf1Workload {
    /// An empty workload for a PBF-1 over ticks `0..horizon` with leaves of `g` ticks.
    pub fn new(horizon: Tick, g: u64) -> Result<Self> {
        let layout = Pbf1::layout(horizon, g)?;
        let heights = layout.first().map_or(0, |n| n.height as usize + 1);
        let mut counts = vec![0; heights];
        let mut offsets = vec![0; heights];
        for (pos, node) in layout.iter().enumerate() {
            let h = node.height as usize;
            if counts[h] == 0 {
                offsets[h] = pos;
            }
            counts[h] += 1;
        }
        Ok(Pbf1Workload {
            horizon,
            g,
            counts,
            offsets,
            pairs: Pairs::default(),
            probes: vec![0; layout.len() + 1],
            queries: 0,
        })
    }

    /// Number of filters: the tree nodes and the SBF.
    pub fn filters(&self) -> usize {
        self.probes.len()
    }

    /// Records that the key with hash `hash` appeared at `tick`.
    pub fn insert(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        self.pairs.insert(hash, tick, self.horizon)
    }

    /// Records one query, walking the tree as [`Pbf1`]'s query does (Algorithm 1).
    pub fn query(&mut self, range: TimeRange) {
        self.queries += 1;
        if let Some(range) = range.clamp_below(self.horizon) {
            let root = self.counts.len() as u32 - 1;
            self.walk(range, root, 0);
        }
    }

    /// Counts the probes of node (height, index) and, where it is only partly covered, below it.
    fn walk(&mut self, range: TimeRange, height: u32, index: u64) {
        if index >= self.counts[height as usize] {
            return;
        }
        let span = u128::from(self.g) << height;
        let start = u128::from(index) * span;
        let end = (start + span - 1).min(u128::from(u64::MAX)) as u64;
        let start = start as u64; // nodes that exist start before the horizon
        let lo = start.max(range.start());
        let hi = end.min(range.end());
        if lo > hi {
            return;
        }
        // As in `Pbf1`: a node cut by the horizon counts as covered when the query reaches its end.
        let covered = lo == start && (hi == end || hi + 1 == self.horizon);
        let slot = self.offsets[height as usize] + index as usize;
        if covered || height == 0 {
            self.probes[slot] += 1;
            if !covered {
                let sbf = self.probes.len() - 1;
                self.probes[sbf] += hi - lo + 1;
            }
            return;
        }
        self.walk(range, height - 1, 2 * index);
        self.walk(range, height - 1, 2 * index + 1);
    }

    /// Queries recorded so far.
    pub fn queries(&self) -> u64 {
        self.queries
    }

    /// d_i: distinct keys per node in layout order, then the SBF's distinct (key, tick) pairs.
    pub fn distinct(&mut self) -> Vec<u64> {
        let mut d = vec![0; self.probes.len()];
        let heights = self.counts.len() as u32;
        let (g, offsets) = (self.g, &self.offsets);
        let sbf = d.len() - 1;
        self.pairs.for_each_pair(|tick, prev| {
            d[sbf] += 1;
            let leaf = tick / g;
            // The node at height h holds leaves with equal `leaf >> h`, as levels hold ticks above.
            let top = prev.map_or(heights, |p| changed_bits(leaf, p / g).min(heights));
            for h in 0..top {
                d[offsets[h as usize] + (leaf >> h) as usize] += 1;
            }
        });
        d
    }

    /// f_i: probes per query per filter, in the order of [`Self::distinct`].
    pub fn frequency(&self) -> Vec<f64> {
        per_query(&self.probes, self.queries)
    }

    /// d_i and f_i together, ready for [`super::solve`].
    pub fn stats(&mut self) -> Vec<FilterStats> {
        zip_stats(&self.distinct(), &self.frequency())
    }
}

/// The distinct (key, tick) pairs seen, compacted by sorting and deduplicating as they arrive.
#[derive(Debug, Clone, Default)]
struct Pairs {
    pairs: Vec<(u128, u64)>,
    /// Length after the last compaction.
    compacted: usize,
}

impl Pairs {
    const MIN_COMPACT: usize = 1 << 16;

    fn insert(&mut self, hash: KeyHash, tick: Tick, horizon: Tick) -> Result<()> {
        if tick >= horizon {
            return Err(Error::BeyondHorizon { tick, horizon });
        }
        self.pairs
            .push(((u128::from(hash.hi) << 64) | u128::from(hash.lo), tick));
        if self.pairs.len() >= 2 * self.compacted.max(Self::MIN_COMPACT) {
            self.compact();
        }
        Ok(())
    }

    fn compact(&mut self) {
        self.pairs.sort_unstable();
        self.pairs.dedup();
        self.compacted = self.pairs.len();
    }

    /// Calls `visit(tick, previous)` for every distinct pair in (key, tick) order, with the key's
    /// previous tick (`None` for its first).
    fn for_each_pair(&mut self, mut visit: impl FnMut(Tick, Option<Tick>)) {
        self.compact();
        let mut prev: Option<(u128, u64)> = None;
        for &(key, tick) in &self.pairs {
            visit(tick, prev.filter(|&(k, _)| k == key).map(|(_, t)| t));
            prev = Some((key, tick));
        }
    }
}

/// The number of low bits up to and including the highest bit in which `a` and `b` differ.
fn changed_bits(a: u64, b: u64) -> u32 {
    (a ^ b).checked_ilog2().map_or(0, |bit| bit + 1)
}

fn per_query(probes: &[u64], queries: u64) -> Vec<f64> {
    let q = queries.max(1) as f64;
    probes.iter().map(|&p| p as f64 / q).collect()
}

fn zip_stats(distinct: &[u64], frequency: &[f64]) -> Vec<FilterStats> {
    distinct
        .iter()
        .zip(frequency)
        .map(|(&d, &f)| FilterStats::new(d as f64, f))
        .collect()
}
