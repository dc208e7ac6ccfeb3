//! Event time (issue: records carry their own ticks): the same input run tick-stamped (each record
//! on its tick as timestamp) and event-timed (each record stamped with its epoch's first tick, or
//! with any lower bound) gives the same passed records, the same answers and the same per-epoch
//! digests, for 1 and 2 workers and both dedup modes; late records are counted and decided at
//! their timestamp.
#![allow(clippy::unwrap_used)]

use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::timely;
use chronobloom::operators::{
    Dedup, DedupConfig, DedupMode, IndexConfig, Placement, TemporalIndex, Timed, TimedDedup,
    TimedTemporalIndex,
};
use chronobloom::synth::splitmix;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const EPOCH: u64 = 10;

/// What one run produced, sorted: passed `(tick, key, id)`, answers `(query id, present)`,
/// digests `(worker, epoch, digest)`, and late records counted by dedup and index.
type Outcome = (
    Vec<(u64, u64, u64)>,
    Vec<(u64, bool)>,
    Vec<(u32, u64, u64)>,
    u64,
    u64,
);

fn records(n: u64, seed: u64) -> Vec<(u64, u64, u64)> {
    // ticks ascending with bursts and gaps; keys from a small pool so duplicates are common
    let (mut t, mut state) = (0, seed);
    (0..n)
        .map(|i| {
            let r = splitmix(&mut state);
            t += match r % 10 {
                0 => 30,
                1..=5 => 0,
                _ => 1,
            };
            (t, (r >> 8) % 97, i)
        })
        .collect()
}

fn configs(mode: DedupMode, placement: Placement) -> (DedupConfig, IndexConfig) {
    let dedup = DedupConfig::builder()
        .window(25)
        .epoch_len(EPOCH)
        .expected_items_per_window(200)
        .shards(8)
        .mode(mode)
        .seed(3)
        .build()
        .unwrap();
    let index = IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(1_000)
        .partitions(20)
        .bits(40_000)
        .placement(placement)
        .seed(3)
        .build()
        .unwrap();
    (dedup, index)
}

/// A record's timestamp from its tick and the worker sending it.
type Stamp = fn(u64, usize) -> u64;

/// Runs the records on `workers` threads; `stamp(tick, worker)` is each record's timestamp
/// (`None`: the tick-stamped operators).
fn run(recs: &[(u64, u64, u64)], mode: DedupMode, workers: usize, stamp: Option<Stamp>) -> Outcome {
    run_placed(recs, mode, Placement::Replicated, workers, stamp)
}

/// [`run`] with the merged state placed by `placement`.
fn run_placed(
    recs: &[(u64, u64, u64)],
    mode: DedupMode,
    placement: Placement,
    workers: usize,
    stamp: Option<Stamp>,
) -> Outcome {
    let (dedup, index) = configs(mode, placement);
    let recs = Arc::new(recs.to_vec());
    let out: Arc<Mutex<Outcome>> = Arc::default();
    let o = Arc::clone(&out);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let probe = ProbeHandle::new();
        let (o1, o2, o3, o4, o5) = (o.clone(), o.clone(), o.clone(), o.clone(), o.clone());
        let (dedup, index) = (dedup.clone(), index.clone());
        let (mut plain, mut timed, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (plain_in, plain) = scope.new_input::<Vec<(u64, u64)>>();
            let (timed_in, timed) = scope.new_input::<Vec<(u64, (u64, u64))>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (passed, stats, answers, digests, istats) = if stamp.is_none() {
                let d = plain.clone().dedup_by(&dedup, |r: &(u64, u64)| r.0);
                let passed = d.passed.timed();
                let i = timely::dataflow::operators::vec::Map::map(plain, |r| r.0)
                    .temporal_index(queries, &index);
                (passed, d.stats, i.answers, i.digests, i.stats)
            } else {
                let d = timed.clone().dedup_timed_by(&dedup, |r: &(u64, u64)| r.0);
                let i = timely::dataflow::operators::vec::Map::map(timed, |(t, r)| (t, r.0))
                    .temporal_index_timed(queries, &index);
                (d.passed, d.stats, i.answers, i.digests, i.stats)
            };
            passed
                .inspect(move |(t, (k, id))| o1.lock().unwrap().0.push((*t, *k, *id)))
                .probe_with(&probe);
            answers
                .inspect(move |a| o2.lock().unwrap().1.push((a.key, a.present)))
                .probe_with(&probe);
            digests
                .inspect(move |d| o3.lock().unwrap().2.push((d.worker, d.epoch, d.digest)))
                .probe_with(&probe);
            stats
                .inspect(move |s| o4.lock().unwrap().3 += s.late)
                .probe_with(&probe);
            istats
                .inspect(move |s| o5.lock().unwrap().4 += s.local.late)
                .probe_with(&probe);
            (plain_in, timed_in, q_in)
        });
        for &(t, k, id) in recs.iter().filter(|r| r.2 % peers as u64 == me as u64) {
            let ts = stamp.map_or(t, |f| f(t, me));
            if ts > *plain.time() {
                plain.advance_to(ts);
                timed.advance_to(ts);
                q_in.advance_to(ts);
            }
            match stamp {
                None => plain.send((k, id)),
                Some(_) => timed.send((t, (k, id))),
            }
        }
        if me == 0 {
            let last = recs.last().map_or(0, |r| r.0);
            q_in.advance_to(last.max(*q_in.time()));
            for k in 0..20u64 {
                q_in.send((k, TimeRange::new(k * 7, k * 7 + 40).unwrap()));
            }
        }
        drop((plain, timed, q_in));
        worker.step_while(|| !probe.done());
    })
    .unwrap();
    let mut out = std::mem::take(&mut *out.lock().unwrap());
    out.0.sort();
    out.1.sort();
    out.2.sort();
    out
}

