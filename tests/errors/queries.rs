//! Rows T of `docs/ERRORS.md`: queries and time.

use super::*;

#[test]
fn t01_range_start_after_end_refused() {
    refused!(
        TimeRange::new(9, 3),
        CoreError::EmptyRange { start: 9, end: 3 },
        "empty time range: start 9 is after end 3"
    );
}

#[test]
fn t02_insert_past_static_horizon_refused() {
    let mut p = Pbf2::uniform(100, 8_000, 4, 0).unwrap();
    refused!(
        p.insert(&"k", 100),
        CoreError::BeyondHorizon {
            tick: 100,
            horizon: 100
        },
        "tick 100 is beyond the horizon: this structure covers ticks before 100"
    );
    let mut p1 = Pbf1::uniform(100, 1, 8_000, 4, 0).unwrap();
    refused!(
        p1.insert(&"k", 250),
        CoreError::BeyondHorizon {
            tick: 250,
            horizon: 100
        },
        "tick 250 is beyond the horizon: this structure covers ticks before 100"
    );
    let mut m = MatrixPbf::uniform(100, 80_000, 3, 0).unwrap();
    refused!(
        m.insert(&"k", 100),
        CoreError::BeyondHorizon {
            tick: 100,
            horizon: 100
        },
        "tick 100 is beyond the horizon: this structure covers ticks before 100"
    );
}

#[test]
fn t03_insert_before_span_start_refused() {
    let alloc = Allocation::uniform(Pbf2::levels_for(100).unwrap() as usize, 8_000, 4).unwrap();
    let mut p = Pbf2::starting_at(1_000, 100, &alloc, 0).unwrap();
    refused!(
        p.insert(&"k", 999),
        CoreError::BeforeStart {
            tick: 999,
            start: 1000
        },
        "tick 999 is before the span this structure covers, which starts at 1000"
    );
}

#[test]
fn t04_query_past_horizon_answers_from_below() {
    // not refused: the part past the horizon holds nothing
    let mut p = Pbf2::uniform(100, 8_000, 4, 0).unwrap();
    p.insert(&"k", 99).unwrap();
    assert!(p.query(&"k", TimeRange::new(50, 5_000).unwrap()));
    assert!(!p.query(&"k", TimeRange::new(100, 5_000).unwrap()));
}

#[test]
fn t05_time_going_backwards_refused() {
    let mut f = TimeLimitedBloomFilter::with_fpr(60, 0.01, 1_000, 0).unwrap();
    f.insert(&"k", 10).unwrap();
    refused!(
        f.insert(&"k", 5),
        CoreError::TimeWentBackwards { now: 5, last: 10 },
        "time went backwards: 5 is before the last time seen, 10"
    );
    let mut s = SlidingBloomFilter::time_window(60, 0.01, 0).unwrap();
    s.insert(&"k", 10).unwrap();
    refused!(
        s.insert(&"k", 5),
        CoreError::TimeWentBackwards { now: 5, last: 10 },
        "time went backwards: 5 is before the last time seen, 10"
    );
}

#[test]
fn t06_retired_partition_refused() {
    let cfg = PartitionConfig {
        partition_len: 100,
        partition_bits: 8_000,
        budget_bits: None,
        retention: Some((200, Retire::Drop)),
        seed: 0,
    };
    let mut p = PartitionedPbf2::new(cfg, UniformStrategy { hashes: 4 }).unwrap();
    p.insert(&"k", 10).unwrap();
    p.insert(&"k", 1_000).unwrap();
    refused!(
        p.try_query(&"k", TimeRange::new(0, 50).unwrap()),
        CoreError::Retired { start: 0, end: 100 },
        "ticks 0..100 were retired and dropped; their data is gone"
    );
    refused!(
        p.insert(&"k", 20),
        CoreError::Retired { start: 0, end: 100 },
        "ticks 0..100 were retired and dropped; their data is gone"
    );
}

#[test]
fn t07_retired_partition_file_missing_refused() {
    let dir = TempDir::new().unwrap();
    let cfg = PartitionConfig {
        partition_len: 100,
        partition_bits: 8_000,
        budget_bits: None,
        retention: Some((200, Retire::ToDir(dir.path().to_path_buf()))),
        seed: 0,
    };
    let mut p = PartitionedPbf2::new(cfg, UniformStrategy { hashes: 4 }).unwrap();
    p.insert(&"k", 10).unwrap();
    p.insert(&"k", 1_000).unwrap();
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&file).unwrap();
    refused!(
        p.try_query(&"k", TimeRange::new(0, 50).unwrap()),
        CoreError::Storage { .. },
        format!(
            "retired partition file {}: No such file or directory (os error 2)",
            file.display()
        )
    );
}

#[test]
fn t08_hash_and_tick_counts_differ_refused() {
    let mut p = Pbf2::uniform(100, 8_000, 4, 0).unwrap();
    let hashes = [chronobloom::core::hash::KeyHash::of(&1u64, 0); 3];
    refused!(
        p.insert_hashes_at(&hashes, &[1, 2]),
        CoreError::InvalidParameter { name: "ticks", .. },
        "invalid parameter `ticks`: 2 ticks for 3 hashes"
    );
}
