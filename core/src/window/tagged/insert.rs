//! Insertion: one key or a tick's batch, each placed in the active table (grown first when full),
//! and the hashes a young stream keeps of the keys it inserts.

use super::{fp_bits, order, with_tables, Prior, Store, TaggedCuckooFilter, TAGS};
use crate::error::Result;
use crate::temporal::Tick;

/// Repeated hashes a young stream's list may hold beyond twice its keys before they are removed.
const YOUNG_REPEATS: u64 = 8;
/// How far ahead of the key being placed a batch insertion requests a key's buckets.
const PLACE_AHEAD: usize = 8;
/// Items of a batch whose findings are kept on the stack (a larger batch allocates for them).
const STACK_BATCH: usize = 64;

impl TaggedCuckooFilter {
    /// Inserts the key with 64-bit hash `hash` at `now` (not before the latest insertion's
    /// generation) and says what it found.
    /// [`Error::OutOfMemory`](crate::error::Error::OutOfMemory) when a larger table is needed and
    /// cannot be had; the key is then not inserted.
    pub fn insert_fingerprint(&mut self, hash: u64, now: Tick) -> Result<Prior> {
        self.observe(now)?;
        let (tag, live) = self.tags(now);
        self.place(hash, now, tag, live, false)
    }

    /// Inserts a batch of keys at `now` and hands each item to `done` with what its key found.
    /// The resulting state does not depend on the order of `items`: keys already live are
    /// re-tagged first, then the others are placed in the order of their hashes (placement, and
    /// so later false positives, depends on the order of insertion); a new key whose fingerprint
    /// and buckets another new key of the batch took takes a slot of its own and is reported
    /// [`Prior::New`] (where [`insert_fingerprint`](Self::insert_fingerprint) one key at a time
    /// would find the other's entry). `items` is left empty. On an error
    /// ([`Error::OutOfMemory`](crate::error::Error::OutOfMemory) when a larger table cannot be
    /// had) the items not handed to `done` were not inserted.
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// use chronobloom_core::window::{Prior, TaggedCuckooFilter};
    /// let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap();
    /// let (x, y) = (KeyHash::of(&"x", 0).lo, KeyHash::of(&"y", 0).lo);
    /// let mut found = Vec::new();
    /// f.insert_batch(&mut vec![("a", x), ("b", y), ("c", x)], 5, |i, p| found.push((i, p)))
    ///     .unwrap();
    /// found.sort();
    /// assert_eq!(found, [("a", Prior::New), ("b", Prior::New), ("c", Prior::Current)]);
    /// ```
    pub fn insert_batch<T>(
        &mut self,
        items: &mut Vec<(T, u64)>,
        now: Tick,
        done: impl FnMut(T, Prior),
    ) -> Result<()> {
        self.insert_batch_with(items, now, |_| false, done)
    }

    /// [`insert_batch`](Self::insert_batch) for a caller that knows some keys are absent:
    /// `absent(item)` true promises that [`seen`](Self::seen) at `now` was false for the item's
    /// key (before this batch), which spares the re-tag pass its look-up.
    pub fn insert_batch_with<T>(
        &mut self,
        items: &mut Vec<(T, u64)>,
        now: Tick,
        absent: impl Fn(&T) -> bool,
        mut done: impl FnMut(T, Prior),
    ) -> Result<()> {
        if items.len() == 1 {
            if let Some((item, hash)) = items.pop() {
                return self.insert_one_with(item, hash, now, absent, done);
            }
        }
        self.observe(now)?;
        let (tag, live) = self.tags(now);
        // In the order of their hashes (a dedup operator's tick comes in it), the items are
        // re-tagged or found new in place, and then handed on or placed in one more pass: nothing
        // is moved but to `done`, and a small batch allocates nothing.
        if !items.is_sorted_by_key(|&(_, hash)| hash) {
            order::sort_by_hash(items);
        }
        let mut on_stack = [None; STACK_BATCH];
        let mut on_heap = Vec::new();
        let found: &mut [Option<Prior>] = match on_stack.get_mut(..items.len()) {
            Some(f) => f,
            None => {
                on_heap.resize(items.len(), None);
                &mut on_heap
            }
        };
        for (f, (item, hash)) in found.iter_mut().zip(items.iter()) {
            *f = self.refresh_live(item, *hash, tag, live, &absent);
        }
        // the distinct keys to place (repeats of a key are neighbours and take one slot)
        let mut distinct = 0u64;
        let mut last = None;
        for (_, hash) in items
            .iter()
            .zip(found.iter())
            .filter(|(_, f)| f.is_none())
            .map(|(x, _)| x)
        {
            if last != Some(*hash) {
                distinct += 1;
                last = Some(*hash);
            }
        }
        // After an error the re-tagged items still go to `done`; the others are not inserted.
        let mut result = self.make_room(now, distinct);
        let mut previous = None;
        let mut rest = items.drain(..);
        let mut j = 0;
        while let Some((item, hash)) = rest.next() {
            let prior = found.get(j).copied().flatten();
            j += 1;
            if let Some(prior) = prior {
                done(item, prior);
                continue;
            }
            if result.is_err() {
                continue;
            }
            // The buckets of the item `PLACE_AHEAD` places on, when it is placed too, are
            // requested while this one is (the check brought them near, not into the
            // first-level cache).
            if let (Some(&(_, h)), Some(None)) = (
                rest.as_slice().get(PLACE_AHEAD - 1),
                found.get(j - 1 + PLACE_AHEAD),
            ) {
                self.prefetch(h);
            }
            // a repeat of the key just placed is current, even if the table grew in between
            let placed = if previous == Some(hash) {
                Ok(Prior::Current)
            } else {
                self.place(hash, now, tag, live, true)
            };
            match placed {
                Ok(prior) => {
                    previous = Some(hash);
                    done(item, prior);
                }
                Err(e) => result = Err(e),
            }
        }
        result
    }

