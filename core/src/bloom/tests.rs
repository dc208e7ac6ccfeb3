use super::*;
use crate::error::Error;
use crate::hash::mix64;
use crate::testing::assert_bloom_fpr;
use proptest::prelude::*;

const ITEMS: u64 = 20_000;
const QUERIES: u64 = 200_000;

/// Measured FPR against eq. 2 evaluated for the filter's own (m, k, n).
fn check_fpr<F: Filter>(
    what: &str,
    f: &mut F,
    insert: impl Fn(&mut F, u64),
    absent: impl Fn(&F, u64) -> bool,
) {
    for i in 0..ITEMS {
        insert(f, i);
    }
    let fp = (0..QUERIES).filter(|&q| absent(f, q)).count() as u64;
    assert_bloom_fpr(what, fp, QUERIES, f.bit_len(), f.hashes(), ITEMS, f.ones());
}

#[test]
fn fpr_matches_eq2_on_sequential_u64() {
    let mut f = BloomFilter::with_fpr(ITEMS, 0.01, 1).unwrap();
    check_fpr(
        "sequential u64",
        &mut f,
        |f, i| f.insert(&i),
        |f, q| f.contains(&(q + 1_000_000_000)),
    );
}

#[test]
fn fpr_matches_eq2_on_random_u64() {
    let mut f = BloomFilter::with_fpr(ITEMS, 0.01, 2).unwrap();
    check_fpr(
        "random u64",
        &mut f,
        |f, i| f.insert(&mix64(i)),
        |f, q| f.contains(&mix64(q + ITEMS)),
    );
}

#[test]
fn fpr_matches_eq2_on_strings() {
    let mut f = BloomFilter::with_fpr(ITEMS, 0.05, 3).unwrap();
    check_fpr(
        "strings",
        &mut f,
        |f, i| f.insert(format!("10.0.{}.{}:{}", i % 256, i / 256, 443).as_str()),
        |f, q| f.contains(format!("host-{q}").as_str()),
    );
}

#[test]
fn fpr_matches_eq2_on_sequential_u64_odd_size() {
    // A prime m and a k with no relation to it: the reduction must not bias probes.
    let mut f = BloomFilter::new(150_001, 5, 4).unwrap();
    check_fpr(
        "sequential u64, prime m",
        &mut f,
        |f, i| f.insert(&i),
        |f, q| f.contains(&(q + ITEMS)),
    );
}

#[test]
fn blocked_filter_has_no_false_negatives_and_a_bounded_fpr() {
    let mut f = BlockedBloomFilter::with_fpr(ITEMS, 0.01, 5).unwrap();
    for i in 0..ITEMS {
        f.insert(&i);
    }
    assert!((0..ITEMS).all(|i| f.contains(&i)));
    let fp = (0..QUERIES).filter(|&q| f.contains(&(q + ITEMS))).count() as f64 / QUERIES as f64;
    // Blocking costs accuracy; at 9.6 bits per key the literature puts it below 2x the standard.
    assert!(fp < 0.02, "blocked FPR {fp}");
}

#[test]
fn estimates_follow_the_fill() {
    let mut f = BloomFilter::with_fpr(ITEMS, 0.01, 6).unwrap();
    for i in 0..ITEMS {
        f.insert(&i);
    }
    let n = f.estimated_items();
    assert!(
        (n - ITEMS as f64).abs() < 0.02 * ITEMS as f64,
        "estimated {n}"
    );
    let p = f.estimated_fpr();
    assert!((0.007..0.013).contains(&p), "estimated fpr {p}");
}

#[test]
fn union_refuses_other_shapes() {
    let mut a = BloomFilter::new(1000, 3, 0).unwrap();
    for (b, what) in [
        (BloomFilter::new(1001, 3, 0).unwrap(), "bits"),
        (BloomFilter::new(1000, 4, 0).unwrap(), "hash functions"),
        (BloomFilter::new(1000, 3, 9).unwrap(), "seed"),
    ] {
        match a.union(&b) {
            Err(Error::ShapeMismatch { what: w, .. }) => assert_eq!(w, what),
            other => panic!("expected a shape mismatch on {what}, got {other:?}"),
        }
    }
    let mut c = BlockedBloomFilter::new(1000, 3, 0).unwrap();
    assert!(c
        .union(&BlockedBloomFilter::new(1000, 3, 1).unwrap())
        .is_err());
    assert!(c
        .union(&BlockedBloomFilter::new(5000, 3, 0).unwrap())
        .is_err());
}

