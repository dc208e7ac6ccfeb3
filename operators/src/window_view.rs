//! The epoch-sliced global view of [`crate::DedupMode::Local`]: one fixed-shape Bloom filter per
//! closed epoch, OR-merged from the workers' per-epoch filters, retired by time.
//!
//! Every worker builds the same shape ([`crate::DedupConfig::view_shape`]) from the configuration
//! alone, so the slices of one epoch union bit for bit. A worker ships an epoch's slice when its
//! input frontier passes the epoch's last tick ([`ViewDelta`]: the non-zero words, sparse or dense,
//! whichever is smaller). [`WindowView::contains_hash`] at tick `t` asks every retained epoch
//! before `t`'s own whose ticks overlap `(t - W, t]`; [`WindowView::retire`] drops an epoch once no tick still to
//! come can overlap it (its last tick plus `W` is at or before the frontier), records or not.

use crate::dedup_stats::{Slice, SliceStats};
use crate::delta::DeltaWords;
use crate::error::Result;
use crate::tick_filter::window_start;
use chronobloom_core::bloom::{BloomFilter, Filter, FilterShape};
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One worker's slice of one closed epoch, on its way to one other worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDelta {
    /// The closed epoch.
    pub epoch: u64,
    /// The sending worker.
    pub from: u32,
    /// The receiving worker.
    pub dest: u32,
    /// The slice's non-zero words.
    pub words: DeltaWords,
}

/// Closed epochs' Bloom filters, OR-merged, answering "seen in the window ending at `t`?".
///
/// ```
/// use chronobloom_core::bloom::{Filter, FilterShape};
/// use chronobloom_operators::window_view::WindowView;
///
/// let shape = FilterShape::for_fpr(1_000, 0.001).unwrap();
/// // epochs of 10 ticks, window of 30 ticks
/// let mut mine = WindowView::new(shape, 7, 10, 30).unwrap();
/// let mut slice = mine.new_slice().unwrap();
/// slice.insert(&"alice");
/// let delta = WindowView::encode(&slice).unwrap();
/// mine.merge(2, &delta).unwrap(); // epoch 2: ticks 20..=29
/// assert!(mine.contains(&"alice", 35));
/// assert!(mine.contains(&"alice", 58)); // (28, 58] still overlaps epoch 2
/// assert!(!mine.contains(&"alice", 59)); // (29, 59] does not
/// mine.retire(59);
/// assert_eq!(mine.epochs_held(), 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WindowView {
    shape: FilterShape,
    seed: u64,
    epoch_len: Tick,
    window: Tick,
    epochs: BTreeMap<u64, BloomFilter>,
    /// Occupancy of epochs not merged into since it was computed (a popcount of the slice).
    occupancy: BTreeMap<u64, SliceStats>,
}

impl WindowView {
    /// An empty view of slices of `shape` hashed with `seed`, epochs of `epoch_len` ticks (at
    /// least 1) and a window of `window` ticks.
    pub fn new(shape: FilterShape, seed: u64, epoch_len: Tick, window: Tick) -> Result<Self> {
        BloomFilter::from_shape(shape, seed)?;
        if epoch_len == 0 {
            return Err(crate::Error::config(
                "epoch_len",
                "an epoch must last at least one tick",
            ));
        }
        Ok(WindowView {
            shape,
            seed,
            epoch_len,
            window,
            epochs: BTreeMap::new(),
            occupancy: BTreeMap::new(),
        })
    }

    /// An empty slice of this view's shape, for one worker's records of one epoch.
    pub fn new_slice(&self) -> Result<BloomFilter> {
        Ok(BloomFilter::from_shape(self.shape, self.seed)?)
    }

    /// A slice's non-zero words, sparse or dense, whichever is smaller; `None` when it is empty.
    pub fn encode(slice: &BloomFilter) -> Option<DeltaWords> {
        let words = slice.bits().words();
        let nonzero: Vec<u32> = words
            .iter()
            .enumerate()
            .filter(|&(_, &w)| w != 0)
            .filter_map(|(i, _)| u32::try_from(i).ok())
            .collect();
        DeltaWords::encode(&nonzero, words, 0..words.len())
    }

    /// ORs a shipped slice into `epoch`'s filter; refuses (leaving the words already merged) a
    /// word past this view's shape, the sign of a peer configured differently.
    pub fn merge(&mut self, epoch: u64, words: &DeltaWords) -> Result<()> {
        self.occupancy.remove(&epoch);
        let filter = match self.epochs.entry(epoch) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(BloomFilter::from_shape(self.shape, self.seed)?)
            }
        };
        let mut result = Ok(());
        words.for_each(|i, w| {
            if result.is_ok() {
                result = filter.bits_mut().or_word(i, w);
            }
        });
        Ok(result?)
    }

    /// True iff some retained epoch before `now`'s own epoch and overlapping `(now - W, now]`
    /// reports the pre-hashed key. `now`'s epoch and later ones are never consulted, even when a
    /// fast peer's slice of them has arrived already: the answer depends only on closed epochs.
    #[inline]
    pub fn contains_hash(&self, hash: KeyHash, now: Tick) -> bool {
        let first = window_start(now, self.window) / self.epoch_len;
        let current = now / self.epoch_len;
        self.epochs
            .range(first..current)
            .any(|(_, f)| f.contains_hash(hash))
    }

    /// True iff some retained epoch before `now`'s and overlapping `(now - W, now]` reports `key`.
    pub fn contains<K: Key + ?Sized>(&self, key: &K, now: Tick) -> bool {
        self.contains_hash(KeyHash::of(key, self.seed), now)
    }

    /// Drops every epoch no window ending at `horizon` or later overlaps.
    pub fn retire(&mut self, horizon: Tick) {
        let first_needed = window_start(horizon, self.window) / self.epoch_len;
        self.epochs = self.epochs.split_off(&first_needed);
        self.occupancy = self.occupancy.split_off(&first_needed);
    }

    /// Drops every epoch.
    pub fn clear(&mut self) {
        self.epochs.clear();
        self.occupancy.clear();
    }

    /// Epochs currently held.
    pub fn epochs_held(&self) -> usize {
        self.epochs.len()
    }

    /// Bits held by all retained epochs.
    pub fn memory_bits(&self) -> u64 {
        self.epochs.values().map(Filter::memory_bits).sum()
    }

    /// Fill and estimated false positive rate of every retained epoch (each slice is counted
    /// once after its last merge, not on every call).
    pub fn slice_stats(&mut self) -> Vec<SliceStats> {
        for (&e, f) in &self.epochs {
            self.occupancy.entry(e).or_insert_with(|| {
                let fill = f.fill_ratio();
                SliceStats {
                    slice: Slice::ViewEpoch(e),
                    bits: f.bit_len(),
                    fill,
                    estimated_fpr: fill.powi(f.hashes() as i32),
                }
            });
        }
        self.occupancy.values().copied().collect()
    }
}
