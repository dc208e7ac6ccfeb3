//! Link-layer and network-layer decoding: from a captured frame to a [`FlowRecord`].
//!
//! Only the fields a flow key needs are read, and only as many bytes as they need: a frame cut
//! short by the capture's snap length still decodes if its addresses and ports were captured.
//! Every read is bounds-checked, so arbitrary bytes give a [`PacketError`], never a panic.

use super::FlowRecord;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use thiserror::Error;

/// A capture's link-layer header type, for the types this reader decodes.
///
/// The numbers are tcpdump.org's `LINKTYPE_` values; see [`LinkType::from_linktype`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// Ethernet II, with any number of 802.1Q / 802.1ad VLAN tags (1).
    Ethernet,
    /// Raw IP, version taken from the first nibble (101, and 12 / 14, the platform-specific
    /// `DLT_RAW` values some writers store).
    RawIp,
    /// Raw IPv4 only (228).
    Ipv4,
    /// Raw IPv6 only (229).
    Ipv6,
    /// Linux cooked capture v1, "SLL" (113).
    LinuxSll,
    /// Linux cooked capture v2, "SLL2" (276).
    LinuxSll2,
}

impl LinkType {
    /// The link type stored under this number in a pcap or pcapng file, or `None` if it is not
    /// one this reader decodes.
    pub fn from_linktype(number: u32) -> Option<Self> {
        match number {
            1 => Some(LinkType::Ethernet),
            12 | 14 | 101 => Some(LinkType::RawIp),
            228 => Some(LinkType::Ipv4),
            229 => Some(LinkType::Ipv6),
            113 => Some(LinkType::LinuxSll),
            276 => Some(LinkType::LinuxSll2),
            _ => None,
        }
    }
}

/// The link-type numbers [`LinkType::from_linktype`] accepts, for error messages.
pub(crate) const SUPPORTED_LINKTYPES: &str =
    "1 (Ethernet), 12/14/101 (raw IP), 228 (IPv4), 229 (IPv6), 113 (Linux SLL), 276 (Linux SLL2)";

/// Why one packet could not be turned into a record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PacketError {
    /// The frame ends inside a header the key needs.
    #[error("truncated {layer} header: needs {needed} bytes, {available} captured")]
    Truncated {
        /// The header being read.
        layer: &'static str,
        /// Bytes the header needs from its start.
        needed: usize,
        /// Bytes captured from its start.
        available: usize,
    },
    /// An IP header with the wrong version nibble.
    #[error("IP version {found} where IPv{expected} was expected")]
    IpVersion {
        /// The version nibble found.
        found: u8,
        /// 4 or 6; for raw-IP links either is accepted and this is 4.
        expected: u8,
    },
    /// An IPv4 header whose length field (IHL) is below its minimum of 5 words.
    #[error("IPv4 header length {ihl} words is below the minimum of 5")]
    Ipv4HeaderLength {
        /// The IHL field.
        ihl: u8,
    },
    /// A record of the capture file itself is malformed (bad timestamp, bad packet block body);
    /// the file's framing is intact, so the next record can still be read.
    #[error("malformed record: {reason}")]
    Record {
        /// What is wrong.
        reason: &'static str,
    },
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: [u16; 3] = [0x8100, 0x88A8, 0x9100];

/// Decodes one frame of the given link type captured at `ts_nanos`.
///
/// Returns `Ok(None)` for frames that do not carry IP (ARP, LLDP, ...): they are not errors.
/// ICMP and ICMPv6 messages keep the outer header; the header an ICMP error quotes is not read.
///
/// ```
/// use chronobloom::trace::{decode, LinkType};
/// // A raw IPv4 header (20 bytes) and the first 4 bytes of UDP: ports 53 -> 4000.
/// let mut p = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
/// p.extend_from_slice(&[0, 53, 0x0f, 0xa0]);
/// let r = decode(LinkType::RawIp, &p, 5).unwrap().unwrap();
/// assert_eq!((r.sport, r.dport, r.proto, r.ts_nanos), (53, 4000, 17, 5));
/// ```
pub fn decode(
    link: LinkType,
    frame: &[u8],
    ts_nanos: u64,
) -> Result<Option<FlowRecord>, PacketError> {
    let mut record = FlowRecord::UNSPECIFIED;
    Ok(decode_into(link, frame, ts_nanos, &mut record)?.then_some(record))
}

