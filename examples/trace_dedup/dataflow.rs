//! The dataflow: each worker streams its share of the input into the dedup operator and the
//! temporal index as `(tick, record)` records on epoch timestamps (the frontier is the
//! watermark); what worker 0 needs for the report (stats, digests, answers, each worker's tally,
//! and with `--verify`/`--out` the passed records) is exchanged to it.

use crate::advance::Advance;
use crate::bundle::Bundle;
use crate::checkpoint::{Checkpoints, Report, Restored, SourceMark, REPORT};
use crate::error::JobError;
use crate::gather;
use crate::inflight::InFlight;
use crate::interrupt;
use crate::pcap_out::PcapOut;
use crate::source::{Mine, Plan};
use crate::travel::{flush, send_bundle, send_bundles, JobRecord, Local, Sent, BATCH, ROUTE_BYTES};
use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{Tick, TimeRange};
use chronobloom::operators::checkpoint::CheckpointError;
use chronobloom::operators::dedup::stats::DedupStats;
use chronobloom::operators::timely;
use chronobloom::operators::{
    DedupCheckpoint, DedupConfig, DedupMode, IndexCheckpoint, IndexConfig, TimedDedup,
    TimedTemporalIndex,
};
use chronobloom::trace::FlowKey;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::operator::empty;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Concatenate, Input, Probe};
use timely::dataflow::ProbeHandle;

/// What the job needs besides the input plan.
pub struct Job {
    pub plan: Plan,
    pub queries: Arc<Vec<(FlowKey, TimeRange)>>,
    pub dedup: DedupConfig,
    pub index: IndexConfig,
    /// Collect the passed records' positions on worker 0 (for `--verify` and `--out`).
    pub collect_passed: bool,
    /// Where worker 0, the sole reader of a capture, writes the passed records' frames as the
    /// job runs (`--out-pcap`).
    pub out_pcap: Option<PathBuf>,
    /// Keep every epoch's dedup statistics on worker 0 (for `--plot`).
    pub collect_epochs: bool,
    pub progress: bool,
    /// Epochs a reader may run ahead of the dataflow's output.
    pub in_flight: u64,
    /// Records a reader may have read in the epochs not yet through the dataflow.
    pub in_flight_records: u64,
    /// Checkpoint settings (`--checkpoint-dir`).
    pub checkpoints: Option<Checkpoints>,
    /// Records per second per process (0: unpaced).
    pub rate: u64,
}

/// A worker's counts, sent to worker 0 when its input ends.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct WorkerTally {
    /// Records the worker read and sent into the dataflow.
    pub records: u64,
    pub late: u64,
    pub bad: u64,
    pub not_ip: u64,
    /// Bytes of records the worker's reader sent to other workers (a single capture's records,
    /// routed to their keys' owners).
    pub routed_bytes: u64,
    /// Canonical key bytes plus 8 for the tick, summed over the records read: the raw records.
    pub raw_bytes: u64,
    /// Whether an interrupt stopped the worker's reader before the end of its input.
    pub interrupted: bool,
}

/// What worker 0 gathered; other workers return an empty one (or their error).
#[derive(Default)]
pub struct Gathered {
    pub is_leader: bool,
    pub workers: usize,
    /// What a checkpoint keeps of it.
    pub report: Report,
    /// (query position, present, probes).
    pub answers: Vec<(u64, bool, u64)>,
    pub tallies: Vec<WorkerTally>,
    /// The largest tick a worker read.
    pub last_tick: u64,
    pub seconds: f64,
    /// The error that stopped this worker's reader, if any.
    pub error: Option<String>,
    /// Positions of passed records not yet taken by the `--out-pcap` writer.
    pub fresh: Vec<u64>,
    /// Packets the `--out-pcap` writer wrote.
    pub out_pcap_packets: Option<u64>,
}

