//! # chronobloom-core
//!
//! Approximate temporal membership structures, free of any dataflow dependency: Bloom filters, the
//! single Bloom filter baseline (SBF) and the persistent Bloom filters PBF-1 and PBF-2 of Peng et
//! al. (SIGMOD 2018), on one deterministic, platform-independent hashing scheme.
//!
//! Every structure is usable alone, single-threaded, and serializable with serde.
//!
//! ```
//! use chronobloom_core::temporal::{Pbf2, TemporalFilter, TimeRange};
//! // A PBF-2 over ticks 0..86_400 with 5 * 10^6 bits spread evenly over its levels.
//! let mut pbf = Pbf2::uniform(86_400, 5_000_000, 7, 42).unwrap();
//! pbf.insert(&"10.0.0.1", 3_600).unwrap();
//! assert!(pbf.query(&"10.0.0.1", TimeRange::new(0, 7_200).unwrap()));
//! ```

pub mod alloc;
pub mod bits;
pub mod bloom;
pub mod changed;
pub mod decay;
pub mod error;
pub mod hash;
pub mod matrix;
pub mod prefetch;
pub mod sketch;
pub mod temporal;
#[cfg(test)]
mod testing;
pub mod window;

pub use error::{Error, Result};
