//! Helpers shared by the window filters' statistical tests.

/// The one-sided 99% upper quantile of Binomial(n, p) by the normal approximation (z = 2.326):
/// a count above it rejects "the false positive rate is at most p" at the 1% level.
pub(super) fn binomial_upper_99(n: u64, p: f64) -> f64 {
    let mean = n as f64 * p;
    mean + 2.326 * (mean * (1.0 - p)).sqrt()
}
