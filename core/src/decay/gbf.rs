//! The generalized Bloom filter (paper 004 §5; Laufer, Velloso and Duarte 2011).
//!
//! `m` one-bit cells and `k0 + k1` hashes: inserting `x` sets its `k1` cells to 1 and then resets
//! its `k0` cells to 0 (a cell hit by both ends at 0). A query answers POS iff all of `x`'s `k0`
//! cells are 0 and all its `k1` cells are 1. Later insertions overwrite the cells, so the filter
//! forgets old items: it has false positives and false negatives, and no fixed window.

use crate::bits::Bits;
use crate::error::{Error, Result};
use crate::hash::{FastMod, Key, KeyHash};
use serde::{Deserialize, Serialize};

/// Largest `k0 + k1`.
pub const MAX_GBF_HASHES: u32 = 128;

/// What a GBF holds about one key (Definition 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GbfObservation {
    /// `r_{x,0}`: distinct cells the `k0` hashes reset.
    pub zero_cells: u32,
    /// `r_{x,1}`: distinct cells the `k1` hashes set, not among the reset ones.
    pub one_cells: u32,
    /// `c_{x,0}`: reset cells that hold 0.
    pub zeros: u32,
    /// `c_{x,1}`: set cells that hold 1.
    pub ones: u32,
}

impl GbfObservation {
    /// True iff every cell is as `x`'s insertion left it (the standard POS).
    pub fn intact(&self) -> bool {
        self.zeros == self.zero_cells && self.ones == self.one_cells
    }
}

/// A generalized Bloom filter.
///
/// ```
/// use chronobloom_core::decay::Gbf;
/// let mut f = Gbf::new(10_000, 3, 3, 7).unwrap();
/// f.insert(&"a");
/// assert!(f.query(&"a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "GbfRepr")]
pub struct Gbf {
    bits: Bits,
    resets: u32,
    sets: u32,
    seed: u64,
    modulus: FastMod,
}

/// The serialized form, checked as [`Gbf::new`] checks its parameters, with the modulus of the
/// cells read (a probe must land in them).
#[derive(Deserialize)]
struct GbfRepr {
    bits: Bits,
    resets: u32,
    sets: u32,
    seed: u64,
    modulus: FastMod,
}

impl TryFrom<GbfRepr> for Gbf {
    type Error = Error;
    fn try_from(r: GbfRepr) -> Result<Self> {
        let empty = Gbf::shell(r.bits.len(), r.resets, r.sets, r.seed)?;
        if r.modulus != empty.modulus {
            return Err(Error::ShapeMismatch {
                what: "reduction modulus vs cells",
                left: r.modulus.divisor(),
                right: r.bits.len(),
            });
        }
        Ok(Gbf {
            bits: r.bits,
            ..empty
        })
    }
}

impl Gbf {
    /// An all-zero filter of `cells ≥ 1` cells, `resets` (`k0`) and `sets` (`k1`) hashes
    /// (`1 ≤ k0 + k1 ≤ 128`), keys hashed with `seed`.
    pub fn new(cells: u64, resets: u32, sets: u32, seed: u64) -> Result<Self> {
        let shell = Gbf::shell(cells, resets, sets, seed)?;
        Ok(Gbf {
            bits: Bits::try_new(cells)?,
            ..shell
        })
    }

    /// The parameters checked, with no cells allocated yet.
    fn shell(cells: u64, resets: u32, sets: u32, seed: u64) -> Result<Self> {
        let modulus =
            FastMod::new(cells).ok_or_else(|| Error::invalid("cells", "need at least one cell"))?;
        let total = resets.saturating_add(sets);
        if !(1..=MAX_GBF_HASHES).contains(&total) {
            return Err(Error::invalid(
                "hashes",
                format!("k0 + k1 = {total} is outside 1..={MAX_GBF_HASHES}"),
            ));
        }
        Ok(Gbf {
            bits: Bits::new(0),
            resets,
            sets,
            seed,
            modulus,
        })
    }

    /// Cells `m`.
    pub fn cells(&self) -> u64 {
        self.bits.len()
    }

    /// `(k0, k1)`.
    pub fn hashes(&self) -> (u32, u32) {
        (self.resets, self.sets)
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Memory held by the cells, in bits.
    pub fn memory_bits(&self) -> u64 {
        self.bits.memory_bits()
    }

    /// Inserts `key`.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(KeyHash::of(key, self.seed));
    }

