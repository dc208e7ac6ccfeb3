//! Differential Dataflow collections in and out of the temporal index.
//!
//! A collection's updates carry their own times (`u64` ticks): an update `(key, t, +r)` inserts
//! `key` at tick `t` into the [`LocalIndex`]. These filters cannot delete, so negative differences
//! are not applied: they come out, unchanged, as the `unsupported` collection (count it with
//! differential's operators). Differences are not consolidated first: a key inserted and retracted
//! at the same time is inserted, and its retraction reported.
//!
//! [`DedupCollection`] dedups a collection within a window with the [`Dedup`] operator: positive
//! differences are records, negative ones are reported the same way. [`MembershipCollection`]
//! asks a collection of keys whether they were in another within a window
//! ([`crate::membership`]).

mod membership;

pub use membership::{MembershipAnswers, MembershipCollection};

use crate::dedup::stats::DedupStats;
use crate::dedup::{Dedup, DedupConfig};
use crate::index::config::IndexConfig;
use crate::index::delta::Shipment;
use crate::index::query::{IndexEvent, MergeQuery};
use crate::index::stats::EpochStats;
use crate::index::LocalIndex;
use chronobloom_core::hash::{CanonicalBytes, Key};
use chronobloom_core::temporal::{Tick, TimeRange};
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::OkErr;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// An indexed collection.
pub struct IndexedCollection<'scope, K: 'static> {
    /// The local index's epoch shipments: give them (cloned) to
    /// [`QueryCollection::query_collection`] or [`MergeQuery::merge_and_query`].
    pub shipments: StreamVec<'scope, u64, Shipment>,
    /// The retractions the index could not apply, as they came in.
    pub unsupported: VecCollection<'scope, u64, K, isize>,
}

/// Indexes a collection of keys whose update times are their ticks.
///
/// ```
/// use differential_dataflow::input::InputSession;
/// use timely::dataflow::operators::capture::{Capture, Extract};
/// use chronobloom_operators::{IndexCollection, IndexConfig};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let unsupported = timely::execute_directly(move |worker| {
///     let mut input = InputSession::<u64, u64, isize>::new();
///     let out = worker.dataflow(|scope| {
///         let indexed = input.to_collection(scope).index_collection(&cfg);
///         indexed.unsupported.inner.capture()
///     });
///     input.update_at(7, 3, 1); // key 7 appears at tick 3
///     input.update_at(7, 20, -1); // and is retracted at tick 20: not applied, reported
///     out
/// });
/// let retractions: Vec<_> = unsupported.extract().into_iter().flat_map(|(_, d)| d).collect();
/// assert_eq!(retractions, vec![(7, 20, -1)]);
/// ```
pub trait IndexCollection<'scope, K: 'static> {
    /// Inserts the keys of positive differences; reports negative ones.
    fn index_collection(self, config: &IndexConfig) -> IndexedCollection<'scope, K>;
}

impl<'scope, K: Key + Clone + 'static> IndexCollection<'scope, K>
    for VecCollection<'scope, u64, K, isize>
{
    fn index_collection(self, config: &IndexConfig) -> IndexedCollection<'scope, K> {
        let (inserts, unsupported) = split_signs(self.inner, "IndexCollection", |key, _| Ok(key));
        IndexedCollection {
            shipments: inserts.local_index(config),
            unsupported: unsupported.as_collection(),
        }
    }
}

/// A query as differential data: a key and an inclusive `(start, end)` tick range (a tuple, since
/// differential needs ordered data).
pub type RangeQuery<Q> = (Q, (Tick, Tick));

/// Answers to a collection of queries.
pub struct AnsweredQueries<'scope, Q: 'static> {
    /// `((key, range), present)` with the query's difference, at the time the index answers:
    /// the last tick of the answering epoch, or the query's own time when later
    /// ([`IndexConfig::answering_epoch`]).
    pub answers: VecCollection<'scope, u64, (RangeQuery<Q>, bool), isize>,
    /// Retracted queries (which cannot be un-answered) and queries whose range starts after it
    /// ends, as they came in.
    pub unsupported: VecCollection<'scope, u64, RangeQuery<Q>, isize>,
    /// Each worker's statistics for each merged epoch.
    pub stats: StreamVec<'scope, u64, EpochStats>,
}

