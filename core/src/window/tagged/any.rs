//! A table of any kind: a cuckoo table, a drained one repacked into fewer slots a bucket, or
//! the short list a shard with few keys holds.

use super::list::List;
use super::table::{Prior, Slot, Table};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// A cuckoo table ([`SLOTS`](super::table::SLOTS) slots a bucket), a drained one repacked into
/// 6, 4 or 2 slots a bucket ([`AnyTable::repacked`]), or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum AnyTable<S: Slot> {
    Cuckoo(Table<S>),
    List(List<S>),
    Six(Table<S, 6>),
    Four(Table<S, 4>),
    Two(Table<S, 2>),
}

/// `$cuckoo` with `$t` bound to the table whatever its width, or `$list` with `$l` bound to
/// the list.
macro_rules! each {
    ($table:expr, $t:ident => $cuckoo:expr, $l:ident => $list:expr) => {
        match $table {
            AnyTable::Cuckoo($t) => $cuckoo,
            AnyTable::List($l) => $list,
            AnyTable::Six($t) => $cuckoo,
            AnyTable::Four($t) => $cuckoo,
            AnyTable::Two($t) => $cuckoo,
        }
    };
}
pub(super) use each;

impl<S: Slot> AnyTable<S> {
    /// The bucket (a list's half) and fingerprint of a key.
    #[cfg(test)]
    pub fn spot(&self, lo: u64, fpb: u64) -> (usize, u64) {
        let s = each!(self, t => t.spot(lo, fpb), _l => List::<S>::spot(lo, fpb));
        (s.bucket, s.fp)
    }

    /// Requests the cache lines a key with 64-bit hash `lo` and fingerprint bits `fpb` reads (a
    /// list is a few lines, read whole).
    #[inline]
    pub fn prefetch(&self, lo: u64, fpb: u64) {
        each!(self, t => t.prefetch(t.spot(lo, fpb)), _l => ())
    }

    /// Whether the key holds an entry under a tag in `live`.
    #[inline]
    pub fn contains(&self, lo: u64, fpb: u64, live: u32) -> bool {
        each!(self,
            t => t.contains(t.spot(lo, fpb), live),
            l => l.contains(List::<S>::spot(lo, fpb), live))
    }

    /// The tag of the live entry the key matches, if any.
    pub fn live_tag(&self, lo: u64, fpb: u64, live: u32) -> Option<u64> {
        each!(self,
            t => t.live_tag(t.spot(lo, fpb), live),
            l => l.live_tag(List::<S>::spot(lo, fpb), live))
    }

    /// Re-tags the key's live entry to `tag` and says what it carried; `None` when there is
    /// none.
    #[inline]
    pub fn refresh(&mut self, lo: u64, fpb: u64, tag: u64, live: u32) -> Option<Prior> {
        each!(self,
            t => t.refresh(t.spot(lo, fpb), tag, live),
            l => l.refresh(List::<S>::spot(lo, fpb), tag, live))
    }

    /// Inserts the key under `tag`: re-tags its live entry, or (and always when `checked`, the
    /// caller having found none) places a new one.
    #[inline]
    pub fn place(&mut self, lo: u64, fpb: u64, tag: u64, live: u32, checked: bool) -> Prior {
        each!(self,
        t => {
            let spot = t.spot(lo, fpb);
            if checked {
                t.insert_new(spot, tag, live);
                Prior::New
            } else {
                t.insert(spot, tag, live)
            }
        },
        l => {
            let spot = List::<S>::spot(lo, fpb);
            if checked {
                l.insert_new(spot, tag, live);
                Prior::New
            } else {
                l.insert(spot, tag, live)
            }
        })
    }

    /// Clears the entries of the `dead` tags; returns the entries left.
    pub fn sweep(&mut self, dead: u32) -> u64 {
        each!(self, t => t.sweep(dead), l => l.sweep(dead))
    }

    /// Entries whose tag is in `live`.
    pub fn live(&self, live: u32) -> u64 {
        each!(self, t => t.live(live), l => l.live(live))
    }

    /// Entries held, live or not yet cleared (a cuckoo table's stashed ones included).
    pub fn occupied(&self) -> u64 {
        each!(self, t => t.occupied(), l => l.occupied())
    }

    /// Entries it can hold before it is full: `α` of a cuckoo table's slots, a list's limit.
    pub fn usable(&self) -> u64 {
        each!(self, t => t.usable(), l => l.limit())
    }

    /// Whether a placement must wait for room: a cuckoo table at load `α` or with an entry in
    /// its stash, a list at its limit.
    #[inline]
    pub fn full(&self) -> bool {
        each!(self,
            t => t.stashed() || t.at_load(),
            l => l.full())
    }

    /// A cuckoo table's buckets; 0 for a list.
    pub fn buckets(&self) -> usize {
        each!(self, t => t.buckets(), _l => 0)
    }

    /// Slots and stashed entries a table file may account for: what bounds the counts read
    /// with it.
    pub fn held(&self) -> u64 {
        each!(self, t => t.capacity() + t.stash_len(), l => l.limit())
    }

    /// Memory held, in bits.
    pub fn memory_bits(&self) -> u64 {
        each!(self, t => t.memory_bits(), l => l.memory_bits())
    }

    /// Occupied and total slots (a list's are all occupied), and the false positive rate its
    /// entries imply for a key not in it.
    pub fn fill(&self) -> (u64, u64, f64) {
        each!(self,
            t => {
                // a query reads two buckets: twice the slots a bucket holds
                let values = ((1u64 << S::FP_BITS) - 1) as f64;
                let read = 2 * t.capacity() / t.buckets() as u64;
                let load = t.occupied() as f64 / t.capacity().max(1) as f64;
                (t.occupied(), t.capacity(), read as f64 * load / values)
            },
            l => (l.occupied(), l.occupied(), l.fpr()))
    }

    /// Counts the entries per tag again (a table read from a file has none counted).
    pub fn recount(&mut self) {
        each!(self, t => t.recount(), l => l.recount())
    }

    /// Checks a table read from a file for a filter of false positive rate `fpr`.
    pub fn check(&self, fpr: f64) -> Result<()> {
        each!(self, t => t.check(), l => l.check(fpr))
    }

    /// Whether it is a list.
    pub fn is_list(&self) -> bool {
        matches!(self, AnyTable::List(_))
    }
}
