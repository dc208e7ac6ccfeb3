use super::any::AnyTable;
use super::list::List;
use super::*;
use crate::hash::{mix64, KeyHash};
use proptest::prelude::*;
use std::collections::HashMap;

fn h(k: u64) -> u64 {
    KeyHash::of(&k, 11).lo
}

/// Inserts `rate` keys per tick for `ticks` ticks starting at `from`; keys `next..` are fresh
/// unless drawn from `recent` (a fraction `repeat` of them repeats one of the last keys).
fn steady(f: &mut TaggedCuckooFilter, from: Tick, ticks: Tick, rate: u64, next: &mut u64) {
    for t in from..from + ticks {
        for _ in 0..rate {
            f.insert_fingerprint(h(*next), t).unwrap();
            *next += 1;
        }
    }
}

#[test]
fn window_edge_and_slack() {
    for (w, s) in [(60, 3), (1_000, 62), (16, 0), (7, 100)] {
        let mut f = TaggedCuckooFilter::new(w, s, 0.01, 1).unwrap();
        f.insert_fingerprint(h(1), 100).unwrap();
        for t in 100..100 + w {
            assert!(f.seen(h(1), t), "w {w} s {s} t {t}");
        }
        assert!(!f.seen(h(1), 100 + w + s), "w {w} s {s}");
        assert!(!f.seen(h(1), 99 + w + s + 1000));
        assert!(f.stale(100 + w + s));
        assert!(!f.stale(99 + w));
    }
}

#[test]
fn invalid_parameters_are_refused() {
    assert!(TaggedCuckooFilter::new(0, 0, 0.01, 0).is_err());
    assert!(TaggedCuckooFilter::new(MAX_WINDOW + 1, 1 << 36, 0.01, 0).is_err());
    assert!(TaggedCuckooFilter::new(60, 3, 0.0, 0).is_err());
    assert!(TaggedCuckooFilter::new(60, 3, 1.0, 0).is_err());
    assert!(TaggedCuckooFilter::new(60, 3, f64::NAN, 0).is_err());
    // 1000 ticks with slack 0 would be 1000 generations
    let err = TaggedCuckooFilter::new(1_000, 0, 0.01, 0).unwrap_err();
    assert!(err.to_string().contains("slack"), "{err}");
    assert!(TaggedCuckooFilter::new(1_000, min_slack(1_000), 0.01, 0).is_ok());
    assert!(TaggedCuckooFilter::new(1_000, min_slack(1_000) - 1, 0.01, 0).is_err());
    let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap();
    f.insert_fingerprint(h(1), 100).unwrap();
    assert!(matches!(
        f.insert_fingerprint(h(2), 50),
        Err(Error::TimeWentBackwards { .. })
    ));
}

#[test]
fn slot_width_follows_fpr() {
    assert_eq!(
        TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap().slot_bits(),
        16
    );
    assert_eq!(
        TaggedCuckooFilter::new(60, 3, 0.001, 0)
            .unwrap()
            .slot_bits(),
        32
    );
}

#[test]
fn priors() {
    let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 0).unwrap();
    assert_eq!(f.insert_fingerprint(h(1), 0).unwrap(), Prior::New);
    assert_eq!(f.insert_fingerprint(h(1), 3).unwrap(), Prior::Current);
    assert_eq!(f.insert_fingerprint(h(1), 4).unwrap(), Prior::Older);
    assert_eq!(f.insert_fingerprint(h(1), 200).unwrap(), Prior::New);
}

#[test]
fn steady_stream_is_compact_and_meets_fpr() {
    // W = 600 ticks, 100 new keys a tick: 60,000 keys a window
    let (w, s, eps) = (600, 37, 0.01);
    let mut f = TaggedCuckooFilter::new(w, s, eps, 3).unwrap();
    let mut next = 0;
    let mut peak_bits = 0;
    for t in 0..3 * w {
        steady(&mut f, t, 1, 100, &mut next);
        peak_bits = peak_bits.max(f.memory_bits());
    }
    // keys in (t - W - S, t]: 63,700 at most
    let per_key = peak_bits as f64 / (100 * w) as f64;
    assert!(per_key < 24.0, "{per_key} bits per window key");
    let trials = 200_000u64;
    let fp = (0..trials)
        .filter(|i| f.seen(h(u64::MAX - i), 3 * w - 1))
        .count() as f64;
    // 5 standard deviations above ε
    let bound = eps + 5.0 * (eps / trials as f64).sqrt();
    assert!(fp / (trials as f64) <= bound, "fpr {}", fp / trials as f64);
}

