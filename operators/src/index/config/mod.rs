//! The index configuration: epochs, partitions, filter sizes and where the merged state lives.

use crate::error::{Error, Result};
use crate::share;
use chronobloom_core::bloom::{Layout, BLOCK_BITS};
use chronobloom_core::temporal::{Allocation, Pbf2, Tick, TimeRange};
use serde::{Deserialize, Serialize};

/// Where the merged state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Placement {
    /// Every worker keeps the full merged PBF-2 of every partition; deltas are sent to every
    /// worker and queries are answered where they enter.
    #[default]
    Replicated,
    /// Each worker owns whole levels ([`IndexConfig::level_owner`], level `l` on worker
    /// `l mod peers` by default); deltas are routed to the owners (records shipped as
    /// hashes go to every worker, which inserts its own levels), a query is sent to every
    /// owner and answered by ANDing their per-probe answers, and owners exchange block hashes so
    /// every worker emits the replicated placement's digest.
    Sharded,
}

/// Which allocation a partition uses when the index receives an allocation stream
/// ([`crate::TemporalIndex::temporal_index_with_allocations`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum AllocationLag {
    /// Partition p uses the allocation announced for p; its records wait (up to
    /// [`IndexConfig::max_buffered`]) until the allocation stream's frontier passes p's start
    /// tick. Without an announcement for p, the configuration's allocation is used.
    #[default]
    Wait,
    /// Partition p uses the allocation announced for p − 1 (the configuration's when none was),
    /// which has normally arrived by the time p's records do, so nothing waits.
    Previous,
}

/// Records buffered per worker by default ([`IndexConfigBuilder::max_buffered`]).
pub const DEFAULT_MAX_BUFFERED: u64 = 1 << 22;

/// A validated index configuration (build one with [`IndexConfig::builder`]).
///
/// Time is cut into **epochs** of `epoch_len` ticks (the unit of delta exchange) and
/// **partitions** of `partition_len` ticks (one static PBF-2 each). A record at tick `t` goes to
/// partition `t / partition_len` at local tick `t % partition_len`; ticks at or past
/// `partitions * partition_len` are rejected and counted. A partition's PBF-2 counts time in
/// **points** of `resolution` ticks (default 1): local tick `l` is point `l / resolution`, so the
/// PBF-2 has `log2(partition_len / resolution) + 1` levels and a record costs one insert per
/// level.
///
/// Deserializing goes through [`IndexConfigBuilder::build`], so a configuration read from a file
/// or another process is validated like one built in code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "IndexConfigFields")]
pub struct IndexConfig {
    epoch_len: Tick,
    partition_len: Tick,
    partitions: u64,
    allocation: Allocation,
    seed: u64,
    placement: Placement,
    digest: bool,
    max_buffered: u64,
    allocation_lag: AllocationLag,
    layout: Layout,
    resolution: Tick,
    lead_share: u32,
}

/// The serialized form of an [`IndexConfig`].
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct IndexConfigFields {
    epoch_len: Tick,
    partition_len: Tick,
    partitions: u64,
    allocation: Allocation,
    seed: u64,
    placement: Placement,
    digest: bool,
    max_buffered: u64,
    allocation_lag: AllocationLag,
    #[serde(default)]
    layout: Layout,
    #[serde(default = "one_tick")]
    resolution: Tick,
    #[serde(default = "even")]
    lead_share: u32,
}

/// The lead share of a configuration serialized before it had one.
fn even() -> u32 {
    share::EVEN
}

/// The resolution of a configuration serialized before it had one.
fn one_tick() -> Tick {
    1
}

impl TryFrom<IndexConfigFields> for IndexConfig {
    type Error = Error;
    fn try_from(f: IndexConfigFields) -> Result<Self> {
        IndexConfig::builder()
            .epoch_len(f.epoch_len)
            .partition_len(f.partition_len)
            .partitions(f.partitions)
            .resolution(f.resolution)
            .lead_share(f.lead_share)
            .allocation(f.allocation)
            .seed(f.seed)
            .placement(f.placement)
            .digest(f.digest)
            .max_buffered(f.max_buffered)
            .allocation_lag(f.allocation_lag)
            .layout(f.layout)
            .build()
    }
}

impl IndexConfig {
    /// A builder with no sizes set.
    ///
    /// ```
    /// use chronobloom_operators::{IndexConfig, Placement};
    /// let cfg = IndexConfig::builder()
    ///     .epoch_len(60)
    ///     .partition_len(3_600)
    ///     .partitions(24)
    ///     .bits(1_000_000)
    ///     .hashes(5)
    ///     .placement(Placement::Replicated)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(cfg.horizon(), 86_400);
    /// // an epoch must not straddle two partitions
    /// assert!(IndexConfig::builder().epoch_len(7).partition_len(100).bits(64).build().is_err());
    /// ```
    pub fn builder() -> IndexConfigBuilder {
        IndexConfigBuilder::default()
    }

