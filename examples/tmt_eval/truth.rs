//! The exact answers and per-filter statistics, computed from the data itself.

use chronobloom::core::temporal::{Pbf1, TimeRange};
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

    /// Distinct (key, ⌊t / 2^ℓ⌋) pairs for each PBF-2 level ℓ (finest first).
    pub fn pbf2_items(&self, levels: u32) -> Vec<u64> {
        (0..levels)
            .map(|l| self.count_distinct(|t| t >> l))
            .collect()
    }

    /// Distinct (key, bucket(t)) pairs; `bucket` must be monotone in t.
    fn count_distinct(&self, bucket: impl Fn(u64) -> u64) -> u64 {
        let mut last = None;
        let mut n = 0;
        for &(k, t) in &self.pairs {
            let b = (k, bucket(t));
            if last != Some(b) {
                n += 1;
                last = Some(b);
            }
        }
        n
    }

    /// Distinct keys per PBF-1 node in [`Pbf1::layout`] order, then the SBF's distinct pairs.
    pub fn pbf1_items(&self, horizon: u64, g: u64) -> chronobloom::Result<Vec<u64>> {
        let layout = Pbf1::layout(horizon, g)?;
        let heights = layout.first().map_or(0, |n| n.height + 1);
        let mut per_height: Vec<HashMap<u64, u64>> = vec![HashMap::new(); heights as usize];
        for (h, counts) in per_height.iter_mut().enumerate() {
            let span = u128::from(g) << h;
            let mut last = None;
            for &(k, t) in &self.pairs {
                let node = (u128::from(t) / span) as u64;
                if last != Some((k, node)) {
                    *counts.entry(node).or_default() += 1;
                    last = Some((k, node));
                }
            }
        }
        let mut items: Vec<u64> = layout
            .iter()
            .map(|n| {
                per_height[n.height as usize]
                    .get(&n.index)
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        items.push(self.distinct_pairs());
        Ok(items)
    }
}
