use super::*;
use crate::bits::Bits;
use crate::error::Error;
use crate::hash::mix64;
use crate::hash::KeyHash;
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

// ---- The blocked layout ----

fn blocked(bits: u64, hashes: u32, seed: u64) -> BloomFilter {
    BloomFilter::with_layout(
        FilterShape::new(bits, hashes).unwrap(),
        seed,
        Layout::Blocked,
    )
    .unwrap()
}

/// Golden values of the hashing specification's step 5, computed independently from its text
/// (Python: `C = 0x9e3779b97f4a7c15; b = lo % B; g = lo * C % 2**64`, then per probe
/// `512 * b + (g >> 55); g = g * C % 2**64`, with `lo` from the key-hash golden values).
/// A change here is a breaking format change.
#[test]
fn golden_blocked_positions() {
    use crate::hash::FastMod;
    let h = KeyHash::of(&42u64, 7);
    let p: Vec<u64> = blocked_probes(h, 7, FastMod::new(1000).unwrap()).collect();
    assert_eq!(p, [74_259, 74_433, 74_554, 74_654, 74_487, 74_470, 74_310]);
    assert_eq!(p[0] / BLOCK_BITS, 145);
    // The positions inside the block do not depend on the block count.
    let one: Vec<u64> = blocked_probes(h, 7, FastMod::new(1).unwrap()).collect();
    assert_eq!(one, [19, 193, 314, 414, 247, 230, 70]);
    let at: Vec<u64> = blocked_probes(h.at(1_000), 4, FastMod::new(5_400).unwrap()).collect();
    assert_eq!(at, [1_204_241, 1_204_401, 1_204_357, 1_204_266]);
}

/// The written-out blocked insert and contains use exactly `blocked_probes`' positions.
#[test]
fn blocked_fast_paths_match_the_spec() {
    use crate::hash::FastMod;
    for (blocks, hashes) in [
        (1u64, 1u32),
        (1, 4),
        (3, 7),
        (1000, 4),
        (5_400, 16),
        (7, 64),
    ] {
        for j in 0..200u64 {
            let hash = KeyHash {
                lo: mix64(j),
                hi: mix64(j ^ 0xabcd),
            };
            let positions: Vec<u64> =
                blocked_probes(hash, hashes, FastMod::new(blocks).unwrap()).collect();
            let mut f = blocked(blocks * BLOCK_BITS, hashes, 0);
            f.insert_hash(hash);
            let mut expect = Bits::new(blocks * BLOCK_BITS);
            for &p in &positions {
                expect.set(p);
            }
            assert_eq!(f.bits(), &expect);
            assert!(f.contains_hash(hash));
            for &p in &positions {
                let mut g = blocked(blocks * BLOCK_BITS, hashes, 0);
                for &q in positions.iter().filter(|&&q| q != p) {
                    g.bits_mut().set(q);
                }
                assert!(!g.contains_hash(hash), "bit {p} must be tested");
            }
        }
    }
}

#[test]
fn blocked_inserts_mark_exactly_the_changed_words() {
    // 20 blocks: 160 words, so the blocks' flags span three flag words.
    let mut f = blocked(20 * BLOCK_BITS, 4, 1);
    f.bits_mut().track_dirty();
    let mut expect = Vec::new();
    for key in 0..300u64 {
        let before = f.bits().clone();
        f.insert(&key);
        for (w, (a, b)) in before.words().iter().zip(f.bits().words()).enumerate() {
            if a != b && !expect.contains(&(w as u32)) {
                expect.push(w as u32);
            }
        }
    }
    let mut dirty: Vec<u32> = f
        .bits_mut()
        .drain_changed()
        .indices()
        .map(|i| i as u32)
        .collect();
    dirty.sort_unstable();
    expect.sort_unstable();
    assert_eq!(dirty, expect);
    assert!(!dirty.is_empty());
}

