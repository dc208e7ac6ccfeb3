//! The merge-and-query operator: OR-merges shipments into the merged state in epoch order and
//! answers queries against exactly the epochs they depend on.

use super::config::{IndexConfig, Placement};
use super::delta::Shipment;
use super::digest::{DigestTable, DigestUpdate, EpochDigest};
use super::state::{walk_steps, MergedState, Step};
use super::stats::EpochStats;
use super::temporal::IndexStreams;
use crate::batched::{keep_least, ByTime};
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Allocation, Tick, TimeRange};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::{Map, Partition};
use timely::dataflow::operators::{Capability, Concatenate};
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// The answer to one query.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueryAnswer<K> {
    /// The key asked about.
    pub key: K,
    /// The range asked about.
    pub range: TimeRange,
    /// The query's timestamp t_q.
    pub issued: Tick,
    /// The epoch whose merged state answered: `epoch(max(t_q, range end))`, clamped to the
    /// horizon ([`IndexConfig::answering_epoch`]).
    pub epoch: u64,
    /// False means the key certainly did not appear in the range.
    pub present: bool,
    /// Membership probes made.
    pub probes: u64,
}

/// What the merge-and-query operator emits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum IndexEvent<K> {
    /// A query's answer, at the last tick of its answering epoch (or at the query's own time,
    /// when later).
    Answer(QueryAnswer<K>),
    /// The merged state's digest after an epoch, at the least time of the epoch's shipments (at
    /// most its last tick).
    Digest(EpochDigest),
    /// A worker's statistics for an epoch, at the least time of the epoch's shipments.
    Stats(EpochStats),
}

/// Merges epoch shipments into the merged state and answers queries (DESIGN.md §3).
///
/// Shipments (from [`crate::LocalIndex`]) are routed to their destination worker and OR-merged in
/// epoch order. A query `(key, range)` with timestamp t_q is answered against the merged state of
/// exactly the epochs up to [`IndexConfig::answering_epoch`]: it waits until every shipment of
/// those epochs has arrived, and shipments of later epochs wait until it is answered, so answers
/// do not depend on scheduling or on the number of workers. When replicated, a query is answered
/// on the worker it enters; when sharded, every owner evaluates its share of the query's probes and
/// the worker it entered ANDs them, giving the same answer and probe count.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Event;
/// use chronobloom_core::temporal::TimeRange;
/// use chronobloom_operators::{IndexConfig, IndexEvent, LocalIndex, MergeQuery};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let captured = timely::execute_directly(move |worker| {
///     let (mut records, mut queries, captured) = worker.dataflow::<u64, _, _>(|scope| {
///         let (r_in, records) = scope.new_input::<Vec<u64>>();
///         let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
///         let events = records.local_index(&cfg).merge_and_query(queries, &cfg);
///         (r_in, q_in, events.capture())
///     });
///     records.send(7); // key 7 at tick 0
///     // asked at tick 0 about [0, 25]: answered once epoch 2 (ticks 20..=29) is merged
///     queries.send((7, TimeRange::new(0, 25).unwrap()));
///     queries.send((8, TimeRange::new(0, 25).unwrap()));
///     captured
/// });
/// let mut answers: Vec<(u64, bool)> = captured.iter()
///     .flat_map(|e| match e { Event::Messages(_, s) => s, Event::Progress(_) => vec![] })
///     .filter_map(|e| match e { IndexEvent::Answer(a) => Some((a.key, a.present)), _ => None })
///     .collect();
/// answers.sort();
/// assert_eq!(answers, vec![(7, true), (8, false)]);
/// ```
pub trait MergeQuery<'scope> {
    /// Merges this stream of shipments and answers `queries`.
    fn merge_and_query<K: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (K, TimeRange)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, IndexEvent<K>>;
}

/// Shipments of one epoch waiting to be merged, with a capability at the least of their times.
struct Inbox {
    cap: Capability<u64>,
    shipments: Vec<Shipment>,
}

/// A batch of queries waiting for their answering epoch, with a capability at its last tick (or
/// at the queries' time, when later).
struct Held<Q> {
    cap: Capability<u64>,
    issued: Tick,
    queries: Vec<Q>,
}

/// A query as sent to every owner in the sharded placement.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ShardQuery<K> {
    key: K,
    range: TimeRange,
    origin: u32,
    seq: u64,
}

