//! Windowed deduplication: a record at tick `t` passes iff its key was not seen in `(t - W, t]`.
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
//! The state is a [`TickFilter`] per key shard ([`DedupConfig::shards`]): a blocked Bloom filter
//! whose cells hold the latest tick they were set at (one cache line per key). It has **no false
//! negative inside the window** and a sharp edge: a key last seen `W` ticks ago is forgotten (up to
//! the filter's false positive rate ε for the configured number of keys per window). Shards whose
//! latest insert is `W` ticks behind the frontier are freed, records or not. A key's 64-bit
//! fingerprint ([`KeyHash::lo`]) picks its shard and its cells; it is computed where the record
//! is decided (and, for routing, where it enters), never shipped.
//!
//! # Routing modes
//!
//! * [`DedupMode::ByKey`]: records are exchanged to the worker owning
//!   their key's shard (`shard % peers`). Every duplicate within the window is dropped, always. A
//!   shard's filter sees the same keys whatever the number of workers, so the output is
//!   **identical for any number of workers** (as a multiset per timestamp). Cost: every record
//!   crosses the network once with probability `(peers - 1) / peers`.
//! * [`DedupMode::Local`]: records stay on their worker, which holds every shard. A record at `t`
//!   is dropped iff its key is in the worker's tick filters, which hold its own keys at their ticks
//!   and the **global view** ([`WindowView`]): the other workers' keys of closed epochs, shipped as
//!   fingerprints when an epoch's ticks are decided and inserted at the epoch's last tick before
//!   the first tick of a later epoch is decided. Ticks of epoch `e` are decided only once every
//!   delta of epochs before `e` has arrived, so the outcome is deterministic for a given placement
//!   of records on workers. What may differ from `ByKey`:
//!   - **missed duplicates**: a key seen by *another* worker in the same (still open) epoch as `t`
//!     passes again. A duplicate whose earlier occurrence is at least one epoch boundary away is
//!     always caught; in particular one at least `epoch_len` ticks earlier (and less than `W`).
//!   - **extra drops at the window's edge**: the view has epoch granularity, so a key another
//!     worker saw `W` to `W + epoch_len - 1` ticks before `t` is dropped when its epoch still
//!     overlaps `(t - W, t]`.
//!
//!   The filters are sized for all keys of a window, so the false positive bound is ε, as in
//!   `ByKey`. With one worker `Local` decides exactly like `ByKey`. Bytes moved per epoch: 8 per
//!   key a worker inserted in the epoch (repeats within the epoch mostly not), per other worker.
//!
//! Nothing a user sends panics a worker: every tick and key is valid; a view delta for an epoch
//! already inserted (a peer that does not follow the protocol) is counted in
//! [`DedupStats::refused_deltas`]. Configuration errors are returned by
//! [`DedupConfigBuilder::build`] before the dataflow starts.

use crate::dedup_stats::{DedupStats, Slice, SliceStats};
use crate::error::{Error, Result};
use crate::tick_filter::TickFilter;
use crate::timed::{AtTicks, Timed};
use crate::window_view::{ViewDelta, WindowView};
use chronobloom_core::bloom::FilterShape;
use chronobloom_core::hash::{mix64, CanonicalBytes, Key, KeyHash};
use chronobloom_core::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::generic::{Operator, OutputBuilder};
use timely::dataflow::operators::{Capability, ConnectLoop, Feedback, OkErr};
use timely::dataflow::StreamVec;
use timely::progress::frontier::MutableAntichain;
use timely::ExchangeData;

/// Largest window accepted, in ticks (tick filter cells hold at most 32-bit tick offsets).
pub const MAX_WINDOW: Tick = 1 << 31;
/// Largest number of key shards.
pub const MAX_SHARDS: u32 = 4096;
/// Largest number of cells in one shard's tick filter.
pub const MAX_SHARD_CELLS: u64 = 1 << 31;

/// Mixed into the key hash to pick a shard, so the shard is independent of the probe positions.
const SHARD_SALT: u64 = 0x5ca1_ab1e_d15c_0b01;

/// Where records are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DedupMode {
    /// Records are exchanged by key hash; each worker owns its keys' shards.
    ByKey,
    /// Records stay on their worker; closed epochs are shared through the global view.
    Local,
}

/// How the expected number of keys was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    PerWindow(u64),
    PerEpoch(u64),
}

/// A validated dedup configuration ([`DedupConfig::builder`]). Deserializing goes through the
/// builder, so a configuration read from elsewhere is validated like one built in code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DedupConfigFields")]
pub struct DedupConfig {
    window: Tick,
    fpr: f64,
    epoch_len: Tick,
    mode: DedupMode,
    expected_items: u64,
    shards: u32,
    seed: u64,
}

/// The serialized form of a [`DedupConfig`].
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct DedupConfigFields {
    window: Tick,
    fpr: f64,
    epoch_len: Tick,
    mode: DedupMode,
    expected_items: u64,
    shards: u32,
    seed: u64,
}

