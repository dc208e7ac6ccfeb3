//! The matrix Bloom filter for 2-tuples (Fu et al., paper 003): batch and double-side partial
//! queries, the maximum-adaptive and minimum-storage layouts, and a matrix per PBF level for
//! batches of temporal queries.
//!
//! A tuple `(a, b)` is hashed componentwise: `a` to `k1` of `m1` rows, `b` to `k2` of `m2`
//! columns; insertion sets (a query tests) the `k1 · k2` crossings (Algorithms 1–2). A batch that
//! fixes one component hashes it once. The sizing follows FORMULAS.md:
//!
//! * Theorem 1: `FPR ≈ (1 − e^{−n k1 k2 / m})^{k1 k2}`, `m = m1 m2`;
//! * Theorem 2: the optimum is the standard filter's with `k = k1 k2 = (m/n) ln 2`,
//!   `FPR = 2^{−k1 k2}` ([`MatrixShape::for_fpr`]);
//! * maximum adaptive (§IV-B): rows a filter over the `n_a` distinct first components, columns
//!   one over the `n_b` distinct second components, `FPR ≈ 2^{−k1} · 2^{−k2}` for new
//!   components, load factor about 25% when every combination is present
//!   ([`MatrixShape::max_adaptive`]);
//! * minimum storage (§IV-C, Theorem 3): `j` square matrices side by side chosen by a class hash
//!   of the second component, as good as a standard filter of the same bits when each first
//!   component combines with about `j` second components ([`MatrixShape::min_storage`]).
//!
//! # Hashing
//!
//! Both components go through the crate's one hashing path ([`crate::hash`]): the rows of `a` are
//! the first `k1` [`Spread`](crate::hash::Spread) positions of `KeyHash::of(a, seed)` in
//! `0..m1` (the hash's 32-bit words scaled, one multiplication each); the columns of `b` are the
//! first `k2` positions of `KeyHash::of(b, mix64(seed ⊕ 0x6a09e667f3bcc908))` in `0..m2 / j`, in
//! the block of columns `mix64(lo ⊕ hi) mod j` of that hash. Bit (row, column) is bit
//! `row · stride + column`, with `stride` = `m2` rounded up to whole 64-bit words.
//!
//! ```
//! use chronobloom_core::matrix::{MatrixBloom, TupleStats};
//! // Declared statistics pick the layout: every node holds every item → maximum adaptive.
//! let stats = TupleStats::new(200 * 30, 200, 30).unwrap();
//! let mut m = MatrixBloom::for_stats(&stats, 0.01, 3).unwrap();
//! for node in 0..200u32 {
//!     for item in 0..30u32 {
//!         m.insert(&node, &item);
//!     }
//! }
//! assert!(m.contains_keys(&[0u32, 7, 199], &29u32).iter().all(|&b| b));
//! ```

mod batch;
mod filter;
mod layout;
mod pipeline;
mod probe;
mod shape;
mod temporal;

pub use filter::MatrixBloom;
pub use layout::TupleStats;
pub use shape::{MatrixLayout, MatrixShape, LINE_COLS, MAX_SIDE_HASHES};
pub use temporal::MatrixPbf;

#[cfg(test)]
mod tests;
