//! Windowed membership: "was key x inserted anywhere, on any worker, in the last W ticks?" for a
//! stream of queries, answered deterministically against the workers' merged inserts.
//!
//! # Semantics
//!
//! Inserts and queries are `(tick, key)` records on timestamps that are a lower bound of their
//! ticks ([`crate::timed`]); a record below its timestamp is late and taken at the timestamp. Each
//! worker collects its inserts of an epoch and, once the frontier has passed the epoch, ships
//! their key hashes, by generation, to every worker ([`SliceShipment`]). Every worker ORs all
//! shipments into its copy of the merged view, a [`GenerationSlices`] (a Bloom slice per
//! generation of `S + 1` ticks), epoch by epoch. A query at tick `t` is answered once every
//! shipment of the epochs up to `t`'s has been merged, and before any later epoch is:
//!
//! * the answer is **yes** whenever the key was inserted (anywhere) in `(t − W, t]`: no false
//!   negative;
//! * it is **no**, up to the false positive rate ε, when the key was not inserted in
//!   `(t − W − S, e]`, where `e` is the last tick of `t`'s epoch (inserts later in the same epoch
//!   may count: the view has epoch granularity);
//! * answers do not depend on scheduling, on the number of workers or processes, or on how the
//!   inserts were spread over them.
//!
//! # Shapes agreed from the stream
//!
//! A slice's size must be the same on every worker, or the slices would not OR. The slice of
//! generation `g` is opened when the first epoch with keys of `g` is merged, sized from what
//! every worker has at that point: the distinct keys of `g` in that epoch (all workers' keys,
//! scaled to the whole generation when the epoch covers part of it) or, if more, the
//! distinct-key sketch of the last generation that ended before `g`'s first epoch (sketches are
//! part of the view, and OR like it); with 25% headroom and at least
//! [`MembershipConfig::min_slice_keys`] keys. Every worker decides from the same merged data,
//! so every copy of the view holds the same bits. Each
//! epoch's [`MembershipStats`] carries the view's digest, equal on every worker and for any
//! number of workers.
//!
//! ```
//! use timely::dataflow::operators::{Capture, Input};
//! use timely::dataflow::operators::capture::Extract;
//! use chronobloom_operators::{MembershipConfig, TimedWindowMembership};
//!
//! let cfg = MembershipConfig::builder().window(60).epoch_len(10).build().unwrap();
//! let answers = timely::execute_directly(move |worker| {
//!     let (mut inserts, mut queries, answers) = worker.dataflow::<u64, _, _>(|scope| {
//!         let (i, inserts) = scope.new_input::<Vec<(u64, String)>>();
//!         let (q, queries) = scope.new_input::<Vec<(u64, String)>>();
//!         let out = inserts.window_membership(queries, &cfg);
//!         (i, q, out.answers.capture())
//!     });
//!     inserts.send((5, "a".to_string()));
//!     for q in [(30, "a"), (30, "b"), (90, "a")] {
//!         queries.send((q.0, q.1.to_string()));
//!     }
//!     (inserts, queries);
//!     answers
//! });
//! let mut got: Vec<_> = answers.extract().into_iter().flat_map(|(_, a)| a).collect();
//! got.sort();
//! assert_eq!(got, vec![(30, "a".into(), true), (30, "b".into(), false), (90, "a".into(), false)]);
//! ```

mod config;
mod resume;

pub use config::{MembershipConfig, MembershipConfigBuilder};
pub use resume::{MembershipCheckpoint, MembershipSnapshot};

use crate::batched::keep_least;
use crate::checkpoint::CheckpointError;
use chronobloom_core::hash::Key;
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::GenerationSlices;
use resume::Export;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Capability, OkErr};
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// One worker's inserts of one epoch, for one destination: key hashes
/// ([`KeyHash::lo`](chronobloom_core::hash::KeyHash::lo)) by generation, each once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceShipment {
    /// The epoch.
    pub epoch: u64,
    /// The sending worker.
    pub from: u32,
    /// The receiving worker.
    pub dest: u32,
    /// `(generation, key hashes)`, generations ascending, hashes sorted and distinct.
    pub keys: Vec<(u64, Vec<u64>)>,
    /// Inserts of the epoch whose tick was below their timestamp.
    pub late: u64,
}

impl SliceShipment {
    /// Bytes on the wire (bincode): the header and 8 bytes per generation and per hash.
    pub fn wire_bytes(&self) -> u64 {
        8 + 4
            + 4
            + 8
            + 8
            + self
                .keys
                .iter()
                .map(|(_, h)| 16 + 8 * h.len() as u64)
                .sum::<u64>()
    }
}

