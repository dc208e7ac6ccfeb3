//! The allocation feedback loop without a cycle (DESIGN.md §3): the allocator side operator learns
//! each partition's d_i (FM sketches) and f_i (probe counters), and the index applies what it
//! learned to the partition after next's start. After two partitions the index runs with the
//! learned allocation: its per-level bit counts are the announced ones, not the configured uniform
//! ones, with 1 and 2 workers alike. Allocator and index stopped at a checkpoint boundary and
//! resumed from their snapshots learn and build exactly what an uninterrupted run does.

// Test helpers outside #[test] functions unwrap setup results: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use chronobloom::core::hash::mix64;
use chronobloom::core::temporal::{Allocation, TimeRange};
use chronobloom::operators::stats::EpochStats;
use chronobloom::operators::timely;
use chronobloom::operators::Error as OpError;
use chronobloom::operators::{
    AllocationReport, AllocationSource, Allocator, AllocatorConfig, AllocatorSnapshot, IndexConfig,
    IndexSnapshot, Lag, SketchStats, TemporalIndex, TimedTemporalIndex,
};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const EPOCH: u64 = 16;
const PARTITION: u64 = 256;
const PARTITIONS: u64 = 4;

fn config() -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .bits(40_000)
        .hashes(4)
        .seed(3)
        .build()
        .unwrap()
}

#[derive(Default)]
struct Seen {
    reports: Vec<AllocationReport>,
    stats: Vec<EpochStats>,
}

/// Runs allocator + index over four partitions of records (8 per tick, keys repeating within
/// sessions) and short queries (1 to 8 ticks); returns what worker 0 saw and every worker's stats.
fn run(workers: usize) -> (BTreeMap<u64, Allocation>, Vec<EpochStats>) {
    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let cfg = config();
        let seen = Rc::new(RefCell::new(Seen::default()));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let learned = records
                .clone()
                .allocator(queries.clone(), &cfg, &AllocatorConfig::new(Lag::Simple))
                .unwrap();
            let index = records.temporal_index_with_allocations(queries, learned.allocations, &cfg);
            let (s1, s2) = (seen.clone(), seen.clone());
            learned
                .reports
                .inspect(move |r| s1.borrow_mut().reports.push(r.clone()))
                .probe_with(&probe);
            index
                .stats
                .inspect(move |s| s2.borrow_mut().stats.push(s.clone()))
                .probe_with(&probe);
            index.answers.probe_with(&probe);
            (r_in, q_in)
        });
        let mut n = 0u64;
        for t in 0..PARTITION * PARTITIONS {
            for _ in 0..8 {
                if n % peers as u64 == me as u64 {
                    r_in.send(mix64(n / 4) % 500); // each key four times in a row
                }
                n += 1;
            }
            if t % 2 == 0 && (t / 2) % peers as u64 == me as u64 {
                let len = 1 + mix64(t) % 8;
                let start = t.saturating_sub(len);
                q_in.send((
                    mix64(t) % 600,
                    TimeRange::new(start, start + len - 1).unwrap(),
                ));
            }
            r_in.advance_to(t + 1);
            q_in.advance_to(t + 1);
            if (t + 1) % EPOCH == 0 {
                worker.step_while(|| probe.less_than(r_in.time()));
            }
        }
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
        Rc::try_unwrap(seen)
            .map(RefCell::into_inner)
            .unwrap_or_default()
    })
    .unwrap();
    let mut allocations = BTreeMap::new();
    let mut stats = Vec::new();
    for seen in guards.join() {
        let seen = seen.unwrap();
        for r in seen.reports {
            if matches!(r.source, AllocationSource::Learned { .. }) {
                allocations.insert(r.partition, r.allocation);
            }
        }
        stats.extend(seen.stats);
    }
    (allocations, stats)
}

/// Per-level bits of the merged state in each partition's epochs, as the stats report them (levels
/// given no bits are not listed: they count as 0).
fn level_bits(stats: &[EpochStats], cfg: &IndexConfig) -> BTreeMap<u64, Vec<u64>> {
    let levels = cfg.allocation().shapes().len();
    let mut out = BTreeMap::new();
    for s in stats.iter().filter(|s| !s.levels.is_empty()) {
        let mut bits = vec![0; levels];
        for l in &s.levels {
            bits[l.level as usize] = l.bits;
        }
        let prev = out.insert(cfg.partition_of_epoch(s.epoch), bits.clone());
        assert!(
            prev.is_none_or(|p| p == bits),
            "one allocation per partition"
        );
    }
    out
}

