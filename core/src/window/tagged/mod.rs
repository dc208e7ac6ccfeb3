//! A compact time-window filter: "was this key inserted in the last `W` ticks?" in about 16–21
//! bits per distinct key of the window at ε ≤ 1%, with a bounded slack `S` and tables that follow
//! the stream's rate.
//!
//! # Guarantee
//!
//! At time `t` a key inserted at `u` is reported
//! * **always** when `t − u < W` (no false negative inside the window);
//! * never when `t − u ≥ W + S`, except with the false positive rate ε;
//! * either way in between (the slack).
//!
//! # Construction
//!
//! Time is cut into **generations** of `G = S + 1` ticks. A key is stored once, as a fingerprint
//! in a cuckoo table (two candidate buckets of 8 slots, partial-key cuckoo hashing) together with
//! the tag of the generation it was last inserted in (generation number mod 32, 5 bits):
//! inserting a key already present only rewrites its tag, so a key that recurs costs one slot
//! however long it lives (the dictionary of Naor and Yogev, paper 002, with plain slots). At
//! time `t` the live tags are those of generations `γ(t − W + 1) ..= γ(t)`, `L ≤ 31` of them;
//! an entry whose generation is older is dead: it never answers, its slot counts as free, and
//! a sweep (one pass over the slots) clears dead entries every `32 − L` generations (or sooner
//! when a table looks full), so a tag is empty before it comes round again. Each table counts
//! its entries per tag as they are placed, re-tagged and cleared, so the live population is
//! known at every generation without a pass. A slot is 16 bits (11-bit fingerprint) when
//! `16 α / 2047 ≤ ε` for the
//! load `α = 0.95`, i.e. ε ≥ 0.0075, and 32 bits (27-bit fingerprint) below that: a query reads
//! 16 slots, each live with probability at most `α`, so the false positive rate is at most
//! `16 α / (2^f − 1)`.
//!
//! # Sizing from the stream
//!
//! Nothing is declared up front. The filter starts with a **list** (or a cuckoo table of an
//! optional hint): a few dozen tagged fingerprints in two halves by the top bit of the key's
//! hash, each query comparing its half, so a list of `n ≤ ⌊2ε (2^f − 1)⌋` entries (40 at
//! ε = 0.01) keeps the bound; it grows and shrinks one entry at a time and clears dead entries
//! every generation, so a shard with a dozen keys holds a dozen entries, not a table sized ahead
//! and another draining (16 shards of about 15 keys on `data/real.pcap`: 44.4 → 20.0 bits per
//! window key). When the list or a cuckoo table is full (load `α`, an entry in the stash, or a
//! batch that would not fit) a new cuckoo table is started, sized for the population projected one window ahead: the present population plus
//! the rate of *new* keys (keys re-tagged do not count, so long-lived keys are not projected
//! twice) times the ticks until the window is full (at least one generation), with 15%
//! headroom and at least 1.5 times the present population. The rate is measured over the
//! previous and the current generation's completed ticks, leaving out the stream's first tick
//! (whose keys are all new).
//!
//! A rate measured on a stream's first handful of keys is noise (projections from its first
//! few ticks differ threefold), and a table projected too small fills, is replaced and is read
//! beside its successor for a window. So a **young** stream — its first two generations —
//! keeps the 64-bit hashes of the keys it inserts (counted in
//! [`memory_bits`](TaggedCuckooFilter::memory_bits)), and a table it outgrows is rebuilt from
//! them exactly, each key with its entry's tag, instead of being left to drain: in the first
//! generation tables double; the first growth after it is projected from a generation's rate and
//! ends youth. A stream with fewer than 256 keys at the end of its first generation is not
//! young any more (the hashes would outweigh its tables).
//!
//! Every `L / 4` generations, when the population one window ahead would fill half a list at
//! most, a list replaces the active cuckoo table; when it would fill less than a quarter of the
//! active table (of more than 4 buckets), a table sized for it does (the usual
//! hysteresis of a dynamic table; a third gave 3–16% higher peaks on bursty inputs, as each
//! shrink holds old and new tables for a window). For a stream a window old that population
//! is the entries of the newest three quarters of the window (each table counts
//! its entries per tag) plus new keys at the present rate for the last quarter, so after a fall
//! in the rate the table is replaced within a window and the old one is read for one more:
//! memory follows the rate within two windows. A table that no longer receives insertions is
//! read until its last entry is dead (`L` generations) and then dropped, so resizing never loses
//! a key; while two tables are live a query reads both and the false positive bound is the sum
//! of theirs. Its entries die all through that window, so at each generation it is
//! **repacked** into a table of the same buckets with 6, 4 or 2 slots a bucket once its live
//! entries fit (an entry stays in its pair of buckets, so every answer is the one the table
//! gave) and dropped as soon as none is live: the default input's peak, which falls while
//! shards hold a grown table beside the full one it replaced, went from 24.6 to 23.8 bits per
//! window key. Insert a tick's keys with [`insert_batch`](TaggedCuckooFilter::insert_batch)
//! where you can: a batch that would not fit grows the table once (the test
//! `a_tenfold_burst_keeps_the_false_positive_rate_within_two_epsilon` bounds the batched case).
//!
//! ```
//! use chronobloom_core::window::{TaggedCuckooFilter, WindowFilter};
//! // W = 60 ticks, slack 3 ticks, ε = 1%
//! let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 7).unwrap();
//! f.insert("10.0.0.1", 100).unwrap();
//! assert!(f.contains("10.0.0.1", 159)); // 59 ticks later: inside the window
//! assert!(!f.contains("10.0.0.1", 163)); // W + S ticks later: forgotten
//! ```

