//! The batch speed-up of `benches/matrix.rs` measured the way this shared machine allows: the
//! Bloom filter and the two matrices timed in alternation, round after round, in one process, so
//! that a change of load moves all three alike (criterion measures them seconds apart, and its
//! ratios drift with the load between them).
//!
//! Same data and filters as `benches/matrix.rs` (`matrix_data`). For each side (`key_fixed`:
//! one key with `B` values; `value_fixed`: one value with `B` keys) and batch size, a round
//! times one pass of each structure over the whole rotation of prepared batches (at least 2^16
//! tuples), in an order that rotates from round to round, after one warm pass each. Printed per
//! row: the 20th percentile of ns per tuple of each structure, and the speed-up of the faster
//! matrix over the Bloom filter — of the percentiles, and the least and the median of the
//! rounds' own ratios (each round's Bloom pass against the same round's matrix passes).
//!
//! `cargo bench --bench matrix_ratio [-- --rounds N] [--batch B] [--side key_fixed|value_fixed]`
//! (default 30 rounds, every batch size of `benches/matrix.rs`, both sides).

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom_core::bloom::{BloomFilter, Filter};
use chronobloom_core::matrix::MatrixBloom;
use std::hint::black_box;
use std::time::Instant;

mod matrix_data;
use matrix_data::{filters, key_batches, value_batches, Filters, BATCHES};

/// Rounds unless `--rounds N` says otherwise.
const ROUNDS: usize = 30;

/// A structure's pass over a rotation: the number of tuples found present.
type Pass<'a> = Box<dyn FnMut() -> usize + 'a>;

/// The number after `flag` on the command line, if any.
fn arg(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("a number after the flag"))
}

/// The `q`-quantile of `xs` (sorted in place).
fn quantile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() - 1) as f64 * q).round() as usize]
}

/// Times `passes` (Bloom filter first) in alternation; ns per tuple per round, per structure.
fn alternate(passes: &mut [Pass<'_>], tuples: usize, rounds: usize) -> Vec<Vec<f64>> {
    for pass in passes.iter_mut() {
        black_box(pass());
    }
    let mut times = vec![Vec::with_capacity(rounds); passes.len()];
    for round in 0..rounds {
        for k in 0..passes.len() {
            let s = (round + k) % passes.len();
            let start = Instant::now();
            black_box(passes[s]());
            times[s].push(start.elapsed().as_nanos() as f64 / tuples as f64);
        }
    }
    times
}

fn report(side: &str, batch: usize, mut times: Vec<Vec<f64>>) {
    let mut ratios: Vec<f64> = (0..times[0].len())
        .map(|r| times[0][r] / times[1][r].min(times[2][r]))
        .collect();
    let p20: Vec<f64> = times.iter_mut().map(|t| quantile(t, 0.2)).collect();
    println!(
        "| {side} | {batch} | {:.1} | {:.1} | {:.1} | {:.2}× | {:.2}× | {:.2}× |",
        p20[0],
        p20[1],
        p20[2],
        p20[0] / p20[1].min(p20[2]),
        quantile(&mut ratios, 0.0),
        quantile(&mut ratios, 0.5),
    );
}

/// A matrix's pass over `sets`: `ask` answers one prepared batch into a buffer reused from batch
/// to batch, as a caller of many batches would.
fn matrix_pass<'a, X, Y>(
    m: &'a MatrixBloom,
    sets: &'a [(X, Y)],
    batch: usize,
    ask: impl Fn(&MatrixBloom, &X, &Y, &mut Vec<bool>) + 'a,
) -> Pass<'a> {
    let mut out = Vec::with_capacity(batch);
    Box::new(move || {
        let mut found = 0;
        for (x, y) in sets {
            out.clear();
            ask(m, x, y, &mut out);
            found += out.iter().filter(|&&f| f).count();
        }
        found
    })
}

/// Times the Bloom filter (`bloom_found`: the tuples of one batch it finds) against both
/// matrices (`ask`) on the batches `sets` of `batch` tuples, and prints the row.
fn one_side<X, Y>(
    side: &str,
    (sets, batch): (&[(X, Y)], usize),
    filters: &Filters,
    bloom_found: impl Fn(&BloomFilter, &X, &Y) -> usize,
    ask: impl Fn(&MatrixBloom, &X, &Y, &mut Vec<bool>) + Copy,
    rounds: usize,
) {
    let mut passes: Vec<Pass<'_>> = vec![
        Box::new(|| {
            sets.iter()
                .map(|(x, y)| bloom_found(&filters.bloom, x, y))
                .sum()
        }),
        matrix_pass(&filters.square, sets, batch, ask),
        matrix_pass(&filters.lines, sets, batch, ask),
    ];
    let times = alternate(&mut passes, sets.len() * batch, rounds);
    report(side, batch, times);
}

fn main() {
    let rounds = arg("--rounds").unwrap_or(ROUNDS);
    let batches: Vec<usize> = match arg("--batch") {
        Some(b) => vec![b],
        None => BATCHES.to_vec(),
    };
    let side = std::env::args()
        .skip_while(|a| a != "--side")
        .nth(1)
        .unwrap_or_default();
    let filters = filters();
    println!(
        "| side | batch | Bloom ns/tuple | square | line-local | speed-up (p20) | least round | \
         median round |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &batch in batches.iter().filter(|_| side != "value_fixed") {
        let sets = key_batches(batch as u64);
        one_side(
            "key_fixed",
            (&sets, batch),
            &filters,
            |bloom, a, vs| vs.iter().filter(|&&v| bloom.contains(&(*a, v))).count(),
            |m, a, vs, out| m.contains_values_into(a, vs, out),
            rounds,
        );
    }
    for &batch in batches.iter().filter(|_| side != "key_fixed") {
        let sets = value_batches(batch as u64);
        one_side(
            "value_fixed",
            (&sets, batch),
            &filters,
            |bloom, ks, v| ks.iter().filter(|&&a| bloom.contains(&(a, *v))).count(),
            |m, ks, v, out| m.contains_keys_into(ks, v, out),
            rounds,
        );
    }
}
