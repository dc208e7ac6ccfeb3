//! Tests unwrap freely: a panic is a failure with its message.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::error::Error;
use crate::hash::{mix64, KeyHash};
use std::collections::HashMap;

/// Bias and relative RMS error of FM estimates of `n` distinct keys over `trials` seeds.
fn fm_error(m: usize, n: u64, trials: u64) -> (f64, f64) {
    let errors: Vec<f64> = (0..trials)
        .map(|seed| {
            let mut fm = FmSketch::new(m, seed).unwrap();
            (0..n).for_each(|k| fm.insert(&k));
            fm.estimate() / n as f64 - 1.0
        })
        .collect();
    let t = trials as f64;
    let bias = errors.iter().sum::<f64>() / t;
    let rmse = (errors.iter().map(|x| x * x).sum::<f64>() / t).sqrt();
    (bias, rmse)
}

/// 200 trials estimate the RMS error to within about 1/√(2·200) = 5% of itself (one standard
/// deviation), so the factors below leave at least three standard deviations of room over the
/// measured values while still failing for an estimator that is off by the 0.22 bias of the
/// uncorrected small-range estimate or by a wrong φ.
#[test]
fn fm_stays_within_its_stated_error() {
    for m in [64usize, 256] {
        let bound = 0.78 / (m as f64).sqrt();
        for n in [1u64, 10, 50, 100, 200, 400, 1_000, 3_000, 10_000] {
            let (bias, rmse) = fm_error(m, n, 200);
            println!("FM m={m} n={n}: bias {bias:+.4}, rmse {rmse:.4}, 0.78/√m {bound:.4}");
            assert!(
                rmse <= 1.35 * bound,
                "m={m} n={n}: rmse {rmse} > 1.35 × {bound}"
            );
            assert!(bias.abs() <= 0.6 * bound, "m={m} n={n}: bias {bias}");
            if n >= 8 * m as u64 {
                assert!(
                    rmse <= 1.15 * bound,
                    "m={m} n={n}: rmse {rmse} > 1.15 × {bound}"
                );
            }
        }
    }
}

#[test]
fn fm_counts_distinct_keys_only_and_merges_to_the_union() {
    let mut a = FmSketch::with_accuracy(0.05, 3).unwrap();
    assert_eq!(a.bitmaps(), 244); // ⌈(0.78 / 0.05)²⌉
    assert!(a.is_empty());
    assert_eq!(a.estimate(), 0.0);
    (0..5_000u64).for_each(|k| a.insert(&k));
    let once = a.clone();
    (0..5_000u64).for_each(|k| a.insert(&k));
    assert_eq!(a, once, "duplicates change nothing");
    let mut b = FmSketch::with_accuracy(0.05, 3).unwrap();
    (2_500..7_500u64).for_each(|k| b.insert(&k));
    let mut direct = FmSketch::with_accuracy(0.05, 3).unwrap();
    (0..7_500u64).for_each(|k| direct.insert(&k));
    a.merge(&b).unwrap();
    assert_eq!(a, direct, "merge is exactly the sketch of the union");
    let (lo, hi) = a.bounds(3.0);
    assert!(lo < 7_500.0 && 7_500.0 < hi);
}

#[test]
fn fm_refuses_other_shapes_and_bad_input() {
    let mut a = FmSketch::new(64, 1).unwrap();
    assert!(matches!(
        a.merge(&FmSketch::new(128, 1).unwrap()),
        Err(Error::ShapeMismatch {
            what: "bitmaps",
            ..
        })
    ));
    assert!(matches!(
        a.merge(&FmSketch::new(64, 2).unwrap()),
        Err(Error::ShapeMismatch { what: "seed", .. })
    ));
    assert!(FmSketch::new(0, 1).is_err());
    assert!(FmSketch::new(MAX_BITMAPS + 1, 1).is_err());
    for e in [0.0, 1.0, f64::NAN, -0.1, 1e-4] {
        assert!(FmSketch::with_accuracy(e, 1).is_err(), "{e}");
    }
}

