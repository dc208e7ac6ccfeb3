//! Checkpointing the allocator: the partitions a worker is still sketching (their sketches and
//! statistics so far) and, on worker 0, how far the solver has decided and the sketches it holds.

use super::solve::Merged;
use super::{Open, PartitionSketch, Partitions, SketchStats};
use crate::checkpoint::{from_bytes, to_bytes, CheckpointError};
use crate::error::{Error, Result};
use chronobloom_core::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// A partition still open on a worker at a boundary: what it has sketched so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct OpenPart {
    pub sketch: Option<PartitionSketch>,
    pub stats: SketchStats,
}

/// Worker 0's solver: the next partition whose allocation is undecided, and the merged sketches
/// of closed partitions not yet used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct SolverState {
    pub next: u64,
    pub merged: BTreeMap<u64, Merged>,
}

/// One worker's allocator state at a checkpoint boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocatorSnapshot {
    /// Every record and query before this tick is in the state, none after.
    pub boundary: Tick,
    open: BTreeMap<u64, OpenPart>,
    solver: Option<SolverState>,
}

impl AllocatorSnapshot {
    /// Decodes a snapshot written by [`AllocatorCheckpoint::snapshot`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        from_bytes("allocator", bytes)
    }

    /// Encodes the snapshot.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        to_bytes("allocator", self)
    }

    /// The open partitions and the solver state, checked against this worker and the
    /// configuration: `empty` is the sketch the configuration makes.
    pub(super) fn restore(
        self,
        me: u32,
        parts: Partitions,
        empty: &PartitionSketch,
    ) -> Result<(BTreeMap<u64, OpenPart>, Option<SolverState>)> {
        let mismatch = |reason: String| Error::config("allocator", "restore", reason);
        let refuse = |reason: String| Err(mismatch(reason));
        if self.solver.is_some() != (me == 0) {
            return refuse(format!(
                "the snapshot {} the solver's state, and this is worker {me}",
                if self.solver.is_some() {
                    "holds"
                } else {
                    "lacks"
                }
            ));
        }
        let closed = parts.of(self.boundary);
        for (&p, part) in &self.open {
            if p < closed || p >= parts.count || part.stats.partition != p {
                return refuse(format!(
                    "open partition {p} is closed at tick {}, past the horizon or mislabelled",
                    self.boundary
                ));
            }
            if part.stats.worker != me {
                return refuse(format!(
                    "partition {p} was sketched by worker {}, not {me}",
                    part.stats.worker
                ));
            }
            if let Some(sketch) = &part.sketch {
                empty
                    .clone()
                    .merge(sketch)
                    .map_err(|e| mismatch(format!("partition {p}'s sketch: {e}")))?;
            }
        }
        if let Some(solver) = &self.solver {
            if solver.next > parts.count || solver.merged.keys().any(|&p| p >= parts.count) {
                return refuse("the solver's partitions are past the horizon".to_owned());
            }
            for (p, (sketch, _, _)) in &solver.merged {
                empty
                    .clone()
                    .merge(sketch)
                    .map_err(|e| mismatch(format!("merged sketch of partition {p}: {e}")))?;
            }
        }
        Ok((self.open, self.solver))
    }
}

/// A handle on a running allocator's state, for checkpoints (see [`crate::checkpoint`]).
pub struct AllocatorCheckpoint {
    pub(super) open: Rc<RefCell<BTreeMap<u64, Open>>>,
    pub(super) solver: Option<Rc<RefCell<SolverState>>>,
    pub(super) parts: Partitions,
}

impl AllocatorCheckpoint {
    /// The allocator's state at `boundary`: call it once the worker's probe (downstream of the
    /// allocations) has passed `boundary` and no record or query at or after it was sent;
    /// refused while a partition closed by the boundary is still open.
    pub fn snapshot(&self, boundary: Tick) -> Result<AllocatorSnapshot, CheckpointError> {
        let closed = self.parts.of(boundary);
        let open = self.open.borrow();
        if let Some(&p) = open.keys().find(|&&p| p < closed) {
            return Err(CheckpointError::NotQuiescent {
                operator: "allocator",
                boundary,
                reason: format!("partition {p} is closed by the boundary but not yet sent"),
            });
        }
        Ok(AllocatorSnapshot {
            boundary,
            open: open
                .iter()
                .map(|(&p, o)| {
                    let part = OpenPart {
                        sketch: o.sketch.clone(),
                        stats: o.stats.clone(),
                    };
                    (p, part)
                })
                .collect(),
            solver: self.solver.as_ref().map(|s| s.borrow().clone()),
        })
    }
}

impl std::fmt::Debug for AllocatorCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AllocatorCheckpoint")
    }
}
