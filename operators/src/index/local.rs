//! The local index operator: each worker's own per-partition PBF-2s, and their deltas at epoch
//! close.

use super::config::IndexConfig;
use super::delta::Shipment;
use super::local_state::LocalState;
use crate::batched::ByTime;
use crate::timed::Timed;
use chronobloom_core::hash::Key;
use chronobloom_core::temporal::{Allocation, Tick};
use std::cell::RefCell;
use std::rc::Rc;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;

/// Indexes records into per-worker PBF-2s and emits, when an epoch closes, what the merged
/// state needs of them: the epoch's records as hashes, or the words each level changed.
///
/// A record is a key; its tick is its **dataflow timestamp** (`u64` ticks, identity mapping; this
/// is the adapter of [`TimedLocalIndex`], where records carry their own ticks). The epoch closes
/// when the input frontier passes its last tick; the worker then sends every worker a
/// [`Shipment`] stamped with the least timestamp of the epoch's records (the epochs of records
/// sent at one timestamp go out at that time, one time for the merge to track instead of one per
/// epoch): the epoch's records as key hashes with tick offsets while they are fewer bytes than
/// the partition's words, otherwise the changed words of every level (all of them to every worker
/// when replicated, the levels each worker owns when sharded), each level sparse, bitmap or dense,
/// whichever is smallest. Records of later epochs wait in a bounded buffer until their epoch is
/// the earliest open one, so a shipment holds exactly its epoch's records. Records at or past the
/// horizon are counted, not indexed.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Event;
/// use chronobloom_operators::{IndexConfig, LocalIndex};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let captured = timely::execute_directly(move |worker| {
///     let (mut input, captured) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, records) = scope.new_input::<Vec<u64>>();
///         (input, records.local_index(&cfg).capture())
///     });
///     // the timestamps are the ticks: key 7 at tick 3, key 8 at tick 42, key 9 at tick 500
///     for (key, tick) in [(7u64, 3u64), (8, 42), (9, 500)] {
///         input.advance_to(tick);
///         input.send(key);
///     }
///     captured
/// });
/// let shipments: Vec<_> = captured.iter()
///     .flat_map(|e| match e { Event::Messages(_, s) => s, Event::Progress(_) => vec![] })
///     .collect();
/// let epochs: Vec<u64> = shipments.iter().map(|s| s.epoch).collect();
/// assert_eq!(epochs, vec![0, 4, 50]); // one worker: one shipment per epoch with records
/// // one record: its hash and tick are fewer bytes than the words it changed
/// assert_eq!(shipments[0].records.as_ref().map(|r| r.len()), Some(1));
/// let rejected = &shipments[2].local.as_ref().unwrap().rejected;
/// assert_eq!(rejected.values().sum::<u64>(), 1); // tick 500 is beyond the horizon
/// ```
pub trait LocalIndex<'scope> {
    /// Indexes this stream's records and emits one shipment per destination worker per epoch
    /// with records; every partition uses the configuration's allocation.
    fn local_index(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment>;

    /// As [`Self::local_index`], with per-partition allocations announced on `allocations` as
    /// `(partition, allocation)` records stamped with the partition's start tick (or earlier).
    ///
    /// Announcements are broadcast to every worker. Which announcement a partition uses is set
    /// by [`crate::config::AllocationLag`]; records wait for it in the bounded buffer
    /// ([`IndexConfig::max_buffered`], overflow rejected and counted). Announcements that do not
    /// fit the configuration, name a partition past the horizon or are stamped after the
    /// partition's start are refused and counted ([`crate::stats::LocalStats`]); of several for
    /// one partition the smallest (by level shapes) is used, so every worker picks the same.
    fn local_index_with_allocations(
        self,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, Shipment>;
}

impl<'scope, K: Key + 'static> LocalIndex<'scope> for StreamVec<'scope, u64, K> {
    fn local_index(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment> {
        self.timed().local_index_timed(config)
    }

    fn local_index_with_allocations(
        self,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, Shipment> {
        self.timed()
            .local_index_timed_with_allocations(allocations, config)
    }
}

/// [`LocalIndex`] for records that carry their own tick: `(tick, key)` records on timestamps that
/// are a lower bound of their ticks (an epoch's first tick, say), so the input frontier is the
/// watermark and the per-record cost does not depend on how fine the ticks are.
///
/// A record whose tick is below its timestamp is **late**: it is indexed at its timestamp instead
/// and counted in [`LocalStats::late`](super::stats::LocalStats::late). Everything else is as [`LocalIndex`]: the same filters,
/// the same shipments, bit for bit.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Event;
/// use chronobloom_operators::{IndexConfig, TimedLocalIndex};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let captured = timely::execute_directly(move |worker| {
///     let (mut input, captured) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, records) = scope.new_input::<Vec<(u64, u64)>>();
///         (input, records.local_index_timed(&cfg).capture())
///     });
///     input.send((3, 7)); // key 7 at tick 3, key 8 at tick 12, on timestamp 0
///     input.send((12, 8));
///     input.advance_to(10);
///     input.send((4, 9)); // late: tick 4 on timestamp 10, indexed at tick 10
///     captured
/// });
/// let shipments: Vec<_> = captured.iter()
///     .flat_map(|e| match e {
///         Event::Messages(t, s) => {
///             let t = *t.least().unwrap();
///             s.into_iter().map(|s| (t, s)).collect()
///         }
///         Event::Progress(_) => vec![],
///     })
///     .collect();
/// // both epochs at timestamp 0, the least their records had
/// let when: Vec<(u64, u64)> = shipments.iter().map(|(t, s)| (*t, s.epoch)).collect();
/// assert_eq!(when, vec![(0, 0), (0, 1)]);
/// let late: u64 = shipments.iter().filter_map(|(_, s)| s.local.as_ref()).map(|l| l.late).sum();
/// assert_eq!(late, 1);
/// ```
pub trait TimedLocalIndex<'scope> {
    /// [`LocalIndex::local_index`] for `(tick, key)` records.
    fn local_index_timed(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment>;

    /// [`LocalIndex::local_index_with_allocations`] for `(tick, key)` records.
    fn local_index_timed_with_allocations(
        self,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, Shipment>;
}

impl<'scope, K: Key + 'static> TimedLocalIndex<'scope> for StreamVec<'scope, u64, (Tick, K)> {
    fn local_index_timed(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment> {
        let none = empty(self.scope());
        let scope = self.scope();
        let state = LocalState::new(config.clone(), scope.index(), scope.peers(), false);
        build(self, none, Rc::new(RefCell::new(state)))
    }

    fn local_index_timed_with_allocations(
        self,
        allocations: StreamVec<'scope, u64, (u64, Allocation)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, Shipment> {
        let scope = self.scope();
        let state = LocalState::new(config.clone(), scope.index(), scope.peers(), true);
        build(self, allocations.broadcast(), Rc::new(RefCell::new(state)))
    }
}

/// The operator around a worker's (fresh or restored) local state.
pub(super) fn build<'scope, K: Key + 'static>(
    records: StreamVec<'scope, u64, (Tick, K)>,
    allocations: StreamVec<'scope, u64, (u64, Allocation)>,
    state: Rc<RefCell<LocalState>>,
) -> StreamVec<'scope, u64, Shipment> {
    records.binary_frontier(
        allocations,
        Pipeline,
        Pipeline,
        "LocalIndex",
        move |default_cap, _info| {
            // Capabilities are taken per epoch from the data; time 0 must not be held.
            drop(default_cap);
            move |(input, frontier), (a_input, a_frontier), output| {
                let mut state = state.borrow_mut();
                let port = output.output_index();
                a_input.for_each_stamp(|cap, data| {
                    let Some(&t) = cap.least() else { return };
                    for batch in data {
                        for (p, a) in batch.drain(..) {
                            state.announce(t, p, a);
                        }
                    }
                });
                state.alloc_head = Some(a_frontier.frontier().as_option().copied());
                let head = frontier.frontier().as_option().copied();
                // one message per time (see `batched`)
                let mut closed = ByTime::default();
                for (cap, shipments) in state.close_before(head) {
                    closed.add(cap, shipments);
                }
                for (cap, mut shipments) in closed.take() {
                    output.session(&cap).give_container(&mut shipments);
                }
                input.for_each_stamp(|cap, data| {
                    let Some(&t) = cap.least() else { return };
                    for batch in data {
                        state.accept(t, batch, |last| cap.delayed(&last, port));
                    }
                });
            }
        },
    )
}
