//! The time-limited Bloom filter (time-based APBF): every key inserted in the last T ticks.
//!
//! Paper 001 §6 with the equations of FORMULAS.md ("Time-limited Bloom Filter"): a variable number
//! s >= k + l of slices of variable size, each with its insert count n_j, capacity
//! `c_j = floor(m_j ln 2)`, timestamp t_j and hash index f_j.
//!
//! * **k shared hash functions** travel with their slices: a new slice 0 takes
//!   `f_0 = (f_1 - 1) mod k`, so any k consecutive slices use each function once (§6).
//! * **(3) retirement**: slice j is expired iff `t_j < now - T`; queries treat it as a miss, and on
//!   a shift (or [`WindowFilter::advance`]) expired tail slices are deleted while s > k + l. A live,
//!   non-empty tail is kept: the array grows.
//! * **(4), (5)**: after a shift, `g = min_{j<k} ceil((c_j - n_j) / (k - j))` insertions may follow
//!   before the next shift.
//! * **(6)**: the target generation size from the observed rate,
//!   `g* = ceil(g_prev (T / l) / Δt) + 1`.
//! * **(7), (8)**: the new slice 0's capacity given the room left in slices 1..k-1, and its size
//!   `m_0 = max(ceil(c_0 / ln 2), 2k)`.
//! * **Query**: the APBF scan (§6.4, Algorithm 1) with expired slices as misses.
//!
//! The reference implementation's three defects are not repeated: (a) time is the caller's tick at
//! full resolution; (b) Δt is at least one tick, and g* is at most [`GROWTH_CAP`] times the
//! generation just ended and at least the previous g* over [`GROWTH_CAP`]; (c) a slice in the insertion zone is stamped at every insertion, so it expires
//! once insertions stop.
//!
//! One addition: a generation also ends once it has lasted `ceil(T / l)` ticks, the duration (6)
//! aims for, and after a pause the zone moves on by one slice per such duration that passed (at
//! most k). Without it a rate that drops tenfold leaves the oversized zone slices in place for ten
//! times longer, an idle filter never shrinks, and the first insertion after a pause re-stamps the
//! slices holding the keys from before it, keeping them for another T. With it memory follows the
//! rate within about `T + k T / l`, and no key outlives [`TimeLimitedBloomFilter::retention`].

use super::apbf::MAX_TOTAL_BITS;
use super::apbf_params::{run_probability, ApbfParams};
use super::scan::{position, scan};
use super::WindowFilter;
use crate::bits::Bits;
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};
use crate::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::f64::consts::LN_2;

/// Largest factor by which the target generation size g* may exceed the last generation's size, or
/// fall below the previous target, in one shift.
pub const GROWTH_CAP: u64 = 4;

/// Largest slice accepted, in bits (2^36).
pub const MAX_SLICE_BITS: u64 = 1 << 36;

/// One slice: its bits, counts, timestamp and hash function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Slice {
    bits: Bits,
    modulus: FastMod,
    /// n_j: insertions received.
    inserted: u64,
    /// c_j = floor(m_j ln 2): insertions that bring the fill to 1/2.
    capacity: u64,
    /// t_j: time of the latest insertion; `None` while the slice is empty.
    stamp: Option<Tick>,
    /// f_j in [0, k).
    hash_index: u32,
    /// Insertions made while this slice was slice 0 (one generation), for [`WindowFilter::items`].
    head: u64,
}

impl Slice {
    /// An empty slice able to take `capacity` insertions (eq. 8), at least 2k bits.
    fn new(capacity: u64, k: u32, hash_index: u32) -> Slice {
        let m = ((capacity as f64 / LN_2).ceil() as u64).clamp(2 * u64::from(k), MAX_SLICE_BITS);
        Slice {
            bits: Bits::new(m),
            // m >= 2k >= 2, so the divisor is positive.
            modulus: FastMod::new(m)
                .unwrap_or_else(|| unreachable!("slices hold at least 2k bits")),
            inserted: 0,
            capacity: (m as f64 * LN_2).floor() as u64,
            stamp: None,
            hash_index,
            head: 0,
        }
    }

