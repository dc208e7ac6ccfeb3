//! The bad-input catalogue of `docs/ERRORS.md`, one test per row, named after the row's id: each
//! feeds the input, asserts the error's variant with `matches!` and the message a user sees (its
//! `Display`, or for the main job its exit code and stderr line, never a panic). Rows that are
//! counted and reported rather than refused assert the count. The rows are grouped as the catalogue
//! groups them, one module a group, in `tests/errors/`.

#![allow(clippy::unwrap_used)]

#[path = "support/binary.rs"]
mod binary;
#[path = "support/piped.rs"]
mod piped;

use chronobloom::core::bloom::{BlockedBloomFilter, BloomFilter, FilterShape, Layout};
use chronobloom::core::decay::prior::ConstantProbability;
use chronobloom::core::decay::{AnswerRatePrior, BtbfShape, RecencySketch};
use chronobloom::core::matrix::{MatrixBloom, MatrixLayout, MatrixPbf, MatrixShape, TupleStats};
use chronobloom::core::sketch::{CountMinSketch, FmSketch};
use chronobloom::core::temporal::{
    Allocation, PartitionConfig, PartitionedPbf2, Pbf1, Pbf2, Retire, Sbf, TemporalFilter,
    TimeRange, UniformStrategy,
};
use chronobloom::core::window::{
    Apbf, GenerationSlices, SlidingBloomFilter, TaggedCuckooFilter, TickFilter,
    TimeLimitedBloomFilter, WindowFilter,
};
use chronobloom::core::Error as CoreError;
use chronobloom::operators::stats::RejectReason;
use chronobloom::operators::Error as OpError;
use chronobloom::operators::{
    timely, AllocatorConfig, DedupConfig, IndexConfig, KeyBatch, Lag, LocalIndex, MembershipConfig,
    MergeKeyBatches, PartitionSketch, Placement, TimedDedup, TimedTemporalIndex,
};
use chronobloom::trace::{
    parse_duration, CsvTrace, FlowKey, KeyKind, PcapTrace, Ticker, TraceError,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// Asserts that `result` is an error matching `pattern` whose message is exactly `message`.
macro_rules! refused {
    ($result:expr, $pattern:pat, $message:expr) => {{
        match $result {
            Ok(_) => panic!("accepted; expected `{}`", $message),
            Err(e) => {
                let shown = e.to_string();
                assert!(matches!(e, $pattern), "unexpected variant: {e:?}");
                assert_eq!(shown, $message);
            }
        }
    }};
}

/// Asserts that `result` is an error matching `pattern` whose message contains every one of
/// `parts` (for messages with an OS reason or a third-party parser's words in them).
macro_rules! refused_with {
    ($result:expr, $pattern:pat, $($part:expr),+) => {{
        match $result {
            Ok(_) => panic!("accepted"),
            Err(e) => {
                let shown = e.to_string();
                assert!(matches!(e, $pattern), "unexpected variant: {e:?}");
                $(assert!(shown.contains($part), "`{shown}` lacks `{}`", $part);)+
            }
        }
    }};
}

/// The rates no ε-taking builder accepts: 0, 1, NaN, negative, above 1.
const BAD_RATES: [f64; 5] = [0.0, 1.0, f64::NAN, -0.5, 1.5];

#[path = "errors/checkpoints.rs"]
mod checkpoints;
#[path = "errors/core_config.rs"]
mod core_config;
#[path = "errors/inputs.rs"]
mod inputs;
#[path = "errors/job_flags.rs"]
mod job_flags;
#[path = "errors/merging.rs"]
mod merging;
#[path = "errors/operator_config.rs"]
mod operator_config;
#[path = "errors/queries.rs"]
mod queries;
#[path = "errors/running.rs"]
mod running;

// Helpers the rows of several groups share.
use inputs::{capture, dir, frame, record, write, HEADER};
use job_flags::{binary, run};
use operator_config::{dedup, index};
