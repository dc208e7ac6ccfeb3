//! Bloom filters, both layouts, and the blocked standalone filter.

use super::{Exercise, KEYS};
use chronobloom::core::bloom::{BlockedBloomFilter, BloomFilter, Filter, FilterShape, Layout};

/// Every filter promise checked after inserting [`KEYS`]: each is found, and the estimates are
/// numbers in their range.
fn insert_and_find(f: &mut impl Filter) {
    for k in KEYS {
        f.insert(&k);
        assert!(
            f.contains(&k),
            "key {k} not found right after its insertion"
        );
    }
    let fpr = f.estimated_fpr();
    assert!((0.0..=1.0).contains(&fpr), "estimated FPR {fpr}");
    assert!(f.ones() <= f.bit_len());
    let _ = (f.estimated_items(), f.fill_ratio(), f.memory_bits());
}

impl Exercise for BloomFilter {
    fn samples() -> Vec<Self> {
        let shapes = [
            (
                FilterShape {
                    bits: 1_000,
                    hashes: 3,
                },
                Layout::Standard,
            ),
            (
                FilterShape {
                    bits: 2_048,
                    hashes: 5,
                },
                Layout::Blocked,
            ),
            (FilterShape { bits: 1, hashes: 1 }, Layout::Standard),
        ];
        shapes
            .into_iter()
            .map(|(shape, layout)| {
                let mut f = BloomFilter::with_layout(shape, 9, layout).expect("valid shape");
                f.insert(&"sample");
                f
            })
            .collect()
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        let copy = self.clone();
        self.union(&copy).expect("a filter unions with its copy");
        let m = self.bit_len();
        for to in [m, m / 2, 512, 1] {
            if let Ok(folded) = self.fold(to) {
                assert!(
                    KEYS.iter().all(|k| folded.contains(k)),
                    "folding lost a key"
                );
            }
        }
        if let Ok(small) = BloomFilter::with_layout(
            FilterShape {
                bits: 512,
                hashes: 2,
            },
            self.seed(),
            self.layout(),
        ) {
            let _ = self.union(&small);
            if let Ok(both) = self.union_folded(&small) {
                assert!(
                    KEYS.iter().all(|k| both.contains(k)),
                    "union_folded lost a key"
                );
            }
        }
    }
}

impl Exercise for BlockedBloomFilter {
    fn samples() -> Vec<Self> {
        [(512, 1), (4_096, 7)]
            .into_iter()
            .map(|(bits, hashes)| {
                let mut f = BlockedBloomFilter::new(bits, hashes, 3).expect("valid shape");
                f.insert(&"sample");
                f
            })
            .collect()
    }

    fn exercise(&mut self) {
        insert_and_find(self);
        let copy = self.clone();
        self.union(&copy).expect("a filter unions with its copy");
        if let Ok(other) = BlockedBloomFilter::new(512, self.hashes(), self.seed()) {
            let _ = self.union(&other);
        }
    }
}
