//! Table sizing: the population projected one window ahead, the larger table a full one is
//! replaced by (rebuilt from a young stream's keys), and the smaller one a mostly empty one is.

use super::any::AnyTable;
use super::{
    fp_bits, tag_mask, with_tables, Store, Table, TaggedCuckooFilter, LOAD, MIN_BUCKETS, SLOTS,
    TAGS,
};
use crate::error::Result;
use crate::temporal::Tick;

/// Room left above the projected population when a table is sized.
const HEADROOM: f64 = 1.15;
/// A table of at most this many buckets is not replaced by a smaller table (a list still may):
/// a few keys' count swings by half and back, and each replacement holds two tables for a
/// window.
const MIN_SHRINK_BUCKETS: usize = 4;

impl TaggedCuckooFilter {
    /// The shrink check at the start of generation `g` (tick `now`), the last step of
    /// [`end_generation`](Self::end_generation).
    pub(super) fn shrink_if_mostly_empty(&mut self, now: Tick, g: u64) {
        let live_gens = self.live_gens;
        // Every L / 4 generations, shrink when the population one window ahead would fill less
        // than a quarter of the active table. Once the stream is a window old that population is
        // the entries of the newest three quarters of the window (their tags' counts) plus new
        // keys at the present rate for the last quarter, so after a fall in the rate the table
        // shrinks within a window, and the old one is read for a window more: memory follows
        // the rate within two windows. A younger stream is projected as for growing (still
        // filling). (The newest half window instead shrank sooner and more often: bursty
        // inputs held 5–20% more bits at their peaks.)
        if !g.is_multiple_of((live_gens / 4).max(1)) {
            return;
        }
        let Some(filling) = self.projected(now, g, 0) else {
            return;
        };
        let projected = if g - self.rate.first_gen >= live_gens {
            let g_len = self.generations.len();
            let recent = (3 * live_gens).div_ceil(4);
            let newest = tag_mask(g + 1 - recent, g);
            let kept = self.live_entries(newest);
            let rate = self.rate.new_per_tick(now, g, g_len).unwrap_or(0.0);
            kept as f64 + rate * (g_len * (live_gens - recent)) as f64
        } else {
            filling
        };
        let target = HEADROOM * projected;
        let fpr = self.fpr;
        // A cuckoo table whose population a list would hold twice over is replaced by a list;
        // a larger one left a quarter full, by a smaller table. A list stays (and the active
        // table is never a repacked one).
        let smaller = with_tables!(&self.store, t => match t.active() {
            AnyTable::Cuckoo(a) => {
                let limit = t.list_limit(fpr).map_or(0.0, f64::from);
                if target <= limit / 2.0 {
                    Some(0)
                } else {
                    (a.buckets() > MIN_SHRINK_BUCKETS
                        && target < LOAD * a.capacity() as f64 / 4.0)
                        .then(|| buckets_for(target as u64))
                }
            }
            _ => None,
        });
        // a smaller table that cannot be had leaves the active one in place
        if let Some(buckets) = smaller {
            if self.restart(g, buckets).is_ok() {
                self.stats.shrunk = self.stats.shrunk.saturating_add(1);
            }
        }
    }

    /// The population one window ahead at `now` in generation `gen`, with `coming` keys about
    /// to be placed: the present population plus the new keys (at the rate of the previous and
    /// the current generation) of the generations until the window is full, at least one;
    /// `None` before a tick after the stream's first has completed.
    fn projected(&self, now: Tick, gen: u64, coming: u64) -> Option<f64> {
        let g_len = self.generations.len();
        let rate = self.rate.new_per_tick(now, gen, g_len)?;
        let age = gen - self.rate.first_gen;
        let gens = self.live_gens.saturating_sub(age).max(1);
        let ahead = g_len as f64 * gens as f64;
        Some(self.population.saturating_add(coming) as f64 + rate * ahead)
    }

    /// Starts a larger table: sized for the population projected one window ahead from the
    /// rate of new keys (the present population and `coming` keys about to be placed, plus the
    /// new keys of the generations until the window is full, at least one), at least 1.5 times
    /// the present population; twice the present population while the stream's first tick is
    /// all there is to go by. [`Error::OutOfMemory`](crate::error::Error::OutOfMemory) when that
    /// table cannot be had (a long window's projection can exceed any memory): the filter is left
    /// as it was.
    pub(super) fn grow(&mut self, now: Tick, gen: u64, coming: u64) -> Result<()> {
        let present = self.population.saturating_add(coming);
        let projected = self.projected(now, gen, coming);
        let items = match projected {
            // a young stream's first generation doubles: too few keys to project a window from
            Some(projected) if gen > self.rate.first_gen || self.young.is_none() => {
                (HEADROOM * projected).max(1.5 * present as f64) as u64
            }
            _ => present.max(1).saturating_mul(2),
        };
        let single = with_tables!(&self.store, t => t.tables.len() == 1);
        if self.young.is_some() && single {
            self.rebuild(now, gen, items)?;
            // sized from a generation's keys: youth has done its work
            if gen > self.rate.first_gen {
                self.young = None;
            }
        } else {
            self.restart(gen, buckets_for(items))?;
        }
        self.stats.grown = self.stats.grown.saturating_add(1);
        Ok(())
    }

    /// Replaces the active (and only) table with one for `items` keys holding the same keys:
    /// each key inserted while the stream is young goes into the new table with the tag of the
    /// entry it matches in the old one, oldest generations first (a key that shares an entry
    /// with a later one there keeps the later tag). Keys that matched another key's entry are
    /// among those hashes too, so every key the old table reported is reported.
    fn rebuild(&mut self, now: Tick, gen: u64, items: u64) -> Result<()> {
        let (buckets, seed, live) = (buckets_for(items), self.seed, self.live_tags(now));
        let current = gen % TAGS;
        let Some(young) = self.young.as_mut() else {
            return self.restart(gen, buckets);
        };
        young.sort_unstable();
        young.dedup();
        with_tables!(&mut self.store, t => {
            let old = t.active();
            let mut keys: Vec<(u64, u64, u64)> = young
                .iter()
                .filter_map(|&h| {
                    let tag = old.live_tag(h, fp_bits(h), live)?;
                    Some(((current + TAGS - tag) % TAGS, tag, h))
                })
                .collect();
            keys.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
            let mut table = Table::new(buckets, seed)?;
            for (_, tag, h) in keys {
                let spot = table.spot(h, fp_bits(h));
                table.insert(spot, tag, live);
            }
            t.replace_active(table);
        });
        self.started = gen;
        Ok(())
    }

    /// Starts a new active table of `buckets` buckets (0: a list) in generation `gen`.
    fn restart(&mut self, gen: u64, buckets: usize) -> Result<()> {
        let (fpr, seed) = (self.fpr, self.seed);
        with_tables!(&mut self.store, t => t.start(buckets, gen, fpr, seed))?;
        self.started = gen;
        Ok(())
    }
}

/// Buckets for `items` entries at load `α` (at least [`MIN_BUCKETS`]).
pub(super) fn buckets_for(items: u64) -> usize {
    ((items as f64 / (LOAD * SLOTS as f64)).ceil() as usize).max(MIN_BUCKETS)
}
