//! Probe positions by enhanced double hashing (Dillinger and Manolios, 2004).

use super::{FastMod, KeyHash};

/// Iterator over the `k` probe positions of one key hash in an `m`-bit filter.
///
/// The i-th position is `g_i mod m` with `g_0 = lo`, `d_0 = hi`, `g_{i+1} = g_i + d_i`,
/// `d_{i+1} = d_i + (i + 1)` (wrapping). The `(i^3 - i) / 6` term this adds to plain double hashing
/// breaks the cycles plain double hashing falls into when `hi mod m` is small.
#[derive(Debug, Clone)]
pub struct Probes {
    g: u64,
    d: u64,
    i: u32,
    k: u32,
    m: FastMod,
}

impl Probes {
    /// The `k` probes of `hash` reduced by `m`.
    #[inline]
    pub fn new(hash: KeyHash, k: u32, m: FastMod) -> Self {
        Probes {
            g: hash.lo,
            d: hash.hi,
            i: 0,
            k,
            m,
        }
    }
}

impl Iterator for Probes {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i >= self.k {
            return None;
        }
        let pos = self.m.reduce(self.g);
        self.i += 1;
        self.g = self.g.wrapping_add(self.d);
        self.d = self.d.wrapping_add(u64::from(self.i));
        Some(pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.k - self.i) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Probes {}
