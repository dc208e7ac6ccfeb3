//! Rows C of `docs/ERRORS.md`: core configuration.

use super::*;

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
