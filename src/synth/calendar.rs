//! Open sessions parked until the chunk of ticks their next event falls in: a ring of
//! [`RING`] lists for the chunks just ahead (where almost every session gap lands) and a heap
//! for the rest. A chunk's sessions are taken all at once, so parking is an append and taking
//! a list swap: nothing is ordered here (the chunk orders its events).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Lists of the ring: chunks `cur .. cur + RING` (one word marks the occupied ones).
const RING: u64 = 64;

/// Items waiting for a chunk, by chunk.
#[derive(Debug, Clone)]
pub(super) struct Calendar<T> {
    /// The chunk taken last (nothing waits for an earlier one).
    cur: u64,
    /// List `c mod RING` holds the items of chunk `c` for `c` in `cur .. cur + RING`.
    ring: Vec<Vec<T>>,
    /// Bit `c mod RING` set when list `c mod RING` holds items.
    occupied: u64,
    /// Items of chunks at or past `cur + RING` when parked.
    far: BinaryHeap<Reverse<Far<T>>>,
    len: usize,
}

/// An item ordered by its chunk alone.
#[derive(Debug, Clone)]
struct Far<T>(u64, T);

impl<T> PartialEq for Far<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Far<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T> Calendar<T> {
    pub(super) fn new() -> Self {
        Calendar {
            cur: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            occupied: 0,
            far: BinaryHeap::new(),
            len: 0,
        }
    }

    /// Items waiting.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Parks `item` until `chunk`, which is after the chunk taken last.
    pub(super) fn park(&mut self, chunk: u64, item: T) {
        debug_assert!(chunk > self.cur);
        self.len += 1;
        if chunk - self.cur < RING {
            let i = (chunk % RING) as usize;
            self.ring[i].push(item);
            self.occupied |= 1 << i;
        } else {
            self.far.push(Reverse(Far(chunk, item)));
        }
    }

    /// The earliest chunk an item waits for.
    pub(super) fn next_chunk(&self) -> Option<u64> {
        // ring list i is chunk cur + ((i − cur) mod RING): rotated so bit 0 is the cur's list
        let ring = (self.occupied != 0).then(|| {
            let rotated = self.occupied.rotate_right((self.cur % RING) as u32);
            self.cur + u64::from(rotated.trailing_zeros())
        });
        let far = self.far.peek().map(|Reverse(Far(c, _))| *c);
        match (ring, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Appends the items of `chunk` (at or after the chunk taken last, and no earlier chunk
    /// holding items: [`Self::next_chunk`] or earlier) to `into`.
    pub(super) fn take(&mut self, chunk: u64, into: &mut Vec<T>) {
        debug_assert!(self.next_chunk().is_none_or(|c| c >= chunk));
        self.cur = chunk;
        let i = (chunk % RING) as usize;
        if self.occupied & 1 << i != 0 {
            // the list leaves with its allocation: a list kept its largest chunk's capacity,
            // and every chunk of the ring passes through each list
            let list = std::mem::take(&mut self.ring[i]);
            self.len -= list.len();
            if into.is_empty() {
                *into = list;
            } else {
                into.extend(list);
            }
            self.occupied &= !(1 << i);
        }
        while let Some(Reverse(Far(c, _))) = self.far.peek() {
            if *c != chunk {
                break;
            }
            if let Some(Reverse(Far(_, item))) = self.far.pop() {
                self.len -= 1;
                into.push(item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Against a map of chunk to items: parks at chunks up to three rings ahead of the
        /// chunk taken last, and takes the earliest; every item comes back once, at its chunk.
        #[test]
        fn gives_each_item_back_at_its_chunk(
            ops in proptest::collection::vec((0u8..3, 1u64..3 * RING), 1..600),
        ) {
            let mut cal = Calendar::new();
            let mut reference: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            let mut cur = 0;
            let mut serial = 0u64;
            for (op, ahead) in ops {
                if op < 2 {
                    serial += 1;
                    cal.park(cur + ahead, serial);
                    reference.entry(cur + ahead).or_default().push(serial);
                } else {
                    let want = reference.keys().next().copied();
                    prop_assert_eq!(cal.next_chunk(), want);
                    if let Some(c) = want {
                        let mut got = Vec::new();
                        cal.take(c, &mut got);
                        let mut expected = reference.remove(&c).unwrap_or_default();
                        got.sort_unstable();
                        expected.sort_unstable();
                        prop_assert_eq!(got, expected);
                        cur = c;
                    }
                }
                prop_assert_eq!(cal.len(), reference.values().map(Vec::len).sum::<usize>());
            }
        }
    }
}
