//! Windowed deduplication: a record at tick `t` passes iff its key was not seen in `(t - W, t]`,
//! up to a bounded slack at the window's edge and the false positive rate ε.
//!
//! # Semantics
//!
//! A record's tick is its own ([`TimedDedup`]: `(tick, record)` on timestamps that are a lower
//! bound of it) or its dataflow timestamp ([`Dedup`]). "Seen" means any record with the same key,
//! passed or dropped. An epoch's records wait until the input frontier passes the epoch and are
//! then decided tick by tick, each tick in two phases, so the outcome does not depend on arrival
//! order, scheduling or how the records were stamped:
//!
//! 1. every record is checked against the state of the ticks before `t` (no insert of tick `t` is
//!    visible yet);
//! 2. every key of the tick is inserted at `t`; records of tick `t` with the same key are resolved
//!    exactly (by the key's canonical bytes): one passes (the one with the smallest `bincode`
//!    encoding, so the choice is deterministic) and the others are dropped.
//!
//! # Window state
//!
//! Each key shard ([`DedupConfig::shards`]) holds one filter. By default it is the compact
//! [`TaggedCuckooFilter`](chronobloom_core::window::TaggedCuckooFilter): one 16-bit slot per key
//! (fingerprint and generation tag), sized from the stream. Its guarantee, with slack `S`
//! ([`DedupConfig::slack`], default `W / 16`):
//!
//! * a key seen in `(t − W, t]` is **always** seen: no duplicate within the window passes
//!   (`ByKey`);
//! * a key last seen `W + S` or more ticks before `t` is forgotten, up to ε (a false drop);
//! * a key last seen `W` to `W + S − 1` ticks before may count either way.
//!
//! [`DedupConfigBuilder::exact_edge`] keeps a sharp edge (`S = 0`) with a
//! [`TickFilter`](chronobloom_core::window::TickFilter) per shard instead: cells holding the
//! latest tick, about 10 per key of 8 to 32 bits, sized once for
//! [`DedupConfigBuilder::expected_items_per_window`]. Shards with nothing live at the frontier
//! are freed, records or not; the compact filters also end their generations on the frontier.
//! A key's 64-bit fingerprint ([`KeyHash::lo`](chronobloom_core::hash::KeyHash::lo)) picks its
//! shard and its slots; it is computed where the record is decided (and, for routing, where it
//! enters), never shipped. A tick's keys enter a shard as one batch whose outcome does not depend
//! on their order.
//!
//! # Routing modes
//!
//! * [`DedupMode::ByKey`]: records are exchanged to the worker owning
//!   their key's shard (`shard % peers`, or [`crate::share::owner`] with a lead share). Every duplicate within the window is dropped, always. A
//!   shard's filter sees the same keys whatever the number of workers, so the output is
//!   **identical for any number of workers** (as a multiset per timestamp). Cost: every record
//!   crosses the network once with probability `(peers - 1) / peers`.
//! * [`DedupMode::Local`]: records stay on their worker, which holds every shard. A record at `t`
//!   is dropped iff its key is in the worker's shard filters, which hold its own keys at their ticks
//!   and the **global view** ([`WindowView`](view::WindowView)): the other workers' keys of closed epochs, shipped as
//!   fingerprints when the input frontier passes an epoch (on an output of their own, so a
//!   worker waits on the others' input, never on their deciding: the epochs pipeline) and
//!   inserted at the epoch's last tick before the first tick of a later epoch is decided. Ticks
//!   of epoch `e` are decided only once every delta of epochs before `e` has arrived, so the
//!   outcome is deterministic for a given placement of records on workers. What may differ from
//!   `ByKey`:
//!   - **missed duplicates**: a key seen by *another* worker in the same (still open) epoch as `t`
//!     passes again. A duplicate whose earlier occurrence is at least one epoch boundary away is
//!     always caught; in particular one at least `epoch_len` ticks earlier (and less than `W`).
//!   - **extra drops at the window's edge**: the view has epoch granularity, so a key another
//!     worker saw `W` to `W + epoch_len - 1` ticks before `t` is dropped when its epoch still
//!     overlaps `(t - W, t]`.
//!
//!   The filters hold all keys of a window, so the false positive bound is ε, as in `ByKey`.
//!   With one worker `Local` decides exactly like `ByKey`. Bytes moved per epoch: 8 per distinct
//!   key a worker inserted in the epoch, per other worker.
//!
//! Nothing a user sends panics a worker: every tick and key is valid; a view delta for an epoch
//! already inserted (a peer that does not follow the protocol) is counted in
//! [`DedupStats::refused_deltas`]. Configuration errors are returned by
//! [`DedupConfigBuilder::build`] before the dataflow starts.

