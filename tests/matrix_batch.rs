//! Matrix-backed batches in the dataflow ([`MatrixKeyBatches`], [`TimedMatrixKeyBatches`]): with
//! 1 and 2 worker threads a batch of keys sharing a range gets exactly the answers of the core's
//! matrix PBF queried one key at a time over the records of the epochs up to the batch's
//! answering epoch; no false negative; records past the horizon are counted once; records
//! carrying their ticks on their epoch's timestamp answer as on their ticks, and late ones are
//! counted and indexed at their timestamp; a sharded configuration is refused before the
//! dataflow runs.
#![allow(clippy::unwrap_used)]

use chronobloom::core::matrix::MatrixPbf;
use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::timely;
use chronobloom::operators::{
    IndexConfig, KeyBatch, MatrixBatchEvent, MatrixKeyBatches, Placement, TimedMatrixKeyBatches,
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
const PARTITION: u64 = 100;
const PARTITIONS: u64 = 3;
/// Ticks with records: the last 20 lie past the horizon (300).
const TICKS: u64 = 320;
const KEYS: u64 = 300;
const BITS: u64 = 40_000;
const HASHES: u32 = 3;
const SEED: u64 = 5;

fn config(placement: Placement) -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .bits(BITS)
        .hashes(HASHES)
        .seed(SEED)
        .placement(placement)
        .build()
        .unwrap()
}

fn batches_workload() -> (Records, Batches) {
    // ranges across partition boundaries and past the horizon too
    workload(11, TICKS, KEYS, 150, None)
}

/// (key, start, end, issued, epoch, present), sorted, and the rejected records reported.
type Flat = (u64, u64, u64, u64, u64, bool);

/// How records enter the dataflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamps {
    /// On timestamps equal to their ticks ([`MatrixKeyBatches`]).
    Ticks,
    /// Carrying their ticks, on their epoch's first tick ([`TimedMatrixKeyBatches`]).
    Epochs,
    /// As `Epochs`, with the records [`is_late`] picks sent with a tick 15 before theirs.
    Late,
}

/// The records sent late in [`Stamps::Late`]: their tick less 15 is before their epoch.
fn is_late(t: u64, k: u64) -> bool {
    t >= 15 && (t + k).is_multiple_of(7)
}

/// Answers, rejected records and late records reported.
fn run(workers: usize, stamps: Stamps) -> (Vec<Flat>, u64, u64) {
    let (records, batches) = batches_workload();
    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let cfg = config(Placement::Replicated);
        let answers = Rc::new(RefCell::new(Vec::new()));
        let (rejected, late) = (Rc::new(RefCell::new(0u64)), Rc::new(RefCell::new(0u64)));
        let probe = ProbeHandle::new();
        let (mut r_in, mut t_in, mut b_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (t_in, timed) = scope.new_input::<Vec<(u64, u64)>>();
            let (b_in, batches) = scope.new_input::<Vec<KeyBatch<u64>>>();
            let (a, r, l) = (answers.clone(), rejected.clone(), late.clone());
            let events = if stamps == Stamps::Ticks {
                records.matrix_key_batches(batches, &cfg)
            } else {
                timed.matrix_key_batches_timed(batches, &cfg)
            };
            events
                .unwrap()
                .inspect(move |e| match e {
                    MatrixBatchEvent::Answer(x) => {
                        assert_eq!(x.keys.len(), x.present.len());
                        let range = x.range;
                        for (&k, &present) in x.keys.iter().zip(&x.present) {
                            a.borrow_mut().push((
                                k,
                                range.start(),
                                range.end(),
                                x.issued,
                                x.epoch,
                                present,
                            ));
                        }
                    }
                    MatrixBatchEvent::Rejected { records, .. } => *r.borrow_mut() += records,
                    MatrixBatchEvent::Late { records, .. } => *l.borrow_mut() += records,
                })
                .probe_with(&probe);
            (r_in, t_in, b_in)
        });
        let mut tick = 0;
        feed(&records, &batches, (me, peers, TICKS), |f| match f {
            Feed::Record(k) => match stamps {
                Stamps::Ticks => r_in.send(k),
                Stamps::Late if is_late(tick, k) => t_in.send((tick - 15, k)),
                Stamps::Epochs | Stamps::Late => t_in.send((tick, k)),
            },
            Feed::Batch(keys, range) => b_in.send(KeyBatch {
                keys: keys.to_vec(),
                range,
            }),
            Feed::TickDone(t) => {
                tick = t + 1;
                r_in.advance_to(t + 1);
                b_in.advance_to(t + 1);
                if (t + 1) % EPOCH == 0 {
                    t_in.advance_to(t + 1);
                    worker.step_while(|| probe.less_than(r_in.time()));
                } else {
                    worker.step();
                }
            }
        });
        drop((r_in, t_in, b_in));
        worker.step_while(|| !probe.done());
        let (r, l) = (*rejected.borrow(), *late.borrow());
        (answers.take(), r, l)
    })
    .unwrap();
    let (mut answers, mut rejected, mut late) = (Vec::new(), 0, 0);
    for g in guards.join() {
        let (a, r, l) = g.unwrap();
        answers.extend(a);
        rejected += r;
        late += l;
    }
    answers.sort();
    (answers, rejected, late)
}