impl TryFrom<DedupConfigFields> for DedupConfig {
    type Error = Error;
    fn try_from(f: DedupConfigFields) -> Result<Self> {
        DedupConfig::builder()
            .window(f.window)
            .fpr(f.fpr)
            .epoch_len(f.epoch_len)
            .mode(f.mode)
            .expected_items_per_window(f.expected_items)
            .shards(f.shards)
            .seed(f.seed)
            .build()
    }
}

/// Builds a [`DedupConfig`]; `window`, `epoch_len` and the expected number of keys are required.
#[derive(Debug, Clone)]
pub struct DedupConfigBuilder {
    window: Option<Tick>,
    fpr: f64,
    epoch_len: Option<Tick>,
    mode: DedupMode,
    expected: Option<Expected>,
    shards: u32,
    seed: u64,
}

impl DedupConfigBuilder {
    /// The window W in ticks, 1 to [`MAX_WINDOW`]: a record passes iff its key was not seen in
    /// `(t - W, t]`.
    pub fn window(mut self, ticks: Tick) -> Self {
        self.window = Some(ticks);
        self
    }

    /// The target false positive (false drop) rate ε, in (0, 1); default 0.01.
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Ticks per epoch (at least 1): stats are per epoch, and `Local` shares its view per epoch.
    pub fn epoch_len(mut self, ticks: Tick) -> Self {
        self.epoch_len = Some(ticks);
        self
    }

    /// The routing mode; default [`DedupMode::ByKey`].
    pub fn mode(mut self, mode: DedupMode) -> Self {
        self.mode = mode;
        self
    }

    /// Distinct keys expected in one window, over all workers (sizes the filters).
    pub fn expected_items_per_window(mut self, items: u64) -> Self {
        self.expected = Some(Expected::PerWindow(items));
        self
    }

    /// Distinct keys expected in one epoch, over all workers (sizes the filters).
    pub fn expected_items_per_epoch(mut self, items: u64) -> Self {
        self.expected = Some(Expected::PerEpoch(items));
        self
    }

    /// Key shards, 1 to [`MAX_SHARDS`]; default 64. Keep it a multiple of the worker count for an
    /// even `ByKey` load.
    pub fn shards(mut self, shards: u32) -> Self {
        self.shards = shards;
        self
    }

    /// The hash seed; default 0. Every worker and process must use the same.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters and the filter sizes they imply.
    pub fn build(self) -> Result<DedupConfig> {
        let window = self
            .window
            .ok_or_else(|| Error::config("window", "is required"))?;
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::config(
                "window",
                format!("{window} is outside 1..={MAX_WINDOW}"),
            ));
        }
        if !(self.fpr > 0.0 && self.fpr < 1.0) {
            return Err(Error::config(
                "fpr",
                format!("{} is not in (0, 1)", self.fpr),
            ));
        }
        let epoch_len = self
            .epoch_len
            .ok_or_else(|| Error::config("epoch_len", "is required"))?;
        if epoch_len == 0 {
            return Err(Error::config("epoch_len", "must be at least 1 tick"));
        }
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(Error::config(
                "shards",
                format!("{} is outside 1..={MAX_SHARDS}", self.shards),
            ));
        }
        let expected_items = match self.expected {
            None => return Err(Error::config("expected_items", "is required")),
            Some(Expected::PerWindow(n)) => n,
            Some(Expected::PerEpoch(n)) => {
                let epochs_per_window = window.div_ceil(epoch_len);
                n.saturating_mul(epochs_per_window)
            }
        };
        if expected_items == 0 {
            return Err(Error::config("expected_items", "must be at least 1"));
        }
        let config = DedupConfig {
            window,
            fpr: self.fpr,
            epoch_len,
            mode: self.mode,
            expected_items,
            shards: self.shards,
            seed: self.seed,
        };
        let shard = config.shard_shape()?;
        if shard.bits > MAX_SHARD_CELLS {
            return Err(Error::config(
                "expected_items",
                format!(
                    "{} cells per shard exceed {MAX_SHARD_CELLS}: raise `shards`",
                    shard.bits
                ),
            ));
        }
        Ok(config)
    }
}

impl DedupConfig {
    /// A builder with the defaults (ε = 0.01, `ByKey`, 64 shards, seed 0).
    pub fn builder() -> DedupConfigBuilder {
        DedupConfigBuilder {
            window: None,
            fpr: 0.01,
            epoch_len: None,
            mode: DedupMode::ByKey,
            expected: None,
            shards: 64,
            seed: 0,
        }
    }

    /// The window W, in ticks.
    pub fn window(&self) -> Tick {
        self.window
    }

    /// The target false positive rate ε.
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// Ticks per epoch.
    pub fn epoch_len(&self) -> Tick {
        self.epoch_len
    }

    /// The routing mode.
    pub fn mode(&self) -> DedupMode {
        self.mode
    }

    /// Distinct keys expected per window, over all workers.
    pub fn expected_items(&self) -> u64 {
        self.expected_items
    }

    /// Key shards.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The epoch holding tick `t`.
    pub fn epoch_of(&self, t: Tick) -> u64 {
        t / self.epoch_len
    }

