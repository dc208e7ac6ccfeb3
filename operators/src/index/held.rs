//! Records a local index holds back until their epoch is the earliest open one: key hashes with
//! their event ticks, in arrival order, so that they go into the filter as one batch.

use chronobloom_core::hash::KeyHash;
use chronobloom_core::temporal::Tick;

/// Held-back key hashes, each with its tick.
///
/// ```
/// use chronobloom_core::hash::KeyHash;
/// use chronobloom_operators::held::Held;
/// let mut h = Held::default();
/// h.push((0..3u64).map(|k| (KeyHash::of(&k, 0), 5)));
/// h.push([(KeyHash::of(&3u64, 0), 7)]);
/// assert_eq!(h.ticks(), &[5, 5, 5, 7]);
/// assert_eq!((h.len(), h.hashes().len()), (4, 4));
/// ```
#[derive(Debug, Default)]
pub struct Held {
    hashes: Vec<KeyHash>,
    ticks: Vec<Tick>,
}

impl Held {
    /// Appends `(hash, tick)` pairs.
    pub fn push(&mut self, records: impl IntoIterator<Item = (KeyHash, Tick)>) {
        for (h, t) in records {
            self.hashes.push(h);
            self.ticks.push(t);
        }
    }

    /// The hashes, in arrival order.
    pub fn hashes(&self) -> &[KeyHash] {
        &self.hashes
    }

    /// The ticks, one per hash.
    pub fn ticks(&self) -> &[Tick] {
        &self.ticks
    }

    /// Number of hashes held.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}
