//! The merge-and-query operator: OR-merges shipments into the merged state in epoch order and
//! answers queries against exactly the epochs they depend on.

use crate::config::IndexConfig;
use crate::delta::Shipment;
use crate::delta::BLOCK_WORDS;
use crate::digest::{DigestCache, EpochDigest};
use crate::state::PartitionedPbf2;
use crate::stats::EpochStats;
use chronobloom_core::hash::Key;
use chronobloom_core::temporal::{Tick, TimeRange};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
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
    /// The merged state's digest after an epoch, at the epoch's last tick.
    Digest(EpochDigest),
    /// A worker's statistics for an epoch, at the epoch's last tick.
    Stats(EpochStats),
}

/// Merges epoch shipments into the merged state and answers queries (DESIGN.md §3).
///
/// Shipments (from [`crate::LocalIndex`]) are routed to their destination worker and OR-merged in
/// epoch order. A query `(key, range)` with timestamp t_q is answered against the merged state of
/// exactly the epochs up to [`IndexConfig::answering_epoch`]: it waits until every shipment of
/// those epochs has arrived, and shipments of later epochs wait until it is answered, so answers
/// do not depend on scheduling or on the number of workers. When replicated, a query is answered
/// on the worker it enters.
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

/// Shipments of one epoch waiting to be merged.
struct Inbox {
    cap: Capability<u64>,
    shipments: Vec<Shipment>,
}

/// A batch of queries waiting for their answering epoch, with a capability at its last tick (or
/// at the queries' time, when later).
struct Held<K> {
    cap: Capability<u64>,
    issued: Tick,
    queries: Vec<(K, TimeRange)>,
}

impl<'scope> MergeQuery<'scope> for StreamVec<'scope, u64, Shipment> {
    fn merge_and_query<K: Key + ExchangeData + Clone>(
        self,
        queries: StreamVec<'scope, u64, (K, TimeRange)>,
        config: &IndexConfig,
    ) -> StreamVec<'scope, u64, IndexEvent<K>> {
        let config = config.clone();
        let me = self.scope().index() as u32;
        let route = Exchange::new(|s: &Shipment| u64::from(s.dest));
        self.binary_frontier(
            queries,
            route,
            Pipeline,
            "MergeQuery",
            move |default_cap, _| {
                drop(default_cap);
                let mut replica = PartitionedPbf2::new(&config);
                let mut digests = DigestCache::default();
                let mut inbox: BTreeMap<u64, Inbox> = BTreeMap::new();
                let mut held: BTreeMap<u64, Vec<Held<K>>> = BTreeMap::new();
                move |(s_in, s_frontier), (q_in, q_frontier), output| {
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
                        let Some(&issued) = cap.least() else { return };
                        let mut by_epoch: BTreeMap<u64, Vec<(K, TimeRange)>> = BTreeMap::new();
                        for batch in data {
                            for (k, r) in batch.drain(..) {
                                by_epoch
                                    .entry(config.answering_epoch(issued, r))
                                    .or_default()
                                    .push((k, r));
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
                    loop {
                        let next_ship = inbox.keys().next().copied();
                        let next_query = held.keys().next().copied();
                        match (next_ship, next_query) {
                            (Some(c), q) if q.is_none_or(|q| c <= q) => {
                                // Merge epoch c once all its shipments are in and no query that must
                                // not see it can still arrive.
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
                                    refused_words: 0,
                                    queries_held: 0,
                                    shipments_held: 0,
                                };
                                let mut touched = BTreeSet::new();
                                for s in shipments {
                                    if s.from != me {
                                        stats.bytes_received += s.wire_bytes();
                                    }
                                    for d in &s.deltas {
                                        stats.refused_words += replica.apply(d);
                                        if d.partition == p {
                                            d.words.for_each(|i, _| {
                                                touched.insert((d.level, i / BLOCK_WORDS));
                                            });
                                        }
                                    }
                                    if let Some(local) = s.local {
                                        stats.local = local;
                                    }
                                }
                                if let Some(pbf) = replica.partition(p) {
                                    digests.refresh(p, pbf, &touched);
                                }
                                stats.levels = replica.level_stats(p);
                                stats.merged_bits = replica.memory_bits();
                                stats.queries_held = held
                                    .values()
                                    .flatten()
                                    .map(|h| h.queries.len() as u64)
                                    .sum();
                                stats.shipments_held =
                                    inbox.values().map(|i| i.shipments.len() as u64).sum();
                                let digest = EpochDigest {
                                    epoch: c,
                                    worker: me,
                                    digest: digests.digest(|p| replica.partition(p)),
                                };
                                let mut session = output.session(&cap);
                                session.give(IndexEvent::Digest(digest));
                                session.give(IndexEvent::Stats(stats));
                            }
                            (_, Some(q)) => {
                                if !complete(q) {
                                    break;
                                }
                                for h in held.remove(&q).into_iter().flatten() {
                                    let mut session = output.session(&h.cap);
                                    for (key, range) in h.queries {
                                        let a = replica.query(&key, range);
                                        session.give(IndexEvent::Answer(QueryAnswer {
                                            key,
                                            range,
                                            issued: h.issued,
                                            epoch: q,
                                            present: a.present,
                                            probes: a.probes,
                                        }));
                                    }
                                }
                            }
                            (_, None) => break,
                        }
                    }
                }
            },
        )
    }
}
