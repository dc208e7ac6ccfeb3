//! Per-epoch, per-worker statistics.
//!
//! Every worker emits one [`EpochStats`] for each epoch in which any worker saw a record, once
//! that epoch is merged. Nothing a user sends panics a worker: records that cannot be indexed are
//! counted in [`LocalStats::rejected`] under their [`RejectReason`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a record was not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RejectReason {
    /// Its tick is at or past `partitions * partition_len`.
    BeyondHorizon,
    /// The worker already held back [`crate::IndexConfig::max_buffered`] records (of later
    /// epochs, or waiting for their partition's allocation).
    BufferFull,
    /// Its partition's allocation could not build a filter.
    BadAllocation,
}

/// One level's occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelStats {
    /// The level (0 = finest).
    pub level: u32,
    /// Bits of the level this worker holds.
    pub bits: u64,
    /// Fraction of those bits set.
    pub fill: f64,
    /// False positive rate of one probe estimated from the fill: `fill^k`.
    pub estimated_fpr: f64,
}

impl LevelStats {
    /// Stats of a level with `ones` of `bits` bits set and `hashes` hash functions.
    pub fn from_counts(level: u32, bits: u64, ones: u64, hashes: u32) -> Self {
        let fill = if bits == 0 {
            0.0
        } else {
            ones as f64 / bits as f64
        };
        LevelStats {
            level,
            bits,
            fill,
            estimated_fpr: fill.powi(hashes as i32),
        }
    }
}

/// What a worker's local index did during one epoch (carried to its own merge operator).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalStats {
    /// Records indexed.
    pub records: u64,
    /// Records whose tick was below their timestamp (the watermark), indexed at the timestamp.
    #[serde(default)]
    pub late: u64,
    /// Records refused, by reason.
    pub rejected: BTreeMap<RejectReason, u64>,
    /// Delta bytes sent to other workers.
    pub bytes_sent: u64,
    /// Records held back in the local index when the epoch closed (of later epochs, or waiting
    /// for their partition's allocation).
    pub records_buffered: u64,
    /// Announced allocations refused since the previous epoch closed: they did not fit the
    /// configuration, named a partition past the horizon, or were stamped after the partition's
    /// start tick.
    pub allocations_refused: u64,
    /// Bits held by the local (unmerged) filters when the epoch closed, with their change
    /// records (a copy of the words as of the last delta, and a flag per cache line).
    pub local_bits: u64,
}

/// One worker's statistics for one epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// The epoch.
    pub epoch: u64,
    /// The worker.
    pub worker: u32,
    /// The worker's local index during the epoch.
    pub local: LocalStats,
    /// Occupancy of each merged level of the epoch's partition.
    pub levels: Vec<LevelStats>,
    /// Bits of merged state this worker holds (all partitions).
    pub merged_bits: u64,
    /// Delta bytes received from other workers for this epoch.
    pub bytes_received: u64,
    /// Sharded placement: bytes of other workers' queries this worker evaluated and of the
    /// replies it sent back, and of the digest updates it broadcast, since its previous stats
    /// record (serialized sizes; 0 when replicated, where queries stay on their worker and the
    /// digest is local). Queries answered after a worker's last merged epoch are in no record.
    #[serde(default)]
    pub query_bytes_received: u64,
    /// See [`Self::query_bytes_received`].
    #[serde(default)]
    pub query_bytes_sent: u64,
    /// Delta words or shipped records refused on merge (a configuration mismatch between
    /// workers).
    pub refused_words: u64,
    /// Queries waiting for later epochs when this epoch was merged.
    pub queries_held: u64,
    /// Shipments of later epochs waiting to be merged when this epoch was merged.
    pub shipments_held: u64,
}
