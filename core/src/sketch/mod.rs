//! Streaming sketches that learn the allocation's statistics online (paper 000 §6, Table 2's
//! β1-online and β2-online): [`FmSketch`] estimates the distinct items d_i of each filter,
//! [`CountMinSketch`] the probe frequencies f_i.
//!
//! Both share the crate's verbs: build from a target accuracy (`with_accuracy`) or a shape
//! (`new`), `insert`, `merge` (refusing other shapes with [`crate::Error::ShapeMismatch`]),
//! `estimate` with documented error bounds, and serde (validated on the way in). Keys are hashed
//! with the crate's seeded, platform-independent [`crate::hash::KeyHash`], so sketches built on
//! different workers or machines merge exactly. For PBF-2 the f_ℓ of its few levels can as well be
//! counted exactly (one counter per level, as [`crate::alloc::Pbf2Workload`] does); the sketch is
//! for PBF-1's O(T/g) filters.

mod count_min;
mod fm;

pub use count_min::{CountMinSketch, MAX_COUNTERS};
pub use fm::{FmSketch, LINEAR_COUNTING_LIMIT, MAX_BITMAPS, PHI};

#[cfg(test)]
mod tests;
