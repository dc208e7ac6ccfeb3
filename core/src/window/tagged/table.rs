//! One cuckoo table of tagged fingerprint slots: buckets of [`SLOTS`] slots, two candidate
//! buckets per key (partial-key cuckoo hashing), a slot holding a fingerprint and the tag of the
//! generation its key was last inserted in.

use super::counts::TagCounts;
use super::LOAD;
use crate::bits::LineBuf;
use crate::error::{Error, Result};
use crate::hash::mix64;
use crate::prefetch::prefetch;
use serde::{Deserialize, Serialize};

/// Slots per bucket.
pub(super) const SLOTS: usize = 8;
/// Bits of a slot that hold the generation tag.
pub(super) const TAG_BITS: u32 = 5;
/// Distinct tags: generations are numbered modulo this.
pub(super) const TAGS: u64 = 1 << TAG_BITS;
/// Spreads a fingerprint over the buckets for its alternate bucket.
const ALT_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
/// Kicks a placement may make before the entry it carries goes to the stash.
const MAX_KICKS: u32 = 256;

/// A slot word: `fingerprint << TAG_BITS | tag`, 0 for an empty slot (fingerprints are never 0).
pub(super) trait Slot: Copy + Default + Eq + Into<u64> {
    /// Fingerprint bits.
    const FP_BITS: u32;
    /// The slot of `fp` (nonzero, below `2^FP_BITS`) with `tag`.
    fn pack(fp: u64, tag: u64) -> Self;
    /// `fp` (below `2^FP_BITS`) in the slot's own width.
    fn narrow(fp: u64) -> Self;
    /// The fingerprint this slot holds, in the slot's own width: comparing a bucket's slots at
    /// their width lets the compiler compare them all in one vector instruction.
    fn fingerprint(self) -> Self;
}

/// The slot widths: 16 and 32 bits.
macro_rules! slot {
    ($t:ty, $bits:expr) => {
        impl Slot for $t {
            const FP_BITS: u32 = $bits - TAG_BITS;
            #[inline]
            fn pack(fp: u64, tag: u64) -> Self {
                ((fp << TAG_BITS) | tag) as $t
            }
            #[inline]
            fn narrow(fp: u64) -> Self {
                fp as $t
            }
            #[inline]
            fn fingerprint(self) -> Self {
                self >> TAG_BITS
            }
        }
    };
}
slot!(u16, 16);
slot!(u32, 32);

/// The tag of a slot word.
#[inline]
pub(super) fn tag_of(s: u64) -> u64 {
    s & (TAGS - 1)
}

/// Whether slot word `s` is occupied by a tag in `live` (bit `t` set for live tag `t`).
#[inline]
pub(super) fn is_live(s: u64, live: u32) -> bool {
    s != 0 && (live >> tag_of(s)) & 1 == 1
}

/// The fingerprint of a key with fingerprint bits `fp_bits`: nonzero, uniform below
/// `2^FP_BITS` (a multiply-shift).
#[inline]
pub(super) fn fingerprint<S: Slot>(fp_bits: u64) -> u64 {
    let values = (1u64 << S::FP_BITS) - 1;
    (((u128::from(fp_bits) * u128::from(values)) >> 64) as u64) + 1
}

/// What an insertion found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prior {
    /// No live entry matched: the key was placed in a slot of its own.
    New,
    /// A live entry of an earlier generation matched; its tag is now the current one.
    Older,
    /// A live entry already carried the current generation's tag.
    Current,
}

/// Where a key goes in a table: its first bucket and its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Spot {
    pub bucket: usize,
    pub fp: u64,
}

/// Where a live entry sits: a slot, or a place in the stash.
#[derive(Debug, Clone, Copy)]
enum Entry {
    Slot(usize),
    Stash(usize),
}

/// A cuckoo table of `buckets × K` slots: `K` = [`SLOTS`] for a table receiving insertions,
/// fewer for a drained one repacked as its entries die ([`Table::repacked`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Table<S: Slot, const K: usize = SLOTS> {
    /// Buckets of 32-bit slots (32 bytes) from a cache-line boundary: in a 16-byte-aligned `Vec`
    /// every other one would straddle two lines. (16-byte buckets never do, and are not padded.)
    slots: LineBuf<S>,
    buckets: usize,
    /// Entries that found no slot (the filter grows when one is here).
    stash: Vec<(usize, S)>,
    /// Occupied slots (live or not yet swept) plus stashed entries.
    occupied: u64,
    /// State of the victim choice (xorshift; deterministic).
    rng: u64,
    /// Per tag, the slots and stashed entries holding it: the live population without a pass
    /// over the slots. Derived from the slots, so not serialized ([`Table::recount`]).
    #[serde(skip)]
    tagged: TagCounts,
    /// Entries it takes before it is full, `⌈α · slots⌉`, and `⌊α · slots⌋` (derived from the
    /// slots: set when it is made or recounted).
    #[serde(skip)]
    load: (u64, u64),
}

