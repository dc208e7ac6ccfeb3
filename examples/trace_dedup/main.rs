//! `trace_dedup`, the main job: deduplicates a network trace within a time window on any number of
//! Timely workers and processes, indexes every key in time (PBF-2), answers temporal queries, and
//! reports.
//!
//! ```text
//! cargo run --release --example trace_dedup -- [--pcap FILE | --csv FILE | --synthetic RECORDS] \
//!     [--key src|pair|5tuple] [--window 60s] [--fpr 0.01] [--mode bykey|local] [--epoch 1s] \
//!     [--queries FILE] [--verify] [--digest] [--json] [--plot OUT.svg] [--out DEDUPED.csv] [-w N ...]
//! ```
//! With no input flag it runs on an embedded default: a deterministic synthetic hour of traffic
//! (see `source::synthetic`). `-w`, `-n`, `-p`, `-h` pass through to timely.

mod cli;
mod dataflow;
mod plot;
mod source;
mod verify;

use chronobloom::core::bloom::Layout;
use chronobloom::core::temporal::{Pbf2, TimeRange};
use chronobloom::operators::{DedupConfig, DedupMode, IndexConfig};
use chronobloom::trace::FlowKey;
use clap::Parser;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let (ours, timely_args) = cli::split(std::env::args());
    let args = match cli::Args::try_parse_from(ours) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(&args, timely_args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trace_dedup: {e}");
            ExitCode::from(2)
        }
    }
}

/// Ticks per duration of the trace's unit.
fn ticks(d: std::time::Duration, unit: std::time::Duration) -> u64 {
    (d.as_nanos() / unit.as_nanos().max(1)) as u64
}

fn run(args: &cli::Args, timely_args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let window = ticks(args.window, args.unit);
    let epoch = ticks(args.epoch, args.unit);
    if window == 0 || epoch == 0 {
        return Err("--window and --epoch must be at least one tick (--unit)".into());
    }
    let input = source::load(args)?;
    if input.records.is_empty() {
        return Err(format!("{}: no IP records", input.name).into());
    }
    let queries = match &args.queries {
        Some(p) => read_queries(p)?,
        None => Vec::new(),
    };
    let last_tick = input.records.last().map_or(0, |r| r.tick);
    let per_window = expected_per_window(&input.records, window);
    let dedup = DedupConfig::builder()
        .window(window)
        .fpr(args.fpr)
        .epoch_len(epoch)
        .mode(match args.mode {
            cli::Mode::Bykey => DedupMode::ByKey,
            cli::Mode::Local => DedupMode::Local,
        })
        .expected_items_per_window(per_window)
        .seed(args.seed)
        .build()?;
    // One PBF-2 partition per hour of trace time (rounded to whole epochs).
    let partition_len =
        (ticks(std::time::Duration::from_secs(3600), args.unit) / epoch).max(1) * epoch;
    let index = IndexConfig::builder()
        .epoch_len(epoch)
        .partition_len(partition_len)
        .partitions(last_tick / partition_len + 1)
        .bits(args.index_bits)
        .hashes(4)
        .layout(match args.index_layout {
            cli::IndexLayout::Standard => Layout::Standard,
            cli::IndexLayout::Blocked => Layout::Blocked,
        })
        .seed(args.seed)
        .build()?;
    let levels = Pbf2::levels_for(partition_len)?;
    let records = Arc::new(input.records);
    let job = dataflow::Job {
        records: Arc::clone(&records),
        queries: Arc::new(queries.clone()),
        dedup,
        index,
        collect_passed: args.verify || args.out.is_some(),
        progress: !args.json,
    };
    let gathered = dataflow::run(job, timely_args)?;
    let Some(g) = gathered.into_iter().find(|g| g.is_leader) else {
        return Ok(()); // another process's workers: process 0 reports
    };

    let mut passed = vec![false; records.len()];
    for &s in &g.passed {
        if let Some(p) = passed.get_mut(s as usize) {
            *p = true;
        }
    }
    let n = records.len() as u64;
    let unique_out: u64 = g.dedup.iter().map(|s| s.passed).sum();
    let dropped: u64 = g.dedup.iter().map(|s| s.dropped).sum();
    let verdict = args
        .verify
        .then(|| verify::verify(&records, &passed, window));
    let bytes = g.dedup.iter().map(|s| s.bytes_sent).sum::<u64>()
        + g.index.iter().map(|s| s.local.bytes_sent).sum::<u64>();
    let filter_bits =
        peak_dedup_bits(&g.dedup) + g.index.iter().map(|s| s.merged_bits).max().unwrap_or(0);
    let digest = g.digests.iter().max().map(|&(_, d)| format!("{d:016x}"));
    let answers: Vec<serde_json::Value> =
        g_answers(&g, &queries, args.verify.then_some(&records[..]));

    if let Some(path) = &args.out {
        write_out(path, &records, &passed)?;
    }
    if let Some(path) = &args.plot {
        let points = epoch_points(&g.dedup, epoch, args.unit);
        plot::write(path, &format!("trace_dedup: {}", input.name), &points)?;
    }
    let report = json!({
        "input": input.name,
        "records": n,
        "unique_out": unique_out,
        "duplicates_dropped": dropped,
        "late_records": input.late,
        "bad_records": input.bad,
        "not_ip": input.not_ip,
        "missed_duplicates": verdict.map(|v| v.missed_duplicates),
        "false_drops": verdict.map(|v| v.false_drops),
        "false_drop_rate": verdict.map(|v| v.false_drop_rate()),
        "exact_unique": verdict.map(|v| v.unique),
        "window": format!("{:?}", args.window),
        "window_ticks": window,
        "fpr": args.fpr,
        "mode": match args.mode { cli::Mode::Bykey => "bykey", cli::Mode::Local => "local" },
        "workers": g.workers,
        "epoch_ticks": epoch,
        "bytes_exchanged": bytes,
        "filter_bits": filter_bits,
        "index_levels": levels,
        "records_per_sec": n as f64 / g.seconds.max(1e-9),
        "seconds": g.seconds,
        "digest": digest,
        "answers": answers,
    });
    if args.json {
        println!("{report}");
    } else {
        summary(&report, args.digest);
    }
    Ok(())
}

