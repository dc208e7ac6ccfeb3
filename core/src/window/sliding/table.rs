//! The dictionary of paper 002 §2.2 and §2.6: a bucketized cuckoo table whose slots hold a
//! fingerprint and a generation tag, with lazy deletion and a resumable sweep.
//!
//! * **Slot alphabet** ([`Layout`]). A fingerprint is a value in `1..=Φ` with `Φ = 16·K·2^b − 1`
//!   (0 marks an empty slot); a tag is a value in `0..M`. Neither `Φ + 1` nor `M` need be a power of
//!   two, so the fingerprint alphabet can sit just above what ε needs and the tag alphabet just
//!   above the `c + 1` live generations.
//! * **Bucket code.** A bucket's 4 slots are stored as one *head* plus `b` raw fingerprint bits per
//!   slot. The head's low 12 bits are the semi-sorting code `s` (Fan et al., "Cuckoo Filter", §5.2:
//!   the bucket is kept sorted by the low 4 fingerprint bits, whose sorted 4-tuple is one of
//!   `C(19, 4) = 3876` values); above them sits the mixed-radix number `Σ_j d_j R^j` of the slots'
//!   digits `d_j = k_j · M + t_j` (radix `R = K·M`), each joining a tag `t_j` with the
//!   fingerprint's top digit `k_j < K`. A bucket thus costs `12 + ⌈4 log2(K M)⌉ + 4b` bits. Digits
//!   come out by division by the constants `R` and `R^2` (multiply and shift) and a table of
//!   `(k, t)` per digit; a query decodes a digit only for a slot whose nibble matches.
//! * **Buckets and alternates.** A fingerprint `fp` lives in one of two buckets of [`SLOTS`]
//!   slots. The first is `lo mod B`; the alternate of bucket `b` is `(t(fp) − b) mod B` with
//!   `t(fp) = mix64(fp ⊕ c) mod B`. The map is an involution for every `B` (not only powers of
//!   two), so an entry can be relocated from its bucket and fingerprint alone (partial-key cuckoo
//!   hashing) and the table can have exactly the size it needs.
//! * **Lazy deletion (§2.4, §2.6).** A slot whose tag is not live counts as empty: insertions
//!   overwrite it, lookups ignore it. Expired entries therefore never block an insertion.
//! * **Resumable sweep (§2.5).** Each insertion also scans a fixed number of buckets from a saved
//!   cursor and clears expired slots. Entries that cuckoo moves behind the cursor are checked when
//!   they move, so a full cycle of the cursor after an entry expires has removed it.
//! * **No lost items.** When relocation gives up after `MAX_KICKS` moves, the homeless entry goes
//!   to a small stash that lookups also read; the caller reacts by growing.

mod expiry;
mod repr;

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
/// Low fingerprint bits of a slot that the semi-sorting code holds.
const NIBBLE: u32 = 4;
/// Sorted 4-tuples of nibbles, `C(16 + 4 − 1, 4)`: the semi-sorting codes of a bucket.
const CODES: u64 = 3876;
/// Bits of the semi-sorting code at the bottom of a head.
const CODE_BITS: u32 = 12;
/// Largest radix `K` of a fingerprint's top digit.
pub(crate) const MAX_RADIX: u32 = 15;
/// Largest tag alphabet: live tags are a `u64` bit set.
pub(crate) const MAX_TAGS: u32 = 64;
/// Widest fingerprint value, in bits.
pub(crate) const MAX_FP_BITS: u32 = 26;
/// Where the tag sits in an unpacked slot value `fp | tag << TAG_SHIFT`.
const TAG_SHIFT: u32 = 32;
const FP_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// How a table codes its slots: fingerprints `1..=16·K·2^b − 1`, tags `0..M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Layout {
    /// `K`: the radix of a fingerprint's top digit, coded jointly per bucket.
    pub(crate) radix: u32,
    /// `b`: fingerprint bits stored raw per slot, between the nibble and the top digit.
    pub(crate) low_bits: u32,
    /// `M`: tag values; tags count generations modulo `M`.
    pub(crate) tags: u32,
}

impl Layout {
    /// `Φ`: the non-zero fingerprint values.
    pub(crate) fn fingerprints(self) -> u64 {
        ((16 * u64::from(self.radix)) << self.low_bits) - 1
    }

    /// `R = K·M`: the radix of a slot's digit in the head.
    fn digit_radix(self) -> u64 {
        u64::from(self.radix) * u64::from(self.tags)
    }