/// Records a reader sends before it moves its inputs on to a later epoch ([`Advance`]): a dense
/// input moves every epoch, a sparse one every few dozen or hundred.
const ADVANCE_RECORDS: u64 = 4 * BATCH as u64;

/// Epochs a reader's records may span before it moves its inputs on ([`Advance`]). The operators
/// stamp an epoch's outputs with the least timestamp of its records, so the epochs of one move
/// cost the progress tracking of one time, not one each (`data/real.pcap`, 17 records a second:
/// 420 M instructions on one worker and 720 M on two with a time per epoch; 358 M and 518 M at 4
/// epochs a move, 320 M and 429 M at 16). But a time then stands for every epoch of its move,
/// and stages that wait for an epoch's last tick chain them ([`span_reach`]): a reader that waits
/// for the dataflow must not wait for more than that reach behind it, which bounds how few epochs
/// it may run ahead: 9 at 4 with several readers; a sole reader goes by its own recent moves
/// ([`ADVANCE_EPOCHS_SOLE`]).
const ADVANCE_EPOCHS: u64 = 4;

/// [`ADVANCE_EPOCHS`] for a sole reader (one worker, or one capture read by worker 0), which knows
/// how many epochs the records of each of its recent times spanned and waits for the dataflow by
/// the widest ([`Advance::widest_recent`]): a dense capture moves every epoch and reaches
/// nothing, and a move over 64 epochs holds at most [`ADVANCE_RECORDS`] records, so the 189
/// epochs it reaches hold about 3 · [`ADVANCE_RECORDS`]. `data/real.pcap` on one worker / two:
/// 262 / 384 M instructions at 4 epochs a move, 243 / 326 M at 16, 235 / 317 M at 64, and 257 /
/// 357 M at 256 (a move's burst of epochs then costs more than the rounds it saves).
const ADVANCE_EPOCHS_SOLE: u64 = 64;

/// How far past the epochs of a time the dataflow may need every reader to be before that time's
/// outputs are complete, when a time's records span at most `span` epochs: the local index and
/// the dedup close them once the input passes their last; the merge of an epoch waits for every
/// shipment stamped up to its last tick (those of one more span), and the digest of an epoch for
/// every merge stamped up to its last tick (one more). With several readers any of them may have
/// moved [`ADVANCE_EPOCHS`] at once; a sole reader knows its own moves (a dense capture's are an
/// epoch each: no reach, and `--in-flight-records` bounds its buffers as it says).
fn span_reach(span: u64) -> u64 {
    3 * span.saturating_sub(1)
}

/// Wall-clock time after which a reader moves its inputs on to a later epoch however few records
/// it sent ([`Advance`]): a paced or live input's epochs close as they end.
const ADVANCE_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs the job on this process's workers; `timely_args` are `-w`/`-n`/`-p`/`-h`.
pub fn run(job: Job, timely_args: Vec<String>) -> Result<Vec<Gathered>, String> {
    if job.collect_passed || job.out_pcap.is_some() {
        run_with::<(u64, KeyHash)>(job, timely_args)
    } else {
        run_with::<KeyHash>(job, timely_args)
    }
}

