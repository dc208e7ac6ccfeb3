//! The Bloom filter: by default `k` probes anywhere in `m` bits, the layout paper 000's analysis
//! assumes (eqs. 1–3); optionally all `k` in one 512-bit block ([`Layout::Blocked`]).

use super::batch::by_hashes;
use super::layout::{block_offsets, block_seed, BLOCK_STEP, BLOCK_WORDS, LAYOUT_MISMATCH};
use super::{Filter, FilterShape, Layout, BLOCK_BITS};
use crate::bits::{Bits, Writer};
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};
use serde::{Deserialize, Serialize};

/// A Bloom filter of `m` bits and `k` hash functions with seed `seed`, in one [`Layout`].
///
/// Probe positions follow the crate's hashing specification ([`crate::hash`]), so two filters of
/// the same (m, k, seed, layout) built anywhere union bit for bit, and folding to a divisor of `m`
/// (whole blocks, when blocked) equals building at that size.
///
/// ```
/// use chronobloom_core::bloom::{BloomFilter, Filter};
/// let mut a = BloomFilter::new(10_000, 5, 1).unwrap();
/// let mut b = BloomFilter::new(10_000, 5, 1).unwrap();
/// a.insert(&1u64);
/// b.insert(&2u64);
/// a.union(&b).unwrap();
/// assert!(a.contains(&1u64) && a.contains(&2u64));
/// let small = a.fold(2_500).unwrap();
/// assert!(small.contains(&2u64));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BloomFields")]
pub struct BloomFilter {
    pub(super) hashes: u32,
    seed: u64,
    /// `m` (standard) or the block count `m / 512` (blocked).
    pub(super) modulus: FastMod,
    pub(super) bits: Bits,
    pub(super) layout: Layout,
}

/// The serialized form, checked on the way in: a checkpoint from anywhere must not make a probe
/// land outside the bits. A form without `layout` (written before layouts existed) is standard.
#[derive(Deserialize)]
struct BloomFields {
    hashes: u32,
    seed: u64,
    modulus: FastMod,
    bits: Bits,
    #[serde(default)]
    layout: Layout,
}

impl TryFrom<BloomFields> for BloomFilter {
    type Error = Error;
    fn try_from(f: BloomFields) -> Result<Self> {
        FilterShape::new(f.bits.len(), f.hashes)?;
        let expected = f.layout.modulus(f.bits.len())?;
        if f.modulus != expected {
            return Err(Error::ShapeMismatch {
                what: "reduction modulus vs bit length",
                left: f.modulus.divisor(),
                right: f.bits.len(),
            });
        }
        Ok(BloomFilter {
            hashes: f.hashes,
            seed: f.seed,
            modulus: f.modulus,
            bits: f.bits,
            layout: f.layout,
        })
    }
}

impl BloomFilter {
    /// A filter of `bits` bits (at least 1) and `hashes` hash functions (1 to 64).
    pub fn new(bits: u64, hashes: u32, seed: u64) -> Result<Self> {
        Self::from_shape(FilterShape::new(bits, hashes)?, seed)
    }

    /// A filter sized for `items` distinct items at false positive rate `fpr`.
    pub fn with_fpr(items: u64, fpr: f64, seed: u64) -> Result<Self> {
        Self::from_shape(FilterShape::for_fpr(items, fpr)?, seed)
    }

    /// A standard filter of the given shape; the shape must have at least one bit.
    pub fn from_shape(shape: FilterShape, seed: u64) -> Result<Self> {
        Self::with_layout(shape, seed, Layout::Standard)
    }

