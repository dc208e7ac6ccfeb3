//! When a reader moves its inputs' time on to a record's epoch. Every move is a round of progress
//! tracking through every operator of every worker, however few records the epochs held: a
//! sparse capture (`data/real.pcap`: 17 records a second for an hour, 3,600 one-second epochs)
//! spent most of its run on them. So a reader sends a later epoch's records at the time it has
//! (a lower bound of their ticks, as the operators expect) and moves only once it has sent
//! enough records since the last move, once its records span enough epochs (a time stands for
//! every epoch of its records, the operators stamping an epoch's outputs with its records' least
//! timestamp, and the further apart the times, the further ahead of a time the dataflow may need
//! the readers before its outputs are out), once enough wall-clock time has
//! passed (a paced or live input is decided as promptly as before), or when something needs the
//! time (a checkpoint boundary, a record too far past the time for its offset). Decisions do not
//! change: the operators take each record by its own tick.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The largest offset of a routed record's tick from its input's time (it travels as a `u32`).
const MAX_OFFSET: u64 = u32::MAX as u64;

/// A reader's inputs' time, in epochs, and what moves it.
pub struct Advance {
    epoch_len: u64,
    /// The epoch of the inputs' time.
    open: u64,
    /// The first tick after it.
    open_end: u64,
    /// The epoch of the last record looked at past `open` (the clock is read on a new one).
    seen: u64,
    /// Records sent since the last move.
    since: u64,
    last_move: Instant,
    min_records: u64,
    max_epochs: u64,
    max_wait: Duration,
    /// The times left in the last `4 · max_epochs` epochs, with the epochs their records spanned
    /// (1 to `max_epochs`: a record `max_epochs` past the time moves it).
    recent: VecDeque<(u64, u64)>,
}

impl Advance {
    /// Inputs at epoch `open` of `epoch_len` ticks that move after `min_records` records, at a
    /// record `max_epochs` epochs past them, or after `max_wait` of wall-clock time, whichever
    /// comes first.
    pub fn new(
        open: u64,
        epoch_len: u64,
        min_records: u64,
        max_epochs: u64,
        max_wait: Duration,
    ) -> Self {
        Advance {
            epoch_len,
            open,
            open_end: (open + 1).saturating_mul(epoch_len),
            seen: open,
            since: 0,
            last_move: Instant::now(),
            min_records,
            max_epochs,
            max_wait,
            recent: VecDeque::new(),
        }
    }

    /// The epoch a record at `tick` moves the inputs to, if it does; `needed(t)` says whether
    /// something else needs the inputs at tick `t` (the start of the record's epoch).
    #[inline]
    pub fn check(&mut self, tick: u64, needed: impl FnOnce(u64) -> bool) -> Option<u64> {
        // most records are in the inputs' epoch: no division for them
        if tick < self.open_end {
            return None;
        }
        let e = tick / self.epoch_len;
        if e <= self.open {
            return None;
        }
        let before = std::mem::replace(&mut self.seen, e);
        let new_epoch = before != e;
        let moves = self.since >= self.min_records
            || e - self.open >= self.max_epochs
            || tick - self.open * self.epoch_len > MAX_OFFSET
            || needed(e * self.epoch_len)
            || (new_epoch && self.last_move.elapsed() >= self.max_wait);
        if !moves {
            return None;
        }
        // the records sent at the time left lie in its epochs up to the last one looked at
        self.recent
            .push_back((self.open, before.saturating_sub(self.open) + 1));
        let window = self.max_epochs.saturating_mul(4);
        while self
            .recent
            .front()
            .is_some_and(|&(t, _)| t.saturating_add(window) < e)
        {
            self.recent.pop_front();
        }
        self.open = e;
        self.open_end = (e + 1).saturating_mul(self.epoch_len);
        self.since = 0;
        self.last_move = Instant::now();
        Some(e)
    }

