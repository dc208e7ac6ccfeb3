use super::*;
use crate::window::WindowFilter;
use proptest::prelude::*;
use std::collections::VecDeque;

const EPSILONS: [f64; 3] = [0.1, 0.01, 0.001];

#[test]
fn bad_input_is_a_typed_error() {
    for fpr in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY, 1e-9] {
        assert!(matches!(
            SlidingBloomFilter::count_window(100, fpr, 1),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(SlidingBloomFilter::time_window(100, fpr, 1).is_err());
    }
    assert!(SlidingBloomFilter::count_window(0, 0.01, 1).is_err());
    assert!(SlidingBloomFilter::time_window(0, 0.01, 1).is_err());
    assert!(matches!(
        SlidingBloomFilter::count_window(u64::MAX, 0.01, 1),
        Err(Error::OutOfMemory { .. })
    ));
    for mut f in [
        SlidingBloomFilter::count_window(10, 0.01, 1).unwrap(),
        SlidingBloomFilter::time_window(10, 0.01, 1).unwrap(),
    ] {
        f.insert(&1u64, 50).unwrap();
        assert_eq!(
            f.insert(&2u64, 49),
            Err(Error::TimeWentBackwards { now: 49, last: 50 })
        );
        assert!(f.advance(3).is_err());
        assert!(f.contains(&1u64, 50));
    }
}

#[test]
fn shape_follows_section_2_3() {
    for &eps in &EPSILONS {
        let f = SlidingBloomFilter::count_window(100_000, eps, 1).unwrap();
        let s = f.shape();
        // Fingerprints: 8α / (2^f − 1) ≤ ε, and one bit fewer would not do.
        let bound = |bits: u32| 2.0 * SLOTS as f64 * LOAD / ((1u64 << bits) - 1) as f64;
        assert!(bound(s.fingerprint_bits) <= eps && bound(s.fingerprint_bits - 1) > eps);
        // Tags tell the live generations and at least one spare apart.
        assert!(s.tags() >= s.generations + 2);
        // c is near log2(1/ε) or above it (integer tag widths favour the largest c per width).
        assert!(s.generations as f64 >= (1.0 / eps).log2() - 1.0);
        assert_eq!(s.generation_len, 100_000u64.div_ceil(s.generations));
        // Memory: (c + 1) G entries at load α, f + g − 1 bits a semi-sorted slot, rounded up to a
        // bucket and a word.
        let entries = ((s.generations + 1) * s.generation_len) as f64;
        let expect = entries / LOAD * f64::from(s.fingerprint_bits + s.tag_bits - 1);
        let got = f.memory_bits() as f64;
        assert!(
            got >= expect && got < expect * 1.001 + 256.0,
            "{got} vs {expect}"
        );
    }
}

/// Checks that every key of the window is present.
fn assert_window(f: &SlidingBloomFilter, window: &VecDeque<(Tick, u64)>, now: Tick) {
    for &(t, k) in window {
        assert!(
            f.contains(&k, now),
            "false negative: key {k} inserted at {t}, now {now}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// No false negatives among the last n insertions, on streams with many or few repeats.
    #[test]
    fn count_window_has_no_false_negatives(
        n in 1u64..200,
        eps in prop::sample::select(EPSILONS.to_vec()),
        domain in prop::sample::select(vec![3u64, 50, 1_000, u64::MAX]),
        keys in proptest::collection::vec(any::<u64>(), 1..800),
        seed in any::<u64>(),
    ) {
        let mut f = SlidingBloomFilter::count_window(n, eps, seed).unwrap();
        let mut window = VecDeque::new();
        for (i, &k) in keys.iter().enumerate() {
            let k = k % domain;
            f.insert(&k, i as u64 / 7).unwrap();
            window.push_back((i as u64, k));
            if window.len() as u64 > n {
                window.pop_front();
            }
            assert_window(&f, &window, i as u64 / 7);
        }
        prop_assert!(f.items() <= (f.shape().generations + 1) * f.shape().generation_len);
    }

    /// No false negatives among insertions of the last T ticks, for bursts (many equal ticks),
    /// short gaps and gaps longer than the window, checked at insertions and after `advance`.
    #[test]
    fn time_window_has_no_false_negatives(
        ticks in 1u64..120,
        eps in prop::sample::select(EPSILONS.to_vec()),
        events in proptest::collection::vec((0u64..3, 0u64..40, 1usize..60), 1..60),
        seed in any::<u64>(),
    ) {
        let mut f = SlidingBloomFilter::time_window(ticks, eps, seed).unwrap();
        let mut window: VecDeque<(Tick, u64)> = VecDeque::new();
        let (mut now, mut key) = (0u64, 0u64);
        for &(kind, gap, burst) in &events {
            now += match kind {
                0 => 0,
                1 => gap,
                _ => ticks + gap,
            };
            f.advance(now).unwrap();
            window.retain(|&(t, _)| now - t < ticks);
            assert_window(&f, &window, now);
            for _ in 0..burst {
                key += 1;
                f.insert(&key, now).unwrap();
                window.push_back((now, key));
            }
            assert_window(&f, &window, now);
            // A query in the future, without an advance, still sees what is in its window.
            let later = now + ticks / 2;
            let kept: VecDeque<_> = window.iter().copied().filter(|&(t, _)| later - t < ticks).collect();
            assert_window(&f, &kept, later);
        }
    }
}

/// False positives among `queries` keys never inserted (they come from a disjoint range).
fn false_positives(f: &SlidingBloomFilter, from: u64, queries: u64, now: Tick) -> u64 {
    (from..from + queries)
        .filter(|k| f.contains(k, now))
        .count() as u64
}

/// Steady state: after 5n insertions, 10 measurement points spread over the last 2n insertions,
/// 400 000 fresh queries in all. The structure's bound at load α is `8α / (2^f − 1)`, at most
/// 0.93ε for these ε (ε = 0.1 gets 0.60ε, 0.01 gets 0.74ε, 0.001 gets 0.93ε); semi-sorting is a
/// lossless encoding of the buckets, so it leaves the bound as it is. With 400 000
/// queries at p ≤ 0.93ε, the count exceeds 1.1ε · 400 000 with probability below 2e-4 (Chernoff);
/// the seeds are fixed, so the test is deterministic.
#[test]
fn steady_state_fpr_is_within_bound() {
    const N: u64 = 20_000;
    const QUERIES: u64 = 400_000;
    for &eps in &EPSILONS {
        let mut f = SlidingBloomFilter::count_window(N, eps, 42).unwrap();
        let mut fp = 0;
        let mut next_query = 1u64 << 40;
        for k in 0..5 * N {
            f.insert(&k, 0).unwrap();
            if k >= 3 * N && (k - 3 * N) % (N / 5) == N / 5 - 1 {
                fp += false_positives(&f, next_query, QUERIES / 10, 0);
                next_query += QUERIES / 10;
                assert!(f.estimated_fpr() <= eps);
            }
        }
        // The deamortized sweep keeps pace: no full-table purge, nothing stashed.
        assert_eq!(f.stats(), SlidingStats::default());
        let rate = fp as f64 / QUERIES as f64;
        assert!(rate <= 1.1 * eps, "ε = {eps}: measured {rate}");
        assert!(
            rate > 0.2 * eps,
            "ε = {eps}: measured {rate} is implausibly low"
        );
    }
}

/// Keys older than n + G insertions are answered like keys never seen: their entries have
/// expired (lazy deletion), so only fingerprint collisions with live entries can say yes. Same
/// confidence statement as the steady-state test, with 100 000 old keys per ε.
#[test]
fn expired_keys_are_false_positives_only() {
    const N: u64 = 20_000;
    for &eps in &EPSILONS {
        let mut f = SlidingBloomFilter::count_window(N, eps, 7).unwrap();
        let old = 100_000u64;
        for k in 0..old {
            f.insert(&k, 0).unwrap();
        }
        let slack = f.shape().generation_len;
        for k in 0..N + slack {
            f.insert(&(old + 1_000_000 + k), 0).unwrap();
        }
        let fp = (0..old).filter(|k| f.contains(k, 0)).count() as f64;
        assert!(fp / old as f64 <= 1.1 * eps, "ε = {eps}: {fp} of {old}");
    }
}

#[test]
fn advance_alone_retires_generations() {
    let mut f = SlidingBloomFilter::time_window(100, 0.01, 3).unwrap();
    for k in 0..2_000u64 {
        f.insert(&k, k / 200).unwrap();
    }
    // Items are distinct live fingerprints: a few keys share one with an earlier key.
    assert!((1_990..=2_000).contains(&f.items()));
    let (g, c) = (f.shape().generation_len, f.shape().generations);
    // At tick 104 the window is ticks 5..=104: keys 1000.. must be there.
    f.advance(104).unwrap();
    assert!((1_000..2_000u64).all(|k| f.contains(&k, 104)));
    // The generation of tick 9 (the last insertion) retires when c + 1 generations have begun
    // after it, not a generation earlier.
    let retire = (9 / g + c + 1) * g;
    f.advance(retire - 1).unwrap();
    assert!(f.items() > 0 && f.contains(&1_999u64, retire - 1));
    f.advance(retire).unwrap();
    assert_eq!(f.items(), 0);
    assert!((0..2_000u64).all(|k| !f.contains(&k, retire)));
    // Population gone: the table shrank back.
    assert_eq!(f.table_count(), 1);
    assert_eq!(f.active().buckets(), MIN_BUCKETS);
}

/// Rate goes up tenfold and back down: no false negatives throughout, the table grows and then
/// shrinks, old tables are dropped once drained, and the bound at the end is ε again.
#[test]
fn tenfold_rate_changes() {
    const T: u64 = 500;
    let mut f = SlidingBloomFilter::time_window(T, 0.01, 5).unwrap();
    let mut window: VecDeque<(Tick, u64)> = VecDeque::new();
    let mut key = 0u64;
    let mut peak_memory = 0;
    let mut memory_at_low_rate = 0;
    for (phase, rate) in [(0u64, 10u64), (1, 100), (2, 10)] {
        for now in phase * 4 * T..(phase + 1) * 4 * T {
            for _ in 0..rate {
                key += 1;
                f.insert(&key, now).unwrap();
                window.push_back((now, key));
            }
            while window.front().is_some_and(|&(t, _)| now - t >= T) {
                window.pop_front();
            }
            if now % 397 == 0 {
                assert_window(&f, &window, now);
            }
            peak_memory = peak_memory.max(f.memory_bits());
            if phase == 0 {
                memory_at_low_rate = f.memory_bits();
            }
        }
        assert_window(&f, &window, (phase + 1) * 4 * T - 1);
        assert_eq!(
            f.table_count(),
            1,
            "phase {phase}: drained tables are dropped"
        );
        assert!(
            f.estimated_fpr() <= 0.01,
            "phase {phase}: {}",
            f.estimated_fpr()
        );
    }
    let s = f.stats();
    assert!(s.grown >= 1 && s.shrunk >= 1, "{s:?}");
    assert!(peak_memory >= 8 * memory_at_low_rate);
    assert!(
        f.memory_bits() <= 2 * memory_at_low_rate,
        "{} vs {}",
        f.memory_bits(),
        memory_at_low_rate
    );
}

#[test]
fn serde_round_trip_continues_identically() {
    for mut f in [
        SlidingBloomFilter::count_window(500, 0.01, 9).unwrap(),
        SlidingBloomFilter::time_window(50, 0.001, 9).unwrap(),
    ] {
        for k in 0..3_000u64 {
            f.insert(&k, k / 40).unwrap();
        }
        let json = serde_json::to_string(&f).unwrap();
        let mut back: SlidingBloomFilter = serde_json::from_str(&json).unwrap();
        assert_eq!(back.items(), f.items());
        assert_eq!(back.memory_bits(), f.memory_bits());
        for k in 3_000..6_000u64 {
            f.insert(&k, k / 40).unwrap();
            back.insert(&k, k / 40).unwrap();
        }
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&f).unwrap()
        );
        let bin = bincode::serialize(&f).unwrap();
        let from_bin: SlidingBloomFilter = bincode::deserialize(&bin).unwrap();
        assert!((5_900..6_000u64).all(|k| from_bin.contains(&k, 149)));

        let bad_fpr = json.replacen("\"fpr\":0.0", "\"fpr\":2.0", 1);
        assert!(serde_json::from_str::<SlidingBloomFilter>(&bad_fpr).is_err());
    }
    let f = SlidingBloomFilter::count_window(100, 0.01, 1).unwrap();
    let json = serde_json::to_string(&f).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut no_tables = v.clone();
    no_tables["tables"] = serde_json::json!([]);
    assert!(serde_json::from_value::<SlidingBloomFilter>(no_tables).is_err());
    let mut other_window = v;
    other_window["window"] = serde_json::json!({"Count": 100_000});
    other_window["fpr"] = serde_json::json!(0.1);
    assert!(serde_json::from_value::<SlidingBloomFilter>(other_window).is_err());
}

/// A window of one insertion, and a one-tick window, behave exactly.
#[test]
fn smallest_windows() {
    let mut f = SlidingBloomFilter::count_window(1, 0.001, 2).unwrap();
    for k in 0..1_000u64 {
        f.insert(&k, 0).unwrap();
        assert!(f.contains(&k, 0));
    }
    assert!(f.items() <= 2);
    let mut t = SlidingBloomFilter::time_window(1, 0.001, 2).unwrap();
    for now in 0..1_000u64 {
        t.insert(&now, now).unwrap();
        assert!(t.contains(&now, now));
    }
    assert!(t.items() <= 2 * t.shape().generation_len + 2);
}