    fn room(&self) -> u64 {
        self.capacity.saturating_sub(self.inserted)
    }

    /// Eq. (3), with an empty slice counting as expired.
    fn expired(&self, now: Tick, span: Tick) -> bool {
        self.stamp.is_none_or(|t| t.saturating_add(span) < now)
    }

    #[inline]
    fn matches(&self, hash: KeyHash) -> bool {
        self.bits
            .test(position(hash, u64::from(self.hash_index), self.modulus))
    }
}

/// A time-limited Bloom filter over a time window of T ticks.
///
/// ```
/// use chronobloom_core::window::{TimeLimitedBloomFilter, WindowFilter};
/// // Keys of the last 60 ticks at ε = 0.01, sized at first for 1000 keys per window.
/// let mut f = TimeLimitedBloomFilter::with_fpr(60, 0.01, 1000, 7).unwrap();
/// f.insert(&"alice", 10).unwrap();
/// assert!(f.contains(&"alice", 70));
/// f.advance(200).unwrap();
/// assert!(!f.contains(&"alice", 200));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TimeLimitedRepr")]
pub struct TimeLimitedBloomFilter {
    params: ApbfParams,
    span: Tick,
    seed: u64,
    /// Slice 0 (newest) first.
    slices: VecDeque<Slice>,
    /// g*: the target generation size from the last shift.
    target: u64,
    /// g: the size of the current generation.
    generation: u64,
    /// Insertions left before the next shift.
    counter: u64,
    generation_start: Tick,
    now: Option<Tick>,
}

/// The serialized form, checked before it becomes a [`TimeLimitedBloomFilter`].
#[derive(Deserialize)]
struct TimeLimitedRepr {
    params: ApbfParams,
    span: Tick,
    seed: u64,
    slices: VecDeque<Slice>,
    target: u64,
    generation: u64,
    counter: u64,
    generation_start: Tick,
    now: Option<Tick>,
}

impl TryFrom<TimeLimitedRepr> for TimeLimitedBloomFilter {
    type Error = Error;
    fn try_from(r: TimeLimitedRepr) -> Result<Self> {
        let k = r.params.k();
        if r.span == 0 {
            return Err(Error::invalid(
                "span",
                "the window must last at least one tick",
            ));
        }
        if r.slices.len() < r.params.slices() as usize {
            return Err(Error::ShapeMismatch {
                what: "slices, at least k + l",
                left: u64::from(r.params.slices()),
                right: r.slices.len() as u64,
            });
        }
        for s in &r.slices {
            if s.modulus.divisor() != s.bits.len() {
                return Err(Error::ShapeMismatch {
                    what: "slice modulus and bit length",
                    left: s.modulus.divisor(),
                    right: s.bits.len(),
                });
            }
            if s.hash_index >= k {
                return Err(Error::invalid(
                    "hash_index",
                    "a slice's hash index is not below k",
                ));
            }
        }
        let consecutive = r
            .slices
            .iter()
            .zip(r.slices.iter().skip(1))
            .all(|(a, b)| b.hash_index == (a.hash_index + 1) % k);
        if !consecutive {
            return Err(Error::invalid(
                "hash_index",
                "neighbouring slices must use consecutive hash functions",
            ));
        }
        if r.target == 0 || r.generation == 0 || r.counter > r.generation {
            return Err(Error::invalid(
                "generation",
                "generation sizes must be positive and the countdown within the generation",
            ));
        }
        check_sizes(&r)?;
        Ok(TimeLimitedBloomFilter {
            params: r.params,
            span: r.span,
            seed: r.seed,
            slices: r.slices,
            target: r.target,
            generation: r.generation,
            counter: r.counter,
            generation_start: r.generation_start,
            now: r.now,
        })
    }
}

