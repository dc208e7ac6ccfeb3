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
//! `cargo bench --bench matrix_ratio [-- --rounds N] [--batch B]` (default 30 rounds, every batch
//! size of `benches/matrix.rs`).

// Benchmarks unwrap their setup: a bad configuration here should stop the run.
#![allow(clippy::unwrap_used)]

use chronobloom_core::bloom::Filter;
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

fn main() {
    let rounds = arg("--rounds").unwrap_or(ROUNDS);
    let batches: Vec<usize> = match arg("--batch") {
        Some(b) => vec![b],
        None => BATCHES.to_vec(),
    };
    let Filters {
        bloom,
        square,
        lines,
    } = filters();
    println!(
        "| side | batch | Bloom ns/tuple | square | line-local | speed-up (p20) | least round | \
         median round |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &batch in &batches {
        let b = batch as u64;
        let keys = key_batches(b);
        let tuples = keys.len() * batch;
        let (mut out, mut out2) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
        let mut passes: Vec<Pass<'_>> = vec![
            Box::new(|| {
                keys.iter()
                    .map(|(a, vs)| vs.iter().filter(|&&v| bloom.contains(&(*a, v))).count())
                    .sum()
            }),
            Box::new(|| {
                let mut found = 0;
                for (a, vs) in &keys {
                    out.clear();
                    square.contains_values_into(a, vs, &mut out);
                    found += out.iter().filter(|&&x| x).count();
                }
                found
            }),
            Box::new(|| {
                let mut found = 0;
                for (a, vs) in &keys {
                    out2.clear();
                    lines.contains_values_into(a, vs, &mut out2);
                    found += out2.iter().filter(|&&x| x).count();
                }
                found
            }),
        ];
        report("key_fixed", batch, alternate(&mut passes, tuples, rounds));
    }
    for &batch in &batches {
        let b = batch as u64;
        let sets = value_batches(b);
        let tuples = sets.len() * batch;
        let (mut out, mut out2) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
        let mut passes: Vec<Pass<'_>> = vec![
            Box::new(|| {
                sets.iter()
                    .map(|(ks, v)| ks.iter().filter(|&&a| bloom.contains(&(a, *v))).count())
                    .sum()
            }),
            Box::new(|| {
                let mut found = 0;
                for (ks, v) in &sets {
                    out.clear();
                    square.contains_keys_into(ks, v, &mut out);
                    found += out.iter().filter(|&&x| x).count();
                }
                found
            }),
            Box::new(|| {
                let mut found = 0;
                for (ks, v) in &sets {
                    out2.clear();
                    lines.contains_keys_into(ks, v, &mut out2);
                    found += out2.iter().filter(|&&x| x).count();
                }
                found
            }),
        ];
        report("value_fixed", batch, alternate(&mut passes, tuples, rounds));
    }
}
