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

mod advance;
mod bundle;
mod checkpoint;
mod cli;
mod cluster;
mod dataflow;
mod error;
mod exact;
mod gather;
mod inflight;
mod interrupt;
mod output;
mod pcap_out;
mod peers;
mod plot;
mod queries;
mod source;
mod stream;
mod totals;
mod travel;
mod verify;

use checkpoint::Checkpoints;
use chronobloom::core::bloom::Layout;
use chronobloom::core::temporal::{Pbf2, TimeRange};
use chronobloom::operators::{share, DedupConfig, DedupMode, IndexConfig, Placement};
use chronobloom::trace::{FlowKey, Ticker};
use clap::Parser;
use error::JobError;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
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

/// `--{flag}` in ticks of `unit`, refused when shorter than one tick.
fn at_least_one_tick(
    flag: &'static str,
    value: std::time::Duration,
    unit: std::time::Duration,
) -> Result<u64, JobError> {
    match ticks(value, unit) {
        0 => Err(JobError::BelowOneTick { flag, value, unit }),
        t => Ok(t),
    }
}

/// The dedup and index configurations the flags describe.
fn configs(
    args: &cli::Args,
    window: u64,
    epoch: u64,
    (lead_share, index_lead_share): (u32, u32),
) -> Result<(DedupConfig, IndexConfig), chronobloom::operators::Error> {
    let dedup = DedupConfig::builder()
        .window(window)
        .fpr(args.fpr)
        .epoch_len(epoch)
        .mode(match args.mode {
            cli::Mode::Bykey => DedupMode::ByKey,
            cli::Mode::Local => DedupMode::Local,
        })
        .exact_edge(args.exact_edge)
        .shards(args.dedup_shards)
        .lead_share(lead_share)
        .seed(args.seed);
    let dedup = match args.slack {
        Some(slack) => dedup.slack(ticks(slack, args.unit)),
        None => dedup,
    };
    let dedup = if args.exact_edge {
        dedup.expected_items_per_window(args.expected_keys)
    } else {
        dedup
    };
    let dedup = dedup.build()?;
    // One PBF-2 partition per hour of trace time (rounded to whole epochs).
    let partition_len =
        (ticks(std::time::Duration::from_secs(3600), args.unit) / epoch).max(1) * epoch;
    let index = IndexConfig::builder()
        .epoch_len(epoch)
        .partition_len(partition_len)
        .partitions(args.index_partitions)
        .resolution(ticks(args.index_resolution, args.unit))
        .bits(args.index_bits)
        .hashes(4)
        .layout(match args.index_layout {
            cli::IndexLayout::Standard => Layout::Standard,
            cli::IndexLayout::Blocked => Layout::Blocked,
        })
        .seed(args.seed)
        .lead_share(index_lead_share)
        .digest(args.digest)
        .placement(match args.index_placement {
            cli::IndexPlacement::Sharded => Placement::Sharded,
            cli::IndexPlacement::Replicated => Placement::Replicated,
        })
        .build()?;
    Ok((dedup, index))
}

/// A configuration error as the flag behind it, where one flag is: `--fpr 1.5: invalid dedup
/// configuration ...`.
fn flag_error(e: chronobloom::operators::Error, args: &cli::Args) -> JobError {
    let duration = |d: std::time::Duration| format!("{d:?}");
    let flag = match &e {
        chronobloom::operators::Error::Config { config, name, .. } => match (*config, *name) {
            ("dedup", "window") => Some(("--window", duration(args.window))),
            ("dedup", "fpr") => Some(("--fpr", args.fpr.to_string())),
            ("dedup", "slack") => args.slack.map(|s| ("--slack", duration(s))),
            ("dedup", "expected_items") => {
                Some(("--expected-keys", args.expected_keys.to_string()))
            }
            ("dedup", "shards") => Some(("--dedup-shards", args.dedup_shards.to_string())),
            (_, "epoch_len") => Some(("--epoch", duration(args.epoch))),
            ("index", "partitions") => {
                Some(("--index-partitions", args.index_partitions.to_string()))
            }
            ("index", "bits") => Some(("--index-bits", args.index_bits.to_string())),
            ("index", "resolution") => {
                Some(("--index-resolution", duration(args.index_resolution)))
            }
            _ => None,
        },
        _ => None,
    };
    match flag {
        Some((flag, value)) => JobError::Config {
            flag,
            value,
            source: e,
        },
        None => JobError::Operators(e),
    }
}

/// Refuses an output path whose directory does not exist before the run, not after it.
fn check_output(flag: &'static str, path: &std::path::Path) -> Result<(), JobError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if dir.is_dir() {
        return Ok(());
    }
    Err(JobError::Output {
        flag,
        path: path.to_path_buf(),
        reason: format!("directory {} does not exist", dir.display()),
    })
}