    /// `R^4`: the values of a head above its semi-sorting code.
    fn digit_states(self) -> u64 {
        self.digit_radix().pow(SLOTS as u32)
    }

    /// Bits of a bucket head: `12 + ⌈log2 R^4⌉`.
    fn head_bits(self) -> u32 {
        CODE_BITS + 64 - (self.digit_states() - 1).leading_zeros()
    }

    /// Bits of a bucket: its head and the raw fingerprint bits of its slots.
    pub(crate) fn bucket_bits(self) -> u32 {
        self.head_bits() + SLOTS as u32 * self.low_bits
    }

    /// Refuses a layout whose alphabets are empty or too large for the packed form.
    pub(crate) fn check(self) -> Result<()> {
        let ok = (1..=MAX_RADIX).contains(&self.radix)
            && self.low_bits <= MAX_FP_BITS - NIBBLE
            && (2..=MAX_TAGS).contains(&self.tags)
            && self.fingerprints() < 1 << MAX_FP_BITS;
        if ok {
            Ok(())
        } else {
            Err(Error::invalid(
                "layout",
                format!("{self:?}: fingerprint or tag alphabet out of range"),
            ))
        }
    }
}

/// Division by a fixed divisor `d ≥ 2` through one multiplication, exact for dividends `a` with
/// `a·d < 2^64`: with `m = ⌊2^64/d⌋ + 1`, `a·m / 2^64 = a/d + a·e` for some `0 < e ≤ 2^-64`, and
/// `a·e < 1/d` keeps the floor at `⌊a/d⌋` (the round-up method of Lemire, Kaser and Kurz,
/// "Faster remainder by direct computation", 2019). Branch-free.
#[derive(Debug, Clone, Copy)]
struct Radix {
    d: u64,
    m: u64,
}

impl Radix {
    fn new(d: u64) -> Self {
        debug_assert!(d >= 2);
        Radix {
            d,
            m: (u64::MAX / d).wrapping_add(1 + u64::from(u64::MAX % d == d - 1)),
        }
    }

    /// `(a / d, a % d)`, for `a·d < 2^64`.
    #[inline]
    fn div_rem(self, a: u64) -> (u64, u64) {
        debug_assert!(u128::from(a) * u128::from(self.d) < 1 << 64);
        let q = ((u128::from(a) * u128::from(self.m)) >> 64) as u64;
        (q, a - q * self.d)
    }
}

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
#[serde(try_from = "repr::TableRepr", into = "repr::TableRepr")]
pub(crate) struct Table {
    buckets: FastMod,
    layout: Layout,
    fps: FastMod,
    /// Division by `R = K·M` and by `R^2`, and each digit's `(top, tag)` as `top << 8 | tag`;
    /// derived from the layout.
    radix: Radix,
    square: Radix,
    split: Vec<u16>,
    /// One head per bucket: semi-sorting code, top fingerprint digits and tags.
    heads: Packed,
    /// The `b` raw fingerprint bits of each slot, in bucket order.
    low: Packed,
    stash: Vec<Stashed>,
    cursor: u64,
    sweep: u64,
    rng: u64,
    /// Stored entries (slots and stash) per tag; derived from the slots.
    counts: Vec<u64>,
    /// Stored entries whose tag is live under the last mask given to [`Table::recount`].
    live: u64,
}

/// Slots of `buckets` buckets.
fn slots_for(buckets: u64) -> Result<u64> {
    buckets
        .checked_mul(SLOTS)
        .ok_or(Error::OutOfMemory { bits: u64::MAX })
}

impl Table {
    /// An empty table of `buckets` buckets coded as `layout`; `sweep` buckets are scanned per
    /// insertion.
    pub(crate) fn new(buckets: u64, layout: Layout, sweep: u64, seed: u64) -> Result<Self> {
        layout.check()?;
        let slots = slots_for(buckets)?;
        let heads = Packed::new(layout.head_bits(), buckets)?;
        let low = Packed::new(layout.low_bits, slots)?;
        Table::assemble(buckets, layout, sweep, mix64(seed ^ ALT) | 1, heads, low)
    }

