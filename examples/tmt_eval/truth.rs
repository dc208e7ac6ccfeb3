//! The exact answers and per-filter statistics, computed from the data itself.

use chronobloom::core::temporal::TimeRange;
use std::collections::HashMap;

/// The data, indexed: every distinct (key, tick) pair, sorted by key then tick.
pub struct Truth {
    ids: HashMap<String, u32>,
    /// Distinct pairs (key id, tick), sorted.
    pairs: Vec<(u32, u64)>,
    /// `starts[k]..starts[k + 1]` are key k's pairs.
    starts: Vec<usize>,
}

impl Truth {
    pub fn new(records: &[(u64, String)]) -> Self {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut pairs: Vec<(u32, u64)> = records
            .iter()
            .map(|(t, k)| {
                let next = ids.len() as u32;
                (*ids.entry(k.clone()).or_insert(next), *t)
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut starts = vec![0; ids.len() + 1];
        for &(k, _) in &pairs {
            starts[k as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        Truth { ids, pairs, starts }
    }

    pub fn distinct_pairs(&self) -> u64 {
        self.pairs.len() as u64
    }

    /// Whether `key` appears in `range`.
    pub fn answer(&self, key: &str, range: TimeRange) -> bool {
        let Some(&k) = self.ids.get(key) else {
            return false;
        };
        let ticks = &self.pairs[self.starts[k as usize]..self.starts[k as usize + 1]];
        let i = ticks.partition_point(|&(_, t)| t < range.start());
        ticks.get(i).is_some_and(|&(_, t)| t <= range.end())
    }
}
