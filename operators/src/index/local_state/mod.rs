//! One worker's local index state: open epochs, their buffers and logs, the per-partition PBF-2s,
//! and what closes an epoch (shipments of records or changed words).

mod close;

use super::config::{AllocationLag, IndexConfig};
use super::delta::EpochRecords;
use super::held::Held;
use super::resume::{LocalSnapshot, LocalSnapshotRef};
use super::stats::{LocalStats, RejectReason};
use crate::batched::keep_least;
use crate::checkpoint::CheckpointError;
use chronobloom_core::bloom::Layout;
use chronobloom_core::hash::{Key, KeyHash};
use chronobloom_core::temporal::{Allocation, Pbf2, Tick};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use timely::dataflow::operators::Capability;

/// An epoch with records that has not closed yet.
struct OpenEpoch {
    cap: Capability<u64>,
    /// Records held back: of an epoch that is not the earliest open one, or whose partition's
    /// allocation is not known yet.
    buffer: Held,
    stats: LocalStats,
    /// The epoch's records as hashes, for shipping instead of changed words when smaller;
    /// `None` once they outgrow [`LocalState::log_cap`].
    log: Option<EpochRecords>,
    /// Logged records that arrived while the epoch could not close (counted in the buffer).
    waiting: u64,
}

/// One worker's local index.
pub(super) struct LocalState {
    config: IndexConfig,
    me: usize,
    peers: usize,
    /// Whether partitions take announced allocations.
    announced: bool,
    /// The epoch holding the records input's frontier (`None` once it is empty).
    head: Option<u64>,
    /// The allocation input's frontier: `None` before the first call, `Some(None)` once empty.
    pub(super) alloc_head: Option<Option<Tick>>,
    /// Per-partition filters with dirty tracking on every level.
    filters: BTreeMap<u64, Pbf2>,
    open: BTreeMap<u64, OpenEpoch>,
    /// Valid announcements by partition, the smallest kept.
    announcements: BTreeMap<u64, Allocation>,
    /// The allocation each partition uses, once known.
    resolved: BTreeMap<u64, Allocation>,
    /// The last partition announced to the merge.
    shipped: Option<u64>,
    /// Records held back in all open epochs.
    buffered: u64,
    /// Refused announcements not reported yet.
    refused: u64,
    /// Scratch space for a batch's key hashes and ticks.
    hashes: Vec<KeyHash>,
    ticks: Vec<Tick>,
    /// Records an epoch's log may hold: past it, the changed words are surely fewer bytes.
    log_cap: usize,
    /// Whether shipped hashes carry `hi` (the standard layout).
    with_hi: bool,
    /// Records the last flushed epoch logged: a new epoch's log is sized for as many (the stream
    /// tells, rather than each log growing by doubling).
    last_logged: usize,
    /// The last partition's planned allocation (`planned`), derived once: a sparse input's
    /// epochs ship as records, and each would plan it again.
    pub(super) planned: Option<(u64, Allocation)>,
}

impl LocalState {
    pub(super) fn new(config: IndexConfig, me: usize, peers: usize, announced: bool) -> Self {
        let with_hi = config.layout() == Layout::Standard;
        let bits: u64 = config.allocation().shapes().iter().map(|s| s.bits).sum();
        // A record log longer than the whole partition's words is never the smaller shipment;
        // offsets from the epoch's start must fit 32 bits.
        let log_cap = if config.epoch_len() <= 1 << 32 {
            (bits / 8 / EpochRecords::record_bytes(with_hi, config.epoch_len())) as usize
        } else {
            0
        };
        LocalState {
            config,
            me,
            peers,
            announced,
            head: None,
            alloc_head: None,
            filters: BTreeMap::new(),
            open: BTreeMap::new(),
            announcements: BTreeMap::new(),
            resolved: BTreeMap::new(),
            shipped: None,
            buffered: 0,
            refused: 0,
            hashes: Vec::new(),
            ticks: Vec::new(),
            log_cap,
            with_hi,
            last_logged: 0,
            planned: None,
        }
    }

