//! Client popularity: draws a client by inverting the Zipf CDF, with a guide table (Chen and
//! Asau 1974) so that a draw searches a few neighbouring entries instead of the whole CDF.
//! A generator knows its next draws ahead of time, so it can ask for their guide entries and CDF
//! lines before it needs them ([`Popularity::prefetch_guide`], [`Popularity::prefetch_range`]).

use chronobloom_core::prefetch::prefetch;

/// Guide entries: the CDF's first index at or above each multiple of `1 / GUIDE`.
const GUIDE: usize = 1 << 15;

/// The Zipf CDF over `clients` ranks and its guide table.
#[derive(Debug, Clone)]
pub(super) struct Popularity {
    cdf: Vec<f64>,
    /// `guide[j]`: the first index `i` with `cdf[i] ≥ j / GUIDE`, for `j` in `0..=GUIDE`.
    guide: Vec<u32>,
}

impl Popularity {
    /// Ranks `1..=clients` with weight `rank^−zipf`; `clients` must fit a `u32`.
    pub(super) fn new(clients: u64, zipf: f64) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=clients)
            .map(|r| {
                acc += (r as f64).powf(-zipf);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        let guide = (0..=GUIDE)
            .map(|j| {
                let at = j as f64 / GUIDE as f64;
                cdf.partition_point(|&c| c < at) as u32
            })
            .collect();
        Popularity { cdf, guide }
    }

    /// The guide entry a draw `u` in `[0, 1)` starts from.
    fn guide_of(u: f64) -> usize {
        // u · GUIDE is exact (a power of two), so j / GUIDE ≤ u < (j + 1) / GUIDE
        ((u * GUIDE as f64) as usize).min(GUIDE - 1)
    }

    /// The CDF entries a draw `u` searches: from the guide's `j` to one past its `j + 1`.
    fn range(&self, u: f64) -> (usize, usize) {
        let j = Self::guide_of(u);
        let lo = self.guide[j] as usize;
        (lo, (self.guide[j + 1] as usize + 1).min(self.cdf.len()))
    }

    /// The first index whose CDF is at least `u` (`u` in `[0, 1)`): the client of the draw `u`,
    /// equal to a binary search of the whole CDF (`cdf.len()` when `u` is above its last
    /// entry's rounding).
    pub(super) fn client(&self, u: f64) -> u64 {
        let (lo, hi) = self.range(u);
        // the range is sorted: counting the entries below `u` is its partition point, with loads
        // that do not wait on each other
        (lo + self.cdf[lo..hi].iter().filter(|&&c| c < u).count()) as u64
    }

    /// Asks for the guide entries a later draw `u` reads (a hint: no value changes).
    pub(super) fn prefetch_guide(&self, u: f64) {
        prefetch(&self.guide, Self::guide_of(u));
    }

    /// Asks for the CDF lines a later draw `u` searches, reading its guide entries (best
    /// prefetched by [`Self::prefetch_guide`] a while before).
    pub(super) fn prefetch_range(&self, u: f64) {
        let (lo, hi) = self.range(u);
        // a line holds 8 entries; a long range's later lines follow the hardware prefetcher
        for i in (lo..hi).step_by(8).take(4) {
            prefetch(&self.cdf, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A guided draw equals the binary search of the whole CDF.
        #[test]
        fn equals_searching_the_whole_cdf(
            clients in 1u64..5_000,
            zipf in 0.0f64..2.5,
            draws in proptest::collection::vec(0.0f64..1.0, 1..200),
        ) {
            let p = Popularity::new(clients, zipf);
            for u in draws.into_iter().chain([0.0, 1.0 - f64::EPSILON, 0.5]) {
                prop_assert_eq!(p.client(u), p.cdf.partition_point(|&c| c < u) as u64);
            }
        }
    }

    /// Draws at every guide boundary and just below it, on a large skewed CDF.
    #[test]
    fn boundaries_equal_the_whole_search() {
        let p = Popularity::new(200_000, 1.0);
        for j in 0..GUIDE {
            let at = j as f64 / GUIDE as f64;
            for u in [at, f64::max(at - 1e-12, 0.0), at + 1e-12] {
                assert_eq!(
                    p.client(u),
                    p.cdf.partition_point(|&c| c < u) as u64,
                    "u {u}"
                );
            }
        }
    }
}