mod any;
mod counts;
mod generations;
mod insert;
mod list;
mod order;
mod rate;
mod repack;
mod repr;
mod sizing;
mod table;
mod tables;

pub use table::Prior;

use crate::error::{Error, Result};
use crate::hash::KeyHash;
use crate::temporal::Tick;
use crate::window::WindowFilter;
use generations::Generations;
use rate::Rate;
use serde::{Deserialize, Serialize};
use sizing::buckets_for;
use table::{Slot, Table, SLOTS, TAGS};
use tables::Tables;

/// Load at which a table is full.
const LOAD: f64 = 0.95;
/// Smallest table, in buckets.
const MIN_BUCKETS: usize = 1;
/// Generations a stream is young for: its tables double and are rebuilt exactly from the keys'
/// hashes, kept meanwhile, instead of being projected from a handful of keys and left to drain.
const YOUNG_GENERATIONS: u64 = 2;
/// A stream with fewer keys at the end of its first generation is small: its tables are small
/// and project nothing far, so its youth ends there (the hashes would outweigh them).
const YOUNG_POPULATION: u64 = 256;
/// Largest number of live generations (tags are 5 bits and one value is kept spare).
pub const MAX_LIVE_GENERATIONS: u64 = TAGS - 1;
/// Largest window, in ticks.
pub const MAX_WINDOW: Tick = 1 << 40;
/// Largest first-table hint, in keys ([`TaggedCuckooFilter::with_hint`]).
pub const MAX_HINT: u64 = 1 << 32;

/// The tables in the slot width ε needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Store {
    Narrow(Tables<u16>),
    Wide(Tables<u32>),
}

/// Calls `$body` with `$t` bound to the store's tables, whatever their width.
macro_rules! with_tables {
    ($store:expr, $t:ident => $body:expr) => {
        match $store {
            Store::Narrow($t) => $body,
            Store::Wide($t) => $body,
        }
    };
}
use with_tables;

/// Lifetime statistics of a [`TaggedCuckooFilter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaggedStats {
    /// Tables started because the active one was full.
    pub grown: u64,
    /// Tables started because the active one was mostly empty.
    pub shrunk: u64,
    /// Generations ended.
    pub generations: u64,
    /// Passes clearing dead entries (every `32 − L` generations, or when a table is full).
    pub sweeps: u64,
    /// Entries that found no slot and waited in a stash.
    pub stashed: u64,
    /// Drained tables repacked into fewer slots a bucket as their entries died.
    pub repacked: u64,
}

/// A compact time-window filter with bounded slack (see the [module docs](self)).
///
/// A filter read back with serde is checked (its tables, counts and generations must be ones a
/// running filter reaches); a corrupted one is an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "repr::TaggedRepr")]
pub struct TaggedCuckooFilter {
    window: Tick,
    /// The slack and the generations it makes (written as the slack).
    #[serde(rename = "slack")]
    generations: Generations,
    fpr: f64,
    seed: u64,
    /// The current generation; `None` before the first insertion.
    gen: Option<u64>,
    /// Live generations at any time: `γ(t) − γ(t − W + 1) + 1 ≤ live_gens`.
    live_gens: u64,
    store: Store,
    /// The generation the active table was started in.
    started: u64,
    /// Buckets of the first table (and the most the table after a reset gets); 0 for a list.
    first_buckets: usize,
    /// The generation of the last sweep (every entry was live in it).
    swept: u64,
    rate: Rate,
    /// Live entries: counted per tag at the start of each generation, plus new placements since.
    population: u64,
    /// While the stream is young (its first [`YOUNG_GENERATIONS`] generations), the hashes of
    /// the keys inserted, repeats removed from time to time: a table grown then is rebuilt
    /// from them exactly, so no table is left draining. `None` afterwards.
    young: Option<Vec<u64>>,
    stats: TaggedStats,
}

