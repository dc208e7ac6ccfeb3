//! A filter's generations: runs of `slack + 1` ticks, a tick's generation found with a
//! multiplication (a sparse stream asks for it a few times a key, and a division was a visible
//! part of its time).

use crate::hash::FastMod;
use crate::temporal::Tick;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU64;

/// The slack and the generation length it gives; written as the slack alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "u64", into = "u64")]
pub(super) struct Generations {
    slack: Tick,
    /// `slack + 1` (saturating): the ticks of a generation.
    len: FastMod,
}

impl Generations {
    pub(super) fn new(slack: Tick) -> Self {
        Generations {
            slack,
            len: FastMod::nonzero(NonZeroU64::MIN.saturating_add(slack)),
        }
    }

    /// The slack, in ticks.
    pub(super) fn slack(&self) -> Tick {
        self.slack
    }

    /// Ticks of a generation: `slack + 1` (saturating).
    pub(super) fn len(&self) -> Tick {
        self.len.divisor()
    }

    /// The generation of tick `t`: `⌊t / (slack + 1)⌋`.
    #[inline]
    pub(super) fn of(&self, t: Tick) -> u64 {
        self.len.quotient(t)
    }
}

impl From<u64> for Generations {
    fn from(slack: u64) -> Self {
        Generations::new(slack)
    }
}

impl From<Generations> for u64 {
    fn from(g: Generations) -> u64 {
        g.slack
    }
}

#[cfg(test)]
mod tests {
    use super::Generations;
    use proptest::prelude::*;

    #[test]
    fn the_largest_slack_saturates() {
        let g = Generations::new(u64::MAX);
        assert_eq!(g.len(), u64::MAX);
        assert_eq!(g.of(u64::MAX), 1);
        assert_eq!(g.of(u64::MAX - 1), 0);
    }

    /// A filter writes its slack as the plain number it always wrote (checkpoints read back).
    #[test]
    fn a_filter_writes_the_slack_alone() {
        let f = crate::window::TaggedCuckooFilter::new(600, 37, 0.01, 0).expect("valid");
        let v = serde_json::to_value(&f).expect("serializes");
        assert_eq!(v["slack"], serde_json::json!(37));
        let back: crate::window::TaggedCuckooFilter =
            serde_json::from_value(v).expect("reads back");
        assert_eq!(back, f);
        assert_eq!(back.slack(), 37);
    }

    proptest! {
        #[test]
        fn a_generation_is_the_ticks_divided(t in any::<u64>(), slack in 0u64..1 << 40) {
            let g = Generations::new(slack);
            prop_assert_eq!(g.of(t), t / (slack + 1));
            prop_assert_eq!(g.slack(), slack);
        }
    }
}
