//! PBF-2, β2 (paper 000 §4.2): one Bloom filter per level of the dyadic decomposition of time.
//!
//! Level ℓ has granularity 2^ℓ and stores the pair (key, ⌊t / 2^ℓ⌋) for every record (key, t)
//! (eq. 7, with levels counted from the leaf: the paper's level L − 1 − ℓ). A query [s, e] probes
//! one pair per block of the canonical dyadic cover of [s, e] (eq. 8), at most two per level, so its
//! false positive rate is eq. 9, `1 − Π_i (1 − p(b_{ℓ_i}))`.
//!
//! * **Static**: a horizon T fixes L = ⌈log2 T⌉ + 1 levels; the top level has one bucket.
//! * **Dynamic** (Algorithm 4): the structure starts with one level; a tick past the top level's
//!   single bucket adds a new top level whose filter is a clone of the old top (it holds the same
//!   keys, all in bucket 0), so every level has the same shape.
//!
//! A level given zero bits is never consulted: each of its blocks is split into its two children
//! one level down; a block at level 0 with no bits answers "maybe".
//!
//! **Layout**: every level's filter has the PBF-2's [`Layout`]. The blocked layout
//! ([`Pbf2::with_layout`]) touches one cache line per level and insert instead of `k`, at a
//! somewhat higher per-level false positive rate ([`Layout::fpr`]); levels then need whole 512-bit
//! blocks ([`Allocation::for_layout`] rounds an allocation down to them).

use super::{dyadic_cover, Allocation, Answer, Block, TemporalFilter, Tick, TimeRange};
use crate::bloom::{BloomFilter, Filter, FilterShape, Layout, LAYOUT_MISMATCH};
use crate::error::{Error, Result};
use crate::hash::{BucketMix, KeyHash};
use serde::{Deserialize, Serialize};

/// The most levels a PBF-2 can have: granularities 2^0 ..= 2^63.
pub const MAX_LEVELS: u32 = 64;

/// A PBF-2 over `u64` ticks.
///
/// ```
/// use chronobloom_core::temporal::{Pbf2, TemporalFilter, TimeRange};
/// let mut p = Pbf2::uniform(8, 4_000, 4, 0).unwrap();
/// p.insert(&"y", 3).unwrap();
/// assert_eq!(p.levels(), 4);
/// assert!(p.query(&"y", TimeRange::new(0, 5).unwrap()));
/// assert!(p.insert(&"y", 8).is_err()); // beyond the horizon
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Pbf2Fields")]
pub struct Pbf2 {
    seed: u64,
    /// The first tick covered (0 unless built with [`Pbf2::starting_at`]).
    #[serde(default)]
    start: Tick,
    /// `Some(T)` for a static PBF-2 over ticks `start..start + T`; `None` for a dynamic one.
    horizon: Option<Tick>,
    /// Level ℓ's filter, or `None` when the level was given no bits.
    levels: Vec<Option<BloomFilter>>,
}

/// The serialized form, checked on the way in: 1 to 64 levels, a span that fits in `u64`, a
/// dynamic PBF-2 starting at 0, and every level hashed with the PBF-2's seed and in one layout.
#[derive(Deserialize)]
struct Pbf2Fields {
    seed: u64,
    #[serde(default)]
    start: Tick,
    horizon: Option<Tick>,
    levels: Vec<Option<BloomFilter>>,
}

impl TryFrom<Pbf2Fields> for Pbf2 {
    type Error = Error;
    fn try_from(f: Pbf2Fields) -> Result<Self> {
        if f.levels.is_empty() || f.levels.len() > MAX_LEVELS as usize {
            return Err(Error::invalid(
                "levels",
                format!("{} is outside 1..=64", f.levels.len()),
            ));
        }
        match f.horizon {
            Some(h) if h == 0 || f.start.checked_add(h).is_none() => {
                return Err(Error::invalid(
                    "horizon",
                    "must be positive and end below 2^64",
                ));
            }
            None if f.start != 0 => {
                return Err(Error::invalid("start", "a dynamic PBF-2 starts at tick 0"));
            }
            _ => {}
        }
        if let Some(other) = f.levels.iter().flatten().find(|l| l.seed() != f.seed) {
            return Err(Error::ShapeMismatch {
                what: "level seed vs PBF-2 seed",
                left: other.seed(),
                right: f.seed,
            });
        }
        let mut layouts = f.levels.iter().flatten().map(BloomFilter::layout);
        if let Some(first) = layouts.next() {
            if let Some(other) = layouts.find(|&l| l != first) {
                return Err(Error::ShapeMismatch {
                    what: "level layouts (0 standard, 1 blocked)",
                    left: first.code(),
                    right: other.code(),
                });
            }
        }
        Ok(Pbf2 {
            seed: f.seed,
            start: f.start,
            horizon: f.horizon,
            levels: f.levels,
        })
    }
}

