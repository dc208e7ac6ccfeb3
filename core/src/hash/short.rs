//! XXH3-128 of a 9–16-byte string computed from the two little-endian words XXH3 reads of it
//! (its first and its last eight bytes), for a caller that builds the string from fields: its
//! bytes need not be written to memory and read back across the stores (a load spanning several
//! recent stores waits for them to drain).
//!
//! The same arithmetic as XXH3's `len_9to16_128b` with the default secret, checked against
//! `xxhash-rust` in the tests; see step 1 of the hashing specification ([`crate::hash`]).

use super::KeyHash;

/// Bytes 32..64 of XXH3's default secret as little-endian words.
const SECRET: [u64; 4] = [
    u64::from_le_bytes([0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78]),
    u64::from_le_bytes([0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21]),
    u64::from_le_bytes([0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e]),
    u64::from_le_bytes([0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c]),
];
const PRIME64_1: u64 = 0x9e37_79b1_85eb_ca87;
const PRIME64_2: u64 = 0xc2b2_ae3d_27d4_eb4f;
const PRIME32_2: u32 = 0x85eb_ca77;

/// The product of two words as (low, high) words.
fn mul(a: u64, b: u64) -> (u64, u64) {
    let p = u128::from(a) * u128::from(b);
    (p as u64, (p >> 64) as u64)
}

/// XXH3's final mix of one word.
fn avalanche(mut x: u64) -> u64 {
    x ^= x >> 37;
    x = x.wrapping_mul(0x1656_6791_9e37_79f9);
    x ^ (x >> 32)
}

impl KeyHash {
    /// [`KeyHash::of_bytes`] of an `N`-byte string (`9 ≤ N ≤ 16`, checked when compiled) given
    /// as its first eight bytes and its last eight bytes, each read as a little-endian word (the
    /// two overlap when `N < 16`).
    ///
    /// ```
    /// use chronobloom_core::hash::KeyHash;
    /// let bytes: [u8; 12] = *b"hello, world";
    /// let first = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    /// let last = u64::from_le_bytes(bytes[4..].try_into().unwrap());
    /// assert_eq!(KeyHash::of_words::<12>(first, last, 7), KeyHash::of_bytes(&bytes, 7));
    /// ```
    #[inline]
    pub fn of_words<const N: u64>(first: u64, last: u64, seed: u64) -> KeyHash {
        const { assert!(N >= 9 && N <= 16, "of_words hashes 9 to 16 bytes") };
        let flip_lo = (SECRET[0] ^ SECRET[1]).wrapping_sub(seed);
        let flip_hi = (SECRET[2] ^ SECRET[3]).wrapping_add(seed);
        let (mut low, mut high) = mul(first ^ last ^ flip_lo, PRIME64_1);
        low = low.wrapping_add((N - 1) << 54);
        let last = last ^ flip_hi;
        high =
            high.wrapping_add(last.wrapping_add(u64::from(last as u32) * u64::from(PRIME32_2 - 1)));
        low ^= high.swap_bytes();
        let (lo, hi) = mul(low, PRIME64_2);
        KeyHash {
            lo: avalanche(lo),
            hi: avalanche(hi.wrapping_add(high.wrapping_mul(PRIME64_2))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The words' hash for a string of length `N` taken from `bytes`.
    fn by_words<const N: u64>(bytes: &[u8; 16], seed: u64) -> (KeyHash, KeyHash) {
        let s = &bytes[..N as usize];
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[at..at + 8]);
            u64::from_le_bytes(w)
        };
        (
            KeyHash::of_words::<N>(word(0), word(s.len() - 8), seed),
            KeyHash::of_bytes(s, seed),
        )
    }

    proptest! {
        /// Equal to XXH3-128 of the bytes for every length it takes, on random bytes and seeds.
        #[test]
        fn equals_hashing_the_bytes(bytes in any::<[u8; 16]>(), seed in any::<u64>()) {
            for (words, whole) in [
                by_words::<9>(&bytes, seed),
                by_words::<10>(&bytes, seed),
                by_words::<11>(&bytes, seed),
                by_words::<12>(&bytes, seed),
                by_words::<13>(&bytes, seed),
                by_words::<14>(&bytes, seed),
                by_words::<15>(&bytes, seed),
                by_words::<16>(&bytes, seed),
            ] {
                prop_assert_eq!(words, whole);
            }
        }
    }

    /// The same at the extremes: all-zero and all-one bytes, seeds 0 and `u64::MAX`.
    #[test]
    fn equals_hashing_the_bytes_at_extremes() {
        for fill in [0u8, 0xff] {
            for seed in [0, 1, u64::MAX] {
                let (words, whole) = by_words::<15>(&[fill; 16], seed);
                assert_eq!(words, whole);
                let (words, whole) = by_words::<16>(&[fill; 16], seed);
                assert_eq!(words, whole);
            }
        }
    }
}
