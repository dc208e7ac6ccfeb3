//! The window membership operator against an exact oracle (DESIGN.md §4 invariants 1, 2, 4):
//! no false negative inside the window, false positives within ε (steady and through a 10× rate
//! change), answers and per-epoch view digests identical for 1, 2 and 4 workers.
#![allow(clippy::unwrap_used)]

mod support;

use chronobloom::operators::timely;
use chronobloom::operators::{
    MembershipConfig, MembershipSnapshot, MembershipStats, TimedWindowMembership,
};
use chronobloom::synth::splitmix;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::ProbeHandle;

const W: u64 = 64;
const EPOCH: u64 = 4;

/// `(tick, key)`.
type Rec = (u64, u64);

fn config() -> MembershipConfig {
    MembershipConfig::builder()
        .window(W)
        .epoch_len(EPOCH)
        .fpr(0.01)
        .min_slice_keys(32)
        .seed(3)
        .build()
        .unwrap()
}

struct Run {
    answers: Vec<(u64, u64, bool)>,
    stats: Vec<MembershipStats>,
}

/// Runs the operator on `workers` threads: insert `i` and query `i` enter on worker `i % peers`.
fn run(workers: usize, inserts: &[Rec], queries: &[Rec]) -> Run {
    run_with(timely::Config::process(workers), inserts, queries)
}