fn run(args: &cli::Args, timely_args: Vec<String>) -> Result<(), JobError> {
    let started = std::time::Instant::now();
    let layout = cli::check_timely(&timely_args)?;
    Ticker::new(args.unit, args.lateness)?; // --unit first: the ticks below divide by it
    let window = at_least_one_tick("window", args.window, args.unit)?;
    let epoch = at_least_one_tick("epoch", args.epoch, args.unit)?;
    if epoch > 1 << 32 {
        return Err(JobError::EpochTooLong {
            value: args.epoch,
            ticks: epoch,
            unit: args.unit,
        });
    }
    // The configurations, checked before any input is read (with `--exact` too).
    let (dedup, index) = configs(
        args,
        window,
        epoch,
        (args.reader_share, args.reader_index_share),
    )
    .map_err(|e| flag_error(e, args))?;
    let slack = dedup.slack();
    for (flag, path) in [
        ("out", &args.out),
        ("plot", &args.plot),
        ("out-pcap", &args.out_pcap),
    ] {
        if let Some(path) = path
            .as_ref()
            .filter(|p| p.as_path() != Path::new(stream::STDIN))
        {
            check_output(flag, path)?;
        }
    }
    if args.out_pcap.as_deref().is_some_and(stream::is_stream) && args.checkpoint_dir.is_some() {
        return Err(JobError::OutPcapWith {
            flag: "checkpoint-dir",
            why: "standard output or a pipe cannot be cut back to a checkpoint on a restart; \
                  write the capture to a file",
        });
    }
    let plan = source::Plan::new(args)?;
    for (flag, path) in [
        ("out", &args.out),
        ("plot", &args.plot),
        ("out-pcap", &args.out_pcap),
    ] {
        if let Some(path) = path.as_ref().filter(|p| plan.reads(p)) {
            return Err(JobError::OutputIsInput {
                flag,
                path: path.clone(),
            });
        }
    }
    interrupt::install().map_err(JobError::Dataflow)?;
    // Only a worker reading a single capture alone takes a smaller part of the work.
    let (dedup, index) = if plan.single_reader() {
        (dedup, index)
    } else {
        configs(args, window, epoch, (share::EVEN, share::EVEN)).map_err(|e| flag_error(e, args))?
    };
    if args.exact {
        return report_exact(args, &plan, window, started);
    }
    let queries = match &args.queries {
        Some(p) => queries::read_queries(p)?,
        None => Vec::new(),
    };
    let levels = Pbf2::levels_for(index.points())?;
    let every = at_least_one_tick("checkpoint-every", args.checkpoint_every, args.unit)?;
    let checkpoints = Checkpoints::from_args(args, layout.workers() as u32, epoch, every)?;
    if let Some(c) = &checkpoints {
        if let Some(b) = c.resume {
            eprintln!(
                "trace_dedup: resuming from {} (tick {b})",
                c.store.checkpoint_dir(b).display()
            );
        }
    }
    if layout.processes > 1 {
        let c = checkpoints.clone();
        let latest = move || {
            c.as_ref().map_or(
                "none (no --checkpoint-dir)".into(),
                Checkpoints::describe_latest,
            )
        };
        peers::on_lost_peer(layout.process, layout.processes, latest);
        peers::watch_startup(
            layout.process,
            layout.processes,
            cli::hosts_of(&timely_args),
            args.peer_timeout,
        );
    }
    let job = dataflow::Job {
        checkpoints,
        rate: args.rate,
        plan: plan.clone(),
        queries: Arc::new(queries.clone()),
        dedup,
        index,
        collect_passed: args.verify || args.out.is_some(),
        out_pcap: args.out_pcap.clone(),
        collect_epochs: args.plot.is_some(),
        progress: !args.json,
        in_flight: args.in_flight.unwrap_or(match args.mode {
            cli::Mode::Bykey if layout.processes > 1 => inflight::EPOCHS_BYKEY_PROCESSES,
            cli::Mode::Bykey => inflight::EPOCHS_BYKEY,
            cli::Mode::Local => inflight::EPOCHS_LOCAL,
        }),
        in_flight_records: args.in_flight_records,
    };
    let gathered = dataflow::run(job, timely_args).map_err(JobError::Dataflow)?;
    let seconds_total = started.elapsed().as_secs_f64();
    if let Some(e) = gathered.iter().find_map(|g| g.error.clone()) {
        return Err(JobError::Dataflow(e));
    }
    let Some(g) = gathered.into_iter().find(|g| g.is_leader) else {
        return Ok(()); // another process's workers: process 0 reports
    };

    let n: u64 = g.tallies.iter().map(|t| t.records).sum();
    if n == 0 {
        return Err(JobError::NoRecords { input: plan.name() });
    }
    let sum = |f: fn(&dataflow::WorkerTally) -> u64| g.tallies.iter().map(f).sum::<u64>();
    let totals = &g.report.totals;
    let unique_out = totals.passed;
    let dropped = totals.dropped;
    // The whole input again, for the exact answers and `--out` (not part of the timed job); not
    // after an interrupt, which left part of it unread.
    let interrupted = g.tallies.iter().any(|t| t.interrupted);
    if interrupted && (args.verify || args.out.is_some()) {
        eprintln!(
            "trace_dedup: interrupted: --verify and --out skipped (the input was not all read)"
        );
    }
    let passed_seqs: std::collections::HashSet<u64> = g.report.passed.iter().copied().collect();
    // `--verify` holds the input (it orders it by tick); `--out` streams it.
    let all: Option<Vec<source::Rec>> = (!interrupted && args.verify)
        .then(|| plan.reader(0, 1, None).collect::<Result<Vec<_>, _>>())
        .transpose()?;
    let passed = all.as_ref().map(|all| {
        all.iter()
            .map(|r| passed_seqs.contains(&r.seq))
            .collect::<Vec<bool>>()
    });
    let verdict = match (&all, &passed) {
        (Some(all), Some(p)) if args.verify => Some(verify::verify(all, p, window, slack)),
        _ => None,
    };
    let (dedup_bytes, index_bytes) = (totals.dedup_bytes, totals.index_bytes);
    let routed_bytes = sum(|t| t.routed_bytes);
    let bytes = dedup_bytes + index_bytes + routed_bytes;
    let dedup_bits = totals.peak_dedup_bits();
    let index_bits = totals.index_bits;
    let digest = totals.digest.map(|(_, d)| format!("{d:016x}"));
    let exact_records = all.as_deref();
    let answers: Vec<serde_json::Value> = g_answers(&g, &queries, exact_records);
    let late = sum(|t| t.late) + totals.late;
    let not_indexed = not_indexed(&totals.not_indexed);

    if let Some(path) = args.out.as_ref().filter(|_| !interrupted) {
        output::write_out(path, plan.reader(0, 1, None), &passed_seqs)?;
    }
    if let Some(path) = &args.plot {
        let points = epoch_points(&g.report.epochs, epoch, args.unit);
        plot::write(path, &format!("trace_dedup: {}", plan.name()), &points).map_err(|e| {
            JobError::Output {
                flag: "plot",
                path: path.clone(),
                reason: e.to_string(),
            }
        })?;
    }
    let per = |b: u64| b as f64 / n as f64;
    let mut report = json!({
        "input": plan.name(),
        "records": n,
        "interrupted": interrupted,
        "unique_out": unique_out,
        "duplicates_dropped": dropped,
        "late_records": late,
        "records_not_indexed": not_indexed.values().sum::<u64>(),
        "not_indexed_by_reason": not_indexed,
        "bad_records": sum(|t| t.bad),
        "not_ip": sum(|t| t.not_ip),
        "missed_duplicates": verdict.map(|v| v.missed_duplicates),
        "false_drops": verdict.map(|v| v.false_drops),
        "false_drop_rate": verdict.map(|v| v.false_drop_rate()),
        "exact_unique": verdict.map(|v| v.unique),
        "slack_records": verdict.map(|v| v.in_slack),
        "slack_drops": verdict.map(|v| v.slack_drops),
        "peak_window_keys": verdict.map(|v| v.peak_window_keys),
        "dedup_bits_per_window_key":
            verdict.map(|v| dedup_bits as f64 / v.peak_window_keys.max(1) as f64),
        "window": format!("{:?}", args.window),
        "window_ticks": window,
        "slack_ticks": slack,
        "exact_edge": args.exact_edge,
        "fpr": args.fpr,
        "mode": match args.mode { cli::Mode::Bykey => "bykey", cli::Mode::Local => "local" },
        "workers": g.workers,
        "epoch_ticks": epoch,
        "bytes_exchanged": bytes,
        "bytes_exchanged_per_record": per(bytes),
        "bytes_per_record_by_kind": {
            "input": per(routed_bytes), "dedup": per(dedup_bytes), "index": per(index_bytes),
        },
        "raw_bytes_per_record": per(sum(|t| t.raw_bytes)),
        "filter_bits": dedup_bits + index_bits,
        "dedup_bits": dedup_bits,
        "index_bits": index_bits,
        "index_levels": levels,
        "records_per_sec": n as f64 / g.seconds.max(1e-9),
        "seconds": g.seconds,
        "seconds_total": seconds_total,
        "records_per_sec_total": n as f64 / seconds_total.max(1e-9),
        "peak_rss_bytes": peak_rss_bytes(),
        "digest": digest,
        "answers": answers,
    });
    if let Some(n) = g.out_pcap_packets {
        report["out_pcap_packets"] = json!(n);
    }
    let mut to = report_sink(args);
    if args.json {
        writeln!(to, "{report}")
    } else {
        output::summary(&report, args.digest, &mut to)
    }
    .map_err(JobError::Report)
}

