//! The sketch side operators (DESIGN.md §3, "Feedback without cycles"): the allocations the
//! [`Allocator`] emits are exactly those a single-threaded [`OnlineStrategy`] computes from the same
//! input, for 1, 2 and 4 worker threads and for 2 processes; learned allocations favour the levels
//! short queries probe; and the dataflow completes when partitions have no records or no queries.
#![allow(clippy::unwrap_used)]

mod support;

use chronobloom::core::alloc::OnlineStrategy;
use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{Allocation, AllocationStrategy, TimeRange};
use chronobloom::operators::timely;
use chronobloom::operators::{
    AllocationReport, AllocationSource, Allocator, AllocatorConfig, IndexConfig, Lag, SketchStats,
};
use chronobloom::synth::splitmix;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const PARTITION: u64 = 256;
const PARTITIONS: u64 = 6;
const BITS: u64 = 40_000;
const HASHES: u32 = 4;
const SEED: u64 = 5;
const BITMAPS: usize = 32;
/// Ticks driven; the last 40 are past the horizon (1536).
const TICKS: u64 = PARTITION * PARTITIONS + 40;

fn index_config() -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(32)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .bits(BITS)
        .hashes(HASHES)
        .seed(SEED)
        .build()
        .unwrap()
}

fn allocator_config(lag: Lag) -> AllocatorConfig {
    AllocatorConfig::new(lag).with_bitmaps(BITMAPS)
}

/// Records `(tick, key)` and queries `(issued, key, range)`, both sorted by tick.
#[derive(Clone, Default)]
struct Workload {
    records: Vec<(u64, u64)>,
    queries: Vec<(u64, u64, TimeRange)>,
}

/// Records everywhere but partition 3 (silent) and past the horizon; short queries about the
/// recent past (some crossing a partition boundary, so partly late), a few long ones about the
/// future, and none issued during partition 4.
fn workload() -> Workload {
    let mut s = 17;
    let mut wl = Workload::default();
    for t in 0..TICKS {
        if t / PARTITION != 3 {
            for _ in 0..splitmix(&mut s) % 5 {
                wl.records.push((t, splitmix(&mut s) % 300));
            }
        }
        if t / PARTITION == 4 {
            continue;
        }
        for _ in 0..splitmix(&mut s) % 3 {
            let key = splitmix(&mut s) % 600;
            let range = if splitmix(&mut s).is_multiple_of(20) {
                TimeRange::new(t, t + 300 + splitmix(&mut s) % 700).unwrap()
            } else {
                let len = 1 + splitmix(&mut s) % 6;
                TimeRange::new(t.saturating_sub(len - 1), t).unwrap()
            };
            wl.queries.push((t, key, range));
        }
    }
    wl
}

#[derive(Default, Serialize, Deserialize)]
struct Outcome {
    /// (worker, time, partition, allocation)
    allocations: Vec<(usize, u64, u64, Allocation)>,
    /// (time, report), worker 0 only
    reports: Vec<(u64, AllocationReport)>,
    sketches: Vec<SketchStats>,
}

