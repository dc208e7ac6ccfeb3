//! Rows O of `docs/ERRORS.md`: operator configurations.

use super::*;

pub(super) fn dedup() -> chronobloom::operators::DedupConfigBuilder {
    DedupConfig::builder().window(60).epoch_len(10)
}

pub(super) fn index() -> chronobloom::operators::IndexConfigBuilder {
    IndexConfig::builder()
        .epoch_len(10)
        .partition_len(100)
        .bits(8_000)
}

#[test]
fn o01_dedup_window_missing_or_zero_refused() {
    refused!(
        DedupConfig::builder().epoch_len(10).build(),
        OpError::Config {
            config: "dedup",
            name: "window",
            ..
        },
        "invalid dedup configuration `window`: is required"
    );
    refused!(
        dedup().window(0).build(),
        OpError::Config {
            config: "dedup",
            name: "window",
            ..
        },
        "invalid dedup configuration `window`: 0 is outside 1..=2147483648"
    );
}

#[test]
fn o02_dedup_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        refused!(
            dedup().fpr(e).build(),
            OpError::Config {
                config: "dedup",
                name: "fpr",
                ..
            },
            format!("invalid dedup configuration `fpr`: {e} is not in (0, 1)")
        );
    }
}

#[test]
fn o03_dedup_fpr_below_compact_floor_refused() {
    refused!(
        dedup().fpr(1e-9).build(),
        OpError::Config {
            config: "dedup",
            name: "fpr",
            ..
        },
        "invalid dedup configuration `fpr`: 0.000000001 is below 1.132e-7, the least rate 32-bit \
         slots reach"
    );
    // the tick filters of the exact edge reach it
    let exact = dedup()
        .fpr(1e-9)
        .exact_edge(true)
        .expected_items_per_window(1_000);
    assert!(exact.build().is_ok());
}

#[test]
fn o04_zero_epoch_refused() {
    let msg = |config: &str| {
        format!("invalid {config} configuration `epoch_len`: must be at least 1 tick")
    };
    refused!(
        dedup().epoch_len(0).build(),
        OpError::Config {
            config: "dedup",
            name: "epoch_len",
            ..
        },
        msg("dedup")
    );
    refused!(
        index().epoch_len(0).build(),
        OpError::Config {
            config: "index",
            name: "epoch_len",
            ..
        },
        msg("index")
    );
    refused!(
        MembershipConfig::builder().window(60).epoch_len(0).build(),
        OpError::Config {
            config: "membership",
            name: "epoch_len",
            ..
        },
        msg("membership")
    );
}

#[test]
fn o05_exact_edge_without_expected_keys_refused() {
    refused!(
        dedup().exact_edge(true).build(),
        OpError::Config {
            config: "dedup",
            name: "expected_items",
            ..
        },
        "invalid dedup configuration `expected_items`: is required with `exact_edge` (the tick \
         filters are sized once)"
    );
}

#[test]
fn o06_dedup_slack_below_minimum_refused() {
    refused!(
        dedup().window(1_000).slack(32).build(),
        OpError::Config {
            config: "dedup",
            name: "slack",
            ..
        },
        "invalid dedup configuration `slack`: 32 ticks is below 33, the least for a window of \
         1000 ticks (at most 31 generations); use `exact_edge` for a sharp edge"
    );
}

#[test]
fn o07_dedup_shards_outside_range_refused() {
    for shards in [0, 4097] {
        refused!(
            dedup().shards(shards).build(),
            OpError::Config {
                config: "dedup",
                name: "shards",
                ..
            },
            format!("invalid dedup configuration `shards`: {shards} is outside 1..=4096")
        );
    }
}

#[test]
fn o08_exact_edge_too_many_keys_per_shard_refused() {
    refused_with!(
        dedup()
            .exact_edge(true)
            .expected_items_per_window(1_000_000_000_000)
            .build(),
        OpError::Config {
            config: "dedup",
            name: "expected_items",
            ..
        },
        "invalid dedup configuration `expected_items`: ",
        " cells per shard exceed 2147483648: raise `shards`"
    );
}

#[test]
fn o09_index_epoch_not_dividing_partition_refused() {
    refused!(
        index().epoch_len(7).build(),
        OpError::Config {
            config: "index",
            name: "epoch_len",
            ..
        },
        "invalid index configuration `epoch_len`: 7 does not divide partition_len 100"
    );
}

