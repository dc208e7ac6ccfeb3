//! Tests of [`Bits`]: bit and field access, union, fold, change tracking and serde.

use super::*;
use proptest::prelude::*;

#[test]
fn set_test_count() {
    let mut b = Bits::new(130);
    assert!(b.set(0));
    assert!(!b.set(0));
    assert!(b.set(129));
    assert!(b.test(129) && !b.test(128));
    assert_eq!(b.count_ones(), 2);
    assert_eq!(b.memory_bits(), 192);
}

#[test]
fn clear_and_fields_match_bit_by_bit() {
    let mut b = Bits::new(200);
    assert!(b.set(5) && b.clear(5) && !b.clear(5) && !b.test(5));
    // fields of every width at offsets that straddle a word boundary or not
    for width in [1u32, 3, 7, 13, 64] {
        for at in [0u64, 60, 61, 63, 64, 120] {
            let v = 0xdead_beef_cafe_f00d_u64 >> (64 - width);
            b.set_field(at, width, v);
            assert_eq!(b.field(at, width), v, "width {width} at {at}");
            for j in 0..u64::from(width) {
                assert_eq!(b.test(at + j), v >> j & 1 == 1);
            }
            b.set_field(at, width, 0);
            assert_eq!(b.count_ones(), 0, "width {width} at {at} left bits behind");
        }
    }
}

#[test]
fn union_refuses_other_length() {
    let mut a = Bits::new(64);
    let b = Bits::new(128);
    assert!(matches!(a.union_with(&b), Err(Error::ShapeMismatch { .. })));
}

#[test]
fn fold_refuses_non_divisor() {
    let b = Bits::new(100);
    assert_eq!(b.fold(30), Err(Error::NotADivisor { from: 100, to: 30 }));
    assert!(b.fold(0).is_err());
}

#[test]
fn from_words_rejects_tail_bits() {
    assert!(Bits::from_words(10, vec![1 << 10]).is_err());
    assert!(Bits::from_words(10, vec![1 << 9]).is_ok());
    assert!(Bits::from_words(10, vec![0, 0]).is_err());
}

#[test]
fn deserialize_validates() {
    assert!(serde_json::from_str::<Bits>(r#"{"len":10,"words":[1024]}"#).is_err());
    assert!(serde_json::from_str::<Bits>(r#"{"len":10,"words":[]}"#).is_err());
}

#[test]
fn or_word_rejects_out_of_range() {
    let mut b = Bits::new(64);
    assert!(b.or_word(1, 1).is_err());
    assert!(b.or_word(0, 5).is_ok());
    assert_eq!(b.count_ones(), 2);
}

fn drained(b: &mut Bits) -> Vec<usize> {
    b.drain_changed().indices().collect()
}

#[test]
fn dirty_words_are_drained_once() {
    let mut b = Bits::new(1000);
    b.track_dirty();
    b.set(700);
    b.set(5);
    b.set(6);
    assert_eq!(drained(&mut b), vec![0, 10]); // ascending, each once
    assert!(b.drain_changed().is_empty());
    b.set(5); // already set: no change
    b.set(64);
    assert_eq!(drained(&mut b), vec![1]);
    let mut other = Bits::new(1000);
    other.set(999);
    b.union_with(&other).unwrap();
    assert_eq!(drained(&mut b), vec![15]);
}

proptest! {
    /// Over rounds of writes through every path (single bits, blocks, delta words, unions),
    /// each drain returns exactly the words that differ from the previous drain, ascending,
    /// also in a tail line of fewer than 8 words.
    #[test]
    fn drains_return_exactly_the_changed_words(
        rounds in proptest::collection::vec(
            proptest::collection::vec((0u8..4, 0u64..(1 << 20)), 0..60), 1..6),
        blocks in 1usize..40,
        tail in 0u64..8 * 64,
    ) {
        let len = blocks as u64 * 512 + tail;
        let mut b = Bits::new(len);
        b.set(3);
        b.track_dirty();
        let mut before = b.words().to_vec();
        for round in rounds {
            for (how, x) in round {
                let i = x % len;
                match how {
                    0 => { b.set(i); }
                    1 => {
                        let block = x as usize % blocks;
                        let offsets = [x % 512, x / 7 % 512, 511];
                        match b.writer() {
                            Writer::Tracked(mut w) => w.set_in_block(block, offsets),
                            Writer::Plain(mut w) => w.set_in_block(block, offsets),
                        }
                    }
                    2 => b.or_word((i / 64) as usize, x.rotate_left(17) & 0xff).unwrap(),
                    _ => {
                        let mut other = Bits::new(len);
                        other.set(i);
                        b.union_with(&other).unwrap();
                    }
                }
            }
            let expect: Vec<usize> = (0..before.len())
                .filter(|&w| b.words()[w] != before[w])
                .collect();
            let changed = b.drain_changed();
            prop_assert_eq!(changed.count(), expect.len() as u64);
            prop_assert_eq!(changed.indices().collect::<Vec<_>>(), expect);
            before = b.words().to_vec();
        }
    }

    #[test]
    fn fold_maps_each_bit_to_its_residue(
        ones in proptest::collection::vec(0u64..6144, 0..200),
        // word-aligned divisors take the word path, the others the bit path
        div in prop::sample::select(vec![1u64, 2, 3, 6, 96, 384, 64, 128, 1024, 1536, 2048, 3072, 6144]),
    ) {
        let mut b = Bits::new(6144);
        for &i in &ones { b.set(i); }
        let f = b.fold(div).unwrap();
        let mut expect = Bits::new(div);
        for &i in &ones { expect.set(i % div); }
        prop_assert_eq!(f, expect);
    }

    #[test]
    fn union_is_or(a in proptest::collection::vec(0u64..500, 0..50), c in proptest::collection::vec(0u64..500, 0..50)) {
        let mut x = Bits::new(500);
        let mut y = Bits::new(500);
        for &i in &a { x.set(i); }
        for &i in &c { y.set(i); }
        x.union_with(&y).unwrap();
        for i in 0..500 {
            prop_assert_eq!(x.test(i), a.contains(&i) || c.contains(&i));
        }
    }

    #[test]
    fn serde_round_trip(ones in proptest::collection::vec(0u64..777, 0..80)) {
        let mut b = Bits::new(777);
        for &i in &ones { b.set(i); }
        let json = serde_json::to_string(&b).unwrap();
        let back: Bits = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, b);
    }
}
