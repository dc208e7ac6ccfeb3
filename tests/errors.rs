//! The bad-input catalogue of `docs/ERRORS.md`, one test per row, named after the row's id: each
//! feeds the input, asserts the error's variant with `matches!` and the message a user sees (its
//! `Display`, or for the main job its exit code and stderr line, never a panic). Rows that are
//! counted and reported rather than refused assert the count.

#![allow(clippy::unwrap_used)]

#[path = "support/binary.rs"]
mod binary;

use chronobloom::core::bloom::{BlockedBloomFilter, BloomFilter, FilterShape, Layout};
use chronobloom::core::decay::prior::ConstantProbability;
use chronobloom::core::decay::{AnswerRatePrior, BtbfShape, RecencySketch};
use chronobloom::core::matrix::{MatrixBloom, MatrixLayout, MatrixPbf, MatrixShape, TupleStats};
use chronobloom::core::sketch::{CountMinSketch, FmSketch};
use chronobloom::core::temporal::{
    Allocation, PartitionConfig, PartitionedPbf2, Pbf1, Pbf2, Retire, Sbf, TemporalFilter,
    TimeRange, UniformStrategy,
};
use chronobloom::core::window::{
    Apbf, GenerationSlices, SlidingBloomFilter, TaggedCuckooFilter, TickFilter,
    TimeLimitedBloomFilter, WindowFilter,
};
use chronobloom::core::Error as CoreError;
use chronobloom::operators::stats::RejectReason;
use chronobloom::operators::Error as OpError;
use chronobloom::operators::{
    timely, AllocatorConfig, DedupConfig, IndexConfig, KeyBatch, Lag, LocalIndex, MembershipConfig,
    MergeKeyBatches, PartitionSketch, Placement, TimedDedup, TimedTemporalIndex,
};
use chronobloom::trace::{
    parse_duration, CsvTrace, FlowKey, KeyKind, PcapTrace, Ticker, TraceError,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// Asserts that `result` is an error matching `pattern` whose message is exactly `message`.
macro_rules! refused {
    ($result:expr, $pattern:pat, $message:expr) => {{
        match $result {
            Ok(_) => panic!("accepted; expected `{}`", $message),
            Err(e) => {
                let shown = e.to_string();
                assert!(matches!(e, $pattern), "unexpected variant: {e:?}");
                assert_eq!(shown, $message);
            }
        }
    }};
}

/// Asserts that `result` is an error matching `pattern` whose message contains every one of
/// `parts` (for messages with an OS reason or a third-party parser's words in them).
macro_rules! refused_with {
    ($result:expr, $pattern:pat, $($part:expr),+) => {{
        match $result {
            Ok(_) => panic!("accepted"),
            Err(e) => {
                let shown = e.to_string();
                assert!(matches!(e, $pattern), "unexpected variant: {e:?}");
                $(assert!(shown.contains($part), "`{shown}` lacks `{}`", $part);)+
            }
        }
    }};
}

/// The rates no ε-taking builder accepts: 0, 1, NaN, negative, above 1.
const BAD_RATES: [f64; 5] = [0.0, 1.0, f64::NAN, -0.5, 1.5];

// ------------------------------------------------------------------- C: core configuration

#[test]
fn c01_bloom_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        let msg = format!("invalid parameter `fpr`: {e} is not in (0, 1)");
        refused!(
            BloomFilter::with_fpr(1_000, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            FilterShape::for_fpr(1_000, e),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            BlockedBloomFilter::with_fpr(1_000, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
    }
}

#[test]
fn c02_bloom_fpr_beyond_64_hashes_refused() {
    refused!(
        FilterShape::for_fpr(1_000, 1e-30),
        CoreError::InvalidParameter { name: "fpr", .. },
        "invalid parameter `fpr`: 0.000000000000000000000000000001 needs more than 64 hash functions"
    );
    assert_eq!(FilterShape::for_fpr(1_000, 1e-19).unwrap().hashes, 63);
}

#[test]
fn c03_window_filters_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        let msg = format!("invalid parameter `fpr`: {e} is not in (0, 1)");
        let fpr = |r: Result<(), CoreError>| r;
        refused!(
            fpr(TaggedCuckooFilter::new(60, 3, e, 0).map(|_| ())),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            fpr(GenerationSlices::new(60, 3, e, 0).map(|_| ())),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            fpr(SlidingBloomFilter::time_window(60, e, 0).map(|_| ())),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            fpr(SlidingBloomFilter::count_window(60, e, 0).map(|_| ())),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            fpr(TickFilter::shape_for(1_000, e, 60).map(|_| ())),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
    }
}

#[test]
fn c04_age_partitioned_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        let msg = format!("invalid parameter `fpr`: {e}; use a rate strictly between 0 and 1");
        refused!(
            Apbf::with_fpr(1_000, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            TimeLimitedBloomFilter::with_fpr(60, e, 1_000, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
    }
}

#[test]
fn c05_tagged_fpr_below_slot_floor_refused() {
    refused!(
        TaggedCuckooFilter::new(60, 3, 1e-9, 0),
        CoreError::InvalidParameter { name: "fpr", .. },
        "invalid parameter `fpr`: 0.000000001 is below 1.132e-7, the least rate 32-bit slots reach"
    );
    assert!(TaggedCuckooFilter::new(60, 3, 2e-7, 0).is_ok());
}

#[test]
fn c06_sketch_accuracy_outside_unit_interval_refused() {
    for e in BAD_RATES {
        refused!(
            CountMinSketch::with_accuracy(e, 0.01, 0),
            CoreError::InvalidParameter {
                name: "epsilon",
                ..
            },
            format!("invalid parameter `epsilon`: {e} is not in (0, 1)")
        );
        refused!(
            CountMinSketch::with_accuracy(0.01, e, 0),
            CoreError::InvalidParameter { name: "delta", .. },
            format!("invalid parameter `delta`: {e} is not in (0, 1)")
        );
        refused!(
            FmSketch::with_accuracy(e, 0),
            CoreError::InvalidParameter {
                name: "relative_error",
                ..
            },
            format!("invalid parameter `relative_error`: {e} is not in (0, 1)")
        );
    }
}

#[test]
fn c07_matrix_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        let msg = format!("invalid parameter `fpr`: {e} is not in (0, 1)");
        refused!(
            MatrixBloom::with_fpr(1_000, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            MatrixBloom::max_adaptive(100, 40, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
        refused!(
            MatrixBloom::min_storage(1_000, 4, e, 0),
            CoreError::InvalidParameter { name: "fpr", .. },
            msg
        );
    }
}

#[test]
fn c08_sizing_fpr_outside_unit_interval_refused() {
    for e in BAD_RATES {
        refused!(
            chronobloom::core::alloc::bits_for_fpr(1_000, 1_000, 10, 1, e),
            CoreError::InvalidParameter { name: "fpr", .. },
            format!("invalid parameter `fpr`: {e} is not in (0, 1)")
        );
    }
}

#[test]
fn c09_hash_count_outside_1_to_64_refused() {
    for k in [0, 65] {
        refused!(
            BloomFilter::new(1_000, k, 0),
            CoreError::InvalidParameter { name: "hashes", .. },
            format!("invalid parameter `hashes`: {k} is outside 1..=64")
        );
    }
}

#[test]
fn c10_zero_bit_filter_refused() {
    refused!(
        BloomFilter::new(0, 4, 0),
        CoreError::InvalidParameter { name: "bits", .. },
        "invalid parameter `bits`: a Bloom filter needs at least one bit"
    );
    refused!(
        BlockedBloomFilter::new(0, 4, 0),
        CoreError::InvalidParameter { name: "bits", .. },
        "invalid parameter `bits`: a Bloom filter needs at least one bit"
    );
}

#[test]
fn c11_blocked_size_not_whole_blocks_refused() {
    refused!(
        BloomFilter::with_layout(FilterShape::new(1_000, 4).unwrap(), 0, Layout::Blocked),
        CoreError::NotWholeBlocks {
            bits: 1_000,
            block_bits: 512
        },
        "1000 bits is not a positive whole number of 512-bit blocks"
    );
}

#[test]
fn c12_filter_larger_than_memory_refused() {
    let bits = 1u64 << 60;
    let msg = format!(
        "out of memory: could not allocate {bits} bits; ask for fewer (fewer bits or items, a \
         smaller window or a larger error rate)"
    );
    refused!(
        BloomFilter::new(bits, 4, 0),
        CoreError::OutOfMemory { .. },
        msg
    );
    refused!(
        Pbf2::uniform(1 << 20, bits, 4, 0),
        CoreError::OutOfMemory { .. },
        format!(
            "out of memory: could not allocate {} bits; ask for fewer (fewer bits or items, a \
             smaller window or a larger error rate)",
            bits / 21 + 1
        )
    );
}

#[test]
fn c13_zero_horizon_refused() {
    refused!(
        Pbf2::uniform(0, 1_000, 4, 0),
        CoreError::InvalidParameter {
            name: "horizon",
            ..
        },
        "invalid parameter `horizon`: must be at least 1 tick"
    );
    refused!(
        Pbf1::uniform(0, 1, 1_000, 4, 0),
        CoreError::InvalidParameter {
            name: "horizon",
            ..
        },
        "invalid parameter `horizon`: must be at least 1 tick"
    );
}

#[test]
fn c14_allocation_of_wrong_length_refused() {
    let three_levels = Allocation::uniform(3, 3_000, 4).unwrap();
    refused!(
        Pbf2::new(100, &three_levels, 0),
        CoreError::AllocationLength {
            expected: 8,
            got: 3
        },
        "allocation has 3 filter shapes, but this structure has 8 filters"
    );
}

#[test]
fn c15_zero_leaf_granularity_refused() {
    refused!(
        Pbf1::uniform(100, 0, 1_000, 4, 0),
        CoreError::InvalidParameter { name: "g", .. },
        "invalid parameter `g`: leaf granularity must be at least 1 tick"
    );
}

#[test]
fn c16_zero_window_refused() {
    refused!(
        TaggedCuckooFilter::new(0, 3, 0.01, 0),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: 0 is outside 1..=1099511627776"
    );
    refused!(
        GenerationSlices::new(0, 3, 0.01, 0),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: must be at least 1 tick"
    );
    refused!(
        SlidingBloomFilter::time_window(0, 0.01, 0),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: must be at least 1"
    );
    refused!(
        Apbf::with_fpr(0, 0.01, 0),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: a count window needs at least one insertion"
    );
    refused!(
        TimeLimitedBloomFilter::with_fpr(0, 0.01, 1_000, 0),
        CoreError::InvalidParameter { name: "span", .. },
        "invalid parameter `span`: the window must last at least one tick"
    );
    refused!(
        BtbfShape::new(0, 100, 4, 8, 1),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: must be at least 1 insertion"
    );
}

#[test]
fn c17_slack_too_small_refused() {
    refused!(
        TaggedCuckooFilter::new(1_000, 0, 0.01, 0),
        CoreError::InvalidParameter { name: "slack", .. },
        "invalid parameter `slack`: 0 ticks cut a window of 1000 into 1000 generations; at least \
         33 ticks keep it within 31"
    );
}

#[test]
fn c18_fold_to_non_divisor_refused() {
    let f = BloomFilter::new(1_000, 4, 0).unwrap();
    refused!(
        f.fold(300),
        CoreError::NotADivisor {
            from: 1000,
            to: 300
        },
        "cannot fold 1000 bits to 300 bits: 300 must be a positive divisor of 1000"
    );
}

#[test]
fn c19_empty_sketch_refused() {
    refused!(
        CountMinSketch::new(0, 4, 0),
        CoreError::InvalidParameter {
            name: "width/depth",
            ..
        },
        "invalid parameter `width/depth`: both must be at least 1"
    );
    refused!(
        FmSketch::new(0, 0),
        CoreError::InvalidParameter {
            name: "bitmaps",
            ..
        },
        "invalid parameter `bitmaps`: 0 is outside 1..=1048576"
    );
}

#[test]
fn c20_inconsistent_tuple_statistics_refused() {
    refused!(
        TupleStats::new(10, 100, 1),
        CoreError::InvalidParameter {
            name: "tuple statistics",
            ..
        },
        "invalid parameter `tuple statistics`: 10 tuples over 100 first and 1 second components: \
         need 1 <= each side <= tuples <= their product"
    );
}

#[test]
fn c21_matrix_side_hashes_outside_1_to_16_refused() {
    refused!(
        MatrixShape::new(64, 64, 1, (4, 17), MatrixLayout::MinimumStorage),
        CoreError::InvalidParameter {
            name: "col_hashes",
            ..
        },
        "invalid parameter `col_hashes`: 17 is outside 1..=16"
    );
}

#[test]
fn c22_timer_bits_too_few_for_window_refused() {
    refused!(
        BtbfShape::new(1_000, 100, 4, 3, 1),
        CoreError::InvalidParameter {
            name: "bits per timer",
            ..
        },
        "invalid parameter `bits per timer`: 3 bits hold timestamps up to 6, but a window of 1000 \
         in blocks of 1 needs 1001; use more bits or larger blocks"
    );
}

#[test]
fn c23_insertion_probability_outside_0_1_refused() {
    for p in [0.0, -1.0, 1.5, f64::NAN] {
        refused!(
            ConstantProbability::new(p),
            CoreError::InvalidParameter { name: "p_x", .. },
            format!("invalid parameter `p_x`: {p} is not in (0, 1]")
        );
    }
}

#[test]
fn c24_deserialized_filter_with_inconsistent_fields_refused() {
    let f = BloomFilter::new(1_000, 4, 0).unwrap();
    let mut v = serde_json::to_value(&f).unwrap();
    v["hashes"] = serde_json::json!(0);
    let e = serde_json::from_value::<BloomFilter>(v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid parameter `hashes`: 0 is outside 1..=64"
    );
}

#[test]
fn c25_recency_sketch_parameters_refused() {
    refused!(
        RecencySketch::new(0, 1, 16, 0.5, 0),
        CoreError::InvalidParameter {
            name: "width/depth",
            ..
        },
        "invalid parameter `width/depth`: 0 × 1: both must be at least 1"
    );
    refused!(
        RecencySketch::new(8, 1, 0, 0.5, 0),
        CoreError::InvalidParameter {
            name: "halving period",
            ..
        },
        "invalid parameter `halving period`: 0 is outside 1..=2147483648"
    );
    refused!(
        RecencySketch::new(8, 1, 16, 0.0, 0),
        CoreError::InvalidParameter { name: "floor", .. },
        "invalid parameter `floor`: 0 is not a normal number in (0, 1]"
    );
    refused!(
        RecencySketch::for_bits(4, 1, 16, 0.5, 0),
        CoreError::InvalidParameter { name: "bits", .. },
        "invalid parameter `bits`: 4 bits hold no row of 1 counters of 5 bits"
    );
}

#[test]
fn c26_answer_rate_prior_refused() {
    refused!(
        AnswerRatePrior::new(0),
        CoreError::InvalidParameter { name: "window", .. },
        "invalid parameter `window`: 0: must be at least 1"
    );
    // read back: a sum above the number of observations
    refused_with!(
        serde_json::from_str::<AnswerRatePrior>(r#"{"window":8,"sum":3.5,"observations":3}"#),
        _,
        "invalid parameter `answer rate`: a sum of 3.5 over 3 observations"
    );
}

// ------------------------------------------------------------- O: operator configurations

fn dedup() -> chronobloom::operators::DedupConfigBuilder {
    DedupConfig::builder().window(60).epoch_len(10)
}

fn index() -> chronobloom::operators::IndexConfigBuilder {
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

// ---------------------------------------------------------------- T: queries and time

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

// ---------------------------------------------------------------------------- G: merging

fn bloom(bits: u64, hashes: u32, seed: u64) -> BloomFilter {
    BloomFilter::new(bits, hashes, seed).unwrap()
}

#[test]
fn g01_bloom_union_of_other_size_refused() {
    refused!(
        bloom(1_024, 4, 0).union(&bloom(2_048, 4, 0)),
        CoreError::ShapeMismatch { what: "bits", .. },
        "shape mismatch: bits (1024 vs 2048)"
    );
}

#[test]
fn g02_bloom_union_of_other_hash_count_refused() {
    refused!(
        bloom(1_024, 4, 0).union(&bloom(1_024, 5, 0)),
        CoreError::ShapeMismatch {
            what: "hash functions",
            ..
        },
        "shape mismatch: hash functions (4 vs 5)"
    );
}

#[test]
fn g03_bloom_union_of_other_seed_refused() {
    refused!(
        bloom(1_024, 4, 1).union(&bloom(1_024, 4, 2)),
        CoreError::ShapeMismatch { what: "seed", .. },
        "shape mismatch: seed (1 vs 2)"
    );
    refused!(
        bloom(1_024, 4, 1).union_folded(&bloom(2_048, 4, 2)),
        CoreError::ShapeMismatch { what: "seed", .. },
        "shape mismatch: seed (1 vs 2)"
    );
}

#[test]
fn g04_bloom_union_of_other_layout_refused() {
    let shape = FilterShape::new(1_024, 4).unwrap();
    let blocked = BloomFilter::with_layout(shape, 0, Layout::Blocked).unwrap();
    refused!(
        bloom(1_024, 4, 0).union(&blocked),
        CoreError::ShapeMismatch {
            what: "layout (0 standard, 1 blocked)",
            ..
        },
        "shape mismatch: layout (0 standard, 1 blocked) (0 vs 1)"
    );
}

#[test]
fn g05_blocked_bloom_union_of_other_shape_refused() {
    let a = BlockedBloomFilter::new(1_024, 4, 0).unwrap();
    refused!(
        a.clone()
            .union(&BlockedBloomFilter::new(1_024, 5, 0).unwrap()),
        CoreError::ShapeMismatch {
            what: "hash functions",
            ..
        },
        "shape mismatch: hash functions (4 vs 5)"
    );
}

#[test]
fn g06_sbf_union_of_other_shape_refused() {
    let mut a = Sbf::new(1_024, 4, 0).unwrap();
    refused!(
        a.union(&Sbf::new(2_048, 4, 0).unwrap()),
        CoreError::ShapeMismatch { what: "bits", .. },
        "shape mismatch: bits (1024 vs 2048)"
    );
}

#[test]
fn g07_pbf2_union_of_other_horizon_or_start_refused() {
    let mut a = Pbf2::uniform(100, 8_000, 4, 0).unwrap();
    refused!(
        a.union(&Pbf2::uniform(200, 8_000, 4, 0).unwrap()),
        CoreError::ShapeMismatch {
            what: "horizon",
            ..
        },
        "shape mismatch: horizon (100 vs 200)"
    );
    let alloc = a.allocation();
    let later = Pbf2::starting_at(100, 100, &alloc, 0).unwrap();
    refused!(
        a.union(&later),
        CoreError::ShapeMismatch { what: "start", .. },
        "shape mismatch: start (0 vs 100)"
    );
    refused!(
        a.union(&Pbf2::uniform(100, 8_000, 4, 9).unwrap()),
        CoreError::ShapeMismatch { what: "seed", .. },
        "shape mismatch: seed (0 vs 9)"
    );
}

#[test]
fn g08_pbf2_merge_of_overlapping_or_dynamic_spans_refused() {
    let a = Pbf2::uniform(100, 8_000, 4, 0).unwrap();
    let alloc = a.allocation();
    let overlapping = Pbf2::starting_at(50, 100, &alloc, 0).unwrap();
    refused!(
        a.merge_adjacent(&overlapping),
        CoreError::ShapeMismatch {
            what: "start of the next span (it overlaps this one)",
            ..
        },
        "shape mismatch: start of the next span (it overlaps this one) (100 vs 50)"
    );
    let dynamic = Pbf2::dynamic(FilterShape::new(1_000, 4).unwrap(), 0).unwrap();
    refused!(
        a.merge_adjacent(&dynamic),
        CoreError::InvalidParameter { name: "merge", .. },
        "invalid parameter `merge`: only static PBF-2s over spans can be merged"
    );
}

#[test]
fn g09_pbf1_union_of_other_granularity_refused() {
    let mut a = Pbf1::uniform(100, 1, 8_000, 4, 0).unwrap();
    refused!(
        a.union(&Pbf1::uniform(100, 2, 8_000, 4, 0).unwrap()),
        CoreError::ShapeMismatch {
            what: "granularity",
            ..
        },
        "shape mismatch: granularity (1 vs 2)"
    );
}

#[test]
fn g10_count_min_merge_of_other_shape_refused() {
    let mut a = CountMinSketch::new(100, 4, 0).unwrap();
    refused!(
        a.merge(&CountMinSketch::new(200, 4, 0).unwrap()),
        CoreError::ShapeMismatch { what: "width", .. },
        "shape mismatch: width (100 vs 200)"
    );
    refused!(
        a.merge(&CountMinSketch::new(100, 4, 0).unwrap().conservative(true)),
        CoreError::ShapeMismatch {
            what: "conservative update",
            ..
        },
        "shape mismatch: conservative update (0 vs 1)"
    );
}

#[test]
fn g11_fm_merge_of_other_shape_refused() {
    let mut a = FmSketch::new(64, 0).unwrap();
    refused!(
        a.merge(&FmSketch::new(128, 0).unwrap()),
        CoreError::ShapeMismatch {
            what: "bitmaps",
            ..
        },
        "shape mismatch: bitmaps (64 vs 128)"
    );
    refused!(
        a.merge(&FmSketch::new(64, 1).unwrap()),
        CoreError::ShapeMismatch { what: "seed", .. },
        "shape mismatch: seed (0 vs 1)"
    );
}

#[test]
fn g12_generation_slice_reopened_with_other_shape_refused() {
    let mut v = GenerationSlices::new(60, 3, 0.01, 0).unwrap();
    v.open(5, FilterShape::new(1_024, 4).unwrap()).unwrap();
    refused!(
        v.open(5, FilterShape::new(2_048, 4).unwrap()),
        CoreError::ShapeMismatch {
            what: "generation slice bits",
            ..
        },
        "shape mismatch: generation slice bits (1024 vs 2048)"
    );
}

#[test]
fn g13_matrix_union_of_other_shape_refused() {
    let mut a = MatrixBloom::with_fpr(1_000, 0.01, 0).unwrap();
    let b = MatrixBloom::with_fpr(2_000, 0.01, 0).unwrap();
    refused!(
        a.union(&b),
        CoreError::ShapeMismatch { what: "rows", .. },
        format!(
            "shape mismatch: rows ({} vs {})",
            a.shape().rows,
            b.shape().rows
        )
    );
}

#[test]
fn g14_partition_sketch_merge_of_other_levels_refused() {
    let mut a = PartitionSketch::new(3, 64, 0).unwrap();
    refused!(
        a.merge(&PartitionSketch::new(4, 64, 0).unwrap()),
        OpError::Core(CoreError::ShapeMismatch { what: "levels", .. }),
        "shape mismatch: levels (3 vs 4)"
    );
}

// ----------------------------------------------------------- F: input files and arguments

fn dir() -> TempDir {
    TempDir::new().unwrap()
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A pcap file header (microseconds, little-endian) of link type `linktype`.
fn pcap_header(linktype: u32) -> Vec<u8> {
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65_535u32.to_le_bytes());
    h.extend_from_slice(&linktype.to_le_bytes());
    h
}

/// An Ethernet frame of IPv4 TCP 10.0.0.1:1234 → 10.0.0.2:80 (`ip` rewrites the IP header).
fn frame(ip: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut f = vec![0; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let mut h = vec![
        0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip(&mut h);
    f.extend_from_slice(&h);
    f.extend_from_slice(&1234u16.to_be_bytes());
    f.extend_from_slice(&80u16.to_be_bytes());
    f.extend_from_slice(&[0; 16]);
    f
}

/// A pcap record at `secs` + `micros` holding `data`.
fn record(secs: u32, micros: u32, data: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [secs, micros, data.len() as u32, data.len() as u32] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(data);
    r
}

/// A capture of one good packet then `then`.
fn capture(then: &[u8]) -> Vec<u8> {
    let mut c = pcap_header(1);
    c.extend_from_slice(&record(1, 0, &frame(|_| {})));
    c.extend_from_slice(then);
    c
}

/// A pcapng section header block (little-endian) with no options.
fn shb() -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&(-1i64).to_le_bytes());
    b.extend_from_slice(&28u32.to_le_bytes());
    b
}

/// A pcapng interface description block of `linktype`.
fn idb(linktype: u16) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&20u32.to_le_bytes());
    b.extend_from_slice(&linktype.to_le_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&65_535u32.to_le_bytes());
    b.extend_from_slice(&20u32.to_le_bytes());
    b
}

/// A pcapng enhanced packet block on `interface` whose trailing length is off by `skew`.
fn epb(interface: u32, skew: u32) -> Vec<u8> {
    let data = frame(|_| {});
    let padded = data.len().div_ceil(4) * 4;
    let len = (32 + padded) as u32;
    let mut b = Vec::new();
    for v in [
        6,
        len,
        interface,
        0,
        1_000,
        data.len() as u32,
        data.len() as u32,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&data);
    b.resize(b.len() + padded - data.len(), 0);
    b.extend_from_slice(&(len + skew).to_le_bytes());
    b
}

/// The first error reading `path` as a capture (opening included).
fn pcap_error(path: &Path) -> Result<(), TraceError> {
    for r in PcapTrace::open(path)? {
        r?;
    }
    Ok(())
}

/// The first error reading `text` as a CSV flow list.
fn csv_error(text: &[u8]) -> Result<(), TraceError> {
    let d = dir();
    let path = write(&d, "flows.csv", text);
    for r in CsvTrace::open(&path)? {
        r?;
    }
    Ok(())
}

const HEADER: &str = "timestamp,src,dst,sport,dport,proto\n";

#[test]
fn f01_missing_trace_file_refused() {
    refused!(
        PcapTrace::open("/nonexistent/capture.pcap"),
        TraceError::Open { .. },
        "cannot open trace file /nonexistent/capture.pcap: No such file or directory (os error 2)"
    );
    refused!(
        CsvTrace::open("/nonexistent/flows.csv"),
        TraceError::Open { .. },
        "cannot open trace file /nonexistent/flows.csv: No such file or directory (os error 2)"
    );
}

#[test]
fn f02_directory_as_trace_file_refused() {
    let d = dir();
    refused!(
        PcapTrace::open(d.path()),
        TraceError::Read { .. },
        format!(
            "cannot read trace file {}: Is a directory (os error 21)",
            d.path().display()
        )
    );
}

#[test]
fn f03_foreign_file_as_capture_refused() {
    let d = dir();
    let gif = write(
        &d,
        "image.pcap",
        b"GIF89a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    );
    refused!(
        PcapTrace::open(&gif),
        TraceError::UnknownFormat {
            magic: 0x4749_4638,
            ..
        },
        format!(
            "{} is not a pcap or pcapng capture (it starts with 0x47494638); use --csv for flow \
             lists",
            gif.display()
        )
    );
}

#[test]
fn f04_truncated_capture_header_refused() {
    let d = dir();
    let p = write(&d, "short.pcap", &pcap_header(1)[..10]);
    refused!(
        PcapTrace::open(&p),
        TraceError::Truncated {
            what: "file header",
            offset: 0,
            ..
        },
        format!(
            "{} is truncated: it ends inside the file header starting at byte offset 0",
            p.display()
        )
    );
}

#[test]
fn f05_truncated_packet_record_refused() {
    let d = dir();
    let cut = record(2, 0, &frame(|_| {}));
    let p = write(&d, "cut.pcap", &capture(&cut[..30]));
    refused!(
        pcap_error(&p),
        TraceError::Truncated {
            what: "packet record",
            offset: 94,
            ..
        },
        format!(
            "{} is truncated: it ends inside the packet record starting at byte offset 94",
            p.display()
        )
    );
}

#[test]
fn f06_unknown_link_type_refused() {
    let d = dir();
    let p = write(&d, "usr.pcap", &pcap_header(147));
    let supported = "supported: 1 (Ethernet), 12/14/101 (raw IP), 228 (IPv4), 229 (IPv6), 113 \
                     (Linux SLL), 276 (Linux SLL2)";
    refused!(
        PcapTrace::open(&p),
        TraceError::UnknownLinkType {
            linktype: 147,
            interface: 0,
            ..
        },
        format!(
            "{}: unsupported link type 147 (interface 0); {supported}",
            p.display()
        )
    );
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&idb(147));
    let p = write(&d, "usr.pcapng", &ng);
    refused!(
        pcap_error(&p),
        TraceError::UnknownLinkType {
            linktype: 147,
            interface: 1,
            ..
        },
        format!(
            "{}: unsupported link type 147 (interface 1); {supported}",
            p.display()
        )
    );
}

#[test]
fn f07_pcapng_broken_framing_refused() {
    let d = dir();
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&epb(0, 4));
    let p = write(&d, "trailer.pcapng", &ng);
    refused_with!(
        pcap_error(&p),
        TraceError::Malformed { offset: 48, .. },
        format!("{} is malformed at byte offset 48: block: ", p.display()).as_str()
    );
}

#[test]
fn f08_pcapng_packet_of_undescribed_interface_refused() {
    let d = dir();
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&epb(3, 0));
    let p = write(&d, "iface.pcapng", &ng);
    refused!(
        pcap_error(&p),
        TraceError::Malformed { offset: 48, .. },
        format!(
            "{} is malformed at byte offset 48: packet refers to interface 3, but 1 are described",
            p.display()
        )
    );
}

#[test]
fn f09_undecodable_packet_refused_per_record() {
    let d = dir();
    let mut short = frame(|_| {});
    short.truncate(14 + 10); // Ethernet, then half an IPv4 header
    let p = write(&d, "short-ip.pcap", &capture(&record(2, 0, &short)));
    let e = pcap_error(&p).unwrap_err();
    assert!(e.is_record_error(), "--skip-bad may skip it");
    refused!(
        Err::<(), _>(e),
        TraceError::BadPacket {
            packet: 2,
            offset: 94,
            ..
        },
        format!(
            "{}: packet 2 (byte offset 94): truncated IPv4 header: needs 20 bytes, 10 captured",
            p.display()
        )
    );
    let v5 = frame(|h| h[0] = 0x55);
    let p = write(&d, "v5.pcap", &capture(&record(2, 0, &v5)));
    refused!(
        pcap_error(&p),
        TraceError::BadPacket { packet: 2, .. },
        format!(
            "{}: packet 2 (byte offset 94): IP version 5 where IPv4 was expected",
            p.display()
        )
    );
}

#[test]
fn f10_timestamp_fraction_of_a_second_or_more_refused() {
    let d = dir();
    let p = write(
        &d,
        "frac.pcap",
        &capture(&record(2, 2_000_000, &frame(|_| {}))),
    );
    refused!(
        pcap_error(&p),
        TraceError::BadPacket { packet: 2, .. },
        format!(
            "{}: packet 2 (byte offset 94): malformed record: timestamp fraction is a second or \
             more",
            p.display()
        )
    );
}

#[test]
fn f11_csv_bad_or_missing_header_refused() {
    let d = dir();
    for (name, text, found) in [
        ("other.csv", &b"time,src\n"[..], "time,src"),
        ("empty.csv", b"", ""),
        // UTF-16 with its byte order mark: undecodable bytes shown as �, NULs escaped
        (
            "utf16.csv",
            b"\xff\xfet\0i\0",
            "\u{fffd}\u{fffd}t\\u{0}i\\u{0}",
        ),
    ] {
        let p = write(&d, name, text);
        refused!(
            CsvTrace::open(&p),
            TraceError::CsvHeader { .. },
            format!(
                "{}: line 1 must be the header `timestamp,src,dst,sport,dport,proto`, found \
                 `{found}`",
                p.display()
            )
        );
    }
}

#[test]
fn f12_csv_wrong_field_count_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: expected 6 comma-separated fields (timestamp,src,dst,sport,dport,proto), found 5"
    );
}

