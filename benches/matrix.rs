//! Matrix Bloom filter batch queries against a standard Bloom filter of equal bits and equal
//! false positive rate (paper 003; issue #16).
//!
//! Data: 250,000 keys × 4 values each, value `j` of key `a` being `mix64(a · 1000 + j) mod 10^6`
//! (`u64` components, 10^6 tuples). The matrix is Theorem 2's square for 10^6 tuples at 1%
//! (`k1 × k2 = 2 × 3`); the Bloom filter has the same bits and `k = k1 · k2`, so Theorem 1 gives
//! both the same rate — and on this data both measure it (printed at the start: about 1.0–1.1%).
//! With many values per key (say 100) the square's rows would share their key's columns and its
//! measured rate would be about 4× the Bloom filter's: no longer a comparison at equal rates.
//! The Bloom filter hashes each tuple `(a, b)` whole (its canonical 16 bytes), as any single-key
//! filter must.
//!
//! Measured per tuple (`Throughput::Elements(batch)`; a rotation of prepared batches holding at
//! least 2^16 tuples, so that small batches run with cold caches as large ones do):
//!
//! * `key_fixed/{bloom,matrix}/B`: one key with `B` values — its values `j = 0 .. B` (the first
//!   4 inserted, the rest absent);
//! * `value_fixed/{bloom,matrix}/B`: one value with `B` random keys (mostly absent);
//! * `cross/{bloom,matrix}/B`: `√B` keys × `√B` values;
//! * `temporal/{pbf2,matrix}/B`: "which of these `B` keys appeared in [s, s + 255]?" on 20,000
//!   keys at 5 ticks each over 4,096 ticks, 2·10^7 bits each: PBF-2 one key at a time against
//!   the matrix PBF's batch;
//! * `temporal_ranges/{one_by_one,batch}/R`: one key over `R` ranges of 256 ticks on the same
//!   matrix PBF, range by range against `query_ranges`.

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom_core::bloom::Filter;
use chronobloom_core::hash::mix64;
use chronobloom_core::matrix::MatrixPbf;
use chronobloom_core::temporal::{Pbf2, TemporalFilter, TimeRange};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

mod matrix_data;
use matrix_data::{filters, key_batches, rotation, value, value_batches, Filters, BATCHES, KEYS};

fn one_side(c: &mut Criterion) {
    let Filters {
        bloom,
        square: matrix,
        lines,
    } = filters();
    for &batch in &BATCHES {
        let b = batch as u64;
        let key_batches = key_batches(b);
        let value_batches = value_batches(b);

        let mut g = c.benchmark_group("matrix/key_fixed");
        g.throughput(Throughput::Elements(b));
        let mut i = 0;
        // Answers go into one buffer reused from batch to batch, as a caller of many batches
        // would (`contains_*_into`); the Bloom filter's loop allocates nothing either.
        let mut out = Vec::with_capacity(batch);
        g.bench_function(BenchmarkId::new("bloom", batch), |bench| {
            bench.iter(|| {
                let (a, values) = &key_batches[i % key_batches.len()];
                i += 1;
                values.iter().filter(|&&v| bloom.contains(&(*a, v))).count()
            })
        });
        g.bench_function(BenchmarkId::new("matrix", batch), |bench| {
            bench.iter(|| {
                let (a, values) = &key_batches[i % key_batches.len()];
                i += 1;
                out.clear();
                matrix.contains_values_into(a, values, &mut out);
                black_box(&out);
            })
        });
        g.bench_function(BenchmarkId::new("lines", batch), |bench| {
            bench.iter(|| {
                let (a, values) = &key_batches[i % key_batches.len()];
                i += 1;
                out.clear();
                lines.contains_values_into(a, values, &mut out);
                black_box(&out);
            })
        });
        g.finish();

        let mut g = c.benchmark_group("matrix/value_fixed");
        g.throughput(Throughput::Elements(b));
        g.bench_function(BenchmarkId::new("bloom", batch), |bench| {
            bench.iter(|| {
                let (keys, v) = &value_batches[i % value_batches.len()];
                i += 1;
                keys.iter().filter(|&&a| bloom.contains(&(a, *v))).count()
            })
        });
        g.bench_function(BenchmarkId::new("matrix", batch), |bench| {
            bench.iter(|| {
                let (keys, v) = &value_batches[i % value_batches.len()];
                i += 1;
                out.clear();
                matrix.contains_keys_into(keys, v, &mut out);
                black_box(&out);
            })
        });
        g.bench_function(BenchmarkId::new("lines", batch), |bench| {
            bench.iter(|| {
                let (keys, v) = &value_batches[i % value_batches.len()];
                i += 1;
                out.clear();
                lines.contains_keys_into(keys, v, &mut out);
                black_box(&out);
            })
        });
        g.finish();
    }
}

