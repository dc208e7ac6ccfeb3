//! The events of one chunk of ticks, put in stream order: by tick, then by the session's order
//! of opening, then by the event's place in its session. They are generated session by
//! session; a counting pass over their ticks orders a full chunk (a chunk holds a few thousand
//! events over as many ticks), and the few events sharing a tick are sorted alone.

/// One event before it is handed out: a session's `done`-th, at `tick`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Ev {
    pub(super) tick: u64,
    pub(super) order: u64,
    pub(super) done: u32,
    pub(super) client: u32,
}

/// A chunk's events: gathered in any order, then handed out in stream order.
#[derive(Debug, Clone, Default)]
pub(super) struct Chunk {
    gathered: Vec<Ev>,
    ordered: Vec<Ev>,
    /// The next event of `ordered` to hand out.
    at: usize,
    /// Per tick of the chunk: events before it, then (after placing) before the next tick.
    starts: Vec<u32>,
}

impl Chunk {
    /// Adds an event of the chunk being gathered.
    pub(super) fn push(&mut self, e: Ev) {
        self.gathered.push(e);
    }

    /// Puts the gathered events of ticks `base .. base + width` in stream order, to be handed
    /// out next (those of the previous chunk must all have been).
    pub(super) fn order(&mut self, base: u64, width: usize) {
        debug_assert!(self.at == self.ordered.len());
        self.ordered.clear();
        self.at = 0;
        let n = self.gathered.len();
        if n.saturating_mul(16) < width {
            // a sparse chunk (a tick in 16 holds an event): a comparison sort costs less than a
            // pass over its ticks (a generator keeping a worker's part of the stream fills its
            // chunks to that part)
            self.gathered.sort_unstable();
            std::mem::swap(&mut self.gathered, &mut self.ordered);
            return;
        }
        self.starts.clear();
        self.starts.resize(width + 1, 0);
        for e in &self.gathered {
            self.starts[(e.tick - base) as usize + 1] += 1;
        }
        for t in 1..=width {
            self.starts[t] += self.starts[t - 1];
        }
        self.ordered.resize(n, Ev::default());
        for e in self.gathered.drain(..) {
            let at = &mut self.starts[(e.tick - base) as usize];
            self.ordered[*at as usize] = e;
            *at += 1;
        }
        for run in self.ordered.chunk_by_mut(|a, b| a.tick == b.tick) {
            if run.len() > 1 {
                run.sort_unstable();
            }
        }
    }

    /// The next event in stream order, if the chunk has any left.
    pub(super) fn next(&mut self) -> Option<Ev> {
        let e = self.ordered.get(self.at).copied();
        self.at += usize::from(e.is_some());
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Hands out the gathered events sorted (tick, order, place), for sparse and dense
        /// chunks with many events a tick, over several chunks in a row.
        #[test]
        fn hands_out_events_sorted(
            chunks in proptest::collection::vec(
                (1usize..300, proptest::collection::vec((0u64..1_000, 0u64..50, 0u32..4), 0..400)),
                1..4,
            ),
        ) {
            let mut chunk = Chunk::default();
            let mut base = 0;
            for (width, events) in chunks {
                let mut want: Vec<Ev> = events
                    .iter()
                    .map(|&(t, order, done)| Ev { tick: base + t % width as u64, order, done, client: done })
                    .collect();
                want.sort_unstable();
                want.dedup();
                for &e in want.iter().rev() {
                    chunk.push(e);
                }
                chunk.order(base, width);
                let got: Vec<Ev> = std::iter::from_fn(|| chunk.next()).collect();
                prop_assert_eq!(got, want);
                base += width as u64;
            }
        }
    }
}
