//! The temporal filters: SBF, PBF-1, PBF-2, and the allocations that configure them.

use super::{Exercise, KEYS, TICKS};
use chronobloom::core::bloom::{FilterShape, Layout};
use chronobloom::core::hash::KeyHash;
use chronobloom::core::temporal::{Allocation, Pbf1, Pbf2, Sbf, TemporalFilter, TimeRange};

/// Inserts every key at every tick below `limit` the filter takes; each insertion must be found
/// at its tick and in a range around it. Ranges stay short: an SBF's query costs one probe per
/// tick.
fn insert_and_find(f: &mut impl TemporalFilter, limit: u64) {
    for (i, &t) in TICKS.iter().enumerate().filter(|&(_, &t)| t < limit) {
        let k = KEYS[i % KEYS.len()];
        if f.insert(&k, t).is_ok() {
            let at = TimeRange::new(t, t).expect("a point range");
            assert!(f.query(&k, at), "key {k} inserted at {t} not found at {t}");
            let around = TimeRange::new(t.saturating_sub(3), t.saturating_add(3)).expect("range");
            assert!(
                f.query(&k, around),
                "key {k} inserted at {t} not found around it"
            );
        }
    }
    for (s, e) in [
        (0, 0),
        (0, 100),
        (1 << 40, (1 << 40) + 64),
        (u64::MAX - 50, u64::MAX),
    ] {
        let range = TimeRange::new(s, e).expect("range");
        let answer = f.query_counted(&9u64, range);
        let _ = answer.present;
    }
    let _ = f.memory_bits();
}

impl Exercise for Sbf {
    fn samples() -> Vec<Self> {
        let mut s = Sbf::new(1_000, 3, 5).expect("valid SBF");
        s.insert(&"sample", 7).expect("insert");
        vec![s]
    }

    fn exercise(&mut self) {
        insert_and_find(self, u64::MAX);
        let copy = self.clone();
        self.union(&copy).expect("an SBF unions with its copy");
    }
}

impl Exercise for Pbf1 {
    fn samples() -> Vec<Self> {
        let mut fixed = Pbf1::uniform(16, 2, 8_000, 3, 1).expect("valid PBF-1");
        fixed.insert(&"sample", 9).expect("insert");
        let shape = FilterShape {
            bits: 600,
            hashes: 2,
        };
        let mut grown = Pbf1::dynamic(4, shape, shape, 1).expect("valid PBF-1");
        grown.insert(&"sample", 100).expect("insert");
        vec![fixed, grown]
    }

    /// A dynamic PBF-1 creates every leaf up to the tick inserted (memory linear in time, as
    /// the paper's PBF-1 is): inserts go at most one level past its capacity.
    fn exercise(&mut self) {
        insert_and_find(self, self.capacity().saturating_mul(2));
        let copy = self.clone();
        self.union(&copy).expect("a PBF-1 unions with its copy");
        let cover = self.cover(TimeRange::new(0, 1_000).expect("range"));
        let _ = format!("{cover:?}");
        let _ = (
            self.levels(),
            self.node_count(),
            self.capacity(),
            self.granularity(),
        );
        let _ = (self.node(0, 0), self.sbf());
    }
}

impl Exercise for Pbf2 {
    fn samples() -> Vec<Self> {
        let mut fixed = Pbf2::uniform(64, 4_000, 3, 2).expect("valid PBF-2");
        fixed.insert(&"sample", 9).expect("insert");
        let shape = FilterShape {
            bits: 1_024,
            hashes: 2,
        };
        let mut grown = Pbf2::dynamic_with_layout(shape, 2, Layout::Blocked).expect("valid");
        grown.insert(&"sample", 300).expect("insert");
        let alloc = Allocation::uniform(4, 2_000, 2).expect("allocation");
        let mut later = Pbf2::with_layout(1_000, 8, &alloc, 2, Layout::Standard).expect("valid");
        later.insert(&"sample", 1_003).expect("insert");
        vec![fixed, grown, later]
    }

    fn exercise(&mut self) {
        insert_and_find(self, u64::MAX);
        let seed = self.seed();
        let hashes: Vec<KeyHash> = KEYS.iter().map(|k| KeyHash::of(k, seed)).collect();
        let start = self.start();
        if self.insert_hashes(&hashes, start).is_ok() {
            let at = TimeRange::new(start, start).expect("range");
            assert!(
                KEYS.iter().all(|k| self.query(k, at)),
                "insert_hashes lost a key"
            );
        }
        let ticks: Vec<u64> = (0..hashes.len() as u64)
            .map(|i| start.saturating_add(i * 5))
            .collect();
        let _ = self.insert_hashes_at(&hashes, &ticks);
        let copy = self.clone();
        self.union(&copy).expect("a PBF-2 unions with its copy");
        let _ = self.merge_adjacent(&copy);
        let allocation = self.allocation();
        let _ = self.fold_to(&allocation);
        let halves: Vec<FilterShape> = allocation
            .shapes()
            .iter()
            .map(|s| FilterShape {
                bits: s.bits / 2,
                hashes: s.hashes,
            })
            .collect();
        if let Ok(halves) = Allocation::new(halves) {
            if let Ok(folded) = self.fold_to(&halves) {
                let at = TimeRange::new(start, start).expect("range");
                assert!(
                    KEYS.iter().all(|k| folded.query(k, at)),
                    "folding lost a key"
                );
            }
        }
        let _ = (
            self.levels(),
            self.capacity(),
            self.horizon(),
            self.layout(),
        );
        let _ = (self.level(0), self.level(63));
    }
}

impl Exercise for Allocation {
    fn samples() -> Vec<Self> {
        vec![
            Allocation::uniform(4, 4_000, 3).expect("allocation"),
            Allocation::uniform_for_items(&[10, 20, 0], 3_000, 8).expect("allocation"),
        ]
    }

    /// An allocation is only read when a structure is built from it: the build must refuse it
    /// or give a PBF-2 with exactly its shapes. Only small ones are built.
    fn exercise(&mut self) {
        let total = self.total_bits();
        let _ = (self.shapes().len(), self.for_layout(Layout::Blocked));
        let levels = self.shapes().len() as u32;
        if total > 1 << 24 || levels == 0 || levels > 64 {
            return;
        }
        let horizon = 1u64 << (levels - 1);
        if let Ok(mut p) = Pbf2::new(horizon, self, 3) {
            let built = p.allocation();
            for (b, s) in built.shapes().iter().zip(self.shapes()) {
                let same = b.bits == s.bits && (s.bits == 0 || b.hashes == s.hashes);
                assert!(same, "a PBF-2 built from {self:?} has levels {built:?}");
            }
            insert_and_find(&mut p, u64::MAX);
        }
    }
}
