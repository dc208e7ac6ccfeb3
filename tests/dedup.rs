//! The dedup operator against exact oracles (DESIGN.md §3 dedup semantics, §4 invariants 1, 2, 4).
//!
//! * `ByKey`: no duplicate within the window ever passes (checked against an exact
//!   `HashMap<key, last tick>` on random and adversarial streams), false drops (records whose key
//!   was not seen in the window plus the slack) stay under the binomial 99.9% upper bound for ε,
//!   and the output is identical for 1, 2 and 4 workers.
//! * Every test runs with both window states: the compact filter with its default slack and the
//!   exact-edge tick filter (slack 0).
//! * `Local`: with one worker it decides exactly like `ByKey`; with two, it matches an exact model
//!   of its documented semantics (no duplicate passes unless its earlier occurrences in the window
//!   were all on another worker in the same epoch), and duplicates two or more epochs apart never
//!   pass.
//! * Stats add up, bytes sent equal bytes received, and state is retired by time.
#![allow(clippy::unwrap_used)]

use chronobloom::operators::dedup::stats::Slice;
use chronobloom::operators::timely;
use chronobloom::operators::{Dedup, DedupConfig, DedupMode, DedupStats};
use chronobloom::synth::splitmix;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

/// A record: (tick, key, unique id). The id makes same-tick duplicates distinguishable.
type Rec = (u64, u64, u64);

const W: u64 = 50;
const EPOCH: u64 = 10;

/// The two window states: compact (false) and exact edge (true).
const EDGES: [bool; 2] = [false, true];

/// A configuration: the compact state (slack `W / 16` = 3, sized from the stream) or the exact
/// edge (sized for `expected` keys).
fn config(mode: DedupMode, expected: u64, exact_edge: bool) -> DedupConfig {
    let b = DedupConfig::builder()
        .window(W)
        .epoch_len(EPOCH)
        .fpr(0.01)
        .shards(16)
        .seed(5)
        .mode(mode)
        .exact_edge(exact_edge);
    let b = if exact_edge {
        b.expected_items_per_window(expected)
    } else {
        b
    };
    b.build().unwrap()
}

/// What one run produced: the passed records (sorted) and every worker's stats.
struct Run {
    passed: Vec<Rec>,
    stats: Vec<DedupStats>,
}

/// Runs the dedup with `workers` threads; record `i` enters on worker `placement(i) % workers`.
fn run(
    workers: usize,
    cfg: DedupConfig,
    records: Vec<Rec>,
    placement: fn(usize, &Rec) -> usize,
) -> Run {
    let passed = Arc::new(Mutex::new(Vec::new()));
    let stats = Arc::new(Mutex::new(Vec::new()));
    let (p2, s2) = (Arc::clone(&passed), Arc::clone(&stats));
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let (p3, s3) = (Arc::clone(&p2), Arc::clone(&s2));
        let probe = ProbeHandle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, recs) = scope.new_input::<Vec<Rec>>();
            let out = recs.dedup_by(&cfg, |r: &Rec| r.1);
            out.passed
                .inspect(move |r| p3.lock().unwrap().push(*r))
                .probe_with(&probe);
            out.stats
                .inspect(move |s| s3.lock().unwrap().push(s.clone()))
                .probe_with(&probe);
            input
        });
        for (i, r) in records.iter().enumerate() {
            if r.0 > *input.time() {
                input.advance_to(r.0);
                worker.step();
            }
            if placement(i, r) % peers == me {
                input.send(*r);
            }
        }
        drop(input);
        worker.step_while(|| !probe.done());
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let mut passed = Arc::try_unwrap(passed).unwrap().into_inner().unwrap();
    passed.sort_unstable();
    let stats = Arc::try_unwrap(stats).unwrap().into_inner().unwrap();
    Run { passed, stats }
}

fn round_robin(i: usize, _: &Rec) -> usize {
    i
}

/// The exact windowed dedup over `w` ticks: which records have a key not seen in (t - w, t]
/// (the first of a tick's same-key records counts as the one that passes).
fn exact(records: &[Rec], w: u64) -> Vec<bool> {
    let mut last: HashMap<u64, u64> = HashMap::new();
    records
        .iter()
        .map(|&(t, k, _)| {
            let seen = last.get(&k).is_some_and(|&s| s + w > t);
            last.insert(k, t);
            !seen
        })
        .collect()
}