#[test]
fn constructors_reject_bad_parameters() {
    assert!(BloomFilter::new(0, 3, 0).is_err());
    assert!(BloomFilter::new(10, 0, 0).is_err());
    assert!(BloomFilter::new(10, 65, 0).is_err());
    assert!(BloomFilter::with_fpr(0, 0.01, 0).is_err());
    assert!(BloomFilter::with_fpr(10, 1.0, 0).is_err());
    assert!(BloomFilter::with_fpr(10, f64::NAN, 0).is_err());
    assert!(BlockedBloomFilter::new(0, 3, 0).is_err());
}

#[test]
fn shapes_from_targets() {
    let s = FilterShape::for_fpr(1_000_000, 0.01).unwrap();
    assert_eq!((s.bits, s.hashes), (9_585_059, 7));
    assert_eq!(FilterShape::optimal_hashes(1000, 100, 16), 7);
    assert_eq!(FilterShape::optimal_hashes(100_000, 100, 16), 16);
    assert_eq!(FilterShape::optimal_hashes(10, 100, 16), 1);
}

#[test]
fn deserialize_rejects_a_zero_size() {
    let json = r#"{"hashes":3,"seed":0,"modulus":0,"bits":{"len":0,"words":[]}}"#;
    assert!(serde_json::from_str::<BloomFilter>(json).is_err());
}

proptest! {
    #[test]
    fn no_false_negatives(keys in proptest::collection::vec(any::<u64>(), 1..300), m in 1u64..4000, k in 1u32..12, seed in any::<u64>()) {
        let mut f = BloomFilter::new(m, k, seed).unwrap();
        let mut b = BlockedBloomFilter::new(m, k, seed).unwrap();
        for key in &keys { f.insert(key); b.insert(key); }
        for key in &keys { prop_assert!(f.contains(key)); prop_assert!(b.contains(key)); }
    }

    /// Folding to a divisor equals building at that size, bit for bit (paper 000 §6).
    #[test]
    fn fold_equals_direct_build(keys in proptest::collection::vec(any::<u64>(), 0..200), base in 1u64..3000, factor in 1u64..8, k in 1u32..10) {
        let mut big = BloomFilter::new(base * factor, k, 11).unwrap();
        let mut small = BloomFilter::new(base, k, 11).unwrap();
        for key in &keys { big.insert(key); small.insert(key); }
        prop_assert_eq!(big.fold(base).unwrap(), small);
    }

    /// Filters of sizes m and m' (and hash counts k and k') union at gcd(m, m') and min(k, k')
    /// with no false negatives.
    #[test]
    fn union_at_gcd_keeps_every_key(a in proptest::collection::vec(any::<u64>(), 0..100), b in proptest::collection::vec(any::<u64>(), 0..100), g in 1u64..500, x in 1u64..6, y in 1u64..6, ka in 1u32..12, kb in 1u32..12) {
        let mut fa = BloomFilter::new(g * x, ka, 5).unwrap();
        let mut fb = BloomFilter::new(g * y, kb, 5).unwrap();
        for key in &a { fa.insert(key); }
        for key in &b { fb.insert(key); }
        let u = fa.union_folded(&fb).unwrap();
        prop_assert_eq!(u.bit_len() % g, 0);
        prop_assert_eq!(u.hashes(), ka.min(kb));
        for key in a.iter().chain(&b) { prop_assert!(u.contains(key)); }
    }

    #[test]
    fn serde_round_trip_keeps_answers(keys in proptest::collection::vec(any::<u64>(), 0..100), m in 1u64..3000) {
        let mut f = BloomFilter::new(m, 5, 8).unwrap();
        for key in &keys { f.insert(key); }
        let back: BloomFilter = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        let bin: BloomFilter = bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(&bin, &f);
        for key in &keys { prop_assert!(back.contains(key)); }
    }
}