impl Pbf2 {
    /// Inserts every key of `hashes` (hashed with this PBF-2's seed) at `tick`: the same bits as
    /// [`TemporalFilter::insert_hash`] on each, with the key-independent half of each level's
    /// bucket hashing ([`BucketMix`]) done once for all of them.
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// use chronobloom_core::temporal::{Pbf2, TemporalFilter, TimeRange};
    /// let mut p = Pbf2::uniform(64, 40_000, 4, 9).unwrap();
    /// let keys: Vec<KeyHash> = (0..100u64).map(|k| KeyHash::of(&k, 9)).collect();
    /// p.insert_hashes(&keys, 17).unwrap();
    /// assert!((0..100u64).all(|k| p.query(&k, TimeRange::new(17, 17).unwrap())));
    /// ```
    pub fn insert_hashes(&mut self, hashes: &[KeyHash], tick: Tick) -> Result<()> {
        self.admit(tick)?;
        // Level by level: one level's bits (m / levels) are touched by every key in turn, in a
        // tight loop whose misses overlap.
        for (level, filter) in self.levels.iter_mut().enumerate() {
            if let Some(f) = filter {
                f.insert_mixed(hashes, BucketMix::of(tick >> level));
            }
        }
        Ok(())
    }

    /// Inserts `hashes[i]` at `ticks[i]` for each `i` (event ticks, in any order): the same bits as
    /// [`TemporalFilter::insert_hash`] on each, level by level, with the bucket half of the hashing
    /// redone only where a level's bucket changes. Nothing is inserted when the lengths differ or
    /// a tick is outside the horizon.
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// use chronobloom_core::temporal::{Pbf2, TemporalFilter, TimeRange};
    /// let mut p = Pbf2::uniform(64, 40_000, 4, 9).unwrap();
    /// let keys: Vec<KeyHash> = (0..100u64).map(|k| KeyHash::of(&k, 9)).collect();
    /// let ticks: Vec<u64> = (0..100).map(|k| k % 64).collect();
    /// p.insert_hashes_at(&keys, &ticks).unwrap();
    /// assert!((0..100u64).all(|k| p.query(&k, TimeRange::point(k % 64))));
    /// ```
    pub fn insert_hashes_at(&mut self, hashes: &[KeyHash], ticks: &[Tick]) -> Result<()> {
        if hashes.len() != ticks.len() {
            return Err(Error::invalid(
                "ticks",
                format!("{} ticks for {} hashes", ticks.len(), hashes.len()),
            ));
        }
        let (Some(&lo), Some(&hi)) = (ticks.iter().min(), ticks.iter().max()) else {
            return Ok(());
        };
        self.admit(lo)?;
        self.admit(hi)?;
        for (level, filter) in self.levels.iter_mut().enumerate() {
            if let Some(f) = filter {
                f.insert_each_bucket(hashes, ticks, level as u32);
            }
        }
        Ok(())
    }

    /// Checks that `tick` can be inserted, growing a dynamic PBF-2 to hold it.
    fn admit(&mut self, tick: Tick) -> Result<()> {
        match self.horizon {
            Some(_) if tick < self.start => Err(Error::BeforeStart {
                tick,
                start: self.start,
            }),
            Some(_) if tick >= self.capacity() => Err(Error::BeyondHorizon {
                tick,
                horizon: self.capacity(),
            }),
            Some(_) => Ok(()),
            None => self.grow_to(tick),
        }
    }

    /// The number of levels a static PBF-2 over ticks `0..horizon` has: ⌈log2 T⌉ + 1.
    pub fn levels_for(horizon: Tick) -> Result<u32> {
        if horizon == 0 {
            return Err(Error::invalid("horizon", "must be at least 1 tick"));
        }
        let levels = (horizon - 1).checked_ilog2().map_or(1, |l| l + 2);
        if levels > MAX_LEVELS {
            return Err(Error::invalid("horizon", "needs more than 64 levels"));
        }
        Ok(levels)
    }