#[test]
fn f13_csv_bad_address_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.256,10.0.0.2,1,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: src `10.0.0.256` is not an IPv4 or IPv6 address"
    );
}

#[test]
fn f14_csv_port_above_65535_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,70000,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: sport `70000` is not a port number (0..=65535)"
    );
}

#[test]
fn f15_csv_bad_timestamp_or_protocol_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1e9,10.0.0.1,10.0.0.2,1,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: timestamp `1e9` is not decimal seconds like 1510000000.123456"
    );
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,256\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: proto `256` is not a protocol number (0..=255)"
    );
}

#[test]
fn f16_csv_line_not_utf8_refused() {
    let mut text = HEADER.as_bytes().to_vec();
    text.extend_from_slice(b"1.0,10.0.0.\xff,10.0.0.2,1,2,6\n");
    refused_with!(
        csv_error(&text),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: not UTF-8 text: byte 0xff at column 12 (save the file as UTF-8)"
    );
}

#[test]
fn f17_bad_duration_refused() {
    for (text, reason) in [
        ("10 parsecs", "unknown unit: use ms, s, m or h"),
        (
            "60",
            "missing unit: write e.g. `60s`; units are ms, s, m, h",
        ),
        (
            "s",
            "expected a whole number followed by a unit (ms, s, m, h)",
        ),
        (
            "-5s",
            "expected a whole number followed by a unit (ms, s, m, h)",
        ),
        ("99999999999999999999h", "too large"),
    ] {
        refused!(
            parse_duration(text),
            TraceError::InvalidDuration { .. },
            format!("invalid duration `{text}`: {reason}")
        );
    }
}