fn run_with<D: JobRecord>(job: Job, timely_args: Vec<String>) -> Result<Vec<Gathered>, String> {
    let restored = Arc::new(Mutex::new(restore_all(&job, &timely_args)?));
    // workers `p · threads ..` are process `p`'s
    let threads = crate::cli::check_timely(&timely_args)
        .map_err(|e| e.to_string())?
        .threads;
    let job = Arc::new(job);
    let guards = crate::cluster::execute(timely_args, move |worker| {
        crate::peers::started();
        let job = Arc::clone(&job);
        let (me, peers) = (worker.index(), worker.peers());
        let restored = restored.lock().ok().and_then(|mut r| r.remove(&me));
        let resume_at = job.checkpoints.as_ref().and_then(|c| c.resume).unwrap_or(0);
        let (dedup_r, index_r, mut expected_mark, report) = match restored {
            Some(r) => (Some(r.dedup), Some(r.index), Some(r.mark), r.report),
            None => (None, None, None, None),
        };
        let out = Rc::new(RefCell::new(Gathered {
            is_leader: me == 0,
            workers: peers,
            report: report.unwrap_or_default(),
            ..Gathered::default()
        }));
        let mut error = None;
        let probe = ProbeHandle::new();
        let tally_probe = ProbeHandle::new();
        // A single capture's records, and in `bykey` every record, go to the worker owning their
        // key from the reader, so the dedup operator's own routing keeps them all in place (the
        // synthetic trace's are generated there).
        let route = peers > 1
            && !job.plan.generated_by_owner()
            && (job.plan.single_reader() || job.dedup.mode() == DedupMode::ByKey);
        let seed = job.dedup.seed();
        // Each shard's owner, by which a routed record's shard names its worker.
        let owners: Vec<u64> = (0..job.dedup.shards())
            .map(|s| job.dedup.owner_of_shard(s, peers) as u64)
            .collect();
        let (mut r_in, mut x_in, mut q_in, mut t_in, handles) =
            worker.dataflow::<u64, _, _>(|scope| {
                // Records arrive as their key's digest, computed once by their reader (which
                // routes by it); records for other workers travel in bundles for the worker
                // owning their keys, with their tick as an offset from their timestamp (the
                // reader's input time).
                let (r_in, kept) = scope.new_input::<Vec<(Tick, Local)>>();
                // Every input takes part in the progress round of every move, so the routed
                // records' input exists only where a reader routes, and the queries' only when
                // there are some (they are sent when the input ends).
                let (x_in, records) = if route {
                    let (x_in, sent) = scope.new_input::<Vec<Sent<D>>>();
                    (Some(x_in), landed(kept, sent, seed))
                } else {
                    (None, kept)
                };
                let (q_in, queries) = if job.queries.is_empty() {
                    (None, empty(scope))
                } else {
                    let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
                    (Some(q_in), resolve(queries, &job.queries))
                };
                // Tallies are sent when the input ends: their input stays at its first time,
                // watched by a probe of its own.
                let (t_in, tallies) = scope.new_input::<Vec<WorkerTally>>();
                let key = |d: &Local| *d;
                let keyed = records.clone();
                // A snapshot that does not fit is reported and the dataflow built fresh, so every
                // worker still builds the same dataflow; nothing is sent then.
                let (dedup, dedup_h) = match records
                    .clone()
                    .dedup_timed_resumable(&job.dedup, key, dedup_r)
                {
                    Ok(x) => x,
                    Err(e) => {
                        error = Some(e.to_string());
                        records
                            .clone()
                            .dedup_timed_resumable(&job.dedup, key, None)
                            .expect("fresh")
                    }
                };
                let (index, index_h) = match keyed.clone().temporal_index_timed_resumable(
                    queries.clone(),
                    &job.index,
                    index_r,
                ) {
                    Ok(x) => x,
                    Err(e) => {
                        error = Some(e.to_string());
                        keyed
                            .temporal_index_timed_resumable(queries, &job.index, None)
                            .expect("fresh")
                    }
                };
                let o = |out: &Rc<RefCell<Gathered>>| Rc::clone(out);
                let (o1, o2, o3, o4, o5, o6) =
                    (o(&out), o(&out), o(&out), o(&out), o(&out), o(&out));
                let collect_epochs = job.collect_epochs;
                let mut ends = vec![
                    gather::to_leader(dedup.stats, "DedupStats", move |s| {
                        let r = &mut o1.borrow_mut().report;
                        r.totals.add_dedup(&s);
                        if collect_epochs {
                            r.epochs.push(compact_dedup(&s));
                        }
                    }),
                    gather::to_leader(index.stats, "IndexStats", move |s| {
                        o2.borrow_mut().report.totals.add_index(&s)
                    }),
                    gather::in_place(index.digests, "Digests", move |d| {
                        if d.worker == 0 {
                            o3.borrow_mut().report.totals.add_digest(d.epoch, d.digest);
                        }
                    }),
                    gather::to_leader(index.answers, "Answers", move |a| {
                        o4.borrow_mut().answers.push((a.key.0, a.present, a.probes))
                    }),
                ];
                gather::to_leader(tallies, "Tallies", move |t| o6.borrow_mut().tallies.push(t))
                    .probe_with(&tally_probe);
                // the passed records' positions travel only when asked for (the dedup's stats
                // stand for its progress otherwise)
                let (keep, fresh) = (job.collect_passed, job.out_pcap.is_some());
                if keep || fresh {
                    let seqs = dedup.passed.map(|(_, d)| d.seq);
                    ends.push(gather::to_leader(seqs, "Passed", move |seq| {
                        let mut o = o5.borrow_mut();
                        if keep {
                            o.report.passed.push(seq);
                        }
                        if fresh {
                            o.fresh.push(seq);
                        }
                    }));
                }
                scope.concatenate(ends).probe_with(&probe);
                (r_in, x_in, q_in, t_in, (dedup_h, index_h))
            });

        let epoch = job.dedup.epoch_len();
        let bar = progress_bar(job.progress && me == 0);
        let start = Instant::now();
        // This worker's records: all it reads, and of the synthetic trace the flows of the keys
        // it owns (generated here, so none travels).
        let mine: Mine = {
            let dedup = job.dedup.clone();
            Arc::new(move |k: &FlowKey| dedup.worker_of(KeyHash::of(k, seed), peers) == me)
        };
        let mut reader = job.plan.reader(me, peers, Some(mine));
        let mut tally = WorkerTally::default();
        let mut last_tick = 0;
        // a sole reader knows every move it must not wait behind (see `span_reach`)
        let sole_reader = peers == 1 || job.plan.single_reader();
        let mut advance = Advance::new(
            resume_at / epoch,
            epoch,
            ADVANCE_RECORDS,
            if sole_reader {
                ADVANCE_EPOCHS_SOLE
            } else {
                ADVANCE_EPOCHS
            },
            ADVANCE_WAIT,
        );
        r_in.advance_to(resume_at);
        x_in.iter_mut().for_each(|x| x.advance_to(resume_at));
        q_in.iter_mut().for_each(|q| q.advance_to(resume_at));
        t_in.advance_to(resume_at);
        let ckpt = job.checkpoints.as_ref();
        let barrier = ckpt.map(|checkpoints| Barrier {
            checkpoints,
            probe: &probe,
            handles: &handles,
            out: &out,
            epoch,
        });
        let mut next_ckpt = ckpt.map(|c| c.next_after(resume_at));
        let mut mark = SourceMark::default();
        let pace = Pace::new(job.rate, peers);
        let mut kept = Vec::with_capacity(BATCH);
        let mut sent: Vec<Sent<D>> = (0..peers)
            .map(|w| Bundle::with_capacity(w as u32, 0, 0))
            .collect();
        let mut ahead = InFlight::new(job.in_flight, job.in_flight_records);
        // the deduplicated capture: new, or cut back to a checkpoint's mark
        let writes = job.out_pcap.as_deref().filter(|_| me == 0);
        let mut pcap_out = writes.and_then(|path| {
            let resumed = out.borrow().report.out_pcap;
            let opened = match resumed {
                Some(m) => PcapOut::resume(path, m),
                None => PcapOut::create(path),
            };
            opened.map_err(|e| error = Some(e.to_string())).ok()
        });
        let release = |o: &mut PcapOut| release_decided(o, &out, &probe);
        while let Some(rec) = reader.next_hashed(seed) {
            if error.is_some() {
                break;
            }
            if interrupt::requested() {
                tally.interrupted = true;
                break;
            }
            let rec = match rec {
                Ok(r) => r,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            };
            let (raw, digest) = (rec.raw_bytes, rec.digest);
            let shard = job.dedup.shard_of(digest);
            let owner = owners.get(shard as usize).map_or(me, |&o| o as usize);
            let routed = route && owner != me;
            tally.raw_bytes += raw;
            if routed {
                tally.routed_bytes += ROUTE_BYTES + D::WIRE_BYTES;
            }
            tally.records += 1;
            last_tick = rec.tick;
            if ckpt.is_some() {
                if rec.tick >= resume_at {
                    // the first record after the boundary: were the skipped ones the same?
                    if let Some(m) = expected_mark.take().filter(|&m| m != mark) {
                        error = Some(changed_input(m, mark));
                        break;
                    }
                }
                if rec.tick < resume_at {
                    // before the checkpoint: in the restored state already
                    mark.add(rec.seq, rec.tick, digest.lo);
                    continue;
                }
            }
            // a checkpoint boundary needs the inputs at it
            let due = |t: Tick| next_ckpt.is_some_and(|b| t >= b);
            if let Some(e) = advance.check(rec.tick, due) {
                let t = e * epoch;
                flush(&mut kept, &mut r_in);
                if let Some(x) = x_in.as_mut() {
                    tally.routed_bytes += send_bundles(&mut sent, x);
                }
                // A checkpoint boundary passed: the inputs stop at the last one, `b`, first (this
                // record is the reader's first at or past the boundary due, so every record it
                // sent lies before `b`); the barrier and the parts are at `b`, the same for every
                // reader whose records reach it, whatever epoch its next record is in (a reader
                // whose records jump past several boundaries takes only the last).
                // with checkpoints the tallies' input moves too: its frontier tells a worker
                // whose input has ended where the readers still going are (see below)
                let mut advance_inputs = |time: Tick| {
                    r_in.advance_to(time);
                    x_in.iter_mut().for_each(|x| x.advance_to(time));
                    q_in.iter_mut().for_each(|q| q.advance_to(time));
                    if ckpt.is_some() {
                        t_in.advance_to(time);
                    }
                };
                if let Some(at) = barrier
                    .as_ref()
                    .filter(|_| next_ckpt.is_some_and(|b| t >= b))
                {
                    let b = at.checkpoints.last_at_or_before(t);
                    advance_inputs(b);
                    if let Err(e) = at.write_parts(worker, mark, b, pcap_out.as_mut()) {
                        error = Some(e.to_string());
                        break;
                    }
                    next_ckpt = Some(at.checkpoints.next_after(b));
                }
                advance_inputs(t);
                // At most `in_flight` epochs and `in_flight_records` records in flight: buffers
                // stay bounded, and a round trip between processes per epoch is not waited for.
                // Waiting parks the thread (after timely's short spin): on two cores a spinning
                // worker takes the core a peer's reader or network thread needs.
                // never for outputs that need this reader itself further on (see `span_reach`)
                let span = if sole_reader {
                    advance.widest_recent()
                } else {
                    ADVANCE_EPOCHS
                };
                let wait = ahead.begin(e).min(e.saturating_sub(span_reach(span)));
                let behind = wait * epoch;
                worker.step_or_park_while(None, || probe.less_than(&behind));
                // every worker's statistics of the epochs before `behind` are in
                out.borrow_mut().report.totals.settle(wait);
                if let Some(Err(e)) = pcap_out.as_mut().map(release) {
                    error = Some(e.to_string());
                    break;
                }
                bar.set_position(tally.records);
            }
            // kept after a checkpoint's barrier, which writes the capture up to the boundary: the
            // bytes before this record (at or past it) are a restart's to write
            if let (Some(o), Some(kept)) = (pcap_out.as_mut(), reader.kept()) {
                o.keep(rec.seq, rec.tick, kept);
            }
            if ckpt.is_some() {
                mark.add(rec.seq, rec.tick, digest.lo);
            }
            ahead.record();
            advance.record();
            let seq = D::seq_of(&rec);
            let local = Local::new(seq, seed, digest);
            if let Some(bundle) = sent.get_mut(owner).filter(|_| routed) {
                if owner / threads == me / threads {
                    bundle.near.push((rec.tick, local));
                } else {
                    let offset = advance.offset(rec.tick);
                    bundle.records.push((offset, D::from_parts(seq, digest)));
                }
                if let Some(x) = x_in.as_mut().filter(|_| bundle.len() == BATCH) {
                    tally.routed_bytes += send_bundle(x, bundle);
                }
            } else {
                kept.push((rec.tick, local));
                if kept.len() == BATCH {
                    flush(&mut kept, &mut r_in);
                }
            }
            if tally.records % 4096 == 0 {
                worker.step();
                pace.wait(tally.records);
            }
        }
        flush(&mut kept, &mut r_in);
        if let Some(x) = x_in.as_mut() {
            tally.routed_bytes += send_bundles(&mut sent, x);
        }
        if let Some(m) = expected_mark.filter(|&m| m != mark) {
            error = error.or(Some(changed_input(m, mark)));
        }
        let left = reader.tally();
        (tally.late, tally.bad, tally.not_ip) = (left.late, left.bad, left.not_ip);
        if let Some(q_in) = q_in.as_mut().filter(|_| me == 0) {
            let now = last_tick.max(*q_in.time());
            q_in.advance_to(now);
            for i in 0..job.queries.len() as u64 {
                q_in.send((i, job.queries[i as usize].1));
            }
        }
        t_in.send(tally);
        drop(t_in);
        // This worker's input has ended (or it had none) while other readers may go on: it
        // holds its inputs at the next boundary and, once every reader still going is at or
        // past it (the tallies' frontier: a reader's tally input moves with its inputs and is
        // dropped when it ends), writes its part at the boundary they stop at, the last at or
        // before the slowest of them; every reader's inputs stay at that boundary until its
        // part is written, so this worker's is too. Done when every reader has ended.
        let mut hold = next_ckpt.filter(|_| error.is_none() && !tally.interrupted);
        while let (Some(at), Some(b)) = (barrier.as_ref(), hold) {
            let c = at.checkpoints;
            let mut advance_inputs = |time: Tick| {
                r_in.advance_to(time);
                x_in.iter_mut().for_each(|x| x.advance_to(time));
                q_in.iter_mut().for_each(|q| q.advance_to(time));
            };
            advance_inputs(b);
            worker.step_or_park_while(None, || !tally_probe.done() && tally_probe.less_than(&b));
            let slowest = tally_probe.with_frontier(|f| f.iter().min().copied());
            let Some(b) = slowest.map(|t| c.last_at_or_before(t)) else {
                break;
            };
            advance_inputs(b);
            if let Err(e) = at.write_parts(worker, mark, b, pcap_out.as_mut()) {
                error = Some(e.to_string());
                break;
            }
            hold = Some(c.next_after(b));
        }
        drop((r_in, x_in, q_in));
        worker.step_or_park_while(None, || !probe.done() || !tally_probe.done());
        bar.finish_and_clear();
        // every record decided: the rest of the capture's passed records, and what follows them
        let written = pcap_out.map(|mut o| {
            o.keep_tail(reader.tail());
            release(&mut o).and_then(|()| o.finish())
        });
        let mut g = Rc::try_unwrap(out)
            .map(RefCell::into_inner)
            .unwrap_or_default();
        match written {
            Some(Ok(n)) => g.out_pcap_packets = Some(n),
            Some(Err(e)) => error = error.or(Some(e.to_string())),
            None => {}
        }
        g.seconds = start.elapsed().as_secs_f64();
        g.last_tick = last_tick;
        g.error = error;
        g
    })?;
    guards.join().into_iter().collect()
}

