//! Online allocation for partitioned PBF-2s: the SIMPLE strategy of paper 000 §6.
//!
//! While partition p streams in, one Flajolet–Martin sketch per level estimates d_ℓ (distinct
//! (key, ⌊t / 2^ℓ⌋) pairs) and exact per-level counters record f_ℓ (probes per query, from the
//! canonical covers of the queries that touch p — for PBF-2 exact counters are cheaper than a
//! Count-Min sketch, L integers). Partition p + lag is then configured from those values with the
//! chosen [`Strategy`] (the Lagrange optimum by default). `lag = 1` is the paper's SIMPLE;
//! `lag = 2` uses what p − 2 taught, so a dataflow never waits for p − 1 to close. Partitions with
//! nothing learned yet get the uniform allocation.

use super::{FilterStats, Strategy};
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use crate::sketch::FmSketch;
use crate::temporal::{dyadic_cover, Allocation, AllocationStrategy, Tick, TimeRange};
use std::collections::BTreeMap;

/// What one partition taught: FM sketches per level, probe counts per level, queries seen.
#[derive(Debug, Clone)]
struct Lesson {
    distinct: Vec<FmSketch>,
    probes: Vec<u64>,
    queries: u64,
}

/// The online (SIMPLE) allocation strategy; see the module documentation.
///
/// ```
/// use chronobloom_core::alloc::OnlineStrategy;
/// use chronobloom_core::temporal::{PartitionConfig, PartitionedPbf2, TemporalFilter, TimeRange};
/// let online = OnlineStrategy::new(11, 1, 7, 16, 64, 3).unwrap(); // 11 levels for T = 1024
/// let cfg = PartitionConfig { partition_len: 1024, partition_bits: 50_000, budget_bits: None, retention: None, seed: 3 };
/// let mut p = PartitionedPbf2::new(cfg, online).unwrap();
/// for t in 0..3000u64 { p.insert(&(t % 97), t).unwrap(); }
/// assert!(p.query(&5u64, TimeRange::new(2000, 2100).unwrap()));
/// assert!(p.strategy_bits() > 0);
/// ```
#[derive(Debug, Clone)]
pub struct OnlineStrategy {
    levels: u32,
    lag: u64,
    first_hashes: u32,
    k_max: u32,
    /// An empty sketch, cloned for every level of every new lesson.
    empty: FmSketch,
    strategy: Strategy,
    lessons: BTreeMap<u64, Lesson>,
}

impl OnlineStrategy {
    /// Learns for PBF-2s of `levels` levels from partition p − `lag` (1 or 2), with `bitmaps` FM
    /// bitmaps per level; the first partitions get `first_hashes` hashes per level, learned ones
    /// hash counts capped at `k_max`.
    pub fn new(
        levels: u32,
        lag: u64,
        first_hashes: u32,
        k_max: u32,
        bitmaps: usize,
        seed: u64,
    ) -> Result<Self> {
        if !(1..=2).contains(&lag) {
            return Err(Error::invalid(
                "lag",
                "must be 1 (SIMPLE) or 2 (nothing waits)",
            ));
        }
        if levels == 0 || k_max == 0 {
            return Err(Error::invalid(
                "levels",
                "levels and k_max must be positive",
            ));
        }
        Ok(OnlineStrategy {
            levels,
            lag,
            first_hashes,
            k_max,
            empty: FmSketch::new(bitmaps, seed)?,
            strategy: Strategy::Optimal,
            lessons: BTreeMap::new(),
        })
    }

    /// Uses `strategy` (optimal by default, or proportional) on what was learned.
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// The statistics learned from partition `index`, if it was seen.
    pub fn learned(&self, index: u64) -> Option<Vec<FilterStats>> {
        let l = self.lessons.get(&index)?;
        let q = l.queries.max(1) as f64;
        Some(
            l.distinct
                .iter()
                .zip(&l.probes)
                .map(|(fm, &p)| {
                    // Without queries to learn from, every level counts as probed once.
                    let f = if l.queries == 0 { 1.0 } else { p as f64 / q };
                    FilterStats::new(fm.estimate(), f)
                })
                .collect(),
        )
    }

