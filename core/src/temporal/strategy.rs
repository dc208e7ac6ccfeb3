//! Where each partition's allocation comes from (paper 000 §6).
//!
//! A strategy is asked for the allocation of every new partition and sees the inserts and queries
//! of the partitions before it, so that it can learn d_i and f_i (the SIMPLE strategy of the paper
//! uses the previous partition's values).

use super::{Allocation, Tick, TimeRange};
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use std::collections::BTreeMap;

/// Chooses the allocation of each new partition of a [`super::PartitionedPbf2`].
pub trait AllocationStrategy {
    /// A short name for reports ("uniform", "offline", "online", ...).
    fn name(&self) -> &'static str;
    /// The allocation of partition `index`, a PBF-2 of `levels` levels and `bits` bits in all.
    fn allocation(&mut self, index: u64, levels: u32, bits: u64) -> Result<Allocation>;
    /// Sees each insert, with the partition it went to.
    fn observe_insert(&mut self, _index: u64, _hash: KeyHash, _tick: Tick) {}
    /// Sees each query's part that falls in partition `index`.
    fn observe_query(&mut self, _index: u64, _range: TimeRange) {}
    /// Memory the strategy holds to learn (sketches, counters), in bits.
    fn memory_bits(&self) -> u64 {
        0
    }
}

/// The same bits on every level, `hashes` hash functions each (the paper's default).
#[derive(Debug, Clone)]
pub struct UniformStrategy {
    /// Hash functions per level.
    pub hashes: u32,
}

impl AllocationStrategy for UniformStrategy {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn allocation(&mut self, _index: u64, levels: u32, bits: u64) -> Result<Allocation> {
        Allocation::uniform(levels as usize, bits, self.hashes)
    }
}

/// Allocations computed ahead of time (e.g. from an offline pass over data and workload), per
/// partition index; a partition without one is an error.
#[derive(Debug, Clone, Default)]
pub struct FixedStrategy {
    name: &'static str,
    per_partition: BTreeMap<u64, Allocation>,
}

impl FixedStrategy {
    /// The given allocations, reported under `name`.
    pub fn new(name: &'static str, per_partition: BTreeMap<u64, Allocation>) -> Self {
        FixedStrategy {
            name,
            per_partition,
        }
    }
}

impl AllocationStrategy for FixedStrategy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn allocation(&mut self, index: u64, levels: u32, _bits: u64) -> Result<Allocation> {
        let a = self.per_partition.get(&index).cloned().ok_or_else(|| {
            Error::invalid("allocation", format!("none given for partition {index}"))
        })?;
        a.expect_len(levels as usize)?;
        Ok(a)
    }
}