mod config;
mod decide;
mod resume;
mod route;
mod shard;
pub mod stats;
pub mod view;

pub use config::{DedupConfig, DedupConfigBuilder, DedupMode, MAX_SHARDS, MAX_WINDOW};
pub use resume::{DedupCheckpoint, DedupSnapshot};
pub use shard::MAX_SHARD_CELLS;

use crate::batched::ByTime;
use crate::checkpoint::CheckpointError;
use crate::timed::{AtTicks, Timed};
use chronobloom_core::hash::{CanonicalBytes, Key};
use chronobloom_core::temporal::Tick;
use decide::DecideState;
use route::{fingerprint, Bundle};
use stats::DedupStats;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::{ConnectLoop, Feedback};
use timely::dataflow::StreamVec;
use timely::ExchangeData;
use view::ViewDelta;

/// The dedup operator's outputs.
pub struct DedupStreams<'scope, D> {
    /// The records that passed, at their own timestamps.
    pub passed: StreamVec<'scope, u64, D>,
    /// Each worker's statistics per epoch, at the least timestamp of the epoch's records (at most
    /// its last tick).
    pub stats: StreamVec<'scope, u64, DedupStats>,
}

/// Windowed deduplication of a stream whose timestamps are ticks (see the [module docs](self)):
/// [`TimedDedup`] on the records stamped with their timestamps, the passed records put back on
/// their ticks.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Extract;
/// use chronobloom_operators::{Dedup, DedupConfig, DedupMode};
///
/// let cfg = DedupConfig::builder()
///     .window(60)
///     .epoch_len(10)
///     .expected_items_per_window(1_000)
///     .mode(DedupMode::ByKey)
///     .build()
///     .unwrap();
/// let ip = |last: u8| std::net::Ipv4Addr::new(10, 0, 0, last);
/// let passed = timely::execute_directly(move |worker| {
///     let (mut input, passed) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, flows) = scope.new_input::<Vec<(std::net::Ipv4Addr, u16)>>();
///         let out = flows.dedup_by(&cfg, |flow: &(std::net::Ipv4Addr, u16)| *flow);
///         (input, out.passed.capture())
///     });
///     for (tick, flow) in [(0, (ip(1), 443)), (5, (ip(1), 443)), (59, (ip(1), 443)),
///                          (70, (ip(1), 443)), (70, (ip(2), 80))] {
///         input.advance_to(tick);
///         input.send(flow);
///     }
///     passed
/// });
/// // ticks 5 and 59 repeat tick 0 within 60 ticks; tick 70 is 11 ticks after the last sighting
/// assert_eq!(passed.extract(), vec![(0, vec![(ip(1), 443)]), (70, vec![(ip(2), 80)])]);
/// ```
pub trait Dedup<'scope, D> {
    /// Passes each record whose key (`key(record)`) was not seen in the window ending at its tick.
    fn dedup_by<K, F>(self, config: &DedupConfig, key: F) -> DedupStreams<'scope, D>
    where
        K: Key,
        F: Fn(&D) -> K + 'static;
}

impl<'scope, D: ExchangeData> Dedup<'scope, D> for StreamVec<'scope, u64, D> {
    fn dedup_by<K, F>(self, config: &DedupConfig, key: F) -> DedupStreams<'scope, D>
    where
        K: Key,
        F: Fn(&D) -> K + 'static,
    {
        let out = self.timed().dedup_timed_by(config, key);
        DedupStreams {
            passed: out.passed.at_ticks(),
            stats: out.stats,
        }
    }
}