    /// The first tick of epoch `e`.
    pub fn epoch_start(&self, e: u64) -> Tick {
        e.saturating_mul(self.epoch_len)
    }

    /// The last tick of epoch `e`.
    pub fn epoch_last(&self, e: u64) -> Tick {
        self.epoch_start(e).saturating_add(self.epoch_len - 1)
    }

    /// The worker of `peers` that decides a key in `ByKey` mode: the owner of its shard. A reader
    /// that routes records there itself spares the operator's exchange.
    pub fn worker_of(&self, hash: KeyHash, peers: usize) -> usize {
        self.shard_of(hash) as usize % peers.max(1)
    }

    /// The shard of a key hash, in `0..shards` (a function of its fingerprint, `hash.lo`).
    pub fn shard_of(&self, hash: KeyHash) -> u32 {
        shard_of_fp(hash.lo, self.shards)
    }

    /// The shape of one shard's tick filter ([`TickFilter::shape_for`]): `bits` cells and
    /// `hashes` cells per key, sized for `ceil(n / shards)` keys at ε.
    pub fn shard_shape(&self) -> Result<FilterShape> {
        TickFilter::shape_for(
            self.expected_items.div_ceil(u64::from(self.shards)).max(1),
            self.fpr,
            self.window,
        )
    }
}

/// The shard of fingerprint `fp` among `shards` (multiply-shift of a salted mix: independent of
/// the cells the fingerprint picks).
#[inline]
fn shard_of_fp(fp: u64, shards: u32) -> u32 {
    // The product is below `shards * 2^64`, so the shifted value is below `shards`.
    ((u128::from(mix64(fp ^ SHARD_SALT)) * u128::from(shards)) >> 64) as u32
}

/// The dedup operator's outputs.
pub struct DedupStreams<'scope, D> {
    /// The records that passed, at their own timestamps.
    pub passed: StreamVec<'scope, u64, D>,
    /// Each worker's statistics per epoch, at the epoch's last tick.
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
/// `(tick, record)` at the least timestamp their epoch's records had (at least the epoch's first
/// tick). A record whose tick is below its timestamp is **late**: decided at its timestamp and
/// counted in [`DedupStats::late`].
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
}

/// What the deciding operator emits besides passed records.
#[derive(Debug, Clone)]
enum Side {
    Stats(Box<DedupStats>),
    Delta(ViewDelta),
}

/// Bytes of records routed per epoch by this worker's router: `(to other workers, to itself)`.
type Routed = Rc<RefCell<BTreeMap<u64, (u64, u64)>>>;

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
        let (me, peers) = (scope.index(), scope.peers());
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
        let routed: Routed = Rc::default();
        let fingerprinted = fingerprint(self, config, Rc::clone(&fp), Rc::clone(&routed));
        let records = if config.mode() == DedupMode::ByKey && peers > 1 {
            use timely::dataflow::operators::Exchange as _;
            fingerprinted.exchange(|&(dest, _): &Bundle<D>| u64::from(dest))
        } else {
            fingerprinted
        };
        let (handle, deltas) = scope.feedback::<Vec<ViewDelta>>(1);
        let mut state = DecideState::new(config.clone(), me, peers, routed, key_bytes, fp);
        // Two outputs, so that passed records go out as whole containers, never one by one.
        let mut builder = OperatorBuilder::new("Dedup".to_owned(), scope);
        let mut records = builder.new_input(records, Pipeline);
        let mut deltas =
            builder.new_input(deltas, Exchange::new(|d: &ViewDelta| u64::from(d.dest)));
        let (passed_out, passed) = builder.new_output::<Vec<(Tick, D)>>();
        let (side_out, side) = builder.new_output::<Vec<Side>>();
        let mut passed_out: OutputBuilder<u64, CapacityContainerBuilder<Vec<(Tick, D)>>> =
            OutputBuilder::from(passed_out);
        let mut side_out: OutputBuilder<u64, CapacityContainerBuilder<Vec<Side>>> =
            OutputBuilder::from(side_out);
        builder.build(move |caps| {
            // Capabilities are taken from the data; time 0 must not be held.
            drop(caps);
            move |frontiers| {
                let (r_frontier, d_frontier) = (&frontiers[0], &frontiers[1]);
                let mut passed_out = passed_out.activate();
                let mut side_out = side_out.activate();
                let (pass_port, side_port) = (passed_out.output_index(), side_out.output_index());
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
                        for (_, records) in batch.iter_mut() {
                            state.accept(
                                ts,
                                records,
                                |t| cap.delayed(&t, pass_port),
                                |t| cap.delayed(&t, side_port),
                            );
                        }
                    }
                });
                while let Some((e, epoch)) = state.next_epoch(r_frontier, d_frontier) {
                    let first = state.config.epoch_start(e);
                    for (cap, delta) in state.ship(Some(first), r_frontier) {
                        side_out.session(&cap).give(Side::Delta(delta));
                    }
                    for (cap, stats) in state.finished(Some(first), r_frontier, d_frontier) {
                        side_out.session(&cap).give(Side::Stats(Box::new(stats)));
                    }
                    state.retire(Some(first));
                    let mut passed = state.decide(e, epoch.records);
                    passed_out.session(&epoch.cap).give_container(&mut passed);
                }
                let horizon = state.horizon(r_frontier);
                for (cap, delta) in state.ship(horizon, r_frontier) {
                    side_out.session(&cap).give(Side::Delta(delta));
                }
                for (cap, stats) in state.finished(horizon, r_frontier, d_frontier) {
                    side_out.session(&cap).give(Side::Stats(Box::new(stats)));
                }
                state.retire(horizon);
            }
        });
        let (stats, deltas): (
            StreamVec<'scope, u64, DedupStats>,
            StreamVec<'scope, u64, ViewDelta>,
        ) = side.ok_err(|s| match s {
            Side::Stats(s) => Ok(*s),
            Side::Delta(d) => Err(d),
        });
        deltas.connect_loop(handle);
        DedupStreams { passed, stats }
    }
}