/// What one worker's view did in one epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipStats {
    /// The epoch.
    pub epoch: u64,
    /// The worker.
    pub worker: u32,
    /// Key hashes merged (each worker's distinct keys per generation, summed over workers).
    pub merged: u64,
    /// Key hashes that could not be merged (a slice that could not be opened; never with a
    /// validated configuration): counted, not dropped silently.
    pub unplaced: u64,
    /// Late inserts, over all workers.
    pub late: u64,
    /// Bytes of shipments received.
    pub bytes_received: u64,
    /// Slices open after the epoch.
    pub slices: u64,
    /// Bits of the view (slices and sketches) after the epoch.
    pub bits: u64,
    /// [`GenerationSlices::digest`] after the epoch: equal on every worker.
    pub digest: u64,
}

/// The window membership operator's outputs.
pub struct MembershipStreams<'scope, Q> {
    /// `(tick, query, seen)` per query, at the query's timestamp or later.
    pub answers: StreamVec<'scope, u64, (Tick, Q, bool)>,
    /// Each worker's view after each epoch that merged inserts.
    pub stats: StreamVec<'scope, u64, MembershipStats>,
}

/// Windowed membership of `(tick, key)` inserts, queried by `(tick, query)` records whose
/// query is a key hashed like the inserts (see the [module docs](self)).
pub trait TimedWindowMembership<'scope, K> {
    /// Answers each query `(t, q)`: was `q`'s key inserted in the window ending at `t`?
    fn window_membership<Q: Key + ExchangeData>(
        self,
        queries: StreamVec<'scope, u64, (Tick, Q)>,
        config: &MembershipConfig,
    ) -> MembershipStreams<'scope, Q>;

    /// [`Self::window_membership`], starting from a checkpointed view when `restore` is given,
    /// with a handle that snapshots the view at a checkpoint boundary ([`crate::checkpoint`]).
    /// A snapshot of another window, slack, rate or seed is refused before anything is built.
    #[allow(clippy::type_complexity)]
    fn window_membership_resumable<Q: Key + ExchangeData>(
        self,
        queries: StreamVec<'scope, u64, (Tick, Q)>,
        config: &MembershipConfig,
        restore: Option<MembershipSnapshot>,
    ) -> Result<(MembershipStreams<'scope, Q>, MembershipCheckpoint), CheckpointError>;
}

impl<'scope, K: Key + ExchangeData> TimedWindowMembership<'scope, K>
    for StreamVec<'scope, u64, (Tick, K)>
{
    fn window_membership<Q: Key + ExchangeData>(
        self,
        queries: StreamVec<'scope, u64, (Tick, Q)>,
        config: &MembershipConfig,
    ) -> MembershipStreams<'scope, Q> {
        // validated when the configuration was built
        build(self, queries, config, config.slices().ok()).0
    }

    fn window_membership_resumable<Q: Key + ExchangeData>(
        self,
        queries: StreamVec<'scope, u64, (Tick, Q)>,
        config: &MembershipConfig,
        restore: Option<MembershipSnapshot>,
    ) -> Result<(MembershipStreams<'scope, Q>, MembershipCheckpoint), CheckpointError> {
        let fresh = config
            .slices()
            .map_err(|e| CheckpointError::state("membership", e.to_string()))?;
        let view = match restore {
            Some(snapshot) if !fresh.same_parameters(&snapshot.view) => {
                return Err(CheckpointError::state(
                    "membership",
                    "the checkpointed view has another window, slack, rate or seed",
                ));
            }
            Some(snapshot) => snapshot.view,
            None => fresh,
        };
        Ok(build(self, queries, config, Some(view)))
    }
}

/// The operator pair around `view` (a fresh or restored one), and its checkpoint handle.
fn build<'scope, K: Key + ExchangeData, Q: Key + ExchangeData>(
    inserts: StreamVec<'scope, u64, (Tick, K)>,
    queries: StreamVec<'scope, u64, (Tick, Q)>,
    config: &MembershipConfig,
    view: Option<GenerationSlices>,
) -> (MembershipStreams<'scope, Q>, MembershipCheckpoint) {
    let collected: Rc<RefCell<BTreeMap<u64, Collected>>> = Rc::default();
    let state = Rc::new(RefCell::new(MergeState {
        view,
        inbox: BTreeMap::new(),
        held: BTreeMap::new(),
    }));
    let shipments = ship(inserts, config, Rc::clone(&collected));
    let out = merge(shipments, queries, config, Rc::clone(&state));
    let (answers, stats) = out.ok_err(|x| x);
    let export: Export = Box::new(move |_boundary| {
        let state = state.borrow();
        if let Some(e) = collected.borrow().keys().next() {
            return Err(format!("inserts of epoch {e} not yet shipped"));
        }
        if let Some(e) = state.inbox.keys().next() {
            return Err(format!("shipments of epoch {e} not yet merged"));
        }
        if let Some(e) = state.held.keys().next() {
            return Err(format!("queries of epoch {e} not yet answered"));
        }
        state.view.clone().ok_or_else(|| "no view".to_owned())
    });
    let checkpoint = MembershipCheckpoint {
        epoch_len: config.epoch_len(),
        export,
    };
    (MembershipStreams { answers, stats }, checkpoint)
}