/// `(⌈α · slots⌉, ⌊α · slots⌋)` for a table of `slots` slots.
fn load_of(slots: usize) -> (u64, u64) {
    let at = LOAD * slots as f64;
    (at.ceil() as u64, at as u64)
}

impl<S: Slot, const K: usize> Table<S, K> {
    /// An empty table of `buckets` buckets (at least 1); [`Error::OutOfMemory`] when its slots
    /// cannot be had, instead of aborting.
    pub fn new(buckets: usize, seed: u64) -> Result<Self> {
        let buckets = buckets.max(1);
        let bits = |n: usize| (n as u64).saturating_mul(u64::from(8 * size_of::<S>() as u32));
        let len = buckets
            .checked_mul(K)
            .ok_or(Error::OutOfMemory { bits: u64::MAX })?;
        let slots = LineBuf::try_zeroed(len, K * size_of::<S>())
            .map_err(|_| Error::OutOfMemory { bits: bits(len) })?;
        Ok(Table {
            slots,
            buckets,
            stash: Vec::new(),
            occupied: 0,
            rng: mix64(seed ^ buckets as u64) | 1,
            tagged: TagCounts::default(),
            load: load_of(len),
        })
    }

    /// Counts the entries of each tag again, from the slots and the stash (a table read back
    /// from a file has none counted).
    pub fn recount(&mut self) {
        let stashed = self.stash.iter().map(|&(_, s)| s);
        self.tagged = TagCounts::of(self.slots.iter().copied().chain(stashed).map(Into::into));
        self.load = load_of(self.slots.len());
    }

    /// Whether its occupancy has reached the load `α` of its slots.
    #[inline]
    pub fn at_load(&self) -> bool {
        self.occupied >= self.load.0
    }

    /// Entries it can hold before it is full: `α` of its slots.
    pub fn usable(&self) -> u64 {
        self.load.1
    }

    /// Entries whose tag is in `live`.
    pub fn live(&self, live: u32) -> u64 {
        self.tagged.live(live)
    }

    /// Checks a table read from a file: `buckets × K` slots, a fingerprint in every
    /// occupied slot and stashed entry, stashed entries in a bucket of the table, the occupied
    /// count of the slots, and a generator state that is not stuck at 0.
    pub fn check(&self) -> Result<()> {
        let entry = |s: u64| s >> TAG_BITS != 0;
        if self.buckets == 0 || self.buckets.checked_mul(K) != Some(self.slots.len()) {
            return Err(Error::invalid(
                "table",
                format!("{} slots for {} buckets", self.slots.len(), self.buckets),
            ));
        }
        let occupied = self.slots.iter().filter(|&&s| s != S::default()).count();
        if self
            .slots
            .iter()
            .any(|&s| s != S::default() && !entry(s.into()))
            || self
                .stash
                .iter()
                .any(|&(b, s)| b >= self.buckets || !entry(s.into()))
            || self.occupied != (occupied + self.stash.len()) as u64
            || self.rng == 0
        {
            return Err(Error::invalid(
                "table",
                "a slot or stashed entry without a fingerprint, a stash entry outside the table, \
                 or counts that do not match the slots",
            ));
        }
        Ok(())
    }

    /// Buckets.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// Entries waiting in the stash.
    pub fn stash_len(&self) -> u64 {
        self.stash.len() as u64
    }

