//! The data and filters of the matrix benches (`benches/matrix.rs`, `benches/matrix_ratio.rs`):
//! 250,000 keys × 4 values each, value `j` of key `a` being `mix64(a · 1000 + j) mod 10^6`, in a
//! standard Bloom filter, Theorem 2's square matrix and a line-local matrix of equal bits.

use chronobloom_core::bloom::{BloomFilter, Filter};
use chronobloom_core::hash::mix64;
use chronobloom_core::matrix::{MatrixBloom, MatrixShape};

pub const KEYS: u64 = 250_000;
pub const VALUES_PER_KEY: u64 = 4;
pub const VALUES: u64 = 1_000_000;
/// Absent tuples whose answers give the measured false positive rates.
const ABSENT_PROBES: u64 = 200_000;
pub const BATCHES: [usize; 6] = [1, 4, 16, 64, 256, 1_000];
/// Prepared batches hold at least this many tuples in all (at least 64 batches), so that a small
/// batch does not find its tuples' lines still cached from the previous round.
const ROTATION_TUPLES: u64 = 1 << 16;

pub fn rotation(batch: u64) -> u64 {
    (ROTATION_TUPLES / batch).max(64)
}

pub fn value(a: u64, j: u64) -> u64 {
    mix64(a * 1_000 + j) % VALUES
}

/// The Bloom filter, the square matrix and the line-local matrix of equal bits.
pub struct Filters {
    pub bloom: BloomFilter,
    pub square: MatrixBloom,
    pub lines: MatrixBloom,
}

pub fn filters() -> Filters {
    let n = KEYS * VALUES_PER_KEY;
    // The budget: Theorem 2's bits for 1% in whole line-local classes, for all three.
    let budget = MatrixShape::line_local_bits(MatrixShape::for_fpr(n, 0.01).unwrap().bits(), n)
        .unwrap()
        .stored_bits();
    let mut m = MatrixBloom::new(MatrixShape::min_storage_bits(budget, n, 1).unwrap(), 1).unwrap();
    let s = m.shape();
    let mut b = BloomFilter::new(budget, s.hashes(), 1).unwrap();
    let mut l = MatrixBloom::new(MatrixShape::line_local_bits(budget, n).unwrap(), 1).unwrap();
    for a in 0..KEYS {
        for j in 0..VALUES_PER_KEY {
            m.insert(&a, &value(a, j));
            l.insert(&a, &value(a, j));
            b.insert(&(a, value(a, j)));
        }
    }
    let absent: Vec<(u64, u64)> = (0..ABSENT_PROBES)
        .map(|i| (mix64(i) % KEYS, mix64(i ^ 0x77) % VALUES))
        .filter(|&(a, v)| (0..VALUES_PER_KEY).all(|j| value(a, j) != v))
        .collect();
    let rate = |hits: usize| hits as f64 / absent.len() as f64;
    let ls = l.shape();
    eprintln!(
        "matrix {} × {} ({} bits, k = {} × {}), line-local {} × {} in {} classes ({} bits, \
         k = {} × {}), Bloom {} bits k = {}; theorem 1 rate {:.4}; measured: matrix {:.4}, \
         line-local {:.4}, Bloom {:.4}",
        s.rows,
        s.cols,
        s.stored_bits(),
        s.row_hashes,
        s.col_hashes,
        ls.rows,
        ls.cols,
        ls.classes,
        ls.stored_bits(),
        ls.row_hashes,
        ls.col_hashes,
        b.bit_len(),
        b.hashes(),
        s.fpr(n as f64),
        rate(absent.iter().filter(|(a, v)| m.contains(a, v)).count()),
        rate(absent.iter().filter(|(a, v)| l.contains(a, v)).count()),
        rate(absent.iter().filter(|t| b.contains(*t)).count()),
    );
    Filters {
        bloom: b,
        square: m,
        lines: l,
    }
}

/// `rotation(b)` batches of one key with its values `j = 0 .. b` (the first
/// [`VALUES_PER_KEY`] inserted, the rest absent).
pub fn key_batches(b: u64) -> Vec<(u64, Vec<u64>)> {
    (0..rotation(b))
        .map(|r| {
            let a = mix64(r) % KEYS;
            (a, (0..b).map(|j| value(a, j)).collect())
        })
        .collect()
}

/// `rotation(b)` batches of `b` random keys (mostly absent) with one value.
pub fn value_batches(b: u64) -> Vec<(Vec<u64>, u64)> {
    (0..rotation(b))
        .map(|r| {
            let keys = (0..b).map(|i| mix64(r * 10_007 + i) % KEYS).collect();
            (keys, mix64(r ^ 0xabc) % VALUES)
        })
        .collect()
}
