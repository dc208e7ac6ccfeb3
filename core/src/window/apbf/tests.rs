//! Tests fail loudly: unwrapping a constructor that the test itself configured is the point.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::hash::Probes;
use crate::testing::binomial_upper_99;
use crate::window::{run_probability, MAX_K, MAX_LEVEL};
use proptest::prelude::*;

/// The published (k, l) configurations of FORMULAS.md: FPR, half a unit of its last printed digit,
/// and bits per item (printed to 0.1).
const TABLE: &[(u32, u32, f64, f64, f64)] = &[
    (4, 3, 0.1006, 5e-5, 13.5),
    (5, 7, 0.1016, 5e-5, 12.4),
    (6, 14, 0.0986, 5e-5, 12.4),
    (7, 28, 0.0990, 5e-5, 12.6),
    (8, 56, 0.1002, 5e-5, 13.2),
    (7, 5, 0.0112, 5e-5, 24.2),
    (8, 8, 0.0102, 5e-5, 23.1),
    (9, 14, 0.0102, 5e-5, 21.3),
    (10, 25, 0.0101, 5e-5, 20.2),
    (11, 46, 0.0099, 5e-5, 19.7),
    (12, 88, 0.0100, 5e-5, 19.7),
    (10, 7, 1.21e-3, 5e-6, 35.0),
    (11, 9, 9.2e-4, 5e-6, 35.3),
    (12, 14, 9.8e-4, 5e-6, 32.2),
    (13, 23, 9.9e-4, 5e-6, 29.4),
    (14, 40, 9.9e-4, 5e-6, 27.3),
    (15, 74, 1.0e-3, 5e-5, 26.0),
];

#[test]
fn f_reproduces_the_published_table() {
    for &(k, l, fpr, half_unit, bits) in TABLE {
        let p = ApbfParams::new(k, l).unwrap();
        assert!(
            (p.fpr() - fpr).abs() <= half_unit,
            "F({k}, {l}) = {} but the table shows {fpr}",
            p.fpr()
        );
        assert!(
            (p.bits_per_item() - bits).abs() <= 0.05 + 1e-9,
            "bits/item of ({k}, {l}) = {} but the table shows {bits}",
            p.bits_per_item()
        );
    }
}

#[test]
fn for_fpr_picks_the_largest_l_within_the_target() {
    for eps in [0.1, 0.01, 0.001, 1e-4, 1e-5] {
        for level in 0..=5 {
            let p = ApbfParams::for_fpr(eps, level).unwrap();
            assert_eq!(p.k(), (1.0 / eps).log2().ceil() as u32 + level);
            assert!(
                p.fpr() <= eps,
                "F({}, {}) = {} > {eps}",
                p.k(),
                p.l(),
                p.fpr()
            );
            let next = ApbfParams::new(p.k(), p.l() + 1).unwrap();
            assert!(next.fpr() > eps, "l = {} + 1 still fits {eps}", p.l());
        }
    }
}

