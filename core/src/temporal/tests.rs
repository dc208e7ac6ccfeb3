use super::*;
use crate::bloom::{Filter, FilterShape, Layout, BLOCK_BITS};
use crate::hash::{mix64, KeyHash};
use crate::testing::{assert_rate_near, Z99};
use proptest::prelude::*;

fn r(s: u64, e: u64) -> TimeRange {
    TimeRange::new(s, e).unwrap()
}

// ---- The paper's worked examples (0-based: the paper's tick t is our t − 1) ----

/// Example 1 / Figures 3 and 5: (x,1), (x,2), (y,2), (y,4), (x,5), (z,7).
const EXAMPLE: [(&str, u64); 6] = [("x", 0), ("x", 1), ("y", 1), ("y", 3), ("x", 4), ("z", 6)];

fn figure3() -> Pbf1 {
    let mut p = Pbf1::uniform(8, 2, 1 << 16, 6, 17).unwrap();
    for (k, t) in EXAMPLE {
        p.insert(k, t).unwrap();
    }
    p
}

fn figure5() -> Pbf2 {
    let mut p = Pbf2::uniform(8, 1 << 16, 6, 17).unwrap();
    for (k, t) in EXAMPLE {
        p.insert(k, t).unwrap();
    }
    p
}

#[test]
fn figure3_layout() {
    // L = 3 levels, u = 2T/g − 1 = 7 intervals: I1 = [1,8], I2 = [1,4], I3 = [5,8], I4..I7 leaves.
    let layout = Pbf1::layout(8, 2).unwrap();
    let ranges: Vec<(u32, u64, u64)> = layout
        .iter()
        .map(|n| (n.height, n.range.start(), n.range.end()))
        .collect();
    assert_eq!(
        ranges,
        vec![
            (2, 0, 7),
            (1, 0, 3),
            (1, 4, 7),
            (0, 0, 1),
            (0, 2, 3),
            (0, 4, 5),
            (0, 6, 7)
        ]
    );
    assert_eq!(figure3().levels(), 3);
    assert_eq!(figure3().node_count(), 7);
}

#[test]
fn figure3_covers() {
    let p = figure3();
    // C([1, 6]) = {I2, I6}: exact, no partial leaf (case 1).
    let c = p.cover(r(0, 5));
    assert_eq!(c.nodes, vec![(1, 0), (0, 2)]);
    assert!(c.partial.is_empty());
    // C([1, 5]) = {I2}; I(C) = [1, 4] and the leaf I6 overlaps [5, 5] (case 2).
    let c = p.cover(r(0, 4));
    assert_eq!(c.nodes, vec![(1, 0)]);
    assert_eq!(c.partial, vec![(2, r(4, 4))]);
    // C([4, 5]) is empty; leaves I5 and I6 overlap it.
    let c = p.cover(r(3, 4));
    assert!(c.nodes.is_empty());
    assert_eq!(c.partial, vec![(1, r(3, 3)), (2, r(4, 4))]);
}

#[test]
fn figure3_queries_follow_the_routes() {
    let p = figure3();
    // q(y, [1, 6]): b2 answers yes (route 2), one probe.
    let a = p.query_counted(&"y", r(0, 5));
    assert_eq!((a.present, a.probes), (true, 1));
    // q(z, [5, 7]): b6 says no, leaf b7 says yes, the SBF confirms (z, 7) (route 3).
    let a = p.query_counted(&"z", r(4, 6));
    assert_eq!((a.present, a.probes), (true, 3));
    // q(z, [5, 6]) is exactly I6: no.
    assert!(!p.query(&"z", r(4, 5)));
    // q(y, [5, 8]): b3 says no.
    assert!(!p.query(&"y", r(4, 7)));
    // q(x, [6, 8]): I7 = [7, 8] covered says no; leaf I6 says yes, SBF (x, 6) says no: route 3 → no.
    let a = p.query_counted(&"x", r(5, 7));
    assert_eq!((a.present, a.probes), (false, 3));
    // Point queries work (the original code answers false for every one of them).
    for (k, t) in EXAMPLE {
        assert!(p.contains_at(&k, t), "{k}@{t}");
    }
    assert!(!p.contains_at(&"y", 0));
}

#[test]
fn figure5_levels_and_queries() {
    let p = figure5();
    assert_eq!(p.levels(), 4); // ⌈log 8⌉ + 1
                               // (y, 4) sits in bucket (level, ⌊3 / 2^ℓ⌋) = (0,3), (1,1), (2,0), (3,0) (the paper's y4, y2, y1, y1).
    let h = KeyHash::of("y", 17);
    for (level, bucket) in [(0, 3), (1, 1), (2, 0), (3, 0)] {
        assert!(p.level(level).unwrap().contains_hash(h.at(bucket)));
    }
    // q(y, [1, 6]) → q(y, 1) on the [1,4] level and q(y, 3) on the [5,6] level: yes at the first.
    let a = p.query_counted(&"y", r(0, 5));
    assert_eq!((a.present, a.probes), (true, 1));
    let blocks: Vec<Block> = dyadic_cover(r(0, 5), 3).collect();
    assert_eq!(
        blocks,
        vec![
            Block {
                level: 2,
                bucket: 0
            },
            Block {
                level: 1,
                bucket: 2
            }
        ]
    );
    assert!(!p.query(&"y", r(4, 7)));
    assert!(p.query(&"z", r(6, 6)));
    assert!(!p.query(&"z", r(0, 5)));
}

#[test]
fn canonical_cover_is_minimal_and_exact() {
    for s in 0..70u64 {
        for e in s..70 {
            let blocks: Vec<Block> = dyadic_cover(r(s, e), 10).collect();
            let mut next = s;
            for b in &blocks {
                assert_eq!(b.range().start(), next, "[{s},{e}] contiguous");
                next = b.range().end() + 1;
            }
            assert_eq!(next, e + 1, "[{s},{e}] exact");
            let len = e - s + 1;
            assert!(
                blocks.len() as u64 <= 2 * (64 - len.leading_zeros() as u64),
                "[{s},{e}] small"
            );
            for l in 0..=10 {
                assert!(
                    blocks.iter().filter(|b| b.level == l).count() <= 2,
                    "[{s},{e}] two per level"
                );
            }
        }
    }
    assert_eq!(dyadic_cover(r(0, u64::MAX), 63).count(), 2);
}

