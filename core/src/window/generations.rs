//! Generation slices: a time window kept as one Bloom filter per generation of `S + 1` ticks,
//! mergeable by OR when every copy agrees on the slices' shapes, and a distinct-key sketch per
//! generation (merged by OR too) to decide those shapes from the stream.
//!
//! # Guarantee
//!
//! The same as [`TaggedCuckooFilter`](crate::window::TaggedCuckooFilter): a key inserted at `u`
//! is reported at `t` whenever `t − u < W`; it is forgotten (up to ε) once `t − u ≥ W + S`.
//! A query at `t` reads the slices of generations `γ(t − W + 1) ..= γ(t)`, at most
//! `L = ⌈(W − 1) / (S + 1)⌉ + 1` of them, so each slice is sized for `ε / L`.
//!
//! # Why slices
//!
//! Slices of plain bits are what workers can exchange and OR together: two copies that received
//! the same keys, in any order and split any way between them, hold the same bits, so the union
//! of every worker's keys is the same on every worker and its [`digest`](GenerationSlices::digest)
//! is too. The price against the cuckoo dictionary is that a key seen in many generations is in
//! many slices: about `1.44 log2(L / ε)` bits (blocked layout: about 20% more) per key and
//! generation it appears in.
//!
//! ```
//! use chronobloom_core::window::GenerationSlices;
//! let mut view = GenerationSlices::new(60, 3, 0.01, 7).unwrap();
//! let g = view.generation_of(100);
//! let shape = view.shape_for(1_000).unwrap();
//! view.open(g, shape).unwrap();
//! view.insert(g, 0xfeed).unwrap();
//! assert!(view.contains(0xfeed, 159)); // 59 ticks later: inside the window
//! assert!(!view.contains(0xfeed, 163)); // W + S ticks later: forgotten
//! ```

