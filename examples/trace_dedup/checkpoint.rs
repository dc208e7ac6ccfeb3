//! Checkpoints of the main job (`--checkpoint-dir`, `--checkpoint-every`): what each worker
//! writes at a boundary and how a job finds the checkpoint to resume from.
//!
//! Every worker writes, per checkpoint, its `dedup` and `index` state and a `source` mark (how
//! many records of its share lie before the boundary, and a hash of them); worker 0 also writes
//! the `report` gathered so far. On resume each worker re-reads its share from the start, skips
//! the records before the boundary (checking they are the ones the mark describes, so a changed
//! input is refused) and sends the rest: no record is counted twice or lost.

use crate::cli::Args;
use crate::error::JobError;
use crate::totals::Totals;
use chronobloom::operators::checkpoint::{CheckpointError, CheckpointStore, Header};
use chronobloom::operators::dedup::stats::DedupStats;
use chronobloom::operators::{DedupSnapshot, IndexSnapshot};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use xxhash_rust::xxh3::xxh3_64;

/// The parts every worker writes.
pub const WORKER_PARTS: [&str; 3] = ["dedup", "index", "source"];
/// The part worker 0 writes besides.
pub const REPORT: &str = "report";

/// Where a worker's records before a boundary end: checked when they are skipped on resume.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceMark {
    /// Records of the worker's share before the boundary.
    pub records: u64,
    /// A hash chained over their positions, ticks and key hashes.
    pub hash: u64,
}

impl SourceMark {
    /// Adds one record.
    pub fn add(&mut self, seq: u64, tick: u64, key_hash: u64) {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&self.hash.to_le_bytes());
        bytes[8..16].copy_from_slice(&seq.to_le_bytes());
        bytes[16..24].copy_from_slice(&tick.to_le_bytes());
        bytes[24..].copy_from_slice(&key_hash.to_le_bytes());
        self.hash = xxh3_64(&bytes);
        self.records += 1;
    }
}

/// What worker 0 gathers for the report (and keeps in its checkpoints): of constant size unless
/// the flags ask for something per epoch or per record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// Every worker's dedup and index statistics, folded.
    pub totals: Totals,
    /// Every worker's dedup statistics of every epoch, without the per-shard slices: with
    /// `--plot` only.
    pub epochs: Vec<DedupStats>,
    /// Positions of the passed records: with `--verify` or `--out` only.
    pub passed: Vec<u64>,
    /// How much of the deduplicated capture was written (`--out-pcap`): a restart cuts the file
    /// back to it.
    pub out_pcap: Option<OutMark>,
}

/// The deduplicated capture written up to a boundary: every record before it decided and its
/// bytes written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutMark {
    /// Bytes of the file.
    pub bytes: u64,
    /// Packets written.
    pub packets: u64,
}

/// One worker's state to resume from.
pub struct Restored {
    pub dedup: DedupSnapshot,
    pub index: IndexSnapshot,
    pub mark: SourceMark,
    /// Worker 0 only.
    pub report: Option<Report>,
}

/// The job's checkpoint settings, shared by its workers.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    pub store: CheckpointStore,
    /// Ticks between boundaries (a whole number of epochs).
    pub every: u64,
    /// The configuration's fingerprint: a checkpoint restores only into the same job.
    pub job: u64,
    pub workers: u32,
    /// The boundary to resume from, if any.
    pub resume: Option<u64>,
}

impl Checkpoints {
    /// The settings the flags describe, with the newest complete checkpoint to resume from
    /// (checkpoints that cannot be used are reported on stderr and skipped; one of another job
    /// or worker count is an error). `None` without `--checkpoint-dir`.
    pub fn from_args(
        args: &Args,
        workers: u32,
        epoch: u64,
        every: u64,
    ) -> Result<Option<Self>, JobError> {
        let Some(dir) = &args.checkpoint_dir else {
            return Ok(None);
        };
        let store = CheckpointStore::open(dir)?;
        let job = fingerprint(args);
        let expected = expected_parts(workers);
        let expected: Vec<(&str, u32)> = expected.iter().map(|(p, w)| (*p, *w)).collect();
        let scan = store.newest_complete(job, workers, &expected)?;
        for (b, why) in &scan.skipped {
            eprintln!("trace_dedup: checkpoint at tick {b} skipped: {why}");
        }
        Ok(Some(Checkpoints {
            store,
            every: every.div_ceil(epoch).max(1) * epoch,
            job,
            workers,
            resume: scan.complete,
        }))
    }

    /// The next boundary after `t` (exclusive).
    pub fn next_after(&self, t: u64) -> u64 {
        (t / self.every + 1) * self.every
    }

