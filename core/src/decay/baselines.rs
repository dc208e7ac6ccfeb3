//! The baselines of paper 004 §6: decisions from the prior alone, and the simple inferential
//! buffer of §6.2 (`bph`-bit hashes of the last `δ = ⌊bits / bph⌋` insertions, `δ ≤ w`).

use super::prior::{survive, DistinctModel};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The prior-only posterior `P(I_x < w) = 1 − (1 − p)^w` (eq. 5 with `α = 0`): zero bits stored.
pub fn prior_only(p: f64, window: u64) -> f64 {
    1.0 - survive(p, window as f64)
}

/// The simple buffer: a ring of the last `δ` insertions' `bph`-bit hashes. Only the ring counts as
/// storage; the occurrence index beside it stands for the paper's linear scan (same answers).
///
/// ```
/// use chronobloom_core::decay::baselines::SimpleBuffer;
/// let mut b = SimpleBuffer::new(100, 800, 16, 1).unwrap();
/// assert_eq!(b.capacity(), 50);
/// b.insert(&"a");
/// assert!(b.contains(&"a"));
/// ```
///
/// Read back with serde, the buffer is checked: `1..=32`-bit hashes, `1 ≤ δ ≤ w`, at most `δ`
/// hashes that fit their width, the ring's next slot inside it, and the index counting exactly
/// the ring's hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BufferRepr")]
pub struct SimpleBuffer {
    window: u64,
    bph: u32,
    seed: u64,
    capacity: usize,
    ring: Vec<u32>,
    next: usize,
    index: HashMap<u32, u32>,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
struct BufferRepr {
    window: u64,
    bph: u32,
    seed: u64,
    capacity: usize,
    ring: Vec<u32>,
    next: usize,
    index: HashMap<u32, u32>,
}

impl TryFrom<BufferRepr> for SimpleBuffer {
    type Error = Error;
    fn try_from(r: BufferRepr) -> Result<Self> {
        let width_ok = (1..=32).contains(&r.bph)
            && (r.capacity as u64).checked_mul(u64::from(r.bph)).is_some();
        let full = r.ring.len() == r.capacity;
        let ring_ok = width_ok
            && r.capacity >= 1
            && r.capacity as u64 <= r.window
            && r.ring.len() <= r.capacity
            && if full {
                r.next < r.capacity
            } else {
                r.next == 0
            }
            && r.ring.iter().all(|&h| u64::from(h) >> r.bph == 0);
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for &h in &r.ring {
            *counts.entry(h).or_insert(0) += 1;
        }
        if !ring_ok || counts != r.index {
            return Err(Error::invalid(
                "buffer",
                "hash width, capacity, ring position or index out of agreement",
            ));
        }
        Ok(SimpleBuffer {
            window: r.window,
            bph: r.bph,
            seed: r.seed,
            capacity: r.capacity,
            ring: r.ring,
            next: r.next,
            index: r.index,
        })
    }
}

impl SimpleBuffer {
    /// A buffer for window `window` in `bits` bits of `bph`-bit hashes (1 to 32); it needs room
    /// for at least one hash.
    pub fn new(window: u64, bits: u64, bph: u32, seed: u64) -> Result<Self> {
        if !(1..=32).contains(&bph) {
            return Err(Error::invalid(
                "bits per hash",
                format!("{bph} is outside 1..=32"),
            ));
        }
        let capacity = (bits / u64::from(bph)).min(window);
        if capacity == 0 {
            return Err(Error::invalid(
                "bits",
                format!("{bits} bits hold no {bph}-bit hash (or the window is 0)"),
            ));
        }
        let capacity = usize::try_from(capacity).map_err(|_| Error::OutOfMemory { bits })?;
        Ok(SimpleBuffer {
            window,
            bph,
            seed,
            capacity,
            ring: Vec::with_capacity(capacity.min(1 << 24)),
            next: 0,
            index: HashMap::new(),
        })
    }

    /// `δ`, the insertions remembered.
    pub fn capacity(&self) -> u64 {
        self.capacity as u64
    }

    /// Memory of the hashes, in bits (`δ · bph`).
    pub fn memory_bits(&self) -> u64 {
        self.capacity() * u64::from(self.bph)
    }

    /// The `bph`-bit hash.
    fn short(&self, hash: KeyHash) -> u32 {
        (hash.lo >> (64 - self.bph)) as u32
    }

    /// Inserts `key`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(KeyHash::of(key, self.seed));
    }

    /// Inserts a pre-hashed key, forgetting the oldest once `δ` are held.
    pub fn insert_hash(&mut self, hash: KeyHash) {
        let h = self.short(hash);
        *self.index.entry(h).or_insert(0) += 1;
        if self.ring.len() < self.capacity {
            self.ring.push(h);
            return;
        }
        let old = std::mem::replace(&mut self.ring[self.next], h);
        self.next = (self.next + 1) % self.ring.len();
        if let Some(c) = self.index.get_mut(&old) {
            *c -= 1;
            if *c == 0 {
                self.index.remove(&old);
            }
        }
    }

    /// `R_x`: is `key`'s hash among the last `δ`?
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(KeyHash::of(key, self.seed))
    }

    /// [`Self::contains`] for a pre-hashed key.
    pub fn contains_hash(&self, hash: KeyHash) -> bool {
        self.index.contains_key(&self.short(hash))
    }

    /// `P(I_x < w | R_x)` by eq. 36, `D(δ)` from `distinct`.
    pub fn posterior(&self, hash: KeyHash, p: f64, distinct: &DistinctModel) -> f64 {
        let (w, d) = (self.window as f64, self.capacity() as f64);
        if !self.contains_hash(hash) {
            return 1.0 - survive(p, w - d);
        }
        let collide = -(distinct.distinct(d) * (-(0.5f64.powi(self.bph as i32))).ln_1p()).exp_m1();
        let pd = survive(p, d);
        (1.0 - survive(p, w) / ((1.0 - pd) / collide + pd)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_exactly_the_last_delta() {
        let mut b = SimpleBuffer::new(1_000, 10 * 32, 32, 5).expect("buffer");
        for i in 0..25u64 {
            b.insert(&i);
        }
        assert!((15..25u64).all(|i| b.contains(&i)));
        assert!(
            (0..15u64).all(|i| !b.contains(&i)),
            "32-bit hashes of 25 keys do not collide"
        );
        assert_eq!(b.memory_bits(), 320);
    }

    #[test]
    fn posterior_follows_eq36() {
        let b = SimpleBuffer::new(100, 400, 8, 5).expect("buffer");
        let model = DistinctModel::Identity;
        // absent from the last δ = 50: inside the window only among the 50 before
        let p = b.posterior(KeyHash::of(&1u64, 5), 0.01, &model);
        assert!((p - (1.0 - 0.99f64.powi(50))).abs() < 1e-12);
        assert!(SimpleBuffer::new(100, 7, 8, 0).is_err());
        assert!(prior_only(0.01, 100) > prior_only(0.01, 50));
    }
}
