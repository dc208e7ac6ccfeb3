//! Evaluates the matrix Bloom filter (paper 003) against a standard Bloom filter and a hash map
//! on the same 2-tuples, at equal bits.
//!
//! ```text
//! cargo run --release --example matrix_eval -- [--dataset full-repeating,one-to-one,pcap] \
//!     [--pcap data/real.pcap] [--fpr 0.01] [--batches 1,4,16,64,256,1000] [--json]
//! ```
//!
//! Datasets (§V): `full-repeating`, the cross product of `--first` × `--second` random numbers;
//! `one-to-one`, `--pairs` pairs of random numbers with no repeat on either side; `pcap`, the
//! distinct (source, destination) address pairs of a capture.
//!
//! Bits: [`TupleStats::shape_for`] picks the layout for the dataset's statistics and `--fpr`; its
//! stored bits are the budget every filter gets: the Bloom filter (`k = ⌈(m/n) ln 2⌉`), the
//! maximum-adaptive matrix ([`MatrixShape::max_adaptive_bits`]), the minimum-storage matrix
//! ([`MatrixShape::min_storage_bits`], `j` classes when second components never repeat) and the
//! line-local matrix ([`MatrixShape::line_local_bits`]: classes of one cache line; Theorem 2's
//! square under 512 × 512 bits). The hash map (`HashMap<first, HashSet<second>>`) reports an estimate of its heap bits.
//!
//! False positives: `--queries` absent tuples, by default of new components on both sides (what
//! the formulas assume); with `--absent known`, of a first and a second component that both
//! occur, never together (new ones when the data has too few such pairs: full-repeating data has
//! none). `fpr_theory` is eq. 2 for the Bloom filter, Theorem 1 (Theorem 3 for a j-matrix) for the
//! minimum-storage matrix when second components never repeat, §IV-B's product for the
//! maximum-adaptive matrix on new components, and null where no formula applies; `fpr_exact` is
//! the minimum-storage matrix's rate without Theorem 1's independence approximation
//! ([`MatrixShape::fpr_exact`]) where it applies.
//!
//! Batch time per tuple, for each batch size: `key_fixed`, one first component with `B` second
//! components (its own first, then others), and `value_fixed`, one second component with `B`
//! first components (the double-side query); each over about `--volume` tuples. The Bloom filter
//! and the hash map answer tuple by tuple. Every inserted tuple is checked to be found; a false
//! negative stops the run with code 1. Bad arguments or an unreadable capture exit with code 2.

use chronobloom::core::bloom::{BloomFilter, Filter, FilterShape};
use chronobloom::core::hash::{mix64, Key};
use chronobloom::core::matrix::{MatrixBloom, MatrixLayout, MatrixShape, TupleStats};
use chronobloom::trace::{PcapTrace, SkipBad};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Dataset {
    /// The cross product of `--first` × `--second` random numbers.
    FullRepeating,
    /// `--pairs` random pairs, no repeat on either side.
    OneToOne,
    /// The distinct (source, destination) address pairs of `--pcap`.
    Pcap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Absent {
    /// Both components never occur in the data.
    New,
    /// A first and a second component that both occur, never together (new components when the
    /// data has too few such pairs, as full-repeating data has none).
    Known,
}

/// Evaluate the matrix Bloom filter against a Bloom filter and a hash map.
#[derive(Debug, Parser)]
struct Args {
    /// Datasets to evaluate.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "full-repeating,one-to-one,pcap"
    )]
    dataset: Vec<Dataset>,
    /// The capture for the `pcap` dataset.
    #[arg(long, default_value = "data/real.pcap")]
    pcap: PathBuf,
    /// Target false positive rate (sets the bit budget).
    #[arg(long, default_value_t = 0.01)]
    fpr: f64,
    /// Distinct first components of the full-repeating dataset.
    #[arg(long, default_value_t = 1_000)]
    first: u64,
    /// Distinct second components of the full-repeating dataset.
    #[arg(long, default_value_t = 200)]
    second: u64,
    /// Tuples of the one-to-one dataset.
    #[arg(long, default_value_t = 200_000)]
    pairs: u64,
    /// Absent tuples queried for the false positive rate.
    #[arg(long, default_value_t = 200_000)]
    queries: u64,
    /// Batch sizes.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256,1000")]
    batches: Vec<usize>,
    /// Tuples timed per structure, side and batch size.
    #[arg(long, default_value_t = 200_000)]
    volume: u64,
    /// Absent tuples for the false positive rate: of new components on both sides (what the
    /// theorems assume), or of known components never seen together.
    #[arg(long, value_enum, default_value = "new")]
    absent: Absent,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// One line of the result.