    /// A static PBF-2 over ticks `0..horizon` with one shape per level (finest level first).
    pub fn new(horizon: Tick, allocation: &Allocation, seed: u64) -> Result<Self> {
        Self::starting_at(0, horizon, allocation, seed)
    }

    /// A static PBF-2 over ticks `start..start + horizon`. Buckets are taken from the global tick
    /// (level ℓ stores (key, ⌊t / 2^ℓ⌋) for the tick t itself), so PBF-2s over neighbouring spans
    /// agree on every bucket and can be merged ([`Self::merge_adjacent`]).
    pub fn starting_at(
        start: Tick,
        horizon: Tick,
        allocation: &Allocation,
        seed: u64,
    ) -> Result<Self> {
        Self::with_layout(start, horizon, allocation, seed, Layout::Standard)
    }

    /// [`Self::starting_at`] with every level's filter in `layout`. A blocked PBF-2 needs each
    /// level's bits to be 0 or a multiple of 512 ([`Allocation::for_layout`] rounds them).
    ///
    /// ```
    /// use chronobloom_core::bloom::Layout;
    /// use chronobloom_core::temporal::{Allocation, Pbf2, TemporalFilter, TimeRange};
    /// let alloc = Allocation::uniform(11, 200_000, 4).unwrap().for_layout(Layout::Blocked);
    /// let mut p = Pbf2::with_layout(0, 1_000, &alloc, 3, Layout::Blocked).unwrap();
    /// p.insert(&"k", 500).unwrap();
    /// assert!(p.query(&"k", TimeRange::new(400, 600).unwrap()));
    /// assert_eq!(p.layout(), Layout::Blocked);
    /// ```
    pub fn with_layout(
        start: Tick,
        horizon: Tick,
        allocation: &Allocation,
        seed: u64,
        layout: Layout,
    ) -> Result<Self> {
        if start.checked_add(horizon).is_none() {
            return Err(Error::invalid("start", "start + horizon overflows u64"));
        }
        let levels = Self::planned_allocation(horizon, allocation, layout)?
            .shapes()
            .iter()
            .map(|&s| level_filter(s, seed, layout))
            .collect::<Result<_>>()?;
        Ok(Pbf2 {
            seed,
            start,
            horizon: Some(horizon),
            levels,
        })
    }

    /// What [`Self::with_layout`] builds for `allocation` over `horizon` in `layout`, checked
    /// without allocating a bit: the allocation the filter would report ([`Self::allocation`]:
    /// a level of no bits has no hashes either), or the error building it gives (short of the
    /// allocator's refusal).
    ///
    /// ```
    /// use chronobloom_core::bloom::Layout;
    /// use chronobloom_core::temporal::{Allocation, Pbf2};
    /// let alloc = Allocation::uniform(11, 200_000, 4).unwrap().for_layout(Layout::Blocked);
    /// let built = Pbf2::with_layout(0, 1_000, &alloc, 3, Layout::Blocked).unwrap();
    /// assert_eq!(Pbf2::planned_allocation(1_000, &alloc, Layout::Blocked).unwrap(), built.allocation());
    /// assert!(Pbf2::planned_allocation(10, &alloc, Layout::Blocked).is_err()); // 5 levels, not 11
    /// ```
    pub fn planned_allocation(
        horizon: Tick,
        allocation: &Allocation,
        layout: Layout,
    ) -> Result<Allocation> {
        allocation.expect_len(Self::levels_for(horizon)? as usize)?;
        let shapes = allocation
            .shapes()
            .iter()
            .map(|&s| {
                if s.bits == 0 {
                    return Ok(FilterShape { bits: 0, hashes: 0 });
                }
                let shape = FilterShape::new(s.bits, s.hashes)?;
                layout.modulus(shape.bits)?;
                Ok(shape)
            })
            .collect::<Result<_>>()?;
        Ok(Allocation::from_live(shapes))
    }

    /// A static PBF-2 with `total_bits` spread evenly over its levels, `hashes` each (the paper's
    /// default configuration).
    pub fn uniform(horizon: Tick, total_bits: u64, hashes: u32, seed: u64) -> Result<Self> {
        let levels = Self::levels_for(horizon)?;
        Self::new(
            horizon,
            &Allocation::uniform(levels as usize, total_bits, hashes)?,
            seed,
        )
    }