#[test]
fn o10_index_bits_missing_zero_or_doubled_refused() {
    refused!(
        IndexConfig::builder()
            .epoch_len(10)
            .partition_len(100)
            .build(),
        OpError::Config {
            config: "index",
            name: "bits",
            ..
        },
        "invalid index configuration `bits`: is required (or give an allocation)"
    );
    refused!(
        index().bits(0).build(),
        OpError::Config {
            config: "index",
            name: "bits",
            ..
        },
        "invalid index configuration `bits`: at least one level needs bits"
    );
    let eight = Allocation::uniform(8, 8_000, 4).unwrap();
    refused!(
        index().allocation(eight).build(),
        OpError::Config {
            config: "index",
            name: "bits",
            ..
        },
        "invalid index configuration `bits`: give either bits (and hashes) or an allocation, not \
         both"
    );
}

#[test]
fn o11_index_zero_partitions_refused() {
    refused!(
        index().partitions(0).build(),
        OpError::Config {
            config: "index",
            name: "partitions",
            ..
        },
        "invalid index configuration `partitions`: must be at least 1"
    );
}

#[test]
fn o12_index_allocation_not_whole_blocks_refused() {
    let eight = Allocation::uniform(8, 8_000, 4).unwrap();
    refused!(
        IndexConfig::builder()
            .epoch_len(10)
            .partition_len(100)
            .allocation(eight)
            .layout(Layout::Blocked)
            .build(),
        OpError::Config {
            config: "index",
            name: "allocation",
            ..
        },
        "invalid index configuration `allocation`: a level of 1000 bits is not in whole 512-bit \
         blocks"
    );
}

#[test]
fn o13_index_zero_buffer_refused() {
    refused!(
        index().max_buffered(0).build(),
        OpError::Config {
            config: "index",
            name: "max_buffered",
            ..
        },
        "invalid index configuration `max_buffered`: must be at least 1 record"
    );
}

#[test]
fn o14_membership_window_zero_or_fpr_outside_refused() {
    refused!(
        MembershipConfig::builder().window(0).epoch_len(10).build(),
        OpError::Config {
            config: "membership",
            name: "window",
            ..
        },
        "invalid membership configuration `window`: must be at least 1 tick"
    );
    for e in BAD_RATES {
        refused!(
            MembershipConfig::builder()
                .window(60)
                .epoch_len(10)
                .fpr(e)
                .build(),
            OpError::Config {
                config: "membership",
                name: "fpr",
                ..
            },
            format!("invalid membership configuration `fpr`: {e} is not in (0, 1)")
        );
    }
}

#[test]
fn o15_batch_queries_on_sharded_index_refused() {
    let cfg = index().placement(Placement::Sharded).build().unwrap();
    let result = timely::execute_directly(move |worker| {
        worker.dataflow::<u64, _, _>(|scope| {
            use timely::dataflow::operators::Input;
            let (_r, records) = scope.new_input::<Vec<u64>>();
            let (_q, batches) = scope.new_input::<Vec<KeyBatch<u64>>>();
            records
                .local_index(&cfg)
                .merge_and_query_batches(batches, &cfg)
                .map(|_| ())
        })
    });
    refused!(
        result,
        OpError::Config {
            config: "index",
            name: "placement",
            ..
        },
        "invalid index configuration `placement`: batch queries are answered from a replicated \
         merged state"
    );
}

#[test]
fn o16_allocator_k_max_or_bitmaps_out_of_range_refused() {
    use chronobloom::operators::Allocator;
    let run = |config: AllocatorConfig| {
        let index = index().build().unwrap();
        timely::execute_directly(move |worker| {
            worker.dataflow::<u64, _, _>(|scope| {
                use timely::dataflow::operators::Input;
                let (_r, records) = scope.new_input::<Vec<u64>>();
                let (_q, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
                records.allocator(queries, &index, &config).map(|_| ())
            })
        })
    };
    refused!(
        run(AllocatorConfig::new(Lag::Simple).with_k_max(0)),
        OpError::Config {
            config: "allocator",
            name: "k_max",
            ..
        },
        "invalid allocator configuration `k_max`: 0 is outside 1..=64"
    );
    refused!(
        run(AllocatorConfig::new(Lag::Simple).with_bitmaps(0)),
        OpError::Core(CoreError::InvalidParameter {
            name: "bitmaps",
            ..
        }),
        "invalid parameter `bitmaps`: 0 is outside 1..=1048576"
    );
}

#[test]
fn o17_deserialized_configuration_validated() {
    let good = dedup().build().unwrap();
    let mut v = serde_json::to_value(&good).unwrap();
    v["fpr"] = serde_json::json!(2.0);
    let e = serde_json::from_value::<DedupConfig>(v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid dedup configuration `fpr`: 2 is not in (0, 1)"
    );
}
