//! Checkpointing the dedup operator: its window state at a boundary, as bytes, and back.

use crate::checkpoint::{from_bytes, to_bytes, CheckpointError};
use crate::dedup::stats::DedupStats;
use crate::dedup::view::WindowView;
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::TaggedCuckooFilter;
use serde::{Deserialize, Serialize};

/// One worker's dedup state at a checkpoint boundary: its shards' compact filters and the
/// other workers' keys not yet inserted (`Local`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DedupSnapshot {
    /// Every record before this tick is in the state, none after.
    pub boundary: Tick,
    pub(super) shards: Vec<Option<TaggedCuckooFilter>>,
    pub(super) view: Option<WindowView>,
    pub(super) unplaced: u64,
    /// Epochs open at the boundary (view deltas received for them): `(epoch, stats, bytes in)`.
    pub(super) carried: Vec<(u64, DedupStats, u64)>,
}

impl DedupSnapshot {
    /// Decodes a snapshot written by [`DedupCheckpoint::snapshot`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        from_bytes("dedup", bytes)
    }

    /// Encodes the snapshot.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        to_bytes("dedup", self)
    }
}

/// A handle on a running dedup operator's state, for checkpoints (see [`crate::checkpoint`]).
pub struct DedupCheckpoint {
    pub(super) export: Box<dyn Fn(Tick) -> Result<DedupSnapshot, CheckpointError>>,
}

impl DedupCheckpoint {
    /// The operator's state at `boundary`: call it once the worker's probe has passed
    /// `boundary` and no record at or after it was sent; refused otherwise, and (`Local`) while
    /// other workers' view deltas up to the boundary may be in flight: step the worker and ask
    /// again.
    pub fn snapshot(&self, boundary: Tick) -> Result<DedupSnapshot, CheckpointError> {
        (self.export)(boundary)
    }
}

impl std::fmt::Debug for DedupCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DedupCheckpoint")
    }
}
