//! Ticks and validated time ranges.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// A point in time: a `u64` count of a caller-chosen unit (second, millisecond, ...).
pub type Tick = u64;

/// An inclusive range of ticks [start, end] with start <= end, checked on construction.
///
/// ```
/// use chronobloom_core::temporal::TimeRange;
/// assert!(TimeRange::new(3, 9).is_ok());
/// assert!(TimeRange::new(9, 3).is_err());
/// assert_eq!(TimeRange::new(3, 9).unwrap().len(), 7);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "(u64, u64)", into = "(u64, u64)")]
pub struct TimeRange {
    start: Tick,
    end: Tick,
}

impl TimeRange {
    /// The range [start, end]; an error when start > end.
    pub fn new(start: Tick, end: Tick) -> Result<Self> {
        if start > end {
            return Err(Error::EmptyRange { start, end });
        }
        Ok(TimeRange { start, end })
    }

    /// The one-tick range [t, t].
    pub fn point(t: Tick) -> Self {
        TimeRange { start: t, end: t }
    }

    /// First tick.
    pub fn start(&self) -> Tick {
        self.start
    }

    /// Last tick (inclusive).
    pub fn end(&self) -> Tick {
        self.end
    }

    /// Number of ticks (saturating at `u64::MAX` for the full range).
    pub fn len(&self) -> u64 {
        (self.end - self.start).saturating_add(1)
    }

    /// Always false: a `TimeRange` holds at least one tick.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `t` lies in the range.
    pub fn contains(&self, t: Tick) -> bool {
        self.start <= t && t <= self.end
    }

    /// The part of the range before `horizon` (ticks `0..horizon`), if any.
    pub fn clamp_below(&self, horizon: Tick) -> Option<TimeRange> {
        (self.start < horizon).then(|| TimeRange {
            start: self.start,
            end: self.end.min(horizon - 1),
        })
    }

    /// The intersection with `other`, if any.
    pub fn intersect(&self, other: &TimeRange) -> Option<TimeRange> {
        let (s, e) = (self.start.max(other.start), self.end.min(other.end));
        (s <= e).then_some(TimeRange { start: s, end: e })
    }
}

impl TryFrom<(u64, u64)> for TimeRange {
    type Error = Error;
    fn try_from((s, e): (u64, u64)) -> Result<Self> {
        TimeRange::new(s, e)
    }
}

impl From<TimeRange> for (u64, u64) {
    fn from(r: TimeRange) -> Self {
        (r.start, r.end)
    }
}
