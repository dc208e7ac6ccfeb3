//! The time-decaying filters: block timing Bloom filter, generalized Bloom filter, the simple
//! buffer baseline, timer arrays, and the distinct-count models their inference reads.

use super::{Exercise, KEYS};
use chronobloom::core::decay::baselines::SimpleBuffer;
use chronobloom::core::decay::prior::{
    ConstantProbability, DistinctModel, FrequencyTable, SampleProbability,
};
use chronobloom::core::decay::{
    AnswerRatePrior, Btbf, BtbfInference, BtbfShape, Gbf, GbfInference, GbfObservation,
    RecencySketch, TimerArray,
};
use chronobloom::core::hash::KeyHash;

impl Exercise for Btbf {
    fn samples() -> Vec<Self> {
        [
            BtbfShape::for_bits(100, 1_000, 4),
            BtbfShape::new(50, 64, 2, 8, 5),
        ]
        .into_iter()
        .map(|shape| {
            let mut f = Btbf::new(shape.expect("valid shape"), 7).expect("valid");
            (0..30u64).for_each(|k| f.insert(&k));
            f
        })
        .collect()
    }

    fn exercise(&mut self) {
        let inference = BtbfInference::new(*self.shape(), DistinctModel::Identity);
        for k in KEYS {
            self.insert(&k);
            assert!(
                self.query(&k),
                "key {k} not found right after its insertion"
            );
            let p = inference.posterior(&self.observe(&k), 0.01);
            assert!((0.0..=1.0).contains(&p), "posterior {p}");
        }
        let _ = (self.memory_bits(), self.seed(), self.validate());
    }
}

impl Exercise for Gbf {
    fn samples() -> Vec<Self> {
        let mut f = Gbf::new(1_000, 2, 3, 7).expect("valid");
        (0..30u64).for_each(|k| f.insert(&k));
        vec![f, Gbf::new(1, 0, 1, 0).expect("valid")]
    }

    fn exercise(&mut self) {
        let inference = GbfInference::new(self);
        for k in KEYS {
            self.insert(&k);
            let obs = self.observe(&k);
            let _ = (self.query(&k), obs.intact());
            let p = inference.posterior(&obs, 0.01, 100);
            assert!((0.0..=1.0).contains(&p), "posterior {p}");
        }
        let _ = (self.memory_bits(), self.cells(), self.hashes());
    }
}

impl Exercise for SimpleBuffer {
    fn samples() -> Vec<Self> {
        let mut b = SimpleBuffer::new(100, 400, 8, 5).expect("valid");
        (0..70u64).for_each(|k| b.insert(&k));
        vec![b, SimpleBuffer::new(10, 32, 32, 1).expect("valid")]
    }

    fn exercise(&mut self) {
        for k in KEYS {
            self.insert(&k);
            assert!(
                self.contains(&k),
                "key {k} not found right after its insertion"
            );
            let p = self.posterior(KeyHash::of(&k, 5), 0.01, &DistinctModel::Identity);
            assert!((0.0..=1.0).contains(&p), "posterior {p}");
        }
        let _ = (self.capacity(), self.memory_bits());
    }

    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
}

impl Exercise for TimerArray {
    fn samples() -> Vec<Self> {
        vec![
            TimerArray::new(100, 5, 31).expect("valid"),
            TimerArray::new(3, 32, 0).expect("valid"),
        ]
    }

    fn exercise(&mut self) {
        let mask = if self.bpt() >= 64 {
            u64::MAX
        } else {
            (1 << self.bpt()) - 1
        };
        for i in [0, 1, self.len() / 2, self.len().saturating_sub(1)] {
            if i < self.len() {
                self.set(i, 0x5555_5555);
                assert_eq!(self.get(i), 0x5555_5555 & mask, "timer {i} lost its value");
            }
        }
        let _ = (self.memory_bits(), self.is_empty());
    }
}

impl Exercise for DistinctModel {
    fn samples() -> Vec<Self> {
        vec![
            DistinctModel::Identity,
            DistinctModel::uniform(1_000).expect("valid"),
            DistinctModel::zipf(1_000).expect("valid"),
            DistinctModel::measured(vec![(1.0, 1.0), (100.0, 50.0), (1e4, 900.0)]).expect("valid"),
        ]
    }

    fn exercise(&mut self) {
        for j in [0.0, 0.5, 1.0, 2.0, 77.0, 1e6, 1e300, f64::INFINITY] {
            let d = self.distinct(j);
            assert!((0.0..=j).contains(&d), "D({j}) = {d}");
        }
    }
}

