//! Partitioned PBF-2: merging under a budget, retirement.

use super::*;

/// Alternates two allocations so merges must fold to gcd sizes and take the smaller k.
pub(super) struct Alternating;

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

pub(super) fn partition_cfg(
    budget: Option<u64>,
    retention: Option<(u64, Retire)>,
) -> PartitionConfig {
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
