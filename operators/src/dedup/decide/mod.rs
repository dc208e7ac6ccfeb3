//! One worker's dedup state and decisions: epochs buffered until the frontier passes them,
//! decided shard by shard and tick by tick against the shard filters, same-tick repeats
//! resolved exactly, stats sealed per epoch.

use super::config::{DedupConfig, DedupMode};
use super::shard::{Found, ShardFilter};
use super::stats::{DedupStats, Slice, SliceStats};
use super::view::{ViewDelta, WindowView};
use super::{Fingerprint, KeyBytes, Routed};
use crate::batched::keep_least;
use chronobloom_core::temporal::Tick;
use order::EpochOrder;
use repeats::SameTick;
use std::collections::BTreeMap;
use timely::dataflow::operators::Capability;
use timely::progress::frontier::MutableAntichain;
use timely::ExchangeData;

mod checkpoint;
mod order;
mod repeats;

/// Emptied epoch buffers a worker keeps: enough for the epochs pending at once with a few epochs
/// in flight.
const SPARE_BUFFERS: usize = 4;

/// A record's `(tick, fingerprint)`.
type Stamp = (Tick, u64);

/// An epoch whose records wait for the frontier to pass it, as two parallel arrays: the passes
/// over every record read its 16-byte `(tick, fingerprint)` stamp, not the record.
pub(super) struct PendingEpoch<D> {
    /// At the least timestamp of the epoch's records.
    pub cap: Capability<u64>,
    /// `(tick, fingerprint)` of each record.
    pub stamps: Vec<Stamp>,
    /// The records, in the order of their stamps.
    pub records: Vec<D>,
}

/// An epoch with records or received deltas whose stats are not out yet.
struct OpenEpoch {
    /// At the least timestamp of the epoch's records (or of the delta that opened it).
    cap: Capability<u64>,
    stats: DedupStats,
    /// Bytes of fingerprinted records received (`ByKey`, several workers).
    bytes_in: u64,
}

/// The fingerprints of an epoch's records, for the other workers (`Local`, several workers),
/// with a capability of the delta output at the epoch's last tick: the delta goes out once the
/// input frontier passes the epoch, whatever this worker's decisions, so a worker never waits on
/// another's deciding, only on its input.
struct Outgoing {
    cap: Capability<u64>,
    keys: Vec<u64>,
}

/// One worker's dedup state.
pub(super) struct DecideState<D> {
    pub config: DedupConfig,
    me: usize,
    peers: usize,
    /// One filter per shard this worker holds, created on first use, freed when stale.
    shards: Vec<Option<ShardFilter>>,
    /// Other workers' closed epochs, waiting to be inserted (`Local` with several workers).
    view: Option<WindowView>,
    pending: BTreeMap<u64, PendingEpoch<D>>,
    epochs: BTreeMap<u64, OpenEpoch>,
    outgoing: BTreeMap<u64, Outgoing>,
    routed: Routed,
    key: KeyBytes<D>,
    fp: Fingerprint<D>,
    /// Per record of the epoch being decided: not seen before its tick.
    fresh: Vec<bool>,
    /// `(tick, fingerprint)` of the epoch being decided whose key may have occurred earlier in
    /// the same tick.
    repeats: Vec<(Tick, u64)>,
    /// One tick's records of a shard as they are inserted (emptied by each insert, kept for
    /// its buffer).
    batch: Vec<((usize, u64), u64)>,
    /// Resolves the same-tick repeats, with its map and buffers kept between epochs.
    same_tick: SameTick,
    /// The order an epoch's records (or a view delta's keys) are decided (inserted) in.
    order: EpochOrder,
    /// Records of the last decided epoch.
    last_epoch_len: usize,
    /// Emptied record buffers of decided epochs, for the next epochs (at most
    /// [`SPARE_BUFFERS`]): an epoch's buffer is megabytes at a steady rate, and allocating
    /// and freeing one an epoch made the resident memory follow how many epochs were pending.
    spare: Vec<(Vec<Stamp>, Vec<D>)>,
    /// Keys of received view deltas that could not be inserted (not yet in any epoch's stats).
    unplaced: u64,
    /// Open epochs of a restored checkpoint, reopened when the operator is built.
    carried: Vec<(u64, DedupStats, u64)>,
    /// The view deltas' frontier at the last activation (`u64::MAX` once empty).
    pub delta_frontier: u64,
}

