//! The standard timing and block timing Bloom filters (paper 004 §3.1–3.2).
//!
//! `m` timers of `bpt` bits hold timestamps in `[0, T_Ω]` or the expired value `T_ε`. Inserting
//! `x` sets its `k` timers to the current timestamp `T+`; after every block of `B` insertions `T+`
//! advances cyclically. A timestamp's age `λ` is how often `T+` advanced since it was written; it
//! has expired once `λ ≥ ⌈(w − b)/B⌉ + 1` (Definition 8), `b` being the insertions into the
//! current block. A query answers NEG iff some timer of `x` has expired, so a key among the last
//! `w` insertions is never missed. Each insertion scans `⌈m / (B(P + 1))⌉` timers and marks those
//! of age `≥ ⌈w/B⌉ + 1` expired (§3.1.3): the padding `P` leaves `B(P + 1)` insertions to reach
//! every timer before `T+` wraps around to its timestamp.

use super::shape::{BtbfShape, MAX_TIMING_HASHES};
use super::timers::TimerArray;
use crate::error::{Error, Result};
use crate::hash::{FastMod, Key, KeyHash};
use serde::{Deserialize, Serialize};

/// What a BTBF holds about one key: the inputs of the posterior (§4, eqs. 19–20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerObservation {
    /// `r_x`: distinct timers of the key (with an expired timer: those read up to it).
    pub distinct: u32,
    /// `λ_x`, the age of the oldest timestamp among them; `None` when one has expired.
    pub oldest: Option<u64>,
    /// `c_x`: timers holding the oldest timestamp.
    pub at_oldest: u32,
    /// `b`: insertions into the current block.
    pub in_block: u64,
    /// `L = ⌈(w − b)/B⌉`: the largest age still live at the observation (Definition 8).
    pub live: u64,
}

/// A block timing Bloom filter (a timing Bloom filter when `B = 1`).
///
/// ```
/// use chronobloom_core::decay::{Btbf, BtbfShape};
/// let mut f = Btbf::new(BtbfShape::for_bits(100, 1_000, 4).unwrap(), 7).unwrap();
/// f.insert(&"a");
/// for i in 0..99u64 {
///     f.insert(&i);
/// }
/// assert!(f.query(&"a")); // one of the last 100 insertions: never missed
/// ```
///
/// Read back with serde, the filter is checked by [`Btbf::validate`]: a corrupted one is an
/// error, never a filter that answers wrongly or panics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BtbfRepr")]
pub struct Btbf {
    shape: BtbfShape,
    seed: u64,
    modulus: FastMod,
    timers: TimerArray,
    /// `T+`.
    now: u64,
    /// `b`.
    in_block: u64,
    /// The next timer the expiry scan looks at.
    scan: u64,
    /// `T_Ω + 1`, the timestamps' cycle (kept: ages are taken on every probe).
    cycle: u64,
    /// `⌈(w − b)/B⌉` for the current `b` (kept: every query needs it).
    live: u64,
}

/// The serialized form, checked by [`Btbf::validate`] on the way in.
#[derive(Deserialize)]
struct BtbfRepr {
    shape: BtbfShape,
    seed: u64,
    modulus: FastMod,
    timers: TimerArray,
    now: u64,
    in_block: u64,
    scan: u64,
    cycle: u64,
    live: u64,
}

impl TryFrom<BtbfRepr> for Btbf {
    type Error = Error;
    fn try_from(r: BtbfRepr) -> Result<Self> {
        let f = Btbf {
            shape: r.shape,
            seed: r.seed,
            modulus: r.modulus,
            timers: r.timers,
            now: r.now,
            in_block: r.in_block,
            scan: r.scan,
            cycle: r.cycle,
            live: r.live,
        };
        f.validate()?;
        Ok(f)
    }
}

impl Btbf {
    /// An empty filter (every timer expired) hashing keys with `seed`; refuses a shape that
    /// [`BtbfShape::new`] would not build.
    pub fn new(shape: BtbfShape, seed: u64) -> Result<Self> {
        check_shape(&shape)?;
        let timers = TimerArray::new(shape.timers, shape.bpt, shape.t_expired())?;
        let modulus = FastMod::new(shape.timers)
            .ok_or_else(|| Error::invalid("timers", "need at least one timer"))?;
        Ok(Btbf {
            shape,
            seed,
            modulus,
            timers,
            now: 0,
            in_block: 0,
            scan: 0,
            cycle: shape.t_omega() + 1,
            live: shape.live_ages(0),
        })
    }