/// The dedup filters' expected keys per window: the largest count of records in any window-long
/// stretch of the trace (an upper bound on distinct keys in a window).
fn expected_per_window(records: &[source::Rec], window: u64) -> u64 {
    let (mut best, mut lo) = (1, 0);
    for (hi, r) in records.iter().enumerate() {
        while records[lo].tick + window <= r.tick {
            lo += 1;
        }
        best = best.max((hi - lo + 1) as u64);
    }
    best
}

/// The largest total over epochs of the bits the workers' dedup filters held.
fn peak_dedup_bits(stats: &[chronobloom::operators::dedup_stats::DedupStats]) -> u64 {
    let mut per_epoch: BTreeMap<u64, u64> = BTreeMap::new();
    for s in stats {
        *per_epoch.entry(s.epoch).or_default() += s.local_bits + s.view_bits;
    }
    per_epoch.into_values().max().unwrap_or(0)
}

fn epoch_points(
    stats: &[chronobloom::operators::dedup_stats::DedupStats],
    epoch: u64,
    unit: std::time::Duration,
) -> Vec<plot::EpochPoint> {
    let mut per: BTreeMap<u64, (u64, u64, u64, f64)> = BTreeMap::new();
    for s in stats {
        let e = per.entry(s.epoch).or_default();
        e.0 += s.records;
        e.1 += s.dropped;
        e.2 += s.local_bits + s.view_bits;
        e.3 = e.3.max(s.estimated_fpr);
    }
    let epoch_secs = epoch as f64 * unit.as_secs_f64();
    per.into_iter()
        .map(|(e, (records, dropped, bits, fpr))| plot::EpochPoint {
            seconds: e as f64 * epoch_secs,
            rate: records as f64 / epoch_secs,
            duplicate_rate: dropped as f64 / records.max(1) as f64,
            memory_kib: bits as f64 / 8192.0,
            estimated_fpr: fpr,
        })
        .collect()
}

