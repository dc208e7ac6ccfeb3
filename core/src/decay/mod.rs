//! Time-decaying filters with Bayesian inference (paper 004: Dautrich and Ravishankar, "Inferring
//! insertion times and optimizing error penalties in time-decaying Bloom filters", 2019).
//!
//! - Standard filters: the timing and block timing Bloom filters ([`Btbf`], §3) and the
//!   generalized Bloom filter ([`Gbf`], §5).
//! - Priors ([`prior`]): `p_x` supplies and `D(j)` models (eqs. 3–5, 15–18); two priors learned
//!   online for bursty streams, not in the paper: a budgeted recency sketch ([`RecencySketch`])
//!   and one `p` from the rate of the filter's own POS answers ([`AnswerRatePrior`]).
//! - Inference: the sliding-window posterior `P(I_x < w | R_x)` of the BTBF
//!   ([`BtbfInference`], Theorems 2–5 with the §4.4 caching), of the GBF ([`GbfInference`],
//!   eq. 34) and of the classical Bloom filter ([`infer_bloom`], Theorem 1); retrospective
//!   queries on the insertion age ([`retro`], eqs. 7–8).
//! - Decisions: minimum expected penalty ([`decision`], §2.6) and the §6 baselines
//!   ([`baselines`]).
//!
//! The dedup operator's tick filter is the same timing Bloom filter with full-width cells and
//! time (not insertion count) as its clock.

mod answer_rate;
pub mod baselines;
mod btbf;
pub mod decision;
mod gbf;
pub mod infer_bloom;
mod infer_btbf;
mod infer_gbf;
pub mod prior;
pub mod recency;
pub mod retro;
mod shape;
mod timers;

pub use answer_rate::AnswerRatePrior;
pub use btbf::{Btbf, TimerObservation};
pub use gbf::{Gbf, GbfObservation};
pub use infer_btbf::{BtbfInference, ItemTerms};
pub use infer_gbf::{GbfInference, ROUNDOFF_LIMIT};
pub use recency::{RecencySketch, MAX_HALVING_PERIOD};
pub use shape::{BtbfShape, MAX_TIMING_HASHES};
pub use timers::{TimerArray, MAX_TIMER_BITS};

#[cfg(test)]
mod tests;
