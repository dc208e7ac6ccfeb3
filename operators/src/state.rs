//! A partitioned PBF-2: the merged replica of the replicated placement, and the single-threaded
//! reference the dataflow is tested against.

use crate::config::IndexConfig;
use crate::delta::LevelDelta;
use crate::digest::{combine_partitions, partition_digest};
use crate::stats::{LevelStats, RejectReason};
use chronobloom_core::bloom::Filter;
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Answer, Pbf2, TemporalFilter, Tick, TimeRange};
use std::collections::BTreeMap;

/// One static PBF-2 per partition of `partition_len` ticks, created when a record first reaches
/// the partition.
///
/// ```
/// use chronobloom_core::temporal::TimeRange;
/// use chronobloom_operators::{IndexConfig, PartitionedPbf2};
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).partitions(2)
///     .bits(20_000).build().unwrap();
/// let mut index = PartitionedPbf2::new(&cfg);
/// index.insert(&5u64, 150).unwrap();
/// assert!(index.insert(&5u64, 200).is_err()); // beyond 2 partitions of 100 ticks
/// assert!(index.query(&5u64, TimeRange::new(90, 160).unwrap()).present);
/// assert!(!index.query(&5u64, TimeRange::new(0, 99).unwrap()).present);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionedPbf2 {
    config: IndexConfig,
    partitions: BTreeMap<u64, Pbf2>,
}

impl PartitionedPbf2 {
    /// An empty index.
    pub fn new(config: &IndexConfig) -> Self {
        PartitionedPbf2 {
            config: config.clone(),
            partitions: BTreeMap::new(),
        }
    }

    /// Records `key` at `tick`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, tick: Tick) -> Result<(), RejectReason> {
        self.insert_hash(KeyHash::of(key, self.config.seed()), tick)
    }

    /// Records a pre-hashed key at `tick`; ticks at or past the horizon are refused.
    pub fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<(), RejectReason> {
        if tick >= self.config.horizon() {
            return Err(RejectReason::BeyondHorizon);
        }
        let len = self.config.partition_len();
        self.partition_or_new(tick / len)
            .insert_hash(hash, tick % len)
            .map_err(|_| RejectReason::BeyondHorizon)
    }

    /// "Did `key` appear in `range`?" with the probes made.
    pub fn query<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> Answer {
        self.query_hash(KeyHash::of(key, self.config.seed()), range)
    }

    /// Queries each partition overlapping `range` in order, stopping at the first "present"; a
    /// partition without a filter answers "absent" with no probe.
    pub fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        let len = self.config.partition_len();
        let mut answer = Answer {
            present: false,
            probes: 0,
        };
        let Some(range) = range.clamp_below(self.config.horizon()) else {
            return answer;
        };
        for (&p, pbf) in self
            .partitions
            .range(range.start() / len..=range.end() / len)
        {
            let start = p * len;
            let local = TimeRange::new(
                range.start().max(start) - start,
                range.end().min(start + len - 1) - start,
            );
            let Ok(local) = local else { continue };
            let a = pbf.query_hash(hash, local);
            answer.probes += a.probes;
            if a.present {
                answer.present = true;
                break;
            }
        }
        answer
    }

    /// The PBF-2 of partition `p`, if a record reached it.
    pub fn partition(&self, p: u64) -> Option<&Pbf2> {
        self.partitions.get(&p)
    }

    /// The partitions holding a filter, ascending.
    pub fn partitions(&self) -> impl Iterator<Item = (u64, &Pbf2)> {
        self.partitions.iter().map(|(&p, f)| (p, f))
    }

    /// The state digest ([`crate::digest`]).
    pub fn digest(&self) -> u64 {
        combine_partitions(self.partitions().map(|(p, f)| (p, partition_digest(f))))
    }

    /// Bits held by all partitions' filters.
    pub fn memory_bits(&self) -> u64 {
        self.partitions.values().map(|f| f.memory_bits()).sum()
    }

    /// Fill and estimated false positive rate of each level of partition `p` (empty when no
    /// record reached it).
    pub fn level_stats(&self, p: u64) -> Vec<LevelStats> {
        let Some(pbf) = self.partitions.get(&p) else {
            return Vec::new();
        };
        (0..pbf.levels())
            .filter_map(|l| pbf.level(l).map(|f| (l, f)))
            .map(|(l, f)| LevelStats::from_counts(l, f.bit_len(), f.ones(), f.hashes()))
            .collect()
    }

    /// ORs a delta in; returns the number of words refused (outside the level, or a level
    /// without bits), which a configuration mismatch between workers would cause.
    pub(crate) fn apply(&mut self, delta: &LevelDelta) -> u64 {
        if delta.partition >= self.config.partitions() {
            return 1;
        }
        let pbf = self.partition_or_new(delta.partition);
        let Some(level) = pbf.level_mut(delta.level) else {
            return 1;
        };
        let bits = level.bits_mut();
        let mut refused = 0;
        delta.words.for_each(|i, w| {
            if bits.or_word(i, w).is_err() {
                refused += 1;
            }
        });
        refused
    }

    /// The partition's PBF-2, created empty when missing.
    fn partition_or_new(&mut self, p: u64) -> &mut Pbf2 {
        self.partitions
            .entry(p)
            .or_insert_with(|| self.config.new_partition())
    }
}
