//! Rows F of `docs/ERRORS.md`: input files and arguments.

use super::*;

pub(super) fn dir() -> TempDir {
    TempDir::new().unwrap()
}

pub(super) fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A pcap file header (microseconds, little-endian) of link type `linktype`.
fn pcap_header(linktype: u32) -> Vec<u8> {
    let mut h = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65_535u32.to_le_bytes());
    h.extend_from_slice(&linktype.to_le_bytes());
    h
}

/// An Ethernet frame of IPv4 TCP 10.0.0.1:1234 → 10.0.0.2:80 (`ip` rewrites the IP header).
pub(super) fn frame(ip: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut f = vec![0; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let mut h = vec![
        0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip(&mut h);
    f.extend_from_slice(&h);
    f.extend_from_slice(&1234u16.to_be_bytes());
    f.extend_from_slice(&80u16.to_be_bytes());
    f.extend_from_slice(&[0; 16]);
    f
}

/// A pcap record at `secs` + `micros` holding `data`.
pub(super) fn record(secs: u32, micros: u32, data: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    for v in [secs, micros, data.len() as u32, data.len() as u32] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(data);
    r
}

/// A capture of one good packet then `then`.
pub(super) fn capture(then: &[u8]) -> Vec<u8> {
    let mut c = pcap_header(1);
    c.extend_from_slice(&record(1, 0, &frame(|_| {})));
    c.extend_from_slice(then);
    c
}

/// A pcapng section header block (little-endian) with no options.
fn shb() -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[1, 0, 0, 0]);
    b.extend_from_slice(&(-1i64).to_le_bytes());
    b.extend_from_slice(&28u32.to_le_bytes());
    b
}

/// A pcapng interface description block of `linktype`.
fn idb(linktype: u16) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&20u32.to_le_bytes());
    b.extend_from_slice(&linktype.to_le_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&65_535u32.to_le_bytes());
    b.extend_from_slice(&20u32.to_le_bytes());
    b
}

/// A pcapng enhanced packet block on `interface` whose trailing length is off by `skew`.
fn epb(interface: u32, skew: u32) -> Vec<u8> {
    let data = frame(|_| {});
    let padded = data.len().div_ceil(4) * 4;
    let len = (32 + padded) as u32;
    let mut b = Vec::new();
    for v in [
        6,
        len,
        interface,
        0,
        1_000,
        data.len() as u32,
        data.len() as u32,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&data);
    b.resize(b.len() + padded - data.len(), 0);
    b.extend_from_slice(&(len + skew).to_le_bytes());
    b
}

/// The first error reading `path` as a capture (opening included).
fn pcap_error(path: &Path) -> Result<(), TraceError> {
    for r in PcapTrace::open(path)? {
        r?;
    }
    Ok(())
}

/// The first error reading `text` as a CSV flow list.
fn csv_error(text: &[u8]) -> Result<(), TraceError> {
    let d = dir();
    let path = write(&d, "flows.csv", text);
    for r in CsvTrace::open(&path)? {
        r?;
    }
    Ok(())
}

pub(super) const HEADER: &str = "timestamp,src,dst,sport,dport,proto\n";

#[test]
fn f01_missing_trace_file_refused() {
    refused!(
        PcapTrace::open("/nonexistent/capture.pcap"),
        TraceError::Open { .. },
        "cannot open trace file /nonexistent/capture.pcap: No such file or directory (os error 2)"
    );
    refused!(
        CsvTrace::open("/nonexistent/flows.csv"),
        TraceError::Open { .. },
        "cannot open trace file /nonexistent/flows.csv: No such file or directory (os error 2)"
    );
}

#[test]
fn f02_directory_as_trace_file_refused() {
    let d = dir();
    refused!(
        PcapTrace::open(d.path()),
        TraceError::Read { .. },
        format!(
            "cannot read trace file {}: Is a directory (os error 21)",
            d.path().display()
        )
    );
}

