//! A deterministic synthetic event stream: a diurnal arrival rate, clients with Zipf popularity,
//! and sessions in which a client repeats requests in bursts (the temporal locality real traffic
//! has). The same seed gives the same stream on every machine: all randomness comes from
//! [`mix64`] over counters — one for opening sessions, and one per session for its events — so
//! a generator can keep only some clients' sessions ([`Synth::keeping`]) and produce exactly
//! their events without generating anyone else's: workers generate disjoint parts of one stream.
//!
//! ```
//! use chronobloom::synth::{Synth, SynthConfig};
//! let cfg = SynthConfig { records: 1000, ..SynthConfig::default() };
//! let events: Vec<_> = Synth::new(cfg.clone()).unwrap().collect();
//! assert_eq!(events.len(), 1000);
//! assert!(events.windows(2).all(|w| w[0].tick <= w[1].tick));
//! // the even clients' part is the full stream's even-client events
//! let even: Vec<_> = Synth::keeping(cfg, |c| c % 2 == 0).unwrap().collect();
//! assert_eq!(even, events.iter().copied().filter(|e| e.client % 2 == 0).collect::<Vec<_>>());
//! ```

mod agenda;
mod popularity;

use agenda::Agenda;
use chronobloom_core::hash::mix64;
use chronobloom_core::{Error, Result};
use popularity::Popularity;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    /// Number of events: sessions open until their lengths sum to it (the last one cut short).
    pub records: u64,
    /// Time span in ticks; events are spread over `0..span` (sessions arrive at the rate that
    /// fills it; events of the last ones that would fall past it are placed at its last tick).
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
    /// Which: unique in the stream, the same in every part of it (the session's opening order
    /// times 2^24 plus the event's place in its session).
    pub seq: u64,
}

/// Opening draws a session takes: its client, its length and the gap to the next opening.
const DRAWS_PER_SESSION: u64 = 3;

/// `x.round() as u64` for every `x` (half away from zero, then saturating, NaN to 0) without a
/// call into libm: the integer part, plus one when the exact remainder is at least a half (below
/// 2^52 the remainder `x − ⌊x⌋` is exact; from there on `x` is an integer).
fn round(x: f64) -> u64 {
    let whole = x as u64;
    whole.saturating_add(u64::from(x - whole as f64 >= 0.5))
}

/// Events of one session at most (its place fits the low 24 bits of [`Event::seq`]).
const MAX_SESSION: u64 = 1 << 24;

/// An open session's client, events done and events left (a client fits 32 bits and a session's
/// events [`MAX_SESSION`], so an agenda entry is 32 bytes); its key is its next tick and order of
/// opening ([`key`]).
type Session = (u32, u32, u32);

/// The agenda key of a session's next event: tick first, then the order of opening.
fn key(tick: u64, order: u64) -> u128 {
    u128::from(tick) << 64 | u128::from(order)
}

/// Which clients' sessions a generator keeps.
type Keep = std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync>;

/// The generator: an iterator of events in tick order (ties in session opening order).
#[derive(Clone)]
pub struct Synth {
    cfg: SynthConfig,
    popularity: Popularity,
    counter: u64,
    /// Events of the sessions opened so far (kept or not), at most `records`.
    planned: u64,
    /// Open kept sessions, earliest first.
    open: Agenda<Session>,
    opened: u64,
    next_session: f64,
    sessions_per_tick: f64,
    keep: Option<Keep>,
}

