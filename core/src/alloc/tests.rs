//! Tests unwrap freely: a panic is a failure with its message.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::error::Error;
use crate::hash::{mix64, KeyHash};
use crate::temporal::{dyadic_cover, Pbf1, Pbf2, TemporalFilter, TimeRange};
use proptest::{collection, prop_assert, prop_assert_eq, proptest};
use std::collections::HashSet;

const C: f64 = std::f64::consts::LN_2 * std::f64::consts::LN_2;

/// A deterministic uniform in [0, 1) from a counter.
fn unit(seed: u64, i: u64) -> f64 {
    (mix64(seed ^ mix64(i)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Filters with d_i spread over six orders of magnitude and some f_i or d_i zero.
fn skewed(n: u64, seed: u64) -> Vec<FilterStats> {
    (0..n)
        .map(|i| {
            let d = if i % 11 == 3 {
                0.0
            } else {
                10f64.powf(6.0 * unit(seed, i)).round()
            };
            let f = if i % 7 == 5 {
                0.0
            } else {
                2.0 * unit(seed, i + 1_000_000)
            };
            FilterStats::new(d, f)
        })
        .collect()
}

/// ln of the marginal gain ∂/∂m_i f_i ln(1 − 2^{−(ln 2) m_i / d_i}) = f_i c / (d_i (e^{c m_i/d_i} − 1)).
fn log_gain(s: &FilterStats, m: f64) -> f64 {
    let y = C * m / s.distinct;
    // ln(e^y − 1): directly for small y, as y + ln(1 − e^{−y}) where e^y would overflow.
    let log_expm1 = if y < 1.0 {
        y.exp_m1().ln()
    } else {
        y + (-(-y).exp()).ln_1p()
    };
    (s.frequency * C / s.distinct).ln() - log_expm1
}

/// The objective of eqs. 10–13 for real bit counts.
fn objective(stats: &[FilterStats], bits: &[f64]) -> f64 {
    stats
        .iter()
        .zip(bits)
        .filter(|(s, _)| s.is_live())
        .map(|(s, &m)| s.frequency * (-(-C * m / s.distinct).exp()).ln_1p())
        .sum()
}

fn check_lagrange(stats: &[FilterStats], budget: u64) -> Solution {
    let sol = solve(stats, budget).unwrap();
    let sum: f64 = sol.bits().iter().sum();
    assert!(
        (sum - budget as f64).abs() <= 1e-9 * budget as f64,
        "continuous bits sum to {sum}, budget {budget}"
    );
    for (s, &m) in stats.iter().zip(sol.bits()) {
        if !s.is_live() {
            assert_eq!(m, 0.0);
            continue;
        }
        assert!(m > 0.0);
        let g = log_gain(s, m);
        assert!(
            (g - sol.log_neg_lambda()).abs() <= 1e-6 * sol.log_neg_lambda().abs().max(1.0),
            "marginal gain e^{g} differs from -λ = e^{}",
            sol.log_neg_lambda()
        );
    }
    sol
}

#[test]
fn lagrange_condition_holds_across_budgets() {
    let stats = skewed(200, 1);
    let items: f64 = stats.iter().map(|s| s.distinct).sum();
    for bits_per_item in [0.01, 0.5, 4.0, 10.0, 40.0, 2_000.0] {
        let sol = check_lagrange(&stats, (items * bits_per_item) as u64);
        assert!(sol.passes() < 60, "{} passes", sol.passes());
    }
}

#[test]
fn tiny_lambda_is_solved() {
    // About 10^5 bits per item: −λ ≈ e^{−c·10^5} underflows any float, as in the Java solver's
    // `TooManyEvaluations` failure; the log-domain solver does not care.
    let stats = [
        FilterStats::new(1.0, 1.0),
        FilterStats::new(2.0, 0.5),
        FilterStats::new(3.0, 2.0),
    ];
    let sol = check_lagrange(&stats, 600_000);
    assert_eq!(sol.lambda(), -0.0);
    assert!(sol.log_neg_lambda() < -10_000.0);
    let a = sol.allocation(&stats, DEFAULT_K_MAX).unwrap();
    assert_eq!(a.total_bits(), 600_000);
    assert!(a.shapes().iter().all(|s| s.hashes == DEFAULT_K_MAX));
    // And a mix of extremes: a huge rarely probed filter beside a tiny often probed one.
    let stats = [FilterStats::new(1e9, 1e-6), FilterStats::new(1.0, 2.0)];
    for budget in [1, 1_000, 10_000_000_000, u64::MAX / 2] {
        check_lagrange(&stats, budget);
    }
}

#[test]
fn optimum_beats_perturbations() {
    let stats = skewed(40, 2);
    let budget = 1_000_000;
    let sol = solve(&stats, budget).unwrap();
    let best = objective(&stats, sol.bits());
    let live: Vec<usize> = (0..stats.len()).filter(|&i| stats[i].is_live()).collect();
    for (n, &i) in live.iter().enumerate() {
        let j = live[(n * 7 + 3) % live.len()];
        if i == j {
            continue;
        }
        for frac in [0.001, 0.01, 0.1] {
            let mut bits = sol.bits().to_vec();
            let delta = bits[i] * frac;
            bits[i] -= delta;
            bits[j] += delta;
            assert!(objective(&stats, &bits) <= best + 1e-12 * best.abs());
        }
    }
}

proptest! {
    #[test]
    fn every_strategy_spends_exactly_the_budget(
        raw in collection::vec((0u32..2_000_000, 0u32..3, 0.0f64..2.0), 1..60),
        budget in 1u64..50_000_000,
        k_max in 1u32..=64,
    ) {
        let stats: Vec<FilterStats> = raw
            .iter()
            .map(|&(d, z, f)| FilterStats::new(f64::from(d), if z == 0 { 0.0 } else { f }))
            .collect();
        for strategy in [Strategy::Optimal, Strategy::Proportional, Strategy::Uniform] {
            let a = match strategy.allocate(&stats, budget, k_max) {
                Ok(a) => a,
                Err(Error::InvalidParameter { name: "stats", .. }) => continue,
                Err(e) => panic!("{e}"),
            };
            prop_assert_eq!(a.total_bits(), budget);
            prop_assert_eq!(a.shapes().len(), stats.len());
            for (shape, s) in a.shapes().iter().zip(&stats) {
                if shape.bits > 0 {
                    prop_assert!((1..=k_max).contains(&shape.hashes));
                }
                if strategy == Strategy::Optimal && !s.is_live() {
                    prop_assert_eq!(shape.bits, 0);
                }
                if strategy == Strategy::Proportional && s.distinct == 0.0 {
                    prop_assert_eq!(shape.bits, 0);
                }
            }
        }
    }
}

#[test]
fn hash_counts_follow_the_rule() {
    let stats = [FilterStats::new(1_000.0, 1.0), FilterStats::new(10.0, 1.0)];
    let a = Strategy::Optimal.allocate(&stats, 12_000, 16).unwrap();
    for (shape, s) in a.shapes().iter().zip(&stats) {
        let k = (shape.bits as f64 / s.distinct * std::f64::consts::LN_2)
            .ceil()
            .min(16.0);
        assert_eq!(shape.hashes, k as u32);
    }
}

#[test]
fn proportional_equalises_bits_per_item() {
    let stats = skewed(30, 3);
    let a = proportional(&stats, 10_000_000, 16).unwrap();
    let items: f64 = stats.iter().map(|s| s.distinct).sum();
    let theta = 10_000_000.0 / items;
    for (shape, s) in a.shapes().iter().zip(&stats) {
        assert!((shape.bits as f64 - theta * s.distinct).abs() <= 1.0);
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let ok = [FilterStats::new(10.0, 1.0)];
    fn invalid<T: std::fmt::Debug>(r: Result<T, Error>, name: &str) {
        match r {
            Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
            other => panic!("expected an error about {name}, got {other:?}"),
        }
    }
    invalid(solve(&[], 10), "stats");
    invalid(solve(&ok, 0), "budget");
    invalid(solve(&[FilterStats::new(0.0, 1.0); 3], 10), "stats");
    invalid(solve(&[FilterStats::new(5.0, 0.0); 3], 10), "stats");
    invalid(solve(&[FilterStats::new(5.0, f64::NAN)], 10), "frequency");
    invalid(solve(&[FilterStats::new(-1.0, 1.0)], 10), "distinct");
    invalid(
        solve(&[FilterStats::new(f64::INFINITY, 1.0)], 10),
        "distinct",
    );
    invalid(
        proportional(&[FilterStats::new(0.0, 1.0); 2], 10, 16),
        "stats",
    );
    invalid(Strategy::Uniform.allocate(&ok, 10, 0), "k_max");
    invalid(Strategy::Uniform.allocate(&ok, 10, 65), "hashes");
    let sol = solve(&ok, 10).unwrap();
    assert!(matches!(
        sol.allocation(&[ok[0], ok[0]], 16),
        Err(Error::AllocationLength { .. })
    ));
    let a = Strategy::Uniform.allocate(&ok, 10, 16).unwrap();
    assert!(matches!(
        predicted_fpr(&a, &[ok[0], ok[0]]),
        Err(Error::AllocationLength { .. })
    ));
}

#[test]
fn predicted_fpr_combines_eq2_as_the_objective() {
    let stats = [FilterStats::new(100.0, 1.0), FilterStats::new(100.0, 2.0)];
    let a = Allocation::new(vec![
        FilterShape {
            bits: 1_000,
            hashes: 7,
        },
        FilterShape {
            bits: 2_000,
            hashes: 10,
        },
    ])
    .unwrap();
    let p0 = a.shapes()[0].fpr(100.0);
    let p1 = a.shapes()[1].fpr(100.0);
    let expect = 1.0 - (1.0 - p0) * (1.0 - p1).powi(2);
    assert!((predicted_fpr(&a, &stats).unwrap() - expect).abs() < 1e-15);
    let starved = Allocation::new(vec![FilterShape { bits: 0, hashes: 0 }, a.shapes()[1]]).unwrap();
    assert_eq!(predicted_fpr(&starved, &stats).unwrap(), 1.0);
}

/// A skewed synthetic trace: Zipf-like keys with a diurnal rate over one "day" of `horizon` ticks.
fn trace(horizon: u64, records: u64, seed: u64) -> Vec<(KeyHash, u64)> {
    (0..records)
        .map(|i| {
            let u = unit(seed, 2 * i);
            let key = (20_000f64.powf(u * u)) as u64; // heavy head, long tail
            let v = unit(seed, 2 * i + 1);
            let day = (v + 0.3 * (std::f64::consts::TAU * v).sin() / std::f64::consts::TAU)
                .clamp(0.0, 0.999_999);
            (KeyHash::of(&key, 7), (day * horizon as f64) as u64)
        })
        .collect()
}

fn ranges(horizon: u64, count: u64, max_len: u64, seed: u64) -> Vec<TimeRange> {
    (0..count)
        .map(|i| {
            let len = 1 + (unit(seed, 2 * i) * max_len as f64) as u64;
            let s = (unit(seed, 2 * i + 1) * (horizon - len + 1) as f64) as u64;
            TimeRange::new(s, s + len - 1).unwrap()
        })
        .collect()
}

#[test]
fn optimal_beats_uniform_on_a_skewed_pbf2_workload() {
    let horizon = 4_096;
    let mut w = Pbf2Workload::new(horizon).unwrap();
    for (h, t) in trace(horizon, 20_000, 5) {
        w.insert(h, t).unwrap();
    }
    for r in ranges(horizon, 2_000, 64, 6) {
        w.query(r);
    }
    let a = optimal_clearly_wins(&w.stats(), 8 * 20_000 * 4, &format!("PBF-2 T={horizon}"));
    assert!(Pbf2::new(horizon, &a, 7).is_ok());
}

/// The optimal allocation of `budget` bits predicts a lower FPR than the proportional one and
/// less than half the uniform one's on `stats`; returns it.
fn optimal_clearly_wins(stats: &[FilterStats], budget: u64, what: &str) -> Allocation {
    let fpr = |s: Strategy| predicted_fpr(&s.allocate(stats, budget, 16).unwrap(), stats).unwrap();
    let (opt, prop, uni) = (
        fpr(Strategy::Optimal),
        fpr(Strategy::Proportional),
        fpr(Strategy::Uniform),
    );
    println!(
        "{what}, {budget} bits: optimal {opt:.3e}, proportional {prop:.3e}, uniform {uni:.3e}"
    );
    assert!(opt < uni && opt <= prop);
    assert!(
        opt < 0.5 * uni,
        "optimal {opt} is not clearly better than uniform {uni}"
    );
    Strategy::Optimal.allocate(stats, budget, 16).unwrap()
}

#[test]
fn optimal_beats_uniform_on_a_skewed_pbf1_workload() {
    let (horizon, g) = (4_096, 4);
    let mut w = Pbf1Workload::new(horizon, g).unwrap();
    for (h, t) in trace(horizon, 20_000, 8) {
        w.insert(h, t).unwrap();
    }
    for r in ranges(horizon, 2_000, 256, 9) {
        w.query(r);
    }
    let what = format!("PBF-1 T={horizon} g={g}");
    let a = optimal_clearly_wins(&w.stats(), 10 * 20_000 * 4, &what);
    assert!(Pbf1::new(horizon, g, &a, 7).is_ok());
}

#[test]
fn pbf2_workload_matches_brute_force() {
    let horizon = 1_000;
    let records = trace(horizon, 3_000, 10);
    let mut w = Pbf2Workload::new(horizon).unwrap();
    for &(h, t) in &records {
        w.insert(h, t).unwrap();
    }
    let levels = Pbf2::levels_for(horizon).unwrap();
    let d = w.distinct();
    for level in 0..levels {
        let set: HashSet<(KeyHash, u64)> = records.iter().map(|&(h, t)| (h, t >> level)).collect();
        assert_eq!(d[level as usize], set.len() as u64, "level {level}");
    }
    // Probes: the real PBF-2 with roomy levels probes every cover block of an absent key.
    let pbf = Pbf2::uniform(horizon, 1 << 22, 10, 7).unwrap();
    let queries = ranges(horizon, 500, 900, 11);
    let mut real = 0;
    for (i, &r) in queries.iter().enumerate() {
        w.query(r);
        real += pbf.query_counted(&(u64::MAX - i as u64), r).probes;
    }
    w.query(TimeRange::new(5_000, 6_000).unwrap()); // past the horizon: counted, no probes
    let f = w.frequency();
    let counted: f64 = f.iter().sum::<f64>() * w.queries() as f64;
    assert!((counted - real as f64).abs() < 1e-6, "{counted} vs {real}");
    let mut per_level = vec![0u64; levels as usize];
    for &r in &queries {
        dyadic_cover(r, levels - 1).for_each(|b| per_level[b.level as usize] += 1);
    }
    for (fl, &p) in f.iter().zip(&per_level) {
        assert!((fl - p as f64 / 501.0).abs() < 1e-12);
        assert!(*fl <= 2.0);
    }
    assert!(matches!(
        w.insert(KeyHash::of(&1u8, 0), horizon),
        Err(Error::BeyondHorizon { .. })
    ));
}

#[test]
fn pbf1_workload_matches_brute_force() {
    for (horizon, g) in [(1_000u64, 3u64), (1_024, 1), (37, 5)] {
        let records = trace(horizon, 2_000, 12);
        let mut w = Pbf1Workload::new(horizon, g).unwrap();
        for &(h, t) in &records {
            w.insert(h, t).unwrap();
        }
        let layout = Pbf1::layout(horizon, g).unwrap();
        assert_eq!(w.filters(), layout.len() + 1);
        let d = w.distinct();
        for (node, &dn) in layout.iter().zip(&d) {
            let keys: HashSet<KeyHash> = records
                .iter()
                .filter(|&&(_, t)| node.range.contains(t))
                .map(|&(h, _)| h)
                .collect();
            assert_eq!(dn, keys.len() as u64, "node {node:?}");
        }
        let pairs: HashSet<(KeyHash, u64)> = records.iter().copied().collect();
        assert_eq!(d[layout.len()], pairs.len() as u64);

        // Node probes: the real PBF-1 with roomy filters; SBF probes: the ticks of partial leaves.
        let pbf = Pbf1::uniform(horizon, g, 1 << 24, 10, 7).unwrap();
        let queries = ranges(horizon, 400, horizon / 2, 13);
        let (mut real, mut sbf) = (0, 0);
        for (i, &r) in queries.iter().enumerate() {
            w.query(r);
            real += pbf.query_counted(&(u64::MAX - i as u64), r).probes;
            sbf += (r.start()..=r.end())
                .filter(|&t| {
                    let leaf_start = t / g * g;
                    let leaf_end = (leaf_start + g - 1).min(horizon - 1);
                    !(r.start() <= leaf_start && r.end() >= leaf_end)
                })
                .count() as u64;
        }
        let f = w.frequency();
        let q = w.queries() as f64;
        let nodes: f64 = f[..layout.len()].iter().sum::<f64>() * q;
        assert!(
            (nodes - real as f64).abs() < 1e-6,
            "T={horizon} g={g}: {nodes} vs {real}"
        );
        assert!((f[layout.len()] * q - sbf as f64).abs() < 1e-6);
        assert!(f[..layout.len()].iter().all(|&x| x <= 1.0));
    }
}

#[test]
fn sizing_inverts_and_grows_as_the_paper_says() {
    for (n, t, q, g, p) in [
        (1_000_000u64, 86_400u64, 3_600u64, 1u64, 0.01f64),
        (10, 2, 1, 1, 0.5),
        (5_000, 1 << 20, 100, 4, 1e-6),
        (5_000, 1 << 20, 2, 8, 0.05),
    ] {
        let m = bits_for_fpr(n, t, q, g, p).unwrap();
        assert!(fpr_for_bits(m, n, t, q, g).unwrap() <= p);
        assert!(fpr_for_bits(m - 1, n, t, q, g).unwrap() > p * (1.0 - 1e-9));
        // More pairs, a longer horizon, a longer query or a lower target all need more bits.
        assert!(bits_for_fpr(2 * n, t, q, g, p).unwrap() > m);
        assert!(bits_for_fpr(n, 4 * t, q, g, p).unwrap() > m);
        assert!(bits_for_fpr(n, t, 4 * q, g, p).unwrap() >= m); // equal while |q| < g
        assert!(bits_for_fpr(n, t, q, g, p / 2.0).unwrap() > m);
    }
    // Eq. 14 at face value: n log2 T ln(1 / (1 − (1 − p)^{1/(2 log2 |q|)})) / ln² 2.
    let expect =
        1e6 * 86_400f64.log2() * (1.0 / (1.0 - 0.99f64.powf(1.0 / (2.0 * 3_600f64.log2())))).ln()
            / C;
    assert_eq!(
        bits_for_fpr(1_000_000, 86_400, 3_600, 1, 0.01).unwrap(),
        expect.ceil() as u64
    );
    for bad in [
        bits_for_fpr(0, 10, 1, 1, 0.1),
        bits_for_fpr(1, 0, 1, 1, 0.1),
        bits_for_fpr(1, 10, 0, 1, 0.1),
        bits_for_fpr(1, 10, 1, 0, 0.1),
        bits_for_fpr(1, 10, 1, 1, 0.0),
        bits_for_fpr(1, 10, 1, 1, 1.0),
        bits_for_fpr(1, 10, 1, 1, f64::NAN),
        bits_for_fpr(u64::MAX, u64::MAX, 1 << 40, 1, 1e-300),
    ] {
        assert!(
            matches!(bad, Err(Error::InvalidParameter { .. })),
            "{bad:?}"
        );
    }
}
