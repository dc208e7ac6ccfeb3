//! The global view of [`crate::DedupMode::Local`]: other workers' keys of closed epochs, waiting to
//! be inserted into this worker's tick filters in epoch order.
//!
//! When every tick of an epoch is decided, a worker ships the 64-bit fingerprints of the keys it
//! inserted during the epoch to every other worker ([`ViewDelta`]); a key whose cells the epoch's
//! earlier inserts had all set already is not shipped (the receiver gets those cells from the
//! earlier keys). The receiver buffers them here and inserts epoch `e`'s fingerprints at `e`'s
//! last tick just before it decides the first tick of a later epoch ([`WindowView::take_before`]),
//! so a tick's decision depends only on closed epochs, however early a fast peer's delta arrives.
//! Inserting at the epoch's last tick gives the view its epoch granularity: a key another worker
//! saw in epoch `e` is live for ticks `t` with `last(e) > t - W`.

use std::collections::BTreeMap;

/// One worker's keys of one closed epoch, on their way to one other worker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ViewDelta {
    /// The closed epoch.
    pub epoch: u64,
    /// The sending worker.
    pub from: u32,
    /// The receiving worker.
    pub dest: u32,
    /// Fingerprints ([`chronobloom_core::hash::KeyHash::lo`]) of the keys the sender inserted.
    pub keys: Vec<u64>,
}

impl ViewDelta {
    /// Bytes on the wire: 8 per fingerprint.
    pub fn wire_bytes(&self) -> u64 {
        self.keys.len() as u64 * 8
    }
}

/// Received fingerprints of closed epochs not yet inserted.
///
/// ```
/// use chronobloom_operators::dedup::view::{ViewDelta, WindowView};
///
/// let mut view = WindowView::default();
/// assert!(view.merge(ViewDelta { epoch: 2, from: 1, dest: 0, keys: vec![7, 9] }));
/// assert!(view.merge(ViewDelta { epoch: 3, from: 1, dest: 0, keys: vec![8] }));
/// assert_eq!(view.pending_keys(), 3);
/// // deciding a tick of epoch 3 first inserts epoch 2
/// assert_eq!(view.take_before(3), vec![(2, vec![7, 9])]);
/// // a delta for an epoch already inserted is refused
/// assert!(!view.merge(ViewDelta { epoch: 1, from: 1, dest: 0, keys: vec![5] }));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WindowView {
    pending: BTreeMap<u64, Vec<u64>>,
    /// Epochs before this one were taken.
    taken: u64,
}

impl WindowView {
    /// Buffers a delta; false (and nothing kept) when its epoch was taken already, the sign of a
    /// peer that does not follow the protocol.
    pub fn merge(&mut self, delta: ViewDelta) -> bool {
        if delta.epoch < self.taken {
            return false;
        }
        let keys = self.pending.entry(delta.epoch).or_default();
        if keys.is_empty() {
            *keys = delta.keys;
        } else {
            keys.extend_from_slice(&delta.keys);
        }
        true
    }

    /// Removes and returns the buffered epochs before `epoch`, oldest first.
    pub fn take_before(&mut self, epoch: u64) -> Vec<(u64, Vec<u64>)> {
        self.taken = self.taken.max(epoch);
        let later = self.pending.split_off(&epoch);
        std::mem::replace(&mut self.pending, later)
            .into_iter()
            .collect()
    }

    /// Fingerprints buffered.
    pub fn pending_keys(&self) -> u64 {
        self.pending.values().map(|k| k.len() as u64).sum()
    }

    /// Buffered epochs with their fingerprint counts.
    pub fn pending_epochs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.pending.iter().map(|(&e, k)| (e, k.len() as u64))
    }
}
