//! Checks the reader against the two real captures of the Debian package `pathspider`.
//!
//! The files are not in the repository (GPL-2+ data): `scripts/fetch-traces.sh` puts them in
//! `data/`. Without them these tests print a skip message and pass; CI runs the script first.

use chronobloom::trace::{
    CaptureFormat, FlowKey, FlowRecord, KeyKind, PcapTrace, Placement, Ticker, TraceStats,
};
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// The records and counters of `data/<name>`, or `None` (with a message) if it is absent.
fn read(name: &str, format: CaptureFormat) -> Option<(Vec<FlowRecord>, TraceStats)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    if !path.exists() {
        // Written to the process's stderr, not through `eprintln!`, so that the test harness
        // does not capture it: a skipped check must be visible.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {} is absent; run scripts/fetch-traces.sh to test against the real trace",
            path.display()
        );
        return None;
    }
    let mut trace = match PcapTrace::open(&path) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(trace.format(), format);
    let records: Vec<FlowRecord> = trace
        .by_ref()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    Some((records, trace.stats()))
}

fn distinct(records: &[FlowRecord], kind: KeyKind) -> usize {
    records
        .iter()
        .map(|r| r.key(kind))
        .collect::<HashSet<FlowKey>>()
        .len()
}

fn distinct_dst(records: &[FlowRecord]) -> usize {
    records.iter().map(|r| r.dst).collect::<HashSet<_>>().len()
}

/// Late records under a ticker with 1 ms ticks and the given lateness.
fn late(records: &[FlowRecord], lateness: Duration) -> (u64, u64, u64) {
    let mut ticker = match Ticker::new(Ticker::DEFAULT_UNIT, lateness) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let mut last = 0;
    for r in records {
        if let Placement::Tick(t) = ticker.place(r.ts_nanos) {
            assert!(t >= last, "ticks went backwards");
            last = t;
        }
    }
    let s = ticker.stats();
    (s.late, s.clamped, s.max_behind_nanos)
}

#[test]
fn real_pcap() {
    let Some((records, stats)) = read("real.pcap", CaptureFormat::Pcap) else {
        return;
    };
    // 62,781 Ethernet frames: 62,038 IPv4 packets and 743 ARP frames.
    assert_eq!(
        stats,
        TraceStats {
            read: 62_781,
            records: 62_038,
            not_ip: 743,
            malformed: 0
        }
    );
    assert!(records.iter().all(|r| r.src.is_ipv4() && r.dst.is_ipv4()));
    assert_eq!(distinct(&records, KeyKind::Src), 19);
    assert_eq!(distinct_dst(&records), 21);
    assert_eq!(distinct(&records, KeyKind::FiveTuple), 11_978);
    let span = records.iter().map(|r| r.ts_nanos).max().unwrap_or(0)
        - records.iter().map(|r| r.ts_nanos).min().unwrap_or(0);
    // 3,599 s, as the README rounds it.
    assert_eq!(span, 3_598_996_093_000);

    // The README's 32 inversions (≤ 18 µs) are between successive frames, ARP included; among
    // the IPv4 records 29 fall behind the latest timestamp, by at most 18 µs.
    let behind = records
        .windows(2)
        .filter(|w| w[1].ts_nanos < w[0].ts_nanos)
        .count();
    assert_eq!(behind, 29);
    assert_eq!(late(&records, Duration::ZERO), (29, 0, 18_000));
    assert_eq!(late(&records, Duration::from_micros(17)), (1, 28, 18_000));
    assert_eq!(late(&records, Duration::from_micros(18)), (0, 29, 18_000));
}

#[test]
fn icmp_ttl_pcapng() {
    let Some((records, stats)) = read("icmp_ttl.pcap", CaptureFormat::PcapNg) else {
        return;
    };
    assert_eq!(
        stats,
        TraceStats {
            read: 9_009,
            records: 9_009,
            not_ip: 0,
            malformed: 0
        }
    );
    assert_eq!(distinct(&records, KeyKind::Src), 924);
    let tcp = records.iter().filter(|r| r.proto == 6).count();
    let icmp: Vec<_> = records.iter().filter(|r| r.proto == 1).collect();
    assert_eq!((tcp, icmp.len()), (5_374, 3_635));
    // ICMP time-exceeded messages keep their outer header: from a router, without ports.
    assert!(icmp.iter().all(|r| r.sport == 0 && r.dport == 0));
    // Strictly ordered, over 5,060 s.
    assert!(records.windows(2).all(|w| w[0].ts_nanos < w[1].ts_nanos));
    let span = records.last().map_or(0, |r| r.ts_nanos) - records.first().map_or(0, |r| r.ts_nanos);
    // 5,060 s, as the README rounds it; microsecond units (the default `if_tsresol`), so the
    // capture starts on 2016-10-18.
    assert_eq!(span, 5_059_677_873_000);
    assert_eq!(
        records.first().map(|r| r.ts_nanos),
        Some(1_476_824_617_995_002_000)
    );
    assert_eq!(late(&records, Duration::ZERO), (0, 0, 0));
}