#[test]
fn memory_follows_the_rate_and_long_lived_keys_cost_one_slot() {
    let w = 400;
    let mut f = TaggedCuckooFilter::new(w, w / 16, 0.01, 5).unwrap();
    let mut next = 0;
    steady(&mut f, 0, 2 * w, 20, &mut next);
    let low = f.memory_bits();
    steady(&mut f, 2 * w, 2 * w, 200, &mut next);
    let high = f.memory_bits();
    assert!(high > 5 * low, "{low} -> {high}");
    steady(&mut f, 4 * w, 2 * w, 20, &mut next);
    let after = f.memory_bits();
    assert!(after < high / 3, "{high} -> {after}");
    // 1,000 keys repeating every tick: one slot each however long they live
    let mut g = TaggedCuckooFilter::new(w, w / 16, 0.01, 5).unwrap();
    for t in 0..3 * w {
        for k in 0..1_000 {
            g.insert_fingerprint(h(k), t).unwrap();
        }
    }
    assert!(g.population() <= 1_000 + 20, "{}", g.population());
    assert!(g.memory_bits() < 1_000 * 40, "{}", g.memory_bits());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every key inserted in `(t - W, t]` is reported at `t`, whatever the stream: few keys
    /// (collisions and refreshes), bursts (growth), gaps (sweeps and resets). Every state on
    /// the way reads back from bincode as itself (its checks accept what a stream makes).
    #[test]
    fn no_false_negative_in_the_window(
        w in 1u64..200,
        slack_frac in 0u64..4,
        steps in proptest::collection::vec((0u64..40, 0u64..300, 1usize..60), 1..60),
        universe in 1u64..5_000,
        seed in any::<u64>(),
    ) {
        let slack = (min_slack(w)).max(w * slack_frac / 8);
        let mut f = TaggedCuckooFilter::new(w, slack, 0.01, seed).unwrap();
        let mut last: HashMap<u64, Tick> = HashMap::new();
        let mut t = 0;
        let mut key = seed;
        for (gap, count, checks) in steps {
            t += gap;
            for _ in 0..count {
                key = mix64(key);
                let k = key % universe;
                f.insert_fingerprint(h(k), t).unwrap();
                last.insert(k, t);
            }
            for (k, &u) in last.iter().take(checks) {
                if t - u < w {
                    prop_assert!(f.seen(h(*k), t), "key {} at {} seen at {}", k, u, t);
                }
            }
            let probe = t + gap / 2;
            for (k, &u) in last.iter().take(checks) {
                if probe - u < w {
                    prop_assert!(f.seen(h(*k), probe));
                }
            }
            let bytes = bincode::serialize(&f).unwrap();
            match bincode::deserialize::<TaggedCuckooFilter>(&bytes) {
                Ok(back) => prop_assert_eq!(&back, &f),
                Err(e) => prop_assert!(false, "a streamed state does not read back: {}", e),
            }
        }
    }

    /// The batched path as the dedup operator drives it (a tick's keys checked, then inserted as
    /// one batch with the absent ones promised, same-tick repeats included): through the grows
    /// and shrinks that bursts and lulls cause, every key inserted in `(t - W, t]` is reported
    /// at `t`, and the state reads back from bincode as itself.
    #[test]
    fn no_false_negative_in_the_window_batched(
        w in 1u64..200,
        steps in proptest::collection::vec((0u64..60, 0u64..400, 1u64..4), 1..50),
        universe in 1u64..3_000,
        seed in any::<u64>(),
    ) {
        let mut f = TaggedCuckooFilter::new(w, default_slack(w), 0.01, seed).unwrap();
        let mut last: HashMap<u64, Tick> = HashMap::new();
        let mut t = 0;
        let mut key = seed;
        for (gap, count, copies) in steps {
            t += gap;
            let mut batch = Vec::new();
            for _ in 0..count {
                key = mix64(key);
                let k = key % universe;
                for _ in 0..copies {
                    batch.push((k, h(k)));
                }
                last.insert(k, t);
            }
            let mut absent = std::collections::HashSet::new();
            f.seen_each(batch.iter().copied(), t, |k, seen| {
                if !seen {
                    absent.insert(k);
                }
            });
            f.insert_batch_with(&mut batch, t, |k| absent.contains(k), |_, _| {}).unwrap();
            for (k, &u) in &last {
                if t - u < w {
                    prop_assert!(f.seen(h(*k), t), "key {} at {} seen at {}", k, u, t);
                }
            }
            // the per-tag counts kept while re-tagging are those a recount from the slots finds
            let back: TaggedCuckooFilter = bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
            prop_assert_eq!(&back, &f);
        }
    }
}

