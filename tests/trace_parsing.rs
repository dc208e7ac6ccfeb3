//! Parser tests on small captures and CSV files crafted here, byte by byte: every link type,
//! both container formats and timestamp resolutions, and every kind of bad input.

use chronobloom::trace::{
    CsvTrace, FlowRecord, PacketError, PcapTrace, SkipBad, TraceError, TraceStats,
};
use proptest::prelude::*;
use std::net::IpAddr;
use std::path::PathBuf;
use tempfile::TempDir;

#[path = "trace_parsing/build.rs"]
mod build;
use build::*;

// ---------------------------------------------------------------- link types

#[test]
fn ethernet_ipv4_tcp_microseconds() {
    let frame = ethernet(
        0x0800,
        &[],
        &ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(40000, 443)),
    );
    let (rs, stats) = records(&pcap(1, false, false, &[(1_510_000_000, 123_456, frame)]));
    assert_eq!(rs.len(), 1);
    assert_eq!(
        flow(&rs[0]),
        (ip4([10, 0, 0, 1]), ip4([10, 0, 0, 2]), 40000, 443, 6)
    );
    assert_eq!(rs[0].ts_nanos, 1_510_000_000_123_456_000);
    assert_eq!(stats.records, 1);
}

#[test]
fn ethernet_vlan_ipv6_udp_big_endian_nanoseconds() {
    let single = ethernet(0x86dd, &[100], &ipv6(17, 1, 2, &udp(5353, 53)));
    let double = ethernet(0x86dd, &[7, 100], &ipv6(17, 3, 4, &udp(1, 2)));
    let (rs, _) = records(&pcap(
        1,
        true,
        true,
        &[(5, 999_999_999, single), (6, 1, double)],
    ));
    assert_eq!(flow(&rs[0]), (v6(1), v6(2), 5353, 53, 17));
    assert_eq!(flow(&rs[1]), (v6(3), v6(4), 1, 2, 17));
    assert_eq!(rs[0].ts_nanos, 5_999_999_999);
    assert_eq!(rs[1].ts_nanos, 6_000_000_001);
}

#[test]
fn raw_ip_pcapng_with_nanosecond_resolution() {
    let a = ipv4(17, [192, 0, 2, 1], [192, 0, 2, 2], &udp(1000, 2000));
    let b = ipv6(6, 7, 8, &tcp(80, 8080));
    let (rs, stats) = records(&pcapng(
        101,
        Some(9),
        &[(1_000_000_007, a), (2_000_000_000, b)],
    ));
    assert_eq!(
        flow(&rs[0]),
        (ip4([192, 0, 2, 1]), ip4([192, 0, 2, 2]), 1000, 2000, 17)
    );
    assert_eq!(flow(&rs[1]), (v6(7), v6(8), 80, 8080, 6));
    assert_eq!(
        (rs[0].ts_nanos, rs[1].ts_nanos),
        (1_000_000_007, 2_000_000_000)
    );
    assert_eq!(stats.read, 2);
}

#[test]
fn pcapng_timestamp_resolutions() {
    let p = || ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], &udp(1, 2));
    // default: microseconds
    let (rs, _) = records(&pcapng(101, None, &[(1_500_000, p())]));
    assert_eq!(rs[0].ts_nanos, 1_500_000_000);
    // 10^-3 s
    let (rs, _) = records(&pcapng(101, Some(3), &[(1_500, p())]));
    assert_eq!(rs[0].ts_nanos, 1_500_000_000);
    // 2^-10 s: 1536 units are 1.5 s
    let (rs, _) = records(&pcapng(101, Some(0x80 | 10), &[(1_536, p())]));
    assert_eq!(rs[0].ts_nanos, 1_500_000_000);
}