/// Windowed deduplication of `(tick, record)` records on timestamps that are a lower bound of
/// their ticks ([`crate::timed`]): the decisions of [`Dedup`] (see the [module docs](self)),
/// taken an epoch at a time once the frontier (the watermark) has passed the epoch, so the
/// per-record cost does not depend on how fine the ticks are. Passed records come out as
/// `(tick, record)` at the least timestamp their epoch's records had, and the epoch's statistics
/// at the same time: an input whose timestamps each carry several epochs' records (a reader that
/// moves its time on every few epochs) gives the operators downstream one time to track for them,
/// not one per epoch. A record whose tick is below its timestamp is **late**: decided at its
/// timestamp and counted in [`DedupStats::late`].
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Extract;
/// use chronobloom_operators::{DedupConfig, TimedDedup};
///
/// let cfg = DedupConfig::builder().window(60).epoch_len(100).expected_items_per_window(1_000)
///     .build().unwrap();
/// let passed = timely::execute_directly(move |worker| {
///     let (mut input, passed) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, flows) = scope.new_input::<Vec<(u64, String)>>();
///         (input, flows.dedup_timed_by(&cfg, |k: &String| k.clone()).passed.capture())
///     });
///     // one epoch of 100 ticks, all records on its first tick as timestamp
///     for (tick, key) in [(0, "a"), (5, "a"), (59, "a"), (70, "a"), (70, "b")] {
///         input.send((tick, key.to_string()));
///     }
///     passed
/// });
/// let expected = vec![(0, "a".to_string()), (70, "b".to_string())];
/// assert_eq!(passed.extract(), vec![(0, expected)]);
/// ```
pub trait TimedDedup<'scope, D> {
    /// Passes each record whose key (`key(record)`) was not seen in the window ending at its tick.
    fn dedup_timed_by<K, F>(self, config: &DedupConfig, key: F) -> DedupStreams<'scope, (Tick, D)>
    where
        K: Key,
        F: Fn(&D) -> K + 'static;

    /// [`Self::dedup_timed_by`], starting from a checkpointed state when `restore` is given, with
    /// a handle that snapshots the state at a checkpoint boundary ([`crate::checkpoint`]). A
    /// snapshot that does not fit `config` or the worker count is refused before anything is
    /// built.
    #[allow(clippy::type_complexity)]
    fn dedup_timed_resumable<K, F>(
        self,
        config: &DedupConfig,
        key: F,
        restore: Option<DedupSnapshot>,
    ) -> Result<(DedupStreams<'scope, (Tick, D)>, DedupCheckpoint), CheckpointError>
    where
        K: Key,
        F: Fn(&D) -> K + 'static;
}

/// Bytes of records this worker's router sent other workers, per epoch.
type Routed = Rc<RefCell<BTreeMap<u64, u64>>>;

/// A record's key as canonical bytes: the exact identity of same-tick records.
type KeyBytes<D> = Rc<dyn Fn(&D) -> CanonicalBytes>;

/// A record's key fingerprint, [`KeyHash::lo`] of [`Key::key_hash`] (the hash of the canonical
/// bytes, computed without them where the key type can).
type Fingerprint<D> = Rc<dyn Fn(&D) -> u64>;

impl<'scope, D: ExchangeData> TimedDedup<'scope, D> for StreamVec<'scope, u64, (Tick, D)> {
    fn dedup_timed_by<K, F>(self, config: &DedupConfig, key: F) -> DedupStreams<'scope, (Tick, D)>
    where
        K: Key,
        F: Fn(&D) -> K + 'static,
    {
        let scope = self.scope();
        let state = fresh_state(config, scope.index(), scope.peers(), key);
        build(self, state).0
    }

    fn dedup_timed_resumable<K, F>(
        self,
        config: &DedupConfig,
        key: F,
        restore: Option<DedupSnapshot>,
    ) -> Result<(DedupStreams<'scope, (Tick, D)>, DedupCheckpoint), CheckpointError>
    where
        K: Key,
        F: Fn(&D) -> K + 'static,
    {
        let scope = self.scope();
        let mut state = fresh_state(config, scope.index(), scope.peers(), key);
        if let Some(snap) = restore {
            state.import(snap)?;
        }
        Ok(build(self, state))
    }
}

/// A worker's empty dedup state for records keyed by `key`.
fn fresh_state<D: ExchangeData, K: Key, F: Fn(&D) -> K + 'static>(
    config: &DedupConfig,
    me: usize,
    peers: usize,
    key: F,
) -> DecideState<D> {
    let key = Rc::new(key);
    let key = Rc::new(key);
    let key_bytes: KeyBytes<D> = {
        let key = Rc::clone(&key);
        Rc::new(move |d: &D| {
            let mut bytes = CanonicalBytes::new();
            key(d).write_canonical(&mut bytes);
            bytes
        })
    };
    let seed = config.seed();
    let fp: Fingerprint<D> = Rc::new(move |d: &D| key(d).key_hash(seed).lo);
    DecideState::new(config.clone(), me, peers, Rc::default(), key_bytes, fp)
}