    /// A dynamic PBF-2 whose every level has `level_shape` (at least one bit); it grows a level each
    /// time the ticks seen double.
    pub fn dynamic(level_shape: FilterShape, seed: u64) -> Result<Self> {
        Self::dynamic_with_layout(level_shape, seed, Layout::Standard)
    }

    /// [`Self::dynamic`] with the levels in `layout` (whole 512-bit blocks when blocked); the
    /// levels it grows are clones of the top one, so they keep it.
    pub fn dynamic_with_layout(
        level_shape: FilterShape,
        seed: u64,
        layout: Layout,
    ) -> Result<Self> {
        Ok(Pbf2 {
            seed,
            start: 0,
            horizon: None,
            levels: vec![Some(BloomFilter::with_layout(level_shape, seed, layout)?)],
        })
    }

    /// The levels' layout (standard when no level has a filter).
    pub fn layout(&self) -> Layout {
        self.levels
            .iter()
            .flatten()
            .next()
            .map_or(Layout::Standard, BloomFilter::layout)
    }

    /// The hash seed of every level.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of levels.
    pub fn levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Level ℓ's filter (`None` when it has no bits or does not exist).
    #[inline]
    pub fn level(&self, level: u32) -> Option<&BloomFilter> {
        self.levels.get(level as usize)?.as_ref()
    }

    /// Level ℓ's filter, mutably (to apply merged deltas).
    pub fn level_mut(&mut self, level: u32) -> Option<&mut BloomFilter> {
        self.levels.get_mut(level as usize)?.as_mut()
    }

    /// The static horizon T, or `None` for a dynamic PBF-2.
    pub fn horizon(&self) -> Option<Tick> {
        self.horizon
    }

    /// The first tick covered.
    pub fn start(&self) -> Tick {
        self.start
    }

    /// The first tick past the covered span: start + T when static, 2^(L−1) when dynamic.
    pub fn capacity(&self) -> Tick {
        match self.horizon {
            Some(h) => self.start + h,
            None => 1u64 << (self.levels.len() - 1),
        }
    }

    /// Merges this PBF-2 with one covering a later span into one PBF-2 over both spans and any
    /// gap between them (paper 000 §6). Each level is the OR of both levels folded to the gcd of their sizes,
    /// with the smaller hash count (the probe sequence's prefix, see
    /// [`BloomFilter::union_folded`]); a level either side gave no bits has none. No key is lost.
    /// Refuses PBF-2s of different layouts.
    pub fn merge_adjacent(&self, next: &Pbf2) -> Result<Pbf2> {
        let (Some(_), Some(_)) = (self.horizon, next.horizon) else {
            return Err(Error::invalid(
                "merge",
                "only static PBF-2s over spans can be merged",
            ));
        };
        if next.start < self.capacity() {
            return Err(Error::ShapeMismatch {
                what: "start of the next span (it overlaps this one)",
                left: self.capacity(),
                right: next.start,
            });
        }
        for (what, l, r) in [
            ("seed", self.seed, next.seed),
            (LAYOUT_MISMATCH, self.layout().code(), next.layout().code()),
            ("levels", self.levels.len() as u64, next.levels.len() as u64),
        ] {
            if l != r {
                return Err(Error::ShapeMismatch {
                    what,
                    left: l,
                    right: r,
                });
            }
        }
        let levels = self
            .levels
            .iter()
            .zip(&next.levels)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.union_folded(b).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        Ok(Pbf2 {
            seed: self.seed,
            start: self.start,
            horizon: Some(next.capacity() - self.start),
            levels,
        })
    }

    /// Each level's shape, finest first (zero bits for a level without a filter).
    pub fn allocation(&self) -> Allocation {
        let shapes = self
            .levels
            .iter()
            .map(|l| {
                l.as_ref()
                    .map_or(FilterShape { bits: 0, hashes: 0 }, BloomFilter::shape)
            })
            .collect();
        Allocation::from_live(shapes)
    }

    /// Grows a dynamic PBF-2 until `tick` fits (Algorithm 4, lines 2–8).
    fn grow_to(&mut self, tick: Tick) -> Result<()> {
        while tick >= self.capacity() {
            if self.levels.len() as u32 >= MAX_LEVELS {
                return Err(Error::BeyondHorizon {
                    tick,
                    horizon: self.capacity(),
                });
            }
            let top = self.levels.last().cloned().flatten();
            self.levels.push(top);
        }
        Ok(())
    }

