//! The blocked layout.

use super::*;

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
