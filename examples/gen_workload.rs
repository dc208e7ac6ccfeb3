//! Writes a synthetic temporal-membership workload for `tmt_eval`: `DATA.csv` (`tick,element`)
//! from [`chronobloom::synth`] and `QUERIES.csv` (`element,start,end`).
//!
//! ```text
//! cargo run --release --example gen_workload -- --records 1000000 --span 86400 \
//!     --queries 100000 --query-len 16,64,256,1024,4096 --data data.csv --out-queries queries.csv
//! ```
//! Half the queries ask about clients drawn by popularity (often present), half about clients
//! drawn uniformly from twice the client population (often absent). Range starts are uniform.

use chronobloom::core::hash::mix64;
use chronobloom::synth::{Synth, SynthConfig};
use clap::Parser;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(about = "Generate a synthetic DATA.csv / QUERIES.csv pair for tmt_eval")]
struct Args {
    /// Number of records.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Time span in ticks.
    #[arg(long, default_value_t = 86_400)]
    span: u64,
    /// Distinct clients.
    #[arg(long, default_value_t = 50_000)]
    clients: u64,
    /// Zipf exponent of client popularity.
    #[arg(long, default_value_t = 1.0)]
    zipf: f64,
    /// Mean events per session.
    #[arg(long, default_value_t = 8.0)]
    session_len: f64,
    /// Number of queries.
    #[arg(long, default_value_t = 100_000)]
    queries: u64,
    /// Query range lengths, cycled through.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024,4096")]
    query_len: Vec<u64>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output data file.
    #[arg(long)]
    data: String,
    /// Output queries file.
    #[arg(long)]
    out_queries: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_workload: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if a.query_len.iter().any(|&l| l == 0 || l > a.span) {
        return Err(format!("query lengths must be in 1..={}", a.span).into());
    }
    let cfg = SynthConfig {
        records: a.records,
        span: a.span,
        day: a.span,
        clients: a.clients,
        zipf: a.zipf,
        session_len: a.session_len,
        seed: a.seed,
        ..SynthConfig::default()
    };
    let mut data = BufWriter::new(File::create(&a.data)?);
    let mut popular = Vec::new();
    for (i, ev) in Synth::new(cfg)?.enumerate() {
        writeln!(data, "{},client-{}", ev.tick, ev.client)?;
        if i % 64 == 0 {
            popular.push(ev.client);
        }
    }
    data.flush()?;
    let mut out = BufWriter::new(File::create(&a.out_queries)?);
    for q in 0..a.queries {
        let r = mix64(q ^ a.seed.rotate_left(17));
        let client = if q % 2 == 0 && !popular.is_empty() {
            popular[(r % popular.len() as u64) as usize]
        } else {
            r % (2 * a.clients)
        };
        let len = a.query_len[(q % a.query_len.len() as u64) as usize];
        let start = mix64(r) % (a.span - len + 1);
        writeln!(out, "client-{client},{start},{}", start + len - 1)?;
    }
    out.flush()?;
    Ok(())
}
