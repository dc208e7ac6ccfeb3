//! The dictionary of paper 002 §2.2 and §2.6: a bucketized cuckoo table whose slots pack a
//! fingerprint and a generation tag, with lazy deletion and a resumable sweep.
//!
//! * **Semi-sorted buckets** (Fan et al., "Cuckoo Filter", §5.2). The order of a bucket's 4 slots
//!   carries no information, so a bucket is stored sorted by the low 4 bits of its fingerprints: the
//!   sorted 4-tuple of those nibbles is one of `C(19, 4) = 3876` values, a 12-bit code instead of 16
//!   bits. The rest of each slot (the other `f − 4` fingerprint bits and the `g` tag bits) is packed
//!   as is, so a slot costs `f + g − 1` bits.
//! * **Buckets and alternates.** A fingerprint `fp` (never 0: 0 marks an empty slot) lives in one of
//!   two buckets of [`SLOTS`] slots. The first is `lo mod B`; the alternate of bucket `b` is
//!   `(t(fp) − b) mod B` with `t(fp) = mix64(fp ⊕ c) mod B`. The map is an involution for every
//!   `B` (not only powers of two), so an entry can be relocated from its bucket and fingerprint
//!   alone (partial-key cuckoo hashing) and the table can have exactly the size it needs.
//! * **Lazy deletion (§2.4, §2.6).** A slot whose tag is not live counts as empty: insertions
//!   overwrite it, lookups ignore it. Expired entries therefore never block an insertion.
//! * **Resumable sweep (§2.5).** Each insertion also scans a fixed number of buckets from a saved
//!   cursor and clears expired slots. Entries that cuckoo moves behind the cursor are checked when
//!   they move, so a full cycle of the cursor after an entry expires has removed it.
//! * **No lost items.** When relocation gives up after `MAX_KICKS` moves, the homeless entry goes
//!   to a small stash that lookups also read; the caller reacts by growing.

use super::packed::Packed;
use crate::error::{Error, Result};
use crate::hash::{mix64, FastMod};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Slots per bucket.
pub(crate) const SLOTS: u64 = 4;
/// Target maximum load of live entries: a 4-way cuckoo table fills to about 0.976 before
/// insertions start failing, so 0.95 leaves a margin.
pub(crate) const LOAD: f64 = 0.95;
/// Relocations tried before an entry goes to the stash.
const MAX_KICKS: u32 = 500;
/// Bits one stash entry is charged in [`Table::memory_bits`] (bucket, fingerprint and tag words).
const STASH_BITS: u64 = 128;
const ALT: u64 = 0x5851_f42d_4c95_7f2d;
/// Low fingerprint bits of a slot that the bucket code holds.
const NIBBLE: u32 = 4;
/// Sorted 4-tuples of nibbles, `C(16 + 4 − 1, 4)`: the codes of a bucket.
const CODES: u64 = 3876;
/// Bits of a bucket code.
const CODE_BITS: u32 = 12;
/// Fingerprint bits a semi-sorted slot needs: the nibble and at least one more.
pub(crate) const MIN_FP_BITS: u32 = NIBBLE + 1;

/// The two tables of semi-sorting: code → sorted nibbles (4 bits each, lowest first), and sorted
/// nibbles → code.
struct Codec {
    decode: Vec<u16>,
    encode: Vec<u16>,
}

fn codec() -> &'static Codec {
    static CODEC: OnceLock<Codec> = OnceLock::new();
    CODEC.get_or_init(|| {
        let mut decode = Vec::with_capacity(CODES as usize);
        let mut encode = vec![0u16; 1 << 16];
        for a in 0..16u16 {
            for b in a..16 {
                for c in b..16 {
                    for d in c..16 {
                        let packed = a | b << 4 | c << 8 | d << 12;
                        encode[packed as usize] = decode.len() as u16;
                        decode.push(packed);
                    }
                }
            }
        }
        Codec { decode, encode }
    })
}

