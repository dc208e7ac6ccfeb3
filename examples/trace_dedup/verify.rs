//! `--verify`: the exact answers, from a hash map of each key's last tick.

use crate::source::Rec;
use chronobloom::trace::FlowKey;
use std::collections::HashMap;

/// How the filters' decisions compare with the exact ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Verdict {
    /// Records that should pass: their key was not seen in the window before them.
    pub unique: u64,
    /// Duplicates that passed anyway (0 in `bykey` mode; possible in `local`).
    pub missed_duplicates: u64,
    /// Unique records dropped (false positives of the filters).
    pub false_drops: u64,
}

impl Verdict {
    /// False drops per unique record.
    pub fn false_drop_rate(&self) -> f64 {
        self.false_drops as f64 / self.unique.max(1) as f64
    }
}

/// Compares the records that passed (`passed[seq]`) with the exact rule: a record at tick t passes
/// iff its key was not seen in (t − window, t]. Several records of one key at one tick are one
/// decision: the first passes, the others are duplicates; the filters may pick a different one of
/// them, so decisions are compared per (key, tick).
pub fn verify(records: &[Rec], passed: &[bool], window: u64) -> Verdict {
    let mut order: Vec<&Rec> = records.iter().collect();
    order.sort_by_key(|r| (r.tick, r.seq));
    let mut last: HashMap<FlowKey, u64> = HashMap::new();
    // (key, tick) → (should pass, did pass)
    let mut groups: HashMap<(FlowKey, u64), (u64, u64)> = HashMap::new();
    for r in order {
        let prev = last.get(&r.key).copied();
        let g = groups.entry((r.key, r.tick)).or_insert_with(|| {
            // A new group: any earlier occurrence is at an earlier tick.
            let seen = prev.is_some_and(|p| p.saturating_add(window) > r.tick);
            (u64::from(!seen), 0)
        });
        g.1 += u64::from(passed.get(r.seq as usize).copied().unwrap_or(false));
        last.insert(r.key, r.tick);
    }
    let mut v = Verdict::default();
    for (should, did) in groups.into_values() {
        v.unique += should;
        v.missed_duplicates += did.saturating_sub(should);
        v.false_drops += should.saturating_sub(did);
    }
    v
}
