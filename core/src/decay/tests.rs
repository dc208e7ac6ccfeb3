//! Cross-module tests of the decaying filters: posteriors against simulation, closed forms
//! against sums, decisions against standard answers.

use super::decision::Penalties;
use super::prior::DistinctModel;
use super::*;
use crate::hash::{mix64, KeyHash};
use proptest::prelude::*;
use std::collections::HashMap;

/// A uniform stream over `universe` items: the `t`-th item.
fn uniform_item(seed: u64, t: u64, universe: u64) -> u64 {
    mix64(seed ^ mix64(t)) % universe
}

/// Uniform in `[1, 10)` from a counter.
fn penalty(seed: u64, t: u64) -> f64 {
    1.0 + 9.0 * (mix64(seed ^ t) >> 11) as f64 / (1u64 << 53) as f64
}

/// Runs query-then-insert over a uniform stream, handing `(posterior, standard answer, truth)` of
/// each query after `warm` insertions to `each`.
fn simulate(
    mut step: impl FnMut(KeyHash) -> (f64, bool),
    mut insert: impl FnMut(KeyHash),
    (universe, window, warm, n, seed): (u64, u64, u64, u64, u64),
    mut each: impl FnMut(u64, f64, bool, bool),
) {
    let mut last: HashMap<u64, u64> = HashMap::new();
    for t in 0..warm + n {
        let x = uniform_item(seed, t, universe);
        let h = KeyHash::of(&x, 0);
        if t >= warm {
            let truth = last.get(&x).is_some_and(|&at| t - at < window);
            let (post, standard) = step(h);
            each(t, post, standard, truth);
        }
        insert(h);
        last.insert(x, t + 1);
    }
}

/// The paper's posterior error (eq. 35): queries binned by posterior into 20 bins of width 0.05,
/// the mean over queries of `|f_ℓ − M_ℓ|`, `f_ℓ` the fraction of bin `ℓ` truly in the window and
/// `M_ℓ` the bin's midpoint. Binning alone contributes up to 0.025.
fn posterior_error(samples: &[(f64, bool)]) -> f64 {
    let mut bins = [(0u64, 0u64); 20];
    for &(p, truth) in samples {
        let b = ((p * 20.0) as usize).min(19);
        bins[b].0 += 1;
        bins[b].1 += u64::from(truth);
    }
    let total: f64 = bins
        .iter()
        .enumerate()
        .filter(|(_, b)| b.0 > 0)
        .map(|(l, &(n, hits))| (hits as f64 / n as f64 - (l as f64 + 0.5) / 20.0).abs() * n as f64)
        .sum();
    total / samples.len() as f64
}

/// The paper's bound on its approximations' posterior error (§6.3–6.4: "under 0.05").
const POSTERIOR_ERROR_BOUND: f64 = 0.05;

#[test]
fn btbf_posterior_is_calibrated_on_a_tiny_filter() {
    let (universe, window) = (400u64, 200u64);
    let shape = BtbfShape::new(window, 600, 3, 5, 8).expect("shape");
    let inf = BtbfInference::new(shape, DistinctModel::uniform(universe).expect("universe"));
    let p = 1.0 / universe as f64;
    let filter = std::cell::RefCell::new(Btbf::new(shape, 0).expect("shape"));
    let mut samples = Vec::new();
    simulate(
        |h| {
            let f = filter.borrow();
            (inf.posterior(&f.observe_hash(h), p), f.query_hash(h))
        },
        |h| filter.borrow_mut().insert_hash(h),
        (universe, window, 2_000, 60_000, 11),
        |_, post, standard, truth| {
            assert!((0.0..=1.0).contains(&post));
            assert!(
                standard || !truth,
                "standard BTBF missed a key in the window"
            );
            samples.push((post, truth));
        },
    );
    // 60 000 queries: the sampling noise of eq. 35 is well under 0.005
    let err = posterior_error(&samples);
    assert!(
        err <= POSTERIOR_ERROR_BOUND,
        "btbf posterior error {err:.4}"
    );
}

#[test]
fn gbf_posterior_is_calibrated_on_a_tiny_filter() {
    // eq. 34 counts insertions, not distinct items (§5.3.2 declines D(i) to keep the closed
    // form), so it holds where repeats within the window are rare: w = |U| / 10 (D(w) ≈ 0.95 w).
    // At w = |U| / 2 the same filter measures 0.06–0.07 (docs/decay.md).
    let (universe, window) = (4_000u64, 400u64);
    let gbf = std::cell::RefCell::new(Gbf::new(3_600, 3, 3, 0).expect("shape"));
    let inf = GbfInference::new(&gbf.borrow());
    let p = 1.0 / universe as f64;
    let mut samples = Vec::new();
    simulate(
        |h| {
            let f = gbf.borrow();
            (
                inf.posterior(&f.observe_hash(h), p, window),
                f.query_hash(h),
            )
        },
        |h| gbf.borrow_mut().insert_hash(h),
        (universe, window, 2_000, 60_000, 12),
        |_, post, _, truth| samples.push((post, truth)),
    );
    let err = posterior_error(&samples);
    assert!(err <= POSTERIOR_ERROR_BOUND, "gbf posterior error {err:.4}");
}

