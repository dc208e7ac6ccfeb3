//! Writes a synthetic `timestamp,element` stream for `window_eval` (timestamps in milliseconds).
//!
//! ```text
//! cargo run --release --example window_gen -- --mode steady --rate 10000 --seconds 60 > /tmp/steady.csv
//! cargo run --release --example window_gen -- --mode bursty --rate 10000 --seconds 120 > /tmp/bursty.csv
//! ```
//!
//! `steady`: `rate` records per second, evenly spaced. `bursty`: the rate follows a 20-second
//! cycle (2 s at 8x, 8 s at 1x, 2 s of silence, 8 s at 1/2x) and every minute ends with 15 s of
//! silence, longer than a 10 s window. A fraction `repeat` of the records re-use an element seen
//! in the last `rate * 10` records; the rest are new elements. Deterministic for a given seed.

use chronobloom::synth::splitmix;
use clap::{Parser, ValueEnum};
use std::io::{BufWriter, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A constant rate.
    Steady,
    /// Bursts, pauses and gaps longer than a 10 s window.
    Bursty,
}

/// Generate a synthetic stream for window_eval.
#[derive(Debug, Parser)]
struct Args {
    /// Shape of the rate over time.
    #[arg(long, value_enum, default_value = "steady")]
    mode: Mode,
    /// Base rate, records per second.
    #[arg(long, default_value_t = 10_000)]
    rate: u64,
    /// Length of the stream in seconds.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Fraction of records that repeat a recent element.
    #[arg(long, default_value_t = 0.1)]
    repeat: f64,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn rate_at(mode: Mode, base: u64, second: u64) -> u64 {
    match mode {
        Mode::Steady => base,
        Mode::Bursty if second % 60 >= 45 => 0,
        Mode::Bursty => match second % 20 {
            0..=1 => base * 8,
            2..=9 => base,
            10..=11 => 0,
            _ => base / 2,
        },
    }
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let mut state = args.seed;
    let recent = (args.rate * 10).max(1);
    let threshold = (args.repeat.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut next = 0u64;
    for second in 0..args.seconds {
        let count = rate_at(args.mode, args.rate, second);
        for i in 0..count {
            let t = second * 1000 + i * 1000 / count;
            let element = if next > 0 && splitmix(&mut state) < threshold {
                next - 1 - splitmix(&mut state) % next.min(recent)
            } else {
                next += 1;
                next - 1
            };
            writeln!(out, "{t},e{element}")?;
        }
    }
    out.flush()
}
