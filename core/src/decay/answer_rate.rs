//! A prior learned from the filter's own answers (empirical Bayes): one `p` for every item, set
//! so that the prior probability of being in the window matches the average probability the
//! filter gives, before each insertion, that the item is already there. An extension of paper
//! 004, whose §6.4.2 takes `p_x` from frequencies over the whole stream.
//!
//! Under Assumption 2 with the same `p` for every item, an item is in the last `w` insertions
//! with probability `1 − (1 − p)^w` (eq. 5 with `α = 0`, `β = w`). Before each insertion,
//! [`AnswerRatePrior::observe`] takes the filter's probability that the item is in the window:
//! its posterior `P(I_x < w | R_x)` under the current `p̂`, or its standard answer as 1 or 0.
//! The prior solves that equation for `p` with the running mean `f`:
//!
//! `p̂ = 1 − (1 − f)^(1/w)`, with `f = (Σ observed + 1) / (observations + 2)` (Laplace's rule, so
//! `p̂` lies in `(0, 1)` from the first query on).
//!
//! **Why posteriors.** Standard answers overestimate the in-window rate `f*` by the filter's false
//! positives, `f = f* + (1 − f*)·φ`. Posteriors do not: if the filter's evidence has likelihood
//! `L_in` for an item in the window and `L_out` otherwise, the mean posterior under a prior `f` is
//! `E[f L / (f L_in + (1 − f) L_out)]` over the evidence's law under `f*`, which equals `f` at
//! `f = f*` (the posterior is calibrated when the prior is the truth); for the no-false-negative
//! filters' POS/NEG evidence this map has slope `φ / P(POS) < 1` there, so the running mean
//! settles at `f*`. In practice it settles near it: the posterior's own approximation error
//! (Theorems 2–5) moves the fixed point by that error over `1 − slope`. On a uniform stream
//! through a BTBF of 8 bits per item (`tests.rs`), `p̂` ends 11% below the true `p` where
//! standard answers put it 73% above; a filter that answers POS for nearly everything (slope
//! near 1) gives a looser `p̂`.
//!
//! It reads no future and takes two registers of O(1) size, which are left out of a filter's
//! budget as the BTBF's current timestamp is.
//!
//! It knows nothing of individual items: on a stream with a known law (Zipf) a per-item `p_x`
//! is better. It helps where whole-stream frequencies mislead — items that come in bursts,
//! whose rate inside a burst is far above their long-run frequency — and where no frequency is
//! known at all.
//!
//! ```
//! use chronobloom_core::decay::prior::SampleProbability;
//! use chronobloom_core::decay::AnswerRatePrior;
//! use chronobloom_core::hash::KeyHash;
//! let mut prior = AnswerRatePrior::new(16).unwrap();
//! assert_eq!(prior.in_window_rate(), 0.5); // nothing seen yet
//! for i in 0..1_000 {
//!     // three insertions in four find their item in the window
//!     prior.observe(if i % 4 != 0 { 1.0 } else { 0.0 });
//! }
//! let p = prior.p_x(KeyHash::of(&1u64, 0));
//! // 1 − (1 − p)^16 is the observed rate
//! assert!((1.0 - (1.0 - p).powi(16) - prior.in_window_rate()).abs() < 1e-12);
//! assert!((prior.in_window_rate() - 0.75).abs() < 0.01);
//! ```

use super::prior::SampleProbability;
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use serde::{Deserialize, Serialize};

/// One `p` for every item, from the filter's own in-window probabilities before insertions
/// (`docs/decay.md`, "A floor learned from the filter's posteriors", and this file's module
/// notes).
///
/// Read back with serde, it is checked: a window of at least 1, and a sum of observations that
/// is finite and between 0 and their number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RateRepr")]
pub struct AnswerRatePrior {
    window: u64,
    /// Σ of the observed in-window probabilities.
    sum: f64,
    observations: u64,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
struct RateRepr {
    window: u64,
    sum: f64,
    observations: u64,
}

impl TryFrom<RateRepr> for AnswerRatePrior {
    type Error = Error;
    fn try_from(r: RateRepr) -> Result<Self> {
        let empty = AnswerRatePrior::new(r.window)?;
        if !(r.sum >= 0.0 && r.sum <= r.observations as f64) {
            return Err(Error::invalid(
                "answer rate",
                format!("a sum of {} over {} observations", r.sum, r.observations),
            ));
        }
        Ok(AnswerRatePrior {
            sum: r.sum,
            observations: r.observations,
            ..empty
        })
    }
}

impl AnswerRatePrior {
    /// A prior for a filter of window `w` insertions, with no answer seen (`f = 1/2`).
    ///
    /// Errors: `window` 0.
    pub fn new(window: u64) -> Result<Self> {
        if window == 0 {
            return Err(Error::invalid("window", "0: must be at least 1"));
        }
        Ok(AnswerRatePrior {
            window,
            sum: 0.0,
            observations: 0,
        })
    }

