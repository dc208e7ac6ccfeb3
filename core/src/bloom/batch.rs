//! The batch insert of [`BloomFilter`]: many keys at one temporal bucket or each at its own, the
//! lines of 16–32 keys prefetched before their bits are set, so that their cache misses overlap,
//! and the hash count unrolled for 1–8.

use super::layout::{block_offsets, block_seed, BLOCK_WORDS};
use super::{BloomFilter, Layout};
use crate::bits::{BitWriter, Writer};
use crate::hash::{BucketMix, FastMod, KeyHash};

/// Evaluates `body` with the const `K` equal to `k` when `k` is 1 to 8 (loops over `K` unroll),
/// and with `K = 0` (meaning "read the hash count at run time") otherwise.
macro_rules! by_hashes {
    ($k:expr, |$K:ident| $body:expr) => {
        match $k {
            1 => by_hashes!(@ $K = 1, $body),
            2 => by_hashes!(@ $K = 2, $body),
            3 => by_hashes!(@ $K = 3, $body),
            4 => by_hashes!(@ $K = 4, $body),
            5 => by_hashes!(@ $K = 5, $body),
            6 => by_hashes!(@ $K = 6, $body),
            7 => by_hashes!(@ $K = 7, $body),
            8 => by_hashes!(@ $K = 8, $body),
            _ => by_hashes!(@ $K = 0, $body),
        }
    };
    (@ $K:ident = $v:literal, $body:expr) => {{
        const $K: usize = $v;
        $body
    }};
}

pub(super) use by_hashes;

impl BloomFilter {
    /// Inserts `hash.at_mixed(mix)` for each hash of `hashes`: the bits [`super::Filter::insert_hash`]
    /// sets on each, in one loop per layout (the layout is checked once, the insert inlined).
    ///
    /// ```
    /// use chronobloom_core::bloom::{BloomFilter, Filter};
    /// use chronobloom_core::hash::{BucketMix, KeyHash};
    /// let keys: Vec<KeyHash> = (0..10u64).map(|k| KeyHash::of(&k, 0)).collect();
    /// let mut f = BloomFilter::new(1_000, 3, 0).unwrap();
    /// f.insert_mixed(&keys, BucketMix::of(5));
    /// assert!(keys.iter().all(|h| f.contains_hash(h.at(5))));
    /// ```
    pub fn insert_mixed(&mut self, hashes: &[KeyHash], mix: BucketMix) {
        self.insert_batch(hashes, Mixes::One(mix));
    }

    /// Inserts `hashes[i].at(buckets[i] >> shift)` for each `i`: [`Self::insert_mixed`] with a
    /// bucket per key (a PBF-2 level's buckets of event ticks). The bucket half of the hashing is
    /// redone only where the bucket changes, so keys in runs of one bucket cost what
    /// [`Self::insert_mixed`] costs. Keys beyond `buckets.len()` are not inserted.
    ///
    /// ```
    /// use chronobloom_core::bloom::{BloomFilter, Filter};
    /// use chronobloom_core::hash::KeyHash;
    /// let keys: Vec<KeyHash> = (0..10u64).map(|k| KeyHash::of(&k, 0)).collect();
    /// let ticks: Vec<u64> = (0..10).collect();
    /// let mut f = BloomFilter::new(1_000, 3, 0).unwrap();
    /// f.insert_each_bucket(&keys, &ticks, 1); // bucket = tick / 2
    /// assert!(keys.iter().zip(&ticks).all(|(h, t)| f.contains_hash(h.at(t >> 1))));
    /// ```
    pub fn insert_each_bucket(&mut self, hashes: &[KeyHash], buckets: &[u64], shift: u32) {
        let n = hashes.len().min(buckets.len());
        self.insert_batch(&hashes[..n], Mixes::each(&buckets[..n], shift));
    }

    /// The batch insert of either kind, one loop per layout (the layout is checked once).
    fn insert_batch(&mut self, hashes: &[KeyHash], mix: Mixes) {
        match self.layout {
            // The common hash counts get loops the compiler unrolls.
            Layout::Blocked => {
                by_hashes!(self.hashes, |K| self.insert_blocked_batch::<K>(hashes, mix))
            }
            Layout::Standard => {
                by_hashes!(self.hashes, |K| self
                    .insert_standard_batch::<K>(hashes, mix))
            }
        }
    }

    /// [`Self::insert_mixed`] for the blocked layout with `K` hashes (`K = 0`: `self.hashes`),
    /// tracking changes or not, decided once for the batch.
    #[inline]
    fn insert_blocked_batch<const K: usize>(&mut self, hashes: &[KeyHash], mix: Mixes) {
        let k = if K == 0 { self.hashes } else { K as u32 };
        let batch = Batch::new(hashes, mix, self.modulus, k);
        match self.bits.writer() {
            Writer::Tracked(mut w) => insert_blocks(&mut w, batch),
            Writer::Plain(mut w) => insert_blocks(&mut w, batch),
        }
    }

