//! The window filters: age-partitioned, time-limited, sliding (Naor–Yogev), tagged cuckoo,
//! generation slices, and the exact-edge tick filter.

use super::{Exercise, KEYS, TICKS};
use chronobloom::core::hash::KeyHash;
use chronobloom::core::window::{
    Apbf, GenerationSlices, SlidingBloomFilter, TaggedCuckooFilter, TickFilter,
    TimeLimitedBloomFilter, WindowFilter,
};

/// Inserts a key at each tick the filter takes (ticks only grow, with jumps far ahead): each
/// must be reported at its own tick.
fn insert_and_find(f: &mut impl WindowFilter) {
    for (i, &t) in TICKS.iter().enumerate() {
        let k = KEYS[i % KEYS.len()];
        if f.insert(&k, t).is_ok() {
            assert!(
                f.contains(&k, t),
                "key {k} inserted at {t} not found at {t}"
            );
        }
        let _ = f.advance(t);
    }
    let _ = (f.items(), f.memory_bits(), f.seed());
}

impl Exercise for Apbf {
    fn samples() -> Vec<Self> {
        let mut f = Apbf::with_fpr(100, 0.01, 4).expect("valid");
        f.insert(&"sample", 0).expect("insert");
        vec![f]
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        let _ = (self.estimated_fpr(), self.expected_fpr(), self.window());
        let _ = (self.slice_bits(), self.generation(), self.params());
    }
}

impl Exercise for TimeLimitedBloomFilter {
    fn samples() -> Vec<Self> {
        let mut f = TimeLimitedBloomFilter::with_fpr(60, 0.01, 100, 4).expect("valid");
        f.insert(&"sample", 5).expect("insert");
        vec![f]
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        let _ = (
            self.estimated_fpr(1 << 41),
            self.expected_fpr(),
            self.span(),
        );
        let _ = (
            self.slice_count(),
            self.generation(),
            self.target_generation(),
        );
        let _ = (self.generation_ticks(), self.retention());
    }
}

impl Exercise for SlidingBloomFilter {
    fn samples() -> Vec<Self> {
        let mut count = SlidingBloomFilter::count_window(50, 0.01, 4).expect("valid");
        let mut time = SlidingBloomFilter::time_window(60, 0.01, 4).expect("valid");
        for i in 0..20u64 {
            count.insert(&i, 0).expect("insert");
            time.insert(&i, i).expect("insert");
        }
        vec![count, time]
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        let _ = (
            self.estimated_fpr(),
            self.stats(),
            self.table_count(),
            self.shape(),
        );
    }
}

impl Exercise for TaggedCuckooFilter {
    fn samples() -> Vec<Self> {
        let mut narrow = TaggedCuckooFilter::new(60, 3, 0.01, 4).expect("valid");
        let mut wide = TaggedCuckooFilter::with_hint(1_000, 100, 0.001, 50, 4).expect("valid");
        for i in 0..30u64 {
            narrow
                .insert_fingerprint(KeyHash::of(&i, 4).lo, i)
                .expect("insert");
            wide.insert_fingerprint(KeyHash::of(&i, 4).lo, 2 * i)
                .expect("insert");
        }
        vec![narrow, wide]
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        for (i, &t) in TICKS.iter().enumerate() {
            let h = KeyHash::of(&KEYS[i % KEYS.len()], 11).lo;
            if self.insert_fingerprint(h, t).is_ok() {
                assert!(
                    self.seen(h, t),
                    "fingerprint inserted at {t} not seen at {t}"
                );
            }
            let mut batch: Vec<(usize, u64)> = (0..4).map(|j| (j, h ^ j as u64)).collect();
            if self.insert_batch(&mut batch, t, |_, _| {}).is_ok() {
                assert!(self.seen(h ^ 3, t), "batch fingerprint not seen at {t}");
            }
            self.advance_to(t);
            let _ = (
                self.stale(t),
                self.occupancy(),
                self.population(),
                self.stats(),
            );
        }
        let _ = (self.memory_bits(), self.table_count(), self.slot_bits());
    }
}

impl Exercise for GenerationSlices {
    fn samples() -> Vec<Self> {
        let mut view = GenerationSlices::new(60, 3, 0.01, 7).expect("valid");
        for t in [0, 5, 17] {
            let g = view.generation_of(t);
            let shape = view.shape_for(100).expect("shape");
            view.open(g, shape).expect("open");
            view.insert(g, KeyHash::of(&t, 7).lo).expect("insert");
        }
        vec![view]
    }

    fn exercise(&mut self) {
        for (i, &t) in TICKS.iter().enumerate() {
            let h = KeyHash::of(&KEYS[i % KEYS.len()], 7).lo;
            let g = self.generation_of(t);
            let _ = self.generation_start(g);
            let shape = match self.shape_from(g.checked_sub(1), 20, 10) {
                Ok(shape) => shape,
                Err(_) => continue,
            };
            if self.open(g, shape).is_ok() && self.insert(g, h).is_ok() {
                assert!(self.contains(h, t), "hash inserted at {t} not found at {t}");
            }
            let _ = self.count(g, h ^ 1);
            self.retire(t, 2);
            let _ = (self.digest(), self.memory_bits(), self.slices().count());
        }
        let _ = self.live_generations();
    }
}

impl Exercise for TickFilter {
    fn samples() -> Vec<Self> {
        [60, 1_000, 100_000]
            .into_iter()
            .map(|window| {
                let shape = TickFilter::shape_for(50, 0.01, window).expect("valid");
                let mut f = TickFilter::new(shape, window, 0).expect("valid");
                for (i, &k) in KEYS.iter().enumerate() {
                    f.insert(k, i as u64 * 3);
                }
                f
            })
            .collect()
    }

    fn exercise(&mut self) {
        for (i, &t) in TICKS.iter().enumerate() {
            let k = KEYS[i % KEYS.len()];
            // an insert at or after the latest one is recorded (earlier ones may be too old)
            let recorded = self.latest().is_none_or(|l| t >= l);
            let _ = (self.insert(k, t), self.stale(t));
            if recorded {
                assert!(self.seen(k, t), "key {k} inserted at {t} not seen at {t}");
            }
            let _ = (self.occupancy(t), self.memory_bits(), self.hashes());
        }
    }
}
