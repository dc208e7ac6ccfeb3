//! The shape of a (block) timing Bloom filter (paper 004 §3): window, timers, hashes, bits per
//! timer, block size `B` and padding `P`, and the derived timestamp range `[0, T_Ω]` and `T_ε`.

use super::timers::MAX_TIMER_BITS;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Largest hash count of a timing filter.
pub const MAX_TIMING_HASHES: u32 = 32;

/// A validated BTBF shape. The TBF is the case `B = 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BtbfShape {
    /// The window width `w` in insertions.
    pub window: u64,
    /// Timers `m`.
    pub timers: u64,
    /// Hashes `k`.
    pub hashes: u32,
    /// Bits per timer `bpt`.
    pub bpt: u32,
    /// Insertions per block `B`.
    pub block: u64,
    /// Padding `P`: the largest that fits `bpt` (§3.1.3), so the fewest timers are scanned.
    pub padding: u64,
}

impl BtbfShape {
    /// A shape with the largest padding `bpt` allows: `T_Ω = ⌈w/B⌉ + 1 + P ≤ 2^bpt − 2`, one value
    /// being kept for `T_ε` (§3.2.3).
    pub fn new(window: u64, timers: u64, hashes: u32, bpt: u32, block: u64) -> Result<Self> {
        if window == 0 {
            return Err(Error::invalid("window", "must be at least 1 insertion"));
        }
        if timers == 0 {
            return Err(Error::invalid("timers", "need at least one timer"));
        }
        if !(1..=MAX_TIMING_HASHES).contains(&hashes) {
            return Err(Error::invalid(
                "hashes",
                format!("{hashes} is outside 1..={MAX_TIMING_HASHES}"),
            ));
        }
        if !(2..=MAX_TIMER_BITS).contains(&bpt) {
            return Err(Error::invalid(
                "bits per timer",
                format!("{bpt} is outside 2..={MAX_TIMER_BITS}"),
            ));
        }
        if block == 0 {
            return Err(Error::invalid("block", "must be at least 1 insertion"));
        }
        let top = (1u64 << bpt) - 2;
        let least = window.div_ceil(block) + 1;
        if least > top {
            return Err(Error::invalid(
                "bits per timer",
                format!(
                    "{bpt} bits hold timestamps up to {top}, but a window of {window} in blocks of \
                     {block} needs {least}; use more bits or larger blocks"
                ),
            ));
        }
        Ok(BtbfShape {
            window,
            timers,
            hashes,
            bpt,
            block,
            padding: top - least,
        })
    }

    /// A standard timing Bloom filter (`B = 1`) with the fewest bits per timer that keep the scan
    /// at `k` timers per insertion (padding `P ≈ m/k`, §3.1.3).
    pub fn tbf(window: u64, timers: u64, hashes: u32) -> Result<Self> {
        let need = timers.div_ceil(u64::from(hashes.max(1)));
        let bpt = (2..=MAX_TIMER_BITS)
            .find(|&b| (1u64 << b) - 2 >= window + need)
            .unwrap_or(MAX_TIMER_BITS);
        Self::new(window, timers, hashes, bpt, 1)
    }

    /// The paper's §6.1.2 choice for `bits` of memory: `bpt = max(k, 3)`, `m = bits / bpt`, and the
    /// smallest block size `B` whose padding keeps the scan at `k` timers per insertion.
    pub fn for_bits(window: u64, bits: u64, hashes: u32) -> Result<Self> {
        let bpt = hashes.clamp(3, MAX_TIMER_BITS);
        let timers = bits / u64::from(bpt);
        let fits = |block: u64| {
            BtbfShape::new(window, timers, hashes, bpt, block)
                .is_ok_and(|s| s.scan_per_insert() <= u64::from(hashes))
        };
        // the scan shrinks and the padding grows with B: bisect for the smallest B that fits
        let (mut lo, mut hi) = (0u64, window.max(timers).saturating_mul(2).max(1));
        if !fits(hi) {
            return Err(Error::invalid(
                "bits",
                format!("no block size fits {timers} timers of {bpt} bits to a window of {window}"),
            ));
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Self::new(window, timers, hashes, bpt, hi)
    }

    /// `T_Ω`, the largest timestamp.
    #[inline]
    pub fn t_omega(&self) -> u64 {
        self.window.div_ceil(self.block) + 1 + self.padding
    }

    /// `T_ε`, the expired timestamp: all ones.
    #[inline]
    pub fn t_expired(&self) -> u64 {
        (1u64 << self.bpt) - 1
    }

    /// Timers scanned for expiry after each insertion: `⌈m / (B (P + 1))⌉` (§3.2.3).
    #[inline]
    pub fn scan_per_insert(&self) -> u64 {
        self.timers
            .div_ceil(self.block.saturating_mul(self.padding + 1))
    }

    /// `⌈(w − b)/B⌉`: the largest age that is not expired when `b` insertions of the current
    /// block are done (Definition 8).
    #[inline]
    pub fn live_ages(&self, b: u64) -> u64 {
        self.window.saturating_sub(b).div_ceil(self.block)
    }

    /// Memory in bits (`m · bpt`).
    pub fn bits(&self) -> u64 {
        self.timers * u64::from(self.bpt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_shape_follows_the_rule_of_thumb() {
        let s = BtbfShape::tbf(1000, 4000, 4).expect("shape");
        assert_eq!(s.block, 1);
        assert!(s.t_omega() < s.t_expired());
        assert!(s.scan_per_insert() <= 4, "{s:?}");
    }

    #[test]
    fn for_bits_uses_the_papers_parameters() {
        let s = BtbfShape::for_bits(1 << 16, 10 << 16, 4).expect("shape");
        assert_eq!(s.bpt, 4);
        assert_eq!(s.timers, (10 << 16) / 4);
        assert!(s.scan_per_insert() <= 4);
        // the smallest block that fits: one less does not
        assert!(BtbfShape::new(s.window, s.timers, 4, 4, s.block - 1)
            .map_or(true, |t| t.scan_per_insert() > 4));
        // 8 blocks of 8192 cover the window; 5 timestamps of padding
        assert_eq!((s.block, s.padding, s.t_omega()), (8192, 5, 14));
    }

    #[test]
    fn refuses_bad_shapes() {
        assert!(BtbfShape::new(0, 10, 2, 3, 1).is_err());
        assert!(
            BtbfShape::new(100, 10, 2, 3, 1).is_err(),
            "3 bits cannot count to 101"
        );
        assert!(BtbfShape::new(10, 10, 0, 5, 1).is_err());
    }
}