/// The sizes that decide the next slices' are those a running filter reaches, so a corrupted
/// file cannot make the next insertion allocate more than a few times the slices read: each
/// slice's capacity is its bits' (`floor(m ln 2)`, at least 2k and at most [`MAX_SLICE_BITS`]
/// bits); the generation takes at most slice 0's capacity (eqs. 4, 5 at its creation); g* is at
/// most [`GROWTH_CAP`] times slice 0's capacity (slice 0 was sized for g* by eq. 7, or g* is at
/// most `GROWTH_CAP` times a generation when the slice is at its largest); and the generation
/// did not start after the latest time seen.
fn check_sizes(r: &TimeLimitedRepr) -> Result<()> {
    let k = u64::from(r.params.k());
    for s in &r.slices {
        let m = s.bits.len();
        if !(2 * k..=MAX_SLICE_BITS).contains(&m) || s.capacity != (m as f64 * LN_2).floor() as u64
        {
            return Err(Error::invalid(
                "slices",
                format!(
                    "a slice of {m} bits with capacity {} is not one this filter makes",
                    s.capacity
                ),
            ));
        }
    }
    let front = r.slices.front().map_or(0, |s| s.capacity);
    if r.generation > front.max(1) || r.target > GROWTH_CAP.saturating_mul(front + 1) {
        return Err(Error::invalid(
            "generation",
            format!(
                "sizes {} (generation) and {} (target) exceed what slice 0's capacity {front} allows",
                r.generation, r.target
            ),
        ));
    }
    if r.now.is_some_and(|now| r.generation_start > now) {
        return Err(Error::invalid(
            "generation_start",
            "the generation starts after the latest time seen",
        ));
    }
    Ok(())
}

impl TimeLimitedBloomFilter {
    /// An empty filter over `span` ticks (at least 1) of shape `params`, its k + l slices sized for
    /// generations of `initial_generation` insertions (about `rate * span / l`; the filter adapts to
    /// the observed rate from the first shift on).
    pub fn new(span: Tick, params: ApbfParams, initial_generation: u64, seed: u64) -> Result<Self> {
        if span == 0 {
            return Err(Error::invalid(
                "span",
                "the window must last at least one tick",
            ));
        }
        if initial_generation == 0 {
            return Err(Error::invalid(
                "initial_generation",
                "a generation needs at least one insertion",
            ));
        }
        let k = params.k();
        let capacity = initial_generation.saturating_mul(u64::from(k));
        if capacity as f64 > MAX_SLICE_BITS as f64 * LN_2 {
            return Err(Error::invalid(
                "initial_generation",
                format!("{initial_generation} insertions per generation need slices over {MAX_SLICE_BITS} bits"),
            ));
        }
        let slices: VecDeque<Slice> = (0..params.slices())
            .map(|j| Slice::new(capacity, k, j % k))
            .collect();
        let total = slices
            .iter()
            .map(|s| s.bits.len())
            .fold(0u64, u64::saturating_add);
        if total > MAX_TOTAL_BITS {
            return Err(Error::invalid(
                "initial_generation",
                format!("{initial_generation} insertions per generation need more than {MAX_TOTAL_BITS} bits"),
            ));
        }
        let mut filter = TimeLimitedBloomFilter {
            params,
            span,
            seed,
            slices,
            target: initial_generation,
            generation: 1,
            counter: 1,
            generation_start: 0,
            now: None,
        };
        filter.generation = filter.next_generation();
        filter.counter = filter.generation;
        Ok(filter)
    }

    /// A filter over `span` ticks at false positive rate `fpr`, with the shape of
    /// [`super::apbf::DEFAULT_LEVEL`] and slices first sized for `expected_items` keys per window.
    pub fn with_fpr(span: Tick, fpr: f64, expected_items: u64, seed: u64) -> Result<Self> {
        Self::with_fpr_level(span, fpr, super::apbf::DEFAULT_LEVEL, expected_items, seed)
    }

