//! The dedup configuration: window, slack, false positive rate, epochs, routing mode, shards.

use super::shard::ShardFilter;
use crate::error::{Error, Result};
use crate::share;
use chronobloom_core::hash::{mix64, KeyHash};
use chronobloom_core::temporal::Tick;
use chronobloom_core::window::{default_slack, min_slack};
use serde::{Deserialize, Serialize};

/// Largest window accepted, in ticks (tick filter cells hold at most 32-bit tick offsets).
pub const MAX_WINDOW: Tick = 1 << 31;
/// Largest number of key shards.
pub const MAX_SHARDS: u32 = 4096;

/// Mixed into the key hash to pick a shard, so the shard is independent of the probe positions.
const SHARD_SALT: u64 = 0x5ca1_ab1e_d15c_0b01;

/// Where records are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DedupMode {
    /// Records are exchanged by key hash; each worker owns its keys' shards.
    ByKey,
    /// Records stay on their worker; closed epochs are shared through the global view.
    Local,
}

/// How the expected number of keys was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    PerWindow(u64),
    PerEpoch(u64),
}

/// A validated dedup configuration ([`DedupConfig::builder`]). Deserializing goes through the
/// builder, so a configuration read from elsewhere is validated like one built in code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "DedupConfigFields")]
pub struct DedupConfig {
    window: Tick,
    fpr: f64,
    epoch_len: Tick,
    mode: DedupMode,
    slack: Option<Tick>,
    exact_edge: bool,
    expected_items: Option<u64>,
    shards: u32,
    seed: u64,
    lead_share: u32,
}

/// The serialized form of a [`DedupConfig`].
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct DedupConfigFields {
    window: Tick,
    fpr: f64,
    epoch_len: Tick,
    mode: DedupMode,
    slack: Option<Tick>,
    exact_edge: bool,
    expected_items: Option<u64>,
    shards: u32,
    seed: u64,
    #[serde(default = "even")]
    lead_share: u32,
}

/// The lead share of a configuration serialized before it had one.
fn even() -> u32 {
    share::EVEN
}

impl TryFrom<DedupConfigFields> for DedupConfig {
    type Error = Error;
    fn try_from(f: DedupConfigFields) -> Result<Self> {
        let mut b = DedupConfig::builder()
            .window(f.window)
            .fpr(f.fpr)
            .epoch_len(f.epoch_len)
            .mode(f.mode)
            .shards(f.shards)
            .seed(f.seed)
            .lead_share(f.lead_share)
            .exact_edge(f.exact_edge);
        if let Some(s) = f.slack {
            b = b.slack(s);
        }
        if let Some(n) = f.expected_items {
            b = b.expected_items_per_window(n);
        }
        b.build()
    }
}

/// Builds a [`DedupConfig`]; `window` and `epoch_len` are required.
#[derive(Debug, Clone)]
pub struct DedupConfigBuilder {
    window: Option<Tick>,
    fpr: f64,
    epoch_len: Option<Tick>,
    mode: DedupMode,
    slack: Option<Tick>,
    exact_edge: bool,
    expected: Option<Expected>,
    shards: u32,
    seed: u64,
    lead_share: u32,
}

impl DedupConfigBuilder {
    /// The window W in ticks, 1 to [`MAX_WINDOW`]: a record passes iff its key was not seen in
    /// `(t - W, t]`.
    pub fn window(mut self, ticks: Tick) -> Self {
        self.window = Some(ticks);
        self
    }

    /// The target false positive (false drop) rate ε, in (0, 1); default 0.01.
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Ticks per epoch (at least 1): stats are per epoch, and `Local` shares its view per epoch.
    pub fn epoch_len(mut self, ticks: Tick) -> Self {
        self.epoch_len = Some(ticks);
        self
    }

    /// The routing mode; default [`DedupMode::ByKey`].
    pub fn mode(mut self, mode: DedupMode) -> Self {
        self.mode = mode;
        self
    }

    /// The slack `S` in ticks: a key last seen `W + S` or more ticks ago is forgotten (up to
    /// ε); one seen `W` to `W + S − 1` ticks ago may be reported either way. Default `W / 16`
    /// (raised to the smallest slack the compact state allows, `⌈(W − 1) / 30⌉ − 1`, for a
    /// short window). Ignored with [`exact_edge`](Self::exact_edge), whose slack is 0.
    pub fn slack(mut self, ticks: Tick) -> Self {
        self.slack = Some(ticks);
        self
    }

    /// Keep the window's edge exact (slack 0) with a tick filter per shard
    /// ([`chronobloom_core::window::TickFilter`]): cells of 8 to 32 bits holding ticks, sized
    /// once from [`expected_items_per_window`](Self::expected_items_per_window) (required
    /// then), about 10 cells a key. Default off: the compact state
    /// ([`chronobloom_core::window::TaggedCuckooFilter`]) sizes itself from the stream and
    /// holds one 16-bit slot a key (25–30 bits per key of the window measured, with load and resizing).
    pub fn exact_edge(mut self, exact: bool) -> Self {
        self.exact_edge = exact;
        self
    }