#[test]
fn blocked_shapes_are_whole_blocks() {
    let shape = |bits| FilterShape::new(bits, 4).unwrap();
    for bits in [0, 1, 511, 513, 1000] {
        assert_eq!(
            BloomFilter::with_layout(shape(bits), 0, Layout::Blocked),
            Err(Error::NotWholeBlocks {
                bits,
                block_bits: 512
            }),
        );
    }
    assert!(BloomFilter::with_layout(shape(1024), 0, Layout::Blocked).is_ok());
    assert!(BloomFilter::with_layout(shape(1000), 0, Layout::Standard).is_ok());
    // Folds stay in whole blocks.
    let f = blocked(6 * 512, 4, 0);
    assert!(f.fold(3 * 512).is_ok());
    assert!(matches!(f.fold(768), Err(Error::NotWholeBlocks { .. })));
    assert!(matches!(f.fold(4 * 512), Err(Error::NotADivisor { .. })));
}

#[test]
fn blocked_deserialization_is_validated() {
    let f = blocked(2 * 512, 3, 1);
    let json = serde_json::to_string(&f).unwrap();
    assert!(json.contains("\"layout\":\"Blocked\""), "{json}");
    assert_eq!(serde_json::from_str::<BloomFilter>(&json).unwrap(), f);
    // The modulus of a blocked filter is its block count.
    let bad = json.replacen("\"modulus\":2", "\"modulus\":1024", 1);
    assert!(serde_json::from_str::<BloomFilter>(&bad).is_err());
    // A standard filter of 1000 bits relabelled blocked: not whole blocks.
    let s = serde_json::to_string(&BloomFilter::new(1000, 3, 1).unwrap()).unwrap();
    let relabelled = s.replacen("\"Standard\"", "\"Blocked\"", 1);
    assert!(serde_json::from_str::<BloomFilter>(&relabelled).is_err());
    // Forms written before layouts existed are standard.
    let old = r#"{"hashes":3,"seed":0,"modulus":100,"bits":{"len":100,"words":[0,0]}}"#;
    let f: BloomFilter = serde_json::from_str(old).unwrap();
    assert_eq!(f.layout(), Layout::Standard);
}

#[test]
fn layouts_do_not_mix() {
    let mut a = blocked(1024, 3, 0);
    let b = BloomFilter::new(1024, 3, 0).unwrap();
    for r in [a.union(&b), a.union_folded(&b).map(|_| ())] {
        match r {
            Err(Error::ShapeMismatch { what, .. }) => assert_eq!(what, LAYOUT_MISMATCH),
            other => panic!("expected a layout mismatch, got {other:?}"),
        }
    }
}

/// The blocked filter's measured FPR against (1) its fill, block by block (`estimated_fpr`), with
/// the binomial 99% interval of the queries, and (2) the Poisson load mixture of `Layout::fpr`
/// for (m, k, n), within 5% (the fill's own variance is far below that at this size). Keys are
/// scrambled integers, sequential integers, and sequential integers at a temporal bucket (the
/// per-level hash of step 3, whose `lo` alone places a key: block and bits).
#[test]
fn blocked_fpr_matches_the_block_load_mixture() {
    use crate::hash::BucketMix;
    let keys: [fn(u64) -> KeyHash; 3] = [
        |i| KeyHash::of(&mix64(i), 12),
        |i| KeyHash::of(&i, 12),
        |i| KeyHash::of(&i, 12).at_mixed(BucketMix::of(77)),
    ];
    for key in keys {
        blocked_fpr_case(key);
    }
}

fn blocked_fpr_case(key: fn(u64) -> KeyHash) {
    let shape = FilterShape::new(400 * BLOCK_BITS, 4).unwrap();
    let mut f = BloomFilter::with_layout(shape, 12, Layout::Blocked).unwrap();
    let n = 14_000;
    for i in 0..n {
        f.insert_hash(key(i));
    }
    let fp = (0..QUERIES)
        .filter(|&q| f.contains_hash(key(q + n)))
        .count() as u64;
    let given_fill = f.estimated_fpr();
    crate::testing::assert_rate_near("blocked, given its fill", fp, QUERIES, given_fill);
    let predicted = Layout::Blocked.fpr(shape, n as f64);
    assert!(
        (given_fill / predicted - 1.0).abs() < 0.05,
        "fill says {given_fill}, the mixture {predicted}"
    );
    // Blocking costs accuracy: above eq. 2, and above what the global fill alone would say.
    assert!(predicted > 1.1 * shape.fpr(n as f64));
    assert!(given_fill > f.fill_ratio().powi(4));
    let items = f.estimated_items();
    assert!((items / n as f64 - 1.0).abs() < 0.02, "estimated {items}");
}

