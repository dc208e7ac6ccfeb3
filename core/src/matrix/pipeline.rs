//! Testing a batch's tuples tuple by tuple, in stages over chunks of [`CHUNK`] tuples, so that a
//! batch overlaps its cache misses instead of waiting for them one after another.
//!
//! A tuple's `k1 · k2` cells lie in `k1` rows scattered over the matrix. For each chunk, the
//! varying side of every tuple is hashed (the fixed side was hashed once) and the lines of its
//! cells in its **first row** requested; then every tuple's first row is tested, those lines having
//! had the time of the chunk's hashes to arrive. Most absent tuples fail there; the lines of the
//! other rows are requested only for the tuples that pass, and those are tested last, so that
//! their misses overlap one another (and the rest of the first-row tests) rather than each ending
//! the batch with a round trip of its own. In a line-local matrix
//! ([`super::MatrixShape::line_local`]) a row's cells of one tuple are one line. Answers are
//! exactly those of testing each tuple alone.

use super::filter::MatrixBloom;
use super::probe::{ColCount, Geometry};
use crate::hash::{Key, KeyHash, Spread};
use crate::prefetch::prefetch;

/// Tuples hashed, and their first rows requested, before the first of them is tested: enough
/// for a memory round trip, few enough for the CPU's outstanding misses.
const CHUNK: usize = 64;

/// Below this many tuples a batch has too few hashes to cover its first rows' round trip: every
/// row of every tuple is requested at once (one wait for memory, not two), without the chunk's
/// buffers.
const EAGER_BELOW: usize = 8;

/// A batch of at most this many tuples is one chunk of this size.
const SHORT_CHUNK: usize = 16;

/// The row tests of a batch whose varying side is hashed to a [`KeyHash`] per tuple.
trait RowTests {
    /// What a tuple's tests need of its hash, computed once ([`Self::probe`]) for the request
    /// and the tests of both stages.
    type Probe: Copy;
    /// A placeholder to fill buffers of probes with.
    const NONE: Self::Probe;
    /// The probe of a tuple whose varying side hashed to `h`.
    fn probe(&self, h: KeyHash) -> Self::Probe;
    /// Requests the lines of the tuple's cells in its first row.
    fn request_first(&self, p: &Self::Probe);
    /// Whether the tuple's cells in its first row are all set.
    fn first(&self, p: &Self::Probe) -> bool;
    /// Requests the lines of the tuple's cells in its other rows.
    fn request_rest(&self, p: &Self::Probe);
    /// Whether the tuple's cells in its other rows are all set.
    fn rest(&self, p: &Self::Probe) -> bool;
}

/// Appends to `out` the answer of `tests` for each of `items`, hashed by `hash`, in the items'
/// order, chunk by chunk: hash and request the first rows, test them (requesting the other rows
/// of those that pass), then test the other rows of those. A batch of fewer than
/// [`EAGER_BELOW`] tuples requests every row up front.
#[inline]
fn staged<T, R: RowTests>(
    items: &[T],
    hash: impl Fn(&T) -> KeyHash,
    tests: &R,
    out: &mut Vec<bool>,
) {
    if items.len() < EAGER_BELOW {
        let mut probes = [R::NONE; EAGER_BELOW];
        for (slot, item) in probes.iter_mut().zip(items) {
            *slot = tests.probe(hash(item));
            tests.request_first(slot);
            tests.request_rest(slot);
        }
        let probes = &probes[..items.len()];
        out.extend(probes.iter().map(|p| tests.first(p) && tests.rest(p)));
        return;
    }
    if items.len() <= SHORT_CHUNK {
        chunked::<SHORT_CHUNK, T, R>(items, hash, tests, out);
    } else {
        chunked::<CHUNK, T, R>(items, hash, tests, out);
    }
}

/// [`staged`] for a batch of at least [`EAGER_BELOW`] tuples, `N` at a time: buffers of `N`
/// entries (filled per batch: a short batch fills short ones).
#[inline]
fn chunked<const N: usize, T, R: RowTests>(
    items: &[T],
    hash: impl Fn(&T) -> KeyHash,
    tests: &R,
    out: &mut Vec<bool>,
) {
    let mut probes = [R::NONE; N];
    let mut passed = [0usize; N];
    for chunk in items.chunks(N) {
        let probes = &mut probes[..chunk.len()];
        for (slot, item) in probes.iter_mut().zip(chunk) {
            *slot = tests.probe(hash(item));
            tests.request_first(slot);
        }
        let start = out.len();
        out.resize(start + chunk.len(), false);
        let answers = &mut out[start..];
        let mut n = 0;
        for (i, (p, answer)) in probes.iter().zip(answers.iter_mut()).enumerate() {
            let pass = tests.first(p);
            *answer = pass;
            // Branch-free: most tuples fail, and which ones is unpredictable.
            passed[n] = i;
            n += usize::from(pass);
        }
        for &i in &passed[..n] {
            tests.request_rest(&probes[i]);
        }
        for &i in &passed[..n] {
            answers[i] = tests.rest(&probes[i]);
        }
    }
}

/// A fixed first component (its rows as word offsets) against values hashed with the column
/// seed.
struct ValueTests<'a, C> {
    words: &'a [u64],
    g: &'a Geometry,
    /// The first row, as a one-row slice.
    first: &'a [u64],
    /// The other `k1 − 1` rows.
    rest: &'a [u64],
    count: C,
}