    /// [`Self::insert_mixed`] for the standard layout with `K` hashes (`K = 0`: `self.hashes`),
    /// tracking changes or not, decided once for the batch.
    #[inline]
    fn insert_standard_batch<const K: usize>(&mut self, hashes: &[KeyHash], mix: Mixes) {
        let batch = Batch::new(hashes, mix, self.modulus, self.hashes);
        match self.bits.writer() {
            Writer::Tracked(mut w) => insert_standard::<K, true>(&mut w, batch),
            Writer::Plain(mut w) => insert_standard::<K, false>(&mut w, batch),
        }
    }
}

/// The buckets of a batch's keys: one for all, or one per key.
#[derive(Clone, Copy)]
enum Mixes<'a> {
    /// Every key in this bucket.
    One(BucketMix),
    /// Key `i` in bucket `buckets[i] >> shift`; the last bucket's mix is cached.
    Each {
        buckets: &'a [u64],
        shift: u32,
        last: u64,
        mix: BucketMix,
    },
}

impl<'a> Mixes<'a> {
    fn each(buckets: &'a [u64], shift: u32) -> Self {
        let last = buckets.first().map_or(0, |&b| b >> shift);
        Mixes::Each {
            buckets,
            shift,
            last,
            mix: BucketMix::of(last),
        }
    }

    /// The mix of key `i`'s bucket.
    #[inline]
    fn at(&mut self, i: usize) -> BucketMix {
        match self {
            Mixes::One(m) => *m,
            Mixes::Each {
                buckets,
                shift,
                last,
                mix,
            } => {
                let b = buckets[i] >> *shift;
                if b != *last {
                    *last = b;
                    *mix = BucketMix::of(b);
                }
                *mix
            }
        }
    }
}

/// What one batch insert puts in: the key hashes, their buckets' mixes, the filter's modulus
/// (bits or blocks) and hash count.
#[derive(Clone, Copy)]
struct Batch<'a> {
    hashes: &'a [KeyHash],
    mix: Mixes<'a>,
    modulus: FastMod,
    k: u32,
}

impl<'a> Batch<'a> {
    #[inline]
    fn new(hashes: &'a [KeyHash], mix: Mixes<'a>, modulus: FastMod, k: u32) -> Self {
        Batch {
            hashes,
            mix,
            modulus,
            k,
        }
    }
}

/// The standard batch insert into `m = modulus` bits with `K` hashes: the probe words of 16
/// keys are prefetched before their bits are set. `K = 0`: `k` hashes, one key at a time.
#[inline]
fn insert_standard<const K: usize, const TRACK: bool>(
    bits: &mut BitWriter<'_, TRACK>,
    batch: Batch,
) {
    const CHUNK: usize = 16;
    let Batch {
        hashes,
        mut mix,
        modulus,
        k,
    } = batch;
    if K == 0 {
        for (i, &h) in hashes.iter().enumerate() {
            for p in h.at_mixed(mix.at(i)).probes(k, modulus) {
                bits.set(p);
            }
        }
        return;
    }
    let mut todo = [[0u64; K]; CHUNK];
    for (c, chunk) in hashes.chunks(CHUNK).enumerate() {
        for (j, (slot, &h)) in todo.iter_mut().zip(chunk).enumerate() {
            for (p, q) in slot
                .iter_mut()
                .zip(h.at_mixed(mix.at(c * CHUNK + j)).probes(K as u32, modulus))
            {
                bits.prefetch((q / 64) as usize);
                *p = q;
            }
        }
        for slot in &todo[..chunk.len()] {
            for &p in slot {
                bits.set(p);
            }
        }
    }
}

/// The blocked batch insert into `modulus` blocks: the blocks of 32 keys are prefetched before
/// their bits are set, so their cache misses overlap.
#[inline]
fn insert_blocks<const TRACK: bool>(bits: &mut BitWriter<'_, TRACK>, batch: Batch) {
    const CHUNK: usize = 32;
    let Batch {
        hashes,
        mut mix,
        modulus,
        k,
    } = batch;
    let mut todo = [(0usize, 0u64); CHUNK];
    for (c, chunk) in hashes.chunks(CHUNK).enumerate() {
        for (j, (slot, &h)) in todo.iter_mut().zip(chunk).enumerate() {
            // Only `lo` is used (step 5): the compiler drops the mixing of `hi`.
            let lo = h.at_mixed(mix.at(c * CHUNK + j)).lo;
            let b = modulus.reduce(lo) as usize;
            bits.prefetch(b * BLOCK_WORDS);
            *slot = (b, block_seed(lo));
        }
        for &(b, g) in &todo[..chunk.len()] {
            bits.set_in_block(b, block_offsets(g, k));
        }
    }
}
