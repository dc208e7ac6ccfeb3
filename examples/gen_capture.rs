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

use chronobloom::core::hash::mix64;
use chronobloom::synth::splitmix;
use clap::Parser;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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
/// Bounds of a flow's mean gap between packets, in seconds (drawn log-uniformly).
const GAP_SECS: (f64, f64) = (1e-4, 2.0);
/// The smallest mean flow size: with fewer packets than this per flow, the flow rate is lowered.
const MIN_MEAN_SIZE: f64 = 2.0;
/// A flow's expected duration is at most this long, in seconds.
const MAX_FLOW_SECS: f64 = 60.0;
/// DNS exchanges are quick: the mean gap of a port-53 flow is at most this, in seconds.
const DNS_GAP_SECS: f64 = 0.05;
/// The largest frame written: Ethernet (14) + IPv6 (40) + TCP (20).
const SNAPLEN: u32 = 128;

const TCP: u8 = 6;
const UDP: u8 = 17;

/// Services whose flows have at most [`SHORT_SERVICE_MAX`] packets (longer ones go to 443/TCP).
const SHORT_SERVICES: [u16; 2] = [53, 123];
const SHORT_SERVICE_MAX: u64 = 8;

/// Server ports: (port, protocol, weight).
const SERVICES: [(u16, u8, u32); 13] = [
    (443, TCP, 40),
    (80, TCP, 14),
    (53, UDP, 15),
    (443, UDP, 8),
    (22, TCP, 3),
    (123, UDP, 3),
    (8080, TCP, 3),
    (25, TCP, 2),
    (993, TCP, 2),
    (3306, TCP, 2),
    (3478, UDP, 2),
    (5432, TCP, 1),
    (853, TCP, 1),
];

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

/// The counter-free part of the model: popularity table, flow-size scale, service table.
struct Model {
    /// Cumulative Zipf probabilities of host ranks `0..hosts`.
    zipf_cdf: Vec<f64>,
    /// Pareto scale of the flow sizes.
    scale: f64,
    /// Expected flow size in packets.
    mean_size: f64,
    /// Mean time between flow arrivals, in nanoseconds.
    arrival_gap_ns: f64,
    /// The flow arrival rate used (below `--flows-per-sec` if that would make flows too small).
    flows_per_sec: f64,
    /// Cumulative weights of [`SERVICES`].
    service_cdf: Vec<u32>,
}

impl Model {
    fn new(args: &Args) -> Result<Self, BoxError> {
        let mut acc = 0.0;
        let mut zipf_cdf: Vec<f64> = (1..=args.hosts)
            .map(|r| {
                acc += f64::from(r).powf(-args.zipf);
                acc
            })
            .collect();
        for c in &mut zipf_cdf {
            *c /= acc;
        }
        let ip_packets = args.packets as f64 * (1.0 - args.non_ip_share);
        let mut flows_per_sec = args.flows_per_sec;
        let mut target = ip_packets / (flows_per_sec * args.seconds);
        if target < MIN_MEAN_SIZE {
            // Too few packets for this many flows: fewer flows, not single-packet ones.
            flows_per_sec = ip_packets / (MIN_MEAN_SIZE * args.seconds);
            target = MIN_MEAN_SIZE;
            eprintln!(
                "gen_capture: {} packets in {} s at {} flows/s would make flows of {:.2} \
                 packets on average; using {:.1} flows/s (flows of {} packets on average)",
                args.packets,
                args.seconds,
                args.flows_per_sec,
                ip_packets / (args.flows_per_sec * args.seconds),
                flows_per_sec,
                MIN_MEAN_SIZE
            );
        }
        let (scale, mean_size) = pareto_scale(target, args.alpha, args.max_flow)?;
        let service_cdf = SERVICES
            .iter()
            .scan(0, |acc, s| {
                *acc += s.2;
                Some(*acc)
            })
            .collect();
        Ok(Model {
            zipf_cdf,
            scale,
            mean_size,
            arrival_gap_ns: 1e9 / flows_per_sec.max(1e-9),
            flows_per_sec,
            service_cdf,
        })
    }
}

