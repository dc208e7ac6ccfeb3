//! What the report needs of the operators' per-epoch statistics, folded as they arrive into
//! running totals: a long stream's report (and the copy in every checkpoint) stays the same size.

use chronobloom::operators::dedup::stats::DedupStats;
use chronobloom::operators::stats::{EpochStats, RejectReason};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Running totals of the dedup and index statistics of every worker and epoch.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Records passed.
    pub passed: u64,
    /// Records dropped as duplicates.
    pub dropped: u64,
    /// Records decided at their timestamp, past the watermark.
    pub late: u64,
    /// Bytes the dedup operators sent other workers.
    pub dedup_bytes: u64,
    /// Bytes the index's local stages sent other workers.
    pub index_bytes: u64,
    /// Records the index refused, by reason.
    pub not_indexed: BTreeMap<RejectReason, u64>,
    /// The most bits of merged index state a worker held.
    pub index_bits: u64,
    /// The latest `(epoch, digest)` of worker 0's merged index.
    pub digest: Option<(u64, u64)>,
    /// The largest total over settled epochs of the bits the workers' dedup filters held.
    peak_dedup_bits: u64,
    /// Epochs not yet settled: bits the workers' dedup filters held at their close, so far.
    open_dedup_bits: BTreeMap<u64, u64>,
}

impl Totals {
    /// Adds one worker's dedup statistics of one epoch.
    pub fn add_dedup(&mut self, s: &DedupStats) {
        self.passed += s.passed;
        self.dropped += s.dropped;
        self.late += s.late;
        self.dedup_bytes += s.bytes_sent;
        *self.open_dedup_bits.entry(s.epoch).or_default() += s.local_bits + s.view_bits;
    }

    /// Adds one worker's index statistics of one epoch.
    pub fn add_index(&mut self, s: &EpochStats) {
        self.index_bytes += s.local.bytes_sent;
        self.index_bits = self.index_bits.max(s.merged_bits);
        for (&reason, &n) in &s.local.rejected {
            *self.not_indexed.entry(reason).or_default() += n;
        }
    }

    /// Adds worker 0's digest of one epoch.
    pub fn add_digest(&mut self, epoch: u64, digest: u64) {
        self.digest = self.digest.max(Some((epoch, digest)));
    }

    /// Folds the epochs before `epoch` into the peak: call it once every worker's statistics of
    /// them are in (the probe has passed their last tick).
    pub fn settle(&mut self, epoch: u64) {
        let later = self.open_dedup_bits.split_off(&epoch);
        let settled = std::mem::replace(&mut self.open_dedup_bits, later);
        self.peak_dedup_bits = settled.into_values().fold(self.peak_dedup_bits, u64::max);
    }

    /// The largest total over epochs of the bits the workers' dedup filters held.
    pub fn peak_dedup_bits(&self) -> u64 {
        self.open_dedup_bits
            .values()
            .copied()
            .fold(self.peak_dedup_bits, u64::max)
    }
}
