//! The harness of the determinism tests: the workload, the index dataflow run on it with any
//! number of workers, the single-threaded core PBF-2 reference built from the same input, and
//! the checks that compare them.

use super::*;

pub(super) const EPOCH: u64 = 10;
pub(super) const PARTITION: u64 = 100;
pub(super) const PARTITIONS: u64 = 3;
/// Ticks driven; the last 20 are past the horizon (300) and their records are rejected.
pub(super) const TICKS: u64 = 320;
pub(super) const KEYS: u64 = 400;

pub(super) fn config(placement: Placement) -> IndexConfig {
    builder(placement).bits(24_000).hashes(3).build().unwrap()
}

pub(super) fn builder(placement: Placement) -> IndexConfigBuilder {
    IndexConfig::builder()
        .epoch_len(EPOCH)
        .partition_len(PARTITION)
        .partitions(PARTITIONS)
        .seed(11)
        .placement(placement)
}

/// A configuration whose levels span several digest blocks, so 2 and 4 shards split them.
pub(super) fn wide(placement: Placement) -> IndexConfig {
    builder(placement)
        .bits(8 * 16_384)
        .hashes(3)
        .build()
        .unwrap()
}

/// Allocations announced by worker 0: `(partition, allocation)`, sent at the partition's start.
pub(super) type Plan = Vec<(u64, Allocation)>;

pub(super) fn plan() -> Plan {
    vec![
        (1, Allocation::uniform(8, 40_000, 2).unwrap()),
        (2, Allocation::uniform(8, 16_000, 5).unwrap()),
    ]
}

/// Records `(tick, key)` and queries `(issued, key, range)`, both sorted by tick.
#[derive(Clone)]
pub(super) struct Workload {
    pub(super) records: Vec<(u64, u64)>,
    pub(super) queries: Vec<(u64, u64, TimeRange)>,
}

pub(super) fn workload() -> Workload {
    let mut s = 42;
    let mut records = Vec::new();
    for t in 0..TICKS {
        // ticks 150..180 are silent: epochs 15..17 have no records anywhere
        if (150..180).contains(&t) {
            continue;
        }
        for _ in 0..splitmix(&mut s) % 8 {
            records.push((t, splitmix(&mut s) % KEYS));
        }
    }
    let mut queries: Vec<_> = (0..400)
        .map(|_| {
            let issued = splitmix(&mut s) % TICKS;
            let key = splitmix(&mut s) % (2 * KEYS);
            let start = splitmix(&mut s) % 330;
            let end = start + splitmix(&mut s) % 60;
            (issued, key, TimeRange::new(start, end).unwrap())
        })
        .collect();
    queries.sort_by_key(|q| q.0);
    Workload { records, queries }
}

/// An answer flattened for comparison: (key, start, end, issued, epoch, present, probes).
pub(super) type Flat = (u64, u64, u64, u64, u64, bool, u64);

#[derive(Default, Serialize, Deserialize)]
pub(super) struct Outcome {
    pub(super) digests: Vec<EpochDigest>,
    pub(super) answers: Vec<Flat>,
    #[serde(skip)]
    pub(super) stats: Vec<EpochStats>,
}

/// Runs the index on this process's workers; worker `w` of `n` gets every `n`-th record and query.
pub(super) fn run(timely_config: timely::Config, cfg: IndexConfig, wl: Workload) -> Outcome {
    run_with(timely_config, cfg, wl, None)
}

