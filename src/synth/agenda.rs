//! The open sessions of a generator, earliest first: a radix heap (Ahuja, Mehlhorn, Orlin and
//! Tarjan 1990) over 128-bit keys.
//!
//! A generator pops its sessions in key order, and pushes only keys at or after the last one it
//! popped, which is what a radix heap needs: bucket `b` holds the keys whose highest bit
//! differing from the last settled minimum is bit `b − 1` (bucket 0: the minimum itself). A push
//! is a bucket append; a pop that finds bucket 0 empty takes the first non-empty bucket, whose
//! minimum becomes the reference, and spreads its keys over lower buckets, so a key moves at
//! most 128 times in all, where a binary heap sifts every pop through `log n` levels. Looking
//! at the minimum settles too; a key pushed below the settled minimum afterwards (a session
//! opening between the last pop and that minimum) waits in a small binary heap beside.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Buckets: the minimum's, and one per bit of a 128-bit key.
const BUCKETS: usize = 129;
/// Emptied buckets' allocations kept for reuse, and the largest kept (in items): the many small
/// buckets that settling empties and refills reuse them, while a rare large one is given back.
const SPARES: usize = 16;
const SPARE_ITEMS: usize = 1024;

/// Items with unique 128-bit keys, popped in key order.
#[derive(Debug, Clone)]
pub(super) struct Agenda<T> {
    /// The settled minimum: every key in `buckets` is at or above it.
    last: u128,
    buckets: Vec<Vec<(u128, T)>>,
    /// Bit `b − 1` set when bucket `b ≥ 1` holds items.
    filled: u128,
    /// Keys pushed below `last`.
    early: BinaryHeap<Reverse<Early<T>>>,
    /// Small allocations of emptied buckets, for buckets that fill next: kept by their bucket,
    /// every bucket's high-water mark would stay allocated; all given back, every settle would
    /// allocate afresh (and generators on several threads contend for the allocator's locks).
    spare: Vec<Vec<(u128, T)>>,
}

/// An early item, ordered by its key alone.
#[derive(Debug, Clone)]
struct Early<T>(u128, T);

impl<T> PartialEq for Early<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for Early<T> {}
impl<T> PartialOrd for Early<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Early<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T> Agenda<T> {
    pub(super) fn new() -> Self {
        Agenda {
            last: 0,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            filled: 0,
            early: BinaryHeap::new(),
            spare: Vec::new(),
        }
    }

    /// Open items.
    pub(super) fn len(&self) -> usize {
        self.early.len() + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    fn bucket(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    pub(super) fn push(&mut self, key: u128, item: T) {
        if key < self.last {
            self.early.push(Reverse(Early(key, item)));
        } else {
            self.place(key, item);
        }
    }

    /// Puts an item at or above `last` in its bucket.
    fn place(&mut self, key: u128, item: T) {
        let b = self.bucket(key);
        if b > 0 {
            self.filled |= 1 << (b - 1);
        }
        let bucket = &mut self.buckets[b];
        if bucket.capacity() == 0 {
            if let Some(spare) = self.spare.pop() {
                *bucket = spare;
            }
        }
        bucket.push((key, item));
    }

    /// Makes the buckets' minimum the reference, in bucket 0 (unless the buckets are empty).
    fn settle(&mut self) {
        if !self.buckets[0].is_empty() {
            return;
        }
        if self.filled == 0 {
            return;
        }
        let b = self.filled.trailing_zeros() as usize + 1;
        self.filled &= !(1 << (b - 1));
        let mut items = std::mem::take(&mut self.buckets[b]);
        self.last = items.iter().map(|&(k, _)| k).min().unwrap_or(self.last);
        for (key, item) in items.drain(..) {
            self.place(key, item);
        }
        if self.spare.len() < SPARES && items.capacity() <= SPARE_ITEMS {
            self.spare.push(items);
        }
    }

    /// The smallest key.
    pub(super) fn min_key(&mut self) -> Option<u128> {
        self.settle();
        let bucketed = (!self.buckets[0].is_empty()).then_some(self.last);
        let early = self.early.peek().map(|e| e.0 .0);
        match (early, bucketed) {
            (Some(e), Some(b)) => Some(e.min(b)),
            (e, b) => e.or(b),
        }
    }

    /// The item with the smallest key, and its key.
    pub(super) fn pop(&mut self) -> Option<(u128, T)> {
        self.settle();
        let early_first = match (self.early.peek(), self.buckets[0].is_empty()) {
            (Some(e), false) => e.0 .0 < self.last,
            (Some(_), true) => true,
            (None, _) => false,
        };
        if early_first {
            return self.early.pop().map(|Reverse(Early(k, t))| (k, t));
        }
        self.buckets[0].pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a binary heap: pops in key order and the same minimum, through pushes at or
        /// after the last pop (some below the settled minimum) and interleaved looks and pops.
        #[test]
        fn pops_in_key_order(
            ops in proptest::collection::vec((0u8..3, 0u128..1 << 20, 0u32..130), 1..400),
        ) {
            let mut a = Agenda::new();
            let mut reference: BinaryHeap<Reverse<u128>> = BinaryHeap::new();
            let mut floor = 0u128;
            for (op, delta, shift) in ops {
                match op {
                    0 => {
                        // a key at or after the last pop (the last pop's own key included)
                        let key = floor.saturating_add(delta << (shift % 100));
                        if reference.iter().any(|r| r.0 == key) {
                            continue;
                        }
                        a.push(key, key);
                        reference.push(Reverse(key));
                    }
                    1 => prop_assert_eq!(a.min_key(), reference.peek().map(|r| r.0)),
                    _ => {
                        let got = a.pop();
                        let want = reference.pop().map(|r| r.0);
                        prop_assert_eq!(got.map(|(k, _)| k), want);
                        if let Some((k, item)) = got {
                            prop_assert_eq!(k, item);
                            floor = k;
                        }
                    }
                }
                prop_assert_eq!(a.len(), reference.len());
            }
        }
    }
}
