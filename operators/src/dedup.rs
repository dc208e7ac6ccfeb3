//! Windowed deduplication: a record at tick `t` passes iff its key was not seen in `(t - W, t]`.
//!
//! # Semantics
//!
//! A record's tick is its dataflow timestamp (`u64` ticks). "Seen" means any record with the same
//! key, passed or dropped. Each tick's records wait until the input frontier passes the tick and
//! are then decided together in two phases, so the outcome does not depend on arrival order or
//! scheduling:
//!
//! 1. every record is checked against the state of the ticks before `t` (no insert of tick `t` is
//!    visible yet);
//! 2. records of tick `t` with the same key are resolved exactly (by the 128-bit key hash): one
//!    passes (the one with the smallest `bincode` encoding, so the choice is deterministic) and the
//!    others are dropped; then every key of the tick is inserted at `t`.
//!
//! The state is a [`TickFilter`] per key shard ([`DedupConfig::shards`]): a Bloom filter whose cells
//! hold the latest tick they were set at. It has **no false negative inside the window** and a sharp
//! edge: a key last seen `W` ticks ago is forgotten (up to the filter's false positive rate ε for
//! the configured number of keys per window). Shards whose latest insert is `W` ticks behind the
//! frontier are freed, records or not.
//!
//! # Routing modes
//!
//! * [`DedupMode::ByKey`]: records are exchanged to the worker owning their key's shard
//!   (`shard % peers`). Every duplicate within the window is dropped, always. A shard's filter sees
//!   the same keys whatever the number of workers, so the output is **identical for any number of
//!   workers** (as a multiset per timestamp). Cost: every record crosses the network once with
//!   probability `(peers - 1) / peers`.
//! * [`DedupMode::Local`]: records stay on their worker. A record at `t` is dropped iff its key is
//!   in the worker's own tick filter (its own records, sharp window, as in `ByKey`) or in the
//!   **global view** ([`WindowView`]): one Bloom filter per closed epoch holding the *other*
//!   workers' keys, OR-merged from the slices they ship when the epoch closes. Ticks of epoch `e`
//!   are decided only once every slice of epochs before `e` has been merged, so the outcome is
//!   deterministic for a given placement of records on workers. What may differ from `ByKey`:
//!   - **missed duplicates**: a key seen by *another* worker in the same (still open) epoch as `t`
//!     passes again. A duplicate whose earlier occurrence is at least one epoch boundary away is
//!     always caught; in particular one at least `epoch_len` ticks earlier (and less than `W`).
//!   - **extra drops at the window's edge**: the view has epoch granularity, so a key another
//!     worker saw `W` to `W + epoch_len - 1` ticks before `t` is dropped when its epoch still
//!     overlaps `(t - W, t]`.
//!   - the false positive bound is ε for the own filter plus ε for the view (each view epoch is
//!     sized at ε divided by the number of closed epochs a window can overlap).
//!
//!   With one worker the view stays empty and `Local` decides exactly like `ByKey`. Bytes moved per
//!   epoch: one view slice per worker per destination, `≈ 1.44 log2(E/ε)` bits per key of the epoch
//!   (dense) instead of the records themselves; see `benches/dedup.rs` for when each mode wins.
//!
//! Nothing a user sends panics a worker: every tick and key is valid; a view delta of the wrong
//! shape (a peer process configured differently) is counted in
//! [`DedupStats::refused_deltas`]. Configuration errors are returned by
//! [`DedupConfigBuilder::build`] before the dataflow starts.

use crate::dedup_stats::{DedupStats, Slice, SliceStats};
use crate::error::{Error, Result};
use crate::tick_filter::{window_start, TickFilter};
use crate::window_view::{ViewDelta, WindowView};
use chronobloom_core::bloom::{BloomFilter, Filter, FilterShape};
use chronobloom_core::hash::{mix64, Key, KeyHash};
use chronobloom_core::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Capability, ConnectLoop, Feedback, OkErr};
use timely::dataflow::StreamVec;
use timely::progress::frontier::MutableAntichain;
use timely::ExchangeData;