#[test]
fn errors_not_panics() {
    assert!(TimeRange::new(5, 4).is_err());
    let mut p2 = Pbf2::uniform(100, 10_000, 3, 0).unwrap();
    assert_eq!(
        p2.insert(&1u64, 100),
        Err(crate::Error::BeyondHorizon {
            tick: 100,
            horizon: 100
        })
    );
    let mut p1 = Pbf1::uniform(100, 4, 10_000, 3, 0).unwrap();
    assert!(p1.insert(&1u64, 100).is_err());
    assert!(Pbf1::uniform(0, 4, 100, 3, 0).is_err());
    assert!(Pbf1::uniform(10, 0, 100, 3, 0).is_err());
    assert!(Pbf2::uniform(0, 100, 3, 0).is_err());
    assert!(Pbf2::new(8, &Allocation::uniform(3, 100, 3).unwrap(), 0).is_err());
    assert!(Pbf1::new(8, 2, &Allocation::uniform(7, 100, 3).unwrap(), 0).is_err());
    // Unions refuse other shapes.
    assert!(p2
        .union(&Pbf2::uniform(100, 10_001, 3, 0).unwrap())
        .is_err());
    assert!(p2
        .union(&Pbf2::uniform(100, 10_000, 3, 1).unwrap())
        .is_err());
    assert!(p2
        .union(&Pbf2::uniform(200, 10_000, 3, 0).unwrap())
        .is_err());
    assert!(p1
        .union(&Pbf1::uniform(100, 2, 10_000, 3, 0).unwrap())
        .is_err());
    // Queries beyond the horizon see no data; they are not errors.
    assert!(!p2.query(&1u64, r(100, 1000)));
    // A dynamic PBF-2 tops out at 2^63.
    let mut d = Pbf2::dynamic(FilterShape::new(64, 2).unwrap(), 0).unwrap();
    assert!(d.insert(&1u64, u64::MAX).is_err());
    assert!(d.insert(&1u64, (1 << 63) - 1).is_ok());
    assert!(d.query(&1u64, r(0, u64::MAX)));
}

#[test]
fn dynamic_pbf2_grows_by_cloning_the_root() {
    let shape = FilterShape::new(4096, 4).unwrap();
    let mut p = Pbf2::dynamic(shape, 3).unwrap();
    assert_eq!(p.levels(), 1);
    p.insert(&"a", 0).unwrap();
    p.insert(&"b", 5).unwrap();
    assert_eq!(p.levels(), 4); // capacity 8
    assert_eq!(p.capacity(), 8);
    p.insert(&"c", 1000).unwrap();
    assert_eq!(p.levels(), 11);
    for (k, t) in [("a", 0), ("b", 5), ("c", 1000)] {
        assert!(p.contains_at(&k, t));
        assert!(p.query(&k, r(0, 1023)));
    }
    assert!(!p.query(&"c", r(0, 999)));
}

#[test]
fn dynamic_pbf1_grows_a_root_over_the_old_one() {
    let mut p = Pbf1::dynamic(
        4,
        FilterShape::new(4096, 4).unwrap(),
        FilterShape::new(8192, 4).unwrap(),
        3,
    )
    .unwrap();
    p.insert(&"a", 1).unwrap();
    assert_eq!(p.capacity(), 4);
    p.insert(&"b", 9).unwrap(); // leaf 2: root height 2, capacity 16
    assert_eq!((p.levels(), p.capacity()), (3, 16));
    p.insert(&"c", 100).unwrap();
    assert_eq!(p.capacity(), 128);
    for (k, t) in [("a", 1), ("b", 9), ("c", 100)] {
        assert!(p.contains_at(&k, t));
        assert!(p.query(&k, r(0, 127)));
        assert!(p.query(&k, r(t.saturating_sub(3), t + 2)));
    }
    assert!(!p.query(&"a", r(2, 127)));
}

#[test]
fn zero_bit_filters_are_never_consulted() {
    // PBF-2: only level 0 and the top have bits; the middle levels split into their children.
    let levels = Pbf2::levels_for(64).unwrap() as usize;
    let mut shapes = vec![FilterShape { bits: 0, hashes: 0 }; levels];
    shapes[0] = FilterShape::new(1 << 14, 5).unwrap();
    shapes[levels - 1] = FilterShape::new(1 << 12, 5).unwrap();
    let mut p = Pbf2::new(64, &Allocation::new(shapes).unwrap(), 1).unwrap();
    p.insert(&7u64, 37).unwrap();
    let a = p.query_counted(&7u64, r(32, 47)); // one level-4 block → 16 level-0 probes at most
    assert!(a.present);
    assert!(a.probes <= 16 && a.probes >= 6);
    assert!(p.query(&7u64, r(0, 63)));
    let a = p.query_counted(&8u64, r(32, 47));
    assert_eq!(a.probes, 16);
    // With no finest level, a block answers "maybe".
    let mut shapes = vec![FilterShape::new(1 << 12, 5).unwrap(); levels];
    shapes[0] = FilterShape { bits: 0, hashes: 0 };
    shapes[1] = FilterShape { bits: 0, hashes: 0 };
    let p = Pbf2::new(64, &Allocation::new(shapes).unwrap(), 1).unwrap();
    assert!(p.query(&8u64, r(5, 5)));
    assert!(!p.query(&8u64, r(4, 7)));

    // PBF-1: a bit-less leaf falls through to the SBF; without an SBF the answer is "maybe".
    let nodes = Pbf1::layout(16, 4).unwrap().len();
    let mut shapes = vec![FilterShape::new(1 << 12, 5).unwrap(); nodes + 1];
    shapes[nodes - 1] = FilterShape { bits: 0, hashes: 0 }; // the last leaf, ticks [12, 15]
    let mut p = Pbf1::new(16, 4, &Allocation::new(shapes.clone()).unwrap(), 1).unwrap();
    p.insert(&1u64, 13).unwrap();
    assert!(p.query(&1u64, r(12, 15)));
    assert!(!p.query(&1u64, r(14, 15)));
    shapes[nodes] = FilterShape { bits: 0, hashes: 0 };
    let p = Pbf1::new(16, 4, &Allocation::new(shapes).unwrap(), 1).unwrap();
    assert!(p.query(&1u64, r(12, 15)));
    assert!(!p.query(&1u64, r(0, 7)));
}

