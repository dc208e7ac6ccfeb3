//! Flow records, the keys derived from them, and the duration syntax of the command line.

use super::TraceError;
use chronobloom_core::hash::{CanonicalBytes, Key, KeyHash};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

/// One packet reduced to what membership and dedup need: when, and which flow.
///
/// For ICMP and ICMPv6 (including errors that quote another packet's header) the addresses are
/// the outer header's and both ports are 0; so are the ports of non-first IPv4 fragments and of
/// protocols without ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlowRecord {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_nanos: u64,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (TCP, UDP, SCTP, DCCP, UDP-Lite), else 0.
    pub sport: u16,
    /// Destination port (TCP, UDP, SCTP, DCCP, UDP-Lite), else 0.
    pub dport: u16,
    /// IP protocol number (IPv6: the header after the extension headers).
    pub proto: u8,
}

/// Which fields of a record form its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyKind {
    /// The source address.
    Src,
    /// The (source, destination) address pair.
    Pair,
    /// The 5-tuple (source, destination, source port, destination port, protocol).
    #[default]
    FiveTuple,
}

impl FromStr for KeyKind {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "src" => Ok(KeyKind::Src),
            "pair" => Ok(KeyKind::Pair),
            "5tuple" | "five-tuple" => Ok(KeyKind::FiveTuple),
            _ => Err(TraceError::InvalidArgument {
                name: "key",
                value: s.to_owned(),
                expected: "one of `src`, `pair`, `5tuple`",
            }),
        }
    }
}

/// A record's key under a [`KeyKind`]: hashable by the core filters through [`Key`], and by std
/// maps through `Hash`. It serializes compactly (it crosses workers in the dataflow): a tag
/// byte (kind, IP versions) then the addresses as 4 or 16 octets and the ports and protocol, 14
/// bytes for an IPv4 5-tuple in bincode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowKey {
    /// See [`KeyKind::Src`].
    Src(IpAddr),
    /// See [`KeyKind::Pair`].
    Pair(IpAddr, IpAddr),
    /// See [`KeyKind::FiveTuple`].
    FiveTuple(IpAddr, IpAddr, u16, u16, u8),
}

/// The text form: `src` for [`FlowKey::Src`], `src>dst` for [`FlowKey::Pair`], and
/// `src:sport>dst:dport/proto` for [`FlowKey::FiveTuple`] (IPv6 addresses in brackets there, as
/// in socket addresses).
///
/// ```
/// use chronobloom::trace::FlowKey;
/// let k: FlowKey = "[2001:db8::1]:443>10.0.0.2:5000/6".parse().unwrap();
/// assert_eq!(k.to_string().parse::<FlowKey>().unwrap(), k);
/// assert!("10.0.0.1>".parse::<FlowKey>().is_err());
/// ```
impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            FlowKey::Src(a) => write!(f, "{a}"),
            FlowKey::Pair(a, b) => write!(f, "{a}>{b}"),
            FlowKey::FiveTuple(a, b, sp, dp, p) => {
                write!(
                    f,
                    "{}>{}/{p}",
                    SocketAddr::new(a, sp),
                    SocketAddr::new(b, dp)
                )
            }
        }
    }
}

impl FromStr for FlowKey {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || TraceError::InvalidArgument {
            name: "key",
            value: s.to_owned(),
            expected: "`src`, `src>dst` or `src:sport>dst:dport/proto`",
        };
        if let Some((flow, proto)) = s.rsplit_once('/') {
            let (a, b) = flow.split_once('>').ok_or_else(bad)?;
            let a: SocketAddr = a.parse().map_err(|_| bad())?;
            let b: SocketAddr = b.parse().map_err(|_| bad())?;
            let proto = proto.parse().map_err(|_| bad())?;
            return Ok(FlowKey::FiveTuple(
                a.ip(),
                b.ip(),
                a.port(),
                b.port(),
                proto,
            ));
        }
        if let Some((a, b)) = s.split_once('>') {
            return Ok(FlowKey::Pair(
                a.parse().map_err(|_| bad())?,
                b.parse().map_err(|_| bad())?,
            ));
        }
        s.parse().map(FlowKey::Src).map_err(|_| bad())
    }
}