/// Runs the allocator on this process's workers; worker `w` of `n` gets every `n`-th record and
/// query.
fn run(timely_config: timely::Config, lag: Lag, wl: Workload) -> Outcome {
    let guards = timely::execute(timely_config, move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let out = Rc::new(RefCell::new(Outcome::default()));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let streams = records
                .allocator(queries, &index_config(), &allocator_config(lag))
                .unwrap();
            let (o1, o2, o3) = (out.clone(), out.clone(), out.clone());
            streams
                .allocations
                .inspect_core(move |e| {
                    if let Ok((stamp, data)) = e {
                        let t = *stamp.least().unwrap();
                        for (p, a) in data {
                            o1.borrow_mut().allocations.push((me, t, *p, a.clone()));
                        }
                    }
                })
                .probe_with(&probe);
            streams
                .reports
                .inspect_core(move |e| {
                    if let Ok((stamp, data)) = e {
                        let t = *stamp.least().unwrap();
                        for r in data {
                            o2.borrow_mut().reports.push((t, r.clone()));
                        }
                    }
                })
                .probe_with(&probe);
            streams
                .sketches
                .inspect(move |s| o3.borrow_mut().sketches.push(s.clone()))
                .probe_with(&probe);
            (r_in, q_in)
        });
        for (i, &(t, key)) in wl.records.iter().enumerate() {
            if i % peers == me {
                r_in.advance_to(t);
                r_in.send(key);
            }
        }
        for (i, &(t, key, range)) in wl.queries.iter().enumerate() {
            if i % peers == me {
                q_in.advance_to(t);
                q_in.send((key, range));
            }
            worker.step();
        }
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
        out.take()
    })
    .unwrap();
    let mut all = Outcome::default();
    for o in guards.join() {
        let o = o.unwrap();
        all.allocations.extend(o.allocations);
        all.reports.extend(o.reports);
        all.sketches.extend(o.sketches);
    }
    all
}

/// What a single-threaded [`OnlineStrategy`] learns from the same input, with the allocator's
/// attribution: records on local ticks, each query's range split by partition and counted toward
/// the partitions still open when it was issued. Returns the expected (partition, allocation)
/// pairs and the statistics each learned allocation came from.
type Expected = (
    BTreeMap<u64, Allocation>,
    BTreeMap<u64, Vec<chronobloom::core::alloc::FilterStats>>,
);

fn reference(lag: Lag, wl: &Workload) -> Expected {
    let cfg = index_config();
    let levels = cfg.allocation().shapes().len() as u32;
    let mut online =
        OnlineStrategy::new(levels, lag.partitions(), HASHES, 16, BITMAPS, SEED).unwrap();
    let mut seen = BTreeSet::new();
    for &(t, key) in &wl.records {
        let p = t / PARTITION;
        if p < PARTITIONS {
            online.observe_insert(p, KeyHash::of(&key, SEED), t % PARTITION);
            seen.insert(p);
        }
    }
    for &(issued, _, range) in &wl.queries {
        let first = (range.start() / PARTITION).max(issued / PARTITION);
        let last = (range.end() / PARTITION).min(PARTITIONS - 1);
        for p in first..=last {
            let part = TimeRange::new(p * PARTITION, p * PARTITION + PARTITION - 1).unwrap();
            let r = range.intersect(&part).unwrap();
            let local = TimeRange::new(r.start() - p * PARTITION, r.end() - p * PARTITION).unwrap();
            online.observe_query(p, local);
            seen.insert(p);
        }
    }
    let lag = lag.partitions();
    let due: BTreeSet<u64> = (0..lag)
        .chain(seen.iter().map(|p| p + lag))
        .filter(|&q| q < PARTITIONS)
        .collect();
    let (mut allocations, mut learned) = (BTreeMap::new(), BTreeMap::new());
    for q in due {
        allocations.insert(q, online.allocation(q, levels, BITS).unwrap());
        if let Some(stats) = q.checked_sub(lag).and_then(|p| online.learned(p)) {
            learned.insert(q, stats);
        }
    }
    (allocations, learned)
}

