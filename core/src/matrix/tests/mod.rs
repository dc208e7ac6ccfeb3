//! Tests of the matrix Bloom filter: no false negatives (property tests), batch answers equal to
//! single answers, union, serde and the layout choice. Statistical accuracy is in `fpr.rs`, the
//! temporal batch in `temporal.rs`.

mod fpr;
mod temporal;

use super::*;
use crate::error::Error;
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A shape with `rows` rows and `classes · per_class` columns, hashes `(k1, k2)`.
fn shape(rows: u64, per_class: u64, classes: u64, k: (u32, u32)) -> MatrixShape {
    MatrixShape::new(
        rows,
        per_class * classes,
        classes,
        k,
        MatrixLayout::MinimumStorage,
    )
    .expect("valid shape")
}

/// Every inserted tuple answers true to every kind of query, and every batch answers exactly what
/// single queries answer (absent tuples included), in the input order.
fn check_batches(m: &MatrixBloom, tuples: &BTreeSet<(u16, u16)>, extra: &[u16]) {
    for &(a, b) in tuples {
        assert!(m.contains(&a, &b), "false negative ({a}, {b})");
    }
    let keys: Vec<u16> = tuples
        .iter()
        .map(|t| t.0)
        .chain(extra.iter().copied())
        .collect();
    let values: Vec<u16> = tuples
        .iter()
        .map(|t| t.1)
        .chain(extra.iter().copied())
        .collect();
    for &a in &keys {
        let got = m.contains_values(&a, &values);
        let want: Vec<bool> = values.iter().map(|b| m.contains(&a, b)).collect();
        assert_eq!(got, want, "contains_values of {a}");
    }
    for &b in &values {
        let got = m.contains_keys(&keys, &b);
        let want: Vec<bool> = keys.iter().map(|a| m.contains(a, &b)).collect();
        assert_eq!(got, want, "contains_keys of {b}");
    }
    let cross = m.contains_cross(&keys, &values);
    assert_eq!(cross.len(), keys.len() * values.len());
    for (i, a) in keys.iter().enumerate() {
        for (j, b) in values.iter().enumerate() {
            assert_eq!(
                cross[i * values.len() + j],
                m.contains(a, b),
                "cross ({a}, {b})"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives_single_batch_and_double_side(
        rows in 1u64..200,
        per_class in 1u64..2_000,
        classes in 1u64..5,
        k1 in 1u32..6,
        k2 in 1u32..6,
        seed in any::<u64>(),
        tuples in prop::collection::btree_set((0u16..300, 0u16..300), 1..60),
        extra in prop::collection::vec(any::<u16>(), 0..20),
    ) {
        let mut m = MatrixBloom::new(shape(rows, per_class, classes, (k1, k2)), seed)
            .expect("valid shape");
        for &(a, b) in &tuples {
            m.insert(&a, &b);
        }
        check_batches(&m, &tuples, &extra);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Line-local shapes (a power of two of rows, classes of 512 columns) reduce both sides by
    /// one AND in batches: the same answers as single queries, which reduce by division.
    #[test]
    fn line_local_batches_agree_with_single_queries(
        log_rows in 0u32..11,
        classes in 1u64..6,
        k1 in 1u32..5,
        k2 in 1u32..5,
        seed in any::<u64>(),
        tuples in prop::collection::btree_set((0u16..300, 0u16..300), 1..60),
        extra in prop::collection::vec(any::<u16>(), 0..20),
    ) {
        let s = shape(1 << log_rows, LINE_COLS, classes, (k1, k2));
        let mut m = MatrixBloom::new(s, seed).expect("valid shape");
        for &(a, b) in &tuples {
            m.insert(&a, &b);
        }
        check_batches(&m, &tuples, &extra);
    }
}

/// Both ways of answering a batch (the fixed side's rows ANDed into a mask, or tested tuple by
/// tuple) are taken, and agree with single queries.
#[test]
fn masked_and_direct_batches_agree() {
    // 4,096 columns = 64 words per row, k1 = 3: a mask pays from 24 values on.
    let mut m = MatrixBloom::new(shape(500, 4_096, 1, (3, 2)), 9).expect("valid shape");
    let tuples: BTreeSet<(u16, u16)> = (0..3_000u16).map(|i| (i % 40, i / 3)).collect();
    for &(a, b) in &tuples {
        m.insert(&a, &b);
    }
    assert!(!m.row_mask_pays(1) && m.row_mask_pays(1_000));
    for batch in [1usize, 5, 23, 24, 100, 1_000] {
        let values: Vec<u16> = (0..batch as u16).map(|v| v * 7).collect();
        for a in 0..50u16 {
            let want: Vec<bool> = values.iter().map(|b| m.contains(&a, b)).collect();
            assert_eq!(
                m.contains_values(&a, &values),
                want,
                "batch {batch}, key {a}"
            );
        }
        let keys: Vec<u16> = (0..batch as u16).collect();
        for b in (0..1_000u16).step_by(97) {
            let want: Vec<bool> = keys.iter().map(|a| m.contains(a, &b)).collect();
            assert_eq!(m.contains_keys(&keys, &b), want, "batch {batch}, value {b}");
        }
    }
    // Present tuples found by the masked path too.
    let values: Vec<u16> = (0..1_000).collect();
    let found = m.contains_values(&7u16, &values);
    assert!(tuples
        .iter()
        .filter(|t| t.0 == 7)
        .all(|t| found[usize::from(t.1)]));
}

/// Row masks of every size the stack holds (32 to 256 words) and beyond it (the heap) agree with
/// single queries.
#[test]
fn row_masks_of_every_size_agree() {
    for words in [10u64, 40, 100, 200, 300] {
        let mut m = MatrixBloom::new(shape(64, 64 * words, 1, (2, 2)), 4).expect("valid shape");
        let tuples: BTreeSet<(u16, u16)> = (0..2_000u16).map(|i| (i % 30, i)).collect();
        for &(a, b) in &tuples {
            m.insert(&a, &b);
        }
        let values: Vec<u16> = (0..3_000).collect();
        assert!(m.row_mask_pays(values.len()), "{words} words");
        for a in 0..40u16 {
            let want: Vec<bool> = values.iter().map(|b| m.contains(&a, b)).collect();
            assert_eq!(
                m.contains_values(&a, &values),
                want,
                "{words} words, key {a}"
            );
        }
    }
}

/// Staged batches (shorter than a chunk, as long, longer, with a partial last chunk) agree with
/// single queries for any hash count (each unrolled column count and beyond), present tuples
/// included, with each side reduced by division or, in a line-local shape, by an AND.
#[test]
fn pipelined_batches_agree_for_any_hash_count() {
    let shapes = [(1, 1), (2, 2), (16, 3), (4, 4), (3, 16), (16, 16), (5, 7)]
        .into_iter()
        .flat_map(|k| [shape(700, 900, 1, k), shape(512, LINE_COLS, 3, k)]);
    for s in shapes {
        let (k1, k2) = (s.row_hashes, s.col_hashes);
        let mut m = MatrixBloom::new(s, 3).expect("valid shape");
        let tuples: BTreeSet<(u16, u16)> = (0..400u16).map(|i| (i % 61, i * 3)).collect();
        for &(a, b) in &tuples {
            m.insert(&a, &b);
        }
        for batch in [1usize, 2, 3, 4, 5, 15, 16, 17, 33, 63, 64, 65, 129] {
            let values: Vec<u16> = (0..batch as u16).map(|v| v * 3).collect();
            for a in 0..70u16 {
                let want: Vec<bool> = values.iter().map(|b| m.contains(&a, b)).collect();
                assert_eq!(m.contains_values(&a, &values), want, "k {k1}×{k2}, key {a}");
            }
            let keys: Vec<u16> = (0..batch as u16).collect();
            for b in (0..1_200u16).step_by(29) {
                let want: Vec<bool> = keys.iter().map(|a| m.contains(a, &b)).collect();
                assert_eq!(m.contains_keys(&keys, &b), want, "k {k1}×{k2}, value {b}");
            }
        }
        for &(a, b) in &tuples {
            assert!(m.contains_keys(&[a, a ^ 1, a], &b)[0]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A fixed first component's batch answers the same through the AND of its rows and tuple by
    /// tuple (staged), for batch sizes around the size where the mask starts to pay and any
    /// column count (each unrolled one and beyond), and both answer as single queries do.
    #[test]
    fn masked_and_staged_paths_agree_around_the_switch(
        rows in 1u64..300,
        words in 1u64..40,
        classes in 1u64..4,
        k1 in 1u32..5,
        k2 in 1u32..7,
        seed in any::<u64>(),
        tuples in prop::collection::btree_set((0u16..40, 0u16..2_000), 1..400),
        key in 0u16..40,
        offset in 0usize..5,
    ) {
        let m = {
            let mut m = MatrixBloom::new(shape(rows, 64 * words, classes, (k1, k2)), seed)
                .expect("valid shape");
            for &(a, b) in &tuples {
                m.insert(&a, &b);
            }
            m
        };
        let switch = (1..).find(|&b| m.row_mask_pays(b)).expect("a mask pays eventually");
        let batch = (switch + offset).saturating_sub(2).max(1);
        let values: Vec<u16> = (0..batch as u16).map(|v| v * 5).collect();
        let want: Vec<bool> = values.iter().map(|b| m.contains(&key, b)).collect();
        let rows = m.geometry.rows_of(&key);
        let (mut masked, mut staged) = (Vec::new(), Vec::new());
        let row_words: Vec<u64> = rows.offsets().iter().map(|&o| o / 64).collect();
        let g = m.geometry;
        probe::by_col_count!(g.col_hashes, |count| {
            m.values_masked(&rows, &values, count, &mut masked);
            m.test_values(&row_words, &values, count, &mut staged);
        });
        prop_assert_eq!(&masked, &want);
        prop_assert_eq!(&staged, &want);
        prop_assert_eq!(m.contains_values(&key, &values), want);
    }
}

#[test]
fn union_holds_both_and_refuses_other_shapes() {
    let s = shape(64, 128, 1, (2, 3));
    let mut a = MatrixBloom::new(s, 1).expect("valid shape");
    let mut b = MatrixBloom::new(s, 1).expect("valid shape");
    a.insert(&1u32, &"x");
    b.insert(&2u32, &"y");
    a.union(&b).expect("same shape");
    assert!(a.contains(&1u32, &"x") && a.contains(&2u32, &"y"));

    let rows = MatrixBloom::new(shape(65, 128, 1, (2, 3)), 1).expect("valid shape");
    assert_eq!(
        a.union(&rows),
        Err(Error::ShapeMismatch {
            what: "rows",
            left: 64,
            right: 65
        })
    );
    let classes = MatrixBloom::new(shape(64, 64, 2, (2, 3)), 1).expect("valid shape");
    assert!(matches!(
        a.union(&classes),
        Err(Error::ShapeMismatch {
            what: "classes",
            ..
        })
    ));
    let seed = MatrixBloom::new(s, 2).expect("valid shape");
    assert!(matches!(
        a.union(&seed),
        Err(Error::ShapeMismatch { what: "seed", .. })
    ));
}

#[test]
fn invalid_shapes_are_refused() {
    let ms = MatrixLayout::MinimumStorage;
    assert!(MatrixShape::new(0, 10, 1, (1, 1), ms).is_err());
    assert!(MatrixShape::new(10, 10, 3, (1, 1), ms).is_err());
    assert!(MatrixShape::new(10, 10, 1, (0, 1), ms).is_err());
    assert!(MatrixShape::new(10, 10, 1, (1, 17), ms).is_err());
    assert!(MatrixShape::new(u64::MAX / 2, u64::MAX / 2, 1, (1, 1), ms).is_err());
    // positions are scaled from 32-bit words: a side over 2^32 is refused, 2^32 is not
    assert!(MatrixShape::new((1 << 32) + 1, 1, 1, (1, 1), ms).is_err());
    assert!(MatrixShape::new(2, (1 << 33) + 2, 2, (1, 1), ms).is_err());
    assert!(MatrixShape::new(1 << 32, 1, 1, (1, 1), ms).is_ok());
    assert!(MatrixShape::for_fpr(0, 0.01).is_err());
    assert!(MatrixShape::for_fpr(10, 1.0).is_err());
    assert!(MatrixShape::min_storage(10, 0, 0.01).is_err());
    assert!(TupleStats::new(10, 20, 1).is_err());
    assert!(TupleStats::new(10, 2, 2).is_err());
}

#[test]
fn serde_round_trips_and_checks_the_bits() {
    let mut m = MatrixBloom::min_storage(1_000, 4, 0.01, 5).expect("valid target");
    for i in 0..1_000u64 {
        m.insert(&(i / 4), &i);
    }
    let json = serde_json::to_string(&m).expect("serializes");
    let back: MatrixBloom = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, m);
    assert!((0..1_000u64).all(|i| back.contains(&(i / 4), &i)));
    let bin = bincode::serialize(&m).expect("serializes");
    assert_eq!(
        bincode::deserialize::<MatrixBloom>(&bin).expect("deserializes"),
        m
    );

    // A matrix whose bits were placed by the earlier scheme (written without `positions`) is
    // refused: its answers here would be wrong.
    let mut v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let mut old = v.clone();
    old.as_object_mut().expect("an object").remove("positions");
    let err = serde_json::from_value::<MatrixBloom>(old).expect_err("an older placement");
    assert!(err.to_string().contains("scheme 1"), "{err}");
    for other in [2, 4] {
        v["positions"] = serde_json::json!(other);
        assert!(serde_json::from_value::<MatrixBloom>(v.clone()).is_err());
    }
    v["positions"] = serde_json::json!(3);

    // A shape that disagrees with the bits is refused, not trusted.
    v["shape"]["rows"] = serde_json::json!(m.shape().rows + 1);
    assert!(serde_json::from_value::<MatrixBloom>(v.clone()).is_err());
    v["shape"]["rows"] = serde_json::json!(m.shape().rows);
    v["shape"]["classes"] = serde_json::json!(m.shape().cols + 1);
    assert!(serde_json::from_value::<MatrixBloom>(v.clone()).is_err());
    // A bit in a row's padding (past its last column) is refused.
    v["shape"]["classes"] = serde_json::json!(m.shape().classes);
    assert!(serde_json::from_value::<MatrixBloom>(v.clone()).is_ok());
    let s = m.shape();
    assert_ne!(s.cols % 64, 0, "the test needs a padded row");
    let words = s.cols.div_ceil(64);
    let last = v["bits"]["words"][(words - 1) as usize]
        .as_u64()
        .expect("word");
    v["bits"]["words"][(words - 1) as usize] = serde_json::json!(last | 1u64 << 63);
    assert!(serde_json::from_value::<MatrixBloom>(v).is_err());
}

#[test]
fn layout_follows_the_statistics() {
    let full = TupleStats::measure((0..1_000u32).flat_map(|a| (0..50u32).map(move |b| (a, b))));
    assert_eq!((full.tuples, full.first, full.second), (50_000, 1_000, 50));
    let s = full.shape_for(0.001).expect("valid target");
    assert_eq!(s.layout, MatrixLayout::MaximumAdaptive);

    let one_to_one = TupleStats::measure((0..20_000u64).map(|i| (i, i.wrapping_mul(31))));
    let s = one_to_one.shape_for(0.001).expect("valid target");
    assert_eq!((s.layout, s.classes), (MatrixLayout::MinimumStorage, 1));

    // Case B: each first component with 8 second components that never repeat.
    let case_b = TupleStats::measure((0..16_000u64).map(|i| (i / 8, i)));
    let s = case_b.shape_for(0.001).expect("valid target");
    assert_eq!((s.layout, s.classes), (MatrixLayout::MinimumStorage, 8));
    assert_eq!(s.cols, 8 * s.rows);
}

#[test]
fn theorem2_matches_the_standard_filter() {
    for p in [0.1, 0.01, 0.001] {
        let s = MatrixShape::for_fpr(1_000_000, p).expect("valid target");
        let standard = crate::bloom::FilterShape::for_fpr(1_000_000, p).expect("valid target");
        assert!(s.fpr(1e6) <= p * 1.0001, "{p}: {}", s.fpr(1e6));
        // Within 1% of the fewest bits for an integer k, plus the square's rounding.
        let ratio = s.bits() as f64 / standard.bits as f64;
        assert!((0.99..1.03).contains(&ratio), "{p}: {ratio} ({s:?})");
        let k = f64::from(s.hashes());
        assert!((k - (-p.log2())).abs() <= 1.0, "{p}: k = {k}");
        assert!(s.row_hashes <= s.col_hashes && s.row_hashes > 1 || s.hashes() < 4);
    }
}

#[test]
fn line_local_shapes_hold_theorem2s_bits_in_whole_lines() {
    for (items, fpr) in [(200_000u64, 0.01), (1_000_000, 0.01), (3_000_000, 0.001)] {
        let s = MatrixShape::line_local(items, fpr).expect("valid");
        let theorem2 = MatrixShape::for_fpr(items, fpr).expect("valid");
        assert_eq!(s.class_cols(), LINE_COLS, "{s:?}");
        assert!(s.rows.is_power_of_two(), "{s:?}");
        assert_eq!(s.stored_bits(), s.bits(), "rows of whole lines: {s:?}");
        assert_eq!(
            (s.row_hashes, s.col_hashes),
            (theorem2.row_hashes, theorem2.col_hashes)
        );
        // at least Theorem 2's bits, at most one class more
        assert!(
            s.bits() as f64 >= theorem2.bits() as f64 * 0.995,
            "{s:?} vs {theorem2:?}"
        );
        assert!(
            s.bits() <= theorem2.bits() + s.rows * LINE_COLS,
            "{s:?} vs {theorem2:?}"
        );
        assert!(s.fpr(items as f64) <= fpr * 1.02, "{s:?}");
        // a second component's columns share one line of a row; rows start at line boundaries
        let m = MatrixBloom::new(s, items).expect("valid shape");
        assert!(m.bits().words().as_ptr().addr().is_multiple_of(64));
        for v in 0..1_000u64 {
            let probe = m.geometry.cols_of(&v);
            let line = probe.cols()[0] / LINE_COLS;
            assert!(
                probe.cols().iter().all(|c| c / LINE_COLS == line),
                "{probe:?}"
            );
        }
        let budget = s.bits() + 12_345;
        let b = MatrixShape::line_local_bits(budget, items).expect("valid");
        assert!(
            b.stored_bits() <= budget && b.class_cols() == LINE_COLS,
            "{b:?}"
        );
        assert!(b.row_hashes >= 2, "{b:?}");
    }
    // too small to split into lines: Theorem 2's square
    let small = MatrixShape::line_local(1_000, 0.01).expect("valid");
    assert_eq!(small, MatrixShape::for_fpr(1_000, 0.01).expect("valid"));
}

#[test]
fn equal_bit_shapes_stay_within_the_budget() {
    for (bits, items, classes) in [(1_000_000u64, 100_000u64, 1u64), (1_000_000, 100_000, 10)] {
        let s = MatrixShape::min_storage_bits(bits, items, classes).expect("valid");
        assert!(s.stored_bits() <= bits, "{s:?}");
        assert!(s.stored_bits() >= bits * 97 / 100, "{s:?}");
        let optimum = bits as f64 / items as f64 * std::f64::consts::LN_2;
        assert!((f64::from(s.hashes()) - optimum).abs() <= 1.5, "{s:?}");
    }
    let s = MatrixShape::max_adaptive_bits(1_000, 200, 2_000_000).expect("valid");
    assert!(
        s.stored_bits() <= 2_000_000 && s.stored_bits() >= 1_950_000,
        "{s:?}"
    );
    let per_component = (s.rows as f64 / 1_000.0, s.cols as f64 / 200.0);
    assert!(
        (per_component.0 / per_component.1 - 1.0).abs() < 0.05,
        "{s:?}"
    );
    assert_eq!(s.layout, MatrixLayout::MaximumAdaptive);
}

/// Tiny targets: every sizing rule meets its target by its own formula (Theorem 1 for the square
/// and the j-matrix, §IV-B's product for the maximum-adaptive matrix), including targets that
/// need more than 16 hashes a side or round `1 − p^{1/k}` to 1.
#[test]
fn tiny_targets_are_met() {
    for p in [1e-6, 1e-12, 1e-19, 1e-30, 1e-100, 1e-300] {
        let square = MatrixShape::for_fpr(1_000, p).expect("square");
        assert!(
            square.fpr(1_000.0) <= p * 1.000_001,
            "square at {p:e}: {square:?}"
        );
        let classes = MatrixShape::min_storage(1_000, 4, p).expect("j-matrix");
        assert!(
            classes.fpr(1_000.0) <= p * 1.000_001,
            "j-matrix at {p:e}: {classes:?}"
        );
        // 16 hashes a side reach 1e-100 with ≈ 21,000 bits a component; 1e-300 would need a
        // matrix past 2^64 bits, which is refused
        match MatrixShape::max_adaptive(100, 40, p) {
            Ok(max) => {
                let got = max.fpr_adaptive(100.0, 40.0);
                assert!(
                    got <= p * 1.000_001,
                    "max adaptive at {p:e}: {got:e}, {max:?}"
                );
            }
            Err(e) => assert!(p < 1e-100, "max adaptive at {p:e}: {e}"),
        }
    }
}