/// An epoch's inserts on this worker: the least capability, `(generation, hash)` pairs and the
/// late count.
type Collected = (Capability<u64>, Vec<(u64, u64)>, u64);

/// Collects each worker's inserts per epoch and ships them to every worker once the frontier
/// has passed the epoch.
fn ship<'scope, K: Key + ExchangeData>(
    inserts: StreamVec<'scope, u64, (Tick, K)>,
    config: &MembershipConfig,
    open: Rc<RefCell<BTreeMap<u64, Collected>>>,
) -> StreamVec<'scope, u64, SliceShipment> {
    let scope = inserts.scope();
    let (me, peers) = (scope.index() as u32, scope.peers() as u32);
    let config = config.clone();
    let g_len = config.slack().saturating_add(1);
    inserts.unary_frontier(Pipeline, "MembershipShip", move |default_cap, _| {
        drop(default_cap);
        move |(input, frontier), output| {
            let mut open = open.borrow_mut();
            let port = output.output_index();
            input.for_each_stamp(|cap, data| {
                let Some(&ts) = cap.least() else { return };
                for batch in data {
                    for (t, key) in batch.drain(..) {
                        let late = t < ts;
                        let t = t.max(ts);
                        let e = config.epoch_of(t);
                        let slot = open
                            .entry(e)
                            .or_insert_with(|| (cap.delayed(&t, port), Vec::new(), 0));
                        keep_least(&mut slot.0, t, |t| cap.delayed(&t, port));
                        slot.1.push((t / g_len, key.key_hash(config.seed()).lo));
                        slot.2 += u64::from(late);
                    }
                }
            });
            while let Some(entry) = open.first_entry() {
                if frontier.less_equal(&config.epoch_last(*entry.key())) {
                    break;
                }
                let (epoch, (cap, mut pairs, late)) = entry.remove_entry();
                pairs.sort_unstable();
                pairs.dedup();
                let mut keys: Vec<(u64, Vec<u64>)> = Vec::new();
                for run in pairs.chunk_by(|a, b| a.0 == b.0) {
                    keys.push((run[0].0, run.iter().map(|&(_, h)| h).collect()));
                }
                let mut session = output.session(&cap);
                for dest in 0..peers {
                    session.give(SliceShipment {
                        epoch,
                        from: me,
                        dest,
                        keys: keys.clone(),
                        late,
                    });
                }
            }
        }
    })
}

/// Shipments of one epoch waiting for the frontier, with the capability of the first.
struct Inbox {
    cap: Capability<u64>,
    shipments: Vec<SliceShipment>,
}

/// Queries of one epoch waiting for its view, by capability.
type Held<Q> = Vec<(Capability<u64>, Vec<(Tick, Q)>)>;

/// A worker's merge side: its copy of the view, shipments waiting for their epoch to complete,
/// and queries waiting for their epoch's view.
struct MergeState<Q> {
    view: Option<GenerationSlices>,
    inbox: BTreeMap<u64, Inbox>,
    held: BTreeMap<u64, Held<Q>>,
}

