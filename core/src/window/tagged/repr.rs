//! The serialized form of a [`TaggedCuckooFilter`], checked on the way in: a filter read from a
//! file answers like the one written, and sizes nothing beyond a few times what the file holds.

use super::any::AnyTable;
use super::rate::Rate;
use super::table::Slot;
use super::tables::Tables;
use super::{
    live_generations, narrow_enough, with_tables, Store, TaggedCuckooFilter, TaggedStats,
    MAX_LIVE_GENERATIONS, MAX_WINDOW, YOUNG_GENERATIONS,
};
use crate::error::{Error, Result};
use crate::temporal::Tick;
use serde::Deserialize;

/// How far the population and the rate counts may exceed the entries the tables hold. Every
/// key counted was placed in a slot of a table; the current generation's new keys are all
/// still in the tables, but a drained table is dropped without a recount, so the population
/// (and the previous generation's count) may still include some of its keys, which were at most
/// as many as the tables that replaced it hold (each sized for the population when started).
const COUNT_SLACK: u64 = 4;

#[derive(Deserialize)]
pub(super) struct TaggedRepr {
    window: Tick,
    slack: Tick,
    fpr: f64,
    seed: u64,
    gen: Option<u64>,
    live_gens: u64,
    store: Store,
    started: u64,
    first_buckets: usize,
    swept: u64,
    rate: Rate,
    population: u64,
    young: Option<Vec<u64>>,
    stats: TaggedStats,
}

impl TryFrom<TaggedRepr> for TaggedCuckooFilter {
    type Error = Error;

    fn try_from(r: TaggedRepr) -> Result<Self> {
        if !((1..=MAX_WINDOW).contains(&r.window) && r.fpr > 0.0 && r.fpr < 1.0) {
            return Err(Error::invalid(
                "window",
                format!("window {} or fpr {} out of range", r.window, r.fpr),
            ));
        }
        let live_gens = live_generations(r.window, r.slack);
        if r.live_gens != live_gens || live_gens > MAX_LIVE_GENERATIONS {
            return Err(Error::invalid(
                "live_gens",
                format!(
                    "{} does not match window {} and slack {}",
                    r.live_gens, r.window, r.slack
                ),
            ));
        }
        let held = match &r.store {
            Store::Narrow(t) if narrow_enough(r.fpr) => check_tables(t, r.gen, r.fpr)?,
            Store::Wide(t) if !narrow_enough(r.fpr) => check_tables(t, r.gen, r.fpr)?,
            _ => {
                return Err(Error::invalid(
                    "store",
                    "the slot width does not match the false positive rate",
                ))
            }
        };
        check_progress(&r, held)?;
        let mut store = r.store;
        with_tables!(&mut store, t => t.tables.iter_mut().for_each(|x| x.recount()));
        Ok(TaggedCuckooFilter {
            window: r.window,
            generations: r.slack.into(),
            fpr: r.fpr,
            seed: r.seed,
            gen: r.gen,
            live_gens: r.live_gens,
            store,
            started: r.started,
            first_buckets: r.first_buckets,
            swept: r.swept,
            rate: r.rate,
            population: r.population,
            young: r.young,
            stats: r.stats,
        })
    }
}

/// Checks the tables (one at least, each consistent, stopped no later than the current
/// generation, in order) and returns the entries they can hold: slots plus stashed entries.
fn check_tables<S: Slot>(t: &Tables<S>, gen: Option<u64>, fpr: f64) -> Result<u64> {
    if t.tables.is_empty() || t.stopped.len() + 1 != t.tables.len() {
        return Err(Error::invalid(
            "tables",
            "need one active table and a stop generation for each other",
        ));
    }
    if !matches!(t.active(), AnyTable::Cuckoo(_) | AnyTable::List(_)) {
        return Err(Error::invalid(
            "tables",
            "the table receiving insertions is a repacked drained one",
        ));
    }
    let in_order = t.stopped.windows(2).all(|w| w[0] <= w[1]);
    if !in_order || t.stopped.last().is_some_and(|&s| gen.is_none_or(|g| s > g)) {
        return Err(Error::invalid(
            "tables",
            "stop generations out of order or after the current generation",
        ));
    }
    let mut held = 0u64;
    for table in &t.tables {
        table.check(fpr)?;
        held = held.saturating_add(table.held());
    }
    Ok(held)
}

/// Checks the generation bookkeeping and the counts that size the next tables against the
/// entries the tables can hold (`held`).
fn check_progress(r: &TaggedRepr, held: u64) -> Result<()> {
    let bound = held.saturating_mul(COUNT_SLACK).saturating_add(64);
    let in_time = match r.gen {
        None => r.population == 0 && r.rate == Rate::default(),
        Some(g) => {
            r.swept <= g
                && r.started <= g
                && r.rate.consistent(g, r.slack)
                && r.rate.current_new <= held
        }
    };
    if !in_time {
        return Err(Error::invalid(
            "gen",
            "generation bookkeeping out of order (sweep, table start or rate after the current generation)",
        ));
    }
    // the young stream's hashes: only in its first generations, and repeats removed whenever
    // the list reaches a power of two, so fewer than twice the keys the tables can hold
    let young_ok = r.young.as_ref().is_none_or(|y| {
        r.gen
            .is_none_or(|g| g < r.rate.first_gen.saturating_add(YOUNG_GENERATIONS))
            && (y.len() as u64) <= bound.saturating_mul(2).saturating_add(1024)
    });
    if !young_ok {
        return Err(Error::invalid(
            "young",
            "hashes of a young stream kept past its young generations, or more than its tables hold",
        ));
    }
    if r.population > bound || r.rate.previous_new > bound {
        return Err(Error::invalid(
            "population",
            format!(
                "{} keys live and {} new last generation, for tables of {held} entries",
                r.population, r.rate.previous_new
            ),
        ));
    }
    Ok(())
}
