//! A batch form of the temporal index's queries: "which of these keys appeared in [s, e]?" as one
//! query, answered in one pass.
//!
//! All keys of a batch share one range and so one answering epoch
//! ([`IndexConfig::answering_epoch`]): the batch waits for that epoch once, is held as one entry
//! with one capability, and its answers are computed together once the epoch is merged, each key
//! hashed once. Every key's answer and probe count are those of a single query for it
//! ([`crate::MergeQuery`]), since both are taken against exactly the same merged state. The
//! merged state is PBF-2's, so the probing itself is key by key; the matrix layout that makes a
//! batch cheaper per key (`chronobloom_core::matrix::MatrixPbf`) lives in the core only.
//!
//! One key with many ranges is not batched: ranges ending in different epochs must be answered
//! against different merged states to give the single queries' answers.

use super::config::{IndexConfig, Placement};
use super::delta::Shipment;
use super::query::merge_core;
use super::state::MergedState;
use crate::error::{Error, Result};
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Tick, TimeRange};
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::StreamVec;
use timely::ExchangeData;

/// "Which of `keys` appeared in `range`?"
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyBatch<K> {
    /// The keys asked about.
    pub keys: Vec<K>,
    /// The range they share.
    pub range: TimeRange,
}

/// The answer to a [`KeyBatch`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyBatchAnswer<K> {
    /// The keys asked about, in the batch's order.
    pub keys: Vec<K>,
    /// The range asked about.
    pub range: TimeRange,
    /// The batch's timestamp t_q.
    pub issued: Tick,
    /// The epoch whose merged state answered ([`IndexConfig::answering_epoch`]).
    pub epoch: u64,
    /// Per key, in order: false means it certainly did not appear in the range.
    pub present: Vec<bool>,
    /// Membership probes made for the whole batch.
    pub probes: u64,
}

/// Merges epoch shipments and answers batches of keys sharing a range.
pub trait MergeKeyBatches<'scope> {
    /// Merges this stream of shipments (from [`crate::LocalIndex`]) and answers `batches`, each
    /// on the worker it enters. Needs [`Placement::Replicated`]; refuses a sharded
    /// configuration ([`Error::Config`]) before the dataflow is built.
    fn merge_and_query_batches<K: Key + ExchangeData + Clone>(
        self,
        batches: StreamVec<'scope, u64, KeyBatch<K>>,
        config: &IndexConfig,
    ) -> Result<StreamVec<'scope, u64, KeyBatchAnswer<K>>>;
}

impl<'scope> MergeKeyBatches<'scope> for StreamVec<'scope, u64, Shipment> {
    fn merge_and_query_batches<K: Key + ExchangeData + Clone>(
        self,
        batches: StreamVec<'scope, u64, KeyBatch<K>>,
        config: &IndexConfig,
    ) -> Result<StreamVec<'scope, u64, KeyBatchAnswer<K>>> {
        if config.placement() != Placement::Replicated {
            return Err(Error::config(
                "index",
                "placement",
                "batch queries are answered from a replicated merged state",
            ));
        }
        let seed = config.seed();
        Ok(merge_core(
            self,
            batches,
            Pipeline,
            config,
            std::rc::Rc::new(std::cell::RefCell::new(MergedState::new(config))),
            |b: &KeyBatch<K>| b.range,
            move |state, batch, issued, epoch| {
                let mut probes = 0;
                let present = batch
                    .keys
                    .iter()
                    .map(|k| {
                        let a = state.query_hash(KeyHash::of(k, seed), batch.range);
                        probes += a.probes;
                        a.present
                    })
                    .collect();
                KeyBatchAnswer {
                    keys: batch.keys,
                    range: batch.range,
                    issued,
                    epoch,
                    present,
                    probes,
                }
            },
            |state, _, _, _| {
                state.clear_dirty();
                Vec::new()
            },
        ))
    }
}