    /// Inserts a pre-hashed key (§5.1): the `k1` cells to 1, then the `k0` cells to 0.
    #[inline]
    pub fn insert_hash(&mut self, hash: KeyHash) {
        let k0 = self.resets as usize;
        for pos in hash.probes(self.resets + self.sets, self.modulus).skip(k0) {
            self.bits.set(pos);
        }
        for pos in hash.probes(self.resets, self.modulus) {
            self.bits.clear(pos);
        }
    }

    /// The standard answer (§5.2).
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.query_hash(KeyHash::of(key, self.seed))
    }

    /// [`Self::query`] for a pre-hashed key. A cell both reset and set by `x` is expected 0.
    /// Equal to `self.observe_hash(hash).intact()`, but stops at the first cell that differs.
    #[inline]
    pub fn query_hash(&self, hash: KeyHash) -> bool {
        let k0 = self.resets;
        let mut resets = hash.probes(k0, self.modulus);
        resets.all(|pos| !self.bits.test(pos))
            && hash
                .probes(k0 + self.sets, self.modulus)
                .skip(k0 as usize)
                .all(|pos| self.bits.test(pos) || hash.probes(k0, self.modulus).any(|r| r == pos))
    }

    /// The observation `(r_{x,0}, r_{x,1}, c_{x,0}, c_{x,1})` the posterior needs.
    pub fn observe<K: Key + ?Sized>(&self, key: &K) -> GbfObservation {
        self.observe_hash(KeyHash::of(key, self.seed))
    }

    /// [`Self::observe`] for a pre-hashed key.
    #[inline]
    pub fn observe_hash(&self, hash: KeyHash) -> GbfObservation {
        let mut seen = [0u64; MAX_GBF_HASHES as usize];
        let mut n = 0;
        let mut obs = GbfObservation {
            zero_cells: 0,
            one_cells: 0,
            zeros: 0,
            ones: 0,
        };
        for (j, pos) in hash
            .probes(self.resets + self.sets, self.modulus)
            .enumerate()
        {
            if seen.iter().take(n).any(|&c| c == pos) {
                continue;
            }
            seen[n] = pos;
            n += 1;
            let one = self.bits.test(pos);
            if j < self.resets as usize {
                obs.zero_cells += 1;
                obs.zeros += u32::from(!one);
            } else {
                obs.one_cells += 1;
                obs.ones += u32::from(one);
            }
        }
        obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_key_is_intact_until_overwritten() {
        let mut f = Gbf::new(64, 2, 2, 1).expect("shape");
        f.insert(&"x");
        assert!(f.query(&"x") && f.observe(&"x").intact());
        // the filter forgets: some insertion overwrites a cell of x
        let forgot = (0..2_000u64).find(|i| {
            f.insert(i);
            !f.query(&"x")
        });
        assert!(forgot.is_some());
        assert!(!f.observe(&"x").intact());
    }

    #[test]
    fn a_cell_reset_and_set_by_the_same_key_counts_as_reset() {
        let mut f = Gbf::new(1, 1, 1, 1).expect("shape");
        f.insert(&"x");
        let obs = f.observe(&"x");
        assert_eq!((obs.zero_cells, obs.one_cells, obs.zeros), (1, 0, 1));
        assert!(f.query(&"x"));
    }

    proptest::proptest! {
        #[test]
        fn query_is_an_intact_observation(
            cells in 1u64..200, k0 in 0u32..5, k1 in 0u32..5, inserts in 0u64..300, key in 0u64..1000,
            last in proptest::prelude::any::<bool>(),
        ) {
            proptest::prop_assume!(k0 + k1 > 0);
            let mut f = Gbf::new(cells, k0, k1, 3).expect("shape");
            for i in 0..inserts {
                f.insert(&crate::hash::mix64(i));
            }
            if last {
                f.insert(&key); // just inserted: intact
            }
            proptest::prop_assert_eq!(f.query(&key), f.observe(&key).intact());
        }
    }

    #[test]
    fn refuses_bad_shapes() {
        assert!(Gbf::new(0, 1, 1, 0).is_err());
        assert!(Gbf::new(10, 0, 0, 0).is_err());
        assert!(Gbf::new(10, 100, 100, 0).is_err());
    }
}
