//! Throughput and bytes moved of the dedup operator on a synthetic stream; prints one JSON line.
//!
//! ```text
//! cargo run --release --example dedup_bench -- --mode by-key|local --workers N \
//!     [--rate 50000] [--ticks 120] [--window 60] [--epoch-len 1] [--fpr 0.01] [--universe N] \
//!     [--lag 4] [--baseline pipeline|exchange] [--exact-edge] [--slack TICKS]
//! ```
//!
//! Each worker draws `--rate` keys (`u64`, uniform over `--universe`) per tick, on the clock, into
//! one batch per tick. Ticks are seconds: W = 60 s. The driver sends a tick and advances the
//! input; at epoch boundaries it lets the input run at most `--lag` epochs ahead of the output
//! before it blocks. Every record goes through the dataflow and every passed record is counted.
//! Records per second per worker is the total over the elapsed time over the workers. Bytes: what
//! the operator sent other workers (`ByKey`: the serialized `(fingerprint, key)` pairs; `Local`:
//! 8-byte key fingerprints of closed epochs), and what shuffling the raw 8-byte records would have
//! moved (records whose owner is another worker × 8 bytes).
//!
//! `--baseline` replaces the dedup operator by a trivial one that counts records, after an
//! exchange by key hash (`exchange`) or not (`pipeline`): the engine's own cost per record.

use chronobloom::core::hash::KeyHash;
use chronobloom::operators::timely;
use chronobloom::operators::{Dedup, DedupConfig, DedupMode};
use chronobloom::synth::splitmix;
use clap::{Parser, ValueEnum};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use timely::dataflow::operators::{Exchange, Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;
use timely::progress::Stamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Records exchanged by key.
    ByKey,
    /// Records stay put; closed epochs shared as Bloom filter slices.
    Local,
}