/// The records a worker takes: those its reader kept, and those routed to it, unbundled (a
/// bundle's records carry their tick as an offset from its time, the reader's input time;
/// records from a worker of this process arrive whole). One operator: every operator is in every
/// move's progress round.
fn landed<'s, D: JobRecord>(
    kept: timely::dataflow::StreamVec<'s, u64, (Tick, Local)>,
    sent: timely::dataflow::StreamVec<'s, u64, Sent<D>>,
    seed: u64,
) -> timely::dataflow::StreamVec<'s, u64, (Tick, Local)> {
    let to_dest = Exchange::new(|b: &Sent<D>| u64::from(b.dest));
    kept.binary(sent, Pipeline, to_dest, "Landed", move |_, _| {
        move |kept, sent, output| {
            kept.for_each_stamp(|cap, data| {
                let mut session = output.session(&cap);
                for batch in data {
                    session.give_container(batch);
                }
            });
            sent.for_each_stamp(|cap, data| {
                let Some(&start) = cap.least() else { return };
                let mut session = output.session(&cap);
                for mut bundle in data.flat_map(|batch| batch.drain(..)) {
                    session.give_iterator(bundle.records.into_iter().map(|(offset, d)| {
                        let local = Local::new(d.seq(), seed, d.digest());
                        (start + u64::from(offset), local)
                    }));
                    if !bundle.near.is_empty() {
                        session.give_container(&mut bundle.near);
                    }
                }
            });
        }
    })
}