#[test]
fn fm_serde_round_trips_and_validates() {
    let mut a = FmSketch::new(32, 9).unwrap();
    (0..1_000u64).for_each(|k| a.insert(&k));
    let json = serde_json::to_string(&a).unwrap();
    let back: FmSketch = serde_json::from_str(&json).unwrap();
    assert_eq!(a, back);
    let bin = bincode::serialize(&a).unwrap();
    assert_eq!(a, bincode::deserialize::<FmSketch>(&bin).unwrap());
    assert!(serde_json::from_str::<FmSketch>(r#"{"seed":1,"bitmaps":[]}"#).is_err());
}

#[test]
fn fm_hashing_is_pinned() {
    // The bitmap and bit come from the seeded xxh3 key hash: fixed across platforms and runs.
    let mut a = FmSketch::new(16, 42).unwrap();
    a.insert(&"10.0.0.1");
    let h = KeyHash::of(&"10.0.0.1", 42);
    let mut b = FmSketch::new(16, 42).unwrap();
    b.insert_hash(h);
    assert_eq!(a, b);
    let j = ((u128::from(h.lo) * 16) >> 64) as usize;
    let bitmaps = serde_json::to_value(&a).unwrap()["bitmaps"].clone();
    assert_eq!(bitmaps[j], 1u32 << h.hi.trailing_zeros().min(31));
}

/// A Zipf-like stream over `keys` keys: key ⌊keys^{u²}⌋ for uniform u.
fn zipf_stream(len: u64, keys: u64, seed: u64) -> Vec<u64> {
    (0..len)
        .map(|i| {
            let u = (mix64(seed ^ mix64(i)) >> 11) as f64 / (1u64 << 53) as f64;
            (keys as f64).powf(u * u) as u64
        })
        .collect()
}

/// Count-Min over 20 seeds × 1,000 keys: every estimate is at least the true count; the fraction
/// exceeding it by more than εN is at most δ plus four binomial standard deviations
/// (√(δ(1 − δ)/20,000) ≈ 0.0006); and the mean overestimate is at most N / w, the expected
/// collision mass of one row (which the minimum over rows cannot exceed in expectation; its
/// sample mean over 20,000 keys has a standard error far below the 10% slack allowed).
#[test]
fn count_min_stays_within_its_stated_error() {
    let (epsilon, delta) = (0.002, 0.05);
    for conservative in [false, true] {
        let (mut checked, mut over, mut mean_ratio) = (0u64, 0u64, 0.0);
        let mut worst = 0.0f64;
        for seed in 0..20 {
            let mut cm = CountMinSketch::with_accuracy(epsilon, delta, seed)
                .unwrap()
                .conservative(conservative);
            let mut exact: HashMap<u64, u64> = HashMap::new();
            for k in zipf_stream(20_000, 50_000, seed) {
                cm.insert(&k, 1);
                *exact.entry(k).or_default() += 1;
            }
            assert_eq!(cm.total(), 20_000);
            let n = cm.total() as f64;
            // The 1,000 keys 0..1000 include absent ones, where any count is pure error.
            for k in 0..1_000u64 {
                let truth = exact.get(&k).copied().unwrap_or(0);
                let est = cm.estimate(&k);
                assert!(est >= truth, "underestimate for {k}: {est} < {truth}");
                let err = (est - truth) as f64;
                worst = worst.max(err / n);
                mean_ratio += err / (n / cm.width() as f64);
                checked += 1;
                over += u64::from(err > epsilon * n);
            }
        }
        let rate = over as f64 / checked as f64;
        let mean_ratio = mean_ratio / checked as f64;
        let sd = (delta * (1.0 - delta) / checked as f64).sqrt();
        println!(
            "CM ε={epsilon} δ={delta} conservative={conservative}: P(err > εN) = {rate:.5} \
             (bound {delta}), worst err/N = {worst:.5}, mean err/(N/w) = {mean_ratio:.3}"
        );
        assert!(mean_ratio <= 1.1, "mean overestimate {mean_ratio} × N/w");
        assert!(rate <= delta + 4.0 * sd, "{rate} > {delta}");
    }
}

#[test]
fn conservative_update_never_overshoots_the_plain_sketch() {
    let mut plain = CountMinSketch::new(64, 4, 5).unwrap();
    let mut cons = CountMinSketch::new(64, 4, 5).unwrap().conservative(true);
    let stream = zipf_stream(5_000, 1_000, 1);
    for &k in &stream {
        plain.insert(&k, 2);
        cons.insert(&k, 2);
    }
    let mut exact: HashMap<u64, u64> = HashMap::new();
    stream
        .iter()
        .for_each(|&k| *exact.entry(k).or_default() += 2);
    let mut better = 0;
    for k in 0..1_000u64 {
        let truth = exact.get(&k).copied().unwrap_or(0);
        let (p, c) = (plain.estimate(&k), cons.estimate(&k));
        assert!(truth <= c && c <= p, "{k}: {truth} <= {c} <= {p}");
        better += usize::from(c < p);
    }
    assert!(
        better > 100,
        "conservative update helped for only {better} keys"
    );
}

#[test]
fn count_min_merges_by_addition() {
    let mut a = CountMinSketch::with_accuracy(0.01, 0.01, 4).unwrap();
    let mut b = a.clone();
    let mut both = a.clone();
    for (i, k) in zipf_stream(3_000, 500, 2).into_iter().enumerate() {
        let part = if i % 3 == 0 { &mut a } else { &mut b };
        part.insert(&k, 1 + i as u64 % 4);
        both.insert(&k, 1 + i as u64 % 4);
    }
    a.merge(&b).unwrap();
    assert_eq!(a, both, "the merged sketch is the sketch of both streams");
    let wider = CountMinSketch::new(a.width() + 1, a.depth(), 4).unwrap();
    assert!(matches!(
        a.merge(&wider),
        Err(Error::ShapeMismatch { what: "width", .. })
    ));
    let other_seed = CountMinSketch::new(a.width(), a.depth(), 5).unwrap();
    assert!(matches!(
        a.merge(&other_seed),
        Err(Error::ShapeMismatch { what: "seed", .. })
    ));
    let cu = CountMinSketch::new(a.width(), a.depth(), 4)
        .unwrap()
        .conservative(true);
    assert!(matches!(
        a.merge(&cu),
        Err(Error::ShapeMismatch {
            what: "conservative update",
            ..
        })
    ));
}

#[test]
fn count_min_shape_and_bad_input() {
    let cm = CountMinSketch::with_accuracy(0.01, 0.01, 0).unwrap();
    assert_eq!((cm.width(), cm.depth()), (272, 5)); // ⌈e / 0.01⌉, ⌈ln 100⌉
    assert!(cm.epsilon() <= 0.01 && cm.failure_probability() <= 0.01);
    assert!(CountMinSketch::new(0, 3, 0).is_err());
    assert!(CountMinSketch::new(3, 0, 0).is_err());
    assert!(CountMinSketch::new(usize::MAX, 2, 0).is_err());
    for (e, d) in [
        (0.0, 0.1),
        (0.1, 0.0),
        (1.0, 0.1),
        (f64::NAN, 0.1),
        (1e-12, 0.1),
    ] {
        assert!(CountMinSketch::with_accuracy(e, d, 0).is_err(), "{e} {d}");
    }
    let mut huge = CountMinSketch::new(4, 2, 0).unwrap();
    huge.insert(&1u8, u64::MAX);
    huge.insert(&1u8, u64::MAX); // saturates, never panics
    assert_eq!(huge.estimate(&1u8), u64::MAX);
}

#[test]
fn count_min_serde_round_trips_and_validates() {
    let mut cm = CountMinSketch::new(50, 3, 8).unwrap().conservative(true);
    (0..500u64).for_each(|k| cm.insert(&(k % 37), k));
    let json = serde_json::to_string(&cm).unwrap();
    assert_eq!(cm, serde_json::from_str::<CountMinSketch>(&json).unwrap());
    let bin = bincode::serialize(&cm).unwrap();
    assert_eq!(cm, bincode::deserialize::<CountMinSketch>(&bin).unwrap());
    let bad = r#"{"seed":0,"width":2,"depth":2,"conservative":false,"total":0,"counters":[0,0,0]}"#;
    assert!(serde_json::from_str::<CountMinSketch>(bad).is_err());
    let zero = r#"{"seed":0,"width":0,"depth":2,"conservative":false,"total":0,"counters":[]}"#;
    assert!(serde_json::from_str::<CountMinSketch>(zero).is_err());
}
