//! Bloom filter insert and query, ours against fastbloom in the same run (issue #2).
//!
//! Every filter is sized for 10M items at 1% false positives and keyed by `u64`:
//!
//! * `standard`: our [`BloomFilter`] (paper layout: k probes anywhere in m bits, exact `mod m`);
//! * `blocked`: our [`BlockedBloomFilter`] (k probes inside one 512-bit block);
//! * `fastbloom`: `fastbloom::BloomFilter` with [`Xxh3OneShot`], a one-shot xxh3-64 of the key's
//!   bytes — the same hashing work as our one-shot xxh3-128, so the comparison is of the filters;
//! * `fastbloom_xxh3_stream`: fastbloom with `xxhash_rust::xxh3::Xxh3Builder`, the streaming
//!   hasher (its state is several hundred bytes, so this shows what a naive adaptor costs).
//!
//! Measured per operation (`Throughput::Elements(1)`; criterion times a whole loop of operations):
//!
//! * `insert`: inserting distinct keys into a filter that goes from empty to its design load of
//!   10M; when it is full it is replaced by a fresh empty copy outside the timed region, so the
//!   figure is the mean cost of building the filter;
//! * `query_present` / `query_absent`: queries of inserted keys / of keys never inserted, against
//!   the full filter (absent queries stop at the first zero bit);
//! * `probe_only`: `contains_hash` with a precomputed hash (a `mix64` of a counter), absent keys,
//!   which isolates the probe loop from key hashing (streaming fastbloom is left out: it only
//!   differs from `fastbloom` in hashing).
//!
//! Groups are per operation (`bloom/insert/standard`, `bloom/insert/fastbloom`, ...), so the
//! contenders of one operation are measured back to back and their ratio is least disturbed by
//! load that drifts during the run.
//!
//! Before timing, the measured false positive rate of each filter on 1M absent keys is printed to
//! stderr beside its size and hash count.

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom_core::bloom::{BlockedBloomFilter, BloomFilter, Filter};
use chronobloom_core::hash::{mix64, KeyHash};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use std::hash::{BuildHasher, Hasher};
use std::hint::black_box;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3Builder};

const ITEMS: u64 = 10_000_000;
const FPR: f64 = 0.01;
const SEED: u64 = 0x5eed;
/// Absent keys live above this offset; present keys are `0..ITEMS`.
const ABSENT: u64 = 1 << 40;
const FPR_SAMPLES: u64 = 1_000_000;

/// A `BuildHasher` whose hashers collect the key's bytes and hash them once with
/// `xxh3_64_with_seed` in `finish`: the xxh3 adaptor fastbloom is measured with.
#[derive(Debug, Clone, Copy)]
struct Xxh3OneShot {
    seed: u64,
}

/// The hasher of [`Xxh3OneShot`]. Keys up to 32 bytes are hashed in one shot; a longer key folds
/// each full buffer into the seed (never the case for the `u64` keys here).
#[derive(Debug, Clone)]
struct Xxh3OneShotHasher {
    seed: u64,
    buf: [u8; 32],
    len: usize,
}

impl BuildHasher for Xxh3OneShot {
    type Hasher = Xxh3OneShotHasher;
    #[inline]
    fn build_hasher(&self) -> Xxh3OneShotHasher {
        Xxh3OneShotHasher {
            seed: self.seed,
            buf: [0; 32],
            len: 0,
        }
    }
}

impl Hasher for Xxh3OneShotHasher {
    #[inline]
    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.len == self.buf.len() {
                self.seed = xxh3_64_with_seed(&self.buf, self.seed);
                self.len = 0;
            }
            let n = bytes.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.write(&v.to_le_bytes());
    }

    #[inline]
    fn finish(&self) -> u64 {
        xxh3_64_with_seed(&self.buf[..self.len], self.seed)
    }
}

type FastBloom = fastbloom::BloomFilter<Xxh3OneShot>;
type FastBloomStream = fastbloom::BloomFilter<Xxh3Builder>;

/// The operations every contender offers, so one set of loops drives all of them.
trait Contender: Clone {
    fn empty() -> Self;
    fn put(&mut self, key: u64);
    fn has(&self, key: u64) -> bool;
    /// Probe with a precomputed 64-bit hash (ours widen it to a `KeyHash` with a second mix).
    fn has_hash(&self, hash: u64) -> bool;
    fn describe(&self) -> String;
}

/// `Contender` for our filter types, which share the `Filter` operations and `with_fpr`.
macro_rules! ours {
    ($($t:ty),*) => {$(
        impl Contender for $t {
            fn empty() -> Self {
                <$t>::with_fpr(ITEMS, FPR, SEED).unwrap()
            }
            #[inline]
            fn put(&mut self, key: u64) {
                self.insert(&key);
            }
            #[inline]
            fn has(&self, key: u64) -> bool {
                self.contains(&key)
            }
            #[inline]
            fn has_hash(&self, hash: u64) -> bool {
                self.contains_hash(widen(hash))
            }
            fn describe(&self) -> String {
                format!("m = {} bits, k = {}", self.bit_len(), self.hashes())
            }
        }
    )*};
}

ours!(BloomFilter, BlockedBloomFilter);

impl Contender for FastBloom {
    fn empty() -> Self {
        fastbloom::BloomFilter::with_false_pos(FPR)
            .hasher(Xxh3OneShot { seed: SEED })
            .expected_items(ITEMS as usize)
    }
    #[inline]
    fn put(&mut self, key: u64) {
        self.insert(&key);
    }
    #[inline]
    fn has(&self, key: u64) -> bool {
        self.contains(&key)
    }
    #[inline]
    fn has_hash(&self, hash: u64) -> bool {
        self.contains_hash(hash)
    }
    fn describe(&self) -> String {
        format!("m = {} bits, k = {}", self.num_bits(), self.num_hashes())
    }
}

