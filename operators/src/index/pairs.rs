//! An epoch's `(lo, hi, point)` records sorted and without repeats: a key's records become
//! neighbours, so each distinct pair is shipped and inserted once.

/// Sorts `pairs` ascending (as `sort_unstable` would) and drops repeats. The key hashes' low
/// halves are uniform, so one counting pass on their top bits spreads the pairs over buckets of
/// about eight, each then sorted alone: two sequential passes and many tiny sorts instead of a
/// comparison sort of the whole epoch. `scratch` is reused between calls.
pub(crate) fn sort_dedup(pairs: &mut Vec<(u64, u64, u64)>, scratch: &mut Vec<(u64, u64, u64)>) {
    let n = pairs.len();
    if n < 256 {
        pairs.sort_unstable();
        pairs.dedup();
        return;
    }
    // about 8 pairs per bucket, at most 2^16 buckets
    let bits = ((n / 8).ilog2() + 1).clamp(4, 16);
    let shift = 64 - bits;
    let mut starts = vec![0usize; (1 << bits) + 1];
    for p in pairs.iter() {
        starts[(p.0 >> shift) as usize + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    scratch.clear();
    scratch.resize(n, (0, 0, 0));
    let mut next = starts.clone();
    for &p in pairs.iter() {
        let b = (p.0 >> shift) as usize;
        scratch[next[b]] = p;
        next[b] += 1;
    }
    for w in starts.windows(2) {
        scratch[w[0]..w[1]].sort_unstable();
    }
    std::mem::swap(pairs, scratch);
    pairs.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;
    use chronobloom_core::hash::mix64;

    /// Equal to a plain sort and dedup, on uniform, skewed (all in one bucket) and small inputs,
    /// with repeats.
    #[test]
    fn equals_sort_and_dedup() {
        let mut scratch = Vec::new();
        for (n, skew) in [
            (0, 0),
            (5, 0),
            (255, 0),
            (256, 0),
            (5_000, 0),
            (40_000, 0),
            (3_000, 60),
        ] {
            let mut pairs: Vec<(u64, u64, u64)> = (0..n as u64)
                .map(|i| {
                    let k = mix64(i % (n as u64 / 3 + 1)) >> skew;
                    (k, mix64(k), i % 7)
                })
                .collect();
            let mut want = pairs.clone();
            want.sort_unstable();
            want.dedup();
            sort_dedup(&mut pairs, &mut scratch);
            assert_eq!(pairs, want, "n {n}, skew {skew}");
        }
    }
}
