//! What the parser tests build their inputs from: packets, pcap and pcapng containers byte by
//! byte, and a harness that writes them to temporary files and reads them back.

use super::*;

// ---------------------------------------------------------------- packet builders

pub(super) fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let total = u16::try_from(20 + l4.len()).unwrap_or(u16::MAX);
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(l4);
    p
}

pub(super) fn ipv6(next: u8, src: u16, dst: u16, l4: &[u8]) -> Vec<u8> {
    let addr = |last: u16| {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[14..].copy_from_slice(&last.to_be_bytes());
        a
    };
    let len = u16::try_from(l4.len()).unwrap_or(u16::MAX);
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&[next, 64]);
    p.extend_from_slice(&addr(src));
    p.extend_from_slice(&addr(dst));
    p.extend_from_slice(l4);
    p
}

pub(super) fn v6(last: u16) -> IpAddr {
    IpAddr::from([0x2001, 0x0db8, 0, 0, 0, 0, 0, last])
}

pub(super) fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    t
}

pub(super) fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&[0, 8, 0, 0]);
    u
}

pub(super) fn ethernet(ethertype: u16, vlans: &[u16], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    for (i, &vid) in vlans.iter().enumerate() {
        let tpid: u16 = if i == 0 && vlans.len() > 1 {
            0x88a8
        } else {
            0x8100
        };
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Linux cooked capture v1: packet type, ARPHRD_ETHER, address length and address, protocol.
pub(super) fn sll(protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 1, 0, 6, 0x02, 0, 0, 0, 0, 1, 0, 0];
    f.extend_from_slice(&protocol.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Linux cooked capture v2: protocol, reserved, interface index, ARPHRD, type, address.
pub(super) fn sll2(protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = protocol.to_be_bytes().to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 3, 0, 1, 4, 6, 0x02, 0, 0, 0, 0, 1, 0, 0]);
    f.extend_from_slice(payload);
    f
}

// ---------------------------------------------------------------- container builders

/// A classic pcap file; `frac` is micro- or nanoseconds as `nanos` says.
pub(super) fn pcap(
    linktype: u32,
    big_endian: bool,
    nanos: bool,
    packets: &[(u32, u32, Vec<u8>)],
) -> Vec<u8> {
    let w32 = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let w16 = |v: u16| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut f = Vec::new();
    f.extend_from_slice(&w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    f.extend_from_slice(&w16(2));
    f.extend_from_slice(&w16(4));
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&w32(65_535));
    f.extend_from_slice(&w32(linktype));
    for (sec, frac, data) in packets {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        for v in [*sec, *frac, len, len] {
            f.extend_from_slice(&w32(v));
        }
        f.extend_from_slice(data);
    }
    f
}

pub(super) fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

pub(super) fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    pad4(&mut body);
    let len = u32::try_from(body.len() + 12).unwrap_or(u32::MAX);
    let mut b = kind.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// A little-endian pcapng file with one interface of `linktype`, optionally with `if_tsresol`,
/// and one enhanced packet block per `(raw timestamp, frame)`.
pub(super) fn pcapng(linktype: u16, tsresol: Option<u8>, packets: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    let mut f = block(0x0a0d_0d0a, &shb);

    let mut idb = linktype.to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&65_535u32.to_le_bytes());
    if let Some(r) = tsresol {
        idb.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
    }
    f.extend_from_slice(&block(1, &idb));

    for (ts, data) in packets {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let mut epb = 0u32.to_le_bytes().to_vec();
        let (high, low) = ((ts >> 32) as u32, *ts as u32);
        for v in [high, low, len, len] {
            epb.extend_from_slice(&v.to_le_bytes());
        }
        epb.extend_from_slice(data);
        f.extend_from_slice(&block(6, &epb));
    }
    f
}

// ---------------------------------------------------------------- harness

pub(super) struct Files(pub(super) TempDir);

impl Files {
    pub(super) fn new() -> Self {
        match tempfile::tempdir() {
            Ok(d) => Files(d),
            Err(e) => panic!("cannot create a temporary directory: {e}"),
        }
    }

    pub(super) fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.path().join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            panic!("cannot write {}: {e}", path.display());
        }
        path
    }
}

/// Reads a whole capture that must be well formed.
pub(super) fn records(bytes: &[u8]) -> (Vec<FlowRecord>, TraceStats) {
    let files = Files::new();
    let mut trace = match PcapTrace::open(files.write("t.pcap", bytes)) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let records = trace
        .by_ref()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    (records, trace.stats())
}

/// Everything a capture yields, errors included, and the open error if it does not open.
pub(super) fn outcomes(bytes: &[u8]) -> Result<Vec<Result<FlowRecord, TraceError>>, TraceError> {
    let files = Files::new();
    PcapTrace::open(files.write("t.pcap", bytes)).map(Iterator::collect)
}

pub(super) fn flow(r: &FlowRecord) -> (IpAddr, IpAddr, u16, u16, u8) {
    (r.src, r.dst, r.sport, r.dport, r.proto)
}

pub(super) fn ip4(a: [u8; 4]) -> IpAddr {
    IpAddr::from(a)
}
