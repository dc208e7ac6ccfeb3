//! Temporal filters: SBF, PBF-1 (g = 4) and PBF-2 at T = 86,400 ticks and m = 5·10^7 bits, uniform
//! allocation (paper 000, Figures 10 and 12; issue #2).
//!
//! Data: a deterministic synthetic day of 250,000 records, evenly spaced in time order, keys drawn
//! from 2^18 distinct `u64` keys with Zipf(1) popularity. (With 1M records, m / L = 2.8M bits per
//! level holds 2.9 bits per (key, tick) at level 0: k = 3 and most queries end early on a false
//! positive. 250,000 records give 11 bits per item, k = 8, and mostly negative answers, the
//! regime of the paper's figures.)
//!
//! Workload: for each |q| ∈ {16, 64, 256, 1024, 4096, 8192}, 4096 queries with a key drawn from the
//! same Zipf law and a uniformly random start in [0, T − |q|].
//!
//! Hash count: the uniform setting gives every filter the same bits and the same k; k is the
//! allocation rule `ceil((m_i / d_i) ln 2)` (capped at 16) for PBF-2's most loaded filter, level 0,
//! with m_i = m / L and d_i its distinct (key, tick) pairs. The same k is used by all three
//! structures so that "one Bloom probe" is one cost unit across them.
//!
//! Measured per operation (`Throughput::Elements(1)`):
//!
//! * `insert`: one record into a structure filling from empty to the whole day (a fresh copy
//!   replaces it, outside the timed region, when the day is complete);
//! * `query/|q|`: one range query;
//! * `unit/bloom_probe_level0`, `unit/bloom_probe_all_levels`: one PBF-2 probe done by hand —
//!   deriving the (key, bucket) hash with `KeyHash::at` and `contains_hash` on level 0's filter, or
//!   on each level's filter in turn — against the full PBF-2;
//! * `unit/bloom_insert_all_levels`: `insert_hash(h.at(i))` into fresh filters of the levels'
//!   shapes, one after another, each filling from empty to the day's record count — one of the L
//!   filter inserts a PBF-2 insert makes, with the same working set;
//! * `pbf2/replay_insert`, `pbf2/query/replay/|q|`: PBF-2's exact Bloom work without the
//!   structure ([`replay_inserts`], [`replay_queries`]), each measured right after the PBF-2
//!   operation it replays; the cleanest denominator for the 1.3× target.
//!
//! Printed to stderr (outside timing): the shapes, k, and for every |q| and structure the mean
//! probes per query from `query_counted` and the fraction of queries answered "present", so that
//! "query time / (mean probes × one Bloom probe)" can be computed from the same run.
//!
//! **Layouts** (`layout/…`, [`layouts`]): PBF-2 with k = 4 in the standard and the blocked layout
//! ([`Layout::Blocked`]: each level's 2,777,777 bits rounded down to 5,425 blocks of 512), the same
//! day of records. Timed: `insert` (as above) and `query_absent/|q|` for |q| ∈ {1, 64, 4096} with
//! keys that never occur (every "present" is a false positive), uniform starts. Printed: each
//! layout's measured FPR per |q| over 100,000 such queries, beside eq. 9 evaluated with every
//! level's fill (block by block when blocked, [`Filter::estimated_fpr`]).

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom_core::bloom::{BloomFilter, Filter, FilterShape, Layout};
use chronobloom_core::hash::{mix64, KeyHash};
use chronobloom_core::temporal::{
    dyadic_cover, Allocation, Pbf1, Pbf2, Sbf, TemporalFilter, TimeRange,
};
use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

const T: u64 = 86_400;
const M: u64 = 50_000_000;
const G: u64 = 4;
const RECORDS: u64 = 250_000;
const KEYS: usize = 1 << 18;
const ZIPF_S: f64 = 1.0;
const SEED: u64 = 0xc4_0b10;
const QUERIES: usize = 4096;
const LENGTHS: [u64; 6] = [16, 64, 256, 1024, 4096, 8192];