/// Every worker got each expected allocation once, at its partition's first tick; worker 0 made
/// each decision once, from the same statistics as the single-threaded strategy.
/// `exact_stats`: compare the learned statistics bit for bit (not after a JSON round trip).
fn check(out: &Outcome, expected: &Expected, workers: usize, what: &str, exact_stats: bool) {
    let (allocations, learned) = expected;
    for w in 0..workers {
        let got: Vec<(u64, u64, &Allocation)> = out
            .allocations
            .iter()
            .filter(|a| a.0 == w)
            .map(|(_, t, p, a)| (*t, *p, a))
            .collect();
        let want: Vec<(u64, u64, &Allocation)> = allocations
            .iter()
            .map(|(p, a)| (p * PARTITION, *p, a))
            .collect();
        assert_eq!(got, want, "{what}: worker {w} of {workers}");
    }
    assert_eq!(out.allocations.len(), workers * allocations.len(), "{what}");
    let reports: BTreeMap<u64, &AllocationReport> =
        out.reports.iter().map(|(_, r)| (r.partition, r)).collect();
    assert_eq!(
        reports.len(),
        out.reports.len(),
        "{what}: one decision each"
    );
    for (q, r) in &reports {
        assert_eq!(
            Some(&r.allocation),
            allocations.get(q),
            "{what}: report {q}"
        );
        match learned.get(q) {
            Some(stats) => {
                if exact_stats {
                    assert_eq!(&r.learned, stats, "{what}: learned stats of {q}");
                }
                assert!(r.sketches >= 1 && r.sketches <= workers as u64, "{what}");
            }
            None => assert_eq!(r.source, AllocationSource::Configured, "{what}"),
        }
    }
}

#[test]
fn allocations_equal_the_single_threaded_online_strategy_for_1_2_4_workers() {
    let wl = workload();
    for lag in [Lag::Simple, Lag::NoWait] {
        let expected = reference(lag, &wl);
        // Partitions 0..lag are configured; partition 3 has queries but no records; nobody asks
        // during partition 4; the last lag partitions teach nothing anyone uses.
        assert_eq!(expected.0.len() as u64, PARTITIONS, "{lag:?}");
        for workers in [1, 2, 4] {
            let out = run(timely::Config::process(workers), lag, wl.clone());
            check(
                &out,
                &expected,
                workers,
                &format!("{lag:?}, {workers} workers"),
                true,
            );
            let sources: Vec<&AllocationSource> = {
                let mut r: Vec<_> = out.reports.iter().map(|(_, r)| r).collect();
                r.sort_by_key(|r| r.partition);
                r.into_iter().map(|r| &r.source).collect()
            };
            let from_3 = sources[3 + lag.partitions() as usize];
            assert_eq!(
                from_3,
                &AllocationSource::NothingLearned { from: 3 },
                "{lag:?}"
            );
            // Per-worker sketching adds up to the input: every record below the horizon once.
            let records: u64 = out.sketches.iter().map(|s| s.records).sum();
            let beyond: u64 = out.sketches.iter().map(|s| s.beyond_horizon).sum();
            let below = wl.records.iter().filter(|r| r.0 < PARTITION * PARTITIONS);
            assert_eq!(records, below.count() as u64);
            assert_eq!(beyond, wl.records.len() as u64 - records);
            assert!(out.sketches.iter().any(|s| s.late_queries > 0));
            assert!(out
                .sketches
                .iter()
                .all(|s| (s.sketch_bytes == 0) == (s.records == 0 && s.queries == 0)));
        }
    }
}

#[test]
fn learned_allocations_favour_the_fine_levels_short_queries_probe() {
    let wl = workload();
    let out = run(timely::Config::process(1), Lag::Simple, wl);
    let uniform = index_config().allocation().clone();
    let levels = uniform.shapes().len() as u64;
    let learned: Vec<&AllocationReport> = out
        .reports
        .iter()
        .map(|(_, r)| r)
        // Partitions 0..3 saw short queries (nobody asks during partition 4: partition 5 learns
        // from the long queries issued earlier, partition 3 has no records).
        .filter(|r| matches!(r.source, AllocationSource::Learned { from } if from < 3))
        .collect();
    assert_eq!(learned.len(), 3);
    for r in learned {
        let bits: Vec<u64> = r.allocation.shapes().iter().map(|s| s.bits).collect();
        assert_ne!(r.allocation, uniform);
        assert_eq!(r.allocation.total_bits(), BITS);
        // Queries of 1..6 ticks probe levels 0..2 (and, rarely, long ones higher levels): level 0
        // gets at least 1.5 times its uniform share.
        assert!(
            2 * bits[0] > 3 * BITS / levels,
            "partition {}: {bits:?}",
            r.partition
        );
        assert!(bits[0] > bits[levels as usize - 1], "{bits:?}");
    }
}

