//! Which words of a bit array changed between two drains of its change record
//! ([`crate::bits::Bits::drain_changed`]): a flag bit per word, kept only for the groups of 64
//! words that have one, so finding a sparse delta costs what changed and a dense one a bit per
//! word.

use std::ops::Range;

/// Flag bits of the changed words, per group of 64 words (bit `j` of group `g` for word
/// `64 g + j`), only for groups with a changed word.
///
/// ```
/// use chronobloom_core::bits::Bits;
/// let mut b = Bits::new(10_000);
/// b.track_dirty();
/// b.set(70);
/// b.set(9_000);
/// let c = b.drain_changed();
/// assert_eq!(c.indices().collect::<Vec<_>>(), vec![1, 140]);
/// assert_eq!(c.count_in(0..100), 1);
/// assert_eq!(c.bitmap_in(1..129), vec![1, 0]); // bit j for word 1 + j
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedWords {
    /// `(group, flags)` with `flags != 0`, groups ascending.
    groups: Vec<(u32, u64)>,
    count: u64,
}

impl ChangedWords {
    /// From flag words (bit `j` of `flags[g]` for word `64 g + j`).
    pub fn from_flags(flags: &[u64]) -> Self {
        let mut c = ChangedWords::default();
        for (g, &f) in flags.iter().enumerate() {
            c.push(g as u32, f);
        }
        c
    }

    /// Appends group `g`'s flags; groups must come in ascending order. Nothing for zero flags.
    pub(crate) fn push(&mut self, g: u32, flags: u64) {
        debug_assert!(self.groups.last().is_none_or(|&(last, _)| last < g));
        if flags != 0 {
            self.groups.push((g, flags));
            self.count += u64::from(flags.count_ones());
        }
    }

    /// Number of changed words.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when no word changed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The groups with a changed word in `range`, each as (its first word, its flags masked to
    /// `range`).
    fn overlapping(&self, range: Range<usize>) -> impl Iterator<Item = (usize, u64)> + '_ {
        let from = self
            .groups
            .partition_point(|&(g, _)| (g as usize + 1) * 64 <= range.start);
        self.groups[from..]
            .iter()
            .map(|&(g, f)| (g as usize * 64, f))
            .take_while(move |&(first, _)| first < range.end)
            .map(move |(first, f)| {
                let below = range.start.saturating_sub(first).min(64) as u32;
                let above = (first + 64).saturating_sub(range.end).min(64) as u32;
                let low = u64::MAX.checked_shl(below).unwrap_or(0);
                let high = u64::MAX.checked_shr(above).unwrap_or(0);
                (first, f & low & high)
            })
            .filter(|&(_, f)| f != 0)
    }

    /// Number of changed words in `range`.
    pub fn count_in(&self, range: Range<usize>) -> u64 {
        self.overlapping(range)
            .map(|(_, f)| u64::from(f.count_ones()))
            .sum()
    }

    /// Indices of the changed words in `range`, ascending.
    pub fn indices_in(&self, range: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        self.overlapping(range).flat_map(|(first, f)| {
            std::iter::successors(Some(f), |&r| Some(r & r.wrapping_sub(1)))
                .take_while(|&r| r != 0)
                .map(move |r| first + r.trailing_zeros() as usize)
        })
    }

    /// Indices of all changed words, ascending.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.indices_in(0..usize::MAX)
    }

    /// The flags of `range` as a bitmap of its own: bit `j % 64` of word `j / 64` for word
    /// `range.start + j`.
    pub fn bitmap_in(&self, range: Range<usize>) -> Vec<u64> {
        let start = range.start;
        let mut out = vec![0u64; range.len().div_ceil(64)];
        for (first, f) in self.overlapping(range) {
            if first < start {
                out[0] |= f >> (start - first);
                continue;
            }
            let (k, s) = ((first - start) / 64, (first - start) % 64);
            out[k] |= f << s;
            if s != 0 {
                if let Some(next) = out.get_mut(k + 1) {
                    *next |= f >> (64 - s);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Empty and reversed ranges inside a flagged group hold nothing (and do not panic).
    #[test]
    #[allow(clippy::reversed_empty_ranges)] // the reversed range is the point
    fn empty_ranges_hold_nothing() {
        let c = ChangedWords::from_flags(&[u64::MAX, u64::MAX]);
        for range in [70..70, 5..5, 90..80] {
            assert_eq!(c.count_in(range.clone()), 0);
            assert_eq!(c.indices_in(range.clone()).count(), 0);
            assert!(c.bitmap_in(range).is_empty());
        }
    }

    proptest! {
        /// Counting, listing and the bitmap of any range agree with the flags one by one.
        #[test]
        fn ranges_agree_with_single_flags(
            indices in proptest::collection::btree_set(0usize..2_000, 0..300),
            a in 0usize..2_100,
            len in 0usize..2_100,
        ) {
            let mut flags = vec![0u64; 2_000usize.div_ceil(64)];
            for &i in &indices {
                flags[i / 64] |= 1 << (i % 64);
            }
            let c = ChangedWords::from_flags(&flags);
            let range = a..a + len;
            let want: Vec<usize> = indices.iter().copied().filter(|i| range.contains(i)).collect();
            prop_assert_eq!(c.indices_in(range.clone()).collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(c.count_in(range.clone()), want.len() as u64);
            let bitmap = c.bitmap_in(range.clone());
            prop_assert_eq!(bitmap.len(), len.div_ceil(64));
            let from_bitmap: Vec<usize> = (0..len)
                .filter(|j| bitmap[j / 64] >> (j % 64) & 1 == 1)
                .map(|j| a + j)
                .collect();
            prop_assert_eq!(from_bitmap, want);
            prop_assert_eq!(c.count(), indices.len() as u64);
        }
    }
}
