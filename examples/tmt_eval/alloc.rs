//! Building the evaluated structure with the chosen allocation.

use crate::{AllocMode, Args, Structure};
use chronobloom::core::alloc::{OnlineStrategy, Pbf1Workload, Pbf2Workload, Strategy};
use chronobloom::core::bloom::FilterShape;
use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{
    Allocation, AllocationStrategy, FixedStrategy, PartitionConfig, PartitionedPbf2, Pbf1, Pbf2,
    Sbf, TemporalFilter, Tick, TimeRange,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The structure under test and what building it cost.
pub struct Built {
    pub filter: Box<dyn TemporalFilter>,
    /// Nanoseconds per insert, for structures streamed while built.
    pub insert_ns: f64,
    pub solve: Duration,
    pub solves: u64,
    pub partitioned: Option<PartitionInfo>,
}

/// What a partitioned structure reports after the run.
pub struct PartitionInfo {
    pub partitions: usize,
    pub merges: u64,
    pub sketch_bits: u64,
}

/// Times every allocation the inner strategy makes.
pub struct Timed<S> {
    inner: S,
    total: Duration,
    calls: u64,
}

impl<S: AllocationStrategy> AllocationStrategy for Timed<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn allocation(
        &mut self,
        index: u64,
        levels: u32,
        bits: u64,
    ) -> chronobloom::Result<Allocation> {
        let t0 = Instant::now();
        let a = self.inner.allocation(index, levels, bits);
        self.total += t0.elapsed();
        self.calls += 1;
        a
    }
    fn observe_insert(&mut self, index: u64, hash: KeyHash, tick: Tick) {
        self.inner.observe_insert(index, hash, tick);
    }
    fn observe_query(&mut self, index: u64, range: TimeRange) {
        self.inner.observe_query(index, range);
    }
    fn memory_bits(&self) -> u64 {
        self.inner.memory_bits()
    }
}

fn strategy(mode: AllocMode) -> Strategy {
    match mode {
        AllocMode::Offline | AllocMode::Online => Strategy::Optimal,
        AllocMode::Proportional => Strategy::Proportional,
        AllocMode::Uniform => Strategy::Uniform,
    }
}

/// An unpartitioned structure over `0..horizon`, its allocation from exact statistics.
pub fn whole(
    args: &Args,
    horizon: Tick,
    data: &[(u64, String)],
    learn: &[TimeRange],
    distinct_pairs: u64,
) -> Result<Built, Box<dyn std::error::Error>> {
    if args.alloc == AllocMode::Online {
        return Err("--alloc online learns from earlier partitions: give --partition-len".into());
    }
    let hash = |k: &String| KeyHash::of(k.as_str(), args.seed);
    // Feeds a workload the data and the learning queries, and times solving its allocation.
    macro_rules! solved {
        ($workload:expr) => {{
            let mut w = $workload;
            for (t, k) in data {
                w.insert(hash(k), *t)?;
            }
            learn.iter().for_each(|&q| w.query(q));
            let stats = w.stats();
            let t1 = Instant::now();
            let alloc = strategy(args.alloc).allocate(&stats, args.bits, args.k_max)?;
            (alloc, t1.elapsed())
        }};
    }
    let t0 = Instant::now();
    let (filter, solve): (Box<dyn TemporalFilter>, Duration) = match args.structure {
        Structure::Sbf => {
            if args.alloc != AllocMode::Uniform {
                return Err("the SBF is a single filter: only --alloc uniform applies".into());
            }
            let k = FilterShape::optimal_hashes(args.bits, distinct_pairs, args.k_max);
            (Box::new(Sbf::new(args.bits, k, args.seed)?), t0.elapsed())
        }
        Structure::Pbf1 => {
            let (alloc, solve) = solved!(Pbf1Workload::new(horizon, args.g)?);
            (
                Box::new(Pbf1::new(horizon, args.g, &alloc, args.seed)?),
                solve,
            )
        }
        Structure::Pbf2 => {
            let (alloc, solve) = solved!(Pbf2Workload::new(horizon)?);
            (Box::new(Pbf2::new(horizon, &alloc, args.seed)?), solve)
        }
    };
    Ok(Built {
        filter,
        insert_ns: 0.0,
        solve,
        solves: 1,
        partitioned: None,
    })
}

