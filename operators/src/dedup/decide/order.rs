//! The order an epoch's records are decided in: by shard, then by tick, then by fingerprint. A
//! fingerprint's top bits pick its first bucket, so the checks walk a shard's table in one
//! direction, and a tick's keys reach the filter already in the order it places them in (which
//! it would otherwise sort them into).

use super::super::config::shard_of_fp;
use chronobloom_core::temporal::Tick;

/// Runs below this many records are sorted directly.
const SMALL: usize = 256;
/// Most fingerprint bits a counting pass sorts on (65,536 counters a shard).
const MAX_BITS: u32 = 16;

/// A record's place in an epoch's order, with what the deciding loops read of it, so they walk
/// the order instead of looking records up at random.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Slot {
    pub tick: Tick,
    pub fp: u64,
    /// The record's index in the epoch.
    pub i: usize,
}

/// An epoch's records in deciding order, with the buffers of the sorts kept between epochs (an
/// epoch allocates nothing here once they are large enough).
#[derive(Default)]
pub(super) struct EpochOrder {
    /// The records in order.
    slots: Vec<Slot>,
    /// Where each shard's run of `slots` starts (and, last, its end).
    bounds: Vec<usize>,
    /// Per record, its counting-sort key (computed once for both passes of the sort).
    keys: Vec<u32>,
    scratch: Vec<Slot>,
    starts: Vec<usize>,
    next: Vec<usize>,
}

impl EpochOrder {
    /// Orders `items` (`(tick, fingerprint)` of each record, in record order) by shard (of
    /// `shards`), then by tick (stably), then, if `by_fingerprint`, by fingerprint (records with
    /// one fingerprint in no promised order: every decision about them is made by
    /// `(tick, fingerprint)` or by exact key). An epoch of one tick (the tick-stamped adapter's,
    /// or a view delta's) is ordered by one counting pass over shard and fingerprint together.
    pub fn arrange(
        &mut self,
        items: impl Iterator<Item = (Tick, u64)> + Clone,
        shards: u32,
        by_fingerprint: bool,
    ) {
        let mut ticks = items.clone().map(|(t, _)| t);
        let first = ticks.next();
        let one_tick = ticks.all(|t| Some(t) == first);
        if by_fingerprint && one_tick {
            let n = items.clone().count();
            let bits = (n / shards.max(1) as usize).max(1).ilog2().min(MAX_BITS);
            let key = |fp: u64| {
                let s = shard_of_fp(fp, shards) << bits;
                s | u32::try_from(fp.checked_shr(64 - bits).unwrap_or(0)).unwrap_or(0)
            };
            self.counting_sort(items, (shards as usize) << bits, key);
            self.bounds.truncate(0);
            self.bounds
                .extend((0..=shards as usize).map(|s| self.starts[s << bits]));
            for w in self.starts.windows(2) {
                if w[1] - w[0] > 1 {
                    self.slots[w[0]..w[1]].sort_unstable_by_key(|s| s.fp);
                }
            }
            return;
        }
        self.counting_sort(items, shards as usize, |fp| shard_of_fp(fp, shards));
        self.bounds.clone_from(&self.starts);
        for s in 0..shards as usize {
            let run = &mut self.slots[self.bounds[s]..self.bounds[s + 1]];
            if !run.is_sorted_by_key(|s| s.tick) {
                run.sort_by_key(|s| s.tick);
            }
            if by_fingerprint {
                for run in run.chunk_by_mut(|a, b| a.tick == b.tick) {
                    by_fingerprint_run(run, &mut self.scratch, &mut self.starts, &mut self.next);
                }
            }
        }
    }

    /// Each shard with records, and its records in order.
    pub fn segments(&self) -> impl Iterator<Item = (usize, &[Slot])> + '_ {
        self.bounds
            .windows(2)
            .enumerate()
            .filter_map(|(s, w)| Some((s, self.slots.get(w[0]..w[1])?)))
            .filter(|(_, run)| !run.is_empty())
    }

    /// Puts the items into `slots` by `key` (below `keys`), stably, leaving each key's start in
    /// `starts` (and, last, the end).
    fn counting_sort(
        &mut self,
        items: impl Iterator<Item = (Tick, u64)> + Clone,
        keys: usize,
        key: impl Fn(u64) -> u32,
    ) {
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(keys + 1, 0);
        self.keys.clear();
        for (_, fp) in items.clone() {
            let k = key(fp);
            self.keys.push(k);
            starts[k as usize + 1] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        self.next.clone_from(starts);
        self.slots.clear();
        self.slots.resize(starts[keys], Slot::default());
        for (i, ((tick, fp), &k)) in items.zip(&self.keys).enumerate() {
            let at = &mut self.next[k as usize];
            self.slots[*at] = Slot { tick, fp, i };
            *at += 1;
        }
    }
}