/// Reads, before any worker starts, the checkpointed state of this process's workers (so a
/// checkpoint that cannot be read stops the job with its error, not a worker mid-dataflow).
fn restore_all(job: &Job, timely_args: &[String]) -> Result<BTreeMap<usize, Restored>, String> {
    let mut out = BTreeMap::new();
    let Some(c) = &job.checkpoints else {
        return Ok(out);
    };
    let layout = crate::cli::check_timely(timely_args).map_err(|e| e.to_string())?;
    for w in 0..layout.threads {
        let index = layout.process * layout.threads + w;
        if let Some(r) = c.restore(index as u32).map_err(|e| e.to_string())? {
            out.insert(index, r);
        }
    }
    Ok(out)
}

fn changed_input(expected: SourceMark, found: SourceMark) -> String {
    format!(
        "the input changed since the checkpoint: {} records (hash {:#x}) were before its \
         boundary, {} (hash {:#x}) are now; resume with the same input or a new \
         --checkpoint-dir",
        expected.records, expected.hash, found.records, found.hash
    )
}

/// What a worker needs to write its parts of a checkpoint.
struct Barrier<'a> {
    checkpoints: &'a Checkpoints,
    probe: &'a ProbeHandle<u64>,
    handles: &'a (DedupCheckpoint, IndexCheckpoint),
    out: &'a RefCell<Gathered>,
    /// Ticks in an epoch.
    epoch: u64,
}

