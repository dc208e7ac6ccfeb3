//! Checkpoints: operator state written at epoch boundaries and restored into a new dataflow.
//!
//! Timely has no checkpointing of its own. A checkpoint here is taken at a **boundary** tick `T`
//! (an epoch's first tick) by the driver of the dataflow, on every worker:
//!
//! 1. the inputs are advanced to `T` and nothing at or after `T` is sent;
//! 2. the worker steps until its probe has passed `T`: every record before `T` is decided,
//!    indexed and merged, every output before `T` is out, and nothing after `T` has entered;
//! 3. each resumable operator's handle ([`DedupCheckpoint`](crate::dedup::DedupCheckpoint),
//!    [`IndexCheckpoint`](crate::index::IndexCheckpoint)) returns its state as bytes, refusing
//!    ([`CheckpointError::NotQuiescent`]) if anything before `T` is still held;
//! 4. the bytes go to a [`CheckpointStore`] as one file per part per worker ([`format`](mod@format): magic,
//!    version, header, payload, checksum), written atomically.
//!
//! A checkpoint is **complete** when every worker's every part exists and verifies. A job
//! resumes from the newest complete one: it rebuilds its dataflow with the restored state,
//! advances its inputs to `T` and replays its sources from the positions saved with the state.
//! Files of another job (configuration fingerprint) or worker count are refused with
//! [`CheckpointError::Mismatch`]; a corrupted, truncated or foreign file is refused with its own
//! variant, never restored.

mod error;
pub mod format;
mod store;
mod stream;

pub use error::CheckpointError;
pub use format::{decode, encode, Header};
pub use store::{CheckpointStore, Scan};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Serializes checkpointed state (bincode, fixed little-endian byte order).
pub fn to_bytes<T: Serialize>(
    operator: &'static str,
    state: &T,
) -> Result<Vec<u8>, CheckpointError> {
    bincode::serialize(state).map_err(|e| CheckpointError::state(operator, e.to_string()))
}

/// Deserializes checkpointed state written by [`to_bytes`], refusing trailing bytes.
pub fn from_bytes<T: DeserializeOwned>(
    operator: &'static str,
    bytes: &[u8],
) -> Result<T, CheckpointError> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(bytes.len() as u64 * 8 + 1024)
        .deserialize(bytes)
        .map_err(|e| CheckpointError::state(operator, format!("payload does not decode: {e}")))
}
