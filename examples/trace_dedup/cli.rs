//! Command-line flags: ours first, the rest (`-w`, `-n`, `-p`, `-h`) passed through to timely.

use crate::error::JobError;
use chronobloom::trace::{parse_duration, KeyKind};
use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// Deduplicate a network trace within a time window and index its keys in time.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "trace_dedup",
    about = "Deduplicate a network trace within a time window and index its keys in time",
    after_help = "Timely flags pass through: -w N (threads per process), -n N (processes), \
                  -p I (this process), -h FILE (hostfile, one host:port per line)."
)]
pub struct Args {
    /// Captures (pcap or pcapng), or directories of them. One capture is read by one worker and
    /// its records exchanged; several are split across the workers of all processes. `-` reads
    /// standard input (`tcpdump -w - | trace_dedup --pcap -`); it, a pipe or a FIFO must be the
    /// only input, read once as it comes (not with `--verify` or `--out`, which read it again).
    #[arg(long, num_args = 1.., conflicts_with_all = ["csv", "synthetic"])]
    pub pcap: Vec<PathBuf>,
    /// CSV flow lists (`timestamp,src,dst,sport,dport,proto` with a header line), or
    /// directories of them; split like captures, `-` for standard input as with `--pcap`.
    #[arg(long, num_args = 1.., conflicts_with = "synthetic")]
    pub csv: Vec<PathBuf>,
    /// A synthetic trace of this many records (the default input is a synthetic trace too).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub synthetic: Option<u64>,
    /// Trace time the synthetic input spans.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub synthetic_span: Duration,
    /// A steady synthetic rate (no diurnal swing): with `--rate`, a stream for soaks.
    #[arg(long)]
    pub steady: bool,
    /// Which fields form the key.
    #[arg(long, default_value = "5tuple", value_parser = parse_key)]
    pub key: KeyKind,
    /// Dedup window: a record passes iff its key was not seen in the window before it.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub window: Duration,
    /// Target false positive rate of the dedup filters (a false positive drops a unique record).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    pub fpr: f64,
    /// Slack of the window's edge: a key last seen `window + slack` or more ago is forgotten,
    /// one seen `window` to `window + slack` ago may count either way. Default window / 16.
    /// `--exact-edge` has no slack.
    #[arg(long, value_parser = parse_duration, conflicts_with = "exact_edge")]
    pub slack: Option<Duration>,
    /// Keep the window's edge exact (slack 0) with tick filters sized once for
    /// `--expected-keys`, about 10 cells of 8–32 bits a key, instead of the compact state sized
    /// from the stream (25–30 bits per window key measured on large inputs).
    #[arg(long)]
    pub exact_edge: bool,
    /// Distinct keys expected in one window, over all workers: sizes the tick filters of
    /// `--exact-edge` (the false positive rate holds up to this many).
    #[arg(long, default_value_t = 1_000_000)]
    pub expected_keys: u64,
    /// Key shards of the dedup state (1 to 4096). `bykey` spreads whole shards over the
    /// workers, so more than 16 workers want more shards (a multiple of the worker count); each
    /// shard's filter has a smallest size, so more shards hold more bits on a small input.
    /// Decisions are the same for any number of workers at one shard count.
    #[arg(long, default_value_t = 16)]
    pub dedup_shards: u32,
    /// Run the exact baseline instead of the filters: a hash map of key digest → last tick,
    /// swept every window / 16, on the same reader (one thread; ignores -w/-n).
    #[arg(long)]
    pub exact: bool,
    /// `bykey`: records go to the worker owning their key (no duplicate passes); `local`: records
    /// stay put and workers share closed epochs (a duplicate seen by another worker in the open
    /// epoch may pass).
    #[arg(long, value_enum, default_value_t = Mode::Bykey)]
    pub mode: Mode,
    /// Epoch length: how often workers exchange filter deltas.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub epoch: Duration,
    /// Tick length: packet timestamps become ticks of this unit.
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub unit: Duration,
    /// Allowed lateness: records at most this far behind the latest timestamp are placed at the
    /// latest tick; later ones are counted and reported.
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub lateness: Duration,
    /// Temporal queries, `key,start,end` lines in ticks, answered from the index at the end.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Also compute the exact answers and report missed duplicates and false drops.
    #[arg(long)]
    pub verify: bool,
    /// Compute and print a digest of the merged temporal index (identical for any -w / -n; it
    /// rehashes every block an epoch changes, so it is off otherwise).
    #[arg(long)]
    pub digest: bool,
    /// Print one JSON object on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG of records/s, duplicate rate, filter memory and estimated FPR per epoch.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the records that passed as CSV (`timestamp,src,dst,sport,dport,proto`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the deduplicated capture: the input, byte for byte and as the job runs, without the
    /// dropped records (frames without IP are kept), in its format (`-`: standard output, the
    /// report then on standard error). One capture in (a file or `-`).
    #[arg(long, value_name = "FILE")]
    pub out_pcap: Option<PathBuf>,
    /// Count and skip malformed records instead of stopping.
    #[arg(long)]
    pub skip_bad: bool,
    /// Bits of the temporal index per partition.
    #[arg(long, default_value_t = 1 << 24)]
    pub index_bits: u64,
    /// Time resolution of the temporal index: answers are exact to whole units of it (a query's
    /// range is widened to them, never narrowed), and each halving adds a level, so an insert
    /// per record. Must divide an hour.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub index_resolution: Duration,
    /// Hourly index partitions (the index's horizon); records past it are deduplicated and
    /// counted (`records_not_indexed`), not indexed.
    #[arg(long, default_value_t = 24)]
    pub index_partitions: u64,
    /// Where the merged index lives: `sharded` (each worker owns whole levels and inserts only
    /// those) or `replicated` (every worker holds and inserts every level).
    #[arg(long, value_enum, default_value_t = IndexPlacement::Sharded)]
    pub index_placement: IndexPlacement,
    /// How the index lays out each level's bits: `blocked` (the default here: one cache line per
    /// level, 12 bytes a shipped record, ≈ 10% more false positives) or `standard` (the layout of
    /// the PBF papers' analysis, 20 bytes a shipped record).
    #[arg(long, value_enum, default_value_t = IndexLayout::Blocked)]
    pub index_layout: IndexLayout,
    /// When one worker reads a single capture alone: its part of the dedup shards, in percent
    /// of every other worker's (reading is its extra load; at 100, the default, an even part:
    /// the other worker holds every index level).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reader_share: u32,
    /// When one worker reads a single capture alone: its part of the index levels, in percent
    /// of every other worker's. At 0 it holds none, so no worker ships it the records it read
    /// and handed out.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub reader_index_share: u32,
    /// Epochs a reader may run ahead of the dataflow's output (bounds the records in flight; more
    /// hides the latency between processes). Default 64 in `bykey` (256 with several processes),
    /// 16 in `local`, where every epoch in flight also holds the other workers' keys; at least 9
    /// with several readers (a reader's time stands for up to 4 epochs, and the dataflow may need
    /// a reader 9 epochs past a time to finish it; a sole reader, moving every 64 epochs of a
    /// sparse input, goes by its own recent moves).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub in_flight: Option<u64>,
    /// Records a reader may have read in the epochs not yet through the dataflow (bounds the
    /// buffers of a dense input when a worker lags the reader), beyond the epochs a reader may
    /// always run ahead (see `--in-flight`).
    #[arg(long, default_value_t = 1 << 17, value_parser = clap::value_parser!(u64).range(1..))]
    pub in_flight_records: u64,
    /// Hash seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write checkpoints to this directory (shared by every process) and resume from the newest
    /// complete one found there: a job that stopped restarts where it was, with the same flags.
    #[arg(long)]
    pub checkpoint_dir: Option<PathBuf>,
    /// Trace time between checkpoints (rounded up to whole epochs).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub checkpoint_every: Duration,
    /// How long a process of a multi-process job waits for its peers to connect before it stops
    /// with a message (exit code 3).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub peer_timeout: Duration,
    /// Read at most this many records per second of wall time per process (0: as fast as
    /// possible): a steady stream for soaks and crash tests.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
}

