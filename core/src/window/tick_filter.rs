//! A blocked Bloom filter of tick cells: "was this key seen in the last W ticks?" with a sharp
//! window edge and one cache miss per key.
//!
//! Each cell holds the latest tick at which any key probing it was inserted (a timing Bloom
//! filter). A key is reported seen at `now` iff all `k` of its cells hold a tick in
//! `(now - W, now]`. Because an insert only ever raises a cell to its own tick, every key inserted
//! within the window keeps its `k` cells live: **no false negative inside the window**. A key whose
//! last insertion is `W` or more ticks old is reported seen only when other keys inserted within
//! the window cover all its cells, with **no tail** past `W`. That is the reason the dedup operator
//! does not use [`TimeLimitedBloomFilter`](crate::window::TimeLimitedBloomFilter): its
//! slices stay live for up to `k` generations past a key's insertion, so a key repeating exactly
//! `W` ticks later is reported seen most of the time, far above ε.
//!
//! # Layout
//!
//! Cells are grouped in 64-byte lines (one cache line). A key's 64-bit fingerprint picks one line
//! (`fp * lines >> 64`) and `mix64(fp)` picks its `k` cells inside the line, so a check or an insert
//! touches one cache line. Lines fill unevenly, so the false positive rate for `n` keys in `L`
//! lines of `B` cells is the blocked Bloom filter's (Putze, Sanders and Singler, 2007)
//!
//! `Σ_i Poisson(i; n / L) · E[(X_{ki} / B)^k]`,
//!
//! where `X_j` is the number of distinct cells `j` uniform probes hit among `B` (computed exactly;
//! the common shortcut `(1 - (1 - 1/B)^{ki})^k` underestimates it by Jensen's inequality, by 7%
//! at ε = 0.01). It is above the standard `(1 - e^{-kn/m})^k`; [`TickFilter::shape_for`] sizes
//! the filter with it.
//!
//! Cells store `tick - base + 1` (0 = never set) in the narrowest type that holds twice the
//! window: `u8` for `W <= 128`, `u16` for `W <= 32768`, else `u32` (`W <= 2^31`). When a tick no
//! longer fits, the filter rebases to the window's first tick and clears the cells that fell out of
//! the window: one pass over the cells, at most once every `MAX - W + 1 >= W` ticks of activity.

use crate::bloom::FilterShape;
use crate::error::{Error, Result};
use crate::hash::mix64;
use crate::prefetch::prefetch;
use crate::temporal::Tick;
use serde::Deserialize;

mod serde_form;

/// Lines sampled to estimate the occupancy of a filter (per shard and epoch).
const OCCUPANCY_LINES: usize = 4;

/// Largest window, in ticks.
const MAX_WINDOW: Tick = 1 << 31;

/// One cache line of cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(64))]
struct Line<C, const N: usize>([C; N]);

/// A cell type: an unsigned integer holding `tick - base + 1`.
trait Cell: Copy + Ord + Into<u64> {
    /// The largest value.
    const MAX: u64;
    /// The cell holding `v <= MAX`.
    fn of(v: u64) -> Self;
}

macro_rules! cell {
    ($t:ty) => {
        impl Cell for $t {
            const MAX: u64 = <$t>::MAX as u64;
            #[inline]
            fn of(v: u64) -> Self {
                <$t>::try_from(v).unwrap_or(<$t>::MAX)
            }
        }
    };
}
cell!(u8);
cell!(u16);
cell!(u32);

/// The cells, in the width the window needs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cells {
    U8(Vec<Line<u8, 64>>),
    U16(Vec<Line<u16, 32>>),
    U32(Vec<Line<u32, 16>>),
}

/// The line of fingerprint `fp` among `lines` (multiply-shift: uniform, no division).
#[inline]
fn line_of(fp: u64, lines: usize) -> usize {
    ((u128::from(fp) * lines as u128) >> 64) as usize
}

/// True iff the `k` cells of `pos` in `line` are all at least `live`.
#[inline]
fn all_live<C: Cell, const N: usize>(line: &Line<C, N>, mut pos: u64, k: u32, live: u64) -> bool {
    let mut all = true;
    for _ in 0..k {
        all &= line.0[pos as usize & (N - 1)].into() >= live;
        pos >>= N.trailing_zeros();
    }
    all
}