    /// The shape.
    pub fn shape(&self) -> &BtbfShape {
        &self.shape
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Memory held by the timers, in bits.
    pub fn memory_bits(&self) -> u64 {
        self.timers.memory_bits()
    }

    /// The age of timestamp `t` (`None` for `T_ε`).
    #[inline]
    fn age(&self, t: u64) -> Option<u64> {
        if t == self.shape.t_expired() {
            return None;
        }
        // now, t < cycle: the difference lies in (0, 2 cycle); one conditional subtraction
        let d = (self.now + self.cycle).wrapping_sub(t);
        Some(if d >= self.cycle { d - self.cycle } else { d })
    }

    /// Inserts `key`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(KeyHash::of(key, self.seed));
    }

    /// Inserts a pre-hashed key (§3.2.1), then advances the clock and scans for expired timers.
    pub fn insert_hash(&mut self, hash: KeyHash) {
        for pos in hash.probes(self.shape.hashes, self.modulus) {
            self.timers.set(pos, self.now);
        }
        if self.in_block + 1 == self.shape.block {
            self.in_block = 0;
            self.now = if self.now + 1 == self.cycle {
                0
            } else {
                self.now + 1
            };
        } else {
            self.in_block += 1;
        }
        self.live = self.shape.live_ages(self.in_block);
        self.mark_expired();
    }

    /// Marks the next `⌈m / (B(P + 1))⌉` timers expired where their age is at least `⌈w/B⌉ + 1`,
    /// which is expired whatever `b` is.
    fn mark_expired(&mut self) {
        let dead = self.shape.live_ages(0) + 1;
        let expired = self.shape.t_expired();
        for _ in 0..self.shape.scan_per_insert() {
            let t = self.timers.get(self.scan);
            if self.age(t).is_some_and(|a| a >= dead) {
                self.timers.set(self.scan, expired);
            }
            self.scan += 1;
            if self.scan == self.shape.timers {
                self.scan = 0;
            }
        }
    }

    /// The standard answer: "was `key` among the last `w` insertions?" NEG is always right.
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.query_hash(KeyHash::of(key, self.seed))
    }

    /// [`Self::query`] for a pre-hashed key.
    #[inline]
    pub fn query_hash(&self, hash: KeyHash) -> bool {
        let live = self.live;
        hash.probes(self.shape.hashes, self.modulus)
            .all(|pos| self.age(self.timers.get(pos)).is_some_and(|a| a <= live))
    }

    /// The observation `(r_x, λ_x, c_x, b)` the posterior needs (§4).
    pub fn observe<K: Key + ?Sized>(&self, key: &K) -> TimerObservation {
        self.observe_hash(KeyHash::of(key, self.seed))
    }

    /// [`Self::observe`] for a pre-hashed key.
    #[inline]
    pub fn observe_hash(&self, hash: KeyHash) -> TimerObservation {
        let mut cells = [0u64; MAX_TIMING_HASHES as usize];
        let mut n = 0;
        let (mut oldest, mut at_oldest) = (0, 0);
        for pos in hash.probes(self.shape.hashes, self.modulus) {
            // a plain loop: `<[u64]>::contains` measured slower here than the whole query
            if cells.iter().take(n).any(|&c| c == pos) {
                continue;
            }
            let Some(age) = self.age(self.timers.get(pos)).filter(|&a| a <= self.live) else {
                // the posterior is 0 whatever the other timers hold (Theorem 2)
                return TimerObservation {
                    distinct: n as u32 + 1,
                    oldest: None,
                    at_oldest: 0,
                    in_block: self.in_block,
                    live: self.live,
                };
            };
            cells[n] = pos;
            n += 1;
            // selects, not branches: ages are random
            at_oldest = if age > oldest {
                1
            } else {
                at_oldest + u32::from(age == oldest)
            };
            oldest = oldest.max(age);
        }
        TimerObservation {
            distinct: n as u32,
            oldest: Some(oldest),
            at_oldest,
            in_block: self.in_block,
            live: self.live,
        }
    }

    /// Checks that the stored timers agree with the shape (deserializing does this).
    pub fn validate(&self) -> Result<()> {
        check_shape(&self.shape)?;
        if self.cycle != self.shape.t_omega() + 1
            || self.now >= self.cycle
            || self.in_block >= self.shape.block
            || self.live != self.shape.live_ages(self.in_block)
        {
            return Err(Error::ShapeMismatch {
                what: "timestamp cycle vs shape",
                left: self.cycle,
                right: self.shape.t_omega() + 1,
            });
        }
        if self.timers.len() != self.shape.timers
            || self.timers.bpt() != self.shape.bpt
            || self.modulus.divisor() != self.shape.timers
            || self.scan >= self.shape.timers
        {
            return Err(Error::ShapeMismatch {
                what: "timers (count, width, modulus or scan position) vs shape",
                left: self.timers.len(),
                right: self.shape.timers,
            });
        }
        // Timestamps lie in [0, T_Ω] or are T_ε; any other value has no age.
        let (omega, expired) = (self.shape.t_omega(), self.shape.t_expired());
        if let Some(i) = (0..self.timers.len())
            .find(|&i| self.timers.get(i) > omega && self.timers.get(i) != expired)
        {
            return Err(Error::invalid(
                "timers",
                format!("timer {i} holds {}, not a timestamp", self.timers.get(i)),
            ));
        }
        Ok(())
    }
}