/// A record with its tick and its key's fingerprint.
type Fingerprinted<D> = (Tick, u64, D);

/// Records bound for one worker (their fingerprints are recomputed where they are decided: 8
/// bytes a record less on the wire, for one more hash of a routed key).
type Bundle<D> = (u32, Vec<(Tick, D)>);

/// Bundles records by the worker that decides them: the owner of the key's shard in `ByKey` with
/// several workers (the exchange then routes whole bundles, not records), this worker otherwise.
/// In `ByKey` with several workers it counts per epoch the bytes of records bound for other
/// workers and for this one.
fn fingerprint<'scope, D: ExchangeData>(
    records: StreamVec<'scope, u64, (Tick, D)>,
    config: &DedupConfig,
    fp: Fingerprint<D>,
    routed: Routed,
) -> StreamVec<'scope, u64, Bundle<D>> {
    let scope = records.scope();
    let (me, peers) = (scope.index() as u32, scope.peers() as u32);
    let route = config.mode() == DedupMode::ByKey && peers > 1;
    // the owner of each shard (a look-up instead of a division per record)
    let owner: Vec<u32> = (0..config.shards()).map(|s| s % peers).collect();
    let config = config.clone();
    records.unary(Pipeline, "DedupFingerprint", move |_, _| {
        move |input, output| {
            input.for_each_stamp(|cap, data| {
                let Some(&ts) = cap.least() else { return };
                let mut session = output.session(&cap);
                for batch in data {
                    if !route {
                        session.give((me, std::mem::take(batch)));
                        continue;
                    }
                    let mut bundles: Vec<Vec<(Tick, D)>> = (0..peers).map(|_| Vec::new()).collect();
                    for (t, d) in batch.drain(..) {
                        let owner = owner[shard_of_fp(fp(&d), config.shards()) as usize];
                        bundles[owner as usize].push((t, d));
                    }
                    let mut routed = routed.borrow_mut();
                    let slot = routed.entry(config.epoch_of(ts)).or_default();
                    for (dest, records) in bundles.into_iter().enumerate() {
                        if records.is_empty() {
                            continue;
                        }
                        // bincode writes a vector as a u64 length and its items
                        let bytes = bincode::serialized_size(&records).map_or(0, |b| b - 8);
                        if dest as u32 == me {
                            slot.1 += bytes;
                        } else {
                            slot.0 += bytes;
                        }
                        session.give((dest as u32, records));
                    }
                }
            });
        }
    })
}

/// An epoch whose records wait for the frontier to pass it.
struct PendingEpoch<D> {
    /// At the least timestamp of the epoch's records (at least the epoch's first tick).
    cap: Capability<u64>,
    records: Vec<Fingerprinted<D>>,
}

/// An epoch with records or received deltas whose stats are not out yet.
struct OpenEpoch {
    cap: Capability<u64>,
    stats: DedupStats,
    /// Bytes of fingerprinted records received (`ByKey`, several workers).
    bytes_in: u64,
    /// Fingerprints this worker inserted in the epoch, for the other workers (`Local`, several
    /// workers); `None` once shipped.
    outgoing: Option<Vec<u64>>,
}

/// One worker's dedup state.
struct DecideState<D> {
    config: DedupConfig,
    me: usize,
    peers: usize,
    shard_shape: FilterShape,
    /// One tick filter per shard this worker holds, created on first use, freed when stale.
    shards: Vec<Option<TickFilter>>,
    /// Other workers' closed epochs, waiting to be inserted (`Local` with several workers).
    view: Option<WindowView>,
    pending: BTreeMap<u64, PendingEpoch<D>>,
    epochs: BTreeMap<u64, OpenEpoch>,
    routed: Routed,
    key: KeyBytes<D>,
    fp: Fingerprint<D>,
    /// Per record of the epoch being decided: not seen before its tick.
    fresh: Vec<bool>,
    /// `(tick, fingerprint)` of the epoch being decided whose key may have occurred earlier in
    /// the same tick.
    repeats: Vec<(Tick, u64)>,
    /// Scratch for sorting an epoch's records by shard.
    order: Vec<(u32, usize)>,
    /// Scratch space of `by_shard`.
    keyed: Vec<(u32, usize)>,
    /// Records of the last decided epoch.
    last_epoch_len: usize,
}

