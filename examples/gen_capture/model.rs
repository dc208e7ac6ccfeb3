//! The traffic model: host popularity (Zipf), flow sizes (capped Pareto) and the server ports.

use crate::{Args, BoxError};

/// The smallest mean flow size: with fewer packets than this per flow, the flow rate is lowered.
const MIN_MEAN_SIZE: f64 = 2.0;

pub(crate) const TCP: u8 = 6;
pub(crate) const UDP: u8 = 17;

/// Server ports: (port, protocol, weight).
pub(crate) const SERVICES: [(u16, u8, u32); 13] = [
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

/// The counter-free part of the model: popularity table, flow-size scale, service table.
pub(crate) struct Model {
    /// Cumulative Zipf probabilities of host ranks `0..hosts`.
    pub(crate) zipf_cdf: Vec<f64>,
    /// Pareto scale of the flow sizes.
    pub(crate) scale: f64,
    /// Expected flow size in packets.
    pub(crate) mean_size: f64,
    /// Mean time between flow arrivals, in nanoseconds.
    pub(crate) arrival_gap_ns: f64,
    /// The flow arrival rate used (below `--flows-per-sec` if that would make flows too small).
    pub(crate) flows_per_sec: f64,
    /// Cumulative weights of [`SERVICES`].
    pub(crate) service_cdf: Vec<u32>,
}

impl Model {
    pub(crate) fn new(args: &Args) -> Result<Self, BoxError> {
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