/// Compares a `ByKey` run with the oracle for slack `slack`: returns (records whose key was not
/// seen in the window plus the slack, false drops among them); panics on a missed duplicate.
fn check_by_key(records: &[Rec], passed: &[Rec], slack: u64) -> (u64, u64) {
    let mut passed_keys: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(t, k, _) in passed {
        *passed_keys.entry((t, k)).or_default() += 1;
    }
    let by_tick = |fresh: Vec<bool>| {
        let mut at: BTreeMap<(u64, u64), bool> = BTreeMap::new();
        for (r, &f) in records.iter().zip(&fresh) {
            *at.entry((r.0, r.1)).or_default() |= f;
        }
        at
    };
    // may pass: not seen in the window; should pass: not seen in the window plus the slack
    let may_pass = by_tick(exact(records, W));
    let fresh_at = by_tick(exact(records, W + slack));
    let mut false_drops = 0;
    for (&(t, k), &n) in &passed_keys {
        assert_eq!(n, 1, "two records of key {k} passed at tick {t}");
        assert!(
            may_pass[&(t, k)],
            "missed duplicate: key {k} passed at tick {t} though seen within {W} ticks"
        );
    }
    let fresh_count = fresh_at.values().filter(|&&f| f).count() as u64;
    for (&(t, k), &f) in &fresh_at {
        if f && !passed_keys.contains_key(&(t, k)) {
            false_drops += 1;
        }
    }
    (fresh_count, false_drops)
}

/// The one-sided 99.9% binomial upper bound on the count of `n` trials at rate `p` (normal
/// approximation with z = 3.09, plus 3 for small counts).
fn binomial_upper(n: u64, p: f64) -> u64 {
    let (n, sd) = (n as f64, (n as f64 * p * (1.0 - p)).sqrt());
    (n * p + 3.09 * sd + 3.0).ceil() as u64
}

/// ~100 records per tick for 1500 ticks over 20 000 keys: repeats at every distance.
fn random_stream() -> Vec<Rec> {
    let mut s = 17;
    let mut out = Vec::new();
    let mut id = 0;
    for t in 0..1500u64 {
        let n = 60 + splitmix(&mut s) % 80;
        for _ in 0..n {
            out.push((t, splitmix(&mut s) % 20_000, id));
            id += 1;
        }
    }
    out
}

/// Bursts, equal timestamps, gaps longer than W, repeats exactly W and W - 1 ticks apart, huge
/// ticks.
fn adversarial_stream() -> Vec<Rec> {
    let mut s = 99;
    let mut out = Vec::new();
    let mut id = 0;
    let mut push = |out: &mut Vec<Rec>, t: u64, k: u64| {
        out.push((t, k, id));
        id += 1;
    };
    // a burst: 4000 records of 400 keys at one tick (same-tick duplicates)
    for _ in 0..4000 {
        let k = splitmix(&mut s) % 400;
        push(&mut out, 3, k);
    }
    // repeats W - 1 apart (must drop) and exactly W apart (must pass)
    for t in 10..200u64 {
        for j in 0..20 {
            push(&mut out, t, 1_000_000 + t * 100 + j);
        }
        if t >= 10 + W - 1 {
            for j in 0..10 {
                push(&mut out, t, 1_000_000 + (t - (W - 1)) * 100 + j);
            }
        }
        if t >= 10 + W {
            for j in 10..20 {
                push(&mut out, t, 1_000_000 + (t - W) * 100 + j);
            }
        }
    }
    out.sort_by_key(|r| r.0);
    // a gap of 3W, then the burst's keys again: all fresh
    for k in 0..400 {
        push(&mut out, 200 + 3 * W, k);
    }
    // a jump far ahead (ticks past 2^32), twice within the window, then once past it
    let far = (1u64 << 33) + 7;
    for k in 0..300 {
        push(&mut out, far, k);
    }
    for k in 0..300 {
        push(&mut out, far + W - 1, k);
    }
    for k in 0..300 {
        push(&mut out, far + 2 * W, k);
    }
    out
}

