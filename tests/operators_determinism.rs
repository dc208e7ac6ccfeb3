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

const EPOCH: u64 = 10;
const PARTITION: u64 = 100;
const PARTITIONS: u64 = 3;
/// Ticks driven; the last 20 are past the horizon (300) and their records are rejected.
const TICKS: u64 = 320;
const KEYS: u64 = 400;

fn config(placement: Placement) -> IndexConfig {
    builder(placement).bits(24_000).hashes(3).build().unwrap()
}

fn builder(placement: Placement) -> IndexConfigBuilder {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .seed(11)
        .placement(placement)
}

/// A configuration whose levels span several digest blocks, so 2 and 4 shards split them.
fn wide(placement: Placement) -> IndexConfig {
    builder(placement)
        .bits(8 * 16_384)
        .hashes(3)
        .build()
        .unwrap()
}

/// Allocations announced by worker 0: `(partition, allocation)`, sent at the partition's start.
type Plan = Vec<(u64, Allocation)>;

fn plan() -> Plan {
    vec![
        (1, Allocation::uniform(8, 40_000, 2).unwrap()),
        (2, Allocation::uniform(8, 16_000, 5).unwrap()),
    ]
}

/// Records `(tick, key)` and queries `(issued, key, range)`, both sorted by tick.
#[derive(Clone)]
struct Workload {
    records: Vec<(u64, u64)>,
    queries: Vec<(u64, u64, TimeRange)>,
}

fn workload() -> Workload {
    let mut s = 42;
    let mut records = Vec::new();
    for t in 0..TICKS {
        // ticks 150..180 are silent: epochs 15..17 have no records anywhere
        if (150..180).contains(&t) {
            continue;
        }
        for _ in 0..splitmix(&mut s) % 8 {
            records.push((t, splitmix(&mut s) % KEYS));
        }
    }
    let mut queries: Vec<_> = (0..400)
        .map(|_| {
            let issued = splitmix(&mut s) % TICKS;
            let key = splitmix(&mut s) % (2 * KEYS);
            let start = splitmix(&mut s) % 330;
            let end = start + splitmix(&mut s) % 60;
            (issued, key, TimeRange::new(start, end).unwrap())
        })
        .collect();
    queries.sort_by_key(|q| q.0);
    Workload { records, queries }
}

/// An answer flattened for comparison: (key, start, end, issued, epoch, present, probes).
type Flat = (u64, u64, u64, u64, u64, bool, u64);

#[derive(Default, Serialize, Deserialize)]
struct Outcome {
    digests: Vec<EpochDigest>,
    answers: Vec<Flat>,
    #[serde(skip)]
    stats: Vec<EpochStats>,
}

/// Runs the index on this process's workers; worker `w` of `n` gets every `n`-th record and query.
fn run(timely_config: timely::Config, cfg: IndexConfig, wl: Workload) -> Outcome {
    run_with(timely_config, cfg, wl, None)
}

/// As [`run`]; with a plan, the index takes an allocation stream and worker 0 announces the
/// plan's allocations at each partition's start tick.
fn run_with(
    timely_config: timely::Config,
    cfg: IndexConfig,
    wl: Workload,
    plan: Option<Plan>,
) -> Outcome {
    let guards = timely::execute(timely_config, move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let out = Rc::new(RefCell::new(Outcome::default()));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in, mut a_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (a_in, allocations) = scope.new_input::<Vec<(u64, Allocation)>>();
            let streams = if plan.is_some() {
                records.temporal_index_with_allocations(queries, allocations, &cfg)
            } else {
                records.temporal_index(queries, &cfg)
            };
            let (o1, o2, o3) = (out.clone(), out.clone(), out.clone());
            streams
                .answers
                .inspect(move |a| {
                    o1.borrow_mut().answers.push((
                        a.key,
                        a.range.start(),
                        a.range.end(),
                        a.issued,
                        a.epoch,
                        a.present,
                        a.probes,
                    ))
                })
                .probe_with(&probe);
            streams
                .digests
                .inspect(move |d| o2.borrow_mut().digests.push(*d))
                .probe_with(&probe);
            streams
                .stats
                .inspect(move |s| o3.borrow_mut().stats.push(s.clone()))
                .probe_with(&probe);
            (r_in, q_in, a_in)
        });
        let (mut ri, mut qi) = (0, 0);
        for t in 0..TICKS {
            for (p, a) in plan.iter().flatten() {
                if me == 0 && p * PARTITION == t {
                    a_in.send((*p, a.clone()));
                }
            }
            while ri < wl.records.len() && wl.records[ri].0 == t {
                if ri % peers == me {
                    r_in.send(wl.records[ri].1);
                }
                ri += 1;
            }
            while qi < wl.queries.len() && wl.queries[qi].0 == t {
                let (_, key, range) = wl.queries[qi];
                if qi % peers == me {
                    q_in.send((key, range));
                }
                qi += 1;
            }
            r_in.advance_to(t + 1);
            q_in.advance_to(t + 1);
            a_in.advance_to(t + 1);
            if (t + 1) % EPOCH == 0 {
                worker.step_while(|| probe.less_than(r_in.time()));
            } else {
                worker.step();
            }
        }
        drop((r_in, q_in, a_in));
        worker.step_while(|| !probe.done());
        out.take()
    })
    .unwrap();
    let mut all = Outcome::default();
    for o in guards.join() {
        let o = o.unwrap();
        all.digests.extend(o.digests);
        all.answers.extend(o.answers);
        all.stats.extend(o.stats);
    }
    all.digests.sort();
    all.answers.sort();
    all
}

/// What single-threaded core PBF-2s give: the digest after each epoch with records, every
/// query's answer, and the number of accepted records.
struct Reference {
    digests: BTreeMap<u64, u64>,
    answers: Vec<Flat>,
    accepted: u64,
    rejected: u64,
}

