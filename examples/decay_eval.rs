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

use chronobloom::core::decay::baselines::{prior_only, SimpleBuffer};
use chronobloom::core::decay::decision::Penalties;
use chronobloom::core::decay::prior::{
    harmonic, AtLeast, DistinctModel, FnProbability, FrequencyTable, SampleProbability,
};
use chronobloom::core::decay::{
    AnswerRatePrior, Btbf, BtbfInference, BtbfShape, Gbf, GbfInference, RecencySketch,
};
use chronobloom::core::hash::{mix64, KeyHash};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

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

/// One item stream with its priors.
struct Stream {
    name: String,
    items: Vec<u64>,
    /// `p_x` per item id.
    p: Vec<f64>,
    distinct: DistinctModel,
}

#[derive(Debug, Serialize)]
struct Row {
    filter: &'static str,
    bits_per_item: u64,
    /// `k` (filters) or `bph` (buffer) that minimized the total penalty.
    parameter: u32,
    total_penalty: f64,
    penalty_ratio: f64,
    vs_standard: Option<f64>,
    false_positives: u64,
    false_negatives: u64,
    posterior_error: Option<f64>,
    /// The recency sketch of a `btbf_inferential_recency` row.
    #[serde(skip_serializing_if = "Option::is_none")]
    recency: Option<RecencyChoice>,
}

/// The recency sketch that minimized a row's total penalty, and its bits.
#[derive(Debug, Clone, Copy, Serialize)]
struct RecencyChoice {
    share: f64,
    period: u64,
    depth: u32,
    width: u64,
    counter_bits: u32,
    sketch_bits: u64,
    btbf_bits: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    stream: String,
    window: u64,
    warm: u64,
    queries: u64,
    pos_neg_ratio: f64,
    seed: u64,
    rows: Vec<Row>,
}

/// Totals of one decision rule over the measured queries.
#[derive(Debug, Clone, Default)]
struct Tally {
    penalty: f64,
    fp: u64,
    fn_: u64,
    /// (queries, in window) per posterior bin of width 0.05.
    bins: [(u64, u64); 20],
}

impl Tally {
    fn add(&mut self, answer: bool, truth: bool, pen: &Penalties, posterior: Option<f64>) {
        self.penalty += pen.cost(answer, truth);
        self.fp += u64::from(answer && !truth);
        self.fn_ += u64::from(!answer && truth);
        if let Some(p) = posterior {
            let b = ((p * 20.0) as usize).min(19);
            self.bins[b].0 += 1;
            self.bins[b].1 += u64::from(truth);
        }
    }

    /// Eq. 35.
    fn posterior_error(&self) -> Option<f64> {
        let n: u64 = self.bins.iter().map(|b| b.0).sum();
        (n > 0).then(|| {
            let sum: f64 = (self.bins.iter().enumerate())
                .filter(|(_, b)| b.0 > 0)
                .map(|(l, &(c, h))| {
                    (h as f64 / c as f64 - (l as f64 + 0.5) / 20.0).abs() * c as f64
                })
                .sum();
            sum / n as f64
        })
    }
}

/// A filter under test: its standard answer (if any) and posterior for a key, and insertion.
trait Candidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64);
    fn insert(&mut self, h: KeyHash);
}

struct BtbfCandidate(Btbf, BtbfInference);
impl Candidate for BtbfCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (Some(obs.oldest.is_some()), self.1.posterior(&obs, p))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

/// The inferential BTBF with `p_x` from a recency sketch (the stream's `p_x` is ignored).
struct RecencyCandidate(Btbf, BtbfInference, RecencySketch);
impl Candidate for RecencyCandidate {
    fn answer(&self, h: KeyHash, _p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (
            Some(obs.oldest.is_some()),
            self.1.posterior(&obs, self.2.p_x(h)),
        )
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
        self.2.insert_hash(h);
    }
}

/// The inferential BTBF with the stream's `p_x` floored by an [`AnswerRatePrior`], which learns
/// from the posteriors under its own `p` before each insertion.
struct FlooredCandidate(Btbf, BtbfInference, AnswerRatePrior);
impl Candidate for FlooredCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        let floored = AtLeast(FnProbability(|_| p), &self.2).p_x(h);
        (Some(obs.oldest.is_some()), self.1.posterior(&obs, floored))
    }
    fn insert(&mut self, h: KeyHash) {
        // query, then insert, through the warm-up too
        let obs = self.0.observe_hash(h);
        self.2.observe(self.1.posterior(&obs, self.2.p()));
        self.0.insert_hash(h);
    }
}

struct GbfCandidate(Gbf, GbfInference, u64);
impl Candidate for GbfCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (Some(obs.intact()), self.1.posterior(&obs, p, self.2))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