/// The core's matrix PBF, one key at a time: one filter per partition holding the records of
/// the epochs up to `epoch`, each asked with the part of the range inside its partition.
fn one_by_one(records: &[(u64, u64)], key: u64, range: TimeRange, epoch: u64) -> bool {
    let cfg = config(Placement::Replicated);
    let last = cfg.epoch_last(epoch);
    let bits = cfg.allocation().total_bits();
    (0..PARTITIONS).any(|p| {
        let lo = p * PARTITION;
        let mut m = MatrixPbf::uniform(PARTITION, bits, HASHES, SEED).unwrap();
        for &(t, k) in records {
            if t <= last && t / PARTITION == p {
                m.insert(&k, t - lo).unwrap();
            }
        }
        let part = range
            .clamp_below(cfg.horizon())
            .and_then(|r| r.intersect(&TimeRange::new(lo, lo + PARTITION - 1).unwrap()));
        part.is_some_and(|r| m.query(&key, TimeRange::new(r.start() - lo, r.end() - lo).unwrap()))
    })
}

/// Asserts that every answer is the core matrix PBF's over `records` at its answering epoch.
fn answers_as_one_by_one(answers: &[Flat], records: &[(u64, u64)]) {
    for &(k, s, e, _, epoch, present) in answers {
        let range = TimeRange::new(s, e).unwrap();
        assert_eq!(
            present,
            one_by_one(records, k, range, epoch),
            "key {k} in [{s}, {e}] at epoch {epoch}"
        );
    }
}

#[test]
fn batches_answer_as_the_matrix_one_key_at_a_time() {
    let (records, batches) = batches_workload();
    let mut seen: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for &(t, k) in &records {
        seen.entry(k).or_default().insert(t);
    }
    let beyond = records
        .iter()
        .filter(|r| r.0 >= PARTITION * PARTITIONS)
        .count() as u64;
    assert!(beyond > 0);
    let (one, rejected_one, _) = run(1, Stamps::Ticks);
    let (two, rejected_two, _) = run(2, Stamps::Ticks);
    assert_eq!(one, two, "1 and 2 workers answer alike");
    assert_eq!((rejected_one, rejected_two), (beyond, beyond));
    let asked: usize = batches.iter().map(|b| b.1.len()).sum();
    assert_eq!(one.len(), asked, "every key of every batch answered");
    answers_as_one_by_one(&one, &records);
    for &(k, s, e, _, _, present) in &one {
        if !present {
            let appeared = seen
                .get(&k)
                .is_some_and(|ts| ts.range(s..=e.min(299)).next().is_some());
            assert!(!appeared, "false negative: {k} in [{s}, {e}]");
        }
    }
    let present = one.iter().filter(|b| b.5).count();
    assert!(
        present > 50 && present < one.len() - 50,
        "{present} of {}",
        one.len()
    );
}

#[test]
fn records_on_their_epochs_timestamp_answer_as_on_their_ticks() {
    let (ticks, rejected, _) = run(1, Stamps::Ticks);
    for workers in [1, 2] {
        let (epochs, r, late) = run(workers, Stamps::Epochs);
        assert_eq!(epochs, ticks, "{workers} workers");
        assert_eq!((r, late), (rejected, 0));
    }
}

#[test]
fn late_records_are_counted_and_indexed_at_their_timestamp() {
    let (records, _) = batches_workload();
    // a late record's timestamp is its epoch's first tick
    let placed: Vec<(u64, u64)> = records
        .iter()
        .map(|&(t, k)| (if is_late(t, k) { t - t % EPOCH } else { t }, k))
        .collect();
    let late = records.iter().filter(|&&(t, k)| is_late(t, k)).count() as u64;
    assert!(late > 20, "{late} late records");
    let (one, _, late_one) = run(1, Stamps::Late);
    let (two, _, late_two) = run(2, Stamps::Late);
    assert_eq!(one, two, "1 and 2 workers answer alike");
    assert_eq!((late_one, late_two), (late, late));
    answers_as_one_by_one(&one, &placed);
}

#[test]
fn sharded_configuration_is_refused() {
    let refused = timely::execute_directly(|worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            let (_, records) = scope.new_input::<Vec<u64>>();
            let (_, batches) = scope.new_input::<Vec<KeyBatch<u64>>>();
            records
                .matrix_key_batches(batches, &config(Placement::Sharded))
                .is_err()
        })
    });
    assert!(refused);
}
