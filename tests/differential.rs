//! The differential collection traits: positive differences are indexed (no false negatives),
//! retractions and malformed queries are reported, not applied, answers keep the queries'
//! differences, and the answers are the same for 1, 2 and 4 workers.
#![allow(clippy::unwrap_used)]

use chronobloom::operators::differential_dataflow::input::InputSession;
use chronobloom::operators::differential_dataflow::VecCollection;
use chronobloom::operators::timely;
use chronobloom::operators::{IndexCollection, IndexConfig, QueryCollection, RangeQuery};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::Inspect;

type Update<D> = (D, u64, isize);

fn config() -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(10)
        .partition_len(100)
        .partitions(2)
        .bits(16_000)
        .hashes(3)
        .seed(4)
        .build()
        .unwrap()
}

/// Key updates: keys 0..40 at ticks 0..160, every fifth retracted 30 ticks later.
fn keys() -> Vec<Update<u64>> {
    let mut u: Vec<_> = (0..40u64).map(|k| (k, k * 4, 1)).collect();
    u.extend((0..40u64).step_by(5).map(|k| (k, k * 4 + 30, -1)));
    u.sort_by_key(|x| x.1);
    u
}

/// Queries: each key over a window around its tick (asked twice for even keys), absent keys, and
/// one malformed range and one retracted query.
fn queries() -> Vec<Update<RangeQuery<u64>>> {
    let mut q = Vec::new();
    for k in 0..40u64 {
        let t = k * 4;
        let diff = if k % 2 == 0 { 2 } else { 1 };
        q.push(((k, (t.saturating_sub(3), t + 3)), t, diff));
        q.push(((1000 + k, (t, t + 5)), t, 1));
    }
    q.push(((5, (50, 40)), 60, 1));
    q.push(((7, (28, 31)), 70, -1));
    q.sort_by_key(|x| x.1);
    q
}

type Collected<D> = Arc<Mutex<Vec<Update<D>>>>;

fn collect<D: Clone + 'static>(c: VecCollection<'_, u64, D, isize>, into: &Collected<D>) {
    let into = into.clone();
    c.inner
        .inspect(move |u| into.lock().unwrap().push(u.clone()));
}

/// Answers, unsupported key updates and unsupported queries, consolidated.
type Outcome = (
    BTreeMap<(RangeQuery<u64>, bool, u64), isize>,
    BTreeMap<(u64, u64), isize>,
    BTreeMap<(RangeQuery<u64>, u64), isize>,
);

fn run(workers: usize) -> Outcome {
    let answers: Collected<(RangeQuery<u64>, bool)> = Arc::default();
    let bad_keys: Collected<u64> = Arc::default();
    let bad_queries: Collected<RangeQuery<u64>> = Arc::default();
    let (a, bk, bq) = (answers.clone(), bad_keys.clone(), bad_queries.clone());
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let mut k_in = InputSession::<u64, u64, isize>::new();
        let mut q_in = InputSession::<u64, RangeQuery<u64>, isize>::new();
        let cfg = config();
        worker.dataflow(|scope| {
            let indexed = k_in.to_collection(scope).index_collection(&cfg);
            let answered = q_in
                .to_collection(scope)
                .query_collection(indexed.shipments, &cfg);
            collect(indexed.unsupported, &bk);
            collect(answered.answers, &a);
            collect(answered.unsupported, &bq);
        });
        for (i, (k, t, r)) in keys().into_iter().enumerate() {
            if i % peers == me {
                k_in.update_at(k, t, r);
            }
        }
        for (i, (q, t, r)) in queries().into_iter().enumerate() {
            if i % peers == me {
                q_in.update_at(q, t, r);
            }
        }
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let mut out: Outcome = Default::default();
    for ((q, present), t, r) in answers.lock().unwrap().drain(..) {
        *out.0.entry((q, present, t)).or_default() += r;
    }
    for (k, t, r) in bad_keys.lock().unwrap().drain(..) {
        *out.1.entry((k, t)).or_default() += r;
    }
    for (q, t, r) in bad_queries.lock().unwrap().drain(..) {
        *out.2.entry((q, t)).or_default() += r;
    }
    out
}

