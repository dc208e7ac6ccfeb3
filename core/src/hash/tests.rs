use super::*;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn bytes<K: Key + ?Sized>(k: &K) -> Vec<u8> {
    let mut b = CanonicalBytes::new();
    k.write_canonical(&mut b);
    b.as_slice().to_vec()
}

#[test]
fn canonical_encodings_are_pinned() {
    assert_eq!(bytes(&0x0102_0304u32), [4, 3, 2, 1]);
    assert_eq!(bytes(&7usize), bytes(&7u64));
    assert_eq!(bytes(&-1i16), [0xff, 0xff]);
    assert_eq!(bytes(&true), [1]);
    assert_eq!(bytes("ab"), [2, 0, 0, 0, 0, 0, 0, 0, b'a', b'b']);
    assert_eq!(bytes(&String::from("ab")), bytes("ab"));
    assert_eq!(bytes(&b"ab"[..]), bytes("ab"));
    assert_eq!(bytes(&Ipv4Addr::new(10, 0, 0, 1)), [10, 0, 0, 1]);
    assert_eq!(
        bytes(&IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        [4, 10, 0, 0, 1]
    );
    let v6 = Ipv6Addr::LOCALHOST;
    assert_eq!(bytes(&IpAddr::V6(v6))[0], 6);
    assert_eq!(bytes(&IpAddr::V6(v6)).len(), 17);
}

#[test]
fn tuples_do_not_collide_by_concatenation() {
    assert_ne!(bytes(&("ab", "c")), bytes(&("a", "bc")));
    assert_ne!(bytes(&("", "x")), bytes(&("x", "")));
    assert_ne!(KeyHash::of(&("ab", "c"), 0), KeyHash::of(&("a", "bc"), 0));
}

#[test]
fn long_keys_spill_to_the_heap_with_the_same_bytes() {
    let long = "x".repeat(200);
    let b = bytes(long.as_str());
    assert_eq!(b.len(), 208);
    assert!(b[8..].iter().all(|&c| c == b'x'));
    let mut split = CanonicalBytes::new();
    split.put(&b[..50]);
    split.put(&b[50..]);
    assert_eq!(split.as_slice(), &b[..]);
}

/// Golden values: these pin the hashing specification. If one changes, filters built by an older
/// version no longer merge with new ones — that is a breaking format change, not a test to update.
#[test]
fn golden_key_hashes() {
    let cases: [(KeyHash, u64, u64); 5] = [
        (KeyHash::of(&0u64, 0), GOLDEN[0].0, GOLDEN[0].1),
        (KeyHash::of(&42u64, 7), GOLDEN[1].0, GOLDEN[1].1),
        (KeyHash::of("chronobloom", 1), GOLDEN[2].0, GOLDEN[2].1),
        (
            KeyHash::of(
                &(
                    Ipv4Addr::new(192, 168, 1, 2),
                    Ipv4Addr::new(10, 0, 0, 1),
                    443u16,
                    51234u16,
                    6u8,
                ),
                99,
            ),
            GOLDEN[3].0,
            GOLDEN[3].1,
        ),
        (KeyHash::of(&42u64, 7).at(1_000), GOLDEN[4].0, GOLDEN[4].1),
    ];
    for (i, (h, lo, hi)) in cases.iter().enumerate() {
        assert_eq!((h.lo, h.hi), (*lo, *hi), "golden case {i}");
    }
}

/// The first four were cross-checked against the reference C library (Python `xxhash` 3.x,
/// `xxh3_128_intdigest(bytes, seed)`).
const GOLDEN: [(u64, u64); 5] = [
    (0x45c3_b49d_0356_65b2, 0x2c0a_8a99_dc14_7d54),
    (0x0c26_52f6_09c8_6ee9, 0x6cd9_6ef5_5882_33cb),
    (0x49e2_2d10_32c6_2069, 0x50fa_20ac_b0ee_8a41),
    (0x8881_026f_baf3_f670, 0x85c6_1648_699d_bd60),
    (0xe5c7_4f64_6b2d_d500, 0x0321_a155_db8b_42cc),
];

#[test]
fn golden_probe_positions() {
    let m = FastMod::new(1_000_003).unwrap();
    let p: Vec<u64> = KeyHash::of(&42u64, 7).probes(7, m).collect();
    assert_eq!(p, GOLDEN_PROBES);
}

const GOLDEN_PROBES: [u64; 7] = [399_679, 712_315, 24_949, 986_904, 299_543, 261_502, 574_153];

#[test]
fn mix64_is_pinned() {
    assert_eq!(mix64(0), 0);
    assert_eq!(mix64(1), 0xb456_bcfc_34c2_cb2c);
}

proptest! {
    /// Probes reduced mod m, reduced again mod a divisor m*, are the probes at m*: what makes
    /// folding exact.
    #[test]
    fn probes_fold_exactly(key in any::<u64>(), seed in any::<u64>(), base in 1u64..5_000, factor in 1u64..50, k in 1u32..16) {
        let h = KeyHash::of(&key, seed);
        let big = FastMod::new(base * factor).unwrap();
        let small = FastMod::new(base).unwrap();
        let folded: Vec<u64> = h.probes(k, big).map(|p| p % base).collect();
        let direct: Vec<u64> = h.probes(k, small).collect();
        prop_assert_eq!(folded, direct);
    }

    #[test]
    fn distinct_tuples_distinct_bytes(a in ".{0,5}", b in ".{0,5}", c in ".{0,5}", d in ".{0,5}") {
        prop_assume!((a.as_str(), b.as_str()) != (c.as_str(), d.as_str()));
        prop_assert_ne!(bytes(&(a.as_str(), b.as_str())), bytes(&(c.as_str(), d.as_str())));
    }
}

proptest! {
    /// The integers' direct `key_hash` is the hash of their canonical bytes, through every
    /// forwarding impl (references, `usize`, `isize`).
    #[test]
    fn integer_key_hash_is_the_hash_of_the_canonical_bytes(
        x in any::<u64>(), y in any::<i32>(), z in any::<u8>(), seed in any::<u64>()
    ) {
        let via_bytes = |b: Vec<u8>| KeyHash::of_bytes(&b, seed);
        prop_assert_eq!(KeyHash::of(&x, seed), via_bytes(bytes(&x)));
        prop_assert_eq!(KeyHash::of(&&x, seed), via_bytes(bytes(&x)));
        prop_assert_eq!(KeyHash::of(&(x as usize), seed), via_bytes(bytes(&x)));
        prop_assert_eq!(KeyHash::of(&(y as isize), seed), via_bytes(bytes(&(y as i64))));
        prop_assert_eq!(KeyHash::of(&y, seed), via_bytes(bytes(&y)));
        prop_assert_eq!(KeyHash::of(&z, seed), via_bytes(bytes(&z)));
        prop_assert_eq!(KeyHash::of(&(x, z), seed), via_bytes(bytes(&(x, z))));
    }
}
