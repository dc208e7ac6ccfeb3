//! Turns a capture into `tick,element` lines for `window_eval` and `tmt_eval`: one line per IP
//! packet, the tick in milliseconds since the first packet (records within 1 ms of lateness are
//! clamped forward, later ones reported on stderr and left out), the element the packet's key.
//!
//! ```text
//! cargo run --release --example trace_keys -- data/real.pcap 5tuple > /tmp/real.csv
//! ```

use chronobloom::trace::{KeyKind, PcapTrace, Placement, Ticker};
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), kind) = (args.first(), args.get(1).map_or("5tuple", String::as_str)) else {
        eprintln!("usage: trace_keys CAPTURE [src|pair|5tuple]");
        return ExitCode::from(2);
    };
    match run(path, kind) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trace_keys: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str, kind: &str) -> Result<(), Box<dyn std::error::Error>> {
    let kind: KeyKind = kind.parse()?;
    let mut ticker = Ticker::new(Duration::from_millis(1), Duration::from_millis(1))?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    for record in PcapTrace::open(path)? {
        let r = record?;
        let Placement::Tick(t) = ticker.place(r.ts_nanos) else {
            continue;
        };
        writeln!(out, "{t},{}", r.key(kind))?;
    }
    out.flush()?;
    let s = ticker.stats();
    eprintln!(
        "trace_keys: {} records, {} clamped, {} late (left out)",
        s.records, s.clamped, s.late
    );
    Ok(())
}
