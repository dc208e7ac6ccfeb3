//! A budgeted recency prior: `p_x` from a small Count-Min sketch of periodically halved counts,
//! learned online from the stream (an extension of paper 004, whose §6.4.2 takes `p_x` from
//! frequencies over the whole stream).
//!
//! Paper 004's priors assume every item is sampled independently with a fixed `p_x`
//! (Assumption 2). On a bursty stream a rare item's rate inside one of its bursts is far above
//! its rate over the whole stream, and a prior from whole-stream frequencies makes the
//! inferential filter answer NEG for it while it is in the window. [`RecencySketch`] estimates
//! a recent rate instead, in a fixed number of bits that a caller counts in its filter's budget:
//!
//! - `depth` rows of `width` counters of `q` bits; row `r` maps an item to one counter by
//!   `mix64(mix64(h1 ⊕ seed) + r·h2)` of its [`KeyHash`] `(h1, h2)` (the crate's one hashing path),
//!   reduced by multiply-shift;
//! - an insertion of `x` raises `x`'s counters by the conservative update (Estan and Varghese
//!   2002): each to at least one more than `x`'s current estimate;
//! - every `H` insertions (the halving period) every counter and the total are halved, rounding
//!   down (the "reset" of TinyLFU). A counter then never exceeds `2H − 1`, so
//!   `q = ⌈log2 2H⌉` bits hold it without saturating;
//! - `p_x = max(ĉ_x, floor) / max(N, 1)`, `ĉ_x` the smallest of `x`'s counters and `N` the
//!   halved total of all insertions, which lies in `(0, 1]` because `ĉ_x ≤ N`.
//!
//! **Guarantee.** Let `c_x` be the exact decayed count of `x`: one more at each insertion of `x`,
//! halved (rounding down) at the same instants as the sketch. Then `ĉ_x ≥ c_x` always, on any
//! stream: every counter of `x` is at least `c_x` after an insertion (the conservative update
//! raises it to at least `ĉ_x + 1 ≥ c_x + 1`, and other items' insertions only raise it), and
//! halving keeps `C ≥ c_x` because `⌊C/2⌋ ≥ ⌊c_x/2⌋`. The estimate overcounts by the collisions
//! of `x`'s counters with other items, so `p_x` is biased up: towards the standard filter's
//! answers, never towards a false "rare".
//!
//! Memory ([`RecencySketch::bits`]) is `width · depth · q` bits, fixed by the parameters; the
//! halved total `N` and the position in the period are two registers, left out of the count as
//! the BTBF's current timestamp and block position are.
//!
//! ```
//! use chronobloom_core::decay::prior::SampleProbability;
//! use chronobloom_core::decay::RecencySketch;
//! use chronobloom_core::hash::KeyHash;
//! // 64 bits: 16 counters of 4 bits (halving every 8 insertions), one row
//! let mut s = RecencySketch::for_bits(64, 1, 8, 0.5, 7).unwrap();
//! assert_eq!((s.width(), s.counter_bits(), s.bits()), (16, 4, 64));
//! let (hot, cold) = (KeyHash::of(&1u64, 0), KeyHash::of(&2u64, 0));
//! for i in 0..40u64 {
//!     // query, then insert: a burst of `hot`
//!     assert!(s.p_x(hot) > 0.0 && s.p_x(hot) <= 1.0);
//!     s.insert_hash(if i < 10 { KeyHash::of(&(100 + i), 0) } else { hot });
//! }
//! assert!(s.p_x(hot) > 0.9);
//! assert!(s.p_x(cold) < s.p_x(hot));
//! ```

use super::prior::SampleProbability;
use super::timers::{TimerArray, MAX_TIMER_BITS};
use crate::error::{Error, Result};
use crate::hash::{mix64, Key, KeyHash};
use serde::{Deserialize, Serialize};

/// The longest halving period: its counters need `⌈log2 2H⌉ ≤ 32` bits.
pub const MAX_HALVING_PERIOD: u64 = 1 << (MAX_TIMER_BITS - 1);

