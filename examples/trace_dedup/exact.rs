//! `--exact`: what a user would write instead of filters — a hash map from a 128-bit digest of
//! each key to the last tick it was seen, swept every window / 16, on the same reader. A record
//! passes iff its key was not seen in the window before it (same-tick repeats: the first passes).
//! With `--out-pcap` it writes each passed record's frame as it decides it.

use crate::error::JobError;
use crate::interrupt;
use crate::pcap_out::PcapOut;
use crate::source::Plan;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// What the exact run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exact {
    pub records: u64,
    pub passed: u64,
    /// The most entries the map held.
    pub peak_keys: u64,
    /// Bytes the map's table held at its largest (capacity × entry size).
    pub peak_map_bytes: u64,
    pub seconds: f64,
    pub late: u64,
    pub bad: u64,
    pub not_ip: u64,
    /// Whether an interrupt stopped the reader before the end of the input.
    pub interrupted: bool,
    /// Packets written to `--out-pcap`.
    pub out_pcap_packets: Option<u64>,
}

/// Runs the exact dedup over the whole input (up to an interrupt) in one thread, writing the
/// passed records' frames to `out_pcap` when given.
pub fn run(plan: &Plan, window: u64, out_pcap: Option<&Path>) -> Result<Exact, JobError> {
    let start = Instant::now();
    let sweep_every = (window / 16).max(1);
    let mut last: HashMap<u128, u64> = HashMap::new();
    let mut out = Exact::default();
    let mut next_sweep = sweep_every;
    let mut reader = plan.reader(0, 1, None);
    let mut pcap: Option<PcapOut> = None;
    while let Some(rec) = reader.next_hashed(plan.seed) {
        if interrupt::requested() {
            out.interrupted = true;
            break;
        }
        let rec = rec?;
        if rec.tick >= next_sweep {
            last.retain(|_, &mut t| t + window > rec.tick);
            next_sweep = rec.tick + sweep_every;
        }
        let h = rec.digest;
        let digest = u128::from(h.hi) << 64 | u128::from(h.lo);
        out.records += 1;
        let passed = !matches!(last.insert(digest, rec.tick), Some(t) if t + window > rec.tick);
        out.passed += u64::from(passed);
        if let Some(path) = out_pcap {
            let o = match pcap.as_mut() {
                Some(o) => o,
                None => pcap.insert(PcapOut::create(path)?),
            };
            if let Some(kept) = reader.kept() {
                o.write(kept, passed)?;
            }
        }
        out.peak_keys = out.peak_keys.max(last.len() as u64);
        let entry = std::mem::size_of::<(u128, u64)>() as u64 + 1;
        out.peak_map_bytes = out.peak_map_bytes.max(last.capacity() as u64 * entry);
    }
    let t = reader.tally();
    (out.late, out.bad, out.not_ip) = (t.late, t.bad, t.not_ip);
    if let Some(o) = pcap.as_mut() {
        o.write_tail(reader.tail())?;
    }
    out.out_pcap_packets = pcap.map(PcapOut::finish).transpose()?;
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}