    /// [`insert_batch_with`](Self::insert_batch_with) of one item, without the batch's buffers
    /// (a sparse stream's ticks hold one key a shard): the same state and answer.
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// use chronobloom_core::window::{Prior, TaggedCuckooFilter};
    /// let (mut one, mut batch) = (
    ///     TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap(),
    ///     TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap(),
    /// );
    /// let x = KeyHash::of(&"x", 0).lo;
    /// let (mut a, mut b) = (Vec::new(), Vec::new());
    /// for now in [5, 6, 40] {
    ///     one.insert_one_with("x", x, now, |_| false, |i, p| a.push((i, p))).unwrap();
    ///     batch.insert_batch_with(&mut vec![("x", x)], now, |_| false, |i, p| b.push((i, p))).unwrap();
    /// }
    /// assert_eq!(a, [("x", Prior::New), ("x", Prior::Current), ("x", Prior::Older)]);
    /// assert_eq!(a, b);
    /// ```
    pub fn insert_one_with<T>(
        &mut self,
        item: T,
        hash: u64,
        now: Tick,
        absent: impl Fn(&T) -> bool,
        mut done: impl FnMut(T, Prior),
    ) -> Result<()> {
        self.observe(now)?;
        let (tag, live) = self.tags(now);
        if let Some(prior) = self.refresh_live(&item, hash, tag, live, &absent) {
            done(item, prior);
            return Ok(());
        }
        self.make_room(now, 1)?;
        let prior = self.place(hash, now, tag, live, true)?;
        done(item, prior);
        Ok(())
    }

    /// The re-tag pass for one item: what its key found when it has a live entry in the active
    /// table (re-tagged to `tag`), `None` when it must be placed (`absent(item)` promises it has
    /// none, sparing the look-up).
    #[inline]
    fn refresh_live<T>(
        &mut self,
        item: &T,
        hash: u64,
        tag: u64,
        live: u32,
        absent: impl Fn(&T) -> bool,
    ) -> Option<Prior> {
        if absent(item) {
            return None;
        }
        let bits = fp_bits(hash);
        let prior = with_tables!(&mut self.store, t => {
            let active = t.active_mut();
            active.refresh(hash, bits, tag, live)
        })?;
        self.remember(hash);
        Some(prior)
    }

    /// Room in the active table for `distinct` keys at once (a stream's first batch, a burst):
    /// one larger table instead of a chain of small ones, each of which would answer false
    /// positives until its entries die. Dead entries are swept first, as they may take the room.
    fn make_room(&mut self, now: Tick, distinct: u64) -> Result<()> {
        let room = |f: &Self| {
            with_tables!(&f.store, t => {
                let a = t.active();
                a.usable() - a.occupied().min(a.usable())
            })
        };
        if distinct > room(self) {
            self.sweep(now);
            if distinct > room(self) {
                self.grow(now, self.generations.of(now), distinct)?;
            }
        }
        Ok(())
    }

    /// The current tag and the live-tag mask of an insertion at `now` (observed).
    fn tags(&self, now: Tick) -> (u64, u32) {
        (self.generations.of(now) % TAGS, self.live_tags(now))
    }

    /// Inserts `hash` under `tag`, starting a larger table first if the active one is full. (A
    /// key live only in a drained table is placed anew: its entry there cannot be told from
    /// another key's with the same fingerprint, so it stays until it dies.) `checked`: the re-tag
    /// pass found no live entry of the key in the active table before its batch, so it takes a
    /// slot of its own without a look-up (a key of the batch placed before it with the same
    /// fingerprint and buckets is another key: two entries answer for the two).
    fn place(&mut self, hash: u64, now: Tick, tag: u64, live: u32, checked: bool) -> Result<Prior> {
        if self.full() {
            // dead entries may be what fills it
            self.sweep(now);
            if self.full() {
                self.grow(now, self.generations.of(now), 0)?;
            }
        }
        let bits = fp_bits(hash);
        let prior = with_tables!(&mut self.store, t => t.active_mut().place(hash, bits, tag, live, checked));
        if prior == Prior::New {
            self.rate.record_new(now);
            self.population = self.population.saturating_add(1);
        }
        self.remember(hash);
        Ok(prior)
    }

    /// Keeps the hash of a key inserted while the stream is young; repeats are removed when the
    /// list exceeds twice the population and a few (and youth ends if that leaves it as long).
    fn remember(&mut self, hash: u64) {
        let bound = self
            .population
            .saturating_mul(2)
            .saturating_add(YOUNG_REPEATS) as usize;
        let list = with_tables!(&self.store, t => t.active().is_list());
        if let Some(young) = self.young.as_mut() {
            // a list's keys are a few dozen: kept without repeats
            if list && young.contains(&hash) {
                return;
            }
            young.push(hash);
            if young.len() > bound {
                young.sort_unstable();
                young.dedup();
                if young.len() > bound {
                    self.young = None;
                }
            }
        }
    }

    #[inline(always)]
    fn full(&self) -> bool {
        with_tables!(&self.store, t => t.active().full())
    }
}