    /// A filter of the given shape and layout: at least one bit, and a positive multiple of 512
    /// bits when blocked ([`Error::NotWholeBlocks`] otherwise).
    pub fn with_layout(shape: FilterShape, seed: u64, layout: Layout) -> Result<Self> {
        let shape = FilterShape::new(shape.bits, shape.hashes)?;
        let modulus = layout.modulus(shape.bits)?;
        Ok(BloomFilter {
            hashes: shape.hashes,
            seed,
            modulus,
            bits: Bits::try_new(shape.bits)?,
            layout,
        })
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The filter's shape.
    pub fn shape(&self) -> FilterShape {
        FilterShape {
            bits: self.bits.len(),
            hashes: self.hashes,
        }
    }

    /// The bit array (for deltas and digests).
    pub fn bits(&self) -> &Bits {
        &self.bits
    }

    /// The bit array, mutably (to apply deltas or track dirty words).
    pub fn bits_mut(&mut self) -> &mut Bits {
        &mut self.bits
    }

    /// ORs `other` into `self`. Refuses filters of another (m, k, seed, layout): their bits mean
    /// different things.
    pub fn union(&mut self, other: &BloomFilter) -> Result<()> {
        self.check_same_shape(other)?;
        self.bits.union_with(&other.bits)
    }

    fn check_same_shape(&self, other: &BloomFilter) -> Result<()> {
        let pairs = [
            (LAYOUT_MISMATCH, self.layout.code(), other.layout.code()),
            ("bits", self.bits.len(), other.bits.len()),
            ("hash functions", self.hashes.into(), other.hashes.into()),
            ("seed", self.seed, other.seed),
        ];
        match pairs.into_iter().find(|(_, l, r)| l != r) {
            Some((what, left, right)) => Err(Error::ShapeMismatch { what, left, right }),
            None => Ok(()),
        }
    }

    /// The filter folded to `to` bits, `to` dividing `m` (paper 000 §6): exactly the filter that
    /// inserting the same keys at `to` bits would build. A blocked filter folds in whole blocks
    /// (`to` a multiple of 512): block `b` goes to block `b mod (to / 512)`, which is where the
    /// block index `lo mod B` lands, and the bits inside a block do not depend on `B`.
    pub fn fold(&self, to: u64) -> Result<BloomFilter> {
        let from = self.bits.len();
        if to == 0 || !from.is_multiple_of(to) {
            return Err(Error::NotADivisor { from, to });
        }
        let modulus = self.layout.modulus(to)?;
        Ok(BloomFilter {
            hashes: self.hashes,
            seed: self.seed,
            modulus,
            bits: self.bits.fold(to)?,
            layout: self.layout,
        })
    }

    /// Unions two filters of sizes `m` and `m'` at `gcd(m, m')` bits (paper 000 §6; whole blocks
    /// when blocked, as `512 | gcd`) and `min(k, k')` hash functions. The paper assumes equal `k`;
    /// a smaller `k` also works because both layouts give every `k` the same probe sequence, so the
    /// first `min(k, k')` probes of every key inserted into either filter are set. No inserted key
    /// is lost. Refuses another seed or layout.
    pub fn union_folded(&self, other: &BloomFilter) -> Result<BloomFilter> {
        for (what, left, right) in [
            ("seed", self.seed, other.seed),
            (LAYOUT_MISMATCH, self.layout.code(), other.layout.code()),
        ] {
            if left != right {
                return Err(Error::ShapeMismatch { what, left, right });
            }
        }
        let g = gcd(self.bits.len(), other.bits.len());
        let hashes = self.hashes.min(other.hashes);
        let mut a = self.fold(g)?;
        let mut b = other.fold(g)?;
        a.hashes = hashes;
        b.hashes = hashes;
        a.union(&b)?;
        Ok(a)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Filter for BloomFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    #[inline]
    fn insert_hash(&mut self, hash: KeyHash) {
        if self.layout == Layout::Blocked {
            return self.insert_blocked(hash);
        }
        for p in hash.probes(self.hashes, self.modulus) {
            self.bits.set(p);
        }
    }

    // The probe loop written out rather than through `Probes`, which compiles to a longer loop;
    // the positions are the same (the tests compare them).
    #[inline]
    fn contains_hash(&self, hash: KeyHash) -> bool {
        if self.layout == Layout::Blocked {
            return self.contains_blocked(hash);
        }
        let (mut g, mut d) = (hash.lo, hash.hi);
        for i in 1..=u64::from(self.hashes) {
            if !self.bits.test(self.modulus.reduce(g)) {
                return false;
            }
            g = g.wrapping_add(d);
            d = d.wrapping_add(i);
        }
        true
    }

    fn bit_len(&self) -> u64 {
        self.bits.len()
    }

    fn hashes(&self) -> u32 {
        self.hashes
    }

    fn ones(&self) -> u64 {
        self.bits.count_ones()
    }

    fn memory_bits(&self) -> u64 {
        self.bits.memory_bits()
    }

    /// Standard: `(ones / m)^k`. Blocked: the mean over blocks of `(ones_b / 512)^k`, the exact
    /// expectation for a key whose block and bits are uniform (the global fill would understate it,
    /// since full blocks are hit as often as empty ones).
    fn estimated_fpr(&self) -> f64 {
        match self.layout {
            Layout::Standard => self.fill_ratio().powi(self.hashes as i32),
            Layout::Blocked => {
                let k = self.hashes as i32;
                let sum: f64 = self
                    .bits
                    .words()
                    .chunks_exact(BLOCK_WORDS)
                    .map(|b| {
                        let ones: u32 = b.iter().map(|w| w.count_ones()).sum();
                        (f64::from(ones) / BLOCK_BITS as f64).powi(k)
                    })
                    .sum();
                sum / self.modulus.divisor() as f64
            }
        }
    }

    /// Standard: `-(m / k) ln(1 - ones / m)`. Blocked: with Poisson block loads the expected clear
    /// fraction is `e^{−λ(1 − q^k)}`, `q = 1 − 1/512`, so `n = −B ln(1 − ones / m) / (1 − q^k)`.
    fn estimated_items(&self) -> f64 {
        let clear = (1.0 - self.fill_ratio()).ln();
        match self.layout {
            Layout::Standard => -(self.bits.len() as f64 / f64::from(self.hashes)) * clear,
            Layout::Blocked => {
                let q_k = (1.0 - 1.0 / BLOCK_BITS as f64).powi(self.hashes as i32);
                -(self.modulus.divisor() as f64) * clear / (1.0 - q_k)
            }
        }
    }
}

impl BloomFilter {
    /// The blocked insert: `k` bit sets inside one block (the first misses the cache, the others
    /// hit the same line) and one dirty-flag update for the block. Setting bits one by one beats
    /// gathering a block mask and ORing the block's 8 words: the mask's narrow stores followed by
    /// wide loads stall store forwarding (a throwaway timing loop measured 339 → 217 ns per
    /// 18-level PBF-2 insert).
    #[inline]
    fn insert_blocked(&mut self, hash: KeyHash) {
        let b = self.modulus.reduce(hash.lo) as usize;
        let g = block_seed(hash.lo);
        by_hashes!(self.hashes, |K| {
            let offsets = block_offsets(g, if K == 0 { self.hashes } else { K as u32 });
            match self.bits.writer() {
                Writer::Tracked(mut w) => w.set_in_block(b, offsets),
                Writer::Plain(mut w) => w.set_in_block(b, offsets),
            }
        })
    }

    #[inline]
    fn contains_blocked(&self, hash: KeyHash) -> bool {
        let first = self.modulus.reduce(hash.lo) as usize * BLOCK_WORDS;
        let block = self.bits.block(first);
        let mut g = block_seed(hash.lo);
        for _ in 0..self.hashes {
            let p = g >> 55;
            if block[(p >> 6) as usize] >> (p & 63) & 1 == 0 {
                return false;
            }
            g = g.wrapping_mul(BLOCK_STEP);
        }
        true
    }
}

#[cfg(test)]
mod probe_loop_tests {
    use super::*;
    use crate::hash::mix64;

    /// `contains_hash` writes the probe loop out; it must test exactly the positions of `Probes`.
    #[test]
    fn contains_hash_tests_exactly_the_probes_positions() {
        for (bits, hashes) in [
            (1, 3),
            (7, 1),
            (64, 5),
            (1_000, 7),
            (95_850_584, 7),
            (12_345, 16),
        ] {
            for j in 0..200u64 {
                let hash = KeyHash {
                    lo: mix64(j),
                    hi: mix64(j ^ 0xabcd),
                };
                let mut f = BloomFilter::new(bits, hashes, 0).expect("valid shape");
                let positions: Vec<u64> = hash.probes(hashes, f.modulus).collect();
                for &p in &positions {
                    f.bits.set(p);
                }
                assert!(f.contains_hash(hash));
                for &p in &positions {
                    let mut g = BloomFilter::new(bits, hashes, 0).expect("valid shape");
                    for &q in positions.iter().filter(|&&q| q != p) {
                        g.bits.set(q);
                    }
                    assert!(
                        !g.contains_hash(hash),
                        "bit {p} of m = {bits} must be tested"
                    );
                }
            }
        }
    }
}
