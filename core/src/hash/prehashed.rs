//! A key carried with its hash under one seed, so that the operators a record passes through
//! (routing, dedup, index) hash it once.

use super::{CanonicalBytes, Key, KeyHash};
use serde::{Deserialize, Serialize};

/// `key` with [`Key::key_hash`]`(seed)` computed once, at construction.
///
/// It is the same key as `key`: the same canonical bytes, and [`Key::key_hash`] returns the
/// stored hash for `seed` and hashes `key` afresh for any other seed, so filters cannot tell the
/// two apart. Use it where a record's key is hashed by several operators with one seed.
///
/// ```
/// use chronobloom_core::hash::{Key, KeyHash, Prehashed};
/// let k = Prehashed::new(("10.0.0.1", 443u16), 7);
/// assert_eq!(k.key_hash(7), KeyHash::of(&("10.0.0.1", 443u16), 7)); // the stored hash
/// assert_eq!(k.key_hash(8), KeyHash::of(&("10.0.0.1", 443u16), 8)); // hashed afresh
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    from = "Unhashed<K>",
    into = "Unhashed<K>",
    bound(
        serialize = "K: Clone + Serialize",
        deserialize = "K: Key + Deserialize<'de>"
    )
)]
pub struct Prehashed<K> {
    key: K,
    seed: u64,
    hash: KeyHash,
}

impl<K: Key> Prehashed<K> {
    /// Hashes `key` with `seed`.
    #[inline]
    pub fn new(key: K, seed: u64) -> Self {
        let hash = key.key_hash(seed);
        Prehashed { key, seed, hash }
    }

    /// The key.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The seed of the stored hash.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The key's hash under [`Self::seed`].
    pub fn hash(&self) -> KeyHash {
        self.hash
    }
}

impl<K: Key> Key for Prehashed<K> {
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        self.key.write_canonical(out);
    }

    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        if seed == self.seed {
            self.hash
        } else {
            self.key.key_hash(seed)
        }
    }
}

/// The serialized form: the key and the seed, hashed again when read, so a stored or shipped
/// value cannot carry a hash that is not its key's.
#[derive(Serialize, Deserialize)]
struct Unhashed<K> {
    key: K,
    seed: u64,
}

impl<K: Key> From<Unhashed<K>> for Prehashed<K> {
    fn from(u: Unhashed<K>) -> Self {
        Prehashed::new(u.key, u.seed)
    }
}

impl<K> From<Prehashed<K>> for Unhashed<K> {
    fn from(p: Prehashed<K>) -> Self {
        Unhashed {
            key: p.key,
            seed: p.seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored hash is the key's for every kind of key, and any other seed hashes afresh.
    #[test]
    fn hashes_as_its_key() {
        for seed in [0, 1, u64::MAX] {
            for key in [0u64, 1, 42, u64::MAX] {
                let p = Prehashed::new(key, seed);
                assert_eq!(p.hash(), KeyHash::of(&key, seed));
                assert_eq!(p.key_hash(seed), KeyHash::of(&key, seed));
                assert_eq!(p.key_hash(seed ^ 5), KeyHash::of(&key, seed ^ 5));
                let (mut a, mut b) = (CanonicalBytes::new(), CanonicalBytes::new());
                p.write_canonical(&mut a);
                key.write_canonical(&mut b);
                assert_eq!(a.as_slice(), b.as_slice());
            }
        }
    }

    /// A serialized value is read back with its hash recomputed, never trusted from the bytes.
    #[test]
    fn serde_rehashes() {
        let p = Prehashed::new("flow", 9);
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains("hash"), "{json}");
        let back: Prehashed<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.hash(), p.hash());
        assert_eq!(back.key(), "flow");
    }
}
