//! `tmt_eval`: measures a temporal membership structure on a data file and a query file.
//!
//! ```text
//! cargo run --release --example tmt_eval -- --data DATA.csv --queries QUERIES.csv \
//!     --bits 50000000 --structure {sbf|pbf1|pbf2} [--g 4] [--k-max 16] [--json] [--skip-bad]
//! ```
//! It streams `DATA.csv` (`timestamp,element`, any order) into the structure (a static one whose
//! horizon is the largest timestamp + 1), computes the exact answer of every query in
//! `QUERIES.csv` (`element,start,end`, inclusive) itself, and reports the confusion counts, the
//! false positive rate FP / (FP + TN), nanoseconds per insert and per query, and membership probes
//! per query. Bits are spread evenly over the structure's filters (`alloc: uniform`), each filter
//! taking the hash count that suits its own distinct item count, ⌈(m_i / d_i) ln 2⌉ capped at
//! `--k-max` (paper 000 §5). A malformed line is an error naming the file and line (exit code 2)
//! unless `--skip-bad` is given.

mod input;
mod truth;

use chronobloom::core::bloom::FilterShape;
use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{Allocation, Pbf1, Pbf2, Sbf, TemporalFilter};
use clap::{Parser, ValueEnum};
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;
use truth::Truth;

#[derive(Parser, Debug)]
#[command(about = "Evaluate SBF / PBF-1 / PBF-2 on a temporal membership workload")]
struct Args {
    /// `timestamp,element` lines.
    #[arg(long)]
    data: String,
    /// `element,start,end` lines (inclusive ranges).
    #[arg(long)]
    queries: String,
    /// Total bits for the structure.
    #[arg(long)]
    bits: u64,
    /// Which structure.
    #[arg(long, value_enum)]
    structure: Structure,
    /// PBF-1 leaf granularity, in ticks.
    #[arg(long, default_value_t = 4)]
    g: u64,
    /// Largest number of hash functions per filter.
    #[arg(long, default_value_t = 16)]
    k_max: u32,
    /// Hash seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Count and skip malformed lines instead of stopping.
    #[arg(long)]
    skip_bad: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Structure {
    Sbf,
    Pbf1,
    Pbf2,
}

impl Structure {
    fn name(self) -> &'static str {
        match self {
            Structure::Sbf => "sbf",
            Structure::Pbf1 => "pbf1",
            Structure::Pbf2 => "pbf2",
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(report) => {
            print(&args, &report);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tmt_eval: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    if args.k_max == 0 {
        return Err("--k-max must be at least 1".into());
    }
    let data = input::read_lines(&args.data, args.skip_bad, input::data_line)?;
    let queries = input::read_lines(&args.queries, args.skip_bad, input::query_line)?;
    let horizon = data
        .rows
        .iter()
        .map(|(t, _)| *t)
        .max()
        .ok_or_else(|| format!("{}: no records", args.data))?
        .checked_add(1)
        .ok_or("timestamps must be below 2^64 - 1")?;
    let truth = Truth::new(&data.rows);
    let mut filter = build(args, horizon, &truth)?;
    let seed = args.seed;

    let t0 = Instant::now();
    for (t, key) in &data.rows {
        filter.insert_hash(KeyHash::of(key.as_str(), seed), *t)?;
    }
    let insert_ns = t0.elapsed().as_nanos() as f64 / data.rows.len() as f64;

    let t0 = Instant::now();
    let answers: Vec<(bool, u64)> = queries
        .rows
        .iter()
        .map(|(key, range)| {
            let a = filter.query_hash(KeyHash::of(key.as_str(), seed), *range);
            (a.present, a.probes)
        })
        .collect();
    let query_ns = t0.elapsed().as_nanos() as f64 / queries.rows.len().max(1) as f64;

    let (mut tp, mut fneg, mut fp, mut tn, mut probes) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for ((key, range), (present, p)) in queries.rows.iter().zip(&answers) {
        probes += p;
        match (truth.answer(key, *range), *present) {
            (true, true) => tp += 1,
            (true, false) => fneg += 1,
            (false, true) => fp += 1,
            (false, false) => tn += 1,
        }
    }
    let n_queries = queries.rows.len() as u64;
    Ok(json!({
        "structure": args.structure.name(),
        "alloc": "uniform",
        "bits": args.bits,
        "memory_bits": filter.memory_bits(),
        "horizon": horizon,
        "g": matches!(args.structure, Structure::Pbf1).then_some(args.g),
        "k_max": args.k_max,
        "records": data.rows.len(),
        "distinct_pairs": truth.distinct_pairs(),
        "queries": n_queries,
        "true_positives": tp,
        "false_negatives": fneg,
        "false_positives": fp,
        "true_negatives": tn,
        "fpr": if fp + tn == 0 { 0.0 } else { fp as f64 / (fp + tn) as f64 },
        "insert_ns": insert_ns,
        "query_ns": query_ns,
        "probes_per_query": probes as f64 / n_queries.max(1) as f64,
        "skipped_lines": data.skipped + queries.skipped,
    }))
}

/// The structure, with its bits spread evenly and each filter's hashes fitted to its items.
fn build(args: &Args, horizon: u64, truth: &Truth) -> chronobloom::Result<Box<dyn TemporalFilter>> {
    Ok(match args.structure {
        Structure::Sbf => {
            let k = FilterShape::optimal_hashes(args.bits, truth.distinct_pairs(), args.k_max);
            Box::new(Sbf::new(args.bits, k, args.seed)?)
        }
        Structure::Pbf1 => {
            let items = truth.pbf1_items(horizon, args.g)?;
            let alloc = Allocation::uniform_for_items(&items, args.bits, args.k_max)?;
            Box::new(Pbf1::new(horizon, args.g, &alloc, args.seed)?)
        }
        Structure::Pbf2 => {
            let items = truth.pbf2_items(Pbf2::levels_for(horizon)?);
            let alloc = Allocation::uniform_for_items(&items, args.bits, args.k_max)?;
            Box::new(Pbf2::new(horizon, &alloc, args.seed)?)
        }
    })
}

fn print(args: &Args, r: &serde_json::Value) {
    if args.json {
        println!("{r}");
        return;
    }
    println!("structure        {} (alloc {})", r["structure"], r["alloc"]);
    println!("bits             {} (held {})", r["bits"], r["memory_bits"]);
    println!(
        "records          {} ({} distinct pairs, horizon {})",
        r["records"], r["distinct_pairs"], r["horizon"]
    );
    println!(
        "queries          {}: TP {}  FN {}  FP {}  TN {}",
        r["queries"],
        r["true_positives"],
        r["false_negatives"],
        r["false_positives"],
        r["true_negatives"]
    );
    println!("fpr              {}", r["fpr"]);
    println!(
        "insert           {:.1} ns/record",
        r["insert_ns"].as_f64().unwrap_or(0.0)
    );
    println!(
        "query            {:.1} ns/query, {:.2} probes/query",
        r["query_ns"].as_f64().unwrap_or(0.0),
        r["probes_per_query"].as_f64().unwrap_or(0.0)
    );
    if r["skipped_lines"].as_u64().unwrap_or(0) > 0 {
        println!("skipped lines    {}", r["skipped_lines"]);
    }
}