    /// The most epochs the records of one recent time spanned (1 when none did more): a time
    /// further back than `4 · max_epochs` epochs holds up nothing the reader waits for.
    pub fn widest_recent(&self) -> u64 {
        self.recent.iter().map(|&(_, span)| span).max().unwrap_or(1)
    }

    /// One more record sent at the inputs' time.
    pub fn record(&mut self) {
        self.since += 1;
    }

    /// A tick's offset from the inputs' time (a tick at or past it, by [`Self::check`]).
    pub fn offset(&self, tick: u64) -> u32 {
        u32::try_from(tick.saturating_sub(self.open * self.epoch_len)).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    /// Records of later epochs stay at the inputs' time until enough were sent.
    #[test]
    fn moves_after_enough_records() {
        let mut a = Advance::new(0, 1000, 3, u64::MAX, HOUR);
        let mut moves = Vec::new();
        for tick in (0..10).map(|i| i * 700) {
            moves.extend(a.check(tick, |_| false));
            a.record();
            assert!(u64::from(a.offset(tick)) < 3 * 1000 + 700);
        }
        // 1400 finds 2 records sent: stays at epoch 0; 2100 (3 sent) moves to epoch 2; 2800 is
        // in it, 3500 finds 2 sent since, 4200 moves to 4; ...
        assert_eq!(moves, [2, 4, 6]);
    }

    #[test]
    fn moves_when_needed_late_enough_or_too_far() {
        let mut a = Advance::new(0, 1000, u64::MAX, u64::MAX, HOUR);
        assert_eq!(a.check(500, |_| true), None); // its own epoch: nothing to move
        assert_eq!(a.check(1500, |t| t == 2000), None);
        assert_eq!(a.check(2500, |t| t == 2000), Some(2));
        assert_eq!(a.check(2000 + MAX_OFFSET, |_| false), None);
        assert_eq!(
            a.check(2001 + MAX_OFFSET, |_| false),
            Some((2001 + MAX_OFFSET) / 1000)
        );
        let mut prompt = Advance::new(0, 1000, u64::MAX, u64::MAX, Duration::ZERO);
        assert_eq!(prompt.check(1000, |_| false), Some(1));
    }

    /// A sparse input's records move the inputs once they are `max_epochs` epochs past them,
    /// however few were sent.
    #[test]
    fn moves_when_records_span_enough_epochs() {
        let mut a = Advance::new(0, 1000, u64::MAX, 4, HOUR);
        let mut moves = Vec::new();
        for tick in (0..20).map(|i| i * 1000 + 10) {
            moves.extend(a.check(tick, |_| false));
            a.record();
        }
        assert_eq!(moves, [4, 8, 12, 16]);
    }

    /// The widest recent time is the epochs its records spanned, not how far the next record
    /// jumped, and a time more than `4 · max_epochs` epochs back no longer counts.
    #[test]
    fn the_widest_recent_time_is_its_records_and_ages_out() {
        let mut a = Advance::new(0, 1000, u64::MAX, 4, HOUR);
        assert_eq!(a.widest_recent(), 1);
        // records in epochs 0 to 3 at time 0; the one in epoch 4 moves the inputs
        for tick in [0, 1000, 2000, 3000] {
            assert_eq!(a.check(tick, |_| false), None);
        }
        assert_eq!(a.check(4000, |_| false), Some(4));
        assert_eq!(a.widest_recent(), 4);
        // then a time for every epoch: each spans one
        for e in 5..=16 {
            assert_eq!(a.check(e * 1000, |_| true), Some(e));
        }
        assert_eq!(a.widest_recent(), 4);
        assert_eq!(a.check(17_000, |_| true), Some(17));
        assert_eq!(a.widest_recent(), 1);
        // a gap: the record 100 epochs on moves the inputs, but time 17 held one epoch's records
        assert_eq!(a.check(117_000, |_| true), Some(117));
        assert_eq!(a.widest_recent(), 1);
    }
}
