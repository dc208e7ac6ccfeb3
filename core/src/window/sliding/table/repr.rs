//! The serialized form of a [`Table`], checked on the way in: the slots, stash and sweep state
//! without the divisors and counts derived from them.

use super::super::packed::Packed;
use super::{is_sorted, Layout, Stashed, Table, CODES, CODE_BITS, FP_MASK};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The serialized form: everything but the derived divisors and counts.
#[derive(Serialize, Deserialize)]
pub(super) struct TableRepr {
    buckets: u64,
    layout: Layout,
    heads: Packed,
    low: Packed,
    stash: Vec<Stashed>,
    cursor: u64,
    sweep: u64,
    rng: u64,
}

impl From<Table> for TableRepr {
    fn from(t: Table) -> Self {
        TableRepr {
            buckets: t.buckets.divisor(),
            layout: t.layout,
            heads: t.heads,
            low: t.low,
            stash: t.stash,
            cursor: t.cursor,
            sweep: t.sweep,
            rng: t.rng,
        }
    }
}

impl TryFrom<TableRepr> for Table {
    type Error = Error;
    fn try_from(r: TableRepr) -> Result<Self> {
        // The slots read are checked against the bucket count before anything is allocated for
        // it: a count from a corrupted file must not size an allocation.
        let mut t = Table::assemble(r.buckets, r.layout, r.sweep, r.rng, r.heads, r.low)?;
        if r.cursor >= r.buckets || r.rng == 0 {
            return Err(Error::invalid(
                "table",
                "sweep cursor or relocation state out of range",
            ));
        }
        let states = t.layout.digit_states();
        if (0..t.heads.len()).any(|b| {
            let head = t.heads.get(b);
            head & ((1 << CODE_BITS) - 1) >= CODES || head >> CODE_BITS >= states
        }) {
            return Err(Error::invalid("table", "a bucket code is out of range"));
        }
        for b in 0..r.buckets {
            let e = t.bucket(b);
            if e.iter().any(|&v| v != 0 && v & FP_MASK == 0) {
                return Err(Error::invalid(
                    "table",
                    "a slot has a tag but no fingerprint",
                ));
            }
            if !is_sorted(&e) {
                return Err(Error::invalid(
                    "table",
                    "a bucket is not in canonical order",
                ));
            }
        }
        t.cursor = r.cursor;
        for s in &r.stash {
            if s.bucket >= r.buckets
                || s.fp == 0
                || s.fp > t.layout.fingerprints()
                || s.tag >= t.layout.tags
            {
                return Err(Error::invalid("table", "a stash entry is out of range"));
            }
        }
        t.stash = r.stash;
        t.rebuild_counts();
        Ok(t)
    }
}