impl std::fmt::Debug for Synth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Synth")
            .field("cfg", &self.cfg)
            .field("planned", &self.planned)
            .field("opened", &self.opened)
            .field("open", &self.open.len())
            .field("partial", &self.keep.is_some())
            .finish()
    }
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
        if cfg.clients > u64::from(u32::MAX) {
            return Err(Error::invalid("synth", "at most 2^32 - 1 clients"));
        }
        let popularity = Popularity::new(cfg.clients, cfg.zipf);
        let sessions_per_tick = cfg.records as f64 / cfg.session_len / cfg.span as f64;
        Ok(Synth {
            cfg,
            popularity,
            counter: 0,
            planned: 0,
            open: Agenda::new(),
            opened: 0,
            next_session: 0.0,
            sessions_per_tick,
            keep: None,
        })
    }

    /// The part of [`Synth::new`]'s stream whose clients `keep` accepts, in the same order:
    /// every session is opened (a few draws), only kept ones produce events.
    pub fn keeping(
        cfg: SynthConfig,
        keep: impl Fn(u64) -> bool + Send + Sync + 'static,
    ) -> Result<Self> {
        let mut s = Synth::new(cfg)?;
        s.keep = Some(std::sync::Arc::new(keep));
        Ok(s)
    }

    /// A uniform draw in [0, 1) for event `i` of the session opened `order`-th: its own counter,
    /// apart from the opening draws'.
    fn session_uniform(&self, order: u64, i: u64) -> f64 {
        let x = mix64(order ^ self.cfg.seed.wrapping_mul(0xd6e8_feb8_6659_fd93)) ^ i;
        (mix64(x.wrapping_add(0x632b_e59b_d9b4_e019)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Opening draw number `n`, uniform in [0, 1).
    fn draw(&self, n: u64) -> f64 {
        (mix64(n ^ self.cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 11) as f64
            / (1u64 << 53) as f64
    }

    /// The next opening draw.
    fn uniform(&mut self) -> f64 {
        self.counter += 1;
        self.draw(self.counter)
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// The diurnal rate multiplier at tick `t`, between `1 − diurnal` and `1 + diurnal`.
    fn rate(&self, t: f64) -> f64 {
        let phase = 2.0 * std::f64::consts::PI * (t / self.cfg.day as f64);
        1.0 - self.cfg.diurnal * phase.cos()
    }

    /// Opens sessions until the next session start lies after `until`, or every event is
    /// planned.
    fn open_sessions_until(&mut self, until: u64) {
        while self.next_session <= until as f64 && self.planned < self.cfg.records {
            // at the span's last tick at the latest, like every event
            let start = (self.next_session as u64).min(self.cfg.span - 1);
            let u = self.uniform();
            let client = self.popularity.client(u).min(self.cfg.clients - 1);
            let len = (1 + round(self.exponential(self.cfg.session_len - 1.0)))
                .min(MAX_SESSION)
                .min(self.cfg.records - self.planned);
            self.planned += len;
            self.opened += 1;
            if self.keep.as_ref().is_none_or(|k| k(client)) {
                // client < clients ≤ u32::MAX and len ≤ MAX_SESSION
                self.open
                    .push(key(start, self.opened), (client as u32, 0, len as u32));
            }
            // Thinning by the diurnal rate: sessions arrive faster at the daily peak.
            let gap = self.exponential(1.0 / self.sessions_per_tick) / self.rate(self.next_session);
            self.next_session += gap.max(1e-9);
            // The next sessions' client draws are known: ask for the CDF lines of the next one
            // (whose guide entry the previous opening asked for) and the guide entry of the one
            // after, so that their searches do not wait on memory.
            self.popularity.prefetch_range(self.draw(self.counter + 1));
            self.popularity
                .prefetch_guide(self.draw(self.counter + 1 + DRAWS_PER_SESSION));
        }
    }
}

impl Iterator for Synth {
    type Item = Event;

    /// The next event; the stream ends after `records` events.
    fn next(&mut self) -> Option<Event> {
        loop {
            let earliest = self
                .open
                .min_key()
                .map_or_else(|| self.next_session.ceil() as u64, |k| (k >> 64) as u64);
            self.open_sessions_until(earliest);
            if let Some((k, (client, done, left))) = self.open.pop() {
                let (client, done) = (u64::from(client), u64::from(done));
                let (tick, order) = ((k >> 64) as u64, k as u64);
                if left > 1 {
                    let u = self.session_uniform(order, done);
                    let gap = round(-self.cfg.session_gap * (1.0 - u).ln());
                    let next = tick.saturating_add(gap).min(self.cfg.span - 1);
                    self.open
                        .push(key(next, order), (client as u32, done as u32 + 1, left - 1));
                }
                return Some(Event {
                    tick,
                    client,
                    // unique below 2^40 sessions (a trillion; wraps, never panics, past that)
                    seq: order.wrapping_mul(MAX_SESSION).wrapping_add(done),
                });
            }
            // nothing kept is open: more sessions, unless every event is planned
            if self.planned >= self.cfg.records {
                return None;
            }
            let next = self.next_session.ceil().max(earliest as f64 + 1.0);
            self.open_sessions_until(next as u64);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts kept by disjoint client sets are exactly the full stream's events of those clients,
    /// in the same order; together they are the whole stream, whose places are unique; a
    /// generator keeping nobody ends.
    #[test]
    fn parts_partition_the_stream() {
        let cfg = SynthConfig {
            records: 30_000,
            span: 20_000,
            day: 20_000,
            clients: 500,
            session_gap: 40.0,
            seed: 9,
            ..SynthConfig::default()
        };
        let full: Vec<Event> = Synth::new(cfg.clone()).into_iter().flatten().collect();
        assert_eq!(full.len(), 30_000);
        let mut seqs: Vec<u64> = full.iter().map(|e| e.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), full.len());
        for parts in [2u64, 3, 7] {
            let mut total = 0;
            for p in 0..parts {
                let part: Vec<Event> = Synth::keeping(cfg.clone(), move |c| c % parts == p)
                    .into_iter()
                    .flatten()
                    .collect();
                let want: Vec<Event> = full
                    .iter()
                    .copied()
                    .filter(|e| e.client % parts == p)
                    .collect();
                assert_eq!(part, want, "part {p} of {parts}");
                total += part.len();
            }
            assert_eq!(total, full.len());
        }
        assert_eq!(
            Synth::keeping(cfg, |_| false).into_iter().flatten().count(),
            0
        );
    }

    /// The first event of a stream is at tick 0 (its first session opens there), whatever the
    /// configuration: the main job takes 0 as the synthetic trace's origin without generating it.
    #[test]
    fn the_first_event_is_at_tick_zero() {
        let mut state = 3;
        for _ in 0..200 {
            let r = splitmix(&mut state);
            let cfg = SynthConfig {
                records: 1 + r % 1_000,
                span: 1 + (r >> 10) % 5_000_000,
                day: 1 + (r >> 20) % 5_000_000,
                diurnal: (r >> 30) as f64 / (1u64 << 34) as f64 % 0.99,
                clients: 1 + (r >> 40) % 300_000,
                session_gap: ((r >> 50) % 10_000) as f64,
                seed: r,
                ..SynthConfig::default()
            };
            let first = Synth::new(cfg.clone()).ok().and_then(|mut s| s.next());
            assert_eq!(first.map(|e| e.tick), Some(0), "{cfg:?}");
        }
    }

    /// The rounding without libm is `f64::round` then `as u64`, at halves, near them, past 2^52
    /// and 2^64, for negative and non-finite values, and on random values of every magnitude.
    #[test]
    fn rounding_equals_the_standard_one() {
        let mut edges = vec![
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.5,
            -0.49,
            -1.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            18_446_744_073_709_551_615.0,
            18_446_744_073_709_555_000.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut state = 5;
        for _ in 0..200_000 {
            let bits = splitmix(&mut state);
            edges.push(f64::from_bits(bits));
            // a uniform mantissa at a random small scale, as the generator's draws are
            edges.push((bits >> 11) as f64 / (1u64 << 53) as f64 * (1u64 << (bits % 40)) as f64);
        }
        for x in edges {
            let n = (x + 0.5).to_bits();
            for y in [x, f64::from_bits(n), f64::from_bits(n.wrapping_sub(1))] {
                assert_eq!(round(y), y.round() as u64, "{y:e}");
            }
        }
    }

    /// The stream of a fixed configuration is what it has always been: a fingerprint of its
    /// events (the same one the binary-heap agenda and the full CDF search gave).
    #[test]
    fn a_fixed_configuration_gives_the_same_stream() {
        let cfg = SynthConfig {
            records: 200_000,
            span: 3_600_000,
            day: 3_600_000,
            clients: 200_000,
            session_gap: 5_000.0,
            seed: 2,
            ..SynthConfig::default()
        };
        let print = Synth::new(cfg).into_iter().flatten().fold(0u64, |h, e| {
            mix64(h ^ mix64(e.tick ^ mix64(e.client ^ mix64(e.seq))))
        });
        assert_eq!(print, 0xcde8_8e07_8849_0099);
    }
}