/// A Count-Min sketch of periodically halved counts giving a recent `p_x` (see the
/// [module documentation](self)).
///
/// Read back with serde, the sketch is checked: the parameters as [`RecencySketch::new`] checks
/// them, counters of exactly `width · depth` cells of [`Self::counter_bits`] bits, no counter
/// above the total, the total below `2H`, and the position in the period below `H`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SketchRepr")]
pub struct RecencySketch {
    seed: u64,
    width: u64,
    depth: u32,
    period: u64,
    floor: f64,
    counters: TimerArray,
    /// `N`: every insertion, halved with the counters.
    total: u64,
    /// Insertions since the last halving (`< period`).
    phase: u64,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
struct SketchRepr {
    seed: u64,
    width: u64,
    depth: u32,
    period: u64,
    floor: f64,
    counters: TimerArray,
    total: u64,
    phase: u64,
}

impl TryFrom<SketchRepr> for RecencySketch {
    type Error = Error;
    /// Checks the parameters and the counters' shape before anything is allocated: a sketch read
    /// from a corrupted file must not size an allocation.
    fn try_from(r: SketchRepr) -> Result<Self> {
        let cells = checked_cells(r.width, r.depth, r.period, r.floor)?;
        let bits = RecencySketch::bits_for_period(r.period);
        if r.counters.len() != cells || r.counters.bpt() != bits {
            return Err(Error::ShapeMismatch {
                what: "recency counters (cells × bits)",
                left: cells.saturating_mul(u64::from(bits)),
                right: r.counters.len().saturating_mul(u64::from(r.counters.bpt())),
            });
        }
        let cells_ok = (0..r.counters.len()).all(|i| r.counters.get(i) <= r.total);
        if !cells_ok || r.total >= 2 * r.period || r.phase >= r.period {
            return Err(Error::invalid(
                "recency sketch",
                "a counter above the total, the total at 2H or more, or the period position at H or more",
            ));
        }
        Ok(RecencySketch {
            seed: r.seed,
            width: r.width,
            depth: r.depth,
            period: r.period,
            floor: r.floor,
            counters: r.counters,
            total: r.total,
            phase: r.phase,
        })
    }
}

/// The counters `width · depth` of a sketch with these parameters, checked as
/// [`RecencySketch::new`] documents; nothing is allocated.
fn checked_cells(width: u64, depth: u32, period: u64, floor: f64) -> Result<u64> {
    if width == 0 || depth == 0 {
        return Err(Error::invalid(
            "width/depth",
            format!("{width} × {depth}: both must be at least 1"),
        ));
    }
    if !(1..=MAX_HALVING_PERIOD).contains(&period) {
        return Err(Error::invalid(
            "halving period",
            format!("{period} is outside 1..={MAX_HALVING_PERIOD}"),
        ));
    }
    // a normal floor keeps `floor / N` above 0 for every total `N < 2H ≤ 2^32`
    if !(floor.is_normal() && floor > 0.0 && floor <= 1.0) {
        return Err(Error::invalid(
            "floor",
            format!("{floor} is not a normal number in (0, 1]"),
        ));
    }
    width
        .checked_mul(u64::from(depth))
        .ok_or(Error::OutOfMemory { bits: u64::MAX })
}

impl RecencySketch {
    /// An empty sketch of `depth` rows of `width` counters, halved every `period` insertions,
    /// giving unseen items the pseudo-count `floor` (`0 < floor ≤ 1`), hashing with `seed`.
    ///
    /// Errors: `width` or `depth` 0, `period` outside `1..=2^31`, `floor` outside `(0, 1]` (or
    /// subnormal), or more than `2^48` bits.
    pub fn new(width: u64, depth: u32, period: u64, floor: f64, seed: u64) -> Result<Self> {
        let cells = checked_cells(width, depth, period, floor)?;
        Ok(RecencySketch {
            seed,
            width,
            depth,
            period,
            floor,
            counters: TimerArray::new(cells, Self::bits_for_period(period), 0)?,
            total: 0,
            phase: 0,
        })
    }