#[test]
fn raw_ip_under_the_platform_dlt_numbers() {
    for linktype in [12, 14, 228] {
        let p = ipv4(6, [10, 1, 1, 1], [10, 2, 2, 2], &tcp(1, 2));
        let (rs, _) = records(&pcap(linktype, false, false, &[(1, 0, p)]));
        assert_eq!(rs.len(), 1, "link type {linktype}");
    }
    // Ethernet with the FCS-present flag and a 4-byte FCS length in the upper bits.
    let frame = ethernet(
        0x0800,
        &[],
        &ipv4(6, [10, 1, 1, 1], [10, 2, 2, 2], &tcp(1, 2)),
    );
    let (rs, _) = records(&pcap(
        (2 << 29) | (1 << 28) | 1,
        false,
        false,
        &[(1, 0, frame)],
    ));
    assert_eq!(rs.len(), 1);
    let (rs, _) = records(&pcap(
        229,
        false,
        false,
        &[(1, 0, ipv6(17, 1, 2, &udp(3, 4)))],
    ));
    assert_eq!(flow(&rs[0]), (v6(1), v6(2), 3, 4, 17));
}

#[test]
fn linux_cooked_capture_v1_and_non_ip_frames() {
    let ip = sll(
        0x0800,
        &ipv4(17, [10, 0, 0, 9], [10, 0, 0, 10], &udp(68, 67)),
    );
    let arp = sll(0x0806, &[0; 28]);
    let (rs, stats) = records(&pcap(113, false, false, &[(1, 0, arp), (2, 0, ip)]));
    assert_eq!(
        flow(&rs[0]),
        (ip4([10, 0, 0, 9]), ip4([10, 0, 0, 10]), 68, 67, 17)
    );
    assert_eq!(
        stats,
        TraceStats {
            read: 2,
            records: 1,
            not_ip: 1,
            malformed: 0
        }
    );
}

#[test]
fn linux_cooked_capture_v2() {
    let frame = sll2(0x86dd, &ipv6(6, 0x10, 0x20, &tcp(22, 50000)));
    let (rs, _) = records(&pcapng(276, None, &[(1, frame)]));
    assert_eq!(flow(&rs[0]), (v6(0x10), v6(0x20), 22, 50000, 6));
}

#[test]
fn icmp_errors_keep_the_outer_header() {
    // A router's time-exceeded message quoting the probe's IPv4 header and its TCP ports.
    let probe = ipv4(6, [10, 0, 0, 1], [203, 0, 113, 9], &tcp(33000, 80));
    let mut icmp = vec![11, 0, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(&probe[..28]);
    let v4 = ipv4(1, [198, 51, 100, 1], [10, 0, 0, 1], &icmp);
    // ICMPv6 destination unreachable quoting an IPv6/UDP packet.
    let quoted = ipv6(17, 1, 0x99, &udp(7, 9));
    let mut icmp6 = vec![1, 4, 0, 0, 0, 0, 0, 0];
    icmp6.extend_from_slice(&quoted);
    let v6pkt = ipv6(58, 0xfe, 1, &icmp6);
    let (rs, _) = records(&pcapng(101, None, &[(1, v4), (2, v6pkt)]));
    assert_eq!(
        flow(&rs[0]),
        (ip4([198, 51, 100, 1]), ip4([10, 0, 0, 1]), 0, 0, 1)
    );
    assert_eq!(flow(&rs[1]), (v6(0xfe), v6(1), 0, 0, 58));
}

// ---------------------------------------------------------------- bad input

/// Records larger than a read chunk (the reader asks for 256 KiB at a time) arrive over several
/// refills of the container crate's buffer, in both formats.
#[test]
fn records_larger_than_a_read_chunk() {
    let small = |port| {
        ethernet(
            0x0800,
            &[],
            &ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], &udp(port, 53)),
        )
    };
    let mut big = small(2);
    big.resize(big.len() + 700_000, 0xab);
    let frames = [small(1), big, small(3)];
    let classic: Vec<(u32, u32, Vec<u8>)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (1_600_000_000 + i as u32, 0, f.clone()))
        .collect();
    let ng: Vec<(u64, Vec<u8>)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (i as u64 * 1_000_000, f.clone()))
        .collect();
    for bytes in [pcap(1, false, false, &classic), pcapng(1, None, &ng)] {
        let (rs, stats) = records(&bytes);
        let ports: Vec<u16> = rs.iter().map(|r| r.sport).collect();
        assert_eq!(ports, [1, 2, 3]);
        assert_eq!(stats.records, 3);
    }
}