#[test]
fn collections_are_indexed_and_answered_the_same_for_1_2_4_workers() {
    let one = run(1);
    let (answers, bad_keys, bad_queries) = &one;
    // Every retraction is reported with its time, none applied.
    let retracted: BTreeMap<(u64, u64), isize> = keys()
        .into_iter()
        .filter(|u| u.2 < 0)
        .map(|(k, t, r)| ((k, t), r))
        .collect();
    assert_eq!(bad_keys, &retracted);
    // The malformed range and the retracted query are reported, not answered.
    let expected_bad: BTreeMap<_, _> = [(((5, (50, 40)), 60), 1), (((7, (28, 31)), 70), -1)]
        .into_iter()
        .collect();
    assert_eq!(bad_queries, &expected_bad);
    // Each well-formed query is answered once, with its difference, at its answering time; keys
    // are present in the window around their tick, retracted ones too (no deletes).
    assert_eq!(answers.len(), 80);
    let cfg = config();
    for k in 0..40u64 {
        let t = k * 4;
        let range = (t.saturating_sub(3), t + 3);
        let r = chronobloom::core::temporal::TimeRange::try_from(range).unwrap();
        let at = cfg.epoch_last(cfg.answering_epoch(t, r));
        let diff = if k % 2 == 0 { 2 } else { 1 };
        assert_eq!(answers.get(&((k, range), true, at)), Some(&diff), "key {k}");
    }
    let absent_yes = answers.keys().filter(|(q, p, _)| q.0 >= 1000 && *p).count();
    assert!(
        absent_yes < 10,
        "{absent_yes} of 40 absent keys answered present"
    );
    for workers in [2, 4] {
        assert_eq!(run(workers), one, "{workers} workers");
    }
}

mod dedup_collection {
    //! `DedupCollection`: positive differences are deduplicated by key within the window (a
    //! difference of n is n same-tick copies, at most one passes), retractions are reported, and
    //! the output is the same for 1, 2 and 4 workers.
    use super::{collect, Collected, Update};
    use chronobloom::operators::differential_dataflow::input::InputSession;
    use chronobloom::operators::timely;
    use chronobloom::operators::{DedupCollection, DedupConfig, DedupMode, DedupStats};
    use std::collections::{BTreeMap, HashMap};
    use std::sync::{Arc, Mutex};
    use timely::dataflow::operators::Inspect;

    const W: u64 = 20;

    /// A record: (key, payload). Payloads stay below 256, so their `bincode` order is numeric.
    type Rec = (u64, u64);

    fn config() -> DedupConfig {
        DedupConfig::builder()
            .window(W)
            .epoch_len(10)
            .expected_items_per_window(1_000)
            .exact_edge(true)
            .fpr(1e-6)
            .shards(8)
            .seed(3)
            .mode(DedupMode::ByKey)
            .build()
            .unwrap()
    }