/// Expected `min(max(ceil(X), 1), cap)` for `X` Pareto with this scale and shape.
fn mean_size(scale: f64, alpha: f64, cap: u64) -> f64 {
    // E[S] = sum over k >= 1 of P(S >= k) = 1 + sum over k in 1..cap of P(X > k).
    1.0 + (1..cap)
        .map(|k| (scale / k as f64).powf(alpha).min(1.0))
        .sum::<f64>()
}

/// The Pareto scale whose capped flow sizes have mean `target` (> 1; bisection), and that mean.
fn pareto_scale(target: f64, alpha: f64, cap: u64) -> Result<(f64, f64), String> {
    if target >= cap as f64 * 0.99 {
        return Err(format!(
            "a mean flow size of {target:.0} packets is too close to --max-flow {cap}: \
             raise --flows-per-sec or --seconds"
        ));
    }
    let (mut lo, mut hi) = (0.0, cap as f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if mean_size(mid, alpha, cap) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((hi, mean_size(hi, alpha, cap)))
}

/// One open flow, ordered by its next packet time (then by id, for determinism).
#[derive(Debug, Clone, Copy)]
struct Flow {
    next_ns: u64,
    id: u64,
    left: u64,
    sent: u32,
    gap_ns: f64,
    client: u32,
    server: u32,
    cport: u16,
    sport: u16,
    proto: u8,
    v6: bool,
    isn: u32,
}

impl PartialEq for Flow {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Flow {}

impl PartialOrd for Flow {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Flow {
    /// Reversed, so that the max-heap pops the earliest flow first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.next_ns, other.id).cmp(&(self.next_ns, self.id))
    }
}

struct Generator<'a> {
    model: &'a Model,
    hosts: u32,
    ipv6_share: f64,
    non_ip_share: f64,
    alpha: f64,
    max_flow: u64,
    rng: u64,
    /// Host address permutation key.
    key: u64,
    open: BinaryHeap<Flow>,
    next_arrival_ns: f64,
    flows: u64,
    ip_id: u16,
    frame: Vec<u8>,
}

impl<'a> Generator<'a> {
    fn new(args: &Args, model: &'a Model) -> Self {
        Generator {
            model,
            hosts: args.hosts,
            ipv6_share: args.ipv6_share,
            non_ip_share: args.non_ip_share,
            alpha: args.alpha,
            max_flow: args.max_flow,
            rng: mix64(args.seed ^ 0x6361_7074_7572_6531),
            key: mix64(args.seed.wrapping_add(0x686f_7374_7321)),
            open: BinaryHeap::new(),
            next_arrival_ns: 0.0,
            flows: 0,
            ip_id: 0,
            frame: Vec::with_capacity(SNAPLEN as usize),
        }
    }

    fn u64(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }

    /// Uniform in `[0, 1)`.
    fn uniform(&mut self) -> f64 {
        (self.u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// A host rank drawn by popularity.
    fn zipf(&mut self) -> u32 {
        let u = self.uniform();
        let rank = self.model.zipf_cdf.partition_point(|&c| c < u);
        (rank as u32).min(self.hosts - 1)
    }

    fn flow_size(&mut self) -> u64 {
        let u = 1.0 - self.uniform();
        let x = self.model.scale * u.powf(-1.0 / self.alpha);
        (x.ceil() as u64).clamp(1, self.max_flow)
    }

    /// Opens the flow arriving next.
    fn open_flow(&mut self) {
        let start = self.next_arrival_ns as u64;
        self.next_arrival_ns += self.exponential(self.model.arrival_gap_ns);
        let client = self.zipf();
        // Popular servers are other hosts than popular clients.
        let mut server = self.hosts - 1 - self.zipf();
        if server == client {
            server = (server + 1) % self.hosts;
        }
        let size = self.flow_size();
        let w = (self.u64() % u64::from(self.model.service_cdf[SERVICES.len() - 1])) as u32;
        let (mut sport, mut proto, _) =
            SERVICES[self.model.service_cdf.partition_point(|&c| c <= w)];
        if size > SHORT_SERVICE_MAX && SHORT_SERVICES.contains(&sport) {
            // DNS and NTP exchanges are short: a long flow is HTTPS instead.
            (sport, proto) = (443, TCP);
        }
        let cport = 1024 + (self.u64() % (65536 - 1024)) as u16;
        let v6 = self.uniform() < self.ipv6_share;
        let (lo, hi) = (GAP_SECS.0.ln(), GAP_SECS.1.ln());
        let mut gap = (lo + self.uniform() * (hi - lo)).exp();
        gap = gap.min(MAX_FLOW_SECS / size as f64);
        if sport == 53 {
            gap = gap.min(DNS_GAP_SECS);
        }
        let isn = self.u64() as u32;
        self.flows += 1;
        self.open.push(Flow {
            next_ns: start,
            id: self.flows,
            left: size,
            sent: 0,
            gap_ns: gap * 1e9,
            client,
            server,
            cport,
            sport,
            proto,
            v6,
            isn,
        });
    }

    /// Writes `frames` frames in time order.
    fn write<W: Write>(
        &mut self,
        frames: u64,
        writer: &mut PcapWriter<W>,
    ) -> Result<Summary, BoxError> {
        let mut s = Summary::default();
        let mut first_ns = None;
        let mut last_ns = 0;
        while s.packets < frames {
            // Open every flow that arrives before the earliest pending packet.
            while self
                .open
                .peek()
                .is_none_or(|f| self.next_arrival_ns as u64 <= f.next_ns)
            {
                self.open_flow();
            }
            s.max_open_flows = s.max_open_flows.max(self.open.len());
            let Some(mut flow) = self.open.pop() else {
                break;
            };
            let ts = flow.next_ns;
            if self.uniform() < self.non_ip_share {
                self.arp();
                self.open.push(flow);
                s.non_ip_frames += 1;
            } else {
                self.packet(&mut flow);
                if flow.v6 {
                    s.ipv6_packets += 1;
                } else {
                    s.ipv4_packets += 1;
                }
                flow.sent += 1;
                flow.left -= 1;
                if flow.left > 0 {
                    flow.next_ns += self.exponential(flow.gap_ns) as u64;
                    self.open.push(flow);
                }
            }
            let time = Duration::from_nanos(BASE_SECS * 1_000_000_000 + ts);
            let len = self.frame.len() as u32;
            s.bytes += writer
                .write_packet(&PcapPacket::new(time, len, &self.frame))
                .map_err(|e| format!("cannot write packet {}: {e}", s.packets))?
                as u64;
            s.packets += 1;
            first_ns.get_or_insert(ts);
            last_ns = ts;
        }
        s.flows = self.flows;
        s.span_seconds = (last_ns - first_ns.unwrap_or(0)) as f64 / 1e9;
        Ok(s)
    }

    /// A host's private IPv4 address: a bijection of ranks onto 24 bits, the first 2^16 of
    /// which land in 192.168.0.0/16 and the rest in 10.0.0.0/8.
    fn ipv4(&self, host: u32) -> [u8; 4] {
        let mut x = u64::from(host);
        x = (x.wrapping_mul(0x9e_3779) ^ self.key) & 0xff_ffff;
        x ^= x >> 12;
        x = x.wrapping_mul(0x5b_d1e9) & 0xff_ffff;
        x ^= x >> 11;
        let b = (x as u32).to_be_bytes();
        if x < 0x1_0000 {
            [192, 168, b[2], b[3]]
        } else {
            [10, b[1], b[2], b[3]]
        }
    }

    /// A host's ULA IPv6 address in fd00::/8: one /48, 256 subnets, a hashed interface id.
    fn ipv6(&self, host: u32) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..6].copy_from_slice(&[0xfd, 0x3c, 0x7a, 0x51, 0x0e, 0x29]);
        a[7] = host as u8;
        a[8..].copy_from_slice(&mix64(u64::from(host) ^ self.key).to_be_bytes());
        a
    }

    fn mac(host: u32) -> [u8; 6] {
        let h = host.to_be_bytes();
        [0x02, 0x42, h[0], h[1], h[2], h[3]]
    }

    /// The frame of a flow's next packet, in `self.frame`.
    fn packet(&mut self, flow: &mut Flow) {
        // The first packet goes client to server, later ones either way.
        let forward = flow.sent == 0 || self.uniform() < 0.55;
        let (src, dst, sp, dp) = if forward {
            (flow.client, flow.server, flow.cport, flow.sport)
        } else {
            (flow.server, flow.client, flow.sport, flow.cport)
        };
        let l4_len: u16 = if flow.proto == TCP { 20 } else { 8 };
        let (s4, d4) = (self.ipv4(src), self.ipv4(dst));
        let (s6, d6) = if flow.v6 {
            (self.ipv6(src), self.ipv6(dst))
        } else {
            ([0; 16], [0; 16])
        };
        self.ip_id = self.ip_id.wrapping_add(1);
        let f = &mut self.frame;
        f.clear();
        f.extend_from_slice(&Self::mac(dst));
        f.extend_from_slice(&Self::mac(src));
        // The pseudo-header's addresses, summed for the transport checksum.
        let addresses = if flow.v6 {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&l4_len.to_be_bytes());
            f.extend_from_slice(&[flow.proto, 64]);
            f.extend_from_slice(&s6);
            f.extend_from_slice(&d6);
            sum16(&s6) + sum16(&d6)
        } else {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let ip_start = f.len();
            let total = 20 + l4_len;
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&self.ip_id.to_be_bytes());
            f.extend_from_slice(&[0x40, 0, 64, flow.proto, 0, 0]);
            f.extend_from_slice(&s4);
            f.extend_from_slice(&d4);
            let c = fold(sum16(&f[ip_start..ip_start + 20]));
            f[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());
            sum16(&s4) + sum16(&d4)
        };
        let pseudo = addresses + u32::from(l4_len) + u32::from(flow.proto);
        let l4 = f.len();
        f.extend_from_slice(&sp.to_be_bytes());
        f.extend_from_slice(&dp.to_be_bytes());
        if flow.proto == TCP {
            let flags: u8 = if flow.sent == 0 {
                0x02 // SYN
            } else if flow.left == 1 {
                0x11 // FIN, ACK
            } else if flow.sent % 4 == 1 {
                0x18 // PSH, ACK
            } else {
                0x10 // ACK
            };
            let seq = flow.isn.wrapping_add(flow.sent);
            let ack = if flow.sent == 0 { 0 } else { !seq };
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&ack.to_be_bytes());
            f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&l4_len.to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        let mut c = fold(pseudo + sum16(&f[l4..]));
        if flow.proto == UDP && c == 0 {
            c = 0xffff;
        }
        let at = l4 + if flow.proto == TCP { 16 } else { 6 };
        f[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// An ARP request (broadcast) or reply (unicast) between two hosts, in `self.frame`.
    fn arp(&mut self) {
        let (asker, target) = (self.zipf(), self.hosts - 1 - self.zipf());
        let reply = self.uniform() < 0.3;
        let (sender, receiver) = if reply {
            (target, asker)
        } else {
            (asker, target)
        };
        let (sha, spa, tpa) = (Self::mac(sender), self.ipv4(sender), self.ipv4(receiver));
        let f = &mut self.frame;
        f.clear();
        if reply {
            f.extend_from_slice(&Self::mac(receiver));
        } else {
            f.extend_from_slice(&[0xff; 6]);
        }
        f.extend_from_slice(&sha);
        f.extend_from_slice(&0x0806u16.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, if reply { 2 } else { 1 }]);
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        if reply {
            f.extend_from_slice(&Self::mac(receiver));
        } else {
            f.extend_from_slice(&[0; 6]);
        }
        f.extend_from_slice(&tpa);
    }
}

/// The one's-complement sum of big-endian 16-bit words (an odd last byte is padded with zero),
/// not yet folded.
fn sum16(bytes: &[u8]) -> u32 {
    bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum()
}

/// The Internet checksum of a [`sum16`] total.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
