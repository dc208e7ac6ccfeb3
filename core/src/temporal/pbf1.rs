//! PBF-1, β1 (paper 000 §4.1): a binary decomposition of time with one Bloom filter per interval.
//!
//! Leaves span `g` ticks; the node at height h (0 = leaf) and index i covers the ticks
//! [i·g·2^h, (i+1)·g·2^h − 1] and stores the keys seen there. A record (key, t) goes into the
//! O(log(T/g)) nodes on t's root-to-leaf path and into an SBF over (key, tick) (Algorithm 2).
//!
//! A query [s, e] (Algorithm 1, with its three routes):
//! 1. the cover C([s, e]) — nodes inside [s, e] whose parent is not — is probed; any yes answers yes
//!    (route 2);
//! 2. otherwise each leaf that only partly overlaps [s, e] (at most two) is probed, and where it says
//!    yes the SBF is asked for the ticks of [s, e] inside that leaf (route 3);
//! 3. otherwise the answer is no (route 1).
//!
//! Unlike the published pseudocode, both children are visited (its `return` on the left child loses
//! answers in the right one), and point queries work. A node given zero bits is never consulted: a
//! covered node is split into its children, a leaf falls through to the SBF; without an SBF the
//! answer is "maybe".
//!
//! * **Static**: a horizon T gives ⌈T/g⌉ leaves and ⌈log2⌈T/g⌉⌉ + 1 levels; only nodes that start
//!   before T exist, about 2T/g in all.
//! * **Dynamic** (Figure 4): the tree starts as one leaf and grows a new root whenever a tick falls
//!   past the current root; the new root's filter is a clone of the old root (same keys). Nodes are
//!   created as time reaches them, all of one shape.

use super::{dyadic_cover, Allocation, Answer, Sbf, TemporalFilter, Tick, TimeRange};
use crate::bloom::{BloomFilter, Filter, FilterShape};
use crate::error::{Error, Result};
use crate::hash::KeyHash;
use serde::{Deserialize, Serialize};

/// One interval of a PBF-1's decomposition, as listed by [`Pbf1::layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pbf1Node {
    /// Height above the leaves (0 = leaf of `g` ticks).
    pub height: u32,
    /// Position within its level, from the left.
    pub index: u64,
    /// The ticks it covers (clipped to the horizon).
    pub range: TimeRange,
}

/// A PBF-1 over `u64` ticks.
///
/// ```
/// use chronobloom_core::temporal::{Pbf1, TemporalFilter, TimeRange};
/// // Figure 3 of the paper: g = 2, T = 8 (ticks 0..8 here).
/// let mut p = Pbf1::uniform(8, 2, 8_000, 4, 0).unwrap();
/// p.insert(&"z", 6).unwrap(); // the paper's (z, 7)
/// let a = p.query_counted(&"z", TimeRange::new(4, 6).unwrap()); // q(z, [5, 7])
/// assert!(a.present);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Pbf1Fields")]
pub struct Pbf1 {
    seed: u64,
    g: u64,
    /// `Some(T)` for a static PBF-1 over ticks `0..T`; `None` for a dynamic one.
    horizon: Option<Tick>,
    /// `nodes[h][i]`: the filter of node (h, i), `None` when it was given no bits.
    nodes: Vec<Vec<Option<BloomFilter>>>,
    sbf: Option<Sbf>,
    /// The shape of nodes a dynamic PBF-1 creates.
    node_shape: Option<FilterShape>,
}

/// The serialized form, checked on the way in: g ≥ 1; a static tree with exactly the nodes its
/// horizon has; a dynamic one with a node shape and at most 65 levels; every filter hashed with
/// the PBF-1's seed.
#[derive(Deserialize)]
struct Pbf1Fields {
    seed: u64,
    g: u64,
    horizon: Option<Tick>,
    nodes: Vec<Vec<Option<BloomFilter>>>,
    sbf: Option<Sbf>,
    node_shape: Option<FilterShape>,
}

