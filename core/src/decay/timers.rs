//! A packed array of `m` timers of `bpt` bits each (paper 004 §3.1), stored in one [`Bits`].

use crate::bits::Bits;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Bits per timer allowed: at most 32.
pub const MAX_TIMER_BITS: u32 = 32;

/// `m` timers of `bpt` bits; timer `i` is bits `[i·bpt, (i+1)·bpt)`.
///
/// Read back with serde, the bits must be exactly `m · bpt` for `1..=32` bits per timer and at
/// least one timer, as [`TimerArray::new`] makes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TimersRepr")]
pub struct TimerArray {
    bits: Bits,
    bpt: u32,
    len: u64,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
struct TimersRepr {
    bits: Bits,
    bpt: u32,
    len: u64,
}

impl TryFrom<TimersRepr> for TimerArray {
    type Error = Error;
    fn try_from(r: TimersRepr) -> Result<Self> {
        if !(1..=MAX_TIMER_BITS).contains(&r.bpt) || r.len == 0 {
            return Err(Error::invalid(
                "timers",
                format!("{} timers of {} bits", r.len, r.bpt),
            ));
        }
        if r.len.checked_mul(u64::from(r.bpt)) != Some(r.bits.len()) {
            return Err(Error::ShapeMismatch {
                what: "timer bits vs timers × bits per timer",
                left: r.bits.len(),
                right: r.len.saturating_mul(u64::from(r.bpt)),
            });
        }
        Ok(TimerArray {
            bits: r.bits,
            bpt: r.bpt,
            len: r.len,
        })
    }
}

impl TimerArray {
    /// `len ≥ 1` timers of `bpt` bits (1 to 32), every one holding `fill`.
    pub fn new(len: u64, bpt: u32, fill: u64) -> Result<Self> {
        if !(1..=MAX_TIMER_BITS).contains(&bpt) {
            return Err(Error::invalid(
                "bits per timer",
                format!("{bpt} is outside 1..={MAX_TIMER_BITS}"),
            ));
        }
        if len == 0 {
            return Err(Error::invalid("timers", "need at least one timer"));
        }
        let total = len
            .checked_mul(u64::from(bpt))
            .filter(|&t| t < 1 << 48)
            .ok_or(Error::OutOfMemory { bits: u64::MAX })?;
        let mut timers = TimerArray {
            bits: Bits::try_new(total)?,
            bpt,
            len,
        };
        if fill != 0 {
            for i in 0..len {
                timers.set(i, fill);
            }
        }
        Ok(timers)
    }

    /// Number of timers.
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there are no timers (never, for a constructed array).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits per timer.
    #[inline]
    pub fn bpt(&self) -> u32 {
        self.bpt
    }

    /// Timer `i`'s value (`i < len`).
    #[inline]
    pub fn get(&self, i: u64) -> u64 {
        self.bits.field(i * u64::from(self.bpt), self.bpt)
    }

    /// Sets timer `i` (`i < len`) to the low `bpt` bits of `v`.
    #[inline]
    pub fn set(&mut self, i: u64, v: u64) {
        self.bits.set_field(i * u64::from(self.bpt), self.bpt, v);
    }

    /// Memory held, in bits.
    pub fn memory_bits(&self) -> u64 {
        self.bits.memory_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_are_independent() {
        let mut t = TimerArray::new(100, 5, 31).expect("shape");
        t.set(12, 7);
        t.set(13, 0);
        assert_eq!((t.get(11), t.get(12), t.get(13), t.get(14)), (31, 7, 0, 31));
        assert!(TimerArray::new(10, 33, 0).is_err());
        assert!(TimerArray::new(0, 3, 0).is_err());
    }
}
