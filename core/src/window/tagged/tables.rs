//! The tables of one slot width: the active one and those drained until their entries die.

use super::table::{Slot, Table, SLOTS};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Tables of one slot width: the last receives insertions, the others are read until their
/// entries die.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Tables<S: Slot> {
    pub(super) tables: Vec<Table<S>>,
    /// Per table but the last, the generation it stopped receiving insertions.
    pub(super) stopped: Vec<u64>,
}

impl<S: Slot> Tables<S> {
    pub(super) fn new(buckets: usize, seed: u64) -> Result<Self> {
        Ok(Tables {
            tables: vec![Table::new(buckets, seed)?],
            stopped: Vec::new(),
        })
    }

    pub(super) fn active(&self) -> &Table<S> {
        &self.tables[self.tables.len() - 1]
    }

    pub(super) fn active_mut(&mut self) -> &mut Table<S> {
        let last = self.tables.len() - 1;
        &mut self.tables[last]
    }

    /// Starts a new active table (nothing changes if it cannot be allocated).
    pub(super) fn start(&mut self, buckets: usize, gen: u64, seed: u64) -> Result<()> {
        let table = Table::new(buckets, seed)?;
        self.stopped.push(gen);
        self.tables.push(table);
        Ok(())
    }

    /// Replaces the active table with `table` (the old one is dropped, not drained).
    pub(super) fn replace_active(&mut self, table: Table<S>) {
        *self.active_mut() = table;
    }

    /// Drops the tables whose entries are all dead at the start of generation `g`.
    pub(super) fn drop_drained(&mut self, g: u64, live_gens: u64) {
        let mut i = 0;
        while i < self.stopped.len() {
            if self.stopped[i].saturating_add(live_gens) <= g {
                self.stopped.remove(i);
                self.tables.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Clears the `dead` tags from every table; returns the entries left.
    pub(super) fn sweep(&mut self, dead: u32) -> u64 {
        self.tables.iter_mut().map(|t| t.sweep(dead)).sum()
    }

    /// Empties the filter: one table of `buckets` buckets, as a new filter has (nothing
    /// changes if it cannot be allocated).
    pub(super) fn reset(&mut self, buckets: usize, seed: u64) -> Result<()> {
        *self = Tables::new(buckets, seed)?;
        Ok(())
    }

    pub(super) fn occupancy(&self) -> (f64, f64) {
        let (mut occupied, mut slots, mut fpr) = (0u64, 0u64, 0.0);
        let values = ((1u64 << S::FP_BITS) - 1) as f64;
        for t in &self.tables {
            occupied += t.occupied();
            slots += t.capacity();
            let load = t.occupied() as f64 / t.capacity().max(1) as f64;
            fpr += (2 * SLOTS) as f64 * load / values;
        }
        (occupied as f64 / slots.max(1) as f64, fpr)
    }
}
