//! An explicit per-filter allocation: the bits and hash count of every Bloom filter in a PBF.
//!
//! The allocation module (paper 000 §5) computes optimal ones; this type is what the PBFs take.
//! Filter order: PBF-2, by level from the finest (level 0, granularity 1) up; PBF-1, the tree nodes
//! in level order from the root down, left to right, then the SBF last ([`super::Pbf1::layout`]).

use crate::bloom::{FilterShape, Layout};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Bits and hashes for each filter of a structure; a filter with zero bits is never consulted.
///
/// ```
/// use chronobloom_core::temporal::Allocation;
/// let a = Allocation::uniform(3, 10, 4).unwrap();
/// assert_eq!(a.shapes().iter().map(|s| s.bits).collect::<Vec<_>>(), vec![4, 3, 3]);
/// assert_eq!(a.total_bits(), 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "AllocationRepr")]
pub struct Allocation {
    shapes: Vec<FilterShape>,
}

/// The serialized form, validated by [`Allocation::new`] on the way in.
#[derive(Deserialize)]
struct AllocationRepr {
    shapes: Vec<FilterShape>,
}

impl TryFrom<AllocationRepr> for Allocation {
    type Error = Error;
    fn try_from(r: AllocationRepr) -> Result<Self> {
        Allocation::new(r.shapes)
    }
}

impl Allocation {
    /// The given shapes, each validated, with a total that fits in `u64`.
    pub fn new(shapes: Vec<FilterShape>) -> Result<Self> {
        for s in &shapes {
            FilterShape::new(s.bits, s.hashes)?;
        }
        if shapes
            .iter()
            .try_fold(0u64, |total, s| total.checked_add(s.bits))
            .is_none()
        {
            return Err(Error::invalid("shapes", "the total of bits overflows u64"));
        }
        Ok(Allocation { shapes })
    }

    /// Shapes read back from live filters, which are valid by construction.
    pub(crate) fn from_live(shapes: Vec<FilterShape>) -> Self {
        Allocation { shapes }
    }

    /// `total_bits` spread evenly over `filters` filters (the first `total_bits mod filters` get
    /// one more bit, so the total is exact), each with `hashes` hash functions.
    pub fn uniform(filters: usize, total_bits: u64, hashes: u32) -> Result<Self> {
        let per = spread(filters, total_bits)?;
        Self::new(
            per.into_iter()
                .map(|bits| FilterShape { bits, hashes })
                .collect(),
        )
    }

    /// `total_bits` spread evenly, with each filter's hash count chosen for its distinct item count
    /// `items[i]`: `ceil((m_i / d_i) ln 2)` capped at `k_max` (paper 000 §5).
    pub fn uniform_for_items(items: &[u64], total_bits: u64, k_max: u32) -> Result<Self> {
        let per = spread(items.len(), total_bits)?;
        Self::new(
            per.into_iter()
                .zip(items)
                .map(|(bits, &d)| FilterShape {
                    bits,
                    hashes: FilterShape::optimal_hashes(bits, d, k_max),
                })
                .collect(),
        )
    }

    /// The shapes, in the structure's filter order.
    pub fn shapes(&self) -> &[FilterShape] {
        &self.shapes
    }

    /// This allocation made usable by `layout`: for [`Layout::Blocked`] each filter's bits rounded
    /// down to whole 512-bit blocks (a filter left with none gets no filter); unchanged for
    /// [`Layout::Standard`].
    ///
    /// ```
    /// use chronobloom_core::bloom::Layout;
    /// use chronobloom_core::temporal::Allocation;
    /// let a = Allocation::uniform(3, 3_000, 4).unwrap().for_layout(Layout::Blocked);
    /// assert_eq!(a.shapes().iter().map(|s| s.bits).collect::<Vec<_>>(), vec![512, 512, 512]);
    /// ```
    pub fn for_layout(&self, layout: Layout) -> Allocation {
        let shapes = self
            .shapes
            .iter()
            .map(|s| match layout.round_down(s.bits) {
                0 => FilterShape { bits: 0, hashes: 0 },
                bits => FilterShape {
                    bits,
                    hashes: s.hashes,
                },
            })
            .collect();
        Allocation { shapes }
    }

    /// Sum of all filters' bits.
    pub fn total_bits(&self) -> u64 {
        self.shapes.iter().map(|s| s.bits).sum()
    }

    /// Checks that the allocation has exactly `expected` shapes.
    pub(crate) fn expect_len(&self, expected: usize) -> Result<()> {
        if self.shapes.len() != expected {
            return Err(Error::AllocationLength {
                expected,
                got: self.shapes.len(),
            });
        }
        Ok(())
    }
}

fn spread(filters: usize, total_bits: u64) -> Result<Vec<u64>> {
    if filters == 0 {
        return Err(Error::invalid("filters", "must be at least 1"));
    }
    let n = filters as u64;
    let (base, extra) = (total_bits / n, total_bits % n);
    Ok((0..n).map(|i| base + u64::from(i < extra)).collect())
}
