//! Worker 0's side of the allocator: merging the workers' sketches of a partition and deciding
//! its allocation once (learned, or the configured one with the reason).

use super::resume::SolverState;
use super::{
    head, AllocationReport, AllocationSource, AllocatorConfig, PartitionSketch, Partitions,
};
use crate::error::Result;
use crate::index::config::IndexConfig;
use chronobloom_core::alloc::FilterStats;
use chronobloom_core::temporal::Allocation;
use std::cell::RefCell;
use std::collections::btree_map::Entry;
use std::rc::Rc;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;

/// A partition's merged sketch, the number of worker sketches in it, and why a merge was refused.
pub(super) type Merged = (PartitionSketch, u64, Option<String>);

/// Merges the workers' sketches on worker 0 and decides each partition's allocation once;
/// `state` is worker 0's (fresh or restored) solver state, `None` on the other workers.
pub(super) fn solve<'scope>(
    lessons: StreamVec<'scope, u64, (u64, PartitionSketch)>,
    index: IndexConfig,
    config: AllocatorConfig,
    parts: Partitions,
    state: Option<Rc<RefCell<SolverState>>>,
) -> StreamVec<'scope, u64, AllocationReport> {
    let lag = config.lag.partitions();
    let to_zero = Exchange::new(|_: &(u64, PartitionSketch)| 0);
    lessons.unary_frontier(to_zero, "SolveAllocation", move |mut default_cap, _| {
        // Worker 0 holds a capability at the first tick of the next undecided partition.
        let solver = state.is_some();
        let state = state.unwrap_or_default();
        let first = state.borrow().next;
        let mut cap = (solver && first < parts.count).then(|| {
            default_cap.downgrade(&parts.start(first));
            default_cap
        });
        move |(input, frontier), output| {
            let mut state = state.borrow_mut();
            let SolverState { next, merged } = &mut *state;
            input.for_each_stamp(|_, data| {
                for batch in data {
                    for (p, sketch) in batch.drain(..) {
                        match merged.entry(p) {
                            Entry::Vacant(v) => {
                                v.insert((sketch, 1, None));
                            }
                            Entry::Occupied(mut o) => {
                                let (m, n, refused) = o.get_mut();
                                *n += 1;
                                if let Err(e) = m.merge(&sketch) {
                                    *refused = Some(e.to_string());
                                }
                            }
                        }
                    }
                }
            });
            let Some(c) = cap.as_mut() else {
                merged.clear();
                return;
            };
            let closed = parts.closed_before(head(frontier));
            // Allocations of partitions below `end` can be decided now: the first `lag` ones, and
            // those whose partition to learn from (below `closed`) has closed everywhere.
            let end = closed.saturating_add(lag).min(parts.count);
            let rest = merged.split_off(&end.saturating_sub(lag));
            let ready = std::mem::replace(merged, rest);
            for q in *next..end.min(lag) {
                c.downgrade(&parts.start(q));
                output.session(c).give(AllocationReport {
                    partition: q,
                    allocation: index.allocation().clone(),
                    source: AllocationSource::Configured,
                    learned: Vec::new(),
                    sketches: 0,
                });
            }
            for (p, lesson) in ready {
                let q = p + lag;
                c.downgrade(&parts.start(q));
                output
                    .session(c)
                    .give(decide(&index, &config, q, p, lesson));
            }
            // Closed partitions whose allocation would be for a partition past the last.
            *merged = merged.split_off(&closed);
            *next = (*next).max(end);
            if *next >= parts.count || closed == u64::MAX {
                cap = None;
            } else {
                c.downgrade(&parts.start(*next));
            }
        }
    })
}

/// The allocation of partition `q` from what partition `p` taught.
fn decide(
    index: &IndexConfig,
    config: &AllocatorConfig,
    q: u64,
    p: u64,
    (sketch, sketches, refused): Merged,
) -> AllocationReport {
    let configured = index.allocation().clone();
    let learned = sketch.filter_stats();
    let (allocation, source) = if let Some(reason) = refused {
        (configured, AllocationSource::Refused { from: p, reason })
    } else if learned.iter().any(|s| s.distinct > 0.0) {
        match allocate(index, config, &learned) {
            Ok(a) => (a, AllocationSource::Learned { from: p }),
            Err(e) => (
                configured,
                AllocationSource::Refused {
                    from: p,
                    reason: e.to_string(),
                },
            ),
        }
    } else {
        (configured, AllocationSource::NothingLearned { from: p })
    };
    AllocationReport {
        partition: q,
        allocation,
        source,
        learned,
        sketches,
    }
}

/// Solves the allocation for the index's total bits and checks it as an index configuration.
fn allocate(
    index: &IndexConfig,
    config: &AllocatorConfig,
    learned: &[FilterStats],
) -> Result<Allocation> {
    let bits = index.allocation().total_bits();
    let allocation = config
        .strategy
        .allocate(learned, bits, config.k_max)?
        .for_layout(index.layout());
    IndexConfig::builder()
        .epoch_len(index.epoch_len())
        .partition_len(index.partition_len())
        .partitions(index.partitions())
        .resolution(index.resolution())
        .allocation(allocation.clone())
        .seed(index.seed())
        .placement(index.placement())
        .layout(index.layout())
        .build()?;
    Ok(allocation)
}
