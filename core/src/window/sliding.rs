//! The Naor–Yogev sliding Bloom filter (paper 002, §2): "was `x` among the last `n` insertions (or
//! inserted in the last `T` ticks)?", with no false negatives inside the window and a false
//! positive rate of at most ε for anything older than the window plus one generation.
//!
//! # Construction (§2.3–§2.6)
//!
//! The stream is cut into **generations** of `G = ⌈n / c⌉` insertions (count window) or
//! `G = ⌈(T − 1) / c⌉` ticks (time window). Each key is reduced to a fingerprint `h(x)` stored in a
//! dictionary together with the tag of the generation it was last inserted in (Algorithm 1: insert
//! refreshes the tag of a fingerprint already present). The current generation and the `c` before
//! it are **live**; a window of `n` insertions (or `T` ticks) never spans more than that, so
//! nothing inside the window is ever missing. Entries of older generations are deleted **lazily**
//! (§2.4): they count as empty slots and never answer a query.
//!
//! * **Tags** count generations modulo `M ≥ c + 2` (any `M`, not only a power of two): the
//!   `M − c − 1` spare tag values give the deamortized sweep (§2.5) time to clear an expired
//!   generation before its tag comes round again. Each insertion scans `⌈B / ((M − c − 1) · G)⌉`
//!   buckets from a saved cursor, so a full cycle fits in the spare generations; if it does not (a
//!   time window whose rate fell), the expired tag is purged by a full scan just before reuse and
//!   counted in [`SlidingStats::purges`].
//! * **Dictionary** (§2.2, §2.6): a bucketized cuckoo table with 4-slot buckets of (fingerprint,
//!   tag) slots; see `table.rs`. A bucket is coded jointly: the sorted 4-tuple of the low 4
//!   fingerprint bits (semi-sorting, Fan et al.: 3876 values, a 12-bit code) and the slots' tags
//!   (base `M`) and fingerprint top digits (base `K`) as one mixed-radix number of
//!   `⌈4 log2(K M)⌉` bits form the bucket's head; the `b` middle fingerprint bits of each slot
//!   are stored raw. Cuckoo relocation uses the bucket and fingerprint only; an entry that finds
//!   no slot goes to a stash and the filter grows, so no item is ever lost.
//! * **Fingerprint alphabet** (§2.1): a query reads 2 buckets of 4 slots, each live with
//!   probability at most the load `α = 0.95`, and each live slot matches with probability `1/Φ`
//!   for `Φ = 16·K·2^b − 1` fingerprint values (0 marks an empty slot), so the false positive
//!   rate is at most `8α/Φ`; `Φ ≥ 8α/ε`, with `K ≤ 15` letting `Φ` sit within a factor
//!   `1 + 1/K` of that instead of the next power of two.
//! * **Choice of c** (§2.3): the paper minimizes `(1 + 1/c)(log 1/ε + log c + 1)`, giving
//!   `c − log c = log(1/ε) − 1`. The table holds `(c + 1) G ≈ n (1 + 1/c)` entries at load `α`, so
//!   a window item costs `(1 + 1/c) · W / (4α)` bits for a bucket of
//!   `W = 12 + ⌈4 log2(K M)⌉ + 4b = 12 + ⌈4 log2((Φ + 1) M / 16)⌉` bits. We pick `(c, M, K, b)`
//!   minimizing `(1 + 1/c) W` subject to `M ≥ c + 2`, `Φ ≥ 8α/ε` and a sweep of at most two
//!   buckets per insertion (ε = 0.01: `c = 12`, `M = 15`, `Φ = 767`, `W = 50`, against
//!   `c = 6`, 8 tags, 1023 fingerprints and 48 bits with powers of two). The slack of §1.1 is one
//!   generation: `m = G`.
//! * **Table size**: `B = ⌈(c + 1) G / (4α)⌉` buckets for a count window. A time window does not
//!   know its population: it starts small; when the active table reaches load `α` it adds a table
//!   sized for `1.15 (c + 1)` times the busier of the current and the last generation's insertions
//!   (at least 1.3 times the present population), and when the population falls below a third of
//!   capacity it starts one sized for 1.15 times the population. A table
//!   that no longer receives insertions is read until its last live entry expires (at most `c + 1`
//!   generations) and then dropped, so resizing never loses an item. While two tables are live
//!   a query reads both and the false positive bound is the sum of their loads' bounds.
//!
//! Every operation is O(1) (a bounded number of buckets), except the rare full-table purge above
//! and the reset after a gap longer than `M` generations (which empties the table).
//!
//! ```
//! use chronobloom_core::window::{SlidingBloomFilter, WindowFilter};
//! let mut f = SlidingBloomFilter::count_window(1_000, 0.01, 7).unwrap();
//! for i in 0..5_000u64 {
//!     f.insert(&i, 0).unwrap();
//! }
//! assert!((4_000..5_000u64).all(|i| f.contains(&i, 0)));
//! ```

