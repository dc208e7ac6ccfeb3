//! Tests of the cuckoo table: alternates, the bucket code, the stash, expiry, checked serde and
//! agreement with a model.

use super::*;
use proptest::prelude::*;

const ALL: u64 = u64::MAX;

/// A power-of-two layout: `f`-bit fingerprints, `2^g` tags.
fn pow2(f: u32, g: u32) -> Layout {
    Layout {
        radix: 1,
        low_bits: f - NIBBLE,
        tags: 1 << g,
    }
}

#[test]
fn alternate_is_an_involution_for_any_size() {
    for buckets in [1u64, 2, 3, 7, 100, 1001] {
        let t = Table::new(buckets, pow2(10, 3), 1, 1).unwrap();
        for fp in 1..200 {
            for b in 0..buckets.min(50) {
                let a = t.alt(b, fp);
                assert!(a < buckets);
                assert_eq!(t.alt(a, fp), b);
            }
        }
    }
}

#[test]
fn overfull_table_stashes_instead_of_losing() {
    // 8 buckets = 32 slots, 40 entries: some must go to the stash, none may be lost.
    let mut t = Table::new(8, pow2(12, 3), 1, 9).unwrap();
    let keys: Vec<(u64, u64)> = (0..40u64)
        .map(|k| t.locate(mix64(k), mix64(k ^ 77)))
        .collect();
    let (mut stashed, mut refreshed) = (0, 0);
    for &(b, fp) in &keys {
        match t.insert(b, fp, 0, ALL) {
            Placed::Stashed => stashed += 1,
            Placed::Refreshed => refreshed += 1,
            Placed::Stored => {}
        }
    }
    assert!(stashed > 0 && t.stashed() > 0);
    assert!(keys.iter().all(|&(b, fp)| t.contains(b, fp, ALL)));
    t.recount(1);
    assert_eq!(t.live(), 40 - refreshed);
    assert_eq!(t.count(0), 40 - refreshed);
}

#[test]
fn expired_slots_are_reused_and_purged() {
    let mut t = Table::new(4, pow2(8, 2), 1, 3).unwrap();
    for k in 0..15u64 {
        let (b, fp) = t.locate(mix64(k), mix64(k + 1000));
        t.insert(b, fp, 0, 0b0001);
    }
    assert_eq!(t.count(0), 15);
    // Tag 0 expires; tag 1 entries overwrite its slots lazily.
    for k in 100..115u64 {
        let (b, fp) = t.locate(mix64(k), mix64(k + 1000));
        t.insert(b, fp, 1, 0b0010);
    }
    assert!(t.count(0) < 15 && t.stashed() == 0);
    t.purge(0);
    assert_eq!(t.count(0), 0);
    t.recount(0b0010);
    assert_eq!(t.live(), t.count(1));
}

#[test]
fn deserialize_rebuilds_counts_and_validates() {
    let mut t = Table::new(16, pow2(9, 3), 2, 5).unwrap();
    for k in 0..30u64 {
        let (b, fp) = t.locate(mix64(k), mix64(!k));
        t.insert(b, fp, (k % 3) as u32, 0b111);
    }
    let json = serde_json::to_string(&t).unwrap();
    let mut back: Table = serde_json::from_str(&json).unwrap();
    back.recount(0b111);
    t.recount(0b111);
    assert_eq!(back.live(), t.live());
    assert_eq!(back.counts, t.counts);
    let broken = json.replace("\"cursor\":0", "\"cursor\":99");
    assert!(serde_json::from_str::<Table>(&broken).is_err());
}

