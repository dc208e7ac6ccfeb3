//! A table of either kind: a cuckoo table, or the short list a shard with few keys holds.

use super::list::List;
use super::table::{Prior, Slot, Table, SLOTS};
use super::LOAD;
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// A cuckoo table or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum AnyTable<S: Slot> {
    Cuckoo(Table<S>),
    List(List<S>),
}

impl<S: Slot> AnyTable<S> {
    /// The bucket (a list's half) and fingerprint of a key.
    #[cfg(test)]
    pub fn spot(&self, lo: u64, fpb: u64) -> (usize, u64) {
        let s = match self {
            AnyTable::Cuckoo(t) => t.spot(lo, fpb),
            AnyTable::List(_) => List::<S>::spot(lo, fpb),
        };
        (s.bucket, s.fp)
    }

    /// Requests the cache lines a key with 64-bit hash `lo` and fingerprint bits `fpb` reads (a
    /// list is a few lines, read whole).
    #[inline]
    pub fn prefetch(&self, lo: u64, fpb: u64) {
        if let AnyTable::Cuckoo(t) = self {
            t.prefetch(t.spot(lo, fpb));
        }
    }

    /// Whether the key holds an entry under a tag in `live`.
    #[inline]
    pub fn contains(&self, lo: u64, fpb: u64, live: u32) -> bool {
        match self {
            AnyTable::Cuckoo(t) => t.contains(t.spot(lo, fpb), live),
            AnyTable::List(l) => l.contains(List::<S>::spot(lo, fpb), live),
        }
    }

    /// The tag of the live entry the key matches, if any.
    pub fn live_tag(&self, lo: u64, fpb: u64, live: u32) -> Option<u64> {
        match self {
            AnyTable::Cuckoo(t) => t.live_tag(t.spot(lo, fpb), live),
            AnyTable::List(l) => l.live_tag(List::<S>::spot(lo, fpb), live),
        }
    }

    /// Re-tags the key's live entry to `tag` and says what it carried; `None` when there is
    /// none.
    #[inline]
    pub fn refresh(&mut self, lo: u64, fpb: u64, tag: u64, live: u32) -> Option<Prior> {
        match self {
            AnyTable::Cuckoo(t) => t.refresh(t.spot(lo, fpb), tag, live),
            AnyTable::List(l) => l.refresh(List::<S>::spot(lo, fpb), tag, live),
        }
    }

    /// Inserts the key under `tag`: re-tags its live entry, or (and always when `checked`, the
    /// caller having found none) places a new one.
    #[inline]
    pub fn place(&mut self, lo: u64, fpb: u64, tag: u64, live: u32, checked: bool) -> Prior {
        match self {
            AnyTable::Cuckoo(t) => {
                let spot = t.spot(lo, fpb);
                if checked {
                    t.insert_new(spot, tag, live);
                    Prior::New
                } else {
                    t.insert(spot, tag, live)
                }
            }
            AnyTable::List(l) => {
                let spot = List::<S>::spot(lo, fpb);
                if checked {
                    l.insert_new(spot, tag, live);
                    Prior::New
                } else {
                    l.insert(spot, tag, live)
                }
            }
        }
    }

    /// Clears the entries of the `dead` tags; returns the entries left.
    pub fn sweep(&mut self, dead: u32) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => t.sweep(dead),
            AnyTable::List(l) => l.sweep(dead),
        }
    }

    /// Entries whose tag is in `live`.
    pub fn live(&self, live: u32) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => t.live(live),
            AnyTable::List(l) => l.live(live),
        }
    }

    /// Entries held, live or not yet cleared (a cuckoo table's stashed ones included).
    pub fn occupied(&self) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => t.occupied(),
            AnyTable::List(l) => l.occupied(),
        }
    }

    /// Entries it can hold before it is full: `α` of a cuckoo table's slots, a list's limit.
    pub fn usable(&self) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => (LOAD * t.capacity() as f64) as u64,
            AnyTable::List(l) => l.limit(),
        }
    }

    /// Whether a placement must wait for room: a cuckoo table at load `α` or with an entry in
    /// its stash, a list at its limit.
    #[inline]
    pub fn full(&self) -> bool {
        match self {
            AnyTable::Cuckoo(t) => t.stashed() || t.occupied() as f64 >= LOAD * t.capacity() as f64,
            AnyTable::List(l) => l.full(),
        }
    }

    /// A cuckoo table's buckets; 0 for a list.
    pub fn buckets(&self) -> usize {
        match self {
            AnyTable::Cuckoo(t) => t.buckets(),
            AnyTable::List(_) => 0,
        }
    }

    /// Slots and stashed entries a table file may account for: what bounds the counts read
    /// with it.
    pub fn held(&self) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => t.capacity() + t.stash_len(),
            AnyTable::List(l) => l.limit(),
        }
    }

    /// Memory held, in bits.
    pub fn memory_bits(&self) -> u64 {
        match self {
            AnyTable::Cuckoo(t) => t.memory_bits(),
            AnyTable::List(l) => l.memory_bits(),
        }
    }

    /// Occupied and total slots (a list's are all occupied), and the false positive rate its
    /// entries imply for a key not in it.
    pub fn fill(&self) -> (u64, u64, f64) {
        match self {
            AnyTable::Cuckoo(t) => {
                let values = ((1u64 << S::FP_BITS) - 1) as f64;
                let load = t.occupied() as f64 / t.capacity().max(1) as f64;
                let fpr = (2 * SLOTS) as f64 * load / values;
                (t.occupied(), t.capacity(), fpr)
            }
            AnyTable::List(l) => (l.occupied(), l.occupied(), l.fpr()),
        }
    }

    /// Counts the entries per tag again (a table read from a file has none counted).
    pub fn recount(&mut self) {
        match self {
            AnyTable::Cuckoo(t) => t.recount(),
            AnyTable::List(l) => l.recount(),
        }
    }

    /// Checks a table read from a file for a filter of false positive rate `fpr`.
    pub fn check(&self, fpr: f64) -> Result<()> {
        match self {
            AnyTable::Cuckoo(t) => t.check(),
            AnyTable::List(l) => l.check(fpr),
        }
    }

    /// Whether it is a list.
    pub fn is_list(&self) -> bool {
        matches!(self, AnyTable::List(_))
    }
}
