//! Sketch side operators: each partition's allocation, learned from the streams themselves
//! (DESIGN.md §3, "Feedback without cycles"; paper 000 §6).
//!
//! ```text
//!  records ──► FM sketch per level ─────┐  when partition p closes, every worker sends its sketch
//!  queries ──► exact probes per level ──┴► to worker 0, which merges them (FM by OR, counters by
//!              addition), solves the allocation once and broadcasts (p + lag, allocation)
//! ```
//!
//! The allocation of partition p + lag is stamped with p + lag's first tick, a time later than
//! every record and query it was learned from, so it flows forward into the index: no feedback
//! loop is needed. With [`Lag::Simple`] records of p + 1 wait for p to close on every worker; with
//! [`Lag::NoWait`] the allocation of p + 2 is ready a whole partition before it is needed.
//!
//! What is learned mirrors [`chronobloom_core::alloc::OnlineStrategy`], on a partition's
//! **points** (local ticks divided by [`IndexConfig::resolution`], as in the index):
//!
//! * a record at tick t of partition p adds `KeyHash::of(key, seed).at(((t − start(p)) / r) >> ℓ)`
//!   to the FM sketch of every level ℓ;
//! * a query `(key, range)` issued at t_q counts toward every partition its range overlaps that
//!   is still open at t_q (t_q ≤ the partition's last tick): one query, and one probe per block of
//!   the dyadic cover of the range clipped to the partition, at the block's level. Parts of the
//!   range in partitions already closed are not learned; they are counted in
//!   [`SketchStats::late_queries`] of the partition holding t_q.
//!
//! The learned statistics are d_ℓ = the merged FM estimate and f_ℓ = probes / queries (1 for every
//! level when no query was seen); when some level has d_ℓ > 0 the allocation is
//! [`AllocatorConfig::strategy`]'s ([`Strategy::Optimal`] by default) for the index's total bits,
//! otherwise the index's configured allocation. The first `lag` partitions get the configured
//! allocation too. Every emitted allocation is validated as an index configuration; one that fails
//! is replaced by the configured allocation and the reason is reported.

use crate::error::{Error, Result};
use crate::index::config::IndexConfig;
use chronobloom_core::alloc::{FilterStats, Strategy, DEFAULT_K_MAX};
use chronobloom_core::bloom::MAX_HASHES;
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Allocation, Tick, TimeRange};
use resume::SolverState;
pub use resume::{AllocatorCheckpoint, AllocatorSnapshot};
use serde::{Deserialize, Serialize};
use solve::solve;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Broadcast, Map};
use timely::dataflow::operators::Capability;
use timely::dataflow::StreamVec;
use timely::progress::frontier::MutableAntichain;

mod partition;
mod resume;
mod solve;

pub use partition::PartitionSketch;

/// Which earlier partition a partition's allocation is learned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Lag {
    /// Partition p + 1 uses what p taught (the paper's SIMPLE); its records wait until p has
    /// closed on every worker.
    #[default]
    Simple,
    /// Partition p + 2 uses what p taught, so its allocation is known a partition early and
    /// nothing waits.
    NoWait,
}

impl Lag {
    /// The lag in partitions: 1 or 2.
    pub fn partitions(self) -> u64 {
        match self {
            Lag::Simple => 1,
            Lag::NoWait => 2,
        }
    }
}

/// Settings of the [`Allocator`]; checked by [`Allocator::allocator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorConfig {
    lag: Lag,
    bitmaps: usize,
    k_max: u32,
    strategy: Strategy,
}

impl AllocatorConfig {
    /// FM bitmaps per level unless [`Self::with_bitmaps`] says otherwise (relative standard
    /// error about 10%).
    pub const DEFAULT_BITMAPS: usize = 64;

    /// `lag`, [`Self::DEFAULT_BITMAPS`] bitmaps per level, hash counts capped at
    /// [`DEFAULT_K_MAX`], and [`Strategy::Optimal`].
    pub fn new(lag: Lag) -> Self {
        AllocatorConfig {
            lag,
            bitmaps: Self::DEFAULT_BITMAPS,
            k_max: DEFAULT_K_MAX,
            strategy: Strategy::Optimal,
        }
    }

    /// FM bitmaps per level (1..=2^20).
    pub fn with_bitmaps(mut self, bitmaps: usize) -> Self {
        self.bitmaps = bitmaps;
        self
    }

    /// The cap on learned hash counts (1..=64).
    pub fn with_k_max(mut self, k_max: u32) -> Self {
        self.k_max = k_max;
        self
    }

