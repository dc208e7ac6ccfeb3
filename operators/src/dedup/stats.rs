//! Per-epoch, per-worker statistics of the dedup operator ([`crate::Dedup`]).
//!
//! A worker emits one [`DedupStats`] for every epoch in which it received records or view deltas,
//! at the least timestamp of the epoch's records (at most its last tick), once they are decided.
//! No record can be refused: every `u64` tick and every key is valid, so nothing a user sends is
//! dropped for a reason other than being a (possible) duplicate. What can be refused is a view
//! delta for an epoch this worker has inserted already, from a peer that does not follow the
//! protocol ([`DedupStats::refused_deltas`]).

use super::config::DedupMode;
use serde::{Deserialize, Serialize};

/// Which part of a worker's state a [`SliceStats`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Slice {
    /// A key shard of the worker's own filters.
    Shard(u32),
    /// A closed epoch's keys received from other workers and not yet inserted into the shards
    /// ([`crate::DedupMode::Local`]).
    ViewEpoch(u64),
}

/// Occupancy of one slice when the stats were taken.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SliceStats {
    /// The slice.
    pub slice: Slice,
    /// Bits the slice holds (512 per line of cells for a shard, 64 per received key for a view
    /// epoch).
    pub bits: u64,
    /// Fraction of cells live in the window ending at the epoch's last tick (shards, sampled from
    /// 32 lines); 0 for view epochs, which answer nothing until inserted.
    pub fill: f64,
    /// False positive rate of one query estimated from the sampled lines: the mean of
    /// `(live fraction of a line)^k`; 0 for view epochs.
    pub estimated_fpr: f64,
}

/// What one worker's dedup operator did during one epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DedupStats {
    /// The epoch.
    pub epoch: u64,
    /// The worker.
    pub worker: u32,
    /// The routing mode.
    pub mode: DedupMode,
    /// Records decided by this worker with ticks in the epoch.
    pub records: u64,
    /// Of `records`, those whose tick was below their timestamp (the watermark): decided at
    /// their timestamp.
    #[serde(default)]
    pub late: u64,
    /// Records passed (first occurrence of their key in the window, up to false positives).
    pub passed: u64,
    /// Records dropped as duplicates (including false positives).
    pub dropped: u64,
    /// Of `dropped`, records whose key another record of the same tick on this worker also had
    /// (exact: decided by the 128-bit key hash).
    pub dropped_same_tick: u64,
    /// Records of later epochs waiting for the frontier when the stats were taken.
    pub records_buffered: u64,
    /// Bits held by the worker's shard filters (in `Local` they hold the global view too).
    pub local_bits: u64,
    /// Keys the worker's compact shard filters hold live (distinct keys of the window and the
    /// slack, counted by the last sweep plus new keys since); 0 with the exact edge, whose
    /// cells do not count keys.
    pub keys: u64,
    /// Bits of received keys of closed epochs not yet inserted (`Local`).
    pub view_bits: u64,
    /// Occupancy per shard and per view epoch.
    pub slices: Vec<SliceStats>,
    /// Estimated false positive rate of a query at the epoch's last tick: the mean over the
    /// worker's shards.
    pub estimated_fpr: f64,
    /// Bytes this worker sent other workers for this epoch: records routed by key (`ByKey`,
    /// serialized `(tick, record)` pairs), or the fingerprints of the keys it inserted in
    /// the epoch (`Local`, 8 bytes per key per destination).
    pub bytes_sent: u64,
    /// Bytes received from other workers: records routed here (`ByKey`), or the previous epoch's
    /// fingerprints, which this epoch's ticks consult (`Local`).
    pub bytes_received: u64,
    /// View deltas refused because their epoch was inserted already.
    pub refused_deltas: u64,
    /// The slack `S` of the window state, in ticks: keys last seen `W` to `W + S − 1` ticks
    /// before a record may still count as seen (0 with the exact edge).
    pub slack: u64,
    /// Keys that could not be inserted because their tick was before an earlier insertion's
    /// generation (never in a run that follows the protocol; counted, not dropped silently:
    /// their records were decided).
    pub unplaced: u64,
}

impl DedupStats {
    /// Empty stats of `epoch` for `worker`.
    pub fn new(epoch: u64, worker: u32, mode: DedupMode) -> Self {
        DedupStats {
            epoch,
            worker,
            mode,
            records: 0,
            late: 0,
            passed: 0,
            dropped: 0,
            dropped_same_tick: 0,
            records_buffered: 0,
            local_bits: 0,
            view_bits: 0,
            slices: Vec::new(),
            estimated_fpr: 0.0,
            bytes_sent: 0,
            bytes_received: 0,
            refused_deltas: 0,
            keys: 0,
            slack: 0,
            unplaced: 0,
        }
    }
}