#[test]
fn after_two_partitions_the_index_runs_with_the_learned_allocation() {
    let cfg = config();
    let uniform: Vec<u64> = cfg.allocation().shapes().iter().map(|s| s.bits).collect();
    let mut learned_by_workers = Vec::new();
    for workers in [1, 2] {
        let (learned, stats) = run(workers);
        let applied = level_bits(&stats, &cfg);
        // Partitions 0 and 1 use the configured allocation; 2 and 3 what 1 and 2 taught.
        assert_eq!(
            applied.get(&0),
            Some(&uniform),
            "{workers} workers: partition 0"
        );
        for p in [2, 3] {
            let announced: Vec<u64> = learned[&p].shapes().iter().map(|s| s.bits).collect();
            assert_eq!(
                applied.get(&p),
                Some(&announced),
                "{workers} workers: partition {p}"
            );
            assert_ne!(
                announced, uniform,
                "{workers} workers: partition {p} learned something"
            );
            // Short queries probe the fine levels: they get more than their uniform share.
            assert!(
                announced[0] > uniform[0],
                "{workers} workers: {announced:?}"
            );
        }
        learned_by_workers.push(learned);
    }
    assert_eq!(
        learned_by_workers[0], learned_by_workers[1],
        "1 and 2 workers learn the same"
    );
}

/// What a resumable run saw: allocation reports by partition, sketch statistics by (partition,
/// worker), digests `(worker, epoch, digest)`; and the (allocator, index) snapshot bytes per
/// worker taken at the stop.
type Resumed = (
    BTreeMap<u64, AllocationReport>,
    BTreeMap<(u64, u32), SketchStats>,
    Vec<(u32, u64, u64)>,
    Vec<(Vec<u8>, Vec<u8>)>,
);

/// Allocator and index, resumable: the records and queries with ticks in `[from, stop)`,
/// restoring `restore` first and snapshotting at `stop`.
fn run_resumable(
    workers: usize,
    from: u64,
    stop: Option<u64>,
    restore: Option<Vec<(Vec<u8>, Vec<u8>)>>,
) -> Resumed {
    let out = Arc::new(Mutex::new((
        BTreeMap::new(),
        BTreeMap::new(),
        Vec::new(),
        vec![(Vec::new(), Vec::new()); workers],
    )));
    let o = out.clone();
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let cfg = config_with_digest();
        let (a_r, i_r) = match &restore {
            Some(r) => (
                Some(AllocatorSnapshot::from_bytes(&r[me].0).unwrap()),
                Some(IndexSnapshot::from_bytes(&r[me].1).unwrap()),
            ),
            None => (None, None),
        };
        let probe = ProbeHandle::new();
        // What the dataflow emits once stopped at the snapshot (flushing on shutdown what a
        // crash would lose) is not part of the run.
        let recording = Rc::new(Cell::new(true));
        let (o1, o2, o3) = (o.clone(), o.clone(), o.clone());
        let (rec1, rec2, rec3) = (recording.clone(), recording.clone(), recording.clone());
        let (mut r_in, mut q_in, a_h, i_h) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let keys = records.clone().map(|(_, k)| k);
            let (learned, a_h) = keys
                .allocator_resumable(
                    queries.clone(),
                    &cfg,
                    &AllocatorConfig::new(Lag::Simple),
                    a_r,
                )
                .unwrap();
            let (index, i_h) = records
                .temporal_index_timed_with_allocations_resumable(
                    queries,
                    learned.allocations,
                    &cfg,
                    i_r,
                )
                .unwrap();
            learned
                .reports
                .inspect(move |r| {
                    if rec1.get() {
                        o1.lock().unwrap().0.insert(r.partition, r.clone());
                    }
                })
                .probe_with(&probe);
            learned
                .sketches
                .inspect(move |s| {
                    if rec2.get() {
                        o2.lock()
                            .unwrap()
                            .1
                            .insert((s.partition, s.worker), s.clone());
                    }
                })
                .probe_with(&probe);
            index
                .digests
                .inspect(move |g| {
                    if rec3.get() {
                        o3.lock().unwrap().2.push((g.worker, g.epoch, g.digest));
                    }
                })
                .probe_with(&probe);
            index.answers.probe_with(&probe);
            (r_in, q_in, a_h, i_h)
        });
        r_in.advance_to(from);
        q_in.advance_to(from);
        let mut n = 0u64;
        for t in 0..PARTITION * PARTITIONS {
            let live = t >= from && stop.is_none_or(|s| t < s);
            for _ in 0..8 {
                if live && n % peers as u64 == me as u64 {
                    r_in.send((t, mix64(n / 4) % 500));
                }
                n += 1;
            }
            if live && t % 2 == 0 && (t / 2) % peers as u64 == me as u64 {
                let len = 1 + mix64(t) % 8;
                let start = t.saturating_sub(len);
                q_in.send((
                    mix64(t) % 600,
                    TimeRange::new(start, start + len - 1).unwrap(),
                ));
            }
            if live && (t + 1) % EPOCH == 0 && stop.is_none_or(|s| t + 1 < s) {
                r_in.advance_to(t + 1);
                q_in.advance_to(t + 1);
                worker.step_while(|| probe.less_than(r_in.time()));
            }
        }
        if let Some(b) = stop {
            r_in.advance_to(b);
            q_in.advance_to(b);
            worker.step_while(|| probe.less_than(&b));
            let allocator = a_h.snapshot(b).unwrap().to_bytes().unwrap();
            let index = i_h.snapshot(b).unwrap().to_bytes().unwrap();
            o.lock().unwrap().3[me] = (allocator, index);
            recording.set(false);
        }
    })
    .unwrap();
    let mut out = Arc::try_unwrap(out).unwrap().into_inner().unwrap();
    out.2.sort_unstable();
    out
}