/// Raises the `k` cells of `pos` in `line` to `v`; returns the smallest value they held.
#[inline]
fn raise<C: Cell, const N: usize>(line: &mut Line<C, N>, mut pos: u64, k: u32, v: C) -> u64 {
    let mut min = u64::MAX;
    for _ in 0..k {
        let c = &mut line.0[pos as usize & (N - 1)];
        min = min.min((*c).into());
        *c = (*c).max(v);
        pos >>= N.trailing_zeros();
    }
    min
}

/// Hands each item to `done` with whether the `k` cells of its fingerprint are all at least
/// `live`.
#[inline]
fn live_each<C: Cell, const N: usize, T, I, F>(
    lines: &[Line<C, N>],
    items: I,
    k: u32,
    live: u64,
    done: &mut F,
) where
    I: Iterator<Item = (T, u64)>,
    F: FnMut(T, bool),
{
    for (item, fp) in items {
        let seen = lines
            .get(line_of(fp, lines.len()))
            .is_some_and(|line| all_live(line, mix64(fp), k, live));
        done(item, seen);
    }
}

/// Raises the cells of each item's fingerprint to `v` and hands the item with the smallest value
/// its cells held to `done`.
#[inline]
fn raise_each<C: Cell, const N: usize, T, I, F>(
    lines: &mut [Line<C, N>],
    items: I,
    k: u32,
    v: C,
    done: &mut F,
) where
    I: Iterator<Item = (T, u64)>,
    F: FnMut(T, u64),
{
    let count = lines.len();
    for (item, fp) in items {
        if let Some(line) = lines.get_mut(line_of(fp, count)) {
            done(item, raise(line, mix64(fp), k, v));
        }
    }
}

/// Subtracts `shift` from every cell, clearing those that drop to 0 or below.
fn shift_down<C: Cell, const N: usize>(lines: &mut [Line<C, N>], shift: u64) {
    for c in lines.iter_mut().flat_map(|l| l.0.iter_mut()) {
        *c = C::of((*c).into().saturating_sub(shift));
    }
}

/// Fraction of live cells and mean of `(live fraction of the line)^k` over up to
/// [`OCCUPANCY_LINES`] consecutive lines from a place picked by `now`. Keys spread uniformly over
/// the lines, so any run of lines is a fair sample, and a consecutive run costs one cache miss
/// for the lot (the hardware prefetcher streams it) instead of one per line.
fn sample<C: Cell, const N: usize>(
    lines: &[Line<C, N>],
    k: u32,
    live: u64,
    now: Tick,
) -> (f64, f64) {
    let run = lines.len().min(OCCUPANCY_LINES);
    if run == 0 {
        return (0.0, 0.0);
    }
    let start = (mix64(now) % (lines.len() - run + 1) as u64) as usize;
    let (mut fill, mut fpr) = (0.0, 0.0);
    for line in &lines[start..start + run] {
        let set = line.0.iter().filter(|&&c| c.into() >= live).count();
        let f = set as f64 / N as f64;
        fill += f;
        fpr += f.powi(k as i32);
    }
    (fill / run as f64, fpr / run as f64)
}

/// Cells per 64-byte line for a window of `window` ticks.
fn cells_per_line(window: Tick) -> u64 {
    match window {
        0..=128 => 64,
        129..=32_768 => 32,
        _ => 16,
    }
}

/// `g[i] = E[(X_{ki} / B)^k]` for `i` in `0..=last`: the false positive rate of a line holding `i`
/// keys, from the distribution of occupied cells after each probe.
fn line_fpr_table(per_line: usize, k: u32, last: usize) -> Vec<f64> {
    let b = per_line as f64;
    let mut p = vec![0.0; per_line + 1];
    p[0] = 1.0;
    let mut g = Vec::with_capacity(last + 1);
    g.push(0.0);
    for _ in 1..=last {
        for _ in 0..k {
            // one more probe: stays on an occupied cell with probability x / B
            for x in (0..=per_line).rev() {
                let stay = p[x] * x as f64 / b;
                let from_below = if x > 0 {
                    p[x - 1] * (b - (x - 1) as f64) / b
                } else {
                    0.0
                };
                p[x] = stay + from_below;
            }
        }
        let fpr = p
            .iter()
            .enumerate()
            .map(|(x, &q)| q * (x as f64 / b).powi(k as i32))
            .sum();
        g.push(fpr);
    }
    g
}

