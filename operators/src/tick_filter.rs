//! A Bloom filter of tick cells: "was this key seen in the last W ticks?" with a sharp window edge.
//!
//! Each of the `m` cells holds the latest tick at which any key probing it was inserted (a timing
//! Bloom filter). A key is reported seen at `now` iff all `k` of its cells hold a tick in
//! `(now - W, now]`. Because an insert only ever raises a cell to its own tick, every key inserted
//! within the window keeps its `k` cells live: **no false negative inside the window**. A key whose
//! last insertion is `W` or more ticks old is reported seen only when other keys inserted within
//! the window cover all its cells: the false positive rate is the Bloom filter's
//! `(1 - e^{-kn/m})^k` for `n` distinct keys in the window, with **no tail** past `W`. That is the
//! reason the dedup operator does not use
//! [`TimeLimitedBloomFilter`](chronobloom_core::window::TimeLimitedBloomFilter): its slices stay
//! live for up to `k` generations past a key's insertion, so a key repeating exactly `W` ticks
//! later is reported seen most of the time, far above ε. The price is 32 bits per cell instead of
//! one.
//!
//! Cells store `tick - base + 1` as a `u32` (0 = never set). When a tick no longer fits, the filter
//! rebases to the window's first tick and clears the cells that fell out of the window (one pass
//! over the cells, at most once every `2^32 - W` ticks of activity).

use crate::error::{Error, Result};
use chronobloom_core::bloom::FilterShape;
use chronobloom_core::hash::{FastMod, KeyHash};
use chronobloom_core::temporal::Tick;

/// Cells sampled to estimate the fill of a large filter.
const FILL_SAMPLE: usize = 4096;

/// A Bloom filter whose cells hold the latest tick they were set at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickFilter {
    hashes: u32,
    modulus: FastMod,
    cells: Vec<u32>,
    /// The tick a cell value of 1 stands for.
    base: Tick,
    window: Tick,
    /// The latest tick inserted.
    latest: Option<Tick>,
}

impl TickFilter {
    /// An empty filter of `shape.bits` cells and `shape.hashes` probes over a window of `window`
    /// ticks (1 to 2^31), for ticks from `start` on.
    pub fn new(shape: FilterShape, window: Tick, start: Tick) -> Result<Self> {
        let shape = FilterShape::new(shape.bits, shape.hashes)?;
        if !(1..=1 << 31).contains(&window) {
            return Err(Error::config(
                "window",
                format!("{window} is outside 1..=2^31"),
            ));
        }
        let modulus = FastMod::new(shape.bits)
            .ok_or_else(|| Error::config("cells", "a tick filter needs at least one cell"))?;
        let len = usize::try_from(shape.bits)
            .map_err(|_| Error::config("cells", "more cells than this platform can address"))?;
        Ok(TickFilter {
            hashes: shape.hashes,
            modulus,
            cells: vec![0; len],
            base: window_start(start, window),
            window,
            latest: None,
        })
    }

    /// The smallest cell value that is live at `now`; `None` when no encodable tick is.
    #[inline]
    fn threshold(&self, now: Tick) -> Option<u32> {
        let first = window_start(now, self.window);
        u32::try_from(first.saturating_sub(self.base).saturating_add(1)).ok()
    }

    /// True iff every cell of `hash` holds a tick in `(now - W, now]` (ticks after `now` are never
    /// inserted before a query at `now` in the dedup operator).
    #[inline]
    pub fn seen(&self, hash: KeyHash, now: Tick) -> bool {
        let Some(live) = self.threshold(now) else {
            return false;
        };
        hash.probes(self.hashes, self.modulus)
            .all(|p| self.cells.get(p as usize).is_some_and(|&c| c >= live))
    }

