//! Drained tables repacked as their entries die: a table that no longer receives insertions is
//! read until its last entry is dead, a window, and its entries die all through that window, so
//! it is moved into a table of the same buckets with fewer slots a bucket (6, 4, then 2) once
//! its live entries fit, and dropped as soon as none is left.

use super::any::{each, AnyTable};
use super::table::Slot;

/// Widths a drained table is repacked to, narrowest first, each with the load its slots are
/// filled to at most: two-choice cuckoo tables place entries up to about 0.97 (6 and 4 slots a
/// bucket) and 0.89 (2 slots) of their slots, and these stay clear of that so that nothing is
/// left in the stash, which every query that misses reads.
const WIDTHS: [(usize, f64); 3] = [(2, 0.75), (4, 0.88), (6, 0.9)];
/// Entries a repacked table may leave in its stash; past this the table stays as it was.
const MAX_STASH: u64 = 4;

impl<S: Slot> AnyTable<S> {
    /// The drained table with its live entries (tags in `live`) in the narrowest width they fit
    /// ([`WIDTHS`]), every key it reports still reported; `None` when no narrower width fits (a
    /// list is never repacked) or a table cannot be allocated.
    pub fn repacked(&self, live: u32) -> Option<AnyTable<S>> {
        let width = self.width();
        let (entries, buckets) = (self.live(live) as f64, self.buckets() as f64);
        WIDTHS
            .iter()
            .filter(|&&(w, load)| w < width && entries <= load * buckets * w as f64)
            .find_map(|&(w, _)| {
                let packed = match w {
                    2 => {
                        each!(self, t => t.repacked::<2>(live).ok().map(AnyTable::Two), _l => None)
                    }
                    4 => {
                        each!(self, t => t.repacked::<4>(live).ok().map(AnyTable::Four), _l => None)
                    }
                    _ => {
                        each!(self, t => t.repacked::<6>(live).ok().map(AnyTable::Six), _l => None)
                    }
                }?;
                (packed.stashed() <= MAX_STASH).then_some(packed)
            })
    }

    /// Slots a bucket (0 for a list).
    pub fn width(&self) -> usize {
        each!(self, t => t.capacity() as usize / t.buckets(), _l => 0)
    }

    /// Entries waiting in a cuckoo table's stash.
    fn stashed(&self) -> u64 {
        each!(self, t => t.stash_len(), _l => 0)
    }
}