#[test]
fn by_key_never_passes_a_duplicate_and_false_drops_stay_within_epsilon() {
    let records = random_stream();
    for edge in EDGES {
        // at most 140 records per tick, 50 ticks: at most 7000 keys per window
        let cfg = config(DedupMode::ByKey, 7_000, edge);
        let one = run(1, cfg.clone(), records.clone(), round_robin);
        let (fresh, false_drops) = check_by_key(&records, &one.passed, cfg.slack());
        let bound = binomial_upper(fresh, 0.01);
        println!("random, edge {edge}: {fresh} fresh, {false_drops} false drops (bound {bound})");
        assert!(false_drops <= bound, "{false_drops} false drops > {bound}");
        assert!(fresh > 40_000 && fresh < records.len() as u64);
        for workers in [2, 4] {
            let many = run(workers, cfg.clone(), records.clone(), round_robin);
            assert_eq!(one.passed, many.passed, "{workers} workers differ from 1");
        }
    }
}

/// Worker 0 owning fewer shards (a lead share of 30%): the same records pass as with one
/// worker, and worker 0 decides fewer records than each other worker.
#[test]
fn a_lead_share_moves_shards_off_worker_0_and_changes_no_decision() {
    let records = random_stream();
    let even = config(DedupMode::ByKey, 7_000, false);
    let one = run(1, even.clone(), records.clone(), round_robin);
    let lead = DedupConfig::builder()
        .window(W)
        .epoch_len(EPOCH)
        .fpr(0.01)
        .shards(16)
        .seed(5)
        .lead_share(30)
        .build()
        .unwrap();
    assert_eq!(lead.owner_of_shard(0, 2), 0);
    for workers in [2, 4] {
        let many = run(workers, lead.clone(), records.clone(), round_robin);
        assert_eq!(one.passed, many.passed, "{workers} workers differ from 1");
        let mut decided = vec![0u64; workers];
        for s in &many.stats {
            decided[s.worker as usize] += s.records;
        }
        assert!(
            (1..workers).all(|w| decided[0] < decided[w]),
            "{workers} workers: {decided:?}"
        );
    }
}

#[test]
fn by_key_adversarial_streams() {
    let records = adversarial_stream();
    for edge in EDGES {
        let cfg = config(DedupMode::ByKey, 2_000, edge);
        let slack = cfg.slack();
        let one = run(1, cfg.clone(), records.clone(), round_robin);
        let (fresh, false_drops) = check_by_key(&records, &one.passed, slack);
        let bound = binomial_upper(fresh, 0.01);
        println!(
            "adversarial, edge {edge}: {fresh} fresh, {false_drops} false drops (bound {bound})"
        );
        assert!(false_drops <= bound, "{false_drops} false drops > {bound}");
        // the repeats exactly W apart pass with the exact edge (up to false positives); those
        // W - 1 apart never do (checked for every record by `check_by_key`)
        if edge {
            let at_w = one
                .passed
                .iter()
                .filter(|r| r.1 >= 1_000_000 && r.1 % 100 >= 10 && r.0 >= 10 + W && r.0 < 200)
                .filter(|r| (r.1 - 1_000_000) / 100 + W == r.0)
                .count() as u64;
            let expected_at_w = (200 - 10 - W) * 10;
            assert!(at_w + binomial_upper(expected_at_w, 0.01) >= expected_at_w);
        }
        // after the gap and far ahead, the old keys are fresh again
        assert_eq!(
            one.passed.iter().filter(|r| r.0 == 200 + 3 * W).count(),
            400
        );
        let far = (1u64 << 33) + 7;
        assert_eq!(one.passed.iter().filter(|r| r.0 == far).count(), 300);
        assert_eq!(one.passed.iter().filter(|r| r.0 == far + W - 1).count(), 0);
        // W + 1 ticks after the last sighting: forgotten with the exact edge, inside the slack
        // (W + 3) with the compact state
        let forgotten = one.passed.iter().filter(|r| r.0 == far + 2 * W).count();
        assert!(if edge {
            forgotten >= 295
        } else {
            forgotten <= 300
        });
        for workers in [2, 4] {
            let many = run(workers, cfg.clone(), records.clone(), round_robin);
            assert_eq!(one.passed, many.passed, "{workers} workers differ from 1");
        }
    }
}