/// [`run`] on any timely configuration (this process's part of it).
fn run_with(timely_config: timely::Config, inserts: &[Rec], queries: &[Rec]) -> Run {
    let answers = Arc::new(Mutex::new(Vec::new()));
    let stats = Arc::new(Mutex::new(Vec::new()));
    let (a2, s2) = (Arc::clone(&answers), Arc::clone(&stats));
    let (inserts, queries) = (inserts.to_vec(), queries.to_vec());
    let cfg = config();
    timely::execute(timely_config, move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let (a3, s3) = (Arc::clone(&a2), Arc::clone(&s2));
        let probe = ProbeHandle::new();
        let (mut ins, mut qs) = worker.dataflow::<u64, _, _>(|scope| {
            let (ins, i) = scope.new_input::<Vec<Rec>>();
            let (qs, q) = scope.new_input::<Vec<Rec>>();
            let out = i.window_membership(q, &cfg);
            out.answers
                .inspect(move |a| a3.lock().unwrap().push(*a))
                .probe_with(&probe);
            out.stats
                .inspect(move |s| s3.lock().unwrap().push(s.clone()))
                .probe_with(&probe);
            (ins, qs)
        });
        let last = inserts
            .iter()
            .chain(&queries)
            .map(|r| r.0)
            .max()
            .unwrap_or(0);
        let (mut i, mut j) = (0, 0);
        for t in 0..=last {
            // both inputs at the epoch's first tick: records carry their own ticks
            if t % EPOCH == 0 {
                ins.advance_to(t);
                qs.advance_to(t);
                worker.step();
            }
            while i < inserts.len() && inserts[i].0 == t {
                if i % peers == me {
                    ins.send(inserts[i]);
                }
                i += 1;
            }
            while j < queries.len() && queries[j].0 == t {
                if j % peers == me {
                    qs.send(queries[j]);
                }
                j += 1;
            }
        }
        drop((ins, qs));
        worker.step_while(|| !probe.done());
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let mut answers = Arc::try_unwrap(answers).unwrap().into_inner().unwrap();
    answers.sort_unstable();
    let stats = Arc::try_unwrap(stats).unwrap().into_inner().unwrap();
    Run { answers, stats }
}

/// `rate(t)` inserts per tick over `universe` keys, and 50 queries per tick (half of them keys
/// inserted recently, half never inserted).
fn stream(ticks: u64, rate: impl Fn(u64) -> u64, universe: u64) -> (Vec<Rec>, Vec<Rec>) {
    let mut s = 11;
    let (mut inserts, mut queries) = (Vec::new(), Vec::new());
    for t in 0..ticks {
        for _ in 0..rate(t) {
            inserts.push((t, splitmix(&mut s) % universe));
        }
        for q in 0..50 {
            let k = if q % 2 == 0 {
                splitmix(&mut s) % universe
            } else {
                universe + splitmix(&mut s)
            };
            queries.push((t, k));
        }
    }
    (inserts, queries)
}

/// Checks every answer against the exact windows: returns (queries that must be no, false
/// positives among them); panics on a false negative.
fn check(inserts: &[Rec], run: &Run) -> (u64, u64) {
    let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(t, k) in inserts {
        seen.entry(k).or_default().push(t);
    }
    let (mut negatives, mut false_positives) = (0, 0);
    for &(t, k, answer) in &run.answers {
        let ticks = seen.get(&k).map(Vec::as_slice).unwrap_or(&[]);
        let must = ticks.iter().any(|&u| u <= t && t - u < W);
        if must {
            assert!(
                answer,
                "false negative: key {k} at {t} (inserted at {ticks:?})"
            );
        }
        // no insert in (t - W - S, end of t's epoch]
        let epoch_end = (t / EPOCH + 1) * EPOCH - 1;
        let slack = config().slack();
        let may = ticks.iter().any(|&u| u <= epoch_end && u + W + slack > t);
        if !may {
            negatives += 1;
            false_positives += u64::from(answer);
        }
    }
    (negatives, false_positives)
}

fn binomial_upper(n: u64, p: f64) -> u64 {
    let (n, sd) = (n as f64, (n as f64 * p * (1.0 - p)).sqrt());
    (n * p + 3.09 * sd + 3.0).ceil() as u64
}

/// Per epoch, every worker's digest (all equal, or the set has two elements).
fn digests(stats: &[MembershipStats]) -> BTreeMap<u64, BTreeSet<u64>> {
    let mut out: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for s in stats {
        out.entry(s.epoch).or_default().insert(s.digest);
    }
    out
}

#[test]
fn no_false_negatives_fpr_within_epsilon_and_identical_for_any_worker_count() {
    let (inserts, queries) = stream(400, |_| 200, 40_000);
    let one = run(1, &inserts, &queries);
    assert_eq!(one.answers.len(), queries.len());
    let (negatives, fp) = check(&inserts, &one);
    let bound = binomial_upper(negatives, 0.01);
    println!("steady: {negatives} negatives, {fp} false positives (bound {bound})");
    assert!(fp <= bound, "{fp} > {bound}");
    assert!(negatives > 10_000);
    let reference = digests(&one.stats);
    assert!(reference.values().all(|d| d.len() == 1));
    assert!(one.stats.iter().all(|s| s.unplaced == 0));
    for workers in [2, 4] {
        let many = run(workers, &inserts, &queries);
        assert_eq!(
            one.answers, many.answers,
            "{workers} workers answer differently"
        );
        assert_eq!(
            reference,
            digests(&many.stats),
            "{workers} workers: other bits"
        );
    }
}

#[test]
fn a_tenfold_rate_change_keeps_fpr_within_two_epsilon_and_memory_follows() {
    // 50 inserts a tick, 500 for two windows, then 50 again
    let rate = |t: u64| if (200..328).contains(&t) { 500 } else { 50 };
    let (inserts, queries) = stream(600, rate, 1 << 40);
    let r = run(2, &inserts, &queries);
    let (negatives, fp) = check(&inserts, &r);
    let bound = binomial_upper(negatives, 0.02);
    println!("burst: {negatives} negatives, {fp} false positives (bound {bound})");
    assert!(fp <= bound, "{fp} > {bound}");
    let bits_at = |e: u64| {
        r.stats
            .iter()
            .find(|s| s.epoch == e && s.worker == 0)
            .map(|s| s.bits)
            .unwrap()
    };
    let (before, during, after) = (bits_at(45), bits_at(78), bits_at(148));
    println!("bits before {before}, during {during}, after {after}");
    assert!(during > 5 * before, "{before} -> {during}");
    // two windows after the burst the slices are sized for the low rate again
    assert!(after < during / 5, "{during} -> {after}");
}

#[test]
fn late_records_are_taken_at_their_timestamp() {
    // an insert and a query stamped ahead of their ticks
    let cfg = config();
    let answers = timely::execute_directly(move |worker| {
        let probe = ProbeHandle::new();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g2 = Arc::clone(&got);
        let late = Arc::new(Mutex::new(0));
        let l2 = Arc::clone(&late);
        let (mut ins, mut qs) = worker.dataflow::<u64, _, _>(|scope| {
            let (ins, i) = scope.new_input::<Vec<Rec>>();
            let (qs, q) = scope.new_input::<Vec<Rec>>();
            let out = i.window_membership(q, &cfg);
            out.answers
                .inspect(move |a| g2.lock().unwrap().push(*a))
                .probe_with(&probe);
            out.stats
                .inspect(move |s| *l2.lock().unwrap() += s.late)
                .probe_with(&probe);
            (ins, qs)
        });
        ins.advance_to(100);
        qs.advance_to(100);
        ins.send((3, 7)); // late: taken at tick 100
        qs.send((5, 7)); // late: asked at tick 100
        qs.send((150, 7));
        drop((ins, qs));
        worker.step_while(|| !probe.done());
        let late = *late.lock().unwrap();
        let got = got.lock().unwrap().clone();
        (got, late)
    });
    let (mut got, late) = answers;
    got.sort_unstable();
    assert_eq!(got, vec![(100, 7, true), (150, 7, true)]);
    assert_eq!(late, 1);
}

/// Set in the two child processes of [`two_processes_over_loopback`]: the timely arguments.
const CHILD_ENV: &str = "CHRONOBLOOM_MEMBERSHIP_CHILD_ARGS";
const RESULT_PREFIX: &str = "CHRONOBLOOM-MEMBERSHIP ";

fn small_stream() -> (Vec<Rec>, Vec<Rec>) {
    stream(120, |_| 50, 5_000)
}

/// An order-independent digest of answers (a wrapping sum of each answer's hash) and their
/// number: the two processes' outputs add up to one run's.
fn answers_digest(answers: &[(u64, u64, bool)]) -> (u64, u64) {
    let sum = answers.iter().fold(0u64, |acc, &(t, k, seen)| {
        let h = chronobloom::core::hash::KeyHash::of(&(t, k, u8::from(seen)), 9).lo;
        acc.wrapping_add(h)
    });
    (sum, answers.len() as u64)
}

/// One process of the two-process run; does nothing unless started by the parent test.
#[test]
fn two_process_child() {
    let Ok(args) = std::env::var(CHILD_ENV) else {
        return;
    };
    let timely_config = timely::Config::from_args(args.split(' ').map(String::from)).unwrap();
    let (inserts, queries) = small_stream();
    let r = run_with(timely_config, &inserts, &queries);
    // small enough for the parent's pipe: a digest of the answers, the view's digests
    let out = (answers_digest(&r.answers), digests(&r.stats));
    println!("\n{RESULT_PREFIX}{}", serde_json::to_string(&out).unwrap());
}

#[test]
fn two_processes_over_loopback_hold_the_same_view() {
    let (inserts, queries) = small_stream();
    let one = run(1, &inserts, &queries);
    let (mut sum, mut count) = (0u64, 0u64);
    let mut views: Vec<BTreeMap<u64, BTreeSet<u64>>> = Vec::new();
    for line in support::two_processes("two_process_child", CHILD_ENV, RESULT_PREFIX) {
        type Out = ((u64, u64), BTreeMap<u64, BTreeSet<u64>>);
        let ((s, n), d): Out = serde_json::from_str(&line).unwrap();
        sum = sum.wrapping_add(s);
        count += n;
        views.push(d);
    }
    assert_eq!(answers_digest(&one.answers), (sum, count));
    let reference = digests(&one.stats);
    assert_eq!(views.len(), 2);
    for view in views {
        assert_eq!(view, reference);
    }
}

/// What a resumable run answered and reported, and each worker's snapshot bytes at the stop.
type Resumed = (Vec<(u64, u64, bool)>, Vec<MembershipStats>, Vec<Vec<u8>>);

/// Runs the inserts and queries with ticks in `[from, stop)` on `workers` threads, restoring
/// `restore` first and snapshotting at `stop` (an epoch start).
fn run_resumable(
    workers: usize,
    (inserts, queries): (&[Rec], &[Rec]),
    from: u64,
    stop: Option<u64>,
    restore: Option<Vec<Vec<u8>>>,
) -> Resumed {
    let out = Arc::new(Mutex::new((
        Vec::new(),
        Vec::new(),
        vec![Vec::new(); workers],
    )));
    let o = Arc::clone(&out);
    let (inserts, queries) = (inserts.to_vec(), queries.to_vec());
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let restored = restore
            .as_ref()
            .map(|r| MembershipSnapshot::from_bytes(&r[me]).unwrap());
        let (o1, o2) = (Arc::clone(&o), Arc::clone(&o));
        let probe = ProbeHandle::new();
        let (mut ins, mut qs, handle) = worker.dataflow::<u64, _, _>(|scope| {
            let (ins, i) = scope.new_input::<Vec<Rec>>();
            let (qs, q) = scope.new_input::<Vec<Rec>>();
            let (out, handle) = i
                .window_membership_resumable(q, &config(), restored)
                .unwrap();
            out.answers
                .inspect(move |a| o1.lock().unwrap().0.push(*a))
                .probe_with(&probe);
            out.stats
                .inspect(move |s| o2.lock().unwrap().1.push(s.clone()))
                .probe_with(&probe);
            (ins, qs, handle)
        });
        ins.advance_to(from);
        qs.advance_to(from);
        let keep = |t: u64| t >= from && stop.is_none_or(|s| t < s);
        for (n, &r) in inserts.iter().enumerate() {
            if keep(r.0) && n % peers == me {
                ins.send(r);
            }
        }
        for (n, &r) in queries.iter().enumerate() {
            if keep(r.0) && n % peers == me {
                qs.send(r);
            }
        }
        if let Some(b) = stop {
            ins.advance_to(b);
            qs.advance_to(b);
            worker.step_while(|| probe.less_than(&b));
            let inside = handle.snapshot(b + 1).unwrap_err().to_string();
            assert!(inside.contains("is not an epoch start"), "{inside}");
            o.lock().unwrap().2[me] = handle.snapshot(b).unwrap().to_bytes().unwrap();
        }
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let mut out = Arc::try_unwrap(out).unwrap().into_inner().unwrap();
    out.0.sort_unstable();
    out
}

/// Stopped at an epoch boundary and resumed from each worker's snapshot of its view, the
/// operator answers every query and reaches every per-epoch digest of an uninterrupted run, with
/// 1 and 2 workers; a view of another configuration, or a boundary inside an epoch, is refused.
#[test]
fn a_resumed_view_answers_as_an_uninterrupted_one() {
    const BOUNDARY: u64 = 60;
    let (inserts, queries) = small_stream();
    let data = (inserts.as_slice(), queries.as_slice());
    for workers in [1, 2] {
        let (answers, stats, _) = run_resumable(workers, data, 0, None, None);
        let (a1, s1, saved) = run_resumable(workers, data, 0, Some(BOUNDARY), None);
        let (a2, s2, _) = run_resumable(workers, data, BOUNDARY, None, Some(saved.clone()));
        assert!(!a1.is_empty() && !a2.is_empty());
        let mut resumed = a1;
        resumed.extend(a2);
        resumed.sort_unstable();
        assert_eq!(resumed, answers, "{workers} workers: answers");
        let mut resumed_stats = s1;
        resumed_stats.extend(s2);
        assert_eq!(
            digests(&resumed_stats),
            digests(&stats),
            "{workers} workers: digests"
        );
        // the uninterrupted run answers as the plain operator does
        assert_eq!(answers, run(workers, &inserts, &queries).answers);

        let snapshot = MembershipSnapshot::from_bytes(&saved[0]).unwrap();
        let other = MembershipConfig::builder()
            .window(W * 2)
            .epoch_len(EPOCH)
            .fpr(0.01)
            .seed(3)
            .build()
            .unwrap();
        let refused = timely::execute_directly(move |worker| {
            worker.dataflow::<u64, _, _>(|scope| {
                let (_i, i) = scope.new_input::<Vec<Rec>>();
                let (_q, q) = scope.new_input::<Vec<Rec>>();
                i.window_membership_resumable(q, &other, Some(snapshot))
                    .err()
                    .map(|e| e.to_string())
            })
        });
        assert_eq!(
            refused.as_deref(),
            Some(
                "checkpointed state of membership cannot be restored: the checkpointed view has \
                 another window, slack, rate or seed"
            )
        );
    }
}