use crate::bloom::{BloomFilter, Filter, FilterShape, Layout, BLOCK_BITS};
use crate::error::{Error, Result};
use crate::hash::{mix64, KeyHash};
use crate::sketch::FmSketch;
use crate::temporal::Tick;
use crate::window::{live_generations, min_slack, MAX_LIVE_GENERATIONS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bitmaps of the per-generation distinct-key sketches (relative standard error about 7%).
const SKETCH_BITMAPS: usize = 128;
/// Room left above a generation's estimated keys when a later slice is sized from it.
const HEADROOM: f64 = 1.25;
/// Salt of the sketch's second hash half (the slices use the key hash's low half only).
const SKETCH_SALT: u64 = 0x6e3a_5c1d_9b27_f048;

/// Per-generation Bloom slices over a time window (see the [module docs](self)).
///
/// Read back with serde, the parameters are checked as [`GenerationSlices::new`] checks them,
/// and every slice and sketch must be one [`open`](GenerationSlices::open) and
/// [`count`](GenerationSlices::count) make (blocked, hashed with the view's seed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SlicesRepr")]
pub struct GenerationSlices {
    window: Tick,
    slack: Tick,
    fpr: f64,
    seed: u64,
    live_gens: u64,
    slices: BTreeMap<u64, BloomFilter>,
    sketches: BTreeMap<u64, FmSketch>,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
struct SlicesRepr {
    window: Tick,
    slack: Tick,
    fpr: f64,
    seed: u64,
    live_gens: u64,
    slices: BTreeMap<u64, BloomFilter>,
    sketches: BTreeMap<u64, FmSketch>,
}

impl TryFrom<SlicesRepr> for GenerationSlices {
    type Error = Error;
    fn try_from(r: SlicesRepr) -> Result<Self> {
        let empty = GenerationSlices::new(r.window, r.slack, r.fpr, r.seed)?;
        if r.live_gens != empty.live_gens {
            return Err(Error::ShapeMismatch {
                what: "live generations vs window and slack",
                left: r.live_gens,
                right: empty.live_gens,
            });
        }
        if let Some(s) = r
            .slices
            .values()
            .find(|s| s.layout() != Layout::Blocked || s.seed() != r.seed)
        {
            return Err(Error::ShapeMismatch {
                what: "slice seed (or a slice not in the blocked layout)",
                left: s.seed(),
                right: r.seed,
            });
        }
        if let Some(s) = r
            .sketches
            .values()
            .find(|s| s.bitmaps() != SKETCH_BITMAPS || s.seed() != r.seed)
        {
            return Err(Error::ShapeMismatch {
                what: "sketch bitmaps",
                left: s.bitmaps() as u64,
                right: SKETCH_BITMAPS as u64,
            });
        }
        Ok(GenerationSlices {
            slices: r.slices,
            sketches: r.sketches,
            ..empty
        })
    }
}

impl GenerationSlices {
    /// Empty slices for a window of `window` ticks (at least 1) with slack `slack` (at least
    /// [`min_slack`]`(window)`) at false positive rate `fpr` in (0, 1).
    pub fn new(window: Tick, slack: Tick, fpr: f64, seed: u64) -> Result<Self> {
        if window == 0 {
            return Err(Error::invalid("window", "must be at least 1 tick"));
        }
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
        }
        let live_gens = live_generations(window, slack);
        if live_gens > MAX_LIVE_GENERATIONS {
            return Err(Error::invalid(
                "slack",
                format!(
                    "{slack} is below {} for a window of {window}",
                    min_slack(window)
                ),
            ));
        }
        Ok(GenerationSlices {
            window,
            slack,
            fpr,
            seed,
            live_gens,
            slices: BTreeMap::new(),
            sketches: BTreeMap::new(),
        })
    }

    /// Whether `other` was made with the same window, slack, false positive rate and seed, so
    /// that it can stand for this view (a restored checkpoint, say).
    pub fn same_parameters(&self, other: &GenerationSlices) -> bool {
        (self.window, self.slack, self.fpr.to_bits(), self.seed)
            == (other.window, other.slack, other.fpr.to_bits(), other.seed)
    }

    /// The generation of tick `t`.
    pub fn generation_of(&self, t: Tick) -> u64 {
        t / self.slack.saturating_add(1)
    }

    /// The first tick of generation `g`.
    pub fn generation_start(&self, g: u64) -> Tick {
        g.saturating_mul(self.slack.saturating_add(1))
    }

    /// Generations a query reads at most.
    pub fn live_generations(&self) -> u64 {
        self.live_gens
    }

    /// The blocked shape holding `items` keys at `ε / L` (at least one block).
    pub fn shape_for(&self, items: u64) -> Result<FilterShape> {
        let per_slice = self.fpr / self.live_gens as f64;
        let shape = FilterShape::for_fpr(items.max(1), per_slice)?;
        // blocked filters lose some accuracy to uneven blocks: 20% more bits, whole blocks
        let bits = ((shape.bits as f64 * 1.2) as u64)
            .div_ceil(BLOCK_BITS)
            .max(1)
            .saturating_mul(BLOCK_BITS);
        Ok(FilterShape {
            bits,
            hashes: shape.hashes,
        })
    }

    /// The shape for a generation expected to hold `expected` keys, or as many as the sketch
    /// of generation `from` estimates if more, with 25% headroom and at least `floor` keys.
    pub fn shape_from(&self, from: Option<u64>, expected: u64, floor: u64) -> Result<FilterShape> {
        let estimate = from
            .and_then(|g| self.sketches.get(&g))
            .map_or(0.0, FmSketch::estimate)
            .max(expected as f64);
        self.shape_for(((HEADROOM * estimate) as u64).max(floor))
    }

    /// Opens generation `g`'s slice with `shape` (nothing to do if it is open with that shape;
    /// [`Error::ShapeMismatch`] if it is open with another).
    pub fn open(&mut self, g: u64, shape: FilterShape) -> Result<()> {
        if let Some(s) = self.slices.get(&g) {
            if s.shape() != shape {
                return Err(Error::ShapeMismatch {
                    what: "generation slice bits",
                    left: s.shape().bits,
                    right: shape.bits,
                });
            }
            return Ok(());
        }
        let slice = BloomFilter::with_layout(shape, self.seed, Layout::Blocked)?;
        self.slices.insert(g, slice);
        Ok(())
    }

    /// Whether generation `g`'s slice is open.
    pub fn is_open(&self, g: u64) -> bool {
        self.slices.contains_key(&g)
    }

    /// Inserts a 64-bit key hash ([`KeyHash::lo`]) into generation `g`'s slice (which must be
    /// open) and counts it in `g`'s sketch.
    pub fn insert(&mut self, g: u64, hash: u64) -> Result<()> {
        let slice = self
            .slices
            .get_mut(&g)
            .ok_or_else(|| Error::invalid("generation", format!("slice {g} is not open")))?;
        slice.insert_hash(KeyHash { lo: hash, hi: 0 });
        self.count(g, hash)
    }

    /// Counts a key hash in generation `g`'s sketch only.
    pub fn count(&mut self, g: u64, hash: u64) -> Result<()> {
        let sketch = match self.sketches.entry(g) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(FmSketch::new(SKETCH_BITMAPS, self.seed)?)
            }
        };
        sketch.insert_hash(KeyHash {
            lo: hash,
            hi: mix64(hash ^ SKETCH_SALT),
        });
        Ok(())
    }

    /// Whether a key hash was inserted in the window ending at `now` (see the guarantee).
    pub fn contains(&self, hash: u64, now: Tick) -> bool {
        let first = self.generation_of(now.saturating_add(1).saturating_sub(self.window));
        let last = self.generation_of(now);
        let h = KeyHash { lo: hash, hi: 0 };
        self.slices
            .range(first..=last)
            .any(|(_, s)| s.contains_hash(h))
    }

    /// Drops the slices no query at or after `now` reads, and the sketches of generations more
    /// than `sketches` before `now`'s (a later slice is sized from a recent generation's).
    pub fn retire(&mut self, now: Tick, sketches: u64) {
        let first = self.generation_of(now.saturating_add(1).saturating_sub(self.window));
        self.slices = self.slices.split_off(&first);
        let keep = self.generation_of(now).saturating_sub(sketches);
        self.sketches = self.sketches.split_off(&keep);
    }

    /// The open slices, oldest first.
    pub fn slices(&self) -> impl Iterator<Item = (u64, &BloomFilter)> {
        self.slices.iter().map(|(&g, s)| (g, s))
    }

    /// Bits held by the slices and the sketches.
    pub fn memory_bits(&self) -> u64 {
        let slices: u64 = self.slices.values().map(|s| s.shape().bits).sum();
        let sketches: u64 = self
            .sketches
            .values()
            .map(|s| 8 * s.memory_bytes() as u64)
            .sum();
        slices + sketches
    }

    /// A digest of the slices: xxh3-64 over each open slice's generation (`u64` LE), bit
    /// length (`u64` LE) and words (LE), oldest first. Two copies with equal digests hold the
    /// same bits.
    pub fn digest(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3Default::new();
        for (g, s) in &self.slices {
            h.update(&g.to_le_bytes());
            h.update(&s.shape().bits.to_le_bytes());
            for w in s.bits().words() {
                h.update(&w.to_le_bytes());
            }
        }
        h.digest()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(k: u64) -> u64 {
        KeyHash::of(&k, 4).lo
    }

    fn filled(keys: impl Iterator<Item = (u64, Tick)>) -> GenerationSlices {
        let mut v = GenerationSlices::new(60, 3, 0.01, 1).unwrap();
        let shape = v.shape_for(2_000).unwrap();
        for (k, t) in keys {
            let g = v.generation_of(t);
            v.open(g, shape).unwrap();
            v.insert(g, h(k)).unwrap();
        }
        v
    }

    #[test]
    fn refuses_bad_parameters_and_mismatched_shapes() {
        assert!(GenerationSlices::new(0, 3, 0.01, 0).is_err());
        assert!(GenerationSlices::new(60, 3, 1.5, 0).is_err());
        assert!(GenerationSlices::new(1_000, 0, 0.01, 0).is_err());
        let mut v = GenerationSlices::new(60, 3, 0.01, 0).unwrap();
        assert!(v.insert(5, 1).is_err());
        v.open(5, v.shape_for(100).unwrap()).unwrap();
        let other = v.shape_for(10_000).unwrap();
        assert!(matches!(v.open(5, other), Err(Error::ShapeMismatch { .. })));
    }

    #[test]
    fn any_split_and_order_gives_the_same_bits() {
        let keys: Vec<(u64, Tick)> = (0..3_000).map(|i| (i % 700, i / 10)).collect();
        let one = filled(keys.iter().copied());
        let reversed = filled(keys.iter().rev().copied());
        assert_eq!(one.digest(), reversed.digest());
        // two halves OR-ed slice by slice
        let (a, b) = keys.split_at(1_234);
        let mut x = filled(a.iter().copied());
        let y = filled(b.iter().copied());
        for (g, s) in y.slices() {
            x.open(g, s.shape()).unwrap();
            x.slices.get_mut(&g).unwrap().union(s).unwrap();
        }
        assert_eq!(x.digest(), one.digest());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// No false negative inside the window, and retiring keeps what later queries read.
        #[test]
        fn no_false_negative(ticks in proptest::collection::vec(0u64..500, 1..300)) {
            let mut ticks = ticks;
            ticks.sort_unstable();
            let mut v = GenerationSlices::new(60, 3, 0.01, 2).unwrap();
            let shape = v.shape_for(300).unwrap();
            for (i, &t) in ticks.iter().enumerate() {
                v.retire(t, 2);
                let g = v.generation_of(t);
                v.open(g, shape).unwrap();
                v.insert(g, h(i as u64)).unwrap();
                for (j, &u) in ticks[..=i].iter().enumerate() {
                    if t - u < 60 {
                        prop_assert!(v.contains(h(j as u64), t));
                    }
                }
            }
        }
    }

    #[test]
    fn measured_fpr_meets_the_target() {
        // 17 live generations of 2,000 keys each
        let mut v = GenerationSlices::new(64, 3, 0.01, 3).unwrap();
        let shape = v.shape_for(2_000).unwrap();
        for g in 0..17 {
            v.open(g, shape).unwrap();
            for k in 0..2_000 {
                v.insert(g, h(g * 10_000 + k)).unwrap();
            }
        }
        let now = 16 * 4 + 3;
        let trials = 100_000u64;
        let fp = (0..trials)
            .filter(|i| v.contains(h(1 << 40 | i), now))
            .count() as f64
            / trials as f64;
        assert!(fp <= 0.01 + 5.0 * (0.01 / trials as f64).sqrt(), "{fp}");
        let estimate = v.sketches[&3].estimate();
        assert!((1_500.0..2_500.0).contains(&estimate), "{estimate}");
    }
}