/// Counter-based uniform in [0, 1): `mix64` of (stream, index).
fn uniform(stream: u64, i: u64) -> f64 {
    let x = mix64(mix64(stream ^ SEED) ^ i);
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Zipf(s) over `KEYS` ranks by inverse CDF; rank r maps to the key `mix64(r)`.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new() -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=KEYS)
            .map(|r| {
                acc += 1.0 / (r as f64).powf(ZIPF_S);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    fn key(&self, u: f64) -> u64 {
        let rank = self.cdf.partition_point(|&c| c < u).min(KEYS - 1);
        mix64(rank as u64 ^ 0x006b_6579)
    }
}

struct Workload {
    records: Vec<(u64, u64)>,
    /// For each |q|, its queries (key, range).
    queries: Vec<(u64, Vec<(u64, TimeRange)>)>,
}

fn workload() -> Workload {
    let zipf = Zipf::new();
    let records = (0..RECORDS)
        .map(|i| (zipf.key(uniform(1, i)), i * T / RECORDS))
        .collect();
    let queries = LENGTHS
        .iter()
        .map(|&len| {
            let qs = (0..QUERIES as u64)
                .map(|i| {
                    let key = zipf.key(uniform(2 + len, i));
                    let start = (uniform(3 + len, i) * (T - len + 1) as f64) as u64;
                    (key, TimeRange::new(start, start + len - 1).unwrap())
                })
                .collect();
            (len, qs)
        })
        .collect();
    Workload { records, queries }
}

fn fill<F: TemporalFilter>(mut f: F, records: &[(u64, u64)]) -> F {
    for (key, tick) in records {
        f.insert(key, *tick).unwrap();
    }
    f
}

/// Times inserting the day's records, one per iteration, into copies of `empty`.
fn bench_insert<F: TemporalFilter + Clone>(
    c: &mut Criterion,
    name: &str,
    empty: &F,
    records: &[(u64, u64)],
    then: impl FnOnce(&mut BenchmarkGroup<'_, WallTime>),
) {
    let mut g = c.benchmark_group(format!("temporal/{name}"));
    g.throughput(Throughput::Elements(1));
    let mut filter = empty.clone();
    let mut next = 0usize;
    g.bench_function("insert", |b| {
        b.iter_custom(|iters| {
            let mut left = iters;
            let mut spent = Duration::ZERO;
            while left > 0 {
                if next == records.len() {
                    filter = empty.clone();
                    next = 0;
                }
                let n = left.min((records.len() - next) as u64) as usize;
                let start = Instant::now();
                for (key, tick) in &records[next..next + n] {
                    black_box(filter.insert(black_box(key), *tick)).unwrap();
                }
                spent += start.elapsed();
                next += n;
                left -= n as u64;
            }
            spent
        })
    });
    then(&mut g);
    g.finish();
}

fn bench_queries<F: TemporalFilter>(
    c: &mut Criterion,
    name: &str,
    full: &F,
    w: &Workload,
    mut then: impl FnMut(&mut BenchmarkGroup<'_, WallTime>, u64, &[(u64, TimeRange)]),
) {
    let mut g = c.benchmark_group(format!("temporal/{name}/query"));
    g.throughput(Throughput::Elements(1));
    for (len, qs) in &w.queries {
        let (probes, present) = qs.iter().fold((0u64, 0u64), |(p, y), (key, r)| {
            let a = full.query_counted(key, *r);
            (p + a.probes, y + u64::from(a.present))
        });
        eprintln!(
            "{name} |q| = {len}: mean probes per query = {:.2}, present = {:.1}%",
            probes as f64 / qs.len() as f64,
            present as f64 * 100.0 / qs.len() as f64
        );
        let mut i = 0usize;
        g.bench_function(BenchmarkId::from_parameter(len), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                let (key, range) = &qs[i];
                full.query(black_box(key), *range)
            })
        });
        then(&mut g, *len, qs);
    }
    g.finish();
}

/// PBF-2's own Bloom work for the queries `qs`, replayed without the structure: each query's
/// (level, bucket) probes (its dyadic cover, in order, up to the first "maybe") are precomputed;
/// the timed loop hashes the key and makes exactly those `contains_hash(h.at(bucket))` calls on the
/// same level filters. "PBF-2 query / replay" is the structure's overhead over (its probes × one
/// Bloom probe), with the same filters, fill, cache footprint and early exits.
fn replay_queries(
    g: &mut BenchmarkGroup<'_, WallTime>,
    full: &Pbf2,
    len: u64,
    qs: &[(u64, TimeRange)],
) {
    let levels: Vec<&BloomFilter> = (0..full.levels()).filter_map(|l| full.level(l)).collect();
    assert_eq!(
        levels.len() as u32,
        full.levels(),
        "uniform PBF-2 has a filter per level"
    );
    let top = full.levels() - 1;
    let plans: Vec<(u64, Vec<(usize, u64)>)> = qs
        .iter()
        .map(|(key, range)| {
            let h = KeyHash::of(key, SEED);
            let mut probes = Vec::new();
            for b in dyadic_cover(*range, top) {
                probes.push((b.level as usize, b.bucket));
                if levels[b.level as usize].contains_hash(h.at(b.bucket)) {
                    break;
                }
            }
            assert_eq!(
                probes.len() as u64,
                full.query_counted(key, *range).probes,
                "the replay makes the query's probes"
            );
            (*key, probes)
        })
        .collect();
    let mut i = 0usize;
    g.bench_function(BenchmarkId::new("replay", len), |b| {
        b.iter(|| {
            i = (i + 1) % plans.len();
            let (key, probes) = &plans[i];
            let h = KeyHash::of(black_box(key), SEED);
            probes
                .iter()
                .any(|&(l, bucket)| levels[l].contains_hash(h.at(bucket)))
        })
    });
}

