//! Probe positions by enhanced double hashing (Dillinger and Manolios, 2004).

use super::{FastMod, KeyHash, Reduce};

/// Iterator over the `k` probe positions of one key hash in an `m`-bit filter, reduced by `R`
/// ([`FastMod`] for any `m`, [`super::LowBits`] for a power of two: the same positions).
///
/// The i-th position is `g_i mod m` with `g_0 = lo`, `d_0 = hi`, `g_{i+1} = g_i + d_i`,
/// `d_{i+1} = d_i + (i + 1)` (wrapping). The `(i^3 - i) / 6` term this adds to plain double hashing
/// breaks the cycles plain double hashing falls into when `hi mod m` is small.
#[derive(Debug, Clone)]
pub struct Probes<R = FastMod> {
    g: u64,
    d: u64,
    i: u32,
    k: u32,
    m: R,
}

impl<R: Reduce> Probes<R> {
    /// The `k` probes of `hash` reduced by `m`.
    #[inline]
    pub fn new(hash: KeyHash, k: u32, m: R) -> Self {
        Probes {
            g: hash.lo,
            d: hash.hi,
            i: 0,
            k,
            m,
        }
    }
}

/// The first `K` probe positions of `hash` reduced by `m`: [`Probes`] without a count checked at
/// each step, for a `K` known at compile time (straight-line code).
///
/// ```
/// use chronobloom_core::hash::{probe_array, FastMod, KeyHash, Probes};
/// let (h, m) = (KeyHash::of(&7u64, 1), FastMod::new(3_000).unwrap());
/// assert!(probe_array::<3, _>(h, m).into_iter().eq(Probes::new(h, 3, m)));
/// ```
#[inline]
pub fn probe_array<const K: usize, R: Reduce>(hash: KeyHash, m: R) -> [u64; K] {
    let (mut g, mut d) = (hash.lo, hash.hi);
    std::array::from_fn(|i| {
        let pos = m.reduce(g);
        g = g.wrapping_add(d);
        d = d.wrapping_add(i as u64 + 1);
        pos
    })
}

impl<R: Reduce> Iterator for Probes<R> {
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

impl<R: Reduce> ExactSizeIterator for Probes<R> {}