    /// How learned statistics become an allocation.
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Which earlier partition an allocation is learned from.
    pub fn lag(&self) -> Lag {
        self.lag
    }

    /// FM bitmaps per level.
    pub fn bitmaps(&self) -> usize {
        self.bitmaps
    }

    /// The cap on learned hash counts.
    pub fn k_max(&self) -> u32 {
        self.k_max
    }

    /// How learned statistics become an allocation.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }
}

/// One worker's sketching of one partition, emitted when the partition closes on that worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SketchStats {
    /// The partition.
    pub partition: u64,
    /// The worker.
    pub worker: u32,
    /// Records sketched.
    pub records: u64,
    /// Records at or past the horizon, not sketched.
    pub beyond_horizon: u64,
    /// Queries counted toward this partition.
    pub queries: u64,
    /// Parts of queries issued during this partition that fell in partitions already closed, so
    /// were not learned.
    pub late_queries: u64,
    /// Bytes of the sketch sent to the solver (0 when nothing was learned).
    pub sketch_bytes: u64,
}

/// Where an emitted allocation came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllocationSource {
    /// One of the first `lag` partitions: the index's configured allocation.
    Configured,
    /// Learned from partition `from`.
    Learned {
        /// The partition learned from.
        from: u64,
    },
    /// Partition `from` saw queries but no records: the index's configured allocation.
    NothingLearned {
        /// The partition learned from.
        from: u64,
    },
    /// The learned allocation or a sketch was refused: the index's configured allocation.
    Refused {
        /// The partition learned from.
        from: u64,
        /// Why.
        reason: String,
    },
}

/// One allocation decision, made once on worker 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationReport {
    /// The partition the allocation is for.
    pub partition: u64,
    /// The allocation.
    pub allocation: Allocation,
    /// Where it came from.
    pub source: AllocationSource,
    /// The merged statistics it was learned from (empty for [`AllocationSource::Configured`]).
    pub learned: Vec<FilterStats>,
    /// Worker sketches merged into those statistics.
    pub sketches: u64,
}

/// The allocator's outputs.
pub struct AllocatorStreams<'scope> {
    /// `(partition, allocation)` on every worker, at the partition's first tick.
    pub allocations: StreamVec<'scope, u64, (u64, Allocation)>,
    /// Each decision with its inputs, on worker 0 only, at the partition's first tick.
    pub reports: StreamVec<'scope, u64, AllocationReport>,
    /// Each worker's sketching of each partition it saw, at the partition's last tick.
    pub sketches: StreamVec<'scope, u64, SketchStats>,
}

/// Learns each partition's allocation from a stream of records (keys whose timestamps are their
/// ticks) and a stream of `(key, range)` queries; see the [module documentation](self).
///
/// An allocation is emitted for partition q (below the index's partition count) when q < lag, at
/// time 0 for q = 0, or when some worker saw a record or a query of partition q − lag, once it has
/// closed everywhere. A partition with no message gets the index's configured allocation: no
/// record of it exists, or nothing was learned. The output is the same for any number of workers
/// and processes, and the dataflow completes whether partitions have records and queries or not.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Event;
/// use chronobloom_core::temporal::{Allocation, TimeRange};
/// use chronobloom_operators::{Allocator, AllocatorConfig, IndexConfig, Lag};
///
/// let cfg = IndexConfig::builder().epoch_len(16).partition_len(64).partitions(3)
///     .bits(8_000).hashes(3).build().unwrap();
/// let allocations = timely::execute_directly(move |worker| {
///     let (mut records, mut queries, out) = worker.dataflow::<u64, _, _>(|scope| {
///         let (r_in, records) = scope.new_input::<Vec<u64>>();
///         let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
///         let out = records.allocator(queries, &cfg, &AllocatorConfig::new(Lag::Simple)).unwrap();
///         (r_in, q_in, out.allocations.capture())
///     });
///     for t in 0..64u64 {
///         records.advance_to(t);
///         queries.advance_to(t);
///         records.send(t % 8);
///         queries.send((t % 8, TimeRange::point(t))); // point queries: only level 0 is probed
///     }
///     out
/// });
/// let got: Vec<(u64, (u64, Allocation))> = allocations.iter()
///     .flat_map(|e| match e {
///         Event::Messages(t, a) => {
///             let t = *t.least().unwrap();
///             a.into_iter().map(|x| (t, x)).collect()
///         }
///         Event::Progress(_) => vec![],
///     })
///     .collect();
/// let when: Vec<(u64, u64)> = got.iter().map(|(t, (p, _))| (*t, *p)).collect();
/// assert_eq!(when, vec![(0, 0), (64, 1)]); // 0 configured, 1 learned from 0, 2 not needed
/// let learned = &got[1].1 .1;
/// assert_eq!(learned.total_bits(), 8_000);
/// assert_eq!(learned.shapes()[0].bits, 8_000); // only the probed level gets bits
/// ```
pub trait Allocator<'scope> {
    /// Learns from this stream of records and from `queries`; refuses settings that cannot make
    /// a sketch (bitmaps outside 1..=2^20, `k_max` outside 1..=64).
    fn allocator<Q: 'static>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        index: &IndexConfig,
        config: &AllocatorConfig,
    ) -> Result<AllocatorStreams<'scope>>;

    /// [`Self::allocator`], starting from a checkpointed state when `restore` is given, with a
    /// handle that snapshots the state at a checkpoint boundary ([`crate::checkpoint`]). A
    /// snapshot that does not fit the configuration or this worker is refused
    /// ([`Error::Config`] of `allocator`, `restore`) before anything is built.
    #[allow(clippy::type_complexity)]
    fn allocator_resumable<Q: 'static>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        index: &IndexConfig,
        config: &AllocatorConfig,
        restore: Option<AllocatorSnapshot>,
    ) -> Result<(AllocatorStreams<'scope>, AllocatorCheckpoint)>;
}

