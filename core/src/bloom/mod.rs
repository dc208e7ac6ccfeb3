//! Bloom filters (paper 000 §2.1): the standard layout the analysis assumes, and a cache-line
//! blocked layout for speed ([`Layout`], chosen per [`BloomFilter`]; the older standalone
//! [`BlockedBloomFilter`] is kept for the Bloom benchmarks). All sit behind [`Filter`].

mod batch;
mod blocked;
mod layout;
mod shape;
mod standard;

pub use blocked::BlockedBloomFilter;
pub(crate) use layout::LAYOUT_MISMATCH;
pub use layout::{blocked_probes, probes_in_block, Layout, BLOCK_BITS};
pub use shape::{FilterShape, MAX_HASHES};
pub use standard::BloomFilter;

use crate::hash::{Key, KeyHash};

/// The verbs every membership filter shares.
///
/// Keys are hashed once, with the filter's seed, to a [`KeyHash`]; the `*_hash` methods take that
/// hash so a caller probing several filters with one seed hashes once.
///
/// ```
/// use chronobloom_core::bloom::{BloomFilter, Filter};
/// let mut f = BloomFilter::with_fpr(1000, 0.01, 42).unwrap();
/// f.insert(&"alice");
/// assert!(f.contains(&"alice"));
/// ```
pub trait Filter {
    /// The hash seed.
    fn seed(&self) -> u64;
    /// Inserts a pre-hashed key.
    fn insert_hash(&mut self, hash: KeyHash);
    /// Tests a pre-hashed key: false means certainly absent.
    fn contains_hash(&self, hash: KeyHash) -> bool;
    /// Number of bits in the filter.
    fn bit_len(&self) -> u64;
    /// Number of hash functions.
    fn hashes(&self) -> u32;
    /// Number of set bits.
    fn ones(&self) -> u64;
    /// Memory held by the bit array, in bits.
    fn memory_bits(&self) -> u64;

    /// Inserts `key`.
    fn insert<K: Key + ?Sized>(&mut self, key: &K)
    where
        Self: Sized,
    {
        self.insert_hash(KeyHash::of(key, self.seed()));
    }

    /// Tests `key`: false means certainly absent.
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool
    where
        Self: Sized,
    {
        self.contains_hash(KeyHash::of(key, self.seed()))
    }

    /// Fraction of bits set.
    fn fill_ratio(&self) -> f64 {
        self.ones() as f64 / self.bit_len() as f64
    }

    /// The false positive rate implied by the current fill: `(ones / m)^k`.
    fn estimated_fpr(&self) -> f64 {
        self.fill_ratio().powi(self.hashes() as i32)
    }

    /// Distinct items inserted, estimated from the fill: `-(m / k) ln(1 - ones / m)`
    /// (Swamidass and Baldi, 2007). Infinite when every bit is set.
    fn estimated_items(&self) -> f64 {
        let m = self.bit_len() as f64;
        -(m / f64::from(self.hashes())) * (1.0 - self.fill_ratio()).ln()
    }
}

#[cfg(test)]
mod tests;
