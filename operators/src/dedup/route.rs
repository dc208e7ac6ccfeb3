//! Routing: records bundled by the worker that decides them (`ByKey`, the owner of the key's
//! shard) before the exchange, with the bytes routed counted per epoch.

use super::config::{shard_of_fp, DedupConfig, DedupMode};
use super::{Fingerprint, Routed};
use chronobloom_core::temporal::Tick;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// Records bound for one worker `(destination, source, records)` (their fingerprints are
/// recomputed where they are decided: 8 bytes a record less on the wire, for one more hash of a
/// routed key).
pub(super) type Bundle<D> = (u32, u32, Vec<(Tick, D)>);

/// Bundles records by the worker that decides them: the owner of the key's shard in `ByKey` with
/// several workers (the exchange then routes whole bundles, not records), this worker otherwise.
/// In `ByKey` with several workers it counts per epoch the bytes of records bound for other
/// workers (records that stay are not sized: nothing carries them).
pub(super) fn fingerprint<'scope, D: ExchangeData>(
    records: StreamVec<'scope, u64, (Tick, D)>,
    config: &DedupConfig,
    fp: Fingerprint<D>,
    routed: Routed,
) -> StreamVec<'scope, u64, Bundle<D>> {
    let scope = records.scope();
    let (me, peers) = (scope.index() as u32, scope.peers() as u32);
    let route = config.mode() == DedupMode::ByKey && peers > 1;
    // the owner of each shard (a look-up instead of a division per record)
    let owner: Vec<u32> = (0..config.shards())
        .map(|s| config.owner_of_shard(s, peers as usize) as u32)
        .collect();
    let config = config.clone();
    records.unary(Pipeline, "DedupFingerprint", move |_, _| {
        move |input, output| {
            input.for_each_stamp(|cap, data| {
                let Some(&ts) = cap.least() else { return };
                let mut session = output.session(&cap);
                let owner_of = |d: &D| owner[shard_of_fp(fp(d), config.shards()) as usize];
                for batch in data {
                    // Records already at their owner (a job that routed them as it read them)
                    // stay in their container.
                    if !route || batch.iter().all(|(_, d)| owner_of(d) == me) {
                        session.give((me, me, std::mem::take(batch)));
                        continue;
                    }
                    let mut bundles: Vec<Vec<(Tick, D)>> = (0..peers).map(|_| Vec::new()).collect();
                    for (t, d) in batch.drain(..) {
                        bundles[owner_of(&d) as usize].push((t, d));
                    }
                    let mut routed = routed.borrow_mut();
                    let away = routed.entry(config.epoch_of(ts)).or_default();
                    for (dest, records) in bundles.into_iter().enumerate() {
                        if records.is_empty() {
                            continue;
                        }
                        if dest as u32 != me {
                            *away += wire_bytes(&records);
                        }
                        session.give((dest as u32, me, records));
                    }
                }
            });
        }
    })
}

/// Bytes of `records` on the wire: what `bincode` writes for the vector, less its `u64` length.
pub(super) fn wire_bytes<T: serde::Serialize>(records: &[T]) -> u64 {
    bincode::serialized_size(records).map_or(0, |b| b.saturating_sub(8))
}
