//! A short list of tagged fingerprints: the table of a shard with few keys. A cuckoo table grows
//! and shrinks by whole buckets, and a resized table is read beside its successor for a window,
//! which for a dozen keys costs more than the keys; a list grows and shrinks one entry at a time
//! and holds exactly its entries.
//!
//! Keys are split into two halves by the top bit of their hash, and a query compares its
//! fingerprint with every entry of its half: with `n` live entries a key not in the list matches
//! one with probability at most `(n / 2) / (2^f − 1)` on average over keys, so a list of at most
//! `⌊2ε (2^f − 1)⌋` entries (40 at ε = 0.01 with 11-bit fingerprints, at most [`MAX_ENTRIES`])
//! keeps the filter's bound. Dead entries are reused by insertions and cleared every generation.

use super::counts::TagCounts;
use super::table::{fingerprint, is_live, tag_of, Prior, Slot, Spot, TAG_BITS};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Most entries a list holds, whatever ε allows: a query scans half of them.
pub(super) const MAX_ENTRIES: u16 = 64;
/// Fewest entries worth a list: below this a one-bucket cuckoo table is started instead.
const MIN_ENTRIES: u16 = 8;
/// Bits a list holds besides its entries: the split and the limit.
const HEADER_BITS: u64 = 32;

/// Entries of the first half, then of the second, exactly as many as it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct List<S: Slot> {
    entries: Vec<S>,
    /// Where the second half starts.
    split: u16,
    /// Most entries (from ε, at most [`MAX_ENTRIES`]).
    limit: u16,
    /// Per tag, the entries holding it (derived, so not serialized: [`List::recount`]).
    #[serde(skip)]
    tagged: TagCounts,
}

impl<S: Slot> List<S> {
    /// The most entries a list may hold at false positive rate `fpr`; `None` when a list would
    /// hold too few to be worth it.
    pub fn limit_for(fpr: f64) -> Option<u16> {
        let values = ((1u64 << S::FP_BITS) - 1) as f64;
        let limit = (2.0 * fpr * values).floor().min(f64::from(MAX_ENTRIES)) as u16;
        (limit >= MIN_ENTRIES).then_some(limit)
    }

    /// An empty list of at most `limit` entries.
    pub fn new(limit: u16) -> Self {
        List {
            entries: Vec::new(),
            split: 0,
            limit,
            tagged: TagCounts::default(),
        }
    }

    /// The spot of a key: its half (the top bit of `lo`) and its fingerprint.
    #[inline]
    pub fn spot(lo: u64, fp_bits: u64) -> Spot {
        Spot {
            bucket: (lo >> 63) as usize,
            fp: fingerprint::<S>(fp_bits),
        }
    }

    /// The index range of half `h`.
    #[inline]
    fn half(&self, h: usize) -> std::ops::Range<usize> {
        let split = usize::from(self.split);
        if h == 0 {
            0..split
        } else {
            split..self.entries.len()
        }
    }

    /// The first live entry of the spot's half holding its fingerprint.
    #[inline]
    fn find(&self, spot: Spot, live: u32) -> Option<usize> {
        self.half(spot.bucket).find(|&i| {
            let word: u64 = self.entries[i].into();
            word >> TAG_BITS == spot.fp && is_live(word, live)
        })
    }

    /// Whether the list holds the spot's fingerprint under a tag in `live`.
    #[inline]
    pub fn contains(&self, spot: Spot, live: u32) -> bool {
        self.find(spot, live).is_some()
    }

    /// The tag of the live entry the spot's key matches, if any.
    pub fn live_tag(&self, spot: Spot, live: u32) -> Option<u64> {
        self.find(spot, live)
            .map(|i| tag_of(self.entries[i].into()))
    }

