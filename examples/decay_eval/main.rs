//! Reproduces the experiments of paper 004 §6: sliding-window queries with per-query penalties on
//! the standard and inferential block timing and generalized Bloom filters and the two baselines.
//!
//! ```text
//! cargo run --release --example decay_eval -- --stream uniform --universe 65536 --window 65536 --json
//! cargo run --release --example decay_eval -- --stream zipf --universe 65536 --window 2048
//! cargo run --release --example trace_keys -- data/real.pcap src > /tmp/real_src.csv
//! cargo run --release --example decay_eval -- --data /tmp/real_src.csv --window 256
//! ```
//!
//! Each arriving item is queried, then inserted (§6.1.1); `$FP` and `$FN` are drawn uniformly
//! from `[1, 10)` per query, the same for every filter. The first `--warm` items are only
//! inserted. Every filter gets `bits_per_item · w` bits; for each `bits_per_item` the number of
//! hashes `k` (BTBF: `bpt = max(k, 3)`; GBF: `k0 = k1 = k`) and the buffer's hash width `bph` are
//! chosen per filter to minimize its total penalty, as the paper does (§6.1.2). Standard filters
//! answer POS/NEG; inferential ones and the baselines answer by minimum expected penalty.
//! `penalty_ratio` is a row's total penalty over the prior-only baseline's; `vs_standard` is an
//! inferential filter's total over its standard counterpart's (the paper's penalty ratio).
//! `posterior_error` is eq. 35 (20 bins). The uniform and Zipf streams use their exact `p_x` and
//! `D(j)` (eqs. 16, 17); a CSV of `timestamp,element` lines uses `p_x` from the element's
//! frequency over the whole file and `D(j)` measured on the stream and interpolated (eq. 18),
//! as §6.4.2 does. Malformed input exits with code 2.
//!
//! `--prior` takes a list of the inferential BTBF's priors, one row each (default
//! `frequency,floored`). `frequency` is the stream's `p_x` above, row `btbf_inferential`.
//! `floored` is row `btbf_inferential_floored`: the stream's `p_x` floored by one `p` for every
//! item learned online from the filter's own posteriors before insertions ([`AnswerRatePrior`]:
//! two registers, outside the budget as the BTBF's clock is), so that an item whose rate in a
//! burst is far above its long-run frequency is not taken for absent while it is in the window.
//! `recency` is row `btbf_inferential_recency`: the inferential BTBF
//! with `p_x` from a [`RecencySketch`] learned online (query, then insert; it never reads
//! ahead) instead of the stream's `p_x`. The sketch's counters are counted in the budget: with a
//! share `s` of `bits_per_item · w` bits, the sketch takes at most `s · bits_per_item · w` bits and
//! the BTBF the rest, so both together use at most `bits_per_item · w`. Its share, halving period
//! and depth are chosen per `bits_per_item` with `k`, to minimize the total penalty.
//!
//! [`AnswerRatePrior`]: chronobloom::core::decay::AnswerRatePrior
//! [`RecencySketch`]: chronobloom::core::decay::RecencySketch

mod candidates;
mod eval;
mod report;
mod stream;

use clap::{Parser, ValueEnum};
use eval::evaluate;
use report::print_table;
use std::path::PathBuf;
use std::process::ExitCode;
use stream::{from_csv, synthetic};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StreamKind {
    /// Uniform over `--universe` items.
    Uniform,
    /// Zipf (`p_x = 1 / (H_|U| x)`) over `--universe` items.
    Zipf,
}

/// Where the inferential BTBF takes `p_x` from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PriorKind {
    /// The stream's `p_x`: the exact law of a synthetic stream, the frequency over the whole
    /// file for a CSV (§6.4.2). Row `btbf_inferential`.
    Frequency,
    /// The stream's `p_x`, floored by one `p` learned online from the mean of the filter's
    /// posteriors before insertions. Row `btbf_inferential_floored`.
    Floored,
    /// A recency sketch learned online inside the filter's budget. Row
    /// `btbf_inferential_recency`.
    Recency,
}

/// Paper 004 §6: penalties of standard and inferential decaying filters.
#[derive(Debug, Parser)]
struct Args {
    /// Synthetic stream (ignored with `--data`).
    #[arg(long, value_enum, default_value = "uniform")]
    stream: StreamKind,
    /// Items in the synthetic universe.
    #[arg(long, default_value_t = 1 << 16)]
    universe: u64,
    /// A `timestamp,element` CSV to use instead of a synthetic stream (lines in time order).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Window width `w` in insertions.
    #[arg(long, default_value_t = 1 << 16)]
    window: u64,
    /// Bits per item in the window.
    #[arg(long, value_delimiter = ',', default_value = "2,4,6,8,12,16")]
    bits_per_item: Vec<u64>,
    /// Queries measured (synthetic streams; a CSV uses what it has after `--warm`).
    #[arg(long, default_value_t = 1 << 20)]
    queries: u64,
    /// Items inserted before measuring.
    #[arg(long, default_value_t = 1 << 18)]
    warm: u64,
    /// Largest hash count tried for the BTBF.
    #[arg(long, default_value_t = 12)]
    btbf_k_max: u32,
    /// Largest `k0 = k1` tried for the GBF. Past about 14 at these sizes eq. 34's roundoff guard
    /// hands most queries to the exact O(m/k) direct sum, which is slow.
    #[arg(long, default_value_t = 14)]
    gbf_k_max: u32,
    /// The priors of the inferential BTBF, a row each (frequency: row `btbf_inferential`;
    /// floored: row `btbf_inferential_floored`; recency: row `btbf_inferential_recency`, a
    /// sketch of recent counts sharing the filter's bits).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "frequency,floored"
    )]
    prior: Vec<PriorKind>,
    /// Shares of `bits_per_item · w` tried for the recency sketch (the BTBF gets the rest).
    #[arg(long, value_delimiter = ',', default_value = "0.125,0.25,0.5")]
    prior_share: Vec<f64>,
    /// Halving periods of the recency sketch tried, in windows (`H = max(1, round(x · w))`).
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    prior_period: Vec<f64>,
    /// Rows of the recency sketch tried.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    prior_depth: Vec<u32>,
    /// Pseudo-count of an item the recency sketch has not counted (in `(0, 1]`).
    #[arg(long, default_value_t = 0.5)]
    prior_floor: f64,
    /// Seed of the stream, the penalties and the hashes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.window == 0 || (args.data.is_none() && args.universe == 0) {
        eprintln!("decay_eval: --window and --universe must be positive");
        return ExitCode::from(2);
    }
    let stream = match &args.data {
        Some(path) => from_csv(path, args.window),
        None => synthetic(
            args.stream,
            args.universe,
            args.warm + args.queries,
            args.seed,
        ),
    };
    let report = stream.and_then(|s| evaluate(&args, &s));
    match report {
        Ok(r) if args.json => match serde_json::to_string_pretty(&r) {
            Ok(s) => {
                println!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("decay_eval: {e}");
                ExitCode::from(2)
            }
        },
        Ok(r) => {
            print_table(&r);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("decay_eval: {e}");
            ExitCode::from(2)
        }
    }
}
