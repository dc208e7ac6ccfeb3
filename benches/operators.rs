//! Throughput of the temporal index with delta exchange and merge, and bytes moved per epoch by
//! delta exchange versus shuffling the raw records. Prints one JSON object per run.
//!
//! `cargo bench --bench operators [-- PER_TICK [TICKS] [RUN...]]` — synthetic: u64 keys, T = 86,400 ticks
//! (one partition), m = 5·10^7 bits, 4 hashes, epochs of 60 ticks, `PER_TICK` records per tick
//! (default 100) over the first `TICKS` ticks (default 86,400), for both placements, both level
//! layouts and 1 and 2 workers (digest off, plus one run per layout with it on); each `RUN` given
//! keeps only the runs whose `placement/layout/workers/digest=bool` name contains it and the probes
//! it names exactly (`memory_floor`, `core_insert`, `core_scaling`, `real`). Each worker generates its own share of every
//! tick (record i of tick t goes to worker i mod n) and runs at most `LAG` epochs ahead of the
//! slowest worker, so workers do not lock-step at every epoch. Real: `data/real.pcap` (fetch with
//! `scripts/fetch-traces.sh`), source addresses at 10 ms ticks, 2 workers, when the file exists.
//!
//! Probes without the dataflow, for what bounds it: the memory floor (18 random cache-line
//! read-modify-writes per record), the core PBF-2 insert per layout one key at a time and in
//! 1,000-key batches at one tick, the per-level hashing alone, and how this machine's cores scale
//! on independent CPU- and memory-bound threads.

use chronobloom::operators::timely;
use chronobloom::operators::{IndexConfig, Placement, TemporalIndex};
use chronobloom::trace::{FlowKey, KeyKind, PcapTrace, Ticker};
use chronobloom_core::bloom::Layout;
use chronobloom_core::temporal::TimeRange;
use std::time::{Duration, Instant};
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const HORIZON: u64 = 86_400;
const EPOCH: u64 = 60;
/// Epochs a worker's input may run ahead of the merged output.
const LAG: u64 = 4;

/// The workload: records per tick and ticks driven.
#[derive(Clone, Copy)]
struct Synthetic {
    per_tick: u64,
    ticks: u64,
}

impl Synthetic {
    fn key(&self, tick: u64, i: u64) -> u64 {
        chronobloom_core::hash::mix64(tick * self.per_tick + i) % 10_000_000
    }

    fn records(&self) -> u64 {
        self.per_tick * self.ticks
    }
}

fn config(placement: Placement, digest: bool, layout: Layout) -> IndexConfig {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(HORIZON)
        .bits(50_000_000)
        .hashes(4)
        .placement(placement)
        .digest(digest)
        .layout(layout)
        .build()
        .expect("valid configuration")
}

/// Runs the index with every worker feeding `feed(me, peers, tick, send)` for each tick of
/// `ticks` and returns the seconds taken and the delta bytes sent between workers.
fn run<K, F>(cfg: &IndexConfig, workers: usize, ticks: Vec<u64>, feed: F) -> (f64, u64)
where
    K: chronobloom_core::hash::Key + Clone + Send + Sync + 'static,
    F: Fn(usize, usize, u64, &mut dyn FnMut(K)) + Send + Sync + 'static,
{
    let cfg = cfg.clone();
    let (ticks, feed) = (std::sync::Arc::new(ticks), std::sync::Arc::new(feed));
    let start = Instant::now();
    let guards = timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let probe = ProbeHandle::new();
        let sent = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let sent2 = sent.clone();
        let mut r_in = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<K>>();
            let (_q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let out = records.temporal_index(queries, &cfg);
            out.stats
                .inspect(move |s| sent2.set(sent2.get() + s.local.bytes_sent))
                .probe_with(&probe);
            out.digests.probe_with(&probe);
            r_in
        });
        for &t in ticks.iter() {
            if t > *r_in.time() {
                let epoch_crossed = t / EPOCH > r_in.time() / EPOCH;
                r_in.advance_to(t);
                if epoch_crossed {
                    let behind = t.saturating_sub(LAG * EPOCH);
                    worker.step_while(|| probe.less_than(&behind));
                }
            }
            feed(me, peers, t, &mut |k| r_in.send(k));
        }
        drop(r_in);
        worker.step_while(|| !probe.done());
        sent.get()
    })
    .expect("timely starts");
    let sent: u64 = guards.join().into_iter().flatten().sum();
    (start.elapsed().as_secs_f64(), sent)
}