/// How an insertion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placed {
    /// The fingerprint was already live; its tag now names the current generation.
    Refreshed,
    /// Stored in a slot.
    Stored,
    /// Stored, but relocation left one entry homeless and it went to the stash.
    Stashed,
}

/// An entry that found no slot, kept with one of its two buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stashed {
    bucket: u64,
    fp: u64,
    tag: u32,
}

/// The cuckoo table. `mask` arguments are bit sets over tags: bit `t` set means tag `t` is live.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "TableRepr", into = "TableRepr")]
pub(crate) struct Table {
    buckets: FastMod,
    fp_bits: u32,
    tag_bits: u32,
    fps: FastMod,
    /// One 12-bit semi-sorting code per bucket.
    codes: Packed,
    /// Slot values without their low nibble, `f + g − 4` bits each, in bucket order.
    rest: Packed,
    stash: Vec<Stashed>,
    cursor: u64,
    sweep: u64,
    rng: u64,
    /// Stored entries (slots and stash) per tag; derived from the slots.
    counts: Vec<u64>,
    /// Stored entries whose tag is live under the last mask given to [`Table::recount`].
    live: u64,
}

/// The serialized form: everything but the derived counts.
#[derive(Serialize, Deserialize)]
struct TableRepr {
    buckets: u64,
    fp_bits: u32,
    tag_bits: u32,
    codes: Packed,
    rest: Packed,
    stash: Vec<Stashed>,
    cursor: u64,
    sweep: u64,
    rng: u64,
}

impl From<Table> for TableRepr {
    fn from(t: Table) -> Self {
        TableRepr {
            buckets: t.buckets.divisor(),
            fp_bits: t.fp_bits,
            tag_bits: t.tag_bits,
            codes: t.codes,
            rest: t.rest,
            stash: t.stash,
            cursor: t.cursor,
            sweep: t.sweep,
            rng: t.rng,
        }
    }
}

impl TryFrom<TableRepr> for Table {
    type Error = Error;
    fn try_from(r: TableRepr) -> Result<Self> {
        let mut t = Table::shell(r.buckets, r.fp_bits, r.tag_bits, r.sweep, r.rng)?;
        if r.codes.width() != CODE_BITS || r.codes.len() != t.codes.len() {
            return Err(Error::invalid(
                "table",
                "bucket codes do not fit the bucket count",
            ));
        }
        if r.rest.width() != t.rest.width() || r.rest.len() != t.rest.len() {
            return Err(Error::invalid(
                "table",
                "slots do not fit the bucket count and widths",
            ));
        }
        if r.cursor >= r.buckets || r.rng == 0 {
            return Err(Error::invalid(
                "table",
                "sweep cursor or relocation state out of range",
            ));
        }
        if (0..r.codes.len()).any(|b| r.codes.get(b) >= CODES) {
            return Err(Error::invalid("table", "a bucket code is out of range"));
        }
        t.codes = r.codes;
        t.rest = r.rest;
        for b in 0..r.buckets {
            let e = t.bucket(b);
            if e.iter().any(|&v| v != 0 && v & t.fp_mask() == 0) {
                return Err(Error::invalid(
                    "table",
                    "a slot has a tag but no fingerprint",
                ));
            }
            if !is_sorted(&e) {
                return Err(Error::invalid(
                    "table",
                    "a bucket is not in canonical order",
                ));
            }
        }
        t.cursor = r.cursor;
        for s in &r.stash {
            if s.bucket >= r.buckets
                || s.fp == 0
                || s.fp > t.fp_mask()
                || s.tag as usize >= t.counts.len()
            {
                return Err(Error::invalid("table", "a stash entry is out of range"));
            }
        }
        t.stash = r.stash;
        t.rebuild_counts();
        Ok(t)
    }
}

