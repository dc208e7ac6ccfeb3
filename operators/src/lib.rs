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

mod batched;
pub mod checkpoint;
pub mod dedup;
pub mod differential;
pub mod error;
pub mod index;
pub mod membership;
pub mod share;
pub mod sketches;
pub mod timed;

pub use dedup::stats::DedupStats;
pub use dedup::view::{ViewDelta, WindowView};
pub use dedup::{
    Dedup, DedupCheckpoint, DedupConfig, DedupConfigBuilder, DedupMode, DedupSnapshot,
    DedupStreams, TimedDedup,
};
pub use differential::{
    AnsweredQueries, DedupCollection, DedupedCollection, IndexCollection, IndexedCollection,
    MembershipAnswers, MembershipCollection, QueryCollection, RangeQuery,
};
/// The Differential Dataflow version the collection traits are built on.
pub use differential_dataflow;
pub use error::{Error, Result};
pub use index::batch::{KeyBatch, KeyBatchAnswer, MergeKeyBatches};
pub use index::config::{AllocationLag, IndexConfig, IndexConfigBuilder, Placement};
pub use index::matrix_batch::{
    MatrixBatchAnswer, MatrixBatchEvent, MatrixKeyBatches, TimedMatrixKeyBatches,
};
pub use index::query::{IndexEvent, MergeQuery, QueryAnswer};
pub use index::state::MergedState;
pub use index::temporal::{IndexStreams, TemporalIndex, TimedTemporalIndex};
pub use index::{config, delta, digest, held, query, state, stats, temporal};
pub use index::{IndexCheckpoint, IndexSnapshot};
pub use index::{LocalIndex, TimedLocalIndex};
pub use membership::{
    MembershipCheckpoint, MembershipConfig, MembershipConfigBuilder, MembershipSnapshot,
    MembershipStats, MembershipStreams, SliceShipment, TimedWindowMembership,
};
pub use sketches::{
    AllocationReport, AllocationSource, Allocator, AllocatorCheckpoint, AllocatorConfig,
    AllocatorSnapshot, AllocatorStreams, Lag, PartitionSketch, SketchStats,
};
pub use timed::{AtTicks, Timed};
/// The Timely Dataflow version these operators are built on.
pub use timely;