impl TaggedCuckooFilter {
    /// A filter over a window of `window` ticks (1 to 2^40) with slack `slack` ticks (a key is
    /// forgotten `window + slack` ticks after its last insertion; at least
    /// `(window − 1) / 30`, so that the window spans at most 31 generations) and false positive
    /// rate at most `fpr` in (0, 1); a rate below about 1.13·10⁻⁷, the least 32-bit slots reach,
    /// is refused.
    pub fn new(window: Tick, slack: Tick, fpr: f64, seed: u64) -> Result<Self> {
        Self::with_hint(window, slack, fpr, 0, seed)
    }

    /// [`TaggedCuckooFilter::new`] with a first table sized for `items` keys (0: the smallest
    /// table; at most [`MAX_HINT`]); the tables still follow the stream.
    pub fn with_hint(window: Tick, slack: Tick, fpr: f64, items: u64, seed: u64) -> Result<Self> {
        if items > MAX_HINT {
            return Err(Error::invalid(
                "items",
                format!("a first table for {items} keys; the hint is at most {MAX_HINT}"),
            ));
        }
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::invalid(
                "window",
                format!("{window} is outside 1..={MAX_WINDOW}"),
            ));
        }
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
        }
        if fpr < least_fpr() {
            return Err(Error::invalid(
                "fpr",
                format!(
                    "{fpr} is below {:.3e}, the least rate 32-bit slots reach",
                    least_fpr()
                ),
            ));
        }
        let live_gens = live_generations(window, slack);
        if live_gens > MAX_LIVE_GENERATIONS {
            return Err(Error::invalid(
                "slack",
                format!(
                    "{slack} ticks cut a window of {window} into {live_gens} generations; at \
                     least {} ticks keep it within {MAX_LIVE_GENERATIONS}",
                    min_slack(window)
                ),
            ));
        }
        // no hint: a list, which grows one entry at a time
        let buckets = if items == 0 { 0 } else { buckets_for(items) };
        let store = if narrow_enough(fpr) {
            Store::Narrow(Tables::new(buckets, fpr, seed)?)
        } else {
            Store::Wide(Tables::new(buckets, fpr, seed)?)
        };
        Ok(TaggedCuckooFilter {
            window,
            generations: Generations::new(slack),
            fpr,
            seed,
            gen: None,
            live_gens,
            store,
            started: 0,
            first_buckets: buckets,
            swept: 0,
            rate: Rate::default(),
            population: 0,
            young: Some(Vec::new()),
            stats: TaggedStats::default(),
        })
    }

    /// The window `W`, in ticks.
    pub fn window(&self) -> Tick {
        self.window
    }

    /// The slack `S`, in ticks.
    pub fn slack(&self) -> Tick {
        self.generations.slack()
    }

    /// The target false positive rate ε.
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// The hash seed its fingerprints were made with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bits per slot: 16 or 32.
    pub fn slot_bits(&self) -> u32 {
        match self.store {
            Store::Narrow(_) => 16,
            Store::Wide(_) => 32,
        }
    }

    /// Tables held (2 while a resized table drains).
    pub fn table_count(&self) -> usize {
        with_tables!(&self.store, t => t.tables.len())
    }

    /// Lifetime statistics.
    pub fn stats(&self) -> TaggedStats {
        self.stats
    }

    /// Occupancy of the tables (occupied slots over all slots) and the false positive rate it
    /// implies for a key not in the window (the sum of the tables' `16 · load / (2^f − 1)`).
    pub fn occupancy(&self) -> (f64, f64) {
        with_tables!(&self.store, t => t.occupancy())
    }

    /// Whether nothing is live at `now`: every entry is dead, so the filter can be dropped.
    pub fn stale(&self, now: Tick) -> bool {
        self.gen
            .is_none_or(|g| g < self.generations.of(window_first(now, self.window)))
    }

    /// Requests the cache lines a check or an insertion of `hash` reads.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        with_tables!(&self.store, t => t.active().prefetch(hash, fp_bits(hash)))
    }

    /// Whether the key with 64-bit hash `hash` (a [`KeyHash::lo`]) is reported at `now`.
    #[inline]
    pub fn seen(&self, hash: u64, now: Tick) -> bool {
        let Some(live) = self.live_mask(now) else {
            return false;
        };
        let bits = fp_bits(hash);
        with_tables!(&self.store, t => t.tables.iter().any(|table| table.contains(hash, bits, live)))
    }

    /// Hands each item to `done` with whether its key (64-bit hash) is reported at `now`: the
    /// batch form of [`seen`](Self::seen), deciding the live generations once.
    #[inline]
    pub fn seen_each<T>(
        &self,
        items: impl Iterator<Item = (T, u64)>,
        now: Tick,
        mut done: impl FnMut(T, bool),
    ) {
        let Some(live) = self.live_mask(now) else {
            items.for_each(|(item, _)| done(item, false));
            return;
        };
        with_tables!(&self.store, t => {
            for (item, hash) in items {
                let bits = fp_bits(hash);
                let seen = t.tables.iter().any(|table| table.contains(hash, bits, live));
                done(item, seen);
            }
        })
    }

    /// Lets time pass to `now`: ends the generations before it (sweeping dead entries, dropping
    /// drained tables, resizing an emptied one). A time in or before the current generation
    /// changes nothing.
    pub fn advance_to(&mut self, now: Tick) {
        if self.gen.is_some_and(|g| self.generations.of(now) > g) {
            // `now` is past the current generation, so time does not go backwards
            let _ = self.observe(now);
        }
    }

    /// Memory held by the filter, in bits: the slots of every table and, while the stream is
    /// young, its keys' hashes.
    pub fn memory_bits(&self) -> u64 {
        let young = self.young.as_ref().map_or(0, |y| y.len() as u64 * 64);
        young + self.table_bits()
    }

    /// Memory held by the slots of every table, in bits: [`memory_bits`](Self::memory_bits)
    /// without the hashes a young stream's keys are kept as (64 bits each, through its first
    /// generations, so that its tables can be rebuilt exactly as they grow).
    pub fn table_bits(&self) -> u64 {
        with_tables!(&self.store, t => t.tables.iter().map(|x| x.memory_bits()).sum())
    }

    /// Live entries: those of the live tags at the start of the current generation, plus new
    /// keys since.
    pub fn population(&self) -> u64 {
        self.population
    }

    /// The tags live at `now`: those of the generations from `γ(now − W + 1)` to `γ(now)`.
    fn live_tags(&self, now: Tick) -> u32 {
        tag_mask(
            self.generations.of(window_first(now, self.window)),
            self.generations.of(now),
        )
    }

    /// Entries of every table whose tag is in `tags` (counted per tag as they change).
    fn live_entries(&self, tags: u32) -> u64 {
        with_tables!(&self.store, t => t.tables.iter().map(|x| x.live(tags)).sum())
    }

    /// Clears the entries dead at `now` from every table and recounts the population.
    fn sweep(&mut self, now: Tick) {
        let dead = !self.live_tags(now);
        self.population = with_tables!(&mut self.store, t => t.sweep(dead));
        self.swept = self.generations.of(now);
        self.stats.sweeps = self.stats.sweeps.saturating_add(1);
    }

    /// The live-tag mask at `now`, or `None` when nothing inserted is live: the tags of the
    /// generations from `γ(now − W + 1)` to `γ(now)` (no later than the current one, whose tags
    /// hold no older generation's entries).
    fn live_mask(&self, now: Tick) -> Option<u32> {
        let gen = self.gen?;
        let first = self.generations.of(window_first(now, self.window));
        (gen >= first).then(|| tag_mask(first, self.generations.of(now).min(gen)))
    }

    /// Moves the current generation to `now`'s, ending each generation in between.
    fn observe(&mut self, now: Tick) -> Result<()> {
        let gen = self.generations.of(now);
        let Some(mut g) = self.gen else {
            self.gen = Some(gen);
            self.started = gen;
            self.swept = gen;
            self.rate = Rate::start(now, gen);
            return Ok(());
        };
        if gen < g {
            return Err(Error::TimeWentBackwards {
                last: g.saturating_mul(self.generations.len()),
                now,
            });
        }
        if gen - g >= self.live_gens {
            // Everything inserted is dead: start again with the first table's size, or the
            // active one's if smaller (what the stream needed last).
            let (first, fpr, seed) = (self.first_buckets, self.fpr, self.seed);
            with_tables!(&mut self.store, t => {
                let buckets = first.min(t.active().buckets());
                t.reset(buckets, fpr, seed)
            })?;
            self.population = 0;
            self.young = Some(Vec::new());
            self.rate = Rate::start(now, gen);
            self.stats.generations = self.stats.generations.saturating_add(gen - g);
            self.gen = Some(gen);
            self.started = gen;
            self.swept = gen;
            return Ok(());
        }
        while g < gen {
            g += 1;
            self.end_generation(g);
        }
        Ok(())
    }

    /// Starts generation `g`: sweeps the tag that dies, drops drained tables, shrinks an
    /// emptied table.
    fn end_generation(&mut self, g: u64) {
        let live_gens = self.live_gens;
        self.rate.end_generation();
        self.gen = Some(g);
        self.stats.generations = self.stats.generations.saturating_add(1);
        if g >= self.rate.first_gen.saturating_add(YOUNG_GENERATIONS)
            || self.population < YOUNG_POPULATION
        {
            self.young = None;
        }
        let now = g.saturating_mul(self.generations.len());
        // the entries of the live tags, counted as they are placed, re-tagged and cleared
        let live = self.live_tags(now);
        with_tables!(&mut self.store, t => t.sweep_lists(!live));
        self.population = self.live_entries(live);
        let repacked = with_tables!(&mut self.store, t => t.repack_drained(live));
        self.stats.repacked = self.stats.repacked.saturating_add(repacked);
        // Dead entries answer nothing and their slots count as free; they must be cleared
        // before their tag comes round again. After a sweep at s the entries' generations span
        // at most L; by s + 32 − L they span 32: the sweep runs then (and sooner when a full
        // table might hold dead entries).
        if g - self.swept >= TAGS - live_gens {
            self.sweep(now);
        }
        self.shrink_if_mostly_empty(now, g);
    }
}