mod packed;
mod shape;
mod table;

pub use shape::SlidingShape;

use crate::error::{Error, Result};
use crate::hash::{mix64, KeyHash};
use crate::temporal::Tick;
use crate::window::WindowFilter;
use serde::{Deserialize, Serialize};
use table::{Placed, Table, LOAD, SLOTS};

/// Stash entries a table may hold before the filter adds a larger table.
const STASH_LIMIT: usize = 4;
/// Room a time window leaves above its projected population when it sizes a table.
const HEADROOM: f64 = 1.15;
/// Smallest table of a time window, in buckets.
const MIN_BUCKETS: u64 = 16;

/// The window a [`SlidingBloomFilter`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlidingWindow {
    /// The last `n` insertions.
    Count(u64),
    /// Insertions at ticks `t` with `now − t < T`.
    Time(u64),
}

/// Events a caller may want to monitor; none of them loses an item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlidingStats {
    /// Entries that found no slot after cuckoo relocation and went to a stash.
    pub stashed: u64,
    /// Larger tables added because the active one was full or its stash overflowed.
    pub grown: u64,
    /// Smaller tables started because the window population fell.
    pub shrunk: u64,
    /// Full scans that cleared an expired tag the incremental sweep had not reached in time.
    pub purges: u64,
}

/// The Naor–Yogev sliding Bloom filter over a count or time window (module docs: paper 002 §2).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "SlidingRepr", into = "SlidingRepr")]
pub struct SlidingBloomFilter {
    window: SlidingWindow,
    fpr: f64,
    seed: u64,
    shape: SlidingShape,
    /// The current generation (absolute, not reduced modulo the tag count).
    gen: u64,
    /// Insertions into the current generation.
    in_gen: u64,
    /// Insertions into the previous generation (a time window's rate estimate).
    prev_gen: u64,
    last: Option<Tick>,
    /// Live tags of the current generation; derived.
    mask: u64,
    /// Tables, oldest first; insertions go to the last.
    tables: Vec<Table>,
    stats: SlidingStats,
}

/// The serialized form: the configuration and state; shape and masks are derived again.
#[derive(Serialize, Deserialize)]
struct SlidingRepr {
    window: SlidingWindow,
    fpr: f64,
    seed: u64,
    gen: u64,
    in_gen: u64,
    prev_gen: u64,
    last: Option<Tick>,
    tables: Vec<Table>,
    stats: SlidingStats,
}

impl From<SlidingBloomFilter> for SlidingRepr {
    fn from(f: SlidingBloomFilter) -> Self {
        SlidingRepr {
            window: f.window,
            fpr: f.fpr,
            seed: f.seed,
            gen: f.gen,
            in_gen: f.in_gen,
            prev_gen: f.prev_gen,
            last: f.last,
            tables: f.tables,
            stats: f.stats,
        }
    }
}

