//! The crate's one error type.

use thiserror::Error;

/// Everything that can go wrong in `chronobloom-core`.
///
/// Every variant says what the caller passed and what was expected, so the message can be shown to a
/// user as is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A time range whose start lies after its end.
    #[error("empty time range: start {start} is after end {end}")]
    EmptyRange {
        /// The range's first tick.
        start: u64,
        /// The range's last tick.
        end: u64,
    },
    /// A tick at or past the horizon of a static structure.
    #[error("tick {tick} is beyond the horizon: this structure covers ticks before {horizon}")]
    BeyondHorizon {
        /// The offending tick.
        tick: u64,
        /// The number of ticks the structure covers.
        horizon: u64,
    },
    /// A tick before the first tick a structure covers.
    #[error("tick {tick} is before the span this structure covers, which starts at {start}")]
    BeforeStart {
        /// The offending tick.
        tick: u64,
        /// The first tick covered.
        start: u64,
    },
    /// A query or insert needs a partition that was retired and dropped.
    #[error("ticks {start}..{end} were retired and dropped; their data is gone")]
    Retired {
        /// First tick of the retired span.
        start: u64,
        /// First tick past the retired span.
        end: u64,
    },
    /// Reading or writing a retired partition failed.
    #[error("retired partition file {path}: {reason}")]
    Storage {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A configuration parameter outside its valid domain.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Two structures of different shape were combined (union, OR-in, merge).
    #[error("shape mismatch: {what} ({left} vs {right})")]
    ShapeMismatch {
        /// What differs (bit count, hash count, seed, level count...).
        what: &'static str,
        /// The left-hand structure's value.
        left: u64,
        /// The right-hand structure's value.
        right: u64,
    },
    /// A fold to a size that does not divide the current size.
    #[error("cannot fold {from} bits to {to} bits: {to} must be a positive divisor of {from}")]
    NotADivisor {
        /// The current number of bits.
        from: u64,
        /// The requested number of bits.
        to: u64,
    },
    /// A blocked filter's size that is not a positive whole number of blocks.
    #[error("{bits} bits is not a positive whole number of {block_bits}-bit blocks")]
    NotWholeBlocks {
        /// The bits asked for.
        bits: u64,
        /// Bits per block.
        block_bits: u64,
    },
    /// A time earlier than one the structure has already seen.
    #[error("time went backwards: {now} is before the last time seen, {last}")]
    TimeWentBackwards {
        /// The time passed.
        now: u64,
        /// The latest time seen so far.
        last: u64,
    },
    /// An allocation whose number of entries does not match the structure it configures.
    #[error("allocation has {got} filter shapes, but this structure has {expected} filters")]
    AllocationLength {
        /// Filters in the structure.
        expected: usize,
        /// Shapes in the allocation.
        got: usize,
    },
    /// A structure could not get the memory its size requires.
    #[error("out of memory: could not allocate {bits} bits; ask for fewer (fewer bits or items, a smaller window or a larger error rate)")]
    OutOfMemory {
        /// The number of bits requested.
        bits: u64,
    },
    /// A closed-form posterior lost too much precision to cancellation (paper 004 §5.3.2: eq. 34
    /// with many cells); the direct sum (`GbfInference::posterior`) does not.
    #[error("eq. 34 over {cells} cells loses about {digits_lost} of 16 significant digits to roundoff; use the direct sum")]
    RoundOff {
        /// Cells in `R_x` (`r_{x,0} + r_{x,1}`).
        cells: u32,
        /// Decimal digits the cancellation costs, by the conditioning estimate.
        digits_lost: u32,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Builds an [`Error::InvalidParameter`].
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }
}