    /// Re-tags the live entry with the spot's fingerprint to `tag` and says what it carried;
    /// `None` when there is none.
    pub fn refresh(&mut self, spot: Spot, tag: u64, live: u32) -> Option<Prior> {
        let i = self.find(spot, live)?;
        let word: u64 = self.entries[i].into();
        if tag_of(word) == tag {
            return Some(Prior::Current);
        }
        self.tagged.retag(word, tag);
        self.entries[i] = S::pack(spot.fp, tag);
        Some(Prior::Older)
    }

    /// Refreshes a live entry with the spot's fingerprint or adds one.
    pub fn insert(&mut self, spot: Spot, tag: u64, live: u32) -> Prior {
        self.refresh(spot, tag, live).unwrap_or_else(|| {
            self.insert_new(spot, tag, live);
            Prior::New
        })
    }

    /// Adds an entry for the spot's key under `tag` without looking for a live one: in a dead
    /// entry of its half if there is one, else at the end of its half (one more entry, the
    /// allocation grown by exactly one).
    pub fn insert_new(&mut self, spot: Spot, tag: u64, live: u32) {
        let packed = S::pack(spot.fp, tag);
        let dead = self
            .half(spot.bucket)
            .find(|&i| !is_live(self.entries[i].into(), live));
        if let Some(i) = dead {
            self.tagged.retag(self.entries[i].into(), tag);
            self.entries[i] = packed;
            return;
        }
        self.tagged.retag(0, tag);
        self.entries.reserve_exact(1);
        if spot.bucket == 0 {
            self.entries.insert(usize::from(self.split), packed);
            self.split += 1;
        } else {
            self.entries.push(packed);
        }
    }

    /// Removes the entries whose tag is in `dead`, releasing their memory; returns the entries
    /// left.
    pub fn sweep(&mut self, dead: u32) -> u64 {
        let gone = |s: &S| (dead >> tag_of((*s).into())) & 1 == 1;
        let split = usize::from(self.split);
        let gone_first = self.entries[..split].iter().filter(|s| gone(s)).count();
        if gone_first == 0 && !self.entries[split..].iter().any(gone) {
            return self.occupied();
        }
        self.entries.retain(|s| !gone(s));
        self.entries.shrink_to_fit();
        self.split -= gone_first as u16;
        self.tagged.clear(dead);
        self.occupied()
    }

    /// Entries whose tag is in `live`.
    pub fn live(&self, live: u32) -> u64 {
        self.tagged.live(live)
    }