impl<C: ColCount> ValueTests<'_, C> {
    /// Whether the columns `cols` are all set in each of `rows`.
    #[inline]
    fn has(&self, rows: &[u64], cols: &[u64]) -> bool {
        rows.iter().all(|&row| {
            cols.iter().fold(1u64, |acc, &c| {
                acc & self
                    .words
                    .get((row + c / 64) as usize)
                    .map_or(0, |w| w >> (c % 64))
            }) & 1
                == 1
        })
    }

    /// Requests, in each of `rows`, the line of the value's first column.
    #[inline]
    fn request(&self, rows: &[u64], cols: &C::Cols) {
        let col = cols.as_ref().first().copied().unwrap_or(0);
        for &row in rows {
            prefetch(self.words, (row + col / 64) as usize);
        }
    }
}

impl<C: ColCount> RowTests for ValueTests<'_, C> {
    /// The value's columns.
    type Probe = C::Cols;
    const NONE: C::Cols = C::NONE;

    #[inline]
    fn probe(&self, h: KeyHash) -> C::Cols {
        self.count.cols(self.g, h)
    }

    #[inline]
    fn request_first(&self, cols: &C::Cols) {
        self.request(self.first, cols);
    }

    #[inline]
    fn first(&self, cols: &C::Cols) -> bool {
        self.has(self.first, cols.as_ref())
    }

    #[inline]
    fn request_rest(&self, cols: &C::Cols) {
        self.request(self.rest, cols);
    }

    #[inline]
    fn rest(&self, cols: &C::Cols) -> bool {
        self.has(self.rest, cols.as_ref())
    }
}

/// A fixed second component (its columns as words of a row and the bits in them) against keys
/// hashed with the row seed.
struct KeyTests<'a, C: ColCount> {
    words: &'a [u64],
    /// Words in the row that hold the fixed columns ([`ColCount::word_masks`]: for the common
    /// `k2`, one per column in an array of that length, so that the tests and requests below are
    /// straight-line code).
    col_words: C::Cols,
    /// The columns' bits in each of `col_words`.
    col_bits: C::Cols,
    row_words: u64,
    rows: Spread,
    row_hashes: u32,
}

impl<C: ColCount> KeyTests<'_, C> {
    /// Whether the fixed columns are all set in the row starting at word `row`.
    #[inline]
    fn has(&self, row: u64) -> bool {
        let bits = self.col_bits.as_ref();
        self.col_words
            .as_ref()
            .iter()
            .zip(bits)
            .fold(true, |acc, (&w, &bits)| {
                acc & (self.words.get((row + w) as usize).map_or(0, |x| *x) & bits == bits)
            })
    }

    /// Requests the lines of the fixed columns in the row starting at word `row` (a line that
    /// holds two of `col_words` is requested twice, which costs an instruction).
    #[inline]
    fn request(&self, row: u64) {
        for &w in self.col_words.as_ref() {
            prefetch(self.words, (row + w) as usize);
        }
    }
}

impl<C: ColCount> RowTests for KeyTests<'_, C> {
    /// The key's hash and the first word of its first row.
    type Probe = (KeyHash, u64);
    const NONE: (KeyHash, u64) = (KeyHash { lo: 0, hi: 0 }, 0);

    #[inline]
    fn probe(&self, h: KeyHash) -> (KeyHash, u64) {
        (h, self.rows.nth(h, 0) * self.row_words)
    }

    #[inline]
    fn request_first(&self, &(_, row): &(KeyHash, u64)) {
        self.request(row);
    }

    #[inline]
    fn first(&self, &(_, row): &(KeyHash, u64)) -> bool {
        self.has(row)
    }

    #[inline]
    fn request_rest(&self, &(h, _): &(KeyHash, u64)) {
        for r in self.rows.positions(h, self.row_hashes).skip(1) {
            self.request(r * self.row_words);
        }
    }

    #[inline]
    fn rest(&self, &(h, _): &(KeyHash, u64)) -> bool {
        self.rows
            .positions(h, self.row_hashes)
            .skip(1)
            .all(|r| self.has(r * self.row_words))
    }
}

impl MatrixBloom {
    /// Appends to `out` whether each of `values` is present with the fixed first component whose
    /// rows start at the words `rows`; `count` counts a value's columns.
    pub(super) fn test_values<B: Key, C: ColCount>(
        &self,
        rows: &[u64],
        values: &[B],
        count: C,
        out: &mut Vec<bool>,
    ) {
        let (words, g) = (self.bits.words(), &self.geometry);
        let (first, rest) = rows.split_at(rows.len().min(1));
        staged(
            values,
            |b| KeyHash::of(b, g.col_seed),
            &ValueTests {
                words,
                g,
                first,
                rest,
                count,
            },
            out,
        )
    }

    /// Appends to `out` whether each of `keys` is present with the fixed second component whose
    /// columns are `cols`.
    pub(super) fn test_keys<A: Key, C: ColCount>(
        &self,
        cols: &C::Cols,
        keys: &[A],
        count: C,
        out: &mut Vec<bool>,
    ) {
        let (words, g) = (self.bits.words(), &self.geometry);
        let (col_words, col_bits) = count.word_masks(cols);
        staged(
            keys,
            |a| KeyHash::of(a, g.row_seed),
            &KeyTests::<C> {
                words,
                col_words,
                col_bits,
                row_words: g.stride / 64,
                rows: g.rows,
                row_hashes: g.row_hashes,
            },
            out,
        )
    }
}