/// As [`run`]; with a plan, the index takes an allocation stream and worker 0 announces the
/// plan's allocations at each partition's start tick.
pub(super) fn run_with(
    timely_config: timely::Config,
    cfg: IndexConfig,
    wl: Workload,
    plan: Option<Plan>,
) -> Outcome {
    let guards = timely::execute(timely_config, move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let out = Rc::new(RefCell::new(Outcome::default()));
        let probe = ProbeHandle::new();
        let (mut r_in, mut q_in, mut a_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (r_in, records) = scope.new_input::<Vec<u64>>();
            let (q_in, queries) = scope.new_input::<Vec<(u64, TimeRange)>>();
            let (a_in, allocations) = scope.new_input::<Vec<(u64, Allocation)>>();
            let streams = if plan.is_some() {
                records.temporal_index_with_allocations(queries, allocations, &cfg)
            } else {
                records.temporal_index(queries, &cfg)
            };
            let (o1, o2, o3) = (out.clone(), out.clone(), out.clone());
            streams
                .answers
                .inspect(move |a| {
                    o1.borrow_mut().answers.push((
                        a.key,
                        a.range.start(),
                        a.range.end(),
                        a.issued,
                        a.epoch,
                        a.present,
                        a.probes,
                    ))
                })
                .probe_with(&probe);
            streams
                .digests
                .inspect(move |d| o2.borrow_mut().digests.push(*d))
                .probe_with(&probe);
            streams
                .stats
                .inspect(move |s| o3.borrow_mut().stats.push(s.clone()))
                .probe_with(&probe);
            (r_in, q_in, a_in)
        });
        let (mut ri, mut qi) = (0, 0);
        for t in 0..TICKS {
            for (p, a) in plan.iter().flatten() {
                if me == 0 && p * PARTITION == t {
                    a_in.send((*p, a.clone()));
                }
            }
            while ri < wl.records.len() && wl.records[ri].0 == t {
                if ri % peers == me {
                    r_in.send(wl.records[ri].1);
                }
                ri += 1;
            }
            while qi < wl.queries.len() && wl.queries[qi].0 == t {
                let (_, key, range) = wl.queries[qi];
                if qi % peers == me {
                    q_in.send((key, range));
                }
                qi += 1;
            }
            r_in.advance_to(t + 1);
            q_in.advance_to(t + 1);
            a_in.advance_to(t + 1);
            if (t + 1) % EPOCH == 0 {
                worker.step_while(|| probe.less_than(r_in.time()));
            } else {
                worker.step();
            }
        }
        drop((r_in, q_in, a_in));
        worker.step_while(|| !probe.done());
        out.take()
    })
    .unwrap();
    let mut all = Outcome::default();
    for o in guards.join() {
        let o = o.unwrap();
        all.digests.extend(o.digests);
        all.answers.extend(o.answers);
        all.stats.extend(o.stats);
    }
    all.digests.sort();
    all.answers.sort();
    all
}

/// What single-threaded core PBF-2s give: the digest after each epoch with records, every
/// query's answer, and the number of accepted records.
pub(super) struct Reference {
    pub(super) digests: BTreeMap<u64, u64>,
    pub(super) answers: Vec<Flat>,
    pub(super) accepted: u64,
    pub(super) rejected: u64,
}

pub(super) fn reference(cfg: &IndexConfig, wl: &Workload) -> Reference {
    reference_with(cfg, wl, &BTreeMap::new())
}

/// The reference with partition `p` built with `allocations[p]` when given.
pub(super) fn reference_with(
    cfg: &IndexConfig,
    wl: &Workload,
    allocations: &BTreeMap<u64, Allocation>,
) -> Reference {
    let mut parts: BTreeMap<u64, Pbf2> = BTreeMap::new();
    let record_epochs: BTreeSet<u64> = wl.records.iter().map(|r| r.0 / EPOCH).collect();
    let mut by_epoch: BTreeMap<u64, Vec<(u64, u64, TimeRange)>> = BTreeMap::new();
    for &q in &wl.queries {
        by_epoch
            .entry(cfg.answering_epoch(q.0, q.2))
            .or_default()
            .push(q);
    }
    let epochs: BTreeSet<u64> = record_epochs
        .iter()
        .chain(by_epoch.keys())
        .copied()
        .collect();
    let (mut digests, mut answers) = (BTreeMap::new(), Vec::new());
    let (mut accepted, mut rejected) = (0, 0);
    for e in epochs {
        for &(t, key) in wl.records.iter().filter(|r| r.0 / EPOCH == e) {
            if t >= PARTITION * PARTITIONS {
                rejected += 1;
                continue;
            }
            accepted += 1;
            let pbf = parts.entry(t / PARTITION).or_insert_with(|| {
                let a = allocations
                    .get(&(t / PARTITION))
                    .unwrap_or(cfg.allocation());
                Pbf2::with_layout(0, cfg.points(), a, cfg.seed(), cfg.layout()).unwrap()
            });
            pbf.insert(&key, cfg.point(t % PARTITION)).unwrap();
        }
        if record_epochs.contains(&e) {
            digests.insert(e, state_digest(parts.iter().map(|(&p, f)| (p, f))));
        }
        for &(issued, key, range) in by_epoch.get(&e).into_iter().flatten() {
            let (mut present, mut probes) = (false, 0);
            for (&p, pbf) in &parts {
                let (lo, hi) = (p * PARTITION, p * PARTITION + PARTITION - 1);
                let (s, t) = (range.start().max(lo), range.end().min(hi));
                if s > t {
                    continue;
                }
                let local = cfg.points_of(TimeRange::new(s - lo, t - lo).unwrap());
                let a = pbf.query_counted(&key, local);
                probes += a.probes;
                if a.present {
                    present = true;
                    break;
                }
            }
            answers.push((key, range.start(), range.end(), issued, e, present, probes));
        }
    }
    answers.sort();
    Reference {
        digests,
        answers,
        accepted,
        rejected,
    }
}

