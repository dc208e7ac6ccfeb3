//! Batches of keys sharing a range in the dataflow: PBF-2's merged state
//! ([`MergeKeyBatches`]) against the matrix layout ([`MatrixKeyBatches`]), one worker, the same
//! configuration (issue #16).
//!
//! 20,000 keys at 5 ticks each over 4,096 ticks (one partition, 2·10^7 bits, 7 hashes), then
//! batches of `B` keys (half never seen) over ranges of 256 ticks, all issued at the last tick.
//! Records are indexed first; the time measured is from sending the batches to their last
//! answer, so it is the batches' alone. Prints one JSON object per structure and batch size:
//! `ns_per_key`, and the false positive rate over the absent (key, range) pairs.
//!
//! ```text
//! cargo bench --bench batch_dataflow
//! ```

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom::core::hash::mix64;
use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::timely;
use chronobloom::operators::{
    IndexConfig, KeyBatch, LocalIndex, MatrixBatchEvent, MatrixKeyBatches, MergeKeyBatches,
};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Instant;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const HORIZON: u64 = 4_096;
const KEYS: u64 = 20_000;
const TICKS_PER_KEY: u64 = 5;
const RANGE: u64 = 256;
/// Keys asked about in all, per batch size.
const ASKED: u64 = 200_000;

fn config() -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(64)
        .partition_len(HORIZON)
        .partitions(1)
        .bits(20_000_000)
        .hashes(7)
        .seed(3)
        .build()
        .unwrap()
}

fn records() -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = (0..KEYS)
        .flat_map(|k| (0..TICKS_PER_KEY).map(move |j| (mix64(k * 5 + j) % HORIZON, k)))
        .collect();
    r.sort_unstable();
    r
}

fn batches(size: u64) -> Vec<KeyBatch<u64>> {
    (0..ASKED / size)
        .map(|b| {
            let start = mix64(b) % (HORIZON - RANGE);
            KeyBatch {
                keys: (0..size)
                    .map(|i| mix64(b * 7_919 + i) % (2 * KEYS))
                    .collect(),
                range: TimeRange::new(start, start + RANGE - 1).unwrap(),
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Structure {
    Pbf2,
    Matrix,
}

/// Answers kept for the accuracy check.
type Answers = Rc<RefCell<Vec<(u64, TimeRange, bool)>>>;

/// Appends a batch's answers to `to`.
fn keep(to: &Answers, keys: &[u64], present: &[bool], range: TimeRange) {
    to.borrow_mut()
        .extend(keys.iter().zip(present).map(|(&k, &p)| (k, range, p)));
}

/// Seconds from sending the batches to their last answer, and the answers `(key, range, present)`.
fn run(structure: Structure, size: u64) -> (f64, Vec<(u64, TimeRange, bool)>) {
    let (records, batches) = (records(), batches(size));
    timely::execute_directly(move |worker| {
        let cfg = config();
        let answers: Answers = Rc::default();
        let probe = ProbeHandle::new();
        let (mut r_in, mut b_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, recs) = scope.new_input::<Vec<u64>>();
            let (b_in, asked) = scope.new_input::<Vec<KeyBatch<u64>>>();
            let a = answers.clone();
            match structure {
                Structure::Pbf2 => recs
                    .local_index(&cfg)
                    .merge_and_query_batches(asked, &cfg)
                    .unwrap()
                    .inspect(move |x| keep(&a, &x.keys, &x.present, x.range))
                    .probe_with(&probe)
                    .map(|_| ()),
                Structure::Matrix => recs
                    .matrix_key_batches(asked, &cfg)
                    .unwrap()
                    .inspect(move |e| {
                        if let MatrixBatchEvent::Answer(x) = e {
                            keep(&a, &x.keys, &x.present, x.range);
                        }
                    })
                    .probe_with(&probe)
                    .map(|_| ()),
            };
            (r_in, b_in)
        });
        for &(t, k) in &records {
            if t > *r_in.time() {
                r_in.advance_to(t);
                b_in.advance_to(t);
            }
            r_in.send(k);
        }
        // every record's epoch complete; the batches come at the last tick
        r_in.advance_to(HORIZON);
        b_in.advance_to(HORIZON - 1);
        worker.step_while(|| probe.less_than(&(HORIZON - 1)));
        let start = Instant::now();
        for b in batches {
            b_in.send(b);
        }
        drop((r_in, b_in));
        worker.step_while(|| !probe.done());
        let secs = start.elapsed().as_secs_f64();
        (secs, answers.take())
    })
}

fn main() {
    let mut seen: HashMap<u64, BTreeSet<u64>> = HashMap::new();
    for (t, k) in records() {
        seen.entry(k).or_default().insert(t);
    }
    let appeared = |k: &u64, r: &TimeRange| {
        seen.get(k)
            .is_some_and(|ts| ts.range(r.start()..=r.end()).next().is_some())
    };
    for size in [16u64, 256, 1_000] {
        for structure in [Structure::Pbf2, Structure::Matrix] {
            let (secs, answers) = run(structure, size);
            let absent: Vec<bool> = answers
                .iter()
                .filter(|(k, r, _)| !appeared(k, r))
                .map(|a| a.2)
                .collect();
            let missed = answers
                .iter()
                .filter(|(k, r, p)| !p && appeared(k, r))
                .count();
            assert_eq!(missed, 0, "{structure:?}: false negatives");
            println!(
                "{{\"structure\":\"{:?}\",\"batch\":{size},\"keys\":{},\"ns_per_key\":{:.1},\
                 \"absent\":{},\"fpr\":{:.4}}}",
                structure,
                answers.len(),
                secs * 1e9 / answers.len() as f64,
                absent.len(),
                absent.iter().filter(|&&p| p).count() as f64 / absent.len().max(1) as f64
            );
        }
    }
}
