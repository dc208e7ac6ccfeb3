//! # chronobloom-operators
//!
//! Timely Dataflow operators for approximate temporal membership (DESIGN.md §3).
//!
//! * [`LocalIndex`]: each worker inserts its records into its own per-partition PBF-2 and, when
//!   an epoch closes, ships the changed words of every level ([`delta`]).
//! * [`MergeQuery`]: shipments are OR-merged into the merged state ([`MergedState`], replicated on
//!   every worker or sharded by whole levels, [`Placement`]) in epoch order, and queries are answered
//!   against exactly
//!   the epochs they depend on; per-epoch [`stats`] and [`digest`]s come out alongside.
//! * [`TemporalIndex`]: both in one call, with the output split into typed streams.
//!
//! Records carry their own ticks (`(tick, record)`, [`timed`]) on `u64` timestamps that are a
//! lower bound of them, so the frontier is the watermark (`Timed*` traits); the tick-timestamped
//! traits ([`LocalIndex`], [`TemporalIndex`], [`Dedup`]) adapt to that one code path. Configuration errors are returned by
//! [`IndexConfigBuilder::build`] before a dataflow starts; bad records are counted, never panic.

pub mod batch_query;
pub mod config;
pub mod delta;
pub mod digest;
pub mod error;
pub mod held;
pub mod index;
pub mod query;
pub mod state;
pub mod stats;
pub mod temporal;
pub mod timed;

pub use batch_query::{KeyBatch, KeyBatchAnswer, MergeKeyBatches};
pub use config::{AllocationLag, IndexConfig, IndexConfigBuilder, Placement};
pub use error::{Error, Result};
pub use index::{LocalIndex, TimedLocalIndex};
pub use query::{IndexEvent, MergeQuery, QueryAnswer};
pub use state::MergedState;
pub use temporal::{IndexStreams, TemporalIndex, TimedTemporalIndex};
pub use timed::{AtTicks, Timed};
/// The Timely Dataflow version these operators are built on.
pub use timely;
pub mod dedup;
pub mod dedup_stats;
pub mod tick_filter;
pub mod window_view;
pub use dedup::{Dedup, DedupConfig, DedupConfigBuilder, DedupMode, DedupStreams, TimedDedup};
pub use dedup_stats::DedupStats;
pub use tick_filter::TickFilter;
pub use window_view::{ViewDelta, WindowView};
pub mod sketch_ops;
pub use sketch_ops::{
    AllocationReport, AllocationSource, Allocator, AllocatorConfig, AllocatorStreams, Lag,
    PartitionSketch, SketchStats,
};
pub mod differential;
pub use differential::{
    AnsweredQueries, IndexCollection, IndexedCollection, QueryCollection, RangeQuery,
};
pub use differential::{DedupCollection, DedupedCollection};
/// The Differential Dataflow version the collection traits are built on.
pub use differential_dataflow;