/// Runs with records only in `record_parts` and queries only in `query_parts`, plus one record at
/// `until` (past the horizon, or in the last partition), and checks the allocations.
fn sparse(workers: usize, lag: Lag, record_parts: &[u64], query_parts: &[u64], until: Option<u64>) {
    let mut wl = Workload::default();
    for &p in record_parts {
        wl.records
            .extend((0..20).map(|i| (p * PARTITION + i * 7, i)));
    }
    for &p in query_parts {
        let t = p * PARTITION + 9;
        wl.queries.push((t, 1, TimeRange::point(t)));
    }
    wl.records.extend(until.map(|t| (t, 0)));
    wl.records.sort();
    wl.queries.sort_by_key(|q| q.0);
    let expected = reference(lag, &wl);
    let out = run(timely::Config::process(workers), lag, wl);
    check(
        &out,
        &expected,
        workers,
        &format!("{workers} workers, {lag:?}, records {record_parts:?}, queries {query_parts:?}"),
        true,
    );
}

#[test]
fn completes_when_partitions_have_no_records_or_no_queries() {
    for workers in [1, 2, 4] {
        for lag in [Lag::Simple, Lag::NoWait] {
            // nothing at all until the end (the one record is past the horizon)
            sparse(workers, lag, &[], &[], Some(TICKS));
            // records but no queries; queries but no records; gaps in between
            sparse(workers, lag, &[0, 4], &[], Some(TICKS));
            sparse(workers, lag, &[], &[1, 2], None);
            sparse(
                workers,
                lag,
                &[2],
                &[0, 5],
                Some(PARTITIONS * PARTITION - 1),
            );
            // inputs closed at time 0
            sparse(workers, lag, &[], &[], None);
        }
    }
}

#[test]
fn settings_that_cannot_make_a_sketch_are_refused_before_the_dataflow_runs() {
    let results = timely::execute_directly(|worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_r, records) = scope.new_input::<Vec<u64>>();
            let (_q, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let cfg = index_config();
            let bad_bitmaps = AllocatorConfig::new(Lag::Simple).with_bitmaps(0);
            let bad_k = AllocatorConfig::new(Lag::Simple).with_k_max(0);
            [
                records
                    .clone()
                    .allocator(queries.clone(), &cfg, &bad_bitmaps)
                    .is_err(),
                records.allocator(queries, &cfg, &bad_k).is_err(),
            ]
        })
    });
    assert_eq!(results, [true, true]);
}

/// Set in the two child processes of [`two_processes_over_loopback`]: the timely arguments.
const CHILD_ENV: &str = "CHRONOBLOOM_SKETCH_OPS_CHILD_ARGS";
const RESULT_PREFIX: &str = "CHRONOBLOOM-SKETCH-OUTCOME ";

/// One process of the two-process run; does nothing unless started by the parent test.
#[test]
fn two_process_child() {
    let Ok(args) = std::env::var(CHILD_ENV) else {
        return;
    };
    let timely_config = timely::Config::from_args(args.split(' ').map(String::from)).unwrap();
    let out = run(timely_config, Lag::Simple, workload());
    println!("\n{RESULT_PREFIX}{}", serde_json::to_string(&out).unwrap());
}

#[test]
fn two_processes_over_loopback() {
    let mut all = Outcome::default();
    for line in support::two_processes("two_process_child", CHILD_ENV, RESULT_PREFIX) {
        let out: Outcome = serde_json::from_str(&line).unwrap();
        all.allocations.extend(out.allocations);
        all.reports.extend(out.reports);
    }
    check(
        &all,
        &reference(Lag::Simple, &workload()),
        2,
        "two processes",
        false,
    );
}
