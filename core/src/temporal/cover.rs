//! The canonical dyadic cover of a time range (paper 000 §4.2, Algorithm 3).
//!
//! A block at level ℓ with bucket b covers ticks [b·2^ℓ, (b+1)·2^ℓ − 1]. The cover of [s, e] is
//! the set of maximal aligned blocks inside [s, e]: at most two per level, at most 2·log2(e − s + 1)
//! in all. Walking left to right, each step takes the largest aligned block that starts at the
//! current tick and fits before `e`; this yields the same blocks as the paper's top-down recursion.

use super::range::TimeRange;

/// One aligned dyadic block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Block {
    /// ℓ: the block spans 2^ℓ ticks.
    pub level: u32,
    /// b = start / 2^ℓ.
    pub bucket: u64,
}

impl Block {
    /// The ticks the block covers.
    pub fn range(&self) -> TimeRange {
        let start = self.bucket << self.level;
        let end = start.saturating_add((1u64 << self.level) - 1);
        TimeRange::new(start, end).unwrap_or(TimeRange::point(start))
    }
}

/// The canonical cover of `range` using levels `0..=max_level`, left to right.
///
/// ```
/// use chronobloom_core::temporal::{dyadic_cover, Block, TimeRange};
/// // The paper's C([1, 6]) = {[1, 4], [5, 6]} with T = 8; 0-based that is [0, 5].
/// let c: Vec<Block> = dyadic_cover(TimeRange::new(0, 5).unwrap(), 3).collect();
/// assert_eq!(c, vec![Block { level: 2, bucket: 0 }, Block { level: 1, bucket: 2 }]);
/// ```
pub fn dyadic_cover(range: TimeRange, max_level: u32) -> DyadicCover {
    DyadicCover {
        next: u128::from(range.start()),
        end: u128::from(range.end()),
        max_level: max_level.min(63),
    }
}

/// Iterator over the blocks of a canonical cover.
#[derive(Debug, Clone)]
pub struct DyadicCover {
    next: u128,
    end: u128,
    max_level: u32,
}

impl Iterator for DyadicCover {
    type Item = Block;

    #[inline]
    fn next(&mut self) -> Option<Block> {
        if self.next > self.end {
            return None;
        }
        let align = self.next.trailing_zeros().min(self.max_level);
        let room = (self.end - self.next + 1).ilog2();
        let level = align.min(room);
        let block = Block {
            level,
            bucket: (self.next >> level) as u64,
        };
        self.next += 1u128 << level;
        Some(block)
    }
}
