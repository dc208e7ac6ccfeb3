//! The point each key was last inserted at, remembered per state in a small direct-mapped table:
//! a key inserted at point `q` of a partition has the bits of every level `l ≥ bitlen(p ⊕ q)`
//! set for a later point `p` (its bucket there is the same), so those levels need no insert.
//! A key seen again a few seconds later (a session's next packet) then costs the few fine
//! levels instead of all of them. The table forgets on collision; forgetting only costs
//! inserts, and a key is matched on its whole 128-bit hash, the identity the filters use.

use chronobloom_core::prefetch::prefetch;

/// Slots of the table: a power of two.
const SLOTS: usize = 1 << 14;

/// One remembered key: its hash, partition and last point (`partition == u64::MAX`: empty).
#[derive(Debug, Clone, Copy)]
struct Entry {
    lo: u64,
    hi: u64,
    partition: u64,
    point: u64,
}

const EMPTY: Entry = Entry {
    lo: 0,
    hi: 0,
    partition: u64::MAX,
    point: 0,
};

/// Last points of recently inserted keys. Not state: equal to any other (two states with the
/// same bits are equal whatever they remember), and a clone starts empty.
#[derive(Debug)]
pub(super) struct RecentPoints {
    slots: Vec<Entry>,
}

impl RecentPoints {
    pub(super) fn new() -> Self {
        RecentPoints { slots: Vec::new() }
    }

    fn slot(lo: u64) -> usize {
        (lo >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The first level whose bits for `(lo, hi)` at `point` of `partition` are already set by
    /// an earlier insert of this state (`u32::MAX` when none is remembered).
    pub(super) fn skip_from(&self, lo: u64, hi: u64, partition: u64, point: u64) -> u32 {
        match self.slots.get(Self::slot(lo)) {
            Some(e) if e.lo == lo && e.hi == hi && e.partition == partition => {
                64 - (point ^ e.point).leading_zeros()
            }
            _ => u32::MAX,
        }
    }

    /// Asks for the slot of `lo` ahead of a [`Self::skip_from`] (a hint: no value changes). An
    /// epoch's keys come sorted by hash and spread over the table, so the hardware does not
    /// guess their slots.
    pub(super) fn prefetch(&self, lo: u64) {
        prefetch(&self.slots, Self::slot(lo));
    }

    /// Remembers that `(lo, hi)` was inserted at `point` of `partition` in every level held.
    pub(super) fn record(&mut self, lo: u64, hi: u64, partition: u64, point: u64) {
        if self.slots.is_empty() {
            self.slots = vec![EMPTY; SLOTS];
        }
        self.slots[Self::slot(lo)] = Entry {
            lo,
            hi,
            partition,
            point,
        };
    }
}

impl Clone for RecentPoints {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl PartialEq for RecentPoints {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for RecentPoints {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_from_the_highest_differing_bit_are_skipped() {
        let mut r = RecentPoints::new();
        assert_eq!(r.skip_from(7, 9, 0, 5), u32::MAX);
        r.record(7, 9, 0, 0b1010);
        assert_eq!(r.skip_from(7, 9, 0, 0b1010), 0); // the same point: every level
        assert_eq!(r.skip_from(7, 9, 0, 0b1011), 1); // level 0 differs
        assert_eq!(r.skip_from(7, 9, 0, 0b0010), 4); // bit 3 differs
        assert_eq!(r.skip_from(7, 9, 1, 0b1010), u32::MAX); // another partition
        assert_eq!(r.skip_from(7, 8, 0, 0b1010), u32::MAX); // another key in the slot
    }
}