#[test]
fn f18_bad_key_kind_or_key_refused() {
    refused!(
        "foo".parse::<KeyKind>(),
        TraceError::InvalidArgument { name: "key", .. },
        "invalid key `foo`: expected one of `src`, `pair`, `5tuple`"
    );
    refused!(
        "10.0.0.1>".parse::<FlowKey>(),
        TraceError::InvalidArgument { name: "key", .. },
        "invalid key `10.0.0.1>`: expected `src`, `src>dst` or `src:sport>dst:dport/proto`"
    );
}

#[test]
fn f19_zero_tick_unit_refused() {
    refused!(
        Ticker::new(Duration::ZERO, Duration::ZERO),
        TraceError::InvalidArgument {
            name: "tick unit",
            ..
        },
        "invalid tick unit `0ns`: expected a duration of at least 1 ns"
    );
}

// ---------------------------------------------------------------- J: the main job's flags

fn binary() -> &'static Path {
    binary::trace_dedup()
}

fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().unwrap()
}

/// Asserts that `args` end the job with exit code 2 and a clean stderr containing `says`.
fn job_refuses(args: &[&str], says: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(stderr.contains(says), "{args:?}: `{stderr}` lacks `{says}`");
}

/// [`job_refuses`] for an error of ours: stderr is exactly `trace_dedup: {message}`.
fn job_says(args: &[&str], message: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr, format!("trace_dedup: {message}\n"), "{args:?}");
}

