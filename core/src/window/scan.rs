//! What the age-partitioned filters share: the consecutive-slice query scan (paper 001 §5.3,
//! Algorithm 1) and the probe position of a key in a slice.

use crate::hash::{FastMod, KeyHash};

/// The APBF query scan over `slices` slices (slice 0 newest): true iff some `k` consecutive slices
/// all match. Starts at slice `slices - k`, climbs while slices match and, on a miss at slice i,
/// restarts at i - k carrying the matches already found above, so each slice is tested at most
/// once and a run is never assembled from non-consecutive matches.
#[inline]
pub(super) fn scan(slices: usize, k: usize, mut matches: impl FnMut(usize) -> bool) -> bool {
    if k == 0 || slices < k {
        return false;
    }
    let (mut i, mut carried, mut run) = (slices - k, 0, 0);
    loop {
        if matches(i) {
            run += 1;
            if carried + run == k {
                return true;
            }
            i += 1;
        } else {
            if i < k {
                return false;
            }
            i -= k;
            carried = run;
            run = 0;
        }
    }
}

/// The position of `hash` under hash function `index` in a slice reduced by `m`: the `index`-th
/// probe of the crate's enhanced double hashing ([`crate::hash::Probes`]) in closed form,
/// `lo + index * hi + (index^3 - index) / 6` (wrapping), so any one function costs O(1).
#[inline]
pub(super) fn position(hash: KeyHash, index: u64, m: FastMod) -> u64 {
    // (i - 1) i (i + 1) is a product of three consecutive integers, hence divisible by 6; the
    // crate caps the number of hash functions far below where the cube would wrap.
    let cubic = index
        .wrapping_sub(1)
        .wrapping_mul(index)
        .wrapping_mul(index + 1)
        / 6;
    m.reduce(
        hash.lo
            .wrapping_add(index.wrapping_mul(hash.hi))
            .wrapping_add(cubic),
    )
}