/// Records whose cache lines are requested ahead of the one being decided.
const PREFETCH_AHEAD: usize = 24;

impl<D: ExchangeData> DecideState<D> {
    fn new(
        config: DedupConfig,
        me: usize,
        peers: usize,
        routed: Routed,
        key: KeyBytes<D>,
        fp: Fingerprint<D>,
    ) -> Self {
        // The shape was validated when the configuration was built.
        let shard_shape = config
            .shard_shape()
            .unwrap_or(FilterShape { bits: 1, hashes: 1 });
        let view = (config.mode() == DedupMode::Local && peers > 1).then(WindowView::default);
        DecideState {
            shards: (0..config.shards()).map(|_| None).collect(),
            config,
            me,
            peers,
            shard_shape,
            view,
            pending: BTreeMap::new(),
            epochs: BTreeMap::new(),
            routed,
            key,
            fp,
            fresh: Vec::new(),
            repeats: Vec::new(),
            order: Vec::new(),
            keyed: Vec::new(),
            last_epoch_len: 0,
        }
    }

    fn open_epoch(&mut self, e: u64, cap: impl FnOnce() -> Capability<u64>) -> &mut OpenEpoch {
        let (me, mode) = (self.me as u32, self.config.mode());
        let outgoing = self.view.is_some().then(Vec::new);
        self.epochs.entry(e).or_insert_with(|| OpenEpoch {
            cap: cap(),
            stats: DedupStats::new(e, me, mode),
            bytes_in: 0,
            outgoing,
        })
    }

    /// Buffers a batch of records stamped `ts` in their epochs (a late record, below `ts`, at
    /// `ts`), leaving `batch` empty; `pass_cap(t)` and `epoch_cap(t)` make capabilities at `t`
    /// for the passed records and the side output.
    fn accept(
        &mut self,
        ts: Tick,
        batch: &mut Vec<(Tick, D)>,
        mut pass_cap: impl FnMut(Tick) -> Capability<u64>,
        mut epoch_cap: impl FnMut(Tick) -> Capability<u64>,
    ) {
        if self.config.mode() == DedupMode::ByKey && self.peers > 1 {
            // bincode writes a vector as a u64 length and its items
            let bytes = bincode::serialized_size(&*batch).map_or(0, |b| b.saturating_sub(8));
            let e = self.config.epoch_of(ts);
            let last = self.config.epoch_last(e);
            self.open_epoch(e, || epoch_cap(last)).bytes_in += bytes;
        }
        let mut current: Option<(u64, Tick, Tick)> = None;
        for (t, d) in batch.drain(..) {
            let fp = (self.fp)(&d);
            let late = t < ts;
            let t = t.max(ts);
            let e = match current {
                Some((e, first, last)) if (first..=last).contains(&t) => e,
                _ => {
                    let e = self.config.epoch_of(t);
                    let (first, last) = (self.config.epoch_start(e), self.config.epoch_last(e));
                    let at = first.max(ts);
                    let reserve = self.last_epoch_len;
                    let slot = self.pending.entry(e).or_insert_with(|| PendingEpoch {
                        cap: pass_cap(at),
                        records: Vec::with_capacity(reserve),
                    });
                    if *slot.cap.time() > at {
                        slot.cap = pass_cap(at);
                    }
                    self.open_epoch(e, || epoch_cap(last));
                    current = Some((e, first, last));
                    e
                }
            };
            if late {
                if let Some(epoch) = self.epochs.get_mut(&e) {
                    epoch.stats.late += 1;
                }
            }
            if let Some(slot) = self.pending.get_mut(&e) {
                slot.records.push((t, fp, d));
            }
        }
    }

    /// Buffers a peer's delta (arriving at tick `t`, the first tick of the epoch after the
    /// delta's); its bytes count for the epoch whose ticks consult it.
    fn receive(&mut self, t: Tick, delta: ViewDelta, cap: impl FnOnce() -> Capability<u64>) {
        let bytes = delta.wire_bytes();
        let accepted = self.view.as_mut().is_some_and(|v| v.merge(delta));
        let e = self.config.epoch_of(t);
        let epoch = self.open_epoch(e, cap);
        epoch.stats.bytes_received += bytes;
        epoch.stats.refused_deltas += u64::from(!accepted);
    }

