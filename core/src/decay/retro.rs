//! Retrospective queries (paper 004 §2.3.3): the posterior distribution of the insertion age
//! `P(I_x = i | R_x)` (eq. 7), its most likely value, the expected age `E[I_x | R_x]` (eq. 8) and
//! the mass below any window, from a filter's likelihood `P(R_x | i) ∈ [0, 1]` and the geometric
//! prior `p (1 − p)^i`.
//!
//! The sums are truncated at the first `N` ages. With the likelihood at most 1, the neglected
//! prior mass is at most `(1 − p)^N` and the neglected part of `Σ i P(i) P(R_x | i)` at most
//! `(1 − p)^N (N + (1 − p)/p)`, so the truncated mean `E_N = S_N / Z_N` is within
//! `(1 − p)^N (N + (1 − p)/p) / Z_N + E_N (1 − p)^N / Z_N` of eq. 8: the stated
//! [`AgePosterior::expected_error`]. Summing stops once that bound is below the tolerance asked
//! for (or after `max_terms` ages).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The truncated posterior of the insertion age.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgePosterior {
    /// `P(I_x = i | R_x)` for `i < N`, normalized over the first `N` ages.
    pub pmf: Vec<f64>,
    /// `argmax_i P(I_x = i | R_x)`: exact, since no age past `N` can beat it (checked).
    pub most_likely: u64,
    /// `E[I_x | R_x]` truncated at `N` ages (eq. 8).
    pub expected: f64,
    /// Bound on `|E[I_x | R_x] − expected|`.
    pub expected_error: f64,
    /// Prior mass beyond the truncation, `(1 − p)^N`: bounds the error of any window mass.
    pub tail_mass: f64,
}

impl AgePosterior {
    /// `P(I_x < w | R_x)` over the truncated distribution (eq. 9); off by at most
    /// `tail_mass / Z_N` relative.
    pub fn window(&self, w: u64) -> f64 {
        self.pmf.iter().take(w as usize).sum::<f64>().min(1.0)
    }
}

/// Sums `P(i) P(R_x | i)` for `p ∈ (0, 1]` until the bound on the mean's error falls below
/// `tolerance` (or `max_terms` ages). Errors when the likelihood vanishes on every age summed.
pub fn age_posterior(
    p: f64,
    likelihood: impl Fn(u64) -> f64,
    tolerance: f64,
    max_terms: u64,
) -> Result<AgePosterior> {
    if !(p > 0.0 && p <= 1.0) {
        return Err(Error::invalid("p_x", format!("{p} is not in (0, 1]")));
    }
    let q = 1.0 - p;
    let (mut z, mut s) = (0.0, 0.0);
    let mut weights = Vec::new();
    let (mut best, mut best_at) = (0.0, 0u64);
    let mut prior = p; // p q^i
    let mut survive = 1.0; // q^i
    let mut i = 0u64;
    let error = |n: u64, z: f64, s: f64, survive: f64| {
        let tail_s = survive * (n as f64 + q / p);
        tail_s / z + (s / z) * survive / z
    };
    while i < max_terms {
        let t = prior * likelihood(i).clamp(0.0, 1.0);
        weights.push(t);
        z += t;
        s += i as f64 * t;
        if t > best {
            (best, best_at) = (t, i);
        }
        i += 1;
        prior *= q;
        survive *= q;
        // stop when the mean is within tolerance and no later age can be the mode
        if z > 0.0 && error(i, z, s, survive) <= tolerance && best >= prior {
            break;
        }
    }
    if z <= 0.0 {
        return Err(Error::invalid(
            "observation",
            format!("the likelihood is 0 on the first {i} ages"),
        ));
    }
    Ok(AgePosterior {
        pmf: weights.iter().map(|t| t / z).collect(),
        most_likely: best_at,
        expected: s / z,
        expected_error: error(i, z, s, survive),
        tail_mass: survive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_likelihood_gives_the_prior() {
        let p = 0.05;
        let post = age_posterior(p, |_| 1.0, 1e-6, 100_000).expect("posterior");
        // the geometric mean (1 − p)/p
        assert!((post.expected - 19.0).abs() <= 1e-6 + post.expected_error);
        assert!(post.expected_error <= 1e-6);
        assert_eq!(post.most_likely, 0);
        assert!((post.window(10) - (1.0 - 0.95f64.powi(10))).abs() < 1e-6);
    }

    #[test]
    fn a_step_likelihood_moves_the_mode_and_the_mean() {
        // P(R|i) = 0 below 30: the posterior is the prior conditioned on I ≥ 30
        let post =
            age_posterior(0.1, |i| f64::from(u8::from(i >= 30)), 1e-9, 10_000).expect("posterior");
        assert_eq!(post.most_likely, 30);
        assert!((post.expected - 39.0).abs() < 1e-6, "{}", post.expected);
        assert_eq!(post.window(30), 0.0);
    }

    #[test]
    fn zero_likelihood_is_an_error() {
        assert!(age_posterior(0.5, |_| 0.0, 1e-6, 100).is_err());
        assert!(age_posterior(0.0, |_| 1.0, 1e-6, 100).is_err());
    }
}
