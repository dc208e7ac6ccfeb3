//! Evaluates a window filter on a `timestamp,element` CSV file (lines in time order).
//!
//! ```text
//! cargo run --release --example window_eval -- --data DATA.csv --filter {apbf|tlbf|sliding} \
//!     (--window TICKS | --count-window N) --fpr 0.01 [--json]
//! ```
//!
//! For each record, in order: time advances to the record's timestamp; the guarantee is checked
//! (the record's own element when its last occurrence is inside the guaranteed window, the oldest
//! element of the window and one chosen at random: each must be reported present; the truth is
//! tracked exactly); after the first two windows, false positives are measured every
//! `--fp-every` records on one element never seen and one whose last occurrence lies beyond the
//! window plus the filter's slack; then the element is inserted. Bits per item is memory over the
//! distinct elements of the guaranteed window, averaged over the same steady state. Insert and
//! query times come from a second, timing-only pass. Malformed input exits with code 2.

use chronobloom::core::hash::KeyHash;
use chronobloom::core::window::{Apbf, TimeLimitedBloomFilter, WindowFilter, DEFAULT_LEVEL};
use clap::{Parser, ValueEnum};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// Age-partitioned Bloom filter (count window).
    Apbf,
    /// Time-limited Bloom filter (time window).
    Tlbf,
    /// Naor–Yogev sliding Bloom filter (count or time window).
    Sliding,
}

/// Evaluate a window filter on a `timestamp,element` CSV file.
#[derive(Debug, Parser)]
struct Args {
    /// The CSV file: `timestamp,element` per line, timestamps (ticks) non-decreasing.
    #[arg(long)]
    data: PathBuf,
    /// The filter to evaluate.
    #[arg(long, value_enum)]
    filter: Kind,
    /// A time window of this many ticks.
    #[arg(
        long,
        required_unless_present = "count_window",
        conflicts_with = "count_window"
    )]
    window: Option<u64>,
    /// A count window over this many insertions.
    #[arg(long)]
    count_window: Option<u64>,
    /// The target false positive rate.
    #[arg(long)]
    fpr: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The APBF / TLBF level (more, smaller slices as it grows).
    #[arg(long, default_value_t = DEFAULT_LEVEL)]
    level: u32,
    /// TLBF: elements per window its slices are first sized for (it adapts from there).
    #[arg(long, default_value_t = 10_000)]
    expected_items: u64,
    /// Measure false positives every this many records.
    #[arg(long, default_value_t = 1)]
    fp_every: u64,
    /// Hash seed (and seed of the evaluation's own sampling).
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// The window the filter must guarantee.
#[derive(Debug, Clone, Copy)]
enum Window {
    Ticks(u64),
    Insertions(u64),
}

/// Everything that stops an evaluation.
#[derive(Debug)]
enum EvalError {
    Io(PathBuf, std::io::Error),
    Malformed {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    Filter(chronobloom::core::Error),
    WrongWindow {
        filter: &'static str,
        needs: &'static str,
    },
    NotBuilt(&'static str),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Io(path, e) => write!(f, "{}: {e}", path.display()),
            EvalError::Malformed { path, line, reason } => {
                write!(f, "{}:{line}: {reason}", path.display())
            }
            EvalError::Filter(e) => write!(f, "{e}"),
            EvalError::WrongWindow { filter, needs } => {
                write!(f, "--filter {filter} needs {needs}")
            }
            EvalError::NotBuilt(name) => write!(
                f,
                "--filter {name} is not built in this binary yet; use apbf or tlbf"
            ),
        }
    }
}

impl From<chronobloom::core::Error> for EvalError {
    fn from(e: chronobloom::core::Error) -> Self {
        EvalError::Filter(e)
    }
}

/// A filter ready to run, with its slack: how far past the guaranteed window (in the window's
/// unit) an element may still legitimately be reported.
struct Built {
    filter: Box<dyn WindowFilter>,
    slack: u64,
    shape: String,
}

fn build(args: &Args, window: Window) -> Result<Built, EvalError> {
    let (fpr, level, seed) = (args.fpr, args.level, args.seed);
    match (args.filter, window) {
        (Kind::Apbf, Window::Insertions(n)) => {
            let f = Apbf::with_fpr_level(n, fpr, level, seed)?;
            let p = f.params();
            Ok(Built {
                // Guaranteed l g (>= n); gone after (k + l) g.
                slack: u64::from(p.slices()) * f.generation() - n,
                shape: format!("k={} l={} g={}", p.k(), p.l(), f.generation()),
                filter: Box::new(f),
            })
        }
        (Kind::Tlbf, Window::Ticks(t)) => {
            let f =
                TimeLimitedBloomFilter::with_fpr_level(t, fpr, level, args.expected_items, seed)?;
            let p = f.params();
            Ok(Built {
                slack: f.retention() - t,
                shape: format!(
                    "k={} l={} generation_ticks={}",
                    p.k(),
                    p.l(),
                    f.generation_ticks()
                ),
                filter: Box::new(f),
            })
        }
        (Kind::Apbf, Window::Ticks(_)) => Err(EvalError::WrongWindow {
            filter: "apbf",
            needs: "--count-window",
        }),
        (Kind::Tlbf, Window::Insertions(_)) => Err(EvalError::WrongWindow {
            filter: "tlbf",
            needs: "--window",
        }),
        // The Naor–Yogev sliding filter plugs in here (count_window / time_window constructors).
        (Kind::Sliding, _) => Err(EvalError::NotBuilt("sliding")),
    }
}

