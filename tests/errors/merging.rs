//! Rows G of `docs/ERRORS.md`: merging.

use super::*;

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
