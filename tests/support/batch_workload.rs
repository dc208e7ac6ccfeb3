//! The records and batches of the batch-query tests (`batch_query.rs`, `matrix_batch.rs`).

use chronobloom::core::temporal::TimeRange;
use chronobloom::synth::splitmix;

/// Records `(tick, key)`.
pub type Records = Vec<(u64, u64)>;
/// Batches `(issued, keys, range)`, asked at their tick.
pub type Batches = Vec<(u64, Vec<u64>, TimeRange)>;

/// `ticks` ticks of 0 to 5 records each over `keys` keys, and at every 7th tick a batch of 1 to
/// 40 keys (about half never recorded) over a range that starts at or before that tick and is
/// shorter than `max_len` ticks, its end cut at `last` when given; all drawn from `seed`.
pub fn workload(
    seed: u64,
    ticks: u64,
    keys: u64,
    max_len: u64,
    last: Option<u64>,
) -> (Records, Batches) {
    let mut s = seed;
    let mut records = Vec::new();
    let mut batches = Vec::new();
    for t in 0..ticks {
        for _ in 0..splitmix(&mut s) % 6 {
            records.push((t, splitmix(&mut s) % keys));
        }
        if t % 7 == 0 {
            let start = splitmix(&mut s) % (t + 1);
            let end = start + splitmix(&mut s) % max_len;
            let end = last.map_or(end, |l| end.min(l));
            let batch = (0..1 + splitmix(&mut s) % 40)
                .map(|_| splitmix(&mut s) % (2 * keys))
                .collect();
            batches.push((t, batch, TimeRange::new(start, end).unwrap()));
        }
    }
    (records, batches)
}

/// What [`feed`] asks of its caller.
pub enum Feed<'a> {
    /// Send this worker's record.
    Record(u64),
    /// Send this worker's batch.
    Batch(&'a [u64], TimeRange),
    /// Tick `t` is over: advance the inputs to `t + 1` (and step the worker).
    TickDone(u64),
}

/// Walks ticks `0..ticks`, handing this worker's share of the records and batches (every
/// `peers`-th, from `me`) to `to`, then the end of each tick.
pub fn feed(
    records: &Records,
    batches: &Batches,
    (me, peers, ticks): (usize, usize, u64),
    mut to: impl FnMut(Feed<'_>),
) {
    let (mut ri, mut bi) = (0, 0);
    for t in 0..ticks {
        while ri < records.len() && records[ri].0 == t {
            if ri % peers == me {
                to(Feed::Record(records[ri].1));
            }
            ri += 1;
        }
        while bi < batches.len() && batches[bi].0 == t {
            let (_, keys, range) = &batches[bi];
            if bi % peers == me {
                to(Feed::Batch(keys, *range));
            }
            bi += 1;
        }
        to(Feed::TickDone(t));
    }
}