/// [`decode`] into `out`, field by field: `Ok(true)` when the frame is IP and `out` holds its
/// record, `Ok(false)` when it is not IP; `out` is unchanged unless `Ok(true)`. A reader keeps
/// one record and decodes every packet into it: a record built elsewhere and moved whole is
/// copied by wide loads of the narrow stores that wrote it, which wait for them.
pub(crate) fn decode_into(
    link: LinkType,
    frame: &[u8],
    ts_nanos: u64,
    out: &mut FlowRecord,
) -> Result<bool, PacketError> {
    match link {
        LinkType::Ethernet => {
            let h = need(frame, 14, "Ethernet")?;
            by_ethertype(be16(h, 12), &frame[14..], ts_nanos, out)
        }
        LinkType::LinuxSll => {
            let h = need(frame, 16, "Linux SLL")?;
            by_ethertype(be16(h, 14), &frame[16..], ts_nanos, out)
        }
        LinkType::LinuxSll2 => {
            let h = need(frame, 20, "Linux SLL2")?;
            by_ethertype(be16(h, 0), &frame[20..], ts_nanos, out)
        }
        LinkType::RawIp => {
            let h = need(frame, 1, "IP")?;
            match h[0] >> 4 {
                4 => ipv4(frame, ts_nanos, out).map(|()| true),
                6 => ipv6(frame, ts_nanos, out).map(|()| true),
                found => Err(PacketError::IpVersion { found, expected: 4 }),
            }
        }
        LinkType::Ipv4 => ipv4(frame, ts_nanos, out).map(|()| true),
        LinkType::Ipv6 => ipv6(frame, ts_nanos, out).map(|()| true),
    }
}

/// Dispatches on an EtherType after skipping VLAN tags.
fn by_ethertype(
    mut ethertype: u16,
    mut rest: &[u8],
    ts_nanos: u64,
    out: &mut FlowRecord,
) -> Result<bool, PacketError> {
    while ETHERTYPE_VLAN.contains(&ethertype) {
        let tag = need(rest, 4, "VLAN tag")?;
        ethertype = be16(tag, 2);
        rest = &rest[4..];
    }
    match ethertype {
        ETHERTYPE_IPV4 => ipv4(rest, ts_nanos, out).map(|()| true),
        ETHERTYPE_IPV6 => ipv6(rest, ts_nanos, out).map(|()| true),
        _ => Ok(false),
    }
}

/// Writes a decoded packet's fields into `out` (only once nothing can fail).
fn write(
    out: &mut FlowRecord,
    ts_nanos: u64,
    (src, dst): (IpAddr, IpAddr),
    (proto, sport, dport): (u8, u16, u16),
) {
    out.ts_nanos = ts_nanos;
    out.src = src;
    out.dst = dst;
    out.sport = sport;
    out.dport = dport;
    out.proto = proto;
}

fn ipv4(p: &[u8], ts_nanos: u64, out: &mut FlowRecord) -> Result<(), PacketError> {
    let h = need(p, 20, "IPv4")?;
    let version = h[0] >> 4;
    if version != 4 {
        return Err(PacketError::IpVersion {
            found: version,
            expected: 4,
        });
    }
    let ihl = h[0] & 0x0f;
    if ihl < 5 {
        return Err(PacketError::Ipv4HeaderLength { ihl });
    }
    let header_len = usize::from(ihl) * 4;
    need(p, header_len, "IPv4 (with options)")?;
    let proto = h[9];
    let fragment_offset = be16(h, 6) & 0x1fff;
    let (sport, dport) = if fragment_offset == 0 {
        ports(proto, &p[header_len..])?
    } else {
        (0, 0)
    };
    let src = IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19]));
    write(out, ts_nanos, (src, dst), (proto, sport, dport));
    Ok(())
}

fn ipv6(p: &[u8], ts_nanos: u64, out: &mut FlowRecord) -> Result<(), PacketError> {
    let h = need(p, 40, "IPv6")?;
    let version = h[0] >> 4;
    if version != 6 {
        return Err(PacketError::IpVersion {
            found: version,
            expected: 6,
        });
    }
    let addrs = (
        IpAddr::V6(Ipv6Addr::from(addr16(&h[8..24]))),
        IpAddr::V6(Ipv6Addr::from(addr16(&h[24..40]))),
    );
    let transport = ipv6_transport(h[6], &p[40..])?;
    write(out, ts_nanos, addrs, transport);
    Ok(())
}