fn reference(cfg: &IndexConfig, wl: &Workload) -> Reference {
    reference_with(cfg, wl, &BTreeMap::new())
}

/// The reference with partition `p` built with `allocations[p]` when given.
fn reference_with(
    cfg: &IndexConfig,
    wl: &Workload,
    allocations: &BTreeMap<u64, Allocation>,
) -> Reference {
    let mut parts: BTreeMap<u64, Pbf2> = BTreeMap::new();
    let record_epochs: BTreeSet<u64> = wl.records.iter().map(|r| r.0 / EPOCH).collect();
    let mut by_epoch: BTreeMap<u64, Vec<(u64, u64, TimeRange)>> = BTreeMap::new();
    for &q in &wl.queries {
        by_epoch
            .entry(cfg.answering_epoch(q.0, q.2))
            .or_default()
            .push(q);
    }
    let epochs: BTreeSet<u64> = record_epochs
        .iter()
        .chain(by_epoch.keys())
        .copied()
        .collect();
    let (mut digests, mut answers) = (BTreeMap::new(), Vec::new());
    let (mut accepted, mut rejected) = (0, 0);
    for e in epochs {
        for &(t, key) in wl.records.iter().filter(|r| r.0 / EPOCH == e) {
            if t >= PARTITION * PARTITIONS {
                rejected += 1;
                continue;
            }
            accepted += 1;
            let pbf = parts.entry(t / PARTITION).or_insert_with(|| {
                let a = allocations
                    .get(&(t / PARTITION))
                    .unwrap_or(cfg.allocation());
                Pbf2::with_layout(0, cfg.points(), a, cfg.seed(), cfg.layout()).unwrap()
            });
            pbf.insert(&key, cfg.point(t % PARTITION)).unwrap();
        }
        if record_epochs.contains(&e) {
            digests.insert(e, state_digest(parts.iter().map(|(&p, f)| (p, f))));
        }
        for &(issued, key, range) in by_epoch.get(&e).into_iter().flatten() {
            let (mut present, mut probes) = (false, 0);
            for (&p, pbf) in &parts {
                let (lo, hi) = (p * PARTITION, p * PARTITION + PARTITION - 1);
                let (s, t) = (range.start().max(lo), range.end().min(hi));
                if s > t {
                    continue;
                }
                let local = cfg.points_of(TimeRange::new(s - lo, t - lo).unwrap());
                let a = pbf.query_counted(&key, local);
                probes += a.probes;
                if a.present {
                    present = true;
                    break;
                }
            }
            answers.push((key, range.start(), range.end(), issued, e, present, probes));
        }
    }
    answers.sort();
    Reference {
        digests,
        answers,
        accepted,
        rejected,
    }
}

/// Checks one run against the reference; `workers` is the total number of workers.
fn check(out: &Outcome, refr: &Reference, wl: &Workload, workers: usize) {
    // every worker emits one digest per epoch with records, and they all equal the reference
    let mut per_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for d in &out.digests {
        per_epoch.entry(d.epoch).or_default().push(d.digest);
    }
    assert_eq!(
        per_epoch.keys().collect::<Vec<_>>(),
        refr.digests.keys().collect::<Vec<_>>()
    );
    for (e, ds) in &per_epoch {
        assert_eq!(ds.len(), workers, "epoch {e}");
        assert!(
            ds.iter().all(|d| *d == refr.digests[e]),
            "epoch {e}: {ds:?}"
        );
    }
    // answers equal the single-threaded ones, probes included
    assert_eq!(out.answers.len(), wl.queries.len());
    assert_eq!(out.answers, refr.answers);
    // no false negatives against the exact answers
    let mut exact: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for &(t, k) in &wl.records {
        if t < PARTITION * PARTITIONS {
            exact.entry(k).or_default().insert(t);
        }
    }
    let mut negatives = 0;
    for a in &out.answers {
        let truth = exact
            .get(&a.0)
            .is_some_and(|ts| ts.range(a.1..=a.2).next().is_some());
        assert!(!truth || a.5, "false negative: {a:?}");
        negatives += u64::from(!a.5);
    }
    assert!(
        negatives > 0,
        "every answer is 'present': the test is vacuous"
    );
}

fn check_stats(out: &Outcome, refr: &Reference, workers: usize, placement: Placement) {
    let accepted: u64 = out.stats.iter().map(|s| s.local.records).sum();
    let rejected: u64 = out
        .stats
        .iter()
        .flat_map(|s| s.local.rejected.get(&RejectReason::BeyondHorizon))
        .sum();
    assert_eq!((accepted, rejected), (refr.accepted, refr.rejected));
    assert!(refr.rejected > 0);
    assert_eq!(out.stats.len(), refr.digests.len() * workers);
    let received: u64 = out.stats.iter().map(|s| s.bytes_received).sum();
    let sent: u64 = out.stats.iter().map(|s| s.local.bytes_sent).sum();
    assert_eq!(sent, received);
    assert_eq!(received > 0, workers > 1);
    // sharded owners evaluate other workers' queries and reply; replicated workers do not
    let crosses = placement == Placement::Sharded && workers > 1;
    let q_in: u64 = out.stats.iter().map(|s| s.query_bytes_received).sum();
    let q_out: u64 = out.stats.iter().map(|s| s.query_bytes_sent).sum();
    assert_eq!(
        (q_in > 0, q_out > q_in),
        (crosses, crosses),
        "{q_in} {q_out}"
    );
    assert!(out
        .stats
        .iter()
        .flat_map(|s| &s.levels)
        .all(|l| (0.0..=1.0).contains(&l.fill) && l.estimated_fpr <= l.fill));
}

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
