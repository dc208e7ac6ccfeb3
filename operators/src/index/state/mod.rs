//! The merged state: every partition's PBF-2 as one worker holds it — all of it when replicated,
//! the whole levels the worker owns when sharded ([`IndexConfig::level_owner`]).

use super::config::IndexConfig;
use super::delta::{DeltaWords, EpochRecords, LevelDelta, BLOCK_WORDS};
use super::digest::{block_hash, BlockUpdate};
use super::stats::{LevelStats, RejectReason};
use chronobloom_core::hash::{BucketMix, Key, KeyHash};
use chronobloom_core::temporal::{dyadic_cover, Allocation, Answer, Pbf2, Tick, TimeRange};
use level::LevelShard;
use recent::RecentPoints;
use ring::BlockRing;
pub(crate) use snapshot::{MergedSnapshot, MergedSnapshotRef};
use std::collections::BTreeMap;

/// Pairs from which a level's blocks are set through its own look-ahead rather than the
/// levels' shared [`BlockRing`] (cheaper a set, and enough sets to fill it).
const OWN_RING: usize = 4 * level::AHEAD;

/// How many keys ahead of its lookup a key's remembered point is asked for.
const RECENT_AHEAD: usize = 16;

/// One step of a query's probe sequence, as a shard evaluates it: bit 0 set when the step probes
/// a filter (it counts as a probe), bit 1 set when every probe bit the shard holds is set (always
/// for a step without a filter, which answers "maybe").
pub(crate) type Step = u8;
pub(crate) const STEP_PROBED: Step = 1;
pub(crate) const STEP_SET: Step = 2;

/// Combines shards' step sequences (AND of their "set" bits) and walks them in order: the
/// answer is "present" at the first step set, with the probes made up to it.
pub(crate) fn walk_steps<'a>(shards: impl IntoIterator<Item = &'a [Step]>) -> Answer {
    let mut combined: Option<Vec<Step>> = None;
    for s in shards {
        match &mut combined {
            None => combined = Some(s.to_vec()),
            Some(c) => {
                c.truncate(s.len());
                for (a, b) in c.iter_mut().zip(s) {
                    *a = (*a | (b & STEP_PROBED)) & (b | STEP_PROBED);
                }
            }
        }
    }
    let mut answer = Answer {
        present: false,
        probes: 0,
    };
    for s in combined.unwrap_or_default() {
        answer.probes += u64::from(s & STEP_PROBED);
        if s & STEP_SET != 0 {
            answer.present = true;
            break;
        }
    }
    answer
}

/// Sets `n` hashes, at their buckets of level `l`, in that level: through the level's own
/// look-ahead when it is wholly held and blocked and they are many, through the levels' shared
/// one ([`BlockRing`]) when they are few, probe by probe otherwise.
fn set_level(
    levels: &mut [LevelShard],
    l: usize,
    n: usize,
    hashes: impl Iterator<Item = KeyHash>,
    ring: &mut BlockRing,
) {
    match levels[l].blocks() {
        Some(blocks) if n >= OWN_RING => levels[l].insert_blocks(hashes, blocks),
        Some(blocks) => {
            for h in hashes {
                ring.push(levels, l, h.lo, blocks.reduce(h.lo));
            }
        }
        None => levels[l].insert_each(hashes),
    }
}

/// Inserts an epoch's pairs `(lo, hi, point, skip)` that all lie at one `point` (an epoch
/// within one unit of the resolution, as with the defaults). Each pair is then a distinct key
/// at the same bucket of a level, so level `l` inserts exactly the pairs whose bits are not set
/// from a level at or below it (`l < skip`), and no two merge: ordered by how many levels they
/// need, most first, a level's pairs are a prefix, and no level rewrites them.
fn insert_at_one_point(
    levels: &mut [LevelShard],
    pairs: &[(u64, u64, Tick, u32)],
    point: Tick,
    ring: &mut BlockRing,
) {
    let top = levels.len();
    let needs = |skip: u32| (skip as usize).min(top);
    // counting sort by levels needed, most first
    let mut counts = vec![0usize; top + 1];
    for r in pairs {
        counts[needs(r.3)] += 1;
    }
    let mut next = vec![0usize; top + 1];
    let mut acc = 0;
    for s in (0..=top).rev() {
        next[s] = acc;
        acc += counts[s];
    }
    let mut keys = vec![KeyHash { lo: 0, hi: 0 }; pairs.len()];
    for r in pairs {
        let s = needs(r.3);
        keys[next[s]] = KeyHash { lo: r.0, hi: r.1 };
        next[s] += 1;
    }
    // the pairs needing level `l`: those needing more than `l` levels
    let mut n = pairs.len();
    for (l, leaving) in counts.iter().take(top).enumerate() {
        n -= leaving;
        if n == 0 {
            break;
        }
        if !levels[l].holds_bits() {
            continue;
        }
        let mix = BucketMix::of(point >> l);
        set_level(
            levels,
            l,
            n,
            keys[..n].iter().map(|k| k.at_mixed(mix)),
            ring,
        );
    }
}