    /// A table of `buckets` buckets coded as `layout` over the given heads and slots, which must
    /// have the widths the layout codes and one head per bucket, `SLOTS` slots per bucket.
    fn assemble(
        buckets: u64,
        layout: Layout,
        sweep: u64,
        rng: u64,
        heads: Packed,
        low: Packed,
    ) -> Result<Self> {
        layout.check()?;
        if sweep == 0 {
            return Err(Error::invalid("table", "the sweep must scan a bucket"));
        }
        let b =
            FastMod::new(buckets).ok_or_else(|| Error::invalid("buckets", "must be positive"))?;
        if heads.width() != layout.head_bits() || heads.len() != buckets {
            return Err(Error::invalid(
                "table",
                "bucket heads do not fit the bucket count and layout",
            ));
        }
        if low.width() != layout.low_bits || low.len() != slots_for(buckets)? {
            return Err(Error::invalid(
                "table",
                "slots do not fit the bucket count and layout",
            ));
        }
        let fps = FastMod::new(layout.fingerprints())
            .ok_or_else(|| Error::invalid("layout", "no fingerprint values"))?;
        Ok(Table {
            buckets: b,
            layout,
            fps,
            radix: Radix::new(layout.digit_radix()),
            square: Radix::new(layout.digit_radix().pow(2)),
            split: (0..layout.digit_radix())
                .map(|d| {
                    (((d / u64::from(layout.tags)) << 8) | (d % u64::from(layout.tags))) as u16
                })
                .collect(),
            heads,
            low,
            stash: Vec::new(),
            cursor: 0,
            sweep,
            rng,
            counts: vec![0; layout.tags as usize],
            live: 0,
        })
    }

    /// Number of buckets.
    pub(crate) fn buckets(&self) -> u64 {
        self.buckets.divisor()
    }

    /// Live entries the table may hold before it is full (`LOAD` of its slots).
    pub(crate) fn capacity(&self) -> u64 {
        (self.low.len() as f64 * LOAD) as u64
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

    /// How the slots are coded.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// Memory of the bucket heads, the raw fingerprint bits and the stash, in bits.
    pub(crate) fn memory_bits(&self) -> u64 {
        self.heads.memory_bits() + self.low.memory_bits() + self.stash.len() as u64 * STASH_BITS
    }

    /// The digits `d_0..d_3` of a head without its semi-sorting code.
    #[inline]
    fn digits(&self, x: u64) -> [u64; SLOTS as usize] {
        // x < R^4 ≤ 960^4, so every dividend times its divisor is below R^6 < 2^60.
        let (high, low) = self.square.div_rem(x);
        let (d1, d0) = self.radix.div_rem(low);
        let (d3, d2) = self.radix.div_rem(high);
        [d0, d1, d2, d3]
    }

    /// The semi-sorted nibbles of a head (4 bits each, lowest first).
    #[inline]
    fn nibbles(head: u64) -> u64 {
        u64::from(codec().decode[(head & ((1 << CODE_BITS) - 1)) as usize])
    }

    /// Slot `j` of bucket `b` as `fp | tag << TAG_SHIFT`, from the bucket's nibbles and its digit.
    #[inline]
    fn slot(&self, b: u64, j: usize, nibbles: u64, digit: u64) -> u64 {
        let split = u64::from(self.split[digit as usize]);
        let (top, tag) = (split >> 8, split & 0xff);
        let high = top << self.layout.low_bits | self.low.get(b * SLOTS + j as u64);
        (nibbles >> (NIBBLE * j as u32)) & 0xf | high << NIBBLE | tag << TAG_SHIFT
    }

    /// The slot values (`fp | tag << TAG_SHIFT`, 0 for empty) of bucket `b`, in stored order.
    #[inline]
    fn bucket(&self, b: u64) -> [u64; SLOTS as usize] {
        let head = self.heads.get(b);
        let nibbles = Self::nibbles(head);
        let [d0, d1, d2, d3] = self.digits(head >> CODE_BITS);
        [
            self.slot(b, 0, nibbles, d0),
            self.slot(b, 1, nibbles, d1),
            self.slot(b, 2, nibbles, d2),
            self.slot(b, 3, nibbles, d3),
        ]
    }

    /// Stores bucket `b`, sorted by nibble (then by the rest, so the form is canonical).
    #[inline]
    fn set_bucket(&mut self, b: u64, mut e: [u64; SLOTS as usize]) {
        for (i, j) in [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)] {
            if sort_key(e[i]) > sort_key(e[j]) {
                e.swap(i, j);
            }
        }
        let (low_bits, tags) = (self.layout.low_bits, u64::from(self.layout.tags));
        let radix = self.radix.d;
        let (mut nibbles, mut x) = (0, 0);
        for (j, &v) in e.iter().enumerate().rev() {
            nibbles |= (v & 0xf) << (NIBBLE * j as u32);
            let high = (v & FP_MASK) >> NIBBLE;
            self.low
                .set(b * SLOTS + j as u64, high & ((1 << low_bits) - 1));
            x = x * radix + (high >> low_bits) * tags + (v >> TAG_SHIFT);
        }
        let code = u64::from(codec().encode[nibbles as usize]);
        self.heads.set(b, code | x << CODE_BITS);
    }