impl Barrier<'_> {
    /// With this worker's inputs held at boundary `b`: waits until every record before it is
    /// decided, indexed and reported, writes the deduplicated capture up to it (the writer's),
    /// then writes this worker's parts (worker 0's with the report so far and the capture's
    /// mark). A part that cannot be written is reported, and the job goes on: the checkpoint
    /// before stays the newest complete one. An error writing the capture stops the job.
    fn write_parts(
        &self,
        worker: &mut timely::worker::Worker,
        mark: SourceMark,
        b: Tick,
        pcap: Option<&mut PcapOut>,
    ) -> Result<(), JobError> {
        let (c, handles) = (self.checkpoints, self.handles);
        let me = worker.index();
        worker.step_or_park_while(None, || self.probe.less_than(&b));
        if let Some(o) = pcap {
            release_decided(o, self.out, self.probe)?;
            self.out.borrow_mut().report.out_pcap = Some(o.mark()?);
        }
        // `Local`: the peers' view deltas of the last epoch arrive at `b`
        let mut tries = 0;
        while tries < 100_000 && handles.0.ready(b).is_err() {
            worker.step();
            tries += 1;
        }
        self.out.borrow_mut().report.totals.settle(b / self.epoch);
        let gathered = self.out.borrow();
        let parts = Parts {
            dedup: &handles.0,
            index: &handles.1,
            mark,
            report: (me == 0).then_some(&gathered.report),
        };
        if let Err(e) = parts.write(c, me as u32, b) {
            eprintln!("trace_dedup: checkpoint at tick {b} not written: {e}");
        }
        Ok(())
    }
}