/// Largest window accepted, in ticks (tick filter cells hold 32-bit tick offsets).
pub const MAX_WINDOW: Tick = 1 << 31;
/// Largest number of key shards.
pub const MAX_SHARDS: u32 = 4096;
/// Largest number of cells in one shard's tick filter (32 bits each).
pub const MAX_SHARD_CELLS: u64 = 1 << 31;
/// Largest view slice, in bits.
pub const MAX_VIEW_BITS: u64 = 1 << 36;

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
        let shard = config.shard_shape(1)?;
        if shard.bits > MAX_SHARD_CELLS {
            return Err(Error::config(
                "expected_items",
                format!(
                    "{} cells per shard exceed {MAX_SHARD_CELLS}: raise `shards`",
                    shard.bits
                ),
            ));
        }
        let view = config.view_shape()?;
        if view.bits > MAX_VIEW_BITS {
            return Err(Error::config(
                "expected_items",
                format!(
                    "{} bits per view epoch exceed {MAX_VIEW_BITS}: shorten `epoch_len`",
                    view.bits
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

    /// The shard of a key hash, in `0..shards`.
    pub fn shard_of(&self, hash: KeyHash) -> u32 {
        // The remainder is below `shards` <= MAX_SHARDS, so it fits.
        (mix64(hash.hi ^ SHARD_SALT) % u64::from(self.shards)) as u32
    }

    /// Closed epochs a window can overlap at a tick of a later epoch: `max(1, ceil((W - 1) / L))`.
    pub fn view_epochs(&self) -> u64 {
        (self.window - 1).div_ceil(self.epoch_len).max(1)
    }

    /// The shape of one shard's tick filter when its keys are spread over `spread` workers
    /// (1 for `ByKey`, the worker count for `Local`): sized for `ceil(n / (shards * spread))` keys
    /// at ε.
    pub fn shard_shape(&self, spread: usize) -> Result<FilterShape> {
        let ways = u64::from(self.shards).saturating_mul(spread.max(1) as u64);
        Ok(FilterShape::for_fpr(
            self.expected_items.div_ceil(ways).max(1),
            self.fpr,
        )?)
    }

    /// The shape of one view epoch (the same on every worker): sized for the keys of one epoch at
    /// `ε / view_epochs()`.
    pub fn view_shape(&self) -> Result<FilterShape> {
        let per_epoch = self
            .expected_items
            .saturating_mul(self.epoch_len)
            .div_ceil(self.window)
            .max(1);
        Ok(FilterShape::for_fpr(
            per_epoch,
            self.fpr / self.view_epochs() as f64,
        )?)
    }
}

/// The dedup operator's outputs.
pub struct DedupStreams<'scope, D> {
    /// The records that passed, at their own timestamps.
    pub passed: StreamVec<'scope, u64, D>,
    /// Each worker's statistics per epoch, at the epoch's last tick.
    pub stats: StreamVec<'scope, u64, DedupStats>,
}

/// Windowed deduplication of a stream whose timestamps are ticks (see the [module docs](self)).
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

/// What the deciding operator emits besides passed records.
#[derive(Debug, Clone)]
enum Side {
    Stats(Box<DedupStats>),
    Delta(ViewDelta),
}

/// Bytes of records routed per epoch by this worker's router: `(to other workers, to itself)`.
type Routed = Rc<RefCell<BTreeMap<u64, (u64, u64)>>>;

impl<'scope, D: ExchangeData> Dedup<'scope, D> for StreamVec<'scope, u64, D> {
    fn dedup_by<K, F>(self, config: &DedupConfig, key: F) -> DedupStreams<'scope, D>
    where
        K: Key,
        F: Fn(&D) -> K + 'static,
    {
        let scope = self.scope();
        let (me, peers) = (scope.index(), scope.peers());
        let seed = config.seed();
        let routed: Routed = Rc::default();
        let hashed = match config.mode() {
            DedupMode::Local => self.map(move |d| (KeyHash::of(&key(&d), seed), d)),
            DedupMode::ByKey => {
                let router = config.clone();
                route(self, config, key, Rc::clone(&routed))
                    .exchange_by(move |h| u64::from(router.shard_of(*h)))
            }
        };
        let (handle, deltas) = scope.feedback::<Vec<ViewDelta>>(1);
        let mut state = DecideState::new(config.clone(), me, peers, routed);
        let events: StreamVec<'scope, u64, Result<D, Side>> = hashed.binary_frontier(
            deltas,
            Pipeline,
            Exchange::new(|d: &ViewDelta| u64::from(d.dest)),
            "Dedup",
            move |default_cap, _info| {
                // Capabilities are taken from the data; time 0 must not be held.
                drop(default_cap);
                move |(records, r_frontier), (deltas, d_frontier), output| {
                    let port = output.output_index();
                    deltas.for_each_stamp(|cap, data| {
                        let Some(&t) = cap.least() else { return };
                        let last = state.config.epoch_last(state.config.epoch_of(t));
                        for batch in data {
                            for delta in batch.drain(..) {
                                state.receive(t, delta, || cap.delayed(&last, port));
                            }
                        }
                    });
                    records.for_each_stamp(|cap, data| {
                        let Some(&t) = cap.least() else { return };
                        let last = state.config.epoch_last(state.config.epoch_of(t));
                        state.open(t, || cap.delayed(&t, port), || cap.delayed(&last, port));
                        for batch in data {
                            for (hash, record) in batch.drain(..) {
                                state.accept(t, hash, record);
                            }
                        }
                    });
                    for (cap, deltas) in state.ship(r_frontier) {
                        output
                            .session(&cap)
                            .give_iterator(deltas.into_iter().map(|d| Err(Side::Delta(d))));
                    }
                    while let Some((t, tick)) = state.next_tick(r_frontier, d_frontier) {
                        for (cap, stats) in state.finished(Some(t), r_frontier, d_frontier) {
                            output.session(&cap).give(Err(Side::Stats(Box::new(stats))));
                        }
                        state.retire(Some(t));
                        let passed = state.decide(t, tick.records);
                        output
                            .session(&tick.cap)
                            .give_iterator(passed.into_iter().map(Ok));
                    }
                    let horizon = state.horizon(r_frontier);
                    for (cap, stats) in state.finished(horizon, r_frontier, d_frontier) {
                        output.session(&cap).give(Err(Side::Stats(Box::new(stats))));
                    }
                    state.retire(horizon);
                }
            },
        );
        let (passed, side): (StreamVec<'scope, u64, D>, StreamVec<'scope, u64, Side>) =
            events.ok_err(|e| e);
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

/// Hashes each record's key and counts, per epoch, the bytes of `(hash, record)` pairs bound for
/// other workers and for this one (`ByKey` only).
fn route<'scope, D, K, F>(
    records: StreamVec<'scope, u64, D>,
    config: &DedupConfig,
    key: F,
    routed: Routed,
) -> StreamVec<'scope, u64, (KeyHash, D)>
where
    D: ExchangeData,
    K: Key,
    F: Fn(&D) -> K + 'static,
{
    let scope = records.scope();
    let (me, peers) = (scope.index() as u64, scope.peers() as u64);
    let config = config.clone();
    records.unary(Pipeline, "DedupRoute", move |_, _| {
        move |input, output| {
            input.for_each_stamp(|cap, data| {
                let Some(&t) = cap.least() else { return };
                let e = config.epoch_of(t);
                let mut session = output.session(&cap);
                let (mut away, mut home) = (0u64, 0u64);
                for batch in data {
                    for d in batch.drain(..) {
                        let hash = KeyHash::of(&key(&d), config.seed());
                        if peers > 1 {
                            let bytes = bincode::serialized_size(&(hash, &d)).unwrap_or(0);
                            if u64::from(config.shard_of(hash)) % peers == me {
                                home += bytes;
                            } else {
                                away += bytes;
                            }
                        }
                        session.give((hash, d));
                    }
                }
                if away + home > 0 {
                    let mut routed = routed.borrow_mut();
                    let slot = routed.entry(e).or_default();
                    slot.0 += away;
                    slot.1 += home;
                }
            });
        }
    })
}

/// Exchanges `(hash, record)` pairs by a function of the hash.
trait ExchangeBy<'scope, D> {
    fn exchange_by(self, route: impl Fn(&KeyHash) -> u64 + 'static) -> Self;
}

impl<'scope, D: ExchangeData> ExchangeBy<'scope, D> for StreamVec<'scope, u64, (KeyHash, D)> {
    fn exchange_by(self, route: impl Fn(&KeyHash) -> u64 + 'static) -> Self {
        use timely::dataflow::operators::Exchange as _;
        self.exchange(move |(h, _): &(KeyHash, D)| route(h))
    }
}

