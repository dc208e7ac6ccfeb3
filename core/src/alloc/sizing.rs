//! Sizing an optimised PBF for a target false positive rate (paper 000 §5.3, Theorem 5.5, eq. 14,
//! proved in Appendix C.1 via Lemma C.2).
//!
//! With n distinct (key, tick) pairs over a horizon T, a query [s, e] of |q| ticks consults at most
//! r filters; the auxiliary filter S of Definition C.1 holds about n·log2 T items, so a PBF
//! allocated by Lemma C.2 (and therefore an optimised one) answers with false positive rate at most
//! p when (eq. 15)
//!
//! ```text
//! 1 − (1 − 2^{−(ln 2) m / (n log2 T)})^r = p,   i.e.   m = n log2 T · ln(1 / (1 − (1 − p)^{1/r})) / ln² 2   (eq. 14).
//! ```
//!
//! For PBF-2 and PBF-1 with g = 1, r = 2 log2 |q|; for PBF-1 with leaves of g > 1 ticks,
//! r = 2 log2(|q| / g) + g − 1 (the remark after Theorem C.3). Where the paper's expressions
//! degenerate they are clamped, and documented on each function: log2 T and r are taken as at least
//! 1 (a structure has a level, a query consults a filter) and log2(|q| / g) as at least 0.

use crate::error::{Error, Result};
use std::f64::consts::LN_2;

/// Bits an optimised PBF needs so that a query of `query_len` ticks has false positive rate at most
/// `fpr`, given `pairs` distinct (key, tick) pairs over `horizon` ticks and leaves of `g` ticks
/// (g = 1 for PBF-2): eq. 14, rounded up.
///
/// ```
/// use chronobloom_core::alloc::{bits_for_fpr, fpr_for_bits};
/// let m = bits_for_fpr(1_000_000, 86_400, 3_600, 1, 0.01).unwrap();
/// assert!(fpr_for_bits(m, 1_000_000, 86_400, 3_600, 1).unwrap() <= 0.01);
/// // Leaves of 16 ticks save 8 cover probes but add up to 15 SBF probes: more space.
/// assert!(bits_for_fpr(1_000_000, 86_400, 3_600, 16, 0.01).unwrap() > m);
/// ```
pub fn bits_for_fpr(pairs: u64, horizon: u64, query_len: u64, g: u64, fpr: f64) -> Result<u64> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
    }
    let (items, r) = items_and_probes(pairs, horizon, query_len, g)?;
    // 1 − (1 − p)^{1/r}, computed without cancellation for small p.
    let per_probe = -((-fpr).ln_1p() / r).exp_m1();
    let bits = items * (1.0 / per_probe).ln() / (LN_2 * LN_2);
    if !bits.is_finite() || bits >= u64::MAX as f64 {
        return Err(Error::invalid(
            "fpr",
            format!("{fpr} needs more than 2^64 bits"),
        ));
    }
    Ok(bits.ceil() as u64)
}

/// The false positive rate eq. 15 guarantees for `bits` bits, the inverse of [`bits_for_fpr`].
pub fn fpr_for_bits(bits: u64, pairs: u64, horizon: u64, query_len: u64, g: u64) -> Result<f64> {
    let (items, r) = items_and_probes(pairs, horizon, query_len, g)?;
    let per_probe = (-LN_2 * LN_2 * bits as f64 / items).exp();
    Ok(-(r * (-per_probe).ln_1p()).exp_m1())
}

/// n·log2 T (items of the auxiliary filter S) and r (filters a query consults), validated.
fn items_and_probes(pairs: u64, horizon: u64, query_len: u64, g: u64) -> Result<(f64, f64)> {
    for (name, v) in [
        ("pairs", pairs),
        ("horizon", horizon),
        ("query_len", query_len),
        ("g", g),
    ] {
        if v == 0 {
            return Err(Error::invalid(name, "must be at least 1"));
        }
    }
    let items = pairs as f64 * (horizon as f64).log2().max(1.0);
    let cover = 2.0 * (query_len as f64 / g as f64).log2().max(0.0);
    let r = (cover + (g - 1) as f64).max(1.0);
    Ok((items, r))
}