/// The transport protocol and ports after IPv6's extension headers, starting at header `next`.
fn ipv6_transport(mut next: u8, mut rest: &[u8]) -> Result<(u8, u16, u16), PacketError> {
    // Every extension header is at least 8 bytes long, so this loop ends.
    loop {
        let len = match next {
            // Hop-by-hop, routing, destination options, mobility, HIP, shim6: (len + 1) * 8.
            0 | 43 | 60 | 135 | 139 | 140 => {
                let e = need(rest, 2, "IPv6 extension")?;
                (usize::from(e[1]) + 1) * 8
            }
            // Fragment: a later fragment carries no transport header.
            44 => {
                let e = need(rest, 8, "IPv6 fragment")?;
                if be16(e, 2) >> 3 != 0 {
                    return Ok((e[0], 0, 0));
                }
                8
            }
            // Authentication header: (len + 2) * 4.
            51 => {
                let e = need(rest, 2, "IPv6 authentication")?;
                (usize::from(e[1]) + 2) * 4
            }
            _ => break,
        };
        let e = need(rest, len, "IPv6 extension")?;
        next = e[0];
        rest = &rest[len..];
    }
    let (sport, dport) = ports(next, rest)?;
    Ok((next, sport, dport))
}

/// Source and destination port of the transport protocols that begin with them.
fn ports(proto: u8, l4: &[u8]) -> Result<(u16, u16), PacketError> {
    let layer = match proto {
        6 => "TCP",
        17 => "UDP",
        33 => "DCCP",
        132 => "SCTP",
        136 => "UDP-Lite",
        _ => return Ok((0, 0)),
    };
    let t = need(l4, 4, layer)?;
    Ok((be16(t, 0), be16(t, 2)))
}

/// `bytes` if it holds at least `needed` of them.
fn need<'a>(bytes: &'a [u8], needed: usize, layer: &'static str) -> Result<&'a [u8], PacketError> {
    if bytes.len() >= needed {
        Ok(bytes)
    } else {
        Err(PacketError::Truncated {
            layer,
            needed,
            available: bytes.len(),
        })
    }
}

