//! Deterministic, platform-independent hashing.
//!
//! # Specification
//!
//! This is the exact recipe every filter in the crate uses. It is pinned by golden-value tests, so
//! filters built by different workers, processes, machines or versions merge bit for bit.
//!
//! 1. **Canonical bytes** ([`Key`]). A key writes a self-delimiting byte string:
//!    * unsigned and signed integers: their fixed width, little-endian (`usize`/`isize` as 64-bit);
//!    * `bool`: one byte, 0 or 1;
//!    * `str`, `String`, `[u8]`, `Vec<u8>`: the length as a `u64` little-endian, then the bytes;
//!    * `Ipv4Addr`: its 4 octets; `Ipv6Addr`: its 16 octets (network order);
//!      `IpAddr`: a tag byte `4` or `6`, then the octets;
//!    * tuples of up to 5 keys: the elements' encodings one after another. Every encoding is
//!      fixed-width or length-prefixed, so the concatenation is prefix-free and two different tuples
//!      never produce the same bytes.
//! 2. **Key hash** ([`KeyHash`]). `xxh3_128_with_seed(bytes, seed)`; `lo` is the low 64 bits and
//!    `hi` the high 64 bits of the 128-bit result. A key is hashed once per operation. A key of
//!    9–16 bytes built from fields may be hashed from the two words XXH3 reads of its bytes
//!    ([`KeyHash::of_words`]): the same result, without writing the bytes out first.
//! 3. **Bucket derivation** ([`KeyHash::at`]). For temporal filters the pair (key, bucket) hashes to
//!    `KeyHash { lo: mix64(lo ^ mix64(bucket ^ B1)), hi: mix64(hi ^ mix64(bucket ^ B2)) }`, where
//!    `mix64` is the MurmurHash3 64-bit finalizer and `B1`, `B2` are the constants in this module.
//!    The level is deliberately not mixed in: PBF-2 grows a new root by cloning the old root's filter
//!    (paper 000, Algorithm 4), which needs the same (key, bucket) to land on the same bits.
//! 4. **Probe positions** ([`Probes`]). Enhanced double hashing on `(h1, h2) = (lo, hi)` in wrapping
//!    64-bit arithmetic: `g_0 = h1`, `d_0 = h2`; `g_{i+1} = g_i + d_i`, `d_{i+1} = d_i + (i + 1)`.
//!    The i-th probe is `g_i mod m`, computed exactly without a division ([`FastMod`]). Because
//!    the reduction is a true `mod m`, folding an `m`-bit filter to `m* | m` bits (bit `i` to
//!    `i mod m*`) gives the filter built directly with `m*` bits.
//! 5. **Blocked probe positions** ([`crate::bloom::Layout::Blocked`],
//!    [`crate::bloom::blocked_probes`]). A blocked filter of `m = 512 B` bits puts all `k` bits of a
//!    hash in block `b = lo mod B` (exact, [`FastMod`] on the block count), at bits
//!    `512 b + (g_i >> 55)` — the top 9 bits of `g_i` — with `g_0 = lo · C` and
//!    `g_{i+1} = g_i · C`, `C = 0x9e37_79b9_7f4a_7c15` (wrapping). Only `lo` is used, so a
//!    temporal filter mixes one half of the key hash per level instead of two; every probe draws on
//!    all 64 bits of `lo` (the block on its residue, the bits on the top of an odd multiple), and
//!    the positions do not depend on `k` (a smaller `k` is a prefix) or on `B`, so folding to
//!    `B* | B` blocks (block `b` to `b mod B*`) gives the filter built directly with `B*` blocks.
//!    (Before 2026-11-22 `g_0` was `hi`; blocked filters saved earlier do not load correctly.)
//!    Bit `j` of a block is bit `j mod 64` of its word `j / 64`, as everywhere.

mod fastmod;
mod key;
mod prehashed;
mod probes;
mod short;
mod spread;

pub use fastmod::FastMod;
pub use key::{CanonicalBytes, Key};
pub use prehashed::Prehashed;
pub use probes::Probes;
pub use spread::{Positions, Spread, MAX_SPREAD};

use serde::{Deserialize, Serialize};

const B1: u64 = 0x9e37_79b9_7f4a_7c15;
const B2: u64 = 0xc2b2_ae3d_27d4_eb4f;

/// The 128-bit hash of one key (step 2 of the specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyHash {
    /// Low 64 bits: the first double-hashing value.
    pub lo: u64,
    /// High 64 bits: the second double-hashing value.
    pub hi: u64,
}

/// The key-independent half of step 3 for one bucket: `mix64(bucket ⊕ B1)` and
/// `mix64(bucket ⊕ B2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketMix {
    lo: u64,
    hi: u64,
}

impl BucketMix {
    /// The mixes of `bucket`.
    #[inline]
    pub fn of(bucket: u64) -> Self {
        BucketMix {
            lo: mix64(bucket ^ B1),
            hi: mix64(bucket ^ B2),
        }
    }
}

impl KeyHash {
    /// Hashes `key` with `seed` (steps 1 and 2).
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// let a = KeyHash::of(&("10.0.0.1", 443u16), 7);
    /// assert_eq!(a, KeyHash::of(&("10.0.0.1", 443u16), 7));
    /// assert_ne!(a, KeyHash::of(&("10.0.0.1", 443u16), 8));
    /// ```
    pub fn of<K: Key + ?Sized>(key: &K, seed: u64) -> Self {
        key.key_hash(seed)
    }

    /// Hashes an already canonical byte string.
    #[inline]
    pub fn of_bytes(bytes: &[u8], seed: u64) -> Self {
        let h = xxhash_rust::xxh3::xxh3_128_with_seed(bytes, seed);
        KeyHash {
            lo: h as u64,
            hi: (h >> 64) as u64,
        }
    }

    /// The hash of the pair (key, `bucket`) (step 3): used for a key at a tick or time bucket.
    #[inline]
    pub fn at(self, bucket: u64) -> Self {
        self.at_mixed(BucketMix::of(bucket))
    }

    /// [`Self::at`] with the bucket's half of the work done once ([`BucketMix::of`]), for many
    /// keys in the same bucket.
    ///
    /// ```
    /// use chronobloom_core::hash::{BucketMix, KeyHash};
    /// let (a, b) = (KeyHash::of(&1u64, 0), KeyHash::of(&2u64, 0));
    /// let m = BucketMix::of(77);
    /// assert_eq!((a.at_mixed(m), b.at_mixed(m)), (a.at(77), b.at(77)));
    /// ```
    #[inline]
    pub fn at_mixed(self, bucket: BucketMix) -> Self {
        KeyHash {
            lo: mix64(self.lo ^ bucket.lo),
            hi: mix64(self.hi ^ bucket.hi),
        }
    }

    /// The `k` probe positions of this hash in a filter of `m` bits (step 4).
    #[inline]
    pub fn probes(self, k: u32, m: FastMod) -> Probes {
        Probes::new(self, k, m)
    }
}

/// MurmurHash3's 64-bit finalizer: a bijective, well-avalanched mix.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests;