/// The JSON report of a successful run.
fn report(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn j01_zero_window_refused() {
    job_says(
        &["--window", "0s"],
        "--window 0ns is shorter than one tick (--unit 1ms); give at least 1ms",
    );
}

#[test]
fn j02_zero_epoch_refused() {
    job_says(
        &["--epoch", "0ms"],
        "--epoch 0ns is shorter than one tick (--unit 1ms); give at least 1ms",
    );
}

#[test]
fn j03_window_shorter_than_unit_refused() {
    job_says(
        &["--window", "1ms", "--unit", "1s"],
        "--window 1ms is shorter than one tick (--unit 1s); give at least 1s",
    );
}

#[test]
fn j04_zero_unit_refused() {
    job_says(
        &["--unit", "0s"],
        "invalid tick unit `0ns`: expected a duration of at least 1 ns",
    );
}

#[test]
fn j05_fpr_outside_unit_interval_refused() {
    for (given, shown) in [
        ("1.5", "1.5"),
        ("0", "0"),
        ("1", "1"),
        ("NaN", "NaN"),
        ("-0.1", "-0.1"),
    ] {
        job_says(
            &["--fpr", given],
            &format!("--fpr {shown}: invalid dedup configuration `fpr`: {shown} is not in (0, 1)"),
        );
    }
}

#[test]
fn j06_fpr_below_compact_floor_refused() {
    job_says(
        &["--fpr", "1e-9"],
        "--fpr 0.000000001: invalid dedup configuration `fpr`: 0.000000001 is below 1.132e-7, \
         the least rate 32-bit slots reach",
    );
}

#[test]
fn j07_duration_without_known_unit_refused() {
    job_refuses(
        &["--window", "10 parsecs"],
        "error: invalid value '10 parsecs' for '--window <WINDOW>': invalid duration `10 \
         parsecs`: unknown unit: use ms, s, m or h",
    );
    job_refuses(
        &["--window", "60"],
        "error: invalid value '60' for '--window <WINDOW>': invalid duration `60`: missing unit: \
         write e.g. `60s`; units are ms, s, m, h",
    );
}

#[test]
fn j08_slack_below_minimum_refused() {
    job_says(
        &["--slack", "0s"],
        "--slack 0ns: invalid dedup configuration `slack`: 0 ticks is below 1999, the least for a \
         window of 60000 ticks (at most 31 generations); use `exact_edge` for a sharp edge",
    );
}

#[test]
fn j09_slack_with_exact_edge_refused() {
    job_refuses(
        &["--slack", "1s", "--exact-edge"],
        "error: the argument '--slack <SLACK>' cannot be used with '--exact-edge'",
    );
}

#[test]
fn j10_exact_edge_expected_keys_zero_or_too_many_refused() {
    job_says(
        &["--exact-edge", "--expected-keys", "0"],
        "--expected-keys 0: invalid dedup configuration `expected_items`: must be at least 1",
    );
    job_refuses(
        &["--exact-edge", "--expected-keys", "1000000000000"],
        "trace_dedup: --expected-keys 1000000000000: invalid dedup configuration \
         `expected_items`: ",
    );
}

#[test]
fn j11_index_bits_or_partitions_zero_refused() {
    job_says(
        &["--index-bits", "0"],
        "--index-bits 0: invalid index configuration `bits`: at least one level needs bits",
    );
    job_says(
        &["--index-partitions", "0"],
        "--index-partitions 0: invalid index configuration `partitions`: must be at least 1",
    );
}

#[test]
fn j31_index_resolution_below_a_tick_or_not_dividing_an_hour_refused() {
    job_says(
        &["--index-resolution", "7s"],
        "--index-resolution 7s: invalid index configuration `resolution`: 7000 does not divide \
         partition_len 3600000",
    );
    job_says(
        &["--unit", "1s", "--index-resolution", "500ms"],
        "--index-resolution 500ms: invalid index configuration `resolution`: must be at least 1 tick",
    );
}

#[test]
fn j32_epoch_longer_than_2_pow_32_ticks_refused() {
    job_says(
        &["--epoch", "1200h"],
        "--epoch 4320000s is 4320000000 ticks of --unit 1ms; at most 4294967296",
    );
}

#[test]
fn j33_dedup_shards_outside_1_to_4096_refused() {
    for n in ["0", "4097"] {
        job_says(
            &["--dedup-shards", n],
            &format!("invalid dedup configuration `shards`: {n} is outside 1..=4096"),
        );
    }
}

#[test]
fn j12_numeric_flags_out_of_range_refused() {
    job_refuses(
        &["--in-flight", "0"],
        "error: invalid value '0' for '--in-flight <IN_FLIGHT>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--synthetic", "0"],
        "error: invalid value '0' for '--synthetic <SYNTHETIC>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--in-flight-records", "0"],
        "error: invalid value '0' for '--in-flight-records <IN_FLIGHT_RECORDS>': 0 is not in 1..18446744073709551615",
    );
    job_refuses(
        &["--reader-share", "0"],
        "error: invalid value '0' for '--reader-share <READER_SHARE>': 0 is not in 1..=100",
    );
    job_refuses(
        &["--reader-index-share", "101"],
        "error: invalid value '101' for '--reader-index-share <READER_INDEX_SHARE>': 101 is not in 0..=100",
    );
}

