//! Window filters: "has key x appeared in the last W ticks (or the last n insertions)?"
//!
//! Time is the caller's tick (event time; in the dataflow, the timestamp), never the wall clock.

use crate::error::Result;
use crate::hash::{Key, KeyHash};
use crate::temporal::Tick;

/// The verbs every window filter shares.
pub trait WindowFilter {
    /// The hash seed keys are hashed with.
    fn seed(&self) -> u64;
    /// Records the pre-hashed key at time `now`; `now` must not go backwards.
    fn insert_hash(&mut self, hash: KeyHash, now: Tick) -> Result<()>;
    /// "Was the pre-hashed key inserted within the window ending at `now`?" False is certain
    /// inside the structure's guarantee.
    fn contains_hash(&self, hash: KeyHash, now: Tick) -> bool;
    /// Lets time pass without an insertion, retiring what fell out of the window.
    fn advance(&mut self, now: Tick) -> Result<()>;
    /// Memory held by the structure's bits (or slots), in bits.
    fn memory_bits(&self) -> u64;
    /// Items the structure currently accounts for (inserted and not yet retired).
    fn items(&self) -> u64;

    /// Records `key` at time `now`.
    fn insert<K: Key + ?Sized>(&mut self, key: &K, now: Tick) -> Result<()>
    where
        Self: Sized,
    {
        self.insert_hash(KeyHash::of(key, self.seed()), now)
    }

    /// "Was `key` inserted within the window ending at `now`?"
    fn contains<K: Key + ?Sized>(&self, key: &K, now: Tick) -> bool
    where
        Self: Sized,
    {
        self.contains_hash(KeyHash::of(key, self.seed()), now)
    }
}

mod apbf;
mod apbf_params;
pub mod generations;
mod scan;
mod sliding;
pub mod tagged;
mod tick_filter;
mod time_limited;

pub use apbf::{Apbf, DEFAULT_LEVEL, MAX_TOTAL_BITS};
pub use apbf_params::{run_probability, ApbfParams, MAX_K, MAX_LEVEL, MAX_SLICES};
pub use generations::GenerationSlices;
pub use sliding::{SlidingBloomFilter, SlidingShape, SlidingStats, SlidingWindow};
pub use tagged::{
    default_slack, live_generations, min_slack, Prior, TaggedCuckooFilter, TaggedStats, MAX_HINT,
    MAX_LIVE_GENERATIONS,
};
pub use tick_filter::{window_start, TickFilter};
pub use time_limited::{TimeLimitedBloomFilter, GROWTH_CAP, MAX_SLICE_BITS};
