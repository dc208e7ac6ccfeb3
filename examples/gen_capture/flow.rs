//! Open flows and the generator: flow arrivals, each flow's packet times, and the write loop that
//! emits their frames in time order.

use crate::model::{Model, SERVICES, TCP};
use crate::{Args, BoxError, Summary, BASE_SECS, SNAPLEN};
use chronobloom::core::hash::mix64;
use chronobloom::synth::splitmix;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::Write;
use std::time::Duration;

/// Bounds of a flow's mean gap between packets, in seconds (drawn log-uniformly).
const GAP_SECS: (f64, f64) = (1e-4, 2.0);
/// A flow's expected duration is at most this long, in seconds.
const MAX_FLOW_SECS: f64 = 60.0;
/// DNS exchanges are quick: the mean gap of a port-53 flow is at most this, in seconds.
const DNS_GAP_SECS: f64 = 0.05;

/// Services whose flows have at most [`SHORT_SERVICE_MAX`] packets (longer ones go to 443/TCP).
const SHORT_SERVICES: [u16; 2] = [53, 123];
const SHORT_SERVICE_MAX: u64 = 8;

/// One open flow, ordered by its next packet time (then by id, for determinism).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    next_ns: u64,
    id: u64,
    pub(crate) left: u64,
    pub(crate) sent: u32,
    gap_ns: f64,
    pub(crate) client: u32,
    pub(crate) server: u32,
    pub(crate) cport: u16,
    pub(crate) sport: u16,
    pub(crate) proto: u8,
    pub(crate) v6: bool,
    pub(crate) isn: u32,
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

pub(crate) struct Generator<'a> {
    model: &'a Model,
    pub(crate) hosts: u32,
    ipv6_share: f64,
    non_ip_share: f64,
    alpha: f64,
    max_flow: u64,
    rng: u64,
    /// Host address permutation key.
    pub(crate) key: u64,
    open: BinaryHeap<Flow>,
    next_arrival_ns: f64,
    flows: u64,
    pub(crate) ip_id: u16,
    pub(crate) frame: Vec<u8>,
}

impl<'a> Generator<'a> {
    pub(crate) fn new(args: &Args, model: &'a Model) -> Self {
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
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// A host rank drawn by popularity.
    pub(crate) fn zipf(&mut self) -> u32 {
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
    pub(crate) fn write<W: Write>(
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
}
