//! # chronobloom
//!
//! Approximate temporal membership for Timely Dataflow pipelines. This facade re-exports the data
//! structures of [`chronobloom_core`] as [`core`] and the Timely operators of
//! [`chronobloom_operators`] as [`operators`]; see the README for the tour.

pub use chronobloom_core as core;
pub use chronobloom_core::{Error, Result};
pub use chronobloom_operators as operators;

pub mod synth;

/// The README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