/// A hasher for maps keyed by [`KeyHash`], which is uniformly distributed already.
#[derive(Default)]
struct KeyHashHasher(u64);

impl Hasher for KeyHashHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = self.0.rotate_left(29) ^ x;
    }
}

/// A tick whose records wait for the frontier.
struct PendingTick<D> {
    cap: Capability<u64>,
    records: Vec<(KeyHash, D)>,
}

/// An epoch with records or received deltas whose stats are not out yet.
struct OpenEpoch {
    cap: Capability<u64>,
    stats: DedupStats,
    /// Bytes of `(hash, record)` pairs received (`ByKey`, several workers).
    bytes_in: u64,
    /// This worker's slice of the epoch, shipped when the epoch closes (`Local`, several workers).
    slice: Option<BloomFilter>,
}

/// One worker's dedup state.
struct DecideState<D> {
    config: DedupConfig,
    me: usize,
    peers: usize,
    shard_shape: FilterShape,
    /// One tick filter per shard this worker holds, created on first use, freed when stale.
    shards: Vec<Option<TickFilter>>,
    /// The other workers' closed epochs (`Local` with several workers).
    view: Option<WindowView>,
    ticks: BTreeMap<Tick, PendingTick<D>>,
    epochs: BTreeMap<u64, OpenEpoch>,
    routed: Routed,
}