#[test]
fn serde_round_trip() {
    let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 9).unwrap();
    for k in 0..500 {
        f.insert_fingerprint(h(k), k / 10).unwrap();
    }
    let bytes = bincode::serialize(&f).unwrap();
    let g: TaggedCuckooFilter = bincode::deserialize(&bytes).unwrap();
    assert_eq!(f, g);
    assert!((0..500).all(|k| g.seen(h(k), 60)));
}

#[test]
fn a_batch_reports_repeats_current_across_growth() {
    // 200 keys twice in one batch into the smallest table: it grows several times mid-batch
    let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 2).unwrap();
    let mut items: Vec<(u64, u64)> = (0..400).map(|i| (i, h(i % 200))).collect();
    let mut found = Vec::new();
    f.insert_batch(&mut items, 7, |i, p| found.push((i, p)))
        .unwrap();
    assert!(f.stats().grown > 0);
    // never two new slots for one key (a key may also find another key's fingerprint)
    for k in 0..200 {
        let new = found
            .iter()
            .filter(|(i, p)| i % 200 == k && *p == Prior::New)
            .count();
        assert!(new <= 1, "key {k} placed {new} times");
    }
    let new = found.iter().filter(|(_, p)| *p == Prior::New).count();
    assert!(new >= 195, "{new}");
}

#[test]
fn repeats_in_a_batch_size_the_table_by_distinct_keys() {
    // A tick with 1,000 records of 40 keys (same-tick repeats, all absent before the tick) needs
    // room for 40 entries, not 1,000: the table it grows to holds the keys at a load of at
    // least a third, as a batch of the 40 keys alone would.
    let grown = |copies: u64| {
        let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 4).unwrap();
        let mut items: Vec<(u64, u64)> = (0..40 * copies).map(|i| (i, h(i % 40))).collect();
        f.insert_batch_with(&mut items, 7, |_| true, |_, _| {})
            .unwrap();
        assert!((0..40).all(|k| f.seen(h(k), 7)));
        f.table_bits()
    };
    assert_eq!(grown(25), grown(1));
    assert!(grown(25) <= 3 * 16 * 40, "{} bits for 40 keys", grown(25));
}

