//! Entries per generation tag, counted as a table or a list places, re-tags and clears them, so
//! the live population is known at every generation without a pass over the entries.

use super::table::{tag_of, TAGS};

/// Per tag, the entries holding it. Derived from the entries, so tables do not serialize it
/// ([`TagCounts::of`] counts them again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TagCounts([u64; TAGS as usize]);

impl TagCounts {
    /// The counts of entry words `words` (0: an empty slot, not counted).
    pub fn of(words: impl Iterator<Item = u64>) -> Self {
        let mut c = TagCounts::default();
        for w in words.filter(|&w| w != 0) {
            c.0[tag_of(w) as usize] += 1;
        }
        c
    }

    /// Entries whose tag is in `live` (bit `t` for tag `t`).
    pub fn live(&self, live: u32) -> u64 {
        (0..TAGS as usize)
            .filter(|&t| (live >> t) & 1 == 1)
            .map(|t| self.0[t])
            .sum()
    }

    /// Moves one entry's count from the tag of entry word `from` (0: an empty slot, a new
    /// entry) to tag `to`.
    #[inline]
    pub fn retag(&mut self, from: u64, to: u64) {
        self.remove(from);
        self.0[to as usize] += 1;
    }

    /// Removes the count of entry word `word` (nothing for 0, an empty slot).
    #[inline]
    pub fn remove(&mut self, word: u64) {
        if word != 0 {
            self.0[tag_of(word) as usize] -= 1;
        }
    }

    /// Forgets the entries of the `dead` tags (bit `t` for tag `t`), which a sweep cleared.
    pub fn clear(&mut self, dead: u32) {
        for (t, n) in self.0.iter_mut().enumerate() {
            if (dead >> t) & 1 == 1 {
                *n = 0;
            }
        }
    }
}
