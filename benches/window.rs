//! Per-operation costs of the window filters at ε = 0.1, 0.01, 0.001: insertion into a filter in
//! steady state and queries of absent keys.
//!
//! `cargo bench --bench window`. The accuracy and memory figures (FPR, bits per item on steady and
//! bursty streams) come from `examples/window_eval.rs`, which also reports insert and query times
//! for whole streams.

use chronobloom::core::window::{Apbf, TimeLimitedBloomFilter, WindowFilter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;

const WINDOW: u64 = 100_000;
const SPAN: u64 = 10_000;
const PER_TICK: u64 = 10;

/// A filter after three windows of a steady stream (10 keys per tick), and the next free key.
fn warmed<F: WindowFilter>(mut f: F) -> (F, u64) {
    let keys = 3 * WINDOW;
    for key in 0..keys {
        f.insert(&key, key / PER_TICK)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    (f, keys)
}

fn bench_filter<F: WindowFilter>(c: &mut Criterion, name: &str, eps: f64, make: impl Fn() -> F) {
    let mut group = c.benchmark_group(format!("window/{name}"));
    let (mut f, mut key) = warmed(make());
    group.bench_function(BenchmarkId::new("insert", eps), |b| {
        b.iter(|| {
            key += 1;
            f.insert(&key, key / PER_TICK)
                .unwrap_or_else(|e| panic!("{e}"));
        });
    });
    let now = key / PER_TICK;
    let mut probe = u64::MAX / 2;
    group.bench_function(BenchmarkId::new("query_absent", eps), |b| {
        b.iter(|| {
            probe += 1;
            black_box(f.contains(&probe, now))
        });
    });
    let mut probe = key - WINDOW / 2;
    group.bench_function(BenchmarkId::new("query_present", eps), |b| {
        b.iter(|| {
            probe = if probe + 1 == key {
                key - WINDOW / 2
            } else {
                probe + 1
            };
            black_box(f.contains(&probe, now))
        });
    });
    group.finish();
}

fn window(c: &mut Criterion) {
    for eps in [0.1, 0.01, 0.001] {
        bench_filter(c, "apbf", eps, || {
            Apbf::with_fpr(WINDOW, eps, 1).unwrap_or_else(|e| panic!("{e}"))
        });
        bench_filter(c, "tlbf", eps, || {
            TimeLimitedBloomFilter::with_fpr(SPAN, eps, WINDOW, 1).unwrap_or_else(|e| panic!("{e}"))
        });
    }
}

criterion_group!(benches, window);
criterion_main!(benches);