    /// ORs another PBF-2 of the same configuration into this one (a dynamic one first grows to the
    /// other's levels). Refuses other starts, horizons, seeds or level shapes (neighbouring spans
    /// merge with [`Self::merge_adjacent`]).
    pub fn union(&mut self, other: &Pbf2) -> Result<()> {
        for (what, left, right) in [
            ("start", self.start, other.start),
            (
                "horizon",
                self.horizon.unwrap_or(0),
                other.horizon.unwrap_or(0),
            ),
        ] {
            if left != right {
                return Err(Error::ShapeMismatch { what, left, right });
            }
        }
        if self.horizon.is_none() {
            self.grow_to(other.capacity().saturating_sub(1))?;
            let mut other = other.clone();
            other.grow_to(self.capacity().saturating_sub(1))?;
            return self.union_levels(&other);
        }
        self.union_levels(other)
    }

    fn union_levels(&mut self, other: &Pbf2) -> Result<()> {
        for (a, b) in self.levels.iter_mut().zip(&other.levels) {
            match (a, b) {
                (Some(a), Some(b)) => a.union(b)?,
                (None, None) => {}
                (a, b) => {
                    return Err(Error::ShapeMismatch {
                        what: "level bits",
                        left: a.as_ref().map_or(0, |f| f.bit_len()),
                        right: b.as_ref().map_or(0, |f| f.bit_len()),
                    })
                }
            }
        }
        Ok(())
    }

    /// The PBF-2 with every level folded to the bits of `allocation` (paper 000 §6): each level's
    /// new size must divide its current size, with the same hash count (and be whole blocks when
    /// blocked). No key is lost: probes are reduced `mod m` (or the block `mod B`), so a folded
    /// level equals the level built at the smaller size.
    pub fn fold_to(&self, allocation: &Allocation) -> Result<Pbf2> {
        allocation.expect_len(self.levels.len())?;
        let levels = self
            .levels
            .iter()
            .zip(allocation.shapes())
            .map(|(level, shape)| match level {
                None if shape.bits == 0 => Ok(None),
                Some(f) if shape.hashes == f.hashes() => f.fold(shape.bits).map(Some),
                other => Err(Error::ShapeMismatch {
                    what: "level hash functions",
                    left: other.as_ref().map_or(0, |f| f.hashes().into()),
                    right: shape.hashes.into(),
                }),
            })
            .collect::<Result<_>>()?;
        Ok(Pbf2 {
            seed: self.seed,
            start: self.start,
            horizon: self.horizon,
            levels,
        })
    }

    /// Probes one cover block, splitting it into its children while its level has no bits.
    fn probe_block(&self, hash: KeyHash, block: Block, probes: &mut u64) -> bool {
        match &self.levels[block.level as usize] {
            Some(f) => {
                *probes += 1;
                f.contains_hash(hash.at(block.bucket))
            }
            None if block.level == 0 => true,
            None => (0..2).any(|child| {
                let b = Block {
                    level: block.level - 1,
                    bucket: block.bucket * 2 + child,
                };
                self.probe_block(hash, b, probes)
            }),
        }
    }
}

fn level_filter(shape: FilterShape, seed: u64, layout: Layout) -> Result<Option<BloomFilter>> {
    if shape.bits == 0 {
        return Ok(None);
    }
    BloomFilter::with_layout(shape, seed, layout).map(Some)
}

impl TemporalFilter for Pbf2 {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        self.admit(tick)?;
        for (level, filter) in self.levels.iter_mut().enumerate() {
            if let Some(f) = filter {
                f.insert_hash(hash.at(tick >> level));
            }
        }
        Ok(())
    }

    fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        let mut probes = 0;
        let clamped = range
            .clamp_below(self.capacity())
            .and_then(|r| r.intersect(&TimeRange::new(self.start, u64::MAX).unwrap_or(r)));
        let Some(range) = clamped else {
            return Answer {
                present: false,
                probes,
            };
        };
        let top = self.levels() - 1;
        let present = dyadic_cover(range, top).any(|b| match self.level(b.level) {
            // The common case, inline: the block's level has a filter.
            Some(f) => {
                probes += 1;
                f.contains_hash(hash.at(b.bucket))
            }
            None => self.probe_block(hash, b, &mut probes),
        });
        Answer { present, probes }
    }

    fn memory_bits(&self) -> u64 {
        self.levels.iter().flatten().map(Filter::memory_bits).sum()
    }
}
