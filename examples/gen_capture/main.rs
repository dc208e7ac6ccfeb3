//! Writes a deterministic synthetic packet capture: a classic pcap file (nanosecond timestamps,
//! little-endian, `LINKTYPE_ETHERNET`) of exactly `--packets` frames, the input of the
//! end-to-end benchmark (`scripts/bench-e2e.sh`, `trace_dedup --pcap`).
//!
//! ```text
//! cargo run --release --example gen_capture -- --out target/bench-e2e/capture.pcap \
//!     --packets 4000000 --seconds 120 --flows-per-sec 10000 --hosts 200000 --json
//! ```
//!
//! The traffic model:
//! - flows arrive as a Poisson process at `--flows-per-sec`; the capture holds exactly
//!   `--packets` frames and spans about `--seconds` (flows keep arriving until the count is
//!   reached, and flows still open then are cut off, as in a real capture);
//! - a flow's size in packets is heavy-tailed: `ceil(X)` of a Pareto `X` with shape `--alpha`,
//!   capped at `--max-flow`, whose scale is chosen so that the mean size makes the flows arriving
//!   in `--seconds` carry about `--packets` packets (when that mean would be below 2 packets,
//!   the flow rate is lowered instead, with a note on stderr);
//! - the gaps between a flow's packets are exponential with a per-flow mean drawn log-uniformly
//!   between 100 µs and 2 s (at most 60 s per flow in all, 50 ms between DNS packets), so flows
//!   last from nothing (one packet) to tens of seconds;
//! - client and server hosts are drawn Zipf(`--zipf`) from `--hosts` hosts (popular clients and
//!   popular servers are different hosts), with private IPv4 addresses (10.0.0.0/8 and
//!   192.168.0.0/16) or, for a `--ipv6-share` of the flows, ULA IPv6 addresses in fd00::/8;
//! - clients use an ephemeral port (1024–65535), servers a popular port (443, 80, 53/UDP, 22,
//!   443/UDP, 123/UDP, …; DNS and NTP flows longer than 8 packets become HTTPS); a flow's packets
//!   go either way (client to server or back);
//! - a `--non-ip-share` of the frames are ARP requests and replies, interleaved.
//!
//! Frames carry minimal, valid headers (Ethernet, IPv4 or IPv6, TCP or UDP, with correct lengths
//! and checksums) and no payload. All randomness is SplitMix64 over a seeded state, so the same
//! flags give the same bytes on every machine. Memory is bounded by the open flows (a heap keyed
//! by each flow's next packet time) and the host popularity table, whatever `--packets` is.

mod flow;
mod frame;
mod model;

use clap::Parser;
use flow::Generator;
use model::Model;
use pcap_file::pcap::{PcapHeader, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    about = "Generate a deterministic synthetic pcap capture (Ethernet, IPv4/IPv6, TCP/UDP, ARP)"
)]
struct Args {
    /// The pcap file to write.
    #[arg(long)]
    out: PathBuf,
    /// Number of frames in the capture (IP packets and non-IP frames).
    #[arg(long, default_value_t = 4_000_000)]
    packets: u64,
    /// Time span of the capture in seconds (approximate; the frame count is exact).
    #[arg(long, default_value_t = 120.0)]
    seconds: f64,
    /// Mean flow arrival rate (Poisson), flows per second.
    #[arg(long, default_value_t = 10_000.0)]
    flows_per_sec: f64,
    /// Number of distinct hosts.
    #[arg(long, default_value_t = 200_000)]
    hosts: u32,
    /// Zipf exponent of host popularity (0 = uniform).
    #[arg(long, default_value_t = 1.1)]
    zipf: f64,
    /// Share of the flows that use IPv6.
    #[arg(long, default_value_t = 0.1)]
    ipv6_share: f64,
    /// Share of the frames that are ARP (not IP).
    #[arg(long, default_value_t = 0.01)]
    non_ip_share: f64,
    /// Pareto shape of the flow sizes.
    #[arg(long, default_value_t = 1.2)]
    alpha: f64,
    /// Largest flow, in packets.
    #[arg(long, default_value_t = 100_000)]
    max_flow: u64,
    /// The seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print a one-line JSON summary on stdout.
    #[arg(long)]
    json: bool,
}