    /// Records `hash` at `now` (cells only move forward in time).
    #[inline]
    pub fn insert(&mut self, hash: KeyHash, now: Tick) {
        let value = match u32::try_from(now.saturating_sub(self.base).saturating_add(1)) {
            Ok(v) => v,
            Err(_) => {
                self.rebase(now);
                // After a rebase the value is at most W <= 2^31.
                u32::try_from(now.saturating_sub(self.base).saturating_add(1)).unwrap_or(u32::MAX)
            }
        };
        for p in hash.probes(self.hashes, self.modulus) {
            if let Some(c) = self.cells.get_mut(p as usize) {
                *c = (*c).max(value);
            }
        }
        self.latest = Some(self.latest.map_or(now, |l| l.max(now)));
    }

    /// Moves the base to the first tick of the window ending at `now`, clearing older cells.
    fn rebase(&mut self, now: Tick) {
        let base = window_start(now, self.window);
        let shift = base.saturating_sub(self.base);
        for c in &mut self.cells {
            *c = u32::try_from(u64::from(*c).saturating_sub(shift)).unwrap_or(0);
        }
        self.base = base;
    }

    /// True when no query at `now` or later can find anything: the latest insertion is at least
    /// `W` ticks before `now` (or there was none).
    pub fn stale(&self, now: Tick) -> bool {
        self.latest
            .is_none_or(|l| l.saturating_add(self.window) <= now)
    }

    /// Fraction of cells live at `now`: exact up to 4096 cells, else from 4096 evenly spaced cells.
    pub fn live_fill(&self, now: Tick) -> f64 {
        let Some(live) = self.threshold(now) else {
            return 0.0;
        };
        let step = self.cells.len().div_ceil(FILL_SAMPLE).max(1);
        let (mut sampled, mut set) = (0u64, 0u64);
        for &c in self.cells.iter().step_by(step) {
            sampled += 1;
            set += u64::from(c >= live);
        }
        if sampled == 0 {
            0.0
        } else {
            set as f64 / sampled as f64
        }
    }

    /// Number of probes per key, `k`.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Memory held by the cells, in bits (32 per cell).
    pub fn memory_bits(&self) -> u64 {
        self.cells.len() as u64 * 32
    }
}

/// The first tick of the window of `window` ticks ending at `now`: `now + 1 - W`, at least 0.
#[inline]
pub fn window_start(now: Tick, window: Tick) -> Tick {
    now.saturating_add(1).saturating_sub(window)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn h(k: u64) -> KeyHash {
        KeyHash::of(&k, 3)
    }

    #[test]
    fn sharp_window_edge() {
        let shape = FilterShape::for_fpr(1000, 0.01).unwrap();
        let mut f = TickFilter::new(shape, 10, 0).unwrap();
        f.insert(h(1), 5);
        assert!(f.seen(h(1), 5));
        assert!(f.seen(h(1), 14)); // 9 ticks later: inside (14 - 10, 14]
        assert!(!f.seen(h(1), 15)); // exactly W later: outside
        assert!(!f.stale(14));
        assert!(f.stale(15));
    }

    #[test]
    fn rebase_keeps_live_cells_and_clears_old_ones() {
        let shape = FilterShape::for_fpr(100, 0.01).unwrap();
        let mut f = TickFilter::new(shape, 100, 0).unwrap();
        let far = u64::from(u32::MAX) + 50;
        f.insert(h(1), 7);
        f.insert(h(2), far - 10);
        f.insert(h(3), far); // forces a rebase
        assert!(f.seen(h(2), far) && f.seen(h(3), far));
        assert!(!f.seen(h(1), far));
        assert!(f.seen(h(2), far + 89) && !f.seen(h(2), far + 90));
        // ticks near the end of time do not overflow
        f.insert(h(4), u64::MAX);
        assert!(f.seen(h(4), u64::MAX));
    }

    #[test]
    fn refuses_bad_shapes() {
        assert!(TickFilter::new(FilterShape { bits: 0, hashes: 1 }, 5, 0).is_err());
        let shape = FilterShape::for_fpr(100, 0.01).unwrap();
        assert!(TickFilter::new(shape, 0, 0).is_err());
        assert!(TickFilter::new(shape, (1 << 31) + 1, 0).is_err());
    }
}