/// Where the merged temporal index lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IndexPlacement {
    /// Each worker owns whole levels; queries go to every owner.
    Sharded,
    /// Every worker holds every level.
    Replicated,
}

/// Bit layout of the temporal index's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IndexLayout {
    /// k probes anywhere in a level (the analysis of the PBF papers).
    Standard,
    /// A key's k bits of a level in one 512-bit block: one cache line per level, ≈ 10% more false
    /// positives.
    Blocked,
}

/// Record routing for dedup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Exchange records by key.
    Bykey,
    /// Keep records on the worker that read them.
    Local,
}

fn parse_key(s: &str) -> Result<KeyKind, String> {
    s.parse()
        .map_err(|e: chronobloom::trace::TraceError| e.to_string())
}

/// Splits the command line into our arguments and timely's (`-w`, `-n`, `-p`, `-h` and their
/// long forms, each with its value).
pub fn split(argv: impl IntoIterator<Item = String>) -> (Vec<String>, Vec<String>) {
    const TIMELY: [&str; 8] = [
        "-w",
        "--workers",
        "-n",
        "--processes",
        "-p",
        "--process",
        "-h",
        "--hostfile",
    ];
    let mut ours = Vec::new();
    let mut timely = Vec::new();
    let mut it = argv.into_iter();
    if let Some(program) = it.next() {
        ours.push(program.clone());
        timely.push(program);
    }
    while let Some(a) = it.next() {
        let flag = a.split('=').next().unwrap_or(&a);
        if TIMELY.contains(&flag) {
            let has_value = a.contains('=');
            timely.push(a);
            if !has_value {
                if let Some(v) = it.next() {
                    timely.push(v);
                }
            }
        } else {
            ours.push(a);
        }
    }
    (ours, timely)
}

