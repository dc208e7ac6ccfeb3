//! The temporal index: per-worker PBF-2 levels ([`local`]), epoch shipments ([`delta`]), the
//! merged state they OR into ([`state`]) and the operator answering queries against it
//! ([`query`]), with per-epoch [`stats`] and [`digest`]s; [`temporal`] wires them in one call.

pub mod batch;
pub mod config;
pub mod delta;
pub mod digest;
pub mod held;
pub mod local;
mod local_state;
pub mod matrix_batch;
mod pairs;
pub mod query;
mod resume;
pub mod state;
pub mod stats;
pub mod temporal;

pub use local::{LocalIndex, TimedLocalIndex};
pub use resume::{IndexCheckpoint, IndexSnapshot};