#[test]
fn static_pbf1_with_a_ragged_horizon() {
    // T = 10, g = 4: leaves [0,3], [4,7], [8,9]; the last leaf is complete at the horizon.
    let mut p = Pbf1::uniform(10, 4, 1 << 14, 5, 2).unwrap();
    p.insert(&"k", 9).unwrap();
    let c = p.cover(r(8, 50));
    assert_eq!(c.nodes, vec![(1, 1)]); // ticks [8, 15], cut by the horizon at 10: covered
    let c = p.cover(r(4, 9));
    assert_eq!(c.nodes, vec![(0, 1), (1, 1)]);
    assert!(c.partial.is_empty());
    assert!(p.query(&"k", r(8, 50)));
    assert!(!p.query(&"k", r(0, 8)));
}

// ---- No false negatives: property tests ----

/// Records: (key, tick) with ticks below `horizon`.
fn records(horizon: u64) -> impl Strategy<Value = Vec<(u16, u64)>> {
    proptest::collection::vec((0u16..60, 0..horizon), 1..120)
}

/// Every inserted (key, t) must answer yes for the range around t and for the point t.
fn assert_no_false_negatives<F: TemporalFilter>(
    f: &F,
    recs: &[(u16, u64)],
    spans: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    for (i, &(k, t)) in recs.iter().enumerate() {
        prop_assert!(f.contains_at(&k, t), "point {k}@{t}");
        let (before, after) = spans[i % spans.len()];
        let range = TimeRange::new(t.saturating_sub(before), t.saturating_add(after)).unwrap();
        prop_assert!(f.query(&k, range), "{k}@{t} in {range:?}");
    }
    Ok(())
}

/// `f` survives JSON and bincode round trips unchanged, and the bincode copy still answers every
/// inserted record.
fn assert_serde_keeps_answers<F>(
    f: &F,
    recs: &[(u16, u64)],
    spans: &[(u64, u64)],
) -> Result<(), TestCaseError>
where
    F: TemporalFilter
        + PartialEq
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let json: F = serde_json::from_str(&serde_json::to_string(f).unwrap()).unwrap();
    let bin: F = bincode::deserialize(&bincode::serialize(f).unwrap()).unwrap();
    prop_assert_eq!(&json, f);
    prop_assert_eq!(&bin, f);
    assert_no_false_negatives(&bin, recs, spans)
}

/// Inserts the records before tick 1024 into `a` and the rest into `b`, then merges the two.
fn split_and_merge(mut a: Pbf2, mut b: Pbf2, recs: &[(u16, u64)]) -> Pbf2 {
    for &(k, t) in recs {
        if t < 1024 {
            a.insert(&k, t).unwrap()
        } else {
            b.insert(&k, t).unwrap()
        }
    }
    a.merge_adjacent(&b).unwrap()
}

/// Inserts the records into `p` sorted by tick (a partitioned filter takes ticks in order).
fn insert_in_tick_order<S: AllocationStrategy>(p: &mut PartitionedPbf2<S>, recs: &[(u16, u64)]) {
    let mut sorted = recs.to_vec();
    sorted.sort_by_key(|r| r.1);
    for &(k, t) in &sorted {
        p.insert(&k, t).unwrap();
    }
}

