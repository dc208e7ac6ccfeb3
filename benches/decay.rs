//! Per-operation costs of the decaying filters of paper 004 at its Table 5 setting (window
//! `w = 2^16` insertions, 10 bits per item, `k = 4`), beside the dedup operator's tick filter (a
//! timing Bloom filter with full-width cells) at the same bits: insertion in steady state, the
//! standard query, and the sliding-window posterior with and without the §4.4 caching.
//!
//! `cargo bench --bench decay`. Every operation hashes its key (`KeyHash::of`), as a caller would.
//! Target: a cached BTBF posterior (observation plus Theorems 2–5) costs at most twice a standard
//! BTBF query. Measured figures are in `docs/decay.md`.

use chronobloom::core::bloom::FilterShape;
use chronobloom::core::decay::prior::DistinctModel;
use chronobloom::core::decay::{Btbf, BtbfInference, BtbfShape, Gbf, GbfInference};
use chronobloom::core::hash::KeyHash;
use chronobloom::core::window::TickFilter;
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

const WINDOW: u64 = 1 << 16;
const BITS: u64 = 10 * WINDOW;
const K: u32 = 4;
const UNIVERSE: u64 = 1 << 16;
const SEED: u64 = 7;

/// A key of the uniform stream the filters are warmed with.
fn key(i: u64) -> u64 {
    chronobloom::core::hash::mix64(i) % UNIVERSE
}

/// The TBF (`B = 1`) with `BITS` bits: the bits per timer its padding rule needs.
fn tbf_shape() -> BtbfShape {
    (2..=32u64)
        .filter_map(|bpt| BtbfShape::tbf(WINDOW, BITS / bpt, K).ok())
        .find(|s| s.bits() <= BITS && s.bpt == (BITS / s.timers) as u32)
        .unwrap_or_else(|| panic!("no TBF shape fits {BITS} bits"))
}

fn timing(c: &mut Criterion) {
    let p = 1.0 / UNIVERSE as f64;
    let model = DistinctModel::uniform(UNIVERSE).unwrap_or_else(|e| panic!("{e}"));
    let btbf_shape = BtbfShape::for_bits(WINDOW, BITS, K).unwrap_or_else(|e| panic!("{e}"));
    for (name, shape) in [("btbf", btbf_shape), ("tbf", tbf_shape())] {
        let mut group = c.benchmark_group(format!("decay/{name}"));
        let mut f = Btbf::new(shape, SEED).unwrap_or_else(|e| panic!("{e}"));
        let inf = BtbfInference::new(shape, model.clone());
        for i in 0..4 * WINDOW {
            f.insert(&key(i));
        }
        let mut i = 4 * WINDOW;
        group.bench_function("insert", |b| {
            b.iter(|| {
                i += 1;
                f.insert(&key(i));
            })
        });
        group.bench_function("query", |b| {
            b.iter(|| {
                i += 1;
                black_box(f.query(&key(i)))
            })
        });
        group.bench_function("observe", |b| {
            b.iter(|| {
                i += 1;
                black_box(f.observe(&key(i)))
            })
        });
        group.bench_function("posterior_cached", |b| {
            b.iter(|| {
                i += 1;
                black_box(inf.posterior(&f.observe(&key(i)), p))
            })
        });
        let item = inf.item(p);
        group.bench_function("posterior_cached_item", |b| {
            b.iter(|| {
                i += 1;
                black_box(inf.posterior_with(&f.observe(&key(i)), &item))
            })
        });
        group.bench_function("posterior_uncached", |b| {
            b.iter(|| {
                i += 1;
                black_box(inf.posterior_uncached(&f.observe(&key(i)), p))
            })
        });
        group.finish();
    }
}

fn generalized(c: &mut Criterion) {
    let p = 1.0 / UNIVERSE as f64;
    let mut group = c.benchmark_group("decay/gbf");
    let mut f = Gbf::new(BITS, K, K, SEED).unwrap_or_else(|e| panic!("{e}"));
    let inf = GbfInference::new(&f);
    for i in 0..4 * WINDOW {
        f.insert(&key(i));
    }
    let mut i = 4 * WINDOW;
    group.bench_function("insert", |b| {
        b.iter(|| {
            i += 1;
            f.insert(&key(i));
        })
    });
    group.bench_function("query", |b| {
        b.iter(|| {
            i += 1;
            black_box(f.query(&key(i)))
        })
    });
    group.bench_function("posterior_eq34", |b| {
        b.iter(|| {
            i += 1;
            black_box(inf.posterior(&f.observe(&key(i)), p, WINDOW))
        })
    });
    group.finish();
}

fn tick_filter(c: &mut Criterion) {
    // one insertion per tick, so the tick window equals the count window
    let cells = BITS / 32; // a 2^16-tick window needs 32-bit cells
    let shape = FilterShape {
        bits: cells,
        hashes: K,
    };
    let mut f = TickFilter::new(shape, WINDOW, 0).unwrap_or_else(|e| panic!("{e}"));
    let fp = |i: u64| KeyHash::of(&key(i), SEED).lo;
    let mut now = 0;
    for i in 0..4 * WINDOW {
        f.insert(fp(i), i);
        now = i;
    }
    let mut group = c.benchmark_group("decay/tick_filter");
    group.bench_function("insert", |b| {
        b.iter(|| {
            now += 1;
            black_box(f.insert(fp(now), now))
        })
    });
    let mut q = now;
    group.bench_function("query", |b| {
        b.iter(|| {
            q += 1;
            black_box(f.seen(fp(q), now))
        })
    });
    group.finish();
}

criterion_group!(benches, timing, generalized, tick_filter);
criterion_main!(benches);