/// The capture's first second, since the epoch (2023-11-14).
const BASE_SECS: u64 = 1_700_000_000;
/// The largest frame written: Ethernet (14) + IPv6 (40) + TCP (20).
const SNAPLEN: u32 = 128;

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(summary) => {
            if args.json {
                println!("{}", summary.json());
            } else {
                summary.print(&args.out);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_capture: {e}");
            ExitCode::from(2)
        }
    }
}

type BoxError = Box<dyn std::error::Error>;

/// What was written.
#[derive(Debug, Default)]
struct Summary {
    packets: u64,
    flows: u64,
    ipv4_packets: u64,
    ipv6_packets: u64,
    non_ip_frames: u64,
    bytes: u64,
    span_seconds: f64,
    max_open_flows: usize,
    mean_flow_size: f64,
    flows_per_sec: f64,
    seconds: f64,
}

impl Summary {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "packets": self.packets,
            "flows": self.flows,
            "ipv4_packets": self.ipv4_packets,
            "ipv6_packets": self.ipv6_packets,
            "non_ip_frames": self.non_ip_frames,
            "bytes": self.bytes,
            "span_seconds": self.span_seconds,
            "max_open_flows": self.max_open_flows,
            "mean_flow_size": self.mean_flow_size,
            "flows_per_sec": self.flows_per_sec,
            "seconds": self.seconds,
        })
    }

    fn print(&self, out: &std::path::Path) {
        println!(
            "gen_capture: {} frames ({} IPv4, {} IPv6, {} ARP) from {} flows over {:.1} s, \
             {} bytes in {} ({:.2} s; at most {} open flows; flow size mean {:.2})",
            self.packets,
            self.ipv4_packets,
            self.ipv6_packets,
            self.non_ip_frames,
            self.flows,
            self.span_seconds,
            self.bytes,
            out.display(),
            self.seconds,
            self.max_open_flows,
            self.mean_flow_size,
        );
    }
}

fn check(args: &Args) -> Result<(), String> {
    let share = |v: f64| (0.0..=1.0).contains(&v);
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err("--seconds must be positive".into());
    }
    if !(args.flows_per_sec > 0.0 && args.flows_per_sec.is_finite()) {
        return Err("--flows-per-sec must be positive".into());
    }
    if !(2..=1 << 24).contains(&args.hosts) {
        return Err("--hosts must be between 2 and 2^24".into());
    }
    if !(args.zipf >= 0.0 && args.zipf.is_finite()) {
        return Err("--zipf must be >= 0".into());
    }
    if !share(args.ipv6_share) || !(0.0..1.0).contains(&args.non_ip_share) {
        return Err("need 0 <= --ipv6-share <= 1 and 0 <= --non-ip-share < 1".into());
    }
    if !(args.alpha > 0.0 && args.alpha.is_finite()) || args.max_flow == 0 {
        return Err("--alpha and --max-flow must be positive".into());
    }
    if (BASE_SECS as f64 + args.seconds * 2.0) >= f64::from(u32::MAX) {
        return Err("--seconds is too large for pcap timestamps".into());
    }
    Ok(())
}

fn run(args: &Args) -> Result<Summary, BoxError> {
    check(args)?;
    let started = Instant::now();
    let model = Model::new(args)?;
    let file = File::create(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let header = PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen: SNAPLEN,
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::NanoSecond,
        endianness: Endianness::Little,
    };
    let mut writer = PcapWriter::with_header(BufWriter::with_capacity(1 << 20, file), header)
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    let mut summary = Generator::new(args, &model).write(args.packets, &mut writer)?;
    writer
        .into_writer()
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    summary.bytes += 24;
    summary.mean_flow_size = model.mean_size;
    summary.flows_per_sec = model.flows_per_sec;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}
