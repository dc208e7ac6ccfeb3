//! The open sessions of a generator, earliest first: a calendar queue (Brown 1988) over 128-bit
//! keys whose high half is a tick.
//!
//! A generator pops its sessions in key order and pushes only keys at or after the last one it
//! popped, most of them a few thousand ticks ahead. The queue is a wheel of [`SLOTS`] slots of
//! `2^SHIFT` ticks each, starting at the cursor's slot (which holds the smallest key, so a key
//! pushed below its first tick is still below every other slot's and goes into it, in order): a
//! push within the wheel's span is a slot append, one past it waits in a binary heap and enters
//! the wheel as the cursor comes within a span of it. A look or a pop takes the smallest key of
//! the cursor's slot, sorted when the cursor reaches it (a few keys);
//! an empty slot is skipped through a bitmap of the occupied ones. A key is moved at most twice
//! (heap to wheel, slot to output), where the radix heap this replaces moved it once per bit of
//! its distance from the minimum, and a binary heap sifts every pop through `log n` levels.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ticks per slot: `2^SHIFT`.
const SHIFT: u32 = 4;
/// Slots of the wheel (a multiple of 64): with 16-tick slots a span of 16,384 ticks, past which
/// few of a generator's session gaps (5 s of 1 ms ticks in the main job's) reach.
const SLOTS: usize = 1024;
/// Ticks the wheel spans from the cursor slot's first.
const SPAN: u64 = (SLOTS as u64) << SHIFT;

/// Items with unique 128-bit keys, popped in key order.
#[derive(Debug, Clone)]
pub(super) struct Agenda<T> {
    /// The first tick of the cursor's slot (a multiple of `2^SHIFT`); keys below it (pushed after
    /// a look moved the cursor on) are in the cursor's slot too.
    base: u64,
    /// The cursor's slot.
    cur: usize,
    /// Slot `(cur + i) mod SLOTS` holds the keys of ticks `base + i·2^SHIFT ..` (`2^SHIFT` of
    /// them); the cursor's slot is sorted largest key first once `sorted` says so.
    slots: Vec<Vec<(u128, T)>>,
    sorted: bool,
    /// Bit `s mod 64` of word `s / 64` set when slot `s` holds items.
    occupied: Vec<u64>,
    /// Keys at or past `base + SPAN`.
    far: BinaryHeap<Reverse<Keyed<T>>>,
    len: usize,
}

/// An item ordered by its key alone.
#[derive(Debug, Clone)]
struct Keyed<T>(u128, T);

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Keyed<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// The tick of a key.
fn tick(key: u128) -> u64 {
    (key >> 64) as u64
}

impl<T> Agenda<T> {
    pub(super) fn new() -> Self {
        Agenda {
            base: 0,
            cur: 0,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            sorted: false,
            occupied: vec![0; SLOTS / 64],
            far: BinaryHeap::new(),
            len: 0,
        }
    }

    /// Open items.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds an item; `key` is at or after the last key popped (an earlier one would be popped
    /// before the later keys of the cursor's slot, not before those already popped).
    pub(super) fn push(&mut self, key: u128, item: T) {
        self.len += 1;
        self.place(key, item);
    }

    /// Puts an item in its slot, or in `far` past the wheel's span.
    fn place(&mut self, key: u128, item: T) {
        let ahead = tick(key).saturating_sub(self.base);
        if ahead >= SPAN {
            self.far.push(Reverse(Keyed(key, item)));
            return;
        }
        let s = (self.cur + (ahead >> SHIFT) as usize) % SLOTS;
        let slot = &mut self.slots[s];
        if s == self.cur && self.sorted {
            let at = slot.partition_point(|e| e.0 > key);
            slot.insert(at, (key, item));
        } else {
            slot.push((key, item));
        }
        self.occupied[s / 64] |= 1 << (s % 64);
    }

    /// The first occupied slot at or after the cursor's, in wheel order.
    fn first_occupied(&self) -> Option<usize> {
        let words = self.occupied.len();
        let (w0, b0) = (self.cur / 64, self.cur % 64);
        // the cursor's word from its bit on, the other words, then the cursor's word below it
        let head = self.occupied[w0] & (u64::MAX << b0);
        if head != 0 {
            return Some(w0 * 64 + head.trailing_zeros() as usize);
        }
        for i in 1..words {
            let w = (w0 + i) % words;
            if self.occupied[w] != 0 {
                return Some(w * 64 + self.occupied[w].trailing_zeros() as usize);
            }
        }
        let tail = self.occupied[w0] & !(u64::MAX << b0);
        (tail != 0).then(|| w0 * 64 + tail.trailing_zeros() as usize)
    }