impl Table {
    /// An empty table of `buckets` buckets; `sweep` buckets are scanned per insertion.
    pub(crate) fn new(
        buckets: u64,
        fp_bits: u32,
        tag_bits: u32,
        sweep: u64,
        seed: u64,
    ) -> Result<Self> {
        Table::shell(buckets, fp_bits, tag_bits, sweep, mix64(seed ^ ALT) | 1)
    }

    fn shell(buckets: u64, fp_bits: u32, tag_bits: u32, sweep: u64, rng: u64) -> Result<Self> {
        if !(MIN_FP_BITS..=26).contains(&fp_bits) || !(1..=6).contains(&tag_bits) || sweep == 0 {
            return Err(Error::invalid(
                "table",
                "fingerprint, tag or sweep width out of range",
            ));
        }
        let b =
            FastMod::new(buckets).ok_or_else(|| Error::invalid("buckets", "must be positive"))?;
        let slots_len = buckets
            .checked_mul(SLOTS)
            .ok_or(Error::OutOfMemory { bits: u64::MAX })?;
        let fps = FastMod::new((1 << fp_bits) - 1)
            .ok_or_else(|| Error::invalid("fp_bits", "must be at least 2"))?;
        Ok(Table {
            buckets: b,
            fp_bits,
            tag_bits,
            fps,
            codes: Packed::new(CODE_BITS, buckets)?,
            rest: Packed::new(fp_bits + tag_bits - NIBBLE, slots_len)?,
            stash: Vec::new(),
            cursor: 0,
            sweep,
            rng,
            counts: vec![0; 1 << tag_bits],
            live: 0,
        })
    }

    /// Number of buckets.
    pub(crate) fn buckets(&self) -> u64 {
        self.buckets.divisor()
    }

    /// Live entries the table may hold before it is full (`LOAD` of its slots).
    pub(crate) fn capacity(&self) -> u64 {
        (self.rest.len() as f64 * LOAD) as u64
    }

    /// Stored entries with a live tag (as of the last [`Table::recount`] and since).
    pub(crate) fn live(&self) -> u64 {
        self.live
    }

    /// Stored entries with tag `tag`, live or not.
    pub(crate) fn count(&self, tag: u32) -> u64 {
        self.counts[tag as usize]
    }

    /// Entries waiting in the stash.
    pub(crate) fn stashed(&self) -> usize {
        self.stash.len()
    }

    /// Fingerprint width and tag width, in bits.
    pub(crate) fn widths(&self) -> (u32, u32) {
        (self.fp_bits, self.tag_bits)
    }

    /// Memory of the bucket codes, the slots and the stash, in bits.
    pub(crate) fn memory_bits(&self) -> u64 {
        self.codes.memory_bits() + self.rest.memory_bits() + self.stash.len() as u64 * STASH_BITS
    }

    /// The slot values (`fp | tag << f`, 0 for empty) of bucket `b`, in stored order.
    #[inline]
    fn bucket(&self, b: u64) -> [u64; SLOTS as usize] {
        let nibbles = u64::from(codec().decode[self.codes.get(b) as usize]);
        std::array::from_fn(|j| {
            (nibbles >> (NIBBLE * j as u32)) & 0xf | self.rest.get(b * SLOTS + j as u64) << NIBBLE
        })
    }

    /// Stores bucket `b`, sorted by nibble (then by the rest, so the form is canonical).
    #[inline]
    fn set_bucket(&mut self, b: u64, mut e: [u64; SLOTS as usize]) {
        e.sort_unstable_by_key(|&v| sort_key(v));
        let nibbles = e
            .iter()
            .enumerate()
            .fold(0, |p, (j, &v)| p | (v & 0xf) << (NIBBLE * j as u32));
        self.codes
            .set(b, u64::from(codec().encode[nibbles as usize]));
        for (j, &v) in e.iter().enumerate() {
            self.rest.set(b * SLOTS + j as u64, v >> NIBBLE);
        }
    }

    #[inline]
    fn fp_mask(&self) -> u64 {
        (1 << self.fp_bits) - 1
    }

