//! Timestamps to ticks, with an allowed lateness for small reorderings.

use super::TraceError;
use std::time::Duration;

/// Where a record goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Use this tick; ticks of successive placements never decrease.
    Tick(u64),
    /// The record is more than the allowed lateness behind the latest timestamp seen.
    Late {
        /// The tick it would have had (0 if it precedes the origin).
        tick: u64,
        /// How far behind the latest timestamp it is, in nanoseconds.
        behind_nanos: u64,
    },
}

/// Counts kept by a [`Ticker`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickerStats {
    /// Records placed, late ones included.
    pub records: u64,
    /// Records behind the latest timestamp but within the lateness: clamped to the latest tick.
    pub clamped: u64,
    /// Records beyond the lateness: returned as [`Placement::Late`].
    pub late: u64,
    /// The largest distance behind the latest timestamp seen, in nanoseconds.
    pub max_behind_nanos: u64,
}

/// Maps nanosecond timestamps to ticks.
///
/// Tick `t` covers `[origin + t·unit, origin + (t+1)·unit)`, where the origin is the first
/// record's timestamp. Captures are not perfectly ordered (the real trace has inversions of up to
/// 18 µs between a packet and the one before it), while the filters want non-decreasing ticks.
/// A record at most `lateness` behind the latest timestamp seen is placed at the latest tick
/// (clamped, never reordered); one further behind is [`Placement::Late`]: counted, and returned
/// to the caller, which decides what to do with it. Lateness is compared in time, not in ticks,
/// so the verdict does not depend on where tick boundaries fall.
///
/// ```
/// use chronobloom::trace::{Placement, Ticker};
/// use std::time::Duration;
/// let mut t = Ticker::new(Duration::from_millis(1), Duration::from_micros(20)).unwrap();
/// assert_eq!(t.place(1_000_000_000), Placement::Tick(0));
/// assert_eq!(t.place(1_002_000_000), Placement::Tick(2));
/// assert_eq!(t.place(1_001_999_990), Placement::Tick(2)); // 10 µs behind: clamped
/// assert_eq!(t.place(1_001_000_000), Placement::Late { tick: 1, behind_nanos: 1_000_000 });
/// assert_eq!((t.stats().clamped, t.stats().late), (1, 1));
/// ```
#[derive(Debug, Clone)]
pub struct Ticker {
    unit_nanos: u64,
    lateness_nanos: u64,
    origin: Option<u64>,
    max_ts: u64,
    max_tick: u64,
    stats: TickerStats,
}

impl Ticker {
    /// The default tick unit, 1 ms.
    pub const DEFAULT_UNIT: Duration = Duration::from_millis(1);

    /// A ticker with the given tick length and allowed lateness. The unit must be at least 1 ns
    /// and both must fit in 584 years (`u64` nanoseconds).
    pub fn new(unit: Duration, lateness: Duration) -> Result<Self, TraceError> {
        let nanos = |name, d: Duration| {
            u64::try_from(d.as_nanos()).map_err(|_| TraceError::InvalidArgument {
                name,
                value: format!("{d:?}"),
                expected: "a duration below 584 years",
            })
        };
        let unit_nanos = nanos("tick unit", unit)?;
        if unit_nanos == 0 {
            return Err(TraceError::InvalidArgument {
                name: "tick unit",
                value: format!("{unit:?}"),
                expected: "a duration of at least 1 ns",
            });
        }
        Ok(Ticker {
            unit_nanos,
            lateness_nanos: nanos("lateness", lateness)?,
            origin: None,
            max_ts: 0,
            max_tick: 0,
            stats: TickerStats::default(),
        })
    }

    /// Fixes the origin (tick 0) at `origin_nanos` instead of the first record's timestamp, so
    /// that tickers reading different sources of one trace agree on every tick.
    ///
    /// ```
    /// use chronobloom::trace::{Placement, Ticker};
    /// use std::time::Duration;
    /// let mut t = Ticker::new(Duration::from_millis(1), Duration::ZERO).unwrap().with_origin(5_000_000);
    /// assert_eq!(t.place(9_000_000), Placement::Tick(4));
    /// ```
    pub fn with_origin(mut self, origin_nanos: u64) -> Self {
        self.origin = Some(origin_nanos);
        self
    }

    /// Places a record with timestamp `ts_nanos`; the first call sets the origin.
    pub fn place(&mut self, ts_nanos: u64) -> Placement {
        let origin = *self.origin.get_or_insert(ts_nanos);
        self.stats.records += 1;
        let tick = ts_nanos.saturating_sub(origin) / self.unit_nanos;
        if ts_nanos >= self.max_ts {
            self.max_ts = ts_nanos;
            self.max_tick = tick;
            return Placement::Tick(tick);
        }
        let behind_nanos = self.max_ts - ts_nanos;
        self.stats.max_behind_nanos = self.stats.max_behind_nanos.max(behind_nanos);
        if behind_nanos > self.lateness_nanos {
            self.stats.late += 1;
            Placement::Late { tick, behind_nanos }
        } else {
            self.stats.clamped += 1;
            Placement::Tick(self.max_tick)
        }
    }

    /// The origin (the first record's timestamp), once a record has been placed.
    pub fn origin_nanos(&self) -> Option<u64> {
        self.origin
    }

    /// Counts so far.
    pub fn stats(&self) -> TickerStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rejects_a_zero_unit() {
        assert!(matches!(
            Ticker::new(Duration::ZERO, Duration::ZERO),
            Err(TraceError::InvalidArgument { .. })
        ));
        assert!(Ticker::new(Duration::from_nanos(1), Duration::MAX).is_err());
    }

    #[test]
    fn before_the_origin() {
        let Ok(mut t) = Ticker::new(Duration::from_secs(1), Duration::from_millis(5)) else {
            panic!("valid ticker rejected");
        };
        assert_eq!(t.place(10_000_000_000), Placement::Tick(0));
        assert_eq!(t.place(9_999_000_000), Placement::Tick(0));
        assert_eq!(
            t.place(9_000_000_000),
            Placement::Late {
                tick: 0,
                behind_nanos: 1_000_000_000
            }
        );
        assert_eq!(t.origin_nanos(), Some(10_000_000_000));
    }

    proptest! {
        /// Placed ticks never decrease and are the running maximum's tick; a record is late
        /// exactly when it is more than the lateness behind the running maximum; every record is
        /// counted once.
        #[test]
        fn ticks_are_monotone(ts in proptest::collection::vec(0u64..10_000, 1..200), lateness in 0u64..500, unit in 1u64..300) {
            let Ok(mut t) = Ticker::new(Duration::from_nanos(unit), Duration::from_nanos(lateness)) else {
                panic!("valid ticker rejected");
            };
            let (mut last, mut max, mut late) = (0, 0, 0);
            for &x in &ts {
                max = u64::max(max, x);
                match t.place(x) {
                    Placement::Tick(tick) => {
                        prop_assert!(tick >= last);
                        prop_assert!(max - x <= lateness);
                        prop_assert_eq!(tick, (max - ts[0]) / unit);
                        last = tick;
                    }
                    Placement::Late { behind_nanos, .. } => {
                        prop_assert!(behind_nanos > lateness);
                        prop_assert_eq!(behind_nanos, max - x);
                        late += 1;
                    }
                }
            }
            let s = t.stats();
            prop_assert_eq!(s.late, late);
            prop_assert_eq!(s.records, ts.len() as u64);
        }
    }
}