/// The answers as JSON, with the exact answer when the records are given.
fn g_answers(
    g: &dataflow::Gathered,
    queries: &[(FlowKey, TimeRange)],
    records: Option<&[source::Rec]>,
) -> Vec<serde_json::Value> {
    let mut answers = g.answers.clone();
    answers.sort();
    answers
        .into_iter()
        .filter_map(|(i, present, probes)| {
            let (key, range) = queries.get(i as usize)?;
            let exact =
                records.map(|rs| rs.iter().any(|r| r.key == *key && range.contains(r.tick)));
            Some(json!({
                "key": key.to_string(), "start": range.start(), "end": range.end(),
                "present": present, "probes": probes, "exact": exact,
            }))
        })
        .collect()
}

/// `key,start,end` lines (ticks, inclusive); blank lines are skipped.
fn read_queries(
    path: &std::path::Path,
) -> Result<Vec<(FlowKey, TimeRange)>, Box<dyn std::error::Error>> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let at = |reason: String| format!("{}:{}: {reason}", path.display(), i + 1);
        let mut parts = line.rsplitn(3, ',');
        let (Some(e), Some(s), Some(k)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(at("expected `key,start,end`".into()).into());
        };
        let key: FlowKey = k
            .trim()
            .parse()
            .map_err(|e: chronobloom::trace::TraceError| at(e.to_string()))?;
        let tick = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| at(format!("`{v}` is not a tick")))
        };
        let range = TimeRange::new(tick(s)?, tick(e)?).map_err(|e| at(e.to_string()))?;
        out.push((key, range));
    }
    Ok(out)
}

/// The passed records as `timestamp,src,dst,sport,dport,proto` (decimal seconds).
fn write_out(
    path: &std::path::Path,
    records: &[source::Rec],
    passed: &[bool],
) -> std::io::Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "timestamp,src,dst,sport,dport,proto")?;
    for r in records.iter().filter(|r| passed[r.seq as usize]) {
        let f = &r.flow;
        let (s, ns) = (f.ts_nanos / 1_000_000_000, f.ts_nanos % 1_000_000_000);
        writeln!(
            w,
            "{s}.{ns:09},{},{},{},{},{}",
            f.src, f.dst, f.sport, f.dport, f.proto
        )?;
    }
    w.flush()
}

fn summary(r: &serde_json::Value, show_digest: bool) {
    println!(
        "chronobloom trace_dedup — {}",
        r["input"].as_str().unwrap_or("")
    );
    println!(
        "  records {}  passed {}  dropped as duplicates {}  late {}  bad {}",
        r["records"], r["unique_out"], r["duplicates_dropped"], r["late_records"], r["bad_records"]
    );
    println!(
        "  window {} ({} ticks), target fpr {}, mode {}, {} workers",
        r["window"].as_str().unwrap_or(""),
        r["window_ticks"],
        r["fpr"],
        r["mode"].as_str().unwrap_or(""),
        r["workers"]
    );
    if !r["missed_duplicates"].is_null() {
        println!(
            "  verify: missed duplicates {}, false drops {} (rate {:.5} of {} unique)",
            r["missed_duplicates"],
            r["false_drops"],
            r["false_drop_rate"].as_f64().unwrap_or(0.0),
            r["exact_unique"]
        );
    }
    println!(
        "  {:.0} records/s, {} bytes exchanged, {} filter bits",
        r["records_per_sec"].as_f64().unwrap_or(0.0),
        r["bytes_exchanged"],
        r["filter_bits"]
    );
    if show_digest {
        println!("  digest {}", r["digest"].as_str().unwrap_or("-"));
    }
    for a in r["answers"].as_array().into_iter().flatten() {
        println!(
            "  query {} [{}, {}]: {}{}",
            a["key"].as_str().unwrap_or(""),
            a["start"],
            a["end"],
            if a["present"].as_bool() == Some(true) {
                "present"
            } else {
                "absent"
            },
            match a["exact"].as_bool() {
                Some(true) => " (exact: present)",
                Some(false) => " (exact: absent)",
                None => "",
            }
        );
    }
}
