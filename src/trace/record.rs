//! Flow records, the keys derived from them, and the duration syntax of the command line.

use super::TraceError;
use chronobloom_core::hash::{CanonicalBytes, Key};
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
/// maps through `Hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
}

impl FlowRecord {
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