fn cross(c: &mut Criterion) {
    let Filters {
        bloom,
        square: matrix,
        lines,
    } = filters();
    for side in [4u64, 8, 16, 32] {
        let sets: Vec<(Vec<u64>, Vec<u64>)> = (0..rotation(side * side))
            .map(|r| {
                let keys: Vec<u64> = (0..side).map(|i| mix64(r * 31 + i) % KEYS).collect();
                let values = (0..side).map(|j| value(keys[0], j)).collect();
                (keys, values)
            })
            .collect();
        let mut g = c.benchmark_group("matrix/cross");
        g.throughput(Throughput::Elements(side * side));
        let mut i = 0;
        g.bench_function(BenchmarkId::new("bloom", side * side), |bench| {
            bench.iter(|| {
                let (keys, values) = &sets[i % sets.len()];
                i += 1;
                keys.iter()
                    .flat_map(|&a| values.iter().map(move |&v| (a, v)))
                    .filter(|t| bloom.contains(t))
                    .count()
            })
        });
        g.bench_function(BenchmarkId::new("matrix", side * side), |bench| {
            bench.iter(|| {
                let (keys, values) = &sets[i % sets.len()];
                i += 1;
                black_box(matrix.contains_cross(keys, values))
            })
        });
        g.bench_function(BenchmarkId::new("lines", side * side), |bench| {
            bench.iter(|| {
                let (keys, values) = &sets[i % sets.len()];
                i += 1;
                black_box(lines.contains_cross(keys, values))
            })
        });
        g.finish();
    }
}

fn temporal(c: &mut Criterion) {
    let (horizon, keys, bits) = (4_096u64, 20_000u64, 20_000_000u64);
    let mut pbf = Pbf2::uniform(horizon, bits, 7, 3).unwrap();
    let mut mat = MatrixPbf::uniform(horizon, bits, 7, 3).unwrap();
    for key in 0..keys {
        for j in 0..5 {
            let tick = mix64(key * 5 + j) % horizon;
            pbf.insert(&key, tick).unwrap();
            mat.insert(&key, tick).unwrap();
        }
    }
    for batch in [16u64, 256, 1_000] {
        let queries: Vec<(Vec<u64>, TimeRange)> = (0..rotation(batch))
            .map(|r| {
                let start = mix64(r) % (horizon - 256);
                let batch = (0..batch)
                    .map(|i| mix64(r * 7_919 + i) % (2 * keys))
                    .collect();
                (batch, TimeRange::new(start, start + 255).unwrap())
            })
            .collect();
        let mut g = c.benchmark_group("matrix/temporal");
        g.throughput(Throughput::Elements(batch));
        let mut i = 0;
        g.bench_function(BenchmarkId::new("pbf2", batch), |bench| {
            bench.iter(|| {
                let (keys, range) = &queries[i % queries.len()];
                i += 1;
                keys.iter().filter(|k| pbf.query(*k, *range)).count()
            })
        });
        g.bench_function(BenchmarkId::new("matrix", batch), |bench| {
            bench.iter(|| {
                let (keys, range) = &queries[i % queries.len()];
                i += 1;
                black_box(mat.query_keys(keys, *range))
            })
        });
        g.finish();
    }
    // One key, many ranges: the matrix's columns computed once per level, against the same
    // matrix asked range by range.
    for ranges in [16u64, 256] {
        let asks: Vec<(u64, Vec<TimeRange>)> = (0..rotation(ranges))
            .map(|r| {
                let key = mix64(r) % (2 * keys);
                let rs = (0..ranges)
                    .map(|i| {
                        let start = mix64(r * 7_919 + i) % (horizon - 256);
                        TimeRange::new(start, start + 255).unwrap()
                    })
                    .collect();
                (key, rs)
            })
            .collect();
        let mut g = c.benchmark_group("matrix/temporal_ranges");
        g.throughput(Throughput::Elements(ranges));
        let mut i = 0;
        g.bench_function(BenchmarkId::new("one_by_one", ranges), |bench| {
            bench.iter(|| {
                let (key, rs) = &asks[i % asks.len()];
                i += 1;
                rs.iter().filter(|r| mat.query(key, **r)).count()
            })
        });
        g.bench_function(BenchmarkId::new("batch", ranges), |bench| {
            bench.iter(|| {
                let (key, rs) = &asks[i % asks.len()];
                i += 1;
                black_box(mat.query_ranges(key, rs))
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = one_side, cross, temporal
}
criterion_main!(benches);