    /// Counts the filter's probability that an item about to be inserted is in the window: its
    /// posterior under [`Self::p`], or a standard answer as 1 (POS) or 0 (NEG). Values outside
    /// `[0, 1]` are clamped, and NaN counts as 1 (towards the standard answer).
    pub fn observe(&mut self, in_window: f64) {
        // halving both keeps the rate when the count would overflow
        if self.observations == u64::MAX {
            self.observations /= 2;
            self.sum /= 2.0;
        }
        self.observations += 1;
        let v = if in_window.is_nan() {
            1.0
        } else {
            in_window.clamp(0.0, 1.0)
        };
        self.sum = (self.sum + v).min(self.observations as f64);
    }

    /// The window `w` the prior is solved for.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// `f`: the mean observed in-window probability, with Laplace's pseudo-counts (in `(0, 1)`).
    pub fn in_window_rate(&self) -> f64 {
        (self.sum + 1.0) / (self.observations as f64 + 2.0)
    }

    /// `p̂ = 1 − (1 − f)^(1/w)`, in `(0, 1)`.
    pub fn p(&self) -> f64 {
        let f = self.in_window_rate();
        -((-f).ln_1p() / self.window as f64).exp_m1()
    }
}

impl SampleProbability for AnswerRatePrior {
    fn p_x(&self, _hash: KeyHash) -> f64 {
        self.p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decay::prior::prior_range;
    use proptest::prelude::*;

    #[test]
    fn a_window_of_zero_is_refused() {
        assert!(AnswerRatePrior::new(0).is_err());
    }

    #[test]
    fn serde_round_trips_and_refuses_more_positives_than_answers() {
        let mut prior = AnswerRatePrior::new(8).unwrap();
        (0..10).for_each(|i| prior.observe(f64::from(i % 3) / 2.0));
        let json = serde_json::to_string(&prior).unwrap();
        assert_eq!(
            serde_json::from_str::<AnswerRatePrior>(&json).unwrap(),
            prior
        );
        let bad = r#"{"window":8,"sum":10.5,"observations":10}"#;
        assert!(serde_json::from_str::<AnswerRatePrior>(bad).is_err());
        let negative = r#"{"window":8,"sum":-0.5,"observations":10}"#;
        assert!(serde_json::from_str::<AnswerRatePrior>(negative).is_err());
        let zero = r#"{"window":0,"sum":0,"observations":0}"#;
        assert!(serde_json::from_str::<AnswerRatePrior>(zero).is_err());
    }

    /// On a uniform stream over `u` items, the rate of insertions whose item is in the last `w`
    /// is `1 − (1 − 1/u)^w`: the prior learned from exact answers recovers `p = 1/u`.
    #[test]
    fn exact_answers_on_a_uniform_stream_recover_one_over_u() {
        let (u, w) = (500u64, 200u64);
        let mut last = vec![None; u as usize];
        let mut prior = AnswerRatePrior::new(w).unwrap();
        for t in 0..400_000u64 {
            let x = crate::hash::mix64(t ^ 0x51) % u;
            let seen = last[x as usize].is_some_and(|at: u64| t - at <= w);
            prior.observe(if seen { 1.0 } else { 0.0 });
            last[x as usize] = Some(t);
        }
        let p = prior.p();
        assert!(
            (p * u as f64 - 1.0).abs() < 0.02,
            "p = {p}, 1/u = {}",
            1.0 / u as f64
        );
    }

    proptest! {
        /// `p̂` lies in (0, 1), solves `P(I < w) = f` (eq. 5), and grows with the POS rate.
        #[test]
        fn p_solves_the_window_prior_and_grows_with_the_rate(
            window in 1u64..100_000,
            observations in 0u64..10_000,
            share in 0.0f64..=1.0,
        ) {
            let sum = observations as f64 * share;
            let at = |sum: f64| AnswerRatePrior { window, sum, observations };
            let prior = at(sum);
            let p = prior.p();
            prop_assert!(p > 0.0 && p < 1.0);
            let f = prior.in_window_rate();
            prop_assert!((prior_range(p, 0, window) - f).abs() < 1e-9 * f.max(1e-3));
            if sum + 1.0 <= observations as f64 {
                prop_assert!(at(sum + 1.0).p() > p);
            }
        }

        /// Observations are clamped to [0, 1] (NaN as 1): the mean stays a probability.
        #[test]
        fn observations_out_of_range_are_clamped(values in proptest::collection::vec(
            prop_oneof![Just(f64::NAN), Just(f64::INFINITY), -2.0f64..3.0], 1..50)) {
            let mut prior = AnswerRatePrior::new(4).unwrap();
            values.iter().for_each(|&v| prior.observe(v));
            let f = prior.in_window_rate();
            prop_assert!(f > 0.0 && f < 1.0);
        }
    }
}