/// An owner's evaluation of a query's probe steps, sent back to the query's origin.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ShardReply<K> {
    query: ShardQuery<K>,
    issued: Tick,
    epoch: u64,
    steps: Vec<Step>,
}

/// What an owner's merge emits in the sharded placement: an update goes to every worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum ShardEvent<K> {
    Reply(ShardReply<K>),
    Update { dest: u32, update: DigestUpdate },
    Stats(EpochStats),
}

impl<K> ShardEvent<K> {
    /// The output of the sharded merge's split that takes this event.
    fn part(&self) -> u64 {
        match self {
            ShardEvent::Reply(_) => 0,
            ShardEvent::Update { .. } => 1,
            ShardEvent::Stats(_) => 2,
        }
    }
}

impl<'scope> MergeQuery<'scope> for StreamVec<'scope, u64, Shipment> {
    fn merge_and_query<K: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (K, TimeRange)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, IndexEvent<K>> {
        let cells = fresh_cells(config, self.scope().index(), self.scope().peers());
        merge_and_query_with(self, queries, config, cells)
    }
}

/// A worker's fresh merged state and digest table.
pub(super) fn fresh_cells(config: &IndexConfig, me: usize, peers: usize) -> MergeCells {
    let merged = fresh_merged(config, me, peers);
    (Rc::new(RefCell::new(merged)), Rc::default())
}

/// A worker's empty merged state for the configured placement.
pub(super) fn fresh_merged(config: &IndexConfig, me: usize, peers: usize) -> MergedState {
    match config.placement() {
        Placement::Replicated => MergedState::new(config),
        Placement::Sharded => MergedState::shard(config, me, peers),
    }
}

/// The merged state and digest table a worker's merge works on (fresh or restored).
pub(super) type MergeCells = (Rc<RefCell<MergedState>>, Rc<RefCell<DigestTable>>);

/// [`MergeQuery::merge_and_query`] on given state.
fn merge_and_query_with<'scope, K: Key + ExchangeData + Clone>(
    shipments: StreamVec<'scope, u64, Shipment>,
    queries: StreamVec<'scope, u64, (K, TimeRange)>,
    config: &IndexConfig,
    cells: MergeCells,
) -> StreamVec<'scope, u64, IndexEvent<K>> {
    match config.placement() {
        Placement::Replicated => replicated(shipments, queries, config, cells),
        Placement::Sharded => {
            let out = sharded(shipments, queries, config, cells);
            let scope = out.stats.scope();
            scope.concatenate([
                out.answers.map(IndexEvent::Answer),
                out.digests.map(IndexEvent::Digest),
                out.stats.map(IndexEvent::Stats),
            ])
        }
    }
}

/// The merge's outputs as typed streams, on given state: what [`MergeQuery::merge_and_query`]
/// gives, split. The sharded placement makes them typed, without an operator per kind of event
/// (every operator costs progress tracking at every time).
pub(super) fn merge_streams_with<'scope, K: Key + ExchangeData + Clone>(
    shipments: StreamVec<'scope, u64, Shipment>,
    queries: StreamVec<'scope, u64, (K, TimeRange)>,
    config: &IndexConfig,
    cells: MergeCells,
) -> IndexStreams<'scope, K> {
    match config.placement() {
        Placement::Replicated => split(replicated(shipments, queries, config, cells)),
        Placement::Sharded => sharded(shipments, queries, config, cells),
    }
}

/// Splits the merge's events into typed streams.
fn split<'scope, K: ExchangeData + Clone>(
    events: StreamVec<'scope, u64, IndexEvent<K>>,
) -> IndexStreams<'scope, K> {
    IndexStreams {
        answers: events.clone().flat_map(|e| match e {
            IndexEvent::Answer(a) => Some(a),
            _ => None,
        }),
        digests: events.clone().flat_map(|e| match e {
            IndexEvent::Digest(d) => Some(d),
            _ => None,
        }),
        stats: events.flat_map(|e| match e {
            IndexEvent::Stats(s) => Some(s),
            _ => None,
        }),
    }
}