/// Checks one run against the reference; `workers` is the total number of workers.
pub(super) fn check(out: &Outcome, refr: &Reference, wl: &Workload, workers: usize) {
    // every worker emits one digest per epoch with records, and they all equal the reference
    let mut per_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for d in &out.digests {
        per_epoch.entry(d.epoch).or_default().push(d.digest);
    }
    assert_eq!(
        per_epoch.keys().collect::<Vec<_>>(),
        refr.digests.keys().collect::<Vec<_>>()
    );
    for (e, ds) in &per_epoch {
        assert_eq!(ds.len(), workers, "epoch {e}");
        assert!(
            ds.iter().all(|d| *d == refr.digests[e]),
            "epoch {e}: {ds:?}"
        );
    }
    // answers equal the single-threaded ones, probes included
    assert_eq!(out.answers.len(), wl.queries.len());
    assert_eq!(out.answers, refr.answers);
    // no false negatives against the exact answers
    let mut exact: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for &(t, k) in &wl.records {
        if t < PARTITION * PARTITIONS {
            exact.entry(k).or_default().insert(t);
        }
    }
    let mut negatives = 0;
    for a in &out.answers {
        let truth = exact
            .get(&a.0)
            .is_some_and(|ts| ts.range(a.1..=a.2).next().is_some());
        assert!(!truth || a.5, "false negative: {a:?}");
        negatives += u64::from(!a.5);
    }
    assert!(
        negatives > 0,
        "every answer is 'present': the test is vacuous"
    );
}

pub(super) fn check_stats(out: &Outcome, refr: &Reference, workers: usize, placement: Placement) {
    let accepted: u64 = out.stats.iter().map(|s| s.local.records).sum();
    let rejected: u64 = out
        .stats
        .iter()
        .flat_map(|s| s.local.rejected.get(&RejectReason::BeyondHorizon))
        .sum();
    assert_eq!((accepted, rejected), (refr.accepted, refr.rejected));
    assert!(refr.rejected > 0);
    assert_eq!(out.stats.len(), refr.digests.len() * workers);
    let received: u64 = out.stats.iter().map(|s| s.bytes_received).sum();
    let sent: u64 = out.stats.iter().map(|s| s.local.bytes_sent).sum();
    assert_eq!(sent, received);
    assert_eq!(received > 0, workers > 1);
    // sharded owners evaluate other workers' queries and reply; replicated workers do not
    let crosses = placement == Placement::Sharded && workers > 1;
    let q_in: u64 = out.stats.iter().map(|s| s.query_bytes_received).sum();
    let q_out: u64 = out.stats.iter().map(|s| s.query_bytes_sent).sum();
    assert_eq!(
        (q_in > 0, q_out > q_in),
        (crosses, crosses),
        "{q_in} {q_out}"
    );
    assert!(out
        .stats
        .iter()
        .flat_map(|s| &s.levels)
        .all(|l| (0.0..=1.0).contains(&l.fill) && l.estimated_fpr <= l.fill));
}