/// Sorts a run by fingerprint: a counting pass over the top bits, as many as make about one
/// record a bucket (fingerprints are uniform), the records moved once into their buckets, each
/// bucket sorted alone, and the result copied back.
fn by_fingerprint_run(
    run: &mut [Slot],
    scratch: &mut Vec<Slot>,
    starts: &mut Vec<usize>,
    next: &mut Vec<usize>,
) {
    if run.len() < SMALL {
        run.sort_unstable_by_key(|s| s.fp);
        return;
    }
    let bits = run.len().ilog2().min(MAX_BITS);
    let bucket = |fp: u64| (fp >> (64 - bits)) as usize;
    starts.clear();
    starts.resize((1 << bits) + 1, 0);
    for s in run.iter() {
        starts[bucket(s.fp) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    next.clone_from(starts);
    scratch.clear();
    scratch.resize(run.len(), Slot::default());
    for s in run.iter() {
        let at = &mut next[bucket(s.fp)];
        scratch[*at] = *s;
        *at += 1;
    }
    for w in starts.windows(2) {
        if w[1] - w[0] > 1 {
            scratch[w[0]..w[1]].sort_unstable_by_key(|s| s.fp);
        }
    }
    run.copy_from_slice(scratch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use chronobloom_core::hash::mix64;

    /// `(tick, fingerprint, record)` of every record, by shard, as `arrange` left them.
    fn arranged(order: &EpochOrder, shards: u32) -> Vec<Vec<(u64, u64, usize)>> {
        let mut by_shard = vec![Vec::new(); shards as usize];
        for (s, run) in order.segments() {
            by_shard[s] = run.iter().map(|x| (x.tick, x.fp, x.i)).collect();
        }
        by_shard
    }

    /// Every record once, in its shard's run, ticks ascending and fingerprints ascending within
    /// a tick: for epochs of one tick (one counting pass) and of many (ticks out of order), runs
    /// below and above the counting sort's threshold, repeated fingerprints, 1 to 16 shards.
    #[test]
    fn orders_by_shard_then_tick_then_fingerprint() {
        let mut order = EpochOrder::default();
        for shards in [1u32, 3, 16] {
            for len in [0usize, 1, 7, 255, 256, 3_000, 20_000] {
                for ticks in [1u64, 3] {
                    let items: Vec<(u64, u64)> = (0..len)
                        .map(|i| (100 + mix64(i as u64) % ticks, mix64(i as u64 % 997)))
                        .collect();
                    order.arrange(items.iter().copied(), shards, true);
                    let got = arranged(&order, shards);
                    let mut expected = vec![Vec::new(); shards as usize];
                    for (i, &(t, fp)) in items.iter().enumerate() {
                        expected[shard_of_fp(fp, shards) as usize].push((t, fp, i));
                    }
                    for (got, mut expected) in got.into_iter().zip(expected) {
                        let key = |r: &(u64, u64, usize)| (r.0, r.1);
                        assert!(got.is_sorted_by_key(key), "{shards} shards, {len} records");
                        expected.sort_unstable_by_key(|r| (r.0, r.1, r.2));
                        let mut got = got;
                        got.sort_unstable_by_key(|r| (r.0, r.1, r.2));
                        assert_eq!(got, expected);
                    }
                }
            }
        }
    }

    /// Without fingerprints, a shard's records are sorted by tick alone, stably (records of a
    /// tick keep their order), whether the epoch has one tick or several.
    #[test]
    fn orders_by_tick_alone_stably() {
        let mut order = EpochOrder::default();
        for ticks in [1u64, 5] {
            let items: Vec<(u64, u64)> = (0..3_000).map(|i| (mix64(i) % ticks, mix64(i))).collect();
            order.arrange(items.iter().copied(), 4, false);
            let got = arranged(&order, 4);
            assert_eq!(got.iter().map(Vec::len).sum::<usize>(), 3_000);
            for run in got {
                assert!(run.windows(2).all(|w| (w[0].0, w[0].2) < (w[1].0, w[1].2)));
            }
        }
    }
}
