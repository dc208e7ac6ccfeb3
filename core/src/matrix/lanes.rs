//! Testing a batch's tuples in lanes: several tuples side by side, their cells prefetched one
//! chunk ahead.
//!
//! A tuple's `k1 · k2` cells lie in `k1` rows scattered over the matrix, and a test that stops
//! at its first clear bit waits for one cache miss after another. A batch instead computes the
//! positions of a chunk of tuples (the varying side hashed once per tuple, the fixed side once
//! per batch), asks for their cache lines, and tests the previous chunk while those lines arrive.
//! Within a chunk, the first row of every tuple is tested before any second row, and lanes whose
//! row misses a column drop out. Answers are exactly those of testing each tuple alone.

use super::filter::MatrixBloom;
use crate::prefetch::prefetch;

/// At most this many tuples side by side; the lanes' live set is one `u32`.
const MAX_LANES: usize = 16;
const _: () = assert!(MAX_LANES < 32);

/// Positions held per chunk: `MAX_LANES` lanes of up to 4 hashes, fewer lanes for more hashes.
const LANE_BUFFER: usize = 64;

/// The side of a batch's tuples that every tuple shares, hashed once.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fixed<'a> {
    /// The first word of each of the fixed first component's rows; the batch varies columns.
    Rows(&'a [u64]),
    /// The fixed second component's columns; the batch varies rows.
    Cols(&'a [u64]),
}

/// One side of a chunk's tuples: the same positions for every lane, or `len` per lane.
#[derive(Debug, Clone, Copy)]
struct Side<'a> {
    items: &'a [u64],
    per_lane: usize,
    len: usize,
}

impl<'a> Side<'a> {
    fn fixed(items: &'a [u64]) -> Self {
        Side {
            items,
            per_lane: 0,
            len: items.len(),
        }
    }

    fn per_lane(items: &'a [u64], len: usize) -> Self {
        Side {
            items,
            per_lane: len,
            len,
        }
    }

    #[inline]
    fn lane(&self, i: usize) -> &'a [u64] {
        let start = i * self.per_lane;
        &self.items[start..start + self.len]
    }
}

impl MatrixBloom {
    /// Whether each of `items` is present with the fixed side: `positions` writes an item's
    /// varying positions (row starts in words, or columns) into its slice and returns how many.
    pub(super) fn test_batch<T>(
        &self,
        items: &[T],
        fixed: Fixed<'_>,
        positions: impl Fn(&T, &mut [u64]) -> usize,
    ) -> Vec<bool> {
        let varying = match fixed {
            Fixed::Rows(_) => self.geometry.col_hashes,
            Fixed::Cols(_) => self.geometry.row_hashes,
        } as usize;
        let lanes = (LANE_BUFFER / varying.max(1)).clamp(1, MAX_LANES);
        let mut out = Vec::with_capacity(items.len());
        if items.len() <= lanes {
            // One chunk: nothing to overlap its loads with.
            let mut buffer = [0u64; LANE_BUFFER];
            let len = Self::positions_of(items, &mut buffer, varying, &positions);
            let (rows, cols) = Self::sides(fixed, &buffer, len);
            self.test_lanes(items.len(), rows, cols, &mut out);
            return out;
        }
        let mut buffers = [[0u64; LANE_BUFFER]; 2];
        // The chunk whose lines are on their way: its lanes, positions per lane and buffer.
        let mut pending: Option<(usize, usize, usize)> = None;
        for (c, chunk) in items.chunks(lanes).enumerate() {
            let buffer = &mut buffers[c % 2];
            let len = Self::positions_of(chunk, buffer, varying, &positions);
            let (rows, cols) = Self::sides(fixed, &buffer[..], len);
            self.prefetch_lanes(chunk.len(), rows, cols);
            if let Some((n, len, b)) = pending.replace((chunk.len(), len, c % 2)) {
                let (rows, cols) = Self::sides(fixed, &buffers[b][..], len);
                self.test_lanes(n, rows, cols, &mut out);
            }
        }
        if let Some((n, len, b)) = pending {
            let (rows, cols) = Self::sides(fixed, &buffers[b][..], len);
            self.test_lanes(n, rows, cols, &mut out);
        }
        out
    }

    /// Writes the varying positions of `chunk` into `buffer`, `varying` slots per item; returns
    /// how many each item has.
    fn positions_of<T>(
        chunk: &[T],
        buffer: &mut [u64],
        varying: usize,
        positions: &impl Fn(&T, &mut [u64]) -> usize,
    ) -> usize {
        let mut len = varying;
        for (slot, item) in buffer.chunks_exact_mut(varying).zip(chunk) {
            len = positions(item, slot);
        }
        len
    }

    fn sides<'a>(fixed: Fixed<'a>, buffer: &'a [u64], len: usize) -> (Side<'a>, Side<'a>) {
        match fixed {
            Fixed::Rows(rows) => (Side::fixed(rows), Side::per_lane(buffer, len)),
            Fixed::Cols(cols) => (Side::per_lane(buffer, len), Side::fixed(cols)),
        }
    }

    /// Starts loading the words of the lanes' cells in their first rows (most absent tuples
    /// fail there; loading every row would fill the memory system with lines never read).
    fn prefetch_lanes(&self, lanes: usize, rows: Side<'_>, cols: Side<'_>) {
        let words = self.bits.words();
        for i in 0..lanes {
            if let Some(&row) = rows.lane(i).first() {
                for &col in cols.lane(i) {
                    prefetch(words, (row + col / 64) as usize);
                }
            }
        }
    }

    /// Appends to `out` whether each of `lanes` tuples is present: every lane's first row, then
    /// the second row of the lanes still live, and so on.
    fn test_lanes(&self, lanes: usize, rows: Side<'_>, cols: Side<'_>, out: &mut Vec<bool>) {
        let words = self.bits.words();
        let mut live: u32 = (1u32 << lanes) - 1;
        for h in 0..rows.len {
            let mut next = 0u32;
            for i in 0..lanes {
                if live >> i & 1 == 0 {
                    continue;
                }
                let row = rows.lane(i)[h];
                let hit = cols.lane(i).iter().fold(1u64, |acc, &col| {
                    acc & words[(row + col / 64) as usize] >> (col % 64)
                });
                next |= ((hit & 1) as u32) << i;
            }
            live = next;
            if live == 0 {
                break;
            }
        }
        out.extend((0..lanes).map(|i| live >> i & 1 == 1));
    }
}
