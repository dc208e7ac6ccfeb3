//! The inferential classical Bloom filter (paper 004 §2.4, Theorem 1): the posterior that `x` is
//! among the `n` items inserted, given how many of its `r_x` bits are set.

use super::prior::survive;
use crate::bloom::{BloomFilter, Layout};
use crate::error::{Error, Result};
use crate::hash::{FastMod, KeyHash};

/// `P_FP ≈ (1 − (1 − 1/m)^{kn})^{r_x}` (eq. 1).
pub fn false_positive(bits: u64, hashes: u32, n: u64, distinct: u32) -> f64 {
    let untouched = (f64::from(hashes) * n as f64 * (-1.0 / bits as f64).ln_1p()).exp();
    (1.0 - untouched).powi(distinct as i32)
}

/// Theorem 1 (eq. 13): 0 unless all `r_x` bits are set (`c_x = r_x`), else
/// `1 / (1 + (1 − p)^n P_FP / (1 − (1 − p)^n))`.
pub fn theorem1(set: u32, distinct: u32, p: f64, n: u64, bits: u64, hashes: u32) -> f64 {
    if set != distinct {
        return 0.0;
    }
    let absent = survive(p, n as f64);
    if absent >= 1.0 {
        return 0.0;
    }
    1.0 / (1.0 + absent * false_positive(bits, hashes, n, distinct) / (1.0 - absent))
}

/// Eq. 14, Theorem 1 at the optimal `k = (m/n) ln 2` with `P_FP ≈ (1/2)^{(m/n) ln 2}`:
/// `P(I_x < n) / (P(⊥) (1/2)^{(m/n) ln 2} + P(I_x < n))`.
pub fn eq14(p: f64, n: u64, bits: u64) -> f64 {
    let absent = survive(p, n as f64);
    let fp = 0.5f64.powf(bits as f64 / n as f64 * std::f64::consts::LN_2);
    (1.0 - absent) / (absent * fp + (1.0 - absent))
}

/// Theorem 1 for `hash` in a standard-layout `filter` holding `n` insertions, for an item of
/// sample probability `p`. A blocked filter's bits are not independent: refused.
pub fn posterior(filter: &BloomFilter, hash: KeyHash, p: f64, n: u64) -> Result<f64> {
    if filter.layout() != Layout::Standard {
        return Err(Error::invalid(
            "layout",
            "Theorem 1 assumes the standard layout",
        ));
    }
    let shape = filter.shape();
    let m = FastMod::new(shape.bits).ok_or_else(|| Error::invalid("bits", "empty filter"))?;
    let mut seen: Vec<u64> = Vec::with_capacity(shape.hashes as usize);
    let mut set = 0;
    for pos in hash.probes(shape.hashes, m) {
        if !seen.contains(&pos) {
            seen.push(pos);
            set += u32::from(filter.bits().test(pos));
        }
    }
    Ok(theorem1(
        set,
        seen.len() as u32,
        p,
        n,
        shape.bits,
        shape.hashes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::Filter;

    #[test]
    fn theorem1_reproduces_eq14_at_the_optimal_k() {
        // m/n = 10/ln 2 makes the optimal k exactly 10; eq. 1 then differs from eq. 14's
        // (1/2)^{(m/n) ln 2} only by (1 − 1/m)^{kn} ≈ e^{−kn/m} (relative 1e-5 at m = 10^5)
        let n = 10_000u64;
        let bits = (n as f64 * 10.0 / std::f64::consts::LN_2).round() as u64;
        for p in [1e-6, 1e-5, 1e-4, 1e-3] {
            let t1 = theorem1(10, 10, p, n, bits, 10);
            let e14 = eq14(p, n, bits);
            assert!((t1 - e14).abs() <= 1e-3 * e14, "p {p}: {t1} vs {e14}");
        }
        assert_eq!(theorem1(9, 10, 0.5, n, bits, 10), 0.0);
    }

    #[test]
    fn posterior_of_a_real_filter() {
        let mut f = BloomFilter::new(1_000, 4, 3).expect("filter");
        for i in 0..100u64 {
            f.insert(&i);
        }
        // fill ≈ 1 − e^{−0.4}: P_FP ≈ 0.011, P(⊥) = 0.99^100, so eq. 13 gives ≈ 0.993
        let inserted = posterior(&f, KeyHash::of(&5u64, 3), 0.01, 100).expect("standard");
        assert!(inserted > 0.99, "{inserted}");
        let absent = (1_000..1_100u64)
            .find(|x| !f.contains(x))
            .expect("100 absent keys are not all false positives");
        assert_eq!(posterior(&f, KeyHash::of(&absent, 3), 0.01, 100), Ok(0.0));
        let shape = crate::bloom::FilterShape::new(1_024, 4).expect("shape");
        let blocked = BloomFilter::with_layout(shape, 3, Layout::Blocked).expect("filter");
        assert!(posterior(&blocked, KeyHash::of(&5u64, 3), 0.01, 100).is_err());
    }
}