/// Merges every shipment into this worker's view in epoch order and answers the queries of
/// each epoch once its shipments are merged and before later ones are.
fn merge<'scope, Q: Key + ExchangeData>(
    shipments: StreamVec<'scope, u64, SliceShipment>,
    queries: StreamVec<'scope, u64, (Tick, Q)>,
    config: &MembershipConfig,
    state: Rc<RefCell<MergeState<Q>>>,
) -> StreamVec<'scope, u64, Result<(Tick, Q, bool), MembershipStats>> {
    let me = shipments.scope().index() as u32;
    let config = config.clone();
    let route = Exchange::new(|s: &SliceShipment| u64::from(s.dest));
    shipments.binary_frontier(
        queries,
        route,
        Pipeline,
        "MembershipMerge",
        move |cap, _| {
            drop(cap);
            move |(s_in, s_frontier), (q_in, q_frontier), output| {
                let mut state = state.borrow_mut();
                let MergeState { view, inbox, held } = &mut *state;
                let port = output.output_index();
                s_in.for_each_stamp(|cap, data| {
                    for batch in data {
                        for s in batch.drain(..) {
                            let Some(c) = cap.retain_least(port) else {
                                return;
                            };
                            inbox
                                .entry(s.epoch)
                                .or_insert_with(|| Inbox {
                                    cap: c,
                                    shipments: Vec::new(),
                                })
                                .shipments
                                .push(s);
                        }
                    }
                });
                q_in.for_each_stamp(|cap, data| {
                    let Some(&ts) = cap.least() else { return };
                    let mut by_epoch: BTreeMap<u64, Vec<(Tick, Q)>> = BTreeMap::new();
                    for batch in data {
                        for (t, k) in batch.drain(..) {
                            let t = t.max(ts);
                            by_epoch.entry(config.epoch_of(t)).or_default().push((t, k));
                        }
                    }
                    for (e, qs) in by_epoch {
                        let at = config.epoch_start(e).max(ts);
                        held.entry(e)
                            .or_default()
                            .push((cap.delayed(&at, port), qs));
                    }
                });
                let Some(view) = view.as_mut() else { return };
                let complete = |e: u64| !s_frontier.less_equal(&config.epoch_last(e));
                loop {
                    let next_ship = inbox.keys().next().copied();
                    let next_query = held.keys().next().copied();
                    match (next_ship, next_query) {
                        (Some(c), q) if q.is_none_or(|q| c <= q) => {
                            // every shipment of c is in, and no query that must not see c can come
                            if !complete(c) || q_frontier.less_than(&config.epoch_start(c)) {
                                break;
                            }
                            let Some(Inbox { cap, shipments }) = inbox.remove(&c) else {
                                break;
                            };
                            let stats = apply(view, &config, me, c, shipments);
                            output.session(&cap).give(Err(stats));
                        }
                        (_, Some(q)) => {
                            if !complete(q) {
                                break;
                            }
                            let Some(batches) = held.remove(&q) else {
                                break;
                            };
                            for (cap, qs) in batches {
                                let seed = config.seed();
                                output
                                    .session(&cap)
                                    .give_iterator(qs.into_iter().map(|(t, k)| {
                                        let seen = view.contains(k.key_hash(seed).lo, t);
                                        Ok((t, k, seen))
                                    }));
                            }
                        }
                        _ => break,
                    }
                }
            }
        },
    )
}

/// Merges epoch `epoch`'s shipments into `view` (in sender order: the bits do not depend on it)
/// and describes the view after it.
fn apply(
    view: &mut GenerationSlices,
    config: &MembershipConfig,
    me: u32,
    epoch: u64,
    mut shipments: Vec<SliceShipment>,
) -> MembershipStats {
    // a generation starting in a later epoch is sized from one that ended before that epoch:
    // at most an epoch's generations and one more back
    let g_len = config.slack().saturating_add(1);
    view.retire(
        config.epoch_start(epoch),
        config.epoch_len().div_ceil(g_len) + 1,
    );
    shipments.sort_by_key(|s| s.from);
    let mut stats = MembershipStats {
        epoch,
        worker: me,
        merged: 0,
        unplaced: 0,
        late: 0,
        bytes_received: 0,
        slices: 0,
        bits: 0,
        digest: 0,
    };
    // every worker's keys of each generation, each once
    let mut by_gen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for s in &shipments {
        stats.late += s.late;
        stats.bytes_received += s.wire_bytes();
        for (g, hashes) in &s.keys {
            by_gen.entry(*g).or_default().extend_from_slice(hashes);
        }
    }
    let (e_first, e_last) = (config.epoch_start(epoch), config.epoch_last(epoch));
    for (g, mut hashes) in by_gen {
        hashes.sort_unstable();
        hashes.dedup();
        if !view.is_open(g) {
            // sized from this epoch's keys of g, scaled to the whole generation, or from the
            // last generation that ended before g's first epoch if that had more
            let (g_first, g_last) = (view.generation_start(g), view.generation_start(g + 1) - 1);
            let overlap = g_last.min(e_last).saturating_sub(g_first.max(e_first)) + 1;
            let expected = (hashes.len() as u64).saturating_mul(g_len) / overlap.max(1);
            let first = config.epoch_start(config.epoch_of(g_first));
            let from = first.checked_sub(1).map(|t| view.generation_of(t));
            let opened = view
                .shape_from(from, expected, config.min_slice_keys())
                .and_then(|shape| view.open(g, shape));
            if opened.is_err() {
                stats.unplaced += hashes.len() as u64;
                continue;
            }
        }
        for h in hashes {
            match view.insert(g, h) {
                Ok(()) => stats.merged += 1,
                Err(_) => stats.unplaced += 1,
            }
        }
    }
    stats.slices = view.slices().count() as u64;
    stats.bits = view.memory_bits();
    stats.digest = view.digest();
    stats
}
