//! The local index operator: each worker's own per-partition PBF-2s, and their deltas at epoch
//! close.

use crate::config::IndexConfig;
use crate::delta::{DeltaWords, LevelDelta, Shipment};
use crate::stats::{LocalStats, RejectReason};
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Pbf2, TemporalFilter, Tick};
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::StreamVec;

/// Indexes records into per-worker PBF-2s and emits, when an epoch closes, the words each level
/// changed during it.
///
/// A record is a key; its tick is its **dataflow timestamp** (`u64` ticks, identity mapping; a
/// batch's records take the batch's least time). The epoch closes when the input frontier passes
/// its last tick; the worker then sends every worker a [`Shipment`] stamped with the epoch's last
/// tick: the changed words of every level, each level sparse or dense, whichever is smaller
/// ([`crate::Placement::Replicated`]). Records of later epochs wait in a buffer until their epoch is the earliest open one,
/// so a delta holds exactly its epoch's records. Records at or past the horizon are counted, not
/// indexed.
///
/// ```
/// use timely::dataflow::operators::{Capture, Input};
/// use timely::dataflow::operators::capture::Event;
/// use chronobloom_operators::{IndexConfig, LocalIndex};
///
/// let cfg = IndexConfig::builder().epoch_len(10).partition_len(100).bits(8_000).build().unwrap();
/// let captured = timely::execute_directly(move |worker| {
///     let (mut input, captured) = worker.dataflow::<u64, _, _>(|scope| {
///         let (input, records) = scope.new_input::<Vec<u64>>();
///         (input, records.local_index(&cfg).capture())
///     });
///     // the timestamps are the ticks: key 7 at tick 3, key 8 at tick 42, key 9 at tick 500
///     for (key, tick) in [(7u64, 3u64), (8, 42), (9, 500)] {
///         input.advance_to(tick);
///         input.send(key);
///     }
///     captured
/// });
/// let shipments: Vec<_> = captured.iter()
///     .flat_map(|e| match e { Event::Messages(_, s) => s, Event::Progress(_) => vec![] })
///     .collect();
/// let epochs: Vec<u64> = shipments.iter().map(|s| s.epoch).collect();
/// assert_eq!(epochs, vec![0, 4, 50]); // one worker: one shipment per epoch with records
/// assert!(!shipments[0].deltas.is_empty());
/// let rejected = &shipments[2].local.as_ref().unwrap().rejected;
/// assert_eq!(rejected.values().sum::<u64>(), 1); // tick 500 is beyond the horizon
/// ```
pub trait LocalIndex<'scope> {
    /// Indexes this stream's records and emits one shipment per destination worker per epoch
    /// with records.
    fn local_index(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment>;
}

impl<'scope, K: Key + 'static> LocalIndex<'scope> for StreamVec<'scope, u64, K> {
    fn local_index(self, config: &IndexConfig) -> StreamVec<'scope, u64, Shipment> {
        let scope = self.scope();
        let mut state = LocalState::new(config.clone(), scope.index(), scope.peers());
        self.unary_frontier(Pipeline, "LocalIndex", move |default_cap, _info| {
            // Capabilities are taken per epoch from the data; time 0 must not be held.
            drop(default_cap);
            move |(input, frontier), output| {
                let port = output.output_index();
                let head = frontier.frontier().as_option().copied();
                for (cap, shipments) in state.close_before(head) {
                    output.session(&cap).give_iterator(shipments.into_iter());
                }
                input.for_each_stamp(|cap, data| {
                    let Some(&t) = cap.least() else { return };
                    let e = state.config.epoch_of(t);
                    let last = state.config.epoch_last(e);
                    state.open_epoch(e, || cap.delayed(&last, port));
                    for batch in data {
                        for key in batch.drain(..) {
                            state.insert(e, t, &key);
                        }
                    }
                });
            }
        })
    }
}

/// An epoch with records that has not closed yet.
struct OpenEpoch {
    cap: Capability<u64>,
    /// Records waiting for their epoch to become the earliest open one.
    buffer: Vec<(KeyHash, Tick)>,
    stats: LocalStats,
}

/// One worker's local index.
struct LocalState {
    config: IndexConfig,
    me: usize,
    peers: usize,
    /// The earliest open epoch: its records go straight into the filters.
    head: Option<u64>,
    /// Per-partition filters with dirty tracking on every level.
    filters: BTreeMap<u64, Pbf2>,
    open: BTreeMap<u64, OpenEpoch>,
}

impl LocalState {
    fn new(config: IndexConfig, me: usize, peers: usize) -> Self {
        LocalState {
            config,
            me,
            peers,
            head: None,
            filters: BTreeMap::new(),
            open: BTreeMap::new(),
        }
    }

