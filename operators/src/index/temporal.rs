//! The whole index in one call: local index, delta exchange, merge and queries, with the output
//! split into typed streams.

use super::config::IndexConfig;
use super::digest::EpochDigest;
use super::local::{self, TimedLocalIndex};
use super::local_state::LocalState;
use super::query::{fresh_cells, fresh_merged, merge_streams_with, QueryAnswer};
use super::resume::{IndexCells, IndexCheckpoint, IndexSnapshot};
use super::stats::EpochStats;
use crate::checkpoint::CheckpointError;
use crate::timed::Timed;
use chronobloom_core::hash::Key;
use chronobloom_core::temporal::{Allocation, Tick, TimeRange};
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// The index's outputs.
pub struct IndexStreams<'scope, K> {
    /// One answer per query, at the last tick of its answering epoch.
    pub answers: StreamVec<'scope, u64, QueryAnswer<K>>,
    /// Each worker's digest of the merged state after each epoch with records.
    pub digests: StreamVec<'scope, u64, EpochDigest>,
    /// Each worker's statistics for each epoch with records.
    pub stats: StreamVec<'scope, u64, EpochStats>,
}

/// Builds a temporal index over a stream of keys whose timestamps are their ticks, answering a
/// stream of `(key, range)` queries: [`LocalIndex`](crate::LocalIndex) followed by [`MergeQuery`].
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::{Event, Extract};
/// use chronobloom_core::temporal::{Allocation, Tick, TimeRange};
/// use chronobloom_operators::{IndexConfig, TemporalIndex};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let (answers, digests) = timely::execute_directly(move |worker| {
///     let (mut records, mut queries, answers, digests) = worker.dataflow::<u64, _, _>(|scope| {
///         let (r_in, records) = scope.new_input::<Vec<&'static str>>();
///         let (q_in, queries) = scope.new_input::<Vec<(String, TimeRange)>>();
///         let out = records.temporal_index(queries, &cfg);
///         (r_in, q_in, out.answers.capture(), out.digests.capture())
///     });
///     records.advance_to(12);
///     records.send("10.0.0.1"); // at tick 12
///     queries.advance_to(15);
///     queries.send(("10.0.0.1".to_string(), TimeRange::new(0, 11).unwrap()));
///     (answers, digests)
/// });
/// let answers: Vec<_> = answers.iter()
///     .flat_map(|e| match e { Event::Messages(_, a) => a, Event::Progress(_) => vec![] })
///     .collect();
/// assert_eq!(answers.len(), 1);
/// assert!(!answers[0].present); // it appeared at tick 12, not in [0, 11]
/// assert_eq!(answers[0].epoch, 1); // answered against epochs 0 and 1
/// let digests: Vec<_> = digests.extract().into_iter().flat_map(|(_, d)| d).collect();
/// assert_eq!(digests.len(), 1); // epoch 1, the only one with records
/// ```
pub trait TemporalIndex<'scope, K> {
    /// Indexes this stream and answers `queries`.
    fn temporal_index<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q>;

    /// As [`Self::temporal_index`], with per-partition allocations announced on `allocations`
    /// (see [`LocalIndex::local_index_with_allocations`](crate::LocalIndex::local_index_with_allocations)).
    fn temporal_index_with_allocations<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q>;
}

impl<'scope, K: Key + 'static> TemporalIndex<'scope, K> for StreamVec<'scope, u64, K> {
    fn temporal_index<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q> {
        self.timed().temporal_index_timed(queries, config)
    }

    fn temporal_index_with_allocations<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q> {
        self.timed()
            .temporal_index_timed_with_allocations(queries, allocations, config)
    }
}

/// [`TemporalIndex`] for `(tick, key)` records on timestamps that are a lower bound of their
/// ticks ([`crate::timed`]); queries stay stamped with the tick they are issued at.
pub trait TimedTemporalIndex<'scope> {
    /// Indexes this stream and answers `queries`.
    fn temporal_index_timed<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q>;

    /// As [`Self::temporal_index_timed`], with announced allocations.
    fn temporal_index_timed_with_allocations<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q>;

    /// [`Self::temporal_index_timed`], starting from a checkpointed state when `restore` is
    /// given, with a handle that snapshots the state at a checkpoint boundary
    /// ([`crate::checkpoint`]). A snapshot that does not fit `config` or this worker's share is
    /// refused before anything is built.
    #[allow(clippy::type_complexity)]
    fn temporal_index_timed_resumable<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
        restore: Option<IndexSnapshot>,
    ) -> Result<(IndexStreams<'scope, Q>, IndexCheckpoint), CheckpointError>;

    /// [`Self::temporal_index_timed_resumable`] with announced allocations (the allocator's,
    /// itself resumed from the same checkpoint: [`crate::Allocator::allocator_resumable`]).
    #[allow(clippy::type_complexity)]
    fn temporal_index_timed_with_allocations_resumable<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
        restore: Option<IndexSnapshot>,
    ) -> Result<(IndexStreams<'scope, Q>, IndexCheckpoint), CheckpointError>;
}

impl<'scope, K: Key + 'static> TimedTemporalIndex<'scope> for StreamVec<'scope, u64, (Tick, K)> {
    fn temporal_index_timed<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q> {
        let cells = fresh_cells(config, self.scope().index(), self.scope().peers());
        merge_streams_with(self.local_index_timed(config), queries, config, cells)
    }

    fn temporal_index_timed_with_allocations<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> IndexStreams<'scope, Q> {
        let cells = fresh_cells(config, self.scope().index(), self.scope().peers());
        let shipments = self.local_index_timed_with_allocations(allocations, config);
        merge_streams_with(shipments, queries, config, cells)
    }

    fn temporal_index_timed_resumable<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        config: &IndexConfig,
        restore: Option<IndexSnapshot>,
    ) -> Result<(IndexStreams<'scope, Q>, IndexCheckpoint), CheckpointError> {
        resumable(self, queries, None, config, restore)
    }

    fn temporal_index_timed_with_allocations_resumable<Q: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (Q, TimeRange)>,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
        restore: Option<IndexSnapshot>,
    ) -> Result<(IndexStreams<'scope, Q>, IndexCheckpoint), CheckpointError> {
        resumable(self, queries, Some(allocations), config, restore)
    }
}

/// The resumable index, with announced allocations when `allocations` is given.
#[allow(clippy::type_complexity)]
fn resumable<'scope, K: Key + 'static, Q: Key + ExchangeData + Clone>(
    records: StreamVec<'scope, u64, (Tick, K)>,
    queries: StreamVec<'scope, u64, (Q, TimeRange)>,
    allocations: Option<StreamVec<'scope, u64, (u64, Allocation)>>,
    config: &IndexConfig,
    restore: Option<IndexSnapshot>,
) -> Result<(IndexStreams<'scope, Q>, IndexCheckpoint), CheckpointError> {
    let scope = records.scope();
    let (me, peers) = (scope.index(), scope.peers());
    let local = LocalState::new(config.clone(), me, peers, allocations.is_some());
    let cells = IndexCells::new(local, fresh_merged(config, me, peers), restore)?;
    let allocations = match allocations {
        Some(announced) => announced.broadcast(),
        None => empty(scope),
    };
    let shipments = local::build(records, allocations, cells.local.clone());
    let merge = (cells.merged.clone(), cells.digest.clone());
    let streams = merge_streams_with(shipments, queries, config, merge);
    Ok((streams, IndexCheckpoint { cells }))
}
