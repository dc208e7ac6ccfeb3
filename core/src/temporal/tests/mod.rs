use super::*;
use crate::bloom::{Filter, FilterShape, Layout, BLOCK_BITS};
use crate::hash::{mix64, KeyHash};
use crate::testing::{assert_rate_near, Z99};
use proptest::prelude::*;

fn r(s: u64, e: u64) -> TimeRange {
    TimeRange::new(s, e).unwrap()
}

mod blocked;
mod checkpoints;
mod examples;
mod fpr;
mod no_false_negatives;
mod partitioned;

// Helpers the groups share.
use checkpoints::tamper;
use fpr::{assert_poisson_binomial, fpr_of, query, random_records, T};
use no_false_negatives::{
    assert_no_false_negatives, assert_serde_keeps_answers, insert_in_tick_order, records, spans,
    split_and_merge,
};
use partitioned::{partition_cfg, Alternating};
