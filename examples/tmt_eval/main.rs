//! `tmt_eval`: measures a temporal membership structure on a data file and a query file.
//!
//! ```text
//! cargo run --release --example tmt_eval -- --data DATA.csv --queries QUERIES.csv \
//!     --bits 50000000 --structure {sbf|pbf1|pbf2} [--g 4] [--k-max 16] [--json] [--skip-bad] \
//!     [--alloc {uniform|offline|online|proportional}] [--partition-len T] \
//!     [--train-queries FILE] [--budget-bits B]
//! ```
//! It streams `DATA.csv` (`timestamp,element`, any order) into the structure (a static one whose
//! horizon is the largest timestamp + 1), computes the exact answer of every query in
//! `QUERIES.csv` (`element,start,end`, inclusive) itself, and reports the confusion counts, the
//! false positive rate FP / (FP + TN), nanoseconds per insert and per query, and membership probes
//! per query.
//!
//! Allocation (paper 000 §5–6, Table 2): `uniform` spreads the bits evenly, `proportional` gives
//! m_i ∝ d_i (Lemma C.2), `offline` solves the Lagrange optimum from the exact d_i and f_i of a
//! pass over the data and the learning queries (`--train-queries`, or the evaluated queries as the
//! paper did); every filter takes ⌈(m_i / d_i) ln 2⌉ hashes capped at `--k-max`. With
//! `--partition-len T` (PBF-2) time is cut into partitions of T ticks, `--bits` is one partition's
//! budget, the modes above use each partition's exact statistics, and `online` learns them from
//! the partition before (FM sketches for d_i, per-level probe counters for f_i; queries are shown
//! to it once the stream passes their end). `--budget-bits` merges old partitions to stay under a
//! total. A malformed line is an error naming the file and line (exit code 2) unless `--skip-bad`
//! is given.

mod alloc;
mod input;
mod truth;

use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{TemporalFilter, TimeRange};
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
    /// How bits are split over filters.
    #[arg(long, value_enum, default_value_t = AllocMode::Uniform)]
    alloc: AllocMode,
    /// Cut time into partitions of this many ticks (PBF-2); `--bits` is then per partition.
    #[arg(long)]
    partition_len: Option<u64>,
    /// Queries to learn f_i from (default: the evaluated queries).
    #[arg(long)]
    train_queries: Option<String>,
    /// With partitions: merge old ones to keep the total under this many bits.
    #[arg(long)]
    budget_bits: Option<u64>,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AllocMode {
    Uniform,
    Offline,
    Online,
    Proportional,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Structure {
    Sbf,
    Pbf1,
    Pbf2,
}

impl AllocMode {
    fn name(self) -> &'static str {
        match self {
            AllocMode::Uniform => "uniform",
            AllocMode::Offline => "offline",
            AllocMode::Online => "online",
            AllocMode::Proportional => "proportional",
        }
    }
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
    let mut data = input::read_lines(&args.data, args.skip_bad, input::data_line)?;
    let queries = input::read_lines(&args.queries, args.skip_bad, input::query_line)?;
    let train = match &args.train_queries {
        Some(path) => Some(input::read_lines(path, args.skip_bad, input::query_line)?),
        None => None,
    };
    let learn: Vec<TimeRange> = train
        .as_ref()
        .unwrap_or(&queries)
        .rows
        .iter()
        .map(|(_, r)| *r)
        .collect();
    let horizon = data
        .rows
        .iter()
        .map(|(t, _)| *t)
        .max()
        .ok_or_else(|| format!("{}: no records", args.data))?
        .checked_add(1)
        .ok_or("timestamps must be below 2^64 - 1")?;
    let truth = Truth::new(&data.rows);
    let built = match args.partition_len {
        Some(len) => alloc::partitioned(args, len, &mut data.rows, &learn)?,
        None => alloc::whole(args, horizon, &data.rows, &learn, truth.distinct_pairs())?,
    };
    let seed = args.seed;
    // A partitioned structure was streamed while it was built; the others are filled here.
    let mut filter = built.filter;
    let insert_ns = match built.partitioned {
        Some(_) => built.insert_ns,
        None => insert_all(filter.as_mut(), &data.rows, seed)?,
    };

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
        "alloc": args.alloc.name(),
        "partitions": built.partitioned.as_ref().map_or(1, |p| p.partitions),
        "merges": built.partitioned.as_ref().map_or(0, |p| p.merges),
        "sketch_bits": built.partitioned.as_ref().map_or(0, |p| p.sketch_bits),
        "alloc_solve_us": built.solve.as_secs_f64() * 1e6 / built.solves.max(1) as f64,
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
        "skipped_lines": data.skipped + queries.skipped + train.map_or(0, |t| t.skipped),
    }))
}

/// Inserts every record; returns nanoseconds per record.
fn insert_all(
    filter: &mut dyn TemporalFilter,
    rows: &[(u64, String)],
    seed: u64,
) -> chronobloom::Result<f64> {
    let t0 = Instant::now();
    for (t, key) in rows {
        filter.insert_hash(KeyHash::of(key.as_str(), seed), *t)?;
    }
    Ok(t0.elapsed().as_nanos() as f64 / rows.len().max(1) as f64)
}

fn print(args: &Args, r: &serde_json::Value) {
    if args.json {
        println!("{r}");
        return;
    }
    println!(
        "structure        {} (alloc {}, {} partitions, {} merges)",
        r["structure"], r["alloc"], r["partitions"], r["merges"]
    );
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