    /// The first bucket and the fingerprint of a key hash (`lo` picks the bucket, `hi` the
    /// fingerprint, uniform over `1..=Φ`).
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
    fn is_live(v: u64, mask: u64) -> bool {
        v != 0 && (mask >> (v >> TAG_SHIFT)) & 1 == 1
    }

    /// The position in bucket `b` of a live entry with fingerprint `fp`; decodes the digits only
    /// when a nibble matches `fp`'s.
    #[inline]
    fn find(&self, b: u64, fp: u64, mask: u64) -> Option<usize> {
        let head = self.heads.get(b);
        let nibbles = Self::nibbles(head);
        // Bit 4j + 3 is set when nibble j equals fp's (SWAR zero-nibble test; a borrow may also
        // flag a nibble above a matching one, which the full comparison below rejects).
        let x = nibbles ^ ((fp & 0xf) * 0x1111);
        let mut hits = x.wrapping_sub(0x1111) & !x & 0x8888;
        if hits == 0 {
            return None;
        }
        let (high, low) = self.square.div_rem(head >> CODE_BITS);
        while hits != 0 {
            let j = (hits.trailing_zeros() / NIBBLE) as usize;
            hits &= hits - 1;
            let (q, r) = self.radix.div_rem(if j < 2 { low } else { high });
            let digit = if j.is_multiple_of(2) { r } else { q };
            let v = self.slot(b, j, nibbles, digit);
            if v & FP_MASK == fp && Self::is_live(v, mask) {
                return Some(j);
            }
        }
        None
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
        let mut entry = fp | u64::from(tag) << TAG_SHIFT;
        let Some(e1) = self.place(b1, entry, mask) else {
            return Placed::Stored;
        };
        let Some(e2) = self.place(b2, entry, mask) else {
            return Placed::Stored;
        };
        let (mut b, mut e) = if self.next_rng() & 1 == 0 {
            (b1, e1)
        } else {
            (b2, e2)
        };
        for _ in 0..MAX_KICKS {
            let j = (self.next_rng() % SLOTS) as usize;
            let victim = std::mem::replace(&mut e[j], entry);
            self.set_bucket(b, e);
            entry = victim;
            b = self.alt(b, entry & FP_MASK);
            match self.place(b, entry, mask) {
                None => return Placed::Stored,
                Some(full) => e = full,
            }
        }
        self.stash.push(Stashed {
            bucket: b,
            fp: entry & FP_MASK,
            tag: (entry >> TAG_SHIFT) as u32,
        });
        Placed::Stashed
    }

    fn refresh(&mut self, b: u64, fp: u64, tag: u32, mask: u64) -> bool {
        let Some(j) = self.find(b, fp, mask) else {
            return false;
        };
        let mut e = self.bucket(b);
        let old = (e[j] >> TAG_SHIFT) as u32;
        if old != tag {
            self.counts[old as usize] -= 1;
            self.counts[tag as usize] += 1;
            e[j] = fp | u64::from(tag) << TAG_SHIFT;
            self.set_bucket(b, e);
        }
        true
    }

    /// Puts `entry` into an empty or expired slot of bucket `b` (lazy deletion of the latter);
    /// when every slot is live, leaves the bucket as it is and returns its slots, so a cuckoo
    /// relocation need not decode it again.
    fn place(&mut self, b: u64, entry: u64, mask: u64) -> Option<[u64; SLOTS as usize]> {
        let mut e = self.bucket(b);
        for j in 0..e.len() {
            let v = e[j];
            if !Self::is_live(v, mask) {
                if v != 0 {
                    self.counts[(v >> TAG_SHIFT) as usize] -= 1;
                }
                e[j] = entry;
                self.set_bucket(b, e);
                return None;
            }
        }
        Some(e)
    }

    fn rebuild_counts(&mut self) {
        self.counts.fill(0);
        for b in 0..self.buckets.divisor() {
            for v in self.bucket(b) {
                if v != 0 {
                    self.counts[(v >> TAG_SHIFT) as usize] += 1;
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
mod tests;