/// The blocked false positive rate of `items` keys in `lines` lines, with the line table `g`
/// ([`line_fpr_table`]; lines with more keys than it covers count as always positive).
fn blocked_fpr(items: f64, lines: f64, g: &[f64]) -> f64 {
    let lambda = items / lines;
    let last = (lambda + 12.0 * lambda.sqrt() + 30.0).ceil() as usize;
    // ln Poisson(i; λ), accumulated: ln p_0 = -λ, ln p_i = ln p_{i-1} + ln λ - ln i.
    let (mut ln_p, mut sum) = (-lambda, 0.0);
    for i in 0..=last {
        if i > 0 {
            ln_p += lambda.ln() - (i as f64).ln();
        }
        sum += ln_p.exp() * g.get(i).copied().unwrap_or(1.0);
    }
    sum.min(1.0)
}

/// A blocked Bloom filter whose cells hold the latest tick they were set at.
///
/// ```
/// use chronobloom_core::window::TickFilter;
///
/// let shape = TickFilter::shape_for(1_000, 0.01, 60).unwrap();
/// let mut f = TickFilter::new(shape, 60, 0).unwrap();
/// let fp = 0x1234_5678_9abc_def0;
/// f.insert(fp, 10);
/// assert!(f.seen(fp, 69)); // 59 ticks later: inside (9, 69]
/// assert!(!f.seen(fp, 70)); // exactly W later: forgotten
/// ```
///
/// Read back with serde, the filter is checked: the cell width its window needs, the hash count,
/// whole lines, and no cell after the latest insert.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_form::TickFilterRepr")]
pub struct TickFilter {
    hashes: u32,
    cells: Cells,
    /// The tick a cell value of 1 stands for.
    base: Tick,
    window: Tick,
    /// The latest tick inserted.
    latest: Option<Tick>,
}