/// Replicated: every worker merges every shipment and answers the queries entering it.
fn replicated<'scope, K: Key + ExchangeData + Clone>(
    shipments: StreamVec<'scope, u64, Shipment>,
    queries: StreamVec<'scope, u64, (K, TimeRange)>,
    config: &IndexConfig,
    (state, table): MergeCells,
) -> StreamVec<'scope, u64, IndexEvent<K>> {
    let seed = config.seed();
    let digest = config.digest();
    merge_core(
        shipments,
        queries,
        Pipeline,
        config,
        state,
        |(_, r)| *r,
        move |state, (key, range), issued, epoch| {
            let a = state.query_hash(KeyHash::of(&key, seed), range);
            IndexEvent::Answer(QueryAnswer {
                key,
                range,
                issued,
                epoch,
                present: a.present,
                probes: a.probes,
            })
        },
        move |state, merged, stats, me| {
            let mut out = Vec::new();
            if digest {
                let mut table = table.borrow_mut();
                for (p, a) in &merged.partitions {
                    table.announce(*p, a);
                }
                table.update(&state.refresh_blocks());
                out.push(IndexEvent::Digest(EpochDigest {
                    epoch: stats.epoch,
                    worker: me,
                    digest: table.digest(),
                }));
            } else {
                state.clear_dirty();
            }
            out.push(IndexEvent::Stats(stats));
            out
        },
    )
}

/// Sharded: owners merge the words they own; a query goes to every owner, and its origin ANDs
/// the owners' step answers; owners broadcast their changed block hashes for the digest.
fn sharded<'scope, K: Key + ExchangeData + Clone>(
    shipments: StreamVec<'scope, u64, Shipment>,
    queries: StreamVec<'scope, u64, (K, TimeRange)>,
    config: &IndexConfig,
    (state, table): MergeCells,
) -> IndexStreams<'scope, K> {
    let scope = shipments.scope();
    let (me, peers) = (scope.index(), scope.peers());
    let mut seq = 0u64;
    // a copy of each query for every owner, routed to it by the merge's query input
    let requests = queries.flat_map(move |(key, range)| {
        seq += 1;
        let query = ShardQuery {
            key,
            range,
            origin: me as u32,
            seq,
        };
        (0..peers as u64).map(move |dest| (dest, query.clone()))
    });
    let seed = config.seed();
    let digest = config.digest();
    // Query traffic (received, sent) since the last stats record.
    let traffic = Rc::new(Cell::new((0u64, 0u64)));
    let counted = traffic.clone();
    let events = merge_core(
        shipments,
        requests,
        Exchange::new(|(dest, _): &(u64, ShardQuery<K>)| *dest),
        config,
        state,
        |(_, q)| q.range,
        move |state, (_, query), issued, epoch| {
            let steps = state.steps(KeyHash::of(&query.key, seed), query.range);
            let reply = ShardReply {
                query,
                issued,
                epoch,
                steps,
            };
            if reply.query.origin != me as u32 {
                let (received, sent) = counted.get();
                counted.set((
                    received + wire_bytes(&reply.query),
                    sent + wire_bytes(&reply),
                ));
            }
            ShardEvent::Reply(reply)
        },
        move |state, merged, mut stats, _| {
            let mut out = Vec::new();
            let (received, mut sent) = traffic.take();
            if digest {
                let update = DigestUpdate {
                    epoch: stats.epoch,
                    partitions: merged.partitions,
                    blocks: state.refresh_blocks(),
                };
                sent += wire_bytes(&update) * (peers as u64).saturating_sub(1);
                for dest in 0..peers as u32 {
                    out.push(ShardEvent::Update {
                        dest,
                        update: update.clone(),
                    });
                }
            } else {
                state.clear_dirty();
            }
            stats.query_bytes_received = received;
            stats.query_bytes_sent = sent;
            out.push(ShardEvent::Stats(stats));
            out
        },
    );
    let mut parts = events.partition(3, |e| (e.part(), e)).into_iter();
    let (Some(replies), Some(updates), Some(stats)) = (parts.next(), parts.next(), parts.next())
    else {
        unreachable!("a partition into 3 gives 3 streams")
    };
    let answers = replies.unary(
        Exchange::new(|e: &ShardEvent<K>| match e {
            ShardEvent::Reply(r) => u64::from(r.query.origin),
            _ => 0,
        }),
        "ShardAnswers",
        move |default_cap, _| {
            drop(default_cap);
            let mut pending: BTreeMap<u64, Vec<ShardReply<K>>> = BTreeMap::new();
            move |input, output| {
                input.for_each_stamp(|cap, data| {
                    let mut session = output.session(&cap);
                    for batch in data {
                        for e in batch.drain(..) {
                            let ShardEvent::Reply(r) = e else { continue };
                            let seq = r.query.seq;
                            let replies = pending.entry(seq).or_default();
                            replies.push(r);
                            if replies.len() < peers {
                                continue;
                            }
                            let Some(replies) = pending.remove(&seq) else {
                                continue;
                            };
                            let a = walk_steps(replies.iter().map(|r| r.steps.as_slice()));
                            let Some(first) = replies.into_iter().next() else {
                                continue;
                            };
                            session.give(QueryAnswer {
                                key: first.query.key,
                                range: first.query.range,
                                issued: first.issued,
                                epoch: first.epoch,
                                present: a.present,
                                probes: a.probes,
                            });
                        }
                    }
                });
            }
        },
    );
    let stats = stats.flat_map(|e| match e {
        ShardEvent::Stats(s) => Some(s),
        _ => None,
    });
    let config = config.clone();
    let digests = updates.unary_frontier(
        Exchange::new(|e: &ShardEvent<K>| match e {
            ShardEvent::Update { dest, .. } => u64::from(*dest),
            _ => 0,
        }),
        "ShardDigest",
        move |default_cap, _| {
            drop(default_cap);
            // An epoch's updates from every owner: at the least of their times (each owner's at
            // the least time of the epoch's shipments, at most its last tick), complete once the
            // frontier passes the epoch's last tick.
            let mut stash: BTreeMap<u64, (Capability<u64>, Vec<DigestUpdate>)> = BTreeMap::new();
            move |(input, frontier), output| {
                let mut table = table.borrow_mut();
                let port = output.output_index();
                input.for_each_stamp(|cap, data| {
                    let Some(&t) = cap.least() else { return };
                    for batch in data {
                        for e in batch.drain(..) {
                            let ShardEvent::Update { update: u, .. } = e else {
                                continue;
                            };
                            let slot = stash
                                .entry(u.epoch)
                                .or_insert_with(|| (cap.delayed(&t, port), Vec::new()));
                            keep_least(&mut slot.0, t, |t| cap.delayed(&t, port));
                            slot.1.push(u);
                        }
                    }
                });
                let mut out = ByTime::default();
                while let Some(entry) = stash.first_entry() {
                    if frontier.less_equal(&config.epoch_last(*entry.key())) {
                        break;
                    }
                    let (epoch, (cap, updates)) = entry.remove_entry();
                    for u in &updates {
                        for (p, a) in &u.partitions {
                            table.announce(*p, a);
                        }
                    }
                    for u in &updates {
                        table.update(&u.blocks);
                    }
                    let digest = EpochDigest {
                        epoch,
                        worker: me as u32,
                        digest: table.digest(),
                    };
                    out.push(cap, digest);
                }
                for (cap, mut digests) in out.take() {
                    output.session(&cap).give_container(&mut digests);
                }
            }
        },
    );
    IndexStreams {
        answers,
        digests,
        stats,
    }
}

