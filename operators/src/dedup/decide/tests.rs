//! Unit tests of the dedup decisions: same-tick repeats and fingerprint collisions.

use super::*;
use chronobloom_core::hash::{CanonicalBytes, Key};
use std::rc::Rc;

/// `(key, payload)`: same-tick records of one key differ by their payload.
type Rec = (u64, u64);

/// A state over `(key, payload)` records keyed by `key`, in either filter kind.
fn state(exact_edge: bool) -> DecideState<Rec> {
    let config = DedupConfig::builder()
        .window(60)
        .epoch_len(10)
        .expected_items_per_window(1_000)
        .exact_edge(exact_edge)
        .build()
        .unwrap();
    let key: KeyBytes<Rec> = Rc::new(|d: &Rec| {
        let mut bytes = CanonicalBytes::new();
        d.0.write_canonical(&mut bytes);
        bytes
    });
    // unused by `decide`, which reads the records' own fingerprints
    let fp: Fingerprint<Rec> = Rc::new(|d: &Rec| d.0);
    DecideState::new(config, 0, 1, Rc::default(), key, fp)
}

/// Decides `records` (all of epoch 0) with fingerprints from `fp`, sorted for comparison.
fn decide(exact_edge: bool, records: &[(Tick, Rec)], fp: fn(u64) -> u64) -> Vec<(Tick, Rec)> {
    let stamps = records.iter().map(|&(t, d)| (t, fp(d.0))).collect();
    let data = records.iter().map(|&(_, d)| d).collect();
    let mut passed = state(exact_edge).decide(0, stamps, data);
    passed.sort_unstable();
    passed
}

/// Per (tick, key), the record with the smallest `bincode` encoding.
fn smallest_encodings(records: &[(Tick, Rec)]) -> Vec<(Tick, Rec)> {
    let mut best: BTreeMap<(Tick, u64), (Vec<u8>, Rec)> = BTreeMap::new();
    for &(t, d) in records {
        let enc = bincode::serialize(&d).unwrap();
        let slot = best.entry((t, d.0)).or_insert((enc.clone(), d));
        if enc < slot.0 {
            *slot = (enc, d);
        }
    }
    let mut out: Vec<_> = best.into_iter().map(|((t, _), (_, d))| (t, d)).collect();
    out.sort_unstable();
    out
}

/// Eight keys, three records each at every one of ticks 3 and 4 (only tick 3's pass: tick
/// 4's keys were seen at 3), with payloads whose little-endian order differs from their
/// numeric order, shuffled by `seed`.
fn same_tick_records(seed: u64) -> Vec<(Tick, Rec)> {
    let mut records = Vec::new();
    for t in [3, 4] {
        for k in 0..8u64 {
            for p in [256 + k, 1 + k, 65_536 * (k + 1)] {
                records.push((t, (k, p)));
            }
        }
    }
    let mut s = seed;
    for i in (1..records.len()).rev() {
        s = chronobloom_core::hash::mix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
        records.swap(i, (s % (i as u64 + 1)) as usize);
    }
    records
}

#[test]
fn same_tick_repeats_pass_the_smallest_encoding_in_any_order() {
    for exact_edge in [false, true] {
        let expected = smallest_encodings(&same_tick_records(0))
            .into_iter()
            .filter(|&(t, _)| t == 3)
            .collect::<Vec<_>>();
        assert_eq!(expected.len(), 8);
        for seed in 0..20 {
            let records = same_tick_records(seed);
            assert_eq!(decide(exact_edge, &records, |k| k), expected, "seed {seed}");
        }
    }
}

#[test]
fn same_tick_fingerprint_collisions_drop_no_key() {
    // keys 0, 2, 4, 6 share a fingerprint, as do 1, 3, 5, 7: the filter takes each group
    // for one key, the exact key bytes must not
    for exact_edge in [false, true] {
        let expected = smallest_encodings(&same_tick_records(0))
            .into_iter()
            .filter(|&(t, _)| t == 3)
            .collect::<Vec<_>>();
        for seed in 0..20 {
            let records: Vec<_> = same_tick_records(seed)
                .into_iter()
                .filter(|&(t, _)| t == 3)
                .collect();
            assert_eq!(
                decide(exact_edge, &records, |k| k % 2),
                expected,
                "seed {seed}"
            );
            assert_eq!(decide(exact_edge, &records, |_| 7), expected, "seed {seed}");
        }
    }
}