/// Answers a collection of `(key, (start, end))` queries (inclusive tick ranges; a tuple, since
/// differential needs ordered data) whose update times are the times they are asked, against an
/// [`IndexedCollection`]'s shipments.
///
/// ```
/// use differential_dataflow::input::InputSession;
/// use timely::dataflow::operators::capture::{Capture, Extract};
/// use chronobloom_core::temporal::{Tick, TimeRange};
/// use chronobloom_operators::{IndexCollection, IndexConfig, QueryCollection};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let answers = timely::execute_directly(move |worker| {
///     let mut keys = InputSession::<u64, u64, isize>::new();
///     let mut queries = InputSession::<u64, (u64, (u64, u64)), isize>::new();
///     let out = worker.dataflow(|scope| {
///         let indexed = keys.to_collection(scope).index_collection(&cfg);
///         let answered = queries.to_collection(scope).query_collection(indexed.shipments, &cfg);
///         answered.answers.inner.capture()
///     });
///     keys.update_at(7, 3, 1);
///     let range = (0, 9);
///     queries.update_at((7, range), 5, 2); // asked twice at tick 5
///     queries.update_at((8, range), 5, 1);
///     out
/// });
/// let mut got: Vec<_> = answers.extract().into_iter().flat_map(|(_, d)| d).collect();
/// got.sort();
/// let range = (0, 9);
/// // answered at tick 9, the last of epoch 0
/// assert_eq!(got, vec![(((7, range), true), 9, 2), (((8, range), false), 9, 1)]);
/// ```
pub trait QueryCollection<'scope, Q: 'static> {
    /// Answers this collection's queries; positive differences are answered once, with their
    /// difference, negative ones reported.
    fn query_collection(
        self,
        shipments: StreamVec<'scope, u64, Shipment>,
        config: &IndexConfig,
    ) -> AnsweredQueries<'scope, Q>;
}

/// A query key with its difference: hashed as the key alone, so the difference travels through
/// the index beside the query.
#[derive(Clone, Serialize, Deserialize)]
struct Counted<Q> {
    key: Q,
    diff: isize,
}

impl<Q: Key> Key for Counted<Q> {
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        self.key.write_canonical(out);
    }
}

impl<'scope, Q: Key + ExchangeData + Clone> QueryCollection<'scope, Q>
    for VecCollection<'scope, u64, RangeQuery<Q>, isize>
{
    fn query_collection(
        self,
        shipments: StreamVec<'scope, u64, Shipment>,
        config: &IndexConfig,
    ) -> AnsweredQueries<'scope, Q> {
        let (asks, unsupported) =
            split_signs(
                self.inner,
                "QueryCollection",
                |(key, r), diff| match TimeRange::try_from(r) {
                    Ok(range) => Ok((Counted { key, diff }, range)),
                    Err(_) => Err((key, r)),
                },
            );
        let events = shipments.merge_and_query(asks, config);
        let cfg = config.clone();
        let answers = events.clone().flat_map(move |e| match e {
            IndexEvent::Answer(a) => Some((
                ((a.key.key, (a.range.start(), a.range.end())), a.present),
                cfg.epoch_last(a.epoch).max(a.issued),
                a.key.diff,
            )),
            _ => None,
        });
        let stats = events.flat_map(|e| match e {
            IndexEvent::Stats(s) => Some(s),
            _ => None,
        });
        AnsweredQueries {
            answers: answers.as_collection(),
            unsupported: unsupported.as_collection(),
            stats,
        }
    }
}

/// A deduplicated collection.
pub struct DedupedCollection<'scope, D: 'static> {
    /// Each passed record with difference +1, at its own time.
    pub passed: VecCollection<'scope, u64, D, isize>,
    /// The retractions, which cannot un-see a record, as they came in.
    pub unsupported: VecCollection<'scope, u64, D, isize>,
    /// Each worker's statistics per epoch ([`crate::DedupStreams::stats`]), counting one record
    /// per positive update.
    pub stats: StreamVec<'scope, u64, DedupStats>,
}

