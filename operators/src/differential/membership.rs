//! A collection's keys into the window membership operator, and a collection of queries out of
//! it.

use super::{split_signs, Counted};
use crate::membership::{MembershipConfig, MembershipStats, TimedWindowMembership};
use crate::timed::Timed;
use chronobloom_core::hash::Key;
use differential_dataflow::{AsCollection, VecCollection};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// Answers to a collection of membership queries.
pub struct MembershipAnswers<'scope, K: 'static> {
    /// `(key, seen)` per positive query update, with its difference, at the query's time.
    pub answers: VecCollection<'scope, u64, (K, bool), isize>,
    /// Retractions of inserted keys, which cannot be un-inserted, as they came in.
    pub unsupported_inserts: VecCollection<'scope, u64, K, isize>,
    /// Retractions of queries (an answer is not taken back), as they came in.
    pub unsupported_queries: VecCollection<'scope, u64, K, isize>,
    /// Each worker's view per epoch ([`crate::MembershipStreams::stats`]).
    pub stats: StreamVec<'scope, u64, MembershipStats>,
}

/// Windowed membership of a collection of keys whose update times are their ticks, asked by a
/// collection of keys, with the semantics of [`TimedWindowMembership`] (see
/// [`crate::membership`]).
///
/// ```
/// use differential_dataflow::input::InputSession;
/// use timely::dataflow::operators::capture::{Capture, Extract};
/// use chronobloom_operators::{MembershipCollection, MembershipConfig};
///
/// let cfg = MembershipConfig::builder().window(60).epoch_len(10).build().unwrap();
/// let answers = timely::execute_directly(move |worker| {
///     let mut seen = InputSession::<u64, u64, isize>::new();
///     let mut asked = InputSession::<u64, u64, isize>::new();
///     let out = worker.dataflow(|scope| {
///         let out = seen.to_collection(scope)
///             .window_membership_collection(asked.to_collection(scope), &cfg);
///         out.answers.inner.capture()
///     });
///     seen.update_at(7, 3, 1); // key 7 seen at tick 3
///     asked.update_at(7, 20, 2); // asked twice at tick 20: inside the window
///     asked.update_at(8, 20, 1); // never seen
///     asked.update_at(7, 90, 1); // 87 ticks later: forgotten
///     out
/// });
/// let mut got: Vec<_> = answers.extract().into_iter().flat_map(|(_, d)| d).collect();
/// got.sort();
/// assert_eq!(got, vec![((7, false), 90, 1), ((7, true), 20, 2), ((8, false), 20, 1)]);
/// ```
pub trait MembershipCollection<'scope, K: 'static> {
    /// Answers each positive update of `queries`: was its key in this collection within the
    /// window ending at its time?
    fn window_membership_collection(
        self,
        queries: VecCollection<'scope, u64, K, isize>,
        config: &MembershipConfig,
    ) -> MembershipAnswers<'scope, K>;
}

impl<'scope, K: Key + ExchangeData> MembershipCollection<'scope, K>
    for VecCollection<'scope, u64, K, isize>
{
    fn window_membership_collection(
        self,
        queries: VecCollection<'scope, u64, K, isize>,
        config: &MembershipConfig,
    ) -> MembershipAnswers<'scope, K> {
        let (inserts, unsupported_inserts) =
            split_signs(self.inner, "MembershipInserts", |k, _| Ok(k));
        let (asks, unsupported_queries) =
            split_signs(queries.inner, "MembershipQueries", |key, diff| {
                Ok(Counted { key, diff })
            });
        let out = inserts.timed().window_membership(asks.timed(), config);
        let answers = out.answers.map(|(t, q, seen)| ((q.key, seen), t, q.diff));
        MembershipAnswers {
            answers: answers.as_collection(),
            unsupported_inserts: unsupported_inserts.as_collection(),
            unsupported_queries: unsupported_queries.as_collection(),
            stats: out.stats,
        }
    }
}
