//! Event time: records that carry their own tick, `(tick, record)`, on timestamps that are a lower
//! bound of it (an epoch's first tick, say). The input frontier is then the watermark: every
//! record still to come has a tick at or past it. The operators' one code path takes such
//! records; [`Timed`] adapts a stream whose timestamps *are* the ticks, and [`AtTicks`] puts
//! timed records back on their ticks.

use chronobloom_core::temporal::Tick;
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;

/// Stamps each record with its timestamp as its tick: a tick-timestamped stream becomes a timed
/// one (no record is late).
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Extract;
/// use chronobloom_operators::timed::Timed;
/// let out = timely::execute_directly(|worker| {
///     let (mut input, out) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, s) = scope.new_input::<Vec<&'static str>>();
///         (input, s.timed().capture())
///     });
///     input.advance_to(4);
///     input.send("a");
///     out
/// });
/// assert_eq!(out.extract(), vec![(4, vec![(4, "a")])]);
/// ```
pub trait Timed<'scope, D> {
    /// `(timestamp, record)` for each record, at the same timestamp.
    fn timed(self) -> StreamVec<'scope, u64, (Tick, D)>;
}

impl<'scope, D: 'static> Timed<'scope, D> for StreamVec<'scope, u64, D> {
    fn timed(self) -> StreamVec<'scope, u64, (Tick, D)> {
        self.unary(Pipeline, "Timed", |_, _| {
            move |input, output| {
                input.for_each_stamp(|cap, data| {
                    let Some(&t) = cap.least() else { return };
                    let mut session = output.session(&cap);
                    for batch in data {
                        session.give_iterator(batch.drain(..).map(|d| (t, d)));
                    }
                });
            }
        })
    }
}

/// Puts timed records on timestamps equal to their ticks (a record below its timestamp stays at
/// the timestamp), dropping the tick: the inverse of [`Timed`].
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Extract;
/// use chronobloom_operators::timed::AtTicks;
/// let out = timely::execute_directly(|worker| {
///     let (mut input, out) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, s) = scope.new_input::<Vec<(u64, &'static str)>>();
///         (input, s.at_ticks().capture())
///     });
///     input.send((7, "b"));
///     input.send((3, "a"));
///     out
/// });
/// assert_eq!(out.extract(), vec![(3, vec!["a"]), (7, vec!["b"])]);
/// ```
pub trait AtTicks<'scope, D> {
    /// Each record at its tick.
    fn at_ticks(self) -> StreamVec<'scope, u64, D>;
}

impl<'scope, D: 'static> AtTicks<'scope, D> for StreamVec<'scope, u64, (Tick, D)> {
    fn at_ticks(self) -> StreamVec<'scope, u64, D> {
        self.unary(Pipeline, "AtTicks", |_, _| {
            move |input, output| {
                input.for_each_stamp(|cap, data| {
                    let Some(&ts) = cap.least() else { return };
                    let mut by_tick: BTreeMap<Tick, Vec<D>> = BTreeMap::new();
                    for batch in data {
                        for (t, d) in batch.drain(..) {
                            by_tick.entry(t.max(ts)).or_default().push(d);
                        }
                    }
                    for (t, mut records) in by_tick {
                        output
                            .session(&cap.delayed(&t, 0))
                            .give_container(&mut records);
                    }
                });
            }
        })
    }
}
