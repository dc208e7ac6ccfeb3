//! Which words of a bit array changed between two drains of its change record
//! ([`crate::bits::Bits::drain_changed`]): one flag bit per word, so a dense delta costs a bit per
//! word to find rather than an index.

use std::ops::Range;

/// One flag per word (bit `i % 64` of flag word `i / 64` for word `i`), and how many are set.
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
/// assert_eq!(c.flags_at(1), 1); // the 64 flags from word 1 on: word 1 only
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedWords {
    flags: Vec<u64>,
    count: u64,
}

impl ChangedWords {
    /// From flag words (bit `j` of `flags[g]` for word `64 g + j`).
    pub fn from_flags(flags: Vec<u64>) -> Self {
        let count = flags.iter().map(|f| u64::from(f.count_ones())).sum();
        ChangedWords { flags, count }
    }

    /// Number of changed words.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when no word changed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The 64 flags of words `at..at + 64` (bit `j` for word `at + j`; words past the array are
    /// unchanged).
    pub fn flags_at(&self, at: usize) -> u64 {
        let (g, s) = (at / 64, at % 64);
        let lo = self.flags.get(g).map_or(0, |f| f >> s);
        let hi = match s {
            0 => 0,
            _ => self.flags.get(g + 1).map_or(0, |f| f << (64 - s)),
        };
        lo | hi
    }

    /// The flags of `range` in groups of 64 (the last group masked to the range's end).
    pub fn groups_in(&self, range: Range<usize>) -> impl Iterator<Item = u64> + '_ {
        let len = range.len();
        (0..len.div_ceil(64)).map(move |k| {
            let rest = len - 64 * k;
            let mask = if rest >= 64 {
                u64::MAX
            } else {
                (1 << rest) - 1
            };
            self.flags_at(range.start + 64 * k) & mask
        })
    }

    /// Number of changed words in `range`.
    pub fn count_in(&self, range: Range<usize>) -> u64 {
        self.groups_in(range)
            .map(|f| u64::from(f.count_ones()))
            .sum()
    }

    /// Indices of the changed words in `range`, ascending.
    pub fn indices_in(&self, range: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let start = range.start;
        self.groups_in(range).enumerate().flat_map(move |(k, f)| {
            let base = start + 64 * k;
            std::iter::successors(Some(f), |&r| Some(r & r.wrapping_sub(1)))
                .take_while(|&r| r != 0)
                .map(move |r| base + r.trailing_zeros() as usize)
        })
    }

    /// Indices of all changed words, ascending.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.indices_in(0..self.flags.len() * 64)
    }
}
