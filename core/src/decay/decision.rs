//! Minimum-penalty decisions (paper 004 §2.6): with per-query penalties `$FP` and `$FN`, POS costs
//! `$FP (1 − P)` in expectation and NEG costs `$FN P`, `P = P(I_x < w | R_x)`; answer POS iff
//! `$FP (1 − P) ≤ $FN P`.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The penalties of one query's two possible errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Penalties {
    /// `$FP`: cost of answering POS when `I_x ≥ w`.
    pub false_positive: f64,
    /// `$FN`: cost of answering NEG when `I_x < w`.
    pub false_negative: f64,
}

impl Penalties {
    /// Penalties that must be finite and non-negative.
    pub fn new(false_positive: f64, false_negative: f64) -> Result<Self> {
        for (name, v) in [
            ("false positive penalty", false_positive),
            ("false negative penalty", false_negative),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("{v} is not a finite non-negative cost"),
                ));
            }
        }
        Ok(Penalties {
            false_positive,
            false_negative,
        })
    }

    /// The minimum expected penalty answer for posterior `posterior`: POS iff
    /// `$FP (1 − P) ≤ $FN P`.
    ///
    /// ```
    /// use chronobloom_core::decay::decision::Penalties;
    /// let costly_miss = Penalties::new(1.0, 9.0).unwrap();
    /// assert!(costly_miss.decide(0.2)); // 0.8 ≤ 1.8
    /// assert!(!costly_miss.decide(0.05)); // 0.95 > 0.45
    /// ```
    #[inline]
    pub fn decide(&self, posterior: f64) -> bool {
        self.false_positive * (1.0 - posterior) <= self.false_negative * posterior
    }

    /// The penalty of answering `answer` when the truth is `truth` (`I_x < w`).
    #[inline]
    pub fn cost(&self, answer: bool, truth: bool) -> f64 {
        match (answer, truth) {
            (true, false) => self.false_positive,
            (false, true) => self.false_negative,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_minimize_the_expected_penalty() {
        let pen = Penalties::new(3.0, 5.0).expect("penalties");
        for i in 0..=100 {
            let p = f64::from(i) / 100.0;
            let pos = pen.false_positive * (1.0 - p);
            let neg = pen.false_negative * p;
            assert_eq!(pen.decide(p), pos <= neg);
            let chosen = if pen.decide(p) { pos } else { neg };
            assert!(chosen <= pos.min(neg));
        }
        assert!(Penalties::new(-1.0, 1.0).is_err());
        assert!(Penalties::new(1.0, f64::NAN).is_err());
    }
}
