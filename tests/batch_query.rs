//! The batch form of the temporal index's queries ([`MergeKeyBatches`]): a batch of keys sharing
//! a range gets, key by key, the answer, answering epoch and probe count of the single query for
//! that key ([`MergeQuery`]), with 1 and 2 worker threads; no false negative; a sharded
//! configuration is refused before the dataflow runs.
#![allow(clippy::unwrap_used)]

use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::timely;
use chronobloom::operators::{
    IndexConfig, IndexEvent, KeyBatch, LocalIndex, MergeKeyBatches, MergeQuery, Placement,
};
#[path = "support/batch_workload.rs"]
mod batch_workload;

use batch_workload::{feed, workload, Batches, Feed, Records};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const EPOCH: u64 = 10;
const TICKS: u64 = 300;
const KEYS: u64 = 300;

fn config(placement: Placement) -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(100)
        .partitions(3)
        .bits(12_000)
        .hashes(3)
        .seed(5)
        .placement(placement)
        .build()
        .unwrap()
}

fn batches_workload() -> (Records, Batches) {
    workload(7, TICKS, KEYS, 60, Some(TICKS - 1))
}

/// (key, start, end, issued, epoch, present, probes), sorted: from single queries and from
/// batches, on `workers` threads.
type Flat = (u64, u64, u64, u64, u64, bool, u64);

fn run(workers: usize) -> (Vec<Flat>, Vec<Flat>, u64) {
    let (records, batches) = batches_workload();
    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let cfg = config(Placement::Replicated);
        let singles = Rc::new(RefCell::new(Vec::new()));
        let batched = Rc::new(RefCell::new(Vec::new()));
        let batch_probes = Rc::new(RefCell::new(0u64));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in, mut b_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (b_in, batches) = scope.new_input::<Vec<KeyBatch<u64>>>();
            let shipments = records.local_index(&cfg);
            let (s, b, p) = (singles.clone(), batched.clone(), batch_probes.clone());
            shipments
                .clone()
                .merge_and_query(queries, &cfg)
                .inspect(move |e| {
                    if let IndexEvent::Answer(a) = e {
                        s.borrow_mut().push((
                            a.key,
                            a.range.start(),
                            a.range.end(),
                            a.issued,
                            a.epoch,
                            a.present,
                            a.probes,
                        ));
                    }
                })
                .probe_with(&probe);
            shipments
                .merge_and_query_batches(batches, &cfg)
                .unwrap()
                .inspect(move |a| {
                    assert_eq!(a.keys.len(), a.present.len());
                    *p.borrow_mut() += a.probes;
                    for (&k, &present) in a.keys.iter().zip(&a.present) {
                        let r = a.range;
                        // A batch's probes are not split per key; singles carry their own.
                        b.borrow_mut()
                            .push((k, r.start(), r.end(), a.issued, a.epoch, present, 0));
                    }
                })
                .probe_with(&probe);
            (r_in, q_in, b_in)
        });
        feed(&records, &batches, (me, peers, TICKS), |f| match f {
            Feed::Record(k) => r_in.send(k),
            Feed::Batch(keys, range) => {
                for &k in keys {
                    q_in.send((k, range));
                }
                b_in.send(KeyBatch {
                    keys: keys.to_vec(),
                    range,
                });
            }
            Feed::TickDone(t) => {
                r_in.advance_to(t + 1);
                q_in.advance_to(t + 1);
                b_in.advance_to(t + 1);
                if (t + 1) % EPOCH == 0 {
                    worker.step_while(|| probe.less_than(r_in.time()));
                } else {
                    worker.step();
                }
            }
        });
        drop((r_in, q_in, b_in));
        worker.step_while(|| !probe.done());
        let p = *batch_probes.borrow();
        (singles.take(), batched.take(), p)
    })
    .unwrap();
    let (mut singles, mut batched, mut probes) = (Vec::new(), Vec::new(), 0);
    for g in guards.join() {
        let (s, b, p) = g.unwrap();
        singles.extend(s);
        batched.extend(b);
        probes += p;
    }
    singles.sort();
    batched.sort();
    (singles, batched, probes)
}

#[test]
fn batches_answer_as_single_queries() {
    let (records, batches) = batches_workload();
    let mut seen: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for &(t, k) in &records {
        seen.entry(k).or_default().insert(t);
    }
    for workers in [1, 2] {
        let (singles, batched, batch_probes) = run(workers);
        let asked: usize = batches.iter().map(|b| b.1.len()).sum();
        assert_eq!(
            singles.len(),
            asked,
            "{workers} workers: every single query answered"
        );
        let without_probes: Vec<Flat> = singles
            .iter()
            .map(|s| (s.0, s.1, s.2, s.3, s.4, s.5, 0))
            .collect();
        assert_eq!(batched, without_probes, "{workers} workers: batch answers");
        assert_eq!(
            batch_probes,
            singles.iter().map(|s| s.6).sum::<u64>(),
            "{workers} workers: probes"
        );
        let present = batched.iter().filter(|b| b.5).count();
        assert!(
            present > 50 && present < batched.len() - 50,
            "{present} of {}",
            batched.len()
        );
        for &(k, s, e, ..) in batched.iter().filter(|b| !b.5) {
            let appeared = seen
                .get(&k)
                .is_some_and(|ts| ts.range(s..=e).next().is_some());
            assert!(!appeared, "false negative: {k} in [{s}, {e}]");
        }
    }
}

#[test]
fn sharded_placement_is_refused() {
    let cfg = config(Placement::Sharded);
    let refused = timely::execute_directly(move |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_r, records) = scope.new_input::<Vec<u64>>();
            let (_b, batches) = scope.new_input::<Vec<KeyBatch<u64>>>();
            records
                .local_index(&cfg)
                .merge_and_query_batches(batches, &cfg)
                .is_err()
        })
    });
    assert!(refused);
}