    /// Ticks per epoch.
    pub fn epoch_len(&self) -> Tick {
        self.epoch_len
    }

    /// Ticks per partition (each partition is a static PBF-2 with this horizon).
    pub fn partition_len(&self) -> Tick {
        self.partition_len
    }

    /// Number of partitions.
    pub fn partitions(&self) -> u64 {
        self.partitions
    }

    /// Ticks per time point of a partition's PBF-2 (1 unless set).
    pub fn resolution(&self) -> Tick {
        self.resolution
    }

    /// Time points per partition, `partition_len / resolution`: the horizon of each
    /// partition's PBF-2.
    pub fn points(&self) -> Tick {
        self.partition_len / self.resolution
    }

    /// The point of a partition's PBF-2 holding local tick `local`.
    #[inline]
    pub fn point(&self, local: Tick) -> Tick {
        local / self.resolution
    }

    /// The points a range of local ticks touches: every tick of `local` lies in one of them,
    /// so a query over them misses nothing the ticks would find.
    pub fn points_of(&self, local: TimeRange) -> TimeRange {
        TimeRange::new(self.point(local.start()), self.point(local.end())).unwrap_or(local)
    }

    /// Worker 0's part of the levels in the sharded placement, in percent of every other
    /// worker's.
    pub fn lead_share(&self) -> u32 {
        self.lead_share
    }

    /// The worker of `peers` owning level `level` in the sharded placement
    /// ([`crate::share::owner`] over the levels with [`Self::lead_share`]; level `l` on worker
    /// `l mod peers` by default).
    pub fn level_owner(&self, level: u32, peers: usize) -> usize {
        let levels = self.allocation.shapes().len() as u32;
        share::owner(level, levels, peers, self.lead_share)
    }

    /// The first tick no partition covers: `partitions * partition_len`.
    pub fn horizon(&self) -> Tick {
        self.partitions * self.partition_len
    }

    /// Bits and hashes of every level of a partition's PBF-2, finest level first.
    pub fn allocation(&self) -> &Allocation {
        &self.allocation
    }

    /// Hash seed of every filter.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Where the merged state lives.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Whether workers compute and emit the merged state's digest after every epoch.
    pub fn digest(&self) -> bool {
        self.digest
    }

    /// The most records a worker's local index holds back (records of later epochs, and records
    /// waiting for their partition's allocation); records beyond it are rejected with
    /// [`crate::stats::RejectReason::BufferFull`].
    pub fn max_buffered(&self) -> u64 {
        self.max_buffered
    }

    /// Which announced allocation a partition uses.
    pub fn allocation_lag(&self) -> AllocationLag {
        self.allocation_lag
    }

    /// The first tick of partition `p` (saturating).
    pub fn partition_start(&self, p: u64) -> Tick {
        p.saturating_mul(self.partition_len)
    }

    /// How each level lays out its bits ([`Layout::Standard`] unless set).
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// True when `allocation` fits a partition: one shape per level, each level's words indexable
    /// by `u32`, at most twice the configured bits in all (an allocation spends the configured
    /// budget), and shapes a PBF-2 of the configuration's layout accepts.
    pub fn fits(&self, allocation: &Allocation) -> bool {
        allocation.shapes().len() == self.allocation.shapes().len()
            && allocation
                .shapes()
                .iter()
                .all(|s| s.bits / 64 <= u64::from(u32::MAX))
            && allocation.total_bits() <= self.allocation.total_bits().saturating_mul(2)
            && Pbf2::with_layout(0, self.points(), allocation, self.seed, self.layout).is_ok()
    }

    /// The epoch holding tick `t`.
    pub fn epoch_of(&self, t: Tick) -> u64 {
        t / self.epoch_len
    }

    /// The first tick of epoch `e` (saturating).
    pub fn epoch_start(&self, e: u64) -> Tick {
        e.saturating_mul(self.epoch_len)
    }

    /// The last tick of epoch `e` (saturating).
    pub fn epoch_last(&self, e: u64) -> Tick {
        self.epoch_start(e).saturating_add(self.epoch_len - 1)
    }

    /// The partition holding epoch `e` (epochs never straddle partitions).
    pub fn partition_of_epoch(&self, e: u64) -> u64 {
        self.epoch_start(e) / self.partition_len
    }

    /// The epoch whose merged state answers a query over `range` issued at `issued`:
    /// `epoch(max(issued, range.end))`, clamped to the last epoch before the horizon (the state
    /// never changes after it, so waiting longer could not change the answer).
    pub fn answering_epoch(&self, issued: Tick, range: TimeRange) -> u64 {
        self.epoch_of(issued.max(range.end()).min(self.horizon() - 1))
    }

