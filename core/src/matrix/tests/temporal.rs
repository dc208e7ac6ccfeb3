//! The matrix per PBF level: batch answers (many keys, or many ranges) equal one-by-one answers,
//! no false negatives, and a
//! comparison with PBF-2 answering the same batch one key at a time.

use super::super::*;
use crate::hash::mix64;
use crate::temporal::{Pbf2, TemporalFilter, TimeRange};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Exact truth: the ticks each key appeared at.
type Truth = BTreeMap<u64, BTreeSet<u64>>;

fn appeared(truth: &Truth, key: u64, r: TimeRange) -> bool {
    truth
        .get(&key)
        .is_some_and(|ticks| ticks.range(r.start()..=r.end()).next().is_some())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn batch_equals_one_by_one_without_false_negatives(
        horizon in 1u64..300,
        records in prop::collection::vec((0u64..40, 0u64..300), 0..80),
        ranges in prop::collection::vec((0u64..320, 0u64..320), 1..8),
        k in 1u32..8,
        bits in 1u64..40_000,
        seed in any::<u64>(),
    ) {
        let mut f = MatrixPbf::uniform(horizon, bits, k, seed).expect("valid");
        let mut truth = Truth::new();
        for &(key, tick) in &records {
            if tick < horizon {
                f.insert(&key, tick).expect("inside the horizon");
                truth.entry(key).or_default().insert(tick);
            } else {
                prop_assert!(f.insert(&key, tick).is_err());
            }
        }
        let keys: Vec<u64> = (0..45).collect();
        let rs: Vec<TimeRange> = ranges
            .iter()
            .map(|&(s, e)| TimeRange::new(s.min(e), s.max(e)).expect("ordered"))
            .collect();
        for &key in &keys {
            let by_range = f.query_ranges(&key, &rs);
            prop_assert_eq!(by_range.len(), rs.len());
            for (&r, &got) in rs.iter().zip(&by_range) {
                prop_assert_eq!(got, f.query(&key, r));
            }
        }
        for &(s, e) in &ranges {
            let r = TimeRange::new(s.min(e), s.max(e)).expect("ordered");
            let batch = f.query_keys(&keys, r);
            for (&key, &got) in keys.iter().zip(&batch) {
                prop_assert_eq!(got, f.query(&key, r));
                prop_assert!(got || !appeared(&truth, key, r), "false negative {} in {:?}", key, r);
            }
        }
    }
}

#[test]
fn serde_round_trip() {
    let mut f = MatrixPbf::uniform(100, 50_000, 3, 4).expect("valid");
    for t in 0..100u64 {
        f.insert(&(t * 7), t).expect("inside");
    }
    let back: MatrixPbf =
        serde_json::from_str(&serde_json::to_string(&f).expect("json")).expect("valid");
    assert_eq!(back, f);
    let other = MatrixPbf::uniform(1_000, 50_000, 3, 4).expect("valid");
    let mut v = serde_json::to_value(&f).expect("json");
    v["levels"] = serde_json::to_value(&other).expect("json")["levels"].clone();
    assert!(
        serde_json::from_value::<MatrixPbf>(v).is_err(),
        "levels of another horizon"
    );
}

/// A workload of 2,000 keys over 4,096 ticks, each key at 5 ticks; PBF-2 and the matrix PBF get
/// the same bits (2·10^6, about 15 per (key, bucket) pair and level). Batches of 1,000 keys (half
/// of them never seen) over 40 ranges of up to 600 ticks: the batch answers are the one-by-one
/// answers, neither structure has a false negative, so the two agree on every (key, range) that
/// is present and differ only by false positives. Both rates are printed (docs/matrix.md).
#[test]
fn batch_query_against_pbf2_one_by_one() {
    let (horizon, keys, per_key) = (4_096u64, 2_000u64, 5u64);
    let bits = 2_000_000u64;
    let mut pbf = Pbf2::uniform(horizon, bits, 7, 11).expect("valid");
    let mut mat = MatrixPbf::uniform(horizon, bits, 7, 11).expect("valid");
    assert!(mat.memory_bits() <= pbf.memory_bits());
    let mut truth = Truth::new();
    for key in 0..keys {
        for j in 0..per_key {
            let tick = mix64(key * per_key + j) % horizon;
            pbf.insert(&key, tick).expect("inside");
            mat.insert(&key, tick).expect("inside");
            truth.entry(key).or_default().insert(tick);
        }
    }
    let batch: Vec<u64> = (0..1_000u64)
        .map(|i| if i % 2 == 0 { i } else { keys + i })
        .collect();
    let (mut absent, mut fp_mat, mut fp_pbf, mut present) = (0u64, 0u64, 0u64, 0u64);
    for q in 0..40u64 {
        let s = mix64(q ^ 0xfeed) % horizon;
        let r = TimeRange::new(s, (s + 1 + mix64(q) % 600).min(horizon - 1)).expect("ordered");
        let answers = mat.query_keys(&batch, r);
        for (&key, &got) in batch.iter().zip(&answers) {
            assert_eq!(
                got,
                mat.query(&key, r),
                "batch vs one by one: {key} in {r:?}"
            );
            let by_pbf = pbf.query(&key, r);
            if appeared(&truth, key, r) {
                assert!(
                    got && by_pbf,
                    "false negative {key} in {r:?}: {got}, {by_pbf}"
                );
                present += 1;
            } else {
                absent += 1;
                fp_mat += u64::from(got);
                fp_pbf += u64::from(by_pbf);
            }
        }
    }
    assert!(
        present > 1_000,
        "the workload must exercise present keys: {present}"
    );
    eprintln!(
        "present {present}, absent {absent} (key, range) queries; false positive rate: \
         matrix {:.5}, PBF-2 {:.5}",
        fp_mat as f64 / absent as f64,
        fp_pbf as f64 / absent as f64
    );
}

/// A level's rows are direct-mapped: bucket `b` is row `b mod m1` (time buckets are small
/// consecutive integers, which a scaled position would crowd into the first rows).
#[test]
fn direct_mapped_rows_are_the_bucket_mod_rows() {
    let shape = MatrixShape::new(1_000, 640, 1, (1, 3), MatrixLayout::MinimumStorage).unwrap();
    let m = MatrixBloom::new(shape, 3).unwrap();
    let stride = m.geometry.stride;
    for b in [0u64, 1, 7, 999, 1_000, 1_234, u64::MAX] {
        assert_eq!(m.geometry.row_at(b).offsets(), [(b % 1_000) * stride]);
    }
}