#[test]
fn a_tenfold_burst_keeps_the_false_positive_rate_within_two_epsilon() {
    // a tick's keys go in as one batch, as the dedup operator inserts them
    let (w, eps) = (400, 0.01);
    let mut f = TaggedCuckooFilter::new(w, w / 16, eps, 8).unwrap();
    let mut next = 0u64;
    let mut probe = 1u64 << 50;
    let (mut trials, mut worst) = (0u64, 0.0f64);
    for (from, rate) in [(0, 100), (2 * w, 1_000), (3 * w, 100)] {
        let ticks = if rate == 1_000 { w } else { 2 * w };
        for t in from..from + ticks {
            let mut batch: Vec<((), u64)> = (next..next + rate).map(|k| ((), h(k))).collect();
            next += rate;
            f.insert_batch(&mut batch, t, |(), _| {}).unwrap();
            if t % 40 == 39 {
                // 4,000 keys never inserted, asked at this tick
                let fp = (0..4_000)
                    .filter(|_| {
                        probe += 1;
                        f.seen(h(probe), t)
                    })
                    .count() as f64
                    / 4_000.0;
                trials += 4_000;
                worst = worst.max(fp);
            }
        }
    }
    // each sample of 4,000 within 2ε plus 5 standard deviations
    let bound = 2.0 * eps + 5.0 * (2.0 * eps / 4_000.0).sqrt();
    println!("worst sampled fpr {worst} over {trials} trials (bound {bound})");
    assert!(worst <= bound, "{worst} > {bound}");
}

#[test]
fn a_table_no_memory_holds_is_an_error_not_an_abort() {
    // A window of 2^40 ticks: 2,000 new keys per tick project about 10^15 keys one window
    // ahead, more than any address space. (The stream starts at the end of its first
    // generation, whose tables double, so that the projection comes right after.)
    let w = MAX_WINDOW;
    let slack = default_slack(w);
    let mut f = TaggedCuckooFilter::new(w, slack, 0.01, 1).unwrap();
    let mut outcome = Ok(Prior::New);
    let start = slack + 1 - 4;
    'stream: for t in start..start + 8 {
        for k in 0..2_000u64 {
            outcome = f.insert_fingerprint(h(t * 2_000 + k), t);
            if outcome.is_err() {
                break 'stream;
            }
        }
    }
    assert!(
        matches!(outcome, Err(Error::OutOfMemory { .. })),
        "{outcome:?}"
    );
    // the filter is left as it was and still answers
    let (first, second) = (h(start * 2_000), h(start * 2_000 + 3_999));
    assert!(f.seen(first, start + 2) && f.seen(second, start + 2));
    let back: TaggedCuckooFilter = bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
    assert_eq!(back, f);
}

#[test]
fn a_huge_slack_projects_without_overflow() {
    // Generations of 2^63 ticks: keys live that long, so the population projected one window
    // ahead (over more ticks than u64 counts) needs a table no memory holds: an error, not an
    // overflow, and the keys placed before it are kept.
    let mut f = TaggedCuckooFilter::new(100, u64::MAX / 2, 0.01, 1).unwrap();
    let mut placed = Vec::new();
    'stream: for t in 0..6u64 {
        for k in 0..50u64 {
            match f.insert_fingerprint(h(t * 50 + k), t) {
                Ok(_) => placed.push(h(t * 50 + k)),
                Err(e) => {
                    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
                    break 'stream;
                }
            }
        }
    }
    assert!(placed.iter().all(|&k| f.seen(k, 5)));
}

#[test]
fn a_young_stream_grows_into_one_table_and_keeps_keys_that_shared_an_entry() {
    // two keys with the same spot in the first table, a list: the second shares the first's
    // entry there, but not in a cuckoo table
    let fp = |k: u64| List::<u16>::spot(h(k), fp_bits(h(k)));
    let mut seen = HashMap::new();
    let (a, b) = (0u64..)
        .find_map(|k| seen.insert(fp(k), k).map(|a| (a, k)))
        .unwrap();
    let mut f = TaggedCuckooFilter::new(600, 37, 0.01, 3).unwrap();
    assert_eq!(f.insert_fingerprint(h(a), 0).unwrap(), Prior::New);
    assert_eq!(f.insert_fingerprint(h(b), 0).unwrap(), Prior::Current);
    // the young stream's first generation: its tables double as they fill, rebuilt exactly
    for t in 1..30 {
        for k in 0..100 {
            f.insert_fingerprint(h(1_000_000 + t * 100 + k), t).unwrap();
        }
    }
    assert!(f.stats().grown >= 5, "{:?}", f.stats());
    assert_eq!(f.table_count(), 1, "no table left draining");
    assert!(f.seen(h(a), 30) && f.seen(h(b), 30));
    assert!((1..30).all(|t| (0..100).all(|k| f.seen(h(1_000_000 + t * 100 + k), 30))));
}

