//! Valid inputs to start mutating from: captures and CSV flow lists built here byte by byte
//! (every link type, both byte orders, both timestamp resolutions, the pcapng blocks a reader
//! meets), plus the real captures in `data/` when `scripts/fetch-traces.sh` has fetched them.

/// An IPv4 header (IHL 5, or 6 with one option word) and `l4`.
fn ipv4(proto: u8, options: bool, l4: &[u8]) -> Vec<u8> {
    let ihl: u8 = if options { 6 } else { 5 };
    let total = (usize::from(ihl) * 4 + l4.len()) as u16;
    let mut p = vec![0x40 | ihl, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 192, 168, 1, 2]);
    if options {
        p.extend_from_slice(&[1, 1, 1, 0]);
    }
    p.extend_from_slice(l4);
    p
}

/// An IPv6 header, optionally followed by a hop-by-hop extension header, and `l4`.
fn ipv6(next: u8, extension: bool, l4: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    let first = if extension {
        body.extend_from_slice(&[next, 0, 1, 4, 0, 0, 0, 0]);
        0
    } else {
        next
    };
    body.extend_from_slice(l4);
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(body.len() as u16).to_be_bytes());
    p.extend_from_slice(&[first, 64]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p.extend_from_slice(&body);
    p
}

fn ports(sport: u16, dport: u16, rest: &[u8]) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(rest);
    t
}

fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    ports(
        sport,
        dport,
        &[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0],
    )
}

fn udp(sport: u16, dport: u16) -> Vec<u8> {
    ports(sport, dport, &[0, 8, 0, 0])
}

fn ethernet(ethertype: u16, vlans: &[u16], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    for &vid in vlans {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn sll(protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 1, 0, 6, 0x02, 0, 0, 0, 0, 1, 0, 0];
    f.extend_from_slice(&protocol.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn sll2(protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = protocol.to_be_bytes().to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 3, 0, 1, 4, 6, 0x02, 0, 0, 0, 0, 1, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Frames of every link type in [`LINKS`], each with its link-type number.
pub fn frames() -> Vec<(u32, Vec<u8>)> {
    let v4 = ipv4(6, false, &tcp(40_000, 443));
    let v6 = ipv6(17, true, &udp(5353, 53));
    vec![
        (1, ethernet(0x0800, &[], &v4)),
        (1, ethernet(0x86dd, &[100, 7], &v6)),
        (1, ethernet(0x0806, &[], &[0, 1, 8, 0, 6, 4, 0, 1])),
        (101, ipv4(17, true, &udp(1, 2))),
        (101, ipv6(58, false, &[128, 0, 0, 0])),
        (228, ipv4(1, false, &[8, 0, 0, 0, 0, 0, 0, 0])),
        (229, ipv6(6, false, &tcp(1, 2))),
        (113, sll(0x0800, &v4)),
        (276, sll2(0x86dd, &v6)),
    ]
}

/// The link-type numbers the packet target's first byte selects from.
pub const LINKS: [u32; 6] = [1, 101, 228, 229, 113, 276];

/// A classic pcap file; `nanos` selects the nanosecond magic.
pub fn pcap(linktype: u32, big: bool, nanos: bool, packets: &[Vec<u8>]) -> Vec<u8> {
    let w32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let w16 = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut f = w32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }).to_vec();
    f.extend_from_slice(&w16(2));
    f.extend_from_slice(&w16(4));
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&w32(65_535));
    f.extend_from_slice(&w32(linktype));
    for (i, data) in packets.iter().enumerate() {
        let len = data.len() as u32;
        for v in [1_510_000_000 + i as u32, 999_000 + i as u32, len, len + 4] {
            f.extend_from_slice(&w32(v));
        }
        f.extend_from_slice(data);
    }
    f
}

/// A pcapng block of `kind` with `body` padded to 32 bits.
fn block(big: bool, kind: u32, body: &[u8]) -> Vec<u8> {
    let w32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut body = body.to_vec();
    body.resize(body.len().div_ceil(4) * 4, 0);
    let len = body.len() as u32 + 12;
    let mut b = w32(kind).to_vec();
    b.extend_from_slice(&w32(len));
    b.extend_from_slice(&body);
    b.extend_from_slice(&w32(len));
    b
}

/// A pcapng file: a section header, an interface of `linktype` with `if_tsresol` and
/// `if_tsoffset` options, an enhanced packet block per frame, an obsolete packet block, a name
/// resolution block and an interface statistics block.
pub fn pcapng(linktype: u16, big: bool, tsresol: u8, frames: &[Vec<u8>]) -> Vec<u8> {
    let w16 = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let w32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let w64 = |v: u64| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut shb = w32(0x1a2b_3c4d).to_vec();
    shb.extend_from_slice(&w16(1));
    shb.extend_from_slice(&w16(0));
    shb.extend_from_slice(&w64(u64::MAX));
    let mut f = block(big, 0x0a0d_0d0a, &shb);

    let mut idb = w16(linktype).to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&w32(65_535));
    idb.extend_from_slice(&w16(9));
    idb.extend_from_slice(&w16(1));
    idb.extend_from_slice(&[tsresol, 0, 0, 0]);
    idb.extend_from_slice(&w16(14));
    idb.extend_from_slice(&w16(8));
    idb.extend_from_slice(&w64(1_500_000_000));
    idb.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(&block(big, 1, &idb));

    for (i, data) in frames.iter().enumerate() {
        let ts = 1_000_000 * i as u64 + 17;
        let len = data.len() as u32;
        let mut epb = w32(0).to_vec();
        for v in [(ts >> 32) as u32, ts as u32, len, len] {
            epb.extend_from_slice(&w32(v));
        }
        epb.extend_from_slice(data);
        f.extend_from_slice(&block(big, 6, &epb));
    }
    if let Some(data) = frames.first() {
        let len = data.len() as u32;
        let mut pb = w16(0).to_vec();
        pb.extend_from_slice(&w16(0));
        for v in [0, 99, len, len] {
            pb.extend_from_slice(&w32(v));
        }
        pb.extend_from_slice(data);
        f.extend_from_slice(&block(big, 2, &pb));
    }
    let mut nrb = w16(1).to_vec();
    nrb.extend_from_slice(&w16(13));
    nrb.extend_from_slice(&[
        10, 0, 0, 1, b'h', b'o', b's', b't', b'.', b'l', b'a', b'n', 0, 0, 0, 0,
    ]);
    nrb.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(&block(big, 4, &nrb));
    let mut isb = w32(0).to_vec();
    isb.extend_from_slice(&w32(0));
    isb.extend_from_slice(&w32(5));
    f.extend_from_slice(&block(big, 5, &isb));
    f
}

