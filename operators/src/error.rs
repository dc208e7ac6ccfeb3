//! The crate's one error type.

use thiserror::Error;

/// Everything that can go wrong before a dataflow starts.
///
/// Bad records and queries met while the dataflow runs are not errors: they are counted in the
/// per-epoch statistics with their reason ([`crate::stats::RejectReason`]) so no worker panics.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration parameter is missing or outside its valid domain.
    #[error("invalid index configuration `{name}`: {reason}")]
    Config {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The core structures refused the configuration (for instance an invalid filter shape).
    #[error(transparent)]
    Core(#[from] chronobloom_core::Error),
}

impl Error {
    pub(crate) fn config(name: &'static str, reason: impl Into<String>) -> Self {
        Error::Config {
            name,
            reason: reason.into(),
        }
    }

    /// A tick count the configuration requires and that must be at least 1.
    pub(crate) fn positive_ticks(
        name: &'static str,
        ticks: Option<chronobloom_core::temporal::Tick>,
    ) -> Result<chronobloom_core::temporal::Tick> {
        match ticks {
            None => Err(Error::config(name, "is required")),
            Some(0) => Err(Error::config(name, "must be at least 1 tick")),
            Some(t) => Ok(t),
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
