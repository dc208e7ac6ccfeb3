//! The tick filter's serde form: the cells flattened in their width, written straight from the
//! lines, and checked on the way in — the cell width the window needs, the hash count, whole
//! lines, and no cell holding a tick after the latest insert (ticks are `base + value − 1`).

use super::{cells_per_line, Cells, Line, TickFilter, MAX_WINDOW};
use crate::error::{Error, Result};
use crate::temporal::Tick;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};

/// The cells as read back: one vector of the window's cell width.
#[derive(Deserialize)]
pub(super) enum CellsRepr {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

/// The filter as read back, checked by [`TryFrom`].
#[derive(Deserialize)]
pub(super) struct TickFilterRepr {
    hashes: u32,
    cells: CellsRepr,
    base: Tick,
    window: Tick,
    latest: Option<Tick>,
}

/// Lines written as one flat sequence of cells (the encoding of a `Vec` of them).
struct Flat<'a, C, const N: usize>(&'a [Line<C, N>]);

impl<C: Serialize, const N: usize> Serialize for Flat<'_, C, N> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len() * N))?;
        for c in self.0.iter().flat_map(|l| l.0.iter()) {
            seq.serialize_element(c)?;
        }
        seq.end()
    }
}

/// [`CellsRepr`] borrowed from the lines (serializes identically).
#[derive(Serialize)]
enum CellsRef<'a> {
    U8(Flat<'a, u8, 64>),
    U16(Flat<'a, u16, 32>),
    U32(Flat<'a, u32, 16>),
}

/// [`TickFilterRepr`] borrowed from the filter (serializes identically).
#[derive(Serialize)]
struct TickFilterRef<'a> {
    hashes: u32,
    cells: CellsRef<'a>,
    base: Tick,
    window: Tick,
    latest: Option<Tick>,
}

impl Serialize for TickFilter {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let cells = match &self.cells {
            Cells::U8(l) => CellsRef::U8(Flat(l)),
            Cells::U16(l) => CellsRef::U16(Flat(l)),
            Cells::U32(l) => CellsRef::U32(Flat(l)),
        };
        TickFilterRef {
            hashes: self.hashes,
            cells,
            base: self.base,
            window: self.window,
            latest: self.latest,
        }
        .serialize(s)
    }
}

/// The lines of `cells` (whole lines of `N`, at least one), every value at most `max`.
fn lines<C: Copy + Default + Into<u64>, const N: usize>(
    cells: Vec<C>,
    max: u64,
) -> Result<Vec<Line<C, N>>> {
    if cells.is_empty() || !cells.len().is_multiple_of(N) {
        return Err(Error::invalid(
            "cells",
            format!("{} cells are not whole lines of {N}", cells.len()),
        ));
    }
    if cells.iter().any(|&c| c.into() > max) {
        return Err(Error::invalid(
            "cells",
            "a cell holds a tick after the latest insert",
        ));
    }
    Ok(cells
        .chunks_exact(N)
        .map(|chunk| {
            let mut line = Line([C::default(); N]);
            line.0.copy_from_slice(chunk);
            line
        })
        .collect())
}

impl TryFrom<TickFilterRepr> for TickFilter {
    type Error = Error;
    fn try_from(r: TickFilterRepr) -> Result<Self> {
        if !(1..=MAX_WINDOW).contains(&r.window) {
            return Err(Error::invalid(
                "window",
                format!("{} is outside 1..={MAX_WINDOW}", r.window),
            ));
        }
        let per_line = cells_per_line(r.window);
        let max_k = 64 / per_line.trailing_zeros();
        if !(1..=max_k).contains(&r.hashes) {
            return Err(Error::invalid(
                "hashes",
                format!("{} is outside 1..={max_k}", r.hashes),
            ));
        }
        // The largest value a cell may hold: the latest insert's, `latest − base + 1`.
        let max = match r.latest {
            None => 0,
            Some(l) if l >= r.base => (l - r.base).saturating_add(1),
            Some(l) => {
                return Err(Error::invalid(
                    "latest",
                    format!("{l} is before the base tick {}", r.base),
                ))
            }
        };
        let cells = match (per_line, r.cells) {
            (64, CellsRepr::U8(c)) => Cells::U8(lines(c, max)?),
            (32, CellsRepr::U16(c)) => Cells::U16(lines(c, max)?),
            (16, CellsRepr::U32(c)) => Cells::U32(lines(c, max)?),
            _ => {
                return Err(Error::invalid(
                    "cells",
                    format!("not the width a window of {} needs", r.window),
                ))
            }
        };
        Ok(TickFilter {
            hashes: r.hashes,
            cells,
            base: r.base,
            window: r.window,
            latest: r.latest,
        })
    }
}