impl TryFrom<SlidingRepr> for SlidingBloomFilter {
    type Error = Error;
    fn try_from(r: SlidingRepr) -> Result<Self> {
        let shape = SlidingShape::derive(r.window, r.fpr)?;
        if r.tables.is_empty() || r.tables.iter().any(|t| t.layout() != shape.layout) {
            return Err(Error::invalid(
                "tables",
                "missing, or slot coding differs from the shape",
            ));
        }
        if matches!(r.window, SlidingWindow::Count(_)) && r.in_gen >= shape.generation_len {
            return Err(Error::invalid("in_gen", "past the end of the generation"));
        }
        // A time window's generation is its latest time's (a new one starts at generation 0
        // with nothing counted); a count window's counts generations ended, never all of u64.
        let in_time = match (r.window, r.last) {
            (SlidingWindow::Time(_), Some(last)) => r.gen == last / shape.generation_len,
            (SlidingWindow::Time(_), None) => r.gen == 0 && r.in_gen == 0 && r.prev_gen == 0,
            (SlidingWindow::Count(_), _) => r.gen < u64::MAX,
        };
        if !in_time {
            return Err(Error::invalid(
                "gen",
                "the generation does not match the latest time seen",
            ));
        }
        let mut f = SlidingBloomFilter {
            window: r.window,
            fpr: r.fpr,
            seed: r.seed,
            shape,
            gen: r.gen,
            in_gen: r.in_gen,
            prev_gen: r.prev_gen,
            last: r.last,
            mask: 0,
            tables: r.tables,
            stats: r.stats,
        };
        f.mask = f.mask_at(f.gen);
        for t in &mut f.tables {
            t.recount(f.mask);
        }
        Ok(f)
    }
}

impl SlidingBloomFilter {
    /// A filter over the last `n` insertions with false positive rate at most `fpr` for keys not
    /// among the last `n + ⌈n / c⌉`; the table is sized once for `(c + 1)⌈n / c⌉` entries.
    pub fn count_window(n: u64, fpr: f64, seed: u64) -> Result<Self> {
        let window = SlidingWindow::Count(n);
        let shape = SlidingShape::derive(window, fpr)?;
        let entries = (shape.generations + 1).saturating_mul(shape.generation_len);
        let buckets = buckets_for(entries);
        let sweep = buckets.div_ceil(shape.spare().saturating_mul(shape.generation_len));
        let table = Table::new(buckets, shape.layout, sweep, seed)?;
        Ok(Self::with_table(window, fpr, seed, shape, table))
    }

    /// A filter over insertions made in the last `ticks` ticks (`now − t < ticks`), with false
    /// positive rate at most `fpr` for keys not inserted in the last `ticks + G` ticks while one
    /// table is live. The table grows and shrinks with the window's population.
    pub fn time_window(ticks: u64, fpr: f64, seed: u64) -> Result<Self> {
        let window = SlidingWindow::Time(ticks);
        let shape = SlidingShape::derive(window, fpr)?;
        let table = Self::time_table(&shape, MIN_BUCKETS, seed)?;
        Ok(Self::with_table(window, fpr, seed, shape, table))
    }

    fn with_table(
        window: SlidingWindow,
        fpr: f64,
        seed: u64,
        shape: SlidingShape,
        table: Table,
    ) -> Self {
        let mut f = SlidingBloomFilter {
            window,
            fpr,
            seed,
            shape,
            gen: 0,
            in_gen: 0,
            prev_gen: 0,
            last: None,
            mask: 0,
            tables: vec![table],
            stats: SlidingStats::default(),
        };
        f.mask = f.mask_at(0);
        f
    }

    /// A time-window table of `buckets` buckets whose sweep cycles within the spare generations
    /// when it is full.
    fn time_table(shape: &SlidingShape, buckets: u64, seed: u64) -> Result<Table> {
        let per_gen =
            (buckets as f64 * SLOTS as f64 * LOAD / (shape.generations + 1) as f64).max(1.0);
        let sweep = (buckets as f64 / (shape.spare() as f64 * per_gen))
            .ceil()
            .max(1.0) as u64;
        Table::new(buckets, shape.layout, sweep, seed)
    }