fn two_packet_capture() -> Vec<u8> {
    let p = |d| {
        ethernet(
            0x0800,
            &[],
            &ipv4(17, [10, 0, 0, 1], [10, 0, 0, d], &udp(1, 2)),
        )
    };
    pcap(1, false, false, &[(1, 0, p(2)), (2, 0, p(3))])
}

#[test]
fn truncated_pcap_names_the_offset() {
    let full = two_packet_capture();
    let first_len = 16 + 14 + 20 + 8;
    // cut inside the second packet's data, then inside its record header
    for cut in [full.len() - 5, 24 + first_len + 7] {
        let out = outcomes(&full[..cut]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.len(), 2, "cut at {cut}");
        assert!(out[0].is_ok());
        let err = out[1].as_ref().err();
        assert!(
            matches!(err, Some(TraceError::Truncated { offset, what: "packet record", .. }) if *offset == 24 + first_len as u64),
            "{err:?}"
        );
        let msg = err.map(ToString::to_string).unwrap_or_default();
        assert!(
            msg.contains("is truncated") && msg.contains("byte offset 82"),
            "{msg}"
        );
        assert!(!out[1].as_ref().is_err_and(TraceError::is_record_error));
    }
    // the file header itself
    for cut in [0, 3, 10] {
        assert!(
            matches!(
                outcomes(&full[..cut]),
                Err(TraceError::Truncated {
                    offset: 0,
                    what: "file header",
                    ..
                })
            ),
            "cut at {cut}"
        );
    }
}

#[test]
fn truncated_pcapng_names_the_block_offset() {
    let p = || ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], &udp(1, 2));
    let full = pcapng(101, None, &[(1, p()), (2, p())]);
    let epb_len = 32 + 28;
    let second = full.len() - epb_len;
    let out = outcomes(&full[..full.len() - 1]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.len(), 2);
    assert!(
        matches!(&out[1], Err(TraceError::Truncated { offset, what: "block", .. }) if *offset == second as u64),
        "{:?}",
        out[1]
    );
}

#[test]
fn truncated_packet_is_a_record_error_and_reading_goes_on() {
    // The first frame is cut inside its IPv4 header (as a small snap length would cut it).
    let short = ethernet(
        0x0800,
        &[],
        &ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(1, 2))[..12],
    );
    let ok = ethernet(
        0x0800,
        &[],
        &ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(1, 2)),
    );
    let bytes = pcap(
        1,
        false,
        false,
        &[(1, 0, short), (2, 0, ok.clone()), (3, 0, ok)],
    );
    let out = outcomes(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.len(), 3);
    let Err(e) = &out[0] else {
        panic!("a truncated packet decoded")
    };
    assert!(e.is_record_error());
    assert!(matches!(
        e,
        TraceError::BadPacket {
            packet: 1,
            offset: 24,
            reason: PacketError::Truncated {
                layer: "IPv4",
                needed: 20,
                available: 12
            },
            ..
        }
    ));
    assert!(e.to_string().contains("packet 1 (byte offset 24)"), "{e}");

    // --skip-bad: counted and skipped
    let files = Files::new();
    let trace = PcapTrace::open(files.write("t.pcap", &bytes)).unwrap_or_else(|e| panic!("{e}"));
    let mut skip = SkipBad::new(trace);
    let kept: Vec<_> = skip.by_ref().collect();
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(Result::is_ok));
    assert_eq!(skip.skipped(), 1);
    assert!(skip
        .first_skipped()
        .is_some_and(TraceError::is_record_error));
    assert_eq!(skip.inner().stats().malformed, 1);
}