/// A partition's levels as a worker holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PartitionShard {
    allocation: Allocation,
    levels: Vec<LevelShard>,
}

/// Every partition's PBF-2 as one worker holds it, created when the partition's allocation first
/// arrives (with the first records that reach it).
///
/// [`MergedState::new`] holds every word (the replicated placement and the single-threaded
/// reference); [`MergedState::shard`] holds the whole levels worker `me` owns (the sharded
/// placement, [`crate::delta::shard_words`]), and its query answers count the bits it does not
/// hold as set, so ANDing every shard's answer per probe gives the replicated answer.
///
/// ```
/// use chronobloom_core::temporal::TimeRange;
/// use chronobloom_operators::{IndexConfig, MergedState};
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).partitions(2)
///     .bits(20_000).build().unwrap();
/// let mut index = MergedState::new(&cfg);
/// index.insert(&5u64, 150).unwrap();
/// assert!(index.insert(&5u64, 200).is_err()); // beyond 2 partitions of 100 ticks
/// assert!(index.query(&5u64, TimeRange::new(90, 160).unwrap()).present);
/// assert!(!index.query(&5u64, TimeRange::new(0, 99).unwrap()).present);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedState {
    config: IndexConfig,
    me: usize,
    peers: usize,
    partitions: BTreeMap<u64, PartitionShard>,
    /// Where keys were last inserted, to skip the levels whose bits they already set.
    recent: RecentPoints,
}

impl MergedState {
    /// An empty state holding every word.
    pub fn new(config: &IndexConfig) -> Self {
        Self::shard(config, 0, 1)
    }

    /// An empty state holding worker `me`'s share of `peers` (every word when `peers` ≤ 1).
    pub fn shard(config: &IndexConfig, me: usize, peers: usize) -> Self {
        MergedState {
            config: config.clone(),
            me: me.min(peers.saturating_sub(1)),
            peers: peers.max(1),
            partitions: BTreeMap::new(),
            recent: RecentPoints::new(),
        }
    }