/// A few keys whose count swings (8, then 2, then 8 a window) keep one list: it is never
/// replaced (each replacement would hold two tables for a window), and it holds exactly the
/// entries live in the window and its slack, 16 bits each and 32 more.
#[test]
fn a_few_swinging_keys_keep_one_list() {
    let w = 64;
    let mut f = TaggedCuckooFilter::new(w, w / 16, 0.01, 3).unwrap();
    let mut next = 0;
    for round in 0..6 {
        let keys = if round % 2 == 0 { 8 } else { 2 };
        for t in round * w..(round + 1) * w {
            // the same few keys recur every tick within a round
            for k in 0..keys {
                f.insert_fingerprint(h(next + k), t).unwrap();
            }
        }
        next += keys;
    }
    let s = f.stats();
    assert_eq!((s.shrunk, s.grown, f.table_count()), (0, 0, 1), "{s:?}");
    // the last round's 2 keys, and at most the 8 before them (forgotten within the slack)
    assert!(f.table_bits() <= 10 * 16 + 32, "{} bits", f.table_bits());
}

/// A stream of a few dozen keys is held in a list of exactly its entries (no table sized ahead,
/// none draining), every key found while in the window.
#[test]
fn a_small_stream_is_held_in_exactly_its_entries() {
    let (w, keys) = (600, 30);
    let mut f = TaggedCuckooFilter::new(w, 37, 0.01, 5).unwrap();
    for t in 0..3 * w {
        for k in 0..keys {
            f.insert_fingerprint(h(k), t).unwrap();
        }
    }
    assert!((0..keys).all(|k| f.seen(h(k), 3 * w - 1)));
    assert_eq!(f.table_count(), 1);
    assert_eq!(f.memory_bits(), keys * 16 + 32, "{:?}", f.stats());
}

/// A list outgrown after the stream's youth hands over to a cuckoo table (and drains, no key
/// lost), and a cuckoo table whose keys fall to a handful is replaced by a list again, all
/// within a few windows; every key inserted in `(t - W, t]` is found at `t` throughout.
#[test]
fn an_outgrown_list_becomes_a_table_and_an_emptied_table_a_list() {
    let w = 160;
    let mut f = TaggedCuckooFilter::new(w, 9, 0.01, 7).unwrap();
    let mut last: HashMap<u64, Tick> = HashMap::new();
    let check = |f: &TaggedCuckooFilter, last: &HashMap<u64, Tick>, t: Tick| {
        for (&k, &u) in last {
            assert!(t - u >= w || f.seen(h(k), t), "key {k} at {u} lost at {t}");
        }
    };
    let mut next = 0u64;
    // a few recurring keys (a list), then fresh keys at 2 a tick (a table), then a few again
    for t in 0..8 * w {
        let fresh = (2 * w..4 * w).contains(&t);
        let ks: Vec<u64> = if fresh {
            next += 2;
            vec![1_000 + next, 1_001 + next]
        } else {
            (0..6).collect()
        };
        for k in ks {
            f.insert_fingerprint(h(k), t).unwrap();
            last.insert(k, t);
        }
        check(&f, &last, t);
        if t == 4 * w - 1 {
            assert!(f.table_bits() > 40 * 16 + 32, "a table holds the burst");
        }
    }
    let s = f.stats();
    assert!(s.grown >= 1 && s.shrunk >= 1, "{s:?}");
    assert_eq!(f.table_count(), 1);
    assert!(f.table_bits() <= 40 * 16 + 32, "{} bits", f.table_bits());
}