/// The input, parsed once: elements interned to ids.
struct Data {
    times: Vec<u64>,
    keys: Vec<u32>,
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

fn load(path: &PathBuf) -> Result<Data, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Io(path.clone(), e))?;
    let mut data = Data {
        times: Vec::new(),
        keys: Vec::new(),
        names: Vec::new(),
        ids: HashMap::new(),
    };
    let malformed = |line: usize, reason: String| EvalError::Malformed {
        path: path.clone(),
        line,
        reason,
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (ts, element) = line.split_once(',').ok_or_else(|| {
            malformed(i + 1, format!("expected `timestamp,element`, got {line:?}"))
        })?;
        let t: u64 = ts
            .trim()
            .parse()
            .map_err(|e| malformed(i + 1, format!("timestamp {ts:?}: {e}")))?;
        if let Some(&last) = data.times.last() {
            if t < last {
                return Err(malformed(
                    i + 1,
                    format!("timestamp {t} is before {last}: lines must be in time order"),
                ));
            }
        }
        let next = data.names.len() as u32;
        let id = *data.ids.entry(element.to_owned()).or_insert_with(|| {
            data.names.push(element.to_owned());
            next
        });
        data.times.push(t);
        data.keys.push(id);
    }
    Ok(data)
}

/// A small deterministic generator for the evaluation's sampling.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Default)]
struct Tally {
    guarantee_queries: u64,
    false_negatives: u64,
    fp_fresh_queries: u64,
    fp_fresh: u64,
    fp_expired_queries: u64,
    fp_expired: u64,
    bits_per_item_sum: f64,
    bits_per_item_samples: u64,
    peak_bits: u64,
}

const NONE: usize = usize::MAX;

fn evaluate(
    data: &Data,
    built: &mut Built,
    window: Window,
    fp_every: u64,
) -> Result<Tally, EvalError> {
    let filter = &mut built.filter;
    let seed = filter.seed();
    let hash = |name: &str| KeyHash::of(name, seed);
    let n = data.times.len();
    let mut last = vec![NONE; data.names.len()];
    let (mut front, mut slack_front, mut in_window) = (0usize, 0usize, 0u64);
    let mut expired: VecDeque<usize> = VecDeque::new();
    let mut rng = SplitMix(built.slack ^ 0x5eed);
    let mut tally = Tally::default();
    let start = data.times.first().copied().unwrap_or(0);
    let mut fresh = 0u64;
    for r in 0..n {
        let t = data.times[r];
        // Record s is inside the guaranteed window (resp. beyond window + slack) at record r.
        let inside = |s: usize| match window {
            Window::Ticks(w) => data.times[s] + w >= t,
            Window::Insertions(w) => s as u64 + w >= r as u64,
        };
        let gone = |s: usize| match window {
            Window::Ticks(w) => data.times[s] + w + built.slack < t,
            Window::Insertions(w) => s as u64 + w + built.slack < r as u64,
        };
        while front < r && !inside(front) {
            if last[data.keys[front] as usize] == front {
                in_window -= 1;
            }
            front += 1;
        }
        while slack_front < r && gone(slack_front) {
            if last[data.keys[slack_front] as usize] == slack_front {
                expired.push_back(slack_front);
            }
            slack_front += 1;
        }
        filter.advance(t)?;

        let key = data.keys[r] as usize;
        let check = |s: usize, tally: &mut Tally| {
            let k = data.keys[s] as usize;
            if last[k] == s {
                tally.guarantee_queries += 1;
                if !filter.contains_hash(hash(&data.names[k]), t) {
                    tally.false_negatives += 1;
                }
            }
        };
        if last[key] != NONE && inside(last[key]) {
            check(last[key], &mut tally);
        }
        if front < r {
            check(front, &mut tally);
            check(
                front + (rng.next() % (r - front) as u64) as usize,
                &mut tally,
            );
        }

        let steady = match window {
            Window::Ticks(w) => t >= start + 2 * w,
            Window::Insertions(w) => r as u64 >= 2 * w,
        };
        if steady && (r as u64).is_multiple_of(fp_every.max(1)) {
            loop {
                fresh += 1;
                let name = format!("absent-{fresh}-{}", rng.next());
                if !data.ids.contains_key(&name) {
                    tally.fp_fresh_queries += 1;
                    tally.fp_fresh += u64::from(filter.contains_hash(hash(&name), t));
                    break;
                }
            }
            while let Some(s) = expired.pop_front() {
                let k = data.keys[s] as usize;
                if last[k] == s {
                    tally.fp_expired_queries += 1;
                    tally.fp_expired += u64::from(filter.contains_hash(hash(&data.names[k]), t));
                    break;
                }
            }
        }

        filter.insert_hash(hash(&data.names[key]), t)?;
        if last[key] == NONE || !inside(last[key]) {
            in_window += 1;
        }
        last[key] = r;

        let bits = filter.memory_bits();
        tally.peak_bits = tally.peak_bits.max(bits);
        if steady && in_window > 0 {
            tally.bits_per_item_sum += bits as f64 / in_window as f64;
            tally.bits_per_item_samples += 1;
        }
    }
    Ok(tally)
}