fn report(
    name: &str,
    cfg: &IndexConfig,
    workers: usize,
    n: u64,
    epochs: u64,
    raw: u64,
    r: (f64, u64),
) {
    let (secs, sent) = r;
    println!(
        "{{\"stream\":\"{name}\",\"placement\":\"{:?}\",\"layout\":\"{:?}\",\"digest\":{},\"workers\":{workers},\
         \"records\":{n},\"seconds\":{secs:.3},\"records_per_sec_per_worker\":{:.0},\
         \"delta_bytes_per_epoch\":{},\"raw_shuffle_bytes_per_epoch\":{}}}",
        cfg.placement(),
        cfg.layout(),
        cfg.digest(),
        n as f64 / secs / workers as f64,
        sent / epochs.max(1),
        raw * (workers as u64 - 1) / workers as u64 / epochs.max(1)
    );
}

fn main() {
    let (numbers, names): (Vec<String>, Vec<String>) = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .partition(|a| a.parse::<u64>().is_ok());
    let mut args = numbers.iter().map(|a| a.parse::<u64>());
    let w = Synthetic {
        per_tick: args.next().and_then(Result::ok).unwrap_or(100),
        ticks: args
            .next()
            .and_then(Result::ok)
            .unwrap_or(HORIZON)
            .min(HORIZON),
    };
    let n = w.records();
    // a raw record: u64 key and u64 tick
    let raw = n * 16;
    let epochs = w.ticks.div_ceil(EPOCH);
    for (placement, digest, workers, layout) in [
        (Placement::Replicated, true, 1, Layout::Standard),
        (Placement::Replicated, false, 1, Layout::Standard),
        (Placement::Sharded, false, 2, Layout::Standard),
        (Placement::Replicated, true, 1, Layout::Blocked),
        (Placement::Replicated, false, 1, Layout::Blocked),
        (Placement::Replicated, false, 2, Layout::Blocked),
        (Placement::Sharded, false, 1, Layout::Blocked),
        (Placement::Sharded, false, 2, Layout::Blocked),
    ] {
        let name = format!("{placement:?}/{layout:?}/{workers}/digest={digest}");
        if !names.is_empty() && !names.iter().any(|n| name.contains(n.as_str())) {
            continue;
        }
        let cfg = config(placement, digest, layout);
        let feed = move |me: usize, peers: usize, t: u64, send: &mut dyn FnMut(u64)| {
            for i in (me as u64..w.per_tick).step_by(peers) {
                send(w.key(t, i));
            }
        };
        let r = run(&cfg, workers, (0..w.ticks).collect(), feed);
        report("synthetic", &cfg, workers, n, epochs, raw, r);
    }
    let probe = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
    if probe("memory_floor") {
        memory_floor(w.records().min(4_000_000));
    }
    if probe("core_insert") {
        let keys = CoreKeys::new(3_000_000);
        core_insert(&keys, 50_000_000);
        // The same work on 62 KB of filter (in L2): what the insert costs without cache misses.
        core_insert(&keys, 500_000);
        level_hashing(&keys);
    }
    if probe("core_scaling") {
        core_scaling();
    }
    if !probe("real") {
        return;
    }
    match real_trace("data/real.pcap") {
        Ok(records) if !records.is_empty() => {
            let n = records.len() as u64;
            let raw: u64 = records.iter().map(|(_, k)| k.len() as u64 + 8).sum();
            let ticks = records.last().map_or(0, |r| r.0) + 1;
            let mut by_tick: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
            for (t, k) in records {
                by_tick.entry(t).or_default().push(k);
            }
            let by_tick = std::sync::Arc::new(by_tick);
            for placement in [Placement::Replicated, Placement::Sharded] {
                let cfg = config(placement, false, Layout::Standard);
                let keys = by_tick.clone();
                let feed = move |me: usize, peers: usize, t: u64, send: &mut dyn FnMut(String)| {
                    for k in keys.get(&t).into_iter().flatten().skip(me).step_by(peers) {
                        send(k.clone());
                    }
                };
                let r = run(&cfg, 2, by_tick.keys().copied().collect(), feed);
                report("real", &cfg, 2, n, ticks.div_ceil(EPOCH), raw, r);
            }
        }
        Ok(_) => eprintln!("data/real.pcap holds no records"),
        Err(e) => eprintln!("real trace skipped: {e}"),
    }
}