#[test]
fn j13_unknown_key_or_mode_refused() {
    job_refuses(
        &["--key", "foo"],
        "error: invalid value 'foo' for '--key <KEY>': invalid key `foo`: expected one of `src`, \
         `pair`, `5tuple`",
    );
    job_refuses(
        &["--mode", "x"],
        "error: invalid value 'x' for '--mode <MODE>'",
    );
}

#[test]
fn j14_two_input_kinds_refused() {
    job_refuses(
        &["--pcap", "a.pcap", "--csv", "b.csv"],
        "error: the argument '--pcap <PCAP>...' cannot be used with '--csv <CSV>...'",
    );
}

#[test]
fn j15_bad_flags_refused_with_exact_too() {
    job_says(
        &["--exact", "--fpr", "2"],
        "--fpr 2: invalid dedup configuration `fpr`: 2 is not in (0, 1)",
    );
}

#[test]
fn j16_workers_or_processes_zero_refused() {
    job_says(
        &["-w", "0"],
        "invalid -w `0`: expected a number of worker threads per process, at least 1",
    );
    job_says(
        &["--workers", "abc"],
        "invalid --workers `abc`: expected a number of worker threads per process, at least 1",
    );
    job_says(
        &["-n", "0"],
        "invalid -n `0`: expected a number of processes, at least 1",
    );
}

