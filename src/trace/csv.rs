//! Flow lists as CSV: `timestamp,src,dst,sport,dport,proto`, one packet per line.
//!
//! The first line must be that header. `timestamp` is seconds since the Unix epoch in decimal,
//! with up to nine fractional digits (`1510000000.123456`; what `tshark -T fields -e
//! frame.time_epoch` prints), read exactly into nanoseconds. `src` and `dst` are IPv4 or IPv6
//! addresses, `sport`, `dport` are 0..=65535 and `proto` is 0..=255. Fields may be padded with
//! spaces; blank lines are ignored; nothing is quoted. The text is UTF-8 (ASCII in practice): a
//! line that is not is malformed, with the offending byte and column.

use super::{FlowRecord, TraceError, TraceStats};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The required header line.
pub(crate) const HEADER: &str = "timestamp,src,dst,sport,dport,proto";

/// A CSV flow list read as [`FlowRecord`]s: one item per data line, or a [`TraceError`].
///
/// A malformed line is a [record error](TraceError::is_record_error) naming the line; reading
/// can go on after it. An I/O error ends the iterator.
pub struct CsvTrace {
    path: PathBuf,
    input: Box<dyn BufRead>,
    line: u64,
    buf: Vec<u8>,
    stats: TraceStats,
    done: bool,
}

impl std::fmt::Debug for CsvTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvTrace")
            .field("path", &self.path)
            .field("line", &self.line)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl CsvTrace {
    /// Opens a file and checks its header line.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|source| TraceError::Open {
            path: path.clone(),
            source,
        })?;
        Self::from_reader(path, BufReader::new(file))
    }

    /// Reads from any buffered reader; `path` is used in messages only.
    ///
    /// ```
    /// use chronobloom::trace::CsvTrace;
    /// let text = "timestamp,src,dst,sport,dport,proto\n1510000000.5,10.0.0.1,::1,1,2,6\n";
    /// let mut trace = CsvTrace::from_reader("inline.csv", text.as_bytes()).unwrap();
    /// let r = trace.next().unwrap().unwrap();
    /// assert_eq!(r.ts_nanos, 1_510_000_000_500_000_000);
    /// ```
    pub fn from_reader(
        path: impl Into<PathBuf>,
        input: impl BufRead + 'static,
    ) -> Result<Self, TraceError> {
        let mut trace = CsvTrace {
            path: path.into(),
            input: Box::new(input),
            line: 0,
            buf: Vec::new(),
            stats: TraceStats::default(),
            done: false,
        };
        let (header, _) = trace.read_line()?.unwrap_or_default();
        if header.trim().trim_start_matches('\u{feff}') != HEADER {
            return Err(TraceError::CsvHeader {
                path: trace.path,
                found: printable(header.trim_end()),
            });
        }
        Ok(trace)
    }

    /// Counts so far ([`TraceStats::read`] counts data lines, not blank ones).
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// The next line without its terminator, lossily decoded, and why it is not UTF-8 if it is
    /// not; `None` at the end.
    fn read_line(&mut self) -> Result<Option<(String, Option<String>)>, TraceError> {
        self.buf.clear();
        let n = self
            .input
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| TraceError::Read {
                path: self.path.clone(),
                source,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let not_utf8 = std::str::from_utf8(&self.buf).err().map(|e| {
            let at = e.valid_up_to();
            format!(
                "not UTF-8 text: byte {:#04x} at column {} (save the file as UTF-8)",
                self.buf[at],
                at + 1
            )
        });
        let text = String::from_utf8_lossy(&self.buf);
        Ok(Some((
            text.trim_end_matches(['\n', '\r']).to_owned(),
            not_utf8,
        )))
    }
}

/// `s` with control characters escaped (`\0`, `\u{1b}`), so that a binary first line prints
/// as text.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Parses one data line.
fn parse_line(line: &str) -> Result<FlowRecord, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [ts, src, dst, sport, dport, proto] = fields[..] else {
        return Err(format!(
            "expected 6 comma-separated fields ({HEADER}), found {}",
            fields.len()
        ));
    };
    let addr = |name: &str, s: &str| {
        s.parse::<IpAddr>()
            .map_err(|_| format!("{name} `{s}` is not an IPv4 or IPv6 address"))
    };
    let port = |name: &str, s: &str| {
        s.parse::<u16>()
            .map_err(|_| format!("{name} `{s}` is not a port number (0..=65535)"))
    };
    Ok(FlowRecord {
        ts_nanos: parse_timestamp(ts).ok_or_else(|| {
            format!("timestamp `{ts}` is not decimal seconds like 1510000000.123456")
        })?,
        src: addr("src", src)?,
        dst: addr("dst", dst)?,
        sport: port("sport", sport)?,
        dport: port("dport", dport)?,
        proto: proto
            .parse::<u8>()
            .map_err(|_| format!("proto `{proto}` is not a protocol number (0..=255)"))?,
    })
}

/// Decimal seconds with at most nine fractional digits, exactly, in nanoseconds.
fn parse_timestamp(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || !digits(frac) || frac.len() > 9 {
        return None;
    }
    let mut nanos: u64 = 0;
    for (i, b) in frac.bytes().enumerate() {
        nanos += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    secs.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

impl Iterator for CsvTrace {
    type Item = Result<FlowRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let (line, not_utf8) = match self.read_line() {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            self.stats.read += 1;
            let parsed = match not_utf8 {
                Some(reason) => Err(reason),
                None => parse_line(&line),
            };
            return Some(match parsed {
                Ok(r) => {
                    self.stats.records += 1;
                    Ok(r)
                }
                Err(reason) => {
                    self.stats.malformed += 1;
                    Err(TraceError::BadCsvLine {
                        path: self.path.clone(),
                        line: self.line,
                        reason,
                    })
                }
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(
            parse_timestamp("1510000000.123456"),
            Some(1_510_000_000_123_456_000)
        );
        assert_eq!(parse_timestamp("0.000000001"), Some(1));
        assert_eq!(parse_timestamp("7"), Some(7_000_000_000));
        assert_eq!(parse_timestamp("7."), Some(7_000_000_000));
        for bad in [
            "",
            ".5",
            "1.0000000001",
            "-1",
            "1e9",
            "1.2.3",
            "99999999999999999999",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lines() {
        let r = parse_line(" 1.5 , 2001:db8::1 ,10.0.0.2,65535,0,58");
        assert_eq!(
            r.map(|r| (r.ts_nanos, r.src, r.sport, r.proto)),
            Ok((
                1_500_000_000,
                "2001:db8::1".parse().unwrap_or(IpAddr::from([0; 4])),
                65535,
                58
            ))
        );
        for (bad, says) in [
            ("1,10.0.0.1,10.0.0.2,1,2", "6 comma-separated"),
            ("1,10.0.0.1,10.0.0.2,1,2,6,7", "found 7"),
            ("x,10.0.0.1,10.0.0.2,1,2,6", "timestamp `x`"),
            ("1,10.0.0.300,10.0.0.2,1,2,6", "src `10.0.0.300`"),
            ("1,10.0.0.1,10.0.0.2,65536,2,6", "sport `65536`"),
            ("1,10.0.0.1,10.0.0.2,1,2,256", "proto `256`"),
        ] {
            let e = parse_line(bad).err().unwrap_or_default();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
