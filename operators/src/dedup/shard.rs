//! One key shard's window state: the compact filter with slack (default) or the exact-edge tick
//! filter, behind the two verbs the deciding operator needs.

use super::config::DedupConfig;
use crate::error::{Error, Result};
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::{Prior, TaggedCuckooFilter, TickFilter};
use serde::{Deserialize, Serialize};

/// Largest number of cells in one shard's tick filter.
pub const MAX_SHARD_CELLS: u64 = 1 << 31;
/// Largest first size of a shard's compact filter, in keys.
const MAX_HINT: u64 = 1 << 32;

/// What an insertion found, as the operator needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// The key may have been inserted earlier in the same tick (exact edge) or generation
    /// (compact): for a key not seen before the tick, a same-tick repeat candidate.
    Recent,
    /// Anything else.
    Other,
}

/// A shard's window state (checkpointed as it is: both filters check themselves when read back,
/// and the restore checks them against the configuration, [`Self::fits`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum ShardFilter {
    Compact(Box<TaggedCuckooFilter>),
    ExactEdge(TickFilter),
}

impl ShardFilter {
    /// Checks that `config` describes a valid shard filter (without allocating one).
    pub fn check(config: &DedupConfig) -> Result<()> {
        if config.exact_edge() {
            let shape = Self::tick_shape(config)?;
            if shape.bits > MAX_SHARD_CELLS {
                return Err(Error::config(
                    "dedup",
                    "expected_items",
                    format!(
                        "{} cells per shard exceed {MAX_SHARD_CELLS}: raise `shards`",
                        shape.bits
                    ),
                ));
            }
            return Ok(());
        }
        if Self::hint(config) > MAX_HINT {
            return Err(Error::config(
                "dedup",
                "expected_items",
                format!("more than {MAX_HINT} keys per shard: raise `shards`"),
            ));
        }
        TaggedCuckooFilter::new(config.window(), config.slack(), config.fpr(), config.seed())
            .map(|_| ())
            .map_err(|e| Error::in_config("dedup", e))
    }

    /// An empty shard filter for ticks from `start` on (`config` was checked).
    pub fn new(config: &DedupConfig, start: Tick) -> Result<Self> {
        let (window, fpr, seed) = (config.window(), config.fpr(), config.seed());
        let filter = if config.exact_edge() {
            ShardFilter::ExactEdge(TickFilter::new(Self::tick_shape(config)?, window, start)?)
        } else {
            let hint = Self::hint(config);
            let f = TaggedCuckooFilter::with_hint(window, config.slack(), fpr, hint, seed)?;
            ShardFilter::Compact(Box::new(f))
        };
        Ok(filter)
    }

    /// Why this (restored) filter cannot serve `config`, if it cannot: another kind, window,
    /// slack, rate, seed or tick-filter shape.
    pub fn fits(&self, config: &DedupConfig) -> std::result::Result<(), String> {
        let c = config;
        match self {
            ShardFilter::Compact(_) if c.exact_edge() => {
                Err("a compact shard filter, and the configuration has exact edges".into())
            }
            ShardFilter::ExactEdge(_) if !c.exact_edge() => {
                Err("an exact-edge shard filter, and the configuration is compact".into())
            }
            ShardFilter::Compact(f) => {
                if (f.window(), f.slack(), f.seed()) != (c.window(), c.slack(), c.seed())
                    || f.fpr() != c.fpr()
                {
                    return Err(format!(
                        "a shard has window {}, slack {}, fpr {}, seed {}; the configuration {}, {}, {}, {}",
                        f.window(), f.slack(), f.fpr(), f.seed(),
                        c.window(), c.slack(), c.fpr(), c.seed()
                    ));
                }
                Ok(())
            }
            ShardFilter::ExactEdge(f) => {
                let shape = Self::tick_shape(c).map_err(|e| e.to_string())?;
                let bits = TickFilter::memory_bits_for(shape, c.window());
                if f.window() != c.window() || f.hashes() != shape.hashes || f.memory_bits() != bits
                {
                    return Err(format!(
                        "a tick filter of window {}, {} hashes, {} bits; the configuration needs \
                         {}, {}, {}",
                        f.window(),
                        f.hashes(),
                        f.memory_bits(),
                        c.window(),
                        shape.hashes,
                        bits
                    ));
                }
                Ok(())
            }
        }
    }