    /// The window this filter keeps.
    pub fn window(&self) -> SlidingWindow {
        self.window
    }

    /// The target false positive rate ε.
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// The derived parameters (c, G, Φ, M and the bucket cost).
    pub fn shape(&self) -> SlidingShape {
        self.shape
    }

    /// Stash, growth, shrink and purge counters.
    pub fn stats(&self) -> SlidingStats {
        self.stats
    }

    /// Tables currently read by a query (1 except while a resized table drains).
    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    /// The false positive bound at the current loads: `Σ 8 · load / Φ` over the tables.
    pub fn estimated_fpr(&self) -> f64 {
        let per_match = 1.0 / self.shape.fingerprints as f64;
        self.tables
            .iter()
            .map(|t| 2.0 * t.live() as f64 / t.buckets() as f64 * per_match)
            .sum()
    }

    /// Bit set of the tags of generations `[lo, gen]` where `lo = max(at − c, 0)`: live at
    /// generation `at >= gen`.
    fn mask_at(&self, at: u64) -> u64 {
        let lo = at.saturating_sub(self.shape.generations);
        (lo..=self.gen).fold(0, |m, g| m | 1 << (g % self.shape.tags))
    }

    fn tag(&self) -> u32 {
        (self.gen % self.shape.tags) as u32
    }

    /// Checks that time does not go backwards and, for a time window, moves to `now`'s generation.
    fn observe(&mut self, now: Tick) -> Result<()> {
        if let Some(last) = self.last {
            if now < last {
                return Err(Error::TimeWentBackwards { now, last });
            }
        }
        if let SlidingWindow::Time(_) = self.window {
            let g = now / self.shape.generation_len;
            if self.last.is_none() || g > self.gen {
                self.roll(g)?;
            }
        }
        self.last = Some(now);
        Ok(())
    }

    /// Moves to generation `to`: retires generations that leave the window, purges tags about to
    /// be reused, drops drained tables and, for a time window, shrinks.
    fn roll(&mut self, to: u64) -> Result<()> {
        let tags = self.shape.tags;
        if to.saturating_sub(self.gen) >= tags {
            // Everything stored is expired and any tag may come round again: start empty.
            let active = self.tables.len() - 1;
            self.tables.drain(..active);
            self.tables[0].clear();
        } else {
            for g in self.gen + 1..=to {
                let reused = (g % tags) as u32;
                for t in &mut self.tables {
                    if t.count(reused) > 0 {
                        t.purge(reused);
                        self.stats.purges = self.stats.purges.saturating_add(1);
                    }
                }
            }
        }
        self.prev_gen = if to == self.gen + 1 { self.in_gen } else { 0 };
        self.gen = to;
        self.in_gen = 0;
        self.mask = self.mask_at(to);
        for t in &mut self.tables {
            t.recount(self.mask);
        }
        self.drop_drained();
        if matches!(self.window, SlidingWindow::Time(_)) {
            self.maybe_shrink()?;
            self.drop_drained();
        }
        Ok(())
    }

    /// Drops tables, other than the active one, that hold no live entry.
    fn drop_drained(&mut self) {
        let last = self.tables.len() - 1;
        let mut i = 0;
        self.tables.retain(|t| {
            i += 1;
            i - 1 == last || t.live() > 0
        });
    }

    fn maybe_shrink(&mut self) -> Result<()> {
        let Some(active) = self.tables.last() else {
            return Ok(());
        };
        if self.tables.len() == 1
            && active.buckets() > MIN_BUCKETS
            && active.live() * 3 < active.capacity()
        {
            // The window lost its oldest generation a moment ago: size for the full window again.
            let c = self.shape.generations;
            let entries = (active.live() as f64 * (c + 1) as f64 / c as f64 * HEADROOM) as u64;
            let buckets = buckets_for(entries).max(MIN_BUCKETS);
            if 2 * buckets <= active.buckets() {
                self.add_table(buckets)?;
                self.stats.shrunk = self.stats.shrunk.saturating_add(1);
            }
        }
        Ok(())
    }

