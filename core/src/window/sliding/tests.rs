use super::shape::MAX_SWEEP;
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
    for &eps in &[0.1, 0.01, 0.001, 0.0001] {
        let f = SlidingBloomFilter::count_window(100_000, eps, 1).unwrap();
        let s = f.shape();
        eprintln!("ε = {eps}: {s:?}");
        // Fingerprints: 8α / Φ ≤ ε, and never more values than the power of two above 8α/ε.
        let need = 2.0 * SLOTS as f64 * LOAD / eps;
        assert!(2.0 * SLOTS as f64 * LOAD / s.fingerprints as f64 <= eps);
        assert!(s.fingerprints < 1 << s.fingerprint_bits);
        assert!((s.fingerprints + 1) as f64 <= 2f64.powf((need + 1.0).log2().ceil()));
        // Tags tell the live generations and at least one spare apart.
        assert!(s.tags >= s.generations + 2);
        // (c, K, b, M) minimizes (1 + 1/c)(bucket bits) among all codings with enough
        // fingerprints, M ≥ c + 2 tags and a sweep of at most MAX_SWEEP buckets per insertion.
        let cost = |c: u64, bits: f64| (1.0 + 1.0 / c as f64) * bits;
        let chosen = cost(s.generations, f64::from(s.bucket_bits));
        for m in 3..=64u64 {
            for k in 1..=15u64 {
                let b = (0..=22)
                    .find(|&b| ((16 * k) << b) as f64 - 1.0 >= need)
                    .unwrap();
                let head = 12.0 + (4.0 * ((k * m) as f64).log2()).ceil();
                for c in (1..=m - 2).filter(|&c| {
                    (c + 1) as f64 / ((m - c - 1) as f64 * LOAD * SLOTS as f64) <= MAX_SWEEP
                }) {
                    assert!(
                        chosen <= cost(c, head + 4.0 * b as f64) + 1e-9,
                        "{m} {k} {c}"
                    );
                }
            }
        }
        assert_eq!(s.generation_len, 100_000u64.div_ceil(s.generations));
        // A bucket: the 12-bit semi-sorting code, the top digits and tags jointly
        // (⌈4 log2 K M⌉ bits) and the raw bits (4b), i.e. 12 + ⌈4 log2(K 2^b M)⌉.
        let digits = 4.0 * (((s.fingerprints + 1) / 16) as f64 * s.tags as f64).log2();
        assert_eq!(f64::from(s.bucket_bits), 12.0 + digits.ceil());
        // Memory: (c + 1) G entries at load α, bucket_bits per 4 slots, rounded up to a
        // bucket and a word.
        let entries = ((s.generations + 1) * s.generation_len) as f64;
        let expect = entries / LOAD / SLOTS as f64 * f64::from(s.bucket_bits);
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
/// 400 000 fresh queries in all. The structure's bound at load α is `8α / Φ`, which the
/// fingerprint alphabet puts just under ε (0.96ε at ε = 0.1, 0.99ε at 0.01 and 0.001); at the
/// measurement points the loads give `estimated_fpr` ≈ 0.77ε, 0.96ε and 0.96ε on average, and
/// the count exceeds 1.1ε · 400 000 with probability about 0.3% at ε = 0.001 (normal
/// approximation, σ ≈ 20 false positives) and far less at larger ε. Bucket coding is lossless, so
/// it leaves the bound as it is; the seeds are fixed, so the test is deterministic.
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
    // Fresh filters read back too (a time window's generation is 0 until its first time).
    for f in [
        SlidingBloomFilter::count_window(500, 0.01, 9).unwrap(),
        SlidingBloomFilter::time_window(50, 0.001, 9).unwrap(),
    ] {
        let bin = bincode::serialize(&f).unwrap();
        assert!(bincode::deserialize::<SlidingBloomFilter>(&bin).is_ok());
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

/// Tags count generations modulo a non-power-of-two `M` (7 at ε = 0.1, 15 at ε = 0.01): many
/// rollovers of a count window with the sweep keeping pace, and time-window gaps of `M − 1`,
/// `M` and `M + 1` generations, after which no entry of a retired generation comes back to life
/// when its tag is reused.
#[test]
fn rollover_with_non_power_of_two_tags() {
    for eps in [0.1, 0.01] {
        let mut f = SlidingBloomFilter::count_window(300, eps, 4).unwrap();
        let s = f.shape();
        assert!(!s.tags.is_power_of_two(), "{s:?}");
        let mut window = VecDeque::new();
        let total = 300 * (s.tags + 1) * 4;
        for k in 0..total {
            f.insert(&k, 0).unwrap();
            window.push_back((0, k));
            if window.len() > 300 {
                window.pop_front();
            }
            if k % 97 == 0 {
                assert_window(&f, &window, 0);
            }
        }
        assert!(f.gen > 4 * s.tags);
        assert_eq!(f.stats(), SlidingStats::default());
        // No entry older than the live generations is counted.
        assert!(f.items() <= (s.generations + 1) * s.generation_len);

        let mut t = SlidingBloomFilter::time_window(100, eps, 4).unwrap();
        let (g, m, c) = (
            t.shape().generation_len,
            t.shape().tags,
            t.shape().generations,
        );
        let (mut now, mut key) = (0u64, 0u64);
        for gap in [m - 1, m, m + 1, c + 1, m - 1] {
            let batch: Vec<u64> = (key..key + 200).collect();
            key += 200;
            for k in &batch {
                t.insert(k, now).unwrap();
            }
            assert!(batch.iter().all(|k| t.contains(k, now)));
            // The batch's tag comes round again `M` generations later; by then it is retired.
            now += gap * g;
            t.advance(now).unwrap();
            assert_eq!(t.items(), 0, "gap of {gap} generations, M = {m}");
            let stale = batch.iter().filter(|k| t.contains(*k, now)).count();
            assert_eq!(stale, 0, "gap of {gap} generations");
            // Reusing the batch's tag now must not revive it either: one entry is live.
            t.insert(&u64::MAX, now).unwrap();
            assert_eq!(t.items(), 1);
        }
        // A fresh minimal table (40 keys fit in 16 buckets: no growth, no shrink), then
        // generation by generation without insertions (so without sweeping) until the batch's
        // tag is current again: the roll purges it just before reuse.
        let mut u = SlidingBloomFilter::time_window(100, eps, 5).unwrap();
        let batch: Vec<u64> = (0..40).collect();
        for k in &batch {
            u.insert(k, 0).unwrap();
        }
        assert_eq!((u.active().buckets(), u.stats().grown), (MIN_BUCKETS, 0));
        let mut now = 0;
        for _ in 0..m {
            now += g;
            u.advance(now).unwrap();
        }
        assert_eq!(u.tag(), 0);
        assert_eq!(u.active().count(0), 0);
        assert_eq!(u.stats().purges, 1);
        assert_eq!(u.items(), 0);
        assert!(batch.iter().all(|k| !u.contains(k, now)));
    }
}

#[test]
fn serde_refuses_an_out_of_range_bucket_code() {
    let mut f = SlidingBloomFilter::count_window(1_000, 0.01, 3).unwrap();
    for k in 0..2_000u64 {
        f.insert(&k, 0).unwrap();
    }
    let v = serde_json::to_value(&f).unwrap();
    assert!(serde_json::from_value::<SlidingBloomFilter>(v.clone()).is_ok());
    // Bucket 0's head: the low `width` bits of the first word; all ones exceeds 3876 (K M)^4.
    let width = v["tables"][0]["heads"]["width"].as_u64().unwrap();
    assert!(width < 64);
    let word = v["tables"][0]["heads"]["words"][0].as_u64().unwrap();
    let mut bad = v;
    bad["tables"][0]["heads"]["words"][0] = serde_json::json!(word | ((1u64 << width) - 1));
    let err = serde_json::from_value::<SlidingBloomFilter>(bad).unwrap_err();
    assert!(err.to_string().contains("bucket code"), "{err}");
}
