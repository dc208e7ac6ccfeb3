//! Partitioned PBF-2 (paper 000 §6, Figure 6): time is cut into partitions of `partition_len`
//! ticks, each with its own static PBF-2 and its own allocation, chosen by an
//! [`AllocationStrategy`] from what earlier partitions taught it.
//!
//! * A query [s, e] is decomposed into one query per partition it overlaps; the answers are ORed.
//! * **Space budget**: when the partitions held in memory exceed `budget_bits`, the two oldest are
//!   merged into one PBF-2 over both spans ([`Pbf2::merge_adjacent`]: OR of the levels folded to
//!   gcd sizes, the smaller hash count). Merging trades accuracy on old data for space; it never
//!   loses a key.
//! * **Retention**: partitions that end `retention` ticks or more before the newest tick retire:
//!   dropped (a later query touching them is answered "maybe", and [`PartitionedPbf2::try_query`]
//!   reports [`Error::Retired`]) or written to a directory with serde and reloaded by the queries
//!   that need them.
//! * **Layout**: partitions are standard unless built with [`PartitionedPbf2::with_layout`]; a
//!   blocked one rounds each allocation the strategy chooses down to whole blocks
//!   ([`super::Allocation::for_layout`]).

use super::{AllocationStrategy, Answer, Pbf2, TemporalFilter, Tick, TimeRange};
use crate::bloom::Layout;
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What happens to a partition past the retention horizon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retire {
    /// Its data is dropped.
    Drop,
    /// It is written to this directory and read back by queries that need it.
    ToDir(PathBuf),
}

/// Settings of a [`PartitionedPbf2`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    /// Ticks per partition, T.
    pub partition_len: Tick,
    /// Bits of one partition's PBF-2.
    pub partition_bits: u64,
    /// Merge old partitions while the in-memory total exceeds this.
    pub budget_bits: Option<u64>,
    /// Retire partitions ending this many ticks or more before the newest tick, and how.
    pub retention: Option<(Tick, Retire)>,
    /// The hash seed.
    pub seed: u64,
}

/// Where a span's filter lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Slot {
    Memory(Pbf2),
    File(PathBuf),
    Dropped,
}

/// A partitioned PBF-2; see the module documentation.
///
/// ```
/// use chronobloom_core::temporal::{PartitionConfig, PartitionedPbf2, TemporalFilter, TimeRange, UniformStrategy};
/// let cfg = PartitionConfig { partition_len: 1024, partition_bits: 100_000, budget_bits: None, retention: None, seed: 7 };
/// let mut p = PartitionedPbf2::new(cfg, UniformStrategy { hashes: 5 }).unwrap();
/// p.insert(&"a", 10).unwrap();
/// p.insert(&"a", 5000).unwrap();
/// assert_eq!(p.partitions(), 2);
/// assert!(p.query(&"a", TimeRange::new(4000, 6000).unwrap()));
/// ```
#[derive(Debug)]
pub struct PartitionedPbf2<S> {
    cfg: PartitionConfig,
    levels: u32,
    layout: Layout,
    strategy: S,
    /// Spans keyed by their first tick; each covers [start, end) and none overlap.
    spans: BTreeMap<Tick, (Tick, Slot)>,
    newest: Tick,
    merges: u64,
}

impl<S: AllocationStrategy> PartitionedPbf2<S> {
    /// A partitioned PBF-2 with no partitions yet; checks the configuration.
    pub fn new(cfg: PartitionConfig, strategy: S) -> Result<Self> {
        Self::with_layout(cfg, strategy, Layout::Standard)
    }

    /// [`Self::new`] with every partition's levels in `layout`.
    pub fn with_layout(cfg: PartitionConfig, strategy: S, layout: Layout) -> Result<Self> {
        let levels = Pbf2::levels_for(cfg.partition_len)?;
        if cfg.partition_bits == 0 {
            return Err(Error::invalid("partition_bits", "must be positive"));
        }
        if let Some(b) = cfg.budget_bits {
            if b < cfg.partition_bits {
                return Err(Error::invalid(
                    "budget_bits",
                    format!("{b} is below one partition's {} bits", cfg.partition_bits),
                ));
            }
        }
        if let Some((_, Retire::ToDir(dir))) = &cfg.retention {
            std::fs::create_dir_all(dir).map_err(|e| storage(dir, e))?;
        }
        Ok(PartitionedPbf2 {
            cfg,
            levels,
            layout,
            strategy,
            spans: BTreeMap::new(),
            newest: 0,
            merges: 0,
        })
    }

