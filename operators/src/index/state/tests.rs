use super::*;
use crate::index::delta::DeltaWords;
use chronobloom_core::bloom::Layout;
use chronobloom_core::hash::mix64;

/// A small index configuration and the word count of its level 0.
fn small() -> (IndexConfig, usize) {
    let cfg = IndexConfig::builder()
        .epoch_len(4)
        .partition_len(16)
        .bits(200_000)
        .build()
        .unwrap();
    let words = cfg.allocation().shapes()[0].bits.div_ceil(64) as usize;
    (cfg, words)
}

/// Applying `words` to level 0 leaves every shard (1 of 1, 1 and 2 of 2) as the same words
/// sent sparse do: words, counts of ones, changed blocks, refused count.
fn assert_merges_like_sparse(cfg: &IndexConfig, words: DeltaWords, what: &str) {
    let mut pairs = Vec::new();
    words.for_each(|i, w| pairs.push((i as u32, w)));
    let allocation = cfg.allocation().clone();
    let delta = |words| LevelDelta {
        partition: 0,
        level: 0,
        words,
    };
    let (d, s) = (delta(words), delta(DeltaWords::Sparse(pairs)));
    for (me, peers) in [(0, 1), (0, 2), (1, 2)] {
        let mut given = MergedState::shard(cfg, me, peers);
        let mut sparse = given.clone();
        assert!(given.announce(0, &allocation) && sparse.announce(0, &allocation));
        given.refresh_blocks();
        sparse.refresh_blocks();
        assert_eq!(given.apply(&d), sparse.apply(&s));
        assert_eq!(given, sparse, "{what}, worker {me} of {peers}");
        assert_eq!(given.refresh_blocks(), sparse.refresh_blocks());
    }
}

/// Dense runs, also starting or ending inside a shard.
#[test]
fn dense_runs_merge_like_single_words() {
    let (cfg, level_words) = small();
    for (first, len) in [
        (0, level_words),
        (3, 200),
        (100, level_words - 100),
        (70, 1),
    ] {
        let run = (0..len as u64).map(|i| mix64(i) & mix64(i + 7)).collect();
        let words = DeltaWords::Dense {
            first: first as u32,
            words: run,
        };
        assert_merges_like_sparse(&cfg, words, &format!("first {first}, len {len}"));
    }
}

/// Bitmaps with whole and partial 64-word groups, also past the shard's end.
#[test]
fn bitmap_deltas_merge_like_single_words() {
    let (cfg, level_words) = small();
    for first in [0usize, 5, 130] {
        let groups = (level_words - first).div_ceil(64);
        // even groups whole (where the level has all 64 words), odd ones about half
        let present: Vec<u64> = (0..groups)
            .map(|g| {
                let valid = (level_words - first - g * 64).min(64);
                if valid == 64 && g % 2 == 0 {
                    u64::MAX
                } else if valid == 64 {
                    mix64(g as u64)
                } else {
                    mix64(g as u64) & ((1 << valid) - 1)
                }
            })
            .collect();
        assert!(present.contains(&u64::MAX) && present.iter().any(|&b| b != u64::MAX));
        let carried = present.iter().map(|b| b.count_ones() as u64).sum::<u64>();
        let words = DeltaWords::Bitmap {
            first: first as u32,
            present,
            words: (0..carried).map(|i| mix64(i) & mix64(i + 3)).collect(),
        };
        assert_merges_like_sparse(&cfg, words, &format!("first {first}"));
    }
}

/// Inserts epochs `0..epochs` of 64 ticks, `n` records each (`record(epoch, i)` gives the key
/// and the tick), into shard `me` of `peers` of partitions `0..partitions` (1,024 ticks and
/// `bits` bits each), as epoch batches and record by record, and asserts that both leave the same
/// words, counts of ones and changed blocks.
fn assert_batches_insert_like_one_by_one(
    layout: Layout,
    (me, peers): (usize, usize),
    (partitions, epochs, n, bits): (u64, u64, u64, u64),
    record: impl Fn(u64, u64) -> (u64, Tick),
    what: &str,
) {
    let cfg = IndexConfig::builder()
        .epoch_len(64)
        .partition_len(1024)
        .partitions(2)
        .bits(bits)
        .layout(layout)
        .build()
        .unwrap();
    assert_config_inserts_like_one_by_one(&cfg, (me, peers), (partitions, epochs, n), record, what);
}

/// [`assert_batches_insert_like_one_by_one`] for a given configuration (epochs of 64 ticks).
fn assert_config_inserts_like_one_by_one(
    cfg: &IndexConfig,
    (me, peers): (usize, usize),
    (partitions, epochs, n): (u64, u64, u64),
    record: impl Fn(u64, u64) -> (u64, Tick),
    what: &str,
) {
    let layout = cfg.layout();
    let allocation = cfg.allocation().clone();
    let mut batch = MergedState::shard(cfg, me, peers);
    let mut single = batch.clone();
    for p in 0..partitions {
        assert!(batch.announce(p, &allocation) && single.announce(p, &allocation));
    }
    for epoch in 0..epochs {
        let mut records = EpochRecords::new(epoch * 64, 64);
        for i in 0..n {
            let (key, tick) = record(epoch, i);
            let hash = KeyHash::of(&key, cfg.seed());
            records.push(hash, tick, layout == Layout::Standard);
            single.insert_hash(hash, tick).unwrap();
        }
        assert_eq!(batch.insert_records(epoch, &records), 0);
        assert_eq!(
            batch.refresh_blocks(),
            single.refresh_blocks(),
            "{layout:?}, worker {me} of {peers}, {what}: changed blocks after epoch {epoch}"
        );
    }
    assert_eq!(batch, single, "{layout:?}, worker {me} of {peers}, {what}");
}

