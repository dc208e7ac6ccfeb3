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

mod calendar;
mod chunk;
mod popularity;

use calendar::Calendar;
use chronobloom_core::hash::mix64;
use chronobloom_core::{Error, Result};
use chunk::{Chunk, Ev};
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

/// Events a chunk of ticks holds on average: its width is the power of two of ticks closest
/// above this many events at the configured mean rate (the diurnal peak holds about twice as
/// many), at most [`MAX_CHUNK_BITS`] bits of ticks.
const CHUNK_EVENTS: u128 = 4096;
/// Ticks of the widest chunk: `2^MAX_CHUNK_BITS`.
const MAX_CHUNK_BITS: u32 = 16;

/// An open session waiting for its next event: its tick, order of opening, client, events
/// done and events left (a client fits 32 bits and a session's events [`MAX_SESSION`]).
#[derive(Debug, Clone, Copy)]
struct Session {
    tick: u64,
    order: u64,
    client: u32,
    done: u32,
    left: u32,
}

/// A uniform draw in [0, 1) for event `i` of the session opened `order`-th: its own counter,
/// apart from the opening draws'.
fn session_uniform(seed: u64, order: u64, i: u64) -> f64 {
    let x = mix64(order ^ seed.wrapping_mul(0xd6e8_feb8_6659_fd93)) ^ i;
    (mix64(x.wrapping_add(0x632b_e59b_d9b4_e019)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Which clients' sessions a generator keeps.
type Keep = std::sync::Arc<dyn Fn(u64) -> bool + Send + Sync>;

/// The generator: an iterator of events in tick order (ties in session opening order).
///
/// It works a chunk of ticks at a time: the sessions whose next event falls in the chunk (and
/// those opening in it) produce all their events inside it, one session after the other, and
/// wait for the chunk of their next one; the chunk's events are then put in stream order and
/// handed out. A session's events come from its own draws, so generating them by session
/// rather than by time gives the same stream as popping the earliest event of all open
/// sessions, without a priority queue between every two events. A chunk's events are held at
/// once: about 4,096 at the mean rate, more where sessions pile up (a session
/// without gaps has all its events in one chunk, as do the sessions cut at the span's end).
#[derive(Clone)]
pub struct Synth {
    cfg: SynthConfig,
    popularity: Popularity,
    counter: u64,
    /// Events of the sessions opened so far (kept or not), at most `records`.
    planned: u64,
    opened: u64,
    next_session: f64,
    sessions_per_tick: f64,
    keep: Option<Keep>,
    /// A chunk spans `2^chunk_bits` ticks.
    chunk_bits: u32,
    /// Open kept sessions, by the chunk of their next event.
    waiting: Calendar<Session>,
    /// The sessions of the chunk being generated (reused).
    due: Vec<Session>,
    /// The events of the chunk being handed out.
    chunk: Chunk,
}

impl std::fmt::Debug for Synth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Synth")
            .field("cfg", &self.cfg)
            .field("planned", &self.planned)
            .field("opened", &self.opened)
            .field("open", &self.waiting.len())
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
        let ticks = CHUNK_EVENTS * u128::from(cfg.span) / u128::from(cfg.records.max(1));
        let chunk_bits = (ticks.max(1).next_power_of_two().trailing_zeros()).min(MAX_CHUNK_BITS);
        Ok(Synth {
            cfg,
            popularity,
            counter: 0,
            planned: 0,
            opened: 0,
            next_session: 0.0,
            sessions_per_tick,
            keep: None,
            chunk_bits,
            waiting: Calendar::new(),
            due: Vec::new(),
            chunk: Chunk::default(),
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

    /// The tick the next session opens at: the span's last at the latest, like every event.
    fn next_start(&self) -> u64 {
        (self.next_session as u64).min(self.cfg.span - 1)
    }

    /// Opens the sessions starting before tick `end` (until every event is planned); the kept
    /// ones join `due`.
    fn open_sessions_before(&mut self, end: u64) {
        while self.planned < self.cfg.records && self.next_start() < end {
            let start = self.next_start();
            let u = self.uniform();
            let client = self.popularity.client(u).min(self.cfg.clients - 1);
            let len = (1 + round(self.exponential(self.cfg.session_len - 1.0)))
                .min(MAX_SESSION)
                .min(self.cfg.records - self.planned);
            self.planned += len;
            self.opened += 1;
            if self.keep.as_ref().is_none_or(|k| k(client)) {
                // client < clients ≤ u32::MAX and len ≤ MAX_SESSION
                self.due.push(Session {
                    tick: start,
                    order: self.opened,
                    client: client as u32,
                    done: 0,
                    left: len as u32,
                });
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

    /// Generates the next chunk holding open or opening sessions: every event of theirs in it,
    /// in stream order; `false` when no session is open and every event is planned.
    fn generate_chunk(&mut self) -> bool {
        let opening =
            (self.planned < self.cfg.records).then(|| self.next_start() >> self.chunk_bits);
        let c = match (self.waiting.next_chunk(), opening) {
            (Some(a), Some(b)) => a.min(b),
            (Some(c), None) | (None, Some(c)) => c,
            (None, None) => return false,
        };
        let (base, width) = (c << self.chunk_bits, 1u64 << self.chunk_bits);
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        self.waiting.take(c, &mut due);
        self.due = due;
        self.open_sessions_before(base.saturating_add(width));
        for mut s in self.due.drain(..) {
            loop {
                self.chunk.push(Ev {
                    tick: s.tick,
                    order: s.order,
                    done: s.done,
                    client: s.client,
                });
                if s.left <= 1 {
                    break;
                }
                let u = session_uniform(self.cfg.seed, s.order, u64::from(s.done));
                let gap = round(-self.cfg.session_gap * (1.0 - u).ln());
                s.tick = s.tick.saturating_add(gap).min(self.cfg.span - 1);
                s.done += 1;
                s.left -= 1;
                let at = s.tick >> self.chunk_bits;
                if at != c {
                    self.waiting.park(at, s);
                    break;
                }
            }
        }
        self.chunk.order(base, width as usize);
        true
    }
}

impl Iterator for Synth {
    type Item = Event;

    /// The next event; the stream ends after `records` events.
    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.chunk.next() {
                return Some(Event {
                    tick: e.tick,
                    client: u64::from(e.client),
                    // unique below 2^40 sessions (a trillion; wraps, never panics, past that)
                    seq: e
                        .order
                        .wrapping_mul(MAX_SESSION)
                        .wrapping_add(u64::from(e.done)),
                });
            }
            if !self.generate_chunk() {
                return None;
            }
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

    /// The stream as the first generator made it: the earliest event of all open sessions
    /// popped from a binary heap, sessions opened as the earliest event's tick reaches them.
    fn reference(cfg: &SynthConfig) -> Vec<Event> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let Ok(mut g) = Synth::new(cfg.clone()) else {
            return Vec::new();
        };
        /// An open session: (tick, order, done, client, left).
        type Open = Reverse<(u64, u64, u64, u64, u64)>;
        let mut open: BinaryHeap<Open> = BinaryHeap::new();
        let open_until = |g: &mut Synth, open: &mut BinaryHeap<_>, until: f64| {
            while g.next_session <= until && g.planned < g.cfg.records {
                let start = (g.next_session as u64).min(g.cfg.span - 1);
                let u = g.uniform();
                let client = g.popularity.client(u).min(g.cfg.clients - 1);
                let len = (1 + g.exponential(g.cfg.session_len - 1.0).round() as u64)
                    .min(MAX_SESSION)
                    .min(g.cfg.records - g.planned);
                g.planned += len;
                g.opened += 1;
                open.push(Reverse((start, g.opened, 0, client, len)));
                let gap = g.exponential(1.0 / g.sessions_per_tick) / g.rate(g.next_session);
                g.next_session += gap.max(1e-9);
            }
        };
        let mut out = Vec::new();
        loop {
            let earliest = open
                .peek()
                .map_or(g.next_session.ceil(), |Reverse(e)| e.0 as f64);
            open_until(&mut g, &mut open, earliest);
            if let Some(Reverse((tick, order, done, client, left))) = open.pop() {
                out.push(Event {
                    tick,
                    client,
                    seq: order * MAX_SESSION + done,
                });
                if left > 1 {
                    let u = session_uniform(cfg.seed, order, done);
                    let gap = (-cfg.session_gap * (1.0 - u).ln()).round() as u64;
                    let next = tick.saturating_add(gap).min(cfg.span - 1);
                    open.push(Reverse((next, order, done + 1, client, left - 1)));
                }
            } else if g.planned >= cfg.records {
                return out;
            } else {
                let until = g.next_session.ceil().max(earliest + 1.0);
                open_until(&mut g, &mut open, until);
            }
        }
    }

    /// Generating a chunk of ticks at a time gives the reference's stream, on random
    /// configurations (sparse and dense, chunks of one tick to wider than the span, gaps of
    /// none to past the span) and on one whose gaps pass the calendar's ring of chunks.
    #[test]
    fn equals_popping_the_earliest_event() {
        let mut state = 11;
        let mut configs: Vec<SynthConfig> = (0..48)
            .map(|_| {
                let r = splitmix(&mut state);
                SynthConfig {
                    records: 1 + r % 6_000,
                    span: 1 + (r >> 13) % [10, 3_000, 200_000][(r >> 60) as usize % 3],
                    day: 1 + (r >> 27) % 100_000,
                    diurnal: ((r >> 40) % 90) as f64 / 100.0,
                    clients: 1 + (r >> 47) % 2_000,
                    zipf: ((r >> 8) % 15) as f64 / 10.0,
                    session_len: 1.0 + ((r >> 3) % 40) as f64,
                    session_gap: [0.0, 0.4, 30.0, 5_000.0][(r >> 58) as usize % 4],
                    seed: r,
                }
            })
            .collect();
        configs.push(SynthConfig {
            records: 600_000,
            span: 10_000_000,
            day: 10_000_000,
            clients: 5_000,
            session_gap: 1_000_000.0,
            seed: 4,
            ..SynthConfig::default()
        });
        for cfg in configs {
            let got: Vec<Event> = Synth::new(cfg.clone()).into_iter().flatten().collect();
            assert_eq!(got, reference(&cfg), "{cfg:?}");
        }
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
    /// events (the same one the binary-heap agenda, the calendar queue, the full CDF search and the
    /// chunked generation gave).
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
