//! Testing a batch's tuples as a software pipeline: each tuple's varying side is hashed and the
//! line of its first cell requested [`AHEAD`] tuples before the tuple is tested.
//!
//! A tuple's `k1 · k2` cells lie in `k1` rows scattered over the matrix, and a test that stops
//! at its first clear bit waits for one cache miss after another. A batch instead hashes the
//! varying side of each tuple (the fixed side was hashed once), asks for the line of its first
//! cell, and tests the tuple hashed [`AHEAD`] places earlier, whose line has had the time of
//! those hashes to arrive. In a line-local matrix ([`super::MatrixShape::line_local`]) a row's
//! cells of one tuple are one line. A tuple is tested row by row, and the positions of later rows
//! are computed only when the earlier rows pass (most absent tuples fail in their first row).
//! Only the hashes wait in the pipeline. Answers are exactly those of testing each tuple alone.

use super::batch::fill;
use super::filter::MatrixBloom;
use super::probe::by_reducer;
use super::shape::MAX_SIDE_HASHES;
use crate::hash::{Key, KeyHash, Probes, Reduce};
use crate::prefetch::prefetch;

/// Tuples between hashing a tuple and testing it.
const AHEAD: usize = 16;

const SIDES: usize = MAX_SIDE_HASHES as usize;

/// Runs `test` on the hash of each of `items` (`hash`), [`AHEAD`] items after `request` was
/// given it; appends the answers to `out` in the items' order.
#[inline]
fn pipelined<T>(
    items: &[T],
    hash: impl Fn(&T) -> KeyHash,
    request: impl Fn(KeyHash),
    test: impl Fn(KeyHash) -> bool,
    out: &mut Vec<bool>,
) {
    let mut ring = [KeyHash { lo: 0, hi: 0 }; AHEAD];
    for (i, item) in items.iter().enumerate() {
        let h = hash(item);
        request(h);
        let slot = &mut ring[i % AHEAD];
        if i >= AHEAD {
            out.push(test(*slot));
        }
        *slot = h;
    }
    let tail = items.len().min(AHEAD);
    out.extend((items.len() - tail..items.len()).map(|i| test(ring[i % AHEAD])));
}

impl MatrixBloom {
    /// Appends to `out` whether each of `values` is present with the fixed first component whose
    /// rows start at the words `rows`.
    pub(super) fn test_values<B: Key>(&self, rows: &[u64], values: &[B], out: &mut Vec<bool>) {
        let (words, g) = (self.bits.words(), &self.geometry);
        let first_row = rows.first().copied().unwrap_or(0);
        by_reducer!(g.class_cols_low, g.class_cols, |class_cols| pipelined(
            values,
            |b| KeyHash::of(b, g.col_seed),
            |h| {
                let col = g.first_col_by(h, class_cols);
                prefetch(words, (first_row + col / 64) as usize);
            },
            |h| {
                let mut cols = [0u64; SIDES];
                let n = fill(&mut cols, g.col_indices_by(h, class_cols));
                let cols = &cols[..n];
                rows.iter().all(|&row| {
                    cols.iter().fold(1u64, |acc, &c| {
                        acc & words
                            .get((row + c / 64) as usize)
                            .map_or(0, |w| w >> (c % 64))
                    }) & 1
                        == 1
                })
            },
            out,
        ))
    }

    /// Appends to `out` whether each of `keys` is present with the fixed second component whose
    /// columns are `cols`.
    pub(super) fn test_keys<A: Key>(&self, cols: &[u64], keys: &[A], out: &mut Vec<bool>) {
        let (words, g) = (self.bits.words(), &self.geometry);
        let row_words = g.stride / 64;
        // The columns as (word in the row, bits of it), one pair per distinct word.
        let (mut masks, mut n) = ([(0u64, 0u64); SIDES], 0);
        for &c in cols {
            let word = c / 64;
            match masks[..n].iter_mut().find(|(w, _)| *w == word) {
                Some((_, bits)) => *bits |= 1 << (c % 64),
                None => {
                    masks[n] = (word, 1 << (c % 64));
                    n += 1;
                }
            }
        }
        let masks = &masks[..n];
        let first_word = masks.first().map_or(0, |&(w, _)| w);
        by_reducer!(g.rows_low, g.rows, |rows| pipelined(
            keys,
            |a| KeyHash::of(a, g.row_seed),
            |h| {
                let row = rows.reduce(h.lo);
                prefetch(words, (row * row_words + first_word) as usize);
            },
            |h| {
                Probes::new(h, g.row_hashes, rows).all(|r| {
                    let row = r * row_words;
                    masks.iter().fold(true, |acc, &(w, bits)| {
                        acc & (words.get((row + w) as usize).map_or(0, |x| *x) & bits == bits)
                    })
                })
            },
            out,
        ))
    }
}
