//! Checkpoints of the dedup and index operators: a run stopped at a boundary and resumed from
//! its snapshots (through the checkpoint file format) passes exactly the records, and reaches
//! exactly the per-epoch digests, of an uninterrupted run — for 1 and 2 workers, both dedup modes
//! and both index placements, compact and exact-edge dedup state. Snapshots that do not fit are
//! refused; a snapshot taken before the probe has passed the boundary is refused.
#![allow(clippy::unwrap_used)]

use chronobloom::operators::checkpoint::{decode, encode, CheckpointStore, Header};
use chronobloom::operators::dedup::DedupSnapshot;
use chronobloom::operators::timely;
use chronobloom::operators::{
    DedupConfig, DedupMode, IndexConfig, IndexSnapshot, Placement, TimedDedup, TimedTemporalIndex,
};
use chronobloom::synth::splitmix;
use std::path::Path;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const EPOCH: u64 = 10;
const BOUNDARY: u64 = 1_500;

fn records(n: u64) -> Vec<(u64, u64)> {
    let (mut t, mut state) = (0, 11);
    (0..n)
        .map(|_| {
            let r = splitmix(&mut state);
            t += u64::from(r.is_multiple_of(4));
            (t, (r >> 8) % 400)
        })
        .collect()
}

/// The dedup mode, the index placement, and whether the dedup keeps exact edges (tick filters).
type Variant = (DedupMode, Placement, bool);

fn configs((mode, placement, exact): Variant) -> (DedupConfig, IndexConfig) {
    let dedup = DedupConfig::builder()
        .window(120)
        .epoch_len(EPOCH)
        .shards(8)
        .mode(mode)
        .exact_edge(exact)
        .expected_items_per_window(2_000)
        .seed(5)
        .build()
        .unwrap();
    let index = IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(1_000)
        .partitions(8)
        .bits(40_000)
        .placement(placement)
        .digest(true)
        .seed(5)
        .build()
        .unwrap();
    (dedup, index)
}

/// Per worker: the dedup and index snapshots, as checkpoint file bytes.
type Saved = Vec<(Vec<u8>, Vec<u8>)>;

/// What a run produced: passed `(tick, key)` sorted, digests `(worker, epoch, digest)` sorted,
/// and the snapshots taken at `stop` when it is given.
type Outcome = (Vec<(u64, u64)>, Vec<(u32, u64, u64)>, Saved);

/// Runs the records with ticks in `[from, stop)` (all from `from` on when `stop` is `None`),
/// restoring `restore` first and snapshotting at `stop`.
fn run(
    workers: usize,
    variant: Variant,
    from: u64,
    stop: Option<u64>,
    restore: Option<Saved>,
) -> Outcome {
    let input = Arc::new(records(12_000));
    let passed = Arc::new(Mutex::new(Vec::new()));
    let digests = Arc::new(Mutex::new(Vec::new()));
    let saved = Arc::new(Mutex::new(vec![(Vec::new(), Vec::new()); workers]));
    let (p, d, s) = (passed.clone(), digests.clone(), saved.clone());
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let (dedup_cfg, index_cfg) = configs(variant);
        let restored = restore.as_ref().map(|r| {
            let (dh, dp) = decode(Path::new("dedup"), &r[me].0).unwrap();
            let (ih, ip) = decode(Path::new("index"), &r[me].1).unwrap();
            assert_eq!((dh.boundary, ih.boundary), (from, from));
            (
                DedupSnapshot::from_bytes(dp).unwrap(),
                IndexSnapshot::from_bytes(ip).unwrap(),
            )
        });
        let (dedup_r, index_r) = match restored {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        let probe = ProbeHandle::new();
        let (p, d) = (p.clone(), d.clone());
        let (mut r_in, mut q_in, dedup_h, index_h) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, recs) = scope.new_input::<Vec<(u64, u64)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, _)>>();
            let (dedup, dh) = recs
                .clone()
                .dedup_timed_resumable(&dedup_cfg, |k: &u64| *k, dedup_r)
                .unwrap();
            let (index, ih) = recs
                .temporal_index_timed_resumable(queries, &index_cfg, index_r)
                .unwrap();
            dedup
                .passed
                .inspect(move |&(t, k)| p.lock().unwrap().push((t, k)))
                .probe_with(&probe);
            index
                .digests
                .inspect(move |g| d.lock().unwrap().push((g.worker, g.epoch, g.digest)))
                .probe_with(&probe);
            dedup.stats.probe_with(&probe);
            (r_in, q_in, dh, ih)
        });
        r_in.advance_to(from);
        q_in.advance_to(from);
        for (i, &(t, k)) in input.iter().enumerate() {
            if t < from || stop.is_some_and(|s| t >= s) || i % peers != me {
                continue;
            }
            let e = t / EPOCH * EPOCH;
            if e > *r_in.time() {
                r_in.advance_to(e);
                q_in.advance_to(e);
                worker.step();
            }
            r_in.send((t, k));
        }
        if let Some(b) = stop {
            r_in.advance_to(b);
            q_in.advance_to(b);
            worker.step_while(|| probe.less_than(&b));
            // `Local`: the peers' view deltas of the last epoch arrive at the boundary
            while dedup_h.ready(b).is_err() {
                worker.step();
            }
            let header = |part: &str| Header {
                part: part.into(),
                worker: me as u32,
                workers: peers as u32,
                boundary: b,
                job: 1,
            };
            let dedup = dedup_h.snapshot(b).unwrap().to_bytes().unwrap();
            let index = index_h.snapshot(b).unwrap().to_bytes().unwrap();
            // serialized straight from the running state: the same bytes
            assert_eq!(index_h.snapshot_bytes(b).unwrap(), index);
            // and straight into the file: the same file
            let dir = tempfile::tempdir().unwrap();
            let store = CheckpointStore::open(dir.path()).unwrap();
            for (part, payload) in [("dedup", &dedup), ("index", &index)] {
                let path = match part {
                    "dedup" => dedup_h.write(&store, &header(part)),
                    _ => index_h.write(&store, &header(part)),
                }
                .unwrap();
                let file = std::fs::read(path).unwrap();
                assert_eq!(file, encode(&header(part), payload).unwrap(), "{part}");
            }
            s.lock().unwrap()[me] = (
                encode(&header("dedup"), &dedup).unwrap(),
                encode(&header("index"), &index).unwrap(),
            );
        }
    })
    .unwrap();
    let mut passed = Arc::try_unwrap(passed).unwrap().into_inner().unwrap();
    let mut digests = Arc::try_unwrap(digests).unwrap().into_inner().unwrap();
    passed.sort_unstable();
    digests.sort_unstable();
    let saved = Arc::try_unwrap(saved).unwrap().into_inner().unwrap();
    (passed, digests, saved)
}