impl<D: ExchangeData> DecideState<D> {
    fn new(config: DedupConfig, me: usize, peers: usize, routed: Routed) -> Self {
        let spread = match config.mode() {
            DedupMode::ByKey => 1,
            DedupMode::Local => peers,
        };
        // Both shapes were validated when the configuration was built (with `spread` 1; a larger
        // spread only shrinks the shard).
        let shard_shape = config
            .shard_shape(spread)
            .unwrap_or(FilterShape { bits: 1, hashes: 1 });
        let view = match (config.mode(), peers > 1) {
            (DedupMode::Local, true) => config.view_shape().ok().and_then(|shape| {
                WindowView::new(shape, config.seed(), config.epoch_len(), config.window()).ok()
            }),
            _ => None,
        };
        DecideState {
            shards: (0..config.shards()).map(|_| None).collect(),
            config,
            me,
            peers,
            shard_shape,
            view,
            ticks: BTreeMap::new(),
            epochs: BTreeMap::new(),
            routed,
        }
    }

    fn open_epoch(&mut self, e: u64, cap: impl FnOnce() -> Capability<u64>) -> &mut OpenEpoch {
        let (me, mode) = (self.me as u32, self.config.mode());
        self.epochs.entry(e).or_insert_with(|| OpenEpoch {
            cap: cap(),
            stats: DedupStats::new(e, me, mode),
            bytes_in: 0,
            slice: None,
        })
    }

    /// Makes sure tick `t` and its epoch are open.
    fn open(
        &mut self,
        t: Tick,
        tick_cap: impl FnOnce() -> Capability<u64>,
        epoch_cap: impl FnOnce() -> Capability<u64>,
    ) {
        self.ticks.entry(t).or_insert_with(|| PendingTick {
            cap: tick_cap(),
            records: Vec::new(),
        });
        let e = self.config.epoch_of(t);
        self.open_epoch(e, epoch_cap);
    }