#[test]
fn local_with_one_worker_is_by_key() {
    for edge in EDGES {
        for records in [random_stream(), adversarial_stream()] {
            let by_key = run(
                1,
                config(DedupMode::ByKey, 7_000, edge),
                records.clone(),
                round_robin,
            );
            let local = run(
                1,
                config(DedupMode::Local, 7_000, edge),
                records,
                round_robin,
            );
            assert_eq!(by_key.passed, local.passed);
        }
    }
}

/// The exact model of `Local` on `peers` workers over a window of `w` ticks: a record is
/// dropped iff its key was seen in (t - w, t] on its own worker (earlier in the tick included),
/// or on another worker in an epoch before t's that overlaps the window.
fn exact_local(
    records: &[Rec],
    worker_of: impl Fn(usize) -> usize,
    peers: usize,
    w: u64,
) -> Vec<bool> {
    let mut own: HashMap<(usize, u64), u64> = HashMap::new();
    // key -> per worker, ticks seen (ascending)
    let mut all: HashMap<u64, Vec<Vec<u64>>> = HashMap::new();
    records
        .iter()
        .enumerate()
        .map(|(i, &(t, k, _))| {
            let v = worker_of(i);
            let mine = own.get(&(v, k)).is_some_and(|&s| s + w > t);
            let epoch = t / EPOCH;
            let others = all.get(&k).is_some_and(|per| {
                per.iter().enumerate().any(|(u, ticks)| {
                    u != v
                        && ticks
                            .iter()
                            .any(|&s| s / EPOCH < epoch && (s / EPOCH + 1) * EPOCH + w > t + 1)
                })
            });
            own.insert((v, k), t);
            all.entry(k).or_insert_with(|| vec![Vec::new(); peers])[v].push(t);
            !mine && !others
        })
        .collect()
}

#[test]
fn local_with_two_workers_follows_its_documented_semantics() {
    let records = random_stream();
    for edge in EDGES {
        let cfg = config(DedupMode::Local, 7_000, edge);
        let slack = cfg.slack();
        let two = run(2, cfg, records.clone(), round_robin);
        // per (tick, key, worker): may the model pass one of its records (window W), and should
        // it (window W + S)? Which record passes is the operator's deterministic tie-break; ids
        // equal indices, so the worker is id % 2.
        let by_tick = |model: Vec<bool>| {
            let mut at: BTreeMap<(u64, u64, u64), bool> = BTreeMap::new();
            for (r, &m) in records.iter().zip(&model) {
                *at.entry((r.0, r.1, r.2 % 2)).or_default() |= m;
            }
            at
        };
        let may_pass = by_tick(exact_local(&records, |i| i % 2, 2, W));
        let should_pass = by_tick(exact_local(&records, |i| i % 2, 2, W + slack));
        let mut passed_at: BTreeMap<(u64, u64, u64), u64> = BTreeMap::new();
        for r in &two.passed {
            *passed_at.entry((r.0, r.1, r.2 % 2)).or_default() += 1;
        }
        for (at, &n) in &passed_at {
            assert_eq!(n, 1, "two records passed at {at:?}");
            assert!(may_pass[at], "{at:?} passed though Local must drop it");
        }
        let fresh = should_pass.values().filter(|&&m| m).count() as u64;
        let false_drops = should_pass
            .iter()
            .filter(|&(at, &m)| m && !passed_at.contains_key(at))
            .count() as u64;
        // the filters hold the own keys and the view's at ε; the view's keys stay live up to an
        // epoch longer, hence some slack
        let bound = binomial_upper(fresh, 0.02);
        println!("local x2, edge {edge}: {fresh} fresh by the model, {false_drops} false drops (bound {bound})");
        assert!(false_drops <= bound);
        // Local lets through some same-epoch duplicates from the other worker, which ByKey
        // never does
        let mut exact_at: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for (r, f) in records.iter().zip(exact(&records, W)) {
            *exact_at.entry((r.0, r.1)).or_default() |= u64::from(f);
        }
        let mut passes_at: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for r in &two.passed {
            *passes_at.entry((r.0, r.1)).or_default() += 1;
        }
        let duplicates: u64 = passes_at
            .iter()
            .map(|(at, &n)| n.saturating_sub(exact_at[at]))
            .sum();
        println!("local x2, edge {edge}: {duplicates} same-epoch duplicates passed");
        assert!(duplicates > 0);
    }
}

