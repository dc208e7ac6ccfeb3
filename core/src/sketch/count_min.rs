//! The Count-Min sketch (Cormode and Muthukrishnan 2005; paper 000 §3.2 and §6, its reference
//! [12]): the paper's estimator of the probe frequencies f_i.
//!
//! A sketch of depth d and width w keeps d rows of w counters; an update of key x by c adds c to
//! one counter per row, chosen by that row's hash of x, and a point query returns the smallest of
//! x's d counters. The estimate never falls below the true count f(x), and with w = ⌈e / ε⌉ and
//! d = ⌈ln(1 / δ)⌉ it exceeds f(x) + ε·N (N the total of all updates) with probability at most δ.
//! The optional conservative update (Estan and Varghese 2002) raises only the counters below the
//! new minimum estimate, which keeps both guarantees and lowers the error. Sketches of the same
//! shape, seed and update rule merge by adding counters: the result answers for the union of the
//! streams (an upper bound with the same guarantee in the conservative case).
//!
//! Row r hashes a key hash (h1, h2) to mix64(h1 + r·h2) mod w (double hashing, reduced by
//! multiply-shift); the bounds assume these row hashes behave as independent.

use crate::error::{Error, Result};
use crate::hash::{mix64, Key, KeyHash};
use serde::{Deserialize, Serialize};

/// The most counters (width × depth) a sketch may have.
pub const MAX_COUNTERS: usize = 1 << 28;

/// A Count-Min sketch of `depth` rows of `width` 64-bit counters.
///
/// ```
/// use chronobloom_core::sketch::CountMinSketch;
/// let mut cm = CountMinSketch::with_accuracy(0.001, 0.01, 7).unwrap();
/// for level in 0..17u64 {
///     cm.insert(&level, 1 + level); // probes per filter
/// }
/// let f = cm.estimate(&3u64);
/// assert!(f >= 4 && (f as f64) <= 4.0 + cm.error_bound());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "CmParts")]
pub struct CountMinSketch {
    seed: u64,
    width: usize,
    depth: usize,
    conservative: bool,
    total: u64,
    counters: Vec<u64>,
}

/// The serialized form, validated into a sketch.
#[derive(Deserialize)]
struct CmParts {
    seed: u64,
    width: usize,
    depth: usize,
    conservative: bool,
    total: u64,
    counters: Vec<u64>,
}

impl TryFrom<CmParts> for CountMinSketch {
    type Error = Error;

    /// The shape is checked against the counters read before anything is allocated for it, and
    /// no counter may exceed the total (every count added to one was added to the total).
    fn try_from(p: CmParts) -> Result<Self> {
        let n = counters_for(p.width, p.depth)?;
        if p.counters.len() != n {
            return Err(Error::ShapeMismatch {
                what: "counters (width × depth)",
                left: n as u64,
                right: p.counters.len() as u64,
            });
        }
        if let Some(&c) = p.counters.iter().find(|&&c| c > p.total) {
            return Err(Error::ShapeMismatch {
                what: "a counter above the total",
                left: c,
                right: p.total,
            });
        }
        Ok(CountMinSketch {
            seed: p.seed,
            width: p.width,
            depth: p.depth,
            conservative: p.conservative,
            total: p.total,
            counters: p.counters,
        })
    }
}

/// The counters of a `width × depth` sketch: both at least 1, at most [`MAX_COUNTERS`] in all.
fn counters_for(width: usize, depth: usize) -> Result<usize> {
    if width == 0 || depth == 0 {
        return Err(Error::invalid("width/depth", "both must be at least 1"));
    }
    match width.checked_mul(depth) {
        Some(n) if n <= MAX_COUNTERS => Ok(n),
        _ => Err(Error::invalid(
            "width/depth",
            format!("{width} × {depth} is more than {MAX_COUNTERS} counters"),
        )),
    }
}

impl CountMinSketch {
    /// An empty sketch of `depth` rows of `width` counters hashing keys with `seed`.
    pub fn new(width: usize, depth: usize, seed: u64) -> Result<Self> {
        Ok(CountMinSketch {
            seed,
            width,
            depth,
            conservative: false,
            total: 0,
            counters: vec![0; counters_for(width, depth)?],
        })
    }