/// Partition arithmetic of an index configuration.
#[derive(Clone, Copy)]
struct Partitions {
    len: Tick,
    count: u64,
    /// Ticks per point of a partition's PBF-2 ([`IndexConfig::resolution`]).
    resolution: Tick,
}

impl Partitions {
    fn of(&self, t: Tick) -> u64 {
        t / self.len
    }

    fn start(&self, p: u64) -> Tick {
        p.saturating_mul(self.len)
    }

    fn last(&self, p: u64) -> Tick {
        self.start(p).saturating_add(self.len - 1)
    }

    /// Partitions before this one have closed once the frontier reached `frontier`.
    fn closed_before(&self, frontier: Option<Tick>) -> u64 {
        frontier.map_or(u64::MAX, |f| f / self.len)
    }
}

/// What a worker's sketching operator emits: sketches for the solver, stats for the caller.
#[derive(Clone)]
enum Sketched {
    Sketch(u64, PartitionSketch),
    Stats(SketchStats),
}

/// A partition open on one worker.
struct Open {
    cap: Capability<u64>,
    sketch: Option<PartitionSketch>,
    stats: SketchStats,
}

/// The partition `p` open on this worker, opened with a capability from `cap` when missing.
fn slot(
    open: &mut BTreeMap<u64, Open>,
    p: u64,
    worker: u32,
    cap: impl FnOnce() -> Capability<u64>,
) -> &mut Open {
    open.entry(p).or_insert_with(|| Open {
        cap: cap(),
        sketch: None,
        stats: SketchStats {
            partition: p,
            worker,
            ..SketchStats::default()
        },
    })
}

/// The single time of a totally ordered frontier, `None` when it is empty.
fn head(frontier: &MutableAntichain<u64>) -> Option<Tick> {
    frontier.frontier().as_option().copied()
}

