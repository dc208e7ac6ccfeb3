//! How the report's inputs reach it: each output the report needs ends in one operator that
//! takes its items (exchanged to worker 0, or where they were made), and the probe the readers
//! wait on watches all of them through one concatenation. Every operator costs a round of
//! progress tracking at every time the readers move through, so an exchange, an inspect and a
//! probe apiece cost a sparse capture, whose moves are most of its run, three times as much.

use chronobloom::operators::timely::container::CapacityContainerBuilder;
use chronobloom::operators::timely::dataflow::channels::pact::{
    Exchange, ParallelizationContract, Pipeline,
};
use chronobloom::operators::timely::dataflow::operators::generic::Operator;
use chronobloom::operators::timely::dataflow::StreamVec;
use chronobloom::operators::timely::ExchangeData;

/// Hands every item of `stream` to `take` on worker 0; the empty stream it returns has passed a
/// time once `take` has had every item before it.
pub fn to_leader<'s, D: ExchangeData>(
    stream: StreamVec<'s, u64, D>,
    name: &str,
    take: impl FnMut(D) + 'static,
) -> StreamVec<'s, u64, ()> {
    sink(stream, Exchange::new(|_: &D| 0), name, take)
}

/// Hands every item of `stream` to `take` on the worker that made it (see [`to_leader`]).
pub fn in_place<'s, D: ExchangeData>(
    stream: StreamVec<'s, u64, D>,
    name: &str,
    take: impl FnMut(D) + 'static,
) -> StreamVec<'s, u64, ()> {
    sink(stream, Pipeline, name, take)
}

/// An operator that gives nothing: holding no capability, its output passes a time once every
/// item before it was taken.
fn sink<'s, D: ExchangeData, P: ParallelizationContract<u64, Vec<D>>>(
    stream: StreamVec<'s, u64, D>,
    pact: P,
    name: &str,
    mut take: impl FnMut(D) + 'static,
) -> StreamVec<'s, u64, ()> {
    stream.unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(pact, name, move |_, _| {
        move |input, _output| {
            input.for_each_stamp(|_, data| {
                for batch in data {
                    batch.drain(..).for_each(&mut take);
                }
            });
        }
    })
}