#[test]
fn local_catches_duplicates_two_epochs_apart_across_workers() {
    // every key appears twice, on different workers, 2 * EPOCH to W - 1 ticks apart
    let mut s = 3;
    let mut records = Vec::new();
    for i in 0..3000u64 {
        let t = splitmix(&mut s) % 400;
        let d = 2 * EPOCH + splitmix(&mut s) % (W - 2 * EPOCH);
        records.push((t, i, 2 * i));
        records.push((t + d, i, 2 * i + 1));
    }
    records.sort_unstable();
    // the first occurrence (even id) on worker 0, the repeat on worker 1
    let placement: fn(usize, &Rec) -> usize = |_, r| (r.2 % 2) as usize;
    for edge in EDGES {
        let cfg = config(DedupMode::Local, 2_000, edge);
        let two = run(2, cfg, records.clone(), placement);
        assert!(two.passed.iter().all(|r| r.2 % 2 == 0), "a repeat passed");
        assert!(
            two.passed.len() >= 2950,
            "too many false drops: {}",
            two.passed.len()
        );
    }
}

#[test]
fn stats_add_up_bytes_balance_and_state_retires() {
    let records = random_stream();
    for (mode, edge) in [DedupMode::ByKey, DedupMode::Local]
        .into_iter()
        .flat_map(|m| EDGES.map(|e| (m, e)))
    {
        let r = run(2, config(mode, 7_000, edge), records.clone(), round_robin);
        let sum = |f: fn(&DedupStats) -> u64| r.stats.iter().map(f).sum::<u64>();
        assert_eq!(sum(|s| s.records), records.len() as u64, "{mode:?}");
        assert_eq!(sum(|s| s.passed), r.passed.len() as u64, "{mode:?}");
        assert_eq!(sum(|s| s.passed) + sum(|s| s.dropped), records.len() as u64);
        assert!(sum(|s| s.bytes_sent) > 0, "{mode:?}");
        assert_eq!(sum(|s| s.bytes_sent), sum(|s| s.bytes_received), "{mode:?}");
        assert_eq!(sum(|s| s.refused_deltas), 0);
        assert_eq!(sum(|s| s.unplaced), 0, "{mode:?} edge {edge}");
        let mut seen = std::collections::BTreeSet::new();
        for s in &r.stats {
            assert!(seen.insert((s.epoch, s.worker)), "two stats for one epoch");
            // an epoch after the last record reports only the view slices it received
            assert!(s.records == 0 || s.local_bits > 0, "{s:?}");
            assert!(s.estimated_fpr < 0.05, "{s:?}");
            if mode == DedupMode::Local && s.records > 0 && s.epoch > 0 {
                // the other worker's keys of the previous epoch arrived
                assert!(s.bytes_received > 0, "{s:?}");
                // received keys of an epoch are inserted before a later epoch is decided: when
                // an epoch's stats are sealed (after it was decided) no earlier epoch's keys wait
                // (deltas ship when the input passes their epoch, so later epochs' may)
                for x in &s.slices {
                    if let Slice::ViewEpoch(v) = x.slice {
                        assert!(v >= s.epoch, "epoch {v}'s keys wait at epoch {}", s.epoch);
                    }
                }
                assert_eq!(
                    s.view_bits,
                    s.slices
                        .iter()
                        .filter(|x| matches!(x.slice, Slice::ViewEpoch(_)))
                        .map(|x| x.bits)
                        .sum::<u64>()
                );
            }
        }
    }
    // retirement by time: after a gap longer than W only the shards of the last tick remain
    let mut records: Vec<Rec> = (0..2000).map(|i| (i / 100, i, i)).collect();
    records.push((1000, 7, 5000));
    let r = run(
        1,
        config(DedupMode::ByKey, 2_000, false),
        records,
        round_robin,
    );
    let last = r.stats.iter().find(|s| s.epoch == 100).unwrap();
    assert_eq!(last.slices.len(), 1, "{:?}", last.slices);
    let first = r.stats.iter().find(|s| s.epoch == 0).unwrap();
    assert_eq!(first.slices.len(), 16);
}
