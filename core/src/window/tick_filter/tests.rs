use super::*;
use crate::hash::KeyHash;

fn h(k: u64) -> u64 {
    KeyHash::of(&k, 3).lo
}

#[test]
fn sharp_window_edge_for_every_cell_width() {
    for w in [10, 1_000, 100_000] {
        let shape = TickFilter::shape_for(1000, 0.01, w).unwrap();
        let mut f = TickFilter::new(shape, w, 0).unwrap();
        f.insert(h(1), 5);
        assert!(f.seen(h(1), 5));
        assert!(f.seen(h(1), 5 + w - 1)); // inside (4, 4 + w]
        assert!(!f.seen(h(1), 5 + w)); // exactly W later: outside
        assert!(!f.stale(4 + w));
        assert!(f.stale(5 + w));
    }
}

#[test]
fn rebase_keeps_live_cells_and_clears_old_ones() {
    for w in [100, 20_000, 1 << 31] {
        let shape = TickFilter::shape_for(100, 0.01, w).unwrap();
        let mut f = TickFilter::new(shape, w, 0).unwrap();
        let far = u64::from(u32::MAX) + 50;
        f.insert(h(1), 7);
        f.insert(h(2), far - 10);
        f.insert(h(3), far); // forces a rebase
        assert!(f.seen(h(2), far) && f.seen(h(3), far));
        assert!(!f.seen(h(1), far));
        assert!(f.seen(h(2), far + w - 11) && !f.seen(h(2), far + w - 10));
        // ticks near the end of time do not overflow
        f.insert(h(4), u64::MAX);
        assert!(f.seen(h(4), u64::MAX));
    }
}

#[test]
fn many_rebases_lose_nothing_inside_the_window() {
    // 8-bit cells, W = 100: a rebase every ~156 ticks; every key is repeated 99 ticks later
    let shape = TickFilter::shape_for(2_000, 0.01, 100).unwrap();
    let mut f = TickFilter::new(shape, 100, 0).unwrap();
    for t in 0..2_000u64 {
        for j in 0..10 {
            f.insert(h(t * 10 + j), t);
        }
        if t >= 99 {
            for j in 0..10 {
                assert!(f.seen(h((t - 99) * 10 + j), t), "lost at {t}");
            }
        }
    }
}

#[test]
fn insert_reports_the_oldest_tick_of_its_cells() {
    let shape = TickFilter::shape_for(1000, 0.01, 60).unwrap();
    let mut f = TickFilter::new(shape, 60, 0).unwrap();
    assert_eq!(f.insert(h(1), 3), None);
    assert_eq!(f.insert(h(1), 3), Some(3));
    assert_eq!(f.insert(h(1), 4), Some(3));
    assert_eq!(f.insert(h(1), 70), None); // out of the window
}

/// One-sided 99% binomial upper bound of the count in `n` trials at rate `p`.
fn upper_99(n: u64, p: f64) -> f64 {
    let n = n as f64;
    n * p + 2.326 * (n * p * (1.0 - p)).sqrt()
}

#[test]
fn measured_fpr_stays_within_epsilon() {
    // keys inserted over the window at every cell width; queries by keys never inserted
    for (w, eps) in [(60, 0.01), (60, 0.001), (1_000, 0.01), (100_000, 0.005)] {
        let n = 20_000u64;
        let shape = TickFilter::shape_for(n, eps, w).unwrap();
        let mut f = TickFilter::new(shape, w, 0).unwrap();
        for i in 0..n {
            f.insert(h(i), i * w / n);
        }
        let now = w - 1;
        let queries = 400_000u64;
        let fp = (n..n + queries).filter(|&i| f.seen(h(i), now)).count() as f64;
        let bound = upper_99(queries, eps);
        assert!(
            fp <= bound,
            "W {w}, ε {eps}: {fp} false positives > {bound}"
        );
        // and not far below: the shape is not wastefully large
        assert!(fp >= queries as f64 * eps * 0.5, "W {w}, ε {eps}: {fp}");
        let (fill, est) = f.occupancy(now);
        println!(
            "W {w} ε {eps}: {shape:?}, {} cells per key, measured {}, fill {fill}, estimated {est}",
            shape.bits as f64 / n as f64,
            fp / queries as f64
        );
        assert!(fill > 0.05 && fill < 0.8 && est < 3.0 * eps, "{fill} {est}");
    }
}

#[test]
fn refuses_bad_shapes() {
    assert!(TickFilter::new(FilterShape { bits: 0, hashes: 1 }, 5, 0).is_err());
    assert!(TickFilter::new(
        FilterShape {
            bits: 64,
            hashes: 11
        },
        5,
        0
    )
    .is_err());
    let shape = TickFilter::shape_for(100, 0.01, 10).unwrap();
    assert!(TickFilter::new(shape, 0, 0).is_err());
    assert!(TickFilter::new(shape, (1 << 31) + 1, 0).is_err());
    assert!(TickFilter::shape_for(0, 0.01, 10).is_err());
    assert!(TickFilter::shape_for(10, 1.0, 10).is_err());
}

#[test]
fn serde_round_trips_every_cell_width_and_refuses_broken_filters() {
    for window in [60, 1_000, 100_000] {
        let shape = TickFilter::shape_for(200, 0.01, window).unwrap();
        let mut f = TickFilter::new(shape, window, 0).unwrap();
        for i in 0..200u64 {
            f.insert(mix64(i), i * 7);
        }
        let bytes = bincode::serialize(&f).unwrap();
        let back: TickFilter = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, f);
        let json: TickFilter = serde_json::from_slice(&serde_json::to_vec(&f).unwrap()).unwrap();
        assert_eq!(json, f);
        assert!((0..200u64).all(|i| back.seen(mix64(i), 199 * 7) == f.seen(mix64(i), 199 * 7)));
    }
    let f = TickFilter::new(TickFilter::shape_for(50, 0.01, 60).unwrap(), 60, 0).unwrap();
    let mut value = serde_json::to_value(&f).unwrap();
    // a cell with a tick but no insert
    value["cells"]["U8"][3] = serde_json::json!(9);
    assert!(serde_json::from_value::<TickFilter>(value.clone()).is_err());
    value["cells"]["U8"][3] = serde_json::json!(0);
    assert!(serde_json::from_value::<TickFilter>(value.clone()).is_ok());
    // not a whole line; the wrong width for the window; too many hashes; latest before base
    let mut cut = value.clone();
    cut["cells"]["U8"].as_array_mut().unwrap().pop();
    assert!(serde_json::from_value::<TickFilter>(cut).is_err());
    let mut wide = value.clone();
    wide["window"] = serde_json::json!(1_000);
    assert!(serde_json::from_value::<TickFilter>(wide).is_err());
    let mut hashes = value.clone();
    hashes["hashes"] = serde_json::json!(11);
    assert!(serde_json::from_value::<TickFilter>(hashes).is_err());
    let mut early = value;
    early["base"] = serde_json::json!(10);
    early["latest"] = serde_json::json!(5);
    assert!(serde_json::from_value::<TickFilter>(early).is_err());
}