    /// Distinct keys expected in one window, over all workers: sizes the tick filters of
    /// [`exact_edge`](Self::exact_edge); for the compact state an optional first size (it
    /// follows the stream either way).
    pub fn expected_items_per_window(mut self, items: u64) -> Self {
        self.expected = Some(Expected::PerWindow(items));
        self
    }

    /// Distinct keys expected in one epoch, over all workers (see
    /// [`expected_items_per_window`](Self::expected_items_per_window)).
    pub fn expected_items_per_epoch(mut self, items: u64) -> Self {
        self.expected = Some(Expected::PerEpoch(items));
        self
    }

    /// Key shards, 1 to [`MAX_SHARDS`]; default 16 (each holds its own filter, which has a
    /// smallest size). Keep it a multiple of the worker count for an
    /// even `ByKey` load.
    pub fn shards(mut self, shards: u32) -> Self {
        self.shards = shards;
        self
    }

    /// The hash seed; default 0. Every worker and process must use the same.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Worker 0's part of the shards in `ByKey` mode, in percent of every other worker's
    /// (1..=100; default 100, an even split): a smaller part when worker 0 also reads the whole
    /// input balances the workers ([`crate::share::owner`]). Every worker and process must use
    /// the same.
    pub fn lead_share(mut self, percent: u32) -> Self {
        self.lead_share = percent;
        self
    }

    /// Validates the parameters and the filter sizes they imply.
    pub fn build(self) -> Result<DedupConfig> {
        let window = self
            .window
            .ok_or_else(|| Error::config("dedup", "window", "is required"))?;
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::config(
                "dedup",
                "window",
                format!("{window} is outside 1..={MAX_WINDOW}"),
            ));
        }
        if !(self.fpr > 0.0 && self.fpr < 1.0) {
            return Err(Error::config(
                "dedup",
                "fpr",
                format!("{} is not in (0, 1)", self.fpr),
            ));
        }
        let epoch_len = Error::positive_ticks("dedup", "epoch_len", self.epoch_len)?;
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(Error::config(
                "dedup",
                "shards",
                format!("{} is outside 1..={MAX_SHARDS}", self.shards),
            ));
        }
        if !(1..=share::EVEN).contains(&self.lead_share) {
            return Err(Error::config(
                "dedup",
                "lead_share",
                format!("{}% is outside 1..=100", self.lead_share),
            ));
        }
        let expected_items = match self.expected {
            None => None,
            Some(Expected::PerWindow(n)) => Some(n),
            Some(Expected::PerEpoch(n)) => {
                let epochs_per_window = window.div_ceil(epoch_len);
                Some(n.saturating_mul(epochs_per_window))
            }
        };
        if expected_items == Some(0) {
            return Err(Error::config(
                "dedup",
                "expected_items",
                "must be at least 1",
            ));
        }
        if self.exact_edge && expected_items.is_none() {
            return Err(Error::config(
                "dedup",
                "expected_items",
                "is required with `exact_edge` (the tick filters are sized once)",
            ));
        }
        if let Some(slack) = self.slack.filter(|_| !self.exact_edge) {
            let min = min_slack(window);
            if slack < min {
                return Err(Error::config(
                    "dedup",
                    "slack",
                    format!(
                        "{slack} ticks is below {min}, the least for a window of {window} ticks \
                         (at most 31 generations); use `exact_edge` for a sharp edge"
                    ),
                ));
            }
        }
        let config = DedupConfig {
            window,
            fpr: self.fpr,
            epoch_len,
            mode: self.mode,
            slack: self.slack,
            exact_edge: self.exact_edge,
            expected_items,
            shards: self.shards,
            seed: self.seed,
            lead_share: self.lead_share,
        };
        ShardFilter::check(&config)?;
        Ok(config)
    }
}

impl DedupConfig {
    /// A builder with the defaults (ε = 0.01, `ByKey`, slack `W / 16`, compact state, 16
    /// shards, seed 0).
    pub fn builder() -> DedupConfigBuilder {
        DedupConfigBuilder {
            window: None,
            fpr: 0.01,
            epoch_len: None,
            mode: DedupMode::ByKey,
            slack: None,
            exact_edge: false,
            expected: None,
            shards: 16,
            seed: 0,
            lead_share: share::EVEN,
        }
    }

    /// The window W, in ticks.
    pub fn window(&self) -> Tick {
        self.window
    }

    /// The target false positive rate ε.
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// Ticks per epoch.
    pub fn epoch_len(&self) -> Tick {
        self.epoch_len
    }

    /// The routing mode.
    pub fn mode(&self) -> DedupMode {
        self.mode
    }

    /// The slack `S` in ticks (0 with [`exact_edge`](Self::exact_edge)).
    pub fn slack(&self) -> Tick {
        if self.exact_edge {
            return 0;
        }
        self.slack.unwrap_or_else(|| default_slack(self.window))
    }

    /// Whether the window's edge is exact (tick filters) rather than compact with slack.
    pub fn exact_edge(&self) -> bool {
        self.exact_edge
    }

    /// Distinct keys expected per window, over all workers, if given.
    pub fn expected_items(&self) -> Option<u64> {
        self.expected_items
    }