/// What one epoch's merge applied: the partitions created, with their allocations.
pub(crate) struct Merged {
    partitions: Vec<(u64, Allocation)>,
}

/// The merge loop both placements share: shipments are merged in epoch order and queries are
/// answered by `answer` against exactly their answering epoch; `merged` turns each merged epoch's
/// statistics into output events.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_core<'scope, Q, O, P>(
    shipments: StreamVec<'scope, u64, Shipment>,
    queries: StreamVec<'scope, u64, Q>,
    query_pact: P,
    config: &IndexConfig,
    state: Rc<RefCell<MergedState>>,
    range_of: impl Fn(&Q) -> TimeRange + 'static,
    mut answer: impl FnMut(&MergedState, Q, Tick, u64) -> O + 'static,
    mut merged: impl FnMut(&mut MergedState, Merged, EpochStats, u32) -> Vec<O> + 'static,
) -> StreamVec<'scope, u64, O>
where
    Q: 'static,
    O: 'static,
    P: ParallelizationContract<u64, Vec<Q>>,
{
    let config = config.clone();
    let me = shipments.scope().index() as u32;
    let route = Exchange::new(|s: &Shipment| u64::from(s.dest));
    shipments.binary_frontier(
        queries,
        route,
        query_pact,
        "MergeQuery",
        move |default_cap, _| {
            drop(default_cap);
            let mut inbox: BTreeMap<u64, Inbox> = BTreeMap::new();
            let mut held: BTreeMap<u64, Vec<Held<Q>>> = BTreeMap::new();
            move |(s_in, s_frontier), (q_in, q_frontier), output| {
                let mut state = state.borrow_mut();
                let port = output.output_index();
                s_in.for_each_stamp(|cap, data| {
                    for batch in data {
                        for s in batch.drain(..) {
                            let Some(c) = cap.retain_least(port) else {
                                return;
                            };
                            let slot = inbox.entry(s.epoch).or_insert_with(|| Inbox {
                                cap: c.clone(),
                                shipments: Vec::new(),
                            });
                            if slot.cap.time() > c.time() {
                                slot.cap = c;
                            }
                            slot.shipments.push(s);
                        }
                    }
                });
                q_in.for_each_stamp(|cap, data| {
                    let Some(&issued) = cap.least() else { return };
                    let mut by_epoch: BTreeMap<u64, Vec<Q>> = BTreeMap::new();
                    for batch in data {
                        for q in batch.drain(..) {
                            by_epoch
                                .entry(config.answering_epoch(issued, range_of(&q)))
                                .or_default()
                                .push(q);
                        }
                    }
                    for (e, queries) in by_epoch {
                        held.entry(e).or_default().push(Held {
                            cap: cap.delayed(&config.epoch_last(e).max(issued), port),
                            issued,
                            queries,
                        });
                    }
                });
                let complete = |e: u64| !s_frontier.less_equal(&config.epoch_last(e));
                // merged epochs' events, a message per time (see `batched`)
                let mut out = ByTime::default();
                loop {
                    let next_ship = inbox.keys().next().copied();
                    let next_query = held.keys().next().copied();
                    match (next_ship, next_query) {
                        (Some(c), q) if q.is_none_or(|q| c <= q) => {
                            // Merge epoch c once all its shipments are in and no query that
                            // must not see it can still arrive.
                            if !complete(c) || q_frontier.less_than(&config.epoch_start(c)) {
                                break;
                            }
                            let Some(Inbox { cap, shipments }) = inbox.remove(&c) else {
                                break;
                            };
                            let p = config.partition_of_epoch(c);
                            let mut stats = EpochStats {
                                epoch: c,
                                worker: me,
                                local: Default::default(),
                                levels: Vec::new(),
                                merged_bits: 0,
                                bytes_received: 0,
                                query_bytes_received: 0,
                                query_bytes_sent: 0,
                                refused_words: 0,
                                queries_held: 0,
                                shipments_held: 0,
                            };
                            let mut created = Merged {
                                partitions: Vec::new(),
                            };
                            for s in &shipments {
                                if let Some((p, a)) = &s.announce {
                                    let new = state.partitions().all(|(q, _)| q != *p);
                                    if !state.announce(*p, a) {
                                        stats.refused_words += 1;
                                    } else if new {
                                        created.partitions.push((*p, a.clone()));
                                    }
                                }
                            }
                            for s in shipments {
                                if s.from != me {
                                    stats.bytes_received += s.wire_bytes();
                                }
                                for d in &s.deltas {
                                    stats.refused_words += state.apply(d);
                                }
                                if let Some(r) = &s.records {
                                    stats.refused_words += state.insert_records(s.epoch, r);
                                }
                                if let Some(local) = s.local {
                                    stats.local = local;
                                }
                            }
                            stats.levels = state.level_stats(p);
                            stats.merged_bits = state.memory_bits();
                            stats.queries_held = held
                                .values()
                                .flatten()
                                .map(|h| h.queries.len() as u64)
                                .sum();
                            stats.shipments_held =
                                inbox.values().map(|i| i.shipments.len() as u64).sum();
                            out.add(cap, merged(&mut state, created, stats, me));
                        }
                        (_, Some(q)) => {
                            if !complete(q) {
                                break;
                            }
                            for h in held.remove(&q).into_iter().flatten() {
                                let mut session = output.session(&h.cap);
                                for query in h.queries {
                                    session.give(answer(&state, query, h.issued, q));
                                }
                            }
                        }
                        (_, None) => break,
                    }
                }
                for (cap, mut events) in out.take() {
                    output.session(&cap).give_container(&mut events);
                }
            }
        },
    )
}

/// Serialized size of `x` in bytes (what exchanging it between processes costs).
fn wire_bytes<T: Serialize>(x: &T) -> u64 {
    bincode::serialized_size(x).unwrap_or(0)
}