#[test]
fn codec_is_a_bijection_on_sorted_nibbles() {
    let c = codec();
    assert_eq!(c.decode.len() as u64, CODES);
    for (i, &p) in c.decode.iter().enumerate() {
        let n: Vec<u16> = (0..4).map(|j| (p >> (4 * j)) & 0xf).collect();
        assert!(n.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(c.encode[p as usize] as usize, i);
    }
}

/// Every in-range head (code below 3876, digits below `R^4`) of two small layouts, one with
/// raw bits, under every raw-bit pattern: it decodes to a canonical bucket that encodes back
/// to it, or is refused on load (a tag without a fingerprint, or out of order); the accepted
/// ones are exactly the multisets of 4 slot values (`1 + Φ·M` of them, 0 being empty).
#[test]
fn every_bucket_code_round_trips() {
    for layout in [
        Layout {
            radix: 1,
            low_bits: 0,
            tags: 3,
        },
        Layout {
            radix: 1,
            low_bits: 1,
            tags: 2,
        },
    ] {
        let mut t = Table::new(1, layout, 1, 1).unwrap();
        let states = layout.digit_states();
        assert!(states > 1 << (layout.head_bits() - CODE_BITS - 1));
        assert!(states <= 1 << (layout.head_bits() - CODE_BITS));
        let mut valid = 0u64;
        for low in 0..1u64 << (4 * layout.low_bits) {
            for j in 0..4 {
                t.low.set(
                    j,
                    (low >> (j as u32 * layout.low_bits)) & ((1 << layout.low_bits) - 1),
                );
            }
            for head in (0..states).flat_map(|x| (0..CODES).map(move |s| s | x << CODE_BITS)) {
                t.heads.set(0, head);
                let e = t.bucket(0);
                if e.iter().any(|&v| v != 0 && v & FP_MASK == 0) || !is_sorted(&e) {
                    continue;
                }
                assert!(e.iter().all(|&v| v & FP_MASK <= layout.fingerprints()
                    && v >> TAG_SHIFT < u64::from(layout.tags)));
                valid += 1;
                t.set_bucket(0, e);
                assert_eq!((t.heads.get(0), t.bucket(0)), (head, e));
            }
        }
        let n = 1 + layout.fingerprints() * u64::from(layout.tags);
        assert_eq!(valid, (n + 3) * (n + 2) * (n + 1) * n / 24, "{layout:?}");
    }
}

#[test]
fn radix_division_is_exact() {
    for d in [
        2u64,
        3,
        7,
        15,
        45,
        255,
        960,
        960 * 960,
        1 << 20,
        (1 << 32) - 1,
    ] {
        let r = Radix::new(d);
        // Every dividend allowed: a·d < 2^64.
        let max = u64::MAX / d;
        let mut cases = vec![0, 1, d - 1, d, d + 1, max - d, max - 1, max];
        cases.extend((0..2000).map(|k| mix64(k ^ d) % (max + 1)));
        cases.extend((0..2000).map(|k| (mix64(k) % (max / d + 1)) * d));
        for a in cases {
            assert!(u128::from(a) * u128::from(d) < 1 << 64);
            assert_eq!(r.div_rem(a), (a / d, a % d), "{a} / {d}");
        }
    }
}

#[test]
fn layouts_are_checked_and_costed() {
    // 16·5 − 1 fingerprints (ε = 0.1) and 9 tags: 12 + ⌈log2 45^4⌉ = 34 bits, no raw bits.
    let l = Layout {
        radix: 5,
        low_bits: 0,
        tags: 9,
    };
    assert_eq!(
        (l.fingerprints(), l.head_bits(), l.bucket_bits()),
        (79, 34, 34)
    );
    let t = Table::new(1_000, l, 1, 1).unwrap();
    assert!(t.memory_bits() >= 34_000 && t.memory_bits() < 34_000 + 64);
    // The power-of-two layout of the previous design costs its f + g − 1 bits per slot.
    let p = pow2(10, 3);
    assert_eq!(p.bucket_bits(), 4 * (10 + 3 - 1));
    // The widest digits still give a head of at most one word.
    let widest = Layout {
        radix: MAX_RADIX,
        low_bits: 0,
        tags: MAX_TAGS,
    };
    assert!(widest.check().is_ok() && widest.head_bits() <= 64);
    for bad in [
        Layout {
            radix: 0,
            low_bits: 3,
            tags: 8,
        },
        Layout {
            radix: 16,
            low_bits: 3,
            tags: 8,
        },
        Layout {
            radix: 1,
            low_bits: 3,
            tags: 1,
        },
        Layout {
            radix: 1,
            low_bits: 3,
            tags: 65,
        },
        Layout {
            radix: 15,
            low_bits: 19,
            tags: 8,
        },
    ] {
        assert!(Table::new(4, bad, 1, 1).is_err(), "{bad:?}");
    }
}

#[test]
fn deserialize_refuses_bad_codes_and_order() {
    let layout = Layout {
        radix: 3,
        low_bits: 2,
        tags: 7,
    };
    let mut t = Table::new(4, layout, 1, 5).unwrap();
    for k in 0..6u64 {
        let (b, fp) = t.locate(mix64(k), mix64(!k));
        t.insert(b, fp, 1, 0b10);
    }
    let v = serde_json::to_value(&t).unwrap();
    assert!(serde_json::from_value::<Table>(v.clone()).is_ok());
    // Bucket 0's head is the low 30 bits of the first word: a 12-bit semi-sorting code below
    // 3876 and 18 bits of digits below 21^4. Either part past its range is refused.
    let w = layout.head_bits();
    assert_eq!(w, 30);
    let word = v["heads"]["words"][0].as_u64().unwrap() & !((1 << w) - 1);
    for head in [CODES, (1 << CODE_BITS) - 1, (1 << w) - (1 << CODE_BITS)] {
        let mut bad_code = v.clone();
        bad_code["heads"]["words"][0] = serde_json::json!(word | head);
        let err = serde_json::from_value::<Table>(bad_code).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }
    // A slot with tag 1 but fingerprint 0 (nibble 0, top digit 0, raw bits 0).
    let mut tag_only = t.clone();
    tag_only.heads.set(0, 1 << CODE_BITS);
    tag_only.low.set(0, 0);
    let tag_only = serde_json::to_value(&tag_only).unwrap();
    let err = serde_json::from_value::<Table>(tag_only).unwrap_err();
    assert!(err.to_string().contains("no fingerprint"), "{err}");
    // All four nibbles 0 (code 0), slot 0 above slot 1 in the raw bits: not canonical.
    let mut table = t.clone();
    let radix = layout.digit_radix();
    table
        .heads
        .set(0, (1 + radix + radix * radix + radix.pow(3)) << CODE_BITS);
    for (j, r) in [3, 2, 2, 2].into_iter().enumerate() {
        table.low.set(j as u64, r);
    }
    let unsorted = serde_json::to_value(&table).unwrap();
    let err = serde_json::from_value::<Table>(unsorted).unwrap_err();
    assert!(err.to_string().contains("canonical order"), "{err}");
    let mut narrow = v.clone();
    narrow["low"]["width"] = serde_json::json!(1);
    assert!(serde_json::from_value::<Table>(narrow).is_err());
    let mut other = v;
    other["layout"]["tags"] = serde_json::json!(8);
    assert!(serde_json::from_value::<Table>(other).is_err());
}

proptest! {
    /// A bucket reads back as the sorted multiset it was given, whatever the layout.
    #[test]
    fn buckets_round_trip(
        radix in 1u32..=MAX_RADIX,
        low_bits in 0u32..=22,
        tags in 2u32..=MAX_TAGS,
        raw in proptest::array::uniform4(any::<u64>()),
        empty in proptest::array::uniform4(any::<bool>()),
    ) {
        let layout = Layout { radix, low_bits, tags };
        prop_assume!(layout.check().is_ok());
        let mut t = Table::new(3, layout, 1, 1).unwrap();
        let e: [u64; 4] = std::array::from_fn(|j| {
            let fp = 1 + raw[j] % layout.fingerprints();
            let tag = (raw[j] >> 40) % u64::from(tags);
            if empty[j] { 0 } else { fp | tag << TAG_SHIFT }
        });
        t.set_bucket(1, e);
        let mut want = e;
        want.sort_unstable();
        let mut got = t.bucket(1);
        prop_assert!(is_sorted(&got));
        got.sort_unstable();
        prop_assert_eq!(got, want);
        prop_assert_eq!(t.bucket(0), [0; 4]);
        prop_assert_eq!(t.bucket(2), [0; 4]);
    }

    /// Adversarial fingerprints: a few buckets, fingerprints sharing their low nibble (so
    /// every insert re-sorts among equal nibbles), duplicates and overflow into the stash.
    /// Nothing live is ever missing.
    #[test]
    fn equal_nibbles_and_crowded_buckets(
        ops in proptest::collection::vec((0u64..3, 0u64..64, 0u64..2, any::<bool>()), 1..200),
    ) {
        let mut t = Table::new(8, pow2(12, 2), 1, 13).unwrap();
        let mut present: Vec<(u64, u64, u32)> = Vec::new();
        let mut tag = 0u32;
        for &(b, high, low, next) in &ops {
            if next {
                tag = (tag + 1) % 4;
            }
            let mask = (1u64 << tag) | (1u64 << ((tag + 3) % 4));
            let fp = (high << 4 | 0x7 ^ low).max(1);
            t.insert(b, fp, tag, mask);
            t.sweep(mask);
            present.retain(|&(_, _, g)| (mask >> g) & 1 == 1);
            present.retain(|&(pb, pf, _)| (pb, pf) != (b, fp));
            present.push((b, fp, tag));
            for &(b, fp, _) in &present {
                prop_assert!(t.contains(b, fp, mask));
            }
            for bucket in 0..8 {
                prop_assert!(is_sorted(&t.bucket(bucket)));
            }
        }
    }

    /// Against a model: every inserted fingerprint is found while its tag is live, and a full
    /// sweep cycle leaves no expired entry behind.
    #[test]
    fn agrees_with_a_model(ops in proptest::collection::vec((0u64..500, any::<bool>()), 1..300)) {
        let mut t = Table::new(64, pow2(10, 2), 3, 11).unwrap();
        let mut present: Vec<(u64, u64, u32)> = Vec::new();
        let mut tag = 0u32;
        for &(k, next) in &ops {
            if next {
                tag = (tag + 1) % 4;
            }
            // Tags older than the current one by two or more are expired.
            let mask = (1u64 << tag) | (1u64 << ((tag + 3) % 4));
            let (b, fp) = t.locate(mix64(k), mix64(k ^ 0xabc));
            t.insert(b, fp, tag, mask);
            t.sweep(mask);
            present.retain(|&(_, _, g)| (mask >> g) & 1 == 1);
            present.push((b, fp, tag));
            for &(b, fp, _) in &present {
                prop_assert!(t.contains(b, fp, mask));
            }
        }
    }
}