/// Two keys of one batch with the same fingerprint and buckets are both new, each in a slot of
/// its own, and both are seen afterwards: the second is not taken for the first (in a cuckoo
/// table, a hinted first table, and in a list).
#[test]
fn colliding_keys_of_a_batch_take_a_slot_each() {
    for hint in [1, 0] {
        let mut f = TaggedCuckooFilter::with_hint(60, 3, 0.01, hint, 0).unwrap();
        f.insert_fingerprint(h(u64::MAX), 0).unwrap();
        let spot = |f: &TaggedCuckooFilter, x: u64| with_tables!(&f.store, t => t.active().spot(x, fp_bits(x)));
        let mut met = HashMap::new();
        let (a, b) = (0..1_000_000u64)
            .map(h)
            .find_map(|x| met.insert(spot(&f, x), x).map(|y| (y, x)))
            .unwrap();
        let before = f.live_entries(u32::MAX);
        let mut found = Vec::new();
        f.insert_batch(&mut vec![(0, a), (1, b)], 5, |i, p| found.push((i, p)))
            .unwrap();
        found.sort();
        assert_eq!(found, [(0, Prior::New), (1, Prior::New)]);
        assert_eq!(f.live_entries(u32::MAX), before + 2);
        assert!(f.seen(a, 6) && f.seen(b, 6));
    }
}

/// A table of 400 keys in 512 slots with tags 0..16 spread over its keys (and, adversarially,
/// keys sharing a fingerprint and buckets with another under a later tag), repacked as fewer
/// tags stay live: every answer, for the keys inserted and for a million others, is the one
/// the table gave, and the live entries are all there is.
#[test]
fn a_repacked_table_gives_every_answer_the_drained_one_gave() {
    let buckets = 64;
    let mut t = table::Table::<u16>::new(buckets, 3).unwrap();
    let keys: Vec<u64> = (0..400).map(h).collect();
    for (i, &k) in keys.iter().enumerate() {
        let spot = t.spot(k, fp_bits(k));
        t.insert_new(spot, i as u64 % 16, u32::MAX);
    }
    // four keys' twins: the same fingerprint and buckets, a later tag
    for &k in keys.iter().take(4) {
        let spot = t.spot(k, fp_bits(k));
        t.insert_new(spot, 15, u32::MAX);
    }
    let queries: Vec<u64> = keys
        .iter()
        .copied()
        .chain((0..1_000_000).map(|q| mix64(q ^ 0x5eed)))
        .collect();
    // all 404 entries fit no narrower width at its load; 329 fit 6 slots, 204 and 104 fit 4,
    // 52 fit 2
    let cases = [
        (0, None),
        (3, Some(6)),
        (8, Some(4)),
        (12, Some(4)),
        (14, Some(2)),
    ];
    for (first, width) in cases {
        let live = tag_mask(first, 15);
        let mut drained = AnyTable::Cuckoo(t.clone());
        drained.sweep(!live);
        let packed = drained.repacked(live);
        assert_eq!(
            packed.as_ref().map(AnyTable::width),
            width,
            "tags {first}..=15"
        );
        let Some(packed) = packed else { continue };
        assert_eq!(packed.live(live), drained.live(live));
        let w = width.unwrap_or(SLOTS) as u64;
        assert_eq!(
            packed.memory_bits(),
            drained.memory_bits() * w / SLOTS as u64
        );
        let mut back = packed.clone();
        back.recount();
        assert_eq!(
            back, packed,
            "the counts kept while repacking are the slots'"
        );
        for &k in &queries {
            let (b, s) = (
                drained.contains(k, fp_bits(k), live),
                packed.contains(k, fp_bits(k), live),
            );
            assert_eq!(b, s, "key {k:#x} tags {first}..=15");
        }
        assert!(keys
            .iter()
            .enumerate()
            .all(|(i, &k)| { (i as u64 % 16) < first || packed.contains(k, fp_bits(k), live) }));
    }
}