    /// The state a checkpoint at `boundary` keeps: refused while an epoch is open.
    pub(super) fn export(&self, boundary: Tick) -> Result<LocalSnapshot, CheckpointError> {
        let r = self.export_ref(boundary)?;
        Ok(LocalSnapshot {
            filters: r.filters.clone(),
            announcements: r.announcements.clone(),
            resolved: r.resolved.clone(),
            shipped: r.shipped,
        })
    }

    /// [`Self::export`] borrowed from the state.
    pub(super) fn export_ref(
        &self,
        boundary: Tick,
    ) -> Result<LocalSnapshotRef<'_>, CheckpointError> {
        if let Some(e) = self.open.keys().next() {
            return Err(CheckpointError::NotQuiescent {
                operator: "local index",
                boundary,
                reason: format!("epoch {e} is open"),
            });
        }
        Ok(LocalSnapshotRef {
            filters: &self.filters,
            announcements: &self.announcements,
            resolved: &self.resolved,
            shipped: self.shipped,
        })
    }

    /// Replaces the (fresh) state with a checkpoint's, after checking every filter has its
    /// partition's allocation, the configured layout and seed.
    pub(super) fn import(&mut self, snap: LocalSnapshot) -> Result<(), CheckpointError> {
        let refuse = |reason: String| Err(CheckpointError::state("local index", reason));
        for (&p, a) in snap.resolved.iter().chain(&snap.announcements) {
            if p >= self.config.partitions() || !self.config.fits(a) {
                return refuse(format!(
                    "partition {p}'s allocation does not fit the configuration"
                ));
            }
        }
        for (&p, pbf) in &snap.filters {
            let Some(a) = snap.resolved.get(&p) else {
                return refuse(format!("partition {p} has a filter but no allocation"));
            };
            let shapes = a.shapes();
            let fits = pbf.levels() as usize == shapes.len()
                && pbf.horizon() == Some(self.config.points())
                && pbf.seed() == self.config.seed()
                && p < self.config.partitions()
                && self.config.fits(a)
                && shapes
                    .iter()
                    .enumerate()
                    .all(|(l, want)| match pbf.level(l as u32) {
                        Some(f) => f.shape() == *want && f.layout() == self.config.layout(),
                        None => want.bits == 0,
                    });
            if !fits {
                return refuse(format!(
                    "partition {p}'s filter does not match its allocation and the configuration"
                ));
            }
        }
        self.filters = snap.filters;
        for pbf in self.filters.values_mut() {
            for level in 0..pbf.levels() {
                if let Some(f) = pbf.level_mut(level) {
                    f.bits_mut().track_dirty();
                }
            }
        }
        self.announcements = snap.announcements;
        self.resolved = snap.resolved;
        self.shipped = snap.shipped;
        Ok(())
    }

    /// Records an announcement stamped `t` for partition `p`.
    pub(super) fn announce(&mut self, t: Tick, p: u64, a: Allocation) {
        let valid = p < self.config.partitions()
            && t <= self.config.partition_start(p)
            && self.config.fits(&a);
        if !valid {
            self.refused += 1;
            return;
        }
        let key = |a: &Allocation| {
            a.shapes()
                .iter()
                .map(|s| (s.bits, s.hashes))
                .collect::<Vec<_>>()
        };
        match self.announcements.entry(p) {
            Entry::Vacant(v) => {
                v.insert(a);
            }
            Entry::Occupied(mut o) => {
                if key(&a) < key(o.get()) {
                    o.insert(a);
                }
            }
        }
    }

    /// The allocation partition `p` uses, once no announcement that decides it can arrive.
    fn resolve(&mut self, p: u64) -> Option<&Allocation> {
        if !self.resolved.contains_key(&p) {
            let decided_by = match self.config.allocation_lag() {
                _ if !self.announced => None,
                AllocationLag::Wait => Some(p),
                AllocationLag::Previous => p.checked_sub(1),
            };
            let chosen = match decided_by {
                None => self.config.allocation().clone(),
                Some(q) => {
                    let start = self.config.partition_start(q);
                    let passed = self.alloc_head.is_some_and(|h| h.is_none_or(|h| h > start));
                    if !passed {
                        return None;
                    }
                    self.announcements
                        .get(&q)
                        .cloned()
                        .unwrap_or_else(|| self.config.allocation().clone())
                }
            };
            self.resolved.insert(p, chosen);
        }
        self.resolved.get(&p)
    }

    fn open_epoch(&mut self, e: u64, cap: impl FnOnce() -> Capability<u64>) {
        let start = self.config.epoch_start(e);
        let log = (self.log_cap > 0).then(|| {
            let mut log = EpochRecords::new(start, self.config.epoch_len());
            log.reserve(self.last_logged.min(self.log_cap), self.with_hi);
            log
        });
        self.open.entry(e).or_insert_with(|| OpenEpoch {
            cap: cap(),
            buffer: Held::default(),
            stats: LocalStats::default(),
            log,
            waiting: 0,
        });
    }

    /// Accepts a batch of `(tick, key)` records stamped `ts`: hashes each key once, places a late
    /// record (tick below `ts`) at `ts`, and hands each run of records of one epoch to
    /// [`Self::insert_run`], opening the epoch with `cap(ts)` when needed (an epoch's capability
    /// is at the least timestamp of its records).
    pub(super) fn accept<K: Key>(
        &mut self,
        ts: Tick,
        batch: &mut Vec<(Tick, K)>,
        mut cap: impl FnMut(Tick) -> Capability<u64>,
    ) {
        let seed = self.config.seed();
        let mut hashes = std::mem::take(&mut self.hashes);
        let mut ticks = std::mem::take(&mut self.ticks);
        hashes.clear();
        ticks.clear();
        let mut late = 0;
        for (t, key) in batch.drain(..) {
            late += u64::from(t < ts);
            hashes.push(KeyHash::of(&key, seed));
            ticks.push(t.max(ts));
        }
        let mut i = 0;
        while i < ticks.len() {
            let e = self.config.epoch_of(ticks[i]);
            let (first, last) = (self.config.epoch_start(e), self.config.epoch_last(e));
            let n = ticks[i..]
                .iter()
                .take_while(|&&t| (first..=last).contains(&t))
                .count();
            self.open_epoch(e, || cap(ts));
            if let Some(epoch) = self.open.get_mut(&e) {
                keep_least(&mut epoch.cap, ts, &mut cap);
                epoch.stats.late += std::mem::take(&mut late);
            }
            self.insert_run(e, &hashes[i..i + n], &ticks[i..i + n]);
            i += n;
        }
        self.hashes = hashes;
        self.ticks = ticks;
    }

    /// Records a run of key hashes at their ticks, all in the open epoch `e`. While the epoch's
    /// records are fewer bytes than its partition's words they are only logged: they will travel
    /// as hashes, and every receiver (this worker too) inserts them into its merged state, so the
    /// local filter never sees them. Past that, the log is spilled and records go the way of
    /// changed words ([`Self::place`]).
    fn insert_run(&mut self, e: u64, hashes: &[KeyHash], ticks: &[Tick]) {
        let n = hashes.len() as u64;
        let Some(epoch) = self.open.get_mut(&e) else {
            return;
        };
        // An epoch lies in one partition, and the horizon is a partition boundary.
        if self.config.epoch_start(e) >= self.config.horizon() {
            *epoch
                .stats
                .rejected
                .entry(RejectReason::BeyondHorizon)
                .or_default() += n;
            return;
        }
        if epoch
            .log
            .as_ref()
            .is_some_and(|l| l.len() + hashes.len() <= self.log_cap)
        {
            let direct = self.direct(e);
            // Records of an epoch that cannot close yet wait within the buffer's bound.
            let room = if direct {
                n
            } else {
                self.config
                    .max_buffered()
                    .saturating_sub(self.buffered)
                    .min(n)
            };
            let Some(epoch) = self.open.get_mut(&e) else {
                return;
            };
            if let Some(log) = epoch.log.as_mut() {
                for (&h, &t) in hashes.iter().zip(ticks).take(room as usize) {
                    log.push(h, t, self.with_hi);
                }
            }
            if !direct {
                self.buffered += room;
                epoch.waiting += room;
            }
            count_held(&mut epoch.stats, room, n);
            return;
        }
        if epoch.log.is_some() {
            self.buffered -= std::mem::take(&mut epoch.waiting);
            if let Some(spilled) = epoch.log.take() {
                epoch.stats.records -= spilled.len() as u64;
                let (h, t): (Vec<KeyHash>, Vec<Tick>) = spilled.iter().unzip();
                self.place(e, &h, &t);
            }
        }
        self.place(e, hashes, ticks);
    }

    /// Whether epoch `e`'s records can go in now: it is the earliest open epoch, holds the
    /// frontier, and its partition's allocation is known.
    fn direct(&mut self, e: u64) -> bool {
        let p = self.config.partition_of_epoch(e);
        self.head == Some(e) && self.open.keys().next() == Some(&e) && self.resolve(p).is_some()
    }

    /// Puts a run of epoch `e`'s records in the local filter: straight in when `e` is the
    /// earliest open epoch, holds the frontier and its partition's allocation is known; held
    /// back otherwise.
    fn place(&mut self, e: u64, hashes: &[KeyHash], ticks: &[Tick]) {
        let n = hashes.len() as u64;
        let p = self.config.partition_of_epoch(e);
        let base = self.config.partition_start(p);
        let direct = self.direct(e);
        let resolution = self.config.resolution();
        let locals = ticks.iter().map(move |&t| (t - base) / resolution);
        if !direct {
            let Some(epoch) = self.open.get_mut(&e) else {
                return;
            };
            let room = self
                .config
                .max_buffered()
                .saturating_sub(self.buffered)
                .min(n);
            epoch
                .buffer
                .push(hashes.iter().copied().zip(locals).take(room as usize));
            self.buffered += room;
            count_held(&mut epoch.stats, room, n);
            return;
        }
        let locals: Vec<Tick> = locals.collect();
        let inserted = match self.filter(p) {
            // The points are below the partition's points, the PBF-2's horizon.
            Some(pbf) => pbf.insert_hashes_at(hashes, &locals).map_or(0, |()| n),
            None => 0,
        };
        if let Some(epoch) = self.open.get_mut(&e) {
            epoch.stats.records += inserted;
            if inserted < n {
                *epoch
                    .stats
                    .rejected
                    .entry(RejectReason::BadAllocation)
                    .or_default() += n;
            }
        }
    }

    /// The filter of partition `p`, created with its resolved allocation and dirty tracking on
    /// every level when missing; `None` when the allocation is unknown or cannot build one.
    fn filter(&mut self, p: u64) -> Option<&mut Pbf2> {
        if !self.filters.contains_key(&p) {
            let allocation = self.resolve(p)?.clone();
            let mut pbf = Pbf2::with_layout(
                0,
                self.config.points(),
                &allocation,
                self.config.seed(),
                self.config.layout(),
            )
            .ok()?;
            for level in 0..pbf.levels() {
                if let Some(f) = pbf.level_mut(level) {
                    f.bits_mut().track_dirty();
                }
            }
            self.filters.insert(p, pbf);
        }
        self.filters.get_mut(&p)
    }
}

/// Counts the first `room` of a run's `n` records as taken and the rest as refused for a full
/// buffer.
fn count_held(stats: &mut LocalStats, room: u64, n: u64) {
    stats.records += room;
    if room < n {
        *stats.rejected.entry(RejectReason::BufferFull).or_default() += n - room;
    }
}