/// Records whose cache lines are requested ahead of the one being decided.
const PREFETCH_AHEAD: usize = 24;

impl<D: ExchangeData> DecideState<D> {
    pub fn new(
        config: DedupConfig,
        me: usize,
        peers: usize,
        routed: Routed,
        key: KeyBytes<D>,
        fp: Fingerprint<D>,
    ) -> Self {
        let view = (config.mode() == DedupMode::Local && peers > 1).then(WindowView::default);
        DecideState {
            shards: (0..config.shards()).map(|_| None).collect(),
            config,
            me,
            peers,
            view,
            pending: BTreeMap::new(),
            epochs: BTreeMap::new(),
            outgoing: BTreeMap::new(),
            routed,
            key,
            fp,
            fresh: Vec::new(),
            repeats: Vec::new(),
            batch: Vec::new(),
            same_tick: SameTick::default(),
            order: EpochOrder::default(),
            last_epoch_len: 0,
            spare: Vec::new(),
            unplaced: 0,
            carried: Vec::new(),
            delta_frontier: 0,
        }
    }

    /// The fingerprint function and the routing byte counts the router shares with this state.
    pub fn fingerprint_and_routed(&self) -> (Fingerprint<D>, Routed) {
        (self.fp.clone(), self.routed.clone())
    }

    fn open_epoch(&mut self, e: u64, cap: impl FnOnce() -> Capability<u64>) -> &mut OpenEpoch {
        let (me, mode) = (self.me as u32, self.config.mode());
        self.epochs.entry(e).or_insert_with(|| OpenEpoch {
            cap: cap(),
            stats: DedupStats::new(e, me, mode),
            bytes_in: 0,
        })
    }

    /// Buffers a batch of records stamped `ts` in their epochs (a late record, below `ts`, at
    /// `ts`), leaving `batch` empty; `pass_cap(t)`, `epoch_cap(t)` and `delta_cap(t)` make
    /// capabilities at `t` for the passed records, the side output and the view deltas.
    pub fn accept(
        &mut self,
        ts: Tick,
        batch: &mut Vec<(Tick, D)>,
        source: u32,
        mut pass_cap: impl FnMut(Tick) -> Capability<u64>,
        mut epoch_cap: impl FnMut(Tick) -> Capability<u64>,
        mut delta_cap: impl FnMut(Tick) -> Capability<u64>,
    ) {
        if self.config.mode() == DedupMode::ByKey && source as usize != self.me {
            let bytes = super::route::wire_bytes(batch);
            let e = self.config.epoch_of(ts);
            let open = self.open_epoch(e, || epoch_cap(ts));
            open.bytes_in = open.bytes_in.saturating_add(bytes);
        }
        // A run of records in one epoch goes into that epoch's buffers, looked up once.
        let mut records = batch.drain(..).peekable();
        while let Some(&(t, _)) = records.peek() {
            let e = self.config.epoch_of(t.max(ts));
            let (first, last) = (self.config.epoch_start(e), self.config.epoch_last(e));
            let reserve = self.last_epoch_len;
            let spare = &mut self.spare;
            let slot = self.pending.entry(e).or_insert_with(|| {
                let (stamps, records) = spare
                    .pop()
                    .unwrap_or_else(|| (Vec::with_capacity(reserve), Vec::with_capacity(reserve)));
                PendingEpoch {
                    cap: pass_cap(ts),
                    stamps,
                    records,
                }
            });
            keep_least(&mut slot.cap, ts, &mut pass_cap);
            let mut out = match self.view {
                Some(_) => Some(self.outgoing.entry(e).or_insert_with(|| Outgoing {
                    cap: delta_cap(last),
                    keys: Vec::new(),
                })),
                None => None,
            };
            let mut late = 0u64;
            while let Some((t, d)) = records.next_if(|&(t, _)| (first..=last).contains(&t.max(ts)))
            {
                let fp = (self.fp)(&d);
                late += u64::from(t < ts);
                slot.stamps.push((t.max(ts), fp));
                slot.records.push(d);
                if let Some(out) = out.as_mut() {
                    out.keys.push(fp);
                }
            }
            let open = self.open_epoch(e, || epoch_cap(ts));
            keep_least(&mut open.cap, ts, &mut epoch_cap);
            open.stats.late = open.stats.late.saturating_add(late);
        }
    }