impl WindowFilter for TaggedCuckooFilter {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, now: Tick) -> Result<()> {
        self.insert_fingerprint(hash.lo, now).map(|_| ())
    }

    fn contains_hash(&self, hash: KeyHash, now: Tick) -> bool {
        self.seen(hash.lo, now)
    }

    fn advance(&mut self, now: Tick) -> Result<()> {
        if self.gen.is_some() {
            self.observe(now)?;
        }
        Ok(())
    }

    fn memory_bits(&self) -> u64 {
        TaggedCuckooFilter::memory_bits(self)
    }

    fn items(&self) -> u64 {
        self.population
    }
}

/// The tags of generations `first ..= last` (at most [`MAX_LIVE_GENERATIONS`] of them).
#[inline]
fn tag_mask(first: u64, last: u64) -> u32 {
    let n = last.saturating_sub(first) + 1;
    let ones = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    ones.rotate_left((first % TAGS) as u32)
}

/// Whether 16-bit slots (11-bit fingerprints) meet `fpr`.
fn narrow_enough(fpr: f64) -> bool {
    slot_fpr(u16::FP_BITS) <= fpr
}

/// The least false positive rate the filter reaches: that of 32-bit slots.
fn least_fpr() -> f64 {
    slot_fpr(u32::FP_BITS)
}