/// Tag bits of the compact form: the kind in bits 0–1, IPv6 source in bit 2, IPv6 destination in
/// bit 3.
const TAG_V6_SRC: u8 = 4;
const TAG_V6_DST: u8 = 8;

impl FlowKey {
    /// Bytes of the canonical encoding ([`Key::write_canonical`]: an address is a tag byte and 4
    /// or 16 octets, ports 2 bytes each, the protocol 1), without writing it.
    pub fn canonical_len(&self) -> u64 {
        match self {
            FlowKey::Src(a) => canonical_addr_len(a),
            FlowKey::Pair(a, b) => canonical_addr_len(a) + canonical_addr_len(b),
            FlowKey::FiveTuple(a, b, ..) => canonical_addr_len(a) + canonical_addr_len(b) + 5,
        }
    }

    /// Bytes of the compact serialized form (what `bincode` writes): a tag byte, 4 or 16 per
    /// address, 5 for ports and protocol.
    pub fn wire_len(&self) -> u64 {
        let addr = |a: &IpAddr| if a.is_ipv4() { 4 } else { 16 };
        1 + match self {
            FlowKey::Src(a) => addr(a),
            FlowKey::Pair(a, b) => addr(a) + addr(b),
            FlowKey::FiveTuple(a, b, ..) => addr(a) + addr(b) + 5,
        }
    }

    /// The fields of the compact form: the tag byte (the kind in bits 0–1, [`TAG_V6_SRC`],
    /// [`TAG_V6_DST`]), the addresses, and ports and protocol when the key has them.
    #[allow(clippy::type_complexity)]
    #[inline]
    fn compact_parts(&self) -> (u8, IpAddr, Option<IpAddr>, Option<(u16, u16, u8)>) {
        let (kind, src, dst, ports) = match *self {
            FlowKey::Src(a) => (0u8, a, None, None),
            FlowKey::Pair(a, b) => (1, a, Some(b), None),
            FlowKey::FiveTuple(a, b, sp, dp, pr) => (2, a, Some(b), Some((sp, dp, pr))),
        };
        let v6 = |a: IpAddr, bit: u8| if a.is_ipv6() { bit } else { 0 };
        let tag = kind | v6(src, TAG_V6_SRC) | dst.map_or(0, |d| v6(d, TAG_V6_DST));
        (tag, src, dst, ports)
    }
}

impl Serialize for FlowKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let (tag, src, dst, ports) = self.compact_parts();
        let len = 2 + usize::from(dst.is_some()) + if ports.is_some() { 3 } else { 0 };
        let mut t = s.serialize_tuple(len)?;
        t.serialize_element(&tag)?;
        for a in std::iter::once(src).chain(dst) {
            // one integer each, not an element per octet (a quarter of the serializer's calls)
            match a {
                IpAddr::V4(v) => t.serialize_element(&u32::from(v))?,
                IpAddr::V6(v) => t.serialize_element(&u128::from(v))?,
            }
        }
        if let Some((sp, dp, pr)) = ports {
            t.serialize_element(&sp)?;
            t.serialize_element(&dp)?;
            t.serialize_element(&pr)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for FlowKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Compact;
        impl<'de> serde::de::Visitor<'de> for Compact {
            type Value = FlowKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a flow key: a tag byte, addresses, ports and protocol")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FlowKey, A::Error> {
                use serde::de::Error;
                let missing = || A::Error::custom("truncated flow key");
                let tag: u8 = seq.next_element()?.ok_or_else(missing)?;
                let mut addr = |v6: bool| -> Result<IpAddr, A::Error> {
                    Ok(if v6 {
                        IpAddr::V6(seq.next_element::<u128>()?.ok_or_else(missing)?.into())
                    } else {
                        IpAddr::V4(seq.next_element::<u32>()?.ok_or_else(missing)?.into())
                    })
                };
                let src = addr(tag & TAG_V6_SRC != 0)?;
                match tag & 3 {
                    0 => Ok(FlowKey::Src(src)),
                    1 => Ok(FlowKey::Pair(src, addr(tag & TAG_V6_DST != 0)?)),
                    2 => {
                        let dst = addr(tag & TAG_V6_DST != 0)?;
                        let sp = seq.next_element()?.ok_or_else(missing)?;
                        let dp = seq.next_element()?.ok_or_else(missing)?;
                        let pr = seq.next_element()?.ok_or_else(missing)?;
                        Ok(FlowKey::FiveTuple(src, dst, sp, dp, pr))
                    }
                    _ => Err(A::Error::custom(format!("unknown flow key tag {tag}"))),
                }
            }
        }
        d.deserialize_tuple(6, Compact)
    }
}

