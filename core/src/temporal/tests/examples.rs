//! The paper's worked examples (0-based: the paper's tick t is our t − 1).

use super::*;

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