/// Windowed deduplication of a collection whose update times are its ticks, with the semantics
/// of [`Dedup`] (see [`crate::dedup`]).
///
/// A positive difference `n` is `n` copies of the record at its time: copies of one key at one
/// tick, so at most one passes. An update is decided as one record (the `n - 1` extra copies are
/// not materialised, so any difference costs the same); among a tick's records of one key, the
/// one with the smallest `bincode` encoding passes, as in [`Dedup`]. Negative differences are not applied: a record passed
/// or dropped cannot be un-seen, so they come out, unchanged, as `unsupported`. Differences are
/// not consolidated first.
///
/// ```
/// use differential_dataflow::input::InputSession;
/// use timely::dataflow::operators::capture::{Capture, Extract};
/// use chronobloom_operators::{DedupCollection, DedupConfig};
///
/// let cfg = DedupConfig::builder().window(60).epoch_len(10).expected_items_per_window(1_000)
///     .build().unwrap();
/// let (passed, unsupported) = timely::execute_directly(move |worker| {
///     let mut input = InputSession::<u64, (u64, u64), isize>::new();
///     let out = worker.dataflow(|scope| {
///         // (user, page) views, deduplicated by user
///         let deduped = input.to_collection(scope).dedup_collection(&cfg, |v: &(u64, u64)| v.0);
///         (deduped.passed.inner.capture(), deduped.unsupported.inner.capture())
///     });
///     input.update_at((7, 1), 0, 3); // three views at tick 0: one passes
///     input.update_at((7, 2), 30, 1); // 30 ticks later, inside the window: dropped
///     input.update_at((7, 2), 40, -1); // a retraction: reported
///     input.update_at((7, 1), 100, 1); // 70 ticks after the last view: passes
///     out
/// });
/// let passed: Vec<_> = passed.extract().into_iter().flat_map(|(_, d)| d).collect();
/// assert_eq!(passed, vec![((7, 1), 0, 1), ((7, 1), 100, 1)]);
/// let retractions: Vec<_> = unsupported.extract().into_iter().flat_map(|(_, d)| d).collect();
/// assert_eq!(retractions, vec![((7, 2), 40, -1)]);
/// ```
pub trait DedupCollection<'scope, D: 'static> {
    /// Passes each record whose key (`key(record)`) was not seen in the window ending at its
    /// time; reports negative differences.
    fn dedup_collection<K, F>(self, config: &DedupConfig, key: F) -> DedupedCollection<'scope, D>
    where
        K: Key,
        F: Fn(&D) -> K + 'static;
}

impl<'scope, D: ExchangeData> DedupCollection<'scope, D> for VecCollection<'scope, u64, D, isize> {
    fn dedup_collection<K, F>(self, config: &DedupConfig, key: F) -> DedupedCollection<'scope, D>
    where
        K: Key,
        F: Fn(&D) -> K + 'static,
    {
        let (records, unsupported) = split_signs(self.inner, "DedupCollection", |d, n| Ok((d, n)));
        let out = records.dedup_by(config, move |(d, _): &(D, isize)| key(d));
        let passed: StreamVec<'scope, u64, (D, u64, isize)> =
            out.passed.unary(Pipeline, "DedupCollectionPassed", |_, _| {
                move |input, output| {
                    input.for_each_stamp(|cap, data| {
                        let Some(&t) = cap.least() else { return };
                        let mut session = output.session(&cap);
                        for batch in data {
                            session.give_iterator(batch.drain(..).map(|(d, _)| (d, t, 1)));
                        }
                    });
                }
            });
        DedupedCollection {
            passed: passed.as_collection(),
            unsupported: unsupported.as_collection(),
            stats: out.stats,
        }
    }
}

/// Splits updates by the sign of their difference: positive ones become `positive(data, diff)`
/// at their own time (one time per message, as the index expects) unless it refuses them, refused
/// and negative ones pass through unchanged, and zero ones are dropped. An update stamped before its message (which differential
/// does not produce) is taken at the message's time.
#[allow(clippy::type_complexity)]
fn split_signs<'scope, D: 'static, O: 'static>(
    updates: StreamVec<'scope, u64, (D, u64, isize)>,
    name: &str,
    mut positive: impl FnMut(D, isize) -> Result<O, D> + 'static,
) -> (
    StreamVec<'scope, u64, O>,
    StreamVec<'scope, u64, (D, u64, isize)>,
) {
    let split: StreamVec<'scope, u64, Result<O, (D, u64, isize)>> =
        updates.unary(Pipeline, name, move |_, _| {
            move |input, output| {
                let port = output.output_index();
                input.for_each_stamp(|cap, data| {
                    let Some(&least) = cap.least() else { return };
                    let mut by_time: BTreeMap<u64, Vec<_>> = BTreeMap::new();
                    for batch in data {
                        for (d, t, r) in batch.drain(..) {
                            let t = t.max(least);
                            let item = match r.cmp(&0) {
                                Ordering::Greater => positive(d, r).map_err(|d| (d, t, r)),
                                Ordering::Less => Err((d, t, r)),
                                Ordering::Equal => continue,
                            };
                            by_time.entry(t).or_default().push(item);
                        }
                    }
                    for (t, items) in by_time {
                        output
                            .session(&cap.delayed(&t, port))
                            .give_iterator(items.into_iter());
                    }
                });
            }
        });
    split.ok_err(|x| x)
}