/// Canonical bytes of an address: a tag byte and 4 or 16 octets.
fn canonical_addr_len(a: &IpAddr) -> u64 {
    if a.is_ipv4() {
        5
    } else {
        17
    }
}

/// The hash of an IPv4 5-tuple key: its 15 canonical bytes `4 a 4 b sport dport proto` (ports
/// little-endian) as the two words XXH3 reads of them, bytes 0..8 and 7..15.
#[inline]
fn v4_five_tuple_hash(
    a: std::net::Ipv4Addr,
    b: std::net::Ipv4Addr,
    sport: u16,
    dport: u16,
    proto: u8,
    seed: u64,
) -> KeyHash {
    let a = u64::from(u32::from_le_bytes(a.octets()));
    let b = u64::from(u32::from_le_bytes(b.octets()));
    let first = 4 | a << 8 | 4 << 40 | b << 48;
    let last = b >> 8 | u64::from(sport) << 24 | u64::from(dport) << 40 | u64::from(proto) << 56;
    KeyHash::of_words::<15>(first, last, seed)
}

impl Key for FlowKey {
    /// The canonical encoding of the underlying tuple; the kinds never share a filter, so no tag
    /// is written.
    #[inline]
    fn write_canonical(&self, out: &mut CanonicalBytes) {
        match *self {
            FlowKey::Src(a) => a.write_canonical(out),
            FlowKey::Pair(a, b) => (a, b).write_canonical(out),
            FlowKey::FiveTuple(a, b, c, d, e) => (a, b, c, d, e).write_canonical(out),
        }
    }

    /// The same bytes as [`Self::write_canonical`], written into a stack buffer (at most 39
    /// bytes) and hashed: every key of a trace is hashed where it is routed, deduplicated and
    /// indexed, so this is on the main job's hot path.
    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        if let FlowKey::FiveTuple(IpAddr::V4(a), IpAddr::V4(b), sp, dp, pr) = *self {
            return v4_five_tuple_hash(a, b, sp, dp, pr, seed);
        }
        let mut buf = Canonical {
            bytes: [0; 40],
            len: 0,
        };
        match *self {
            FlowKey::Src(a) => buf.addr(a),
            FlowKey::Pair(a, b) => {
                buf.addr(a);
                buf.addr(b);
            }
            FlowKey::FiveTuple(a, b, sp, dp, pr) => {
                buf.addr(a);
                buf.addr(b);
                buf.put(&sp.to_le_bytes());
                buf.put(&dp.to_le_bytes());
                buf.put(&[pr]);
            }
        }
        KeyHash::of_bytes(&buf.bytes[..buf.len], seed)
    }
}

/// A flow key's canonical bytes (or its compact form's) on the stack.
struct Canonical {
    bytes: [u8; 40],
    len: usize,
}