fn check_resume(workers: usize, variant: Variant) {
    let (all, all_digests, _) = run(workers, variant, 0, None, None);
    let (before, before_digests, saved) = run(workers, variant, 0, Some(BOUNDARY), None);
    let (after, after_digests, _) = run(workers, variant, BOUNDARY, None, Some(saved));
    let mut resumed = before.clone();
    resumed.extend(after.iter().copied());
    resumed.sort_unstable();
    assert!(!before.is_empty() && !after.is_empty());
    assert_eq!(
        resumed, all,
        "{workers} workers, {variant:?}: passed records"
    );
    let mut digests = before_digests;
    digests.extend(after_digests);
    digests.sort_unstable();
    assert!(digests.len() > 100);
    assert_eq!(digests, all_digests, "{workers} workers: digests");
}

#[test]
fn resumed_runs_equal_uninterrupted_runs() {
    for workers in [1, 2] {
        check_resume(workers, (DedupMode::ByKey, Placement::Sharded, false));
        check_resume(workers, (DedupMode::Local, Placement::Replicated, false));
        // the exact-edge tick filters are checkpointed too
        check_resume(workers, (DedupMode::ByKey, Placement::Sharded, true));
        check_resume(workers, (DedupMode::Local, Placement::Replicated, true));
    }
}

#[test]
fn a_snapshot_of_another_worker_count_or_shape_is_refused() {
    let (_, _, saved) = run(
        2,
        (DedupMode::Local, Placement::Sharded, false),
        0,
        Some(BOUNDARY),
        None,
    );
    // the Local view exists only with several workers: one worker refuses a 2-worker snapshot
    let caught = std::panic::catch_unwind(|| {
        run(
            1,
            (DedupMode::Local, Placement::Sharded, false),
            BOUNDARY,
            None,
            Some(saved),
        )
    });
    assert!(caught.is_err());
    let (_, ip) = decode(
        Path::new("i"),
        &run(
            1,
            (DedupMode::ByKey, Placement::Sharded, false),
            0,
            Some(BOUNDARY),
            None,
        )
        .2[0]
            .1,
    )
    .map(|(h, p)| (h, p.to_vec()))
    .unwrap();
    let snap = IndexSnapshot::from_bytes(&ip).unwrap();
    assert_eq!(snap.boundary, BOUNDARY);
    // a payload cut short does not decode
    assert!(IndexSnapshot::from_bytes(&ip[..ip.len() - 3]).is_err());
    assert!(DedupSnapshot::from_bytes(&ip).is_err());
}