    /// The widest sketch of `depth` rows that fits in `bits` bits (see [`Self::new`]); an error
    /// when `bits` cannot hold one counter per row.
    pub fn for_bits(bits: u64, depth: u32, period: u64, floor: f64, seed: u64) -> Result<Self> {
        if !(1..=MAX_HALVING_PERIOD).contains(&period) {
            return Err(Error::invalid(
                "halving period",
                format!("{period} is outside 1..={MAX_HALVING_PERIOD}"),
            ));
        }
        if depth == 0 {
            return Self::new(1, depth, period, floor, seed); // the error for depth 0
        }
        let row = u64::from(depth).saturating_mul(u64::from(Self::bits_for_period(period)));
        let width = bits.checked_div(row).unwrap_or(0);
        if width == 0 {
            return Err(Error::invalid(
                "bits",
                format!(
                    "{bits} bits hold no row of {depth} counters of {} bits",
                    Self::bits_for_period(period)
                ),
            ));
        }
        Self::new(width, depth, period, floor, seed)
    }

    /// `⌈log2 2H⌉`: the bits of a counter halved every `period` insertions (it never exceeds
    /// `2H − 1`). `period` is clamped to `1..=2^31`.
    pub fn bits_for_period(period: u64) -> u32 {
        64 - (2 * period.clamp(1, MAX_HALVING_PERIOD) - 1).leading_zeros()
    }

    /// Counters per row.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Rows.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// `H`, insertions between halvings.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Bits per counter, `⌈log2 2H⌉`.
    pub fn counter_bits(&self) -> u32 {
        self.counters.bpt()
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `N`, the halved total of all insertions.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The budgeted memory, `width · depth · q` bits: fixed by the parameters.
    pub fn bits(&self) -> u64 {
        self.counters.len() * u64::from(self.counter_bits())
    }

    /// Memory held by the counters, in bits (whole 64-bit words).
    pub fn memory_bits(&self) -> u64 {
        self.counters.memory_bits()
    }

    /// Counts one insertion of `key` (hashed with seed 0 as [`KeyHash::of`]; use
    /// [`Self::insert_hash`] with the filter's own key hash to hash once).
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(KeyHash::of(key, 0));
    }

    /// Counts one insertion of a pre-hashed key, halving everything at the end of a period.
    pub fn insert_hash(&mut self, hash: KeyHash) {
        let target = self.estimate_hash(hash) + 1;
        for i in self.cells(hash) {
            if self.counters.get(i) < target {
                self.counters.set(i, target);
            }
        }
        self.total += 1;
        self.phase += 1;
        if self.phase == self.period {
            self.halve();
        }
    }