struct BufferCandidate(SimpleBuffer, DistinctModel);
impl Candidate for BufferCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        (None, self.0.posterior(h, p, &self.1))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

struct PriorCandidate(u64);
impl Candidate for PriorCandidate {
    fn answer(&self, _h: KeyHash, p: f64) -> (Option<bool>, f64) {
        (None, prior_only(p, self.0))
    }
    fn insert(&mut self, _h: KeyHash) {}
}

/// The experiment's fixed inputs.
struct Setup<'a> {
    stream: &'a Stream,
    hashes: Vec<KeyHash>,
    warm: usize,
    penalties: Vec<Penalties>,
    truth: Vec<bool>,
}

impl Setup<'_> {
    /// Query-then-insert over the stream: (standard tally, inferential tally).
    fn run(&self, c: &mut dyn Candidate) -> (Tally, Tally) {
        let (mut standard, mut inferential) = (Tally::default(), Tally::default());
        for (t, (&x, &h)) in self.stream.items.iter().zip(&self.hashes).enumerate() {
            if t >= self.warm {
                let q = t - self.warm;
                let (pen, truth) = (&self.penalties[q], self.truth[q]);
                let (std_answer, post) = c.answer(h, self.stream.p[x as usize]);
                if let Some(a) = std_answer {
                    standard.add(a, truth, pen, None);
                }
                inferential.add(pen.decide(post), truth, pen, Some(post));
            }
            c.insert(h);
        }
        (standard, inferential)
    }
}

fn uniform01(seed: u64, i: u64) -> f64 {
    (mix64(seed ^ mix64(i)) >> 11) as f64 / (1u64 << 53) as f64
}

fn synthetic(kind: StreamKind, universe: u64, n: u64, seed: u64) -> Result<Stream, String> {
    let u = universe as usize;
    match kind {
        StreamKind::Uniform => Ok(Stream {
            name: format!("uniform |U|={universe}"),
            items: (0..n).map(|i| mix64(seed ^ mix64(i)) % universe).collect(),
            p: vec![1.0 / universe as f64; u],
            distinct: DistinctModel::uniform(universe).map_err(|e| e.to_string())?,
        }),
        StreamKind::Zipf => {
            let h = harmonic(universe);
            let p: Vec<f64> = (1..=universe).map(|x| 1.0 / (h * x as f64)).collect();
            let mut cdf = Vec::with_capacity(u);
            let mut acc = 0.0;
            for &px in &p {
                acc += px;
                cdf.push(acc);
            }
            let items = (0..n)
                .map(|i| {
                    let r = uniform01(seed, i) * acc;
                    (cdf.partition_point(|&c| c < r).min(u - 1)) as u64
                })
                .collect();
            Ok(Stream {
                name: format!("zipf |U|={universe}"),
                items,
                p,
                distinct: DistinctModel::zipf(universe).map_err(|e| e.to_string())?,
            })
        }
    }
}

/// Reads `timestamp,element` lines; `p_x` from frequencies over the file, `D(j)` measured at
/// powers of ten (and `w`) over 8 evenly spread starts, interpolated by eq. 18 (§6.4.2).
fn from_csv(path: &PathBuf, window: u64) -> Result<Stream, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut items = Vec::new();
    for (line_no, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let (ts, element) = line
            .split_once(',')
            .ok_or_else(|| format!("line {}: expected `timestamp,element`", line_no + 1))?;
        ts.trim()
            .parse::<f64>()
            .map_err(|_| format!("line {}: bad timestamp {ts:?}", line_no + 1))?;
        let next = ids.len() as u64;
        items.push(*ids.entry(element.trim().to_owned()).or_insert(next));
    }
    if items.is_empty() {
        return Err(format!("{}: no records", path.display()));
    }
    // p_x: the learned frequency table over the whole file (every queried item occurs in it)
    let mut table = FrequencyTable::new(1.0).map_err(|e| e.to_string())?;
    for &x in &items {
        table.observe(KeyHash::of(&x, 0));
    }
    let p = (0..ids.len() as u64)
        .map(|x| table.p_x(KeyHash::of(&x, 0)))
        .collect();
    let mut js: Vec<u64> = (0..7)
        .map(|e| 10u64.pow(e))
        .chain([window, 4 * window])
        .collect();
    js.retain(|&j| j < items.len() as u64);
    js.sort_unstable();
    js.dedup();
    let mut points = Vec::new();
    for &j in &js {
        let starts = 8u64;
        let span = items.len() as u64 - j;
        let mean = (0..starts)
            .map(|s| {
                let from = (span * s / starts) as usize;
                let mut seen: Vec<u64> = items[from..from + j as usize].to_vec();
                seen.sort_unstable();
                seen.dedup();
                seen.len() as f64
            })
            .sum::<f64>()
            / starts as f64;
        points.push((j as f64, mean));
    }
    let distinct = DistinctModel::measured(points).map_err(|e| e.to_string())?;
    Ok(Stream {
        name: format!("{} ({} distinct)", path.display(), ids.len()),
        items,
        p,
        distinct,
    })
}