/// `--exact`: the baseline's report, in the same JSON shape where it applies.
fn report_exact(
    args: &cli::Args,
    plan: &source::Plan,
    window: u64,
    started: std::time::Instant,
) -> Result<(), JobError> {
    let x = exact::run(plan, window, args.out_pcap.as_deref())?;
    let seconds_total = started.elapsed().as_secs_f64();
    let report = json!({
        "input": plan.name(),
        "exact": true,
        "records": x.records,
        "interrupted": x.interrupted,
        "unique_out": x.passed,
        "duplicates_dropped": x.records - x.passed,
        "late_records": x.late,
        "bad_records": x.bad,
        "not_ip": x.not_ip,
        "window": format!("{:?}", args.window),
        "window_ticks": window,
        "workers": 1,
        "bytes_exchanged": 0,
        "bytes_exchanged_per_record": 0.0,
        "peak_window_keys": x.peak_keys,
        "map_bytes": x.peak_map_bytes,
        "seconds": x.seconds,
        "seconds_total": seconds_total,
        "records_per_sec": x.records as f64 / x.seconds.max(1e-9),
        "records_per_sec_total": x.records as f64 / seconds_total.max(1e-9),
        "peak_rss_bytes": peak_rss_bytes(),
        "out_pcap_packets": x.out_pcap_packets,
    });
    let mut to = report_sink(args);
    if args.json {
        return writeln!(to, "{report}").map_err(JobError::Report);
    }
    let mut summary = || {
        writeln!(to, "chronobloom trace_dedup --exact — {}", plan.name())?;
        writeln!(
            to,
            "  records {}  passed {}  peak keys in a window {}  map {} bytes",
            x.records, x.passed, x.peak_keys, x.peak_map_bytes
        )?;
        output::interrupted_note(&report, &mut to)?;
        writeln!(
            to,
            "  {:.0} records/s (whole run {:.3} s)",
            x.records as f64 / x.seconds.max(1e-9),
            seconds_total
        )
    };
    summary().map_err(JobError::Report)
}