#[test]
fn j17_process_index_not_below_processes_refused() {
    job_says(
        &["-n", "2", "-p", "5"],
        "invalid -p `5`: expected a process index below -n 2 (0 to 1)",
    );
}

#[test]
fn j18_missing_hostfile_refused() {
    job_says(
        &["-n", "2", "-p", "0", "-h", "/nonexistent/hosts.txt"],
        "cannot read hostfile /nonexistent/hosts.txt: No such file or directory (os error 2)",
    );
}

#[test]
fn j19_missing_input_file_refused() {
    job_says(
        &["--pcap", "/nonexistent/capture.pcap"],
        "cannot open trace file /nonexistent/capture.pcap: No such file or directory (os error 2)",
    );
}

#[test]
fn j20_directory_without_inputs_refused() {
    let d = dir();
    write(&d, "capture.pcap", &capture(&[]));
    job_says(
        &["--csv", text(d.path())],
        &format!(
            "{}: no .csv file in this directory (--csv)",
            d.path().display()
        ),
    );
    let empty = dir();
    job_says(
        &["--pcap", text(empty.path())],
        &format!(
            "{}: no .pcap or .pcapng file in this directory (--pcap)",
            empty.path().display()
        ),
    );
}

#[test]
fn j21_flow_list_given_as_capture_refused() {
    let d = dir();
    let csv = write(&d, "flows.csv", HEADER.as_bytes());
    job_says(
        &["--pcap", text(&csv)],
        &format!(
            "{} is not a pcap or pcapng capture (it starts with 0x74696d65); use --csv for flow \
             lists",
            csv.display()
        ),
    );
}