/// Writes the deduplicated capture as far as the dataflow has decided: the passed positions
/// gathered so far, and every record whose tick the probe has passed.
fn release_decided(
    o: &mut PcapOut,
    out: &RefCell<Gathered>,
    probe: &ProbeHandle<u64>,
) -> Result<(), JobError> {
    o.passed(out.borrow_mut().fresh.drain(..));
    o.release(|tick| !probe.less_equal(&tick))
}

/// What one worker writes at a checkpoint.
struct Parts<'a> {
    dedup: &'a DedupCheckpoint,
    index: &'a IndexCheckpoint,
    mark: SourceMark,
    report: Option<&'a Report>,
}

impl Parts<'_> {
    fn write(&self, c: &Checkpoints, me: u32, t: u64) -> Result<(), CheckpointError> {
        self.dedup.write(&c.store, &c.header("dedup", me, t))?;
        self.index.write(&c.store, &c.header("index", me, t))?;
        c.write("source", me, t, &self.mark)?;
        if let Some(r) = self.report {
            c.write(REPORT, me, t, r)?;
            c.prune()?;
        }
        Ok(())
    }
}

/// Paces a worker's reader to its share of `--rate` records per second.
struct Pace {
    per_worker: f64,
    start: Instant,
}

impl Pace {
    fn new(rate: u64, peers: usize) -> Self {
        Pace {
            per_worker: rate as f64 / peers.max(1) as f64,
            start: Instant::now(),
        }
    }