impl TickFilter {
    /// The shape holding `items` keys at false positive rate `fpr` over a window of `window`
    /// ticks with the fewest cells: `bits` is the number of cells (whole lines), `hashes` is `k`
    /// (at most what one 64-bit probe word addresses: 10, 12 or 16 for 8-, 16- or 32-bit cells).
    ///
    /// ```
    /// use chronobloom_core::window::TickFilter;
    /// let s = TickFilter::shape_for(1_000_000, 0.01, 60).unwrap();
    /// // blocked lines need more cells per key than the standard layout's 9.6
    /// assert!(s.bits > 10_000_000 && s.bits < 14_000_000 && s.bits % 64 == 0);
    /// ```
    pub fn shape_for(items: u64, fpr: f64, window: Tick) -> Result<FilterShape> {
        if items == 0 {
            return Err(Error::invalid("items", "must be at least 1"));
        }
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::invalid("fpr", format!("{fpr} is not in (0, 1)")));
        }
        let per_line = cells_per_line(window);
        let max_k = 64 / per_line.trailing_zeros();
        let n = items as f64;
        // the search keeps at most 2B keys per line on average
        let b = per_line as f64;
        let last = (2.0 * b + 12.0 * (2.0 * b).sqrt() + 30.0).ceil() as usize;
        let mut best: Option<(u64, u32)> = None;
        for k in 1..=max_k {
            let g = line_fpr_table(per_line as usize, k, last);
            let fpr_at = |lines: u64| blocked_fpr(n, lines as f64, &g);
            // the smallest line count meeting `fpr`: double, then bisect
            let mut hi = items.div_ceil(per_line).max(1);
            while fpr_at(hi) > fpr {
                hi = hi
                    .checked_mul(2)
                    .filter(|&h| h < 1 << 50)
                    .ok_or_else(|| Error::invalid("fpr", format!("{fpr} needs too many cells")))?;
            }
            let mut lo = hi / 2;
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                if fpr_at(mid) <= fpr {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            if best.is_none_or(|(lines, _)| hi < lines) {
                best = Some((hi, k));
            }
        }
        let (lines, k) = best.ok_or_else(|| Error::invalid("fpr", "no shape"))?;
        Ok(FilterShape {
            bits: lines * per_line,
            hashes: k,
        })
    }

    /// An empty filter of at least `shape.bits` cells (rounded up to whole lines) and
    /// `shape.hashes` cells per key over a window of `window` ticks (1 to 2^31), for ticks from
    /// `start` on.
    pub fn new(shape: FilterShape, window: Tick, start: Tick) -> Result<Self> {
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::invalid(
                "window",
                format!("{window} is outside 1..=2^31"),
            ));
        }
        let per_line = cells_per_line(window);
        let max_k = 64 / per_line.trailing_zeros();
        if !(1..=max_k).contains(&shape.hashes) {
            return Err(Error::invalid(
                "hashes",
                format!("{} is outside 1..={max_k}", shape.hashes),
            ));
        }
        let lines = usize::try_from(shape.bits.div_ceil(per_line))
            .map_err(|_| Error::invalid("cells", "more cells than this platform can address"))?;
        if lines == 0 {
            return Err(Error::invalid(
                "cells",
                "a tick filter needs at least one cell",
            ));
        }
        let cells = match per_line {
            64 => Cells::U8(vec![Line([0; 64]); lines]),
            32 => Cells::U16(vec![Line([0; 32]); lines]),
            _ => Cells::U32(vec![Line([0; 16]); lines]),
        };
        Ok(TickFilter {
            hashes: shape.hashes,
            cells,
            base: window_start(start, window),
            window,
            latest: None,
        })
    }

    /// The smallest cell value that is live at `now` (above every cell when nothing encodable is).
    #[inline]
    fn threshold(&self, now: Tick) -> u64 {
        window_start(now, self.window)
            .saturating_sub(self.base)
            .saturating_add(1)
    }

    /// Prefetches fingerprint `fp`'s line: prefetching the lines of many keys before checking
    /// them lets their cache misses overlap.
    #[inline]
    pub fn prefetch(&self, fp: u64) {
        match &self.cells {
            Cells::U8(l) => prefetch(l, line_of(fp, l.len())),
            Cells::U16(l) => prefetch(l, line_of(fp, l.len())),
            Cells::U32(l) => prefetch(l, line_of(fp, l.len())),
        }
    }

    /// True iff every cell of fingerprint `fp` holds a tick in `(now - W, now]` (ticks after
    /// `now` are never inserted before a query at `now` in the dedup operator).
    #[inline]
    pub fn seen(&self, fp: u64, now: Tick) -> bool {
        let mut seen = false;
        self.seen_each(std::iter::once(((), fp)), now, |(), s| seen = s);
        seen
    }

    /// [`Self::seen`] for each item's fingerprint, handed to `done` with the item; the checks
    /// are done once for the lot.
    #[inline]
    pub fn seen_each<T, I, F>(&self, items: I, now: Tick, mut done: F)
    where
        I: Iterator<Item = (T, u64)>,
        F: FnMut(T, bool),
    {
        let (live, k) = (self.threshold(now), self.hashes);
        match &self.cells {
            Cells::U8(l) => live_each(l, items, k, live, &mut done),
            Cells::U16(l) => live_each(l, items, k, live, &mut done),
            Cells::U32(l) => live_each(l, items, k, live, &mut done),
        }
    }

    /// Records fingerprint `fp` at `now` (cells only move forward in time; a tick before the
    /// window of the latest insert is ignored). Returns the oldest tick its cells held before,
    /// `None` when one was not live at `now`. In particular `Some(now)` whenever the key was
    /// inserted at `now` already.
    #[inline]
    pub fn insert(&mut self, fp: u64, now: Tick) -> Option<Tick> {
        let mut before = None;
        self.insert_each(std::iter::once(((), fp)), now, |(), b| before = b);
        before
    }

    /// Records each item's fingerprint at `now`, as [`Self::insert`] does one by one, with the
    /// checks done once for the lot, and hands each item with `insert`'s answer to `done`.
    #[inline]
    pub fn insert_each<T, I, F>(&mut self, items: I, now: Tick, mut done: F)
    where
        I: Iterator<Item = (T, u64)>,
        F: FnMut(T, Option<Tick>),
    {
        if now < self.base {
            items.for_each(|(item, _)| done(item, None));
            return;
        }
        let max = match &self.cells {
            Cells::U8(_) => <u8 as Cell>::MAX,
            Cells::U16(_) => <u16 as Cell>::MAX,
            Cells::U32(_) => <u32 as Cell>::MAX,
        };
        if now - self.base >= max {
            self.rebase(now);
        }
        self.latest = Some(self.latest.map_or(now, |l| l.max(now)));
        // After a rebase `now - base + 1 <= W + 1 <= MAX`.
        let (v, k, live, base) = (
            now - self.base + 1,
            self.hashes,
            self.threshold(now),
            self.base,
        );
        let mut answer = |item, min: u64| done(item, (min >= live).then(|| base + min - 1));
        match &mut self.cells {
            Cells::U8(l) => raise_each(l, items, k, u8::of(v), &mut answer),
            Cells::U16(l) => raise_each(l, items, k, u16::of(v), &mut answer),
            Cells::U32(l) => raise_each(l, items, k, u32::of(v), &mut answer),
        }
    }

    /// Moves the base to the first tick of the window ending at `now`, clearing older cells.
    fn rebase(&mut self, now: Tick) {
        let base = window_start(now, self.window);
        let shift = base.saturating_sub(self.base);
        match &mut self.cells {
            Cells::U8(l) => shift_down(l, shift),
            Cells::U16(l) => shift_down(l, shift),
            Cells::U32(l) => shift_down(l, shift),
        }
        self.base = self.base.max(base);
    }

    /// True when no query at `now` or later can find anything: the latest insertion is at least
    /// `W` ticks before `now` (or there was none).
    pub fn stale(&self, now: Tick) -> bool {
        self.latest
            .is_none_or(|l| l.saturating_add(self.window) <= now)
    }

    /// Fraction of cells live at `now` and the false positive rate of a query at `now`
    /// estimated from it (the mean of `(live fraction of a line)^k`), both from a run of 4
    /// consecutive lines that moves with `now` (taken every epoch for every shard, so it must be
    /// cheap; the operator averages over its shards).
    pub fn occupancy(&self, now: Tick) -> (f64, f64) {
        let (live, k) = (self.threshold(now), self.hashes);
        match &self.cells {
            Cells::U8(l) => sample(l, k, live, now),
            Cells::U16(l) => sample(l, k, live, now),
            Cells::U32(l) => sample(l, k, live, now),
        }
    }

    /// Number of cells per key, `k`.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// The window, in ticks.
    pub fn window(&self) -> Tick {
        self.window
    }

    /// The latest tick inserted, `None` before the first insert.
    pub fn latest(&self) -> Option<Tick> {
        self.latest
    }

    /// The bits [`Self::new`] allocates for `shape` over a window of `window` ticks (whole
    /// 512-bit lines of cells of the window's width), without allocating them.
    pub fn memory_bits_for(shape: FilterShape, window: Tick) -> u64 {
        shape
            .bits
            .div_ceil(cells_per_line(window))
            .saturating_mul(512)
    }

    /// Memory held by the cells, in bits.
    pub fn memory_bits(&self) -> u64 {
        let lines = match &self.cells {
            Cells::U8(l) => l.len(),
            Cells::U16(l) => l.len(),
            Cells::U32(l) => l.len(),
        };
        lines as u64 * 512
    }
}

/// The first tick of the window of `window` ticks ending at `now`: `now + 1 - W`, at least 0.
#[inline]
pub fn window_start(now: Tick, window: Tick) -> Tick {
    now.saturating_add(1).saturating_sub(window)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests;
