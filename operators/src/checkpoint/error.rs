//! What can go wrong reading, writing or restoring a checkpoint.

use std::path::PathBuf;
use thiserror::Error;

/// A checkpoint file or directory that cannot be used, or state that cannot be restored.
///
/// Every variant names the file (or the operator) and what was expected, so the message can be
/// shown to a user as is; none of them leaves a partly restored filter behind.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Reading, writing, renaming or syncing a file failed.
    #[error("checkpoint file {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with the checkpoint magic: not a chronobloom checkpoint.
    #[error("{path} is not a chronobloom checkpoint (no `CHRBLMCP` header)")]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// The file was written by a format version this build does not read.
    #[error("{path}: checkpoint format version {found}, this build reads version {supported}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u16,
        /// The version this build reads and writes.
        supported: u16,
    },
    /// The file ends before its header or payload does.
    #[error("{path} is truncated: {len} bytes, {expected} needed")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes in the file.
        len: u64,
        /// Bytes its header announces (at least).
        expected: u64,
    },
    /// The checksum does not match: the file was corrupted after it was written.
    #[error("{path} is corrupted: checksum {found:#018x}, expected {expected:#018x}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The checksum stored in the file.
        found: u64,
        /// The checksum of the bytes read.
        expected: u64,
    },
    /// A valid file that belongs to another checkpoint, worker, worker count or job.
    #[error("{path} belongs elsewhere: {what} is {found}, this job expects {expected}")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The header field that differs.
        what: &'static str,
        /// The value in the file.
        found: String,
        /// The value this job expects.
        expected: String,
    },
    /// The payload decoded but does not fit the operator's configuration, or did not decode.
    #[error("checkpointed state of {operator} cannot be restored: {reason}")]
    State {
        /// The operator or part.
        operator: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// State was requested while the operator still held records or epochs before the boundary.
    #[error(
        "{operator} is not quiescent at tick {boundary}: {reason}; checkpoint only once the \
         probe has passed the boundary and no input beyond it was sent"
    )]
    NotQuiescent {
        /// The operator.
        operator: &'static str,
        /// The checkpoint boundary.
        boundary: u64,
        /// What it still holds.
        reason: String,
    },
}

impl CheckpointError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CheckpointError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn state(operator: &'static str, reason: impl Into<String>) -> Self {
        CheckpointError::State {
            operator,
            reason: reason.into(),
        }
    }
}