/// The false positive rate of one full table of slots with `fp_bits`-bit fingerprints: the two
/// buckets' slots at load `α`, each matching with probability `1 / (2^fp_bits − 1)`.
fn slot_fpr(fp_bits: u32) -> f64 {
    (2 * SLOTS) as f64 * LOAD / ((1u64 << fp_bits) - 1) as f64
}

/// The fingerprint bits of a 64-bit key hash: its low half on top (the bucket is a
/// multiply-shift of the hash, so it draws on the high half).
#[inline]
fn fp_bits(hash: u64) -> u64 {
    hash.rotate_left(32)
}

/// The first tick of the window of `window` ticks ending at `now`.
#[inline]
fn window_first(now: Tick, window: Tick) -> Tick {
    now.saturating_add(1).saturating_sub(window)
}

/// The most generations a window spans: `⌈(W − 1) / G⌉ + 1` for `G = slack + 1`.
pub fn live_generations(window: Tick, slack: Tick) -> u64 {
    (window - 1).div_ceil(slack.saturating_add(1)) + 1
}

/// The default slack of a window of `window` ticks: `W / 16`, raised to [`min_slack`] for a
/// short window.
pub fn default_slack(window: Tick) -> Tick {
    (window / 16).max(min_slack(window))
}

/// The smallest slack that keeps a window of `window` ticks within [`MAX_LIVE_GENERATIONS`].
pub fn min_slack(window: Tick) -> Tick {
    // the smallest G with ⌈(W − 1) / G⌉ ≤ MAX − 1
    (window - 1).div_ceil(MAX_LIVE_GENERATIONS - 1).max(1) - 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