    fn lesson(&mut self, index: u64) -> &mut Lesson {
        let (levels, empty) = (self.levels as usize, &self.empty);
        self.lessons.entry(index).or_insert_with(|| Lesson {
            distinct: vec![empty.clone(); levels],
            probes: vec![0; levels],
            queries: 0,
        })
    }
}

impl AllocationStrategy for OnlineStrategy {
    fn name(&self) -> &'static str {
        "online"
    }

    fn allocation(&mut self, index: u64, levels: u32, bits: u64) -> Result<Allocation> {
        if levels != self.levels {
            return Err(Error::ShapeMismatch {
                what: "levels",
                left: self.levels.into(),
                right: levels.into(),
            });
        }
        // Lessons older than the one this partition uses are no longer needed.
        let keep = index.saturating_sub(self.lag);
        self.lessons.retain(|&p, _| p >= keep);
        match index.checked_sub(self.lag).and_then(|p| self.learned(p)) {
            Some(stats) if stats.iter().any(|s| s.distinct > 0.0) => {
                self.strategy.allocate(&stats, bits, self.k_max)
            }
            _ => Allocation::uniform(levels as usize, bits, self.first_hashes),
        }
    }

    fn observe_insert(&mut self, index: u64, hash: KeyHash, tick: Tick) {
        let lesson = self.lesson(index);
        for (level, fm) in lesson.distinct.iter_mut().enumerate() {
            fm.insert_hash(hash.at(tick >> level));
        }
    }

    fn observe_query(&mut self, index: u64, range: TimeRange) {
        let top = self.levels - 1;
        let lesson = self.lesson(index);
        lesson.queries += 1;
        for block in dyadic_cover(range, top) {
            lesson.probes[block.level as usize] += 1;
        }
    }

    fn memory_bits(&self) -> u64 {
        self.lessons
            .values()
            .map(|l| {
                let fm: usize = l.distinct.iter().map(FmSketch::memory_bytes).sum();
                fm as u64 * 8 + l.probes.len() as u64 * 64 + 64
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::Pbf2Workload;
    use crate::hash::mix64;
    use crate::temporal::{FixedStrategy, PartitionConfig, PartitionedPbf2, Pbf2, TemporalFilter};

    const T: u64 = 1024;
    const PARTS: u64 = 6;
    const BITS: u64 = 200_000;

    /// A stationary stream: every partition draws 3000 records (keys from a pool of 2000, so keys
    /// repeat within partitions) and 4000 short queries from the same distributions.
    fn partition(p: u64) -> (Vec<(u64, u64)>, Vec<TimeRange>) {
        let recs = (0..3000)
            .map(|i| {
                let r = mix64(p << 32 | i);
                (r % 2000, p * T + mix64(r) % T)
            })
            .collect();
        let queries = (0..4000)
            .map(|i| {
                let r = mix64(!(p << 32 | i));
                let len = 1 + r % 24;
                let s = p * T + mix64(r) % (T - len);
                TimeRange::new(s, s + len - 1).unwrap()
            })
            .collect();
        (recs, queries)
    }

    fn cfg(budget: Option<u64>) -> PartitionConfig {
        PartitionConfig {
            partition_len: T,
            partition_bits: BITS,
            budget_bits: budget,
            retention: None,
            seed: 9,
        }
    }

    /// Builds a partitioned PBF-2, streaming each partition's records and then its queries.
    fn build<S: AllocationStrategy>(strategy: S, budget: Option<u64>) -> PartitionedPbf2<S> {
        let mut pbf = PartitionedPbf2::new(cfg(budget), strategy).unwrap();
        for p in 0..PARTS {
            let (recs, queries) = partition(p);
            for (k, t) in recs {
                pbf.insert(&k, t).unwrap();
            }
            for q in queries {
                pbf.observe_query(q);
            }
        }
        pbf
    }

    /// False positives of absent keys on the queries of partitions 1.. (partition 0 is uniform for
    /// the online strategy by construction).
    fn false_positives<S: AllocationStrategy>(pbf: &PartitionedPbf2<S>) -> (u64, u64) {
        let (mut fp, mut n) = (0, 0);
        for p in 1..PARTS {
            for (i, q) in partition(p).1.into_iter().enumerate() {
                fp += u64::from(pbf.query(&(1_000_000 + i as u64), q));
                n += 1;
            }
        }
        (fp, n)
    }

    #[test]
    fn online_is_within_1_2x_of_offline_optimal_on_a_stationary_stream() {
        let levels = Pbf2::levels_for(T).unwrap();
        let mut exact = BTreeMap::new();
        for p in 0..PARTS {
            let (recs, queries) = partition(p);
            let mut w = Pbf2Workload::new(T).unwrap();
            for (k, t) in recs {
                w.insert(KeyHash::of(&k, 9), t - p * T).unwrap();
            }
            for q in queries {
                w.query(TimeRange::new(q.start() - p * T, q.end() - p * T).unwrap());
            }
            exact.insert(p, Strategy::Optimal.allocate(&w.stats(), BITS, 16).unwrap());
        }
        let offline = build(FixedStrategy::new("offline", exact), None);
        let online = build(OnlineStrategy::new(levels, 1, 7, 16, 256, 1).unwrap(), None);
        let uniform = build(crate::temporal::UniformStrategy { hashes: 7 }, None);
        let (fp_off, n) = false_positives(&offline);
        let (fp_on, _) = false_positives(&online);
        let (fp_uni, _) = false_positives(&uniform);
        let (off, on, uni) = (
            fp_off as f64 / n as f64,
            fp_on as f64 / n as f64,
            fp_uni as f64 / n as f64,
        );
        eprintln!("FPR on partitions 1..: offline {off:.4}, online {on:.4}, uniform {uni:.4} ({n} queries)");
        // Fixed seeds, so the test is deterministic. With 20,000 queries and rates near 0.5% (about
        // 90 false positives), one standard deviation of sampling error is about 10% of a rate;
        // measured here: offline 0.0046, online 0.0047, uniform 0.2176. 1.2x is the issue's target.
        assert!(on <= 1.2 * off, "online {on:.4} vs offline {off:.4}");
        assert!(on < uni, "online {on:.4} should beat uniform {uni:.4}");
        // Learned levels differ from uniform: the fine levels short queries probe get more bits.
        let learned: Vec<u64> = online
            .spans()
            .last()
            .unwrap()
            .2
            .allocation()
            .shapes()
            .iter()
            .map(|s| s.bits)
            .collect();
        assert!(learned[0] > BITS / u64::from(levels), "{learned:?}");
    }

    #[test]
    fn online_with_merges_has_no_false_negatives() {
        let levels = Pbf2::levels_for(T).unwrap();
        let pbf = build(
            OnlineStrategy::new(levels, 2, 5, 16, 64, 2).unwrap(),
            Some(3 * BITS),
        );
        assert!(pbf.merges() > 0);
        for p in 0..PARTS {
            for (k, t) in partition(p).0 {
                assert!(pbf.query(&k, TimeRange::point(t)), "{k}@{t}");
            }
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(OnlineStrategy::new(11, 3, 7, 16, 64, 0).is_err());
        assert!(OnlineStrategy::new(0, 1, 7, 16, 64, 0).is_err());
        assert!(OnlineStrategy::new(11, 1, 7, 16, 0, 0).is_err());
        let mut s = OnlineStrategy::new(11, 1, 7, 16, 64, 0).unwrap();
        assert!(s.allocation(0, 12, 1000).is_err());
    }
}