impl TryFrom<Pbf1Fields> for Pbf1 {
    type Error = Error;
    fn try_from(f: Pbf1Fields) -> Result<Self> {
        check_granularity(f.g)?;
        let counts: Vec<u64> = f.nodes.iter().map(|l| l.len() as u64).collect();
        match (f.horizon, f.node_shape) {
            (Some(h), _) if static_counts(h, f.g)? != counts => {
                return Err(Error::invalid(
                    "nodes",
                    "do not match the static tree of the horizon",
                ));
            }
            (None, None) => return Err(Error::invalid("node_shape", "a dynamic PBF-1 needs one")),
            (None, Some(_)) if counts.is_empty() || counts.len() > 65 || counts[0] == 0 => {
                return Err(Error::invalid(
                    "nodes",
                    "a dynamic PBF-1 has 1 to 65 levels",
                ));
            }
            (None, Some(shape)) => check_dynamic(&counts, shape, &f.nodes)?,
            _ => {}
        }
        let filters = f.nodes.iter().flatten().flatten();
        let sbf_seed = f.sbf.as_ref().map(|s| s.filter().seed());
        if let Some(seed) = filters
            .map(Filter::seed)
            .chain(sbf_seed)
            .find(|&s| s != f.seed)
        {
            return Err(Error::ShapeMismatch {
                what: "filter seed vs PBF-1 seed",
                left: seed,
                right: f.seed,
            });
        }
        Ok(Pbf1 {
            seed: f.seed,
            g: f.g,
            horizon: f.horizon,
            nodes: f.nodes,
            sbf: f.sbf,
            node_shape: f.node_shape,
        })
    }
}

impl Pbf1 {
    /// The nodes of a static PBF-1 over `0..horizon` with leaves of `g` ticks, in allocation order:
    /// from the root down, left to right. An allocation for it has one more entry, the SBF, last.
    pub fn layout(horizon: Tick, g: u64) -> Result<Vec<Pbf1Node>> {
        let counts = static_counts(horizon, g)?;
        let mut out = Vec::with_capacity(counts.iter().sum::<u64>() as usize);
        for (h, &count) in counts.iter().enumerate().rev() {
            for index in 0..count {
                let range = node_range(g, h as u32, index).clamp_below(horizon);
                if let Some(range) = range {
                    out.push(Pbf1Node {
                        height: h as u32,
                        index,
                        range,
                    });
                }
            }
        }
        Ok(out)
    }

    /// A static PBF-1 over ticks `0..horizon` with leaves of `g` ticks and one shape per filter in
    /// [`Self::layout`] order, the SBF's last.
    pub fn new(horizon: Tick, g: u64, allocation: &Allocation, seed: u64) -> Result<Self> {
        let counts = static_counts(horizon, g)?;
        let total: u64 = counts.iter().sum();
        allocation.expect_len(total as usize + 1)?;
        let mut shapes = allocation.shapes().iter();
        let mut nodes: Vec<Vec<Option<BloomFilter>>> = vec![Vec::new(); counts.len()];
        for (h, &count) in counts.iter().enumerate().rev() {
            for _ in 0..count {
                let shape = shapes.next().copied().unwrap_or(ZERO);
                nodes[h].push(node_filter(shape, seed)?);
            }
        }
        let sbf_shape = shapes.next().copied().unwrap_or(ZERO);
        Ok(Pbf1 {
            seed,
            g,
            horizon: Some(horizon),
            nodes,
            sbf: sbf_filter(sbf_shape, seed)?,
            node_shape: None,
        })
    }

    /// A static PBF-1 with `total_bits` spread evenly over all its filters, the SBF included, and
    /// `hashes` hash functions each (the paper's default).
    pub fn uniform(horizon: Tick, g: u64, total_bits: u64, hashes: u32, seed: u64) -> Result<Self> {
        let filters = static_counts(horizon, g)?.iter().sum::<u64>() as usize + 1;
        Self::new(
            horizon,
            g,
            &Allocation::uniform(filters, total_bits, hashes)?,
            seed,
        )
    }

    /// A dynamic PBF-1: every node gets `node_shape` (at least one bit), the SBF `sbf_shape` (zero
    /// bits for none).
    pub fn dynamic(
        g: u64,
        node_shape: FilterShape,
        sbf_shape: FilterShape,
        seed: u64,
    ) -> Result<Self> {
        check_granularity(g)?;
        Ok(Pbf1 {
            seed,
            g,
            horizon: None,
            nodes: vec![vec![Some(BloomFilter::from_shape(node_shape, seed)?)]],
            sbf: sbf_filter(sbf_shape, seed)?,
            node_shape: Some(node_shape),
        })
    }