#[test]
fn f03_foreign_file_as_capture_refused() {
    let d = dir();
    let gif = write(
        &d,
        "image.pcap",
        b"GIF89a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    );
    refused!(
        PcapTrace::open(&gif),
        TraceError::UnknownFormat {
            magic: 0x4749_4638,
            ..
        },
        format!(
            "{} is not a pcap or pcapng capture (it starts with 0x47494638); use --csv for flow \
             lists",
            gif.display()
        )
    );
}

#[test]
fn f04_truncated_capture_header_refused() {
    let d = dir();
    let p = write(&d, "short.pcap", &pcap_header(1)[..10]);
    refused!(
        PcapTrace::open(&p),
        TraceError::Truncated {
            what: "file header",
            offset: 0,
            ..
        },
        format!(
            "{} is truncated: it ends inside the file header starting at byte offset 0",
            p.display()
        )
    );
}

#[test]
fn f05_truncated_packet_record_refused() {
    let d = dir();
    let cut = record(2, 0, &frame(|_| {}));
    let p = write(&d, "cut.pcap", &capture(&cut[..30]));
    refused!(
        pcap_error(&p),
        TraceError::Truncated {
            what: "packet record",
            offset: 94,
            ..
        },
        format!(
            "{} is truncated: it ends inside the packet record starting at byte offset 94",
            p.display()
        )
    );
}

#[test]
fn f06_unknown_link_type_refused() {
    let d = dir();
    let p = write(&d, "usr.pcap", &pcap_header(147));
    let supported = "supported: 1 (Ethernet), 12/14/101 (raw IP), 228 (IPv4), 229 (IPv6), 113 \
                     (Linux SLL), 276 (Linux SLL2)";
    refused!(
        PcapTrace::open(&p),
        TraceError::UnknownLinkType {
            linktype: 147,
            interface: 0,
            ..
        },
        format!(
            "{}: unsupported link type 147 (interface 0); {supported}",
            p.display()
        )
    );
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&idb(147));
    let p = write(&d, "usr.pcapng", &ng);
    refused!(
        pcap_error(&p),
        TraceError::UnknownLinkType {
            linktype: 147,
            interface: 1,
            ..
        },
        format!(
            "{}: unsupported link type 147 (interface 1); {supported}",
            p.display()
        )
    );
}

#[test]
fn f07_pcapng_broken_framing_refused() {
    let d = dir();
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&epb(0, 4));
    let p = write(&d, "trailer.pcapng", &ng);
    refused_with!(
        pcap_error(&p),
        TraceError::Malformed { offset: 48, .. },
        format!("{} is malformed at byte offset 48: block: ", p.display()).as_str()
    );
}

#[test]
fn f08_pcapng_packet_of_undescribed_interface_refused() {
    let d = dir();
    let mut ng = shb();
    ng.extend_from_slice(&idb(1));
    ng.extend_from_slice(&epb(3, 0));
    let p = write(&d, "iface.pcapng", &ng);
    refused!(
        pcap_error(&p),
        TraceError::Malformed { offset: 48, .. },
        format!(
            "{} is malformed at byte offset 48: packet refers to interface 3, but 1 are described",
            p.display()
        )
    );
}

#[test]
fn f09_undecodable_packet_refused_per_record() {
    let d = dir();
    let mut short = frame(|_| {});
    short.truncate(14 + 10); // Ethernet, then half an IPv4 header
    let p = write(&d, "short-ip.pcap", &capture(&record(2, 0, &short)));
    let e = pcap_error(&p).unwrap_err();
    assert!(e.is_record_error(), "--skip-bad may skip it");
    refused!(
        Err::<(), _>(e),
        TraceError::BadPacket {
            packet: 2,
            offset: 94,
            ..
        },
        format!(
            "{}: packet 2 (byte offset 94): truncated IPv4 header: needs 20 bytes, 10 captured",
            p.display()
        )
    );
    let v5 = frame(|h| h[0] = 0x55);
    let p = write(&d, "v5.pcap", &capture(&record(2, 0, &v5)));
    refused!(
        pcap_error(&p),
        TraceError::BadPacket { packet: 2, .. },
        format!(
            "{}: packet 2 (byte offset 94): IP version 5 where IPv4 was expected",
            p.display()
        )
    );
}

