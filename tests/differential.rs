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