#[test]
fn for_fpr_lands_beside_the_published_choice() {
    // The table picks the l nearest ε; ours is the largest with F <= ε, so it is the table's l
    // or one below it whenever the table's F exceeds ε.
    for &(k, l, fpr, _, _) in TABLE {
        let eps = 10f64.powf(fpr.log10().round());
        let level = k - (1.0 / eps).log2().ceil() as u32;
        let ours = ApbfParams::for_fpr(eps, level).unwrap();
        assert_eq!(ours.k(), k);
        let published = ApbfParams::new(k, l).unwrap();
        if published.fpr() <= eps {
            assert!(ours.l() >= l);
        } else {
            assert!(ours.l() < l);
        }
        assert!(
            ours.l().abs_diff(l) <= l / 4 + 1,
            "({k}, {l}) vs ours {}",
            ours.l()
        );
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert!(ApbfParams::for_fpr(0.0, 0).is_err());
    assert!(ApbfParams::for_fpr(1.0, 0).is_err());
    assert!(ApbfParams::for_fpr(f64::NAN, 0).is_err());
    assert!(ApbfParams::for_fpr(0.01, MAX_LEVEL + 1).is_err());
    assert!(ApbfParams::for_fpr(1e-300, 0).is_err());
    // k + l past u32::MAX is refused, not an overflow
    assert!(ApbfParams::new(MAX_K, u32::MAX).is_err());
    assert!(ApbfParams::new(0, 3).is_err());
    assert!(ApbfParams::new(4, 0).is_err());
    assert!(Apbf::with_fpr(0, 0.01, 1).is_err());
    assert!(Apbf::new(ApbfParams::new(4, 3).unwrap(), 0, 1).is_err());
    assert!(Apbf::new(ApbfParams::new(4, 3).unwrap(), u64::MAX, 1).is_err());
}

#[test]
fn time_going_backwards_is_refused() {
    let mut f = Apbf::with_fpr(100, 0.01, 1).unwrap();
    f.insert(&1u64, 10).unwrap();
    assert_eq!(
        f.insert(&2u64, 9),
        Err(Error::TimeWentBackwards { now: 9, last: 10 })
    );
    assert!(f.advance(9).is_err());
    assert!(f.advance(10).is_ok());
}

#[test]
fn position_is_the_probe_sequence_in_closed_form() {
    let m = FastMod::new(1_000_003).unwrap();
    for key in 0..50u64 {
        let h = KeyHash::of(&key, 9);
        for (i, p) in Probes::new(h, 200, m).enumerate() {
            assert_eq!(position(h, i as u64, m), p);
        }
    }
}

#[test]
fn run_probability_matches_enumeration() {
    let fills = [0.3, 0.9, 0.5, 0.7, 0.2, 0.6];
    for k in 1..=4 {
        let mut exact = 0.0;
        for mask in 0u32..1 << fills.len() {
            let p: f64 = (0..fills.len())
                .map(|i| {
                    if mask >> i & 1 == 1 {
                        fills[i]
                    } else {
                        1.0 - fills[i]
                    }
                })
                .product();
            let run = (0..=fills.len() - k).any(|s| (s..s + k).all(|i| mask >> i & 1 == 1));
            if run {
                exact += p;
            }
        }
        assert!((run_probability(&fills, k) - exact).abs() < 1e-12);
    }
}

#[test]
fn items_count_what_is_still_held() {
    let mut f = Apbf::new(ApbfParams::new(2, 2).unwrap(), 5, 3).unwrap();
    for i in 0..7u64 {
        f.insert(&i, 0).unwrap();
    }
    assert_eq!(f.items(), 7);
    for i in 7..100u64 {
        f.insert(&i, 0).unwrap();
    }
    // The current generation plus k + l - 1 = 3 older ones.
    assert_eq!(f.items(), 5 + 3 * 5);
    assert_eq!(f.memory_bits(), 4 * 64);
}

#[test]
fn serde_round_trip_and_validation() {
    let mut f = Apbf::with_fpr(200, 0.01, 5).unwrap();
    for i in 0..450u64 {
        f.insert(&i, i).unwrap();
    }
    let json = serde_json::to_string(&f).unwrap();
    let back: Apbf = serde_json::from_str(&json).unwrap();
    assert_eq!(back, f);
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["newest"] = 10_000.into();
    assert!(serde_json::from_value::<Apbf>(v.clone()).is_err());
    v["newest"] = 0.into();
    v["count"] = 1_000_000.into();
    assert!(serde_json::from_value::<Apbf>(v.clone()).is_err());
    v["count"] = 0.into();
    v["params"]["l"] = 0.into();
    assert!(serde_json::from_value::<Apbf>(v).is_err());
}

/// Steady state: after 3 windows of distinct keys, keys never inserted are queried after each
/// insertion, so every phase of a generation is sampled. The count of false positives must not
/// exceed the 99% binomial upper bound for a rate of 1.1 ε. At least 880 false positives are
/// expected at 1.1 ε, so the normal approximation holds and a true rate of 1.25 ε fails the test
/// with probability above 95%.
#[test]
fn steady_state_fpr_is_within_target() {
    for (eps, per_insert, seed) in [(0.1, 20, 11u64), (0.01, 40, 12), (0.001, 200, 13)] {
        let window = 2_000u64;
        let mut f = Apbf::with_fpr(window, eps, seed).unwrap();
        for i in 0..3 * window {
            f.insert(&i, i).unwrap();
        }
        let (mut fp, mut queries) = (0u64, 0u64);
        let mut absent = u64::MAX / 2;
        for i in 3 * window..5 * window {
            f.insert(&i, i).unwrap();
            for _ in 0..per_insert {
                absent += 1;
                queries += 1;
                fp += u64::from(f.contains(&absent, i));
            }
        }
        let bound = binomial_upper_99(queries, 1.1 * eps);
        assert!(
            fp as f64 <= bound,
            "ε = {eps}: {fp} false positives in {queries} queries (99% bound at 1.1 ε: {bound})"
        );
    }
}

/// Streams of keys drawn from a small universe (so keys repeat) with repeated and jumping
/// timestamps.
fn stream() -> impl Strategy<Value = Vec<(u16, u8)>> {
    proptest::collection::vec(
        (0u16..300, prop_oneof![Just(0u8), 0u8..3, Just(200)]),
        1..700,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn scan_finds_exactly_the_runs(hits in proptest::collection::vec(any::<bool>(), 1..40), k in 1usize..8) {
        let expect = hits.len() >= k && hits.windows(k).any(|w| w.iter().all(|&h| h));
        prop_assert_eq!(scan(hits.len(), k, |i| hits[i]), expect);
    }

    #[test]
    fn no_false_negatives_in_the_last_l_generations(
        items in stream(),
        k in 1u32..6,
        l in 1u32..6,
        g in 1u64..20,
        seed in any::<u64>(),
    ) {
        let mut f = Apbf::new(ApbfParams::new(k, l).unwrap(), g, seed).unwrap();
        let mut now = 0u64;
        let mut history: Vec<u16> = Vec::new();
        for (key, dt) in items {
            now += u64::from(dt);
            f.insert(&key, now).unwrap();
            history.push(key);
            let recent = history.len().saturating_sub(f.window() as usize);
            for &seen in &history[recent..] {
                prop_assert!(f.contains(&seen, now), "key {} of the window is missing", seen);
            }
        }
    }
}