fn spans() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec((0u64..300, 0u64..300), 1..20)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sbf_no_false_negatives(recs in records(1000), sp in spans(), m in 64u64..4000, seed in any::<u64>()) {
        let mut f = Sbf::new(m, 3, seed).unwrap();
        for &(k, t) in &recs { f.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&f, &recs, &sp)?;
    }

    #[test]
    fn pbf2_static_no_false_negatives(recs in records(1000), sp in spans(), m in 64u64..8000, seed in any::<u64>()) {
        let mut f = Pbf2::uniform(1000, m * 11, 3, seed).unwrap();
        for &(k, t) in &recs { f.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&f, &recs, &sp)?;
        assert_serde_keeps_answers(&f, &recs, &sp)?;
    }

    #[test]
    fn pbf2_zero_bit_levels_no_false_negatives(recs in records(512), sp in spans(), zero in proptest::collection::vec(any::<bool>(), 10), seed in any::<u64>()) {
        let shapes = zero.iter().map(|&z| if z { FilterShape { bits: 0, hashes: 0 } } else { FilterShape::new(2000, 3).unwrap() }).collect();
        let mut f = Pbf2::new(512, &Allocation::new(shapes).unwrap(), seed).unwrap();
        for &(k, t) in &recs { f.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&f, &recs, &sp)?;
    }

    /// Batch inserts at one tick and at a tick per key set exactly the bits of one-by-one inserts:
    /// static (with zero-bit levels) and dynamic, both layouts, dirty words included.
    #[test]
    fn pbf2_insert_hashes_equals_insert_hash(recs in records(512), zero in proptest::collection::vec(any::<bool>(), 10), seed in any::<u64>(), blocked in any::<bool>()) {
        use crate::bloom::Layout;
        use crate::hash::KeyHash;
        let layout = if blocked { Layout::Blocked } else { Layout::Standard };
        let shapes = zero.iter().map(|&z| if z { FilterShape { bits: 0, hashes: 0 } } else { FilterShape::new(2048, 3).unwrap() }).collect();
        let alloc = Allocation::new(shapes).unwrap();
        let statics = || Pbf2::with_layout(0, 512, &alloc, seed, layout).unwrap();
        let dynamics = || Pbf2::dynamic_with_layout(FilterShape::new(2048, 3).unwrap(), seed, layout).unwrap();
        for (mut one, mut batch, mut each) in [(statics(), statics(), statics()), (dynamics(), dynamics(), dynamics())] {
            for l in 0..one.levels() {
                for p in [&mut one, &mut batch, &mut each] {
                    if let Some(f) = p.level_mut(l) {
                        f.bits_mut().track_dirty();
                    }
                }
            }
            let mut by_tick: std::collections::BTreeMap<u64, Vec<KeyHash>> = Default::default();
            for &(k, t) in &recs {
                one.insert_hash(KeyHash::of(&k, seed), t).unwrap();
                by_tick.entry(t).or_default().push(KeyHash::of(&k, seed));
            }
            for (t, hashes) in &by_tick {
                batch.insert_hashes(hashes, *t).unwrap();
            }
            // event ticks in arrival order, in chunks of 37 (runs of one bucket and changes alike)
            for chunk in recs.chunks(37) {
                let hashes: Vec<KeyHash> = chunk.iter().map(|&(k, _)| KeyHash::of(&k, seed)).collect();
                let ticks: Vec<u64> = chunk.iter().map(|&(_, t)| t).collect();
                each.insert_hashes_at(&hashes, &ticks).unwrap();
            }
            prop_assert!(each.insert_hashes_at(&[KeyHash::of(&1u64, seed)], &[]).is_err());
            prop_assert_eq!(one.levels(), batch.levels());
            prop_assert_eq!(one.levels(), each.levels());
            for l in 0..one.levels() {
                match (one.level_mut(l), batch.level_mut(l), each.level_mut(l)) {
                    (Some(a), Some(b), Some(c)) => {
                        prop_assert_eq!(a.bits().words(), b.bits().words());
                        prop_assert_eq!(a.bits().words(), c.bits().words());
                        let changed = a.bits_mut().drain_changed();
                        prop_assert_eq!(&changed, &b.bits_mut().drain_changed());
                        prop_assert_eq!(&changed, &c.bits_mut().drain_changed());
                    }
                    (None, None, None) => {}
                    _ => prop_assert!(false, "level {} differs in presence", l),
                }
            }
        }
    }

    #[test]
    fn pbf2_union_and_fold_no_false_negatives(recs in records(700), sp in spans(), seed in any::<u64>()) {
        let levels = Pbf2::levels_for(700).unwrap() as usize;
        let big = Allocation::new(vec![FilterShape::new(6000, 3).unwrap(); levels]).unwrap();
        let small = Allocation::new(vec![FilterShape::new(1500, 3).unwrap(); levels]).unwrap();
        let mut a = Pbf2::new(700, &big, seed).unwrap();
        let mut b = Pbf2::new(700, &big, seed).unwrap();
        let mut direct = Pbf2::new(700, &small, seed).unwrap();
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 2 == 0 { a.insert(&k, t).unwrap() } else { b.insert(&k, t).unwrap() }
            direct.insert(&k, t).unwrap();
        }
        a.union(&b).unwrap();
        assert_no_false_negatives(&a, &recs, &sp)?;
        let folded = a.fold_to(&small).unwrap();
        prop_assert_eq!(&folded, &direct); // folding equals building small, bit for bit
        assert_no_false_negatives(&folded, &recs, &sp)?;
    }

    #[test]
    fn pbf2_dynamic_no_false_negatives(recs in records(5000), sp in spans(), seed in any::<u64>()) {
        let shape = FilterShape::new(3000, 3).unwrap();
        let mut a = Pbf2::dynamic(shape, seed).unwrap();
        let mut b = Pbf2::dynamic(shape, seed).unwrap();
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 3 == 0 { a.insert(&k, t).unwrap() } else { b.insert(&k, t).unwrap() }
        }
        a.union(&b).unwrap();
        assert_no_false_negatives(&a, &recs, &sp)?;
    }

    #[test]
    fn pbf1_static_no_false_negatives(recs in records(1000), sp in spans(), g in 1u64..9, m in 64u64..2000, seed in any::<u64>()) {
        let nodes = Pbf1::layout(1000, g).unwrap().len() as u64;
        let mut f = Pbf1::uniform(1000, g, m * (nodes + 1), 3, seed).unwrap();
        let mut other = f.clone();
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 2 == 0 { f.insert(&k, t).unwrap() } else { other.insert(&k, t).unwrap() }
        }
        f.union(&other).unwrap();
        assert_no_false_negatives(&f, &recs, &sp)?;
        let bin: Pbf1 = bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
        prop_assert_eq!(&bin, &f);
        assert_no_false_negatives(&bin, &recs, &sp)?;
    }

    #[test]
    fn pbf1_zero_bit_nodes_no_false_negatives(recs in records(256), sp in spans(), g in 1u64..6, pattern in any::<u64>(), seed in any::<u64>()) {
        let nodes = Pbf1::layout(256, g).unwrap().len();
        let shapes = (0..=nodes).map(|i| if pattern >> (i % 64) & 1 == 1 { FilterShape { bits: 0, hashes: 0 } } else { FilterShape::new(500, 3).unwrap() }).collect();
        let mut f = Pbf1::new(256, g, &Allocation::new(shapes).unwrap(), seed).unwrap();
        for &(k, t) in &recs { f.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&f, &recs, &sp)?;
    }

    #[test]
    fn pbf1_dynamic_no_false_negatives(recs in records(3000), sp in spans(), g in 1u64..9, seed in any::<u64>()) {
        let mut a = Pbf1::dynamic(g, FilterShape::new(800, 3).unwrap(), FilterShape::new(3000, 3).unwrap(), seed).unwrap();
        let mut b = a.clone();
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 2 == 0 { a.insert(&k, t).unwrap() } else { b.insert(&k, t).unwrap() }
        }
        for f in [&a, &b] {
            let bin: Pbf1 = bincode::deserialize(&bincode::serialize(f).unwrap()).unwrap();
            prop_assert_eq!(&bin, f);
        }
        a.union(&b).unwrap();
        assert_no_false_negatives(&a, &recs, &sp)?;
        let bin: Pbf1 = bincode::deserialize(&bincode::serialize(&a).unwrap()).unwrap();
        prop_assert_eq!(&bin, &a);
    }
}

// ---- Measured false positive rates against the analysis ----

const T: u64 = 4096;

/// `n` records with random keys at random ticks below `T`.
fn random_records(n: u64, salt: u64) -> Vec<(u64, u64)> {
    (0..n)
        .map(|i| (mix64(i ^ salt), mix64(i.wrapping_mul(31) ^ !salt) % T))
        .collect()
}

