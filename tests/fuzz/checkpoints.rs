//! Checkpoint decoding: the file format (header, payload, checksum) and the operators' snapshot
//! payloads, seeded with real checkpoints of a small dataflow.

use super::harness::Outcome;
use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::checkpoint::{decode, encode, Header};
use chronobloom::operators::timely;
use chronobloom::operators::{
    Allocator, AllocatorConfig, AllocatorSnapshot, DedupConfig, DedupMode, DedupSnapshot,
    IndexConfig, IndexSnapshot, Lag, MembershipConfig, MembershipSnapshot, TimedDedup,
    TimedTemporalIndex, TimedWindowMembership,
};
use std::path::Path;
use std::sync::OnceLock;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::ProbeHandle;

fn configs() -> (DedupConfig, IndexConfig) {
    let dedup = DedupConfig::builder()
        .window(40)
        .epoch_len(10)
        .shards(2)
        .mode(DedupMode::ByKey)
        .build()
        .expect("valid dedup configuration");
    let index = IndexConfig::builder()
        .epoch_len(10)
        .partition_len(100)
        .partitions(2)
        .bits(4_096)
        .digest(true)
        .build()
        .expect("valid index configuration");
    (dedup, index)
}

/// Restores the snapshots into a dataflow of the seeds' configuration (refused is fine) and, when
/// both are taken, runs records through it: a restored state must work or be refused, never
/// panic.
fn restore(dedup: Option<DedupSnapshot>, index: Option<IndexSnapshot>) -> Outcome {
    timely::execute_directly(move |worker| {
        let (dc, ic) = configs();
        let probe = ProbeHandle::new();
        let built = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, recs) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, _)>>();
            let d = recs.clone().dedup_timed_resumable(&dc, |k: &u64| *k, dedup);
            let i = recs.temporal_index_timed_resumable(queries, &ic, index);
            match (d, i) {
                (Ok((d, _)), Ok((i, _))) => {
                    d.stats.probe_with(&probe);
                    i.stats.probe_with(&probe);
                    i.answers.probe_with(&probe);
                    Some((r_in, q_in))
                }
                _ => None,
            }
        });
        let Some((mut r_in, mut q_in)) = built else {
            return Outcome::Rejected;
        };
        r_in.advance_to(30);
        q_in.advance_to(30);
        for t in 30..60u64 {
            r_in.send((t, t % 5));
        }
        let range = TimeRange::new(0, 59).expect("valid range");
        q_in.advance_to(60);
        q_in.send((3u64, range));
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
        Outcome::Accepted
    })
}

/// `(dedup snapshot, index snapshot)` payloads of a one-worker dataflow fed a few records.
fn payloads() -> &'static (Vec<u8>, Vec<u8>) {
    static P: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    P.get_or_init(|| {
        timely::execute_directly(|worker| {
            let (dedup, index) = configs();
            let probe = ProbeHandle::new();
            let (mut r_in, mut q_in, handles) = worker.dataflow::<u64, _, _>(|scope| {
                let (r_in, recs) = scope.new_input::<Vec<(u64, u64)>>();
                let (q_in, queries) = scope.new_input::<Vec<(u64, _)>>();
                let (d, dh) = recs
                    .clone()
                    .dedup_timed_resumable(&dedup, |k: &u64| *k, None)
                    .expect("fresh");
                let (i, ih) = recs
                    .temporal_index_timed_resumable(queries, &index, None)
                    .expect("fresh");
                d.stats.probe_with(&probe);
                i.stats.probe_with(&probe);
                (r_in, q_in, (dh, ih))
            });
            for t in 0..30u64 {
                r_in.send((t, t % 7));
            }
            r_in.advance_to(30);
            q_in.advance_to(30);
            worker.step_while(|| probe.less_than(&30));
            let d = handles.0.snapshot(30).and_then(|s| s.to_bytes());
            let i = handles.1.snapshot_bytes(30);
            (d.expect("dedup snapshot"), i.expect("index snapshot"))
        })
    })
}

/// Valid checkpoint files (a snapshot payload each).
pub fn files() -> Vec<Vec<u8>> {
    let (d, i) = payloads();
    [("dedup", d), ("index", i)]
        .into_iter()
        .map(|(part, payload)| {
            let h = Header {
                part: part.into(),
                worker: 0,
                workers: 1,
                boundary: 30,
                job: 7,
            };
            encode(&h, payload).expect("valid header")
        })
        .collect()
}

/// Valid dedup snapshot payloads.
pub fn dedup_payloads() -> Vec<Vec<u8>> {
    vec![payloads().0.clone()]
}

/// Valid index snapshot payloads.
pub fn index_payloads() -> Vec<Vec<u8>> {
    vec![payloads().1.clone()]
}

/// A checkpoint file: decoded and verified, then its payload decoded as its part says.
pub fn file(bytes: &[u8]) -> Outcome {
    let Ok((header, payload)) = decode(Path::new("fuzz.ckpt"), bytes) else {
        return Outcome::Rejected;
    };
    match header.part.as_str() {
        "dedup" => dedup(payload),
        "index" => index(payload),
        _ => Outcome::Accepted,
    }
}