/// A parameter choice with its tally.
type Best<P> = (P, Tally);

/// Keeps the tally with the least penalty.
fn keep_best<P>(best: &mut Option<Best<P>>, param: P, t: Tally) {
    if best.as_ref().is_none_or(|(_, b)| t.penalty < b.penalty) {
        *best = Some((param, t));
    }
}

/// The inferential BTBF with a recency sketch in `bits` bits in all: the best over `k` and the
/// sketch's share, period and depth.
fn best_recency(
    args: &Args,
    setup: &Setup,
    bits: u64,
) -> Result<Option<Best<(u32, RecencyChoice)>>, String> {
    let mut best = None;
    for (share, period, depth) in recency_grid(args)? {
        let budget = (share * bits as f64) as u64;
        let seed = mix64(args.seed ^ 0x5ec0);
        // too few bits for one row of counters: not a candidate at this size
        let Ok(sketch) = RecencySketch::for_bits(budget, depth, period, args.prior_floor, seed)
        else {
            continue;
        };
        let btbf_bits = bits - sketch.bits();
        let choice = RecencyChoice {
            share,
            period,
            depth,
            width: sketch.width(),
            counter_bits: sketch.counter_bits(),
            sketch_bits: sketch.bits(),
            btbf_bits,
        };
        for k in 1..=args.btbf_k_max.clamp(1, 32) {
            let Ok(shape) = BtbfShape::for_bits(args.window, btbf_bits, k) else {
                continue;
            };
            let filter = Btbf::new(shape, args.seed).map_err(|e| e.to_string())?;
            let inf = BtbfInference::new(shape, setup.stream.distinct.clone());
            let (_, i) = setup.run(&mut RecencyCandidate(filter, inf, sketch.clone()));
            keep_best(&mut best, (k, choice), i);
        }
    }
    Ok(best)
}

/// The recency sketches tried, `(share, H, depth)`, each checked by [`RecencySketch::new`].
fn recency_grid(args: &Args) -> Result<Vec<(f64, u64, u32)>, String> {
    let mut grid = Vec::new();
    for &share in &args.prior_share {
        if !(share > 0.0 && share < 1.0) {
            return Err(format!("--prior-share {share} is not in (0, 1)"));
        }
        for &windows in &args.prior_period {
            if !(windows > 0.0 && windows.is_finite()) {
                return Err(format!("--prior-period {windows} is not a positive number"));
            }
            let period = ((windows * args.window as f64).round() as u64).max(1);
            for &depth in &args.prior_depth {
                RecencySketch::new(1, depth, period, args.prior_floor, 0)
                    .map_err(|e| format!("recency prior: {e}"))?;
                grid.push((share, period, depth));
            }
        }
    }
    Ok(grid)
}