    /// An empty PBF-2 for one partition.
    ///
    /// # Panics
    ///
    /// When the allocator cannot provide its bits ([`chronobloom_core::Error::OutOfMemory`]):
    /// `build` checked everything else `Pbf2::with_layout` checks (the horizon, the allocation's
    /// length and shapes).
    pub fn new_partition(&self) -> Pbf2 {
        Pbf2::with_layout(0, self.points(), &self.allocation, self.seed, self.layout)
            .expect("IndexConfig::build validated the partition shape")
    }
}

/// Builds an [`IndexConfig`]; [`IndexConfigBuilder::build`] validates every field.
#[derive(Debug, Clone, Default)]
pub struct IndexConfigBuilder {
    epoch_len: Option<Tick>,
    partition_len: Option<Tick>,
    partitions: Option<u64>,
    resolution: Option<Tick>,
    lead_share: Option<u32>,
    bits: Option<u64>,
    hashes: Option<u32>,
    allocation: Option<Allocation>,
    seed: u64,
    placement: Placement,
    digest: Option<bool>,
    max_buffered: Option<u64>,
    allocation_lag: AllocationLag,
    layout: Layout,
}

/// Hash functions per level when neither [`IndexConfigBuilder::hashes`] nor an allocation is
/// given.
pub const DEFAULT_HASHES: u32 = 4;

impl IndexConfigBuilder {
    /// Ticks per epoch (required; must divide the partition length).
    pub fn epoch_len(mut self, ticks: Tick) -> Self {
        self.epoch_len = Some(ticks);
        self
    }

    /// Ticks per partition (required).
    pub fn partition_len(mut self, ticks: Tick) -> Self {
        self.partition_len = Some(ticks);
        self
    }

    /// Number of partitions (default 1).
    pub fn partitions(mut self, partitions: u64) -> Self {
        self.partitions = Some(partitions);
        self
    }

    /// Ticks per time point of each partition's PBF-2 (default 1; must divide the partition
    /// length). Answers are exact to whole points: a query's range is widened to the points it
    /// touches, which adds positives at its edges and never loses one, and a coarser resolution
    /// means fewer levels, so fewer inserts per record.
    ///
    /// ```
    /// use chronobloom_core::temporal::TimeRange;
    /// use chronobloom_operators::{IndexConfig, MergedState};
    /// let cfg = IndexConfig::builder().epoch_len(1_000).partition_len(3_600_000)
    ///     .resolution(1_000).bits(1 << 20).build().unwrap();
    /// assert_eq!((cfg.points(), cfg.allocation().shapes().len()), (3_600, 13));
    /// let mut index = MergedState::new(&cfg);
    /// index.insert(&7u64, 10_900).unwrap();
    /// // tick 10,900 is point 10: a range touching point 10 answers "present"
    /// assert!(index.query(&7u64, TimeRange::new(10_000, 10_100).unwrap()).present);
    /// assert!(!index.query(&7u64, TimeRange::new(11_000, 20_000).unwrap()).present);
    /// ```
    pub fn resolution(mut self, ticks: Tick) -> Self {
        self.resolution = Some(ticks);
        self
    }

    /// Worker 0's part of the levels in the sharded placement, in percent of every other
    /// worker's (0..=100; default 100, an even split; 0: worker 0 holds no level, and no
    /// worker ships it records): a smaller part when worker 0 also reads the whole input
    /// balances the workers. Every worker and process must use the same.
    pub fn lead_share(mut self, percent: u32) -> Self {
        self.lead_share = Some(percent);
        self
    }

    /// Total bits per partition, spread evenly over its levels (required unless an allocation is
    /// given).
    pub fn bits(mut self, bits: u64) -> Self {
        self.bits = Some(bits);
        self
    }

    /// Hash functions per level with [`Self::bits`] (default [`DEFAULT_HASHES`]).
    pub fn hashes(mut self, hashes: u32) -> Self {
        self.hashes = Some(hashes);
        self
    }

    /// An explicit per-level allocation instead of [`Self::bits`] and [`Self::hashes`].
    pub fn allocation(mut self, allocation: Allocation) -> Self {
        self.allocation = Some(allocation);
        self
    }

    /// Hash seed (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Where the merged state lives (default [`Placement::Replicated`]).
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Whether to compute the merged state's digest after every epoch (default on; it costs a
    /// hash of every block an epoch changes).
    pub fn digest(mut self, on: bool) -> Self {
        self.digest = Some(on);
        self
    }

    /// The most records a worker holds back (default [`DEFAULT_MAX_BUFFERED`], at least 1).
    pub fn max_buffered(mut self, records: u64) -> Self {
        self.max_buffered = Some(records);
        self
    }

