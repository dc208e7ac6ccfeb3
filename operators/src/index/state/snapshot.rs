//! The merged state's words as a checkpoint keeps them, and back.

use super::MergedState;
use crate::checkpoint::CheckpointError;
use chronobloom_core::bits::LineWords;
use chronobloom_core::temporal::Allocation;
use serde::{Deserialize, Serialize};

/// The words a worker holds of every partition, with the partitions' allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MergedSnapshot {
    /// `(partition, allocation, the held words of each level)`.
    partitions: Vec<(u64, Allocation, Vec<Vec<u64>>)>,
}

/// [`MergedSnapshot`] borrowed from the running state (serializes identically).
#[derive(Serialize)]
pub(crate) struct MergedSnapshotRef<'a> {
    partitions: Vec<(u64, &'a Allocation, Vec<&'a [u64]>)>,
}

impl MergedState {
    /// [`Self::export`] without copying the words.
    pub(crate) fn export_ref(&self) -> MergedSnapshotRef<'_> {
        MergedSnapshotRef {
            partitions: self
                .partitions
                .iter()
                .map(|(&p, s)| {
                    (
                        p,
                        &s.allocation,
                        s.levels.iter().map(|l| l.words.as_slice()).collect(),
                    )
                })
                .collect(),
        }
    }

    /// The held words of every partition.
    pub(crate) fn export(&self) -> MergedSnapshot {
        MergedSnapshot {
            partitions: self
                .partitions
                .iter()
                .map(|(&p, s)| {
                    let words = s.levels.iter().map(|l| l.words.to_vec()).collect();
                    (p, s.allocation.clone(), words)
                })
                .collect(),
        }
    }

    /// Rebuilds a fresh state's partitions from a snapshot: each partition is created with its
    /// allocation as a merge would, and its words must have exactly the shard's lengths.
    pub(crate) fn import(&mut self, snap: MergedSnapshot) -> Result<(), CheckpointError> {
        for (p, allocation, levels) in snap.partitions {
            let refuse = |reason: String| {
                Err(CheckpointError::state(
                    "merged index",
                    format!("partition {p}: {reason}"),
                ))
            };
            if !self.config.fits(&allocation) || !self.announce(p, &allocation) {
                return refuse("its allocation does not fit the configuration".into());
            }
            let Some(part) = self.partitions.get_mut(&p) else {
                return refuse("not created".into());
            };
            if part.allocation != allocation || part.levels.len() != levels.len() {
                return refuse(format!(
                    "{} levels checkpointed, {} expected",
                    levels.len(),
                    part.levels.len()
                ));
            }
            for (l, (level, words)) in part.levels.iter_mut().zip(levels).enumerate() {
                if level.words.len() != words.len() {
                    return refuse(format!(
                        "level {l} has {} words, this worker holds {}",
                        words.len(),
                        level.words.len()
                    ));
                }
                level.ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
                level.words = LineWords::copied(&words);
            }
        }
        self.clear_dirty();
        Ok(())
    }
}