/// A dedup snapshot payload, restored and run when it decodes.
pub fn dedup(bytes: &[u8]) -> Outcome {
    match DedupSnapshot::from_bytes(bytes) {
        Ok(s) => restore(Some(s), None),
        Err(_) => Outcome::Rejected,
    }
}

/// An index snapshot payload, restored and run when it decodes.
pub fn index(bytes: &[u8]) -> Outcome {
    match IndexSnapshot::from_bytes(bytes) {
        Ok(s) => restore(None, Some(s)),
        Err(_) => Outcome::Rejected,
    }
}

/// The allocator over the index configuration of the seeds, restored from `restore` (or fresh),
/// fed records from `from` with a query per ten ticks, up to `stop` (with its snapshot payload
/// there) or tick 200; `None` when the snapshot is refused.
fn allocator_run(
    restore: Option<AllocatorSnapshot>,
    from: u64,
    stop: Option<u64>,
) -> Option<Option<Vec<u8>>> {
    timely::execute_directly(move |worker| {
        let (_, index) = configs();
        let probe = ProbeHandle::new();
        let built = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, recs) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let allocator = AllocatorConfig::new(Lag::Simple).with_bitmaps(8);
            let (streams, handle) = recs
                .allocator_resumable(queries, &index, &allocator, restore)
                .ok()?;
            streams.allocations.probe_with(&probe);
            streams.sketches.probe_with(&probe);
            Some((r_in, q_in, handle))
        });
        let (mut r_in, mut q_in, handle) = built?;
        let to = stop.unwrap_or(200);
        r_in.advance_to(from);
        q_in.advance_to(from);
        for t in from..to {
            r_in.advance_to(t);
            q_in.advance_to(t);
            r_in.send(t % 13);
            if t % 10 == 0 {
                q_in.send((
                    t % 7,
                    TimeRange::new(t.saturating_sub(20), t).expect("valid range"),
                ));
            }
        }
        r_in.advance_to(to);
        q_in.advance_to(to);
        worker.step_while(|| probe.less_than(&to));
        let bytes = stop.and_then(|s| handle.snapshot(s).and_then(|x| x.to_bytes()).ok());
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
        Some(bytes)
    })
}

/// Valid allocator snapshot payloads (partition 0 open at tick 30, then partition 1 at 130).
pub fn allocator_payloads() -> Vec<Vec<u8>> {
    [30, 130]
        .into_iter()
        .map(|stop| {
            allocator_run(None, 0, Some(stop))
                .flatten()
                .expect("allocator snapshot")
        })
        .collect()
}

/// An allocator snapshot payload, restored and run on when it decodes.
pub fn allocator(bytes: &[u8]) -> Outcome {
    let Ok(snapshot) = AllocatorSnapshot::from_bytes(bytes) else {
        return Outcome::Rejected;
    };
    let from = snapshot.boundary.min(200);
    match allocator_run(Some(snapshot), from, None) {
        Some(_) => Outcome::Accepted,
        None => Outcome::Rejected,
    }
}

/// The membership operator of a 40-tick window, restored from `restore` (or fresh), fed inserts
/// and queries from `from` to `stop` (with its snapshot payload there) or tick 120; `None` when
/// the snapshot is refused.
fn membership_run(
    restore: Option<MembershipSnapshot>,
    from: u64,
    stop: Option<u64>,
) -> Option<Option<Vec<u8>>> {
    timely::execute_directly(move |worker| {
        let config = MembershipConfig::builder()
            .window(40)
            .epoch_len(10)
            .build()
            .expect("valid membership configuration");
        let probe = ProbeHandle::new();
        let built = worker.dataflow::<u64, _, _>(|scope| {
            let (i_in, inserts) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, u64)>>();
            let (out, handle) = inserts
                .window_membership_resumable(queries, &config, restore)
                .ok()?;
            out.answers.probe_with(&probe);
            out.stats.probe_with(&probe);
            Some((i_in, q_in, handle))
        });
        let (mut i_in, mut q_in, handle) = built?;
        let to = stop.unwrap_or(120);
        i_in.advance_to(from);
        q_in.advance_to(from);
        for t in from..to {
            i_in.send((t, t % 11));
            q_in.send((t, t % 17));
        }
        i_in.advance_to(to);
        q_in.advance_to(to);
        worker.step_while(|| probe.less_than(&to));
        let bytes = stop.and_then(|s| handle.snapshot(s).and_then(|x| x.to_bytes()).ok());
        drop((i_in, q_in));
        worker.step_while(|| !probe.done());
        Some(bytes)
    })
}

/// Valid membership snapshot payloads (at ticks 30 and 70).
pub fn membership_payloads() -> Vec<Vec<u8>> {
    [30, 70]
        .into_iter()
        .map(|stop| {
            membership_run(None, 0, Some(stop))
                .flatten()
                .expect("membership snapshot")
        })
        .collect()
}

/// A membership snapshot payload, restored and run on when it decodes.
pub fn membership(bytes: &[u8]) -> Outcome {
    let Ok(snapshot) = MembershipSnapshot::from_bytes(bytes) else {
        return Outcome::Rejected;
    };
    let from = snapshot.boundary.min(120);
    match membership_run(Some(snapshot), from, None) {
        Some(_) => Outcome::Accepted,
        None => Outcome::Rejected,
    }
}
