//! The inferential GBF (paper 004 §5.3): `P(I_x < w | R_x)` for any `w`, per query.
//!
//! With `q_ε = (1 − 1/m)^{k0+k1}` (eq. 30) and `q0/(q0+q1) ≈ 1/2`, eq. 32 becomes
//! `P(R_x | i) ∝ (1 + q_ε^i)^d (1 − q_ε^i)^e`, `d = c_{x,0} + c_{x,1}`, `e = r_{x,0} + r_{x,1} − d`,
//! and the geometric prior sums in closed form (eq. 34):
//!
//! `P(I_x < w | R_x) = Σ_s C^s_{d,e} (1 − (a q_ε^s)^w) / (1 − a q_ε^s)  /  Σ_s C^s_{d,e} / (1 − a q_ε^s)`,
//!
//! `a = 1 − p_x`, `C^s_{d,e} = Σ_ℓ C(d, ℓ) (−1)^{s−ℓ} C(e, s−ℓ)`, precomputed for every
//! `d + e ≤ k0 + k1`. The coefficients alternate in sign and grow like `2^{d+e}`, so the sums
//! cancel: the paper reports posteriors outside `[0, 1]` from about `k ≥ 30`. Each evaluation
//! bounds its own roundoff (`ε (d + e + 1) Σ_s C(d+e, s) |t_s|`, `C(d+e, s)` bounding both
//! `|C^s_{d,e}|` and the error of summing it); past `10^-6` [`GbfInference::posterior`]
//! falls back to summing eq. 33 term by term, which has no cancellation, and
//! [`GbfInference::posterior_closed_form`] returns [`Error::RoundOff`].

use super::gbf::GbfObservation;
use super::retro::{age_posterior, AgePosterior};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Largest roundoff accepted from eq. 34 before the direct sum takes over.
pub const ROUNDOFF_LIMIT: f64 = 1e-6;

/// Posterior computations for one GBF shape.
///
/// ```
/// use chronobloom_core::decay::{Gbf, GbfInference};
/// let mut f = Gbf::new(4_000, 3, 3, 1).unwrap();
/// let inf = GbfInference::new(&f);
/// for i in 0..3_000u64 {
///     f.insert(&i);
/// }
/// let prior = 1.0 - (1.0f64 - 1e-3).powi(100); // P(I_x < 100) ≈ 0.095
/// let recent = inf.posterior(&f.observe(&2_999u64), 1e-3, 100);
/// let old = inf.posterior(&f.observe(&0u64), 1e-3, 100);
/// assert!(recent > prior && prior > old);
/// ```
///
/// Read back with serde, the hash count must be one a [`Gbf`](super::Gbf) has (1 to 128), the
/// coefficients those it implies, and `ln q_ε` that of some cell count (finite, and at most
/// that of `u64::MAX` cells).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "InferenceRepr")]
pub struct GbfInference {
    /// `ln q_ε`.
    ln_q: f64,
    /// `k0 + k1`.
    hashes: u32,
    /// `C^s_{d,e}`, for `n = d + e ≤ k0 + k1`, at `offset(n) + d (n + 1) + s`.
    coeffs: Vec<f64>,
    /// `C(n, s)`: bounds `|C^s_{d,e}|` and the roundoff of computing it (Vandermonde).
    binom: Vec<Vec<f64>>,
}

/// The serialized form of [`GbfInference`], checked on the way in.
#[derive(Deserialize)]
struct InferenceRepr {
    ln_q: f64,
    hashes: u32,
    coeffs: Vec<f64>,
    binom: Vec<Vec<f64>>,
}

impl TryFrom<InferenceRepr> for GbfInference {
    type Error = Error;
    fn try_from(r: InferenceRepr) -> Result<Self> {
        let hashes_ok = (1..=super::gbf::MAX_GBF_HASHES).contains(&r.hashes);
        // no more cells than u64 counts: ln q at most that of u64::MAX cells
        let most = f64::from(r.hashes) * (-1.0 / u64::MAX as f64).ln_1p();
        if !(hashes_ok && r.ln_q <= most && r.ln_q.is_finite()) {
            return Err(Error::invalid(
                "hashes",
                format!("{} hashes with ln q = {}", r.hashes, r.ln_q),
            ));
        }
        let rebuilt = GbfInference::for_shape(1, r.hashes);
        if rebuilt.coeffs != r.coeffs || rebuilt.binom != r.binom {
            return Err(Error::invalid(
                "coeffs",
                "do not match the hash count they are for",
            ));
        }
        Ok(GbfInference {
            ln_q: r.ln_q,
            ..rebuilt
        })
    }
}

impl GbfInference {
    /// Precomputes `q_ε` and the `C^s_{d,e}` for `gbf`'s shape.
    pub fn new(gbf: &super::Gbf) -> Self {
        let (k0, k1) = gbf.hashes();
        Self::for_shape(gbf.cells(), k0 + k1)
    }

