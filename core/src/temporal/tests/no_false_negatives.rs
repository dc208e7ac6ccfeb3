//! No false negatives: property tests.

use super::*;

/// Records: (key, tick) with ticks below `horizon`.
pub(super) fn records(horizon: u64) -> impl Strategy<Value = Vec<(u16, u64)>> {
    proptest::collection::vec((0u16..60, 0..horizon), 1..120)
}

/// Every inserted (key, t) must answer yes for the range around t and for the point t.
pub(super) fn assert_no_false_negatives<F: TemporalFilter>(
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
pub(super) fn assert_serde_keeps_answers<F>(
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
pub(super) fn split_and_merge(mut a: Pbf2, mut b: Pbf2, recs: &[(u16, u64)]) -> Pbf2 {
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
pub(super) fn insert_in_tick_order<S: AllocationStrategy>(
    p: &mut PartitionedPbf2<S>,
    recs: &[(u16, u64)],
) {
    let mut sorted = recs.to_vec();
    sorted.sort_by_key(|r| r.1);
    for &(k, t) in &sorted {
        p.insert(&k, t).unwrap();
    }
}

pub(super) fn spans() -> impl Strategy<Value = Vec<(u64, u64)>> {
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