    /// Leaf granularity g.
    pub fn granularity(&self) -> u64 {
        self.g
    }

    /// Number of levels (root height + 1).
    pub fn levels(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// Number of interval nodes (the SBF not included).
    pub fn node_count(&self) -> usize {
        self.nodes.iter().map(Vec::len).sum()
    }

    /// The filter of node (height, index), if it exists and has bits.
    pub fn node(&self, height: u32, index: u64) -> Option<&BloomFilter> {
        self.nodes
            .get(height as usize)?
            .get(index as usize)?
            .as_ref()
    }

    /// The SBF for sub-leaf queries, if it has bits.
    pub fn sbf(&self) -> Option<&Sbf> {
        self.sbf.as_ref()
    }

    /// The first tick the structure cannot hold: T when static, g·2^H when dynamic.
    pub fn capacity(&self) -> Tick {
        self.horizon.unwrap_or_else(|| {
            let span = u128::from(self.g) << (self.nodes.len() - 1);
            span.min(u128::from(u64::MAX)) as u64
        })
    }

    /// ORs another PBF-1 of the same configuration into this one (dynamic ones first grow to the
    /// same size). Refuses other granularities, horizons, seeds or filter shapes.
    pub fn union(&mut self, other: &Pbf1) -> Result<()> {
        for (what, l, r) in [
            ("granularity", self.g, other.g),
            ("seed", self.seed, other.seed),
            (
                "horizon",
                self.horizon.unwrap_or(0),
                other.horizon.unwrap_or(0),
            ),
        ] {
            if l != r {
                return Err(Error::ShapeMismatch {
                    what,
                    left: l,
                    right: r,
                });
            }
        }
        let mut other = other.clone();
        if self.horizon.is_none() {
            let last = self.capacity().max(other.capacity()) - 1;
            self.grow_to(last)?;
            other.grow_to(last)?;
            for h in 0..self.nodes.len() {
                let n = self.nodes[h].len().max(other.nodes[h].len());
                self.extend_level(h, n)?;
                other.extend_level(h, n)?;
            }
        }
        for (a, b) in self
            .nodes
            .iter_mut()
            .flatten()
            .zip(other.nodes.iter().flatten())
        {
            union_optional(a.as_mut(), b.as_ref())?;
        }
        union_optional(
            self.sbf.as_mut().map(Sbf::filter_mut),
            other.sbf.as_ref().map(Sbf::filter),
        )
    }

    /// Adds root levels to a dynamic PBF-1 until `tick` fits (Figure 4).
    fn grow_to(&mut self, tick: Tick) -> Result<()> {
        while tick >= self.capacity() {
            if self.nodes.len() > 64 {
                return Err(Error::BeyondHorizon {
                    tick,
                    horizon: self.capacity(),
                });
            }
            let root = self.nodes.last().and_then(|l| l.first()).cloned().flatten();
            self.nodes.push(vec![root]);
        }
        Ok(())
    }

    /// Creates the nodes of a dynamic level up to `len` of them.
    fn extend_level(&mut self, height: usize, len: usize) -> Result<()> {
        let Some(shape) = self.node_shape else {
            return Ok(());
        };
        while self.nodes[height].len() < len {
            self.nodes[height].push(Some(BloomFilter::from_shape(shape, self.seed)?));
        }
        Ok(())
    }

    /// The cover C([s, e]) of `range` (clamped to the capacity) and the leaves it only partly
    /// overlaps, from the tree's geometry alone.
    ///
    /// ```
    /// use chronobloom_core::temporal::{Pbf1, TimeRange};
    /// let p = Pbf1::uniform(8, 2, 8_000, 4, 0).unwrap(); // Figure 3: g = 2, T = 8
    /// let c = p.cover(TimeRange::new(0, 4).unwrap()); // the paper's C([1, 5]) = {I2}
    /// assert_eq!(c.nodes, vec![(1, 0)]); // height 1, index 0: ticks [0, 3]
    /// assert_eq!(c.partial, vec![(2, TimeRange::point(4))]);
    /// ```
    pub fn cover(&self, range: TimeRange) -> Pbf1Cover {
        let mut cover = Pbf1Cover::default();
        let Some(range) = range.clamp_below(self.capacity()) else {
            return cover;
        };
        let (s, e, g) = (range.start(), range.end(), self.g);
        let (ls, le) = (s / g, e / g);
        let s_full = s % g == 0;
        let e_full = e % g == g - 1 || e == self.capacity() - 1;
        if !s_full {
            let end = e.min(ls * g + (g - 1));
            cover
                .partial
                .push((ls, TimeRange::new(s, end).unwrap_or(range)));
        }
        if !e_full && (le != ls || s_full) {
            let start = s.max(le * g);
            cover
                .partial
                .push((le, TimeRange::new(start, e).unwrap_or(range)));
        }
        let first = if s_full { Some(ls) } else { ls.checked_add(1) };
        // A range that reaches the end of the data reaches the end of every node cut by it: those
        // nodes count as covered, so the cover runs to the tree's last (virtual) leaf.
        let root = self.levels() - 1;
        let last = if e == self.capacity() - 1 {
            Some(((le >> root) << root) | ((1u64 << root) - 1))
        } else if e_full {
            Some(le)
        } else {
            le.checked_sub(1)
        };
        if let (Some(a), Some(b)) = (first, last) {
            if let Ok(leaves) = TimeRange::new(a, b) {
                let capacity = u128::from(self.capacity());
                cover.nodes = dyadic_cover(leaves, root)
                    .filter(|b| (u128::from(b.bucket) << b.level) * u128::from(g) < capacity)
                    .map(|b| (b.level, b.bucket))
                    .collect();
            }
        }
        cover
    }

    /// Route 2 for one covered node: probes it, or its children while it has no bits. A bit-less
    /// leaf is deferred to the SBF with its whole range.
    fn probe_full(
        &self,
        hash: KeyHash,
        (height, index): (u32, u64),
        probes: &mut u64,
        deferred: &mut Vec<(u64, TimeRange)>,
    ) -> bool {
        let Some(slot) = self.nodes[height as usize].get(index as usize) else {
            return false; // beyond the horizon, or not created yet: nothing was inserted there
        };
        match (slot, height) {
            (Some(f), _) => {
                *probes += 1;
                f.contains_hash(hash)
            }
            (None, 0) => {
                if let Some(r) = node_range(self.g, 0, index).clamp_below(self.capacity()) {
                    deferred.push((index, r));
                }
                false
            }
            (None, _) => {
                (0..2).any(|c| self.probe_full(hash, (height - 1, index * 2 + c), probes, deferred))
            }
        }
    }

    /// Route 3 for one leaf: its filter (when it has bits), then the SBF over `ticks`.
    fn probe_partial(&self, hash: KeyHash, leaf: u64, ticks: TimeRange, probes: &mut u64) -> bool {
        match self.nodes[0].get(leaf as usize) {
            None => return false, // not created yet: nothing was inserted there
            Some(Some(f)) => {
                *probes += 1;
                if !f.contains_hash(hash) {
                    return false; // route 1: the leaf rules the key out
                }
            }
            Some(None) => {}
        }
        let Some(sbf) = &self.sbf else {
            return true; // no finer filter has bits: "maybe"
        };
        let a = sbf.probe_ticks(hash, ticks);
        *probes += a.probes;
        a.present
    }
}

/// The decomposition of a query range in a PBF-1 ([`Pbf1::cover`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pbf1Cover {
    /// C([s, e]): (height, index) of the nodes inside the range whose parent is not, left to right.
    pub nodes: Vec<(u32, u64)>,
    /// The leaves the range only partly overlaps (at most two), with the ticks of the range in each.
    pub partial: Vec<(u64, TimeRange)>,
}