    /// Precomputes for `cells` cells and `hashes = k0 + k1` hashes.
    pub fn for_shape(cells: u64, hashes: u32) -> Self {
        let n_max = hashes as usize;
        let binom = pascal(n_max);
        let mut coeffs = Vec::with_capacity(offset(n_max + 1));
        for n in 0..=n_max {
            for d in 0..=n {
                let e = n - d;
                for s in 0..=n {
                    let c: f64 = (0..=s.min(d))
                        .filter(|&l| s - l <= e)
                        .map(|l| {
                            let sign = if (s - l) % 2 == 0 { 1.0 } else { -1.0 };
                            sign * binom[d][l] * binom[e][s - l]
                        })
                        .sum();
                    coeffs.push(c);
                }
            }
        }
        GbfInference {
            // one cell: q_ε = 0, kept as the most negative finite logarithm so that q_ε^0 = 1
            ln_q: (f64::from(hashes) * (-1.0 / cells.max(1) as f64).ln_1p()).max(f64::MIN),
            hashes,
            coeffs,
            binom,
        }
    }

    /// `(d, e)` of an observation.
    fn split(obs: &GbfObservation) -> (usize, usize) {
        let d = (obs.zeros + obs.ones) as usize;
        let n = (obs.zero_cells + obs.one_cells) as usize;
        (d, n.saturating_sub(d))
    }

    /// `P(I_x < w | R_x)` by eq. 34, or by the direct sum of eq. 33 when eq. 34's roundoff bound
    /// exceeds [`ROUNDOFF_LIMIT`].
    pub fn posterior(&self, obs: &GbfObservation, p: f64, w: u64) -> f64 {
        self.posterior_closed_form(obs, p, w)
            .unwrap_or_else(|_| self.posterior_direct(obs, p, w))
    }

    /// Eq. 34; [`Error::RoundOff`] when its roundoff bound exceeds [`ROUNDOFF_LIMIT`].
    pub fn posterior_closed_form(&self, obs: &GbfObservation, p: f64, w: u64) -> Result<f64> {
        let (d, e) = Self::split(obs);
        let n = d + e;
        if n > self.hashes as usize {
            return Err(Error::invalid(
                "observation",
                format!("{n} cells, but this filter has {} hashes", self.hashes),
            ));
        }
        let start = offset(n) + d * (n + 1);
        let ln_a = (-p).ln_1p();
        let (mut num, mut den, mut num_abs, mut den_abs) = (0.0, 0.0, 0.0, 0.0);
        for (s, &c) in self.coeffs[start..=start + n].iter().enumerate() {
            let ln_aq = ln_a + s as f64 * self.ln_q;
            let inv = 1.0 / -ln_aq.exp_m1(); // 1 / (1 − a q^s)
            let head = -(w as f64 * ln_aq).exp_m1(); // 1 − (a q^s)^w
            num += c * head * inv;
            den += c * inv;
            // |C^s| and its own summation error are bounded by Σ_ℓ C(d,ℓ) C(e,s−ℓ) = C(n, s)
            let magnitude = self.binom[n][s];
            num_abs += magnitude * head * inv;
            den_abs += magnitude * inv;
        }
        let value = num / den;
        let roundoff =
            f64::EPSILON * (n as f64 + 1.0) * (num_abs + value.abs() * den_abs) / den.abs();
        if roundoff.is_nan() || roundoff > ROUNDOFF_LIMIT {
            return Err(Error::RoundOff {
                cells: n as u32,
                digits_lost: (roundoff / f64::EPSILON).log10().ceil().clamp(0.0, 99.0) as u32,
            });
        }
        Ok(value.clamp(0.0, 1.0))
    }

