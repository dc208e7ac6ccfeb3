//! Allocation solve time (paper 000 Fig. 18: PBF-1 at T = 86,400, g = 4 took 0.1 s, PBF-2 100 µs),
//! and the insert cost of a PBF-2 configured by a learned allocation against a uniform one: levels
//! the workload never probes get no bits and are skipped on insert.
//!
//! `cargo bench --bench alloc`. The statistics come from a synthetic day: Zipf-like keys with a
//! diurnal rate, and range queries of up to an hour (short ones, up to 64 ticks, for the insert
//! comparison), counted exactly by the workload helpers.

use chronobloom::core::alloc::{solve, FilterStats, Pbf1Workload, Pbf2Workload, Strategy};
use chronobloom::core::hash::{mix64, KeyHash};
use chronobloom::core::temporal::{Pbf2, TemporalFilter, TimeRange};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

const T: u64 = 86_400;
const RECORDS: u64 = 500_000;
const QUERIES: u64 = 20_000;

fn unit(seed: u64, i: u64) -> f64 {
    (mix64(seed ^ mix64(i)) >> 11) as f64 / (1u64 << 53) as f64
}

fn records() -> impl Iterator<Item = (KeyHash, u64)> {
    (0..RECORDS).map(|i| {
        let u = unit(1, i);
        let key = 1_000_000f64.powf(u * u) as u64;
        let v = unit(2, i);
        let day = (v + 0.3 * (std::f64::consts::TAU * v).sin() / std::f64::consts::TAU)
            .clamp(0.0, 0.999_999);
        (KeyHash::of(&key, 0), (day * T as f64) as u64)
    })
}

fn queries() -> impl Iterator<Item = TimeRange> {
    (0..QUERIES).filter_map(|i| {
        let len = 1 + (unit(3, i) * 3_600.0) as u64;
        let s = (unit(4, i) * (T - len) as f64) as u64;
        TimeRange::new(s, s + len - 1).ok()
    })
}

fn pbf2_stats() -> Vec<FilterStats> {
    let mut w = Pbf2Workload::new(T).expect("valid horizon");
    records().for_each(|(h, t)| w.insert(h, t).expect("tick inside the horizon"));
    queries().for_each(|r| w.query(r));
    w.stats()
}

fn pbf1_stats() -> Vec<FilterStats> {
    let mut w = Pbf1Workload::new(T, 4).expect("valid horizon");
    records().for_each(|(h, t)| w.insert(h, t).expect("tick inside the horizon"));
    queries().for_each(|r| w.query(r));
    w.stats()
}

fn bench(c: &mut Criterion) {
    for (name, stats) in [
        ("pbf2_levels", pbf2_stats()),
        ("pbf1_t86400_g4", pbf1_stats()),
    ] {
        let items: f64 = stats.iter().map(|s| s.distinct).sum();
        let budget = (10.0 * items) as u64;
        let passes = solve(&stats, budget).map(|s| s.passes()).unwrap_or(0);
        println!(
            "{name}: {} filters, {budget} bits, {passes} passes",
            stats.len()
        );
        let mut group = c.benchmark_group(name);
        group.bench_function("solve", |b| b.iter(|| solve(black_box(&stats), budget)));
        group.bench_function("optimal_allocation", |b| {
            b.iter(|| Strategy::Optimal.allocate(black_box(&stats), budget, 16))
        });
        group.finish();
    }
}

/// PBF-2 insert per record, m = 5·10^7: uniform bits (hashes fitted per level) against the
/// optimal allocation for a workload of short queries, which gives the coarse levels no bits.
fn insert_cost(c: &mut Criterion) {
    let mut w = Pbf2Workload::new(T).expect("valid horizon");
    records().for_each(|(h, t)| w.insert(h, t).expect("tick inside the horizon"));
    (0..QUERIES)
        .filter_map(|i| {
            let len = 1 + (unit(5, i) * 64.0) as u64;
            let s = (unit(6, i) * (T - len) as f64) as u64;
            TimeRange::new(s, s + len - 1).ok()
        })
        .for_each(|r| w.query(r));
    let stats = w.stats();
    let batch: Vec<(KeyHash, u64)> = records().take(100_000).collect();
    let mut group = c.benchmark_group("pbf2_insert_m5e7");
    group.throughput(Throughput::Elements(batch.len() as u64));
    for strategy in [Strategy::Uniform, Strategy::Optimal] {
        let alloc = strategy
            .allocate(&stats, 50_000_000, 16)
            .expect("valid statistics");
        let levels = alloc.shapes().iter().filter(|s| s.bits > 0).count();
        println!(
            "{strategy:?}: {levels} of {} levels have bits",
            alloc.shapes().len()
        );
        let mut pbf = Pbf2::new(T, &alloc, 0).expect("valid allocation");
        group.bench_function(format!("{strategy:?}"), |b| {
            b.iter(|| {
                for &(h, t) in &batch {
                    pbf.insert_hash(h, t).expect("tick inside the horizon");
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, insert_cost);
criterion_main!(benches);