#[test]
fn unknown_link_type_is_named() {
    let p = ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], &udp(1, 2));
    let e = outcomes(&pcap(147, false, false, &[(1, 0, p.clone())])).err();
    assert!(matches!(
        e,
        Some(TraceError::UnknownLinkType {
            linktype: 147,
            interface: 0,
            ..
        })
    ));
    let msg = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("unsupported link type 147") && msg.contains("101 (raw IP)"),
        "{msg}"
    );

    // pcapng: the interface description block is rejected when read
    let out = outcomes(&pcapng(147, None, &[(1, p)])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.len(), 1);
    assert!(matches!(
        &out[0],
        Err(TraceError::UnknownLinkType { linktype: 147, .. })
    ));
}

#[test]
fn not_a_capture() {
    let e = outcomes(b"timestamp,src,dst,sport,dport,proto\n").err();
    assert!(matches!(
        e,
        Some(TraceError::UnknownFormat {
            magic: 0x7469_6d65,
            ..
        })
    ));
    assert!(e.is_some_and(|e| e.to_string().contains("not a pcap or pcapng capture")));
}

#[test]
fn pcapng_packet_block_with_a_bad_body_is_a_record_error() {
    let p = || ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], &udp(1, 2));
    let mut bytes = pcapng(101, None, &[(1, p()), (2, p())]);
    // the first EPB's captured length (body offset 12) now exceeds its block
    let first = bytes.len() - 2 * (32 + 28);
    bytes[first + 8 + 12] = 200;
    let out = outcomes(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        matches!(&out[0], Err(e @ TraceError::BadPacket { packet: 1, offset, reason: PacketError::Record { .. }, .. }) if e.is_record_error() && *offset == first as u64),
        "{:?}",
        out[0]
    );
    assert!(out[1].is_ok());
}

#[test]
fn pcapng_packet_on_an_undescribed_interface() {
    let mut bytes = pcapng(
        101,
        None,
        &[(1, ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], &udp(1, 2)))],
    );
    // point the packet at interface 3: the EPB body starts 8 bytes into the last block
    let epb = bytes.len() - (32 + 28);
    bytes[epb + 8] = 3;
    let out = outcomes(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(&out[..], [Err(TraceError::Malformed { reason, .. })] if reason.contains("interface 3")),
        "{out:?}"
    );
}

#[test]
fn missing_files() {
    let files = Files::new();
    let path = files.0.path().join("no-such-trace.pcap");
    let e = PcapTrace::open(&path).err();
    assert!(
        matches!(&e, Some(TraceError::Open { source, .. }) if source.kind() == std::io::ErrorKind::NotFound)
    );
    let msg = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg.contains("cannot open trace file") && msg.contains("no-such-trace.pcap"),
        "{msg}"
    );
    assert!(matches!(
        CsvTrace::open(&path),
        Err(TraceError::Open { .. })
    ));
}

// ---------------------------------------------------------------- CSV

const HEADER: &str = "timestamp,src,dst,sport,dport,proto";

fn csv(text: &str) -> Result<Vec<Result<FlowRecord, TraceError>>, TraceError> {
    let files = Files::new();
    CsvTrace::open(files.write("t.csv", text.as_bytes())).map(Iterator::collect)
}

#[test]
fn csv_reads_records() {
    let text = format!(
        "{HEADER}\r\n1510000000.123456,10.0.0.1,10.0.0.2,40000,443,6\r\n\n1510000001,2001:db8::1,2001:db8::2,0,0,58\n"
    );
    let rs: Vec<_> = csv(&text)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rs.len(), 2);
    assert_eq!(rs[0].ts_nanos, 1_510_000_000_123_456_000);
    assert_eq!(
        flow(&rs[0]),
        (ip4([10, 0, 0, 1]), ip4([10, 0, 0, 2]), 40000, 443, 6)
    );
    assert_eq!(flow(&rs[1]), (v6(1), v6(2), 0, 0, 58));
}

