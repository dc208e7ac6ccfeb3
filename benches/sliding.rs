//! The Naor–Yogev sliding Bloom filter (paper 002 §2): bits per window item, false positive rate,
//! insert and query time at ε = 0.1, 0.01, 0.001, 0.0001, for a count window and for a
//! time window on a steady and a bursty stream, beside the lower bound of Theorem 1.2,
//! `n log2(1/ε) + n log2 log2(1/ε)` bits.
//!
//! `cargo bench --bench sliding` prints one summary line per configuration, then the criterion
//! timings (`sliding/insert/...`, `sliding/query/...`).

use chronobloom::core::window::{SlidingBloomFilter, WindowFilter};
use criterion::{criterion_group, criterion_main, Criterion};
use std::collections::VecDeque;
use std::hint::black_box;

/// Window population: 10^5 items.
const ITEMS: u64 = 100_000;
/// Time window length in ticks (10 insertions per tick on average).
const TICKS: u64 = 10_000;
/// The false positive rates measured.
const EPSILONS: [f64; 4] = [0.1, 0.01, 0.001, 0.0001];
/// Fresh keys queried per summary, spread over 20 points of the last window.
const QUERIES: u64 = 2_000_000;

/// An insertion schedule: how many keys arrive at each tick.
#[derive(Clone, Copy)]
enum Stream {
    /// A count window (ticks do not matter).
    Count,
    /// 10 insertions every tick.
    Steady,
    /// On/off bursts with the same mean: 100 insertions at 1 tick in 10 (chosen by a fixed LCG).
    Bursty,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Count => "count",
            Stream::Steady => "steady",
            Stream::Bursty => "bursty",
        }
    }

    fn filter(self, eps: f64) -> SlidingBloomFilter {
        let f = match self {
            Stream::Count => SlidingBloomFilter::count_window(ITEMS, eps, 1),
            _ => SlidingBloomFilter::time_window(TICKS, eps, 1),
        };
        f.unwrap_or_else(|e| panic!("bench configuration: {e}"))
    }
}

/// Feeds a stream tick by tick and keeps the window's population.
struct Feed {
    stream: Stream,
    now: u64,
    key: u64,
    lcg: u64,
    window: VecDeque<(u64, u64)>,
}

impl Feed {
    fn new(stream: Stream) -> Self {
        Feed {
            stream,
            now: 0,
            key: 0,
            lcg: 12345,
            window: VecDeque::new(),
        }
    }

    fn per_tick(&mut self) -> u64 {
        match self.stream {
            Stream::Count | Stream::Steady => 10,
            Stream::Bursty => {
                self.lcg = self
                    .lcg
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if (self.lcg >> 33).is_multiple_of(10) {
                    100
                } else {
                    0
                }
            }
        }
    }

    /// One tick of insertions; returns the number inserted.
    fn tick(&mut self, f: &mut SlidingBloomFilter) -> u64 {
        let k = self.per_tick();
        for _ in 0..k {
            self.key += 1;
            f.insert(&self.key, self.now)
                .unwrap_or_else(|e| panic!("insert: {e}"));
            self.window.push_back((self.now, self.key));
        }
        f.advance(self.now)
            .unwrap_or_else(|e| panic!("advance: {e}"));
        let (now, stream) = (self.now, self.stream);
        while self.window.front().is_some_and(|&(t, _)| match stream {
            Stream::Count => false,
            _ => now - t >= TICKS,
        }) {
            self.window.pop_front();
        }
        if let Stream::Count = stream {
            while self.window.len() as u64 > ITEMS {
                self.window.pop_front();
            }
        }
        self.now += 1;
        k
    }
}

fn lower_bound_bits_per_item(eps: f64) -> f64 {
    let l = (1.0 / eps).log2();
    l + l.log2()
}

/// Runs 5 windows of the stream, then measures over one more: mean and max bits per window item,
/// FPR on fresh keys, and false negatives among the window's keys at each point.
fn summary(stream: Stream, eps: f64) {
    let mut f = stream.filter(eps);
    let mut feed = Feed::new(stream);
    let window_ticks = ITEMS / 10;
    for _ in 0..5 * window_ticks {
        feed.tick(&mut f);
    }
    let (mut bits_sum, mut bits_max, mut points) = (0.0, 0.0f64, 0u64);
    let (mut fp, mut queried, mut fneg) = (0u64, 0u64, 0u64);
    let mut fresh = 1u64 << 48;
    for i in 0..window_ticks {
        feed.tick(&mut f);
        if i % (window_ticks / 20) == 0 && !feed.window.is_empty() {
            let per_item = f.memory_bits() as f64 / feed.window.len() as f64;
            bits_sum += per_item;
            bits_max = bits_max.max(per_item);
            points += 1;
            let now = feed.now - 1;
            fneg += feed
                .window
                .iter()
                .filter(|&&(_, k)| !f.contains(&k, now))
                .count() as u64;
            for _ in 0..QUERIES / 20 {
                fp += u64::from(f.contains(&fresh, now));
                fresh += 1;
            }
            queried += QUERIES / 20;
        }
    }
    let lb = lower_bound_bits_per_item(eps);
    let mean = bits_sum / points as f64;
    let s = f.shape();
    println!(
        "{{\"stream\":\"{}\",\"eps\":{eps},\"c\":{},\"fingerprints\":{},\"tags\":{},\"bucket_bits\":{},\"bits_per_item_mean\":{mean:.2},\"bits_per_item_max\":{bits_max:.2},\"lower_bound\":{lb:.2},\"ratio\":{:.3},\"fpr\":{:.6},\"false_negatives\":{fneg},\"tables\":{},\"stats\":\"{:?}\"}}",
        stream.name(),
        s.generations,
        s.fingerprints,
        s.tags,
        s.bucket_bits,
        mean / lb,
        fp as f64 / queried as f64,
        f.table_count(),
        f.stats(),
    );
}

fn bench(c: &mut Criterion) {
    for stream in [Stream::Count, Stream::Steady, Stream::Bursty] {
        for eps in EPSILONS {
            summary(stream, eps);
        }
    }
    let mut group = c.benchmark_group("sliding");
    group
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(2));
    for stream in [Stream::Count, Stream::Steady, Stream::Bursty] {
        for eps in EPSILONS {
            let mut f = stream.filter(eps);
            let mut feed = Feed::new(stream);
            for _ in 0..2 * ITEMS / 10 {
                feed.tick(&mut f);
            }
            // One insertion per iteration; ticks advance at the stream's rate.
            let (mut key, mut left, mut now) = (1u64 << 50, 0u64, feed.now);
            group.bench_function(format!("insert/{}/{eps}", stream.name()), |b| {
                b.iter(|| {
                    while left == 0 {
                        left = feed.per_tick();
                        now += 1;
                    }
                    left -= 1;
                    key += 1;
                    f.insert(black_box(&key), now)
                        .unwrap_or_else(|e| panic!("insert: {e}"));
                })
            });
            // Queries alternate a recent key (a hit) and a fresh one (almost always a miss).
            let mut q = 0u64;
            group.bench_function(format!("query/{}/{eps}", stream.name()), |b| {
                b.iter(|| {
                    q += 1;
                    let k = if q.is_multiple_of(2) {
                        key - (q % 50_000)
                    } else {
                        (1u64 << 60) + q
                    };
                    black_box(f.contains(black_box(&k), now))
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
