//! Temporal membership: "has key x appeared in time range [s, e]?" (paper 000).
//!
//! * [`Sbf`] (β0, §3.1): one Bloom filter over (key, tick); a range query probes every tick.
//! * [`Pbf1`] (β1, §4.1): a binary decomposition of time with one Bloom filter per interval, leaves
//!   of `g` ticks, and an SBF for the parts of a query smaller than a leaf.
//! * [`Pbf2`] (β2, §4.2): one Bloom filter per level; level ℓ stores (key, ⌊t / 2^ℓ⌋).
//!
//! Ticks are `u64` counts of a caller-chosen unit starting at 0 (the paper counts from 1: its
//! interval [1, 4] is our [0, 3]). None of them has false negatives.

mod allocation;
mod cover;
mod partitioned;
mod pbf1;
mod pbf2;
mod range;
mod sbf;
mod strategy;

pub use allocation::Allocation;
pub use cover::{dyadic_cover, Block};
pub use partitioned::{PartitionConfig, PartitionedPbf2, Retire};
pub use pbf1::{Pbf1, Pbf1Cover, Pbf1Node};
pub use pbf2::Pbf2;
pub use range::{Tick, TimeRange};
pub use sbf::Sbf;
pub use strategy::{AllocationStrategy, FixedStrategy, UniformStrategy};

use crate::error::Result;
use crate::hash::{Key, KeyHash};

/// The answer to a temporal query with its cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// False means the key certainly did not appear in the range.
    pub present: bool,
    /// Membership probes made into Bloom filters (the paper's query cost measure).
    pub probes: u64,
}

/// The verbs every temporal filter shares.
///
/// ```
/// use chronobloom_core::temporal::{Sbf, TemporalFilter, TimeRange};
/// let mut f = Sbf::new(100_000, 5, 7).unwrap();
/// f.insert(&42u64, 10).unwrap();
/// assert!(f.query(&42u64, TimeRange::new(5, 15).unwrap()));
/// assert!(f.contains_at(&42u64, 10));
/// let a = f.query_counted(&42u64, TimeRange::new(0, 9).unwrap());
/// assert_eq!(a.probes, 10); // one probe per tick
/// ```
pub trait TemporalFilter {
    /// The hash seed keys are hashed with.
    fn seed(&self) -> u64;
    /// Records that the pre-hashed key appeared at `tick`.
    fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()>;
    /// Answers "did the pre-hashed key appear in `range`?", with the number of probes made.
    fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer;
    /// Memory held by the filters' bit arrays, in bits.
    fn memory_bits(&self) -> u64;

    /// Records that `key` appeared at `tick`.
    fn insert<K: Key + ?Sized>(&mut self, key: &K, tick: Tick) -> Result<()>
    where
        Self: Sized,
    {
        self.insert_hash(KeyHash::of(key, self.seed()), tick)
    }

    /// "Did `key` appear in `range`?" False is certain; true may be a false positive.
    fn query<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> bool
    where
        Self: Sized,
    {
        self.query_counted(key, range).present
    }

    /// [`Self::query`] with the number of probes it made.
    fn query_counted<K: Key + ?Sized>(&self, key: &K, range: TimeRange) -> Answer
    where
        Self: Sized,
    {
        self.query_hash(KeyHash::of(key, self.seed()), range)
    }

    /// "Did `key` appear at exactly `tick`?"
    fn contains_at<K: Key + ?Sized>(&self, key: &K, tick: Tick) -> bool
    where
        Self: Sized,
    {
        self.query(key, TimeRange::point(tick))
    }
}

#[cfg(test)]
mod tests;