/// Benchmark the dedup operator.
#[derive(Debug, Parser)]
struct Args {
    /// Routing mode.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Records per tick per worker.
    #[arg(long, default_value_t = 50_000)]
    rate: u64,
    /// Ticks driven.
    #[arg(long, default_value_t = 120)]
    ticks: u64,
    /// The window W in ticks.
    #[arg(long, default_value_t = 60)]
    window: u64,
    /// Ticks per epoch.
    #[arg(long, default_value_t = 1)]
    epoch_len: u64,
    /// Target false positive rate.
    #[arg(long, default_value_t = 0.01)]
    fpr: f64,
    /// Key universe (smaller = more duplicates).
    #[arg(long, default_value_t = 1 << 26)]
    universe: u64,
    /// Epochs the input may run ahead of the output.
    #[arg(long, default_value_t = 4)]
    lag: u64,
    /// Use the exact-edge tick filters (sized for `rate × workers × window` keys) instead of
    /// the compact state (sized from the stream).
    #[arg(long)]
    exact_edge: bool,
    /// Slack of the compact state, in ticks (default window / 16).
    #[arg(long)]
    slack: Option<u64>,
    /// Measure a trivial dataflow instead of the dedup operator.
    #[arg(long, value_enum)]
    baseline: Option<Baseline>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Baseline {
    /// Count records where they are.
    Pipeline,
    /// Exchange records by key hash, then count them.
    Exchange,
}

/// Totals gathered from every worker.
#[derive(Default)]
struct Totals {
    passed: u64,
    bytes_sent: u64,
    bytes_received: u64,
    raw_shuffle_bytes: u64,
    epochs: u64,
    seconds: f64,
    peak_bits: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mode = match args.mode {
        Mode::ByKey => DedupMode::ByKey,
        Mode::Local => DedupMode::Local,
    };
    let expected = args.rate * args.workers as u64 * args.window;
    let mut builder = DedupConfig::builder()
        .window(args.window)
        .epoch_len(args.epoch_len)
        .fpr(args.fpr)
        .exact_edge(args.exact_edge)
        .mode(mode)
        .seed(1);
    if args.exact_edge {
        builder = builder.expected_items_per_window(expected);
    }
    if let Some(slack) = args.slack {
        builder = builder.slack(slack);
    }
    let cfg = match builder.build() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let totals = Arc::new(Mutex::new(Totals::default()));
    let t2 = Arc::clone(&totals);
    let (rate, ticks, universe, baseline) =
        (args.rate, args.ticks, args.universe.max(1), args.baseline);
    let lag = args.lag.max(1) * args.epoch_len;
    // every worker starts its clock once all have counted the raw shuffle and built the dataflow
    let ready = Arc::new(std::sync::Barrier::new(args.workers));
    let run = timely::execute(timely::Config::process(args.workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let draw = move |s: &mut u64| splitmix(s) % universe;
        // what shuffling the raw records would move, from the same keys (off the clock)
        let mut s = 1 + me as u64;
        let raw = (0..ticks * rate)
            .map(|_| draw(&mut s))
            .filter(|&k| cfg.shard_of(KeyHash::of(&k, cfg.seed())) as usize % peers != me)
            .count() as u64
            * 8;
        let passed = Arc::new(Mutex::new(0u64));
        let stats = Arc::new(Mutex::new(Vec::new()));
        let (p2, s2) = (Arc::clone(&passed), Arc::clone(&stats));
        let probe = ProbeHandle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, keys) = scope.new_input::<Vec<u64>>();
            let count = move |c: Result<(&Stamp<u64>, &Vec<u64>), &[u64]>| {
                if let Ok((_, c)) = c {
                    *p2.lock().unwrap_or_else(|e| e.into_inner()) += c.len() as u64;
                }
            };
            match baseline {
                Some(Baseline::Pipeline) => keys.inspect_core(count).probe_with(&probe),
                Some(Baseline::Exchange) => keys
                    .exchange(move |k| KeyHash::of(k, 1).lo)
                    .inspect_core(count)
                    .probe_with(&probe),
                None => {
                    let out = keys.dedup_by(&cfg, |k: &u64| *k);
                    out.stats
                        .inspect(move |st| {
                            s2.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(st.clone())
                        })
                        .probe_with(&probe);
                    out.passed.inspect_core(count).probe_with(&probe)
                }
            };
            input
        });
        let mut s = 1 + me as u64;
        ready.wait();
        let start = Instant::now();
        for t in 0..ticks {
            let mut batch: Vec<u64> = (0..rate).map(|_| draw(&mut s)).collect();
            input.send_batch(&mut batch);
            input.advance_to(t + 1);
            if (t + 1).is_multiple_of(cfg.epoch_len()) && t + 1 >= lag {
                let behind = t + 1 - lag;
                worker.step_while(|| probe.less_than(&behind));
            } else {
                worker.step();
            }
        }
        drop(input);
        worker.step_while(|| !probe.done());
        let seconds = start.elapsed().as_secs_f64();
        let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
        let mut tot = t2.lock().unwrap_or_else(|e| e.into_inner());
        tot.passed += *passed.lock().unwrap_or_else(|e| e.into_inner());
        tot.bytes_sent += stats.iter().map(|s| s.bytes_sent).sum::<u64>();
        tot.bytes_received += stats.iter().map(|s| s.bytes_received).sum::<u64>();
        tot.raw_shuffle_bytes += raw;
        tot.epochs = tot.epochs.max(stats.len() as u64);
        tot.seconds = tot.seconds.max(seconds);
        tot.peak_bits += stats
            .iter()
            .map(|s| s.local_bits + s.view_bits)
            .max()
            .unwrap_or(0);
    });
    match run {
        Ok(guards) => {
            if guards.join().into_iter().any(|r| r.is_err()) {
                eprintln!("a worker failed");
                return ExitCode::from(1);
            }
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let t = totals.lock().unwrap_or_else(|e| e.into_inner());
    let records = args.rate * args.ticks * args.workers as u64;
    let epochs = (args.ticks.div_ceil(args.epoch_len)).max(1);
    println!(
        "{{\"mode\":\"{:?}\",\"baseline\":\"{:?}\",\"workers\":{},\"window\":{},\"epoch_len\":{},\"fpr\":{},\"records\":{},\"passed\":{},\"seconds\":{:.3},\"records_per_sec_per_worker\":{:.0},\"bytes_sent\":{},\"bytes_received\":{},\"raw_shuffle_bytes\":{},\"bytes_sent_per_epoch\":{},\"raw_shuffle_bytes_per_epoch\":{},\"peak_state_bytes\":{},\"exact_edge\":{}}}",
        args.mode,
        args.baseline,
        args.workers,
        args.window,
        args.epoch_len,
        args.fpr,
        records,
        t.passed,
        t.seconds,
        records as f64 / t.seconds / args.workers as f64,
        t.bytes_sent,
        t.bytes_received,
        t.raw_shuffle_bytes,
        t.bytes_sent / epochs,
        t.raw_shuffle_bytes / epochs,
        t.peak_bits / 8,
        args.exact_edge,
    );
    ExitCode::SUCCESS
}