impl Contender for FastBloomStream {
    fn empty() -> Self {
        fastbloom::BloomFilter::with_false_pos(FPR)
            .hasher(Xxh3Builder::new().with_seed(SEED))
            .expected_items(ITEMS as usize)
    }
    #[inline]
    fn put(&mut self, key: u64) {
        self.insert(&key);
    }
    #[inline]
    fn has(&self, key: u64) -> bool {
        self.contains(&key)
    }
    #[inline]
    fn has_hash(&self, hash: u64) -> bool {
        self.contains_hash(hash)
    }
    fn describe(&self) -> String {
        format!("m = {} bits, k = {}", self.num_bits(), self.num_hashes())
    }
}

#[inline]
fn widen(hash: u64) -> KeyHash {
    KeyHash {
        lo: hash,
        hi: mix64(hash ^ 0x9e37_79b9_7f4a_7c15),
    }
}

/// Builds the full filter and prints its measured false positive rate.
fn build<F: Contender>(name: &str) -> F {
    let mut f = F::empty();
    let start = Instant::now();
    for key in 0..ITEMS {
        f.put(key);
    }
    let built = start.elapsed();
    let fp = (0..FPR_SAMPLES).filter(|&i| f.has(ABSENT + i)).count();
    eprintln!(
        "{name}: {}, built in {:.2} s, measured FPR on {FPR_SAMPLES} absent keys = {:.4}% ({fp})",
        f.describe(),
        built.as_secs_f64(),
        fp as f64 * 100.0 / FPR_SAMPLES as f64
    );
    f
}

/// The four contenders, each built full once; benchmarks are grouped by operation so that the
/// contenders of one operation run back to back (the machine's load drifts over minutes).
struct Filters {
    standard: BloomFilter,
    fastbloom: FastBloom,
    blocked: BlockedBloomFilter,
    stream: FastBloomStream,
}

/// Inserts of distinct keys into a filter filling from empty to its design load; a fresh empty
/// copy replaces it outside the timed region when it is full.
fn bench_insert<F: Contender>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str) {
    let empty = F::empty();
    let mut filter = empty.clone();
    let mut next = 0u64;
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut left = iters;
            let mut spent = Duration::ZERO;
            while left > 0 {
                if next == ITEMS {
                    filter = empty.clone();
                    next = 0;
                }
                let n = left.min(ITEMS - next);
                let start = Instant::now();
                for key in next..next + n {
                    filter.put(black_box(key));
                }
                spent += start.elapsed();
                next += n;
                left -= n;
            }
            spent
        })
    });
}

/// Queries of inserted keys, `0..ITEMS` in turn.
fn bench_present<F: Contender>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, full: &F) {
    let mut i = 0u64;
    g.bench_function(name, |b| {
        b.iter(|| {
            i = if i + 1 == ITEMS { 0 } else { i + 1 };
            full.has(black_box(i))
        })
    });
}

/// Queries of keys never inserted.
fn bench_absent<F: Contender>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, full: &F) {
    let mut i = ABSENT;
    g.bench_function(name, |b| {
        b.iter(|| {
            i += 1;
            full.has(black_box(i))
        })
    });
}

/// `contains_hash` of a `mix64` of a counter: the probe loop without key hashing.
fn bench_probe<F: Contender>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, full: &F) {
    let mut i = 0u64;
    g.bench_function(name, |b| {
        b.iter(|| {
            i += 1;
            full.has_hash(mix64(black_box(i)))
        })
    });
}

fn bloom(c: &mut Criterion) {
    let f = Filters {
        standard: build("standard"),
        fastbloom: build("fastbloom"),
        blocked: build("blocked"),
        stream: build("fastbloom_xxh3_stream"),
    };

    let mut g = c.benchmark_group("bloom/insert");
    g.throughput(Throughput::Elements(1));
    bench_insert::<BloomFilter>(&mut g, "standard");
    bench_insert::<FastBloom>(&mut g, "fastbloom");
    bench_insert::<BlockedBloomFilter>(&mut g, "blocked");
    bench_insert::<FastBloomStream>(&mut g, "fastbloom_xxh3_stream");
    g.finish();

    let mut g = c.benchmark_group("bloom/query_present");
    g.throughput(Throughput::Elements(1));
    bench_present(&mut g, "standard", &f.standard);
    bench_present(&mut g, "fastbloom", &f.fastbloom);
    bench_present(&mut g, "blocked", &f.blocked);
    bench_present(&mut g, "fastbloom_xxh3_stream", &f.stream);
    g.finish();

    let mut g = c.benchmark_group("bloom/query_absent");
    g.throughput(Throughput::Elements(1));
    bench_absent(&mut g, "standard", &f.standard);
    bench_absent(&mut g, "fastbloom", &f.fastbloom);
    bench_absent(&mut g, "blocked", &f.blocked);
    bench_absent(&mut g, "fastbloom_xxh3_stream", &f.stream);
    g.finish();

    let mut g = c.benchmark_group("bloom/probe_only");
    g.throughput(Throughput::Elements(1));
    bench_probe(&mut g, "standard", &f.standard);
    bench_probe(&mut g, "fastbloom", &f.fastbloom);
    bench_probe(&mut g, "blocked", &f.blocked);
    g.finish();
}

criterion_group!(benches, bloom);
criterion_main!(benches);
