//! What the sizing rule knows of the stream: the rate of new keys per tick.

use crate::temporal::Tick;
use serde::{Deserialize, Serialize};

/// What the sizing rule knows of the stream since the filter last started empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Rate {
    /// The first tick inserted and its generation.
    pub(super) first_tick: Tick,
    pub(super) first_gen: u64,
    /// New keys (placed in a slot of their own) of the first tick.
    pub(super) first_tick_new: u64,
    /// New keys of the previous and the current generation.
    pub(super) previous_new: u64,
    pub(super) current_new: u64,
    /// The latest tick inserted and the current generation's new keys before it.
    pub(super) tick: Tick,
    pub(super) new_before_tick: u64,
}

impl Rate {
    /// Whether this rate could have been recorded by a filter now in generation `gen` with
    /// generations of `slack + 1` ticks: the first tick in the first generation, no later tick
    /// after the current generation, and counts that only the current generation could add to
    /// no larger than its count.
    pub(super) fn consistent(&self, gen: u64, slack: Tick) -> bool {
        let generation = |t: Tick| t / slack.saturating_add(1);
        self.first_gen <= gen
            && generation(self.first_tick) == self.first_gen
            && self.tick >= self.first_tick
            && generation(self.tick) <= gen
            && self.new_before_tick <= self.current_new
            && (self.first_gen < gen || self.first_tick_new <= self.current_new)
    }

    pub(super) fn start(now: Tick, gen: u64) -> Self {
        Rate {
            first_tick: now,
            first_gen: gen,
            tick: now,
            ..Rate::default()
        }
    }

    pub(super) fn record_new(&mut self, now: Tick) {
        if now > self.tick {
            self.tick = now;
            self.new_before_tick = self.current_new;
        }
        self.current_new += 1;
        if now == self.first_tick {
            self.first_tick_new += 1;
        }
    }

    pub(super) fn end_generation(&mut self) {
        self.previous_new = self.current_new;
        self.current_new = 0;
        self.new_before_tick = 0;
    }

    /// New keys per tick over the previous and the current generation's completed ticks, the
    /// stream's first tick left out (a stream's first keys are all new, however long they
    /// live); `None` before a tick after the first has completed.
    pub(super) fn new_per_tick(&self, now: Tick, gen: u64, g_len: Tick) -> Option<f64> {
        let counted_from = if gen > self.first_gen { gen - 1 } else { gen };
        let span_start = counted_from
            .saturating_mul(g_len)
            .max(self.first_tick.saturating_add(1));
        let before = if now > self.tick {
            self.current_new
        } else {
            self.new_before_tick
        };
        let ticks = now.saturating_sub(span_start);
        if ticks == 0 {
            return None;
        }
        let mut new = before
            + if gen > self.first_gen {
                self.previous_new
            } else {
                0
            };
        if self.first_gen >= counted_from {
            new = new.saturating_sub(self.first_tick_new);
        }
        Some(new as f64 / ticks as f64)
    }
}