    /// Buffers a peer's delta (arriving at tick `t`, the first tick of the epoch after the
    /// delta's); its bytes count for the epoch whose ticks consult it.
    pub fn receive(&mut self, t: Tick, delta: ViewDelta, cap: impl FnOnce() -> Capability<u64>) {
        let bytes = delta.wire_bytes();
        let accepted = self.view.as_mut().is_some_and(|v| v.merge(delta));
        let e = self.config.epoch_of(t);
        let epoch = self.open_epoch(e, cap);
        epoch.stats.bytes_received = epoch.stats.bytes_received.saturating_add(bytes);
        epoch.stats.refused_deltas = epoch
            .stats
            .refused_deltas
            .saturating_add(u64::from(!accepted));
    }

    /// Takes the fingerprints of the epochs the input frontier has passed (every record of them
    /// is here: each is inserted when its epoch is decided), one delta per other worker, with
    /// the delta output's capability of its epoch.
    pub fn ship(
        &mut self,
        r_frontier: &MutableAntichain<u64>,
    ) -> Vec<(Capability<u64>, ViewDelta)> {
        let mut out = Vec::new();
        while let Some((&e, _)) = self.outgoing.first_key_value() {
            if r_frontier.less_equal(&self.config.epoch_last(e)) {
                break;
            }
            let Some((_, Outgoing { cap, mut keys })) = self.outgoing.pop_first() else {
                break;
            };
            // an epoch without keys ships nothing (dropping its capability is enough)
            if keys.is_empty() {
                continue;
            }
            keys.sort_unstable();
            keys.dedup();
            for dest in (0..self.peers).filter(|&d| d != self.me) {
                let delta = ViewDelta {
                    epoch: e,
                    from: self.me as u32,
                    dest: dest as u32,
                    keys: keys.clone(),
                };
                if let Some(epoch) = self.epochs.get_mut(&e) {
                    epoch.stats.bytes_sent =
                        epoch.stats.bytes_sent.saturating_add(delta.wire_bytes());
                }
                out.push((cap.clone(), delta));
            }
        }
        out
    }

    /// The earliest buffered epoch, once the input frontier has passed its last tick and (in
    /// `Local` with several workers) every delta of the epochs before it has arrived.
    pub fn next_epoch(
        &mut self,
        r_frontier: &MutableAntichain<u64>,
        d_frontier: &MutableAntichain<u64>,
    ) -> Option<(u64, PendingEpoch<D>)> {
        let (&e, _) = self.pending.first_key_value()?;
        if r_frontier.less_equal(&self.config.epoch_last(e)) || !self.view_complete(e, d_frontier) {
            return None;
        }
        self.pending.pop_first()
    }

    /// Whether every delta epoch `e`'s records may consult has arrived (deltas of epoch `e - 1`
    /// arrive at epoch `e`'s first tick).
    fn view_complete(&self, e: u64, d_frontier: &MutableAntichain<u64>) -> bool {
        self.view.is_none() || e == 0 || !d_frontier.less_equal(&self.config.epoch_start(e))
    }

    /// Inserts the other workers' keys of the epochs before `e` (`Local`, several workers).
    fn apply_view(&mut self, e: u64) {
        let Some(view) = self.view.as_mut() else {
            return;
        };
        for (e, keys) in view.take_before(e) {
            let last = self.config.epoch_last(e);
            let mut order = std::mem::take(&mut self.order);
            let by_fingerprint = !self.config.exact_edge();
            order.arrange(
                keys.iter().map(|&fp| (last, fp)),
                self.config.shards(),
                by_fingerprint,
            );
            for (shard, segment) in order.segments() {
                let slot = &mut self.shards[shard];
                if slot.is_none() {
                    *slot = ShardFilter::new(&self.config, last).ok();
                }
                let Some(f) = slot.as_mut() else { continue };
                for s in segment {
                    f.prefetch(s.fp);
                }
                let mut items: Vec<((), u64)> = segment.iter().map(|s| ((), s.fp)).collect();
                if f.insert_batch(&mut items, last, |_| false, |(), _| {})
                    .is_err()
                {
                    self.unplaced = self.unplaced.saturating_add(segment.len() as u64);
                }
            }
            self.order = order;
        }
    }