    /// Sleeps until `records` are due.
    fn wait(&self, records: u64) {
        if self.per_worker <= 0.0 {
            return;
        }
        let due = std::time::Duration::from_secs_f64(records as f64 / self.per_worker);
        if let Some(ahead) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(ahead);
        }
    }
}

/// An epoch's dedup stats as `--plot` keeps them: without the per-shard slices (the plot does
/// not use them), so a long stream's report grows by a few dozen bytes an epoch.
fn compact_dedup(s: &DedupStats) -> DedupStats {
    DedupStats {
        slices: Vec::new(),
        ..s.clone()
    }
}

/// Queries travel as positions in the query list (every process has the list); this turns them
/// back into keys for the index.
fn resolve<'s>(
    queries: timely::dataflow::StreamVec<'s, u64, (u64, TimeRange)>,
    list: &Arc<Vec<(FlowKey, TimeRange)>>,
) -> timely::dataflow::StreamVec<'s, u64, (QueryKey, TimeRange)> {
    let list = Arc::clone(list);
    queries.map(move |(i, r)| {
        let key = list
            .get(i as usize)
            .map_or(FlowKey::Src([0, 0, 0, 0].into()), |q| q.0);
        (QueryKey(i, key), r)
    })
}

/// A query's position and key: hashed as the key alone, so the position rides along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueryKey(pub u64, pub FlowKey);

impl chronobloom::core::hash::Key for QueryKey {
    fn write_canonical(&self, out: &mut chronobloom::core::hash::CanonicalBytes) {
        self.1.write_canonical(out);
    }
}

fn progress_bar(show: bool) -> ProgressBar {
    if !show || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} {pos} records ({per_sec})") {
        bar.set_style(style);
    }
    bar
}