    /// Buffers a record of the open tick `t`; adds its key to this worker's slice of the epoch.
    fn accept(&mut self, t: Tick, hash: KeyHash, record: D) {
        let e = self.config.epoch_of(t);
        let (several, view) = (self.peers > 1, self.view.as_ref());
        if let Some(epoch) = self.epochs.get_mut(&e) {
            match self.config.mode() {
                DedupMode::ByKey if several => {
                    epoch.bytes_in += bincode::serialized_size(&(hash, &record)).unwrap_or(0);
                }
                DedupMode::Local => {
                    if epoch.slice.is_none() {
                        epoch.slice = view.and_then(|v| v.new_slice().ok());
                    }
                    if let Some(slice) = epoch.slice.as_mut() {
                        slice.insert_hash(hash);
                    }
                }
                DedupMode::ByKey => {}
            }
        }
        if let Some(tick) = self.ticks.get_mut(&t) {
            tick.records.push((hash, record));
        }
    }

    /// Merges a peer's slice (arriving at tick `t`, the first tick of the epoch after the slice's)
    /// into the view; its bytes count for the epoch whose queries consult it.
    fn receive(&mut self, t: Tick, delta: ViewDelta, cap: impl FnOnce() -> Capability<u64>) {
        let refused = match self.view.as_mut() {
            Some(view) => view.merge(delta.epoch, &delta.words).is_err(),
            None => true,
        };
        let e = self.config.epoch_of(t);
        let epoch = self.open_epoch(e, cap);
        epoch.stats.bytes_received += delta.words.wire_bytes();
        epoch.stats.refused_deltas += u64::from(refused);
    }

    /// Takes the slices of epochs the frontier has closed, one delta per other worker.
    fn ship(&mut self, frontier: &MutableAntichain<u64>) -> Vec<(Capability<u64>, Vec<ViewDelta>)> {
        let mut out = Vec::new();
        for (&e, epoch) in self.epochs.iter_mut() {
            if frontier.less_equal(&self.config.epoch_last(e)) {
                break;
            }
            let Some(slice) = epoch.slice.take() else {
                continue;
            };
            let Some(words) = WindowView::encode(&slice) else {
                continue;
            };
            let deltas: Vec<ViewDelta> = (0..self.peers)
                .filter(|&dest| dest != self.me)
                .map(|dest| ViewDelta {
                    epoch: e,
                    from: self.me as u32,
                    dest: dest as u32,
                    words: words.clone(),
                })
                .collect();
            epoch.stats.bytes_sent += deltas.iter().map(|d| d.words.wire_bytes()).sum::<u64>();
            out.push((epoch.cap.clone(), deltas));
        }
        out
    }

    /// The earliest buffered tick, once the input frontier has passed it and (in `Local` with
    /// several workers) every slice of the epochs before its epoch has arrived.
    fn next_tick(
        &mut self,
        r_frontier: &MutableAntichain<u64>,
        d_frontier: &MutableAntichain<u64>,
    ) -> Option<(Tick, PendingTick<D>)> {
        let (&t, _) = self.ticks.first_key_value()?;
        if r_frontier.less_equal(&t) || !self.view_complete(self.config.epoch_of(t), d_frontier) {
            return None;
        }
        self.ticks.pop_first()
    }

    /// Whether every slice epoch `e`'s records may consult has arrived (slices of epoch `e - 1`
    /// arrive at epoch `e`'s first tick).
    fn view_complete(&self, e: u64, d_frontier: &MutableAntichain<u64>) -> bool {
        self.view.is_none() || e == 0 || !d_frontier.less_equal(&self.config.epoch_start(e))
    }