    /// The strategy (to read what it learned).
    pub fn strategy(&self) -> &S {
        &self.strategy
    }

    /// Number of spans (partitions, or merged runs of them), retired ones included.
    pub fn partitions(&self) -> usize {
        self.spans.len()
    }

    /// Number of pairwise merges made to stay under the budget.
    pub fn merges(&self) -> u64 {
        self.merges
    }

    /// The in-memory spans as (start, end, filter), oldest first.
    pub fn spans(&self) -> impl Iterator<Item = (Tick, Tick, &Pbf2)> {
        self.spans.iter().filter_map(|(&s, (e, slot))| match slot {
            Slot::Memory(p) => Some((s, *e, p)),
            _ => None,
        })
    }

    /// Memory the strategy holds to learn its allocations, in bits.
    pub fn strategy_bits(&self) -> u64 {
        self.strategy.memory_bits()
    }

    /// Shows the strategy a query (for learning f_i), split by partition.
    pub fn observe_query(&mut self, range: TimeRange) {
        let t = self.cfg.partition_len;
        for index in range.start() / t..=range.end() / t {
            let part = TimeRange::new(index * t, index * t + (t - 1)).unwrap_or(range);
            if let Some(r) = range.intersect(&part) {
                self.strategy.observe_query(index, r);
            }
        }
    }

    /// The span holding `tick`, creating its partition when none does.
    fn span_for(&mut self, tick: Tick) -> Result<&mut Slot> {
        let found = self
            .spans
            .range(..=tick)
            .next_back()
            .filter(|(_, (end, _))| tick < *end)
            .map(|(&s, _)| s);
        let start = match found {
            Some(s) => s,
            None => {
                let index = tick / self.cfg.partition_len;
                let alloc =
                    self.strategy
                        .allocation(index, self.levels, self.cfg.partition_bits)?;
                let start = index * self.cfg.partition_len;
                let pbf = Pbf2::with_layout(
                    start,
                    self.cfg.partition_len,
                    &alloc.for_layout(self.layout),
                    self.cfg.seed,
                    self.layout,
                )?;
                self.spans
                    .insert(start, (pbf.capacity(), Slot::Memory(pbf)));
                start
            }
        };
        self.spans
            .get_mut(&start)
            .map(|(_, slot)| slot)
            .ok_or_else(|| Error::invalid("tick", "span vanished"))
    }

    /// Retires what fell past the retention horizon, then merges old spans while over budget.
    fn enforce_limits(&mut self) -> Result<()> {
        if let Some((retention, how)) = self.cfg.retention.clone() {
            let cutoff = self.newest.saturating_sub(retention);
            let old: Vec<Tick> = self
                .spans
                .iter()
                .filter(|(_, (end, slot))| *end <= cutoff && matches!(slot, Slot::Memory(_)))
                .map(|(&s, _)| s)
                .collect();
            for start in old {
                let Some((end, slot)) = self.spans.get_mut(&start) else {
                    continue;
                };
                let new_slot = match &how {
                    Retire::Drop => Slot::Dropped,
                    Retire::ToDir(dir) => {
                        let path = dir.join(format!("pbf2-{start}-{end}.json"));
                        if let Slot::Memory(pbf) = slot {
                            let bytes = serde_json::to_vec(pbf).map_err(|e| storage(&path, e))?;
                            std::fs::write(&path, bytes).map_err(|e| storage(&path, e))?;
                        }
                        Slot::File(path)
                    }
                };
                *slot = new_slot;
            }
        }
        let Some(budget) = self.cfg.budget_bits else {
            return Ok(());
        };
        while self.memory_bits() > budget {
            let mut in_memory = self
                .spans
                .iter()
                .filter(|(_, (_, slot))| matches!(slot, Slot::Memory(_)))
                .map(|(&s, _)| s);
            let (Some(a), Some(b)) = (in_memory.next(), in_memory.next()) else {
                break; // a single partition cannot be merged further
            };
            let merged = match (&self.spans[&a].1, &self.spans[&b].1) {
                (Slot::Memory(x), Slot::Memory(y)) => x.merge_adjacent(y)?,
                _ => break,
            };
            self.spans.remove(&b);
            self.spans
                .insert(a, (merged.capacity(), Slot::Memory(merged)));
            self.merges += 1;
        }
        Ok(())
    }