/// An epoch's records inserted as a batch (coarsened level by level, repeats dropped) leave every
/// shard exactly as inserting each record at its tick does: words, counts of ones, changed
/// blocks. Both layouts; keys repeat within and across epochs, and ticks repeat.
#[test]
fn epoch_records_insert_like_one_by_one() {
    for layout in [Layout::Blocked, Layout::Standard] {
        for shard in [(0, 1), (0, 2), (1, 2)] {
            let record = |epoch: u64, i: u64| {
                let r = mix64(epoch * 1000 + i);
                // few keys: many repeats at every level
                (r % 40, epoch * 64 + (r >> 20) % 64)
            };
            let case = (1, 16, 300, 1 << 16);
            assert_batches_insert_like_one_by_one(layout, shard, case, record, "40 keys");
            // few records in levels of many digest blocks: each epoch changes only some blocks
            let case = (1, 16, 5, 1 << 22);
            assert_batches_insert_like_one_by_one(layout, shard, case, record, "sparse");
        }
    }
}

/// Blocked levels set with every probe count a level's loop is unrolled for, and with more
/// (read at run time), hold exactly the bits inserting each record sets: epochs of many records
/// (each level sets its own blocks) and of few (the levels share one look-ahead).
#[test]
fn every_probe_count_inserts_like_one_by_one() {
    for hashes in [1, 2, 3, 4, 5, 6, 7, 8, 9, 13] {
        let cfg = IndexConfig::builder()
            .epoch_len(64)
            .partition_len(1024)
            .partitions(2)
            .bits(1 << 18)
            .hashes(hashes)
            .layout(Layout::Blocked)
            .build()
            .unwrap();
        assert!(cfg.allocation().shapes().iter().all(|s| s.hashes == hashes));
        for n in [5, 600] {
            let record = |epoch: u64, i: u64| {
                let r = mix64(epoch * 1000 + i + u64::from(hashes) * 7);
                (r % 5_000, epoch * 64 + (r >> 20) % 64)
            };
            let what = format!("{hashes} hashes, {n} records an epoch");
            assert_config_inserts_like_one_by_one(&cfg, (0, 1), (1, 8, n), record, &what);
        }
    }
}

/// The levels skipped for a key inserted before (`RecentPoints`) hold exactly the bits inserting
/// every record sets, for every shard: keys recur across epochs and across the boundary of two
/// partitions (where nothing remembered may be used), few keys (every one remembered) and many
/// (their slots collide and are overwritten), at ticks far apart and close.
#[test]
fn remembered_points_skip_only_levels_already_set() {
    for layout in [Layout::Blocked, Layout::Standard] {
        for (universe, spread) in [(40u64, 1024u64), (60_000, 1024), (60_000, 7)] {
            for shard in [(0, 1), (1, 2)] {
                let record = |epoch: u64, i: u64| {
                    let r = mix64(epoch * 10_000 + i);
                    let key = r % universe;
                    // a key's ticks: near its own offset, or anywhere in the epoch
                    (
                        key,
                        epoch * 64 + (mix64(key) % 64 + (r >> 40) % spread) % 64,
                    )
                };
                let what = format!("{universe} keys, spread {spread}");
                let case = (2, 32, 2_000, 1 << 16);
                assert_batches_insert_like_one_by_one(layout, shard, case, record, &what);
            }
        }
    }
}

/// Epochs that lie within one point of the resolution (as the main job's defaults make them:
/// 1 s epochs, 1 s resolution) are inserted level by level from one ordering of their keys by
/// the levels they need; they hold exactly the bits inserting each record sets, for every shard
/// and both layouts: keys new and recurring (from a point before, or the same point, where a key
/// needs no level), few records an epoch (the levels' shared look-ahead) and many (each
/// level's own).
#[test]
fn one_point_epochs_insert_like_one_by_one() {
    for layout in [Layout::Blocked, Layout::Standard] {
        // 64 ticks a point (an epoch each), and 128 (two epochs a point)
        for resolution in [64, 128] {
            let cfg = IndexConfig::builder()
                .epoch_len(64)
                .partition_len(1 << 14)
                .partitions(1)
                .resolution(resolution)
                .bits(1 << 18)
                .layout(layout)
                .build()
                .unwrap();
            for (universe, n) in [(30u64, 5u64), (3_000, 600), (1 << 40, 600)] {
                for shard in [(0, 1), (0, 2), (1, 2), (2, 3)] {
                    let record = |epoch: u64, i: u64| {
                        let r = mix64(epoch * 10_000 + i + universe);
                        (r % universe, epoch * 64 + (r >> 50) % 64)
                    };
                    let what = format!("resolution {resolution}, {universe} keys, {n} an epoch");
                    assert_config_inserts_like_one_by_one(&cfg, shard, (1, 24, n), record, &what);
                }
            }
        }
    }
}

/// Every held level of 64 words or more starts at a cache line, in a fresh state, its clone and
/// a state restored from a snapshot, so that each 512-bit block of a blocked level is one line.
#[test]
fn held_levels_start_at_a_cache_line() {
    let (cfg, _) = small();
    let allocation = cfg.allocation().clone();
    for (me, peers) in [(0, 1), (0, 2), (1, 2)] {
        let mut state = MergedState::shard(&cfg, me, peers);
        assert!(state.announce(0, &allocation));
        let mut restored = MergedState::shard(&cfg, me, peers);
        restored.import(state.export()).unwrap();
        for s in [&state, &state.clone(), &restored] {
            let levels = &s.partitions[&0].levels;
            assert!(levels.iter().any(|l| l.words.len() >= 64));
            for l in levels.iter().filter(|l| l.words.len() >= 64) {
                assert_eq!(l.words.as_ptr().addr() % 64, 0, "worker {me} of {peers}");
            }
        }
    }
}
