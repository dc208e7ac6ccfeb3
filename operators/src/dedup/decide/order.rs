//! The order a shard's records of an epoch are decided in: by tick, then by fingerprint. A
//! fingerprint's top bits pick its first bucket, so the checks walk the filter's table in one
//! direction, and a tick's keys reach the filter already in the order it places them in (which
//! it would otherwise sort them into).

use super::Slot;

/// Runs below this many records are sorted directly.
const SMALL: usize = 256;

/// Sorts runs of [`Slot`]s, with its buffers kept between epochs.
#[derive(Default)]
pub(super) struct ShardOrder {
    scratch: Vec<Slot>,
    starts: Vec<usize>,
    next: Vec<usize>,
}

impl ShardOrder {
    /// Sorts a shard's records by tick (stably; most epochs arrive in tick order and are only
    /// checked), then, if `by_fingerprint`, each tick's run by fingerprint (records with one
    /// fingerprint in no promised order: every decision about them is made by
    /// `(tick, fingerprint)` or by exact key).
    pub fn sort(&mut self, segment: &mut [Slot], by_fingerprint: bool) {
        if !segment.is_sorted_by_key(|s| s.tick) {
            segment.sort_by_key(|s| s.tick);
        }
        if by_fingerprint {
            for run in segment.chunk_by_mut(|a, b| a.tick == b.tick) {
                self.by_fingerprint(run);
            }
        }
    }

    /// Sorts a run by fingerprint: a counting pass over the top bits, as many as make about one
    /// record a bucket (fingerprints are uniform), the records moved once into their buckets,
    /// each bucket sorted alone, and the result copied back.
    fn by_fingerprint(&mut self, run: &mut [Slot]) {
        if run.len() < SMALL {
            run.sort_unstable_by_key(|s| s.fp);
            return;
        }
        let bits = run.len().ilog2().min(16);
        let bucket = |fp: u64| (fp >> (64 - bits)) as usize;
        let starts = &mut self.starts;
        starts.clear();
        starts.resize((1 << bits) + 1, 0);
        for s in run.iter() {
            starts[bucket(s.fp) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        self.next.clear();
        self.next.extend_from_slice(starts);
        self.scratch.clear();
        self.scratch.resize(run.len(), Slot::default());
        for s in run.iter() {
            let at = &mut self.next[bucket(s.fp)];
            self.scratch[*at] = *s;
            *at += 1;
        }
        for w in starts.windows(2) {
            if w[1] - w[0] > 1 {
                self.scratch[w[0]..w[1]].sort_unstable_by_key(|s| s.fp);
            }
        }
        run.copy_from_slice(&self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chronobloom_core::hash::mix64;

    /// Ticks ascending, fingerprints ascending within a tick, every record kept, for runs below
    /// and above the counting sort's threshold, with repeated fingerprints and ticks out of order.
    #[test]
    fn sorts_by_tick_then_fingerprint() {
        let mut order = ShardOrder::default();
        for len in [0usize, 1, 7, 255, 256, 3_000, 20_000] {
            let mut slots: Vec<Slot> = (0..len)
                .map(|i| Slot {
                    tick: mix64(i as u64) % 3,
                    fp: mix64(i as u64 % 997),
                    i,
                })
                .collect();
            let mut expected: Vec<(u64, u64)> = slots.iter().map(|s| (s.tick, s.fp)).collect();
            expected.sort_unstable();
            order.sort(&mut slots, true);
            let got: Vec<(u64, u64)> = slots.iter().map(|s| (s.tick, s.fp)).collect();
            assert_eq!(got, expected);
            let mut ids: Vec<usize> = slots.iter().map(|s| s.i).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..len).collect::<Vec<_>>());
            assert!(slots.iter().all(|s| s.fp == mix64(s.i as u64 % 997)));
        }
    }

    /// Without fingerprints, only ticks are sorted, and records of a tick keep their order.
    #[test]
    fn sorts_by_tick_alone_stably() {
        let mut slots: Vec<Slot> = (0..3_000)
            .map(|i| Slot {
                tick: mix64(i as u64) % 5,
                fp: mix64(i as u64),
                i,
            })
            .collect();
        ShardOrder::default().sort(&mut slots, false);
        assert!(slots
            .windows(2)
            .all(|w| (w[0].tick, w[0].i) < (w[1].tick, w[1].i)));
    }
}
