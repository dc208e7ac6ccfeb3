//! Filter deserialization as fuzz targets: bytes are decoded as bincode and as JSON; whatever
//! decodes must encode and decode back to itself and survive inserts, queries and merges, with
//! no false negative on what was just inserted.

mod bloom;
mod decay;
mod sketch;
mod temporal;
mod window;

use super::harness::{Outcome, Target};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// Keys every exercise inserts and queries.
pub const KEYS: [u64; 6] = [0, 1, 42, 0xdead_beef, u64::MAX, 7];

/// Ticks (or insertion times) every exercise tries, ascending: small ones, and jumps far ahead.
pub const TICKS: [u64; 9] = [0, 1, 2, 3, 64, 1_000, 1 << 20, 1 << 40, u64::MAX - 1];

/// A serializable structure a user could write to disk and load again.
pub trait Exercise: Serialize + DeserializeOwned + Debug + Clone {
    /// Small valid values (filled a little), whose encodings are the target's seeds.
    fn samples() -> Vec<Self>;

    /// Uses a decoded value as a program would, panicking on a broken promise (a key just
    /// inserted and not found, say); errors returned by the value's methods are fine.
    fn exercise(&mut self);

    /// Whether two values are the same: by their bincode bytes, unless a type's encoding is not
    /// canonical (a `HashMap` writes its entries in any order).
    fn same(a: &Self, b: &Self) -> bool {
        bincode::serialize(a).ok() == bincode::serialize(b).ok()
    }
}

/// The target decoding `T`.
pub fn target<T: Exercise>(name: &'static str) -> Target {
    Target::new(name, seeds::<T>, decode::<T>)
}

/// The bincode and JSON encodings of `T`'s samples.
pub fn seeds<T: Exercise>() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for sample in T::samples() {
        seeds.push(bincode::serialize(&sample).expect("bincode encodes a sample"));
        seeds.push(serde_json::to_vec(&sample).expect("JSON encodes a sample"));
    }
    seeds
}

/// Decodes `bytes` as bincode and as JSON; checks and exercises what decodes.
pub fn decode<T: Exercise>(bytes: &[u8]) -> Outcome {
    let mut outcome = Outcome::Rejected;
    if let Ok(value) = bincode::deserialize::<T>(bytes) {
        check(value);
        outcome = Outcome::Accepted;
    }
    if let Ok(value) = serde_json::from_slice::<T>(bytes) {
        check(value);
        outcome = Outcome::Accepted;
    }
    outcome
}

/// An accepted value encodes and decodes to itself in both formats ([`Exercise::same`]), so
/// nothing the decoder let through is lost or altered on the next save; then it is exercised.
fn check<T: Exercise>(value: T) {
    let bin = bincode::serialize(&value).expect("an accepted value encodes as bincode");
    let back: T = bincode::deserialize(&bin)
        .unwrap_or_else(|e| panic!("an accepted value does not decode again from bincode: {e}"));
    assert!(
        T::same(&back, &value),
        "bincode round trip changed an accepted value: {value:?}"
    );
    let json = serde_json::to_vec(&value).expect("an accepted value encodes as JSON");
    let back: T = serde_json::from_slice(&json)
        .unwrap_or_else(|e| panic!("an accepted value does not decode again from JSON: {e}"));
    assert!(
        T::same(&back, &value),
        "JSON round trip changed an accepted value: {value:?}"
    );
    let mut value = value;
    value.exercise();
}
