//! The input: a capture, a CSV flow list, or the synthetic trace, read into ticked records.

use crate::cli::Args;
use chronobloom::synth::{Synth, SynthConfig};
use chronobloom::trace::{
    CsvTrace, FlowKey, FlowRecord, PcapTrace, Placement, SkipBad, Ticker, TraceError,
};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Records of the embedded default input.
pub const DEFAULT_RECORDS: u64 = 2_000_000;

/// One record, placed in time.
#[derive(Debug, Clone, Copy)]
pub struct Rec {
    /// Position in the input.
    pub seq: u64,
    /// Tick (multiple of the unit since the first record).
    pub tick: u64,
    /// The dedup and index key.
    pub key: FlowKey,
    /// The flow the key came from.
    pub flow: FlowRecord,
}

/// The loaded input and what was left out.
pub struct Input {
    /// `pcap FILE`, `csv FILE`, `synthetic N` or `default synthetic N`.
    pub name: String,
    pub records: Vec<Rec>,
    /// Records beyond the allowed lateness: counted, reported, not deduplicated.
    pub late: u64,
    /// Malformed records skipped under `--skip-bad`.
    pub bad: u64,
    /// Frames without IP (ARP, ...).
    pub not_ip: u64,
}

/// Reads the input named by the flags: `--pcap`, `--csv`, `--synthetic`, or the default.
pub fn load(args: &Args) -> Result<Input, Box<dyn std::error::Error>> {
    let mut ticker = Ticker::new(args.unit, args.lateness)?;
    let (name, flows, bad, not_ip): (String, Vec<FlowRecord>, u64, u64) =
        if let Some(p) = &args.pcap {
            let (flows, bad, stats) = read(PcapTrace::open(p)?, args.skip_bad, |t| t.stats())?;
            (format!("pcap {}", p.display()), flows, bad, stats.not_ip)
        } else if let Some(p) = &args.csv {
            let (flows, bad, _) = read(CsvTrace::open(p)?, args.skip_bad, |t| t.stats())?;
            (format!("csv {}", p.display()), flows, bad, 0)
        } else {
            let n = args.synthetic.unwrap_or(DEFAULT_RECORDS);
            let label = if args.synthetic.is_some() {
                "synthetic"
            } else {
                "default synthetic"
            };
            (format!("{label} {n}"), synthetic(n, args.seed)?, 0, 0)
        };
    let mut records = Vec::with_capacity(flows.len());
    let mut late = 0;
    for (seq, flow) in flows.into_iter().enumerate() {
        match ticker.place(flow.ts_nanos) {
            Placement::Tick(tick) => records.push(Rec {
                seq: seq as u64,
                tick,
                key: flow.key(args.key),
                flow,
            }),
            Placement::Late { .. } => late += 1,
        }
    }
    Ok(Input {
        name,
        records,
        late,
        bad,
        not_ip,
    })
}

/// Reads every record; with `skip_bad`, malformed ones are counted instead of stopping.
fn read<I, S>(
    trace: I,
    skip_bad: bool,
    stats: impl Fn(&I) -> S,
) -> Result<(Vec<FlowRecord>, u64, S), TraceError>
where
    I: Iterator<Item = Result<FlowRecord, TraceError>>,
{
    if skip_bad {
        let mut it = SkipBad::new(trace);
        let flows = it.by_ref().collect::<Result<Vec<_>, _>>()?;
        let s = stats(it.inner());
        Ok((flows, it.skipped(), s))
    } else {
        let mut trace = trace;
        let flows = trace.by_ref().collect::<Result<Vec<_>, _>>()?;
        let s = stats(&trace);
        Ok((flows, 0, s))
    }
}

/// The synthetic trace: one hour of traffic in milliseconds with a diurnal rate compressed into
/// the hour, 200,000 clients of Zipf popularity talking to 7 servers in sessions of bursty repeats
/// (mean 8 packets, 5 s apart), from [`chronobloom::synth`].
pub fn synthetic(records: u64, seed: u64) -> chronobloom::Result<Vec<FlowRecord>> {
    let span_ms = 3_600_000;
    let cfg = SynthConfig {
        records,
        span: span_ms,
        day: span_ms,
        clients: 200_000,
        session_gap: 5_000.0,
        seed: seed.wrapping_add(1),
        ..SynthConfig::default()
    };
    Ok(Synth::new(cfg)?
        .map(|ev| {
            let c = ev.client as u32;
            FlowRecord {
                ts_nanos: ev.tick * Duration::from_millis(1).as_nanos() as u64,
                src: IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | c)),
                dst: IpAddr::V4(Ipv4Addr::new(192, 0, 2, (c % 7) as u8 + 1)),
                sport: 1024 + (c % 60_000) as u16,
                dport: 443,
                proto: 6,
            }
        })
        .collect())
}