/// Through a tenfold burst and its end, a drained table is repacked as its entries die (its
/// bits fall before it is dropped), no key inserted in the window is missed on the way, and a
/// state holding a repacked table reads back from bincode as itself.
#[test]
fn a_drained_table_is_repacked_as_its_entries_die() {
    let w = 320;
    let mut f = TaggedCuckooFilter::new(w, 20, 0.01, 4).unwrap();
    let mut next = 0u64;
    let mut inserted: Vec<(Tick, u64)> = Vec::new();
    let (mut drained_bits, mut checkpointed) = (Vec::new(), 0);
    for t in 0..4 * w {
        let rate = if (w..2 * w).contains(&t) { 100 } else { 10 };
        for _ in 0..rate {
            f.insert_fingerprint(h(next), t).unwrap();
            inserted.push((t, next));
            next += 1;
        }
        let in_window = inserted.partition_point(|&(u, _)| t - u >= w);
        inserted.drain(..in_window);
        assert!(
            inserted.iter().all(|&(_, k)| f.seen(h(k), t)),
            "a key missed at {t}"
        );
        if f.table_count() > 1 {
            let active = with_tables!(&f.store, s => s.active().memory_bits());
            drained_bits.push(f.table_bits() - active);
            // a state holding a repacked table reads back from a checkpoint as itself
            let repacked = with_tables!(&f.store, s => s.tables.iter().any(|x| x.width() < SLOTS && x.width() > 0));
            if repacked {
                let back: TaggedCuckooFilter =
                    bincode::deserialize(&bincode::serialize(&f).unwrap()).unwrap();
                assert_eq!(back, f, "at {t}");
                checkpointed += 1;
            }
        }
    }
    assert!(
        checkpointed > 0,
        "no repacked table was held while the stream ran"
    );
    assert!(f.stats().repacked >= 2, "{:?}", f.stats());
    assert!(
        drained_bits.windows(2).any(|d| d[1] < d[0] && d[1] > 0),
        "a drained table's bits never fell while it was read: {drained_bits:?}"
    );
}

/// A state whose table receiving insertions is a repacked one is not a state a filter
/// reaches: it is refused when read back.
#[test]
fn a_repacked_active_table_is_refused() {
    let mut f = TaggedCuckooFilter::new(60, 3, 0.01, 9).unwrap();
    for k in 0..2_000 {
        f.insert_fingerprint(h(k), k / 100).unwrap();
    }
    let live = f.live_tags(19);
    let Store::Narrow(t) = &mut f.store else {
        panic!("16-bit slots at 1%");
    };
    let packed = t.active().repacked(live).unwrap_or_else(|| {
        let AnyTable::Cuckoo(c) = t.active() else {
            panic!("a cuckoo table for 2,000 keys");
        };
        AnyTable::Two(c.repacked::<2>(live).unwrap())
    });
    *t.active_mut() = packed;
    let e = bincode::deserialize::<TaggedCuckooFilter>(&bincode::serialize(&f).unwrap());
    assert!(e.unwrap_err().to_string().contains("repacked"));
}

proptest! {
    /// A batch's state and findings do not depend on the order of its items: keys live before
    /// it (re-tagged), new keys, repeats of both, in any order, large and small batches (the
    /// findings of a small one are kept on the stack, of a large one on the heap).
    #[test]
    fn a_batch_does_not_depend_on_its_order(
        before in proptest::collection::vec(0u64..300, 0..200),
        batch in proptest::collection::vec(0u64..400, 1..200),
        shuffle in any::<u64>(),
    ) {
        let mut a = TaggedCuckooFilter::new(60, 3, 0.01, 5).unwrap();
        for (i, &k) in before.iter().enumerate() {
            a.insert_fingerprint(h(k), i as u64 / 50).unwrap();
        }
        let mut b = a.clone();
        let items: Vec<(u64, u64)> = batch.iter().map(|&k| (k, h(k))).collect();
        let mut shuffled = items.clone();
        let mut s = shuffle;
        for i in (1..shuffled.len()).rev() {
            s = mix64(s);
            shuffled.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        a.insert_batch(&mut items.clone(), 10, |k, p| fa.push((k, p))).unwrap();
        b.insert_batch(&mut shuffled, 10, |k, p| fb.push((k, p))).unwrap();
        fa.sort();
        fb.sort();
        prop_assert_eq!(fa.len(), batch.len());
        prop_assert_eq!(fa, fb);
        prop_assert_eq!(a, b);
    }
}