#[test]
fn f10_timestamp_fraction_of_a_second_or_more_refused() {
    let d = dir();
    let p = write(
        &d,
        "frac.pcap",
        &capture(&record(2, 2_000_000, &frame(|_| {}))),
    );
    refused!(
        pcap_error(&p),
        TraceError::BadPacket { packet: 2, .. },
        format!(
            "{}: packet 2 (byte offset 94): malformed record: timestamp fraction is a second or \
             more",
            p.display()
        )
    );
}

#[test]
fn f11_csv_bad_or_missing_header_refused() {
    let d = dir();
    for (name, text, found) in [
        ("other.csv", &b"time,src\n"[..], "time,src"),
        ("empty.csv", b"", ""),
        // UTF-16 with its byte order mark: undecodable bytes shown as �, NULs escaped
        (
            "utf16.csv",
            b"\xff\xfet\0i\0",
            "\u{fffd}\u{fffd}t\\u{0}i\\u{0}",
        ),
    ] {
        let p = write(&d, name, text);
        refused!(
            CsvTrace::open(&p),
            TraceError::CsvHeader { .. },
            format!(
                "{}: line 1 must be the header `timestamp,src,dst,sport,dport,proto`, found \
                 `{found}`",
                p.display()
            )
        );
    }
}

#[test]
fn f12_csv_wrong_field_count_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: expected 6 comma-separated fields (timestamp,src,dst,sport,dport,proto), found 5"
    );
}

#[test]
fn f13_csv_bad_address_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.256,10.0.0.2,1,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: src `10.0.0.256` is not an IPv4 or IPv6 address"
    );
}

#[test]
fn f14_csv_port_above_65535_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,70000,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: sport `70000` is not a port number (0..=65535)"
    );
}

#[test]
fn f15_csv_bad_timestamp_or_protocol_refused() {
    refused_with!(
        csv_error(format!("{HEADER}1e9,10.0.0.1,10.0.0.2,1,2,6\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: timestamp `1e9` is not decimal seconds like 1510000000.123456"
    );
    refused_with!(
        csv_error(format!("{HEADER}1.0,10.0.0.1,10.0.0.2,1,2,256\n").as_bytes()),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: proto `256` is not a protocol number (0..=255)"
    );
}

#[test]
fn f16_csv_line_not_utf8_refused() {
    let mut text = HEADER.as_bytes().to_vec();
    text.extend_from_slice(b"1.0,10.0.0.\xff,10.0.0.2,1,2,6\n");
    refused_with!(
        csv_error(&text),
        TraceError::BadCsvLine { line: 2, .. },
        "flows.csv: line 2: not UTF-8 text: byte 0xff at column 12 (save the file as UTF-8)"
    );
}

#[test]
fn f17_bad_duration_refused() {
    for (text, reason) in [
        ("10 parsecs", "unknown unit: use ms, s, m or h"),
        (
            "60",
            "missing unit: write e.g. `60s`; units are ms, s, m, h",
        ),
        (
            "s",
            "expected a whole number followed by a unit (ms, s, m, h)",
        ),
        (
            "-5s",
            "expected a whole number followed by a unit (ms, s, m, h)",
        ),
        ("99999999999999999999h", "too large"),
    ] {
        refused!(
            parse_duration(text),
            TraceError::InvalidDuration { .. },
            format!("invalid duration `{text}`: {reason}")
        );
    }
}

#[test]
fn f18_bad_key_kind_or_key_refused() {
    refused!(
        "foo".parse::<KeyKind>(),
        TraceError::InvalidArgument { name: "key", .. },
        "invalid key `foo`: expected one of `src`, `pair`, `5tuple`"
    );
    refused!(
        "10.0.0.1>".parse::<FlowKey>(),
        TraceError::InvalidArgument { name: "key", .. },
        "invalid key `10.0.0.1>`: expected `src`, `src>dst` or `src:sport>dst:dport/proto`"
    );
}

#[test]
fn f19_zero_tick_unit_refused() {
    refused!(
        Ticker::new(Duration::ZERO, Duration::ZERO),
        TraceError::InvalidArgument {
            name: "tick unit",
            ..
        },
        "invalid tick unit `0ns`: expected a duration of at least 1 ns"
    );
}
