//! Closing a worker's local epochs: the held-back records go in, and each closed epoch becomes
//! one shipment per destination (its records as hashes, or its partition's changed words).

use super::{LocalState, OpenEpoch};
use crate::index::config::Placement;
use crate::index::delta::{shard_words, DeltaWords, EpochRecords, LevelDelta, Shipment};
use crate::index::held::Held;
use crate::index::stats::{LocalStats, RejectReason};
use chronobloom_core::temporal::{Allocation, Pbf2, TemporalFilter, Tick};
use timely::dataflow::operators::Capability;

impl LocalState {
    /// Closes every open epoch before the one holding `head` (all of them when the frontier is
    /// empty), in order, stopping at one whose partition's allocation is not known yet; then
    /// lets the head epoch's records go straight into the filters when it is the earliest open
    /// one.
    pub(in crate::index) fn close_before(
        &mut self,
        head: Option<Tick>,
    ) -> Vec<(Capability<u64>, Vec<Shipment>)> {
        let head_epoch = head.map(|t| self.config.epoch_of(t));
        self.head = head_epoch;
        let mut out = Vec::new();
        while let Some(&e) = self.open.keys().next() {
            if head_epoch.is_some_and(|h| e >= h) {
                break;
            }
            let p = self.config.partition_of_epoch(e);
            if p < self.config.partitions() && self.resolve(p).is_none() {
                break;
            }
            if let Some(epoch) = self.open.remove(&e) {
                out.push(self.flush(e, epoch));
            }
        }
        if let Some(h) = head_epoch.filter(|h| self.open.keys().next() == Some(h)) {
            let p = self.config.partition_of_epoch(h);
            if p < self.config.partitions() && self.resolve(p).is_some() {
                self.drain_buffer(h);
            }
        }
        // No record can reach a partition before the earliest open epoch's (or the head's).
        match self.open.keys().next().copied().or(head_epoch) {
            Some(e) => {
                let p = self.config.partition_of_epoch(e);
                self.filters = self.filters.split_off(&p);
                let keep = p.saturating_sub(1);
                self.resolved = self.resolved.split_off(&keep);
                self.announcements = self.announcements.split_off(&keep);
            }
            None => self.filters.clear(),
        }
        out
    }

    /// Inserts epoch `e`'s held-back records (its partition's allocation is known).
    fn drain_buffer(&mut self, e: u64) {
        let Some(buffer) = self.open.get_mut(&e).map(|o| {
            self.buffered -= std::mem::take(&mut o.waiting);
            std::mem::take(&mut o.buffer)
        }) else {
            return;
        };
        let failed = self.insert_buffered(e, buffer);
        if let Some(epoch) = self.open.get_mut(&e) {
            count_failed(&mut epoch.stats, failed);
        }
    }

    /// Inserts epoch `e`'s held-back records; returns how many found no filter.
    fn insert_buffered(&mut self, e: u64, buffer: Held) -> u64 {
        self.buffered -= buffer.len() as u64;
        if buffer.is_empty() {
            return 0;
        }
        match self.filter(self.config.partition_of_epoch(e)) {
            // Held points are local to the partition, below its points (the PBF-2's horizon).
            Some(pbf) => match pbf.insert_hashes_at(buffer.hashes(), buffer.ticks()) {
                Ok(()) => 0,
                Err(_) => buffer.len() as u64,
            },
            None => buffer.len() as u64,
        }
    }

