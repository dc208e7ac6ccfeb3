//! Test support: statistical bounds shared by the crate's tests.

/// z for a two-sided 99% normal interval.
pub const Z99: f64 = 2.576;

/// The 99% interval for the number of successes in `trials` Bernoulli(`p`) trials, as a rate:
/// `p ± z·sqrt(p(1 − p)/trials)` (normal approximation to the binomial, fine for `trials·p > 30`).
pub fn binomial_99(p: f64, trials: u64) -> (f64, f64) {
    let half = Z99 * (p * (1.0 - p) / trials as f64).sqrt();
    (p - half, p + half)
}

/// Asserts that `hits / trials` lies in the 99% interval around `p`.
pub fn assert_rate_near(what: &str, hits: u64, trials: u64, p: f64) {
    let rate = hits as f64 / trials as f64;
    let (lo, hi) = binomial_99(p, trials);
    assert!(
        (lo..=hi).contains(&rate),
        "{what}: measured {rate:.6} ({hits}/{trials}) outside the 99% interval [{lo:.6}, {hi:.6}] of {p:.6}"
    );
}

/// Variance of the number of empty bins after throwing `balls` balls into `m` bins uniformly:
/// `m(m−1)(1−2/m)^b + m(1−1/m)^b − m²(1−1/m)^{2b}`.
pub fn empty_bins_variance(m: f64, balls: f64) -> f64 {
    let one = (1.0 - 1.0 / m).powf(balls);
    m * (m - 1.0) * (1.0 - 2.0 / m).powf(balls) + m * one - m * m * one * one
}

/// Checks a Bloom filter's measured false positives (`fp` of `queries` absent keys) against
///
/// 1. the realized fill: `(ones/m)^k` with the binomial 99% interval of the queries alone, and
/// 2. eq. 2 for (m, k, n): the 99% interval of the sum of the query sampling variance and the
///    variance the filter's random fill adds (delta method on the empty-bin count of eq. 1).
pub fn assert_bloom_fpr(what: &str, fp: u64, queries: u64, m: u64, k: u32, n: u64, ones: u64) {
    let kf = f64::from(k);
    let fill = ones as f64 / m as f64;
    assert_rate_near(
        &format!("{what} (given its fill)"),
        fp,
        queries,
        fill.powi(k as i32),
    );

    let mf = m as f64;
    let z = (-kf * n as f64 / mf).exp();
    let p = (1.0 - z).powf(kf);
    let var_fill = empty_bins_variance(mf, kf * n as f64) / (mf * mf);
    let slope = kf * (1.0 - z).powf(kf - 1.0);
    let sd = (p * (1.0 - p) / queries as f64 + slope * slope * var_fill).sqrt();
    let rate = fp as f64 / queries as f64;
    assert!(
        (rate - p).abs() <= Z99 * sd,
        "{what}: measured {rate:.6} ({fp}/{queries}) outside eq. 2's 99% interval {p:.6} ± {:.6}",
        Z99 * sd
    );
}

/// The one-sided 99% upper quantile of Binomial(n, p) by the normal approximation (z = 2.326):
/// a count above it rejects "the false positive rate is at most p" at the 1% level.
pub fn binomial_upper_99(n: u64, p: f64) -> f64 {
    let mean = n as f64 * p;
    mean + 2.326 * (mean * (1.0 - p)).sqrt()
}
