//! Expiry (§2.4–§2.5): the resumable sweep that clears expired slots, the full purge of a tag
//! about to be reused, the live count under a new set of live tags, and emptying the table.

use super::{Table, TAG_SHIFT};

impl Table {
    /// One step of the deamortized sweep (§2.5): clears expired slots in the next `sweep` buckets
    /// and expired stash entries.
    pub(crate) fn sweep(&mut self, mask: u64) {
        let b_count = self.buckets.divisor();
        for _ in 0..self.sweep.min(b_count) {
            let b = self.cursor;
            let mut e = self.bucket(b);
            let mut changed = false;
            for v in &mut e {
                if *v != 0 && !Self::is_live(*v, mask) {
                    self.counts[(*v >> TAG_SHIFT) as usize] -= 1;
                    *v = 0;
                    changed = true;
                }
            }
            if changed {
                self.set_bucket(b, e);
            }
            self.cursor = if b + 1 == b_count { 0 } else { b + 1 };
        }
        self.sweep_stash(mask);
    }

    fn sweep_stash(&mut self, mask: u64) {
        if self.stash.iter().any(|s| (mask >> s.tag) & 1 == 0) {
            let counts = &mut self.counts;
            self.stash.retain(|s| {
                let keep = (mask >> s.tag) & 1 == 1;
                if !keep {
                    counts[s.tag as usize] -= 1;
                }
                keep
            });
        }
    }

    /// Removes every entry tagged `tag` (an expired tag about to be reused) with a full scan: the
    /// fallback when the incremental sweep has not reached them in time.
    pub(crate) fn purge(&mut self, tag: u32) {
        if self.counts[tag as usize] == 0 {
            return;
        }
        for b in 0..self.buckets.divisor() {
            let mut e = self.bucket(b);
            let mut changed = false;
            for v in &mut e {
                if *v != 0 && (*v >> TAG_SHIFT) as u32 == tag {
                    *v = 0;
                    changed = true;
                }
            }
            if changed {
                self.set_bucket(b, e);
            }
        }
        self.stash.retain(|s| s.tag != tag);
        self.counts[tag as usize] = 0;
    }

    /// Recomputes the live count for a new set of live tags.
    pub(crate) fn recount(&mut self, mask: u64) {
        self.live = (0..self.counts.len())
            .filter(|&t| (mask >> t) & 1 == 1)
            .map(|t| self.counts[t])
            .sum();
    }

    /// Empties the table.
    pub(crate) fn clear(&mut self) {
        self.heads.clear();
        self.low.clear();
        self.stash.clear();
        self.counts.fill(0);
        self.live = 0;
        self.cursor = 0;
    }
}