    /// The first bucket and the fingerprint of a key hash (`lo` picks the bucket, `hi` the
    /// fingerprint, uniform over `1..2^f`).
    #[inline]
    pub(crate) fn locate(&self, lo: u64, hi: u64) -> (u64, u64) {
        (self.buckets.reduce(lo), 1 + self.fps.reduce(hi))
    }

    /// The other bucket of fingerprint `fp` when it sits in bucket `b`.
    #[inline]
    fn alt(&self, b: u64, fp: u64) -> u64 {
        let t = self.buckets.reduce(mix64(fp ^ ALT));
        if t >= b {
            t - b
        } else {
            t + self.buckets.divisor() - b
        }
    }

    #[inline]
    fn is_live(&self, v: u64, mask: u64) -> bool {
        v != 0 && (mask >> (v >> self.fp_bits)) & 1 == 1
    }

    /// The position in bucket `b` of a live entry with fingerprint `fp`; reads only the slots whose
    /// nibble matches `fp`'s.
    #[inline]
    fn find(&self, b: u64, fp: u64, mask: u64) -> Option<usize> {
        let nibbles = u64::from(codec().decode[self.codes.get(b) as usize]);
        (0..SLOTS as usize).find(|&j| {
            (nibbles >> (NIBBLE * j as u32)) & 0xf == fp & 0xf && {
                let v = fp & 0xf | self.rest.get(b * SLOTS + j as u64) << NIBBLE;
                v & self.fp_mask() == fp && self.is_live(v, mask)
            }
        })
    }

    /// Whether a live entry with fingerprint `fp` sits in bucket `b1` or its alternate.
    #[inline]
    pub(crate) fn contains(&self, b1: u64, fp: u64, mask: u64) -> bool {
        let b2 = self.alt(b1, fp);
        self.find(b1, fp, mask).is_some()
            || self.find(b2, fp, mask).is_some()
            || (!self.stash.is_empty()
                && self.stash.iter().any(|s| {
                    s.fp == fp && (s.bucket == b1 || s.bucket == b2) && (mask >> s.tag) & 1 == 1
                }))
    }

    /// Algorithm 1's insert: refresh a live entry with this fingerprint to `tag`, or store a new
    /// one, relocating entries as cuckoo hashing does. Never loses an entry.
    pub(crate) fn insert(&mut self, b1: u64, fp: u64, tag: u32, mask: u64) -> Placed {
        let b2 = self.alt(b1, fp);
        if self.refresh(b1, fp, tag, mask) || self.refresh(b2, fp, tag, mask) {
            return Placed::Refreshed;
        }
        if let Some(s) = self
            .stash
            .iter_mut()
            .find(|s| s.fp == fp && (s.bucket == b1 || s.bucket == b2) && (mask >> s.tag) & 1 == 1)
        {
            let old = std::mem::replace(&mut s.tag, tag);
            self.counts[old as usize] -= 1;
            self.counts[tag as usize] += 1;
            return Placed::Refreshed;
        }
        self.counts[tag as usize] += 1;
        self.live += 1;
        let mut entry = fp | u64::from(tag) << self.fp_bits;
        if self.place(b1, entry, mask) || self.place(b2, entry, mask) {
            return Placed::Stored;
        }
        let mut b = if self.next_rng() & 1 == 0 { b1 } else { b2 };
        for _ in 0..MAX_KICKS {
            let j = (self.next_rng() % SLOTS) as usize;
            let mut e = self.bucket(b);
            let victim = std::mem::replace(&mut e[j], entry);
            self.set_bucket(b, e);
            entry = victim;
            b = self.alt(b, entry & self.fp_mask());
            if self.place(b, entry, mask) {
                return Placed::Stored;
            }
        }
        self.stash.push(Stashed {
            bucket: b,
            fp: entry & self.fp_mask(),
            tag: (entry >> self.fp_bits) as u32,
        });
        Placed::Stashed
    }