    /// Which announced allocation a partition uses (default [`AllocationLag::Wait`]).
    pub fn allocation_lag(mut self, lag: AllocationLag) -> Self {
        self.allocation_lag = lag;
        self
    }

    /// How each level lays out its bits (default [`Layout::Standard`]). [`Layout::Blocked`] puts
    /// a key's bits of one level in one 512-bit block (one cache line per level per record, at a
    /// slightly higher false positive rate); with [`Self::bits`] each level is rounded down to
    /// whole blocks, and an explicit allocation must already be in whole blocks.
    ///
    /// ```
    /// use chronobloom_core::bloom::Layout;
    /// use chronobloom_operators::IndexConfig;
    /// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(1_000_000)
    ///     .layout(Layout::Blocked).build().unwrap();
    /// assert!(cfg.allocation().shapes().iter().all(|s| s.bits % 512 == 0));
    /// ```
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<IndexConfig> {
        let epoch_len = Error::positive_ticks("index", "epoch_len", self.epoch_len)?;
        let partition_len = Error::positive_ticks("index", "partition_len", self.partition_len)?;
        let partitions = self.partitions.unwrap_or(1);
        if partition_len % epoch_len != 0 {
            return Err(Error::config(
                "index",
                "epoch_len",
                format!("{epoch_len} does not divide partition_len {partition_len}"),
            ));
        }
        if partitions == 0 {
            return Err(Error::config("index", "partitions", "must be at least 1"));
        }
        if partitions.checked_mul(partition_len).is_none() {
            return Err(Error::config(
                "index",
                "partitions",
                "partitions * partition_len overflows u64 ticks",
            ));
        }
        let resolution = Error::positive_ticks("index", "resolution", self.resolution.or(Some(1)))?;
        if partition_len % resolution != 0 {
            return Err(Error::config(
                "index",
                "resolution",
                format!("{resolution} does not divide partition_len {partition_len}"),
            ));
        }
        let points = partition_len / resolution;
        let levels = Pbf2::levels_for(points)? as usize;
        let allocation = match (self.allocation, self.bits) {
            (Some(_), Some(_)) => {
                return Err(Error::config(
                    "index",
                    "bits",
                    "give either bits (and hashes) or an allocation, not both",
                ))
            }
            (Some(_), None) if self.hashes.is_some() => {
                return Err(Error::config(
                    "index",
                    "hashes",
                    "the allocation already fixes each level's hashes",
                ))
            }
            (Some(a), None) => {
                if let Some(s) = a
                    .shapes()
                    .iter()
                    .find(|s| s.bits != 0 && self.layout.check_bits(s.bits).is_err())
                {
                    return Err(Error::config(
                        "index",
                        "allocation",
                        format!(
                            "a level of {} bits is not in whole {}-bit blocks",
                            s.bits, BLOCK_BITS
                        ),
                    ));
                }
                a
            }
            (None, Some(bits)) => {
                Allocation::uniform(levels, bits, self.hashes.unwrap_or(DEFAULT_HASHES))?
                    .for_layout(self.layout)
            }
            (None, None) => {
                return Err(Error::config(
                    "index",
                    "bits",
                    "is required (or give an allocation)",
                ))
            }
        };
        if allocation.shapes().len() != levels {
            return Err(Error::config(
                "index",
                "allocation",
                format!(
                    "has {} levels, a PBF-2 over {points} points has {levels}",
                    allocation.shapes().len()
                ),
            ));
        }
        if allocation.total_bits() == 0 {
            return Err(Error::config(
                "index",
                "bits",
                "at least one level needs bits",
            ));
        }
        if let Some(s) = allocation
            .shapes()
            .iter()
            .find(|s| s.bits / 64 > u64::from(u32::MAX))
        {
            return Err(Error::config(
                "index",
                "bits",
                format!(
                    "a level of {} bits has more words than a u32 indexes",
                    s.bits
                ),
            ));
        }
        let lead_share = self.lead_share.unwrap_or(share::EVEN);
        if lead_share > share::EVEN {
            return Err(Error::config(
                "index",
                "lead_share",
                format!("{lead_share}% is outside 0..=100"),
            ));
        }
        let max_buffered = self.max_buffered.unwrap_or(DEFAULT_MAX_BUFFERED);
        if max_buffered == 0 {
            return Err(Error::config(
                "index",
                "max_buffered",
                "must be at least 1 record",
            ));
        }
        Ok(IndexConfig {
            epoch_len,
            partition_len,
            partitions,
            resolution,
            lead_share,
            allocation,
            seed: self.seed,
            placement: self.placement,
            digest: self.digest.unwrap_or(true),
            max_buffered,
            allocation_lag: self.allocation_lag,
            layout: self.layout,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
