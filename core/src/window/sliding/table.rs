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
#[serde(try_from = "TableRepr", into = "TableRepr")]
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

/// The serialized form: everything but the derived divisors and counts.
#[derive(Serialize, Deserialize)]
struct TableRepr {
    buckets: u64,
    layout: Layout,
    heads: Packed,
    low: Packed,
    stash: Vec<Stashed>,
    cursor: u64,
    sweep: u64,
    rng: u64,
}

impl From<Table> for TableRepr {
    fn from(t: Table) -> Self {
        TableRepr {
            buckets: t.buckets.divisor(),
            layout: t.layout,
            heads: t.heads,
            low: t.low,
            stash: t.stash,
            cursor: t.cursor,
            sweep: t.sweep,
            rng: t.rng,
        }
    }
}

/// Slots of `buckets` buckets.
fn slots_for(buckets: u64) -> Result<u64> {
    buckets
        .checked_mul(SLOTS)
        .ok_or(Error::OutOfMemory { bits: u64::MAX })
}

impl TryFrom<TableRepr> for Table {
    type Error = Error;
    fn try_from(r: TableRepr) -> Result<Self> {
        // The slots read are checked against the bucket count before anything is allocated for
        // it: a count from a corrupted file must not size an allocation.
        let mut t = Table::assemble(r.buckets, r.layout, r.sweep, r.rng, r.heads, r.low)?;
        if r.cursor >= r.buckets || r.rng == 0 {
            return Err(Error::invalid(
                "table",
                "sweep cursor or relocation state out of range",
            ));
        }
        let states = t.layout.digit_states();
        if (0..t.heads.len()).any(|b| {
            let head = t.heads.get(b);
            head & ((1 << CODE_BITS) - 1) >= CODES || head >> CODE_BITS >= states
        }) {
            return Err(Error::invalid("table", "a bucket code is out of range"));
        }
        for b in 0..r.buckets {
            let e = t.bucket(b);
            if e.iter().any(|&v| v != 0 && v & FP_MASK == 0) {
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
                || s.fp > t.layout.fingerprints()
                || s.tag >= t.layout.tags
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

    /// One step of the deamortized sweep (§2.5): clears expired slots in the next `sweep` buckets
    /// and expired stash entries.
    pub(crate) fn sweep(&mut self, mask: u64) {
        let b_count = self.buckets.divisor();
        for _ in 0..self.sweep.min(b_count) {
            let b = self.cursor;
            let mut e = self.bucket(b);
            let mut changed = false;
            for v in &mut e {
                if *v != 0 && !Self::is_live(*v, mask) {
                    self.counts[(*v >> TAG_SHIFT) as usize] -= 1;
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
                if *v != 0 && (*v >> TAG_SHIFT) as u32 == tag {
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
        self.heads.clear();
        self.low.clear();
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: u64 = u64::MAX;

    /// A power-of-two layout: `f`-bit fingerprints, `2^g` tags.
    fn pow2(f: u32, g: u32) -> Layout {
        Layout {
            radix: 1,
            low_bits: f - NIBBLE,
            tags: 1 << g,
        }
    }

    #[test]
    fn alternate_is_an_involution_for_any_size() {
        for buckets in [1u64, 2, 3, 7, 100, 1001] {
            let t = Table::new(buckets, pow2(10, 3), 1, 1).unwrap();
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
        let mut t = Table::new(8, pow2(12, 3), 1, 9).unwrap();
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
        let mut t = Table::new(4, pow2(8, 2), 1, 3).unwrap();
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
        let mut t = Table::new(16, pow2(9, 3), 2, 5).unwrap();
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
        for (i, &p) in c.decode.iter().enumerate() {
            let n: Vec<u16> = (0..4).map(|j| (p >> (4 * j)) & 0xf).collect();
            assert!(n.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(c.encode[p as usize] as usize, i);
        }
    }

    /// Every in-range head (code below 3876, digits below `R^4`) of two small layouts, one with
    /// raw bits, under every raw-bit pattern: it decodes to a canonical bucket that encodes back
    /// to it, or is refused on load (a tag without a fingerprint, or out of order); the accepted
    /// ones are exactly the multisets of 4 slot values (`1 + Φ·M` of them, 0 being empty).
    #[test]
    fn every_bucket_code_round_trips() {
        for layout in [
            Layout {
                radix: 1,
                low_bits: 0,
                tags: 3,
            },
            Layout {
                radix: 1,
                low_bits: 1,
                tags: 2,
            },
        ] {
            let mut t = Table::new(1, layout, 1, 1).unwrap();
            let states = layout.digit_states();
            assert!(states > 1 << (layout.head_bits() - CODE_BITS - 1));
            assert!(states <= 1 << (layout.head_bits() - CODE_BITS));
            let mut valid = 0u64;
            for low in 0..1u64 << (4 * layout.low_bits) {
                for j in 0..4 {
                    t.low.set(
                        j,
                        (low >> (j as u32 * layout.low_bits)) & ((1 << layout.low_bits) - 1),
                    );
                }
                for head in (0..states).flat_map(|x| (0..CODES).map(move |s| s | x << CODE_BITS)) {
                    t.heads.set(0, head);
                    let e = t.bucket(0);
                    if e.iter().any(|&v| v != 0 && v & FP_MASK == 0) || !is_sorted(&e) {
                        continue;
                    }
                    assert!(e.iter().all(|&v| v & FP_MASK <= layout.fingerprints()
                        && v >> TAG_SHIFT < u64::from(layout.tags)));
                    valid += 1;
                    t.set_bucket(0, e);
                    assert_eq!((t.heads.get(0), t.bucket(0)), (head, e));
                }
            }
            let n = 1 + layout.fingerprints() * u64::from(layout.tags);
            assert_eq!(valid, (n + 3) * (n + 2) * (n + 1) * n / 24, "{layout:?}");
        }
    }

    #[test]
    fn radix_division_is_exact() {
        for d in [
            2u64,
            3,
            7,
            15,
            45,
            255,
            960,
            960 * 960,
            1 << 20,
            (1 << 32) - 1,
        ] {
            let r = Radix::new(d);
            // Every dividend allowed: a·d < 2^64.
            let max = u64::MAX / d;
            let mut cases = vec![0, 1, d - 1, d, d + 1, max - d, max - 1, max];
            cases.extend((0..2000).map(|k| mix64(k ^ d) % (max + 1)));
            cases.extend((0..2000).map(|k| (mix64(k) % (max / d + 1)) * d));
            for a in cases {
                assert!(u128::from(a) * u128::from(d) < 1 << 64);
                assert_eq!(r.div_rem(a), (a / d, a % d), "{a} / {d}");
            }
        }
    }

    #[test]
    fn layouts_are_checked_and_costed() {
        // 16·5 − 1 fingerprints (ε = 0.1) and 9 tags: 12 + ⌈log2 45^4⌉ = 34 bits, no raw bits.
        let l = Layout {
            radix: 5,
            low_bits: 0,
            tags: 9,
        };
        assert_eq!(
            (l.fingerprints(), l.head_bits(), l.bucket_bits()),
            (79, 34, 34)
        );
        let t = Table::new(1_000, l, 1, 1).unwrap();
        assert!(t.memory_bits() >= 34_000 && t.memory_bits() < 34_000 + 64);
        // The power-of-two layout of the previous design costs its f + g − 1 bits per slot.
        let p = pow2(10, 3);
        assert_eq!(p.bucket_bits(), 4 * (10 + 3 - 1));
        // The widest digits still give a head of at most one word.
        let widest = Layout {
            radix: MAX_RADIX,
            low_bits: 0,
            tags: MAX_TAGS,
        };
        assert!(widest.check().is_ok() && widest.head_bits() <= 64);
        for bad in [
            Layout {
                radix: 0,
                low_bits: 3,
                tags: 8,
            },
            Layout {
                radix: 16,
                low_bits: 3,
                tags: 8,
            },
            Layout {
                radix: 1,
                low_bits: 3,
                tags: 1,
            },
            Layout {
                radix: 1,
                low_bits: 3,
                tags: 65,
            },
            Layout {
                radix: 15,
                low_bits: 19,
                tags: 8,
            },
        ] {
            assert!(Table::new(4, bad, 1, 1).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deserialize_refuses_bad_codes_and_order() {
        let layout = Layout {
            radix: 3,
            low_bits: 2,
            tags: 7,
        };
        let mut t = Table::new(4, layout, 1, 5).unwrap();
        for k in 0..6u64 {
            let (b, fp) = t.locate(mix64(k), mix64(!k));
            t.insert(b, fp, 1, 0b10);
        }
        let v = serde_json::to_value(&t).unwrap();
        assert!(serde_json::from_value::<Table>(v.clone()).is_ok());
        // Bucket 0's head is the low 30 bits of the first word: a 12-bit semi-sorting code below
        // 3876 and 18 bits of digits below 21^4. Either part past its range is refused.
        let w = layout.head_bits();
        assert_eq!(w, 30);
        let word = v["heads"]["words"][0].as_u64().unwrap() & !((1 << w) - 1);
        for head in [CODES, (1 << CODE_BITS) - 1, (1 << w) - (1 << CODE_BITS)] {
            let mut bad_code = v.clone();
            bad_code["heads"]["words"][0] = serde_json::json!(word | head);
            let err = serde_json::from_value::<Table>(bad_code).unwrap_err();
            assert!(err.to_string().contains("out of range"), "{err}");
        }
        // A slot with tag 1 but fingerprint 0 (nibble 0, top digit 0, raw bits 0).
        let mut tag_only = t.clone();
        tag_only.heads.set(0, 1 << CODE_BITS);
        tag_only.low.set(0, 0);
        let tag_only = serde_json::to_value(&tag_only).unwrap();
        let err = serde_json::from_value::<Table>(tag_only).unwrap_err();
        assert!(err.to_string().contains("no fingerprint"), "{err}");
        // All four nibbles 0 (code 0), slot 0 above slot 1 in the raw bits: not canonical.
        let mut table = t.clone();
        let radix = layout.digit_radix();
        table
            .heads
            .set(0, (1 + radix + radix * radix + radix.pow(3)) << CODE_BITS);
        for (j, r) in [3, 2, 2, 2].into_iter().enumerate() {
            table.low.set(j as u64, r);
        }
        let unsorted = serde_json::to_value(&table).unwrap();
        let err = serde_json::from_value::<Table>(unsorted).unwrap_err();
        assert!(err.to_string().contains("canonical order"), "{err}");
        let mut narrow = v.clone();
        narrow["low"]["width"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Table>(narrow).is_err());
        let mut other = v;
        other["layout"]["tags"] = serde_json::json!(8);
        assert!(serde_json::from_value::<Table>(other).is_err());
    }

    proptest! {
        /// A bucket reads back as the sorted multiset it was given, whatever the layout.
        #[test]
        fn buckets_round_trip(
            radix in 1u32..=MAX_RADIX,
            low_bits in 0u32..=22,
            tags in 2u32..=MAX_TAGS,
            raw in proptest::array::uniform4(any::<u64>()),
            empty in proptest::array::uniform4(any::<bool>()),
        ) {
            let layout = Layout { radix, low_bits, tags };
            prop_assume!(layout.check().is_ok());
            let mut t = Table::new(3, layout, 1, 1).unwrap();
            let e: [u64; 4] = std::array::from_fn(|j| {
                let fp = 1 + raw[j] % layout.fingerprints();
                let tag = (raw[j] >> 40) % u64::from(tags);
                if empty[j] { 0 } else { fp | tag << TAG_SHIFT }
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
            let mut t = Table::new(8, pow2(12, 2), 1, 13).unwrap();
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
            let mut t = Table::new(64, pow2(10, 2), 3, 11).unwrap();
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