#[test]
fn malformed_csv_line_names_the_line() {
    let text = format!(
        "{HEADER}\n1,10.0.0.1,10.0.0.2,1,2,6\n\n2,10.0.0.1,not-an-address,1,2,6\n3,10.0.0.1,10.0.0.2,1,2\n4,10.0.0.1,10.0.0.2,1,2,6\n"
    );
    let out = csv(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.len(), 4);
    assert!(out[0].is_ok() && out[3].is_ok());
    let msg = |i: usize| {
        out[i]
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    assert!(matches!(
        &out[1],
        Err(TraceError::BadCsvLine { line: 4, .. })
    ));
    assert!(
        msg(1).contains("line 4: dst `not-an-address`"),
        "{}",
        msg(1)
    );
    assert!(matches!(
        &out[2],
        Err(TraceError::BadCsvLine { line: 5, .. })
    ));
    assert!(
        msg(2).contains("expected 6 comma-separated fields"),
        "{}",
        msg(2)
    );

    let files = Files::new();
    let trace =
        CsvTrace::open(files.write("t.csv", text.as_bytes())).unwrap_or_else(|e| panic!("{e}"));
    let mut skip = SkipBad::new(trace);
    assert_eq!(skip.by_ref().filter(Result::is_ok).count(), 2);
    assert_eq!(skip.skipped(), 2);
    assert_eq!(
        skip.inner().stats(),
        TraceStats {
            read: 4,
            records: 2,
            not_ip: 0,
            malformed: 2
        }
    );
}

#[test]
fn csv_without_header() {
    for text in [
        "",
        "1,10.0.0.1,10.0.0.2,1,2,6\n",
        "ts,src,dst,sport,dport,proto\n",
    ] {
        let e = csv(text).err();
        assert!(matches!(e, Some(TraceError::CsvHeader { .. })), "{text:?}");
        assert!(e.is_some_and(|e| e.to_string().contains("line 1 must be the header")));
    }
}

// ---------------------------------------------------------------- robustness

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Cut and corrupted captures give records or errors, never a panic, and the reader stops
    /// after a fatal error.
    #[test]
    fn corrupted_captures_never_panic(
        ng in any::<bool>(),
        cut in 0usize..400,
        flips in proptest::collection::vec((0usize..400, any::<u8>()), 0..6),
    ) {
        let frames: Vec<Vec<u8>> = vec![
            ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(1, 2)),
            ipv6(17, 1, 2, &udp(3, 4)),
            ipv4(1, [10, 0, 0, 3], [10, 0, 0, 1], &[11, 0, 0, 0, 0, 0, 0, 0]),
        ];
        let mut bytes = if ng {
            pcapng(101, Some(9), &frames.into_iter().enumerate().map(|(i, f)| (i as u64, f)).collect::<Vec<_>>())
        } else {
            pcap(101, false, false, &frames.into_iter().map(|f| (1, 0, f)).collect::<Vec<_>>())
        };
        for (at, v) in flips {
            if let Some(b) = bytes.get_mut(at) {
                *b = v;
            }
        }
        bytes.truncate(cut);
        if let Ok(out) = outcomes(&bytes) {
            let fatal = out.iter().position(|r| r.as_ref().is_err_and(|e| !e.is_record_error()));
            if let Some(i) = fatal {
                prop_assert_eq!(i, out.len() - 1);
            }
        }
    }
}

/// What `keep_frames` keeps, written back in order (every record's `before`, then its
/// `record`).
fn rebuilt(bytes: &[u8]) -> Vec<u8> {
    let mut t =
        PcapTrace::from_reader("kept", std::io::Cursor::new(bytes.to_vec())).expect("a capture");
    t.keep_frames().expect("its header kept");
    let mut out = Vec::new();
    while let Some(r) = t.next_ref() {
        r.expect("a record");
        let k = t.kept().expect("kept");
        out.extend_from_slice(k.before);
        out.extend_from_slice(k.record);
    }
    out.extend_from_slice(t.kept().expect("kept").before);
    out
}

/// A big-endian pcapng block.
fn block_be(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    pad4(&mut body);
    let len = u32::try_from(body.len() + 12).expect("a small block");
    let mut b = kind.to_be_bytes().to_vec();
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_be_bytes());
    b
}