    /// Hand-written cases, then random ones (keys 100..140, ticks 0..120, differences 1..=3,
    /// some retractions).
    fn updates() -> Vec<Update<Rec>> {
        let mut u = vec![
            ((1, 0), 0, 1),  // passes
            ((1, 1), 5, 1),  // inside the window: dropped
            ((1, 2), 24, 1), // 19 ticks after tick 5: dropped
            ((1, 3), 50, 1), // 26 ticks after tick 24: passes
            ((2, 0), 3, 3),  // three copies: one passes
            ((2, 1), 30, 1), // 27 ticks later: passes
            ((3, 9), 7, 1),  // two records of one key at one tick: the smaller passes
            ((3, 0), 7, 1),
            ((4, 0), 10, 1),  // passes
            ((4, 0), 12, -1), // reported, not applied
            ((4, 1), 15, 1),  // still seen at tick 10: dropped
            ((5, 0), 20, 1),  // passes
            ((5, 1), 40, 1),  // exactly W ticks later: passes (the exact edge)
        ];
        let mut s = 9u64;
        for i in 0..300u64 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let (k, t, p) = (100 + (s >> 33) % 40, (s >> 20) % 120, i % 256);
            let r = if i % 23 == 0 {
                -1
            } else {
                1 + (s >> 50) as isize % 3
            };
            u.push(((k, p), t, r));
        }
        u
    }

    /// The exact windowed dedup of the positive updates: each passed record once, with its tick.
    fn exact(updates: &[Update<Rec>]) -> BTreeMap<(Rec, u64), isize> {
        let mut ticks: BTreeMap<u64, Vec<Rec>> = BTreeMap::new();
        for &(d, t, r) in updates {
            if r > 0 {
                ticks.entry(t).or_default().push(d);
            }
        }
        let mut last: HashMap<u64, u64> = HashMap::new();
        let mut passed = BTreeMap::new();
        for (t, recs) in ticks {
            let mut best: BTreeMap<u64, u64> = BTreeMap::new();
            for &(k, p) in &recs {
                if last.get(&k).is_none_or(|&s| s + W <= t) {
                    let b = best.entry(k).or_insert(p);
                    *b = (*b).min(p);
                }
            }
            passed.extend(best.into_iter().map(|kp| ((kp, t), 1)));
            last.extend(recs.iter().map(|&(k, _)| (k, t)));
        }
        passed
    }

    /// Passed and unsupported updates (consolidated) and the stats summed over workers:
    /// (records, passed, dropped, dropped at the same tick).
    type Outcome = (
        BTreeMap<(Rec, u64), isize>,
        BTreeMap<(Rec, u64), isize>,
        (u64, u64, u64, u64),
    );

    fn run(workers: usize) -> Outcome {
        let passed: Collected<Rec> = Arc::default();
        let unsupported: Collected<Rec> = Arc::default();
        let stats: Arc<Mutex<Vec<DedupStats>>> = Arc::default();
        let (p, u, s) = (passed.clone(), unsupported.clone(), stats.clone());
        timely::execute(timely::Config::process(workers), move |worker| {
            let (me, peers) = (worker.index(), worker.peers());
            let mut input = InputSession::<u64, Rec, isize>::new();
            let cfg = config();
            let s = s.clone();
            worker.dataflow(|scope| {
                let out = input
                    .to_collection(scope)
                    .dedup_collection(&cfg, |r: &Rec| r.0);
                collect(out.passed, &p);
                collect(out.unsupported, &u);
                out.stats
                    .inspect(move |x| s.lock().unwrap().push(x.clone()));
            });
            for (i, (d, t, r)) in updates().into_iter().enumerate() {
                if i % peers == me {
                    input.update_at(d, t, r);
                }
            }
        })
        .unwrap()
        .join()
        .into_iter()
        .for_each(|r| r.unwrap());
        let mut out: Outcome = Default::default();
        for (d, t, r) in passed.lock().unwrap().drain(..) {
            assert_eq!(r, 1, "a passed record carries difference +1");
            *out.0.entry((d, t)).or_default() += r;
        }
        for (d, t, r) in unsupported.lock().unwrap().drain(..) {
            *out.1.entry((d, t)).or_default() += r;
        }
        for x in stats.lock().unwrap().iter() {
            let sum = &mut out.2;
            *sum = (
                sum.0 + x.records,
                sum.1 + x.passed,
                sum.2 + x.dropped,
                sum.3 + x.dropped_same_tick,
            );
        }
        out
    }

    #[test]
    fn collections_are_deduplicated_the_same_for_1_2_4_workers() {
        let one = run(1);
        let (passed, unsupported, stats) = &one;
        let hand: Vec<_> = passed.keys().filter(|(d, _)| d.0 < 100).copied().collect();
        assert_eq!(
            hand,
            vec![
                ((1, 0), 0),
                ((1, 3), 50),
                ((2, 0), 3),
                ((2, 1), 30),
                ((3, 0), 7),
                ((4, 0), 10),
                ((5, 0), 20),
                ((5, 1), 40),
            ]
        );
        assert_eq!(passed, &exact(&updates()));
        let retracted: BTreeMap<(Rec, u64), isize> = updates()
            .into_iter()
            .filter(|u| u.2 < 0)
            .map(|(d, t, r)| ((d, t), r))
            .collect();
        assert!(retracted.contains_key(&((4, 0), 12)));
        assert_eq!(unsupported, &retracted);
        // Stats count one record per positive update.
        let positive = updates().iter().filter(|u| u.2 > 0).count() as u64;
        assert_eq!(stats.0, positive);
        assert_eq!(stats.1, passed.len() as u64);
        assert_eq!(stats.1 + stats.2, stats.0);
        assert!(stats.3 >= 2, "same-tick drops: {}", stats.3);
        for workers in [2, 4] {
            assert_eq!(run(workers), one, "{workers} workers");
        }
    }
}