    /// Takes the fingerprints of the epochs whose records are all decided (closed by the input
    /// frontier, none before `next` waiting), one delta per other worker.
    fn ship(
        &mut self,
        next: Option<Tick>,
        r_frontier: &MutableAntichain<u64>,
    ) -> Vec<(Capability<u64>, ViewDelta)> {
        let mut out = Vec::new();
        for (&e, epoch) in self.epochs.iter_mut() {
            let last = self.config.epoch_last(e);
            if r_frontier.less_equal(&last) || next.is_some_and(|t| t <= last) {
                break;
            }
            // an epoch without keys ships nothing (an empty delta would open the next epoch at
            // its receiver, which would ship one back, and so on)
            let Some(keys) = epoch.outgoing.take().filter(|k| !k.is_empty()) else {
                continue;
            };
            for dest in (0..self.peers).filter(|&d| d != self.me) {
                let delta = ViewDelta {
                    epoch: e,
                    from: self.me as u32,
                    dest: dest as u32,
                    keys: keys.clone(),
                };
                epoch.stats.bytes_sent += delta.wire_bytes();
                out.push((epoch.cap.clone(), delta));
            }
        }
        out
    }

    /// The earliest buffered epoch, once the input frontier has passed its last tick and (in
    /// `Local` with several workers) every delta of the epochs before it has arrived.
    fn next_epoch(
        &mut self,
        r_frontier: &MutableAntichain<u64>,
        d_frontier: &MutableAntichain<u64>,
    ) -> Option<(u64, PendingEpoch<D>)> {
        let (&e, _) = self.pending.first_key_value()?;
        if r_frontier.less_equal(&self.config.epoch_last(e)) || !self.view_complete(e, d_frontier) {
            return None;
        }
        self.pending.pop_first()
    }

    /// Whether every delta epoch `e`'s records may consult has arrived (deltas of epoch `e - 1`
    /// arrive at epoch `e`'s first tick).
    fn view_complete(&self, e: u64, d_frontier: &MutableAntichain<u64>) -> bool {
        self.view.is_none() || e == 0 || !d_frontier.less_equal(&self.config.epoch_start(e))
    }

    /// Inserts the other workers' keys of the epochs before `e` (`Local`, several workers).
    fn apply_view(&mut self, e: u64) {
        let Some(view) = self.view.as_mut() else {
            return;
        };
        for (e, keys) in view.take_before(e) {
            let last = self.config.epoch_last(e);
            let order = self.by_shard(keys.iter().copied());
            for (shard, segment) in order.chunk_by(|a, b| a.0 == b.0).map(|s| (s[0].0, s)) {
                let slot = &mut self.shards[shard as usize];
                if slot.is_none() {
                    *slot = TickFilter::new(self.shard_shape, self.config.window(), last).ok();
                }
                let Some(f) = slot.as_mut() else { continue };
                for &(_, i) in segment {
                    f.prefetch(keys[i]);
                }
                f.insert_each(
                    segment.iter().map(|&(_, i)| ((), keys[i])),
                    last,
                    |(), _| {},
                );
            }
            self.order = order;
        }
    }

    /// Decides epoch `e`'s records (see the module docs) and returns those that pass.
    fn decide(&mut self, e: u64, mut records: Vec<Fingerprinted<D>>) -> Vec<(Tick, D)> {
        self.apply_view(e);
        let epoch_start = self.config.epoch_start(e);
        let mut outgoing = self
            .epochs
            .get_mut(&e)
            .and_then(|epoch| epoch.outgoing.take());
        // Shard by shard (keys of different shards never share cells), tick by tick within a
        // shard, the lines of the next records requested ahead so their misses overlap:
        // 1. every key of a tick is checked against the state before the tick,
        // 2. every key of the tick is inserted; a key inserted earlier in the tick finds all its
        //    cells at the tick already (a repeat candidate).
        let mut order = self.by_shard(records.iter().map(|&(_, fp, _)| fp));
        for segment in order.chunk_by_mut(|a, b| a.0 == b.0) {
            if !segment.is_sorted_by_key(|&(_, i)| records[i].0) {
                segment.sort_by_key(|&(_, i)| records[i].0);
            }
        }
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        fresh.resize(records.len(), true);
        let mut repeats = std::mem::take(&mut self.repeats);
        repeats.clear();
        for segment in order.chunk_by(|a, b| a.0 == b.0) {
            let slot = &mut self.shards[segment[0].0 as usize];
            if slot.is_none() {
                *slot = TickFilter::new(
                    self.shard_shape,
                    self.config.window(),
                    records[segment[0].1].0,
                )
                .ok();
            }
            let Some(f) = slot.as_mut() else { continue };
            let mut ahead = 0;
            for run in segment.chunk_by(|a, b| records[a.1].0 == records[b.1].0) {
                let t = records[run[0].1].0;
                let end = (ahead.max(run.len()) + PREFETCH_AHEAD).min(segment.len());
                for &(_, i) in &segment[ahead.min(end)..end] {
                    f.prefetch(records[i].1);
                }
                ahead = end;
                let items = run.iter().map(|&(_, i)| (i, records[i].1));
                f.seen_each(items.clone(), t, |i, seen| fresh[i] = !seen);
                f.insert_each(items, t, |i, before| {
                    let fp = records[i].1;
                    if before == Some(t) && fresh[i] {
                        repeats.push((t, fp));
                    }
                    // keys whose cells this worker's inserts of the epoch all set need not travel
                    if let Some(out) = outgoing.as_mut() {
                        if before.is_none_or(|b| b < epoch_start) {
                            out.push(fp);
                        }
                    }
                });
            }
        }
        self.order = order;
        if let Some(epoch) = self.epochs.get_mut(&e) {
            epoch.outgoing = outgoing;
        }
        let same_tick = self.resolve_repeats(&records, &mut repeats, &mut fresh);
        let total = records.len() as u64;
        self.last_epoch_len = records.len();
        let mut i = 0;
        records.retain(|_| {
            i += 1;
            fresh[i - 1]
        });
        let passed: Vec<(Tick, D)> = records.into_iter().map(|(t, _, d)| (t, d)).collect();
        self.fresh = fresh;
        self.repeats = repeats;
        if let Some(epoch) = self.epochs.get_mut(&e) {
            let s = &mut epoch.stats;
            s.records += total;
            s.passed += passed.len() as u64;
            s.dropped += total - passed.len() as u64;
            s.dropped_same_tick += same_tick;
        }
        passed
    }