    /// Inserts the epoch's held-back records, drains the changed words of its partition and
    /// builds one shipment per destination: the epoch's logged records as hashes (the log was
    /// kept while smaller than the partition's words), else the changed words — every one for
    /// every worker when replicated, the levels each worker owns when sharded.
    fn flush(&mut self, e: u64, epoch: OpenEpoch) -> (Capability<u64>, Vec<Shipment>) {
        let OpenEpoch {
            cap,
            buffer,
            mut stats,
            log,
            waiting,
        } = epoch;
        self.buffered -= waiting;
        let failed = self.insert_buffered(e, buffer);
        count_failed(&mut stats, failed);
        let p = self.config.partition_of_epoch(e);
        // A logged epoch's records travel as hashes and the local filter never holds them (it is
        // built when records first go into it); its partition must be one a filter can be built
        // for, and is announced with the allocation that filter would have.
        if let Some(l) = &log {
            self.last_logged = l.len();
        }
        let (log, planned) = match log {
            Some(mut l) => match self.planned(p) {
                Some(a) => {
                    l.dedup_points(self.config.resolution());
                    (Some(l), Some(a))
                }
                None => {
                    count_failed(&mut stats, l.len() as u64);
                    (None, None)
                }
            },
            None => (None, None),
        };
        let sharded = self.config.placement() == Placement::Sharded;
        let mut per_dest: Vec<Vec<LevelDelta>> = vec![Vec::new(); self.peers];
        let mut announce = None;
        let peers = self.peers;
        let allocation = match self.filters.get(&p) {
            Some(pbf) => Some(pbf.allocation()),
            None => planned,
        };
        if let Some(a) = allocation
            .as_ref()
            .filter(|_| self.shipped.is_none_or(|s| s < p))
        {
            self.shipped = Some(p);
            announce = Some((p, a.clone()));
        }
        if let Some(pbf) = self.filters.get_mut(&p) {
            for level in 0..pbf.levels() {
                let Some(f) = pbf.level_mut(level) else {
                    continue;
                };
                // Drained either way, so the next epoch's words are measured from here.
                let changed = f.bits_mut().drain_changed();
                if changed.is_empty() || log.is_some() {
                    continue;
                }
                let words = f.bits().words();
                if sharded {
                    for (dest, v) in per_dest.iter_mut().enumerate() {
                        let owner = self.config.level_owner(level, peers);
                        let range = shard_words(owner, words.len(), dest);
                        if let Some(d) = DeltaWords::encode(&changed, words, range) {
                            v.push(LevelDelta {
                                partition: p,
                                level,
                                words: d,
                            });
                        }
                    }
                } else if let Some(d) = DeltaWords::encode(&changed, words, 0..words.len()) {
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
        let announce_bytes = announce.as_ref().map_or(0, |(_, a): &(u64, Allocation)| {
            8 + 12 * a.shapes().len() as u64
        });
        // Records go to the workers holding a level of the partition: every worker when
        // replicated, the levels' owners when sharded.
        let levels = allocation.as_ref().map_or(0, |a| a.shapes().len() as u32);
        let holds = |dest: usize| {
            !sharded || (0..levels).any(|l| self.config.level_owner(l, peers) == dest)
        };
        // the last holder takes the log itself, the others a copy
        let last_holder = (0..peers).rev().find(|&dest| holds(dest));
        let mut log = log;
        let records_to: Vec<Option<EpochRecords>> = (0..peers)
            .map(|dest| match last_holder {
                Some(last) if dest == last => log.take(),
                _ if holds(dest) => log.clone(),
                _ => None,
            })
            .collect();
        stats.bytes_sent = per_dest
            .iter()
            .zip(&records_to)
            .enumerate()
            .filter(|&(dest, _)| dest != self.me)
            .map(|(_, (v, records))| {
                let records = records.as_ref().map_or(0, EpochRecords::wire_bytes);
                announce_bytes + records + v.iter().map(|d| d.words.wire_bytes()).sum::<u64>()
            })
            .sum();
        stats.records_buffered = self.buffered;
        stats.allocations_refused = std::mem::take(&mut self.refused);
        stats.local_bits = self.filters.values().map(|f| f.memory_bits()).sum();
        let mut stats = Some(stats);
        let shipments = per_dest
            .into_iter()
            .zip(records_to)
            .enumerate()
            .map(|(dest, (deltas, records))| Shipment {
                epoch: e,
                from: self.me as u32,
                dest: dest as u32,
                deltas,
                records,
                announce: announce.clone(),
                local: if dest == self.me { stats.take() } else { None },
            })
            .collect();
        (cap, shipments)
    }

    /// The allocation partition `p`'s filter has or would have ([`Pbf2::planned_allocation`]),
    /// without building it; `None` when the allocation is unknown or cannot build one.
    fn planned(&mut self, p: u64) -> Option<Allocation> {
        if let Some(pbf) = self.filters.get(&p) {
            return Some(pbf.allocation());
        }
        if let Some((_, a)) = self.planned.as_ref().filter(|(q, _)| *q == p) {
            return Some(a.clone());
        }
        let (points, layout) = (self.config.points(), self.config.layout());
        let a = Pbf2::planned_allocation(points, self.resolve(p)?, layout).ok()?;
        self.planned = Some((p, a.clone()));
        Some(a)
    }
}

/// Moves `failed` records from indexed to rejected for a bad allocation.
fn count_failed(stats: &mut LocalStats, failed: u64) {
    if failed > 0 {
        stats.records -= failed;
        *stats
            .rejected
            .entry(RejectReason::BadAllocation)
            .or_default() += failed;
    }
}