    /// A filter over `span` ticks at false positive rate `fpr` with the shape
    /// [`ApbfParams::for_fpr`] gives for `level`, slices first sized for `expected_items` keys per
    /// window.
    pub fn with_fpr_level(
        span: Tick,
        fpr: f64,
        level: u32,
        expected_items: u64,
        seed: u64,
    ) -> Result<Self> {
        let params = ApbfParams::for_fpr(fpr, level)?;
        let generation = expected_items.div_ceil(u64::from(params.l())).max(1);
        Self::new(span, params, generation, seed)
    }

    /// The shape (k, base l).
    pub fn params(&self) -> ApbfParams {
        self.params
    }

    /// The window T, in ticks.
    pub fn span(&self) -> Tick {
        self.span
    }

    /// The current number of slices s (at least k + l).
    pub fn slice_count(&self) -> usize {
        self.slices.len()
    }

    /// The size of the current generation, g.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The target generation size g* of eq. (6) from the last shift.
    pub fn target_generation(&self) -> u64 {
        self.target
    }

    /// The longest a generation lasts, `ceil(T / l)` ticks (at least 1).
    pub fn generation_ticks(&self) -> Tick {
        self.span.div_ceil(u64::from(self.params.l())).max(1)
    }

    /// The longest a key's own bits can make it reported after its insertion:
    /// `T + 2k * generation_ticks()`. A key stays in the insertion zone for k generations; each
    /// takes insertions for at most `generation_ticks()` after it starts and starts at most one
    /// such duration after the previous one's insertions stopped.
    pub fn retention(&self) -> Tick {
        let zone = 2 * u64::from(self.params.k());
        self.span
            .saturating_add(zone.saturating_mul(self.generation_ticks()))
    }

    /// The design false positive rate F(k, l) of the steady state, reached just before a shift.
    pub fn expected_fpr(&self) -> f64 {
        self.params.fpr()
    }

    /// The false positive rate at `now` implied by the slices' current fills, expired slices
    /// counting as empty.
    pub fn estimated_fpr(&self, now: Tick) -> f64 {
        let fills: Vec<f64> = self
            .slices
            .iter()
            .map(|s| {
                if s.expired(now, self.span) {
                    0.0
                } else {
                    s.bits.fill_ratio()
                }
            })
            .collect();
        run_probability(&fills, self.params.k() as usize)
    }

    /// Records `now` (refusing a time before the latest one seen).
    fn observe(&mut self, now: Tick) -> Result<()> {
        match self.now {
            Some(last) if now < last => return Err(Error::TimeWentBackwards { now, last }),
            Some(_) => {}
            None => self.generation_start = now,
        }
        self.now = Some(now);
        Ok(())
    }

    /// Ends a generation that has lasted `generation_ticks()`, and moves the zone on by one more
    /// slice for each further such duration that passed without an event (at most k in all).
    /// Returns whether anything slid.
    fn catch_up(&mut self, now: Tick) -> bool {
        let durations = (now - self.generation_start) / self.generation_ticks();
        if durations == 0 {
            return false;
        }
        self.slide(now);
        for _ in 1..durations.min(u64::from(self.params.k())) {
            // The rate over the pause is already in the target; empty generations add nothing.
            self.push_slice(now);
        }
        true
    }

    /// Ends the current generation: target size (6), then a new slice 0.
    fn slide(&mut self, now: Tick) {
        let elapsed = (now - self.generation_start).max(1);
        let done = self.generation - self.counter;
        let estimate = (done as f64 * self.span as f64
            / (f64::from(self.params.l()) * elapsed as f64))
            .ceil() as u64;
        // At most GROWTH_CAP times what the generation really took, at least 1 / GROWTH_CAP of
        // the previous target.
        self.target = estimate
            .saturating_add(1)
            .min(GROWTH_CAP.saturating_mul(done + 1))
            .max(self.target / GROWTH_CAP)
            .max(1);
        self.push_slice(now);
    }