    fn hint(config: &DedupConfig) -> u64 {
        config
            .expected_items()
            .map_or(0, |n| n.div_ceil(u64::from(config.shards())))
    }

    fn tick_shape(config: &DedupConfig) -> Result<chronobloom_core::bloom::FilterShape> {
        let per_shard = Self::hint(config).max(1);
        Ok(TickFilter::shape_for(
            per_shard,
            config.fpr(),
            config.window(),
        )?)
    }

    /// Requests the cache lines of `fp`.
    #[inline]
    pub fn prefetch(&self, fp: u64) {
        match self {
            ShardFilter::Compact(f) => f.prefetch(fp),
            ShardFilter::ExactEdge(f) => f.prefetch(fp),
        }
    }

    /// Hands each item to `done` with whether its key is reported seen at `now`.
    #[inline]
    pub fn seen_each<T, I, F>(&self, items: I, now: Tick, done: F)
    where
        I: Iterator<Item = (T, u64)>,
        F: FnMut(T, bool),
    {
        match self {
            ShardFilter::Compact(f) => f.seen_each(items, now, done),
            ShardFilter::ExactEdge(f) => f.seen_each(items, now, done),
        }
    }

    /// Inserts each item's key at `now` and hands the item to `done` with what was found,
    /// leaving `items` empty. The state reached does not depend on the items' order (so `ByKey`
    /// decides identically for any number of workers). `absent(item)` true promises the item's
    /// key was not seen at `now` before these inserts (it spares the compact filter a look-up).
    /// Fails when `now` is before an earlier insertion's generation (the operator never does
    /// that) or when the compact filter needs a larger table than memory holds (the operator
    /// counts the keys unplaced).
    #[inline]
    pub fn insert_batch<T, A, F>(
        &mut self,
        items: &mut Vec<(T, u64)>,
        now: Tick,
        absent: A,
        mut done: F,
    ) -> Result<()>
    where
        A: Fn(&T) -> bool,
        F: FnMut(T, Found),
    {
        match self {
            ShardFilter::Compact(f) => {
                let done = |item, prior| {
                    let found = match prior {
                        Prior::Current => Found::Recent,
                        Prior::New | Prior::Older => Found::Other,
                    };
                    done(item, found);
                };
                f.insert_batch_with(items, now, absent, done)?;
            }
            ShardFilter::ExactEdge(f) => f.insert_each(items.drain(..), now, |item, before| {
                let found = if before == Some(now) {
                    Found::Recent
                } else {
                    Found::Other
                };
                done(item, found)
            }),
        }
        Ok(())
    }

    /// Lets time pass to `now` (the compact filter ends its generations: sweeps and resizes).
    pub fn advance(&mut self, now: Tick) {
        if let ShardFilter::Compact(f) = self {
            f.advance_to(now);
        }
    }

    /// Whether nothing inserted is live at `now`.
    pub fn stale(&self, now: Tick) -> bool {
        match self {
            ShardFilter::Compact(f) => f.stale(now),
            ShardFilter::ExactEdge(f) => f.stale(now),
        }
    }

    /// The occupancy and the false positive rate it implies at `now`.
    pub fn occupancy(&self, now: Tick) -> (f64, f64) {
        match self {
            ShardFilter::Compact(f) => f.occupancy(),
            ShardFilter::ExactEdge(f) => f.occupancy(now),
        }
    }

    /// Keys held live (the compact filter's population; 0 for the tick filter).
    pub fn keys(&self) -> u64 {
        match self {
            ShardFilter::Compact(f) => f.population(),
            ShardFilter::ExactEdge(_) => 0,
        }
    }

    /// Memory held, in bits.
    pub fn memory_bits(&self) -> u64 {
        match self {
            ShardFilter::Compact(f) => f.memory_bits(),
            ShardFilter::ExactEdge(f) => f.memory_bits(),
        }
    }
}