/// Nanoseconds per insertion and per query, from a pass that only inserts and queries: chunks of
/// records are inserted, then queried (each record's element and one never seen), alternating.
fn time_operations(data: &Data, args: &Args, window: Window) -> Result<(f64, f64), EvalError> {
    let mut built = build(args, window)?;
    let filter = &mut built.filter;
    let seed = filter.seed();
    let (mut insert_ns, mut query_ns, mut queries) = (0u128, 0u128, 0u64);
    let mut hits = 0u64;
    for (c, chunk) in data.keys.chunks(1024).enumerate() {
        let times = &data.times[c * 1024..c * 1024 + chunk.len()];
        let absent: Vec<String> = (0..chunk.len()).map(|i| format!("never-{c}-{i}")).collect();
        let clock = Instant::now();
        for (&key, &t) in chunk.iter().zip(times) {
            filter.insert_hash(KeyHash::of(data.names[key as usize].as_str(), seed), t)?;
        }
        insert_ns += clock.elapsed().as_nanos();
        let now = times.last().copied().unwrap_or(0);
        let clock = Instant::now();
        for (&key, name) in chunk.iter().zip(&absent) {
            hits += u64::from(
                filter.contains_hash(KeyHash::of(data.names[key as usize].as_str(), seed), now),
            );
            hits += u64::from(filter.contains_hash(KeyHash::of(name.as_str(), seed), now));
        }
        query_ns += clock.elapsed().as_nanos();
        queries += 2 * chunk.len() as u64;
    }
    black_box(hits);
    let n = data.keys.len().max(1) as f64;
    Ok((
        insert_ns as f64 / n,
        query_ns as f64 / queries.max(1) as f64,
    ))
}

fn run(args: &Args) -> Result<serde_json::Value, EvalError> {
    let window = match (args.window, args.count_window) {
        (Some(t), _) => Window::Ticks(t),
        (None, Some(n)) => Window::Insertions(n),
        (None, None) => {
            return Err(EvalError::WrongWindow {
                filter: "every filter",
                needs: "--window or --count-window",
            })
        }
    };
    let mut built = build(args, window)?;
    let data = load(&args.data)?;
    let tally = evaluate(&data, &mut built, window, args.fp_every)?;
    let (insert_ns, query_ns) = time_operations(&data, args, window)?;
    let fp_queries = tally.fp_fresh_queries + tally.fp_expired_queries;
    let false_positives = tally.fp_fresh + tally.fp_expired;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let inv = (1.0 / args.fpr).log2();
    let (window_len, unit) = match window {
        Window::Ticks(t) => (t, "ticks"),
        Window::Insertions(n) => (n, "insertions"),
    };
    Ok(serde_json::json!({
        "filter": format!("{:?}", args.filter).to_lowercase(),
        "shape": built.shape,
        "window": window_len,
        "window_unit": unit,
        "slack": built.slack,
        "target_fpr": args.fpr,
        "records": data.keys.len(),
        "distinct_elements": data.names.len(),
        "guarantee_queries": tally.guarantee_queries,
        "false_negatives": tally.false_negatives,
        "fp_queries": fp_queries,
        "false_positives": false_positives,
        "fpr": ratio(false_positives, fp_queries),
        "fpr_never_seen": ratio(tally.fp_fresh, tally.fp_fresh_queries),
        "fpr_expired": ratio(tally.fp_expired, tally.fp_expired_queries),
        "fp_expired_queries": tally.fp_expired_queries,
        "bits_per_item": if tally.bits_per_item_samples == 0 { 0.0 } else { tally.bits_per_item_sum / tally.bits_per_item_samples as f64 },
        "lower_bound_bits_per_item": inv + inv.log2(),
        "peak_bits": tally.peak_bits,
        "final_bits": built.filter.memory_bits(),
        "insert_ns": insert_ns,
        "query_ns": query_ns,
    }))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(report) if args.json => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Ok(report) => {
            if let Some(fields) = report.as_object() {
                for (name, value) in fields {
                    println!("{name:>26}: {value}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("window_eval: {e}");
            match e {
                EvalError::Malformed { .. } | EvalError::Io(..) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}