/// Source addresses of the trace at 10 ms ticks, below the horizon.
fn real_trace(path: &str) -> Result<Vec<(u64, String)>, Box<dyn std::error::Error>> {
    let mut ticker = Ticker::new(Duration::from_millis(10), Duration::from_millis(10))?;
    let mut out = Vec::new();
    for record in PcapTrace::open(path)? {
        let r = record?;
        let chronobloom::trace::Placement::Tick(t) = ticker.place(r.ts_nanos) else {
            continue;
        };
        if t >= HORIZON {
            break;
        }
        if let FlowKey::Src(a) = r.key(KeyKind::Src) {
            out.push((t, a.to_string()));
        }
    }
    Ok(out)
}

/// The memory floor of the index's insert on this machine: per record, 18 read-modify-writes of
/// a random word in a random 512-bit block of an array of m = 5·10^7 bits (one block per level,
/// what a blocked PBF-2 touches), with no hashing, dataflow or merge. No insert can beat it.
fn memory_floor(records: u64) {
    const LEVELS: u64 = 18;
    let mut words = vec![0u64; 50_000_000 / 64];
    let blocks = words.len() as u64 / 8;
    let per_level = blocks / LEVELS;
    let mix = chronobloom_core::hash::mix64;
    let start = Instant::now();
    for r in 0..records {
        for l in 0..LEVELS {
            let h = mix(r << 5 | l);
            let block = l * per_level + h % per_level;
            let w = (block * 8 + (h >> 61)) as usize;
            words[w] |= 1 << (h >> 55 & 63);
        }
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / records as f64;
    let checksum = words.iter().fold(0u64, |a, &b| a ^ b);
    println!(
        "{{\"stream\":\"memory_floor\",\"records\":{records},\"ns_per_record\":{ns:.1},\
         \"records_per_sec\":{:.0},\"checksum\":{checksum}}}",
        1e9 / ns
    );
}

/// Keys of the core probes: `keys` hashes, 1,000 per tick, spread over the horizon.
struct CoreKeys {
    hashes: Vec<chronobloom_core::hash::KeyHash>,
}

impl CoreKeys {
    const BATCH: usize = 1_000;

    fn new(keys: u64) -> Self {
        use chronobloom_core::hash::{mix64, KeyHash};
        let hashes = (0..keys)
            .map(|i| KeyHash::of(&(mix64(i) % 10_000_000), 1))
            .collect();
        CoreKeys { hashes }
    }

    /// The tick of key `i`.
    fn tick(&self, i: usize) -> u64 {
        let n = self.hashes.len() as u64;
        (i / Self::BATCH) as u64 * Self::BATCH as u64 * HORIZON / n
    }
}

/// The core PBF-2 insert (T = 86,400, m = `bits`, k = 4) per layout, one key at a time
/// ([`TemporalFilter::insert_hash`]) and per tick ([`Pbf2::insert_hashes`], without and with the
/// dirty-word tracking the index turns on).
fn core_insert(keys: &CoreKeys, bits: u64) {
    use chronobloom_core::temporal::{Allocation, Pbf2, TemporalFilter};
    let n = keys.hashes.len() as f64;
    let alloc = Allocation::uniform(18, bits, 4).expect("valid allocation");
    for layout in [Layout::Standard, Layout::Blocked] {
        let empty = Pbf2::with_layout(0, HORIZON, &alloc.for_layout(layout), 1, layout)
            .expect("valid PBF-2");
        let mut one = empty.clone();
        let start = Instant::now();
        for (i, &h) in keys.hashes.iter().enumerate() {
            one.insert_hash(h, keys.tick(i))
                .expect("tick below the horizon");
        }
        let single = start.elapsed().as_secs_f64() * 1e9 / n;
        let batched = |mut pbf: Pbf2| {
            let start = Instant::now();
            for (c, chunk) in keys.hashes.chunks(CoreKeys::BATCH).enumerate() {
                pbf.insert_hashes(chunk, keys.tick(c * CoreKeys::BATCH))
                    .expect("tick below the horizon");
            }
            (start.elapsed().as_secs_f64() * 1e9 / n, pbf)
        };
        let mut tracked = empty.clone();
        for level in 0..tracked.levels() {
            if let Some(f) = tracked.level_mut(level) {
                f.bits_mut().track_dirty();
            }
        }
        let (plain_ns, plain) = batched(empty);
        let (tracked_ns, tracked) = batched(tracked);
        assert!(
            one == plain && one == tracked,
            "batch and single inserts set the same bits"
        );
        println!(
            "{{\"stream\":\"core_insert\",\"layout\":\"{layout:?}\",\"bits\":{bits},\"keys\":{n},\
             \"ns_per_key_single\":{single:.1},\"ns_per_key_batched\":{plain_ns:.1},\
             \"ns_per_key_batched_dirty_tracked\":{tracked_ns:.1}}}"
        );
    }
}

/// The 18 levels' bucket hashing and reduction alone, no memory touched.
fn level_hashing(keys: &CoreKeys) {
    let start = Instant::now();
    let mut acc = 0u64;
    for (i, h) in keys.hashes.iter().enumerate() {
        for level in 0..18 {
            let d = h.at(keys.tick(i) >> level);
            acc = acc.wrapping_add((d.lo % 154_321) ^ d.hi);
        }
    }
    let n = keys.hashes.len();
    let ns = start.elapsed().as_secs_f64() * 1e9 / n as f64;
    println!(
        "{{\"stream\":\"level_hashing\",\"keys\":{n},\"ns_per_key\":{ns:.1},\"checksum\":{acc}}}"
    );
}

/// How much work two threads do against one in the same time on this machine, for independent
/// CPU-bound (hash chains) and memory-bound (random bit sets in 36 MB each) loops.
fn core_scaling() {
    use chronobloom_core::hash::mix64;
    fn cpu(n: u64) -> u64 {
        (0..n).fold(0, |a, i| mix64(a ^ i))
    }
    fn memory(n: u64) -> u64 {
        let mut v = vec![0u64; 36_000_000 / 8];
        for i in 0..n {
            let h = mix64(i);
            let w = (h % v.len() as u64) as usize;
            v[w] |= 1 << (h >> 58);
        }
        v.iter().fold(0, |a, b| a ^ b)
    }
    let run = |threads: usize, f: fn(u64) -> u64, n: u64| {
        let start = Instant::now();
        let handles: Vec<_> = (0..threads)
            .map(|_| std::thread::spawn(move || f(n)))
            .collect();
        for h in handles {
            std::hint::black_box(h.join().expect("probe thread"));
        }
        start.elapsed().as_secs_f64()
    };
    for (name, f, n) in [
        ("cpu", cpu as fn(u64) -> u64, 200_000_000),
        ("memory", memory as fn(u64) -> u64, 30_000_000),
    ] {
        let (one, two) = (run(1, f, n), run(2, f, n));
        println!(
            "{{\"stream\":\"core_scaling\",\"bound\":\"{name}\",\"two_threads_vs_one\":{:.2}}}",
            2.0 * one / two
        );
    }
}