    /// The sketch that overestimates by more than ε·N with probability at most δ:
    /// w = ⌈e / ε⌉, d = ⌈ln(1 / δ)⌉.
    pub fn with_accuracy(epsilon: f64, delta: f64, seed: u64) -> Result<Self> {
        for (name, v) in [("epsilon", epsilon), ("delta", delta)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(Error::invalid(name, format!("{v} is not in (0, 1)")));
            }
        }
        let width = (std::f64::consts::E / epsilon).ceil();
        let depth = (1.0 / delta).ln().ceil().max(1.0);
        if width * depth > MAX_COUNTERS as f64 {
            return Err(Error::invalid(
                "epsilon",
                format!("ε = {epsilon}, δ = {delta} need more than {MAX_COUNTERS} counters"),
            ));
        }
        Self::new(width as usize, depth as usize, seed)
    }

    /// The same empty sketch with conservative update switched on (or off).
    pub fn conservative(mut self, on: bool) -> Self {
        self.conservative = on;
        self
    }

    /// Counters per row, w.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows, d.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// True when updates are conservative.
    pub fn is_conservative(&self) -> bool {
        self.conservative
    }

    /// N: the sum of all counts added (saturating).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Memory held by the counters, in bytes.
    pub fn memory_bytes(&self) -> usize {
        8 * self.counters.len()
    }

    /// ε = e / w: the additive error, relative to N, that the estimate exceeds with probability at
    /// most [`Self::failure_probability`].
    pub fn epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// δ = e^{−d}.
    pub fn failure_probability(&self) -> f64 {
        (-(self.depth as f64)).exp()
    }

    /// ε·N: with probability at least 1 − δ an estimate exceeds the true count by at most this.
    pub fn error_bound(&self) -> f64 {
        self.epsilon() * self.total as f64
    }

    /// Adds `count` to `key`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, count: u64) {
        self.insert_hash(KeyHash::of(key, self.seed), count);
    }

    /// Adds `count` to a pre-hashed key (hashed with [`Self::seed`]).
    pub fn insert_hash(&mut self, hash: KeyHash, count: u64) {
        self.total = self.total.saturating_add(count);
        if self.conservative {
            let target = self.estimate_hash(hash).saturating_add(count);
            for i in self.cells(hash) {
                self.counters[i] = self.counters[i].max(target);
            }
        } else {
            for i in self.cells(hash) {
                self.counters[i] = self.counters[i].saturating_add(count);
            }
        }
    }

    /// The estimated count of `key`: never below the true count.
    pub fn estimate<K: Key + ?Sized>(&self, key: &K) -> u64 {
        self.estimate_hash(KeyHash::of(key, self.seed))
    }

    /// The estimated count of a pre-hashed key.
    pub fn estimate_hash(&self, hash: KeyHash) -> u64 {
        self.cells(hash)
            .map(|i| self.counters[i])
            .min()
            .unwrap_or(0)
    }

    /// Adds the counters of a sketch of the same width, depth, seed and update rule: afterwards this
    /// sketch answers for both streams.
    pub fn merge(&mut self, other: &CountMinSketch) -> Result<()> {
        for (what, l, r) in [
            ("width", self.width as u64, other.width as u64),
            ("depth", self.depth as u64, other.depth as u64),
            ("seed", self.seed, other.seed),
            (
                "conservative update",
                u64::from(self.conservative),
                u64::from(other.conservative),
            ),
        ] {
            if l != r {
                return Err(Error::ShapeMismatch {
                    what,
                    left: l,
                    right: r,
                });
            }
        }
        for (a, b) in self.counters.iter_mut().zip(&other.counters) {
            *a = a.saturating_add(*b);
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }

    /// The counter index of `hash` in every row.
    fn cells(&self, hash: KeyHash) -> impl Iterator<Item = usize> + use<> {
        let width = self.width;
        (0..self.depth).map(move |r| {
            let h = mix64(hash.lo.wrapping_add((r as u64).wrapping_mul(hash.hi)));
            r * width + ((u128::from(h) * width as u128) >> 64) as usize
        })
    }
}