    /// Entries held (live or not yet cleared).
    pub fn occupied(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The most entries it may hold.
    pub fn limit(&self) -> u64 {
        u64::from(self.limit)
    }

    /// Whether it holds as many entries as it may.
    pub fn full(&self) -> bool {
        self.entries.len() >= usize::from(self.limit)
    }

    /// Memory held, in bits: the entries' allocation and the split and limit.
    pub fn memory_bits(&self) -> u64 {
        self.entries.capacity() as u64 * u64::from(8 * size_of::<S>() as u32) + HEADER_BITS
    }

    /// The false positive rate its entries imply for a key not in it: half of them compared,
    /// each matching with probability `1 / (2^f − 1)`.
    pub fn fpr(&self) -> f64 {
        self.entries.len() as f64 / 2.0 / ((1u64 << S::FP_BITS) - 1) as f64
    }

    /// Counts the entries of each tag again (a list read back from a file has none counted).
    pub fn recount(&mut self) {
        self.tagged = TagCounts::of(self.entries.iter().map(|&s| s.into()));
    }

    /// Checks a list read from a file of a filter of false positive rate `fpr`: a fingerprint
    /// in every entry, the split inside it, no more entries than its limit, and the limit `fpr`
    /// gives (a longer list would answer more false positives than ε).
    pub fn check(&self, fpr: f64) -> Result<()> {
        let entry = |s: u64| s >> TAG_BITS != 0;
        if usize::from(self.split) > self.entries.len()
            || self.entries.len() > usize::from(self.limit)
            || Some(self.limit) != Self::limit_for(fpr)
            || self.entries.iter().any(|&s| !entry(s.into()))
        {
            return Err(Error::invalid(
                "list",
                format!(
                    "{} entries split at {} with a limit of {}, or an entry without a fingerprint",
                    self.entries.len(),
                    self.split,
                    self.limit
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hash::mix64;

    fn spot(k: u64) -> Spot {
        let h = mix64(k);
        List::<u16>::spot(h, h.rotate_left(32))
    }

    /// Every key inserted is found while its tag is live, whatever half it is in; entries are
    /// exactly as many as the keys, and the memory follows them.
    #[test]
    fn holds_its_keys_in_exactly_their_entries() {
        let mut l = List::<u16>::new(40);
        for k in 0..30 {
            assert_eq!(l.insert(spot(k), 3, 1 << 3), Prior::New);
        }
        assert!((0..30).all(|k| l.contains(spot(k), 1 << 3)));
        assert_eq!(l.occupied(), 30);
        assert_eq!(l.memory_bits(), 30 * 16 + HEADER_BITS);
        assert_eq!(l.insert(spot(7), 3, 1 << 3), Prior::Current);
        assert_eq!(l.insert(spot(7), 4, 1 << 3 | 1 << 4), Prior::Older);
        assert_eq!(l.live(1 << 4), 1);
        assert_eq!(l.live(1 << 3), 29);
        assert!(!l.contains(spot(7), 1 << 3));
    }

    /// Dead entries are reused before the list grows, and a sweep removes them and returns
    /// their memory; the split follows, so every live key is still found.
    #[test]
    fn reuses_and_clears_dead_entries() {
        let mut l = List::<u16>::new(40);
        for k in 0..20 {
            l.insert(spot(k), 1, 1 << 1);
        }
        for k in 20..30 {
            l.insert(spot(k), 2, 1 << 1 | 1 << 2);
        }
        // tag 1 dead: new keys take its entries in their half where they can
        for k in 30..40 {
            l.insert_new(spot(k), 3, 1 << 2 | 1 << 3);
        }
        assert!(l.occupied() <= 30);
        assert!((20..40).all(|k| l.contains(spot(k), 1 << 2 | 1 << 3)));
        let left = l.sweep(1 << 1);
        assert_eq!(left, 20);
        assert_eq!(l.memory_bits(), 20 * 16 + HEADER_BITS);
        assert!((20..40).all(|k| l.contains(spot(k), 1 << 2 | 1 << 3)));
        l.check(0.01).unwrap();
    }

    /// Measured: keys never inserted match at most ε of the time in a list at its limit (one
    /// million queries against 40 entries at ε = 0.01).
    #[test]
    fn a_full_list_keeps_the_false_positive_rate() {
        let limit = List::<u16>::limit_for(0.01).unwrap();
        assert_eq!(limit, 40);
        let mut l = List::<u16>::new(limit);
        for k in 0..u64::from(limit) {
            l.insert(spot(k), 0, 1);
        }
        assert!(l.full());
        let false_hits = (1_000..1_001_000)
            .filter(|&k| l.contains(spot(k), 1))
            .count();
        let rate = false_hits as f64 / 1e6;
        assert!(rate <= 0.01, "{rate}");
        assert!(
            rate > 0.002,
            "{rate}: the bound is not far above the measure"
        );
    }

    /// A list longer than its filter's ε allows, a split past its end, or an empty entry is
    /// refused.
    #[test]
    fn a_corrupted_list_is_refused() {
        let mut l = List::<u16>::new(40);
        l.insert(spot(1), 0, 1);
        l.check(0.01).unwrap();
        let mut bad = l.clone();
        bad.split = 2;
        assert!(bad.check(0.01).is_err());
        let mut bad = l.clone();
        bad.limit = 41;
        assert!(bad.check(0.01).is_err());
        assert!(l.check(0.009).is_err(), "a 0.009 filter's lists hold 36");
        let mut bad = l;
        bad.entries[0] = 0;
        assert!(bad.check(0.01).is_err());
        assert!(List::<u16>::limit_for(0.001).is_none());
    }
}