    fn open_epoch(&mut self, e: u64, cap: impl FnOnce() -> Capability<u64>) {
        self.open.entry(e).or_insert_with(|| OpenEpoch {
            cap: cap(),
            buffer: Vec::new(),
            stats: LocalStats::default(),
        });
    }

    /// Records `key` at tick `t` of the open epoch `e`.
    fn insert<K: Key + ?Sized>(&mut self, e: u64, t: Tick, key: &K) {
        let hash = KeyHash::of(key, self.config.seed());
        let direct = self.head == Some(e);
        let Some(epoch) = self.open.get_mut(&e) else {
            return;
        };
        if t >= self.config.horizon() {
            *epoch
                .stats
                .rejected
                .entry(RejectReason::BeyondHorizon)
                .or_default() += 1;
            return;
        }
        epoch.stats.records += 1;
        if direct {
            insert_tracked(&mut self.filters, &self.config, hash, t);
        } else {
            epoch.buffer.push((hash, t));
        }
    }

    /// Closes every open epoch before the one holding `head` (all of them when the frontier is
    /// empty), in order, and makes `head`'s epoch the one records go straight into the filters.
    fn close_before(&mut self, head: Option<Tick>) -> Vec<(Capability<u64>, Vec<Shipment>)> {
        let head_epoch = head.map(|t| self.config.epoch_of(t));
        let mut out = Vec::new();
        while let Some(entry) = self.open.first_entry() {
            if head_epoch.is_some_and(|h| *entry.key() >= h) {
                break;
            }
            let (e, epoch) = entry.remove_entry();
            out.push(self.flush(e, epoch));
        }
        match head_epoch {
            Some(h) if self.head != Some(h) => {
                self.head = Some(h);
                if let Some(epoch) = self.open.get_mut(&h) {
                    for (hash, t) in std::mem::take(&mut epoch.buffer) {
                        insert_tracked(&mut self.filters, &self.config, hash, t);
                    }
                }
                // No record can reach a partition before the head's any more.
                let p = self.config.partition_of_epoch(h);
                self.filters = self.filters.split_off(&p);
            }
            Some(_) => {}
            None => self.filters.clear(),
        }
        out
    }

    /// Inserts the epoch's buffered records, drains the changed words of its partition and builds
    /// one shipment per destination.
    fn flush(&mut self, e: u64, mut epoch: OpenEpoch) -> (Capability<u64>, Vec<Shipment>) {
        for (hash, t) in std::mem::take(&mut epoch.buffer) {
            insert_tracked(&mut self.filters, &self.config, hash, t);
        }
        let p = self.config.partition_of_epoch(e);
        let mut per_dest: Vec<Vec<LevelDelta>> = vec![Vec::new(); self.peers];
        if let Some(pbf) = self.filters.get_mut(&p) {
            for level in 0..pbf.levels() {
                let Some(f) = pbf.level_mut(level) else {
                    continue;
                };
                let mut changed = f.bits_mut().drain_dirty();
                if changed.is_empty() {
                    continue;
                }
                changed.sort_unstable();
                let words = f.bits().words();
                if let Some(d) = DeltaWords::encode(&changed, words, 0..words.len()) {
                    let d = LevelDelta {
                        partition: p,
                        level,
                        words: d,
                    };
                    for v in &mut per_dest {
                        v.push(d.clone());
                    }
                }
            }
        }
        let mut stats = epoch.stats;
        stats.bytes_sent = per_dest
            .iter()
            .enumerate()
            .filter(|&(dest, _)| dest != self.me)
            .flat_map(|(_, v)| v.iter().map(|d| d.words.wire_bytes()))
            .sum();
        stats.records_buffered = self.open.values().map(|o| o.buffer.len() as u64).sum();
        stats.local_bits = self.filters.values().map(|f| f.memory_bits()).sum();
        let mut stats = Some(stats);
        let shipments = per_dest
            .into_iter()
            .enumerate()
            .map(|(dest, deltas)| Shipment {
                epoch: e,
                from: self.me as u32,
                dest: dest as u32,
                deltas,
                local: if dest == self.me { stats.take() } else { None },
            })
            .collect();
        (epoch.cap, shipments)
    }
}

/// Inserts into the partition's filter, creating it (with dirty tracking) when missing; `t` is
/// below the horizon.
fn insert_tracked(filters: &mut BTreeMap<u64, Pbf2>, config: &IndexConfig, hash: KeyHash, t: Tick) {
    let len = config.partition_len();
    let pbf = filters.entry(t / len).or_insert_with(|| {
        let mut pbf = config.new_partition();
        for level in 0..pbf.levels() {
            if let Some(f) = pbf.level_mut(level) {
                f.bits_mut().track_dirty();
            }
        }
        pbf
    });
    // The local tick is below the partition length, the PBF-2's horizon: this cannot fail.
    let _ = pbf.insert_hash(hash, t % len);
}
