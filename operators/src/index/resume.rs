//! Checkpointing the temporal index: a worker's local filters, its share of the merged state
//! and its digest table at a boundary, as bytes, and back.

use super::digest::DigestTable;
use super::local_state::LocalState;
use super::state::{MergedSnapshot, MergedSnapshotRef, MergedState};
use crate::checkpoint::{from_bytes, to_bytes, CheckpointError, CheckpointStore, Header};
use chronobloom_core::temporal::{Allocation, Pbf2, Tick};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

/// A worker's local index at a boundary: its per-partition filters and their allocations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct LocalSnapshot {
    pub filters: BTreeMap<u64, Pbf2>,
    pub announcements: BTreeMap<u64, Allocation>,
    pub resolved: BTreeMap<u64, Allocation>,
    pub shipped: Option<u64>,
}

/// One worker's temporal index state at a checkpoint boundary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexSnapshot {
    /// Every record before this tick is in the state, none after.
    pub boundary: Tick,
    local: LocalSnapshot,
    merged: MergedSnapshot,
    digest: DigestTable,
}

impl IndexSnapshot {
    /// Decodes a snapshot written by [`IndexCheckpoint::snapshot`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        from_bytes("index", bytes)
    }

    /// Encodes the snapshot.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        to_bytes("index", self)
    }
}

/// The index's three pieces of per-worker state, shared with its operators.
#[derive(Clone)]
pub(super) struct IndexCells {
    pub local: Rc<RefCell<LocalState>>,
    pub merged: Rc<RefCell<MergedState>>,
    pub digest: Rc<RefCell<DigestTable>>,
}

impl IndexCells {
    /// Fresh state, or `restore`'s after checking it fits.
    pub fn new(
        local: LocalState,
        merged: MergedState,
        restore: Option<IndexSnapshot>,
    ) -> Result<Self, CheckpointError> {
        let (mut local, mut merged) = (local, merged);
        let mut digest = DigestTable::default();
        if let Some(snap) = restore {
            local.import(snap.local)?;
            merged.import(snap.merged)?;
            snap.digest
                .check()
                .map_err(|e| CheckpointError::state("index digest", e))?;
            digest = snap.digest;
        }
        Ok(IndexCells {
            local: Rc::new(RefCell::new(local)),
            merged: Rc::new(RefCell::new(merged)),
            digest: Rc::new(RefCell::new(digest)),
        })
    }
}

/// [`LocalSnapshot`] borrowed from the running state (serializes identically).
#[derive(Serialize)]
pub(super) struct LocalSnapshotRef<'a> {
    pub filters: &'a BTreeMap<u64, Pbf2>,
    pub announcements: &'a BTreeMap<u64, Allocation>,
    pub resolved: &'a BTreeMap<u64, Allocation>,
    pub shipped: Option<u64>,
}

/// [`IndexSnapshot`] borrowed from the running state (serializes identically).
#[derive(Serialize)]
struct IndexSnapshotRef<'a> {
    boundary: Tick,
    local: LocalSnapshotRef<'a>,
    merged: MergedSnapshotRef<'a>,
    digest: &'a DigestTable,
}

/// A handle on a running temporal index's state, for checkpoints (see [`crate::checkpoint`]).
pub struct IndexCheckpoint {
    pub(super) cells: IndexCells,
}

impl IndexCheckpoint {
    /// The index's state at `boundary`: call it once the worker's probe has passed `boundary`
    /// and no record at or after it was sent; refused while an epoch is open.
    pub fn snapshot(&self, boundary: Tick) -> Result<IndexSnapshot, CheckpointError> {
        Ok(IndexSnapshot {
            boundary,
            local: self.cells.local.borrow().export(boundary)?,
            merged: self.cells.merged.borrow().export(),
            digest: self.cells.digest.borrow().clone(),
        })
    }

    /// [`Self::snapshot`]`(boundary)?.to_bytes()`, serialized straight from the running state
    /// (no copy of the filters first).
    pub fn snapshot_bytes(&self, boundary: Tick) -> Result<Vec<u8>, CheckpointError> {
        self.with_view(boundary, |view| to_bytes("index", view))
    }

    /// Writes the state at `header.boundary` to `store` as the file [`CheckpointStore::write`]
    /// would write for [`Self::snapshot_bytes`], serialized straight from the running state into
    /// the file: neither a copy of the filters nor the payload is held in memory.
    pub fn write(
        &self,
        store: &CheckpointStore,
        header: &Header,
    ) -> Result<PathBuf, CheckpointError> {
        self.with_view(header.boundary, |view| {
            store.write_state(header, "index", view)
        })
    }

    /// `f` of the state at `boundary`, borrowed from the running state.
    fn with_view<R>(
        &self,
        boundary: Tick,
        f: impl FnOnce(&IndexSnapshotRef<'_>) -> Result<R, CheckpointError>,
    ) -> Result<R, CheckpointError> {
        let local = self.cells.local.borrow();
        let merged = self.cells.merged.borrow();
        let digest = self.cells.digest.borrow();
        f(&IndexSnapshotRef {
            boundary,
            local: local.export_ref(boundary)?,
            merged: merged.export_ref(),
            digest: &digest,
        })
    }
}

impl std::fmt::Debug for IndexCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IndexCheckpoint")
    }
}