const ZERO: FilterShape = FilterShape { bits: 0, hashes: 0 };

/// A dynamic tree as inserts grow it: every node has `shape` (new ones get it, so a shape
/// unlike the nodes' could make the next insert allocate any amount), level `h` has a node for
/// each block of `2^h` leaves up to the last leaf, and there are no more levels than the leaves
/// need (a new level is added once a tick reaches the capacity `g 2^(L-1)`, and every leaf up to
/// that tick is created), so the next inserts stay within a few times the nodes read.
fn check_dynamic(
    counts: &[u64],
    shape: FilterShape,
    nodes: &[Vec<Option<BloomFilter>>],
) -> Result<()> {
    let leaves = counts[0];
    let expected = |h: usize| ((leaves - 1).checked_shr(h as u32).unwrap_or(0)) + 1;
    if counts.iter().enumerate().any(|(h, &c)| c != expected(h))
        || counts.len() as u32 > leaves.ilog2() + 2
    {
        return Err(Error::invalid(
            "nodes",
            "do not match a dynamic tree grown by inserts",
        ));
    }
    if let Some(other) = nodes
        .iter()
        .flatten()
        .find(|n| n.as_ref().map(BloomFilter::shape) != Some(shape))
    {
        return Err(Error::ShapeMismatch {
            what: "dynamic node bits vs node_shape",
            left: other.as_ref().map_or(0, |f| f.bit_len()),
            right: shape.bits,
        });
    }
    Ok(())
}

