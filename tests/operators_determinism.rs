//! Determinism of the temporal index dataflow (DESIGN.md §4, invariants 1, 2 and 5): the merged
//! state's digest after every epoch is bit-identical for 1, 2 and 4 worker threads and for 2
//! processes over 127.0.0.1, and equals the digest of single-threaded core PBF-2s built from the
//! same input; query answers (and their probe counts) are identical too, with no false negative.
#![allow(clippy::unwrap_used)]

mod support;

use chronobloom::core::bloom::Layout;
use chronobloom::core::temporal::{Allocation, Pbf2, TemporalFilter, TimeRange};
use chronobloom::operators::digest::{state_digest, EpochDigest};
use chronobloom::operators::stats::{EpochStats, RejectReason};
use chronobloom::operators::timely;
use chronobloom::operators::{
    AllocationLag, IndexConfig, IndexConfigBuilder, Placement, TemporalIndex,
};
use chronobloom::synth::splitmix;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

#[path = "operators_determinism/harness.rs"]
mod harness;
use harness::*;

#[test]
fn digests_and_answers_match_the_single_threaded_pbf2_for_1_2_4_threads() {
    let wl = workload();
    let cfg = config(Placement::Replicated);
    let refr = reference(&cfg, &wl);
    for threads in [1, 2, 4] {
        let out = run(timely::Config::process(threads), cfg.clone(), wl.clone());
        check(&out, &refr, &wl, threads);
        check_stats(&out, &refr, threads, Placement::Replicated);
        let last = out.digests.last().unwrap();
        println!(
            "{threads} thread(s): {} digests, final digest after epoch {} = {:#018x}",
            out.digests.len(),
            last.epoch,
            last.digest
        );
    }
}

/// The blocked layout (one 512-bit block per key and level): the same equalities, for both
/// placements, against single-threaded blocked PBF-2s.
#[test]
fn blocked_layout_matches_the_single_threaded_blocked_pbf2() {
    let wl = workload();
    let blocked = |placement| {
        builder(placement)
            .bits(8 * 16_384)
            .hashes(3)
            .layout(Layout::Blocked)
            .build()
            .unwrap()
    };
    let refr = reference(&blocked(Placement::Replicated), &wl);
    let standard = reference(&wide(Placement::Replicated), &wl);
    assert_ne!(
        refr.digests, standard.digests,
        "the layout changes the bits"
    );
    for (placement, threads) in [
        (Placement::Replicated, 1),
        (Placement::Replicated, 2),
        (Placement::Sharded, 2),
        (Placement::Sharded, 4),
    ] {
        let out = run(
            timely::Config::process(threads),
            blocked(placement),
            wl.clone(),
        );
        check(&out, &refr, &wl, threads);
        check_stats(&out, &refr, threads, placement);
    }
}

/// An index counting time in points of 5 ticks (20 per partition, 6 levels instead of 8), and
/// of 4 ticks (points straddle the 10-tick epochs): the dataflow equals single-threaded PBF-2s
/// over points for both placements and layouts, and no query whose range holds one of its key's
/// records answers "absent".
#[test]
fn coarser_resolution_matches_the_single_threaded_pbf2_over_points() {
    let wl = workload();
    for (layout, resolution) in [
        (Layout::Standard, 5),
        (Layout::Blocked, 5),
        (Layout::Standard, 4),
        (Layout::Blocked, 4),
    ] {
        let cfg = |placement| {
            builder(placement)
                .resolution(resolution)
                .bits(8 * 16_384)
                .hashes(3)
                .layout(layout)
                .build()
                .unwrap()
        };
        // 20 or 25 points: 6 levels
        assert_eq!(cfg(Placement::Replicated).allocation().shapes().len(), 6);
        let refr = reference(&cfg(Placement::Replicated), &wl);
        for (placement, threads) in [
            (Placement::Replicated, 1),
            (Placement::Replicated, 2),
            (Placement::Sharded, 2),
            (Placement::Sharded, 4),
        ] {
            let out = run(timely::Config::process(threads), cfg(placement), wl.clone());
            check(&out, &refr, &wl, threads);
            check_stats(&out, &refr, threads, placement);
            let hits: Vec<&Flat> = out
                .answers
                .iter()
                .filter(|&&(key, start, end, ..)| {
                    wl.records.iter().any(|&(t, k)| {
                        k == key && (start..=end).contains(&t) && t < PARTITION * PARTITIONS
                    })
                })
                .collect();
            assert!(
                hits.len() > 20,
                "the workload has queries that must find their key"
            );
            let missed = hits.iter().filter(|a| !a.5).count();
            assert_eq!(
                missed, 0,
                "{layout:?} resolution {resolution} {placement:?} {threads} threads"
            );
        }
    }
}

