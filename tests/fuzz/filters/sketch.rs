//! The sketches (Flajolet–Martin, Count-Min), the index's per-partition sketch, the matrix
//! filters, and flow keys in their compact wire form.

use super::{Exercise, KEYS, TICKS};
use chronobloom::core::hash::{CanonicalBytes, Key, KeyHash};
use chronobloom::core::matrix::{MatrixBloom, MatrixPbf};
use chronobloom::core::sketch::{CountMinSketch, FmSketch};
use chronobloom::core::temporal::TimeRange;
use chronobloom::operators::PartitionSketch;
use chronobloom::trace::{FlowKey, FlowRecord, KeyKind};

impl Exercise for FmSketch {
    fn samples() -> Vec<Self> {
        let mut fm = FmSketch::new(64, 3).expect("valid");
        (0..100u64).for_each(|k| fm.insert(&k));
        vec![fm, FmSketch::new(1, 0).expect("valid")]
    }

    fn exercise(&mut self) {
        KEYS.iter().for_each(|k| self.insert(k));
        assert!(!self.is_empty(), "a sketch that counted keys is empty");
        let e = self.estimate();
        assert!(e.is_finite() && e >= 0.0, "estimate {e}");
        let (lo, hi) = self.bounds(3.0);
        assert!(lo <= hi, "bounds ({lo}, {hi})");
        let copy = self.clone();
        self.merge(&copy).expect("a sketch merges with its copy");
        if let Ok(other) = FmSketch::new(64, self.seed()) {
            let _ = self.merge(&other);
        }
        let _ = (
            self.relative_standard_error(),
            self.memory_bytes(),
            self.bitmaps(),
        );
    }
}

impl Exercise for CountMinSketch {
    fn samples() -> Vec<Self> {
        let mut cm = CountMinSketch::new(50, 4, 3).expect("valid");
        (0..100u64).for_each(|k| cm.insert(&(k % 7), 2));
        let mut conservative = CountMinSketch::new(8, 2, 3)
            .expect("valid")
            .conservative(true);
        conservative.insert(&"sample", 5);
        vec![cm, conservative]
    }

    fn exercise(&mut self) {
        for k in KEYS {
            let before = self.estimate(&k);
            self.insert(&k, 3);
            let after = self.estimate(&k);
            assert!(
                after >= before.saturating_add(3),
                "estimate {before} -> {after}"
            );
        }
        let copy = self.clone();
        self.merge(&copy).expect("a sketch merges with its copy");
        let _ = (
            self.epsilon(),
            self.failure_probability(),
            self.error_bound(),
        );
        let _ = (
            self.total(),
            self.memory_bytes(),
            self.width(),
            self.depth(),
        );
    }
}

impl Exercise for PartitionSketch {
    fn samples() -> Vec<Self> {
        let mut s = PartitionSketch::new(4, 16, 3).expect("valid");
        s.insert(KeyHash::of(&"sample", 3), 5);
        s.observe_query(TimeRange::new(0, 7).expect("range"));
        vec![s]
    }

    fn exercise(&mut self) {
        for (i, &t) in TICKS.iter().enumerate() {
            self.insert(KeyHash::of(&KEYS[i % KEYS.len()], 3), t);
            let range = TimeRange::new(t / 2, t).expect("range");
            self.observe_query(range);
        }
        let copy = self.clone();
        self.merge(&copy).expect("a sketch merges with its copy");
        for stats in self.filter_stats() {
            let _ = format!("{stats:?}");
        }
        let _ = (self.queries(), self.memory_bytes());
    }
}

impl Exercise for MatrixBloom {
    fn samples() -> Vec<Self> {
        let mut m = MatrixBloom::with_fpr(100, 0.01, 3).expect("valid");
        m.insert(&"a", &1u64);
        vec![m]
    }

    fn exercise(&mut self) {
        for (a, b) in KEYS.iter().zip(KEYS.iter().rev()) {
            self.insert(a, b);
            assert!(
                self.contains(a, b),
                "pair ({a}, {b}) not found right after its insertion"
            );
        }
        // Batches (of sizes on both sides of the pipeline's thresholds) answer as single
        // queries, whatever shape was read.
        let values: Vec<u64> = (0..40).map(|i| KEYS[i % KEYS.len()] ^ i as u64).collect();
        for n in [1, 5, 17, 40] {
            let vs = &values[..n];
            for a in KEYS {
                let want: Vec<bool> = vs.iter().map(|b| self.contains(&a, b)).collect();
                assert_eq!(self.contains_values(&a, vs), want, "key {a}, {n} values");
                let want: Vec<bool> = vs.iter().map(|k| self.contains(k, &a)).collect();
                assert_eq!(self.contains_keys(vs, &a), want, "value {a}, {n} keys");
            }
        }
        let copy = self.clone();
        self.union(&copy)
            .expect("a matrix filter unions with its copy");
        let _ = (
            self.load_factor(),
            self.occupancy(),
            self.estimated_fpr(),
            self.ones(),
        );
        let _ = (self.memory_bits(), self.shape(), self.seed());
    }
}

impl Exercise for MatrixPbf {
    fn samples() -> Vec<Self> {
        let mut m = MatrixPbf::uniform(64, 20_000, 2, 3).expect("valid");
        m.insert(&"sample", 9).expect("insert");
        vec![m]
    }

    fn exercise(&mut self) {
        for (i, &t) in TICKS.iter().enumerate() {
            let k = KEYS[i % KEYS.len()];
            if self.insert(&k, t).is_ok() {
                let at = TimeRange::new(t, t).expect("range");
                assert!(
                    self.query(&k, at),
                    "key {k} inserted at {t} not found at {t}"
                );
                assert_eq!(self.query_keys(&[k, k ^ 1], at).first(), Some(&true));
            }
        }
        let _ = self.query(&1u64, TimeRange::new(0, u64::MAX).expect("range"));
        let _ = (
            self.horizon(),
            self.levels(),
            self.level_shape(0),
            self.memory_bits(),
        );
    }
}

impl Exercise for FlowKey {
    fn samples() -> Vec<Self> {
        let v4 = FlowRecord {
            ts_nanos: 1,
            src: [10, 0, 0, 1].into(),
            dst: [10, 0, 0, 2].into(),
            sport: 40_000,
            dport: 443,
            proto: 6,
        };
        let v6 = FlowRecord {
            src: [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1].into(),
            ..v4
        };
        [KeyKind::Src, KeyKind::Pair, KeyKind::FiveTuple]
            .into_iter()
            .flat_map(|kind| [v4.key(kind), v6.key(kind)])
            .collect()
    }

    fn exercise(&mut self) {
        assert_eq!(
            bincode::serialize(self).map(|b| b.len() as u64).ok(),
            Some(self.wire_len()),
            "wire_len disagrees with the encoding"
        );
        let mut bytes = CanonicalBytes::new();
        self.write_canonical(&mut bytes);
        let slow = KeyHash::of_bytes(bytes.as_slice(), 5);
        assert_eq!(
            self.key_hash(5),
            slow,
            "the fast hash differs from the canonical bytes'"
        );
        assert_eq!(bytes.as_slice().len() as u64, self.canonical_len());
    }
}