    /// Key shards.
    pub fn shards(&self) -> u32 {
        self.shards
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

    /// The worker of `peers` that decides a key in `ByKey` mode: the owner of its shard. A reader
    /// that routes records there itself spares the operator's exchange.
    pub fn worker_of(&self, hash: KeyHash, peers: usize) -> usize {
        self.owner_of_shard(self.shard_of(hash), peers)
    }

    /// The worker of `peers` owning shard `shard` ([`crate::share::owner`] with
    /// [`Self::lead_share`]).
    pub fn owner_of_shard(&self, shard: u32, peers: usize) -> usize {
        share::owner(shard, self.shards, peers, self.lead_share)
    }

    /// Worker 0's part of the shards, in percent of every other worker's.
    pub fn lead_share(&self) -> u32 {
        self.lead_share
    }

    /// The shard of a key hash, in `0..shards` (a function of its fingerprint, `hash.lo`).
    pub fn shard_of(&self, hash: KeyHash) -> u32 {
        shard_of_fp(hash.lo, self.shards)
    }
}

/// The shard of fingerprint `fp` among `shards` (multiply-shift of a salted mix: independent of
/// the cells the fingerprint picks).
#[inline]
pub(super) fn shard_of_fp(fp: u64, shards: u32) -> u32 {
    // The product is below `shards * 2^64`, so the shifted value is below `shards`.
    ((u128::from(mix64(fp ^ SHARD_SALT)) * u128::from(shards)) >> 64) as u32
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deserializing_validates() {
        let good = DedupConfig::builder()
            .window(60)
            .epoch_len(10)
            .expected_items_per_window(10_000)
            .build()
            .unwrap();
        let bytes = bincode::serialize(&good).unwrap();
        assert_eq!(bincode::deserialize::<DedupConfig>(&bytes).unwrap(), good);
        let mut bad: DedupConfigFields = bincode::deserialize(&bytes).unwrap();
        bad.fpr = 2.0;
        assert!(bincode::deserialize::<DedupConfig>(&bincode::serialize(&bad).unwrap()).is_err());
    }

    #[test]
    fn builder_validates() {
        let ok = || {
            DedupConfig::builder()
                .window(60)
                .epoch_len(10)
                .expected_items_per_window(10_000)
        };
        assert!(ok().build().is_ok());
        assert!(ok().window(0).build().is_err());
        assert!(ok().window(MAX_WINDOW + 1).build().is_err());
        assert!(ok().fpr(0.0).build().is_err());
        assert!(ok().fpr(1.0).build().is_err());
        assert!(ok().fpr(f64::NAN).build().is_err());
        assert!(ok().epoch_len(0).build().is_err());
        assert!(ok().shards(0).build().is_err());
        assert!(ok().shards(MAX_SHARDS + 1).build().is_err());
        assert!(ok().lead_share(0).build().is_err());
        assert!(ok().lead_share(101).build().is_err());
        assert_eq!(ok().lead_share(40).build().unwrap().lead_share(), 40);
        assert!(ok().expected_items_per_window(0).build().is_err());
        assert!(ok().expected_items_per_window(u64::MAX).build().is_err());
        let edge = ok().exact_edge(true);
        assert!(edge.clone().build().is_ok());
        assert!(edge.expected_items_per_window(u64::MAX).build().is_err());
        // the tick filters are sized once: they need the number of keys
        let no_keys = DedupConfig::builder().window(60).epoch_len(10);
        assert!(no_keys.clone().build().is_ok());
        assert!(no_keys.clone().exact_edge(true).build().is_err());
        // 1000 ticks cut into at most 31 generations of S + 1 ticks: slack at least 33
        let long = no_keys.window(1_000);
        assert!(long.clone().slack(32).build().is_err());
        assert_eq!(long.clone().slack(33).build().unwrap().slack(), 33);
        assert_eq!(long.clone().build().unwrap().slack(), 62);
        assert_eq!(
            long.clone()
                .exact_edge(true)
                .expected_items_per_window(9)
                .build()
                .unwrap()
                .slack(),
            0
        );
        assert!(DedupConfig::builder()
            .epoch_len(1)
            .expected_items_per_window(1)
            .build()
            .is_err());
        let per_epoch = ok().expected_items_per_epoch(100).build().unwrap();
        assert_eq!(per_epoch.expected_items(), Some(600));
    }

    #[test]
    fn epochs_and_shards() {
        let c = DedupConfig::builder()
            .window(60)
            .epoch_len(10)
            .expected_items_per_window(100)
            .build()
            .unwrap();
        assert_eq!(
            (c.epoch_start(3), c.epoch_last(3), c.epoch_of(39)),
            (30, 39, 3)
        );
        assert_eq!(c.shards(), 16);
        let mut per_shard = [0u32; 16];
        for k in 0..64_000u64 {
            per_shard[c.shard_of(KeyHash::of(&k, 0)) as usize] += 1;
        }
        // 4000 per shard on average: every shard within 5 standard deviations
        assert!(
            per_shard.iter().all(|&n| (3_685..4_315).contains(&n)),
            "{per_shard:?}"
        );
    }
}
