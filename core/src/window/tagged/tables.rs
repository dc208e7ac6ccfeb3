//! The tables of one slot width: the active one and those drained until their entries die.

use super::any::AnyTable;
use super::list::List;
use super::table::{Slot, Table};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Tables of one slot width: the last receives insertions, the others are read until their
/// entries die.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Tables<S: Slot> {
    pub(super) tables: Vec<AnyTable<S>>,
    /// Per table but the last, the generation it stopped receiving insertions.
    pub(super) stopped: Vec<u64>,
}

/// A table of `buckets` buckets, or for 0 a list for false positive rate `fpr` (a one-bucket
/// table where ε allows too short a list).
fn table<S: Slot>(buckets: usize, fpr: f64, seed: u64) -> Result<AnyTable<S>> {
    match List::<S>::limit_for(fpr).filter(|_| buckets == 0) {
        Some(limit) => Ok(AnyTable::List(List::new(limit))),
        None => Ok(AnyTable::Cuckoo(Table::new(buckets.max(1), seed)?)),
    }
}

impl<S: Slot> Tables<S> {
    /// One table of `buckets` buckets (0: a list) for false positive rate `fpr`.
    pub(super) fn new(buckets: usize, fpr: f64, seed: u64) -> Result<Self> {
        Ok(Tables {
            tables: vec![table(buckets, fpr, seed)?],
            stopped: Vec::new(),
        })
    }

    /// The most entries a list of this slot width may hold at `fpr` (`None`: lists are not
    /// used).
    pub(super) fn list_limit(&self, fpr: f64) -> Option<u16> {
        List::<S>::limit_for(fpr)
    }

    pub(super) fn active(&self) -> &AnyTable<S> {
        &self.tables[self.tables.len() - 1]
    }

    pub(super) fn active_mut(&mut self) -> &mut AnyTable<S> {
        let last = self.tables.len() - 1;
        &mut self.tables[last]
    }

    /// Starts a new active table of `buckets` buckets (0: a list for `fpr`) in generation
    /// `gen` (nothing changes if it cannot be allocated).
    pub(super) fn start(&mut self, buckets: usize, gen: u64, fpr: f64, seed: u64) -> Result<()> {
        let table = table(buckets, fpr, seed)?;
        self.stopped.push(gen);
        self.tables.push(table);
        Ok(())
    }

    /// Replaces the active table with `table` (the old one is dropped, not drained).
    pub(super) fn replace_active(&mut self, table: Table<S>) {
        *self.active_mut() = AnyTable::Cuckoo(table);
    }

    /// Drops each drained table with no live entry (tags in `live`): it answers nothing and
    /// receives nothing, and one stopped `L` generations ago has none left. Repacks the others
    /// whose live entries fit fewer slots a bucket; returns how many were repacked.
    pub(super) fn repack_drained(&mut self, live: u32) -> u64 {
        let mut repacked = 0;
        let mut i = 0;
        while i < self.stopped.len() {
            if self.tables[i].live(live) == 0 {
                self.stopped.remove(i);
                self.tables.remove(i);
                continue;
            }
            if let Some(t) = self.tables[i].repacked(live) {
                self.tables[i] = t;
                repacked += 1;
            }
            i += 1;
        }
        repacked
    }

    /// Clears the `dead` tags from every table; returns the entries left.
    pub(super) fn sweep(&mut self, dead: u32) -> u64 {
        self.tables.iter_mut().map(|t| t.sweep(dead)).sum()
    }

    /// Clears the `dead` tags from the lists only: their dead entries hold memory, and a pass
    /// over a few dozen entries costs nothing.
    pub(super) fn sweep_lists(&mut self, dead: u32) {
        for t in self.tables.iter_mut().filter(|t| t.is_list()) {
            t.sweep(dead);
        }
    }

    /// Empties the filter: one table of `buckets` buckets (0: a list), as a new filter has
    /// (nothing changes if it cannot be allocated).
    pub(super) fn reset(&mut self, buckets: usize, fpr: f64, seed: u64) -> Result<()> {
        *self = Tables::new(buckets, fpr, seed)?;
        Ok(())
    }

    pub(super) fn occupancy(&self) -> (f64, f64) {
        let (mut occupied, mut slots, mut fpr) = (0u64, 0u64, 0.0);
        for t in &self.tables {
            let (o, s, f) = t.fill();
            occupied += o;
            slots += s;
            fpr += f;
        }
        (occupied as f64 / slots.max(1) as f64, fpr)
    }
}