fn evaluate(args: &Args, stream: &Stream) -> Result<Report, String> {
    let w = args.window;
    let warm = (args.warm as usize).min(stream.items.len());
    let hashes: Vec<KeyHash> = stream
        .items
        .iter()
        .map(|x| KeyHash::of(x, args.seed))
        .collect();
    let mut last = vec![u64::MAX; stream.p.len()];
    let mut truth = Vec::new();
    for (t, &x) in stream.items.iter().enumerate() {
        let t = t as u64;
        if t >= warm as u64 {
            let at = last[x as usize];
            truth.push(at != u64::MAX && t - at - 1 < w);
        }
        last[x as usize] = t;
    }
    let queries = truth.len() as u64;
    let penalties = (0..queries)
        .map(|q| {
            Penalties::new(
                1.0 + 9.0 * uniform01(args.seed ^ 0xfa, q),
                1.0 + 9.0 * uniform01(args.seed ^ 0xf7, q),
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let positives = truth.iter().filter(|&&t| t).count() as f64;
    let setup = Setup {
        stream,
        hashes,
        warm,
        penalties,
        truth,
    };
    let has = |kind| args.prior.contains(&kind);
    if has(PriorKind::Recency) {
        recency_grid(args)?; // bad sketch parameters fail before the long runs
    }
    let (_, prior) = setup.run(&mut PriorCandidate(w));
    let mut rows = Vec::new();
    let row = |filter, bpi, param: u32, t: &Tally, standard: Option<&Tally>, posterior: bool| Row {
        filter,
        bits_per_item: bpi,
        parameter: param,
        total_penalty: t.penalty,
        penalty_ratio: t.penalty / prior.penalty,
        vs_standard: standard.map(|s| t.penalty / s.penalty),
        false_positives: t.fp,
        false_negatives: t.fn_,
        posterior_error: if posterior { t.posterior_error() } else { None },
        recency: None,
    };
    rows.push(row("prior_only", 0, 0, &prior, None, true));
    for &bpi in &args.bits_per_item {
        let bits = bpi * w;
        let (mut btbf, mut btbf_inf, mut btbf_floored, mut gbf, mut gbf_inf, mut buffer) =
            (None, None, None, None, None, None);
        for k in 1..=args.btbf_k_max.clamp(1, 32) {
            let Ok(shape) = BtbfShape::for_bits(w, bits, k) else {
                continue;
            };
            let filter = Btbf::new(shape, args.seed).map_err(|e| e.to_string())?;
            let inf = BtbfInference::new(shape, stream.distinct.clone());
            if has(PriorKind::Floored) {
                let rate = AnswerRatePrior::new(w).map_err(|e| e.to_string())?;
                let mut candidate = FlooredCandidate(filter.clone(), inf.clone(), rate);
                let (_, i) = setup.run(&mut candidate);
                keep_best(&mut btbf_floored, k, i);
            }
            let (s, i) = setup.run(&mut BtbfCandidate(filter, inf));
            keep_best(&mut btbf, k, s);
            keep_best(&mut btbf_inf, k, i);
        }
        for k in 1..=args.gbf_k_max.clamp(1, 64) {
            let filter = Gbf::new(bits, k, k, args.seed).map_err(|e| e.to_string())?;
            let inf = GbfInference::new(&filter);
            let (s, i) = setup.run(&mut GbfCandidate(filter, inf, w));
            keep_best(&mut gbf, k, s);
            keep_best(&mut gbf_inf, k, i);
        }
        for bph in 1..=32 {
            let Ok(buf) = SimpleBuffer::new(w, bits, bph, args.seed) else {
                continue;
            };
            let (_, i) = setup.run(&mut BufferCandidate(buf, stream.distinct.clone()));
            keep_best(&mut buffer, bph, i);
        }
        let missing = || format!("no BTBF or GBF shape fits {bpi} bits per item");
        let (bk, b) = btbf.ok_or_else(missing)?;
        let (bik, bi) = btbf_inf.ok_or_else(missing)?;
        let (gk, g) = gbf.ok_or_else(missing)?;
        let (gik, gi) = gbf_inf.ok_or_else(missing)?;
        rows.push(row("btbf", bpi, bk, &b, None, false));
        if has(PriorKind::Frequency) {
            rows.push(row("btbf_inferential", bpi, bik, &bi, Some(&b), true));
        }
        if let Some((fk, f)) = &btbf_floored {
            rows.push(row("btbf_inferential_floored", bpi, *fk, f, Some(&b), true));
        }
        // no row when no sketch of the grid leaves room for a BTBF at this size
        let recency = if has(PriorKind::Recency) {
            best_recency(args, &setup, bits)?
        } else {
            None
        };
        if let Some(((rk, choice), r)) = recency {
            rows.push(Row {
                recency: Some(choice),
                ..row("btbf_inferential_recency", bpi, rk, &r, Some(&b), true)
            });
        }
        rows.push(row("gbf", bpi, gk, &g, None, false));
        rows.push(row("gbf_inferential", bpi, gik, &gi, Some(&g), true));
        if let Some((bph, t)) = buffer {
            rows.push(row("buffer", bpi, bph, &t, None, true));
        }
    }
    Ok(Report {
        stream: stream.name.clone(),
        window: w,
        warm: warm as u64,
        queries,
        pos_neg_ratio: positives / (queries as f64 - positives).max(1.0),
        seed: args.seed,
        rows,
    })
}

fn print_table(r: &Report) {
    println!(
        "{}: w = {}, {} queries after {} warm-up, POS/NEG = {:.3}",
        r.stream, r.window, r.queries, r.warm, r.pos_neg_ratio
    );
    println!("filter                    bpi  k/bph  total_penalty  vs_prior  vs_standard        FP        FN  post_err  recency sketch");
    for row in &r.rows {
        println!(
            "{:<24} {:>4} {:>6} {:>14.0} {:>9.3} {:>12} {:>9} {:>9} {:>9}  {}",
            row.filter,
            row.bits_per_item,
            row.parameter,
            row.total_penalty,
            row.penalty_ratio,
            row.vs_standard.map_or("-".into(), |v| format!("{v:.3}")),
            row.false_positives,
            row.false_negatives,
            row.posterior_error
                .map_or("-".into(), |v| format!("{v:.4}")),
            row.recency.map_or(String::new(), |c| format!(
                "share {} H {} depth {} width {} ({} + {} bits)",
                c.share, c.period, c.depth, c.width, c.sketch_bits, c.btbf_bits
            )),
        );
    }
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