/// `shape` is what [`BtbfShape::new`] builds from its parameters.
fn check_shape(shape: &BtbfShape) -> Result<()> {
    let s = &shape;
    let rebuilt = BtbfShape::new(s.window, s.timers, s.hashes, s.bpt, s.block)?;
    if rebuilt != *shape {
        return Err(Error::ShapeMismatch {
            what: "padding",
            left: shape.padding,
            right: rebuilt.padding,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::mix64;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Replays `stream`, checking before each insertion that every key among the last `w`
    /// insertions is reported present.
    fn no_false_negatives(shape: BtbfShape, stream: &[u64]) {
        let mut f = Btbf::new(shape, 3).expect("shape");
        let mut last: HashMap<u64, usize> = HashMap::new();
        for (t, &x) in stream.iter().enumerate() {
            for (&y, &at) in &last {
                if t - at <= shape.window as usize {
                    assert!(
                        f.query(&y),
                        "{y} inserted {} ago missed by {shape:?}",
                        t - at
                    );
                    assert!(f.observe(&y).oldest.is_some());
                }
            }
            f.insert(&x);
            last.insert(x, t);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn tbf_has_no_false_negatives(
            w in 1u64..40, m in 1u64..120, k in 1u32..5, seed in any::<u64>(), len in 1usize..400,
        ) {
            let stream: Vec<u64> = (0..len as u64).map(|i| mix64(i ^ seed) % 60).collect();
            no_false_negatives(BtbfShape::tbf(w, m, k).expect("shape"), &stream);
        }

        #[test]
        fn btbf_has_no_false_negatives(
            w in 1u64..60, m in 1u64..120, k in 1u32..5, block in 1u64..9, extra in 0u32..3,
            seed in any::<u64>(), len in 1usize..400,
        ) {
            let need = w.div_ceil(block) + 3;
            let bpt = (64 - need.leading_zeros()) + extra;
            let shape = BtbfShape::new(w, m, k, bpt, block).expect("shape");
            let stream: Vec<u64> = (0..len as u64).map(|i| mix64(i ^ seed) % 80).collect();
            no_false_negatives(shape, &stream);
        }
    }

    #[test]
    fn old_keys_expire_when_alone() {
        let shape = BtbfShape::tbf(10, 10_000, 3).expect("shape");
        let mut f = Btbf::new(shape, 1).expect("shape");
        f.insert(&"old");
        for i in 0..10u64 {
            assert!(f.query(&"old"), "inside the window after {i} more");
            f.insert(&i);
        }
        assert!(!f.query(&"old"));
        assert_eq!(f.observe(&"old").oldest, None);
    }

    #[test]
    fn serde_round_trip() {
        let mut f = Btbf::new(BtbfShape::for_bits(50, 600, 3).expect("shape"), 9).expect("shape");
        for i in 0..77u64 {
            f.insert(&i);
        }
        let back: Btbf =
            serde_json::from_str(&serde_json::to_string(&f).expect("ser")).expect("de");
        assert_eq!(back, f);
        assert!(back.validate().is_ok());
    }
}
