//! Per-operation costs of the window filters at ε = 0.1, 0.01, 0.001: insertion into a filter in
//! steady state and queries of absent keys.
//!
//! `cargo bench --bench window`. The accuracy and memory figures (FPR, bits per item on steady and
//! bursty streams) come from `examples/window_eval.rs`, which also reports insert and query times
//! for whole streams. Measured on a shared 2-core machine (times are noisy), streams from
//! `window_gen` (10 000 records/s, 1 tick = 1 ms; steady 60 s all distinct, bursty 120 s with
//! 10% repeats), TLBF `--window 10000`, APBF `--count-window 100000`, default level 3:
//!
//! | stream | ε | filter | bits/item | FPR | insert ns | query ns | lower bound | reference |
//! |---|---|---|---|---|---|---|---|---|
//! | steady | 0.1 | tlbf | 12.6 | 0.0987 | 265 | 277 | 5.05 | 13.0 |
//! | steady | 0.1 | apbf | 12.6 | 0.0982 | 186 | 408 | 5.05 | |
//! | steady | 0.01 | tlbf | 20.5 | 0.0096 | 174 | 285 | 9.38 | 20.7 |
//! | steady | 0.01 | apbf | 20.5 | 0.0095 | 187 | 157 | 9.38 | |
//! | steady | 0.001 | tlbf | 29.4 | 0.00090 | 171 | 176 | 13.28 | 29.8 |
//! | steady | 0.001 | apbf | 29.4 | 0.00095 | 178 | 107 | 13.28 | |
//! | bursty | 0.1 | tlbf | 47.2 | 0.0966 | 288 | 388 | 5.05 | |
//! | bursty | 0.1 | apbf | 13.3 | 0.0939 | 281 | 272 | 5.05 | |
//! | bursty | 0.01 | tlbf | 75.5 | 0.0101 | 272 | 287 | 9.38 | |
//! | bursty | 0.01 | apbf | 21.5 | 0.0085 | 219 | 182 | 9.38 | |
//! | bursty | 0.001 | tlbf | 104.4 | 0.00110 | 200 | 197 | 13.28 | |
//! | bursty | 0.001 | apbf | 30.8 | 0.00080 | 334 | 173 | 13.28 | |
//!
//! Bits per item of the bursty TLBF are high because its rate changes every few seconds, faster
//! than the window: slices sized for a burst stay allocated for about `T + k T / l` after it.

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