/// Where the report goes: standard output, or standard error when the deduplicated capture
/// takes standard output (`--out-pcap -`).
fn report_sink(args: &cli::Args) -> Box<dyn Write> {
    if args.out_pcap.as_deref() == Some(Path::new(stream::STDIN)) {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    }
}

/// This process's peak resident set (`VmHWM` of `/proc/self/status`), where the OS reports it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Records the index refused, by reason (`beyond_horizon`: past `--index-partitions` hours).
fn not_indexed(
    by_reason: &BTreeMap<chronobloom::operators::stats::RejectReason, u64>,
) -> BTreeMap<&'static str, u64> {
    use chronobloom::operators::stats::RejectReason;
    let mut out = BTreeMap::new();
    for (reason, n) in by_reason {
        let name = match reason {
            RejectReason::BeyondHorizon => "beyond_horizon",
            RejectReason::BufferFull => "buffer_full",
            RejectReason::BadAllocation => "bad_allocation",
        };
        *out.entry(name).or_default() += n;
    }
    out
}

fn epoch_points(
    stats: &[chronobloom::operators::dedup::stats::DedupStats],
    epoch: u64,
    unit: std::time::Duration,
) -> Vec<plot::EpochPoint> {
    let mut per: BTreeMap<u64, (u64, u64, u64, u64, f64)> = BTreeMap::new();
    for s in stats {
        let e = per.entry(s.epoch).or_default();
        e.0 += s.records;
        e.1 += s.dropped;
        e.2 += s.local_bits + s.view_bits;
        e.3 += s.keys;
        e.4 = e.4.max(s.estimated_fpr);
    }
    let epoch_secs = epoch as f64 * unit.as_secs_f64();
    per.into_iter()
        .map(
            |(e, (records, dropped, bits, keys, fpr))| plot::EpochPoint {
                seconds: e as f64 * epoch_secs,
                rate: records as f64 / epoch_secs,
                duplicate_rate: dropped as f64 / records.max(1) as f64,
                memory_kib: bits as f64 / 8192.0,
                bits_per_key: if keys > 0 {
                    bits as f64 / keys as f64
                } else {
                    0.0
                },
                estimated_fpr: fpr,
            },
        )
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
