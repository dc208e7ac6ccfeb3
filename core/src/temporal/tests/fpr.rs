//! Measured false positive rates against the analysis.

use super::*;

pub(super) const T: u64 = 4096;

/// `n` records with random keys at random ticks below `T`.
pub(super) fn random_records(n: u64, salt: u64) -> Vec<(u64, u64)> {
    (0..n)
        .map(|i| (mix64(i ^ salt), mix64(i.wrapping_mul(31) ^ !salt) % T))
        .collect()
}

/// A random query range of length `len` for an absent key.
pub(super) fn query(i: u64, len: u64) -> (u64, TimeRange) {
    let s = mix64(i ^ 0xabc) % (T - len + 1);
    (u64::MAX - i, TimeRange::new(s, s + len - 1).unwrap())
}

/// Checks a count of false positives against the sum of per-query predictions (a Poisson-binomial):
/// |FP − Σp| ≤ z99 · sqrt(Σ p(1 − p)).
pub(super) fn assert_poisson_binomial(what: &str, fp: u64, predicted: &[f64]) {
    let mean: f64 = predicted.iter().sum();
    let sd = predicted.iter().map(|p| p * (1.0 - p)).sum::<f64>().sqrt();
    assert!(
        (fp as f64 - mean).abs() <= Z99 * sd,
        "{what}: {fp} false positives, predicted {mean:.1} ± {:.1} (99%)",
        Z99 * sd
    );
}

pub(super) fn fpr_of(f: &crate::bloom::BloomFilter) -> f64 {
    f.estimated_fpr()
}

#[test]
fn sbf_fpr_matches_eq4() {
    let mut f = Sbf::new(400_000, 4, 9).unwrap();
    for (k, t) in random_records(40_000, 1) {
        f.insert(&k, t).unwrap();
    }
    let p = fpr_of(f.filter());
    for len in [1u64, 8, 64] {
        let queries = 30_000;
        let fp = (0..queries)
            .filter(|&i| {
                let (k, range) = query(i, len);
                f.query(&k, range)
            })
            .count() as u64;
        // eq. 4 with the filter's own p(b) = fill^k.
        let expect = 1.0 - (1.0 - p).powi(len as i32);
        assert_rate_near(&format!("SBF |q| = {len}"), fp, queries, expect);
    }
}

#[test]
fn pbf2_fpr_matches_eq9_with_each_levels_fill() {
    let mut f = Pbf2::uniform(T, 13 * 40_000, 4, 10).unwrap();
    for (k, t) in random_records(60_000, 2) {
        f.insert(&k, t).unwrap();
    }
    let level_p: Vec<f64> = (0..f.levels())
        .map(|l| fpr_of(f.level(l).unwrap()))
        .collect();
    for len in [1u64, 16, 256, 2000] {
        let mut predicted = Vec::new();
        let mut fp = 0;
        for i in 0..20_000 {
            let (k, range) = query(i, len);
            fp += u64::from(f.query(&k, range));
            // eq. 9: 1 − Π over the cover's blocks of (1 − p(b_ℓ)).
            let none: f64 = dyadic_cover(range, f.levels() - 1)
                .map(|b| 1.0 - level_p[b.level as usize])
                .product();
            predicted.push(1.0 - none);
        }
        assert_poisson_binomial(&format!("PBF-2 |q| = {len}"), fp, &predicted);
    }
}

#[test]
fn pbf1_fpr_matches_its_routes() {
    let g = 4;
    let nodes = Pbf1::layout(T, g).unwrap().len() as u64;
    let mut f = Pbf1::uniform(T, g, 1200 * (nodes + 1), 4, 11).unwrap();
    for (k, t) in random_records(20_000, 3) {
        f.insert(&k, t).unwrap();
    }
    let p_sbf = fpr_of(f.sbf().unwrap().filter());
    let p_node = |h: u32, i: u64| fpr_of(f.node(h, i).unwrap());
    for len in [1u64, 7, 100, 1000] {
        let mut predicted = Vec::new();
        let mut fp = 0;
        for i in 0..20_000 {
            let (k, range) = query(i, len);
            fp += u64::from(f.query(&k, range));
            // eq. 6 refined per route: every covered node, and every partial leaf followed by its
            // SBF ticks, must all answer no.
            let c = f.cover(range);
            let mut none: f64 = c.nodes.iter().map(|&(h, i)| 1.0 - p_node(h, i)).product();
            for (leaf, ticks) in &c.partial {
                let sbf_yes = 1.0 - (1.0 - p_sbf).powi(ticks.len() as i32);
                none *= 1.0 - p_node(0, *leaf) * sbf_yes;
            }
            predicted.push(1.0 - none);
        }
        assert_poisson_binomial(&format!("PBF-1 |q| = {len}"), fp, &predicted);
    }
}