impl Canonical {
    #[inline]
    fn put(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// An address as [`Key`] writes one: a tag byte 4 or 6, then the octets.
    #[inline]
    fn addr(&mut self, a: IpAddr) {
        match a {
            IpAddr::V4(v) => {
                self.put(&[4]);
                self.put(&v.octets());
            }
            IpAddr::V6(v) => {
                self.put(&[6]);
                self.put(&v.octets());
            }
        }
    }
}

impl FlowRecord {
    /// A record of no packet (unspecified IPv4 addresses, zero time, ports and protocol): a
    /// buffer to decode packets into.
    pub const UNSPECIFIED: FlowRecord = FlowRecord {
        ts_nanos: 0,
        src: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        dst: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        sport: 0,
        dport: 0,
        proto: 0,
    };

    /// The hash of the record's key of the given kind: `self.key(kind).key_hash(seed)`, read
    /// from the record's fields in place (an IPv4 5-tuple without copying its addresses).
    ///
    /// ```
    /// use chronobloom::core::hash::Key;
    /// use chronobloom::trace::{FlowRecord, KeyKind};
    /// let r = FlowRecord {
    ///     ts_nanos: 0,
    ///     src: "10.0.0.1".parse().unwrap(),
    ///     dst: "10.0.0.2".parse().unwrap(),
    ///     sport: 1234,
    ///     dport: 80,
    ///     proto: 6,
    /// };
    /// for kind in [KeyKind::Src, KeyKind::Pair, KeyKind::FiveTuple] {
    ///     assert_eq!(r.key_hash(kind, 7), r.key(kind).key_hash(7));
    /// }
    /// ```
    #[inline]
    pub fn key_hash(&self, kind: KeyKind, seed: u64) -> KeyHash {
        if let (KeyKind::FiveTuple, IpAddr::V4(a), IpAddr::V4(b)) = (kind, &self.src, &self.dst) {
            return v4_five_tuple_hash(*a, *b, self.sport, self.dport, self.proto, seed);
        }
        self.key(kind).key_hash(seed)
    }

    /// Bytes of the record's key of the given kind in canonical form:
    /// `self.key(kind).canonical_len()`, read from the record's fields in place.
    ///
    /// ```
    /// use chronobloom::trace::{FlowRecord, KeyKind};
    /// let r = FlowRecord { src: "2001:db8::1".parse().unwrap(), ..FlowRecord::UNSPECIFIED };
    /// for kind in [KeyKind::Src, KeyKind::Pair, KeyKind::FiveTuple] {
    ///     assert_eq!(r.key_len(kind), r.key(kind).canonical_len());
    /// }
    /// ```
    #[inline]
    pub fn key_len(&self, kind: KeyKind) -> u64 {
        match kind {
            KeyKind::Src => canonical_addr_len(&self.src),
            KeyKind::Pair => canonical_addr_len(&self.src) + canonical_addr_len(&self.dst),
            KeyKind::FiveTuple => canonical_addr_len(&self.src) + canonical_addr_len(&self.dst) + 5,
        }
    }