#[test]
fn theorems_agree_with_summing_the_likelihood() {
    // Theorems 2–5 are closed forms of eq. 9 over Lemmas 4.1–4.2: sum the lemmas directly
    let universe = 300u64;
    let shape = BtbfShape::new(100, 300, 3, 5, 6).expect("shape");
    let inf = BtbfInference::new(shape, DistinctModel::uniform(universe).expect("universe"));
    let mut f = Btbf::new(shape, 4).expect("shape");
    let p = 1.0 / universe as f64;
    let mut cases = HashMap::new();
    for t in 0..5_000u64 {
        let x = uniform_item(5, t, universe);
        let obs = f.observe(&x);
        if t > 1_000 && obs.oldest.is_some() {
            cases
                .entry((obs.oldest, obs.at_oldest, obs.distinct, obs.in_block))
                .or_insert(obs);
        }
        f.insert(&x);
    }
    assert!(
        cases.len() > 20,
        "too few distinct observations: {}",
        cases.len()
    );
    for obs in cases.values() {
        let closed = inf.posterior(obs, p);
        let post = inf.age(obs, p, 1e-9, 1 << 22).expect("sum");
        let summed = post.window(shape.window);
        assert!(
            (closed - summed).abs() < 1e-6 + post.tail_mass,
            "{obs:?}: {closed} vs {summed}"
        );
        assert!((closed - inf.posterior_uncached(obs, p)).abs() < 1e-12);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn gbf_posteriors_lie_in_the_unit_interval_and_grow_with_w(
        k in 1u32..6, cells in 50u64..2_000, inserts in 0u64..3_000, key in any::<u64>(),
        p in 1e-5f64..0.5,
    ) {
        let mut f = Gbf::new(cells, k, k, 1).expect("shape");
        for i in 0..inserts {
            f.insert(&mix64(i));
        }
        let inf = GbfInference::new(&f);
        let obs = f.observe(&key);
        let mut prev = 0.0;
        for w in [1u64, 2, 5, 20, 100, 1_000, 100_000] {
            let post = inf.posterior(&obs, p, w);
            prop_assert!((0.0..=1.0).contains(&post));
            // each value is within ROUNDOFF_LIMIT of the exact eq. 33, which grows with w
            prop_assert!(post >= prev - 2.0 * ROUNDOFF_LIMIT, "w {}: {} after {}", w, post, prev);
            let exact = inf.posterior_direct(&obs, p, w);
            prop_assert!((post - exact).abs() <= ROUNDOFF_LIMIT, "w {}: {} vs {}", w, post, exact);
            prev = post;
        }
    }

    #[test]
    fn btbf_window_posteriors_lie_in_the_unit_interval_and_grow_with_w(
        inserts in 0u64..2_000, key in 0u64..200, block in 1u64..6,
    ) {
        let shape = BtbfShape::new(60, 200, 3, 6, block).expect("shape");
        let inf = BtbfInference::new(shape, DistinctModel::uniform(200).expect("universe"));
        let mut f = Btbf::new(shape, 2).expect("shape");
        for i in 0..inserts {
            f.insert(&(mix64(i) % 200));
        }
        let obs = f.observe(&key);
        let post = inf.posterior(&obs, 1.0 / 200.0);
        prop_assert!((0.0..=1.0).contains(&post));
        let age = inf.age(&obs, 1.0 / 200.0, 1e-6, 1 << 20).expect("some age has likelihood");
        let mut prev = 0.0;
        for w in [1u64, 10, 30, 60, 100, 1_000] {
            let m = age.window(w);
            prop_assert!((0.0..=1.0).contains(&m) && m >= prev - 1e-12);
            prev = m;
        }
        prop_assert!((age.window(60) - post).abs() < 1e-6 + age.tail_mass);
        prop_assert!(age.expected >= 0.0 && age.expected_error <= 1e-6);
    }
}

#[test]
fn min_penalty_decisions_never_cost_more_than_standard_answers() {
    // a uniform stream with known p_x = 1/|U|, penalties uniform in [1, 10) (§6.1.1), fixed seed
    let (universe, window, seed) = (2_000u64, 1_000u64, 21u64);
    let p = 1.0 / universe as f64;
    let model = DistinctModel::uniform(universe).expect("universe");
    for bits_per_item in [2u64, 6] {
        let shape = BtbfShape::for_bits(window, bits_per_item * window, 3).expect("shape");
        let inf = BtbfInference::new(shape, model.clone());
        let mut btbf = Btbf::new(shape, 0).expect("shape");
        let mut gbf = Gbf::new(bits_per_item * window, 2, 2, 0).expect("shape");
        let ginf = GbfInference::new(&gbf);
        // btbf standard, btbf inferential, gbf standard, gbf inferential
        let mut cost = [0.0f64; 4];
        let mut last: HashMap<u64, u64> = HashMap::new();
        for t in 0..40_000u64 {
            let x = uniform_item(seed, t, universe);
            let h = KeyHash::of(&x, 0);
            if t >= 5_000 {
                let truth = last.get(&x).is_some_and(|&at| t - at < window);
                let pen = Penalties::new(penalty(seed, 2 * t), penalty(seed, 2 * t + 1))
                    .expect("penalties");
                let gobs = gbf.observe_hash(h);
                let answers = [
                    btbf.query_hash(h),
                    pen.decide(inf.posterior(&btbf.observe_hash(h), p)),
                    gobs.intact(),
                    pen.decide(ginf.posterior(&gobs, p, window)),
                ];
                for (c, a) in cost.iter_mut().zip(answers) {
                    *c += pen.cost(a, truth);
                }
            }
            btbf.insert_hash(h);
            gbf.insert_hash(h);
            last.insert(x, t + 1);
        }
        assert!(
            cost[1] <= cost[0],
            "{bits_per_item} bits/item: BTBF {cost:?}"
        );
        assert!(
            cost[3] <= cost[2],
            "{bits_per_item} bits/item: GBF {cost:?}"
        );
    }
}

#[test]
fn gbf_age_posterior_agrees_with_eq34_and_dates_a_fresh_key() {
    let mut f = Gbf::new(2_000, 3, 3, 0).expect("shape");
    let inf = GbfInference::new(&f);
    for i in 0..1_000u64 {
        f.insert(&i);
    }
    let p = 1e-3;
    for key in [999u64, 990, 500, 5_000] {
        let obs = f.observe(&key);
        let age = inf.age(&obs, p, 1e-6, 1 << 22).expect("posterior");
        for w in [10u64, 100, 1_000] {
            let closed = inf.posterior(&obs, p, w);
            assert!(
                (age.window(w) - closed).abs() < 1e-6 + age.tail_mass,
                "key {key} w {w}"
            );
        }
        assert!(age.expected_error <= 1e-6);
    }
    // the last key inserted is most likely 0 insertions old
    assert_eq!(
        inf.age(&f.observe(&999u64), p, 1e-6, 1 << 22)
            .expect("posterior")
            .most_likely,
        0
    );
}

#[test]
fn a_recency_prior_keeps_bursty_rare_items_that_a_whole_stream_frequency_prior_misses() {
    // three heavy items carry most insertions; rare items come in bursts of 20. Whole-stream
    // frequencies call a bursting item rare (false negatives); a recency sketch of 8 counters,
    // query-then-insert, sees its burst.
    use super::prior::{FrequencyTable, SampleProbability};
    let window = 16u64;
    let item = |t: u64| {
        if (t / 20) % 10 == 9 {
            100 + t / 200 // one rare item a burst, never seen before or after
        } else {
            mix64(t) % 3
        }
    };
    let stream: Vec<KeyHash> = (0..20_000).map(|t| KeyHash::of(&item(t), 0)).collect();
    let mut frequency = FrequencyTable::new(1.0).expect("floor");
    stream.iter().for_each(|&h| frequency.observe(h));
    let mut recency = RecencySketch::new(8, 1, window, 0.5, 1).expect("sketch");
    let shape = BtbfShape::for_bits(window, 8 * window, 3).expect("shape");
    let inf = BtbfInference::new(shape, DistinctModel::Identity);
    let mut btbf = Btbf::new(shape, 0).expect("shape");
    let mut last: HashMap<KeyHash, usize> = HashMap::new();
    let (mut missed_frequency, mut missed_recency) = (0u32, 0u32);
    for (t, &h) in stream.iter().enumerate() {
        let truth = last.get(&h).is_some_and(|&at| ((t - at) as u64) < window);
        let obs = btbf.observe_hash(h);
        let p_recency = recency.p_x(h);
        assert!(p_recency > 0.0 && p_recency <= 1.0);
        // equal penalties: POS iff the posterior is at least 1/2
        missed_frequency += u32::from(truth && inf.posterior(&obs, frequency.p_x(h)) < 0.5);
        missed_recency += u32::from(truth && inf.posterior(&obs, p_recency) < 0.5);
        btbf.insert_hash(h);
        recency.insert_hash(h);
        last.insert(h, t + 1);
    }
    assert!(
        missed_recency * 4 < missed_frequency,
        "false negatives: recency {missed_recency}, frequency {missed_frequency}"
    );
}

#[test]
fn an_answer_rate_prior_fed_posteriors_recovers_p_where_standard_answers_overestimate_it() {
    // a uniform stream (p = 1/|U|, 39% of queries in the window) through a BTBF of 8 bits per
    // item, whose standard answers are POS for 58%; the prior learned from the filter's
    // posteriors (empirical Bayes) settles near the true p (the mean posterior at the true p is
    // 0.371, not 0.393: the theorems' approximation), the one learned from standard answers
    // far above it
    let (universe, window, seed) = (4_000u64, 2_000u64, 5u64);
    let shape = BtbfShape::for_bits(window, 8 * window, 3).expect("shape");
    let inf = BtbfInference::new(shape, DistinctModel::uniform(universe).expect("universe"));
    let filter = std::cell::RefCell::new(Btbf::new(shape, 0).expect("shape"));
    let posterior_fed = std::cell::RefCell::new(AnswerRatePrior::new(window).expect("window"));
    let mut answer_fed = AnswerRatePrior::new(window).expect("window");
    let (mut positives, mut truths, mut queries) = (0u64, 0u64, 0u64);
    simulate(
        |h| {
            let f = filter.borrow();
            let obs = f.observe_hash(h);
            let mut prior = posterior_fed.borrow_mut();
            let post = inf.posterior(&obs, prior.p());
            prior.observe(post);
            (post, obs.oldest.is_some())
        },
        |h| filter.borrow_mut().insert_hash(h),
        (universe, window, 8_000, 120_000, seed),
        |_, _, standard, truth| {
            answer_fed.observe(if standard { 1.0 } else { 0.0 });
            positives += u64::from(standard);
            truths += u64::from(truth);
            queries += 1;
        },
    );
    let p = 1.0 / universe as f64;
    let fp_share = (positives - truths) as f64 / queries as f64;
    assert!(
        fp_share > 0.1,
        "too few false positives to tell: {fp_share}"
    );
    let learned = posterior_fed.borrow().p();
    assert!(
        (learned / p - 1.0).abs() < 0.25,
        "posterior-fed p {learned:.3e}, true {p:.3e}"
    );
    assert!(
        answer_fed.p() / p > 1.5,
        "answer-fed p {:.3e}, true {p:.3e}",
        answer_fed.p()
    );
}

#[test]
fn a_floor_from_the_answer_rate_keeps_bursty_rare_items_that_a_frequency_prior_misses() {
    // the stream of the recency test above: three heavy items, rare ones in bursts of 20; the
    // whole-stream frequency floored by the answer-rate prior (two registers) sees the bursts
    use super::prior::{AtLeast, FrequencyTable, SampleProbability};
    let window = 16u64;
    let item = |t: u64| {
        if (t / 20) % 10 == 9 {
            100 + t / 200
        } else {
            mix64(t) % 3
        }
    };
    let stream: Vec<KeyHash> = (0..20_000).map(|t| KeyHash::of(&item(t), 0)).collect();
    let mut frequency = FrequencyTable::new(1.0).expect("floor");
    stream.iter().for_each(|&h| frequency.observe(h));
    let mut rate = AnswerRatePrior::new(window).expect("window");
    let shape = BtbfShape::for_bits(window, 8 * window, 3).expect("shape");
    let inf = BtbfInference::new(shape, DistinctModel::Identity);
    let mut btbf = Btbf::new(shape, 0).expect("shape");
    let mut last: HashMap<KeyHash, usize> = HashMap::new();
    let (mut missed_frequency, mut missed_floored, mut false_floored, mut false_standard) =
        (0u32, 0u32, 0u32, 0u32);
    for (t, &h) in stream.iter().enumerate() {
        let truth = last.get(&h).is_some_and(|&at| ((t - at) as u64) < window);
        let obs = btbf.observe_hash(h);
        let floored = inf.posterior(&obs, AtLeast(&frequency, &rate).p_x(h)) >= 0.5;
        missed_frequency += u32::from(truth && inf.posterior(&obs, frequency.p_x(h)) < 0.5);
        missed_floored += u32::from(truth && !floored);
        false_floored += u32::from(!truth && floored);
        false_standard += u32::from(!truth && obs.oldest.is_some());
        rate.observe(inf.posterior(&obs, rate.p()));
        btbf.insert_hash(h);
        last.insert(h, t + 1);
    }
    assert!(
        missed_floored * 4 < missed_frequency,
        "false negatives: floored {missed_floored}, frequency {missed_frequency}"
    );
    // equal penalties: the floored answers cost fewer errors than the standard ones
    assert!(
        missed_floored + false_floored < false_standard,
        "floored {missed_floored} FN + {false_floored} FP, standard {false_standard} FP"
    );
}