proptest! {
    #[test]
    fn blocked_no_false_negatives(keys in proptest::collection::vec(any::<u64>(), 1..300), blocks in 1u64..12, k in 1u32..20, seed in any::<u64>()) {
        let mut f = blocked(blocks * BLOCK_BITS, k, seed);
        for key in &keys { f.insert(key); }
        for key in &keys { prop_assert!(f.contains(key)); }
        let back: BloomFilter = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        let bin: BloomFilter = bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(&bin, &f);
        for key in &keys { prop_assert!(bin.contains(key)); }
    }

    /// Folding a blocked filter to a divisor block count equals building at that size.
    #[test]
    fn blocked_fold_equals_direct_build(keys in proptest::collection::vec(any::<u64>(), 0..200), base in 1u64..20, factor in 1u64..8, k in 1u32..10) {
        let mut big = blocked(base * factor * BLOCK_BITS, k, 11);
        let mut small = blocked(base * BLOCK_BITS, k, 11);
        for key in &keys { big.insert(key); small.insert(key); }
        prop_assert_eq!(big.fold(base * BLOCK_BITS).unwrap(), small);
    }

    /// Blocked filters of B and B' blocks union at gcd(B, B') blocks and min(k, k') hashes with no
    /// false negatives.
    #[test]
    fn blocked_union_at_gcd_keeps_every_key(a in proptest::collection::vec(any::<u64>(), 0..100), b in proptest::collection::vec(any::<u64>(), 0..100), g in 1u64..10, x in 1u64..6, y in 1u64..6, ka in 1u32..12, kb in 1u32..12) {
        let mut fa = blocked(g * x * BLOCK_BITS, ka, 5);
        let mut fb = blocked(g * y * BLOCK_BITS, kb, 5);
        for key in &a { fa.insert(key); }
        for key in &b { fb.insert(key); }
        let u = fa.union_folded(&fb).unwrap();
        prop_assert_eq!(u.bit_len() % (g * BLOCK_BITS), 0);
        prop_assert_eq!(u.layout(), Layout::Blocked);
        prop_assert_eq!(u.hashes(), ka.min(kb));
        for key in a.iter().chain(&b) { prop_assert!(u.contains(key)); }
    }
}

/// The batch insert (unrolled for 1–8 hashes, a run-time loop above, prefetching) sets exactly
/// the bits and dirty words of one-by-one inserts, for every hash count and both layouts.
#[test]
fn insert_mixed_equals_one_by_one_inserts() {
    use crate::hash::BucketMix;
    let keys: Vec<KeyHash> = (0..200u64).map(|k| KeyHash::of(&k, 3)).collect();
    for layout in [Layout::Standard, Layout::Blocked] {
        for hashes in 1..=11 {
            let shape = FilterShape::new(16 * BLOCK_BITS, hashes).unwrap();
            let mut one = BloomFilter::with_layout(shape, 3, layout).unwrap();
            one.bits_mut().track_dirty();
            let mut batch = one.clone();
            for bucket in [0u64, 9] {
                for h in &keys {
                    one.insert_hash(h.at(bucket));
                }
                // Uneven slices, so that partial chunks are exercised.
                for part in keys.chunks(47) {
                    batch.insert_mixed(part, BucketMix::of(bucket));
                }
            }
            assert_eq!(
                one.bits().words(),
                batch.bits().words(),
                "{layout:?}, k = {hashes}"
            );
            assert_eq!(
                one.bits_mut().drain_changed(),
                batch.bits_mut().drain_changed()
            );
        }
    }
}
