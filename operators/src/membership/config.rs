//! The window membership configuration: window, slack, false positive rate, epochs, slice floor.

use crate::error::{Error, Result};
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::{default_slack, GenerationSlices};
use serde::{Deserialize, Serialize};

/// A validated window membership configuration ([`MembershipConfig::builder`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembershipConfig {
    window: Tick,
    slack: Tick,
    fpr: f64,
    epoch_len: Tick,
    min_slice_keys: u64,
    seed: u64,
}

/// Builds a [`MembershipConfig`]; `window` and `epoch_len` are required.
#[derive(Debug, Clone)]
pub struct MembershipConfigBuilder {
    window: Option<Tick>,
    slack: Option<Tick>,
    fpr: f64,
    epoch_len: Option<Tick>,
    min_slice_keys: u64,
    seed: u64,
}

impl MembershipConfigBuilder {
    /// The window W in ticks: "was the key inserted in `(t − W, t]`?".
    pub fn window(mut self, ticks: Tick) -> Self {
        self.window = Some(ticks);
        self
    }

    /// The slack S in ticks (default
    /// [`default_slack`](chronobloom_core::window::default_slack)`(W)`, at least
    /// [`min_slack`](chronobloom_core::window::min_slack)`(W)`): keys last inserted `W + S` or
    /// more ticks before are forgotten up to ε.
    pub fn slack(mut self, ticks: Tick) -> Self {
        self.slack = Some(ticks);
        self
    }

    /// The false positive rate ε of an answer, in (0, 1); default 0.01.
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Ticks per epoch (at least 1): workers exchange their inserts once per epoch.
    pub fn epoch_len(mut self, ticks: Tick) -> Self {
        self.epoch_len = Some(ticks);
        self
    }

    /// The fewest keys a generation's slice is sized for (default 256): the first slices, and
    /// those after quiet generations, have no count to go by.
    pub fn min_slice_keys(mut self, keys: u64) -> Self {
        self.min_slice_keys = keys;
        self
    }

    /// The hash seed; default 0. Every worker and process must use the same.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Validates the parameters.
    pub fn build(self) -> Result<MembershipConfig> {
        let window = Error::positive_ticks("membership", "window", self.window)?;
        let epoch_len = Error::positive_ticks("membership", "epoch_len", self.epoch_len)?;
        if self.min_slice_keys == 0 {
            return Err(Error::config(
                "membership",
                "min_slice_keys",
                "must be at least 1",
            ));
        }
        let slack = self.slack.unwrap_or_else(|| default_slack(window));
        let config = MembershipConfig {
            window,
            slack,
            fpr: self.fpr,
            epoch_len,
            min_slice_keys: self.min_slice_keys,
            seed: self.seed,
        };
        // the slices' parameters, checked once here
        config.slices()?.shape_for(config.min_slice_keys)?;
        Ok(config)
    }
}

impl MembershipConfig {
    /// A builder with the defaults (ε = 0.01, slack `W / 16`, 256 keys per slice at least,
    /// seed 0).
    pub fn builder() -> MembershipConfigBuilder {
        MembershipConfigBuilder {
            window: None,
            slack: None,
            fpr: 0.01,
            epoch_len: None,
            min_slice_keys: 256,
            seed: 0,
        }
    }

    /// The window W, in ticks.
    pub fn window(&self) -> Tick {
        self.window
    }

    /// The slack S, in ticks.
    pub fn slack(&self) -> Tick {
        self.slack
    }

    /// The false positive rate ε.
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// Ticks per epoch.
    pub fn epoch_len(&self) -> Tick {
        self.epoch_len
    }

    /// The fewest keys a slice is sized for.
    pub fn min_slice_keys(&self) -> u64 {
        self.min_slice_keys
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The epoch holding tick `t`.
    pub fn epoch_of(&self, t: Tick) -> u64 {
        t / self.epoch_len
    }

    /// The first tick of epoch `e`.
    pub fn epoch_start(&self, e: u64) -> Tick {
        e.saturating_mul(self.epoch_len)
    }

    /// The last tick of epoch `e`.
    pub fn epoch_last(&self, e: u64) -> Tick {
        self.epoch_start(e).saturating_add(self.epoch_len - 1)
    }

    /// Empty slices for this configuration.
    pub fn slices(&self) -> Result<GenerationSlices> {
        GenerationSlices::new(self.window, self.slack, self.fpr, self.seed)
            .map_err(|e| Error::in_config("membership", e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn builder_validates() {
        let ok = || MembershipConfig::builder().window(60).epoch_len(5);
        assert_eq!(ok().build().unwrap().slack(), 3);
        assert!(ok().fpr(0.0).build().is_err());
        assert!(ok().fpr(1.0).build().is_err());
        assert!(ok().epoch_len(0).build().is_err());
        assert!(ok().window(0).build().is_err());
        assert!(ok().min_slice_keys(0).build().is_err());
        assert!(MembershipConfig::builder().epoch_len(5).build().is_err());
        // 1000 ticks need a slack of at least 33
        assert!(ok().window(1_000).slack(32).build().is_err());
        assert_eq!(ok().window(1_000).build().unwrap().slack(), 62);
    }
}