/// PBF-2's inserts replayed without the structure: hash the key, then `insert_hash(h.at(t >> l))`
/// into fresh filters of every level's shape (replaced outside timing after a day).
fn replay_inserts(g: &mut BenchmarkGroup<'_, WallTime>, empty: &Pbf2, records: &[(u64, u64)]) {
    let fresh: Vec<BloomFilter> = (0..empty.levels())
        .filter_map(|l| empty.level(l).cloned())
        .collect();
    let mut filters = fresh.clone();
    let mut next = 0usize;
    g.bench_function("replay_insert", |b| {
        b.iter_custom(|iters| {
            let mut left = iters;
            let mut spent = Duration::ZERO;
            while left > 0 {
                if next == records.len() {
                    filters = fresh.clone();
                    next = 0;
                }
                let n = left.min((records.len() - next) as u64) as usize;
                let start = Instant::now();
                for (key, tick) in &records[next..next + n] {
                    let h = KeyHash::of(black_box(key), SEED);
                    for (l, f) in filters.iter_mut().enumerate() {
                        f.insert_hash(h.at(tick >> l));
                    }
                }
                spent += start.elapsed();
                next += n;
                left -= n as u64;
            }
            spent
        })
    });
}

/// The unit costs of one PBF-2 probe and one Bloom insert, measured beside the structures.
fn bench_units(c: &mut Criterion, pbf2: &Pbf2) {
    let levels: Vec<&BloomFilter> = (0..pbf2.levels()).filter_map(|l| pbf2.level(l)).collect();
    let level0 = levels[0];
    let h = KeyHash::of(&0x0123_4567_89ab_cdefu64, SEED);
    let mut g = c.benchmark_group("temporal/unit");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("bloom_probe_level0", |b| {
        b.iter(|| {
            i += 1;
            level0.contains_hash(black_box(h).at(i))
        })
    });
    let mut i = 0u64;
    g.bench_function("bloom_probe_all_levels", |b| {
        b.iter(|| {
            i += 1;
            levels[(i % levels.len() as u64) as usize].contains_hash(black_box(h).at(i))
        })
    });
    // Fresh filters of every level's shape, filled round-robin as PBF-2 fills them (working set
    // and all), and replaced outside the timed region after a day's worth of inserts.
    let empty: Vec<BloomFilter> = levels
        .iter()
        .map(|f| BloomFilter::from_shape(f.shape(), SEED).unwrap())
        .collect();
    let per_day = RECORDS * empty.len() as u64;
    let mut filters = empty.clone();
    let mut next = 0u64;
    g.bench_function("bloom_insert_all_levels", |b| {
        b.iter_custom(|iters| {
            let mut left = iters;
            let mut spent = Duration::ZERO;
            while left > 0 {
                if next == per_day {
                    filters = empty.clone();
                    next = 0;
                }
                let n = left.min(per_day - next);
                let start = Instant::now();
                for j in next..next + n {
                    let f = &mut filters[(j % empty.len() as u64) as usize];
                    f.insert_hash(black_box(h).at(j));
                }
                spent += start.elapsed();
                next += n;
                left -= n;
            }
            spent
        })
    });
    g.finish();
}