    /// Records `key` at `tick`, in a partition with the configuration's allocation.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, tick: Tick) -> Result<(), RejectReason> {
        self.insert_hash(KeyHash::of(key, self.config.seed()), tick)
    }

    /// Records a pre-hashed key at `tick`; ticks at or past the horizon are refused.
    pub fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<(), RejectReason> {
        if tick >= self.config.horizon() {
            return Err(RejectReason::BeyondHorizon);
        }
        let len = self.config.partition_len();
        let allocation = self.config.allocation().clone();
        let local = self.config.point(tick % len);
        let Some(part) = self.partition_or_new(tick / len, &allocation) else {
            return Err(RejectReason::BadAllocation);
        };
        for (l, level) in part.levels.iter_mut().enumerate() {
            level.insert(hash.at(local >> l));
        }
        Ok(())
    }

    /// Inserts epoch `epoch`'s records shipped as hashes into their (existing) partition, the bits
    /// this state holds; returns how many records it refused (an unknown partition, or ticks
    /// outside it), which a configuration mismatch between workers would cause.
    pub(crate) fn insert_records(&mut self, epoch: u64, records: &EpochRecords) -> u64 {
        let len = self.config.partition_len();
        let p = self.config.partition_of_epoch(epoch);
        let first = self.config.epoch_start(epoch);
        let resolution = self.config.resolution();
        let Some(part) = self.partitions.get_mut(&p) else {
            return records.len() as u64;
        };
        let start = p * len;
        let inside = |t: Tick| t >= start && t - start < len;
        let refused = records
            .iter_from(first)
            .filter(|&(_, t)| !inside(t))
            .count() as u64;
        if !part.levels.iter().any(LevelShard::holds_bits) {
            return refused;
        }
        // Sorted by key then tick, a key's records of one bucket are neighbours at every level:
        // inserting (key, bucket) once is enough (the bits are the same). A coarser level's
        // buckets are a finer one's shifted, so each level coarsens the previous level's distinct
        // pairs and drops the repeats: the coarse levels see about one pair per key, not one per
        // record. A key this state inserted at point `q` before has its bits set from level
        // `bitlen(point ⊕ q)` up (`RecentPoints`): a pair carries that level and is not
        // inserted from it on.
        let mut points: Vec<(u64, u64, Tick)> = Vec::with_capacity(records.len());
        points.extend(
            records
                .iter_from(first)
                .filter(|&(_, t)| inside(t))
                .map(|(h, t)| (h.lo, h.hi, (t - start) / resolution)),
        );
        // Shipped records arrive sorted without repeats (`EpochRecords::dedup_points`).
        if !points.is_sorted_by(|a, b| a < b) {
            super::pairs::sort_dedup(&mut points, &mut Vec::new());
        }
        let (Some(lo_tick), Some(hi_tick)) = (
            points.iter().map(|r| r.2).min(),
            points.iter().map(|r| r.2).max(),
        ) else {
            return refused;
        };
        // the slot of the key `RECENT_AHEAD` places on is asked for while this one is looked up
        let mut pairs: Vec<(u64, u64, Tick, u32)> = Vec::with_capacity(points.len());
        for (i, &(lo, hi, point)) in points.iter().enumerate() {
            if let Some(&(ahead, ..)) = points.get(i + RECENT_AHEAD) {
                self.recent.prefetch(ahead);
            }
            pairs.push((lo, hi, point, self.recent.skip_from(lo, hi, p, point)));
        }
        // a key's last point of the epoch (its pairs are neighbours, in point order)
        for w in pairs.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            if let Some(&(lo, hi, point, _)) = w.last() {
                self.recent.record(lo, hi, p, point);
            }
        }
        // The blocks of wholly held blocked levels with few pairs are set through one look-ahead
        // across the levels ([`BlockRing`]).
        let mut ring = BlockRing::new();
        if lo_tick == hi_tick {
            insert_at_one_point(&mut part.levels, &pairs, lo_tick, &mut ring);
            ring.finish(&mut part.levels);
            return refused;
        }
        // Levels this shard does not hold are skipped over: the pairs are coarsened straight to
        // the next level it holds.
        let mut at = 0;
        for l in 0..part.levels.len() {
            if !part.levels[l].holds_bits() {
                continue;
            }
            // A pair whose bits are set from a level at or below this one (`set_from ≤ l`)
            // needs no insert from here on: it is dropped, so the coarse levels, which most
            // of a session's pairs need none of, go over the few pairs left.
            let shift = l - at;
            pairs.retain_mut(|r| {
                r.2 >>= shift;
                (l as u32) < r.3
            });
            if shift > 0 {
                // a merged pair is inserted while any of the pairs it stands for needs it
                pairs.dedup_by(|b, a| {
                    let same = (a.0, a.1, a.2) == (b.0, b.1, b.2);
                    if same {
                        a.3 = a.3.max(b.3);
                    }
                    same
                });
                at = l;
            }
            if pairs.is_empty() {
                break;
            }
            // Each distinct `(lo, hi, bucket)` pair left, at its bucket of this level.
            let first = lo_tick >> l;
            let mixes: Vec<BucketMix> = (first..=hi_tick >> l).map(BucketMix::of).collect();
            let hashes = pairs.iter().filter_map(|&(lo, hi, b, _)| {
                let mix = mixes.get((b - first) as usize)?;
                Some(KeyHash { lo, hi }.at_mixed(*mix))
            });
            set_level(&mut part.levels, l, pairs.len(), hashes, &mut ring);
        }
        ring.finish(&mut part.levels);
        refused
    }

    /// "Did `key` appear in `range`?" with the probes made.
    pub fn query<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> Answer {
        self.query_hash(KeyHash::of(key, self.config.seed()), range)
    }

    /// Queries each partition overlapping `range` in order, stopping at the first "present"; a
    /// partition without a filter answers "absent" with no probe. The probe sequence and count
    /// are those of [`Pbf2`]'s query.
    pub fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        walk_steps([self.steps(hash, range).as_slice()])
    }

    /// This shard's evaluation of every step of the query's probe sequence ([`Step`]).
    pub(crate) fn steps(&self, hash: KeyHash, range: TimeRange) -> Vec<Step> {
        let mut out = Vec::new();
        let len = self.config.partition_len();
        let Some(range) = range.clamp_below(self.config.horizon()) else {
            return out;
        };
        for (&p, part) in self
            .partitions
            .range(range.start() / len..=range.end() / len)
        {
            let start = p * len;
            let Ok(local) = TimeRange::new(
                range.start().max(start) - start,
                range.end().min(start + len - 1) - start,
            ) else {
                continue;
            };
            let local = self.config.points_of(local);
            let top = part.levels.len().saturating_sub(1) as u32;
            for b in dyadic_cover(local, top) {
                part.push_steps(hash, b.level, b.bucket, &mut out);
            }
        }
        out
    }

    /// The partitions holding a filter, ascending, with their allocations.
    pub fn partitions(&self) -> impl Iterator<Item = (u64, &Allocation)> {
        self.partitions.iter().map(|(&p, s)| (p, &s.allocation))
    }

    /// Bits held by all partitions.
    pub fn memory_bits(&self) -> u64 {
        self.partitions
            .values()
            .flat_map(|p| &p.levels)
            .map(|l| l.words.len() as u64 * 64)
            .sum()
    }

    /// Fill and estimated false positive rate of the bits held of each level of partition `p`
    /// (empty when no record reached it).
    pub fn level_stats(&self, p: u64) -> Vec<LevelStats> {
        let Some(part) = self.partitions.get(&p) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(part.levels.len());
        out.extend(
            part.levels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.holds_bits())
                .map(|(i, l)| {
                    LevelStats::from_counts(i as u32, l.held_bits(), l.ones, l.shape.hashes)
                }),
        );
        out
    }

    /// Creates partition `p` with `allocation` unless it exists; false when the allocation does
    /// not fit the configuration (its levels or sizes).
    pub(crate) fn announce(&mut self, p: u64, allocation: &Allocation) -> bool {
        p < self.config.partitions() && self.partition_or_new(p, allocation).is_some()
    }

    /// ORs a delta into an existing partition; returns the number of words refused (outside
    /// the shard or the level, a level without bits, or an unknown partition), which a
    /// configuration mismatch between workers would cause.
    pub(crate) fn apply(&mut self, delta: &LevelDelta) -> u64 {
        let Some(level) = self
            .partitions
            .get_mut(&delta.partition)
            .and_then(|p| p.levels.get_mut(delta.level as usize))
            .filter(|l| l.modulus.is_some())
        else {
            return delta.words.len() as u64;
        };
        match &delta.words {
            DeltaWords::Dense { first, words } => return level.or_run(*first as usize, words),
            DeltaWords::Bitmap {
                first,
                present,
                words,
            } => return level.or_bitmap(*first as usize, present, words),
            DeltaWords::Sparse(_) => {}
        }
        let mut refused = 0;
        delta.words.for_each(|i, w| {
            if !level.or_word(i, w) {
                refused += 1;
            }
        });
        refused
    }

    /// Rehashes the held blocks changed since the last refresh (every block of a new partition)
    /// and returns them.
    pub(crate) fn refresh_blocks(&mut self) -> Vec<BlockUpdate> {
        let mut out = Vec::new();
        for (&p, part) in &mut self.partitions {
            for (l, level) in part.levels.iter_mut().enumerate() {
                let first_block = level.first / BLOCK_WORDS;
                for (b, dirty) in level.dirty.iter_mut().enumerate() {
                    if !std::mem::take(dirty) {
                        continue;
                    }
                    let lo = b * BLOCK_WORDS;
                    let hi = (lo + BLOCK_WORDS).min(level.words.len());
                    out.push(BlockUpdate {
                        partition: p,
                        level: l as u32,
                        block: (first_block + b) as u32,
                        hash: block_hash(&level.words[lo..hi]),
                    });
                }
            }
        }
        out
    }

    /// Forgets which blocks changed (when no digest is computed).
    pub(crate) fn clear_dirty(&mut self) {
        for level in self.partitions.values_mut().flat_map(|p| &mut p.levels) {
            level.dirty.fill(false);
        }
    }

    /// The partition, created with `allocation` when missing; `None` when the allocation does
    /// not fit a PBF-2 of the configuration.
    fn partition_or_new(&mut self, p: u64, allocation: &Allocation) -> Option<&mut PartitionShard> {
        if !self.partitions.contains_key(&p) {
            Pbf2::with_layout(
                0,
                self.config.points(),
                allocation,
                self.config.seed(),
                self.config.layout(),
            )
            .ok()?;
            if allocation
                .shapes()
                .iter()
                .any(|s| s.bits / 64 > u64::from(u32::MAX))
            {
                return None;
            }
            let levels = allocation
                .shapes()
                .iter()
                .enumerate()
                .map(|(l, &s)| {
                    LevelShard::new(
                        s,
                        self.config.layout(),
                        self.config.level_owner(l as u32, self.peers),
                        self.me,
                    )
                })
                .collect();
            self.partitions.insert(
                p,
                PartitionShard {
                    allocation: allocation.clone(),
                    levels,
                },
            );
        }
        self.partitions.get_mut(&p)
    }
}

impl PartitionShard {
    /// Pushes the steps of one cover block, splitting it into its children while its level has
    /// no bits (as [`Pbf2`] does).
    fn push_steps(&self, hash: KeyHash, level: u32, bucket: u64, out: &mut Vec<Step>) {
        match self.levels.get(level as usize) {
            Some(l) if l.modulus.is_some() => {
                let set = l.holds_all(hash.at(bucket));
                out.push(STEP_PROBED | if set { STEP_SET } else { 0 });
            }
            _ if level == 0 => out.push(STEP_SET),
            _ => {
                for child in 0..2 {
                    self.push_steps(hash, level - 1, bucket * 2 + child, out);
                }
            }
        }
    }
}

mod level;
mod recent;
mod ring;
mod snapshot;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
