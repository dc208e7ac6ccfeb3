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
    #[error("invalid {config} configuration `{name}`: {reason}")]
    Config {
        /// Which configuration: `dedup`, `index`, `membership` or `allocator`.
        config: &'static str,
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
    /// An [`Error::Config`] of configuration `config` (`dedup`, `index`, ...).
    pub(crate) fn config(
        config: &'static str,
        name: &'static str,
        reason: impl Into<String>,
    ) -> Self {
        Error::Config {
            config,
            name,
            reason: reason.into(),
        }
    }

    /// A tick count configuration `config` requires and that must be at least 1.
    pub(crate) fn positive_ticks(
        config: &'static str,
        name: &'static str,
        ticks: Option<chronobloom_core::temporal::Tick>,
    ) -> Result<chronobloom_core::temporal::Tick> {
        match ticks {
            None => Err(Error::config(config, name, "is required")),
            Some(0) => Err(Error::config(config, name, "must be at least 1 tick")),
            Some(t) => Ok(t),
        }
    }

    /// A core error met while checking configuration `config`: a refused parameter keeps its
    /// name, under this configuration; anything else passes through.
    pub(crate) fn in_config(config: &'static str, e: chronobloom_core::Error) -> Self {
        match e {
            chronobloom_core::Error::InvalidParameter { name, reason } => {
                Error::config(config, name, reason)
            }
            other => Error::Core(other),
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