    /// Slots in all.
    pub fn capacity(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Occupied slots plus stashed entries.
    pub fn occupied(&self) -> u64 {
        self.occupied
    }

    /// Whether an entry is waiting in the stash.
    pub fn stashed(&self) -> bool {
        !self.stash.is_empty()
    }

    /// Memory of the slots and the stash, in bits (not the less than 64 bytes that align a
    /// large table's slots to a cache line: the same count whichever way the table was made,
    /// fresh or read back).
    pub fn memory_bits(&self) -> u64 {
        (self.slots.len() + self.stash.len()) as u64 * u64::from(8 * size_of::<S>() as u32)
    }

    /// The spot of a key: the bucket from `lo` (multiply-shift), the fingerprint from `fp_bits`
    /// (nonzero, uniform below `2^FP_BITS`).
    #[inline]
    pub fn spot(&self, lo: u64, fp_bits: u64) -> Spot {
        Spot {
            bucket: ((u128::from(lo) * self.buckets as u128) >> 64) as usize,
            fp: fingerprint::<S>(fp_bits),
        }
    }

    /// The other bucket of an entry with fingerprint `fp` in bucket `b`: `(H(fp) - b) mod B`, so
    /// the pair is the same whichever of the two the entry sits in.
    #[inline]
    fn alt(&self, b: usize, fp: u64) -> usize {
        // a multiply-shift of the fingerprint (an odd multiplier spreads its 11–27 bits)
        let h =
            ((u128::from(fp.wrapping_mul(ALT_MULTIPLIER)) * self.buckets as u128) >> 64) as usize;
        if h >= b {
            h - b
        } else {
            h + self.buckets - b
        }
    }

    /// Requests the cache lines of a spot's two buckets.
    #[inline]
    pub fn prefetch(&self, spot: Spot) {
        prefetch(&self.slots, spot.bucket * K);
        prefetch(&self.slots, self.alt(spot.bucket, spot.fp) * K);
    }

    /// Bit `i` set iff slot `i` of bucket `b` holds fingerprint `fp` (any tag): a loop the
    /// compiler turns into one vector compare, the slots compared at their own width.
    #[inline]
    fn matches(&self, b: usize, fp: u64) -> u32 {
        let fp = S::narrow(fp);
        let mut m = 0u32;
        for (i, &s) in self.slots[b * K..(b + 1) * K].iter().enumerate() {
            m |= u32::from(s.fingerprint() == fp) << i;
        }
        m
    }

    /// The first slot of bucket `b` among `matches` whose tag is in `live`.
    #[inline]
    fn first_live(&self, b: usize, mut matches: u32, live: u32) -> Option<usize> {
        while matches != 0 {
            let i = b * K + matches.trailing_zeros() as usize;
            if is_live(self.slots[i].into(), live) {
                return Some(i);
            }
            matches &= matches - 1;
        }
        None
    }

    /// The first live slot holding `fp` in bucket `b`.
    #[inline]
    fn live_in(&self, b: usize, fp: u64, live: u32) -> Option<usize> {
        let m = self.matches(b, fp);
        if m == 0 {
            None
        } else {
            self.first_live(b, m, live)
        }
    }

    /// The live slot the spot's key matches: its first bucket, then (only then computed) its
    /// other one.
    #[inline]
    fn find_in_buckets(&self, spot: Spot, live: u32) -> Option<usize> {
        self.live_in(spot.bucket, spot.fp, live)
            .or_else(|| self.live_in(self.alt(spot.bucket, spot.fp), spot.fp, live))
    }

    /// The live entry the spot's key matches: in its buckets, else in the stash.
    #[inline]
    fn find(&self, spot: Spot, live: u32) -> Option<Entry> {
        self.find_in_buckets(spot, live)
            .map(Entry::Slot)
            .or_else(|| {
                let alt = self.alt(spot.bucket, spot.fp);
                self.stash
                    .iter()
                    .position(|&(b, s)| {
                        let word: u64 = s.into();
                        word >> TAG_BITS == spot.fp
                            && is_live(word, live)
                            && (b == spot.bucket || b == alt)
                    })
                    .map(Entry::Stash)
            })
    }

    /// The slot word of an entry.
    #[inline]
    fn word(&self, e: Entry) -> u64 {
        match e {
            Entry::Slot(i) => self.slots[i].into(),
            Entry::Stash(j) => self.stash[j].1.into(),
        }
    }

    /// Re-tags entry `e` (fingerprint `fp`) to `tag` and says what it carried.
    #[inline]
    fn retag(&mut self, e: Entry, fp: u64, tag: u64) -> Prior {
        let word = self.word(e);
        if tag_of(word) == tag {
            return Prior::Current;
        }
        self.tagged.retag(word, tag);
        let packed = S::pack(fp, tag);
        match e {
            Entry::Slot(i) => self.slots[i] = packed,
            Entry::Stash(j) => self.stash[j].1 = packed,
        }
        Prior::Older
    }

    /// The tag of the live entry a key at `spot` matches (the first, as [`Self::contains`]
    /// finds it), if any.
    pub fn live_tag(&self, spot: Spot, live: u32) -> Option<u64> {
        self.find(spot, live).map(|e| tag_of(self.word(e)))
    }

    /// Whether the table holds the spot's fingerprint under a tag in `live`.
    #[inline]
    pub fn contains(&self, spot: Spot, live: u32) -> bool {
        self.find(spot, live).is_some()
    }

    /// Re-tags a live entry with the spot's fingerprint (in its buckets or the stash) to `tag` (a
    /// tag in `live`) and says what it carried; `None` when there is none.
    #[inline]
    pub fn refresh(&mut self, spot: Spot, tag: u64, live: u32) -> Option<Prior> {
        let e = self.find(spot, live)?;
        Some(self.retag(e, spot.fp, tag))
    }

    /// Inserts the spot's key under `tag` (a tag in `live`): refreshes a live entry with its
    /// fingerprint or places a new one, kicking entries to their other bucket when both are full.
    pub fn insert(&mut self, spot: Spot, tag: u64, live: u32) -> Prior {
        // A live entry with the fingerprint, first bucket first (one vector compare a bucket).
        if let Some(e) = self.find(spot, live) {
            return self.retag(e, spot.fp, tag);
        }
        self.insert_new(spot, tag, live);
        Prior::New
    }

    /// Places the spot's key under `tag` (a tag in `live`) in a slot of its own, without looking
    /// for a live entry with its fingerprint (the caller found none, [`Self::refresh`]), kicking
    /// entries to their other bucket when both are full.
    pub fn insert_new(&mut self, spot: Spot, tag: u64, live: u32) {
        let buckets = [spot.bucket, self.alt(spot.bucket, spot.fp)];
        // The first slot not live, first bucket first.
        let free = buckets.into_iter().find_map(|b| {
            let f = self.free_slots(b, live);
            (f != 0).then(|| b * K + f.trailing_zeros() as usize)
        });
        let carry = S::pack(spot.fp, tag);
        match free {
            Some(i) => {
                let old: u64 = self.slots[i].into();
                self.occupied += u64::from(old == 0);
                self.tagged.retag(old, tag);
                self.slots[i] = carry;
            }
            None => {
                self.tagged.retag(0, tag);
                self.kick(buckets[0], carry, live);
            }
        }
    }

    /// Bit `i` set iff slot `i` of bucket `b` is not live (empty, or a tag not in `live`):
    /// a loop without branches.
    #[inline]
    fn free_slots(&self, b: usize, live: u32) -> u32 {
        let mut m = 0u32;
        for (i, &s) in self.slots[b * K..(b + 1) * K].iter().enumerate() {
            m |= u32::from(!is_live(s.into(), live)) << i;
        }
        m
    }

    /// Places `carry` starting in bucket `b` by cuckoo relocation; what finds no slot goes to
    /// the stash.
    fn kick(&mut self, mut b: usize, mut carry: S, live: u32) {
        self.occupied += 1;
        for _ in 0..MAX_KICKS {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let i = b * K + (self.rng % K as u64) as usize;
            std::mem::swap(&mut self.slots[i], &mut carry);
            let word: u64 = carry.into();
            b = self.alt(b, word >> TAG_BITS);
            for j in b * K..(b + 1) * K {
                let s: u64 = self.slots[j].into();
                if !is_live(s, live) {
                    self.occupied -= u64::from(s != 0);
                    self.tagged.remove(s);
                    self.slots[j] = carry;
                    return;
                }
            }
        }
        self.stash.push((b, carry));
    }

    /// The live entries (tags in `live`) in a table of the same buckets with `J` slots a
    /// bucket: each entry goes to the same pair of buckets (the other bucket of a pair depends
    /// only on the fingerprint and the bucket count), so every key this table reports the new
    /// one reports. Entries that find no slot wait in its stash.
    pub fn repacked<const J: usize>(&self, live: u32) -> Result<Table<S, J>> {
        let mut t = Table::<S, J>::new(self.buckets, self.rng)?;
        let slots = self.slots.iter().enumerate().map(|(i, &s)| (i / K, s));
        for (bucket, s) in slots.chain(self.stash.iter().copied()) {
            let word: u64 = s.into();
            if is_live(word, live) {
                let spot = Spot {
                    bucket,
                    fp: word >> TAG_BITS,
                };
                t.insert_new(spot, tag_of(word), live);
            }
        }
        Ok(t)
    }

    /// Empties every slot whose tag is in `dead` (bit `t` for tag `t`); returns the entries
    /// left. With one dead tag (a generation ending) the pass is one vector compare per slot.
    pub fn sweep(&mut self, dead: u32) -> u64 {
        let mut left = 0u64;
        if dead.count_ones() == 1 {
            let d = u64::from(dead.trailing_zeros());
            for s in self.slots.iter_mut() {
                let word: u64 = (*s).into();
                if word & (TAGS - 1) == d {
                    *s = S::default();
                }
                left += u64::from(*s != S::default());
            }
        } else {
            for s in self.slots.iter_mut() {
                let word: u64 = (*s).into();
                if word != 0 && (dead >> tag_of(word)) & 1 == 1 {
                    *s = S::default();
                }
                left += u64::from(*s != S::default());
            }
        }
        self.stash
            .retain(|&(_, s)| (dead >> tag_of(s.into())) & 1 == 0);
        self.tagged.clear(dead);
        self.occupied = left + self.stash.len() as u64;
        self.occupied
    }
}