/// Ethernet frames: IPv4 TCP, IPv6 UDP, and ARP (no IP).
fn three_frames() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let v4 = ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(1, 2));
    (
        ethernet(0x0800, &[], &v4),
        ethernet(0x86dd, &[], &ipv6(17, 1, 2, &udp(3, 4))),
        ethernet(0x0806, &[], &[0; 28]),
    )
}

/// The kept bytes give a capture back byte for byte: a big-endian nanosecond pcap; one with frames
/// without IP (kept with what every copy keeps) between and after its records; a pcapng with a
/// block of an unknown type between packets, a second, big-endian section with its own interface,
/// and a block after the last packet.
#[test]
fn kept_bytes_give_the_capture_back() {
    let (a, b, arp) = three_frames();
    let file = pcap(1, true, true, &[(5, 1, a.clone()), (6, 2, b.clone())]);
    assert_eq!(rebuilt(&file), file);
    let with_arp = pcap(
        1,
        false,
        false,
        &[
            (5, 1, a.clone()),
            (5, 2, arp.clone()),
            (6, 2, b.clone()),
            (7, 0, arp.clone()),
        ],
    );
    assert_eq!(rebuilt(&with_arp), with_arp);

    let raw_a = ipv4(17, [192, 0, 2, 1], [192, 0, 2, 2], &udp(1000, 2000));
    let mut ng = pcapng(101, Some(9), &[(1_000, raw_a.clone())]);
    ng.extend(block(0x4000_0001, b"not a packet")); // an unknown block type, copied
    let epb_le = |ts: u32, data: &[u8]| {
        let mut epb = 0u32.to_le_bytes().to_vec();
        for v in [0, ts, data.len() as u32, data.len() as u32] {
            epb.extend_from_slice(&v.to_le_bytes());
        }
        epb.extend_from_slice(data);
        block(6, &epb)
    };
    ng.extend(epb_le(2_000, &raw_a));
    // a second section, big-endian, with an Ethernet interface
    let mut shb = 0x1a2b_3c4d_u32.to_be_bytes().to_vec();
    shb.extend_from_slice(&[0, 1, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_be_bytes());
    ng.extend(block_be(0x0a0d_0d0a, &shb));
    let mut idb = 1u16.to_be_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&65_535u32.to_be_bytes());
    ng.extend(block_be(1, &idb));
    let mut epb = 0u32.to_be_bytes().to_vec();
    for v in [0, 3_000_000, b.len() as u32, b.len() as u32] {
        epb.extend_from_slice(&v.to_be_bytes());
    }
    epb.extend_from_slice(&b);
    ng.extend(block_be(6, &epb));
    ng.extend(block_be(0x4000_0002, b"after the last packet"));
    let (rs, _) = records(&ng);
    assert_eq!(rs.len(), 3);
    assert_eq!(rebuilt(&ng), ng);
}

/// A record its reader leaves out (`skip_record`, as the main job does with a late one) is the
/// only thing missing from what is kept: the frame without IP before it stays.
#[test]
fn a_skipped_record_leaves_what_came_before_it() {
    let (a, b, arp) = three_frames();
    let file = pcap(
        1,
        false,
        false,
        &[
            (5, 1, a.clone()),
            (5, 2, arp.clone()),
            (6, 2, b.clone()),
            (7, 0, a.clone()),
        ],
    );
    let mut t = PcapTrace::from_reader("kept", std::io::Cursor::new(file)).expect("a capture");
    t.keep_frames().expect("its header kept");
    let mut out = Vec::new();
    let mut n = 0;
    while let Some(r) = t.next_ref() {
        r.expect("a record");
        n += 1;
        if n == 2 {
            t.skip_record();
            continue;
        }
        let k = t.kept().expect("kept");
        out.extend_from_slice(k.before);
        out.extend_from_slice(k.record);
    }
    out.extend_from_slice(t.kept().expect("kept").before);
    let want = pcap(
        1,
        false,
        false,
        &[(5, 1, a.clone()), (5, 2, arp), (7, 0, a)],
    );
    assert_eq!(out, want);
}
