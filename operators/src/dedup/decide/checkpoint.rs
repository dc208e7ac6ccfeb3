//! A worker's dedup state to and from a checkpoint: what a snapshot keeps at a boundary
//! (refused while anything before it is held), and the restore into a fresh state.

use super::DecideState;
use crate::checkpoint::CheckpointError;
use crate::dedup::resume::{DedupSnapshot, DedupSnapshotRef, Export};
use chronobloom_core::temporal::Tick;
use timely::dataflow::operators::Capability;
use timely::ExchangeData;

impl<D: ExchangeData> DecideState<D> {
    /// Replaces the (fresh) state with a checkpoint's, after checking it fits the configuration
    /// and worker count.
    pub fn import(&mut self, snap: DedupSnapshot) -> Result<(), CheckpointError> {
        let refuse = |reason: String| Err(CheckpointError::state("dedup", reason));
        if snap.shards.len() != self.shards.len() {
            return refuse(format!(
                "{} shards checkpointed, the configuration has {}",
                snap.shards.len(),
                self.shards.len()
            ));
        }
        if snap.view.is_some() != self.view.is_some() {
            return refuse("the global view does not match the mode and worker count".into());
        }
        for f in snap.shards.iter().flatten() {
            if let Err(reason) = f.fits(&self.config) {
                return refuse(reason);
            }
        }
        self.shards = snap.shards;
        self.view = snap.view;
        self.unplaced = snap.unplaced;
        self.carried = snap.carried;
        Ok(())
    }

    /// Reopens the epochs a restored checkpoint carried, with capabilities made by `cap` at
    /// their last ticks (called once, when the operator is built).
    pub fn reopen(&mut self, mut cap: impl FnMut(Tick) -> Capability<u64>) {
        for (e, stats, bytes_in) in std::mem::take(&mut self.carried) {
            let last = self.config.epoch_last(e);
            let epoch = self.open_epoch(e, || cap(last));
            epoch.stats = stats;
            epoch.bytes_in = bytes_in;
        }
    }
}

impl<D> Export for DecideState<D> {
    /// The state a checkpoint at `boundary` keeps (see [`crate::checkpoint`]), borrowed: refused
    /// while an epoch before the boundary is buffered or its statistics are not out.
    fn export(&self, boundary: Tick) -> Result<DedupSnapshotRef<'_>, CheckpointError> {
        let held = |what: &str, e: Option<u64>| CheckpointError::NotQuiescent {
            operator: "dedup",
            boundary,
            reason: format!("{what} of epoch {} still held", e.unwrap_or(0)),
        };
        if !self.pending.is_empty() {
            return Err(held("records", self.pending.keys().next().copied()));
        }
        if let Some(&e) = self.outgoing.keys().next() {
            return Err(held("a view delta", Some(e)));
        }
        // Epochs at or after the boundary may be open with the bytes of view deltas received
        // for them (`Local`); their statistics are carried over.
        if self.view.is_some() && self.delta_frontier <= boundary {
            return Err(CheckpointError::NotQuiescent {
                operator: "dedup",
                boundary,
                reason: "view deltas up to the boundary may still be in flight".into(),
            });
        }
        let first = self.config.epoch_of(boundary);
        if let Some(&e) = self.epochs.keys().next().filter(|&&e| e < first) {
            return Err(held("statistics", Some(e)));
        }
        let carried = self
            .epochs
            .iter()
            .map(|(&e, o)| (e, o.stats.clone(), o.bytes_in))
            .collect();
        let shards = self.shards.iter().map(Option::as_ref).collect();
        Ok(DedupSnapshotRef {
            boundary,
            shards,
            view: self.view.as_ref(),
            unplaced: self.unplaced,
            carried,
        })
    }
}