fn check_granularity(g: u64) -> Result<()> {
    if g == 0 {
        return Err(Error::invalid(
            "g",
            "leaf granularity must be at least 1 tick",
        ));
    }
    Ok(())
}

/// Number of nodes per height of a static tree, leaves first.
fn static_counts(horizon: Tick, g: u64) -> Result<Vec<u64>> {
    check_granularity(g)?;
    if horizon == 0 {
        return Err(Error::invalid("horizon", "must be at least 1 tick"));
    }
    let leaves = horizon.div_ceil(g);
    let height = (leaves - 1).checked_ilog2().map_or(0, |l| l + 1);
    Ok((0..=height).map(|h| leaves.div_ceil(1u64 << h)).collect())
}

/// The ticks of node (height, index), saturating at `u64::MAX`.
fn node_range(g: u64, height: u32, index: u64) -> TimeRange {
    let span = u128::from(g) << height;
    let start = (u128::from(index) * span).min(u128::from(u64::MAX)) as u64;
    let end = (u128::from(index + 1) * span - 1).min(u128::from(u64::MAX)) as u64;
    TimeRange::new(start, end).unwrap_or(TimeRange::point(start))
}

fn node_filter(shape: FilterShape, seed: u64) -> Result<Option<BloomFilter>> {
    if shape.bits == 0 {
        return Ok(None);
    }
    BloomFilter::from_shape(shape, seed).map(Some)
}

fn sbf_filter(shape: FilterShape, seed: u64) -> Result<Option<Sbf>> {
    if shape.bits == 0 {
        return Ok(None);
    }
    Sbf::from_shape(shape, seed).map(Some)
}

fn union_optional(a: Option<&mut BloomFilter>, b: Option<&BloomFilter>) -> Result<()> {
    match (a, b) {
        (Some(a), Some(b)) => a.union(b),
        (None, None) => Ok(()),
        (a, b) => Err(Error::ShapeMismatch {
            what: "filter bits",
            left: a.map_or(0, |f| f.bit_len()),
            right: b.map_or(0, |f| f.bit_len()),
        }),
    }
}

impl TemporalFilter for Pbf1 {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn insert_hash(&mut self, hash: KeyHash, tick: Tick) -> Result<()> {
        match self.horizon {
            Some(horizon) if tick >= horizon => {
                return Err(Error::BeyondHorizon { tick, horizon });
            }
            Some(_) => {}
            None => self.grow_to(tick)?,
        }
        for h in 0..self.nodes.len() {
            let index = (u128::from(tick) / (u128::from(self.g) << h)) as usize;
            self.extend_level(h, index + 1)?;
            if let Some(Some(f)) = self.nodes[h].get_mut(index) {
                f.insert_hash(hash);
            }
        }
        if let Some(sbf) = &mut self.sbf {
            sbf.insert_hash(hash, tick)?;
        }
        Ok(())
    }

    fn query_hash(&self, hash: KeyHash, range: TimeRange) -> Answer {
        let mut probes = 0;
        let cover = self.cover(range);
        let mut partial = cover.partial;
        let present = cover
            .nodes
            .iter()
            .any(|&node| self.probe_full(hash, node, &mut probes, &mut partial))
            || partial
                .iter()
                .any(|&(leaf, ticks)| self.probe_partial(hash, leaf, ticks, &mut probes));
        Answer { present, probes }
    }

    fn memory_bits(&self) -> u64 {
        let nodes: u64 = self
            .nodes
            .iter()
            .flatten()
            .flatten()
            .map(Filter::memory_bits)
            .sum();
        nodes + self.sbf.as_ref().map_or(0, TemporalFilter::memory_bits)
    }
}
