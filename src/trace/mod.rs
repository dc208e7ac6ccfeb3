//! Trace input: network captures (pcap, pcapng) and CSV flow lists, read as [`FlowRecord`]s and
//! mapped to ticks.
//!
//! - [`PcapTrace`] reads pcap and pcapng (detected by magic number) over Ethernet (with VLAN
//!   tags), raw IP and Linux cooked capture (SLL, SLL2); see [`decode`] for the layers.
//! - [`CsvTrace`] reads `timestamp,src,dst,sport,dport,proto` with a header line.
//! - [`Ticker`] turns timestamps into ticks with an allowed lateness and reports late records.
//! - [`SkipBad`] implements `--skip-bad`: malformed records are counted and skipped, anything
//!   else still stops the read.
//!
//! Every failure is a [`TraceError`] naming the file and the packet, byte offset or line.
//!
//! ```no_run
//! use chronobloom::trace::{KeyKind, PcapTrace, SkipBad, Ticker};
//! use std::time::Duration;
//! # fn main() -> Result<(), chronobloom::trace::TraceError> {
//! let mut records = SkipBad::new(PcapTrace::open("data/real.pcap")?);
//! let mut ticker = Ticker::new(Duration::from_millis(1), Duration::from_micros(50))?;
//! for record in records.by_ref() {
//!     let record = record?;
//!     let _tick = ticker.place(record.ts_nanos);
//!     let _key = record.key(KeyKind::FiveTuple);
//! }
//! println!("skipped {} malformed records", records.skipped());
//! # Ok(()) }
//! ```

mod csv;
mod error;
mod kept;
mod packet;
mod pcap;
mod record;
mod ticks;

pub use csv::CsvTrace;
pub use error::{SkipBad, TraceError, TraceStats};
pub use kept::KeptFrame;
pub use packet::{decode, LinkType, PacketError};
pub use pcap::{CaptureFormat, PcapTrace};
pub use record::{parse_duration, FlowKey, FlowRecord, KeyKind};
pub use ticks::{Placement, Ticker, TickerStats};