/// Classic pcap files of every link type, both byte orders and both resolutions, and the real
/// ones in `data/`.
pub fn pcaps() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = LINKS
        .iter()
        .enumerate()
        .map(|(i, &link)| pcap(link, i % 2 == 1, i % 3 == 0, &frames_of(link)))
        .collect();
    seeds.extend(real_captures().into_iter().filter(|b| !is_pcapng(b)));
    seeds
}

/// pcapng files of every link type, both byte orders and three timestamp resolutions, and the
/// real ones in `data/`.
pub fn pcapngs() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = LINKS
        .iter()
        .enumerate()
        .map(|(i, &link)| {
            pcapng(
                link as u16,
                i % 2 == 0,
                [6, 9, 0x86][i % 3],
                &frames_of(link),
            )
        })
        .collect();
    seeds.extend(real_captures().into_iter().filter(|b| is_pcapng(b)));
    seeds
}

fn frames_of(link: u32) -> Vec<Vec<u8>> {
    frames()
        .into_iter()
        .filter(|(l, _)| *l == link)
        .map(|(_, f)| f)
        .collect()
}

fn is_pcapng(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a])
}

/// The captures of `data/` that exist, if small enough to mutate.
fn real_captures() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| b.len() <= 1 << 20)
        .collect()
}

/// Frames with the index of their link type in [`LINKS`] as the first byte.
pub fn packets() -> Vec<Vec<u8>> {
    frames()
        .into_iter()
        .map(|(link, frame)| {
            let index = LINKS.iter().position(|&l| l == link).unwrap_or(1) as u8;
            let mut input = vec![index];
            input.extend_from_slice(&frame);
            input
        })
        .collect()
}

/// CSV flow lists: both address families, exact fractions, padding, blank lines, CRLF.
pub fn csv() -> Vec<Vec<u8>> {
    let header = "timestamp,src,dst,sport,dport,proto\n";
    [
        "1510000000.123456,10.0.0.1,10.0.0.2,40000,443,6\n1510000000.5,2001:db8::1,2001:db8::2,5353,53,17\n",
        " 1.000000001 , 192.168.1.1 ,::1,0,0,1\n\n7,10.0.0.3,10.0.0.4,65535,65535,255\n",
        "1510000001,10.0.0.1,10.0.0.2,1,2,6\r\n1510000002.25,10.0.0.2,10.0.0.1,2,1,6\r\n",
    ]
    .iter()
    .map(|body| format!("{header}{body}").into_bytes())
    .collect()
}

/// Durations as the command line takes them.
pub fn durations() -> Vec<Vec<u8>> {
    ["1500ms", "60s", "5m", "1h", " 7s "]
        .iter()
        .map(|d| d.as_bytes().to_vec())
        .collect()
}
