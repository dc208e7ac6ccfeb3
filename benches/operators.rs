//! Throughput of the temporal index with delta exchange and merge, and bytes moved per epoch by
//! delta exchange versus shuffling the raw records. Prints one JSON object per worker count.
//!
//! `cargo bench --bench operators` (u64 keys, T = 86,400 ticks, m = 5·10^7 bits, 4 hashes,
//! epochs of 60 ticks, 50 records per tick).

use chronobloom::operators::timely;
use chronobloom::operators::{IndexConfig, TemporalIndex};
use chronobloom_core::temporal::TimeRange;
use std::time::Instant;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const TICKS: u64 = 86_400;
const EPOCH: u64 = 60;
const PER_TICK: u64 = 50;
/// Bytes one raw record (u64 key, u64 tick) would cost when shuffled.
const RECORD_BYTES: u64 = 16;

fn key(tick: u64, i: u64) -> u64 {
    chronobloom_core::hash::mix64(tick * PER_TICK + i) % 10_000_000
}

fn main() {
    let cfg = IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(TICKS)
        .bits(50_000_000)
        .hashes(4)
        .build()
        .expect("valid configuration");
    for workers in [1usize, 2] {
        let cfg = cfg.clone();
        let start = Instant::now();
        let guards = timely::execute(timely::Config::process(workers), move |worker| {
            let (me, peers) = (worker.index() as u64, worker.peers() as u64);
            let probe = ProbeHandle::new();
            let sent = std::rc::Rc::new(std::cell::Cell::new(0u64));
            let sent2 = sent.clone();
            let mut r_in = worker.dataflow::<u64, _, _>(|scope| {
                let (r_in, records) = scope.new_input::<Vec<u64>>();
                let (_q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
                let out = records.temporal_index(queries, &cfg);
                out.stats
                    .inspect(move |s| sent2.set(sent2.get() + s.local.bytes_sent))
                    .probe_with(&probe);
                out.digests.probe_with(&probe);
                r_in
            });
            for t in 0..TICKS {
                for i in (0..PER_TICK).filter(|i| i % peers == me) {
                    r_in.send(key(t, i));
                }
                r_in.advance_to(t + 1);
                if (t + 1) % EPOCH == 0 {
                    worker.step_while(|| probe.less_than(r_in.time()));
                }
            }
            drop(r_in);
            worker.step_while(|| !probe.done());
            sent.get()
        })
        .expect("timely starts");
        let sent: u64 = guards.join().into_iter().flatten().sum();
        let secs = start.elapsed().as_secs_f64();
        let records = TICKS * PER_TICK;
        let epochs = TICKS / EPOCH;
        let shuffle = records * RECORD_BYTES * (workers as u64 - 1) / workers as u64;
        println!(
            "{{\"workers\":{workers},\"records\":{records},\"seconds\":{secs:.3},\
             \"records_per_sec_per_worker\":{:.0},\"delta_bytes_per_epoch\":{},\
             \"raw_shuffle_bytes_per_epoch\":{}}}",
            records as f64 / secs / workers as f64,
            sent / epochs,
            shuffle / epochs
        );
    }
}
