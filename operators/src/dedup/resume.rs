//! Checkpointing the dedup operator: its window state at a boundary, as bytes, and back.

use crate::checkpoint::{from_bytes, to_bytes, CheckpointError, CheckpointStore, Header};
use crate::dedup::shard::ShardFilter;
use crate::dedup::stats::DedupStats;
use crate::dedup::view::WindowView;
use chronobloom_core::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

/// One worker's dedup state at a checkpoint boundary: its shards' filters (compact or exact-edge)
/// and the other workers' keys not yet inserted (`Local`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DedupSnapshot {
    /// Every record before this tick is in the state, none after.
    pub boundary: Tick,
    pub(super) shards: Vec<Option<ShardFilter>>,
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

/// [`DedupSnapshot`] borrowed from the running state (serializes identically).
#[derive(Serialize)]
pub(super) struct DedupSnapshotRef<'a> {
    pub boundary: Tick,
    pub shards: Vec<Option<&'a ShardFilter>>,
    pub view: Option<&'a WindowView>,
    pub unplaced: u64,
    pub carried: Vec<(u64, DedupStats, u64)>,
}

impl DedupSnapshotRef<'_> {
    /// A copy of the borrowed state.
    fn into_owned(self) -> DedupSnapshot {
        DedupSnapshot {
            boundary: self.boundary,
            shards: self.shards.into_iter().map(Option::<&_>::cloned).collect(),
            view: self.view.cloned(),
            unplaced: self.unplaced,
            carried: self.carried,
        }
    }
}

/// A worker's dedup state, whatever its records' type: what a checkpoint at a boundary keeps.
pub(super) trait Export {
    /// The state at `boundary`, borrowed; refused as [`DedupCheckpoint::snapshot`] describes.
    fn export(&self, boundary: Tick) -> Result<DedupSnapshotRef<'_>, CheckpointError>;
}

/// A handle on a running dedup operator's state, for checkpoints (see [`crate::checkpoint`]).
pub struct DedupCheckpoint {
    pub(super) state: Rc<RefCell<dyn Export>>,
}

impl DedupCheckpoint {
    /// The operator's state at `boundary`: call it once the worker's probe has passed
    /// `boundary` and no record at or after it was sent; refused otherwise, and (`Local`) while
    /// other workers' view deltas up to the boundary may be in flight: step the worker and ask
    /// again.
    pub fn snapshot(&self, boundary: Tick) -> Result<DedupSnapshot, CheckpointError> {
        self.state
            .borrow()
            .export(boundary)
            .map(DedupSnapshotRef::into_owned)
    }

    /// Whether [`Self::snapshot`]`(boundary)` would succeed (the reason if not), without copying
    /// the state.
    pub fn ready(&self, boundary: Tick) -> Result<(), CheckpointError> {
        self.state.borrow().export(boundary).map(drop)
    }

    /// Writes the state at `header.boundary` to `store` as the file [`CheckpointStore::write`]
    /// would write for [`Self::snapshot`]'s bytes ([`DedupSnapshot::to_bytes`]), serialized
    /// straight from the running state: neither a copy of the filters nor the payload is held
    /// in memory. Refused as [`Self::snapshot`] is.
    pub fn write(
        &self,
        store: &CheckpointStore,
        header: &Header,
    ) -> Result<PathBuf, CheckpointError> {
        let state = self.state.borrow();
        store.write_state(header, "dedup", &state.export(header.boundary)?)
    }
}

impl std::fmt::Debug for DedupCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DedupCheckpoint")
    }
}