impl Exercise for ConstantProbability {
    fn samples() -> Vec<Self> {
        vec![ConstantProbability::new(0.001).expect("valid")]
    }

    fn exercise(&mut self) {
        let p = self.p_x(KeyHash::of(&1u64, 0));
        assert!(p > 0.0 && p <= 1.0, "p_x {p}");
    }
}

impl Exercise for FrequencyTable {
    fn samples() -> Vec<Self> {
        let mut t = FrequencyTable::new(0.5).expect("valid");
        (0..20u64).for_each(|k| t.observe(KeyHash::of(&(k % 7), 0)));
        vec![t, FrequencyTable::new(1.0).expect("valid")]
    }

    fn exercise(&mut self) {
        for k in KEYS {
            self.observe(KeyHash::of(&k, 0));
            let p = self.p_x(KeyHash::of(&k, 0));
            assert!(p > 0.0 && p <= 1.0, "p_x {p}");
        }
        let _ = self.total();
    }

    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
}

impl Exercise for AnswerRatePrior {
    fn samples() -> Vec<Self> {
        let mut prior = AnswerRatePrior::new(16).expect("valid");
        [1.0, 0.25, 0.0, 0.9].iter().for_each(|&v| prior.observe(v));
        vec![prior, AnswerRatePrior::new(1).expect("valid")]
    }

    fn exercise(&mut self) {
        for v in [0.5, 1.0, 0.0, f64::NAN, 7.0] {
            self.observe(v);
            let f = self.in_window_rate();
            assert!(f > 0.0 && f < 1.0, "rate {f}");
            let p = self.p_x(KeyHash::of(&1u64, 0));
            assert!(p > 0.0 && p <= 1.0, "p_x {p}");
        }
    }
}

impl Exercise for RecencySketch {
    fn samples() -> Vec<Self> {
        let mut s = RecencySketch::new(8, 2, 16, 0.5, 3).expect("valid");
        (0..40u64).for_each(|k| s.insert(&(k % 5)));
        vec![s, RecencySketch::for_bits(64, 1, 8, 1.0, 0).expect("valid")]
    }

    fn exercise(&mut self) {
        let bits = self.bits();
        for k in KEYS {
            self.insert(&k);
            let h = KeyHash::of(&k, 0);
            // no counter above the halved total, which keeps p_x at most 1
            assert!(
                self.estimate_hash(h) <= self.total(),
                "estimate above the total"
            );
            let p = self.p_x(h);
            assert!(p > 0.0 && p <= 1.0, "p_x {p}");
        }
        assert_eq!(self.bits(), bits, "memory moved with the stream");
    }
}

impl Exercise for BtbfInference {
    fn samples() -> Vec<Self> {
        let shape = BtbfShape::for_bits(100, 1_000, 4).expect("valid shape");
        vec![
            BtbfInference::new(shape, DistinctModel::Identity),
            BtbfInference::new(shape, DistinctModel::uniform(500).expect("valid")),
        ]
    }

    /// Posteriors of a filter of the cache's shape lie in [0, 1].
    fn exercise(&mut self) {
        let Ok(mut f) = Btbf::new(*self.shape(), 5) else {
            panic!("an accepted cache's shape builds no filter")
        };
        for k in KEYS {
            f.insert(&k);
            let obs = f.observe(&k);
            for p in [1e-6, 0.01, 0.5] {
                let post = self.posterior(&obs, p);
                assert!((0.0..=1.0).contains(&post), "posterior {post}");
                let _ = self.posterior_with(&obs, &self.item(p));
            }
        }
    }
}

impl Exercise for GbfInference {
    fn samples() -> Vec<Self> {
        let f = Gbf::new(1_000, 2, 3, 7).expect("valid");
        vec![GbfInference::new(&f), GbfInference::for_shape(64, 1)]
    }

    /// Posteriors of one-cell observations (a GBF has at least one hash) lie in [0, 1]. Eq. 34
    /// only: the direct sum `posterior` falls back to costs about `37 m / k` terms for `m`
    /// cells by design, which a cache for a filter of 2^40 cells makes arbitrarily long.
    fn exercise(&mut self) {
        for (zero, one) in [(1, 0), (0, 1)] {
            for intact in [0, 1] {
                let obs = GbfObservation {
                    zero_cells: zero,
                    one_cells: one,
                    zeros: zero * intact,
                    ones: one * intact,
                };
                if let Ok(p) = self.posterior_closed_form(&obs, 0.01, 50) {
                    assert!((0.0..=1.0).contains(&p), "posterior {p}");
                }
            }
        }
    }
}