    /// Adds a larger table when the active one is full (a time window whose population grew, or
    /// any window whose stash overflowed).
    fn grow(&mut self) -> Result<()> {
        let Some(active) = self.tables.last() else {
            return Ok(());
        };
        let buckets = match self.window {
            SlidingWindow::Count(_) => active.buckets().saturating_mul(2),
            SlidingWindow::Time(_) => {
                // Size for the window population the current rate implies (c + 1 generations at
                // the busier of this and the last generation), and at least 1.3 times the present.
                let per_gen = self.in_gen.max(self.prev_gen);
                let projected = (self.shape.generations + 1).saturating_mul(per_gen) as f64;
                let entries = (projected * HEADROOM).max(active.live() as f64 * 1.3);
                buckets_for(entries as u64).max(active.buckets() + 1)
            }
        };
        self.add_table(buckets)?;
        self.stats.grown = self.stats.grown.saturating_add(1);
        Ok(())
    }

    fn add_table(&mut self, buckets: u64) -> Result<()> {
        let serial = (self.stats.grown)
            .wrapping_add(self.stats.shrunk)
            .wrapping_add(1);
        let seed = self.seed ^ mix64(serial);
        let mut table = match self.window {
            SlidingWindow::Count(_) => {
                let sweep =
                    buckets.div_ceil(self.shape.spare().saturating_mul(self.shape.generation_len));
                Table::new(buckets, self.shape.layout, sweep, seed)?
            }
            SlidingWindow::Time(_) => Self::time_table(&self.shape, buckets, seed)?,
        };
        table.recount(self.mask);
        self.tables.push(table);
        Ok(())
    }

    /// The table insertions go to, for tests that inspect the dictionary.
    #[cfg(test)]
    fn active(&self) -> &Table {
        &self.tables[self.tables.len() - 1]
    }
}

/// Buckets holding `entries` live entries at load `α`.
fn buckets_for(entries: u64) -> u64 {
    ((entries as f64 / (LOAD * SLOTS as f64)).ceil() as u64).max(2)
}

impl WindowFilter for SlidingBloomFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, now: Tick) -> Result<()> {
        self.observe(now)?;
        if self
            .tables
            .last()
            .is_some_and(|t| t.live() >= t.capacity() || t.stashed() > STASH_LIMIT)
        {
            self.grow()?;
        }
        let (tag, mask) = (self.tag(), self.mask);
        let last = self.tables.len() - 1;
        let active = &mut self.tables[last];
        let (b, fp) = active.locate(hash.lo, hash.hi);
        if active.insert(b, fp, tag, mask) == Placed::Stashed {
            self.stats.stashed = self.stats.stashed.saturating_add(1);
        }
        // Tables that no longer receive insertions are swept too, so they seldom need a purge.
        for t in &mut self.tables {
            t.sweep(mask);
        }
        self.in_gen = self.in_gen.saturating_add(1);
        if let SlidingWindow::Count(_) = self.window {
            if self.in_gen == self.shape.generation_len {
                self.roll(self.gen + 1)?;
            }
        }
        Ok(())
    }

    fn contains_hash(&self, hash: KeyHash, now: Tick) -> bool {
        let mask = match self.window {
            SlidingWindow::Time(_) if self.last.is_some_and(|l| now > l) => {
                let at = now / self.shape.generation_len;
                if at.saturating_sub(self.shape.generations) > self.gen {
                    return false;
                }
                self.mask_at(at.max(self.gen))
            }
            _ => self.mask,
        };
        for t in &self.tables {
            let (b, fp) = t.locate(hash.lo, hash.hi);
            if t.contains(b, fp, mask) {
                return true;
            }
        }
        false
    }

    fn advance(&mut self, now: Tick) -> Result<()> {
        self.observe(now)
    }

    fn memory_bits(&self) -> u64 {
        self.tables.iter().map(Table::memory_bits).sum()
    }

    fn items(&self) -> u64 {
        self.tables.iter().map(Table::live).sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