    /// Keeps a decided epoch's emptied buffer for a later epoch, unless enough are kept or it is
    /// more than twice the size the last epoch needed (a burst's).
    fn keep_spare(&mut self, mut stamps: Vec<Stamp>, mut records: Vec<D>) {
        stamps.clear();
        records.clear();
        if self.spare.len() < SPARE_BUFFERS && records.capacity() <= 2 * self.last_epoch_len {
            self.spare.push((stamps, records));
        }
    }

    /// Decides epoch `e`'s records (see the module docs), `stamps[i]` the `(tick, fingerprint)`
    /// of `records[i]`, and returns those that pass.
    pub fn decide(&mut self, e: u64, stamps: Vec<Stamp>, mut records: Vec<D>) -> Vec<(Tick, D)> {
        self.apply_view(e);
        let mut unplaced = 0;
        // Shard by shard (keys of different shards never share cells), tick by tick within a
        // shard, the lines of the next records requested ahead so their misses overlap:
        // 1. every key of a tick is checked against the state before the tick,
        // 2. every key of the tick is inserted; a key inserted earlier in the tick finds all its
        //    cells at the tick already (a repeat candidate).
        let mut order = std::mem::take(&mut self.order);
        // (the exact-edge filter places keys in any order, and gains nothing from this one)
        let by_fingerprint = !self.config.exact_edge();
        order.arrange(stamps.iter().copied(), self.config.shards(), by_fingerprint);
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        fresh.resize(records.len(), true);
        let mut repeats = std::mem::take(&mut self.repeats);
        repeats.clear();
        let mut batch = std::mem::take(&mut self.batch);
        for (shard, segment) in order.segments() {
            let slot = &mut self.shards[shard];
            if slot.is_none() {
                *slot = ShardFilter::new(&self.config, segment[0].tick).ok();
            }
            let Some(f) = slot.as_mut() else { continue };
            // The check asks for the lines of the record `PREFETCH_AHEAD` places on as it goes,
            // so that a few dozen misses are in flight at a time (a whole run's prefetches at
            // once overflow what the memory system tracks, and most are lost).
            for s in segment.iter().take(PREFETCH_AHEAD) {
                f.prefetch(s.fp);
            }
            let mut start = 0;
            for run in segment.chunk_by(|a, b| a.tick == b.tick) {
                let t = run[0].tick;
                let ahead = &segment[(start + PREFETCH_AHEAD).min(segment.len())..];
                start += run.len();
                let view: &ShardFilter = f;
                let checked = run.iter().enumerate().map(|(j, s)| {
                    if let Some(a) = ahead.get(j) {
                        view.prefetch(a.fp);
                    }
                    (s.i, s.fp)
                });
                view.seen_each(checked, t, |i, seen| fresh[i] = !seen);
                batch.extend(run.iter().map(|s| ((s.i, s.fp), s.fp)));
                // a record not seen before the tick has no live entry yet
                let absent = |&(i, _): &(usize, u64)| fresh[i];
                let placed = f.insert_batch(&mut batch, t, absent, |(i, fp), found| {
                    if found == Found::Recent && fresh[i] {
                        repeats.push((t, fp));
                    }
                });
                if placed.is_err() {
                    unplaced += run.len() as u64;
                }
            }
        }
        self.order = order;
        batch.clear();
        self.batch = batch;
        let same_tick = self
            .same_tick
            .resolve(&records, &stamps, &repeats, &mut fresh, &self.key);
        let total = records.len() as u64;
        self.last_epoch_len = records.len();
        let fresh_here = &fresh[..records.len()];
        let mut passed = Vec::with_capacity(fresh_here.iter().filter(|&&f| f).count());
        passed.extend(
            records
                .drain(..)
                .zip(&stamps)
                .zip(fresh_here)
                .filter_map(|((d, &(t, _)), &f)| f.then_some((t, d))),
        );
        self.keep_spare(stamps, records);
        self.fresh = fresh;
        self.repeats = repeats;
        if let Some(epoch) = self.epochs.get_mut(&e) {
            // saturating: a restored checkpoint's counts are only as large as a file says
            let s = &mut epoch.stats;
            let carried_unplaced = std::mem::take(&mut self.unplaced);
            s.records = s.records.saturating_add(total);
            s.passed = s.passed.saturating_add(passed.len() as u64);
            s.dropped = s.dropped.saturating_add(total - passed.len() as u64);
            s.dropped_same_tick = s.dropped_same_tick.saturating_add(same_tick);
            s.unplaced = s
                .unplaced
                .saturating_add(unplaced)
                .saturating_add(carried_unplaced);
        }
        passed
    }