    /// The record's key of the given kind.
    ///
    /// ```
    /// use chronobloom::trace::{FlowKey, FlowRecord, KeyKind};
    /// let r = FlowRecord {
    ///     ts_nanos: 0,
    ///     src: "10.0.0.1".parse().unwrap(),
    ///     dst: "10.0.0.2".parse().unwrap(),
    ///     sport: 1234,
    ///     dport: 80,
    ///     proto: 6,
    /// };
    /// assert_eq!(r.key(KeyKind::Pair), FlowKey::Pair(r.src, r.dst));
    /// ```
    #[inline]
    pub fn key(&self, kind: KeyKind) -> FlowKey {
        match kind {
            KeyKind::Src => FlowKey::Src(self.src),
            KeyKind::Pair => FlowKey::Pair(self.src, self.dst),
            KeyKind::FiveTuple => {
                FlowKey::FiveTuple(self.src, self.dst, self.sport, self.dport, self.proto)
            }
        }
    }
}

/// Parses a duration written as a whole number and a unit: `ms`, `s`, `m` or `h`
/// (`"1500ms"`, `"60s"`, `"5m"`, `"1h"`).
///
/// A bare number is rejected rather than guessed: `"60"` could mean seconds or ticks.
///
/// ```
/// use chronobloom::trace::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
/// assert!(parse_duration("60").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, TraceError> {
    let bad = |reason: &'static str| TraceError::InvalidDuration {
        input: text.to_owned(),
        reason,
    };
    let s = text.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(bad(
            "expected a whole number followed by a unit (ms, s, m, h)",
        ));
    }
    let millis_per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "" => return Err(bad("missing unit: write e.g. `60s`; units are ms, s, m, h")),
        _ => return Err(bad("unknown unit: use ms, s, m or h")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(millis_per_unit))
        .map(Duration::from_millis)
        .ok_or_else(|| bad("too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The IPv4 5-tuple's hash from words is the hash of its canonical bytes, on random
        /// addresses, ports, protocols and seeds.
        #[test]
        fn a_v4_five_tuple_hashes_as_its_canonical_bytes(
            a in any::<u32>(), b in any::<u32>(), sp in any::<u16>(), dp in any::<u16>(),
            pr in any::<u8>(), seed in any::<u64>(),
        ) {
            let k = FlowKey::FiveTuple(
                IpAddr::V4(std::net::Ipv4Addr::from(a)),
                IpAddr::V4(std::net::Ipv4Addr::from(b)),
                sp,
                dp,
                pr,
            );
            let mut bytes = CanonicalBytes::new();
            k.write_canonical(&mut bytes);
            prop_assert_eq!(k.key_hash(seed), KeyHash::of_bytes(bytes.as_slice(), seed));
        }

        /// A record's key hash and length read in place are its key's, for every kind and
        /// either address family on either side.
        #[test]
        fn a_record_hashes_as_its_key(
            a in any::<u128>(), b in any::<u128>(), v6 in any::<(bool, bool)>(),
            sport in any::<u16>(), dport in any::<u16>(), proto in any::<u8>(), seed in any::<u64>(),
        ) {
            let addr = |x: u128, six: bool| if six {
                IpAddr::V6(std::net::Ipv6Addr::from(x))
            } else {
                IpAddr::V4(std::net::Ipv4Addr::from(x as u32))
            };
            let r = FlowRecord { ts_nanos: 0, src: addr(a, v6.0), dst: addr(b, v6.1), sport, dport, proto };
            for kind in [KeyKind::Src, KeyKind::Pair, KeyKind::FiveTuple] {
                prop_assert_eq!(r.key_hash(kind, seed), r.key(kind).key_hash(seed));
                prop_assert_eq!(r.key_len(kind), r.key(kind).canonical_len());
            }
        }
    }

    /// Every kind and IP version round-trips through bincode and JSON; an IPv4 5-tuple is 14
    /// bincode bytes; a bad tag or a truncated key is an error.
    #[test]
    fn flow_keys_serialize_compactly() {
        let (v4, w4): (IpAddr, IpAddr) = (
            "10.0.0.1".parse().unwrap_or(IpAddr::from([0; 4])),
            IpAddr::from([192, 0, 2, 9]),
        );
        let v6 = IpAddr::from([0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let keys = [
            FlowKey::Src(v4),
            FlowKey::Src(v6),
            FlowKey::Pair(v4, v6),
            FlowKey::Pair(v6, w4),
            FlowKey::FiveTuple(v4, w4, 1234, 443, 6),
            FlowKey::FiveTuple(v6, v6, 53, 5353, 17),
            FlowKey::FiveTuple(v4, v6, 0, 0, 1),
        ];
        for k in keys {
            assert_eq!(bincode::serialized_size(&k).ok(), Some(k.wire_len()));
            // as the main job routes it: a tick, maybe a position, then the key
            assert_eq!(
                bincode::serialized_size(&(5u64, k)).ok(),
                Some(8 + k.wire_len())
            );
            assert_eq!(
                bincode::serialized_size(&(5u64, (7u64, k))).ok(),
                Some(16 + k.wire_len())
            );
            let b = bincode::serialize(&k).map_err(|e| e.to_string());
            assert_eq!(
                b.as_ref()
                    .ok()
                    .and_then(|b| bincode::deserialize::<FlowKey>(b).ok()),
                Some(k)
            );
            let j = serde_json::to_string(&k).map_err(|e| e.to_string());
            assert_eq!(
                j.as_ref()
                    .ok()
                    .and_then(|j| serde_json::from_str::<FlowKey>(j).ok()),
                Some(k)
            );
        }
        let five = FlowKey::FiveTuple(v4, w4, 1234, 443, 6);
        assert_eq!(bincode::serialized_size(&five).ok(), Some(14));
        // the canonical bytes are the underlying tuple's, and the stack-buffer hash is theirs
        for k in keys {
            let mut bytes = CanonicalBytes::new();
            k.write_canonical(&mut bytes);
            let mut tuple = CanonicalBytes::new();
            match k {
                FlowKey::Src(a) => a.write_canonical(&mut tuple),
                FlowKey::Pair(a, b) => (a, b).write_canonical(&mut tuple),
                FlowKey::FiveTuple(a, b, c, d, e) => (a, b, c, d, e).write_canonical(&mut tuple),
            }
            assert_eq!(bytes.as_slice(), tuple.as_slice());
            assert_eq!(k.canonical_len(), bytes.as_slice().len() as u64);
            for seed in [0, 7, u64::MAX] {
                assert_eq!(k.key_hash(seed), KeyHash::of_bytes(bytes.as_slice(), seed));
            }
        }
        assert!(bincode::deserialize::<FlowKey>(&[3, 1, 2, 3, 4]).is_err());
        assert!(bincode::deserialize::<FlowKey>(&[2, 1, 2, 3, 4, 5]).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("1500ms").ok(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_duration("60s").ok(), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration(" 5m ").ok(), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h").ok(), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s").ok(), Some(Duration::ZERO));
        for bad in [
            "",
            "60",
            "s",
            "1.5s",
            "-1s",
            "10d",
            "5 m",
            "99999999999999999999h",
        ] {
            assert!(
                matches!(parse_duration(bad), Err(TraceError::InvalidDuration { .. })),
                "{bad:?} accepted"
            );
        }
        let msg = parse_duration("60").map_err(|e| e.to_string()).err();
        assert!(msg.is_some_and(|m| m.contains("missing unit")));
    }

    #[test]
    fn key_kind_names() {
        assert_eq!("src".parse::<KeyKind>().ok(), Some(KeyKind::Src));
        assert_eq!("pair".parse::<KeyKind>().ok(), Some(KeyKind::Pair));
        assert_eq!("5tuple".parse::<KeyKind>().ok(), Some(KeyKind::FiveTuple));
        assert!(matches!(
            "dst".parse::<KeyKind>(),
            Err(TraceError::InvalidArgument { name: "key", .. })
        ));
    }

    #[test]
    fn keys_differ_by_kind_fields() {
        let r = FlowRecord {
            ts_nanos: 7,
            src: IpAddr::from([10, 0, 0, 1]),
            dst: IpAddr::from([10, 0, 0, 2]),
            sport: 1,
            dport: 2,
            proto: 17,
        };
        let other = FlowRecord { sport: 3, ..r };
        assert_eq!(r.key(KeyKind::Src), other.key(KeyKind::Src));
        assert_eq!(r.key(KeyKind::Pair), other.key(KeyKind::Pair));
        assert_ne!(r.key(KeyKind::FiveTuple), other.key(KeyKind::FiveTuple));
        let mut a = CanonicalBytes::new();
        r.key(KeyKind::FiveTuple).write_canonical(&mut a);
        let mut b = CanonicalBytes::new();
        (r.src, r.dst, r.sport, r.dport, r.proto).write_canonical(&mut b);
        assert_eq!(a.as_slice(), b.as_slice());
    }
}
