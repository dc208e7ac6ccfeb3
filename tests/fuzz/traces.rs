//! The trace readers as fuzz targets: a capture (pcap or pcapng, every frame decoded), a CSV
//! flow list, and one frame of a chosen link type.

use super::harness::Outcome;
use super::seeds::LINKS;
use chronobloom::trace::{
    decode, CsvTrace, FlowRecord, KeyKind, LinkType, PcapTrace, TraceError, TraceStats,
};
use std::io::Cursor;

/// Reads a whole capture from memory.
pub fn capture(bytes: &[u8]) -> Outcome {
    match PcapTrace::from_reader("fuzz.pcap", Cursor::new(bytes.to_vec())) {
        Ok(mut trace) => {
            let outcome = drain(&mut trace, bytes.len());
            check_stats(trace.stats());
            outcome
        }
        Err(e) => rejected(&e),
    }
}

/// Reads a whole CSV flow list from memory.
pub fn csv(bytes: &[u8]) -> Outcome {
    match CsvTrace::from_reader("fuzz.csv", Cursor::new(bytes.to_vec())) {
        Ok(mut trace) => {
            let outcome = drain(&mut trace, bytes.len());
            let stats = trace.stats();
            assert_eq!(stats.not_ip, 0, "a CSV reader counted non-IP frames");
            check_stats(stats);
            outcome
        }
        Err(e) => rejected(&e),
    }
}

/// Decodes one frame; the first byte picks the link type from [`LINKS`].
pub fn packet(bytes: &[u8]) -> Outcome {
    let Some((&pick, frame)) = bytes.split_first() else {
        return Outcome::Rejected;
    };
    let number = LINKS[usize::from(pick) % LINKS.len()];
    let Some(link) = LinkType::from_linktype(number) else {
        panic!("link type {number} of the seeds is not supported");
    };
    let ts = u64::from(pick) << 40;
    match decode(link, frame, ts) {
        Ok(Some(record)) => {
            assert_eq!(record.ts_nanos, ts, "the decoder changed the timestamp");
            use_record(&record);
            Outcome::Accepted
        }
        // a frame without IP (ARP, LLDP) decodes to nothing, correctly
        Ok(None) => Outcome::Accepted,
        Err(e) => {
            let _ = e.to_string();
            Outcome::Rejected
        }
    }
}

/// Reads every item: records are keyed, errors formatted; nothing may follow a fatal error,
/// and a reader that yields more items than the input has bytes does not advance.
fn drain(items: impl Iterator<Item = Result<FlowRecord, TraceError>>, len: usize) -> Outcome {
    let mut records = 0u64;
    let mut fatal = None;
    for (n, item) in items.enumerate() {
        if let Some(e) = &fatal {
            panic!("the reader went on after a fatal error: {e}");
        }
        assert!(
            n <= len + 1,
            "{n} items from {len} bytes: the reader does not advance"
        );
        match item {
            Ok(record) => {
                records += 1;
                use_record(&record);
            }
            Err(e) => {
                let message = e.to_string();
                if !e.is_record_error() {
                    fatal = Some(message);
                }
            }
        }
    }
    if records > 0 {
        Outcome::Accepted
    } else {
        Outcome::Rejected
    }
}

fn use_record(record: &FlowRecord) {
    for kind in [KeyKind::Src, KeyKind::Pair, KeyKind::FiveTuple] {
        let key = record.key(kind);
        assert!(key.wire_len() <= 38 && key.canonical_len() <= 39);
    }
}

/// Every packet or line read is a record, a skipped non-IP frame or a malformed one.
fn check_stats(stats: TraceStats) {
    assert_eq!(
        stats.read,
        stats.records + stats.not_ip + stats.malformed,
        "inconsistent counts: {stats:?}"
    );
}

fn rejected(e: &TraceError) -> Outcome {
    assert!(
        !e.is_record_error(),
        "opening failed with a record error: {e}"
    );
    let _ = e.to_string();
    Outcome::Rejected
}
