//! The allocation feedback loop without a cycle (DESIGN.md §3): the allocator side operator learns
//! each partition's d_i (FM sketches) and f_i (probe counters), and the index applies what it
//! learned to the partition after next's start. After two partitions the index runs with the
//! learned allocation: its per-level bit counts are the announced ones, not the configured uniform
//! ones, with 1 and 2 workers alike.

// Test helpers outside #[test] functions unwrap setup results: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use chronobloom::core::hash::mix64;
use chronobloom::core::temporal::{Allocation, TimeRange};
use chronobloom::operators::stats::EpochStats;
use chronobloom::operators::timely;
use chronobloom::operators::{
    AllocationReport, AllocationSource, Allocator, AllocatorConfig, IndexConfig, Lag, TemporalIndex,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
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