/// A random query range of length `len` for an absent key.
fn query(i: u64, len: u64) -> (u64, TimeRange) {
    let s = mix64(i ^ 0xabc) % (T - len + 1);
    (u64::MAX - i, TimeRange::new(s, s + len - 1).unwrap())
}

/// Checks a count of false positives against the sum of per-query predictions (a Poisson-binomial):
/// |FP − Σp| ≤ z99 · sqrt(Σ p(1 − p)).
fn assert_poisson_binomial(what: &str, fp: u64, predicted: &[f64]) {
    let mean: f64 = predicted.iter().sum();
    let sd = predicted.iter().map(|p| p * (1.0 - p)).sum::<f64>().sqrt();
    assert!(
        (fp as f64 - mean).abs() <= Z99 * sd,
        "{what}: {fp} false positives, predicted {mean:.1} ± {:.1} (99%)",
        Z99 * sd
    );
}

fn fpr_of(f: &crate::bloom::BloomFilter) -> f64 {
    f.estimated_fpr()
}

#[test]
fn sbf_fpr_matches_eq4() {
    let mut f = Sbf::new(400_000, 4, 9).unwrap();
    for (k, t) in random_records(40_000, 1) {
        f.insert(&k, t).unwrap();
    }
    let p = fpr_of(f.filter());
    for len in [1u64, 8, 64] {
        let queries = 30_000;
        let fp = (0..queries)
            .filter(|&i| {
                let (k, range) = query(i, len);
                f.query(&k, range)
            })
            .count() as u64;
        // eq. 4 with the filter's own p(b) = fill^k.
        let expect = 1.0 - (1.0 - p).powi(len as i32);
        assert_rate_near(&format!("SBF |q| = {len}"), fp, queries, expect);
    }
}

#[test]
fn pbf2_fpr_matches_eq9_with_each_levels_fill() {
    let mut f = Pbf2::uniform(T, 13 * 40_000, 4, 10).unwrap();
    for (k, t) in random_records(60_000, 2) {
        f.insert(&k, t).unwrap();
    }
    let level_p: Vec<f64> = (0..f.levels())
        .map(|l| fpr_of(f.level(l).unwrap()))
        .collect();
    for len in [1u64, 16, 256, 2000] {
        let mut predicted = Vec::new();
        let mut fp = 0;
        for i in 0..20_000 {
            let (k, range) = query(i, len);
            fp += u64::from(f.query(&k, range));
            // eq. 9: 1 − Π over the cover's blocks of (1 − p(b_ℓ)).
            let none: f64 = dyadic_cover(range, f.levels() - 1)
                .map(|b| 1.0 - level_p[b.level as usize])
                .product();
            predicted.push(1.0 - none);
        }
        assert_poisson_binomial(&format!("PBF-2 |q| = {len}"), fp, &predicted);
    }
}

#[test]
fn pbf1_fpr_matches_its_routes() {
    let g = 4;
    let nodes = Pbf1::layout(T, g).unwrap().len() as u64;
    let mut f = Pbf1::uniform(T, g, 1200 * (nodes + 1), 4, 11).unwrap();
    for (k, t) in random_records(20_000, 3) {
        f.insert(&k, t).unwrap();
    }
    let p_sbf = fpr_of(f.sbf().unwrap().filter());
    let p_node = |h: u32, i: u64| fpr_of(f.node(h, i).unwrap());
    for len in [1u64, 7, 100, 1000] {
        let mut predicted = Vec::new();
        let mut fp = 0;
        for i in 0..20_000 {
            let (k, range) = query(i, len);
            fp += u64::from(f.query(&k, range));
            // eq. 6 refined per route: every covered node, and every partial leaf followed by its
            // SBF ticks, must all answer no.
            let c = f.cover(range);
            let mut none: f64 = c.nodes.iter().map(|&(h, i)| 1.0 - p_node(h, i)).product();
            for (leaf, ticks) in &c.partial {
                let sbf_yes = 1.0 - (1.0 - p_sbf).powi(ticks.len() as i32);
                none *= 1.0 - p_node(0, *leaf) * sbf_yes;
            }
            predicted.push(1.0 - none);
        }
        assert_poisson_binomial(&format!("PBF-1 |q| = {len}"), fp, &predicted);
    }
}

// ---- Partitioned PBF-2: merging under a budget, retirement ----

/// Alternates two allocations so merges must fold to gcd sizes and take the smaller k.
struct Alternating;

impl AllocationStrategy for Alternating {
    fn name(&self) -> &'static str {
        "alternating"
    }
    fn allocation(&mut self, index: u64, levels: u32, bits: u64) -> crate::Result<Allocation> {
        let (per, k) = if index.is_multiple_of(2) {
            (bits / u64::from(levels), 4)
        } else {
            (bits / u64::from(levels) / 3 * 2, 3)
        };
        Allocation::new(vec![FilterShape::new(per, k)?; levels as usize])
    }
}