fn config_with_digest() -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .bits(40_000)
        .hashes(4)
        .digest(true)
        .seed(3)
        .build()
        .unwrap()
}

/// Stopped in partition 1 (its sketch half built, the allocation of partition 1 decided, that of
/// 2 not) and resumed from the snapshots: the same allocations, sketch statistics and per-epoch
/// digests as an uninterrupted run, with 1 and 2 workers.
#[test]
fn a_resumed_allocator_learns_what_an_uninterrupted_one_learns() {
    const BOUNDARY: u64 = PARTITION + 10 * EPOCH;
    for workers in [1, 2] {
        let (reports, stats, digests, _) = run_resumable(workers, 0, None, None);
        let (r1, s1, d1, saved) = run_resumable(workers, 0, Some(BOUNDARY), None);
        let (r2, s2, d2, _) = run_resumable(workers, BOUNDARY, None, Some(saved.clone()));
        assert!(reports
            .values()
            .any(|r| matches!(r.source, AllocationSource::Learned { .. })));
        let mut resumed_reports = r1;
        resumed_reports.extend(r2);
        assert_eq!(resumed_reports, reports, "{workers} workers: allocations");
        assert!(
            s1.keys().all(|&(p, _)| p == 0),
            "only partition 0 closed before"
        );
        let mut resumed_stats = s1;
        resumed_stats.extend(s2);
        assert_eq!(resumed_stats, stats, "{workers} workers: sketch statistics");
        let mut resumed_digests = d1;
        resumed_digests.extend(d2);
        resumed_digests.sort_unstable();
        assert!(digests.len() > 50);
        assert_eq!(resumed_digests, digests, "{workers} workers: digests");

        if workers == 2 {
            refuses_a_foreign_snapshot(&saved);
        }
    }
}

/// A snapshot restores only on its own worker (worker 1's lacks the solver worker 0 needs) and
/// with its own sketch shape: anything else is a configuration error before the dataflow runs.
fn refuses_a_foreign_snapshot(saved: &[(Vec<u8>, Vec<u8>)]) {
    let other_worker = AllocatorSnapshot::from_bytes(&saved[1].0).unwrap();
    let own = AllocatorSnapshot::from_bytes(&saved[0].0).unwrap();
    let cases = [
        (other_worker, AllocatorConfig::new(Lag::Simple)),
        (own, AllocatorConfig::new(Lag::Simple).with_bitmaps(16)),
    ];
    timely::execute_directly(move |worker| {
        for (snapshot, allocator) in cases {
            worker.dataflow::<u64, _, _>(|scope| {
                let (_, records) = scope.new_input::<Vec<u64>>();
                let (_, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
                let refused = records
                    .allocator_resumable(queries, &config_with_digest(), &allocator, Some(snapshot))
                    .err();
                assert!(
                    matches!(
                        refused,
                        Some(OpError::Config {
                            config: "allocator",
                            name: "restore",
                            ..
                        })
                    ),
                    "{refused:?}"
                );
            });
        }
    });
}