    /// "Did the pre-hashed key appear in `range`?", reloading retired spans it needs; an error when
    /// a needed span was dropped or cannot be read.
    pub fn try_query_hash(&self, hash: KeyHash, range: TimeRange) -> Result<Answer> {
        let mut total = Answer {
            present: false,
            probes: 0,
        };
        let first = self
            .spans
            .range(..=range.start())
            .next_back()
            .map_or(range.start(), |(&s, _)| s);
        for (&start, (end, slot)) in self.spans.range(first..=range.end()) {
            let span = TimeRange::new(start, end - 1).unwrap_or(range);
            let Some(part) = range.intersect(&span) else {
                continue;
            };
            let a = match slot {
                Slot::Memory(p) => p.query_hash(hash, part),
                Slot::File(path) => load(path)?.query_hash(hash, part),
                Slot::Dropped => return Err(Error::Retired { start, end: *end }),
            };
            total.probes += a.probes;
            if a.present {
                total.present = true;
                break;
            }
        }
        Ok(total)
    }

    /// [`Self::try_query_hash`] for a key.
    pub fn try_query<K: crate::hash::Key + ?Sized>(
        &self,
        key: &K,
        range: TimeRange,
    ) -> Result<Answer> {
        self.try_query_hash(KeyHash::of(key, self.cfg.seed), range)
    }
}

fn load(path: &PathBuf) -> Result<Pbf2> {
    let bytes = std::fs::read(path).map_err(|e| storage(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| storage(path, e))
}

fn storage(path: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::Storage {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl<S: AllocationStrategy> TemporalFilter for PartitionedPbf2<S> {
    fn seed(&self) -> u64 {
        self.cfg.seed
    }

    /// Inserts into the partition holding `tick` (creating it), then retires and merges as
    /// configured. A tick in a dropped span is an error.
    fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        let index = tick / self.cfg.partition_len;
        let new_newest = self.newest.max(tick);
        let spans_before = self.spans.len();
        match self.span_for(tick)? {
            Slot::Memory(p) => p.insert_hash(hash, tick)?,
            Slot::File(path) => {
                let path = path.clone();
                let mut p = load(&path)?;
                p.insert_hash(hash, tick)?;
                let bytes = serde_json::to_vec(&p).map_err(|e| storage(&path, e))?;
                std::fs::write(&path, bytes).map_err(|e| storage(&path, e))?;
            }
            Slot::Dropped => {
                let (start, end) = self
                    .spans
                    .range(..=tick)
                    .next_back()
                    .map_or((tick, tick), |(&s, (e, _))| (s, *e));
                return Err(Error::Retired { start, end });
            }
        }
        self.strategy.observe_insert(index, hash, tick);
        // Limits change only when a span appears or time enters a new partition.
        let partition_before = self.newest / self.cfg.partition_len;
        self.newest = new_newest;
        if self.spans.len() != spans_before
            || partition_before != self.newest / self.cfg.partition_len
        {
            self.enforce_limits()?;
        }
        Ok(())
    }

    /// Answers over every partition the range overlaps. A span that cannot be consulted (dropped,
    /// or its file unreadable) answers "maybe", so there are no false negatives; use
    /// [`PartitionedPbf2::try_query`] to see such errors.
    fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        self.try_query_hash(hash, range).unwrap_or(Answer {
            present: true,
            probes: 0,
        })
    }

    /// Bits of the partitions held in memory (the strategy's are reported apart).
    fn memory_bits(&self) -> u64 {
        self.spans().map(|(_, _, p)| p.memory_bits()).sum()
    }
}