#[test]
fn event_time_decides_indexes_and_answers_as_tick_timestamps() {
    let recs = records(3_000, 11);
    for mode in [DedupMode::ByKey, DedupMode::Local] {
        for workers in [1, 2] {
            let ticked = run(&recs, mode, workers, None);
            let epoch_start: Stamp = |t, _| t / EPOCH * EPOCH;
            let timed = run(&recs, mode, workers, Some(epoch_start));
            assert!(!ticked.0.is_empty() && ticked.0.len() < recs.len());
            assert_eq!(
                ticked.0, timed.0,
                "passed records, {mode:?}, {workers} workers"
            );
            assert_eq!(ticked.1, timed.1, "answers, {mode:?}, {workers} workers");
            assert_eq!(ticked.2, timed.2, "digests, {mode:?}, {workers} workers");
            assert_eq!((timed.3, timed.4), (0, 0), "nothing is late");
        }
    }
}

#[test]
fn any_lower_bound_timestamp_gives_the_same_outcome() {
    let recs = records(2_000, 12);
    let epoch_start: Stamp = |t, _| t / EPOCH * EPOCH;
    // two epochs behind: records of several epochs share a timestamp
    let coarse: Stamp = |t, _| (t / EPOCH).saturating_sub(2) * EPOCH;
    let a = run(&recs, DedupMode::ByKey, 2, Some(epoch_start));
    let b = run(&recs, DedupMode::ByKey, 2, Some(coarse));
    assert_eq!((a.0, a.1, a.2), (b.0, b.1, b.2));
}

/// Workers whose timestamps lag their ticks by different amounts: an epoch's outputs are stamped
/// with its records' least timestamp, so its shipments, merges and digest updates come at
/// different times from different workers, and each epoch's digest must still wait for all of
/// them (not for the first one's time).
#[test]
fn workers_stamping_differently_give_the_same_outcome() {
    let recs = records(3_000, 14);
    let epoch_start: Stamp = |t, _| t / EPOCH * EPOCH;
    // odd workers stamp a record up to four epochs behind its own, in steps of four epochs
    let skewed: Stamp = |t, w| match w % 2 {
        0 => t / EPOCH * EPOCH,
        _ => (t / EPOCH).saturating_sub(4) / 4 * 4 * EPOCH,
    };
    for (mode, placement) in [
        (DedupMode::ByKey, Placement::Sharded),
        (DedupMode::Local, Placement::Replicated),
    ] {
        for workers in [2, 3] {
            let a = run_placed(&recs, mode, placement, workers, Some(epoch_start));
            let b = run_placed(&recs, mode, placement, workers, Some(skewed));
            let case = format!("{mode:?}, {placement:?}, {workers} workers");
            assert_eq!(a.0, b.0, "passed records, {case}");
            assert_eq!(a.1, b.1, "answers, {case}");
            assert_eq!(a.2, b.2, "digests, {case}");
            assert_eq!((b.3, b.4), (0, 0), "nothing is late");
        }
    }
}

#[test]
fn late_records_are_counted_and_placed_at_their_timestamp() {
    // every record's timestamp is 5 ticks past its tick: all are late
    let recs = records(500, 13);
    let ahead: Stamp = |t, _| t + 5;
    let late = run(&recs, DedupMode::ByKey, 1, Some(ahead));
    assert_eq!(late.3, recs.len() as u64, "dedup counts every late record");
    assert_eq!(
        late.4,
        recs.len() as u64,
        "the index counts every late record"
    );
    // decided at tick + 5: the same as the records shifted by 5 ticks, on time
    let shifted: Vec<_> = recs.iter().map(|&(t, k, id)| (t + 5, k, id)).collect();
    let on_time = run(&shifted, DedupMode::ByKey, 1, None);
    let ids = |o: &Outcome| o.0.iter().map(|r| r.2).collect::<Vec<_>>();
    assert_eq!(ids(&late), ids(&on_time));
}
