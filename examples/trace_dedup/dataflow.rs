//! The dataflow: every record goes to the dedup operator and to the temporal index; what worker 0
//! needs for the report (stats, digests, answers, and with `--verify`/`--out` the passed records)
//! is exchanged to it.

use crate::source::Rec;
use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::dedup_stats::DedupStats;
use chronobloom::operators::stats::EpochStats;
use chronobloom::operators::timely;
use chronobloom::operators::{Dedup, DedupConfig, IndexConfig, TemporalIndex};
use chronobloom::trace::FlowKey;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use timely::dataflow::operators::{Exchange, Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

/// What the job needs besides the records.
pub struct Job {
    pub records: Arc<Vec<Rec>>,
    pub queries: Arc<Vec<(FlowKey, TimeRange)>>,
    pub dedup: DedupConfig,
    pub index: IndexConfig,
    /// Collect the passed records' positions on worker 0 (for `--verify` and `--out`).
    pub collect_passed: bool,
    pub progress: bool,
}

/// What worker 0 gathered; other workers return an empty one.
#[derive(Default)]
pub struct Gathered {
    pub is_leader: bool,
    pub workers: usize,
    pub dedup: Vec<DedupStats>,
    pub index: Vec<EpochStats>,
    /// (epoch, digest) of worker 0's merged index.
    pub digests: Vec<(u64, u64)>,
    /// (query position, present, probes).
    pub answers: Vec<(u64, bool, u64)>,
    pub passed: Vec<u64>,
    pub seconds: f64,
}

/// Runs the job on this process's workers; `timely_args` are `-w`/`-n`/`-p`/`-h`.
pub fn run(job: Job, timely_args: Vec<String>) -> Result<Vec<Gathered>, String> {
    let job = Arc::new(job);
    let guards = timely::execute_from_args(timely_args.into_iter(), move |worker| {
        let job = Arc::clone(&job);
        let (me, peers) = (worker.index(), worker.peers());
        let out = Rc::new(RefCell::new(Gathered {
            is_leader: me == 0,
            workers: peers,
            ..Gathered::default()
        }));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<(u64, FlowKey)>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let dedup = records
                .clone()
                .dedup_by(&job.dedup, |r: &(u64, FlowKey)| r.1);
            let index = timely::dataflow::operators::vec::Map::map(records, |(_, k)| k)
                .temporal_index(resolve(queries, &job.queries), &job.index);
            let (o1, o2, o3, o4, o5) = (
                out.clone(),
                out.clone(),
                out.clone(),
                out.clone(),
                out.clone(),
            );
            dedup
                .stats
                .exchange(|_| 0)
                .inspect(move |s| o1.borrow_mut().dedup.push(s.clone()))
                .probe_with(&probe);
            index
                .stats
                .exchange(|_| 0)
                .inspect(move |s| o2.borrow_mut().index.push(s.clone()))
                .probe_with(&probe);
            index
                .digests
                .inspect(move |d| {
                    if d.worker == 0 {
                        o3.borrow_mut().digests.push((d.epoch, d.digest));
                    }
                })
                .probe_with(&probe);
            index
                .answers
                .exchange(|_| 0)
                .inspect(move |a| o4.borrow_mut().answers.push((a.key.0, a.present, a.probes)))
                .probe_with(&probe);
            let collect = job.collect_passed;
            timely::dataflow::operators::vec::Map::map(dedup.passed, |(seq, _)| seq)
                .exchange(|_| 0)
                .inspect(move |&seq| {
                    if collect {
                        o5.borrow_mut().passed.push(seq);
                    }
                })
                .probe_with(&probe);
            (r_in, q_in)
        });

        let epoch = job.dedup.epoch_len();
        let mine: Vec<&Rec> = job
            .records
            .iter()
            .filter(|r| r.seq % peers as u64 == me as u64)
            .collect();
        let bar = progress_bar(job.progress && me == 0, mine.len() as u64);
        let start = Instant::now();
        let mut next_sync = epoch;
        for (i, r) in mine.iter().enumerate() {
            if r.tick > *r_in.time() {
                r_in.advance_to(r.tick);
                q_in.advance_to(r.tick);
                if r.tick >= next_sync {
                    // An epoch closed: let the dataflow catch up before going on.
                    worker.step_while(|| probe.less_than(r_in.time()));
                    next_sync = (r.tick / epoch + 1) * epoch;
                    bar.set_position(i as u64);
                }
            }
            r_in.send((r.seq, r.key));
        }
        if me == 0 {
            let last = job.records.last().map_or(0, |r| r.tick);
            let now = last.max(*q_in.time());
            q_in.advance_to(now);
            for i in 0..job.queries.len() as u64 {
                q_in.send((i, job.queries[i as usize].1));
            }
        }
        drop((r_in, q_in));
        worker.step_while(|| !probe.done());
        bar.finish_and_clear();
        out.borrow_mut().seconds = start.elapsed().as_secs_f64();
        Rc::try_unwrap(out)
            .map(RefCell::into_inner)
            .unwrap_or_default()
    })?;
    guards.join().into_iter().collect()
}

/// Queries travel as positions in the query list (every process has the list); this turns them
/// back into keys for the index.
fn resolve<'s>(
    queries: timely::dataflow::StreamVec<'s, u64, (u64, TimeRange)>,
    list: &Arc<Vec<(FlowKey, TimeRange)>>,
) -> timely::dataflow::StreamVec<'s, u64, (QueryKey, TimeRange)> {
    let list = Arc::clone(list);
    timely::dataflow::operators::vec::Map::map(queries, move |(i, r)| {
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

fn progress_bar(show: bool, len: u64) -> ProgressBar {
    if !show || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} records ({per_sec})")
    {
        bar.set_style(style);
    }
    bar
}