    /// `ĉ_x`: never below the exact decayed count of the item.
    pub fn estimate_hash(&self, hash: KeyHash) -> u64 {
        self.cells(hash)
            .map(|i| self.counters.get(i))
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter and the total, rounding down, and starts a new period.
    fn halve(&mut self) {
        for i in 0..self.counters.len() {
            let c = self.counters.get(i);
            if c > 1 {
                self.counters.set(i, c / 2);
            } else if c == 1 {
                self.counters.set(i, 0);
            }
        }
        self.total /= 2;
        self.phase = 0;
    }

    /// The counter index of `hash` in every row.
    fn cells(&self, hash: KeyHash) -> impl Iterator<Item = u64> + use<> {
        let (width, salted) = (self.width, mix64(hash.lo ^ self.seed));
        (0..u64::from(self.depth)).map(move |r| {
            let h = mix64(salted.wrapping_add(r.wrapping_mul(hash.hi)));
            r * width + ((u128::from(h) * u128::from(width)) >> 64) as u64
        })
    }
}

impl SampleProbability for RecencySketch {
    /// `max(ĉ_x, floor) / max(N, 1)`, in `(0, 1]`.
    fn p_x(&self, hash: KeyHash) -> f64 {
        let c = (self.estimate_hash(hash) as f64).max(self.floor);
        (c / self.total.max(1) as f64).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The exact decayed counts, halved at the sketch's instants.
    struct Exact {
        counts: HashMap<u64, u64>,
        period: u64,
        seen: u64,
    }

    impl Exact {
        fn new(period: u64) -> Self {
            Exact {
                counts: HashMap::new(),
                period,
                seen: 0,
            }
        }
        fn insert(&mut self, x: u64) {
            *self.counts.entry(x).or_insert(0) += 1;
            self.seen += 1;
            if self.seen.is_multiple_of(self.period) {
                self.counts.values_mut().for_each(|c| *c /= 2);
            }
        }
    }

    /// Inserts `stream` and checks after each insertion that no estimate undercounts, that
    /// `p_x` lies in `(0, 1]` and that the memory has not moved.
    fn never_undercounts(mut s: RecencySketch, stream: impl Iterator<Item = u64>) {
        let (bits, held) = (s.bits(), s.memory_bits());
        let mut exact = Exact::new(s.period());
        for x in stream {
            s.insert_hash(KeyHash::of(&x, 3));
            exact.insert(x);
            for (&y, &c) in &exact.counts {
                let h = KeyHash::of(&y, 3);
                assert!(
                    s.estimate_hash(h) >= c,
                    "item {y}: {} < {c}",
                    s.estimate_hash(h)
                );
                let p = s.p_x(h);
                assert!(p > 0.0 && p <= 1.0, "p_x {p}");
            }
            assert!(s.total() < 2 * s.period());
        }
        assert_eq!((s.bits(), s.memory_bits()), (bits, held));
    }

    #[test]
    fn estimates_never_undercount_on_random_streams() {
        for (width, depth, period) in [(8u64, 1u32, 16u64), (5, 3, 7), (64, 2, 1), (3, 2, 100)] {
            let s = RecencySketch::new(width, depth, period, 0.5, 11).expect("shape");
            never_undercounts(s, (0..3_000u64).map(|i| mix64(i) % 40));
        }
    }

    #[test]
    fn estimates_never_undercount_on_adversarial_streams() {
        // one cell for everything; a single item up to the counters' ceiling; all distinct;
        // long bursts of rare items between heavy hitters; a period boundary every insertion
        let bursts = (0..4_000u64).map(|i| {
            if (i / 50) % 7 == 3 {
                1_000 + i / 350
            } else {
                i % 3
            }
        });
        let cases: Vec<(RecencySketch, Vec<u64>)> = vec![
            (
                RecencySketch::new(1, 1, 32, 1.0, 0).expect("shape"),
                (0..2_000).map(|i| i % 17).collect(),
            ),
            (
                RecencySketch::new(4, 2, 64, 1.0, 0).expect("shape"),
                vec![9; 1_000],
            ),
            (
                RecencySketch::new(4, 2, 16, 1.0, 0).expect("shape"),
                (0..2_000).collect(),
            ),
            (
                RecencySketch::new(6, 2, 16, 0.25, 0).expect("shape"),
                bursts.collect(),
            ),
            (
                RecencySketch::new(2, 4, 1, 1.0, 0).expect("shape"),
                (0..500).map(|i| i % 5).collect(),
            ),
        ];
        for (s, stream) in cases {
            never_undercounts(s, stream.into_iter());
        }
    }

    #[test]
    fn a_single_item_reaches_but_never_passes_the_counter_ceiling() {
        let mut s = RecencySketch::new(2, 1, 8, 1.0, 0).expect("shape");
        assert_eq!(s.counter_bits(), 4);
        let h = KeyHash::of(&1u64, 0);
        let mut top = 0;
        for _ in 0..200 {
            top = top.max(s.estimate_hash(h));
            s.insert_hash(h);
        }
        // 2H − 1 is stored inside the period's last insertion, just before the halving
        assert_eq!(top, 2 * 8 - 2);
        assert_eq!(s.p_x(h), 1.0);
    }

    #[test]
    fn counts_decay_once_an_item_stops() {
        let mut s = RecencySketch::new(64, 2, 16, 0.5, 5).expect("shape");
        let (burst, other) = (KeyHash::of(&7u64, 0), |i: u64| {
            KeyHash::of(&(100 + i % 4), 0)
        });
        for _ in 0..32 {
            s.insert_hash(burst);
        }
        let during = s.p_x(burst);
        assert!(during > 0.9, "{during}");
        let mut prev = s.estimate_hash(burst);
        for i in 0..16 * 8 {
            s.insert_hash(other(i));
            let now = s.estimate_hash(burst);
            assert!(now <= prev, "an absent item's count rose");
            prev = now;
        }
        // eight halvings later the burst is forgotten down to the floor
        assert!(s.p_x(burst) < 0.05, "{}", s.p_x(burst));
    }

    #[test]
    fn memory_is_fixed_by_the_parameters() {
        let a = RecencySketch::for_bits(100, 2, 16, 0.5, 0).expect("shape");
        assert_eq!((a.width(), a.counter_bits(), a.bits()), (10, 5, 100));
        let b = RecencySketch::for_bits(1_000, 1, 1_000, 0.5, 0).expect("shape");
        assert_eq!((b.counter_bits(), b.width(), b.bits()), (11, 90, 990));
        let mut c = a.clone();
        for i in 0..10_000u64 {
            c.insert(&(i % 1_000));
        }
        assert_eq!((c.bits(), c.memory_bits()), (a.bits(), a.memory_bits()));
        assert_eq!(RecencySketch::bits_for_period(1), 1);
        assert_eq!(RecencySketch::bits_for_period(MAX_HALVING_PERIOD), 32);
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        let invalid = |r: Result<RecencySketch>| matches!(r, Err(Error::InvalidParameter { .. }));
        assert!(invalid(RecencySketch::new(0, 1, 8, 0.5, 0)));
        assert!(invalid(RecencySketch::new(8, 0, 8, 0.5, 0)));
        assert!(invalid(RecencySketch::new(8, 1, 0, 0.5, 0)));
        assert!(invalid(RecencySketch::new(
            8,
            1,
            MAX_HALVING_PERIOD + 1,
            0.5,
            0
        )));
        assert!(invalid(RecencySketch::new(8, 1, 8, 0.0, 0)));
        assert!(invalid(RecencySketch::new(8, 1, 8, 1.5, 0)));
        assert!(invalid(RecencySketch::new(8, 1, 8, f64::NAN, 0)));
        assert!(invalid(RecencySketch::for_bits(7, 2, 8, 0.5, 0)));
        assert!(invalid(RecencySketch::for_bits(64, 0, 8, 0.5, 0)));
        assert!(invalid(RecencySketch::for_bits(64, 1, 0, 0.5, 0)));
        assert!(RecencySketch::new(u64::MAX, 2, 8, 0.5, 0).is_err());
    }

    #[test]
    fn serde_round_trip_and_checked_read() {
        let mut s = RecencySketch::new(12, 2, 10, 0.5, 3).expect("shape");
        for i in 0..95u64 {
            s.insert(&(i % 6));
        }
        let json = serde_json::to_string(&s).expect("serialize");
        let back: RecencySketch = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, s);
        let h = KeyHash::of(&2u64, 0);
        assert_eq!(back.p_x(h), s.p_x(h));
        // a total at 2H or above cannot come from the sketch
        let mut v: serde_json::Value = serde_json::from_str(&json).expect("json");
        v["total"] = serde_json::json!(20);
        assert!(serde_json::from_value::<RecencySketch>(v.clone()).is_err());
        v["total"] = serde_json::json!(s.total());
        v["period"] = serde_json::json!(1_000);
        assert!(serde_json::from_value::<RecencySketch>(v).is_err());
    }
}
