use super::*;
use chronobloom_core::bloom::FilterShape;

fn base() -> IndexConfigBuilder {
    IndexConfig::builder()
        .epoch_len(10)
        .partition_len(100)
        .bits(6_400)
}

fn refused(b: IndexConfigBuilder, name: &str) {
    match b.build() {
        Err(Error::Config { name: n, .. }) => assert_eq!(n, name),
        other => panic!("expected a config error on {name}, got {other:?}"),
    }
}

#[test]
fn deserializing_validates() {
    let good = base().partitions(3).build().unwrap();
    let bytes = bincode::serialize(&good).unwrap();
    assert_eq!(bincode::deserialize::<IndexConfig>(&bytes).unwrap(), good);
    let mut bad: IndexConfigFields = bincode::deserialize(&bytes).unwrap();
    bad.epoch_len = 0;
    let bytes = bincode::serialize(&bad).unwrap();
    assert!(bincode::deserialize::<IndexConfig>(&bytes).is_err());
    // a blocked configuration round-trips; a standard allocation relabelled blocked does not
    let blocked = base().bits(64_000).layout(Layout::Blocked).build().unwrap();
    let bytes = bincode::serialize(&blocked).unwrap();
    assert_eq!(
        bincode::deserialize::<IndexConfig>(&bytes).unwrap(),
        blocked
    );
    let mut bad: IndexConfigFields =
        bincode::deserialize(&bincode::serialize(&good).unwrap()).unwrap();
    bad.layout = Layout::Blocked;
    let bytes = bincode::serialize(&bad).unwrap();
    assert!(bincode::deserialize::<IndexConfig>(&bytes).is_err());
    // a resolution round-trips; one that does not divide the partition is refused on reading
    let coarse = base().resolution(20).build().unwrap();
    let bytes = bincode::serialize(&coarse).unwrap();
    assert_eq!(bincode::deserialize::<IndexConfig>(&bytes).unwrap(), coarse);
    let mut bad: IndexConfigFields = bincode::deserialize(&bytes).unwrap();
    bad.resolution = 30;
    let bytes = bincode::serialize(&bad).unwrap();
    assert!(bincode::deserialize::<IndexConfig>(&bytes).is_err());
}

#[test]
fn resolution_counts_levels_and_points() {
    let fine = base().build().unwrap();
    let coarse = base().resolution(20).build().unwrap();
    assert_eq!((fine.points(), coarse.points()), (100, 5));
    assert_eq!(fine.allocation().shapes().len(), 8);
    assert_eq!(coarse.allocation().shapes().len(), 4);
    assert_eq!(
        (coarse.point(0), coarse.point(19), coarse.point(20)),
        (0, 0, 1)
    );
    let r = TimeRange::new(19, 41).unwrap();
    assert_eq!(coarse.points_of(r), TimeRange::new(0, 2).unwrap());
    assert_eq!(fine.points_of(r), r);
    // an allocation for the tick-resolution PBF-2 does not fit the coarser one
    assert!(!coarse.fits(fine.allocation()));
    refused(base().resolution(0), "resolution");
    // a lead share of 0: worker 0 holds no level
    let none = base().lead_share(0).build().unwrap();
    let levels = none.allocation().shapes().len() as u32;
    assert!((0..levels).all(|l| none.level_owner(l, 2) == 1));
    assert!((0..levels).all(|l| none.level_owner(l, 3) != 0));
    refused(base().lead_share(101), "lead_share");
    refused(base().resolution(30), "resolution");
    refused(base().resolution(200), "resolution");
}

#[test]
fn blocked_layout_rounds_bits_and_refuses_partial_blocks() {
    let c = base().bits(64_000).layout(Layout::Blocked).build().unwrap();
    assert_eq!(c.layout(), Layout::Blocked);
    // 8 levels of 8,000 bits round down to 15 blocks each
    assert!(c.allocation().shapes().iter().all(|s| s.bits == 15 * 512));
    assert_eq!(c.new_partition().layout(), Layout::Blocked);
    assert!(c.fits(c.allocation()));
    let standard = base().bits(64_000).build().unwrap();
    assert!(!c.fits(standard.allocation()));
    refused(
        base()
            .bits(64_000)
            .layout(Layout::Blocked)
            .allocation(standard.allocation().clone()),
        "bits",
    );
    refused(
        IndexConfig::builder()
            .epoch_len(10)
            .partition_len(100)
            .layout(Layout::Blocked)
            .allocation(standard.allocation().clone()),
        "allocation",
    );
    // too few bits for one block per level
    refused(base().layout(Layout::Blocked).bits(4_000), "bits");
}

#[test]
fn valid_configuration_and_epoch_arithmetic() {
    let c = base().partitions(3).seed(9).build().unwrap();
    assert_eq!(c.horizon(), 300);
    assert_eq!(c.allocation().shapes().len(), 8);
    assert_eq!(c.allocation().total_bits(), 6_400);
    assert_eq!(c.epoch_of(25), 2);
    assert_eq!((c.epoch_start(2), c.epoch_last(2)), (20, 29));
    assert_eq!(c.partition_of_epoch(9), 0);
    assert_eq!(c.partition_of_epoch(10), 1);
    let r = TimeRange::new(0, 5).unwrap();
    assert_eq!(c.answering_epoch(33, r), 3);
    assert_eq!(
        c.answering_epoch(0, TimeRange::new(0, u64::MAX).unwrap()),
        29
    );
    assert_eq!(c.epoch_last(u64::MAX), u64::MAX);
    assert_eq!(c.new_partition().levels(), 8);
    assert!(c.digest());
    assert_eq!(c.partition_start(2), 200);
    assert!(c.fits(c.allocation()));
    assert!(!c.fits(&Allocation::uniform(3, 300, 2).unwrap()));
}

#[test]
fn invalid_configurations_are_typed_errors() {
    refused(
        IndexConfig::builder().partition_len(10).bits(64),
        "epoch_len",
    );
    refused(
        IndexConfig::builder().epoch_len(10).bits(64),
        "partition_len",
    );
    refused(base().epoch_len(0), "epoch_len");
    refused(base().partition_len(0), "partition_len");
    refused(base().epoch_len(7), "epoch_len");
    refused(base().partitions(0), "partitions");
    refused(base().max_buffered(0), "max_buffered");
    assert!(base().placement(Placement::Sharded).build().is_ok());
    refused(base().partitions(u64::MAX), "partitions");
    refused(IndexConfig::builder().epoch_len(1).partition_len(8), "bits");
    refused(base().bits(0), "bits");
    let wrong_len = Allocation::uniform(3, 300, 2).unwrap();
    refused(
        IndexConfig::builder()
            .epoch_len(1)
            .partition_len(8)
            .allocation(wrong_len),
        "allocation",
    );
    let ok = Allocation::uniform(4, 300, 2).unwrap();
    refused(base().allocation(ok.clone()), "bits");
    refused(
        IndexConfig::builder()
            .epoch_len(1)
            .partition_len(8)
            .allocation(ok.clone())
            .hashes(3),
        "hashes",
    );
    assert!(IndexConfig::builder()
        .epoch_len(1)
        .partition_len(8)
        .allocation(ok)
        .build()
        .is_ok());
    assert!(matches!(base().hashes(0).build(), Err(Error::Core(_))));
    let huge = Allocation::new(vec![FilterShape {
        bits: 64 << 33,
        hashes: 1,
    }])
    .unwrap();
    refused(
        IndexConfig::builder()
            .epoch_len(1)
            .partition_len(1)
            .allocation(huge),
        "bits",
    );
}
