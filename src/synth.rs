//! A deterministic synthetic event stream: a diurnal arrival rate, clients with Zipf popularity,
//! and sessions in which a client repeats requests in bursts (the temporal locality real traffic
//! has). The same seed gives the same stream on every machine: all randomness comes from
//! [`mix64`] over a counter.
//!
//! ```
//! use chronobloom::synth::{Synth, SynthConfig};
//! let events: Vec<_> = Synth::new(SynthConfig { records: 1000, ..SynthConfig::default() }).unwrap().collect();
//! assert_eq!(events.len(), 1000);
//! assert!(events.windows(2).all(|w| w[0].tick <= w[1].tick));
//! ```

use chronobloom_core::hash::mix64;
use chronobloom_core::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    /// Number of events.
    pub records: u64,
    /// Time span in ticks; events are spread over `0..span`.
    pub span: u64,
    /// Ticks in one day (the diurnal period); the rate peaks mid-day at `1 + diurnal` times its
    /// trough level.
    pub day: u64,
    /// Peak-to-trough amplitude of the diurnal rate, in `[0, 1)`.
    pub diurnal: f64,
    /// Number of distinct clients.
    pub clients: u64,
    /// Zipf exponent of client popularity (0 = uniform).
    pub zipf: f64,
    /// Mean number of events in one client session (a burst of repeats).
    pub session_len: f64,
    /// Mean gap between two events of one session, in ticks.
    pub session_gap: f64,
    /// The seed.
    pub seed: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            records: 100_000,
            span: 86_400,
            day: 86_400,
            diurnal: 0.8,
            clients: 20_000,
            zipf: 1.0,
            session_len: 8.0,
            session_gap: 2.0,
            seed: 1,
        }
    }
}

/// One event: a client seen at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When.
    pub tick: u64,
    /// Who: a client id in `0..clients`.
    pub client: u64,
}

/// The generator: an iterator of events in tick order.
#[derive(Debug, Clone)]
pub struct Synth {
    cfg: SynthConfig,
    zipf_cdf: Vec<f64>,
    counter: u64,
    emitted: u64,
    /// Open sessions: (next tick, order of opening, client, events left), earliest first.
    open: BinaryHeap<Reverse<(u64, u64, u64, u64)>>,
    opened: u64,
    next_session: f64,
    sessions_per_tick: f64,
}

impl Synth {
    /// A generator for `cfg`; refuses empty or inconsistent settings.
    pub fn new(cfg: SynthConfig) -> Result<Self> {
        if cfg.span == 0 || cfg.day == 0 || cfg.clients == 0 {
            return Err(Error::invalid(
                "synth",
                "span, day and clients must be positive",
            ));
        }
        if !(0.0..1.0).contains(&cfg.diurnal)
            || cfg.zipf < 0.0
            || cfg.session_len < 1.0
            || cfg.session_gap < 0.0
        {
            return Err(Error::invalid(
                "synth",
                "need 0 <= diurnal < 1, zipf >= 0, session_len >= 1, session_gap >= 0",
            ));
        }
        let mut acc = 0.0;
        let mut zipf_cdf: Vec<f64> = (1..=cfg.clients)
            .map(|r| {
                acc += (r as f64).powf(-cfg.zipf);
                acc
            })
            .collect();
        for c in &mut zipf_cdf {
            *c /= acc;
        }
        let sessions_per_tick = cfg.records as f64 / cfg.session_len / cfg.span as f64;
        Ok(Synth {
            cfg,
            zipf_cdf,
            counter: 0,
            emitted: 0,
            open: BinaryHeap::new(),
            opened: 0,
            next_session: 0.0,
            sessions_per_tick,
        })
    }

    fn uniform(&mut self) -> f64 {
        self.counter += 1;
        (mix64(self.counter ^ self.cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 11) as f64
            / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// The diurnal rate multiplier at tick `t`, between `1 − diurnal` and `1 + diurnal`.
    fn rate(&self, t: f64) -> f64 {
        let phase = 2.0 * std::f64::consts::PI * (t / self.cfg.day as f64);
        1.0 - self.cfg.diurnal * phase.cos()
    }

    /// Opens sessions until the next session start lies after `until`.
    fn open_sessions_until(&mut self, until: u64) {
        while self.next_session <= until as f64 && (self.next_session as u64) < self.cfg.span {
            let start = self.next_session as u64;
            let u = self.uniform();
            let client = self.zipf_cdf.partition_point(|&c| c < u) as u64;
            let len = 1 + self.exponential(self.cfg.session_len - 1.0).round() as u64;
            self.opened += 1;
            self.open.push(Reverse((
                start,
                self.opened,
                client.min(self.cfg.clients - 1),
                len,
            )));
            // Thinning by the diurnal rate: sessions arrive faster at the daily peak.
            let gap = self.exponential(1.0 / self.sessions_per_tick) / self.rate(self.next_session);
            self.next_session += gap.max(1e-9);
        }
    }
}

impl Iterator for Synth {
    type Item = Event;

    /// The next event; the stream ends after `records` events or at the end of the span.
    fn next(&mut self) -> Option<Event> {
        if self.emitted >= self.cfg.records {
            return None;
        }
        let earliest = self
            .open
            .peek()
            .map_or(self.next_session.ceil() as u64, |s| s.0 .0);
        self.open_sessions_until(earliest);
        let Reverse((tick, order, client, left)) = self.open.pop()?;
        if left > 1 {
            let next = tick + self.exponential(self.cfg.session_gap).round() as u64;
            if next < self.cfg.span {
                self.open.push(Reverse((next, order, client, left - 1)));
            }
        }
        self.emitted += 1;
        Some(Event { tick, client })
    }
}

/// One step of SplitMix64: advances `state` and returns the next pseudo-random word. The
/// deterministic generator the examples and tests draw keys and ticks from.
///
/// ```
/// let mut s = 0;
/// let (a, b) = (chronobloom::synth::splitmix(&mut s), chronobloom::synth::splitmix(&mut s));
/// assert_ne!(a, b);
/// let mut again = 0;
/// assert_eq!(chronobloom::synth::splitmix(&mut again), a);
/// ```
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