#[test]
fn sharded_equals_replicated_and_the_reference_for_1_2_4_threads() {
    let wl = workload();
    let refr = reference(&wide(Placement::Replicated), &wl);
    let replicated = run(
        timely::Config::process(2),
        wide(Placement::Replicated),
        wl.clone(),
    );
    check(&replicated, &refr, &wl, 2);
    for threads in [1, 2, 4] {
        let out = run(
            timely::Config::process(threads),
            wide(Placement::Sharded),
            wl.clone(),
        );
        check(&out, &refr, &wl, threads);
        check_stats(&out, &refr, threads, Placement::Sharded);
        assert_eq!(out.answers, replicated.answers);
        let finals = |o: &Outcome| {
            o.digests
                .iter()
                .map(|d| (d.epoch, d.digest))
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(finals(&out), finals(&replicated));
        // each worker holds only its share of every level
        let held: BTreeSet<u64> = out
            .stats
            .iter()
            .filter(|s| s.epoch == 0)
            .map(|s| s.merged_bits)
            .collect();
        let full: u64 = 8 * 16_384;
        assert!(
            held.iter()
                .all(|&b| b <= full.div_ceil(threads as u64) + 4_096),
            "{held:?}"
        );
        println!(
            "sharded, {threads} thread(s): final digest {:#018x}",
            out.digests.last().unwrap().digest
        );
    }
}

/// Worker 0 owning fewer levels (a lead share of 40%) or none (0%): the same digests and answers
/// as the reference, and worker 0 holds fewer bits than each other worker (none at 0%, when no
/// worker ships it records, so fewer bytes move in all).
#[test]
fn a_lead_share_moves_levels_off_worker_0_and_changes_nothing_else() {
    let wl = workload();
    let refr = reference(&wide(Placement::Replicated), &wl);
    for threads in [2, 4] {
        let mut sent = Vec::new();
        for lead in [40, 0] {
            let cfg = builder(Placement::Sharded)
                .bits(8 * 16_384)
                .hashes(3)
                .lead_share(lead)
                .build()
                .unwrap();
            let out = run(timely::Config::process(threads), cfg, wl.clone());
            check(&out, &refr, &wl, threads);
            check_stats(&out, &refr, threads, Placement::Sharded);
            let held: BTreeMap<u32, u64> = out
                .stats
                .iter()
                .filter(|s| s.epoch == 0)
                .map(|s| (s.worker, s.merged_bits))
                .collect();
            assert_eq!(held.len(), threads);
            assert!(
                (1..threads as u32).all(|w| held[&0] < held[&w]),
                "{threads} threads, lead {lead}: {held:?}"
            );
            if lead == 0 {
                assert_eq!(held[&0], 0, "{threads} threads: {held:?}");
            }
            sent.push(out.stats.iter().map(|s| s.local.bytes_sent).sum::<u64>());
        }
        assert!(sent[1] < sent[0], "{threads} threads: bytes sent {sent:?}");
    }
}

/// Bits of each level with bits, per partition, as the stats report them (summed over workers'
/// shards of one epoch).
fn level_bits(out: &Outcome, epoch: u64) -> Vec<u64> {
    let mut bits: BTreeMap<u32, u64> = BTreeMap::new();
    for s in out.stats.iter().filter(|s| s.epoch == epoch) {
        for l in &s.levels {
            *bits.entry(l.level).or_default() += l.bits;
        }
    }
    bits.into_values().collect()
}

#[test]
fn announced_allocations_are_used_from_the_partition_they_name() {
    let wl = workload();
    let announced: BTreeMap<u64, Allocation> = plan().into_iter().collect();
    let expected = |a: &Allocation, workers: u64| -> Vec<u64> {
        a.shapes().iter().map(|s| s.bits * workers).collect()
    };
    for (placement, threads) in [
        (Placement::Replicated, 1),
        (Placement::Replicated, 2),
        (Placement::Sharded, 2),
    ] {
        let cfg = config(placement);
        let refr = reference_with(&cfg, &wl, &announced);
        let out = run_with(
            timely::Config::process(threads),
            cfg.clone(),
            wl.clone(),
            Some(plan()),
        );
        check(&out, &refr, &wl, threads);
        check_stats(&out, &refr, threads, placement);
        let copies = if placement == Placement::Sharded {
            1
        } else {
            threads as u64
        };
        assert_eq!(level_bits(&out, 0), expected(cfg.allocation(), copies));
        assert_eq!(level_bits(&out, 10), expected(&announced[&1], copies));
        assert_eq!(level_bits(&out, 20), expected(&announced[&2], copies));
    }
    // lagging by one partition: partition 1 keeps the configuration's, partition 2 takes 1's
    let cfg = builder(Placement::Replicated)
        .bits(24_000)
        .hashes(3)
        .allocation_lag(AllocationLag::Previous)
        .build()
        .unwrap();
    let lagged: BTreeMap<u64, Allocation> = [(2, announced[&1].clone())].into();
    let out = run_with(
        timely::Config::process(2),
        cfg.clone(),
        wl.clone(),
        Some(plan()),
    );
    check(&out, &reference_with(&cfg, &wl, &lagged), &wl, 2);
    assert_eq!(level_bits(&out, 10), expected(cfg.allocation(), 2));
    assert_eq!(level_bits(&out, 20), expected(&announced[&1], 2));
}

#[test]
fn records_waiting_for_an_allocation_are_bounded_and_counted() {
    let cfg = builder(Placement::Replicated)
        .bits(24_000)
        .max_buffered(5)
        .build()
        .unwrap();
    let (stats, refused) = timely::execute_directly(move |worker| {
        let out = Rc::new(RefCell::new(Vec::new()));
        let o = out.clone();
        let (mut r_in, mut a_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (_q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (a_in, allocations) = scope.new_input::<Vec<(u64, Allocation)>>();
            records
                .temporal_index_with_allocations(queries, allocations, &cfg)
                .stats
                .inspect(move |s| o.borrow_mut().push(s.clone()));
            (r_in, a_in)
        });
        // the allocation stream stays at tick 0 until tick 150: partition 1's records wait
        let bad = Allocation::uniform(3, 300, 2).unwrap();
        a_in.send((1, bad));
        for t in 0..200u64 {
            r_in.send(t);
            r_in.send(t + 1_000);
            r_in.advance_to(t + 1);
            if t == 150 {
                a_in.advance_to(t);
            }
            worker.step();
        }
        drop((r_in, a_in));
        while worker.step() {}
        let stats = out.take();
        let refused: u64 = stats.iter().map(|s| s.local.allocations_refused).sum();
        (stats, refused)
    });
    let full: u64 = stats
        .iter()
        .flat_map(|s| s.local.rejected.get(&RejectReason::BufferFull))
        .sum();
    let accepted: u64 = stats.iter().map(|s| s.local.records).sum();
    assert!(full > 0, "the buffer never overflowed");
    assert_eq!(accepted + full, 400);
    assert!(accepted >= 5, "the buffer holds 5 records");
    assert_eq!(
        refused, 1,
        "an allocation with the wrong number of levels is refused"
    );
}

/// Set in the two child processes of [`two_processes_over_loopback`]: the timely arguments.
const CHILD_ENV: &str = "CHRONOBLOOM_OPERATORS_CHILD_ARGS";
const RESULT_PREFIX: &str = "CHRONOBLOOM-OUTCOME ";

/// One process of the two-process run; does nothing unless started by the parent test.
#[test]
fn two_process_child() {
    let Ok(args) = std::env::var(CHILD_ENV) else {
        return;
    };
    let timely_config = timely::Config::from_args(args.split(' ').map(String::from)).unwrap();
    let out = run(timely_config, config(Placement::Replicated), workload());
    println!("\n{RESULT_PREFIX}{}", serde_json::to_string(&out).unwrap());
}

#[test]
fn two_processes_over_loopback() {
    let mut all = Outcome::default();
    for line in support::two_processes("two_process_child", CHILD_ENV, RESULT_PREFIX) {
        let out: Outcome = serde_json::from_str(&line).unwrap();
        all.digests.extend(out.digests);
        all.answers.extend(out.answers);
    }
    all.digests.sort();
    all.answers.sort();
    let wl = workload();
    let refr = reference(&config(Placement::Replicated), &wl);
    check(&all, &refr, &wl, 2);
    let last = refr.digests.iter().next_back().unwrap();
    println!(
        "two processes: final digest after epoch {} = {:#018x}",
        last.0, last.1
    );
}