    fn refresh(&mut self, b: u64, fp: u64, tag: u32, mask: u64) -> bool {
        let Some(j) = self.find(b, fp, mask) else {
            return false;
        };
        let mut e = self.bucket(b);
        let old = (e[j] >> self.fp_bits) as u32;
        if old != tag {
            self.counts[old as usize] -= 1;
            self.counts[tag as usize] += 1;
            e[j] = fp | u64::from(tag) << self.fp_bits;
            self.set_bucket(b, e);
        }
        true
    }

    /// Puts `entry` into an empty or expired slot of bucket `b` (lazy deletion of the latter).
    fn place(&mut self, b: u64, entry: u64, mask: u64) -> bool {
        let mut e = self.bucket(b);
        for j in 0..e.len() {
            let v = e[j];
            if v == 0 || !self.is_live(v, mask) {
                if v != 0 {
                    self.counts[(v >> self.fp_bits) as usize] -= 1;
                }
                e[j] = entry;
                self.set_bucket(b, e);
                return true;
            }
        }
        false
    }

    /// One step of the deamortized sweep (§2.5): clears expired slots in the next `sweep` buckets
    /// and expired stash entries.
    pub(crate) fn sweep(&mut self, mask: u64) {
        let b_count = self.buckets.divisor();
        for _ in 0..self.sweep.min(b_count) {
            let b = self.cursor;
            let mut e = self.bucket(b);
            let mut changed = false;
            for v in &mut e {
                if *v != 0 && !self.is_live(*v, mask) {
                    self.counts[(*v >> self.fp_bits) as usize] -= 1;
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
                if *v != 0 && (*v >> self.fp_bits) as u32 == tag {
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
        self.codes.clear();
        self.rest.clear();
        self.stash.clear();
        self.counts.fill(0);
        self.live = 0;
        self.cursor = 0;
    }

    fn rebuild_counts(&mut self) {
        self.counts.fill(0);
        for b in 0..self.buckets.divisor() {
            for v in self.bucket(b) {
                if v != 0 {
                    self.counts[(v >> self.fp_bits) as usize] += 1;
                }
            }
        }
        for s in &self.stash {
            self.counts[s.tag as usize] += 1;
        }
        self.live = 0;
    }

    /// xorshift64*: the deterministic choice of relocation victims.
    fn next_rng(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Orders slots by nibble first, so the nibbles of a bucket are sorted.
#[inline]
fn sort_key(v: u64) -> u64 {
    (v & 0xf) << 60 | v >> NIBBLE
}

fn is_sorted(e: &[u64]) -> bool {
    e.windows(2).all(|w| sort_key(w[0]) <= sort_key(w[1]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: u64 = u64::MAX;

    #[test]
    fn alternate_is_an_involution_for_any_size() {
        for buckets in [1u64, 2, 3, 7, 100, 1001] {
            let t = Table::new(buckets, 10, 3, 1, 1).unwrap();
            for fp in 1..200 {
                for b in 0..buckets.min(50) {
                    let a = t.alt(b, fp);
                    assert!(a < buckets);
                    assert_eq!(t.alt(a, fp), b);
                }
            }
        }
    }

    #[test]
    fn overfull_table_stashes_instead_of_losing() {
        // 8 buckets = 32 slots, 40 entries: some must go to the stash, none may be lost.
        let mut t = Table::new(8, 12, 3, 1, 9).unwrap();
        let keys: Vec<(u64, u64)> = (0..40u64)
            .map(|k| t.locate(mix64(k), mix64(k ^ 77)))
            .collect();
        let (mut stashed, mut refreshed) = (0, 0);
        for &(b, fp) in &keys {
            match t.insert(b, fp, 0, ALL) {
                Placed::Stashed => stashed += 1,
                Placed::Refreshed => refreshed += 1,
                Placed::Stored => {}
            }
        }
        assert!(stashed > 0 && t.stashed() > 0);
        assert!(keys.iter().all(|&(b, fp)| t.contains(b, fp, ALL)));
        t.recount(1);
        assert_eq!(t.live(), 40 - refreshed);
        assert_eq!(t.count(0), 40 - refreshed);
    }

    #[test]
    fn expired_slots_are_reused_and_purged() {
        let mut t = Table::new(4, 8, 2, 1, 3).unwrap();
        for k in 0..15u64 {
            let (b, fp) = t.locate(mix64(k), mix64(k + 1000));
            t.insert(b, fp, 0, 0b0001);
        }
        assert_eq!(t.count(0), 15);
        // Tag 0 expires; tag 1 entries overwrite its slots lazily.
        for k in 100..115u64 {
            let (b, fp) = t.locate(mix64(k), mix64(k + 1000));
            t.insert(b, fp, 1, 0b0010);
        }
        assert!(t.count(0) < 15 && t.stashed() == 0);
        t.purge(0);
        assert_eq!(t.count(0), 0);
        t.recount(0b0010);
        assert_eq!(t.live(), t.count(1));
    }

    #[test]
    fn deserialize_rebuilds_counts_and_validates() {
        let mut t = Table::new(16, 9, 3, 2, 5).unwrap();
        for k in 0..30u64 {
            let (b, fp) = t.locate(mix64(k), mix64(!k));
            t.insert(b, fp, (k % 3) as u32, 0b111);
        }
        let json = serde_json::to_string(&t).unwrap();
        let mut back: Table = serde_json::from_str(&json).unwrap();
        back.recount(0b111);
        t.recount(0b111);
        assert_eq!(back.live(), t.live());
        assert_eq!(back.counts, t.counts);
        let broken = json.replace("\"cursor\":0", "\"cursor\":99");
        assert!(serde_json::from_str::<Table>(&broken).is_err());
    }

    #[test]
    fn codec_is_a_bijection_on_sorted_nibbles() {
        let c = codec();
        assert_eq!(c.decode.len() as u64, CODES);
        const { assert!(CODES <= 1 << CODE_BITS) };
        for (i, &p) in c.decode.iter().enumerate() {
            let n: Vec<u16> = (0..4).map(|j| (p >> (4 * j)) & 0xf).collect();
            assert!(n.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(c.encode[p as usize] as usize, i);
        }
    }

    #[test]
    fn memory_saves_one_bit_per_slot() {
        let t = Table::new(1_000, 10, 4, 1, 1).unwrap();
        let exact = 1_000 * (CODE_BITS as u64 + SLOTS * (10 + 4 - u64::from(NIBBLE)));
        assert_eq!(exact, 1_000 * SLOTS * (10 + 4 - 1));
        assert!(t.memory_bits() >= exact && t.memory_bits() < exact + 128);
    }

    #[test]
    fn deserialize_refuses_bad_codes_and_order() {
        let mut t = Table::new(4, 9, 3, 1, 5).unwrap();
        for k in 0..6u64 {
            let (b, fp) = t.locate(mix64(k), mix64(!k));
            t.insert(b, fp, 1, 0b10);
        }
        let v = serde_json::to_value(&t).unwrap();
        assert!(serde_json::from_value::<Table>(v.clone()).is_ok());
        // Bucket 0's code is the low 12 bits of the first word.
        let word = v["codes"]["words"][0].as_u64().unwrap();
        let mut bad_code = v.clone();
        bad_code["codes"]["words"][0] = serde_json::json!(word | 0xfff);
        assert!(serde_json::from_value::<Table>(bad_code).is_err());
        // All four nibbles 0 (code 0), slot 0 above slot 1 in the rest: not in canonical order.
        let mut table = t.clone();
        table.codes.set(0, 0);
        for (j, r) in [3, 2, 2, 2].into_iter().enumerate() {
            table.rest.set(j as u64, r);
        }
        let unsorted = serde_json::to_value(&table).unwrap();
        let err = serde_json::from_value::<Table>(unsorted).unwrap_err();
        assert!(err.to_string().contains("canonical order"), "{err}");
        let mut narrow = v;
        narrow["rest"]["width"] = serde_json::json!(7);
        assert!(serde_json::from_value::<Table>(narrow).is_err());
    }

    proptest! {
        /// A bucket reads back as the sorted multiset it was given, whatever the widths.
        #[test]
        fn buckets_round_trip(
            fp_bits in MIN_FP_BITS..=26,
            tag_bits in 1u32..=6,
            raw in proptest::array::uniform4(any::<u64>()),
            empty in proptest::array::uniform4(any::<bool>()),
        ) {
            let mut t = Table::new(3, fp_bits, tag_bits, 1, 1).unwrap();
            let fp_mask = (1u64 << fp_bits) - 1;
            let e: [u64; 4] = std::array::from_fn(|j| {
                let fp = (raw[j] & fp_mask).max(1);
                if empty[j] { 0 } else { fp | ((raw[j] >> 40) % (1 << tag_bits)) << fp_bits }
            });
            t.set_bucket(1, e);
            let mut want = e;
            want.sort_unstable();
            let mut got = t.bucket(1);
            prop_assert!(is_sorted(&got));
            got.sort_unstable();
            prop_assert_eq!(got, want);
            prop_assert_eq!(t.bucket(0), [0; 4]);
            prop_assert_eq!(t.bucket(2), [0; 4]);
        }

        /// Adversarial fingerprints: a few buckets, fingerprints sharing their low nibble (so
        /// every insert re-sorts among equal nibbles), duplicates and overflow into the stash.
        /// Nothing live is ever missing.
        #[test]
        fn equal_nibbles_and_crowded_buckets(
            ops in proptest::collection::vec((0u64..3, 0u64..64, 0u64..2, any::<bool>()), 1..200),
        ) {
            let mut t = Table::new(8, 12, 2, 1, 13).unwrap();
            let mut present: Vec<(u64, u64, u32)> = Vec::new();
            let mut tag = 0u32;
            for &(b, high, low, next) in &ops {
                if next {
                    tag = (tag + 1) % 4;
                }
                let mask = (1u64 << tag) | (1u64 << ((tag + 3) % 4));
                let fp = (high << 4 | 0x7 ^ low).max(1);
                t.insert(b, fp, tag, mask);
                t.sweep(mask);
                present.retain(|&(_, _, g)| (mask >> g) & 1 == 1);
                present.retain(|&(pb, pf, _)| (pb, pf) != (b, fp));
                present.push((b, fp, tag));
                for &(b, fp, _) in &present {
                    prop_assert!(t.contains(b, fp, mask));
                }
                for bucket in 0..8 {
                    prop_assert!(is_sorted(&t.bucket(bucket)));
                }
            }
        }

        /// Against a model: every inserted fingerprint is found while its tag is live, and a full
        /// sweep cycle leaves no expired entry behind.
        #[test]
        fn agrees_with_a_model(ops in proptest::collection::vec((0u64..500, any::<bool>()), 1..300)) {
            let mut t = Table::new(64, 10, 2, 3, 11).unwrap();
            let mut present: Vec<(u64, u64, u32)> = Vec::new();
            let mut tag = 0u32;
            for &(k, next) in &ops {
                if next {
                    tag = (tag + 1) % 4;
                }
                // Tags older than the current one by two or more are expired.
                let mask = (1u64 << tag) | (1u64 << ((tag + 3) % 4));
                let (b, fp) = t.locate(mix64(k), mix64(k ^ 0xabc));
                t.insert(b, fp, tag, mask);
                t.sweep(mask);
                present.retain(|&(_, _, g)| (mask >> g) & 1 == 1);
                present.push((b, fp, tag));
                for &(b, fp, _) in &present {
                    prop_assert!(t.contains(b, fp, mask));
                }
            }
        }
    }
}