fn partition_cfg(budget: Option<u64>, retention: Option<(u64, Retire)>) -> PartitionConfig {
    PartitionConfig {
        partition_len: 256,
        partition_bits: 6_000,
        budget_bits: budget,
        retention,
        seed: 5,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn merge_adjacent_keeps_every_key(recs in records(2048), sp in spans(), seed in any::<u64>()) {
        let levels = Pbf2::levels_for(1024).unwrap() as usize;
        let a_alloc = Allocation::new(vec![FilterShape::new(3000, 5).unwrap(); levels]).unwrap();
        let b_alloc = Allocation::new(vec![FilterShape::new(1200, 3).unwrap(); levels]).unwrap();
        let a = Pbf2::starting_at(0, 1024, &a_alloc, seed).unwrap();
        let b = Pbf2::starting_at(1024, 1024, &b_alloc, seed).unwrap();
        let m = split_and_merge(a, b, &recs);
        prop_assert_eq!(m.level(0).unwrap().bit_len(), 600); // gcd(3000, 1200)
        prop_assert_eq!(m.level(0).unwrap().hashes(), 3);
        assert_no_false_negatives(&m, &recs, &sp)?;
    }

    #[test]
    fn partitioned_merges_under_budget_without_false_negatives(recs in records(4000), sp in spans()) {
        let mut p = PartitionedPbf2::new(partition_cfg(Some(20_000), None), Alternating).unwrap();
        insert_in_tick_order(&mut p, &recs);
        prop_assert!(p.memory_bits() <= 20_000 || p.spans().count() == 1);
        assert_no_false_negatives(&p, &recs, &sp)?;
    }

    #[test]
    fn partitioned_out_of_order_inserts(recs in records(3000), sp in spans()) {
        let mut p = PartitionedPbf2::new(partition_cfg(Some(30_000), None), UniformStrategy { hashes: 3 }).unwrap();
        for &(k, t) in &recs { p.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&p, &recs, &sp)?;
    }
}

#[test]
fn partitioned_retire_to_dir_and_reload() {
    let dir = std::env::temp_dir().join(format!("chronobloom-retire-{}", std::process::id()));
    let mut p = PartitionedPbf2::new(
        partition_cfg(None, Some((600, Retire::ToDir(dir.clone())))),
        UniformStrategy { hashes: 4 },
    )
    .unwrap();
    let recs: Vec<(u64, u64)> = (0..3000).map(|i| (mix64(i) % 500, i)).collect();
    for &(k, t) in &recs {
        p.insert(&k, t).unwrap();
    }
    // Ticks 0..2304 end at least 600 before the newest tick 2999: those partitions were written out.
    let in_memory: Vec<u64> = p.spans().map(|(s, _, _)| s).collect();
    assert!(in_memory.iter().all(|&s| s >= 2048), "{in_memory:?}");
    assert!(std::fs::read_dir(&dir).unwrap().count() >= 8);
    for &(k, t) in &recs {
        assert!(
            p.try_query(&k, TimeRange::point(t)).unwrap().present,
            "{k}@{t} after reload"
        );
    }
    // A late insert into a retired span goes to its file and is found again.
    p.insert(&9_999u64, 10).unwrap();
    assert!(p.query(&9_999u64, r(0, 20)));
    std::fs::remove_dir_all(&dir).unwrap();
    // A missing file is reported, and the plain query says "maybe".
    assert!(matches!(
        p.try_query(&1u64, r(0, 5)),
        Err(crate::Error::Storage { .. })
    ));
    assert!(p.query(&1u64, r(0, 5)));
}

#[test]
fn partitioned_drop_reports_retired_spans() {
    let mut p = PartitionedPbf2::new(
        partition_cfg(None, Some((300, Retire::Drop))),
        UniformStrategy { hashes: 4 },
    )
    .unwrap();
    for t in 0..2000u64 {
        p.insert(&t, t).unwrap();
    }
    assert!(matches!(
        p.try_query(&5u64, r(0, 10)),
        Err(crate::Error::Retired { start: 0, end: 256 })
    ));
    assert!(p.query(&5u64, r(0, 10))); // "maybe", never a false negative
    assert!(matches!(
        p.insert(&5u64, 3),
        Err(crate::Error::Retired { .. })
    ));
    assert!(p.try_query(&1999u64, r(1990, 1999)).unwrap().present);
}

#[test]
fn partitioned_config_is_validated() {
    let bad = PartitionConfig {
        partition_len: 0,
        ..partition_cfg(None, None)
    };
    assert!(PartitionedPbf2::new(bad, UniformStrategy { hashes: 3 }).is_err());
    let bad = PartitionConfig {
        budget_bits: Some(10),
        ..partition_cfg(None, None)
    };
    assert!(PartitionedPbf2::new(bad, UniformStrategy { hashes: 3 }).is_err());
    let bad = PartitionConfig {
        partition_bits: 0,
        ..partition_cfg(None, None)
    };
    assert!(PartitionedPbf2::new(bad, UniformStrategy { hashes: 3 }).is_err());
}

// ---- Checkpoints: a corrupted serialized structure is refused, never used ----

fn tamper(json: &str, from: &str, to: &str) -> String {
    assert!(json.contains(from), "{from} not in {json}");
    json.replacen(from, to, 1)
}

#[test]
fn corrupted_checkpoints_are_refused() {
    let p2 = Pbf2::uniform(16, 2_000, 3, 5).unwrap();
    let json = serde_json::to_string(&p2).unwrap();
    assert!(serde_json::from_str::<Pbf2>(&json).is_ok());
    assert!(serde_json::from_str::<Pbf2>(&tamper(&json, "\"seed\":5,", "\"seed\":6,")).is_err());
    let no_levels = r#"{"seed":5,"start":0,"horizon":16,"levels":[]}"#;
    assert!(serde_json::from_str::<Pbf2>(no_levels).is_err());
    // A Bloom filter whose modulus disagrees with its bits would probe outside them.
    let f = crate::bloom::BloomFilter::new(100, 3, 1).unwrap();
    let json = serde_json::to_string(&f).unwrap();
    assert!(serde_json::from_str::<crate::bloom::BloomFilter>(&tamper(
        &json,
        "\"modulus\":100",
        "\"modulus\":1000"
    ))
    .is_err());
    assert!(serde_json::from_str::<crate::bloom::BloomFilter>(&tamper(
        &json,
        "\"hashes\":3",
        "\"hashes\":0"
    ))
    .is_err());
    let b = crate::bloom::BlockedBloomFilter::new(1000, 3, 1).unwrap();
    let json = serde_json::to_string(&b).unwrap();
    assert!(serde_json::from_str::<crate::bloom::BlockedBloomFilter>(&json).is_ok());
    assert!(
        serde_json::from_str::<crate::bloom::BlockedBloomFilter>(&tamper(
            &json,
            "\"blocks\":2",
            "\"blocks\":3"
        ))
        .is_err()
    );
    // A static PBF-1 must have exactly its horizon's nodes.
    let p1 = Pbf1::uniform(8, 2, 8_000, 3, 5).unwrap();
    let json = serde_json::to_string(&p1).unwrap();
    assert!(serde_json::from_str::<Pbf1>(&json).is_ok());
    assert!(
        serde_json::from_str::<Pbf1>(&tamper(&json, "\"horizon\":8", "\"horizon\":16")).is_err()
    );
    assert!(serde_json::from_str::<Pbf1>(&tamper(&json, "\"g\":2", "\"g\":0")).is_err());
    // A dynamic PBF-1 makes new nodes of its node shape: one unlike its nodes would size the
    // next insert's allocation from nothing in the file; and its levels follow its leaves.
    let shape = FilterShape::new(64, 2).unwrap();
    let mut d = Pbf1::dynamic(4, shape, shape, 5).unwrap();
    d.insert(&1u64, 50).unwrap();
    let json = serde_json::to_string(&d).unwrap();
    assert!(serde_json::from_str::<Pbf1>(&json).is_ok());
    let huge = tamper(
        &json,
        "\"node_shape\":{\"bits\":64",
        "\"node_shape\":{\"bits\":1099511627776",
    );
    assert!(serde_json::from_str::<Pbf1>(&huge).is_err());
    let mut tall = serde_json::to_value(&d).unwrap();
    let nodes = tall["nodes"].as_array_mut().unwrap();
    let root = nodes.last().unwrap().clone();
    nodes.extend([root.clone(), root.clone(), root]);
    assert!(serde_json::from_value::<Pbf1>(tall).is_err());
    // Allocations are checked as `Allocation::new` checks them.
    let overflow = r#"{"shapes":[{"bits":18446744073709551615,"hashes":1},{"bits":1,"hashes":1}]}"#;
    assert!(serde_json::from_str::<Allocation>(overflow).is_err());
    assert!(serde_json::from_str::<Allocation>(r#"{"shapes":[{"bits":8,"hashes":0}]}"#).is_err());
}

// ---- The blocked layout ----

fn blocked_alloc(levels: usize, blocks: u64, hashes: u32) -> Allocation {
    Allocation::new(vec![
        FilterShape::new(blocks * BLOCK_BITS, hashes).unwrap();
        levels
    ])
    .unwrap()
}

#[test]
fn allocation_for_the_blocked_layout_rounds_down_to_blocks() {
    let a = Allocation::new(vec![
        FilterShape::new(5_000, 4).unwrap(),
        FilterShape::new(1_024, 3).unwrap(),
        FilterShape::new(511, 7).unwrap(),
        FilterShape { bits: 0, hashes: 0 },
    ])
    .unwrap();
    let b = a.for_layout(Layout::Blocked);
    let got: Vec<(u64, u32)> = b.shapes().iter().map(|s| (s.bits, s.hashes)).collect();
    assert_eq!(got, [(4_608, 4), (1_024, 3), (0, 0), (0, 0)]);
    assert_eq!(a.for_layout(Layout::Standard), a);
    // The rounded allocation builds a blocked PBF-2; the raw one is refused with a typed error.
    assert!(Pbf2::with_layout(0, 8, &b, 1, Layout::Blocked).is_ok());
    assert!(matches!(
        Pbf2::with_layout(0, 8, &a, 1, Layout::Blocked),
        Err(crate::Error::NotWholeBlocks { bits: 5_000, .. })
    ));
}

#[test]
fn blocked_pbf2_keeps_its_layout_through_every_operation() {
    let levels = Pbf2::levels_for(64).unwrap() as usize;
    let mut a = Pbf2::with_layout(0, 64, &blocked_alloc(levels, 4, 3), 9, Layout::Blocked).unwrap();
    a.insert(&1u64, 5).unwrap();
    assert_eq!(a.layout(), Layout::Blocked);
    assert_eq!(
        a.fold_to(&blocked_alloc(levels, 2, 3)).unwrap().layout(),
        Layout::Blocked
    );
    let next = Pbf2::with_layout(64, 64, &blocked_alloc(levels, 6, 3), 9, Layout::Blocked).unwrap();
    let merged = a.merge_adjacent(&next).unwrap();
    assert_eq!(merged.layout(), Layout::Blocked);
    assert_eq!(merged.level(0).unwrap().bit_len(), 2 * BLOCK_BITS); // gcd(4, 6) blocks
    let mut d =
        Pbf2::dynamic_with_layout(FilterShape::new(1024, 3).unwrap(), 9, Layout::Blocked).unwrap();
    d.insert(&1u64, 1_000).unwrap();
    assert!((0..d.levels()).all(|l| d.level(l).unwrap().layout() == Layout::Blocked));
    // Another layout is refused by union and merge.
    let std_alloc = blocked_alloc(levels, 4, 3);
    let mut s = Pbf2::new(64, &std_alloc, 9).unwrap();
    assert!(matches!(
        s.union(&a),
        Err(crate::Error::ShapeMismatch {
            what: crate::bloom::LAYOUT_MISMATCH,
            ..
        })
    ));
    let s_next = Pbf2::starting_at(64, 64, &std_alloc, 9).unwrap();
    assert!(matches!(
        a.merge_adjacent(&s_next),
        Err(crate::Error::ShapeMismatch {
            what: crate::bloom::LAYOUT_MISMATCH,
            ..
        })
    ));
    assert!(
        Pbf2::dynamic_with_layout(FilterShape::new(1000, 3).unwrap(), 9, Layout::Blocked).is_err()
    );
}

#[test]
fn blocked_checkpoints_are_validated() {
    let levels = Pbf2::levels_for(16).unwrap() as usize;
    let p = Pbf2::with_layout(0, 16, &blocked_alloc(levels, 1, 3), 5, Layout::Blocked).unwrap();
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<Pbf2>(&json).unwrap(), p);
    // Level 0 relabelled as a (valid) standard filter of 512 bits: the levels' layouts differ.
    let mixed = tamper(
        &tamper(&json, "\"modulus\":1,", "\"modulus\":512,"),
        "\"Blocked\"",
        "\"Standard\"",
    );
    let err = serde_json::from_str::<Pbf2>(&mixed)
        .unwrap_err()
        .to_string();
    assert!(err.contains("layouts"), "{err}");
}

/// A blocked PBF-2's measured FPR against eq. 9 with each level's p(b) taken from its fill block by
/// block (`estimated_fpr`), with the Poisson-binomial 99% bound; and each level's fill against the
/// block-load mixture `Layout::fpr` for its exact distinct (key, bucket) count.
#[test]
fn blocked_pbf2_fpr_matches_eq9_with_each_levels_block_fill() {
    let levels = Pbf2::levels_for(T).unwrap();
    let alloc = blocked_alloc(levels as usize, 100, 4);
    let mut f = Pbf2::with_layout(0, T, &alloc, 10, Layout::Blocked).unwrap();
    let recs = random_records(6_000, 4);
    for &(k, t) in &recs {
        f.insert(&k, t).unwrap();
    }
    let level_p: Vec<f64> = (0..levels).map(|l| fpr_of(f.level(l).unwrap())).collect();
    let (mut from_fill, mut from_mixture) = (0.0, 0.0);
    for (l, p) in level_p.iter().enumerate() {
        let distinct: std::collections::HashSet<(u64, u64)> =
            recs.iter().map(|&(k, t)| (k, t >> l)).collect();
        let shape = alloc.shapes()[l];
        let predicted = Layout::Blocked.fpr(shape, distinct.len() as f64);
        assert!(
            (p / predicted - 1.0).abs() < 0.1,
            "level {l}: fill says {p}, the mixture {predicted}"
        );
        assert!(predicted > shape.fpr(distinct.len() as f64));
        from_fill += p;
        from_mixture += predicted;
    }
    assert!(
        (from_fill / from_mixture - 1.0).abs() < 0.05,
        "{from_fill} vs {from_mixture}"
    );
    for len in [1u64, 16, 256, 2000] {
        let mut predicted = Vec::new();
        let mut fp = 0;
        for i in 0..20_000 {
            let (k, range) = query(i, len);
            fp += u64::from(f.query(&k, range));
            let none: f64 = dyadic_cover(range, levels - 1)
                .map(|b| 1.0 - level_p[b.level as usize])
                .product();
            predicted.push(1.0 - none);
        }
        assert_poisson_binomial(&format!("blocked PBF-2 |q| = {len}"), fp, &predicted);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn blocked_pbf2_static_no_false_negatives(recs in records(1000), sp in spans(), blocks in 1u64..16, zero in proptest::collection::vec(any::<bool>(), 10), seed in any::<u64>()) {
        let shapes = zero.iter().chain([&false]).map(|&z| if z { FilterShape { bits: 0, hashes: 0 } } else { FilterShape::new(blocks * BLOCK_BITS, 3).unwrap() }).collect();
        let mut f = Pbf2::with_layout(0, 1000, &Allocation::new(shapes).unwrap(), seed, Layout::Blocked).unwrap();
        for &(k, t) in &recs { f.insert(&k, t).unwrap(); }
        assert_no_false_negatives(&f, &recs, &sp)?;
        assert_serde_keeps_answers(&f, &recs, &sp)?;
    }

    #[test]
    fn blocked_pbf2_union_and_fold_no_false_negatives(recs in records(700), sp in spans(), seed in any::<u64>()) {
        let levels = Pbf2::levels_for(700).unwrap() as usize;
        let big = blocked_alloc(levels, 12, 3);
        let small = blocked_alloc(levels, 3, 3);
        let new = |a: &Allocation| Pbf2::with_layout(0, 700, a, seed, Layout::Blocked).unwrap();
        let (mut a, mut b, mut direct) = (new(&big), new(&big), new(&small));
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 2 == 0 { a.insert(&k, t).unwrap() } else { b.insert(&k, t).unwrap() }
            direct.insert(&k, t).unwrap();
        }
        a.union(&b).unwrap();
        assert_no_false_negatives(&a, &recs, &sp)?;
        let folded = a.fold_to(&small).unwrap();
        prop_assert_eq!(&folded, &direct); // folding whole blocks equals building small
        assert_no_false_negatives(&folded, &recs, &sp)?;
    }

    #[test]
    fn blocked_pbf2_dynamic_no_false_negatives(recs in records(5000), sp in spans(), seed in any::<u64>()) {
        let shape = FilterShape::new(6 * BLOCK_BITS, 3).unwrap();
        let mut a = Pbf2::dynamic_with_layout(shape, seed, Layout::Blocked).unwrap();
        let mut b = Pbf2::dynamic_with_layout(shape, seed, Layout::Blocked).unwrap();
        for (i, &(k, t)) in recs.iter().enumerate() {
            if i % 3 == 0 { a.insert(&k, t).unwrap() } else { b.insert(&k, t).unwrap() }
        }
        a.union(&b).unwrap();
        assert_no_false_negatives(&a, &recs, &sp)?;
        let back: Pbf2 = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_no_false_negatives(&back, &recs, &sp)?;
    }

    #[test]
    fn blocked_merge_adjacent_keeps_every_key(recs in records(2048), sp in spans(), seed in any::<u64>()) {
        let levels = Pbf2::levels_for(1024).unwrap() as usize;
        let a = Pbf2::with_layout(0, 1024, &blocked_alloc(levels, 6, 5), seed, Layout::Blocked).unwrap();
        let b = Pbf2::with_layout(1024, 1024, &blocked_alloc(levels, 4, 3), seed, Layout::Blocked).unwrap();
        let m = split_and_merge(a, b, &recs);
        prop_assert_eq!(m.level(0).unwrap().bit_len(), 2 * BLOCK_BITS); // gcd(6, 4) blocks
        prop_assert_eq!(m.level(0).unwrap().hashes(), 3);
        assert_no_false_negatives(&m, &recs, &sp)?;
    }

    #[test]
    fn blocked_partitioned_merges_under_budget_without_false_negatives(recs in records(4000), sp in spans()) {
        let cfg = PartitionConfig { partition_bits: 60_000, ..partition_cfg(Some(200_000), None) };
        let mut p = PartitionedPbf2::with_layout(cfg, Alternating, Layout::Blocked).unwrap();
        insert_in_tick_order(&mut p, &recs);
        prop_assert!(p.memory_bits() <= 200_000 || p.spans().count() == 1);
        prop_assert!(p.spans().all(|(_, _, f)| f.layout() == Layout::Blocked));
        assert_no_false_negatives(&p, &recs, &sp)?;
    }
}