fn temporal(c: &mut Criterion) {
    let w = workload();
    let levels = Pbf2::levels_for(T).unwrap();
    let pairs: HashSet<(u64, u64)> = w.records.iter().copied().collect();
    let keys: HashSet<u64> = w.records.iter().map(|r| r.0).collect();
    let k = FilterShape::optimal_hashes(M / u64::from(levels), pairs.len() as u64, 16);
    eprintln!(
        "T = {T}, m = {M}, records = {RECORDS}, distinct keys = {}, distinct (key, tick) = {}, \
         PBF-2 levels = {levels}, m per level = {}, k = {k} for every structure",
        keys.len(),
        pairs.len(),
        M / u64::from(levels)
    );

    let sbf = Sbf::new(M, k, SEED).unwrap();
    let pbf1 = Pbf1::uniform(T, G, M, k, SEED).unwrap();
    let pbf2 = Pbf2::uniform(T, M, k, SEED).unwrap();
    eprintln!(
        "PBF-1: {} filters (incl. SBF) of ~{} bits, {} levels",
        pbf1.node_count() + 1,
        M / (pbf1.node_count() as u64 + 1),
        pbf1.levels()
    );

    let full2 = fill(pbf2.clone(), &w.records);
    bench_units(c, &full2);
    bench_insert(c, "pbf2", &pbf2, &w.records, |g| {
        replay_inserts(g, &pbf2, &w.records)
    });
    bench_queries(c, "pbf2", &full2, &w, |g, len, qs| {
        replay_queries(g, &full2, len, qs)
    });
    drop(full2);

    let full1 = fill(pbf1.clone(), &w.records);
    bench_insert(c, "pbf1", &pbf1, &w.records, |_| {});
    bench_queries(c, "pbf1", &full1, &w, |_, _, _| {});
    drop(full1);

    let full0 = fill(sbf.clone(), &w.records);
    bench_insert(c, "sbf", &sbf, &w.records, |_| {});
    bench_queries(c, "sbf", &full0, &w, |_, _, _| {});
}

/// Queries for keys that never occur (records' keys are `mix64` of values below 2^23), uniform
/// starts: every "present" answer is a false positive.
fn absent_queries(len: u64, n: u64) -> Vec<(u64, TimeRange)> {
    (0..n)
        .map(|i| {
            let start = (uniform(40 + len, i) * (T - len + 1) as f64) as u64;
            (
                mix64((1 << 40) + i),
                TimeRange::new(start, start + len - 1).unwrap(),
            )
        })
        .collect()
}

/// PBF-2, k = 4, standard against blocked: insert and absent-key query times, measured FPR.
fn layouts(c: &mut Criterion) {
    const K: u32 = 4;
    const FPR_QUERIES: u64 = 100_000;
    let w = workload();
    let levels = Pbf2::levels_for(T).unwrap();
    let alloc = Allocation::uniform(levels as usize, M, K).unwrap();
    let contenders = [
        ("standard", Pbf2::new(T, &alloc, SEED).unwrap()),
        (
            "blocked",
            Pbf2::with_layout(
                0,
                T,
                &alloc.for_layout(Layout::Blocked),
                SEED,
                Layout::Blocked,
            )
            .unwrap(),
        ),
    ];
    for (name, empty) in &contenders {
        let full = fill(empty.clone(), &w.records);
        let level_p: Vec<f64> = (0..levels)
            .map(|l| full.level(l).unwrap().estimated_fpr())
            .collect();
        eprintln!(
            "layout {name}: {} bits per level, k = {K}, level 0 fill {:.4}",
            full.level(0).unwrap().bit_len(),
            full.level(0).unwrap().fill_ratio()
        );
        for len in [1u64, 64, 4096] {
            let qs = absent_queries(len, FPR_QUERIES);
            let fp = qs.iter().filter(|(k, r)| full.query(k, *r)).count();
            let predicted: f64 = qs
                .iter()
                .map(|(_, r)| {
                    let none: f64 = dyadic_cover(*r, levels - 1)
                        .map(|b| 1.0 - level_p[b.level as usize])
                        .product();
                    1.0 - none
                })
                .sum();
            eprintln!(
                "layout {name} |q| = {len}: measured FPR {:.5} ({fp}/{FPR_QUERIES}), \
                 eq. 9 from the levels' fill {:.5}",
                fp as f64 / FPR_QUERIES as f64,
                predicted / FPR_QUERIES as f64
            );
        }
        bench_insert(c, &format!("layout/{name}"), empty, &w.records, |g| {
            for len in [1u64, 64, 4096] {
                let qs = absent_queries(len, QUERIES as u64);
                let mut i = 0usize;
                g.bench_function(BenchmarkId::new("query_absent", len), |b| {
                    b.iter(|| {
                        i = (i + 1) % qs.len();
                        let (key, range) = &qs[i];
                        full.query(black_box(key), *range)
                    })
                });
            }
        });
    }
}

criterion_group!(benches, temporal, layouts);
criterion_main!(benches);