    /// `(shard, index)` of every fingerprint, sorted by shard (a stable counting sort). The
    /// result is `self.order`'s buffer, which the caller puts back, and the scratch vector is
    /// reused: an epoch allocates nothing here.
    fn by_shard(&mut self, fps: impl Iterator<Item = u64>) -> Vec<(u32, usize)> {
        let shards = self.config.shards();
        let mut counts = vec![0usize; shards as usize + 1];
        let mut keyed = std::mem::take(&mut self.keyed);
        keyed.clear();
        keyed.extend(fps.enumerate().map(|(i, fp)| {
            let s = shard_of_fp(fp, shards);
            counts[s as usize + 1] += 1;
            (s, i)
        }));
        for s in 1..counts.len() {
            counts[s] += counts[s - 1];
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.resize(keyed.len(), (0, 0));
        for &(s, i) in &keyed {
            order[counts[s as usize]] = (s, i);
            counts[s as usize] += 1;
        }
        self.keyed = keyed;
        order
    }

    /// Among fresh records whose `(tick, fingerprint)` is in `repeats` (candidates flagged by the
    /// filter), keeps one per tick and exact key fresh, the one with the smallest encoding;
    /// returns how many it dropped.
    fn resolve_repeats(
        &self,
        records: &[Fingerprinted<D>],
        repeats: &mut [(Tick, u64)],
        fresh: &mut [bool],
    ) -> u64 {
        if repeats.is_empty() {
            return 0;
        }
        repeats.sort_unstable();
        // a 4096-bit prefilter keeps the binary search off most records
        let mut bloom = [0u64; 64];
        for &(_, fp) in repeats.iter() {
            bloom[(fp >> 6) as usize & 63] |= 1 << (fp & 63);
        }
        // (tick, exact key) -> (index of the best record so far, its encoding once compared)
        let mut first: HashMap<(Tick, Vec<u8>), Best> = HashMap::new();
        let mut dropped = 0;
        for (i, (t, fp, record)) in records.iter().enumerate() {
            if !fresh[i]
                || bloom[(fp >> 6) as usize & 63] & (1 << (fp & 63)) == 0
                || repeats.binary_search(&(*t, *fp)).is_err()
            {
                continue;
            }
            match first.entry((*t, (self.key)(record).as_slice().to_vec())) {
                Entry::Vacant(v) => {
                    v.insert((i, None));
                }
                Entry::Occupied(mut o) => {
                    dropped += 1;
                    let (j, best) = o.get_mut();
                    let best = best.get_or_insert_with(|| encode(&records[*j].2));
                    let mine = encode(record);
                    if mine < *best {
                        fresh[*j] = false;
                        *j = i;
                        *best = mine;
                    } else {
                        fresh[i] = false;
                    }
                }
            }
        }
        dropped
    }

    /// The earliest tick still to be decided: the first buffered epoch's first tick or the input
    /// frontier; `None` when the input is done and nothing waits.
    fn horizon(&self, r_frontier: &MutableAntichain<u64>) -> Option<Tick> {
        let frontier = r_frontier.frontier().first().copied();
        let first = self
            .pending
            .first_key_value()
            .map(|(&e, _)| self.config.epoch_start(e));
        match (first, frontier) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Frees the shards no tick at or after `horizon` can consult (all of them when `horizon` is
    /// `None`).
    fn retire(&mut self, horizon: Option<Tick>) {
        match horizon {
            Some(h) => {
                for slot in &mut self.shards {
                    if slot.as_ref().is_some_and(|f| f.stale(h)) {
                        *slot = None;
                    }
                }
            }
            None => self.shards.iter_mut().for_each(|s| *s = None),
        }
    }

    /// Stats of the epochs that are complete: closed by the input frontier, every record decided
    /// (none before `next` waits), and every delta they consult received.
    fn finished(
        &mut self,
        next: Option<Tick>,
        r_frontier: &MutableAntichain<u64>,
        d_frontier: &MutableAntichain<u64>,
    ) -> Vec<(Capability<u64>, DedupStats)> {
        let mut out = Vec::new();
        while let Some((&e, _)) = self.epochs.first_key_value() {
            let last = self.config.epoch_last(e);
            let waiting =
                next.is_some_and(|t| t <= last) || self.pending.range(..=e).next().is_some();
            if r_frontier.less_equal(&last) || waiting || !self.view_complete(e, d_frontier) {
                break;
            }
            let Some((_, epoch)) = self.epochs.pop_first() else {
                break;
            };
            out.push((epoch.cap, self.seal(epoch.stats, epoch.bytes_in, last)));
        }
        out
    }

    /// Completes an epoch's stats with the state at its last tick.
    fn seal(&mut self, mut s: DedupStats, bytes_in: u64, last: Tick) -> DedupStats {
        let mut home = 0;
        {
            let mut routed = self.routed.borrow_mut();
            let later = routed.split_off(&s.epoch.saturating_add(1));
            for (_, (away, to_me)) in std::mem::replace(&mut *routed, later) {
                s.bytes_sent += away;
                home += to_me;
            }
        }
        if self.config.mode() == DedupMode::ByKey {
            s.bytes_received = bytes_in.saturating_sub(home);
        }
        s.records_buffered = self.pending.values().map(|p| p.records.len() as u64).sum();
        let mut shard_fpr = Vec::new();
        for (i, f) in self.shards.iter().enumerate() {
            let Some(f) = f else { continue };
            let (fill, fpr) = f.occupancy(last);
            shard_fpr.push(fpr);
            s.local_bits += f.memory_bits();
            s.slices.push(SliceStats {
                slice: Slice::Shard(i as u32),
                bits: f.memory_bits(),
                fill,
                estimated_fpr: fpr,
            });
        }
        if !shard_fpr.is_empty() {
            s.estimated_fpr = shard_fpr.iter().sum::<f64>() / shard_fpr.len() as f64;
        }
        if let Some(view) = self.view.as_ref() {
            s.view_bits = view.pending_keys() * 64;
            for (e, keys) in view.pending_epochs() {
                s.slices.push(SliceStats {
                    slice: Slice::ViewEpoch(e),
                    bits: keys * 64,
                    fill: 0.0,
                    estimated_fpr: 0.0,
                });
            }
        }
        s
    }
}

/// Among same-tick records of one key: the index of the best so far, and its encoding once
/// compared.
type Best = (usize, Option<Vec<u8>>);

/// A record's `bincode` encoding, the tie-breaker between same-tick records with the same key.
fn encode<D: Serialize>(record: &D) -> Vec<u8> {
    bincode::serialize(record).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deserializing_validates() {
        let good = DedupConfig::builder()
            .window(60)
            .epoch_len(10)
            .expected_items_per_window(10_000)
            .build()
            .unwrap();
        let bytes = bincode::serialize(&good).unwrap();
        assert_eq!(bincode::deserialize::<DedupConfig>(&bytes).unwrap(), good);
        let mut bad: DedupConfigFields = bincode::deserialize(&bytes).unwrap();
        bad.fpr = 2.0;
        assert!(bincode::deserialize::<DedupConfig>(&bincode::serialize(&bad).unwrap()).is_err());
    }

    #[test]
    fn builder_validates() {
        let ok = || {
            DedupConfig::builder()
                .window(60)
                .epoch_len(10)
                .expected_items_per_window(10_000)
        };
        assert!(ok().build().is_ok());
        assert!(ok().window(0).build().is_err());
        assert!(ok().window(MAX_WINDOW + 1).build().is_err());
        assert!(ok().fpr(0.0).build().is_err());
        assert!(ok().fpr(1.0).build().is_err());
        assert!(ok().fpr(f64::NAN).build().is_err());
        assert!(ok().epoch_len(0).build().is_err());
        assert!(ok().shards(0).build().is_err());
        assert!(ok().shards(MAX_SHARDS + 1).build().is_err());
        assert!(ok().expected_items_per_window(0).build().is_err());
        assert!(ok().expected_items_per_window(u64::MAX).build().is_err());
        assert!(DedupConfig::builder()
            .epoch_len(1)
            .expected_items_per_window(1)
            .build()
            .is_err());
        let per_epoch = ok().expected_items_per_epoch(100).build().unwrap();
        assert_eq!(per_epoch.expected_items(), 600);
    }

    #[test]
    fn epochs_and_shards() {
        let c = DedupConfig::builder()
            .window(60)
            .epoch_len(10)
            .expected_items_per_window(100)
            .build()
            .unwrap();
        assert_eq!(
            (c.epoch_start(3), c.epoch_last(3), c.epoch_of(39)),
            (30, 39, 3)
        );
        let mut per_shard = [0u32; 64];
        for k in 0..64_000u64 {
            per_shard[c.shard_of(KeyHash::of(&k, 0)) as usize] += 1;
        }
        // 1000 per shard on average: every shard within 5 standard deviations
        assert!(
            per_shard.iter().all(|&n| (850..1150).contains(&n)),
            "{per_shard:?}"
        );
        let shape = c.shard_shape().unwrap();
        assert_eq!(shape, TickFilter::shape_for(2, 0.01, 60).unwrap());
    }
}