/// Checks timely's flags before timely reads them: `-w` and `-n` at least 1, `-p` below `-n`, and
/// a readable `-h` file (timely would run 0 workers as 1, and wait forever for process 5 of 2).
/// How timely's flags lay out the job: worker threads per process, processes, this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub threads: usize,
    pub processes: usize,
    pub process: usize,
}

impl Layout {
    /// Workers over all processes.
    pub fn workers(&self) -> usize {
        self.threads * self.processes
    }
}

/// The hostfile's addresses (or `no hostfile`), for messages about peers.
pub fn hosts_of(timely: &[String]) -> String {
    let mut it = timely.iter();
    while let Some(a) = it.next() {
        let file = match a.split_once('=') {
            Some(("-h" | "--hostfile", v)) => Some(v.to_string()),
            None if a == "-h" || a == "--hostfile" => it.next().cloned(),
            _ => None,
        };
        if let Some(f) = file {
            let hosts = std::fs::read_to_string(&f).unwrap_or_default();
            let list: Vec<&str> = hosts.lines().filter(|l| !l.trim().is_empty()).collect();
            return format!("hostfile {f}: {}", list.join(", "));
        }
    }
    "no hostfile: 127.0.0.1 from port 2101".into()
}

pub fn check_timely(timely: &[String]) -> Result<Layout, JobError> {
    let bad = |flag: &str, value: &str, expected: &str| JobError::Timely {
        flag: flag.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    };
    let count = |flag: &str, value: &str, expected: &str| {
        value
            .parse::<usize>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad(flag, value, expected))
    };
    let (mut threads, mut processes, mut process) = (1, 1, None);
    let mut it = timely.iter().skip(1);
    while let Some(a) = it.next() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) => (f, v),
            None => (a.as_str(), it.next().map_or("", String::as_str)),
        };
        match flag {
            "-w" | "--workers" => {
                threads = count(
                    flag,
                    value,
                    "a number of worker threads per process, at least 1",
                )?;
            }
            "-n" | "--processes" => {
                processes = count(flag, value, "a number of processes, at least 1")?;
            }
            "-p" | "--process" => {
                let p = value
                    .parse::<usize>()
                    .map_err(|_| bad(flag, value, "this process's index, from 0"))?;
                process = Some((flag, value, p));
            }
            "-h" | "--hostfile" => {
                std::fs::File::open(value).map_err(|source| JobError::Hostfile {
                    path: PathBuf::from(value),
                    source,
                })?;
            }
            _ => {}
        }
    }
    match process {
        Some((flag, value, p)) if p >= processes => Err(JobError::Timely {
            flag: flag.to_string(),
            value: value.to_string(),
            expected: format!(
                "a process index below -n {processes} (0 to {})",
                processes - 1
            ),
        }),
        _ => Ok(Layout {
            threads,
            processes,
            process: process.map_or(0, |(_, _, p)| p),
        }),
    }
}