    /// Eq. 33 summed term by term (no cancellation): ages up to where `q_ε^i` no longer changes
    /// a term in double precision, then the geometric tail in closed form. Costs about
    /// `37 m / (k0 + k1)` terms.
    pub fn posterior_direct(&self, obs: &GbfObservation, p: f64, w: u64) -> f64 {
        let (d, e) = Self::split(obs);
        let (d, e) = (d as f64, e as f64);
        let ln_a = (-p).ln_1p();
        let cut = ((f64::EPSILON / (d + e + 1.0)).ln() / self.ln_q)
            .ceil()
            .max(0.0) as u64;
        let (mut num, mut den) = (0.0, 0.0);
        for i in 0..cut {
            let qi = (i as f64 * self.ln_q).exp();
            let escaped = if e > 0.0 { e * (-qi).ln_1p() } else { 0.0 };
            let term = (i as f64 * ln_a + d * qi.ln_1p() + escaped).exp();
            den += term;
            if i < w {
                num += term;
            }
        }
        // beyond `cut` every term is a^i: Σ_{i ≥ cut} a^i = a^cut / p, and the part below w
        let tail = (cut as f64 * ln_a).exp() / p;
        den += tail;
        if w > cut {
            num += tail * -((w - cut) as f64 * ln_a).exp_m1();
        }
        if den > 0.0 {
            (num / den).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The posterior of the insertion age (most likely value, `E[I_x | R_x]` within
    /// `tolerance`, any window): [`age_posterior`] over [`Self::likelihood`].
    pub fn age(
        &self,
        obs: &GbfObservation,
        p: f64,
        tolerance: f64,
        max_terms: u64,
    ) -> Result<AgePosterior> {
        age_posterior(p, |i| self.likelihood(obs, i), tolerance, max_terms)
    }

    /// `P(R_x | I_x = i)` up to a factor free of `i` (eq. 32 with `q0/(q0+q1) = 1/2`):
    /// `((1 + q_ε^i)/2)^d ((1 − q_ε^i)/2)^e`, in `[0, 1]`.
    pub fn likelihood(&self, obs: &GbfObservation, i: u64) -> f64 {
        let (d, e) = Self::split(obs);
        let qi = (i as f64 * self.ln_q).exp();
        ((1.0 + qi) / 2.0).powi(d as i32) * ((1.0 - qi) / 2.0).powi(e as i32)
    }
}

/// Start of the coefficients of `n = d + e`: `Σ_{n' < n} (n' + 1)^2`.
fn offset(n: usize) -> usize {
    n * (n + 1) * (2 * n + 1) / 6
}

/// Binomial coefficients `C(a, b)` for `a, b ≤ n`, as floats.
fn pascal(n: usize) -> Vec<Vec<f64>> {
    let mut rows = vec![vec![0.0; n + 1]; n + 1];
    for a in 0..=n {
        rows[a][0] = 1.0;
        for b in 1..=a {
            rows[a][b] = rows[a - 1][b - 1] + if b < a { rows[a - 1][b] } else { 0.0 };
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(d: u32, e: u32) -> GbfObservation {
        GbfObservation {
            zero_cells: d + e,
            one_cells: 0,
            zeros: d,
            ones: 0,
        }
    }

    #[test]
    fn one_cell_gives_finite_posteriors_and_reads_back() {
        let f = super::super::Gbf::new(1, 0, 1, 0).expect("shape");
        let inf = GbfInference::new(&f);
        let p = inf.posterior(&f.observe(&1u64), 0.01, 10);
        assert!((0.0..=1.0).contains(&p), "{p}");
        let json = serde_json::to_string(&inf).expect("JSON");
        assert_eq!(serde_json::from_str::<GbfInference>(&json).ok(), Some(inf));
        let wrong = GbfInference::for_shape(100, 3);
        let mut v = serde_json::to_value(&wrong).expect("JSON");
        v["hashes"] = serde_json::json!(4);
        assert!(serde_json::from_value::<GbfInference>(v).is_err());
    }

    #[test]
    fn coefficients_expand_the_product() {
        let inf = GbfInference::for_shape(100, 7);
        let x: f64 = 0.37;
        for (d, e) in [(0usize, 0usize), (3, 4), (7, 0), (0, 7), (2, 1)] {
            let n = d + e;
            let start = offset(n) + d * (n + 1);
            let series: f64 = inf.coeffs[start..=start + n]
                .iter()
                .enumerate()
                .map(|(s, c)| c * x.powi(s as i32))
                .sum();
            let product = (1.0 + x).powi(d as i32) * (1.0 - x).powi(e as i32);
            assert!((series - product).abs() < 1e-12, "d {d} e {e}");
        }
    }

    #[test]
    fn closed_form_matches_the_direct_sum_for_small_k() {
        let inf = GbfInference::for_shape(2_000, 8);
        for (d, e) in [(8, 0), (6, 2), (4, 4), (0, 8)] {
            for w in [1u64, 50, 500, 5_000] {
                let a = inf
                    .posterior_closed_form(&obs(d, e), 1e-3, w)
                    .expect("k = 4 is stable");
                let b = inf.posterior_direct(&obs(d, e), 1e-3, w);
                assert!((a - b).abs() < 1e-9, "d {d} e {e} w {w}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn large_k_is_refused_by_the_closed_form_and_stays_in_range_directly() {
        let inf = GbfInference::for_shape(50_000, 80);
        let o = obs(40, 40);
        assert!(matches!(
            inf.posterior_closed_form(&o, 1e-4, 1_000),
            Err(Error::RoundOff { cells: 80, .. })
        ));
        let p = inf.posterior(&o, 1e-4, 1_000);
        assert!((0.0..=1.0).contains(&p));
        assert_eq!(p, inf.posterior_direct(&o, 1e-4, 1_000));
    }
}