#[derive(Debug, Serialize)]
struct Row {
    structure: &'static str,
    dataset: &'static str,
    bits: u64,
    fpr: f64,
    fpr_theory: Option<f64>,
    fpr_exact: Option<f64>,
    queries: &'static str,
    side: &'static str,
    batch: usize,
    ns_per_tuple: f64,
}

/// A dataset: distinct tuples, and fresh components that never occur in it.
struct Tuples<A, B> {
    name: &'static str,
    tuples: Vec<(A, B)>,
    fresh_a: fn(u64) -> A,
    fresh_b: fn(u64) -> B,
}

/// The structures under test, behind one query interface.
enum Structure<'m, A, B> {
    Bloom(BloomFilter),
    Matrix(&'static str, MatrixBloom),
    Map(&'m HashMap<A, HashSet<B>>),
}

impl<A: Key + Hash + Eq, B: Key + Hash + Eq> Structure<'_, A, B> {
    fn name(&self) -> &'static str {
        match self {
            Structure::Bloom(_) => "bloom",
            Structure::Matrix(name, _) => name,
            Structure::Map(_) => "hashmap",
        }
    }

    fn contains(&self, a: &A, b: &B) -> bool {
        match self {
            Structure::Bloom(f) => f.contains(&(a, b)),
            Structure::Matrix(_, m) => m.contains(a, b),
            Structure::Map(m) => m.get(a).is_some_and(|s| s.contains(b)),
        }
    }

    /// Answers "which of `values` go with `a`?"; the count of trues.
    fn key_fixed(&self, a: &A, values: &[B]) -> usize {
        match self {
            Structure::Matrix(_, m) => m.contains_values(a, values).iter().filter(|&&x| x).count(),
            _ => values.iter().filter(|b| self.contains(a, b)).count(),
        }
    }

    /// Answers "which of `keys` go with `b`?"; the count of trues.
    fn value_fixed(&self, keys: &[A], b: &B) -> usize {
        match self {
            Structure::Matrix(_, m) => m.contains_keys(keys, b).iter().filter(|&&x| x).count(),
            _ => keys.iter().filter(|a| self.contains(a, b)).count(),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !(args.fpr > 0.0 && args.fpr < 1.0) || args.batches.contains(&0) {
        eprintln!("matrix_eval: --fpr must be in (0, 1) and batch sizes positive");
        return ExitCode::from(2);
    }
    let mut rows = Vec::new();
    for &d in &args.dataset {
        let result = match d {
            Dataset::FullRepeating => evaluate(&args, full_repeating(&args)),
            Dataset::OneToOne => evaluate(&args, one_to_one(&args)),
            Dataset::Pcap => match pcap_pairs(&args) {
                Ok(t) => evaluate(&args, t),
                Err(e) => {
                    eprintln!("matrix_eval: {e}");
                    return ExitCode::from(2);
                }
            },
        };
        match result {
            Ok(r) => rows.extend(r),
            Err(Failure::Config(e)) => {
                eprintln!("matrix_eval: {e}");
                return ExitCode::from(2);
            }
            Err(Failure::FalseNegative(what)) => {
                eprintln!("matrix_eval: false negative in {what}");
                return ExitCode::from(1);
            }
        }
    }
    if args.json {
        println!("{}", serde_json::json!({ "rows": rows }));
    } else {
        print_table(&rows);
    }
    ExitCode::SUCCESS
}

enum Failure {
    Config(chronobloom::Error),
    FalseNegative(&'static str),
}

fn full_repeating(args: &Args) -> Tuples<u64, u64> {
    let tuples = (0..args.first)
        .flat_map(|a| (0..args.second).map(move |b| (mix64(a), mix64(b ^ 0x5555))))
        .collect();
    Tuples {
        name: "full_repeating",
        tuples,
        fresh_a: |i| mix64(i + (1 << 40)),
        fresh_b: |i| mix64((i + (1 << 40)) ^ 0x5555),
    }
}

fn one_to_one(args: &Args) -> Tuples<u64, u64> {
    let tuples = (0..args.pairs)
        .map(|i| (mix64(i), mix64(i ^ 0xaaaa)))
        .collect();
    Tuples {
        name: "one_to_one",
        tuples,
        fresh_a: |i| mix64(i + (1 << 40)),
        fresh_b: |i| mix64((i + (1 << 40)) ^ 0xaaaa),
    }
}

/// The distinct (source, destination) pairs of the capture, in first-seen order; malformed
/// packets are skipped and counted on stderr.
fn pcap_pairs(args: &Args) -> Result<Tuples<IpAddr, IpAddr>, chronobloom::trace::TraceError> {
    let mut records = SkipBad::new(PcapTrace::open(&args.pcap)?);
    let mut seen = HashSet::new();
    let mut tuples = Vec::new();
    for r in records.by_ref() {
        let r = r?;
        if seen.insert((r.src, r.dst)) {
            tuples.push((r.src, r.dst));
        }
    }
    if records.skipped() > 0 {
        eprintln!(
            "matrix_eval: skipped {} malformed packets",
            records.skipped()
        );
    }
    // Fresh addresses from 240.0.0.0/4 (reserved, never routed).
    let fresh = |i: u64| IpAddr::V4(Ipv4Addr::from(0xf000_0000 | (i as u32 & 0x0fff_ffff)));
    Ok(Tuples {
        name: "pcap_src_dst",
        tuples,
        fresh_a: fresh,
        fresh_b: |i| IpAddr::V4(Ipv4Addr::from(0xf800_0000 | (i as u32 & 0x07ff_ffff))),
    })
}

fn evaluate<A, B>(args: &Args, data: Tuples<A, B>) -> Result<Vec<Row>, Failure>
where
    A: Key + Hash + Eq + Clone,
    B: Key + Hash + Eq + Clone,
{
    let n = data.tuples.len() as u64;
    let stats = TupleStats::measure(data.tuples.iter().cloned());
    let chosen = stats.shape_for(args.fpr).map_err(Failure::Config)?;
    let bits = chosen.stored_bits();
    eprintln!(
        "{}: {} tuples, {} first, {} second components; chosen {:?} ({} × {}, j = {}), {} bits",
        data.name,
        n,
        stats.first,
        stats.second,
        chosen.layout,
        chosen.rows,
        chosen.cols,
        chosen.classes,
        bits
    );
    let adaptive = match chosen.layout {
        MatrixLayout::MaximumAdaptive => chosen,
        MatrixLayout::MinimumStorage => {
            MatrixShape::max_adaptive_bits(stats.first, stats.second, bits)
                .map_err(Failure::Config)?
        }
    };
    let minimum = match chosen.layout {
        MatrixLayout::MinimumStorage => chosen,
        MatrixLayout::MaximumAdaptive => {
            MatrixShape::min_storage_bits(bits, n, stats.classes()).map_err(Failure::Config)?
        }
    };
    // Classes of one cache line; a budget under 512 × 512 bits gets Theorem 2's square.
    let lines = MatrixShape::line_local_bits(bits, n).map_err(Failure::Config)?;
    let bloom_shape = FilterShape::new(bits, FilterShape::optimal_hashes(bits, n, 16))
        .map_err(Failure::Config)?;

    let mut map: HashMap<A, HashSet<B>> = HashMap::new();
    for (a, b) in &data.tuples {
        map.entry(a.clone()).or_default().insert(b.clone());
    }
    let mut bloom = BloomFilter::from_shape(bloom_shape, 1).map_err(Failure::Config)?;
    let mut max = MatrixBloom::new(adaptive, 1).map_err(Failure::Config)?;
    let mut min = MatrixBloom::new(minimum, 1).map_err(Failure::Config)?;
    let mut local = MatrixBloom::new(lines, 1).map_err(Failure::Config)?;
    for (a, b) in &data.tuples {
        bloom.insert(&(a, b));
        max.insert(a, b);
        min.insert(a, b);
        local.insert(a, b);
    }
    let structures = [
        Structure::Bloom(bloom),
        Structure::Matrix("matrix_adaptive", max),
        Structure::Matrix("matrix_min_storage", min),
        Structure::Matrix("matrix_line_local", local),
        Structure::Map(&map),
    ];
    for s in &structures {
        if !data.tuples.iter().all(|(a, b)| s.contains(a, b)) {
            return Err(Failure::FalseNegative(s.name()));
        }
    }
    let (absent, kind) = absent_tuples(args, &data, &map);
    let (by_first, by_second) = sides(&data.tuples);

    // Accuracy and size, then time per tuple for every batch size and side.
    let mut measured = Vec::new();
    for s in &structures {
        let fp = absent.iter().filter(|(a, b)| s.contains(a, b)).count();
        let fpr = fp as f64 / absent.len().max(1) as f64;
        measured.push(match s {
            Structure::Bloom(_) => (bits, fpr, Some(bloom_shape.fpr(n as f64)), None),
            Structure::Matrix(_, m) => {
                let sh = m.shape();
                // Theorems 1 and 3 assume second components that never repeat; §IV-B's product
                // holds for new components whatever the data.
                let theory = match sh.layout {
                    MatrixLayout::MinimumStorage => stats.second_unique().then(|| sh.fpr(n as f64)),
                    MatrixLayout::MaximumAdaptive => (kind == "new")
                        .then(|| sh.fpr_adaptive(stats.first as f64, stats.second as f64)),
                };
                let per_first = n as f64 / stats.first as f64;
                let exact = (sh.layout == MatrixLayout::MinimumStorage && stats.second_unique())
                    .then(|| sh.fpr_exact(stats.first as f64, per_first))
                    .flatten();
                (m.memory_bits(), fpr, theory, exact)
            }
            Structure::Map(m) => (map_bits(m), fpr, Some(0.0), None),
        });
    }
    let mut rows = Vec::new();
    for &batch in &args.batches {
        let work = Batches::new(batch, args.volume, &by_first, &by_second);
        for (s, &(bits, fpr, fpr_theory, fpr_exact)) in structures.iter().zip(&measured) {
            for (side, ns) in [
                ("key_fixed", work.time_keys(s)),
                ("value_fixed", work.time_values(s)),
            ] {
                rows.push(Row {
                    structure: s.name(),
                    dataset: data.name,
                    bits,
                    fpr,
                    fpr_theory,
                    fpr_exact,
                    queries: kind,
                    side,
                    batch,
                    ns_per_tuple: ns,
                });
            }
        }
    }
    Ok(rows)
}

/// Absent tuples of known components when the data has enough of them, else of new ones.
fn absent_tuples<A, B>(
    args: &Args,
    data: &Tuples<A, B>,
    map: &HashMap<A, HashSet<B>>,
) -> (Vec<(A, B)>, &'static str)
where
    A: Key + Hash + Eq + Clone,
    B: Key + Hash + Eq + Clone,
{
    let t = &data.tuples;
    let len = t.len() as u64;
    let mut known = Vec::new();
    let tries = if args.absent == Absent::Known {
        args.queries * 20
    } else {
        0
    };
    for i in 0..tries {
        if known.len() as u64 == args.queries {
            break;
        }
        let a = &t[(mix64(i) % len) as usize].0;
        let b = &t[(mix64(i ^ 0x77) % len) as usize].1;
        if !map.get(a).is_some_and(|s| s.contains(b)) {
            known.push((a.clone(), b.clone()));
        }
    }
    if args.absent == Absent::Known && known.len() as u64 * 2 >= args.queries {
        return (known, "known");
    }
    let new = (0..args.queries)
        .map(|i| ((data.fresh_a)(i), (data.fresh_b)(mix64(i))))
        .collect();
    (new, "new")
}

/// Each first component with its second components, and each second component with its first
/// components, in first-seen order.
type BySide<X, Y> = Vec<(X, Vec<Y>)>;

fn sides<A: Hash + Eq + Clone, B: Hash + Eq + Clone>(
    tuples: &[(A, B)],
) -> (BySide<A, B>, BySide<B, A>) {
    fn group<X: Hash + Eq + Clone, Y: Clone>(pairs: impl Iterator<Item = (X, Y)>) -> BySide<X, Y> {
        let mut index = HashMap::new();
        let mut out: BySide<X, Y> = Vec::new();
        for (x, y) in pairs {
            let i = *index.entry(x.clone()).or_insert_with(|| {
                out.push((x, Vec::new()));
                out.len() - 1
            });
            out[i].1.push(y);
        }
        out
    }
    (
        group(tuples.iter().map(|(a, b)| (a.clone(), b.clone()))),
        group(tuples.iter().map(|(a, b)| (b.clone(), a.clone()))),
    )
}

/// Up to 256 prepared batches of one size sharing a side, run round-robin for about `volume`
/// tuples: a first component with its own second components (half the batch at most), then
/// second components of other tuples; and symmetrically for a second component.
struct Batches<A, B> {
    rounds: u64,
    batch: usize,
    keys: Vec<(A, Vec<B>)>,
    values: Vec<(Vec<A>, B)>,
}

impl<A: Key + Hash + Eq + Clone, B: Key + Hash + Eq + Clone> Batches<A, B> {
    fn new(batch: usize, volume: u64, by_first: &BySide<A, B>, by_second: &BySide<B, A>) -> Self {
        let rounds = (volume / batch as u64).max(1);
        let pick = |x: u64, len: usize| (mix64(x) % len as u64) as usize;
        let (nf, ns) = (by_first.len(), by_second.len());
        let keys = (0..rounds.min(256))
            .map(|r| {
                let (a, own) = &by_first[pick(r, nf)];
                let others =
                    (0..batch as u64).map(|i| by_second[pick(r * 7_919 + i, ns)].0.clone());
                let values = own
                    .iter()
                    .take(batch / 2)
                    .cloned()
                    .chain(others)
                    .take(batch);
                (a.clone(), values.collect())
            })
            .collect();
        let values = (0..rounds.min(256))
            .map(|r| {
                let (b, own) = &by_second[pick(r, ns)];
                let others = (0..batch as u64).map(|i| by_first[pick(r * 7_919 + i, nf)].0.clone());
                let keys = own
                    .iter()
                    .take(batch / 2)
                    .cloned()
                    .chain(others)
                    .take(batch);
                (keys.collect(), b.clone())
            })
            .collect();
        Batches {
            rounds,
            batch,
            keys,
            values,
        }
    }

    fn per_tuple(&self, start: Instant, hits: usize) -> f64 {
        black_box(hits);
        start.elapsed().as_nanos() as f64 / (self.rounds * self.batch as u64) as f64
    }

    fn time_keys(&self, s: &Structure<A, B>) -> f64 {
        let start = Instant::now();
        let hits = (0..self.rounds as usize)
            .map(|r| {
                let (a, values) = &self.keys[r % self.keys.len()];
                s.key_fixed(a, values)
            })
            .sum();
        self.per_tuple(start, hits)
    }

    fn time_values(&self, s: &Structure<A, B>) -> f64 {
        let start = Instant::now();
        let hits = (0..self.rounds as usize)
            .map(|r| {
                let (keys, b) = &self.values[r % self.values.len()];
                s.value_fixed(keys, b)
            })
            .sum();
        self.per_tuple(start, hits)
    }
}

/// An estimate of a hash map's heap bits: per entry its key and an empty set's header, per
/// value its bytes, with hashbrown's one control byte per slot and slots at 8/7 of the entries.
fn map_bits<A, B>(m: &HashMap<A, HashSet<B>>) -> u64 {
    let slot = |size: usize, cap: usize| (cap as u64) * (size as u64 + 1);
    let outer = slot(
        std::mem::size_of::<A>() + std::mem::size_of::<HashSet<B>>(),
        m.capacity(),
    );
    let inner: u64 = m
        .values()
        .map(|s| slot(std::mem::size_of::<B>(), s.capacity()))
        .sum();
    (outer + inner) * 8
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<15} {:<19} {:>11} {:>9} {:>9} {:>9} {:<6} {:<12} {:>6} {:>10}",
        "dataset",
        "structure",
        "bits",
        "fpr",
        "theory",
        "exact",
        "query",
        "side",
        "batch",
        "ns/tuple"
    );
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.5}"));
    for r in rows {
        println!(
            "{:<15} {:<19} {:>11} {:>9.5} {:>9} {:>9} {:<6} {:<12} {:>6} {:>10.1}",
            r.dataset,
            r.structure,
            r.bits,
            r.fpr,
            opt(r.fpr_theory),
            opt(r.fpr_exact),
            r.queries,
            r.side,
            r.batch,
            r.ns_per_tuple
        );
    }
}