/// A partitioned PBF-2 streamed in time order: offline, proportional and uniform allocations are
/// computed from each partition's exact statistics; online learns them from the partition before.
/// Learning queries are shown to the structure once the stream passes their end.
pub fn partitioned(
    args: &Args,
    len: Tick,
    data: &mut [(u64, String)],
    learn: &[TimeRange],
) -> Result<Built, Box<dyn std::error::Error>> {
    if args.structure != Structure::Pbf2 {
        return Err("--partition-len applies to --structure pbf2".into());
    }
    data.sort_by_key(|(t, _)| *t);
    let cfg = PartitionConfig {
        partition_len: len,
        partition_bits: args.bits,
        budget_bits: args.budget_bits,
        retention: None,
        seed: args.seed,
    };
    let levels = Pbf2::levels_for(len)?;
    if args.alloc == AllocMode::Online {
        let online = OnlineStrategy::new(levels, 1, 7.min(args.k_max), args.k_max, 256, args.seed)?;
        return stream(cfg, online, data, learn, args.seed);
    }
    // Exact d_i and f_i per partition, on partition-local ticks.
    let mut work: BTreeMap<u64, Pbf2Workload> = BTreeMap::new();
    for (t, k) in data.iter() {
        let w = match work.entry(t / len) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(Pbf2Workload::new(len)?),
        };
        w.insert(KeyHash::of(k.as_str(), args.seed), t % len)?;
    }
    for q in learn {
        for p in q.start() / len..=q.end() / len {
            let part = TimeRange::new(p * len, p * len + (len - 1))?;
            if let (Some(r), Some(w)) = (q.intersect(&part), work.get_mut(&p)) {
                w.query(TimeRange::new(r.start() - p * len, r.end() - p * len)?);
            }
        }
    }
    let mut fixed = BTreeMap::new();
    let mut solve = Duration::ZERO;
    for (p, w) in work.iter_mut() {
        let stats = w.stats();
        let t0 = Instant::now();
        fixed.insert(
            *p,
            strategy(args.alloc).allocate(&stats, args.bits, args.k_max)?,
        );
        solve += t0.elapsed();
    }
    let solves = fixed.len() as u64;
    let name = match args.alloc {
        AllocMode::Offline => "offline",
        AllocMode::Proportional => "proportional",
        _ => "uniform",
    };
    let mut built = stream(cfg, FixedStrategy::new(name, fixed), data, learn, args.seed)?;
    built.solve = solve;
    built.solves = solves;
    Ok(built)
}

fn stream<S: AllocationStrategy + 'static>(
    cfg: PartitionConfig,
    strategy: S,
    data: &[(u64, String)],
    learn: &[TimeRange],
    seed: u64,
) -> Result<Built, Box<dyn std::error::Error>> {
    let timed = Timed {
        inner: strategy,
        total: Duration::ZERO,
        calls: 0,
    };
    let mut pbf = PartitionedPbf2::new(cfg, timed)?;
    let mut by_end: Vec<TimeRange> = learn.to_vec();
    by_end.sort_by_key(|q| q.end());
    let mut next = 0;
    let t0 = Instant::now();
    for (t, k) in data {
        while next < by_end.len() && by_end[next].end() < *t {
            pbf.observe_query(by_end[next]);
            next += 1;
        }
        pbf.insert_hash(KeyHash::of(k.as_str(), seed), *t)?;
    }
    let insert_ns = t0.elapsed().as_nanos() as f64 / data.len().max(1) as f64;
    let (solve, solves) = (pbf.strategy().total, pbf.strategy().calls);
    let info = PartitionInfo {
        partitions: pbf.partitions(),
        merges: pbf.merges(),
        sketch_bits: pbf.strategy_bits(),
    };
    Ok(Built {
        filter: Box::new(pbf),
        insert_ns,
        solve,
        solves,
        partitioned: Some(info),
    })
}