    /// The earliest tick still to be decided: the first buffered epoch's first tick or the input
    /// frontier; `None` when the input is done and nothing waits.
    pub fn horizon(&self, r_frontier: &MutableAntichain<u64>) -> Option<Tick> {
        let frontier = r_frontier.frontier().first().copied();
        let first = self
            .pending
            .first_key_value()
            .map(|(&e, _)| self.config.epoch_start(e));
        match (first, frontier) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Lets the shards' time pass to `horizon` (the compact filters end their generations even
    /// when no record arrives) and frees those no tick at or after it can consult (all of them
    /// when `horizon` is `None`).
    pub fn retire(&mut self, horizon: Option<Tick>) {
        match horizon {
            Some(h) => {
                for slot in &mut self.shards {
                    if slot.as_ref().is_some_and(|f| f.stale(h)) {
                        *slot = None;
                    } else if let Some(f) = slot.as_mut() {
                        // the view's keys of the epoch before are still inserted at `h - 1`
                        f.advance(h.saturating_sub(1));
                    }
                }
            }
            None => self.shards.iter_mut().for_each(|s| *s = None),
        }
    }

    /// Stats of the epochs that are complete: closed by the input frontier, every record decided
    /// (none before `next` waits), and every delta they consult received.
    pub fn finished(
        &mut self,
        next: Option<Tick>,
        r_frontier: &MutableAntichain<u64>,
        d_frontier: &MutableAntichain<u64>,
    ) -> Vec<(Capability<u64>, DedupStats)> {
        let mut out = Vec::new();
        while let Some((&e, _)) = self.epochs.first_key_value() {
            let last = self.config.epoch_last(e);
            let waiting =
                next.is_some_and(|t| t <= last) || self.pending.range(..=e).next().is_some();
            if r_frontier.less_equal(&last) || waiting || !self.view_complete(e, d_frontier) {
                break;
            }
            let Some((_, epoch)) = self.epochs.pop_first() else {
                break;
            };
            out.push((epoch.cap, self.seal(epoch.stats, epoch.bytes_in, last)));
        }
        out
    }

    /// Completes an epoch's stats with the state at its last tick.
    fn seal(&mut self, mut s: DedupStats, bytes_in: u64, last: Tick) -> DedupStats {
        {
            let mut routed = self.routed.borrow_mut();
            let later = routed.split_off(&s.epoch.saturating_add(1));
            for (_, away) in std::mem::replace(&mut *routed, later) {
                s.bytes_sent = s.bytes_sent.saturating_add(away);
            }
        }
        if self.config.mode() == DedupMode::ByKey {
            s.bytes_received = bytes_in;
        }
        s.slack = self.config.slack();
        s.records_buffered = self.pending.values().map(|p| p.records.len() as u64).sum();
        let mut shard_fpr = Vec::with_capacity(self.shards.len());
        s.slices.reserve(self.shards.len());
        for (i, f) in self.shards.iter().enumerate() {
            let Some(f) = f else { continue };
            let (fill, fpr) = f.occupancy(last);
            shard_fpr.push(fpr);
            s.local_bits = s.local_bits.saturating_add(f.memory_bits());
            s.keys = s.keys.saturating_add(f.keys());
            s.slices.push(SliceStats {
                slice: Slice::Shard(i as u32),
                bits: f.memory_bits(),
                fill,
                estimated_fpr: fpr,
            });
        }
        if !shard_fpr.is_empty() {
            s.estimated_fpr = shard_fpr.iter().sum::<f64>() / shard_fpr.len() as f64;
        }
        if let Some(view) = self.view.as_ref() {
            s.view_bits = view.pending_keys() * 64;
            for (e, keys) in view.pending_epochs() {
                s.slices.push(SliceStats {
                    slice: Slice::ViewEpoch(e),
                    bits: keys * 64,
                    fill: 0.0,
                    estimated_fpr: 0.0,
                });
            }
        }
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
