//! SBF, the single-Bloom-filter baseline β0 (paper 000 §3.1).
//!
//! Each pair (key, tick) is one element of a standard Bloom filter over U × T. A range query
//! [s, e] asks the e − s + 1 point queries (key, s), ..., (key, e); its false positive rate is
//! eq. 4, `1 − (1 − p(b))^(e − s + 1)`, and its cost is linear in the range length.

use super::{Answer, TemporalFilter, Tick, TimeRange};
use crate::bloom::{BloomFilter, Filter, FilterShape};
use crate::error::Result;
use crate::hash::KeyHash;
use serde::{Deserialize, Serialize};

/// The single Bloom filter over (key, tick) pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sbf {
    filter: BloomFilter,
}

impl Sbf {
    /// An SBF of `bits` bits and `hashes` hash functions.
    pub fn new(bits: u64, hashes: u32, seed: u64) -> Result<Self> {
        Ok(Sbf {
            filter: BloomFilter::new(bits, hashes, seed)?,
        })
    }

    /// An SBF of the given shape (at least one bit).
    pub fn from_shape(shape: FilterShape, seed: u64) -> Result<Self> {
        Ok(Sbf {
            filter: BloomFilter::from_shape(shape, seed)?,
        })
    }

    /// The underlying Bloom filter.
    pub fn filter(&self) -> &BloomFilter {
        &self.filter
    }

    /// The underlying Bloom filter, mutably (for merging deltas).
    pub fn filter_mut(&mut self) -> &mut BloomFilter {
        &mut self.filter
    }

    /// ORs another SBF of the same shape and seed into this one.
    pub fn union(&mut self, other: &Sbf) -> Result<()> {
        self.filter.union(&other.filter)
    }

    /// Probes the ticks of `range` in order until one answers yes.
    pub(crate) fn probe_ticks(&self, hash: KeyHash, range: TimeRange) -> Answer {
        let mut probes = 0;
        for t in range.start()..=range.end() {
            probes += 1;
            if self.filter.contains_hash(hash.at(t)) {
                return Answer {
                    present: true,
                    probes,
                };
            }
        }
        Answer {
            present: false,
            probes,
        }
    }
}

impl TemporalFilter for Sbf {
    fn seed(&self) -> u64 {
        self.filter.seed()
    }

    fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        self.filter.insert_hash(hash.at(tick));
        Ok(())
    }

    fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        self.probe_ticks(hash, range)
    }

    fn memory_bits(&self) -> u64 {
        self.filter.memory_bits()
    }
}
