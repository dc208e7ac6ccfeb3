//! The filters under test behind one interface, and the query-then-insert run that tallies their
//! answers.

use crate::stream::Stream;
use chronobloom::core::decay::baselines::{prior_only, SimpleBuffer};
use chronobloom::core::decay::decision::Penalties;
use chronobloom::core::decay::prior::{AtLeast, DistinctModel, FnProbability, SampleProbability};
use chronobloom::core::decay::{
    AnswerRatePrior, Btbf, BtbfInference, Gbf, GbfInference, RecencySketch,
};
use chronobloom::core::hash::KeyHash;

/// Totals of one decision rule over the measured queries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub(crate) penalty: f64,
    pub(crate) fp: u64,
    pub(crate) fn_: u64,
    /// (queries, in window) per posterior bin of width 0.05.
    bins: [(u64, u64); 20],
}

impl Tally {
    fn add(&mut self, answer: bool, truth: bool, pen: &Penalties, posterior: Option<f64>) {
        self.penalty += pen.cost(answer, truth);
        self.fp += u64::from(answer && !truth);
        self.fn_ += u64::from(!answer && truth);
        if let Some(p) = posterior {
            let b = ((p * 20.0) as usize).min(19);
            self.bins[b].0 += 1;
            self.bins[b].1 += u64::from(truth);
        }
    }

    /// Eq. 35.
    pub(crate) fn posterior_error(&self) -> Option<f64> {
        let n: u64 = self.bins.iter().map(|b| b.0).sum();
        (n > 0).then(|| {
            let sum: f64 = (self.bins.iter().enumerate())
                .filter(|(_, b)| b.0 > 0)
                .map(|(l, &(c, h))| {
                    (h as f64 / c as f64 - (l as f64 + 0.5) / 20.0).abs() * c as f64
                })
                .sum();
            sum / n as f64
        })
    }
}

/// A filter under test: its standard answer (if any) and posterior for a key, and insertion.
pub(crate) trait Candidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64);
    fn insert(&mut self, h: KeyHash);
}

pub(crate) struct BtbfCandidate(pub(crate) Btbf, pub(crate) BtbfInference);
impl Candidate for BtbfCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (Some(obs.oldest.is_some()), self.1.posterior(&obs, p))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

/// The inferential BTBF with `p_x` from a recency sketch (the stream's `p_x` is ignored).
pub(crate) struct RecencyCandidate(
    pub(crate) Btbf,
    pub(crate) BtbfInference,
    pub(crate) RecencySketch,
);
impl Candidate for RecencyCandidate {
    fn answer(&self, h: KeyHash, _p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (
            Some(obs.oldest.is_some()),
            self.1.posterior(&obs, self.2.p_x(h)),
        )
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
        self.2.insert_hash(h);
    }
}

/// The inferential BTBF with the stream's `p_x` floored by an [`AnswerRatePrior`], which learns
/// from the posteriors under its own `p` before each insertion.
pub(crate) struct FlooredCandidate(
    pub(crate) Btbf,
    pub(crate) BtbfInference,
    pub(crate) AnswerRatePrior,
);
impl Candidate for FlooredCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        let floored = AtLeast(FnProbability(|_| p), &self.2).p_x(h);
        (Some(obs.oldest.is_some()), self.1.posterior(&obs, floored))
    }
    fn insert(&mut self, h: KeyHash) {
        // query, then insert, through the warm-up too
        let obs = self.0.observe_hash(h);
        self.2.observe(self.1.posterior(&obs, self.2.p()));
        self.0.insert_hash(h);
    }
}

pub(crate) struct GbfCandidate(pub(crate) Gbf, pub(crate) GbfInference, pub(crate) u64);
impl Candidate for GbfCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        let obs = self.0.observe_hash(h);
        (Some(obs.intact()), self.1.posterior(&obs, p, self.2))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

pub(crate) struct BufferCandidate(pub(crate) SimpleBuffer, pub(crate) DistinctModel);
impl Candidate for BufferCandidate {
    fn answer(&self, h: KeyHash, p: f64) -> (Option<bool>, f64) {
        (None, self.0.posterior(h, p, &self.1))
    }
    fn insert(&mut self, h: KeyHash) {
        self.0.insert_hash(h);
    }
}

pub(crate) struct PriorCandidate(pub(crate) u64);
impl Candidate for PriorCandidate {
    fn answer(&self, _h: KeyHash, p: f64) -> (Option<bool>, f64) {
        (None, prior_only(p, self.0))
    }
    fn insert(&mut self, _h: KeyHash) {}
}

/// The experiment's fixed inputs.
pub(crate) struct Setup<'a> {
    pub(crate) stream: &'a Stream,
    pub(crate) hashes: Vec<KeyHash>,
    pub(crate) warm: usize,
    pub(crate) penalties: Vec<Penalties>,
    pub(crate) truth: Vec<bool>,
}

impl Setup<'_> {
    /// Query-then-insert over the stream: (standard tally, inferential tally).
    pub(crate) fn run(&self, c: &mut dyn Candidate) -> (Tally, Tally) {
        let (mut standard, mut inferential) = (Tally::default(), Tally::default());
        for (t, (&x, &h)) in self.stream.items.iter().zip(&self.hashes).enumerate() {
            if t >= self.warm {
                let q = t - self.warm;
                let (pen, truth) = (&self.penalties[q], self.truth[q]);
                let (std_answer, post) = c.answer(h, self.stream.p[x as usize]);
                if let Some(a) = std_answer {
                    standard.add(a, truth, pen, None);
                }
                inferential.add(pen.decide(post), truth, pen, Some(post));
            }
            c.insert(h);
        }
        (standard, inferential)
    }
}