impl<'scope, K: Key + 'static> Allocator<'scope> for StreamVec<'scope, u64, K> {
    fn allocator<Q: 'static>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        index: &IndexConfig,
        config: &AllocatorConfig,
    ) -> Result<AllocatorStreams<'scope>> {
        self.allocator_resumable(queries, index, config, None)
            .map(|(streams, _)| streams)
    }

    fn allocator_resumable<Q: 'static>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        index: &IndexConfig,
        config: &AllocatorConfig,
        restore: Option<AllocatorSnapshot>,
    ) -> Result<(AllocatorStreams<'scope>, AllocatorCheckpoint)> {
        if !(1..=MAX_HASHES).contains(&config.k_max) {
            return Err(Error::config(
                "allocator",
                "k_max",
                format!("{} is outside 1..={MAX_HASHES}", config.k_max),
            ));
        }
        let levels = index.allocation().shapes().len() as u32;
        let empty = PartitionSketch::new(levels, config.bitmaps, index.seed())?;
        let parts = Partitions {
            len: index.partition_len(),
            count: index.partitions(),
            resolution: index.resolution(),
        };
        let seed = index.seed();
        let me = self.scope().index() as u32;
        let (restored, solver_state) = match restore {
            Some(snapshot) => snapshot.restore(me, parts, &empty)?,
            None => (BTreeMap::new(), (me == 0).then(SolverState::default)),
        };
        let open_cell: Rc<RefCell<BTreeMap<u64, Open>>> = Rc::default();
        let solver_cell = solver_state.map(|s| Rc::new(RefCell::new(s)));
        let checkpoint = AllocatorCheckpoint {
            open: Rc::clone(&open_cell),
            solver: solver_cell.clone(),
            parts,
        };
        let sketched = self.binary_frontier(
            queries,
            Pipeline,
            Pipeline,
            "SketchPartitions",
            move |default_cap, _| {
                // Capabilities are taken from the data, or for the partitions a checkpoint
                // carried; time 0 must not be held.
                open_cell
                    .borrow_mut()
                    .extend(restored.into_iter().map(|(p, part)| {
                        let cap = default_cap.delayed(&parts.last(p));
                        let (sketch, stats) = (part.sketch, part.stats);
                        (p, Open { cap, sketch, stats })
                    }));
                drop(default_cap);
                move |(r_in, r_frontier), (q_in, q_frontier), output| {
                    let mut open = open_cell.borrow_mut();
                    let open = &mut *open;
                    let port = output.output_index();
                    r_in.for_each_stamp(|cap, data| {
                        let Some(&t) = cap.least() else { return };
                        let p = parts.of(t);
                        let slot = slot(open, p, me, || cap.delayed(&parts.last(p), port));
                        let local = (t - parts.start(p)) / parts.resolution;
                        for batch in data {
                            if p >= parts.count {
                                let n = batch.len() as u64;
                                slot.stats.beyond_horizon =
                                    slot.stats.beyond_horizon.saturating_add(n);
                                batch.clear();
                                continue;
                            }
                            slot.stats.records =
                                slot.stats.records.saturating_add(batch.len() as u64);
                            let sketch = slot.sketch.get_or_insert_with(|| empty.clone());
                            for key in batch.drain(..) {
                                sketch.insert(KeyHash::of(&key, seed), local);
                            }
                        }
                    });
                    q_in.for_each_stamp(|cap, data| {
                        let Some(&issued) = cap.least() else { return };
                        let now = parts.of(issued);
                        for batch in data {
                            for (_, range) in batch.drain(..) {
                                let first = parts.of(range.start());
                                let last = parts.of(range.end()).min(parts.count.saturating_sub(1));
                                let late = now.min(last.saturating_add(1)).saturating_sub(first);
                                if late > 0 {
                                    let last = parts.last(now);
                                    let slot = slot(open, now, me, || cap.delayed(&last, port));
                                    slot.stats.late_queries =
                                        slot.stats.late_queries.saturating_add(late);
                                }
                                for p in first.max(now)..=last {
                                    let (start, end) = (parts.start(p), parts.last(p));
                                    let Some(part) = TimeRange::new(start, end)
                                        .ok()
                                        .and_then(|whole| range.intersect(&whole))
                                    else {
                                        continue;
                                    };
                                    let slot = slot(open, p, me, || cap.delayed(&end, port));
                                    slot.stats.queries = slot.stats.queries.saturating_add(1);
                                    let local = TimeRange::new(
                                        (part.start() - start) / parts.resolution,
                                        (part.end() - start) / parts.resolution,
                                    );
                                    if let Ok(local) = local {
                                        slot.sketch
                                            .get_or_insert_with(|| empty.clone())
                                            .observe_query(local);
                                    }
                                }
                            }
                        }
                    });
                    let closed = parts
                        .closed_before(head(r_frontier))
                        .min(parts.closed_before(head(q_frontier)));
                    while let Some(entry) = open.first_entry() {
                        if *entry.key() >= closed {
                            break;
                        }
                        let (
                            p,
                            Open {
                                cap,
                                sketch,
                                mut stats,
                            },
                        ) = entry.remove_entry();
                        let mut session = output.session(&cap);
                        if let Some(sketch) = sketch {
                            stats.sketch_bytes = sketch.memory_bytes();
                            session.give(Sketched::Sketch(p, sketch));
                        }
                        session.give(Sketched::Stats(stats));
                    }
                }
            },
        );
        let sketches = sketched.clone().flat_map(|s| match s {
            Sketched::Stats(s) => Some(s),
            Sketched::Sketch(..) => None,
        });
        let lessons = sketched.flat_map(|s| match s {
            Sketched::Sketch(p, sketch) => Some((p, sketch)),
            Sketched::Stats(_) => None,
        });
        let reports = solve(lessons, index.clone(), *config, parts, solver_cell);
        let allocations = reports
            .clone()
            .map(|r| (r.partition, r.allocation))
            .broadcast();
        let streams = AllocatorStreams {
            allocations,
            reports,
            sketches,
        };
        Ok((streams, checkpoint))
    }
}