    /// Moves the cursor to the slot holding the smallest key (the wheel's first occupied slot,
    /// or, with the wheel empty, the slot of `far`'s smallest key), bringing the keys of the
    /// span it gains in from `far`; `false` when nothing is left.
    fn advance(&mut self) -> bool {
        let s = match self.first_occupied() {
            Some(s) => s,
            None => {
                let Some(Reverse(Keyed(k, _))) = self.far.peek() else {
                    return false;
                };
                // an empty wheel starts again at the slot of the smallest far key
                self.base = tick(*k) >> SHIFT << SHIFT;
                self.sorted = false;
                self.take_far();
                return self.first_occupied().is_some_and(|s| {
                    self.move_to(s);
                    true
                });
            }
        };
        self.move_to(s);
        true
    }

    /// Moves the cursor forward to slot `s` (the slots passed are empty).
    fn move_to(&mut self, s: usize) {
        if s == self.cur {
            return;
        }
        let passed = (s + SLOTS - self.cur) % SLOTS;
        self.base += (passed as u64) << SHIFT;
        self.cur = s;
        self.sorted = false;
        self.take_far();
    }

    /// Brings the far keys now within the wheel's span into their slots.
    fn take_far(&mut self) {
        while self
            .far
            .peek()
            .is_some_and(|Reverse(Keyed(k, _))| tick(*k).saturating_sub(self.base) < SPAN)
        {
            if let Some(Reverse(Keyed(k, item))) = self.far.pop() {
                self.place(k, item);
            }
        }
    }

    /// Brings the smallest key to the end of the cursor's slot (moving the cursor to it and
    /// sorting the slot); `false` when nothing is left. A key pushed afterwards below the
    /// cursor's slot (still at or after the last key popped) lands in it, in order.
    fn settle(&mut self) -> bool {
        if self.slots[self.cur].is_empty() && !self.advance() {
            return false;
        }
        if !self.sorted {
            self.slots[self.cur].sort_unstable_by_key(|e| Reverse(e.0));
            self.sorted = true;
        }
        true
    }

    /// The smallest key (settled where [`pop`](Self::pop) takes it from, so a look costs no
    /// more than the pop it precedes).
    pub(super) fn min_key(&mut self) -> Option<u128> {
        if !self.settle() {
            return None;
        }
        self.slots[self.cur].last().map(|e| e.0)
    }

    /// The item with the smallest key, and its key.
    pub(super) fn pop(&mut self) -> Option<(u128, T)> {
        if !self.settle() {
            return None;
        }
        let slot = &mut self.slots[self.cur];
        let popped = slot.pop();
        if slot.is_empty() {
            self.occupied[self.cur / 64] &= !(1 << (self.cur % 64));
        }
        if popped.is_some() {
            self.len -= 1;
        }
        popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    /// Pops from the agenda and the reference heap, which must agree (an item is its own key);
    /// the popped key becomes `floor`.
    fn pop_both(
        a: &mut Agenda<u128>,
        reference: &mut BinaryHeap<Reverse<u128>>,
        floor: &mut u128,
    ) -> Result<(), TestCaseError> {
        let got = a.pop();
        prop_assert_eq!(got.map(|(k, _)| k), reference.pop().map(|r| r.0));
        if let Some((k, item)) = got {
            prop_assert_eq!(k, item);
            *floor = k;
        }
        Ok(())
    }

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
                    _ => pop_both(&mut a, &mut reference, &mut floor)?,
                }
                prop_assert_eq!(a.len(), reference.len());
            }
        }

        /// The same against keys a generator makes: ticks up to three wheel spans past the last
        /// pop (the wheel wraps round, keys wait in the far heap and come back, an emptied
        /// wheel restarts at the far keys), several keys a tick, long runs of pops.
        #[test]
        fn pops_in_key_order_across_the_wheel(
            ops in proptest::collection::vec((0u8..4, 0u64..3 * SPAN, 0u64..1 << 20), 1..2000),
        ) {
            let mut a = Agenda::new();
            let mut reference: BinaryHeap<Reverse<u128>> = BinaryHeap::new();
            let mut floor = 0u128;
            for (op, gap, order) in ops {
                match op {
                    0 | 1 => {
                        let key = (((floor >> 64) as u64 + gap) as u128) << 64 | u128::from(order);
                        if key < floor || reference.iter().any(|r| r.0 == key) {
                            continue;
                        }
                        a.push(key, key);
                        reference.push(Reverse(key));
                    }
                    2 => prop_assert_eq!(a.min_key(), reference.peek().map(|r| r.0)),
                    _ => pop_both(&mut a, &mut reference, &mut floor)?,
                }
                prop_assert_eq!(a.len(), reference.len());
            }
            while let Some(Reverse(want)) = reference.pop() {
                prop_assert_eq!(a.pop().map(|(k, _)| k), Some(want));
            }
            prop_assert_eq!(a.pop().map(|(k, _)| k), None);
        }
    }
}