/// The operator around a worker's (fresh or restored) state.
fn build<'scope, D: ExchangeData>(
    stream: StreamVec<'scope, u64, (Tick, D)>,
    state: DecideState<D>,
) -> (DedupStreams<'scope, (Tick, D)>, DedupCheckpoint) {
    let scope = stream.scope();
    let peers = scope.peers();
    let config = state.config.clone();
    let (fp, routed) = state.fingerprint_and_routed();
    // Bundles go to the worker named in them (this one, unless `ByKey` routes them): the
    // operator's own input exchanges them, without an operator of its own.
    let records = fingerprint(stream, &config, fp, routed);
    // Only `Local` with several workers exchanges view deltas; elsewhere the loop carrying
    // them back would only add an operator and a cycle to every time's progress round.
    let (handle, deltas) = if config.mode() == DedupMode::Local && peers > 1 {
        let (handle, deltas) = scope.feedback::<Vec<ViewDelta>>(1);
        (Some(handle), deltas)
    } else {
        (None, empty(scope))
    };
    let shared = Rc::new(RefCell::new(state));
    let checkpoint = DedupCheckpoint {
        state: Rc::clone(&shared) as Rc<RefCell<dyn resume::Export>>,
    };
    // Three outputs: passed records (as whole containers, never one by one), statistics, and
    // view deltas, whose capabilities follow the input alone (the loop of deltas back to the
    // operators never waits on a worker's deciding).
    let mut builder = OperatorBuilder::new("Dedup".to_owned(), scope);
    let to_dest = Exchange::new(|&(dest, _, _): &Bundle<D>| u64::from(dest));
    let mut records = builder.new_input(records, to_dest);
    let mut deltas = builder.new_input(deltas, Exchange::new(|d: &ViewDelta| u64::from(d.dest)));
    let (passed_out, passed) = builder.new_output::<Vec<(Tick, D)>>();
    let (side_out, stats) = builder.new_output::<Vec<DedupStats>>();
    let (delta_out, deltas_out) = builder.new_output::<Vec<ViewDelta>>();
    let mut passed_out: OutputBuilder<u64, CapacityContainerBuilder<Vec<(Tick, D)>>> =
        OutputBuilder::from(passed_out);
    let mut side_out: OutputBuilder<u64, CapacityContainerBuilder<Vec<DedupStats>>> =
        OutputBuilder::from(side_out);
    let mut delta_out: OutputBuilder<u64, CapacityContainerBuilder<Vec<ViewDelta>>> =
        OutputBuilder::from(delta_out);
    builder.build(move |caps| {
        // Capabilities are taken from the data (or for the epochs a checkpoint carried); time 0
        // must not be held.
        if let Some(side) = caps.get(1) {
            shared.borrow_mut().reopen(|t| side.delayed(&t));
        }
        drop(caps);
        move |frontiers| {
            let mut state = shared.borrow_mut();
            let (r_frontier, d_frontier) = (&frontiers[0], &frontiers[1]);
            state.delta_frontier = d_frontier.frontier().first().copied().unwrap_or(u64::MAX);
            let mut passed_out = passed_out.activate();
            let mut side_out = side_out.activate();
            let mut delta_out = delta_out.activate();
            let (pass_port, side_port) = (passed_out.output_index(), side_out.output_index());
            let delta_port = delta_out.output_index();
            deltas.for_each_stamp(|cap, data| {
                let Some(&t) = cap.least() else { return };
                let last = state.config.epoch_last(state.config.epoch_of(t));
                for batch in data {
                    for delta in batch.drain(..) {
                        state.receive(t, delta, || cap.delayed(&last, side_port));
                    }
                }
            });
            records.for_each_stamp(|cap, data| {
                let Some(&ts) = cap.least() else { return };
                for batch in data {
                    for (_, source, records) in batch.iter_mut() {
                        state.accept(
                            ts,
                            records,
                            *source,
                            |t| cap.delayed(&t, pass_port),
                            |t| cap.delayed(&t, side_port),
                            |t| cap.delayed(&t, delta_port),
                        );
                    }
                }
            });
            for (cap, delta) in state.ship(r_frontier) {
                delta_out.session(&cap).give(delta);
            }
            // the epochs closed now, a message per time (see `batched`)
            let (mut stats, mut passed) = (ByTime::default(), ByTime::default());
            while let Some((e, epoch)) = state.next_epoch(r_frontier, d_frontier) {
                let first = state.config.epoch_start(e);
                for (cap, s) in state.finished(Some(first), r_frontier, d_frontier) {
                    stats.push(cap, s);
                }
                state.retire(Some(first));
                passed.add(epoch.cap, state.decide(e, epoch.stamps, epoch.records));
            }
            let horizon = state.horizon(r_frontier);
            for (cap, s) in state.finished(horizon, r_frontier, d_frontier) {
                stats.push(cap, s);
            }
            state.retire(horizon);
            for (cap, mut s) in stats.take() {
                side_out.session(&cap).give_container(&mut s);
            }
            for (cap, mut p) in passed.take() {
                passed_out.session(&cap).give_container(&mut p);
            }
        }
    });
    if let Some(handle) = handle {
        deltas_out.connect_loop(handle);
    }
    (DedupStreams { passed, stats }, checkpoint)
}