    /// The last boundary at or before tick `t`.
    pub fn last_at_or_before(&self, t: u64) -> u64 {
        t / self.every * self.every
    }

    /// The header of `worker`'s `part` at `boundary`.
    pub fn header(&self, part: &str, worker: u32, boundary: u64) -> Header {
        Header {
            part: part.into(),
            worker,
            workers: self.workers,
            boundary,
            job: self.job,
        }
    }

    /// Writes one part of `worker`'s checkpoint at `boundary`: `state`, serialized straight into
    /// the file.
    pub fn write<T: Serialize>(
        &self,
        part: &'static str,
        worker: u32,
        boundary: u64,
        state: &T,
    ) -> Result<(), CheckpointError> {
        self.store
            .write_state(&self.header(part, worker, boundary), part, state)
            .map(|_| ())
    }

    /// Removes checkpoints older than the two newest ones every worker has finished writing (the
    /// older of the two is the fallback when the newer proves corrupted).
    pub fn prune(&self) -> Result<(), CheckpointError> {
        let expected = expected_parts(self.workers);
        let expected: Vec<(&str, u32)> = expected.iter().map(|(p, w)| (*p, *w)).collect();
        let kept = self
            .store
            .boundaries()?
            .into_iter()
            .filter(|&b| self.store.all_present(b, &expected))
            .nth(1);
        if let Some(b) = kept {
            self.store.prune_before(b)?;
        }
        Ok(())
    }

    /// Reads worker `me`'s state at the resume boundary.
    pub fn restore(&self, me: u32) -> Result<Option<Restored>, CheckpointError> {
        let Some(b) = self.resume else {
            return Ok(None);
        };
        let read = |part: &str| {
            self.store
                .read(b, part, me, self.workers, self.job)
                .map(|(_, p)| p)
        };
        let dedup = DedupSnapshot::from_bytes(&read("dedup")?)?;
        let index = IndexSnapshot::from_bytes(&read("index")?)?;
        let mark = chronobloom::operators::checkpoint::from_bytes("source", &read("source")?)?;
        let report = if me == 0 {
            Some(chronobloom::operators::checkpoint::from_bytes(
                REPORT,
                &read(REPORT)?,
            )?)
        } else {
            None
        };
        Ok(Some(Restored {
            dedup,
            index,
            mark,
            report,
        }))
    }

    /// The directory of the resume checkpoint, or of the newest complete one, for messages.
    pub fn describe_latest(&self) -> String {
        let expected = expected_parts(self.workers);
        let expected: Vec<(&str, u32)> = expected.iter().map(|(p, w)| (*p, *w)).collect();
        let newest = self.store.boundaries().ok().and_then(|bs| {
            bs.into_iter()
                .find(|&b| self.store.all_present(b, &expected))
        });
        match newest {
            Some(b) => format!("{} (tick {b})", self.store.checkpoint_dir(b).display()),
            None => "none yet".into(),
        }
    }
}

fn expected_parts(workers: u32) -> Vec<(&'static str, u32)> {
    let mut out: Vec<(&str, u32)> = (0..workers)
        .flat_map(|w| WORKER_PARTS.iter().map(move |p| (*p, w)))
        .collect();
    out.push((REPORT, 0));
    out
}

/// A fingerprint of everything that shapes the job's state and report: input, key, window,
/// error rate, slack, mode, epochs, ticks, index, seed and what is collected ("v2": the report
/// part holds running totals since the soak of issue 17; "v1" checkpoints held every epoch's;
/// "v6": the report part holds the deduplicated capture's mark).
fn fingerprint(args: &Args) -> u64 {
    let inputs: Vec<(PathBuf, u64)> = args
        .pcap
        .iter()
        .chain(&args.csv)
        .map(|p| (p.clone(), std::fs::metadata(p).map_or(0, |m| m.len())))
        .collect();
    let text = format!(
        "v6 {inputs:?} {:?} {:?} {} {:?} {:?} {} {:?} {} {:?} {:?} {:?} {:?} {} {} {:?} {} {:?} {:?} {} {} {} {} {} {} {} {}",
        args.synthetic,
        args.synthetic_span,
        args.steady,
        args.key,
        args.window,
        args.fpr,
        args.slack,
        args.exact_edge,
        args.mode,
        args.epoch,
        args.unit,
        args.lateness,
        args.skip_bad,
        args.index_bits,
        args.index_resolution,
        args.index_partitions,
        args.index_placement,
        args.index_layout,
        args.seed,
        args.verify || args.out.is_some(),
        args.plot.is_some(),
        args.digest,
        args.expected_keys,
        args.reader_share,
        args.reader_index_share,
        args.out_pcap.is_some(),
    );
    xxh3_64(text.as_bytes())
}
