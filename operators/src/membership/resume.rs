//! Checkpointing the window membership operator: at an epoch boundary that every input has
//! passed, a worker's whole state is its copy of the merged view (nothing is collected, in
//! flight or held), so that is what a snapshot holds.

use crate::checkpoint::{from_bytes, to_bytes, CheckpointError};
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::GenerationSlices;
use serde::{Deserialize, Serialize};

/// One worker's membership state at a checkpoint boundary: its copy of the merged view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembershipSnapshot {
    /// Every insert and query before this tick is in the state (or answered), none after.
    pub boundary: Tick,
    pub(super) view: GenerationSlices,
}

impl MembershipSnapshot {
    /// Decodes a snapshot written by [`MembershipCheckpoint::snapshot`]'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        from_bytes("membership", bytes)
    }

    /// Encodes the snapshot.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        to_bytes("membership", self)
    }
}

/// What the operator's parts report to a snapshot: `Err(reason)` while they hold anything.
pub(super) type Export = Box<dyn Fn(Tick) -> Result<GenerationSlices, String>>;

/// A handle on a running membership operator's state, for checkpoints (see
/// [`crate::checkpoint`]).
pub struct MembershipCheckpoint {
    pub(super) epoch_len: Tick,
    pub(super) export: Export,
}

impl MembershipCheckpoint {
    /// The view at `boundary`, an epoch start: call it once the worker's probe has passed
    /// `boundary` and no insert or query at or after it was sent; refused while inserts are
    /// collected, shipments are in flight or queries are held.
    pub fn snapshot(&self, boundary: Tick) -> Result<MembershipSnapshot, CheckpointError> {
        if !boundary.is_multiple_of(self.epoch_len) {
            return Err(CheckpointError::state(
                "membership",
                format!(
                    "boundary {boundary} is not an epoch start (epochs of {} ticks)",
                    self.epoch_len
                ),
            ));
        }
        let view = (self.export)(boundary).map_err(|reason| CheckpointError::NotQuiescent {
            operator: "membership",
            boundary,
            reason,
        })?;
        Ok(MembershipSnapshot { boundary, view })
    }
}

impl std::fmt::Debug for MembershipCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MembershipCheckpoint")
    }
}