    /// The shift proper: a new slice 0 sized for the target (7, 8), retirement (3), and the next
    /// generation's size (5).
    fn push_slice(&mut self, now: Tick) {
        let k = self.params.k();
        let capacity = self.new_capacity(self.target);
        let hash_index = self
            .slices
            .front()
            .map_or(0, |s| (s.hash_index + k - 1) % k);
        self.slices.push_front(Slice::new(capacity, k, hash_index));
        self.retire(now);
        self.generation = self.next_generation();
        self.counter = self.generation;
        self.generation_start = now;
    }

    /// Eq. (7): the capacity of a new slice 0 for target `g_star`, given that slices 1..k-1 (the
    /// current 0..k-2) may not take g* per generation for the rest of their time in the zone.
    fn new_capacity(&self, g_star: u64) -> u64 {
        // After the shift, slice j is the current slice j - 1.
        let room = |j: usize| self.slices.get(j - 1).map_or(0, Slice::room);
        let (mut constrained, mut i) = (0u64, self.params.k() as usize);
        while i > 1 {
            // Ties go to the smallest j: the scan runs downward and keeps the last minimum.
            let (g, jmin) = (1..i)
                .rev()
                .map(|j| {
                    let left = room(j).saturating_sub(constrained);
                    (left.div_ceil((i - j) as u64), j)
                })
                .fold(
                    (u64::MAX, i),
                    |best, c| if c.0 <= best.0 { c } else { best },
                );
            if g_star <= g {
                break;
            }
            constrained += g * (i - jmin) as u64;
            i = jmin;
        }
        constrained.saturating_add((i as u64).saturating_mul(g_star))
    }

    /// Eqs. (4), (5): insertions the zone can take before one of its slices is full; at least one,
    /// so a full slice is pushed out of the zone rather than stalling it.
    fn next_generation(&self) -> u64 {
        let k = self.params.k() as usize;
        self.slices
            .iter()
            .take(k)
            .enumerate()
            .map(|(j, s)| s.room().div_ceil((k - j) as u64))
            .min()
            .unwrap_or(1)
            .max(1)
    }

    /// Eq. (3): deletes expired or empty tail slices while more than k + l remain.
    fn retire(&mut self, now: Tick) {
        let floor = self.params.slices() as usize;
        while self.slices.len() > floor
            && self
                .slices
                .back()
                .is_some_and(|s| s.expired(now, self.span))
        {
            self.slices.pop_back();
        }
    }
}

impl WindowFilter for TimeLimitedBloomFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, now: Tick) -> Result<()> {
        self.observe(now)?;
        if !self.catch_up(now) && self.counter == 0 {
            self.slide(now);
        }
        for s in self.slices.iter_mut().take(self.params.k() as usize) {
            s.bits
                .set(position(hash, u64::from(s.hash_index), s.modulus));
            s.inserted = s.inserted.saturating_add(1);
            s.stamp = Some(now);
        }
        if let Some(s) = self.slices.front_mut() {
            s.head = s.head.saturating_add(1);
        }
        self.counter -= 1;
        Ok(())
    }

    /// Expiry is judged at `now`; a `now` before the latest insertion sees those insertions too.
    fn contains_hash(&self, hash: KeyHash, now: Tick) -> bool {
        scan(self.slices.len(), self.params.k() as usize, |i| {
            let s = &self.slices[i];
            !s.expired(now, self.span) && s.matches(hash)
        })
    }

    /// Ends a generation that has lasted `generation_ticks()` (see the module docs) and deletes
    /// expired tail slices, so memory follows the rate even without insertions.
    fn advance(&mut self, now: Tick) -> Result<()> {
        self.observe(now)?;
        if !self.catch_up(now) {
            self.retire(now);
        }
        Ok(())
    }

    fn memory_bits(&self) -> u64 {
        self.slices.iter().map(|s| s.bits.memory_bits()).sum()
    }

    /// Insertions of the generations whose newest slice is still live.
    fn items(&self) -> u64 {
        let now = self.now.unwrap_or(0);
        self.slices
            .iter()
            .filter(|s| !s.expired(now, self.span))
            .fold(0u64, |n, s| n.saturating_add(s.head))
    }
}

#[cfg(test)]
mod tests;