    /// Decides tick `t`'s records (see the module docs) and returns those that pass.
    fn decide(&mut self, t: Tick, records: Vec<(KeyHash, D)>) -> Vec<D> {
        let config = &self.config;
        let mut fresh: Vec<bool> = records
            .iter()
            .map(|&(h, _)| {
                let own = self.shards[config.shard_of(h) as usize]
                    .as_ref()
                    .is_some_and(|f| f.seen(h, t));
                !own && !self.view.as_ref().is_some_and(|v| v.contains_hash(h, t))
            })
            .collect();
        let mut first: HashMap<
            KeyHash,
            (usize, Option<Vec<u8>>),
            BuildHasherDefault<KeyHashHasher>,
        > = HashMap::default();
        let mut same_tick = 0u64;
        for (i, (h, record)) in records.iter().enumerate() {
            if !fresh[i] {
                continue;
            }
            match first.entry(*h) {
                Entry::Vacant(v) => {
                    v.insert((i, None));
                }
                Entry::Occupied(mut o) => {
                    same_tick += 1;
                    let (j, best) = o.get_mut();
                    let best = best.get_or_insert_with(|| encode(&records[*j].1));
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
        for &(h, _) in &records {
            let slot = &mut self.shards[config.shard_of(h) as usize];
            if slot.is_none() {
                *slot = TickFilter::new(self.shard_shape, config.window(), t).ok();
            }
            if let Some(f) = slot.as_mut() {
                f.insert(h, t);
            }
        }
        let total = records.len() as u64;
        let passed: Vec<D> = records
            .into_iter()
            .zip(fresh)
            .filter_map(|((_, d), keep)| keep.then_some(d))
            .collect();
        if let Some(epoch) = self.epochs.get_mut(&config.epoch_of(t)) {
            let s = &mut epoch.stats;
            s.records += total;
            s.passed += passed.len() as u64;
            s.dropped += total - passed.len() as u64;
            s.dropped_same_tick += same_tick;
        }
        passed
    }

    /// The earliest tick still to be decided: the first buffered tick or the input frontier;
    /// `None` when the input is done and nothing waits.
    fn horizon(&self, r_frontier: &MutableAntichain<u64>) -> Option<Tick> {
        let frontier = r_frontier.frontier().first().copied();
        match (self.ticks.first_key_value().map(|(&t, _)| t), frontier) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Frees the shards and view epochs no tick at or after `horizon` can consult (all of them
    /// when `horizon` is `None`).
    fn retire(&mut self, horizon: Option<Tick>) {
        match horizon {
            Some(h) => {
                for slot in &mut self.shards {
                    if slot.as_ref().is_some_and(|f| f.stale(h)) {
                        *slot = None;
                    }
                }
                if let Some(view) = self.view.as_mut() {
                    view.retire(h);
                }
            }
            None => {
                self.shards.iter_mut().for_each(|s| *s = None);
                if let Some(view) = self.view.as_mut() {
                    view.clear();
                }
            }
        }
    }

    /// Stats of the epochs that are complete: closed by the input frontier, every record decided
    /// (none before `next` waits), and every slice they consult received.
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
                next.is_some_and(|t| t <= last) || self.ticks.range(..=last).next().is_some();
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
        s.records_buffered = self.ticks.values().map(|t| t.records.len() as u64).sum();
        let mut shard_fpr = Vec::new();
        for (i, f) in self.shards.iter().enumerate() {
            let Some(f) = f else { continue };
            let fill = f.live_fill(last);
            let fpr = fill.powi(f.hashes() as i32);
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
        if let Some(view) = self.view.as_mut() {
            s.view_bits = view.memory_bits();
            let first = self
                .config
                .epoch_of(window_start(last, self.config.window()));
            for v in view.slice_stats() {
                if matches!(v.slice, Slice::ViewEpoch(e) if e >= first && e <= s.epoch) {
                    s.estimated_fpr += v.estimated_fpr;
                }
                s.slices.push(v);
            }
        }
        s
    }
}

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
    fn view_epochs_cover_the_closed_part_of_a_window() {
        let cfg = |w, l| {
            DedupConfig::builder()
                .window(w)
                .epoch_len(l)
                .expected_items_per_window(100)
                .build()
                .unwrap()
        };
        assert_eq!(cfg(60, 10).view_epochs(), 6);
        assert_eq!(cfg(61, 10).view_epochs(), 6);
        assert_eq!(cfg(62, 10).view_epochs(), 7);
        assert_eq!(cfg(1, 10).view_epochs(), 1);
        let c = cfg(60, 10);
        assert_eq!(
            (c.epoch_start(3), c.epoch_last(3), c.epoch_of(39)),
            (30, 39, 3)
        );
        assert!(c.shard_of(KeyHash::of(&1u64, 0)) < 64);
    }
}
