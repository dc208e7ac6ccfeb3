//! `--verify`: the exact answers, from a hash map of each key's last tick.

use crate::source::Rec;
use chronobloom::trace::FlowKey;
use std::collections::{HashMap, VecDeque};

/// How the filters' decisions compare with the exact ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Verdict {
    /// Records that should pass: their key was not seen in the window plus the slack before
    /// them.
    pub unique: u64,
    /// Duplicates that passed anyway: their key was seen in the window (0 in `bykey` mode;
    /// possible in `local`).
    pub missed_duplicates: u64,
    /// Unique records dropped (false positives of the filters).
    pub false_drops: u64,
    /// Decisions whose key was last seen `window` to `window + slack` ticks before: either
    /// answer is right.
    pub in_slack: u64,
    /// Of `in_slack`, those dropped.
    pub slack_drops: u64,
    /// The most distinct keys seen within one window `(t − window, t]`, over all ticks `t` of
    /// the trace.
    pub peak_window_keys: u64,
}

impl Verdict {
    /// False drops per unique record.
    pub fn false_drop_rate(&self) -> f64 {
        self.false_drops as f64 / self.unique.max(1) as f64
    }
}

/// Compares the records that passed (`passed[i]` for `records[i]`) with the exact rule: a record at tick t must
/// be dropped if its key was seen in (t − window, t], must pass if it was not seen in
/// (t − window − slack, t], and may do either in between. Several records of one key at one
/// tick are one decision: the first passes, the others are duplicates; the filters may pick a
/// different one of them, so decisions are compared per (key, tick).
pub fn verify(records: &[Rec], passed: &[bool], window: u64, slack: u64) -> Verdict {
    let mut order: Vec<(&Rec, bool)> = records
        .iter()
        .zip(passed.iter().copied().chain(std::iter::repeat(false)))
        .collect();
    order.sort_by_key(|(r, _)| (r.tick, r.seq));
    let mut last: HashMap<FlowKey, u64> = HashMap::new();
    // (key, tick) → (must drop, must pass, records passed)
    let mut groups: HashMap<(FlowKey, u64), (bool, bool, u64)> = HashMap::new();
    let mut live = LiveKeys::default();
    let mut v = Verdict::default();
    for (r, did_pass) in order {
        let prev = last.get(&r.key).copied();
        let g = groups.entry((r.key, r.tick)).or_insert_with(|| {
            // A new group: any earlier occurrence is at an earlier tick.
            let seen = prev.is_some_and(|p| p.saturating_add(window) > r.tick);
            let forgotten = prev.is_none_or(|p| p.saturating_add(window + slack) <= r.tick);
            (seen, forgotten, 0)
        });
        g.2 += u64::from(did_pass);
        last.insert(r.key, r.tick);
        live.seen(prev, r.tick, window);
        v.peak_window_keys = v.peak_window_keys.max(live.count);
    }
    for (must_drop, must_pass, did) in groups.into_values() {
        if must_pass {
            v.unique += 1;
            v.false_drops += u64::from(did == 0);
            v.missed_duplicates += did.saturating_sub(1);
        } else if must_drop {
            v.missed_duplicates += did;
        } else {
            v.in_slack += 1;
            v.slack_drops += u64::from(did == 0);
            v.missed_duplicates += did.saturating_sub(1);
        }
    }
    v
}

/// The number of distinct keys whose last sighting lies in the window ending at the latest
/// tick: a count per last-sighting tick, oldest first.
#[derive(Debug, Default)]
struct LiveKeys {
    by_tick: VecDeque<(u64, u64)>,
    count: u64,
}

impl LiveKeys {
    /// A key last seen at `prev` (if ever) is seen at `now` (ticks never decrease).
    fn seen(&mut self, prev: Option<u64>, now: u64, window: u64) {
        let first = now.saturating_add(1).saturating_sub(window);
        while let Some(&(t, n)) = self.by_tick.front() {
            if t >= first {
                break;
            }
            self.count -= n;
            self.by_tick.pop_front();
        }
        if let Some(p) = prev.filter(|&p| p >= first) {
            // the key moves from `p` to `now`
            if let Ok(i) = self.by_tick.binary_search_by_key(&p, |&(t, _)| t) {
                self.by_tick[i].1 -= 1;
                self.count -= 1;
            }
        }
        match self.by_tick.back_mut() {
            Some((t, n)) if *t == now => *n += 1,
            _ => self.by_tick.push_back((now, 1)),
        }
        self.count += 1;
    }
}