/// A big-endian `u16` at `at`; callers have checked the length with [`need`].
fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn addr16(bytes: &[u8]) -> [u8; 16] {
    let mut a = [0; 16];
    a.copy_from_slice(bytes);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LINKS: [LinkType; 6] = [
        LinkType::Ethernet,
        LinkType::RawIp,
        LinkType::Ipv4,
        LinkType::Ipv6,
        LinkType::LinuxSll,
        LinkType::LinuxSll2,
    ];

    fn ipv4_udp_with_options() -> Vec<u8> {
        // IHL 6: one 4-byte option word (NOPs and an end-of-list).
        let mut p = vec![0x46, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0];
        p.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7, 1, 1, 1, 0]);
        p.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0, 8, 0, 0]);
        p
    }

    #[test]
    fn ipv4_options_are_skipped() {
        let r = decode(LinkType::Ipv4, &ipv4_udp_with_options(), 0);
        let r = r
            .ok()
            .flatten()
            .map(|r| (r.src, r.dst, r.sport, r.dport, r.proto));
        assert_eq!(
            r,
            Some((
                IpAddr::from([192, 0, 2, 1]),
                IpAddr::from([198, 51, 100, 7]),
                5000,
                53,
                17
            ))
        );
    }

    #[test]
    fn later_ipv4_fragment_has_no_ports() {
        let mut p = ipv4_udp_with_options();
        p[6] = 0x00;
        p[7] = 0x10; // offset 16 * 8 bytes
        p.truncate(24); // a later fragment need not carry anything after the header
        let r = decode(LinkType::Ipv4, &p, 0).ok().flatten();
        assert_eq!(r.map(|r| (r.sport, r.dport, r.proto)), Some((0, 0, 17)));
    }

    #[test]
    fn bad_ihl_and_version_and_truncation() {
        let mut p = ipv4_udp_with_options();
        p[0] = 0x44;
        assert_eq!(
            decode(LinkType::Ipv4, &p, 0),
            Err(PacketError::Ipv4HeaderLength { ihl: 4 })
        );
        p[0] = 0x66;
        assert_eq!(
            decode(LinkType::Ipv4, &p, 0),
            Err(PacketError::IpVersion {
                found: 6,
                expected: 4
            })
        );
        let p = ipv4_udp_with_options();
        assert_eq!(
            decode(LinkType::Ipv4, &p[..26], 0),
            Err(PacketError::Truncated {
                layer: "UDP",
                needed: 4,
                available: 2
            })
        );
        assert_eq!(
            decode(LinkType::RawIp, &[0x15], 0),
            Err(PacketError::IpVersion {
                found: 1,
                expected: 4
            })
        );
    }

    #[test]
    fn ipv6_extension_chain_reaches_tcp() {
        let mut p = vec![0x60, 0, 0, 0, 0, 40, 0, 64];
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(1);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(2);
        // hop-by-hop (8 bytes) -> destination options (16 bytes) -> fragment (first) -> TCP
        p.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        p.extend_from_slice(&[44, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&[6, 0, 0, 1, 0, 0, 0, 9]);
        p.extend_from_slice(&[0x01, 0xbb, 0xc0, 0x00]);
        let r = decode(LinkType::Ipv6, &p, 0).ok().flatten();
        assert_eq!(
            r.map(|r| (r.sport, r.dport, r.proto)),
            Some((443, 49152, 6))
        );
        // a later fragment: offset 1 (8 bytes), so no ports
        let frag = 40 + 8 + 16;
        p[frag + 3] = 0x08;
        let r = decode(LinkType::RawIp, &p, 0).ok().flatten();
        assert_eq!(r.map(|r| (r.sport, r.dport, r.proto)), Some((0, 0, 6)));
        // cut inside the destination options header
        assert!(matches!(
            decode(LinkType::Ipv6, &p[..40 + 8 + 10], 0),
            Err(PacketError::Truncated {
                layer: "IPv6 extension",
                ..
            })
        ));
    }

    #[test]
    fn non_ip_frames_are_not_errors() {
        let mut arp = vec![0xff; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(decode(LinkType::Ethernet, &arp, 0), Ok(None));
        let mut sll2 = vec![0x88, 0xcc];
        sll2.extend_from_slice(&[0; 18]);
        assert_eq!(decode(LinkType::LinuxSll2, &sll2, 0), Ok(None));
    }

    #[test]
    fn linktype_numbers() {
        assert_eq!(LinkType::from_linktype(1), Some(LinkType::Ethernet));
        assert_eq!(LinkType::from_linktype(101), Some(LinkType::RawIp));
        assert_eq!(LinkType::from_linktype(113), Some(LinkType::LinuxSll));
        assert_eq!(LinkType::from_linktype(276), Some(LinkType::LinuxSll2));
        assert_eq!(LinkType::from_linktype(147), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary bytes on any link type never panic.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..160), link in 0usize..6) {
            let _ = decode(LINKS[link], &bytes, 1);
        }

        /// Decoding in place gives `decode`'s record and leaves the buffer as it was when the
        /// frame is not IP or is malformed, whatever the buffer held.
        #[test]
        fn decoding_in_place_equals_decode(
            tail in proptest::collection::vec(any::<u8>(), 0..160),
            head in prop::sample::select(vec![
                vec![],
                vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2],
                vec![0x60, 0, 0, 0, 0, 0, 17, 64],
            ]),
            link in 0usize..6,
            ts in any::<u64>(),
            held in any::<(u32, u16, u8)>(),
        ) {
            // an IP-like head on a raw link reaches the transport layer, and often decodes
            let bytes = [head.as_slice(), tail.as_slice()].concat();
            let before = FlowRecord {
                ts_nanos: u64::from(held.0),
                src: IpAddr::V4(Ipv4Addr::from(held.0)),
                sport: held.1,
                proto: held.2,
                ..FlowRecord::UNSPECIFIED
            };
            let mut out = before;
            match (decode_into(LINKS[link], &bytes, ts, &mut out), decode(LINKS[link], &bytes, ts)) {
                (Ok(true), Ok(Some(r))) => prop_assert_eq!(out, r),
                (Ok(false), Ok(None)) | (Err(_), Err(_)) => prop_assert_eq!(out, before),
                (a, b) => prop_assert!(false, "in place {:?}, decode {:?}", a, b),
            }
        }

        /// Bytes that start like an IP packet exercise the deeper layers.
        #[test]
        fn random_ip_payloads_never_panic(
            v6 in any::<bool>(),
            next in prop::sample::select(vec![0u8, 6, 17, 43, 44, 51, 58, 60, 132]),
            tail in proptest::collection::vec(any::<u8>(), 0..120),
        ) {
            let mut p = if v6 { vec![0x60, 0, 0, 0, 0, 0, next, 64] } else { vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, next, 0, 0] };
            p.extend_from_slice(&tail);
            let _ = decode(LinkType::RawIp, &p, 0);
        }
    }
}