#[test]
fn j22_malformed_record_refused_or_skipped() {
    let d = dir();
    let csv = write(
        &d,
        "flows.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\nnot,a,line\n2.0,10.0.0.1,10.0.0.2,1,2,6\n")
            .as_bytes(),
    );
    job_says(
        &["--csv", text(&csv)],
        &format!(
            "{}: line 3: expected 6 comma-separated fields (timestamp,src,dst,sport,dport,proto), \
             found 3",
            csv.display()
        ),
    );
    let r = report(&["--csv", text(&csv), "--skip-bad", "--json"]);
    assert_eq!(
        (r["bad_records"].as_u64(), r["records"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn j23_truncated_capture_refused() {
    let d = dir();
    let cut = record(2, 0, &frame(|_| {}));
    let p = write(&d, "cut.pcap", &capture(&cut[..30]));
    job_says(
        &["--pcap", text(&p)],
        &format!(
            "{} is truncated: it ends inside the packet record starting at byte offset 94",
            p.display()
        ),
    );
}

#[test]
fn j24_input_without_ip_records_refused() {
    let d = dir();
    let csv = write(&d, "flows.csv", HEADER.as_bytes());
    job_says(
        &["--csv", text(&csv)],
        &format!("csv {}: no IP records", csv.display()),
    );
}

/// A one-record input and a queries file holding `queries`.
fn with_queries(queries: &[u8]) -> (TempDir, PathBuf, PathBuf) {
    let d = dir();
    let csv = write(
        &d,
        "flows.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let q = write(&d, "queries.txt", queries);
    (d, csv, q)
}

#[test]
fn j25_queries_file_unreadable_refused() {
    let (d, csv, _) = with_queries(b"");
    job_says(
        &["--csv", text(&csv), "--queries", "/nonexistent/queries.txt"],
        "cannot read queries file /nonexistent/queries.txt: No such file or directory (os error 2)",
    );
    job_says(
        &["--csv", text(&csv), "--queries", text(d.path())],
        &format!(
            "cannot read queries file {}: Is a directory (os error 21)",
            d.path().display()
        ),
    );
}

#[test]
fn j26_query_line_malformed_refused() {
    for (line, reason) in [
        (&b"nokey\n"[..], "expected `key,start,end`, found `nokey`"),
        (b"10.0.0.1,x,3\n", "`x` is not a tick (a whole number)"),
        (
            b"bogus,1,3\n",
            "invalid key `bogus`: expected `src`, `src>dst` or `src:sport>dst:dport/proto`",
        ),
        (
            b"10.0.0.1,\xff,3\n",
            "not UTF-8 text: byte 0xff at column 10",
        ),
    ] {
        let (_d, csv, q) = with_queries(line);
        job_says(
            &["--csv", text(&csv), "--queries", text(&q)],
            &format!("{}:1: {reason}", q.display()),
        );
    }
}

#[test]
fn j27_query_range_start_after_end_refused() {
    let (_d, csv, q) = with_queries(b"\n10.0.0.1:1>10.0.0.2:2/6,5,3\n");
    job_says(
        &["--csv", text(&csv), "--queries", text(&q)],
        &format!(
            "{}:2: empty time range: start 5 is after end 3",
            q.display()
        ),
    );
}

#[test]
fn j28_output_into_missing_directory_refused() {
    let (_d, csv, _) = with_queries(b"");
    job_says(
        &["--csv", text(&csv), "--out", "/nonexistent/passed.csv"],
        "cannot write --out /nonexistent/passed.csv: directory /nonexistent does not exist",
    );
    job_says(
        &["--csv", text(&csv), "--plot", "/nonexistent/plot.svg"],
        "cannot write --plot /nonexistent/plot.svg: directory /nonexistent does not exist",
    );
}

#[test]
fn j29_late_records_counted_and_reported() {
    let d = dir();
    // the second record is 2 s behind the first, past the default lateness of 1 ms
    let csv = write(
        &d,
        "late.csv",
        format!("{HEADER}5.0,10.0.0.1,10.0.0.2,1,2,6\n3.0,10.0.0.3,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let r = report(&["--csv", text(&csv), "--json"]);
    assert_eq!(
        (r["records"].as_u64(), r["late_records"].as_u64()),
        (Some(1), Some(1))
    );
    let out = run(&["--csv", text(&csv)]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("records 1  passed 1  dropped as duplicates 0  late 1  bad 0"),
        "{stdout}"
    );
    // with enough lateness it is placed at the latest tick instead
    let r = report(&["--csv", text(&csv), "--json", "--lateness", "3s"]);
    assert_eq!(
        (r["records"].as_u64(), r["late_records"].as_u64()),
        (Some(2), Some(0))
    );
}

#[test]
fn j30_records_past_index_horizon_counted_and_reported() {
    let d = dir();
    let csv = write(
        &d,
        "span.csv",
        format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,6\n3700.0,10.0.0.3,10.0.0.2,1,2,6\n").as_bytes(),
    );
    let r = report(&["--csv", text(&csv), "--index-partitions", "1", "--json"]);
    assert_eq!(r["records"].as_u64(), Some(2));
    assert_eq!(r["records_not_indexed"].as_u64(), Some(1));
    assert_eq!(
        r["not_indexed_by_reason"]["beyond_horizon"].as_u64(),
        Some(1)
    );
    let out = run(&["--csv", text(&csv), "--index-partitions", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("not indexed 1 ({\"beyond_horizon\":1})"),
        "{stdout}"
    );
}

// ----------------------------------------------------------- R: inside a running dataflow

/// Runs the timed dedup and index on records `(tick, key)` sent at `stamp`, and returns the late
/// records each counted and the records the index refused past its horizon.
fn timed_run(stamp: u64, records: Vec<(u64, u64)>) -> (u64, u64, u64) {
    let dedup = dedup().build().unwrap();
    let index = index().partitions(1).build().unwrap();
    let out = Arc::new(Mutex::new((0, 0, 0)));
    let o = Arc::clone(&out);
    timely::execute_directly(move |worker| {
        use timely::dataflow::operators::{Input, Inspect, Probe};
        let probe = timely::dataflow::ProbeHandle::new();
        let (o1, o2) = (Arc::clone(&o), Arc::clone(&o));
        let (mut r_in, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let d = records.clone().dedup_timed_by(&dedup, |k: &u64| *k);
            let i = records.temporal_index_timed(queries, &index);
            d.stats
                .inspect(move |s| o1.lock().unwrap().0 += s.late)
                .probe_with(&probe);
            i.stats
                .inspect(move |s| {
                    let mut o = o2.lock().unwrap();
                    o.1 += s.local.late;
                    o.2 += s
                        .local
                        .rejected
                        .get(&RejectReason::BeyondHorizon)
                        .copied()
                        .unwrap_or(0);
                })
                .probe_with(&probe);
            (r_in, q_in)
        });
        r_in.advance_to(stamp);
        q_in.advance_to(stamp);
        for r in &records {
            r_in.send(*r);
        }
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
    });
    let counts = *out.lock().unwrap();
    counts
}

#[test]
fn r01_late_records_in_dataflow_counted() {
    // stamped at 20, one record's own tick is 5: it is placed at 20 and counted by both
    let (dedup_late, index_late, _) = timed_run(20, vec![(5, 1), (25, 2)]);
    assert_eq!((dedup_late, index_late), (1, 1));
}

#[test]
fn r02_records_past_index_horizon_in_dataflow_counted() {
    // one partition of 100 ticks: tick 150 is refused by the index, counted by reason
    let (_, _, beyond) = timed_run(0, vec![(5, 1), (150, 2)]);
    assert_eq!(beyond, 1);
}

#[test]
fn r03_negative_differences_reported() {
    use chronobloom::operators::differential_dataflow::input::InputSession;
    use chronobloom::operators::IndexCollection;
    use timely::dataflow::operators::capture::{Capture, Extract};
    let cfg = index().build().unwrap();
    let unsupported = timely::execute_directly(move |worker| {
        let mut input = InputSession::<u64, u64, isize>::new();
        let out = worker.dataflow(|scope| {
            let indexed = input.to_collection(scope).index_collection(&cfg);
            indexed.unsupported.inner.capture()
        });
        input.update_at(7, 3, 1);
        input.update_at(7, 20, -1);
        out
    });
    let got: Vec<_> = unsupported
        .extract()
        .into_iter()
        .flat_map(|(_, d)| d)
        .collect();
    assert_eq!(got, vec![(7, 20, -1)]);
}

// ---------------------------------------------------------------- K: checkpoints and peers

mod checkpoints {
    use super::{binary, run, OpError};
    use chronobloom::core::temporal::TimeRange;
    use chronobloom::operators::checkpoint::{decode, encode, CheckpointError, Header};
    use chronobloom::operators::timely;
    use chronobloom::operators::{Allocator, AllocatorConfig, AllocatorSnapshot, Lag};
    use chronobloom::operators::{DedupConfig, DedupSnapshot, IndexSnapshot, TimedDedup};
    use chronobloom::operators::{MembershipConfig, TimedWindowMembership};
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use timely::dataflow::operators::{Input, Probe};
    use timely::dataflow::ProbeHandle;

    fn file() -> Vec<u8> {
        let h = Header {
            part: "dedup".into(),
            worker: 0,
            workers: 1,
            boundary: 10,
            job: 1,
        };
        encode(&h, b"payload").unwrap()
    }

    fn p() -> &'static Path {
        Path::new("ck/dedup-w0000.ckpt")
    }

    #[test]
    fn k01_foreign_file_refused() {
        let e = decode(p(), b"%PDF-1.7 not a checkpoint").unwrap_err();
        assert!(matches!(e, CheckpointError::Foreign { .. }));
        assert_eq!(
            e.to_string(),
            "ck/dedup-w0000.ckpt is not a chronobloom checkpoint (no `CHRBLMCP` header)"
        );
    }

    #[test]
    fn k02_truncated_file_refused() {
        let bytes = file();
        let e = decode(p(), &bytes[..bytes.len() - 5]).unwrap_err();
        assert!(matches!(e, CheckpointError::Truncated { .. }));
        assert_eq!(
            e.to_string(),
            format!(
                "ck/dedup-w0000.ckpt is truncated: {} bytes, {} needed",
                bytes.len() - 5,
                bytes.len()
            )
        );
    }

    #[test]
    fn k03_corrupted_file_refused() {
        let mut bytes = file();
        bytes[50] ^= 4; // a payload byte
        let e = decode(p(), &bytes).unwrap_err();
        assert!(matches!(e, CheckpointError::Corrupt { .. }));
        assert!(e
            .to_string()
            .starts_with("ck/dedup-w0000.ckpt is corrupted: checksum 0x"));
    }

    #[test]
    fn k04_future_version_refused() {
        let mut bytes = file();
        bytes[8] = 3;
        let e = decode(p(), &bytes).unwrap_err();
        assert!(matches!(e, CheckpointError::Version { found: 3, .. }));
        assert_eq!(
            e.to_string(),
            "ck/dedup-w0000.ckpt: checkpoint format version 3, this build reads version 2"
        );
    }

    const JOB: [&str; 6] = [
        "--synthetic",
        "30000",
        "--json",
        "--checkpoint-every",
        "300s",
        "--digest",
    ];

    /// Runs the job with checkpoints in a fresh directory; returns it and the checkpoints made.
    fn checkpointed(extra: &[&str]) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        let mut args: Vec<&str> = JOB.to_vec();
        args.extend(["--checkpoint-dir", &d]);
        args.extend(extra);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut made: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        made.sort();
        assert!(!made.is_empty());
        (dir, made)
    }

    fn resume(dir: &Path, extra: &[&str]) -> std::process::Output {
        let d = dir.to_str().unwrap();
        let mut args: Vec<&str> = JOB.to_vec();
        args.extend(["--checkpoint-dir", d]);
        args.extend(extra);
        run(&args)
    }

    #[test]
    fn k05_corrupted_newest_checkpoint_skipped() {
        let (dir, made) = checkpointed(&[]);
        assert_eq!(
            made.len(),
            2,
            "the two newest complete checkpoints are kept"
        );
        let newest = made.last().unwrap();
        let index = newest.join("index-w0000.ckpt");
        let mut bytes = std::fs::read(&index).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        std::fs::write(&index, bytes).unwrap();
        let out = resume(dir.path(), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("skipped: ") && stderr.contains("is corrupted: checksum"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"));
    }

    #[test]
    fn k06_other_flags_refused() {
        let (dir, _) = checkpointed(&[]);
        let out = resume(dir.path(), &["--window", "30s"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.starts_with("trace_dedup: ")
                && stderr.contains("belongs elsewhere: job fingerprint is 0x"),
            "{stderr}"
        );
    }

    #[test]
    fn k07_other_worker_count_refused() {
        let (dir, _) = checkpointed(&[]);
        let out = resume(dir.path(), &["-w", "2"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("belongs elsewhere: worker count is 1, this job expects 2"),
            "{stderr}"
        );
    }

    #[test]
    fn k08_changed_input_refused() {
        let csv = |n: u32| {
            let mut text = String::from("timestamp,src,dst,sport,dport,proto\n");
            for i in 0..2_000u32 {
                text.push_str(&format!(
                    "{}.0,10.0.{}.{},192.0.2.1,{},443,6\n",
                    i,
                    (i * n) % 7,
                    i % 250,
                    1000 + i % 9
                ));
            }
            text
        };
        let input = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(input.path(), csv(1)).unwrap();
        let ck = tempfile::tempdir().unwrap();
        let args = |ck: &Path| {
            vec![
                "--csv".to_string(),
                input.path().to_str().unwrap().to_string(),
                "--json".into(),
                "--checkpoint-every".into(),
                "600s".into(),
                "--checkpoint-dir".into(),
                ck.to_str().unwrap().to_string(),
            ]
        };
        let out = Command::new(binary())
            .args(args(ck.path()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(input.path(), csv(3)).unwrap(); // same name and size, other records
        let out = Command::new(binary())
            .args(args(ck.path()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("the input changed since the checkpoint: "),
            "{stderr}"
        );
    }

    #[test]
    fn k09_compact_snapshot_into_exact_edge_refused() {
        let snap = snapshot(8, true).unwrap();
        let exact = DedupConfig::builder()
            .window(50)
            .epoch_len(10)
            .shards(8)
            .exact_edge(true)
            .expected_items_per_window(1_000)
            .build()
            .unwrap();
        let e = timely::execute_directly(move |worker| {
            worker.dataflow::<u64, _, _>(|scope| {
                let (_input, recs) = scope.new_input::<Vec<(u64, u64)>>();
                recs.dedup_timed_resumable(&exact, |k: &u64| *k, Some(snap))
                    .map(|_| ())
            })
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "checkpointed state of dedup cannot be restored: a compact shard filter, and the \
             configuration has exact edges"
        );
    }

    #[test]
    fn k10_checkpoint_dir_that_is_a_file_refused() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let out = run(&["--checkpoint-dir", f.path().to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "trace_dedup: checkpoint file {}: ",
                f.path().display()
            )),
            "{stderr}"
        );
    }

    fn config(shards: u32) -> DedupConfig {
        DedupConfig::builder()
            .window(50)
            .epoch_len(10)
            .shards(shards)
            .build()
            .unwrap()
    }

    /// A dedup dataflow fed a few records; `settle` steps until the probe passes tick 20 before
    /// the snapshot is taken. Returns the snapshot or its error.
    fn snapshot(shards: u32, settle: bool) -> Result<DedupSnapshot, CheckpointError> {
        timely::execute_directly(move |worker| {
            let probe = ProbeHandle::new();
            let (mut input, handle) = worker.dataflow::<u64, _, _>(|scope| {
                let (input, recs) = scope.new_input::<Vec<(u64, u64)>>();
                let (out, h) = recs
                    .dedup_timed_resumable(&config(shards), |k: &u64| *k, None)
                    .unwrap();
                out.stats.probe_with(&probe);
                (input, h)
            });
            for t in 0..15u64 {
                input.send((t, t % 4));
            }
            input.advance_to(20);
            if settle {
                worker.step_while(|| probe.less_than(&20));
            } else {
                worker.step();
            }
            handle.snapshot(20)
        })
    }

    #[test]
    fn k11_snapshot_before_the_probe_passed_refused() {
        let e = snapshot(8, false).unwrap_err();
        assert!(matches!(e, CheckpointError::NotQuiescent { .. }));
        assert!(
            e.to_string()
                .starts_with("dedup is not quiescent at tick 20: "),
            "{e}"
        );
    }

    #[test]
    fn k12_snapshot_of_another_configuration_refused() {
        let snap = snapshot(8, true).unwrap();
        let e = timely::execute_directly(move |worker| {
            worker.dataflow::<u64, _, _>(|scope| {
                let (_input, recs) = scope.new_input::<Vec<(u64, u64)>>();
                recs.dedup_timed_resumable(&config(16), |k: &u64| *k, Some(snap))
                    .map(|_| ())
            })
        })
        .unwrap_err();
        assert!(matches!(e, CheckpointError::State { .. }));
        assert_eq!(
            e.to_string(),
            "checkpointed state of dedup cannot be restored: 8 shards checkpointed, the configuration has 16"
        );
    }

    #[test]
    fn k13_undecodable_payload_refused() {
        let e = IndexSnapshot::from_bytes(&[7; 40]).unwrap_err();
        assert!(matches!(e, CheckpointError::State { .. }));
        assert!(
            e.to_string().starts_with(
                "checkpointed state of index cannot be restored: payload does not decode: "
            ),
            "{e}"
        );
        let e = DedupSnapshot::from_bytes(&[]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("checkpointed state of dedup cannot be restored: "),
            "{e}"
        );
    }

    /// A one-worker allocator's snapshot at tick 250, after records in partitions 0 to 2.
    fn allocator_snapshot() -> AllocatorSnapshot {
        timely::execute_directly(|worker| {
            let probe = ProbeHandle::new();
            let cfg = super::index().partitions(4).build().unwrap();
            let (mut records, mut queries, handle) = worker.dataflow::<u64, _, _>(|scope| {
                let (r_in, recs) = scope.new_input::<Vec<u64>>();
                let (q_in, qs) = scope.new_input::<Vec<(u64, TimeRange)>>();
                let (streams, handle) = recs
                    .allocator_resumable(qs, &cfg, &AllocatorConfig::new(Lag::Simple), None)
                    .unwrap();
                streams.allocations.probe_with(&probe);
                (r_in, q_in, handle)
            });
            for t in 0..250u64 {
                records.advance_to(t);
                queries.advance_to(t);
                records.send(t % 37);
            }
            records.advance_to(250);
            queries.advance_to(250);
            worker.step_while(|| probe.less_than(&250));
            handle.snapshot(250).unwrap()
        })
    }

    #[test]
    fn k16_allocator_snapshot_of_another_shape_refused() {
        let snap = allocator_snapshot();
        let e = timely::execute_directly(move |worker| {
            let cfg = super::index().partitions(4).build().unwrap();
            let other = AllocatorConfig::new(Lag::Simple).with_bitmaps(16);
            worker.dataflow::<u64, _, _>(|scope| {
                let (_r, recs) = scope.new_input::<Vec<u64>>();
                let (_q, qs) = scope.new_input::<Vec<(u64, TimeRange)>>();
                recs.allocator_resumable(qs, &cfg, &other, Some(snap))
                    .map(|_| ())
            })
        })
        .unwrap_err();
        assert!(matches!(
            e,
            OpError::Config {
                config: "allocator",
                name: "restore",
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("invalid allocator configuration `restore`: partition 2's sketch: "),
            "{e}"
        );
    }

    #[test]
    fn k17_membership_view_of_another_configuration_refused() {
        let membership = |window: u64| {
            MembershipConfig::builder()
                .window(window)
                .epoch_len(10)
                .build()
                .unwrap()
        };
        let e = timely::execute_directly(move |worker| {
            worker.dataflow::<u64, _, _>(|scope| {
                let (_i, inserts) = scope.new_input::<Vec<(u64, u64)>>();
                let (_q, queries) = scope.new_input::<Vec<(u64, u64)>>();
                let (_, handle) = inserts
                    .clone()
                    .window_membership_resumable(queries.clone(), &membership(60), None)
                    .unwrap();
                let snap = handle.snapshot(0).unwrap();
                inserts
                    .window_membership_resumable(queries, &membership(120), Some(snap))
                    .map(|_| ())
            })
        })
        .unwrap_err();
        assert!(matches!(e, CheckpointError::State { .. }));
        assert_eq!(
            e.to_string(),
            "checkpointed state of membership cannot be restored: the checkpointed view has \
             another window, slack, rate or seed"
        );
    }

    /// A loopback port free when asked (its listener is closed again).
    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    /// A hostfile of two processes on loopback at `ports`.
    fn hostfile(ports: [u16; 2]) -> tempfile::NamedTempFile {
        let hosts = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            hosts.path(),
            format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
        )
        .unwrap();
        hosts
    }

    #[test]
    fn k15_unreachable_peer_stops_with_a_message() {
        let hosts = hostfile([free_port(), free_port()]);
        let h = hosts.path().to_str().unwrap();
        let out = run(&["-n", "2", "-p", "0", "-h", h, "--peer-timeout", "1s"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.starts_with("trace_dedup: process 0 of 2 could not reach every peer process within 1s (hostfile "), "{stderr}");
        assert!(!stderr.contains("panicked"));
    }

    #[test]
    fn k18_own_address_in_use_is_an_error() {
        // the first process's port, held open by this test for the run
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let hosts = hostfile([taken.local_addr().unwrap().port(), free_port()]);
        let h = hosts.path().to_str().unwrap();
        let out = run(&["-n", "2", "-p", "0", "-h", h, "--peer-timeout", "5s"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.starts_with("trace_dedup: failed to connect process 0 to its peers ("),
            "{stderr}"
        );
        assert!(stderr.contains("in use"), "{stderr}");
        assert!(!stderr.contains("panicked"));
        drop(taken);
    }
}
